# cython: language_level=3
# The module hamisim._meter: the per-node refresh of hamisim.sim.metrics.ClusterMeter.
#
# One node's free amount and FGD-style fragmentation over the typical pod
# shapes, recomputed after a bind or departure on that node (the meter keeps
# cluster and per-group totals as sums of these per-node terms). The rules are
# those of ClusterMeter's docstring; values are returned in micro-GPUs, rounded
# half to even like Python's round(). The part of the fragmentation that no
# placement caused (free GPU the typical shapes cannot use even on an empty
# node, "unfit") is the per-card weight card_unfit times the free amount.

from libc.math cimport nearbyint
from libc.stdint cimport int32_t, int64_t, uint8_t

import numpy as np


cdef enum:
    # time-series columns kept by MeterCore.sample: pods arrived, pending, running,
    # departed, abandoned; cards with a tenant, idle nodes, slots, memory (MiB) and
    # cores in use, free, fragmented and unfit micro-GPUs; pending pods in the
    # active queue, the backoff queue and among the unschedulable pods; attempts
    # so far that scheduled the pod, found it unschedulable, ended in an error
    TS_INTS = 19
    # gpu_arrived, queueing delay
    TS_FLOATS = 2


cdef int64_t[::1] _packed(list rows, list used, list mem, list cores):
    # four parallel lists of n card rows as one int64 buffer: rows, slots, MiB, cores
    cdef Py_ssize_t k, n = len(rows)
    cdef int64_t[::1] buf = np.empty(4 * max(n, 1), dtype=np.int64)
    for k in range(n):
        buf[k] = rows[k]
        buf[n + k] = used[k]
        buf[2 * n + k] = mem[k]
        buf[3 * n + k] = cores[k]
    return buf


