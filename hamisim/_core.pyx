# cython: language_level=3
"""Compiled filter-and-score kernel: HAMi's Filter for one attempt.

The readable specification is :mod:`hamisim.hami.reference`; every function here
is the twin of one there and must take the identical decision (checked by
tests/test_kernel_equivalence.py and the HAMi vectors on both backends).

Layout (see :mod:`hamisim.sim.arrays`): card rows grouped by node, node ``i`` owning
rows ``node_start[i]:node_start[i+1]`` in registration order. Inside a node
the kernel works on *local* positions ``0..k-1``; a permutation ``perm`` of
them is the node's card list as HAMi holds it (re-sorted in place with Go's
``sort.Sort`` for every container). Nothing on the hot path allocates, raises
or touches a Python object: scratch buffers are sized once (and grown from
Python, outside ``nogil``, when a larger pod comes along).

Float32: card and node scores are computed in C ``float``, one operation at a
time in Go's order; setup.py forbids FMA contraction (``-ffp-contract=off``).

This module is the kernel (CardTable, PodSpec, Core; _core.pxd declares them for
the modules that cimport them). Its codes and structs are declared in _codes.pxd
and _types.pxd, Go's sort is hamisim._gosort, the ordered node index
_nodeindex.pxd, the memo of failed evaluations hamisim._memo; the meter, the
research policies, the failure text and the replay engine are modules of their
own (docs/DESIGN.md §1).
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, INT64_MIN, INT64_MAX
from libc.math cimport INFINITY
from libc.string cimport memcmp, memcpy, memset
from libc.stdlib cimport malloc, calloc, free

from hamisim._codes cimport *
from hamisim._types cimport Node
from hamisim._gosort cimport SortCtx, _sort_less, go_sort_perm
from hamisim._nodeindex cimport (_idx_empty, _idx_leaf, _idx_headroom, _idx_combine, _idx_may_fit, _idx_cand,
                                 _idx_push, _idx_pop)
from hamisim._memo cimport (ID_ROWS, ROW_W, MEMO_BUDGET, _intern_init, _intern_free, _intern,
                            _node_of_row)

import numpy as np

# The C codes of _codes.pxd for Python (hamisim.hami.policy, hamisim.hami.decision,
# hamisim.hami.noderows); hamisim.sim.kernel checks them against the Python constants at import.
CODES = {
    "MODE_CHAIN": MODE_CHAIN, "SINGLE_MUTEX": SINGLE_MUTEX,
    "SINGLE_BINPACK": SINGLE_BINPACK, "SINGLE_SPREAD": SINGLE_SPREAD,
    "KEY_BINPACK": KEY_BINPACK, "KEY_SPREAD": KEY_SPREAD, "KEY_NUMA": KEY_NUMA,
    "NO_PERCENTAGE": NO_PERCENTAGE, "Q_WIDTH": Q_WIDTH,
    "QF_REGISTERED": QF_REGISTERED, "QF_WORD": QF_WORD, "FAM_NVIDIA": FAM_NVIDIA, "FAM_AMD": FAM_AMD,
    "FAM_BIREN": FAM_BIREN, "FAM_MTHREADS": FAM_MTHREADS,
    "FAM_ASCEND": FAM_ASCEND, "FAM_910C": FAM_910C, "FAM_ASCEND_LAST": FAM_ASCEND_LAST,
    "NETWORK_WEIGHT": NETWORK_WEIGHT, "LISTED_ZERO": LISTED_ZERO,
    "FAM_KUNLUN": FAM_KUNLUN, "FAM_XPU": FAM_XPU,
    "TYPE_CASE_MISMATCH": TYPE_CASE_MISMATCH,
}
REASON_ORDER = (
    "CardNotHealth", "CardCordoned", "CardTypeMismatch", "NumaNotFit", "CardUuidMismatch",
    "CardTimeSlicingExhausted", "ExclusiveDeviceAllocateConflict", "CardInsufficientMemory",
    "CardInsufficientCore", "CardComputeUnitsExhausted", "AllocatedCardsInsufficientRequest",
    "ResourceQuotaNotFit", "CardMigTopologyInfeasible", "CardReservedByMutex",
    "CardNotFoundCustomFilterRule", "ModeNotFit",
)
ST_NAMES = {"FIT": ST_FIT, "FIT_FAILED": ST_FIT_FAILED, "INSUFFICIENT": ST_INSUFFICIENT,
            "TYPE_NOT_FOUND": ST_TYPE_NOT_FOUND, "UNREGISTERED": ST_UNREGISTERED,
            "MIG_READD": ST_MIG_READD}
# Core.rank_attempt's row columns (RW_* in _codes.pxd), in this order.
ROW_COLUMNS = (("index", "cards", "gpumem", "gpumem_free", "gpucores", "gpucores_free",
                "tenants", "used_cards", "pick_numas"),
               ("hami_score", "cpu_free", "memory_free"))


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------
cdef inline int64_t _floordiv(int64_t a, int64_t b) noexcept nogil:
    # Python's // (floor), as the reference computes.
    cdef int64_t q = a / b
    if (a % b != 0) and ((a < 0) != (b < 0)):
        q -= 1
    return q


cdef inline void _node_view(const Cards* c, int i, Node* nv) noexcept nogil:
    cdef int r0 = <int>c.node_start[i]
    nv.k = <int>(c.node_start[i + 1] - r0)
    nv.row0 = r0
    nv.count = c.count + r0
    nv.devmem = c.devmem + r0
    nv.devcore = c.devcore + r0
    nv.numa = c.numa + r0
    nv.index = c.index + r0
    nv.health = c.health + r0
    nv.cordoned = c.cordoned + r0
    nv.offer = c.offer + r0
    nv.type_exact = c.type_exact + r0
    nv.type_id = c.type_id + r0
    nv.mode_id = c.mode_id + r0
    nv.used = c.used + r0
    nv.usedmem = c.usedmem + r0
    nv.usedcores = c.usedcores + r0
    nv.pair = c.pair + c.pair_start[i]
    nv.aligned = 1
    if c.aligned != NULL:
        nv.aligned = c.aligned[i]
    nv.n_mig = c.n_mig[i]
    nv.is_mig = c.is_mig + r0
    nv.mig_p0 = c.mig_p0 + r0
    nv.mig_p1 = c.mig_p1 + r0
    nv.mig_occ = c.mig_occ + r0
    nv.mp_mem = c.mp_mem
    nv.mp_core = c.mp_core
    nv.mp_pl0 = c.mp_pl0
    nv.mp_pl1 = c.mp_pl1
    nv.pl_mask = c.pl_mask
    nv.reserved = c.reserved + r0
    nv.network = c.network + r0
    nv.vnpu_core = c.vnpu_core[i]
    nv.kunlun_only = c.kunlun_only[i]


cdef inline bint _mig_select(const Node* nv, int p, uint64_t occ, int64_t mem, int* prof,
                             int* place) noexcept nogil:
    # selectMigCandidate: the first profile (memory, then slices) with memory
    # >= mem and a placement free of occ, tried in HAMi's order
    cdef int64_t g, q
    for g in range(nv.mig_p0[p], nv.mig_p1[p]):
        if nv.mp_mem[g] < mem:
            continue
        for q in range(nv.mp_pl0[g], nv.mp_pl1[g]):
            if (nv.pl_mask[q] & occ) == 0:
                prof[0] = <int>g
                place[0] = <int>q
                return True
    return False


# ---------------------------------------------------------------------------
# §3.1 card score, §5.3 node base score
# ---------------------------------------------------------------------------
cdef inline float _card_score(int64_t count, int64_t devmem, int64_t devcore, int64_t used,
                              int64_t usedmem, int64_t usedcores, const int64_t* req,
                              int n_req, const uint8_t* match, float ws, float wc,
                              float wm) noexcept nogil:
    # req: n_req rows of Q_WIDTH; match[j]: request j's type equals the card type.
    cdef int64_t n = 0, c = 0, m = 0, pct
    cdef int j
    cdef float slot, core, mem
    cdef float ten = 10.0
    if count == 0 or devcore == 0 or devmem == 0:
        return 0.0
    for j in range(n_req):
        if not match[j]:
            continue
        n += 1
        c += req[j * Q_WIDTH + Q_CORES]
        pct = req[j * Q_WIDTH + Q_PCT]
        if pct != 0 and pct != NO_PERCENTAGE:
            m += _floordiv(devmem * pct, 100)
        else:
            m += req[j * Q_WIDTH + Q_MEM]
    slot = <float>(n + used) / <float>count
    core = <float>(c + usedcores) / <float>devcore
    mem = <float>(m + usedmem) / <float>devmem
    return ten * ((ws * slot + wc * core) + wm * mem)


cdef inline float _node_base_score(int k, const int64_t* count, const int64_t* devmem,
                                   const int64_t* devcore, const int64_t* used,
                                   const int64_t* usedmem,
                                   const int64_t* usedcores) noexcept nogil:
    cdef int64_t sc = 0, sm = 0, sk = 0, su = 0, sum_ = 0, suk = 0
    cdef int p
    cdef float ten = 10.0
    cdef float a, b, c
    for p in range(k):
        sc += count[p]
        sk += devcore[p]
        sm += devmem[p]
        su += used[p]
        suk += usedcores[p]
        sum_ += usedmem[p]
    if sc == 0 or sk == 0 or sm == 0:
        return 0.0
    a = <float>su / <float>sc
    b = <float>suk / <float>sk
    c = <float>sum_ / <float>sm
    return ten * ((a + b) + c)


cdef uint64_t _next_core_id = 1     # owner tag of a PodSpec's memo (Core.core_id)


# ---------------------------------------------------------------------------
# §4 Fit
# ---------------------------------------------------------------------------
cdef inline int64_t _pair(const Node* nv, int a, int b) noexcept nogil:
    return nv.pair[a * nv.k + b]


cdef int _topology_choice(const Node* nv, Scratch* s, int npick, int origin) noexcept nogil:
    # Replace the picks by the origin-sized choice; returns origin.
    cdef int i, j, best, t, r, n
    cdef int64_t total, best_sum
    cdef bint have = False
    if origin == 1:
        best = 0
        best_sum = 0
        for i in range(npick):
            total = 0
            for j in range(npick):
                if j != i:
                    total += _pair(nv, s.pk_pos[i], s.pk_pos[j])
            if not have or total < best_sum:
                best, best_sum, have = i, total, True
        s.pk_pos[0] = s.pk_pos[best]
        s.pk_mem[0] = s.pk_mem[best]
        s.pk_cores[0] = s.pk_cores[best]
        return 1
    # Combinations of origin out of npick, lexicographic, iteratively.
    r = origin
    n = npick
    for i in range(r):
        s.combo[i] = i
    while True:
        total = 0
        for i in range(r):
            for j in range(i + 1, r):
                total += _pair(nv, s.pk_pos[s.combo[i]], s.pk_pos[s.combo[j]])
        if not have or total > best_sum:
            best_sum, have = total, True
            memcpy(s.best_combo, s.combo, r * sizeof(int))
        t = r - 1
        while t >= 0 and s.combo[t] == n - r + t:
            t -= 1
        if t < 0:
            break
        s.combo[t] += 1
        for j in range(t + 1, r):
            s.combo[j] = s.combo[j - 1] + 1
    # best_combo is increasing, so compacting in place is safe.
    for i in range(r):
        j = s.best_combo[i]
        s.pk_pos[i] = s.pk_pos[j]
        s.pk_mem[i] = s.pk_mem[j]
        s.pk_cores[i] = s.pk_cores[j]
    return r


cdef inline void _swap_picks(Scratch* s, int a, int b) noexcept nogil:
    # exchange picks a and b with their sort keys
    cdef int ti
    cdef int64_t t
    ti = s.pk_pos[a]; s.pk_pos[a] = s.pk_pos[b]; s.pk_pos[b] = ti
    t = s.pk_mem[a]; s.pk_mem[a] = s.pk_mem[b]; s.pk_mem[b] = t
    t = s.pk_cores[a]; s.pk_cores[a] = s.pk_cores[b]; s.pk_cores[b] = t
    t = s.sel_a[a]; s.sel_a[a] = s.sel_a[b]; s.sel_a[b] = t
    t = s.sel_b[a]; s.sel_b[a] = s.sel_b[b]; s.sel_b[b] = t
    ti = s.combo[a]; s.combo[a] = s.combo[b]; s.combo[b] = ti


cdef inline bint _key_less(const Scratch* s, int x, int y) noexcept nogil:
    # (sel_a, sel_b, combo) of pick x before that of pick y
    if s.sel_a[x] != s.sel_a[y]:
        return s.sel_a[x] < s.sel_a[y]
    if s.sel_b[x] != s.sel_b[y]:
        return s.sel_b[x] < s.sel_b[y]
    return s.combo[x] < s.combo[y]


cdef void _select_first(Scratch* s, int npick, int n) noexcept nogil:
    # the n smallest picks by key to the front, in key order (a selection sort:
    # a node has a handful of cards)
    cdef int r, k, best
    for r in range(n):
        best = r
        for k in range(r + 1, npick):
            if _key_less(s, k, best):
                best = k
        if best != r:
            _swap_picks(s, r, best)


cdef int _network_choice(const Node* nv, Scratch* s, int npick, int origin) noexcept nogil:
    # hamisim.devices.ascend.network_choice: the largest networks first (equal
    # ones in the order their first card was found), cards in Fit's order
    cdef int i, j
    cdef int64_t nid
    for i in range(npick):
        nid = nv.network[s.pk_pos[i]]
        s.sel_a[i] = 0
        s.sel_b[i] = i
        s.combo[i] = i
        for j in range(npick):
            if nv.network[s.pk_pos[j]] == nid:
                s.sel_a[i] -= 1             # minus the network's size
                if j < s.sel_b[i]:
                    s.sel_b[i] = j          # its first card
    _select_first(s, npick, origin)
    return origin


cdef int _module_pairs(const Node* nv, Scratch* s, int npick, int64_t origin) noexcept nogil:
    # hamisim.devices.ascend.module_pairs: complete modules (index // 2) in the
    # order their first NPU was found, until origin NPUs; returns how many
    cdef int i, j, n = 0, members
    cdef int64_t left = origin, m
    for i in range(npick):
        m = nv.index[s.pk_pos[i]] // 2
        s.sel_b[i] = i
        s.combo[i] = i
        members = 0
        for j in range(npick):
            if nv.index[s.pk_pos[j]] // 2 == m:
                members += 1
                if j < s.sel_b[i]:
                    s.sel_b[i] = j          # the module's first NPU
        s.sel_a[i] = members
    for i in range(npick):
        if s.sel_b[i] == i:                 # a module, marked at its first NPU
            if s.sel_a[i] == 2 and left > 0:
                left -= 2
                n += 2
                s.sel_a[i] = -2             # taken
            else:
                s.sel_a[i] = -1
    # backwards, so that a module's mark is read before it is replaced: taken
    # picks sort first (0), by their module's first NPU, then in Fit's order
    i = npick
    while i > 0:
        i -= 1
        s.sel_a[i] = 0 if s.sel_a[s.sel_b[i]] == -2 else 1
    _select_first(s, npick, n)
    return n


cdef inline bint _fits_slice(const Node* nv, const Scratch* s, int p, int64_t memreq
                             ) noexcept nogil:
    # FitVXPU: healthy, room for the slice, only slices of its size
    if not nv.health[p] or memreq + s.w_usedmem[p] > nv.devmem[p]:
        return False
    return s.w_used[p] == 0 or s.w_usedmem[p] // s.w_used[p] == memreq


cdef int _wing_pick(const Node* nv, Scratch* s, int q, int start, int64_t count) noexcept nogil:
    # devicepick: the fitting cards' indices from position start to 7 into sel_b
    cdef int t, n = 0
    t = start
    while t < q and t < 8:
        if s.sel_a[t]:
            s.sel_b[n] = nv.index[s.combo[t]]
            n += 1
            if n == count:
                break
        t += 1
    return n


cdef int _graph_select(const Node* nv, Scratch* s, int q, int64_t count) noexcept nogil:
    # hamisim.devices.kunlun.graph_select over the q offered cards (positions
    # combo[0:q], verdicts sel_a): the chosen indices into sel_b, their number
    cdef int t, a, b, left = 0, right = 0, slots, num, i, j, nfree, m
    cdef int64_t ia, ib
    cdef int ret = -1
    cdef int* free_idx
    cdef bint ok, rest_ok
    for t in range(q):
        if s.sel_a[t]:
            if t < 4:
                left += 1
            else:
                right += 1
    if count == 8:
        if left + right != 8:
            return 0
        for t in range(8):
            s.sel_b[t] = t
        return 8
    if count != 1 and count != 2 and count != 4:
        return 0
    if left >= count or right >= count:
        for slots in range(<int>count, 5):
            num = _ODD_ORDER[slots - 1] if count % 2 == 1 else slots
            if left == num:
                return _wing_pick(nv, s, q, 0, count)
            if right == num:
                return _wing_pick(nv, s, q, 4, count)
    if count == 2:
        for a in range(q):
            if not s.sel_a[a]:
                continue
            ia = nv.index[s.combo[a]]
            for b in range(q):
                if not s.sel_a[b]:
                    continue
                ib = nv.index[s.combo[b]]
                if ib != ia and ((ia < 4 and ib == ia + 4) or (ib < 4 and ia == ib + 4)):
                    s.sel_b[0] = ia
                    s.sel_b[1] = ib
                    return 2
        return 0
    if count == 4:
        nfree = 0
        for t in range(q):
            if s.sel_a[t]:
                nfree += 1
        if nfree < 4 or nfree > 6:
            return 0
        for i in range(6):
            ok = True
            for j in range(4):
                if not _index_fits(nv, s, q, _QUADS[i][j]):
                    ok = False
                    break
            if not ok:
                continue
            if nfree != 6:
                ret = i
                break
            ret = i
            # the two cards left over: a pair of the 16 (cross or within a wing)?
            rest_ok = False
            for m in range(16):
                if (_index_fits(nv, s, q, _PAIRS[m][0]) and _index_fits(nv, s, q, _PAIRS[m][1])
                        and not _in_quad(i, _PAIRS[m][0]) and not _in_quad(i, _PAIRS[m][1])):
                    rest_ok = True
                    break
            if rest_ok:
                break
        if ret < 0:
            return 0
        for j in range(4):
            s.sel_b[j] = _QUADS[ret][j]
        return 4
    return 0


cdef int _ODD_ORDER[4]
_ODD_ORDER[:] = [1, 3, 2, 4]
cdef int _QUADS[6][4]
_QUADS[0][:] = [0, 1, 4, 5]
_QUADS[1][:] = [2, 3, 6, 7]
_QUADS[2][:] = [0, 2, 4, 6]
_QUADS[3][:] = [1, 3, 5, 7]
_QUADS[4][:] = [0, 3, 4, 7]
_QUADS[5][:] = [1, 2, 5, 6]
cdef int _PAIRS[16][2]
_PAIRS[0][:] = [0, 4]
_PAIRS[1][:] = [1, 5]
_PAIRS[2][:] = [2, 6]
_PAIRS[3][:] = [3, 7]
_PAIRS[4][:] = [0, 1]
_PAIRS[5][:] = [0, 2]
_PAIRS[6][:] = [0, 3]
_PAIRS[7][:] = [1, 2]
_PAIRS[8][:] = [1, 3]
_PAIRS[9][:] = [2, 3]
_PAIRS[10][:] = [4, 5]
_PAIRS[11][:] = [4, 6]
_PAIRS[12][:] = [4, 7]
_PAIRS[13][:] = [5, 6]
_PAIRS[14][:] = [5, 7]
_PAIRS[15][:] = [6, 7]


cdef inline bint _in_quad(int i, int idx) noexcept nogil:
    return (_QUADS[i][0] == idx or _QUADS[i][1] == idx or _QUADS[i][2] == idx
            or _QUADS[i][3] == idx)


cdef inline bint _index_fits(const Node* nv, const Scratch* s, int q, int64_t idx
                             ) noexcept nogil:
    # is a fitting offered card of this index among the q (canMeet's set)
    cdef int t
    for t in range(q):
        if s.sel_a[t] and nv.index[s.combo[t]] == idx:
            return True
    return False


cdef int _wings_fit(const Node* nv, const Pod* pod, const int64_t* req, Scratch* s,
                    int* npick_out) noexcept nogil:
    # Kunlunxin's Fit (hamisim.hami.reference._wings_fit): every offered card of
    # the sorted list tested in order (UUID filters, then FitXPU / FitVXPU),
    # graghSelect on the verdicts by position, each chosen index mapped to its
    # first card. The reason is ExclusiveDeviceAllocateConflict (vXPU, mutex),
    # else CardUuidMismatch, else NumaNotFit (1).
    cdef bint whole = req[Q_FAM] == FAM_KUNLUN
    cdef uint32_t bit = (<uint32_t>1) << req[Q_FAM]
    cdef int q = 0, t, p, k, j, n, npick = 0, n_bad = 0
    cdef int64_t memreq = req[Q_MEM]
    cdef int32_t* counts = s.counts
    for t in range(nv.k):
        p = s.perm[t]
        if not (nv.offer[p] & bit):
            continue
        s.combo[q] = p
        if not pod.uuid_ok[nv.row0 + p]:
            s.sel_a[q] = 0
            n_bad += 1
        elif whole:
            s.sel_a[q] = s.w_used[p] == 0 and nv.health[p]
        else:
            s.sel_a[q] = _fits_slice(nv, s, p, memreq) and not (pod.mutex and s.w_used[p] > 0)
        q += 1
    n = _graph_select(nv, s, q, req[Q_NUMS])
    if n == 0:
        if not whole and pod.mutex:
            for k in range(q):
                p = s.combo[k]
                if s.w_used[p] > 0 and _fits_slice(nv, s, p, memreq):
                    counts[R_EXCLUSIVE] += 1
        if counts[R_EXCLUSIVE] == 0:
            if n_bad:
                counts[R_UUID] = n_bad
            else:
                counts[R_NUMA] = 1
        npick_out[0] = 0
        return 0
    for j in range(n):
        for k in range(q):
            p = s.combo[k]
            if nv.index[p] == s.sel_b[j]:
                s.pk_pos[npick] = p
                s.pk_mem[npick] = nv.devmem[p] if whole else memreq
                s.pk_cores[npick] = nv.devcore[p] if whole else req[Q_CORES]
                npick += 1
                break
    npick_out[0] = npick
    return 1


cdef inline int64_t _imin(int64_t a, int64_t b) noexcept nogil:
    return a if a < b else b


cdef inline int64_t _imax(int64_t a, int64_t b) noexcept nogil:
    return a if a > b else b


cdef void _quota_base(const Node* nv, const Pod* pod, int ci, Scratch* s) noexcept nogil:
    # HAMi's fitQuota sees this pass's list so far (init containers in the
    # init pass, app containers in the app pass; on a node whose list drops
    # GPU-less containers they take no position) plus the current container;
    # an entry at position < n_init is collapsed as an init container (max per
    # card), the others are summed. The corrected accounting lists every
    # container so far, init containers first. Fills s.q* for _quota_delta.
    cdef int cj, t, p, first, pos = 0
    cdef bint init_cls, other
    memset(s.qi_mem, 0, nv.k * sizeof(int64_t))
    memset(s.qi_cores, 0, nv.k * sizeof(int64_t))
    memset(s.qa_mem, 0, nv.k * sizeof(int64_t))
    memset(s.qa_cores, 0, nv.k * sizeof(int64_t))
    first = 0 if ci < pod.n_init or nv.aligned == 2 else pod.n_init
    for cj in range(first, ci):
        # another family's container holds no NVIDIA card: in NVIDIA's list it
        # is a container without cards (fitQuota collapses NVIDIA's list alone)
        other = pod.req[cj * Q_WIDTH + Q_FAM] != FAM_NVIDIA
        if (pod.req[cj * Q_WIDTH + Q_NUMS] <= 0 or other) and nv.aligned == 0:
            continue
        init_cls = pos < pod.n_init
        pos += 1
        if other:
            continue
        for t in range(s.out_n[cj]):
            p = s.out_pos[cj * s.cap_p + t]
            if init_cls:
                s.qi_mem[p] = _imax(s.qi_mem[p], s.out_mem[cj * s.cap_p + t])
                s.qi_cores[p] = _imax(s.qi_cores[p], s.out_cores[cj * s.cap_p + t])
            else:
                s.qa_mem[p] += s.out_mem[cj * s.cap_p + t]
                s.qa_cores[p] += s.out_cores[cj * s.cap_p + t]
    s.q_cur_init = pos < pod.n_init
    s.q_base_mem = 0
    s.q_base_cores = 0
    for p in range(nv.k):
        s.q_base_mem += _imax(s.qi_mem[p], s.qa_mem[p])
        s.q_base_cores += _imax(s.qi_cores[p], s.qa_cores[p])


cdef inline void _quota_delta(const Scratch* s, int p, int64_t mem, int64_t cores,
                              int64_t* dmem, int64_t* dcores) noexcept nogil:
    # How much the collapsed total grows when the current container also
    # takes card p with (mem, cores), after its earlier picks there (qc: a MIG
    # card gives one container several instances)
    cdef int64_t qcm = s.qc_mem[p], qcc = s.qc_cores[p]
    if s.q_cur_init:
        dmem[0] = _imax(_imax(_imax(s.qi_mem[p], qcm), mem), s.qa_mem[p]) - \
            _imax(_imax(s.qi_mem[p], qcm), s.qa_mem[p])
        dcores[0] = _imax(_imax(_imax(s.qi_cores[p], qcc), cores), s.qa_cores[p]) - \
            _imax(_imax(s.qi_cores[p], qcc), s.qa_cores[p])
    else:
        dmem[0] = _imax(s.qi_mem[p], s.qa_mem[p] + qcm + mem) - \
            _imax(s.qi_mem[p], s.qa_mem[p] + qcm)
        dcores[0] = _imax(s.qi_cores[p], s.qa_cores[p] + qcc + cores) - \
            _imax(s.qi_cores[p], s.qa_cores[p] + qcc)


cdef inline bint _quota_exceeded(const Pod* pod, int64_t mem, int64_t cores) noexcept nogil:
    # HAMi's FitQuota, negated: used + request > limit (limits already x memory_factor)
    if pod.q_lim_mem >= 0 and pod.q_used_mem + mem > pod.q_lim_mem:
        return True
    return pod.q_lim_cores >= 0 and pod.q_used_cores + cores > pod.q_lim_cores


cdef inline int64_t _n_offered(const Node* nv, uint32_t bit) noexcept nogil:
    # the node's cards offered to a request of the family with this bit
    cdef int64_t n = 0
    cdef int p
    for p in range(nv.k):
        if nv.offer[p] & bit:
            n += 1
    return n


cdef int _fit(const Node* nv, const Pod* pod, const int64_t* req, Scratch* s,
              int64_t n_offered, int* npick_out) noexcept nogil:
    # Walk the cards of s.perm offered to the request's family from the last;
    # usage from s.w_*. The family's Fit takes NVIDIA's steps except those
    # hamisim.devices.family.Family says it has not (only NVIDIA has the
    # vgpu-mode and cordon checks, NUMA binding, the quota re-check, MIG and
    # topology-aware). Returns 1 (fit, picks in s.pk_*[0:*npick_out]) or 0
    # (histogram in s.counts).
    cdef int64_t origin = req[Q_NUMS]
    cdef int64_t nums = origin
    cdef int64_t coresreq = req[Q_CORES]
    cdef int64_t memreq = req[Q_MEM]
    cdef int64_t pct = req[Q_PCT]
    cdef bint req_word = (req[Q_FLAGS] & QF_WORD) != 0
    cdef bint is_nv = req[Q_FAM] == FAM_NVIDIA
    cdef bint cu = req[Q_FAM] == FAM_AMD
    cdef bint slots_only = req[Q_FAM] == FAM_BIREN
    # Moore Threads: a case-sensitive type test, and one card a pod (s.pin)
    cdef bint mthreads = req[Q_FAM] == FAM_MTHREADS
    cdef bint pinned = mthreads and s.pin != -1
    cdef uint8_t fam1 = <uint8_t>(req[Q_FAM] + 1)
    cdef int64_t cu_req
    cdef uint32_t bit = (<uint32_t>1) << req[Q_FAM]
    cdef bint numa_bind = pod.fit_numa_bind and is_nv
    cdef bint quota = pod.quota and is_nv
    cdef bint topology = pod.topology and is_nv
    # Ascend (hamisim.devices.ascend): the soft split's node test and cores,
    # 910's networks and 910C's modules, both chosen after the walk
    cdef bint ascend = FAM_ASCEND <= req[Q_FAM] <= FAM_ASCEND_LAST
    cdef bint soft = ascend and pod.hami_core
    cdef bint networks = FAM_ASCEND <= req[Q_FAM] <= FAM_910C
    cdef bint pairs = req[Q_FAM] == FAM_910C and origin > 1
    cdef bint gather
    cdef int64_t devcore
    cdef int64_t prevnuma = -1
    cdef int64_t mem
    cdef int64_t cur_mem = 0, cur_cores = 0, dmem = 0, dcores = 0
    cdef int npick = 0
    cdef int t, p, prof = 0, place = 0
    cdef bint mig
    cdef int32_t* counts = s.counts
    memset(counts, 0, N_REASONS * sizeof(int32_t))
    s.n_cards = n_offered
    if soft and not nv.vnpu_core:
        counts[R_MODE] = 1
        npick_out[0] = 0
        return 0
    if req[Q_FAM] == FAM_KUNLUN or req[Q_FAM] == FAM_XPU:
        return _wings_fit(nv, pod, req, s, npick_out)
    if networks:
        for p in range(nv.k):
            if (nv.offer[p] & bit) and nv.network[p] < 0:
                networks = False
                break
    gather = topology or networks or pairs
    if quota:
        memset(s.qc_mem, 0, nv.k * sizeof(int64_t))
        memset(s.qc_cores, 0, nv.k * sizeof(int64_t))
    if nv.n_mig:
        memcpy(s.q_occ, s.w_occ, nv.k * sizeof(uint64_t))
    t = nv.k
    while t > 0:
        t -= 1
        p = s.perm[t]
        if not (nv.offer[p] & bit):
            continue
        if not nv.health[p]:
            counts[R_NOT_HEALTH] += 1
            continue
        if is_nv and nv.cordoned[p]:
            counts[R_CORDONED] += 1
            continue
        if (not pod.type_ok[nv.type_id[p]] or (is_nv and not pod.mode_ok[nv.mode_id[p]])
                or not req_word or (mthreads and (nv.type_exact[p] & TYPE_CASE_MISMATCH))):
            counts[R_TYPE] += 1
            continue
        if numa_bind and nv.numa[p] != prevnuma:
            if nums != origin:
                counts[R_NUMA] += npick
            nums = origin
            prevnuma = nv.numa[p]
            npick = 0
            cur_mem = 0
            cur_cores = 0
            if quota:
                memset(s.qc_mem, 0, nv.k * sizeof(int64_t))
                memset(s.qc_cores, 0, nv.k * sizeof(int64_t))
            if nv.n_mig:
                memcpy(s.q_occ, s.w_occ, nv.k * sizeof(uint64_t))
        if not pod.uuid_ok[nv.row0 + p]:
            counts[R_UUID] += 1
            continue
        if s.w_used[p] >= nv.count[p]:
            counts[R_SLICING] += 1
            continue
        if nv.reserved[p] > 0:      # what-if (mutex-reserve), not HAMi
            counts[R_RESERVED] += 1
            continue
        if pod.mutex and s.w_used[p] > 0:
            counts[R_EXCLUSIVE] += 1
            continue
        if slots_only:
            # Biren (hamisim.devices.biren): no memory or core step, the pick
            # charges neither
            s.pk_pos[npick] = p
            s.pk_mem[npick] = 0
            s.pk_cores[npick] = coresreq
            npick += 1
            nums -= 1
            if nums == 0:
                npick_out[0] = npick
                return 1
            continue
        if cu:
            # AMD (hamisim.devices.amd): memory (none asked = the whole card),
            # then Compute Units; none of the other core steps below
            mem = memreq if memreq > 0 or nv.devmem[p] <= 0 else nv.devmem[p]
            if nv.devmem[p] - s.w_usedmem[p] < mem:
                counts[R_MEMORY] += 1
                continue
            if coresreq > 0:
                if nv.devcore[p] <= 0:
                    counts[R_CORE] += 1
                    continue
                cu_req = _imin(_imax(_floordiv(nv.devcore[p] * coresreq, 100), 1),
                               nv.devcore[p])
            elif nv.devmem[p] > 0 and mem >= nv.devmem[p]:
                cu_req = nv.devcore[p]
            else:
                cu_req = 0
            if nv.devcore[p] - s.w_usedcores[p] < cu_req:
                counts[R_CORE] += 1
                continue
            s.pk_pos[npick] = p
            s.pk_mem[npick] = mem
            s.pk_cores[npick] = cu_req
            npick += 1
            nums -= 1
            if nums == 0:
                npick_out[0] = npick
                return 1
            continue
        if coresreq > 100:
            coresreq = 100          # sticky for the rest of the walk
        mem = memreq if memreq > 0 else 0
        if pct != NO_PERCENTAGE and memreq == 0:
            mem = _floordiv(nv.devmem[p] * pct, 100)
        if quota:
            _quota_delta(s, p, mem, coresreq, &dmem, &dcores)
            if _quota_exceeded(pod, s.q_base_mem + cur_mem + dmem,
                               s.q_base_cores + cur_cores + dcores):
                counts[R_QUOTA] += 1
                continue
        if nv.devmem[p] - s.w_usedmem[p] < mem:
            counts[R_MEMORY] += 1
            continue
        devcore = 100 if soft else nv.devcore[p]
        if devcore - s.w_usedcores[p] < coresreq:
            counts[R_CORE] += 1
            continue
        if devcore == 100 and coresreq == 100 and s.w_used[p] > 0:
            counts[R_EXCLUSIVE] += 1
            continue
        if devcore != 0 and s.w_usedcores[p] == devcore and coresreq == 0:
            counts[R_COMPUTE_UNITS] += 1
            continue
        if pinned and nv.type_exact[p] == fam1 and s.pin != p:
            # Moore Threads' customFilterRule: all of a pod's cards are one card
            counts[R_CUSTOM] += 1
            continue
        mig = nv.is_mig[p]
        if mig:
            # CustomFilterRule, with this Fit's earlier picks on the card placed
            if not _mig_select(nv, p, s.q_occ[p], mem, &prof, &place):
                counts[R_MIG] += 1
                continue
            s.q_occ[p] |= nv.pl_mask[place]
        s.pk_pos[npick] = p
        s.pk_mem[npick] = mem
        s.pk_cores[npick] = coresreq
        npick += 1
        cur_mem += dmem
        cur_cores += dcores
        if quota:
            if s.q_cur_init:
                s.qc_mem[p] = _imax(s.qc_mem[p], mem)
                s.qc_cores[p] = _imax(s.qc_cores[p], coresreq)
            else:
                s.qc_mem[p] += mem
                s.qc_cores[p] += coresreq
        if not gather:
            nums -= 1
            if nums == 0:
                npick_out[0] = npick
                return 1
        if mig:
            t += 1          # a MIG card is visited again for the next instance
    if pairs:
        # 910C: whole modules; the reason counts out of the request
        npick = _module_pairs(nv, s, npick, origin)
        if npick != origin:
            counts[R_ALLOCATED] = npick if npick else LISTED_ZERO
            s.n_cards = origin
            npick_out[0] = 0
            return 0
        npick_out[0] = npick
        return 1
    if topology or networks:
        if npick == origin:
            npick_out[0] = npick
            return 1
        if npick > origin:
            if topology:
                npick_out[0] = _topology_choice(nv, s, npick, <int>origin)
            elif origin == 1:
                npick_out[0] = 1
            else:
                npick_out[0] = _network_choice(nv, s, npick, <int>origin)
            return 1
    if npick:
        counts[R_ALLOCATED] = npick
    npick_out[0] = 0
    return 0


# ---------------------------------------------------------------------------
# §5.1 one container on one node, §5.2 the whole pod on one node
# ---------------------------------------------------------------------------
cdef int _fit_in_devices(const Node* nv, const Pod* pod, int ci, Scratch* s) noexcept nogil:
    # Score, sort s.perm in place, Fit, add the picks to the working usage.
    cdef const int64_t* req = pod.req + ci * Q_WIDTH
    cdef int p, i, npick = 0, prof = 0, place = 0
    cdef Py_ssize_t b
    cdef SortCtx ctx
    cdef uint8_t exact
    cdef uint8_t fam1 = <uint8_t>(req[Q_FAM] + 1)
    cdef uint32_t bit = (<uint32_t>1) << req[Q_FAM]
    cdef int64_t n_offered = 0
    for p in range(nv.k):
        # the request counts in the card's score when its type is the card's
        # type exactly (ComputeScore)
        exact = nv.type_exact[p] == fam1
        s.score[p] = _card_score(nv.count[p], nv.devmem[p], nv.devcore[p], s.w_used[p],
                                 s.w_usedmem[p], s.w_usedcores[p], req, 1,
                                 &exact, pod.ws, pod.wc, pod.wm)
        if nv.offer[p] & bit:
            n_offered += 1
    if not (req[Q_FLAGS] & QF_REGISTERED):
        return ST_TYPE_NOT_FOUND
    ctx.score = s.score
    ctx.numa = nv.numa
    ctx.used = s.w_used
    ctx.index = nv.index
    ctx.mode = pod.mode
    ctx.n_chain = pod.n_chain
    ctx.chain[0] = pod.chain[0]
    ctx.chain[1] = pod.chain[1]
    ctx.chain[2] = pod.chain[2]
    ctx.numa_bind = pod.sort_numa_bind
    go_sort_perm(s.perm, nv.k, &ctx)
    if req[Q_NUMS] > n_offered and not (pod.mig_request and nv.n_mig > 0
                                        and req[Q_FAM] == FAM_NVIDIA
                                        and (req[Q_FLAGS] & QF_WORD)):
        return ST_INSUFFICIENT
    if pod.quota and req[Q_FAM] == FAM_NVIDIA:
        _quota_base(nv, pod, ci, s)
    if not _fit(nv, pod, req, s, n_offered, &npick):
        return ST_FIT_FAILED
    s.out_n[ci] = npick
    for i in range(npick):
        p = s.pk_pos[i]
        b = ci * s.cap_p + i
        s.out_prof[b] = -1
        s.out_pl[b] = -1
        if nv.is_mig[p]:
            # AddResourceUsage: the instance gets its profile's memory and cores
            if not _mig_select(nv, p, s.w_occ[p], s.pk_mem[i], &prof, &place):
                return ST_MIG_READD
            s.w_occ[p] |= nv.pl_mask[place]
            s.pk_mem[i] = nv.mp_mem[prof]
            s.pk_cores[i] = nv.mp_core[prof]
            s.out_prof[b] = prof
            s.out_pl[b] = place
        s.w_used[p] += 1
        if req[Q_FAM] != FAM_KUNLUN:    # Kunlunxin's whole cards: the slot alone
            s.w_usedmem[p] += s.pk_mem[i]
            s.w_usedcores[p] += s.pk_cores[i]
        s.out_pos[b] = p
        s.out_mem[b] = s.pk_mem[i]
        s.out_cores[b] = s.pk_cores[i]
        if req[Q_FAM] == FAM_MTHREADS:
            s.pin = p if s.pin == -1 or s.pin == p else -2
    return ST_FIT


cdef inline void _reset(const Node* nv, Scratch* s) noexcept nogil:
    # A fresh copy of the node's current usage, cards in registration order.
    cdef int p
    memcpy(s.w_used, nv.used, nv.k * sizeof(int64_t))
    memcpy(s.w_usedmem, nv.usedmem, nv.k * sizeof(int64_t))
    memcpy(s.w_usedcores, nv.usedcores, nv.k * sizeof(int64_t))
    if nv.n_mig:
        memcpy(s.w_occ, nv.mig_occ, nv.k * sizeof(uint64_t))
    for p in range(nv.k):
        s.perm[p] = p


cdef float _network_bonus(const Node* nv, const Pod* pod, const Scratch* s) noexcept nogil:
    # hamisim.hami.reference.family_node_score: each Ascend 910 chip's ScoreNode
    # (its containers' share of their largest network, x 10), chips in fid order
    cdef float total = 0.0, score
    cdef int fam, ci, i, j, n, best, same
    cdef int64_t nid
    cdef bint none
    cdef Py_ssize_t b
    for fam in range(FAM_ASCEND, FAM_910C + 1):
        score = 0.0
        none = False
        n = 0
        for ci in range(pod.n_cont):
            if pod.req[ci * Q_WIDTH + Q_FAM] != fam or pod.req[ci * Q_WIDTH + Q_NUMS] <= 0:
                continue
            n = s.out_n[ci]
            if n == 0:
                continue
            b = ci * s.cap_p
            best = 0
            for i in range(n):
                nid = nv.network[s.out_pos[b + i]]
                if nid < 0:
                    none = True
                    break
                same = 0
                for j in range(n):
                    if nv.network[s.out_pos[b + j]] == nid:
                        same += 1
                if same > best:
                    best = same
            if none:
                break
            score = score + <float>best / <float>n
        if not none and score != 0.0:
            total = total + score * <float>NETWORK_WEIGHT
    return total + _bubble_score(nv, pod, s)


cdef inline int _bubbles(int left, int right) noexcept nogil:
    # countbubble of a set with left members below 4 and right ones from 4 on
    if left == 0 and right == 0:
        return 1
    return ((0 if left == 4 else 2 if left == 1 else 1)
            + (0 if right == 4 else 2 if right == 1 else 1))


cdef float _bubble_score(const Node* nv, const Pod* pod, const Scratch* s) noexcept nogil:
    # hamisim.devices.kunlun.bubble_score: the pod's Kunlunxin whole cards
    # (distinct indices, init containers too) against the node's cards in use
    cdef int ci, i, j, c2, left = 0, right = 0, pl = 0, pr = 0, d, p
    cdef bint any_pick = False, seen
    cdef int64_t idx
    cdef Py_ssize_t b, b2
    for ci in range(pod.n_cont):
        if pod.req[ci * Q_WIDTH + Q_FAM] != FAM_KUNLUN or pod.req[ci * Q_WIDTH + Q_NUMS] <= 0:
            continue
        b = ci * s.cap_p
        for i in range(s.out_n[ci]):
            any_pick = True
            idx = nv.index[s.out_pos[b + i]]
            # distinct: an earlier pick of this index (this container or one before)
            seen = False
            for c2 in range(ci + 1):
                if pod.req[c2 * Q_WIDTH + Q_FAM] != FAM_KUNLUN \
                        or pod.req[c2 * Q_WIDTH + Q_NUMS] <= 0:
                    continue
                b2 = c2 * s.cap_p
                for j in range(s.out_n[c2] if c2 < ci else i):
                    if nv.index[s.out_pos[b2 + j]] == idx:
                        seen = True
                        break
                if seen:
                    break
            if not seen:
                if idx < 4:
                    left += 1
                else:
                    right += 1
    if not any_pick or not nv.kunlun_only:
        return 0.0
    for p in range(nv.k):
        if nv.used[p] > 0:
            # distinct indices among the cards in use
            seen = False
            for j in range(p):
                if nv.used[j] > 0 and nv.index[j] == nv.index[p]:
                    seen = True
                    break
            if not seen:
                if nv.index[p] < 4:
                    pl += 1
                else:
                    pr += 1
    d = _bubbles(left, right) - _bubbles(pl, pr)
    if d == -1:
        return 3000.0
    if d == 0:
        return 2000.0
    if d == 2:
        return 0.0
    return 1000.0


cdef int _score_node(const Node* nv, const Pod* pod, Scratch* s) noexcept nogil:
    cdef int ci, st
    s.pin = -1              # HAMi's allocated: the init pass's own list
    for ci in range(pod.n_init):
        s.out_n[ci] = 0
        if pod.req[ci * Q_WIDTH + Q_NUMS] <= 0:
            continue
        _reset(nv, s)
        st = _fit_in_devices(nv, pod, ci, s)
        if st != ST_FIT:
            return st
    _reset(nv, s)
    s.pin = -1              # the app pass's list starts empty
    s.node_score = _node_base_score(nv.k, nv.count, nv.devmem, nv.devcore, nv.used,
                                    nv.usedmem, nv.usedcores)
    for ci in range(pod.n_init, pod.n_cont):
        s.out_n[ci] = 0
        if pod.req[ci * Q_WIDTH + Q_NUMS] <= 0:
            continue
        st = _fit_in_devices(nv, pod, ci, s)
        if st != ST_FIT:
            return st
    if pod.bonus_max > 0:
        s.node_score = s.node_score + _network_bonus(nv, pod, s)
    return ST_FIT


# ---------------------------------------------------------------------------
# The fast choice: NodeAgg's conditions and the candidates' heap
# ---------------------------------------------------------------------------
cdef inline bint _passes(const Pod* pod, const NodeAgg* a) noexcept nogil:
    # NodeAgg's necessary conditions; False = the node cannot fit the pod.
    if a.n_elig < pod.need_n or a.max_mem < pod.need_mem or a.max_pct < pod.need_pct \
            or a.max_cores < pod.need_cores:
        return False
    if pod.mutex and a.n_zero < pod.need_n:
        return False
    return (a.types & pod.type_mask) != 0 and (a.modes & pod.mode_mask) != 0


cdef inline bint _cand_before(bint spread, const Cand* x, const Cand* y) noexcept nogil:
    # x is preferred to y: the later of the two in the stable sort's result.
    if x.score != y.score:
        return x.score < y.score if spread else x.score > y.score
    return x.j > y.j


cdef void _sift_down(Cand* h, bint spread, int root, int n) noexcept nogil:
    cdef Cand tmp
    cdef int child
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and _cand_before(spread, &h[child + 1], &h[child]):
            child += 1
        if not _cand_before(spread, &h[child], &h[root]):
            return
        tmp = h[root]
        h[root] = h[child]
        h[child] = tmp
        root = child


# ---------------------------------------------------------------------------
# Python-facing containers for the arrays
# ---------------------------------------------------------------------------
cdef inline const int64_t* _p64(const int64_t[::1] a):
    return &a[0] if a.shape[0] else NULL


cdef inline const uint8_t* _pu8(const uint8_t[::1] a):
    return &a[0] if a.shape[0] else NULL


cdef inline const int32_t* _pi32(const int32_t[::1] a):
    return &a[0] if a.shape[0] else NULL


cdef inline const uint32_t* _pu32(const uint32_t[::1] a):
    return &a[0] if a.shape[0] else NULL


cdef inline const uint64_t* _pu64(const uint64_t[::1] a):
    return &a[0] if a.shape[0] else NULL


def _check(a, dtype, name):
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.ndim != 1 \
            or not a.flags.c_contiguous:
        raise TypeError(f"{name}: expected a contiguous 1-d {np.dtype(dtype)} array")


cdef class CardTable:
    """The cluster's card and node arrays (see :class:`hamisim.sim.arrays.ClusterState`).

    Holds references to the arrays; the usage arrays are read live, so
    updating them in place (``state.used[rows] += ...``) is seen at once.
    """

    def __init__(self, *, node_start, pair_start, count, devmem, devcore, numa,
                 index, health, cordoned, offer, type_exact, type_id, mode_id, used,
                 usedmem, usedcores, pair, alloc_cpu, alloc_mem, req_cpu, req_mem,
                 aligned=None, mig=None, network=None, vnpu_core=None, kunlun_only=None):
        arrays = dict(node_start=node_start, pair_start=pair_start,
                      count=count, devmem=devmem, devcore=devcore, numa=numa, index=index,
                      used=used, usedmem=usedmem, usedcores=usedcores, pair=pair,
                      alloc_cpu=alloc_cpu, alloc_mem=alloc_mem, req_cpu=req_cpu,
                      req_mem=req_mem)
        for name, a in arrays.items():
            _check(a, np.int64, name)
        for name, a in dict(health=health, cordoned=cordoned,
                            type_exact=type_exact).items():
            _check(a, np.uint8, name)
        _check(offer, np.uint32, "offer")
        _check(type_id, np.int32, "type_id")
        _check(mode_id, np.int32, "mode_id")
        n_nodes = len(node_start) - 1
        n_rows = int(node_start[n_nodes])
        for name in ("count", "devmem", "devcore", "numa", "index", "used", "usedmem",
                     "usedcores"):
            if len(arrays[name]) != n_rows:
                raise ValueError(f"{name}: expected {n_rows} rows")
        # Keep every array alive: the struct holds raw pointers into them.
        self._keep = [node_start, pair_start, count, devmem, devcore, numa, index,
                      health, cordoned, offer, type_exact, type_id, mode_id, used,
                      usedmem, usedcores, pair, alloc_cpu, alloc_mem, req_cpu, req_mem]
        self.c.n_nodes = n_nodes
        self.c.node_start = _p64(node_start)
        self.c.pair_start = _p64(pair_start)
        self.c.count = _p64(count)
        self.c.devmem = _p64(devmem)
        self.c.devcore = _p64(devcore)
        self.c.numa = _p64(numa)
        self.c.index = _p64(index)
        self.c.used = _p64(used)
        self.c.usedmem = _p64(usedmem)
        self.c.usedcores = _p64(usedcores)
        self.c.pair = _p64(pair)
        self.c.alloc_cpu = _p64(alloc_cpu)
        self.c.alloc_mem = _p64(alloc_mem)
        self.c.req_cpu = _p64(req_cpu)
        self.c.req_mem = _p64(req_mem)
        self.c.health = _pu8(health)
        self.c.cordoned = _pu8(cordoned)
        self.c.offer = _pu32(offer)
        self.c.type_exact = _pu8(type_exact)
        self.c.type_id = _pi32(type_id)
        self.c.mode_id = _pi32(mode_id)
        # aligned: per node (uint8), HAMi's list keeps GPU-less containers; None = all do
        self.c.aligned = NULL
        if aligned is not None:
            _check(aligned, np.uint8, "aligned")
            if len(aligned) != n_nodes:
                raise ValueError(f"aligned: expected {n_nodes} nodes")
            self._keep.append(aligned)
            self.c.aligned = _pu8(aligned) if n_nodes else NULL
        sizes = np.diff(node_start)
        self.max_cards = int(sizes.max()) if n_nodes else 0
        self.n_nodes = n_nodes
        self._set_mig(mig, n_rows, n_nodes, np.asarray(node_start), np.asarray(offer))
        # what-if mutex-reserve: the table's own live counters, changed by Core.reserve
        self.reserved = np.zeros(n_rows, dtype=np.int64)
        self.c.reserved = _p64(self.reserved)
        # Ascend: per row the NetworkID (-1 none), per node hami-vnpu-core
        if network is None:
            network = np.full(n_rows, -1, dtype=np.int64)
        if vnpu_core is None:
            vnpu_core = np.zeros(n_nodes, dtype=np.uint8)
        _check(network, np.int64, "network")
        _check(vnpu_core, np.uint8, "vnpu_core")
        if len(network) != n_rows:
            raise ValueError(f"network: expected {n_rows} rows")
        if len(vnpu_core) != n_nodes:
            raise ValueError(f"vnpu_core: expected {n_nodes} nodes")
        # (a one-element array stands in for an empty one: the pointers are
        # never read then)
        if not n_rows:
            network = np.full(1, -1, dtype=np.int64)
        if kunlun_only is None:
            kunlun_only = np.zeros(n_nodes, dtype=np.uint8)
        _check(kunlun_only, np.uint8, "kunlun_only")
        if len(kunlun_only) != n_nodes:
            raise ValueError(f"kunlun_only: expected {n_nodes} nodes")
        if not n_nodes:
            vnpu_core = np.zeros(1, dtype=np.uint8)
            kunlun_only = np.zeros(1, dtype=np.uint8)
        self._keep += [network, vnpu_core, kunlun_only]
        self.c.network = _p64(network)
        self.c.vnpu_core = _pu8(vnpu_core)
        self.c.kunlun_only = _pu8(kunlun_only)

    def _set_mig(self, mig, Py_ssize_t n_rows, int n_nodes, node_start, offer):
        # mig: a mapping of the MIG arrays (hamisim.sim.arrays.ClusterState.mig_arrays),
        # None = no card is in mig mode
        if mig is None:
            mig = dict(is_mig=np.zeros(n_rows, np.uint8), mig_p0=np.zeros(n_rows, np.int64),
                       mig_p1=np.zeros(n_rows, np.int64), mig_occ=np.zeros(n_rows, np.uint64),
                       mig_cnt=np.zeros(0, np.int32), mp_mem=np.zeros(0, np.int64),
                       mp_core=np.zeros(0, np.int64), mp_pl0=np.zeros(0, np.int64),
                       mp_pl1=np.zeros(0, np.int64), pl_mask=np.zeros(0, np.uint64),
                       max_end=np.zeros(n_rows, np.int64))
        for name in ("mig_p0", "mig_p1", "mp_mem", "mp_core", "mp_pl0", "mp_pl1", "max_end"):
            _check(mig[name], np.int64, name)
        _check(mig["is_mig"], np.uint8, "is_mig")
        _check(mig["mig_occ"], np.uint64, "mig_occ")
        _check(mig["pl_mask"], np.uint64, "pl_mask")
        _check(mig["mig_cnt"], np.int32, "mig_cnt")
        for name in ("is_mig", "mig_p0", "mig_p1", "mig_occ", "max_end"):
            if len(mig[name]) != n_rows:
                raise ValueError(f"{name}: expected {n_rows} rows")
        is_mig = mig["is_mig"]
        if len(mig["mig_cnt"]) not in (0, 64 * n_rows) or (is_mig.any() and
                                                            len(mig["mig_cnt"]) == 0):
            raise ValueError("mig_cnt: expected 64 counters per row with MIG cards")
        # per node: vendor cards in mig mode, and the most picks one container
        # can get there (a MIG card at most one per slot of its placements)
        mig_vendor = (is_mig != 0) & ((offer & (1 << FAM_NVIDIA)) != 0)
        def per_node(x):
            total = np.concatenate(([0], np.cumsum(x, dtype=np.int64)))
            return np.ascontiguousarray(total[node_start[1:]] - total[node_start[:-1]],
                                        dtype=np.int64)
        n_mig = per_node(mig_vendor)
        picks = per_node(np.where(mig_vendor, np.maximum(mig["max_end"], 1), 1))
        self.max_picks = max(int(picks.max()) if n_nodes else 0, self.max_cards)
        self._keep += [mig[k] for k in mig] + [n_mig]
        self.c.n_mig = _p64(n_mig) if n_nodes else NULL
        self.c.is_mig = _pu8(is_mig)
        self.c.mig_p0 = _p64(mig["mig_p0"])
        self.c.mig_p1 = _p64(mig["mig_p1"])
        self.c.mig_occ = _pu64(mig["mig_occ"])
        self.c.mig_cnt = <int32_t*>_pi32(mig["mig_cnt"])
        self.c.mp_mem = _p64(mig["mp_mem"])
        self.c.mp_core = _p64(mig["mp_core"])
        self.c.mp_pl0 = _p64(mig["mp_pl0"])
        self.c.mp_pl1 = _p64(mig["mp_pl1"])
        self.c.pl_mask = _pu64(mig["pl_mask"])


cdef class PodSpec:
    """One attempt's encoded request (see :func:`hamisim.sim.arrays.encode_pod`)."""

    def __cinit__(self):
        self.p.memo_ver = NULL
        self.p.memo_id = NULL
        self.p.memo_owner = 0
        self.p.memo_wanted = False

    def __dealloc__(self):
        free(self.p.memo_ver)
        free(self.p.memo_id)

    def __init__(self, req, int n_init, int mode, chain, int n_chain, bint sort_numa_bind,
                 bint fit_numa_bind, bint mutex, bint topology, weights, type_ok, mode_ok,
                 uuid_ok, cpu_milli=0, memory_mib=0, gate=None, bint mig_request=False,
                 bint hami_core=False):
        cdef const int64_t[:, ::1] r = req
        cdef const float[::1] w = weights
        cdef const int32_t[::1] ch = chain
        cdef int i
        if r.shape[1] != Q_WIDTH:
            raise ValueError(f"req: expected {Q_WIDTH} columns")
        if not 0 <= n_init <= r.shape[0]:
            raise ValueError("n_init out of range")
        if not 0 <= n_chain <= 3 or ch.shape[0] < 3:
            raise ValueError("chain: expected 3 entries, n_chain <= 3")
        _check(type_ok, np.uint8, "type_ok")
        _check(mode_ok, np.uint8, "mode_ok")
        _check(uuid_ok, np.uint8, "uuid_ok")
        self._keep = [req, type_ok, mode_ok, uuid_ok]
        self.n_cont = <int>r.shape[0]
        self.p.n_cont = self.n_cont
        self.p.n_init = n_init
        self.p.req = &r[0, 0] if r.shape[0] else NULL
        self.p.ws = w[0]
        self.p.wc = w[1]
        self.p.wm = w[2]
        self.p.mode = mode
        self.p.n_chain = n_chain
        for i in range(3):
            self.p.chain[i] = ch[i]
        self.p.sort_numa_bind = sort_numa_bind
        self.p.fit_numa_bind = fit_numa_bind
        self.p.mutex = mutex
        self.p.topology = topology
        self.p.mig_request = mig_request
        self.p.hami_core = hami_core
        self.p.type_ok = _pu8(type_ok)
        self.p.mode_ok = _pu8(mode_ok)
        self.p.uuid_ok = _pu8(uuid_ok)
        self.p.cpu = cpu_milli
        self.p.mem = memory_mib
        self.p.quota = False
        self.p.q_used_mem = self.p.q_used_cores = 0
        self.p.q_lim_mem = self.p.q_lim_cores = -1
        self.p.gate = NULL
        if gate is not None:
            _check(gate, np.int32, "gate")
            self._keep.append(gate)
            self.p.gate = _pi32(gate) if len(gate) else NULL
        self._filter(r, type_ok, mode_ok)

    def set_quota(self, bint active, int64_t used_mem=0, int64_t used_cores=0,
                  int64_t limit_mem=-1, int64_t limit_cores=-1):
        """HAMi's ResourceQuota check for the next attempts: the namespace's usage
        (without this pod) and its limits, memory already x ``memory_factor``
        (-1 = not set). ``active=False`` turns the check off."""
        self.p.quota = active
        self.p.q_used_mem = used_mem
        self.p.q_used_cores = used_cores
        self.p.q_lim_mem = limit_mem
        self.p.q_lim_cores = limit_cores

    cdef void _filter(self, const int64_t[:, ::1] r, type_ok, mode_ok):
        # The pod-level necessary conditions of NodeAgg; loosest values when
        # a request cannot be expressed (then every node passes).
        cdef Py_ssize_t ci
        cdef int64_t nums, memreq, pct, cores
        cdef const uint8_t[::1] tok = type_ok
        cdef const uint8_t[::1] mok = mode_ok
        cdef Py_ssize_t t
        cdef bint kunlun = False, loose = False
        self.p.need_n = 0
        self.p.need_mem = INT64_MIN
        self.p.need_pct = -1
        self.p.need_cores = INT64_MIN
        self.p.bonus_max = 0.0
        self.p.type_mask = 0
        self.p.mode_mask = 0
        for t in range(tok.shape[0]):
            if tok[t]:
                self.p.type_mask |= (<uint64_t>1) << (t % 64)
        for t in range(mok.shape[0]):
            if mok[t]:
                self.p.mode_mask |= (<uint64_t>1) << (t % 64)
        for ci in range(r.shape[0]):
            nums = r[ci, Q_NUMS]
            if nums <= 0:
                continue
            if not (r[ci, Q_FLAGS] & QF_REGISTERED) or not (r[ci, Q_FLAGS] & QF_WORD):
                # "Device type not found" or every card a type mismatch: no node fits.
                self.p.need_n = INT64_MAX
                continue
            if nums > self.p.need_n:
                self.p.need_n = nums
            if FAM_ASCEND <= r[ci, Q_FAM] <= FAM_910C:
                # ScoreNode's network share: at most 1 a container, x 10
                self.p.bonus_max += <float>NETWORK_WEIGHT
            if r[ci, Q_FAM] == FAM_KUNLUN and not kunlun:
                kunlun = True
                self.p.bonus_max += <float>BUBBLE_MAX
            if r[ci, Q_FAM] == FAM_XPU:
                # FitVXPU reads neither slots nor cores: NodeAgg's slot and core
                # conditions do not hold for it
                loose = True
            memreq = r[ci, Q_MEM]
            pct = r[ci, Q_PCT]
            if pct != NO_PERCENTAGE and memreq == 0:
                if 0 <= pct <= 100:
                    if pct > self.p.need_pct:
                        self.p.need_pct = pct
            elif memreq > self.p.need_mem:
                self.p.need_mem = memreq
            cores = r[ci, Q_CORES]
            if cores > 100:
                cores = 100
            if self.p.hami_core and FAM_ASCEND <= r[ci, Q_FAM] <= FAM_ASCEND_LAST:
                cores = INT64_MIN           # the soft split takes a card's cores as 100
            if cores > self.p.need_cores:
                self.p.need_cores = cores
        if loose:
            # every node may fit as far as the slot and core aggregates know
            self.p.need_n = 0
            self.p.need_cores = INT64_MIN


