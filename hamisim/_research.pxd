# cython: language_level=3
# ResearchCore's state and C methods, declared (definitions and docstring in
# _research.pyx).
from libc.stdint cimport int32_t, int64_t, uint8_t


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