cdef class MeterCore:
    """The meter's arrays and running cluster sums, updated per bind or departure.

    The arrays are the ClusterMeter's own (shared): per card usage, per node
    CPU in use and the node terms whose sums are the cluster totals. One
    :meth:`apply` call adds or removes a pod's usage and refreshes its node,
    so the Python side does no per-card work.
    """

    def __init__(self, used, usedmem, usedcores, count, devmem, devcore, usable, counted,
                 node_start, node_cpu, node_cpu_used, node_alloc, node_free, node_frag,
                 node_idle, s_nums, s_memreq, s_pct, s_has_pct, s_cores, s_cpu, s_weight,
                 type_ok, card_unfit, node_unfit, node_group, g_alloc, g_idle, g_free, g_frag,
                 g_unfit, g_used, g_usedmem, g_usedcores, g_dirty):
        self.used, self.usedmem, self.usedcores = used, usedmem, usedcores
        self.count, self.devmem, self.devcore, self.usable = count, devmem, devcore, usable
        self.counted = counted
        self.node_start, self.node_cpu, self.node_cpu_used = node_start, node_cpu, node_cpu_used
        self.node_alloc, self.node_free, self.node_frag = node_alloc, node_free, node_frag
        self.node_idle = node_idle
        self.s_nums, self.s_memreq, self.s_pct, self.s_has_pct = s_nums, s_memreq, s_pct, s_has_pct
        self.s_cores, self.s_cpu, self.s_weight, self.type_ok = s_cores, s_cpu, s_weight, type_ok
        self.card_unfit, self.node_unfit, self.node_group = card_unfit, node_unfit, node_group
        self.g_alloc, self.g_idle, self.g_free, self.g_frag = g_alloc, g_idle, g_free, g_frag
        self.g_unfit, self.g_used, self.g_usedmem = g_unfit, g_used, g_usedmem
        self.g_usedcores, self.g_dirty = g_usedcores, g_dirty
        n_cards = self.used.shape[0]
        self.peak_used = np.zeros(n_cards, dtype=np.int64)
        self.peak_usedmem = np.zeros(n_cards, dtype=np.int64)
        self.peak_usedcores = np.zeros(n_cards, dtype=np.int64)
        self.changed = np.zeros(n_cards, dtype=np.int64)
        self.is_changed = np.zeros(n_cards, dtype=np.uint8)
        self.n_changed = 0
        self.ts_time = np.zeros(1024, dtype=np.float64)
        self.ts_ints = np.zeros((1024, TS_INTS), dtype=np.int64)
        self.ts_floats = np.zeros((1024, TS_FLOATS), dtype=np.float64)
        self.ts_rows = 0
        self.q_used = np.zeros(n_cards, dtype=np.int64)
        self.q_mem = np.zeros(n_cards, dtype=np.int64)
        self.q_cores = np.zeros(n_cards, dtype=np.int64)
        self.q_touched = np.zeros(n_cards, dtype=np.uint8)
        self.q_over_ever = np.zeros(n_cards, dtype=np.uint8)
        if self.node_start.shape[0] > 1:
            for i in range(self.node_start.shape[0] - 1):
                if self.node_start[i + 1] - self.node_start[i] > 64:
                    raise ValueError("MeterCore: more than 64 cards on one node")
        self.refresh_all()

    def refresh_all(self):
        """Recompute every node's terms and the cluster and group sums from the arrays."""
        cdef Py_ssize_t i, r, g, n = self.node_start.shape[0] - 1
        self.sum_alloc = self.sum_idle = self.sum_free = self.sum_frag = self.sum_unfit = 0
        self.sum_used = self.sum_usedmem = self.sum_usedcores = 0
        for g in range(self.g_alloc.shape[0]):
            self.g_alloc[g] = self.g_idle[g] = self.g_free[g] = self.g_frag[g] = 0
            self.g_unfit[g] = self.g_used[g] = self.g_usedmem[g] = self.g_usedcores[g] = 0
            self.g_dirty[g] = 1
        for i in range(n):
            g = self.node_group[i]
            for r in range(self.node_start[i], self.node_start[i + 1]):
                self.g_used[g] += self.used[r]
                self.g_usedmem[g] += self.usedmem[r]
                self.g_usedcores[g] += self.usedcores[r]
            self._refresh(i)
            self._add_node(i, 1)
        for g in range(self.g_alloc.shape[0]):
            self.sum_used += self.g_used[g]
            self.sum_usedmem += self.g_usedmem[g]
            self.sum_usedcores += self.g_usedcores[g]

    def apply_rows(self, Py_ssize_t node, list rows, list used, list mem, list cores,
                   int64_t cpu_milli, int sign):
        """:meth:`apply` with the amounts as three lists (the kernel scheduler's own
        bookkeeping of a bound pod), so no tuple is made per card."""
        cdef Py_ssize_t n = len(rows)
        cdef int64_t[::1] buf = _packed(rows, used, mem, cores)
        self._apply_c(node, &buf[0], &buf[n], &buf[2 * n], &buf[3 * n], n, cpu_milli, sign)

    cdef void _apply_c(self, Py_ssize_t node, const int64_t* rows, const int64_t* used,
                       const int64_t* mem, const int64_t* cores, Py_ssize_t n,
                       int64_t cpu_milli, int sign) noexcept:
        # apply_rows on C arrays (the compiled replay engine's call)
        cdef Py_ssize_t k
        cdef int32_t g = self.node_group[node]
        for k in range(n):
            self._add_card(rows[k], g, used[k], mem[k], cores[k], sign)
        self._node_changed(node, g, cpu_milli, sign)

    def snapshot_peak(self):
        """Copy the usage now into the peak arrays (only the rows changed since the
        last snapshot)."""
        self._snapshot_c()

    cdef void _snapshot_c(self) noexcept:
        cdef Py_ssize_t k, r
        for k in range(self.n_changed):
            r = self.changed[k]
            self.peak_used[r] = self.used[r]
            self.peak_usedmem[r] = self.usedmem[r]
            self.peak_usedcores[r] = self.usedcores[r]
            self.is_changed[r] = 0
        self.n_changed = 0

    def peak_usage(self):
        """(slots, cores, memory) per card at the last :meth:`snapshot_peak`, as a
        (3, cards) array."""
        return np.stack([np.asarray(self.peak_used), np.asarray(self.peak_usedcores),
                         np.asarray(self.peak_usedmem)])

    def sample(self, double time, int64_t arrived, int64_t pending, int64_t running,
               int64_t departed, int64_t abandoned, double gpu_arrived, double delay,
               int64_t active, int64_t backoff, int64_t unschedulable,
               int64_t scheduled, int64_t failed, int64_t errors):
        """One time-series row at ``time``: the engine's counts, ``gpu_arrived`` and
        the mean queueing ``delay`` of the pods bound then, the pending pods by
        queue, the attempts so far by result, and the running sums. A second row
        at the same time replaces the first."""
        self._sample_c(time, arrived, pending, running, departed, abandoned, gpu_arrived,
                       delay, active, backoff, unschedulable, scheduled, failed, errors)

    cdef void _sample_c(self, double time, int64_t arrived, int64_t pending, int64_t running,
                        int64_t departed, int64_t abandoned, double gpu_arrived,
                        double delay, int64_t active, int64_t backoff,
                        int64_t unschedulable, int64_t scheduled, int64_t failed,
                        int64_t errors) except *:
        cdef Py_ssize_t r = self.ts_rows
        if self.q_on:
            self._quirk_sample(time)
        if r > 0 and self.ts_time[r - 1] == time:
            r -= 1
        else:
            if r == self.ts_time.shape[0]:
                self._grow_series()
            self.ts_rows = r + 1
        self.ts_time[r] = time
        cdef int64_t[:, ::1] x = self.ts_ints
        x[r, 0] = arrived
        x[r, 1] = pending
        x[r, 2] = running
        x[r, 3] = departed
        x[r, 4] = abandoned
        x[r, 5] = self.sum_alloc
        x[r, 6] = self.sum_idle
        x[r, 7] = self.sum_used
        x[r, 8] = self.sum_usedmem
        x[r, 9] = self.sum_usedcores
        x[r, 10] = self.sum_free
        x[r, 11] = self.sum_frag
        x[r, 12] = self.sum_unfit
        x[r, 13] = active
        x[r, 14] = backoff
        x[r, 15] = unschedulable
        x[r, 16] = scheduled
        x[r, 17] = failed
        x[r, 18] = errors
        self.ts_floats[r, 0] = gpu_arrived
        self.ts_floats[r, 1] = delay

    def _grow_series(self):
        n = self.ts_time.shape[0]
        self.ts_time = np.concatenate([np.asarray(self.ts_time), np.zeros(n)])
        self.ts_ints = np.concatenate([np.asarray(self.ts_ints),
                                       np.zeros((n, TS_INTS), dtype=np.int64)])
        self.ts_floats = np.concatenate([np.asarray(self.ts_floats),
                                         np.zeros((n, TS_FLOATS), dtype=np.float64)])

    def series(self):
        """The recorded rows: (times, integers, floats), copies, in TS order."""
        n = self.ts_rows
        return (np.array(self.ts_time[:n]), np.array(self.ts_ints[:n]),
                np.array(self.ts_floats[:n]))

    def take_changed_groups(self):
        """The groups whose nodes changed since the last call, as tuples
        ``(group, alloc, free, frag, unfit, usedmem, usedcores)`` of their running
        sums (micro-GPUs for free, frag and unfit); clears the marks."""
        cdef Py_ssize_t g
        out = []
        for g in range(self.g_dirty.shape[0]):
            if self.g_dirty[g]:
                self.g_dirty[g] = 0
                out.append((g, self.g_alloc[g], self.g_free[g], self.g_frag[g],
                            self.g_unfit[g], self.g_usedmem[g], self.g_usedcores[g]))
        return out

    cdef inline void _add_node(self, Py_ssize_t i, int64_t sign) noexcept:
        cdef int32_t g = self.node_group[i]
        self.sum_alloc += sign * self.node_alloc[i]
        self.sum_idle += sign * self.node_idle[i]
        self.sum_free += sign * self.node_free[i]
        self.sum_frag += sign * self.node_frag[i]
        self.sum_unfit += sign * self.node_unfit[i]
        self.g_alloc[g] += sign * self.node_alloc[i]
        self.g_idle[g] += sign * self.node_idle[i]
        self.g_free[g] += sign * self.node_free[i]
        self.g_frag[g] += sign * self.node_frag[i]
        self.g_unfit[g] += sign * self.node_unfit[i]

    def apply(self, Py_ssize_t node, list rows, list amounts, int64_t cpu_milli, int sign):
        """Add (``sign=1``) or remove (``-1``) one pod's usage on ``node``:
        ``amounts[k]`` = (slots, memory, cores) it holds on card row ``rows[k]``."""
        cdef Py_ssize_t k
        cdef int64_t u, m, c
        cdef int32_t g = self.node_group[node]
        for k in range(len(rows)):
            u, m, c = amounts[k]
            self._add_card(rows[k], g, u, m, c, sign)
        self._node_changed(node, g, cpu_milli, sign)

    cdef inline void _add_card(self, Py_ssize_t r, int32_t g, int64_t u, int64_t m, int64_t c,
                               int sign) noexcept:
        # one card row's usage, its cluster and group sums, and its change mark
        cdef bint quirk = self.q_touched[r]
        if quirk:
            self._over_card(r, -1)      # only a card with a deficit can be over-committed
        self.used[r] += sign * u
        self.usedmem[r] += sign * m
        self.usedcores[r] += sign * c
        if quirk:
            self._over_card(r, 1)
        if not self.is_changed[r]:
            self.is_changed[r] = 1
            self.changed[self.n_changed] = r
            self.n_changed += 1
        self.sum_used += sign * u
        self.sum_usedmem += sign * m
        self.sum_usedcores += sign * c
        self.g_used[g] += sign * u
        self.g_usedmem[g] += sign * m
        self.g_usedcores[g] += sign * c

    # -- HAMi's init-container accounting (issue #2965) against the true usage ------
    def apply_deficit(self, list rows, list used, list mem, list cores, int sign):
        """Add (``sign=1``) or remove (``-1``) one pod's deficit: per card row what it
        uses beyond what HAMi booked for it (slots, MiB, cores). The engines call it
        after the pod's booked usage is added, and before that usage is removed."""
        cdef Py_ssize_t n = len(rows)
        cdef int64_t[::1] buf = _packed(rows, used, mem, cores)
        self._deficit_c(&buf[0], &buf[n], &buf[2 * n], &buf[3 * n], n, sign)

    cdef void _deficit_c(self, const int64_t* rows, const int64_t* used, const int64_t* mem,
                         const int64_t* cores, Py_ssize_t n, int sign) noexcept:
        cdef Py_ssize_t k, r
        self.q_on = True
        for k in range(n):
            r = rows[k]
            self.q_touched[r] = 1       # an untouched card contributes nothing yet
            self._over_card(r, -1)
            self.q_used[r] += sign * used[k]
            self.q_mem[r] += sign * mem[k]
            self.q_cores[r] += sign * cores[k]
            self._over_card(r, 1)

    cdef inline void _over_card(self, Py_ssize_t r, int64_t sign) noexcept:
        # card r's over-commit in the cluster's sums: what the pods truly use beyond
        # the card's limit, or beyond HAMi's booking when that is already over it
        # (so only the quirk's share counts); adding (sign 1) also updates the peaks
        cdef int64_t s = self.used[r] + self.q_used[r] - max(self.count[r], self.used[r])
        cdef int64_t c = self.usedcores[r] + self.q_cores[r] \
            - max(self.devcore[r], self.usedcores[r])
        cdef int64_t m = self.usedmem[r] + self.q_mem[r] - max(self.devmem[r], self.usedmem[r])
        s = max(s, 0)
        c = max(c, 0)
        m = max(m, 0)
        if s == 0 and c == 0 and m == 0:
            return
        self.q_cards += sign
        self.q_slots += sign * s
        self.q_core += sign * c
        self.q_memo += sign * m
        if sign > 0:
            self.q_over_ever[r] = 1
            self.q_peak_cards = max(self.q_peak_cards, self.q_cards)
            self.q_peak_slots = max(self.q_peak_slots, s)
            self.q_peak_core = max(self.q_peak_core, c)
            self.q_peak_memo = max(self.q_peak_memo, m)

    cdef inline void _quirk_sample(self, double time) noexcept:
        # the over-commit held since the last sample counts until ``time``
        cdef double dt = time - self.q_prev_time
        if dt > 0:
            self.q_card_s += dt * self.q_prev_cards
            self.q_slot_s += dt * self.q_prev_slots
            self.q_core_s += dt * self.q_prev_core
            self.q_mem_s += dt * self.q_prev_memo
        self.q_prev_time = time
        self.q_prev_cards, self.q_prev_slots = self.q_cards, self.q_slots
        self.q_prev_core, self.q_prev_memo = self.q_core, self.q_memo

    def quirk_figures(self, double end_time):
        """HAMi's init-container accounting against the true usage, up to
        ``end_time`` (the over-commit as of the last sample lasts until then): cards
        that carried a deficit, cards ever over a limit, the peak number of cards
        over at once, per card the peak slots / cores / MiB beyond its limits, and
        card-, slot-, core- and MiB-seconds of over-commit."""
        cdef double dt = max(end_time - self.q_prev_time, 0.0) if self.q_on else 0.0
        return {
            "cards_affected": int(np.asarray(self.q_touched).sum()),
            "cards_overcommitted": int(np.asarray(self.q_over_ever).sum()),
            "peak_cards_overcommitted": int(self.q_peak_cards),
            "peak_slots_over": int(self.q_peak_slots),
            "peak_cores_over": int(self.q_peak_core),
            "peak_memory_over_mib": int(self.q_peak_memo),
            "card_seconds_overcommitted": self.q_card_s + dt * self.q_prev_cards,
            "slot_seconds_over": self.q_slot_s + dt * self.q_prev_slots,
            "core_seconds_over": self.q_core_s + dt * self.q_prev_core,
            "memory_mib_seconds_over": self.q_mem_s + dt * self.q_prev_memo,
        }

    cdef inline void _node_changed(self, Py_ssize_t node, int32_t g, int64_t cpu_milli,
                                   int sign) noexcept:
        # after a pod's cards: its CPU, then the node's figures taken out and put back
        self.node_cpu_used[node] += sign * cpu_milli
        self._add_node(node, -1)
        self._refresh(node)
        self._add_node(node, 1)
        self.g_dirty[g] = 1

    cdef void _refresh(self, Py_ssize_t i) noexcept:
        cdef int64_t cpu_free = -1 if self.node_cpu[i] < 0 else \
            self.node_cpu[i] - self.node_cpu_used[i]
        cdef int64_t alloc, free, frag, unfit
        cdef bint idle
        meter_refresh(self.node_start[i], self.node_start[i + 1], self.used, self.usedmem,
                      self.usedcores, self.count, self.devmem, self.devcore, self.usable,
                      self.counted, cpu_free, self.s_nums, self.s_memreq, self.s_pct, self.s_has_pct,
                      self.s_cores, self.s_cpu, self.s_weight, self.type_ok, self.card_unfit,
                      &alloc, &idle, &free, &frag, &unfit)
        self.node_alloc[i] = alloc
        self.node_idle[i] = idle
        self.node_free[i] = free
        self.node_frag[i] = frag
        self.node_unfit[i] = unfit


