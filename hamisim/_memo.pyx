# cython: language_level=3
# The memo of failed node evaluations: the module hamisim._memo (Core's intern
# table of Fit failure rows; _memo.pxd declares it).
#
# Why: on a saturated cluster most attempts fail, and a failed attempt runs
# HAMi's full Fit on every window node (twice: the fast choice's candidates,
# then the whole window for the reason histogram). kube-scheduler retries the
# same pending requests after every bind and departure, and between two such
# attempts most nodes have not changed.
#
# What makes it exact: one node's evaluation (status, Fit's reason histogram,
# the card count handed to Fit) is a function of the node's card state and
# the pod's request only. Core counts every change of a node's card state in
# node_ver (_refresh, _mig_add and reserve bump it: every path that changes
# usage, CPU/memory, MIG occupancy or reservations goes through one of them).
# A PodSpec remembers, per node, the version at which the pod last FAILED
# there and that outcome as an id; at the same version again the outcome is
# reused instead of re-running Fit. A fitting outcome is never remembered
# (it must leave its picks in the buffers). Under a ResourceQuota, Fit also
# reads the namespace's usage and limits: the memo holds for the quota state
# it was filled in (Pod.memo_q) and is emptied when an attempt comes with
# another (Core._memo_sync), so an overloaded namespace's retries still cost
# a lookup between binds. Every failed evaluation gets an outcome id, memo
# or not (the failure text is built from the ids).
#
# Outcome ids: a status other than ST_FIT_FAILED is its own code (< ID_ROWS);
# a Fit failure is ID_ROWS + the index of its (n_cards, counts) row in the
# Core's intern table, so equal histograms share one id (the replay engine
# maps ids to kube-scheduler's reason text once per id).
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

from hamisim._codes cimport N_REASONS


cdef inline uint64_t _row_hash(int64_t n_cards, const int32_t* counts) noexcept nogil:
    cdef uint64_t h = 1469598103934665603ULL ^ <uint64_t>n_cards
    cdef int r
    for r in range(N_REASONS):
        h = (h ^ <uint64_t><uint32_t>counts[r]) * 1099511628211ULL
    return h ^ (h >> 29)


cdef int _intern_init(Intern* t) noexcept nogil:
    # 0, or -1 when out of memory
    cdef int32_t i
    t.n = 0
    t.cap = 64
    t.mask = 127
    t.rows = <int32_t*>malloc(t.cap * ROW_W * sizeof(int32_t))
    t.slot = <int32_t*>malloc((t.mask + 1) * sizeof(int32_t))
    if t.rows == NULL or t.slot == NULL:
        return -1
    for i in range(t.mask + 1):
        t.slot[i] = -1
    return 0


cdef void _intern_free(Intern* t) noexcept nogil:
    free(t.rows)
    free(t.slot)
    t.rows = NULL
    t.slot = NULL


cdef int32_t _intern(Intern* t, int64_t n_cards, const int32_t* counts) noexcept nogil:
    # The id of the row (n_cards, counts), added when new; -1 when out of memory.
    cdef uint64_t h = _row_hash(n_cards, counts)
    cdef int32_t g = <int32_t>(h & <uint64_t>t.mask), i, cap, mask
    cdef int32_t* row
    cdef int32_t* rows
    cdef int32_t* slot
    while t.slot[g] >= 0:
        row = t.rows + <Py_ssize_t>t.slot[g] * ROW_W
        if row[0] == n_cards and memcmp(row + 1, counts, N_REASONS * sizeof(int32_t)) == 0:
            return ID_ROWS + t.slot[g]
        g = (g + 1) & t.mask
    if t.n == t.cap:
        # grow rows and re-hash into twice the slots
        cap = 2 * t.cap
        mask = 2 * (t.mask + 1) - 1
        rows = <int32_t*>realloc(t.rows, cap * ROW_W * sizeof(int32_t))
        if rows == NULL:
            return -1
        t.rows = rows
        slot = <int32_t*>malloc((mask + 1) * sizeof(int32_t))
        if slot == NULL:
            return -1
        free(t.slot)
        t.slot = slot
        t.cap = cap
        t.mask = mask
        for i in range(mask + 1):
            slot[i] = -1
        for i in range(t.n):
            row = t.rows + <Py_ssize_t>i * ROW_W
            g = <int32_t>(_row_hash(row[0], row + 1) & <uint64_t>mask)
            while slot[g] >= 0:
                g = (g + 1) & mask
            slot[g] = i
        g = <int32_t>(h & <uint64_t>mask)
        while slot[g] >= 0:
            g = (g + 1) & mask
    row = t.rows + <Py_ssize_t>t.n * ROW_W
    row[0] = <int32_t>n_cards
    memcpy(row + 1, counts, N_REASONS * sizeof(int32_t))
    t.slot[g] = t.n
    t.n += 1
    return ID_ROWS + t.n - 1
