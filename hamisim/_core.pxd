# cython: language_level=3
# The HAMi kernel's classes, declared for the modules that cimport them
# (_failtext and _replay read Core's result buffers and call its C methods).
# Their definitions and docstrings are in _core.pyx.
from libc.stdint cimport int32_t, int64_t, uint64_t

from hamisim._types cimport Cards, Pod, NodeAgg, Cand, Scratch
from hamisim._nodeindex cimport IdxEntry, IdxCand
from hamisim._memo cimport Intern


cdef class CardTable:
    cdef Cards c
    cdef readonly int max_cards
    #: what-if mutex-reserve: per row the pods holding the card under it (Core.reserve)
    cdef readonly object reserved
    #: the most picks one container can get on a node (cards, MIG instances)
    cdef readonly int max_picks
    cdef readonly int n_nodes
    cdef list _keep


cdef class PodSpec:
    cdef Pod p
    cdef list _keep
    cdef readonly int n_cont
    #: not HAMi: the cluster's vectorised Python node policy ranks this pod's
    #: nodes (Core.rank_attempt), i.e. the pod names no node policy of its own
    cdef public bint user_rank

    cdef void _filter(self, const int64_t[:, ::1] r, type_ok, mode_ok)


cdef class Core:
    cdef CardTable table
    cdef Scratch s
    cdef object _bufs
    # result buffers (node-sized)
    cdef int64_t[::1] rej_node
    cdef int32_t[::1] rej_bits
    cdef int64_t[::1] window
    cdef int32_t[::1] status
    cdef float[::1] wscore
    cdef int32_t[:, ::1] counts
    cdef int64_t[::1] ncards
    cdef int64_t[::1] tied
    cdef int64_t[::1] fits
    cdef int64_t[::1] ascore          # least-allocated scores
    # the CPU/memory of nominated pods counted in req_cpu/req_mem during an
    # attempt: kube-scheduler's filters count them, its scores do not
    cdef int64_t[::1] nom_cpu, nom_mem
    cdef int32_t[::1] gslot           # failure grouping: hash slots -> group, -1 empty
    cdef int32_t[::1] grep, gnum      # per group: representative position, nodes
    cdef readonly object np_rej_node, np_rej_bits, np_window, np_status, np_score
    cdef readonly object np_counts, np_ncards, np_tied
    cdef readonly object np_out_n, np_out_pos, np_out_mem, np_out_cores
    cdef readonly int n_rejected, n_window, n_fit, n_tied, best, next_start
    #: the union of the rejected nodes' bits (1 CPU, 2 memory, 4 and up: a
    #: static filter): which of kube-scheduler's plugins rejected the attempt
    cdef readonly int rej_union
    # per-node aggregates (NodeAgg), candidates of the fast choice
    cdef NodeAgg* agg
    cdef Cand* cand
    cdef object _agg_buf, _cand_buf
    # the ordered node index (_nodeindex.pxd): tree entries 1 .. 2*idx_size-1,
    # leaves at idx_size + node; its search heap; nodes with a NaN score
    cdef IdxEntry* idx
    cdef IdxCand* iheap
    cdef int idx_size
    cdef int n_nan
    cdef object _idx_buf, _iheap_buf
    #: answer from the ordered index when every node is examined (False =
    #: always scan; the same decisions, kept for tests and benchmarks)
    cdef public bint use_index
    cdef readonly int placed          # node whose picks are in the pick buffers, -1 none
    cdef readonly int n_evaluated     # nodes fully scored by the last attempt (memo hits: not)
    # rank_attempt's rows (a vectorised Python node policy, not HAMi): per
    # fitting window node, the columns of hamisim.hami.noderows (column-major:
    # one contiguous column per row of these arrays) and its window position
    cdef int64_t[:, ::1] rows_i
    cdef double[:, ::1] rows_f
    cdef int64_t[::1] rows_pos
    cdef readonly object np_rows_i, np_rows_f
    # the memo of failed evaluations (_memo.pyx): per node its version, the
    # outcome ids, per window position the last attempt's outcome id (-1 a
    # fit, or not remembered), and whether counts/ncards still lack the rows
    # of remembered outcomes
    cdef int64_t* node_ver
    #: the sum of node_ver: any node's card, CPU/memory, MIG or reservation
    #: change bumps it (the replay engine's shortcut of repeated failures reads it)
    cdef int64_t ver_all
    #: _refresh calls so far (a nominated load added without propagating it up
    #: the index must be taken off with propagation if any came in between)
    cdef int64_t n_refresh
    # gate classes (set_gate_classes): per class, the bumps of node_ver on the
    # nodes its static gate passes; per node (CSR) the classes passing it
    cdef int n_cls
    cdef int64_t[::1] cls_ver
    cdef int32_t[::1] cls_start, cls_of
    cdef inline void _bump(self, int i) noexcept nogil
    cdef inline void _idx_up(self, int t) noexcept nogil
    cdef Intern itab
    cdef int32_t* wid
    cdef uint64_t core_id
    cdef int64_t memo_bytes             # memos made for this kernel (MEMO_BUDGET at most)
    cdef bint counts_lazy
    #: reuse the outcome of a node whose state has not changed since the pod
    #: failed there (identical results; False re-runs Fit every time)
    cdef public bint use_memo

    cdef void _refresh(self, int i) noexcept nogil
    cdef void _nominate_c(self, int node, int64_t cpu, int64_t mem, int sign,
                          bint propagate=*) noexcept nogil
    cdef void _apply_c(self, int node, const int64_t* rows, const int64_t* d_used,
                       const int64_t* d_mem, const int64_t* d_cores, Py_ssize_t n, int64_t cpu,
                       int64_t mem, int sign) noexcept nogil
    cdef inline void _fit_pod(self, PodSpec pod)
    cdef int _memo_own(self, PodSpec pod) except -1
    cdef inline bint _memo_on(self, const Pod* pod) noexcept nogil
    cdef void _memo_sync(self, Pod* pod) noexcept nogil
    cdef inline int32_t _outcome_id(self, int st) noexcept nogil
    cdef inline void _memo_miss(self, const Pod* pod, bint memo, int i, int32_t oid) noexcept nogil
    cdef void _fill_counts(self) noexcept nogil
    cdef void _attempt(self, const Pod* pod, int start, int wanted, bint wants_gpu,
                       bint node_spread, bint sample_only, bint want_ties) noexcept nogil
    cdef void _evaluate_all(self, const Pod* pod, bint node_spread) noexcept nogil
    cdef int _rank_attempt(self, const Pod* pod, int start, int wanted, object ranker,
                           double draw) except -2
    cdef int _rank_rows(self, const Pod* pod) noexcept nogil
    cdef bint _index_choose(self, const Pod* pod, bint spread) noexcept nogil
    cdef inline bint _evaluate(self, const Pod* pod, int j) noexcept nogil
    cdef inline bint _evaluate_node(self, const Pod* pod, int i) noexcept nogil
    cdef bint _fast_choose(self, const Pod* pod, bint spread, bint want_ties) noexcept nogil
    cdef bint _bounded_choose(self, const Pod* pod, bint spread, int nc) noexcept nogil
    cdef inline bint _node_less(self, bint spread, float a, float b) noexcept nogil
    cdef void _choose_node(self, bint spread) noexcept nogil
    cdef void _least_allocated(self, const Pod* pod) noexcept nogil
    cdef int _place_c(self, PodSpec pod, int node)
    cdef void _mig_add(self, int64_t r, uint64_t mask, int sign) noexcept nogil