cdef void meter_refresh(Py_ssize_t a, Py_ssize_t b,
                  const int64_t[::1] used, const int64_t[::1] usedmem,
                  const int64_t[::1] usedcores, const int64_t[::1] count,
                  const int64_t[::1] devmem, const int64_t[::1] devcore,
                  const uint8_t[::1] usable, const uint8_t[::1] counted, int64_t cpu_free,
                  const int64_t[::1] s_nums, const int64_t[::1] s_memreq,
                  const int64_t[::1] s_pct, const uint8_t[::1] s_has_pct,
                  const int64_t[::1] s_cores, const int64_t[::1] s_cpu,
                  const double[::1] s_weight, const uint8_t[:, ::1] type_ok,
                  const double[::1] card_unfit,
                  int64_t* out_alloc, bint* out_idle, int64_t* out_free,
                  int64_t* out_frag, int64_t* out_unfit) noexcept nogil:
    # One node's terms (cards a:b, at most 64: checked by MeterCore) into the
    # out parameters: cards with a tenant, idle, free, fragmented and unfit
    # micro-GPUs. A card that is not counted as a GPU (hamisim.devices: HAMi's
    # NVIDIA backend never offers it) is also not usable, so it adds nothing; a
    # node is idle when it has a counted card and no card with a tenant.
    cdef Py_ssize_t i, s, n_shapes = s_nums.shape[0]
    cdef int64_t alloc = 0, n_host, need
    cdef double total = 0.0, frag = 0.0, unfit = 0.0, stranded, share, fc, fm
    cdef bint idle = False, host, can
    cdef double f[64]
    for i in range(a, b):
        if counted[i]:
            idle = True
    for i in range(a, b):
        if used[i] > 0:
            alloc += 1
            idle = False
        fc = <double>(devcore[i] - usedcores[i]) / devcore[i] if devcore[i] > 0 else 0.0
        fm = <double>(devmem[i] - usedmem[i]) / devmem[i] if devmem[i] > 0 else 0.0
        share = fc if fc < fm else fm
        share = 0.0 if share < 0.0 else (1.0 if share > 1.0 else share)
        f[i - a] = share if (used[i] < count[i] and usable[i]) else 0.0
        total += f[i - a]
        unfit += card_unfit[i] * f[i - a]
    if n_shapes and b > a:
        for s in range(n_shapes):
            if s_nums[s] == 0:
                frag += s_weight[s] * total
                continue
            n_host = 0
            stranded = 0.0
            for i in range(a, b):
                if s_memreq[s] > 0:
                    need = s_memreq[s]
                elif s_has_pct[s]:
                    need = devmem[i] * s_pct[s] // 100
                else:
                    need = 0
                host = (used[i] < count[i] and usable[i] and type_ok[s, i]
                        and devmem[i] - usedmem[i] >= need
                        and devcore[i] - usedcores[i] >= s_cores[s])
                if host and s_cores[s] == 100 and devcore[i] == 100 and used[i] > 0:
                    host = False
                if host and s_cores[s] == 0 and devcore[i] != 0 \
                        and usedcores[i] == devcore[i]:
                    host = False
                if host:
                    n_host += 1
                else:
                    stranded += f[i - a]
            can = n_host >= s_nums[s] and (cpu_free < 0 or cpu_free >= s_cpu[s])
            frag += s_weight[s] * (stranded if can else total)
    out_alloc[0] = alloc
    out_idle[0] = idle
    out_free[0] = <int64_t>nearbyint(total * 1e6)
    out_frag[0] = <int64_t>nearbyint(frag * 1e6)
    out_unfit[0] = <int64_t>nearbyint(unfit * 1e6) if n_shapes else 0
