# cython: language_level=3
# MeterCore, declared for hamisim._replay (which applies binds and departures
# and samples the series in C); its definition and docstring are in _meter.pyx.
from libc.stdint cimport int32_t, int64_t, uint8_t


cdef class MeterCore:
    cdef int64_t[::1] used, usedmem, usedcores, node_cpu_used
    cdef int64_t[::1] node_alloc, node_free, node_frag, node_unfit
    cdef uint8_t[::1] node_idle
    cdef const int64_t[::1] count, devmem, devcore, node_start, node_cpu
    cdef const uint8_t[::1] usable, counted
    cdef const double[::1] card_unfit
    cdef const int32_t[::1] node_group
    #: per-group sums, the same terms as the cluster sums (group = node_group[node])
    cdef int64_t[::1] g_alloc, g_idle, g_free, g_frag, g_unfit, g_used, g_usedmem, g_usedcores
    cdef uint8_t[::1] g_dirty
    # the time series, one row per sampled time: TS_COLUMNS integers (the engine's
    # pod counts, then the running sums) and TS_FLOATS floats; grown by doubling
    cdef double[::1] ts_time
    cdef int64_t[:, ::1] ts_ints
    cdef double[:, ::1] ts_floats
    cdef readonly Py_ssize_t ts_rows
    # the usage at the peak, kept up to date by copying only the card rows changed
    # since the last snapshot
    cdef int64_t[::1] peak_used, peak_usedmem, peak_usedcores
    cdef int64_t[::1] changed
    cdef uint8_t[::1] is_changed
    cdef Py_ssize_t n_changed
    cdef const int64_t[::1] s_nums, s_memreq, s_pct, s_cores, s_cpu
    cdef const uint8_t[::1] s_has_pct
    cdef const double[::1] s_weight
    cdef const uint8_t[:, ::1] type_ok
    #: cluster sums: cards with a tenant, idle nodes, free and fragmented
    #: micro-GPUs, slots, memory (MiB) and cores in use
    cdef readonly int64_t sum_alloc, sum_idle, sum_free, sum_frag, sum_unfit
    cdef readonly int64_t sum_used, sum_usedmem, sum_usedcores
    # HAMi's init-container quirk (issue #2965): per card what the pods truly use
    # beyond what HAMi booked (the corrected accounting minus HAMi's), whether a
    # card ever carried such a deficit / was ever over its limits, the cluster's
    # over-commit now (cards, slots, cores, MiB beyond the limits), as of the
    # last sample, their integrals over sampled time and their peaks
    cdef int64_t[::1] q_used, q_mem, q_cores
    cdef uint8_t[::1] q_touched, q_over_ever
    cdef int64_t q_cards, q_slots, q_core, q_memo
    cdef int64_t q_prev_cards, q_prev_slots, q_prev_core, q_prev_memo
    cdef double q_prev_time, q_card_s, q_slot_s, q_core_s, q_mem_s
    cdef int64_t q_peak_cards, q_peak_slots, q_peak_core, q_peak_memo
    cdef bint q_on

    cdef void _apply_c(self, Py_ssize_t node, const int64_t* rows, const int64_t* used,
                       const int64_t* mem, const int64_t* cores, Py_ssize_t n, int64_t cpu_milli,
                       int sign) noexcept
    cdef void _snapshot_c(self) noexcept
    cdef void _sample_c(self, double time, int64_t arrived, int64_t pending, int64_t running,
                        int64_t departed, int64_t abandoned, double gpu_arrived, double delay,
                        int64_t active, int64_t backoff, int64_t unschedulable,
                        int64_t scheduled, int64_t failed, int64_t errors) except *
    cdef inline void _add_node(self, Py_ssize_t i, int64_t sign) noexcept
    cdef inline void _add_card(self, Py_ssize_t r, int32_t g, int64_t u, int64_t m, int64_t c,
                               int sign) noexcept
    cdef inline void _node_changed(self, Py_ssize_t node, int32_t g, int64_t cpu_milli,
                                   int sign) noexcept
    cdef void _refresh(self, Py_ssize_t i) noexcept
    cdef void _deficit_c(self, const int64_t* rows, const int64_t* used, const int64_t* mem,
                         const int64_t* cores, Py_ssize_t n, int sign) noexcept
    cdef inline void _over_card(self, Py_ssize_t r, int64_t sign) noexcept
    cdef inline void _quirk_sample(self, double time) noexcept