# ---------------------------------------------------------------------------
# The kernel: one scheduling attempt over the cluster
# ---------------------------------------------------------------------------
cdef class Core:
    """Scratch space plus the attempt loop over one :class:`CardTable`.

    Buffers are allocated here once (node-sized and card-sized) and grown
    only when a pod has more containers than any before.

    After :meth:`attempt` the result buffers hold, for the examined nodes:
    ``rejected`` (node, reason bits 1 = cpu, 2 = memory) in visiting order,
    ``window`` (nodes handed to HAMi, cluster order) with ``status``,
    ``score``, ``counts`` and ``n_cards`` per window position, and ``tied``
    (nodes tied with the winner, in the order hamisim's tie convention lists
    them). After :meth:`place` the pick buffers hold the chosen node's cards.
    """

    def __cinit__(self, CardTable table, int max_containers=4):
        global _next_core_id
        cdef int n = max(table.n_nodes, 1)
        self.node_ver = <int64_t*>calloc(n, sizeof(int64_t))
        self.wid = <int32_t*>malloc(n * sizeof(int32_t))
        self.itab.rows = NULL
        self.itab.slot = NULL
        if self.node_ver == NULL or self.wid == NULL or _intern_init(&self.itab) != 0:
            raise MemoryError()
        self.core_id = _next_core_id
        _next_core_id += 1
        self.counts_lazy = False
        self.memo_bytes = 0
        self.use_memo = True
        self.n_cls = 0
        self.n_refresh = 0

    def set_gate_classes(self, gates):
        """Count node changes per static gate class: ``gates`` are int32 arrays
        of one value per node (0: the gate passes the node). Afterwards
        ``gate_class_version(c)`` grows by one whenever a node class ``c``
        passes changes (its card usage, CPU/memory, MIG or reservations, as
        ``node_ver``): the sum of ``node_ver`` over those nodes, less a constant."""
        cdef int n = self.table.n_nodes, c, i, m = 0
        cdef list per = [[] for _ in range(n)]
        for c, gate in enumerate(gates):
            g = np.ascontiguousarray(gate, dtype=np.int32)
            if g.shape[0] != n:
                raise ValueError("a gate has one value per node")
            for i in np.flatnonzero(g == 0).tolist():
                per[i].append(c)
                m += 1
        start = np.zeros(n + 1, dtype=np.int32)
        of = np.zeros(max(m, 1), dtype=np.int32)
        m = 0
        for i in range(n):
            for c in per[i]:
                of[m] = c
                m += 1
            start[i + 1] = m
        self.cls_start, self.cls_of = start, of
        self.cls_ver = np.zeros(max(len(gates), 1), dtype=np.int64)
        self.n_cls = len(gates)

    def gate_class_version(self, int c):
        """Changes of the nodes gate class ``c`` passes (:meth:`set_gate_classes`)."""
        if not 0 <= c < self.n_cls:
            raise IndexError(c)
        return self.cls_ver[c]

    cdef inline void _bump(self, int i) noexcept nogil:
        # node i changed: its memo outcomes are stale, and so is every gate
        # class passing it
        cdef int j
        self.node_ver[i] += 1
        if self.n_cls:
            for j in range(self.cls_start[i], self.cls_start[i + 1]):
                self.cls_ver[self.cls_of[j]] += 1

    def __dealloc__(self):
        free(self.node_ver)
        free(self.wid)
        _intern_free(&self.itab)

    def __init__(self, CardTable table, int max_containers=4):
        self.table = table
        n = max(table.n_nodes, 1)
        cdef uint8_t[::1] ab, cb, ib, hb
        self._agg_buf = np.zeros(n * sizeof(NodeAgg), dtype=np.uint8)
        self._cand_buf = np.zeros(n * sizeof(Cand), dtype=np.uint8)
        ab = self._agg_buf
        cb = self._cand_buf
        self.agg = <NodeAgg*>&ab[0]
        self.cand = <Cand*>&cb[0]
        cdef int size = 1
        while size < n:
            size <<= 1
        self.idx_size = size
        self._idx_buf = np.zeros(2 * size * sizeof(IdxEntry), dtype=np.uint8)
        self._iheap_buf = np.zeros((2 * size + 1) * sizeof(IdxCand), dtype=np.uint8)
        ib = self._idx_buf
        hb = self._iheap_buf
        self.idx = <IdxEntry*>&ib[0]
        self.iheap = <IdxCand*>&hb[0]
        cdef int t
        for t in range(2 * size):
            _idx_empty(&self.idx[t])
        self.n_nan = 0
        self.use_index = True
        self.placed = -1
        self.refresh_all()
        self.np_rej_node = np.zeros(n, dtype=np.int64)
        self.np_rej_bits = np.zeros(n, dtype=np.int32)
        self.np_window = np.zeros(n, dtype=np.int64)
        self.np_status = np.zeros(n, dtype=np.int32)
        self.np_score = np.zeros(n, dtype=np.float32)
        self.np_counts = np.zeros((n, N_REASONS), dtype=np.int32)
        self.np_ncards = np.zeros(n, dtype=np.int64)
        self.np_tied = np.zeros(n, dtype=np.int64)
        self.rej_node = self.np_rej_node
        self.rej_bits = self.np_rej_bits
        self.window = self.np_window
        self.status = self.np_status
        self.wscore = self.np_score
        self.counts = self.np_counts
        self.ncards = self.np_ncards
        self.tied = self.np_tied
        self.fits = np.zeros(n, dtype=np.int64)
        self.ascore = np.zeros(n, dtype=np.int64)
        self.nom_cpu = np.zeros(n, dtype=np.int64)
        self.nom_mem = np.zeros(n, dtype=np.int64)
        self.np_rows_i = np.zeros((RW_NI, n), dtype=np.int64)
        self.np_rows_f = np.zeros((RW_NF, n), dtype=np.float64)
        self.rows_i = self.np_rows_i
        self.rows_f = self.np_rows_f
        self.rows_pos = np.zeros(n, dtype=np.int64)
        cdef int slots = 1
        while slots < 2 * n:
            slots <<= 1
        self.gslot = np.full(slots, -1, dtype=np.int32)
        self.grep = np.zeros(n, dtype=np.int32)
        self.gnum = np.zeros(n, dtype=np.int32)
        self._alloc(max(table.max_cards, 1), max(max_containers, 1))

    def _alloc(self, int cap_k, int cap_c):
        cdef int64_t[::1] w_used, w_usedmem, w_usedcores, pk_mem, pk_cores, out_mem, out_cores
        cdef float[::1] score
        cdef int[::1] perm, pk_pos, combo, best_combo, out_n, out_pos
        cdef int32_t[::1] counts, out_prof, out_pl
        cdef int64_t[::1] qi_mem, qi_cores, qa_mem, qa_cores, qc_mem, qc_cores, sel_a, sel_b
        cdef uint64_t[::1] w_occ, q_occ
        cdef int cap_p = max(self.table.max_picks, cap_k)
        bufs = dict(
            w_used=np.zeros(cap_k, np.int64), w_usedmem=np.zeros(cap_k, np.int64),
            w_usedcores=np.zeros(cap_k, np.int64), score=np.zeros(cap_k, np.float32),
            perm=np.zeros(cap_k, np.intc), pk_pos=np.zeros(cap_p, np.intc),
            pk_mem=np.zeros(cap_p, np.int64), pk_cores=np.zeros(cap_p, np.int64),
            combo=np.zeros(cap_p, np.intc), best_combo=np.zeros(cap_p, np.intc),
            out_n=np.zeros(cap_c, np.intc), out_pos=np.zeros(cap_c * cap_p, np.intc),
            out_mem=np.zeros(cap_c * cap_p, np.int64),
            out_cores=np.zeros(cap_c * cap_p, np.int64),
            out_prof=np.zeros(cap_c * cap_p, np.int32),
            out_pl=np.zeros(cap_c * cap_p, np.int32),
            counts=np.zeros(N_REASONS, np.int32),
            qi_mem=np.zeros(cap_k, np.int64), qi_cores=np.zeros(cap_k, np.int64),
            qa_mem=np.zeros(cap_k, np.int64), qa_cores=np.zeros(cap_k, np.int64),
            qc_mem=np.zeros(cap_k, np.int64), qc_cores=np.zeros(cap_k, np.int64),
            w_occ=np.zeros(cap_k, np.uint64), q_occ=np.zeros(cap_k, np.uint64),
            sel_a=np.zeros(cap_p, np.int64), sel_b=np.zeros(cap_p, np.int64))
        self._bufs = bufs
        w_used = bufs["w_used"]; w_usedmem = bufs["w_usedmem"]
        w_usedcores = bufs["w_usedcores"]; score = bufs["score"]; perm = bufs["perm"]
        pk_pos = bufs["pk_pos"]; pk_mem = bufs["pk_mem"]; pk_cores = bufs["pk_cores"]
        combo = bufs["combo"]; best_combo = bufs["best_combo"]; out_n = bufs["out_n"]
        out_pos = bufs["out_pos"]; out_mem = bufs["out_mem"]; out_cores = bufs["out_cores"]
        counts = bufs["counts"]
        self.s.cap_k = cap_k
        self.s.cap_c = cap_c
        self.s.cap_p = cap_p
        out_prof = bufs["out_prof"]; out_pl = bufs["out_pl"]
        qc_mem = bufs["qc_mem"]; qc_cores = bufs["qc_cores"]
        w_occ = bufs["w_occ"]; q_occ = bufs["q_occ"]
        sel_a = bufs["sel_a"]; sel_b = bufs["sel_b"]
        self.s.sel_a = &sel_a[0]
        self.s.sel_b = &sel_b[0]
        self.s.out_prof = &out_prof[0]
        self.s.out_pl = &out_pl[0]
        self.s.qc_mem = &qc_mem[0]
        self.s.qc_cores = &qc_cores[0]
        self.s.w_occ = &w_occ[0]
        self.s.q_occ = &q_occ[0]
        self.s.w_used = &w_used[0]
        self.s.w_usedmem = &w_usedmem[0]
        self.s.w_usedcores = &w_usedcores[0]
        self.s.score = &score[0]
        self.s.perm = &perm[0]
        self.s.pk_pos = &pk_pos[0]
        self.s.pk_mem = &pk_mem[0]
        self.s.pk_cores = &pk_cores[0]
        self.s.combo = &combo[0]
        self.s.best_combo = &best_combo[0]
        self.s.out_n = &out_n[0]
        self.s.out_pos = &out_pos[0]
        self.s.out_mem = &out_mem[0]
        self.s.out_cores = &out_cores[0]
        self.s.counts = &counts[0]
        qi_mem = bufs["qi_mem"]; qi_cores = bufs["qi_cores"]
        qa_mem = bufs["qa_mem"]; qa_cores = bufs["qa_cores"]
        self.s.qi_mem = &qi_mem[0]
        self.s.qi_cores = &qi_cores[0]
        self.s.qa_mem = &qa_mem[0]
        self.s.qa_cores = &qa_cores[0]
        self.np_out_n = bufs["out_n"]
        self.np_out_pos = bufs["out_pos"].reshape(cap_c, cap_p)
        self.np_out_mem = bufs["out_mem"].reshape(cap_c, cap_p)
        self.np_out_cores = bufs["out_cores"].reshape(cap_c, cap_p)

    # -- per-node aggregates ---------------------------------------------
    cdef void _refresh(self, int i) noexcept nogil:
        cdef Node nv
        cdef NodeAgg* a = &self.agg[i]
        cdef int p
        cdef int64_t free, cap, cores
        cdef int t
        cdef const Cards* c = &self.table.c
        self._bump(i)                     # the memo's outcomes there are stale
        self.n_refresh += 1
        self.ver_all += 1
        _node_view(&self.table.c, i, &nv)
        self.n_nan -= a.score != a.score
        a.score = _node_base_score(nv.k, nv.count, nv.devmem, nv.devcore, nv.used,
                                   nv.usedmem, nv.usedcores) if nv.k else 0.0
        a.n_elig = 0
        a.n_zero = 0
        a.max_pct = -1
        a.max_mem = INT64_MIN
        a.max_cores = INT64_MIN
        a.types = 0
        a.modes = 0
        for p in range(nv.k):
            # (a cordon binds NVIDIA's Fit alone: a card also offered to
            # another family stays eligible)
            if (not nv.offer[p] or not nv.health[p]
                    or (nv.cordoned[p] and nv.offer[p] == (1 << FAM_NVIDIA))
                    or nv.used[p] >= nv.count[p]):
                continue
            a.n_elig += 1
            if nv.used[p] <= 0:
                a.n_zero += 1
            if nv.is_mig[p]:
                # a MIG card may take several of one request's instances
                a.n_elig = MANY_CARDS
                if nv.used[p] <= 0:
                    a.n_zero = MANY_CARDS
            free = nv.devmem[p] - nv.usedmem[p]
            if free > a.max_mem:
                a.max_mem = free
            cores = nv.devcore[p] - nv.usedcores[p]
            if cores > a.max_cores:
                a.max_cores = cores
            # largest pct with floor(devmem * pct / 100) <= free
            if nv.devmem[p] < 0 or free >= nv.devmem[p]:
                cap = 100
            elif free < 0:
                cap = -1
            else:
                cap = (100 * free + 99) // nv.devmem[p]
                if cap > 100:
                    cap = 100
            if cap > a.max_pct:
                a.max_pct = cap
            a.types |= (<uint64_t>1) << (nv.type_id[p] % 64)
            a.modes |= (<uint64_t>1) << (nv.mode_id[p] % 64)
        self.n_nan += a.score != a.score
        # the index: the node's leaf, then its ancestors
        t = self.idx_size + i
        _idx_leaf(&self.idx[t], a, i, c.alloc_cpu[i], c.req_cpu[i], c.alloc_mem[i],
                  c.req_mem[i])
        self._idx_up(t)

    cdef inline void _idx_up(self, int t) noexcept nogil:
        # the index's ancestors of entry t, recombined from their children
        t >>= 1
        while t >= 1:
            _idx_combine(&self.idx[t], &self.idx[2 * t], &self.idx[2 * t + 1])
            t >>= 1

    def refresh_node(self, int node):
        """Recompute ``node``'s aggregates after its usage arrays changed."""
        if not 0 <= node < self.table.n_nodes:
            raise IndexError(node)
        self._refresh(node)

    def refresh_all(self):
        """Recompute every node's aggregates (after changing usage behind the kernel)."""
        cdef int i
        for i in range(self.table.n_nodes):
            self._refresh(i)

    def reserve(self, rows, int sign=1):
        """What-if mutex-reserve (not HAMi): the cards at ``rows`` gain
        (``sign=1``) or lose (``-1``) a reserving pod; Fit refuses every pod a
        reserved card (``CardReservedByMutex``). The node aggregates still count
        such cards: they only bound what Fit can find."""
        cdef const Cards* c = &self.table.c
        cdef int64_t r
        for r in rows:
            if not 0 <= r < c.node_start[c.n_nodes]:
                raise IndexError(r)
            (<int64_t*>c.reserved)[r] += sign
            self._bump(_node_of_row(c, r))
            self.ver_all += 1

    def apply(self, int node, rows, d_used, d_mem, d_cores, int64_t cpu, int64_t mem,
              int sign=1):
        """Add (``sign=1``) or remove (``-1``) one pod's usage on ``node``.

        ``rows`` are card rows, ``d_*`` the per-row contribution; the live
        usage arrays and the node's aggregates are updated together.
        """
        cdef const Cards* c = &self.table.c
        cdef Py_ssize_t t, n = len(rows)
        cdef int64_t r
        cdef int64_t r0, r1
        if not 0 <= node < self.table.n_nodes:
            raise IndexError(node)
        r0 = c.node_start[node]
        r1 = c.node_start[node + 1]
        for t in range(n):
            r = rows[t]
            if not r0 <= r < r1:
                raise IndexError(r)
            (<int64_t*>c.used)[r] += sign * <int64_t>d_used[t]
            (<int64_t*>c.usedmem)[r] += sign * <int64_t>d_mem[t]
            (<int64_t*>c.usedcores)[r] += sign * <int64_t>d_cores[t]
        (<int64_t*>c.req_cpu)[node] += sign * cpu
        (<int64_t*>c.req_mem)[node] += sign * mem
        self._refresh(node)

    def nominate(self, int node, int64_t cpu, int64_t mem, int sign=1):
        """Count (``sign=1``) or stop counting (``-1``) the CPU and memory of
        pods nominated to ``node`` for the attempt that follows: the resource
        filter sees them, the least-allocated score and the user's node-policy
        rows do not (kube-scheduler adds nominated pods for its filters only)."""
        if not 0 <= node < self.table.n_nodes:
            raise IndexError(node)
        self._nominate_c(node, cpu, mem, sign)

    cdef void _nominate_c(self, int node, int64_t cpu, int64_t mem, int sign,
                          bint propagate=True) noexcept nogil:
        # the cards are as they were: only the node's CPU/memory headroom in the
        # index changes (what _refresh would recompute from the cards is the same).
        # propagate=False updates the node's leaf alone: its ancestors then hold
        # a headroom at least the true one, which only weakens the index's
        # pruning (a leaf's own check stays exact); the caller must take the
        # load off the same way with no _refresh in between (n_refresh), else
        # with propagate=True, which makes every ancestor exact again.
        cdef const Cards* c = &self.table.c
        cdef int t
        self.nom_cpu[node] += sign * cpu
        self.nom_mem[node] += sign * mem
        (<int64_t*>c.req_cpu)[node] += sign * cpu
        (<int64_t*>c.req_mem)[node] += sign * mem
        self._bump(node)
        self.ver_all += 1
        t = self.idx_size + node
        _idx_headroom(&self.idx[t], c.alloc_cpu[node], c.req_cpu[node], c.alloc_mem[node],
                      c.req_mem[node])
        if propagate:
            self._idx_up(t)

    cdef void _apply_c(self, int node, const int64_t* rows, const int64_t* d_used,
                       const int64_t* d_mem, const int64_t* d_cores, Py_ssize_t n,
                       int64_t cpu, int64_t mem, int sign) noexcept nogil:
        # apply() on C arrays, rows already known to be the node's (the compiled
        # replay engine's call)
        cdef const Cards* c = &self.table.c
        cdef Py_ssize_t t
        cdef int64_t r
        for t in range(n):
            r = rows[t]
            (<int64_t*>c.used)[r] += sign * d_used[t]
            (<int64_t*>c.usedmem)[r] += sign * d_mem[t]
            (<int64_t*>c.usedcores)[r] += sign * d_cores[t]
        (<int64_t*>c.req_cpu)[node] += sign * cpu
        (<int64_t*>c.req_mem)[node] += sign * mem
        self._refresh(node)

    cdef inline void _fit_pod(self, PodSpec pod):
        if pod.n_cont > self.s.cap_c:
            self._alloc(self.s.cap_k, max(pod.n_cont, 2 * self.s.cap_c))
        if pod.p.memo_wanted and pod.p.memo_owner != self.core_id and self.use_memo:
            self._memo_own(pod)

    cdef int _memo_own(self, PodSpec pod) except -1:
        # the pod's memo, (re)made for this kernel's nodes: nothing remembered
        # (none beyond the budget: such a pod is evaluated in full every time)
        cdef int n = max(self.table.n_nodes, 1), i
        cdef int64_t size = <int64_t>n * (sizeof(int64_t) + sizeof(int32_t))
        if self.memo_bytes + size > MEMO_BUDGET:
            return 0
        self.memo_bytes += size
        free(pod.p.memo_ver)
        free(pod.p.memo_id)
        pod.p.memo_owner = 0
        pod.p.memo_ver = <int64_t*>malloc(n * sizeof(int64_t))
        pod.p.memo_id = <int32_t*>malloc(n * sizeof(int32_t))
        if pod.p.memo_ver == NULL or pod.p.memo_id == NULL:
            raise MemoryError()
        for i in range(n):
            pod.p.memo_ver[i] = -1        # node versions start at 1
        memset(pod.p.memo_q, 0, sizeof(pod.p.memo_q))     # the state with the check off
        pod.p.memo_owner = self.core_id
        return 0

    cdef inline bint _memo_on(self, const Pod* pod) noexcept nogil:
        return self.use_memo and pod.memo_owner == self.core_id

    cdef void _memo_sync(self, Pod* pod) noexcept nogil:
        # Fit's outcome also depends on the namespace's quota state (usage and
        # limits): the memo holds for one state; another one forgets it all
        cdef int64_t q[5]
        cdef int i
        if pod.memo_owner != self.core_id:
            return
        if pod.quota:
            q[0] = 1
            q[1] = pod.q_used_mem
            q[2] = pod.q_used_cores
            q[3] = pod.q_lim_mem
            q[4] = pod.q_lim_cores
        else:
            q[0] = q[1] = q[2] = q[3] = q[4] = 0
        if memcmp(q, pod.memo_q, sizeof(q)) == 0:
            return
        memcpy(pod.memo_q, q, sizeof(q))
        for i in range(max(self.table.n_nodes, 1)):
            pod.memo_ver[i] = -1

    cdef inline int32_t _outcome_id(self, int st) noexcept nogil:
        # the id of a failed evaluation just made (Fit's counts in the scratch);
        # -1 when out of memory
        if st == ST_FIT_FAILED:
            return _intern(&self.itab, self.s.n_cards, self.s.counts)
        return st

    cdef inline void _memo_miss(self, const Pod* pod, bint memo, int i, int32_t oid) noexcept nogil:
        # after a failed evaluation of node i: remember it, or ask for a memo
        if memo:
            if oid >= 0:
                pod.memo_ver[i] = self.node_ver[i]
                pod.memo_id[i] = oid
        elif self.use_memo:
            (<Pod*>pod).memo_wanted = True

    cdef void _fill_counts(self) noexcept nogil:
        # counts / ncards of the window positions whose outcome came from the memo
        cdef int j
        cdef int32_t oid
        cdef const int32_t* row
        if not self.counts_lazy:
            return
        self.counts_lazy = False
        for j in range(self.n_window):
            oid = self.wid[j]
            if oid >= ID_ROWS:
                row = self.itab.rows + <Py_ssize_t>(oid - ID_ROWS) * ROW_W
                self.ncards[j] = row[0]
                memcpy(&self.counts[j, 0], row + 1, N_REASONS * sizeof(int32_t))

    def attempt(self, PodSpec pod, int start, int wanted, bint wants_gpu, bint node_spread,
                bint sample_only=False, bint want_ties=True):
        """One attempt: kube-scheduler's sampling, then HAMi's Filter or least-allocated.

        Returns the window position of the chosen node (hamisim's convention,
        last wins), or -1 when no node fits. ``sample_only`` stops after the
        sampling (used when the pod's Filter errors out). ``want_ties``:
        list every fitting node tied with the winner in ``tied`` (needed for
        a random tie-break only; without it ``tied`` holds the winner alone
        when a GPU pod fits).

        A GPU pod that fits leaves the chosen node's picks in the pick
        buffers (``placed`` is that node); the per-window ``status`` /
        ``counts`` buffers are complete only when no node fits.
        """
        self._fit_pod(pod)
        with nogil:
            self._attempt(&pod.p, start, wanted, wants_gpu, node_spread, sample_only,
                          want_ties)
            self._fill_counts()
        return self.best

    cdef void _attempt(self, const Pod* pod, int start, int wanted, bint wants_gpu,
                       bint node_spread, bint sample_only, bint want_ties) noexcept nogil:
        cdef const Cards* c = &self.table.c
        cdef int n = c.n_nodes
        cdef int step, i, nfeas = 0, examined = 0, split = 0, bits
        self.n_rejected = 0
        self.rej_union = 0
        self.n_window = 0
        self.n_fit = 0
        self.n_tied = 0
        self.best = -1
        self.placed = -1
        self.n_evaluated = 0
        self.counts_lazy = False
        if n == 0:
            self.next_start = 0
            return
        self._memo_sync(<Pod*>pod)
        if (self.use_index and wanted >= n and start % n == 0 and wants_gpu
                and not sample_only and not want_ties and self.n_nan == 0
                and pod.gate == NULL and pod.bonus_max == 0):
            # Every node is examined: the ordered index answers without a
            # scan when some node fits (else the scan below gives the reasons).
            if self._index_choose(pod, node_spread):
                self.next_start = start % n
                return
        # kube-scheduler: feasible nodes from the rotating start (hamisim.kube.sampling.sample_feasible)
        cdef int64_t* fits = &self.fits[0]
        cdef int64_t* window = &self.window[0]
        cdef int64_t* rej_node = &self.rej_node[0]
        cdef int32_t* rej_bits = &self.rej_bits[0]
        cdef const int64_t* alloc_cpu = c.alloc_cpu
        cdef const int64_t* alloc_mem = c.alloc_mem
        cdef const int64_t* req_cpu = c.req_cpu
        cdef const int64_t* req_mem = c.req_mem
        cdef int64_t pcpu = pod.cpu, pmem = pod.mem
        cdef const int32_t* gate = pod.gate
        cdef int nrej = 0, union_bits = 0
        i = start % n - 1
        for step in range(n):
            i += 1                          # (start + step) % n without a division
            if i == n:
                i = 0
            examined += 1
            bits = 0
            if gate != NULL and gate[i] != 0:
                # kube-scheduler's NodeUnschedulable / TaintToleration /
                # NodeAffinity rejected it (they run before NodeResourcesFit)
                bits = gate[i] << 2
            else:
                if pcpu > 0 and alloc_cpu[i] != -1 and pcpu > alloc_cpu[i] - req_cpu[i]:
                    bits |= 1
                if pmem > 0 and alloc_mem[i] != -1 and pmem > alloc_mem[i] - req_mem[i]:
                    bits |= 2
            if bits:
                rej_node[nrej] = i
                rej_bits[nrej] = bits
                union_bits |= bits
                nrej += 1
            else:
                fits[nfeas] = i       # visiting order for now
                nfeas += 1
                if i >= start:
                    split += 1
                if nfeas >= wanted:
                    break
        self.n_rejected = nrej
        self.rej_union = union_bits
        self.next_start = (start + examined) % n
        # Cluster order: the visited nodes below `start` come after the wrap.
        memcpy(window, fits + split, (nfeas - split) * sizeof(int64_t))
        memcpy(window + (nfeas - split), fits, split * sizeof(int64_t))
        self.n_window = nfeas
        if sample_only:
            return
        if not wants_gpu:
            self._least_allocated(pod)
            return
        if self._fast_choose(pod, node_spread, want_ties):
            return
        self._evaluate_all(pod, node_spread)

    cdef void _evaluate_all(self, const Pod* pod, bint node_spread) noexcept nogil:
        # No node fits (or NaN scores): every window node's full evaluation,
        # for the reason histograms (a remembered failure stands for it: its
        # counts are written by _fill_counts when someone reads them).
        cdef const Cards* c = &self.table.c
        cdef int j, i, st
        cdef Node nv
        cdef bint memo
        cdef int32_t oid
        self.placed = -1
        memo = self._memo_on(pod)
        for j in range(self.n_window):
            i = <int>self.window[j]
            if memo and pod.memo_ver[i] == self.node_ver[i]:
                oid = pod.memo_id[i]
                self.wid[j] = oid
                if oid >= ID_ROWS:
                    self.status[j] = ST_FIT_FAILED
                    self.counts_lazy = True
                else:
                    self.status[j] = oid
                    if oid == ST_UNREGISTERED:
                        self.ncards[j] = 0
                continue
            _node_view(c, i, &nv)
            self.wid[j] = -1
            if nv.k == 0:
                st = ST_UNREGISTERED
                self.ncards[j] = 0
            else:
                st = _score_node(&nv, pod, &self.s)
                if st == ST_FIT:
                    self.wscore[j] = self.s.node_score
                    self.fits[self.n_fit] = j
                    self.n_fit += 1
                elif st == ST_FIT_FAILED:
                    memcpy(&self.counts[j, 0], self.s.counts, N_REASONS * sizeof(int32_t))
                    self.ncards[j] = self.s.n_cards
            self.status[j] = st
            if st != ST_FIT:
                oid = self._outcome_id(st)
                self.wid[j] = oid
                self._memo_miss(pod, memo, i, oid)
        if self.n_fit:
            self._choose_node(node_spread)

    # -- a vectorised Python node policy (not HAMi) ---------------------
    def rank_attempt(self, PodSpec pod, int start, int wanted, ranker, double draw=-1.0):
        """:meth:`attempt` for a GPU pod whose nodes a vectorised Python node
        policy ranks (:mod:`hamisim.hami.noderows`): kube-scheduler's sampling,
        HAMi's Filter on every window node that may fit, one row per fitting
        node in ``np_rows_i`` / ``np_rows_f``, then ``ranker.choose(n_rows,
        draw)`` (a :class:`~hamisim.hami.noderows.RowRanker`) names the winning
        row. Returns the winner's window position (``tied`` holds it alone),
        or -1 when no node fits (the failure buffers are then complete, as
        after :meth:`attempt`). ``draw < 0``: no random tie-break."""
        self._fit_pod(pod)
        cdef int best = self._rank_attempt(&pod.p, start, wanted, ranker, draw)
        if best < 0:
            # the failure buffers' rows of remembered outcomes (the memo), as
            # attempt() leaves them for KernelScheduler.failure_message (the
            # replay loop's FailText reads the outcome ids and needs none)
            self._fill_counts()
        return best

    cdef int _rank_attempt(self, const Pod* pod, int start, int wanted, object ranker,
                           double draw) except -2:
        cdef int n, r
        with nogil:
            self._attempt(pod, start, wanted, True, False, True, False)
            n = self._rank_rows(pod)
        if n == 0:
            return -1
        r = ranker.choose(n, draw)
        if not 0 <= r < n:
            raise IndexError(r)
        self.best = <int>self.rows_pos[r]
        self.n_fit = n
        self.tied[0] = self.best
        self.n_tied = 1
        return self.best

    cdef int _rank_rows(self, const Pod* pod) noexcept nogil:
        # HAMi's Filter on the sampled window (no choice): a row per fitting
        # node; none fits -> the full evaluation for the failure buffers.
        cdef const Cards* c = &self.table.c
        cdef const Scratch* s = &self.s
        cdef int j, i, p, q, ci, t, r = 0, k, npick, distinct
        cdef int64_t gm, gmf, gc, gcf, ten, uc, x
        cdef Node nv
        for j in range(self.n_window):
            i = <int>self.window[j]
            if not _passes(pod, &self.agg[i]):
                continue            # NodeAgg's necessary conditions fail: cannot fit
            _node_view(c, i, &nv)
            self.n_evaluated += 1
            if nv.k == 0 or _score_node(&nv, pod, &self.s) != ST_FIT:
                self.placed = -1
                continue
            self.placed = i
            gm = gmf = gc = gcf = ten = uc = 0
            for p in range(nv.k):
                gm += nv.devmem[p]
                gmf += nv.devmem[p] - nv.usedmem[p]
                gc += nv.devcore[p]
                gcf += nv.devcore[p] - nv.usedcores[p]
                ten += nv.used[p]
                uc += nv.used[p] > 0
            # distinct NUMA nodes of the picks (a handful: quadratic is fine)
            distinct = 0
            for ci in range(pod.n_cont):
                npick = s.out_n[ci]
                for t in range(npick):
                    x = nv.numa[s.out_pos[ci * s.cap_p + t]]
                    k = 0
                    for q in range(ci + 1):
                        for p in range(s.out_n[q] if q < ci else t):
                            if nv.numa[s.out_pos[q * s.cap_p + p]] == x:
                                k = 1
                                break
                        if k:
                            break
                    distinct += k == 0
            self.rows_pos[r] = j
            self.rows_i[RW_INDEX, r] = i
            self.rows_i[RW_CARDS, r] = nv.k
            self.rows_i[RW_GPUMEM, r] = gm
            self.rows_i[RW_GPUMEM_FREE, r] = gmf
            self.rows_i[RW_GPUCORES, r] = gc
            self.rows_i[RW_GPUCORES_FREE, r] = gcf
            self.rows_i[RW_TENANTS, r] = ten
            self.rows_i[RW_USED_CARDS, r] = uc
            self.rows_i[RW_PICK_NUMAS, r] = distinct
            self.rows_f[RW_HAMI_SCORE, r] = <double>s.node_score
            self.rows_f[RW_CPU_FREE, r] = (
                INFINITY if c.alloc_cpu[i] == -1
                else <double>(c.alloc_cpu[i] - c.req_cpu[i] + self.nom_cpu[i]))
            self.rows_f[RW_MEMORY_FREE, r] = (
                INFINITY if c.alloc_mem[i] == -1
                else <double>(c.alloc_mem[i] - c.req_mem[i] + self.nom_mem[i]))
            r += 1
        if r == 0:
            self._evaluate_all(pod, False)
        return r

    # -- the fast choice ------------------------------------------------
    cdef bint _index_choose(self, const Pod* pod, bint spread) noexcept nogil:
        # The best fitting node over all nodes, by the ordered index: on
        # success it is window position 0 (the only one filled) and placed.
        cdef IdxEntry* idx = self.idx
        cdef IdxCand* h = self.iheap
        cdef IdxCand c, d
        cdef int nh = 0, size = self.idx_size, t, child, i
        if not _idx_may_fit(&idx[1], pod):
            return False
        _idx_cand(&c, &idx[1], 1, spread)
        _idx_push(h, &nh, c, spread)
        while nh > 0:
            c = _idx_pop(h, &nh, spread)
            t = c.t
            if t >= size:
                i = t - size
                if self._evaluate_node(pod, i):
                    self.window[0] = i
                    self.n_window = 1
                    self.best = 0
                    self.n_fit = 1
                    self.tied[0] = 0
                    self.n_tied = 1
                    return True
                continue
            for child in range(2 * t, 2 * t + 2):
                if _idx_may_fit(&idx[child], pod):
                    _idx_cand(&d, &idx[child], child, spread)
                    _idx_push(h, &nh, d, spread)
        return False

    cdef inline bint _evaluate(self, const Pod* pod, int j) noexcept nogil:
        # Full HAMi evaluation of window position j; picks stay in the buffers.
        return self._evaluate_node(pod, <int>self.window[j])

    cdef inline bint _evaluate_node(self, const Pod* pod, int i) noexcept nogil:
        cdef Node nv
        cdef int st
        cdef bint memo = self._memo_on(pod)
        if memo and pod.memo_ver[i] == self.node_ver[i]:
            self.placed = -1            # failed there, nothing changed since
            return False
        _node_view(&self.table.c, i, &nv)
        self.n_evaluated += 1
        st = _score_node(&nv, pod, &self.s) if nv.k else ST_UNREGISTERED
        if st == ST_FIT:
            self.placed = i
            return True
        self._memo_miss(pod, memo, i, self._outcome_id(st))
        self.placed = -1
        return False

    cdef bint _fast_choose(self, const Pod* pod, bint spread, bint want_ties) noexcept nogil:
        # Candidates (window nodes passing NodeAgg's conditions) in the node
        # policy's order, best first, each fully evaluated until the first
        # that truly fits: that is the best score among fitting nodes, the
        # last one on ties, i.e. reference._choose_node. Returns False when
        # none fits, or when a score is NaN (no total order: the caller
        # replays the full sort).
        cdef int j, nc = 0, top, best_j, k, nw = self.n_window
        cdef float best_score
        cdef const NodeAgg* a
        cdef const NodeAgg* agg = self.agg
        cdef const int64_t* window = &self.window[0]
        cdef Cand* h = self.cand
        cdef Cand c
        cdef bint found = False, ok, has_nan = False
        cdef int64_t need_n = pod.need_n, need_mem = pod.need_mem, need_pct = pod.need_pct
        cdef int64_t need_cores = pod.need_cores
        cdef int64_t need_zero = pod.need_n if pod.mutex else 0
        cdef uint64_t type_mask = pod.type_mask, mode_mask = pod.mode_mask
        # a node where the pod failed and that has not changed since fails again
        # (the memo): it is no candidate, as if evaluated and found not to fit
        cdef bint no_memo = not self._memo_on(pod)
        cdef const int64_t* mver = self.node_ver if no_memo else pod.memo_ver
        cdef const int64_t* nver = self.node_ver
        for j in range(nw):
            a = &agg[window[j]]
            has_nan |= a.score != a.score
            # NodeAgg's necessary conditions, without branches.
            ok = ((a.n_elig >= need_n) & (a.max_mem >= need_mem) & (a.max_pct >= need_pct)
                  & (a.max_cores >= need_cores) & (a.n_zero >= need_zero)
                  & ((a.types & type_mask) != 0) & ((a.modes & mode_mask) != 0)
                  & ((mver[window[j]] != nver[window[j]]) | no_memo))
            h[nc].score = a.score
            h[nc].j = j
            nc += ok
        if has_nan or nc == 0:
            return False
        if pod.bonus_max > 0:
            return False if want_ties else self._bounded_choose(pod, spread, nc)
        top = 0
        for k in range(1, nc):
            if _cand_before(spread, &h[k], &h[top]):
                top = k
        best_j = h[top].j
        best_score = h[top].score
        if self._evaluate(pod, best_j):
            found = True
        else:
            # The cheapest guess failed: a heap of the others, best first.
            h[top] = h[nc - 1]
            nc -= 1
            for k in range(nc // 2 - 1, -1, -1):
                _sift_down(h, spread, k, nc)
            while nc > 0:
                c = h[0]
                h[0] = h[nc - 1]
                nc -= 1
                _sift_down(h, spread, 0, nc)
                if self._evaluate(pod, c.j):
                    best_j = c.j
                    best_score = c.score
                    found = True
                    break
        if not found:
            return False
        self.best = best_j
        self.n_fit = 1
        if not want_ties:
            self.tied[0] = best_j
            self.n_tied = 1
            return True
        # Every fitting window node with the winning score, in window order.
        # (Candidates after best_j with that score were found not to fit.)
        for j in range(best_j):
            a = &self.agg[self.window[j]]
            if a.score == best_score and _passes(pod, a) and self._evaluate(pod, j):
                self.tied[self.n_tied] = j
                self.n_tied += 1
        self.tied[self.n_tied] = best_j
        self.n_tied += 1
        self.n_fit = self.n_tied
        if self.placed != <int>self.window[best_j]:
            self._evaluate(pod, best_j)
        return True

    cdef bint _bounded_choose(self, const Pod* pod, bint spread, int nc) noexcept nogil:
        # _fast_choose for a pod whose families add a node score (Ascend 910's
        # networks, between 0 and pod.bonus_max): candidates (self.cand[0:nc],
        # base scores) by their best possible score, each evaluated, until no
        # later one can beat the best true score found (binpack: base + bonus_max
        # below it; spread: base above it, the bonus only raising a score).
        # The same node as _choose_node over every fitting node.
        cdef Cand* h = self.cand
        cdef Cand c
        cdef int k, best_j = -1
        cdef float best_score = 0.0, sc
        if not spread:
            for k in range(nc):
                h[k].score = h[k].score + pod.bonus_max
        for k in range(nc // 2 - 1, -1, -1):
            _sift_down(h, spread, k, nc)
        while nc > 0:
            c = h[0]
            h[0] = h[nc - 1]
            nc -= 1
            _sift_down(h, spread, 0, nc)
            if best_j >= 0:
                if (c.score > best_score) if spread else (c.score < best_score):
                    break
                if c.score == best_score and c.j < best_j:
                    break
            if self._evaluate(pod, c.j):
                sc = self.s.node_score
                if best_j < 0 or (sc < best_score if spread else sc > best_score) \
                        or (sc == best_score and c.j > best_j):
                    best_j = c.j
                    best_score = sc
        if best_j < 0:
            return False
        self.best = best_j
        self.n_fit = 1
        self.tied[0] = best_j
        self.n_tied = 1
        if self.placed != <int>self.window[best_j]:
            self._evaluate(pod, best_j)
        return True

    cdef inline bint _node_less(self, bint spread, float a, float b) noexcept nogil:
        return a > b if spread else a < b

    cdef void _choose_node(self, bint spread) noexcept nogil:
        # reference._choose_node: a stable insertion sort of the fits (window
        # order) by the node comparator, last wins; ties = equal to the last.
        cdef int nf = self.n_fit
        cdef int j, pos, last, item
        cdef bint has_nan = False
        cdef float best, sc
        for j in range(nf):
            sc = self.wscore[self.fits[j]]
            if sc != sc:
                has_nan = True
                break
        if not has_nan:
            # A total order: the last of the stable sort is the last extreme.
            last = <int>self.fits[0]
            for j in range(1, nf):
                item = <int>self.fits[j]
                if not self._node_less(spread, self.wscore[item], self.wscore[last]):
                    last = item
            best = self.wscore[last]
            for j in range(nf):
                item = <int>self.fits[j]
                if self.wscore[item] == best:
                    self.tied[self.n_tied] = item
                    self.n_tied += 1
            self.best = last
            return
        # NaN scores: no total order, replay the insertion sort literally.
        for j in range(1, nf):
            item = <int>self.fits[j]
            pos = j
            while pos > 0 and self._node_less(spread, self.wscore[item],
                                              self.wscore[self.fits[pos - 1]]):
                self.fits[pos] = self.fits[pos - 1]
                pos -= 1
            self.fits[pos] = item
        last = <int>self.fits[nf - 1]
        best = self.wscore[last]
        for j in range(nf):
            item = <int>self.fits[j]
            if self.wscore[item] == best:
                self.tied[self.n_tied] = item
                self.n_tied += 1
        self.best = last

    cdef void _least_allocated(self, const Pod* pod) noexcept nogil:
        # hamisim.kube.fit.least_allocated_choice over the window.
        cdef const Cards* c = &self.table.c
        cdef int j, i, nparts
        cdef int64_t total, sc, best_score = -1
        cdef int best = -1
        for j in range(self.n_window):
            i = <int>self.window[j]
            nparts = 0
            total = 0
            # kube-scheduler scores without the nominated pods its filter counted;
            # a resource requested beyond capacity scores 0 (leastRequestedScore)
            if c.alloc_cpu[i] != -1 and c.alloc_cpu[i] != 0:
                sc = c.alloc_cpu[i] - (c.req_cpu[i] - self.nom_cpu[i]) - pod.cpu
                total += _floordiv(sc * 100, c.alloc_cpu[i]) if sc > 0 else 0
                nparts += 1
            if c.alloc_mem[i] != -1 and c.alloc_mem[i] != 0:
                sc = c.alloc_mem[i] - (c.req_mem[i] - self.nom_mem[i]) - pod.mem
                total += _floordiv(sc * 100, c.alloc_mem[i]) if sc > 0 else 0
                nparts += 1
            sc = _floordiv(total, nparts) if nparts else 0
            self.ascore[j] = sc
            if sc >= best_score:
                best = j
                best_score = sc
        self.best = best
        if best >= 0:
            for j in range(self.n_window):
                if self.ascore[j] == best_score:
                    self.tied[self.n_tied] = j
                    self.n_tied += 1

    cdef int _place_c(self, PodSpec pod, int node):
        # place() without the checks (node known valid, buffers fitted)
        cdef Node nv
        cdef int st
        _node_view(&self.table.c, node, &nv)
        if nv.k == 0:
            return ST_UNREGISTERED
        st = _score_node(&nv, &pod.p, &self.s)
        self.placed = node if st == ST_FIT else -1
        return st

    def place(self, PodSpec pod, int node):
        """Re-run the pod on ``node`` and leave its picks in the pick buffers.

        Returns the node's status (0 = fit). The picks are node-local card
        positions, per container ``np_out_pos[c, :np_out_n[c]]``.
        """
        cdef Node nv
        cdef int st
        if not 0 <= node < self.table.n_nodes:
            raise IndexError(node)
        self._fit_pod(pod)
        _node_view(&self.table.c, node, &nv)
        if nv.k == 0:
            return ST_UNREGISTERED
        with nogil:
            st = _score_node(&nv, &pod.p, &self.s)
        self.placed = node if st == ST_FIT else -1
        return st

    # -- test entry points on one node -----------------------------------
    def fit_on_node(self, PodSpec pod, int node, int ci, perm):
        """Fit container ``ci`` on ``node`` with its cards in order ``perm``.

        Every card of the node counts as a vendor card (Fit receives the
        list already filtered). Returns ``(fit, picks, counts, n_cards)``,
        picks as ``(position, mem, cores)``.
        """
        cdef Node nv
        cdef int ok, npick = 0, i
        cdef const int[::1] pm = np.ascontiguousarray(perm, dtype=np.intc)
        self._fit_pod(pod)
        self.placed = -1
        _node_view(&self.table.c, node, &nv)
        if pm.shape[0] != nv.k:
            raise ValueError("perm: one entry per card")
        _reset(&nv, &self.s)
        self.s.pin = -1
        for i in range(nv.k):
            self.s.perm[i] = pm[i]
        ok = _fit(&nv, &pod.p, pod.p.req + ci * Q_WIDTH, &self.s, nv.k, &npick)
        picks = [(self.s.pk_pos[i], self.s.pk_mem[i], self.s.pk_cores[i])
                 for i in range(npick)]
        return bool(ok), picks, self._counts_list(), int(self.s.n_cards)

    def fit_in_devices_on_node(self, PodSpec pod, int node, int ci):
        """Score, sort and Fit container ``ci`` on ``node`` from registration order.

        Returns ``(status, picks, counts, n_cards)``.
        """
        cdef Node nv
        cdef int st, i
        self._fit_pod(pod)
        self.placed = -1
        _node_view(&self.table.c, node, &nv)
        _reset(&nv, &self.s)
        self.s.pin = -1
        st = _fit_in_devices(&nv, &pod.p, ci, &self.s)
        picks = []
        if st == ST_FIT:
            picks = [(self.s.out_pos[ci * self.s.cap_p + i], self.s.out_mem[ci * self.s.cap_p + i],
                      self.s.out_cores[ci * self.s.cap_p + i]) for i in range(self.s.out_n[ci])]
        return st, picks, self._counts_list(), int(self.s.n_cards)

    def score_node(self, PodSpec pod, int node):
        """The whole pod on ``node``: ``(status, score, picks per container, counts, n_cards)``."""
        cdef int st = self.place(pod, node)
        containers = []
        if st == ST_FIT:
            containers = self.picks(pod.n_cont)
        return st, float(self.s.node_score), containers, self._counts_list(), \
            int(self.s.n_cards)

    def picks(self, int n_cont):
        """Per container ``[(position, mem, cores), ...]`` from the last :meth:`place`."""
        cdef int ci, i, base
        out = []
        for ci in range(n_cont):
            base = ci * self.s.cap_p
            out.append([(self.s.out_pos[base + i], self.s.out_mem[base + i],
                         self.s.out_cores[base + i]) for i in range(self.s.out_n[ci])])
        return out

    def mig_picks(self, int n_cont):
        """Per container ``[(profile, placement), ...]`` beside :meth:`picks`: the
        MIG profile and placement rows each pick got (-1, -1 on other cards)."""
        cdef int ci, i, base
        out = []
        for ci in range(n_cont):
            base = ci * self.s.cap_p
            out.append([(self.s.out_prof[base + i], self.s.out_pl[base + i])
                        for i in range(self.s.out_n[ci])])
        return out

    def apply_mig(self, rows, masks, int sign=1):
        """Add (``sign=1``) or remove (``-1``) MIG instances: per card row the
        placement's bit mask. Overlapping instances are counted per slot, so
        removing one leaves the others' slots taken."""
        cdef Py_ssize_t t, n = len(rows)
        cdef int64_t r
        if n and self.table.c.mig_cnt == NULL:
            raise ValueError("the cluster has no MIG card")
        for t in range(n):
            r = rows[t]
            if not 0 <= r < self.table.c.node_start[self.table.n_nodes]:
                raise IndexError(r)
            self._mig_add(r, <uint64_t>masks[t], sign)

    cdef void _mig_add(self, int64_t r, uint64_t mask, int sign) noexcept nogil:
        cdef int32_t* cnt = self.table.c.mig_cnt + r * 64
        cdef uint64_t* occ = <uint64_t*>self.table.c.mig_occ + r
        cdef int b
        self._bump(<int>_node_of_row(&self.table.c, r))
        self.ver_all += 1
        for b in range(64):
            if (mask >> b) & 1:
                cnt[b] += sign
                if cnt[b] > 0:
                    occ[0] |= (<uint64_t>1) << b
                else:
                    occ[0] &= ~((<uint64_t>1) << b)

    def failure_groups(self):
        """The last failed attempt's window, summarised for the event message.

        Returns ``(status_nodes, groups)``: the number of window nodes per
        status code, and for the nodes whose Fit failed on their cards, one
        ``(position, nodes)`` per distinct (reason histogram, card count),
        ``position`` being the first window position with it. Grouping is by
        hash with exact comparison, in one pass over the window.
        """
        cdef int nw = self.n_window, j, r, g, n_groups = 0, st
        cdef int mask = <int>self.gslot.shape[0] - 1
        cdef uint64_t h
        cdef int32_t* row
        cdef int32_t* other
        cdef int by_status[5]
        memset(by_status, 0, sizeof(by_status))
        with nogil:
            for j in range(nw):
                st = self.status[j]
                by_status[st] += 1
                if st != ST_FIT_FAILED:
                    continue
                row = &self.counts[j, 0]
                h = 1469598103934665603ULL ^ <uint64_t>self.ncards[j]
                for r in range(N_REASONS):
                    h = (h ^ <uint64_t><uint32_t>row[r]) * 1099511628211ULL
                h ^= h >> 29
                g = <int>(h & <uint64_t>mask)
                while True:
                    if self.gslot[g] < 0:
                        self.gslot[g] = n_groups
                        self.grep[n_groups] = j
                        self.gnum[n_groups] = 1
                        n_groups += 1
                        break
                    other = &self.counts[self.grep[self.gslot[g]], 0]
                    if (self.ncards[self.grep[self.gslot[g]]] == self.ncards[j]
                            and memcmp(other, row, N_REASONS * sizeof(int32_t)) == 0):
                        self.gnum[self.gslot[g]] += 1
                        break
                    g = (g + 1) & mask
            # empty the slots again (only those used)
            for g in range(n_groups):
                j = self.grep[g]
                row = &self.counts[j, 0]
                h = 1469598103934665603ULL ^ <uint64_t>self.ncards[j]
                for r in range(N_REASONS):
                    h = (h ^ <uint64_t><uint32_t>row[r]) * 1099511628211ULL
                h ^= h >> 29
                r = <int>(h & <uint64_t>mask)
                while self.gslot[r] != g:
                    r = (r + 1) & mask
                self.gslot[r] = -1
        return ([by_status[st] for st in range(5)],
                [(self.grep[g], self.gnum[g]) for g in range(n_groups)])

    def _counts_list(self):
        return [self.s.counts[i] for i in range(N_REASONS)]

    @property
    def node_score(self):
        return float(self.s.node_score)


# ---------------------------------------------------------------------------
# Stateless test entry points
# ---------------------------------------------------------------------------
def card_scores(count, devmem, devcore, used, usedmem, usedcores, req, match, weights):
    """Card score (§3.1) of each card for one container's requests.

    ``req`` is ``(n_req, 5)`` int64 request rows, ``match[card, j]`` whether
    request ``j``'s type equals the card's type; returns float32 scores.
    """
    cdef const int64_t[::1] cnt = count, dm = devmem, dc = devcore
    cdef const int64_t[::1] u = used, um = usedmem, uc = usedcores
    cdef const int64_t[:, ::1] r = np.ascontiguousarray(req, dtype=np.int64).reshape(-1, Q_WIDTH)
    cdef const uint8_t[:, ::1] mt = np.ascontiguousarray(match, dtype=np.uint8).reshape(
        cnt.shape[0], r.shape[0])
    cdef const float[::1] w = weights
    cdef Py_ssize_t p, n = cnt.shape[0]
    out = np.zeros(n, dtype=np.float32)
    cdef float[::1] o = out
    cdef const int64_t* rp = &r[0, 0] if r.shape[0] else NULL
    for p in range(n):
        o[p] = _card_score(cnt[p], dm[p], dc[p], u[p], um[p], uc[p], rp, <int>r.shape[0],
                           &mt[p, 0] if r.shape[0] else NULL, w[0], w[1], w[2])
    return out


def card_less(int mode, chain, int n_chain, bint numa_bind, a, b):
    """The comparator (§3.2) on two cards given as ``(score, numa, used, index)``."""
    cdef float score[2]
    cdef int64_t numa[2]
    cdef int64_t used[2]
    cdef int64_t index[2]
    cdef SortCtx ctx
    cdef int i
    score[0] = a[0]; numa[0] = a[1]; used[0] = a[2]; index[0] = a[3]
    score[1] = b[0]; numa[1] = b[1]; used[1] = b[2]; index[1] = b[3]
    ctx.score = score
    ctx.numa = numa
    ctx.used = used
    ctx.index = index
    ctx.mode = mode
    ctx.n_chain = n_chain
    for i in range(3):
        ctx.chain[i] = chain[i] if i < len(chain) else 0
    ctx.numa_bind = numa_bind
    return bool(_sort_less(&ctx, 0, 1))


def sort_order(int mode, chain, int n_chain, bint numa_bind, scores, numa, used, index):
    """Go's ``sort.Sort`` of cards ``0..n-1`` with the comparator; returns the permutation."""
    cdef const float[::1] sc = scores
    cdef const int64_t[::1] nu = numa, us = used, ix = index
    cdef Py_ssize_t n = sc.shape[0]
    cdef SortCtx ctx
    cdef int i
    perm = np.arange(n, dtype=np.intc)
    cdef int[::1] pm = perm
    if n == 0:
        return perm
    ctx.score = &sc[0]
    ctx.numa = &nu[0]
    ctx.used = &us[0]
    ctx.index = &ix[0]
    ctx.mode = mode
    ctx.n_chain = n_chain
    for i in range(3):
        ctx.chain[i] = chain[i] if i < len(chain) else 0
    ctx.numa_bind = numa_bind
    go_sort_perm(&pm[0], <int>n, &ctx)
    return perm


def node_base_score(count, devmem, devcore, used, usedmem, usedcores):
    """Node base score (§5.3) over the given cards."""
    cdef const int64_t[::1] cnt = count, dm = devmem, dc = devcore
    cdef const int64_t[::1] u = used, um = usedmem, uc = usedcores
    if cnt.shape[0] == 0:
        return 0.0
    return float(_node_base_score(<int>cnt.shape[0], &cnt[0], &dm[0], &dc[0], &u[0], &um[0],
                                  &uc[0]))


def node_less(bint spread, float a, float b):
    """Node comparator (§5.4) on float32 scores."""
    return bool(a > b if spread else a < b)
