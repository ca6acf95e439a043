# cython: language_level=3
# The memo of failed node evaluations (see _memo.pyx for why and how): the
# outcome ids' layout, the intern table of Fit failure rows, and the helper
# Core uses to version a card row's node.
from libc.stdint cimport int32_t, int64_t

from hamisim._codes cimport N_REASONS
from hamisim._types cimport Cards


cdef enum:
    ID_ROWS = 8                # ids below: status codes
    ROW_W = N_REASONS + 1      # an interned row: n_cards, then the counts

# A PodSpec gets its memo (12 bytes per node) at its first failure, and a
# kernel makes memos up to this many bytes (then pods go without one).
cdef enum:
    MEMO_BUDGET = 256 * 1024 * 1024


ctypedef struct Intern:
    int32_t* rows              # n x ROW_W
    int32_t n
    int32_t cap
    int32_t* slot              # open addressing: row index, -1 empty
    int32_t mask               # slots - 1 (slots >= 2 * cap)


cdef int _intern_init(Intern* t) noexcept nogil
cdef void _intern_free(Intern* t) noexcept nogil
cdef int32_t _intern(Intern* t, int64_t n_cards, const int32_t* counts) noexcept nogil


cdef inline int _node_of_row(const Cards* c, int64_t r) noexcept nogil:
    # the node holding card row r (the last node starting at or before it)
    cdef int lo = 0, hi = c.n_nodes - 1, mid
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if c.node_start[mid] <= r:
            lo = mid
        else:
            hi = mid - 1
    return lo
