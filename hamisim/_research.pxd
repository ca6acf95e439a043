# cython: language_level=3
# ResearchCore's state and C methods, declared (definitions and docstring in
# _research.pyx).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "numpy/random/bitgen.h":
    # numpy's bit generator interface (numpy.random's C API, header only)
    ctypedef struct bitgen_t:
        void* state
        uint64_t (*next_uint64)(void* st) noexcept nogil
        uint32_t (*next_uint32)(void* st) noexcept nogil
        double (*next_double)(void* st) noexcept nogil
        uint64_t (*next_raw)(void* st) noexcept nogil


cdef inline int64_t _bounded_draw(bitgen_t* g, int64_t n) noexcept nogil:
    """numpy's ``Generator.integers(n)`` (int64, ``1 <= n <= 2**32``) on the bit
    generator ``g``: nothing is drawn for ``n == 1``; otherwise Lemire's bounded
    method on 32-bit draws (numpy's ``buffered_bounded_lemire_uint32``), which
    numpy uses for every range below 2**32 (tests/test_research_policies.py
    checks the equality against ``rng.integers`` over many ``n`` and states)."""
    cdef uint32_t rng, excl, leftover, threshold
    cdef uint64_t m
    if n <= 1:
        return 0
    rng = <uint32_t>(n - 1)
    if rng == 0xFFFFFFFFu:
        return <int64_t>g.next_uint32(g.state)
    excl = rng + 1
    m = <uint64_t>g.next_uint32(g.state) * excl
    leftover = <uint32_t>(m & 0xFFFFFFFFu)
    if leftover < excl:
        threshold = (0xFFFFFFFFu - rng) % excl
        while leftover < threshold:
            m = <uint64_t>g.next_uint32(g.state) * excl
            leftover = <uint32_t>(m & 0xFFFFFFFFu)
    return <int64_t>(m >> 32)


cdef class ResearchCore:
    cdef readonly int n_nodes, n_cards, max_cards, n_types, n_shapes, n_cls, spec_cap
    cdef readonly int n_feasible, n_tied, n_rejected, next_start, n_pick
    cdef readonly int64_t best_score
    # numpy arrays (kept alive here; the pointers below point into them)
    cdef readonly object np_left, np_cpu_req, np_mem_req, np_node_ver, np_cls_cnt
    cdef readonly object np_cls_present, np_feasible, np_tied, np_rej_node, np_rej_bits
    cdef readonly object np_pick, np_score, np_node_gpu
    cdef object _static, _fgd, _spec, _keep_scratch
    cdef const int64_t* node_start
    cdef const int32_t* card_type
    cdef const uint8_t* card_usable
    cdef const int64_t* cpu_cap
    cdef const int64_t* mem_cap
    cdef int64_t* left
    cdef int64_t* cpu_req
    cdef int64_t* mem_req
    cdef int64_t* node_ver
    cdef int64_t* cls_cnt
    cdef int32_t* cls_present
    cdef const int64_t* sh_cpu
    cdef const int64_t* sh_milli
    cdef const int64_t* sh_k
    cdef const double* sh_w
    cdef const uint8_t* sh_type_ok
    cdef double* f_node
    cdef int64_t* f_ver
    cdef int64_t* f_total
    cdef int32_t* f_cnt
    cdef int64_t* f_small
    cdef int64_t* c_score
    cdef int32_t* c_gpu
    cdef int64_t* c_ver
    cdef int64_t* feas
    cdef int64_t* tied
    cdef int64_t* rej_node
    cdef int32_t* rej_bits
    cdef int64_t* score
    cdef int32_t* node_gpu
    cdef int32_t* pick
    cdef uint8_t* mark
    cdef int64_t* chg_row
    cdef int64_t* chg_new
    # -- replay (ReplayCore decides research attempts through these; replay_setup)
    # per template: the request on this model, its type filter (rt_tok[t, type]),
    # FGD's spec id, GpuClustering's class, cards per container (init first)
    cdef readonly bint replaying
    cdef int rp_policy
    cdef bint rp_draw_ties             # node_tie_break random, or the policy's own
    cdef object rp_rng                 # the seeded generator (kept alive: rp_bitgen)
    cdef bitgen_t* rp_bitgen
    cdef const int64_t[::1] rt_cpu, rt_cpu_s, rt_mem, rt_milli, rt_cc_off
    cdef const int32_t[::1] rt_k, rt_spec, rt_cls, rt_n_init, rt_cc
    cdef const uint8_t[::1] rt_noreq, rt_tok
    cdef const int64_t[::1] card_devmem, card_off
    cdef bytes card_text
    cdef int n_initial
    cdef list rp_initial                # per initial pod: (node, pos, milli, cpu, mem, cls)
    cdef uint8_t[::1] rp_readopt       # per pod: its cards re-adopted (init containers done)
    cdef char* rp_buf                  # devices / failure text
    cdef object rp_keep_buf
    cdef int64_t rp_last_counts[4]     # the last failure's reason counts and its text
    cdef object rp_last_text

    cdef int _fit_bits(self, int i, int64_t cpu, int64_t mem, int k, int64_t milli,
                       const uint8_t* tok) noexcept nogil
    cdef int _tightest(self, int i, int k, int64_t milli, const uint8_t* tok) noexcept nogil
    cdef int64_t _gpu_left(self, int i) noexcept nogil
    cdef int64_t _score_dotprod(self, int i, int64_t cpu_s, int k, int64_t milli) noexcept nogil
    cdef int64_t _score_clustering(self, int i, int cls) noexcept nogil
    cdef int64_t _score_packing(self, int i, int k, int64_t milli,
                                const uint8_t* tok) noexcept nogil
    cdef int64_t _score_bestfit(self, int i, int64_t cpu_s, int k, int64_t milli) noexcept nogil
    cdef inline int64_t _frag(self, int m, int64_t cnt, int64_t small, int64_t total,
                       int64_t cpu_left) noexcept nogil
    cdef void _fgd_refresh(self, int i) noexcept nogil
    cdef double _fgd_after(self, int i, int nchg, int64_t cpu_left) noexcept nogil
    cdef int64_t _score_fgd(self, int i, int64_t cpu_s, int k, int64_t milli, const uint8_t* tok,
                            int spec) noexcept nogil
    cdef void _attempt(self, int policy, int64_t cpu, int64_t cpu_s, int64_t mem, int k,
                       int64_t milli, const uint8_t* tok, int spec, int cls, bint no_req,
                       int start, int wanted) noexcept nogil
    cdef int _choose(self, int policy, int node, int k, int64_t milli, const uint8_t* type_ok,
                     int draw) noexcept nogil
    # ReplayCore's research attempts (definitions in _research.pyx)
    cdef int replay_attempt(self, int t, int start, int wanted) except -2
    cdef object replay_take(self, int t, int node, bint aligned, bint pad, int64_t* rows,
                            int64_t* used, int64_t* mem, int64_t* cores, int32_t* n,
                            int64_t* a_rows, int64_t* a_used, int64_t* a_mem,
                            int64_t* a_cores, int32_t* a_n)
    cdef void replay_apply(self, int k, int t, int node, const int64_t* rows,
                           const int64_t* mem, const int64_t* cores, int n, int sign)
    cdef void replay_readopted(self, int k) noexcept
    cdef void _add_pod(self, int node, int64_t cpu, int64_t mem, int cls, int sign) noexcept
    cdef object replay_fail_text(self)
