# cython: language_level=3
# The module hamisim._research (no cimports from the kernel: it owns its state).
#
# The six research node policies of the FGD paper (Weng et al., USENIX ATC '23):
# random, dotprod, gpuclustering, gpupacking, bestfit and fgd, on the paper's
# Open-Gpu-Share resource model: every usable card holds 1000 milli, a pod asks
# for k cards with ``milli`` each. The readable specification of every rule is
# the pure-Python twin :class:`hamisim.research.reference.ResearchReferenceCore`; the two
# must take identical decisions (tests/test_research_policies.py). The glue,
# the resource mapping and every resolved ambiguity are documented in
# :mod:`hamisim.research`.
#
# State (all owned here, numpy arrays behind raw pointers):
#   left[r]        free milli of card row r (0 on unusable cards, never changed)
#   cpu_req[i]     CPU requested on node i, mem_req[i] memory requested
#   cls_cnt[i, c]  bound GPU pods of class c on node i (GpuClustering), and
#                  cls_present[i] the number of classes with a pod
#   node_ver[i]    bumped whenever node i changes; every cache entry of node i
#                  records the version it was computed at.
# FGD caches, per node: the per-shape counts of cards that can host the shape
# and the free milli of those that cannot, the node's total free milli and
# its fragmentation F_n; per (node, pod spec): the node's score and best card.
# A pod changes one node, so a decision recomputes only the nodes that changed
# since the same spec was last scored.
from libc.math cimport exp
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.string cimport memcpy, strcmp, strlen
from cpython.unicode cimport PyUnicode_DecodeASCII, PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

import numpy as np

cdef enum:
    RP_RANDOM = 0
    RP_DOTPROD = 1
    RP_CLUSTERING = 2
    RP_PACKING = 3
    RP_BESTFIT = 4
    RP_FGD = 5
    # per-node rejection bits
    RB_CPU = 1
    RB_MEM = 2
    RB_MODEL = 4
    RB_GPU = 8
    R_MILLI = 1000
    R_MAX_CPU = 128000
    R_MAX_GPU = 8000

RESEARCH_CODES = {
    "random": RP_RANDOM, "dotprod": RP_DOTPROD, "gpuclustering": RP_CLUSTERING,
    "gpupacking": RP_PACKING, "bestfit": RP_BESTFIT, "fgd": RP_FGD,
    "RB_CPU": RB_CPU, "RB_MEM": RB_MEM, "RB_MODEL": RB_MODEL, "RB_GPU": RB_GPU,
    "MILLI": R_MILLI, "MAX_SPEC_CPU": R_MAX_CPU, "MAX_SPEC_GPU": R_MAX_GPU,
}

# a node whose BestFit raw score Go would reject (free below the request)
cdef int64_t R_SCORE_NONE = -4611686018427387904

#: the FailedScheduling reasons of the rejection bits, in bit order
#: (hamisim.research.model.reasons_of; checked against it at import by sim.compiled)
RESEARCH_REASONS = ("Insufficient cpu", "Insufficient memory", "GPU model mismatch",
                    "Insufficient GPU")
cdef const char* _RS_REASONS[4]
_RS_REASONS[0] = "Insufficient cpu"
_RS_REASONS[1] = "Insufficient memory"
_RS_REASONS[2] = "GPU model mismatch"
_RS_REASONS[3] = "Insufficient GPU"


cdef inline Py_ssize_t _rs_write_int(char* out, int64_t v) noexcept nogil:
    # decimal digits of v >= 0 at out, returns how many (as Python's str(int))
    cdef char tmp[24]
    cdef Py_ssize_t n = 0, k
    if v == 0:
        out[0] = 48
        return 1
    while v > 0:
        tmp[n] = <char>(48 + v % 10)
        v //= 10
        n += 1
    for k in range(n):
        out[k] = tmp[n - 1 - k]
    return n


def bounded_draws(rng, n_values):
    """``[rng.integers(n) for n in n_values]`` drawn in C from ``rng``'s bit
    generator (what ReplayCore draws for a research policy); for tests."""
    bitgen = rng.bit_generator
    cdef bitgen_t* g = <bitgen_t*>PyCapsule_GetPointer(bitgen.capsule, "BitGenerator")
    out = []
    with bitgen.lock:
        for n in n_values:
            out.append(_bounded_draw(g, n))
    return out


cdef inline int64_t* _rs_i64(a):
    cdef int64_t[::1] v = a.reshape(-1)
    return &v[0] if v.shape[0] else NULL


cdef inline int32_t* _rs_i32(a):
    cdef int32_t[::1] v = a.reshape(-1)
    return &v[0] if v.shape[0] else NULL


cdef inline uint8_t* _rs_u8(a):
    cdef uint8_t[::1] v = a.reshape(-1)
    return &v[0] if v.shape[0] else NULL


cdef inline double* _rs_f64(a):
    cdef double[::1] v = a.reshape(-1)
    return &v[0] if v.shape[0] else NULL


cdef inline int64_t _fgd_score(double f_before, double f_after) noexcept nogil:
    """floor(100 * sigmoid((F - F') / 1000)), as an integer."""
    cdef double x = (f_before - f_after) / 1000.0
    cdef double s = 1.0 / (1.0 + exp(-x))
    return <int64_t>(s * 100.0)


