# cython: language_level=3
# An ordered index of the nodes for the kernel's fast choice (hamisim._core.Core).
# Declarations and inline functions only: Core inlines every one of them.
#
# When kube-scheduler hands HAMi every node (clusters under 100 nodes, or
# percentage_of_nodes_to_score 100), the chosen node is the best-scored node
# that passes the resource fit and HAMi's Fit, the last in cluster order on
# ties. Scanning every node per attempt makes that linear in the cluster
# size; this index answers it by a best-first descent of a segment tree over
# the nodes in cluster order.
#
# Each tree entry holds, for the nodes below it: the best (score, position)
# pair under node binpack (highest score, then highest position) and under
# node spread (lowest score, then highest position), and the largest value
# of every NodeAgg condition plus the free CPU and memory. A subtree whose
# largest values fail the pod's needs cannot hold a fitting node and is
# skipped; the others are expanded best pair first, so the first leaf that
# truly fits is the node the linear scan would choose. Leaves are refreshed
# with the node's aggregates (O(log n) per bind or delete).

from libc.math cimport INFINITY
from libc.stdint cimport int32_t, int64_t, uint64_t, INT64_MIN, INT64_MAX

from hamisim._types cimport NodeAgg, Pod

ctypedef struct IdxEntry:
    float hi                   # best score under binpack (largest) ...
    int32_t hi_pos             # ... and the last position holding it
    float lo                   # best score under spread (smallest) ...
    int32_t lo_pos
    int32_t n_elig             # largest values below this entry
    int32_t n_zero
    int64_t max_pct
    int64_t max_mem
    int64_t max_cores
    int64_t cpu_free           # INT64_MAX: no CPU limit on the node
    int64_t mem_free
    uint64_t types             # unions
    uint64_t modes


ctypedef struct IdxCand:
    float score
    int32_t pos                # tie-break: the later position wins
    int32_t t                  # tree entry


cdef inline void _idx_empty(IdxEntry* e) noexcept nogil:
    # A padding leaf: no node, fails every need.
    e.hi = -INFINITY
    e.lo = INFINITY
    e.hi_pos = -1
    e.lo_pos = -1
    e.n_elig = -1
    e.n_zero = -1
    e.max_pct = INT64_MIN
    e.max_mem = INT64_MIN
    e.max_cores = INT64_MIN
    e.cpu_free = INT64_MIN
    e.mem_free = INT64_MIN
    e.types = 0
    e.modes = 0


cdef inline void _idx_headroom(IdxEntry* e, int64_t alloc_cpu, int64_t req_cpu,
                               int64_t alloc_mem, int64_t req_mem) noexcept nogil:
    # a leaf's free CPU and memory (INT64_MAX: no limit on the node)
    e.cpu_free = INT64_MAX if alloc_cpu == -1 else alloc_cpu - req_cpu
    e.mem_free = INT64_MAX if alloc_mem == -1 else alloc_mem - req_mem


cdef inline void _idx_leaf(IdxEntry* e, const NodeAgg* a, int pos, int64_t alloc_cpu,
                           int64_t req_cpu, int64_t alloc_mem, int64_t req_mem) noexcept nogil:
    e.hi = a.score
    e.lo = a.score
    e.hi_pos = pos
    e.lo_pos = pos
    e.n_elig = a.n_elig
    e.n_zero = a.n_zero
    e.max_pct = a.max_pct
    e.max_mem = a.max_mem
    e.max_cores = a.max_cores
    _idx_headroom(e, alloc_cpu, req_cpu, alloc_mem, req_mem)
    e.types = a.types
    e.modes = a.modes


cdef inline void _idx_combine(IdxEntry* e, const IdxEntry* x, const IdxEntry* y) noexcept nogil:
    # x holds the earlier positions, y the later ones: on equal scores y wins.
    if x.hi > y.hi:
        e.hi = x.hi
        e.hi_pos = x.hi_pos
    else:
        e.hi = y.hi
        e.hi_pos = y.hi_pos
    if x.lo < y.lo:
        e.lo = x.lo
        e.lo_pos = x.lo_pos
    else:
        e.lo = y.lo
        e.lo_pos = y.lo_pos
    e.n_elig = x.n_elig if x.n_elig > y.n_elig else y.n_elig
    e.n_zero = x.n_zero if x.n_zero > y.n_zero else y.n_zero
    e.max_pct = x.max_pct if x.max_pct > y.max_pct else y.max_pct
    e.max_mem = x.max_mem if x.max_mem > y.max_mem else y.max_mem
    e.max_cores = x.max_cores if x.max_cores > y.max_cores else y.max_cores
    e.cpu_free = x.cpu_free if x.cpu_free > y.cpu_free else y.cpu_free
    e.mem_free = x.mem_free if x.mem_free > y.mem_free else y.mem_free
    e.types = x.types | y.types
    e.modes = x.modes | y.modes


cdef inline bint _idx_may_fit(const IdxEntry* e, const Pod* pod) noexcept nogil:
    # For a leaf: the resource fit and NodeAgg's conditions (_passes) exactly.
    return ((e.n_elig >= pod.need_n) & (e.max_mem >= pod.need_mem)
            & (e.max_pct >= pod.need_pct) & (e.max_cores >= pod.need_cores)
            & ((not pod.mutex) | (e.n_zero >= pod.need_n))
            & ((e.types & pod.type_mask) != 0) & ((e.modes & pod.mode_mask) != 0)
            & ((pod.cpu <= 0) | (e.cpu_free >= pod.cpu))
            & ((pod.mem <= 0) | (e.mem_free >= pod.mem)))


cdef inline void _idx_cand(IdxCand* c, const IdxEntry* e, int t, bint spread) noexcept nogil:
    c.t = t
    if spread:
        c.score = e.lo
        c.pos = e.lo_pos
    else:
        c.score = e.hi
        c.pos = e.hi_pos


cdef inline bint _idx_before(bint spread, const IdxCand* x, const IdxCand* y) noexcept nogil:
    if x.score != y.score:
        return x.score < y.score if spread else x.score > y.score
    return x.pos > y.pos


cdef inline void _idx_push(IdxCand* h, int* n, IdxCand c, bint spread) noexcept nogil:
    cdef int k = n[0], parent
    n[0] = k + 1
    while k > 0:
        parent = (k - 1) >> 1
        if not _idx_before(spread, &c, &h[parent]):
            break
        h[k] = h[parent]
        k = parent
    h[k] = c


cdef inline IdxCand _idx_pop(IdxCand* h, int* n, bint spread) noexcept nogil:
    cdef IdxCand top = h[0], last
    cdef int k = 0, child, m
    n[0] -= 1
    m = n[0]
    if m == 0:
        return top
    last = h[m]
    while True:
        child = 2 * k + 1
        if child >= m:
            break
        if child + 1 < m and _idx_before(spread, &h[child + 1], &h[child]):
            child += 1
        if not _idx_before(spread, &h[child], &last):
            break
        h[k] = h[child]
        k = child
    h[k] = last
    return top