cdef class ResearchCore:
    """Scores and card choices of the research policies over one cluster."""

    def __init__(self, node_start, card_type, card_usable, cpu_cap, mem_cap, int n_types,
                 sh_cpu, sh_milli, sh_k, sh_w, sh_type_ok, int spec_cap=16):
        """Static arrays: ``node_start`` int64[n_nodes+1]; per card ``card_type``
        int32 (type id < n_types) and ``card_usable`` uint8; per node ``cpu_cap``
        int64 and ``mem_cap`` int64 (-1 = unconstrained); typical shapes
        ``sh_cpu``, ``sh_milli``, ``sh_k`` int64[S], ``sh_w`` float64[S] and
        ``sh_type_ok`` uint8[S, n_types]."""
        ns = np.ascontiguousarray(node_start, dtype=np.int64)
        ct = np.ascontiguousarray(card_type, dtype=np.int32)
        cu = np.ascontiguousarray(card_usable, dtype=np.uint8)
        cc = np.ascontiguousarray(cpu_cap, dtype=np.int64)
        mc = np.ascontiguousarray(mem_cap, dtype=np.int64)
        s_cpu = np.ascontiguousarray(sh_cpu, dtype=np.int64)
        s_milli = np.ascontiguousarray(sh_milli, dtype=np.int64)
        s_k = np.ascontiguousarray(sh_k, dtype=np.int64)
        s_w = np.ascontiguousarray(sh_w, dtype=np.float64)
        n_shapes = s_cpu.shape[0]
        s_tok = np.ascontiguousarray(sh_type_ok, dtype=np.uint8).reshape(n_shapes, max(n_types, 1))
        n_nodes = ns.shape[0] - 1
        n_cards = ct.shape[0]
        if n_nodes < 0 or ns[n_nodes] != n_cards or cu.shape[0] != n_cards:
            raise ValueError("ResearchCore: inconsistent card arrays")
        if cc.shape[0] != n_nodes or mc.shape[0] != n_nodes:
            raise ValueError("ResearchCore: per-node arrays must have n_nodes entries")
        if not (s_milli.shape[0] == s_k.shape[0] == s_w.shape[0] == n_shapes):
            raise ValueError("ResearchCore: shape arrays differ in length")
        if n_cards and (ct.min() < 0 or ct.max() >= n_types):
            raise ValueError("ResearchCore: card type id out of range")
        self.n_nodes = n_nodes
        self.n_cards = n_cards
        self.n_types = max(n_types, 1)
        self.n_shapes = n_shapes
        sizes = np.diff(ns)
        self.max_cards = int(sizes.max()) if n_nodes else 0
        # classes: 0 share (1 card, < 1000 milli), 1..M whole k-card pods,
        # M+1..2M fractional multi-card pods (M = max cards per node)
        self.n_cls = 2 * self.max_cards + 1
        self._static = (ns, ct, cu, cc, mc, s_cpu, s_milli, s_k, s_w, s_tok)
        self.node_start = _rs_i64(ns)
        self.card_type = _rs_i32(ct)
        self.card_usable = _rs_u8(cu)
        self.cpu_cap = _rs_i64(cc)
        self.mem_cap = _rs_i64(mc)
        self.sh_cpu = _rs_i64(s_cpu)
        self.sh_milli = _rs_i64(s_milli)
        self.sh_k = _rs_i64(s_k)
        self.sh_w = _rs_f64(s_w)
        self.sh_type_ok = _rs_u8(s_tok)

        self.np_left = (cu.astype(np.int64) * R_MILLI)
        self.np_cpu_req = np.zeros(n_nodes, dtype=np.int64)
        self.np_mem_req = np.zeros(n_nodes, dtype=np.int64)
        self.np_node_ver = np.zeros(n_nodes, dtype=np.int64)
        self.np_cls_cnt = np.zeros((n_nodes, self.n_cls), dtype=np.int64)
        self.np_cls_present = np.zeros(n_nodes, dtype=np.int32)
        self.left = _rs_i64(self.np_left)
        self.cpu_req = _rs_i64(self.np_cpu_req)
        self.mem_req = _rs_i64(self.np_mem_req)
        self.node_ver = _rs_i64(self.np_node_ver)
        self.cls_cnt = _rs_i64(self.np_cls_cnt)
        self.cls_present = _rs_i32(self.np_cls_present)

        f_node = np.zeros(n_nodes, dtype=np.float64)
        f_ver = np.full(n_nodes, -1, dtype=np.int64)
        f_total = np.zeros(n_nodes, dtype=np.int64)
        f_cnt = np.zeros(max(n_nodes * n_shapes, 1), dtype=np.int32)
        f_small = np.zeros(max(n_nodes * n_shapes, 1), dtype=np.int64)
        self._fgd = (f_node, f_ver, f_total, f_cnt, f_small)
        self.f_node = _rs_f64(f_node)
        self.f_ver = _rs_i64(f_ver)
        self.f_total = _rs_i64(f_total)
        self.f_cnt = _rs_i32(f_cnt)
        self.f_small = _rs_i64(f_small)

        w = max(n_nodes, 1)
        self.np_feasible = np.zeros(w, dtype=np.int64)
        self.np_tied = np.zeros(w, dtype=np.int64)
        self.np_rej_node = np.zeros(w, dtype=np.int64)
        self.np_rej_bits = np.zeros(w, dtype=np.int32)
        self.np_score = np.zeros(w, dtype=np.int64)
        self.np_node_gpu = np.full(w, -1, dtype=np.int32)
        mk = max(self.max_cards, 1)
        self.np_pick = np.zeros(mk, dtype=np.int32)
        self.feas = _rs_i64(self.np_feasible)
        self.tied = _rs_i64(self.np_tied)
        self.rej_node = _rs_i64(self.np_rej_node)
        self.rej_bits = _rs_i32(self.np_rej_bits)
        self.score = _rs_i64(self.np_score)
        self.node_gpu = _rs_i32(self.np_node_gpu)
        self.pick = _rs_i32(self.np_pick)
        mark = np.zeros(mk, dtype=np.uint8)
        chg_row = np.zeros(mk, dtype=np.int64)
        chg_new = np.zeros(mk, dtype=np.int64)
        self._spec = None
        self._keep_scratch = (mark, chg_row, chg_new)
        self.mark = _rs_u8(mark)
        self.chg_row = _rs_i64(chg_row)
        self.chg_new = _rs_i64(chg_new)
        self.spec_cap = 0
        self.grow_specs(max(spec_cap, 1))
        self.n_feasible = self.n_tied = self.n_rejected = self.next_start = self.n_pick = 0
        self.best_score = 0

    def grow_specs(self, int cap):
        """Room for pod-spec ids ``0..cap-1`` in the (node, spec) score cache."""
        if cap <= self.spec_cap:
            return
        n = max(self.n_nodes, 1)
        score = np.zeros((n, cap), dtype=np.int64)
        gpu = np.full((n, cap), -1, dtype=np.int32)
        ver = np.full((n, cap), -1, dtype=np.int64)
        if self._spec is not None:
            old_s, old_g, old_v = self._spec
            score[:, :self.spec_cap] = old_s
            gpu[:, :self.spec_cap] = old_g
            ver[:, :self.spec_cap] = old_v
        self._spec = (score, gpu, ver)
        self.c_score = _rs_i64(score)
        self.c_gpu = _rs_i32(gpu)
        self.c_ver = _rs_i64(ver)
        self.spec_cap = cap

    # -- state -----------------------------------------------------------
    def bind(self, int node, pos, int64_t milli, int64_t cpu, int64_t mem, int cls,
             int sign=1):
        """Add (``sign=1``) or remove (``-1``) a pod: ``milli`` on each card at
        node-local positions ``pos`` (usable cards only), its CPU and memory, and
        its GpuClustering class ``cls`` (-1 = none)."""
        if not 0 <= node < self.n_nodes:
            raise IndexError(f"node {node} out of range")
        cdef int64_t a = self.node_start[node], b = self.node_start[node + 1]
        cdef int64_t r
        for p in pos:
            r = a + <int64_t>p
            if r < a or r >= b:
                raise IndexError(f"card position {p} out of range on node {node}")
            if self.card_usable[r]:
                self.left[r] -= sign * milli
        self._add_pod(node, cpu, mem, cls, sign)

    # -- one attempt -----------------------------------------------------
    def attempt(self, int policy, int64_t cpu, int64_t cpu_s, int64_t mem, int k,
                int64_t milli, const uint8_t[::1] type_ok, int spec, int cls, bint no_req,
                int start, int wanted):
        """Filter (from the rotating ``start``, stopping after ``wanted`` feasible
        nodes) and score. Returns the number of top-scored nodes, listed in
        cluster order in ``np_tied[:n_tied]`` (every feasible node for
        ``random``); 0 when no node fits (``np_rej_node`` / ``np_rej_bits``
        then hold the examined nodes' reasons in visiting order)."""
        if type_ok.shape[0] < self.n_types:
            raise ValueError("type_ok must have one entry per type id")
        if spec >= self.spec_cap:
            raise ValueError("spec id beyond the cache; call grow_specs first")
        if policy < RP_RANDOM or policy > RP_FGD:
            raise ValueError(f"unknown research policy code {policy}")
        with nogil:
            self._attempt(policy, cpu, cpu_s, mem, k, milli, &type_ok[0], spec, cls, no_req,
                          start, wanted)
        return self.n_tied

    def count_fit(self, int node, int64_t milli, const uint8_t[::1] type_ok):
        """Cards of ``node`` that can take ``milli`` (type allowed, free >= milli)."""
        if not 0 <= node < self.n_nodes:
            raise IndexError(f"node {node} out of range")
        cdef int64_t r, n = 0
        for r in range(self.node_start[node], self.node_start[node + 1]):
            if type_ok[self.card_type[r]] and self.left[r] >= milli:
                n += 1
        return n

    def choose(self, int policy, int node, int k, int64_t milli, const uint8_t[::1] type_ok,
               int draw=0):
        """The cards the pod takes on ``node`` (node-local positions in
        ``np_pick[:n_pick]``, in choice order); -1 if they cannot be found.
        ``draw`` is Random's index among the fitting cards of a share pod."""
        if not 0 <= node < self.n_nodes:
            raise IndexError(f"node {node} out of range")
        return self._choose(policy, node, k, milli, &type_ok[0], draw)

    cdef int _choose(self, int policy, int node, int k, int64_t milli, const uint8_t* type_ok,
                     int draw) noexcept nogil:
        cdef int64_t a = self.node_start[node], b = self.node_start[node + 1], r
        cdef int n = 0
        self.n_pick = 0
        if k <= 0:
            return 0
        if k == 1 and milli < R_MILLI and policy == RP_FGD:
            if self.node_gpu[node] < 0:
                return -1
            self.pick[0] = self.node_gpu[node]
            self.n_pick = 1
            return 1
        if k == 1 and milli < R_MILLI and policy == RP_RANDOM:
            for r in range(a, b):
                if type_ok[self.card_type[r]] and self.left[r] >= milli:
                    if n == draw:
                        self.pick[0] = <int32_t>(r - a)
                        self.n_pick = 1
                        return 1
                    n += 1
            return -1
        n = self._tightest(node, k, milli, type_ok)
        if n < k:
            return -1
        self.n_pick = k
        return k

    # -- kernel ----------------------------------------------------------
    cdef int _fit_bits(self, int i, int64_t cpu, int64_t mem, int k, int64_t milli,
                       const uint8_t* tok) noexcept nogil:
        cdef int bits = 0
        cdef int64_t a, b, r
        cdef int n = 0
        cdef bint any_type = False
        if cpu > self.cpu_cap[i] - self.cpu_req[i]:
            bits |= RB_CPU
        if self.mem_cap[i] >= 0 and mem > self.mem_cap[i] - self.mem_req[i]:
            bits |= RB_MEM
        if bits or k <= 0:
            return bits
        a = self.node_start[i]
        b = self.node_start[i + 1]
        if a == b:
            return RB_GPU
        for r in range(a, b):
            if tok[self.card_type[r]]:
                any_type = True
                if self.left[r] >= milli:
                    n += 1
        if not any_type:
            return RB_MODEL
        if n < k:
            return RB_GPU
        return 0

    cdef int _tightest(self, int i, int k, int64_t milli, const uint8_t* tok) noexcept nogil:
        """The k fitting cards with the least free milli, ties to the lower
        index (a stable ascending sort), into pick[0..k); returns how many."""
        cdef int64_t a = self.node_start[i], b = self.node_start[i + 1], r, best_r, best_l
        cdef int t
        for r in range(a, b):
            self.mark[r - a] = 0
        for t in range(k):
            best_r = -1
            best_l = 0
            for r in range(a, b):
                if self.mark[r - a] or not tok[self.card_type[r]] or self.left[r] < milli:
                    continue
                if best_r < 0 or self.left[r] < best_l:
                    best_r = r
                    best_l = self.left[r]
            if best_r < 0:
                return t
            self.mark[best_r - a] = 1
            self.pick[t] = <int32_t>(best_r - a)
        return k

    cdef int64_t _gpu_left(self, int i) noexcept nogil:
        cdef int64_t r, s = 0
        for r in range(self.node_start[i], self.node_start[i + 1]):
            s += self.left[r]
        return s

    cdef int64_t _score_dotprod(self, int i, int64_t cpu_s, int k, int64_t milli) noexcept nogil:
        cdef int64_t cpu_left = self.cpu_cap[i] - self.cpu_req[i]
        cdef double a0, a1, b0, b1, ip, cur
        if cpu_left < cpu_s:
            return 0
        a0 = <double>cpu_left / <double>R_MAX_CPU
        a1 = <double>self._gpu_left(i) / <double>R_MAX_GPU
        b0 = <double>cpu_s / <double>R_MAX_CPU
        b1 = <double>(milli * k) / <double>R_MAX_GPU
        ip = 0.0
        ip = ip + a0 * b0
        ip = ip + a1 * b1
        cur = ip / 2.0
        cur = 1.0 - cur
        return <int64_t>(100.0 * cur)

    cdef int64_t _score_clustering(self, int i, int cls) noexcept nogil:
        cdef int64_t base, band
        if cls < 0 or cls >= self.n_cls:
            return 0
        base = 25 * (R_MAX_GPU - self._gpu_left(i)) / R_MAX_GPU
        if self.cls_cnt[i * self.n_cls + cls] > 0:
            band = 75 if self.cls_present[i] == 1 else 50
        else:
            band = 25 if self.cls_present[i] == 0 else 0
        return base + band

    cdef int64_t _score_packing(self, int i, int k, int64_t milli,
                                const uint8_t* tok) noexcept nogil:
        cdef int64_t a = self.node_start[i], b = self.node_start[i + 1], r
        cdef int64_t g = b - a, free_cards = 0, n_ff = 0, pct = 0, s
        cdef int t, got
        if milli <= 0 or k <= 0:
            return 0
        for r in range(a, b):
            if self.left[r] == R_MILLI:
                free_cards += 1
        if free_cards == g:
            s = 33 - g
            return s if s > g else g
        got = self._tightest(i, k, milli, tok)
        if got < k:
            return 0
        for t in range(k):
            r = a + self.pick[t]
            if self.left[r] == R_MILLI:
                n_ff += 1
            pct += self.left[r] * 100 / R_MILLI
        if n_ff > 0:
            s = 50 - n_ff
            return s if s > 33 else 33
        s = 100 - pct / 10
        return s if s > 50 else 50

    cdef int64_t _score_bestfit(self, int i, int64_t cpu_s, int k, int64_t milli) noexcept nogil:
        cdef double f0 = <double>(self.cpu_cap[i] - self.cpu_req[i])
        cdef double f1 = <double>self._gpu_left(i)
        cdef double q0 = <double>cpu_s, q1 = <double>(milli * k)
        cdef double s = 0.0
        if f0 < q0 or f1 < q1:
            return R_SCORE_NONE
        s = s + (f0 - q0) / <double>R_MAX_CPU * 0.5
        s = s + (f1 - q1) / <double>R_MAX_GPU * 0.5
        s = (1.0 - s) * 100.0
        return <int64_t>s

    # FGD ------------------------------------------------------------------
    cdef inline int64_t _frag(self, int m, int64_t cnt, int64_t small, int64_t total,
                              int64_t cpu_left) noexcept nogil:
        if self.sh_milli[m] <= 0:
            return total
        if cnt >= self.sh_k[m] and cpu_left >= self.sh_cpu[m]:
            return small
        return total

    cdef void _fgd_refresh(self, int i) noexcept nogil:
        """Node i's per-shape counts, total free milli and F_n."""
        cdef int64_t a = self.node_start[i], b = self.node_start[i + 1], r, L
        cdef int64_t total = 0, small, cnt, mm
        cdef int64_t cpu_left = self.cpu_cap[i] - self.cpu_req[i]
        cdef int m, S = self.n_shapes, T = self.n_types
        cdef double F = 0.0
        for r in range(a, b):
            total += self.left[r]
        for m in range(S):
            mm = self.sh_milli[m]
            cnt = 0
            small = 0
            for r in range(a, b):
                L = self.left[r]
                if self.sh_type_ok[m * T + self.card_type[r]] and L >= mm:
                    cnt += 1
                else:
                    small += L
            self.f_cnt[i * S + m] = <int32_t>cnt
            self.f_small[i * S + m] = small
            F = F + self.sh_w[m] * <double>self._frag(m, cnt, small, total, cpu_left)
        self.f_node[i] = F
        self.f_total[i] = total
        self.f_ver[i] = self.node_ver[i]

    cdef double _fgd_after(self, int i, int nchg, int64_t cpu_left) noexcept nogil:
        """F_n after cards chg_row[0..nchg) get free milli chg_new[..] and the
        free CPU becomes cpu_left (from the cached per-shape counts)."""
        cdef int S = self.n_shapes, T = self.n_types, m, c
        cdef int64_t total = self.f_total[i], cnt, small, mm, r, L, L2
        cdef bint ok
        cdef double F = 0.0
        for c in range(nchg):
            total += self.chg_new[c] - self.left[self.chg_row[c]]
        for m in range(S):
            cnt = self.f_cnt[i * S + m]
            small = self.f_small[i * S + m]
            mm = self.sh_milli[m]
            for c in range(nchg):
                r = self.chg_row[c]
                ok = self.sh_type_ok[m * T + self.card_type[r]]
                L = self.left[r]
                L2 = self.chg_new[c]
                if ok and L >= mm:
                    cnt -= 1
                else:
                    small -= L
                if ok and L2 >= mm:
                    cnt += 1
                else:
                    small += L2
            F = F + self.sh_w[m] * <double>self._frag(m, cnt, small, total, cpu_left)
        return F

    cdef int64_t _score_fgd(self, int i, int64_t cpu_s, int k, int64_t milli,
                            const uint8_t* tok, int spec) noexcept nogil:
        cdef int64_t a = self.node_start[i], b = self.node_start[i + 1], r, r2
        cdef int64_t cpu_left, s, best_s = 0
        cdef int best = -1, t, got
        cdef bint seen
        cdef double F, F2
        cdef int64_t ci
        if spec >= 0:
            ci = <int64_t>i * self.spec_cap + spec
            if self.c_ver[ci] == self.node_ver[i]:
                self.node_gpu[i] = self.c_gpu[ci]
                return self.c_score[ci]
        if self.f_ver[i] != self.node_ver[i]:
            self._fgd_refresh(i)
        F = self.f_node[i]
        cpu_left = self.cpu_cap[i] - self.cpu_req[i]
        if k == 1 and milli < R_MILLI:
            # a share pod: try every card that fits, keep the first best
            for r in range(a, b):
                if not tok[self.card_type[r]] or self.left[r] < milli:
                    continue
                seen = False
                for r2 in range(a, r):
                    if (tok[self.card_type[r2]] and self.left[r2] == self.left[r]
                            and self.card_type[r2] == self.card_type[r]):
                        seen = True
                        break
                if seen:        # same free milli and type: same score, not better
                    continue
                self.chg_row[0] = r
                self.chg_new[0] = self.left[r] - milli
                F2 = self._fgd_after(i, 1, cpu_left - cpu_s)
                s = _fgd_score(F, F2)
                if best < 0 or s > best_s:
                    best = <int>(r - a)
                    best_s = s
            s = best_s
        else:
            # CPU-only, whole-card and multi-card pods: the tightest cards
            if cpu_left < cpu_s:
                F2 = F          # Go's Sub leaves the node unchanged
            else:
                got = self._tightest(i, k, milli, tok) if k > 0 else 0
                for t in range(got):
                    self.chg_row[t] = a + self.pick[t]
                    self.chg_new[t] = self.left[a + self.pick[t]] - milli
                F2 = self._fgd_after(i, got, cpu_left - cpu_s)
            s = _fgd_score(F, F2)
        self.node_gpu[i] = best
        if spec >= 0:
            ci = <int64_t>i * self.spec_cap + spec
            self.c_score[ci] = s
            self.c_gpu[ci] = best
            self.c_ver[ci] = self.node_ver[i]
        return s

    cdef void _attempt(self, int policy, int64_t cpu, int64_t cpu_s, int64_t mem, int k,
                       int64_t milli, const uint8_t* tok, int spec, int cls, bint no_req,
                       int start, int wanted) noexcept nogil:
        cdef int n = self.n_nodes, step, i, j, bits, nfeas = 0, nrej = 0, examined = 0, p
        cdef int64_t s, best = 0
        self.n_feasible = self.n_tied = self.n_rejected = 0
        self.best_score = 0
        if n == 0:
            self.next_start = 0
            return
        if start < 0 or start >= n:
            start = 0
        if wanted <= 0:
            wanted = n
        for step in range(n):
            i = (start + step) % n
            examined += 1
            bits = self._fit_bits(i, cpu, mem, k, milli, tok)
            if bits:
                self.rej_node[nrej] = i
                self.rej_bits[nrej] = bits
                nrej += 1
            else:
                self.feas[nfeas] = i
                nfeas += 1
                if nfeas >= wanted:
                    break
        self.next_start = (start + examined) % n
        self.n_rejected = nrej
        self.n_feasible = nfeas
        if nfeas == 0:
            return
        # the feasible nodes in cluster order: undo the rotation
        p = 0
        for j in range(1, nfeas):
            if self.feas[j] < self.feas[j - 1]:
                p = j
                break
        if p > 0:
            for j in range(nfeas):
                self.tied[j] = self.feas[(p + j) % nfeas]
            for j in range(nfeas):
                self.feas[j] = self.tied[j]
        for j in range(nfeas):
            i = <int>self.feas[j]
            self.node_gpu[i] = -1
            if policy == RP_RANDOM:
                s = 0
            elif policy == RP_DOTPROD:
                s = self._score_dotprod(i, cpu_s, k, milli)
            elif policy == RP_CLUSTERING:
                s = self._score_clustering(i, cls) if k > 0 else 0
            elif policy == RP_PACKING:
                s = self._score_packing(i, k, milli, tok)
            elif policy == RP_BESTFIT:
                s = self._score_bestfit(i, cpu_s, k, milli)
            else:
                s = 100 if no_req else self._score_fgd(i, cpu_s, k, milli, tok, spec)
            self.score[j] = s
            if j == 0 or s > best:
                best = s
        self.best_score = best
        for j in range(nfeas):
            if self.score[j] == best:
                self.tied[self.n_tied] = self.feas[j]
                self.n_tied += 1

    # -- replay: ReplayCore's research attempts (hamisim.sim.compiled) -------------
    # ResearchScheduler.schedule/delete/adopt for the compiled engine, in C: the
    # attempt and its draws, the pod's cards as the meter's usage and devices
    # annotation, and the model's books when a pod binds, leaves or re-adopts its
    # app containers' cards. ReplayCore calls these at its hook points only.
    def replay_setup(self, *, int policy, bint draw_ties, rng, t_cpu, t_cpu_s, t_mem, t_k,
                     t_milli, t_tok, t_spec, t_cls, t_noreq, t_n_init, t_cc_off, t_cc,
                     card_ids, card_devmem, int n_pods, int n_initial):
        """Get ready to decide a replay's attempts: per template its request
        (``t_cpu`` fit CPU, ``t_cpu_s`` scoring CPU, ``t_mem``, ``t_k`` cards of
        ``t_milli`` each, ``t_tok`` uint8[T, n_types] its type filter, ``t_spec``
        FGD's spec id (-1 otherwise), ``t_cls`` its class, ``t_noreq`` no
        request at all, ``t_n_init`` init containers, its containers' cards
        ``t_cc[t_cc_off[t]:t_cc_off[t+1]]``, init first); ``rng`` the
        scheduler's own seeded generator (ties and Random's card draw, drawn
        in C from its bit generator); per card its id and memory (MiB); pods
        ``0 .. n_initial-1`` are an initial state (:meth:`replay_initial`)."""
        if policy < RP_RANDOM or policy > RP_FGD:
            raise ValueError(f"unknown research policy code {policy}")
        T = len(t_cpu)
        tok = np.ascontiguousarray(t_tok, dtype=np.uint8).reshape(T, self.n_types) \
            if T else np.zeros(0, dtype=np.uint8)
        cc_off = np.ascontiguousarray(t_cc_off, dtype=np.int64)
        if len(cc_off) != T + 1 or len(card_ids) != self.n_cards \
                or len(card_devmem) != self.n_cards:
            raise ValueError("replay_setup: expected one entry per template / card")
        spec = np.ascontiguousarray(t_spec, dtype=np.int32)
        if T and spec.max() >= self.spec_cap:
            self.grow_specs(int(spec.max()) + 1)
        self.rp_policy = policy
        self.rp_draw_ties = draw_ties
        self.rp_rng = rng
        self.rp_bitgen = <bitgen_t*>PyCapsule_GetPointer(rng.bit_generator.capsule,
                                                         "BitGenerator")
        self.rt_cpu = np.ascontiguousarray(t_cpu, dtype=np.int64)
        self.rt_cpu_s = np.ascontiguousarray(t_cpu_s, dtype=np.int64)
        self.rt_mem = np.ascontiguousarray(t_mem, dtype=np.int64)
        self.rt_milli = np.ascontiguousarray(t_milli, dtype=np.int64)
        self.rt_k = np.ascontiguousarray(t_k, dtype=np.int32)
        self.rt_spec = spec
        self.rt_cls = np.ascontiguousarray(t_cls, dtype=np.int32)
        self.rt_noreq = np.ascontiguousarray(t_noreq, dtype=np.uint8)
        self.rt_n_init = np.ascontiguousarray(t_n_init, dtype=np.int32)
        self.rt_tok = tok.reshape(-1)
        self.rt_cc_off = cc_off
        self.rt_cc = np.ascontiguousarray(t_cc, dtype=np.int32)
        encoded = [c.encode("utf-8") for c in card_ids]
        off = np.zeros(len(encoded) + 1, dtype=np.int64)
        off[1:] = np.cumsum([len(b) for b in encoded])
        self.card_off = off
        self.card_text = b"".join(encoded) + b"\0"
        self.card_devmem = np.ascontiguousarray(card_devmem, dtype=np.int64)
        self.n_initial = n_initial
        self.rp_initial = [None] * n_initial
        self.rp_readopt = np.zeros(max(n_pods, 1), dtype=np.uint8)
        # the longest devices text: every card of a node, each with its id, two
        # numbers and separators, plus one ';' per container
        widest = int(np.diff(off).max()) if len(encoded) else 0
        n_cont = int(np.diff(cc_off).max()) if T else 0
        buf = np.zeros(max(self.max_cards, 1) * (widest + 64) + n_cont + 256, dtype=np.uint8)
        self.rp_keep_buf = buf
        cdef uint8_t[::1] view = buf
        self.rp_buf = <char*>&view[0]
        self.replaying = True

    def replay_initial(self, int k, int node, pos, milli, int64_t cpu, int64_t mem, int cls):
        """Initial pod ``k``'s place on this model (ResearchScheduler.adopt's
        ``_Bound``): applied when ReplayCore adopts it, removed when it leaves."""
        self.rp_initial[k] = (node, tuple(pos), tuple(milli), cpu, mem, cls)

    cdef int replay_attempt(self, int t, int start, int wanted) except -2:
        # ResearchScheduler.schedule: the chosen node (its cards in pick[:n_pick]),
        # or -1 (the examined nodes' bits in rej_node/rej_bits); next_start moves
        cdef int k = self.rt_k[t], j, node, n_fit = 0, got
        cdef int64_t milli = self.rt_milli[t], r, draw = 0
        cdef const uint8_t* tok = &self.rt_tok[<Py_ssize_t>t * self.n_types]
        cdef int spec = self.rt_spec[t] if self.rp_policy == RP_FGD else -1
        self._attempt(self.rp_policy, self.rt_cpu[t], self.rt_cpu_s[t], self.rt_mem[t], k,
                      milli, tok, spec, self.rt_cls[t], self.rt_noreq[t], start, wanted)
        if self.n_tied == 0:
            return -1
        j = self.n_tied - 1                 # node_tie_break "last"
        if self.n_tied > 1 and self.rp_draw_ties:
            j = <int>_bounded_draw(self.rp_bitgen, self.n_tied)
        node = <int>self.tied[j]
        if self.rp_policy == RP_RANDOM and k == 1 and milli < R_MILLI:
            for r in range(self.node_start[node], self.node_start[node + 1]):
                if tok[self.card_type[r]] and self.left[r] >= milli:
                    n_fit += 1
            draw = _bounded_draw(self.rp_bitgen, n_fit)
        got = self._choose(self.rp_policy, node, k, milli, tok, <int>draw)
        if got != k:        # pragma: no cover - the filter guarantees the cards
            raise AssertionError("research kernel: chosen node no longer fits")
        return node

    cdef object replay_take(self, int t, int node, bint aligned, bint pad, int64_t* rows,
                            int64_t* used, int64_t* mem, int64_t* cores, int32_t* n,
                            int64_t* a_rows, int64_t* a_used, int64_t* a_mem,
                            int64_t* a_cores, int32_t* a_n):
        # the pod's cards just chosen (pick[:n_pick]) as engine._usage derives them
        # from the decision's containers: one slot per card (a research pod's cards
        # are distinct), usedmem = devmem*milli//1000, usedcores = milli//10, into
        # rows/used/mem/cores[:n]; the app containers' alone (engine._init_done)
        # into a_*[:a_n]; returns the devices annotation (None without cards)
        cdef int64_t a = self.node_start[node], milli = self.rt_milli[t], r, m, c
        cdef int64_t cc0 = self.rt_cc_off[t], cc1 = self.rt_cc_off[t + 1], ci
        cdef int n_init = self.rt_n_init[t], e = -1, p = 0, i, cnt, na = 0
        cdef Py_ssize_t pos = 0, idlen
        cdef const char* ids = self.card_text
        n[0] = 0
        a_n[0] = 0
        if self.n_pick == 0:
            return None
        c = milli // 10
        for ci in range(cc0, cc1):
            cnt = self.rt_cc[ci]
            if cnt > 0 or aligned:
                e += 1              # HAMi's list: GPU-less containers only when aligned
            if cnt == 0 and not pad:
                continue            # nor in the annotation when the node does not pad
            for i in range(cnt):
                r = a + self.pick[p]
                p += 1
                m = self.card_devmem[r] * milli // R_MILLI
                rows[p - 1] = r
                used[p - 1] = 1
                mem[p - 1] = m
                cores[p - 1] = c
                if e >= n_init:
                    a_rows[na] = r
                    a_used[na] = 1
                    a_mem[na] = m
                    a_cores[na] = c
                    na += 1
                idlen = self.card_off[r + 1] - self.card_off[r]
                memcpy(self.rp_buf + pos, ids + self.card_off[r], idlen)
                pos += idlen
                memcpy(self.rp_buf + pos, b",NVIDIA,", 8)
                pos += 8
                pos += _rs_write_int(self.rp_buf + pos, m)
                self.rp_buf[pos] = 44      # ','
                pos += 1
                pos += _rs_write_int(self.rp_buf + pos, c)
                self.rp_buf[pos] = 58      # ':'
                pos += 1
            self.rp_buf[pos] = 59          # ';'
            pos += 1
        n[0] = p
        a_n[0] = na
        return PyUnicode_DecodeUTF8(self.rp_buf, pos, NULL)

    cdef void replay_apply(self, int k, int t, int node, const int64_t* rows,
                           const int64_t* mem, const int64_t* cores, int n, int sign):
        # ResearchScheduler._apply (sign 1) / delete (-1) of pod k on node, whose
        # cards are rows[:n]: milli per card the template's, or after its init
        # containers finished (replay_readopted) read back from its usage as
        # ResearchScheduler.adopt reads a pick; an initial pod as adopted
        cdef int i, cls
        cdef int64_t r, m, top = 0
        if k < self.n_initial:
            b = self.rp_initial[k]          # (node, pos, milli, cpu, mem, cls): cold
            for p, mm in zip(b[1], b[2]):
                self.bind(b[0], (p,), mm, 0, 0, -1, sign)
            self.bind(b[0], (), 0, b[3], b[4], b[5], sign)
            return
        if not self.rp_readopt[k]:
            m = self.rt_milli[t]
            for i in range(n):
                if self.card_usable[rows[i]]:
                    self.left[rows[i]] -= sign * m
            cls = self.rt_cls[t]
        else:
            for i in range(n):
                r = rows[i]
                if cores[i] > 0:
                    m = (cores[i] if cores[i] < 100 else 100) * 10
                elif self.card_devmem[r] > 0:
                    m = mem[i] * R_MILLI // self.card_devmem[r]
                    if m > R_MILLI:
                        m = R_MILLI
                else:
                    m = R_MILLI
                if m > top:
                    top = m
                if self.card_usable[r]:
                    self.left[r] -= sign * m
            # hamisim.research.model.pod_class of the cards kept
            if n <= 0 or n > self.max_cards:
                cls = -1
            elif top >= R_MILLI:
                cls = n
            elif n == 1:
                cls = 0
            else:
                cls = self.max_cards + n
        self._add_pod(node, self.rt_cpu[t], self.rt_mem[t], cls, sign)

    cdef void replay_readopted(self, int k) noexcept:
        # engine._init_done re-adopts pod k's app containers' cards: from now on its
        # milli per card is read back from its usage (replay_apply)
        self.rp_readopt[k] = 1

    cdef void _add_pod(self, int node, int64_t cpu, int64_t mem, int cls, int sign) noexcept:
        # bind's CPU, memory and class part; the node changed
        cdef int64_t before, after
        self.cpu_req[node] += sign * cpu
        self.mem_req[node] += sign * mem
        if 0 <= cls < self.n_cls:
            before = self.cls_cnt[node * self.n_cls + cls]
            after = before + sign
            self.cls_cnt[node * self.n_cls + cls] = after
            if before <= 0 < after:
                self.cls_present[node] += 1
            elif after <= 0 < before:
                self.cls_present[node] -= 1
        self.node_ver[node] += 1

    cdef object replay_fail_text(self):
        # histogram_message(n_nodes, bits_histogram(bits)) of the failed attempt:
        # "0/N nodes are available: <n> <reason>, ... ." with the entries sorted
        # as strings (kube-scheduler sorts them so)
        cdef int64_t counts[4]
        cdef char entry[4][48]
        cdef int order[4]
        cdef int i, j, b, n_entries = 0, tmp
        cdef Py_ssize_t pos = 0, length
        cdef size_t rlen
        cdef bint same = self.rp_last_text is not None
        for b in range(4):
            counts[b] = 0
        for i in range(self.n_rejected):
            for b in range(4):
                if self.rej_bits[i] & (1 << b):
                    counts[b] += 1
        for b in range(4):
            if counts[b] != self.rp_last_counts[b]:
                same = False
            self.rp_last_counts[b] = counts[b]
        if same:            # a saturated cluster repeats its verdict: the same text
            return self.rp_last_text
        for b in range(4):
            if counts[b] == 0:
                continue
            length = _rs_write_int(entry[n_entries], counts[b])
            entry[n_entries][length] = 32       # ' '
            rlen = strlen(_RS_REASONS[b])
            memcpy(&entry[n_entries][length + 1], _RS_REASONS[b], rlen)
            entry[n_entries][length + 1 + rlen] = 0
            order[n_entries] = n_entries
            n_entries += 1
        for i in range(1, n_entries):           # insertion sort by strcmp
            j = i
            while j > 0 and strcmp(entry[order[j - 1]], entry[order[j]]) > 0:
                tmp = order[j]
                order[j] = order[j - 1]
                order[j - 1] = tmp
                j -= 1
        memcpy(self.rp_buf, b"0/", 2)
        pos = 2
        pos += _rs_write_int(self.rp_buf + pos, self.n_nodes)
        memcpy(self.rp_buf + pos, b" nodes are available:", 21)
        pos += 21
        for i in range(n_entries):
            self.rp_buf[pos] = 32 if i == 0 else 44
            pos += 1
            if i > 0:
                self.rp_buf[pos] = 32
                pos += 1
            length = strlen(entry[order[i]])
            memcpy(self.rp_buf + pos, entry[order[i]], length)
            pos += length
        if n_entries:
            self.rp_buf[pos] = 46      # '.'
            pos += 1
        self.rp_last_text = PyUnicode_DecodeASCII(self.rp_buf, pos, NULL)
        return self.rp_last_text
