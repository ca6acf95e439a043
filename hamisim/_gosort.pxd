# cython: language_level=3
# Go's sort.Sort on a permutation array, with HAMi's card comparator (§3.2).
#
# _sort_less is inline here so that the sort in _gosort.pyx (and the kernel's
# card_less) inline it: it runs O(k log k) times per container and node.
from libc.stdint cimport int64_t

from hamisim._codes cimport (MODE_CHAIN, SINGLE_MUTEX, SINGLE_BINPACK, KEY_BINPACK,
                             KEY_SPREAD, KEY_NUMA)


# The card list's order keys (node-local positions index every array).
ctypedef struct SortCtx:
    const float* score          # node-local
    const int64_t* numa
    const int64_t* used         # working usage (mutex sorts by tenants)
    const int64_t* index
    int mode
    int n_chain
    int chain[3]
    bint numa_bind


cdef inline bint _sort_less(const SortCtx* ctx, int a, int b) noexcept nogil:
    cdef float sa = ctx.score[a]
    cdef float sb = ctx.score[b]
    cdef int64_t na = ctx.numa[a]
    cdef int64_t nb = ctx.numa[b]
    cdef int i, key
    cdef bint binpack
    if ctx.mode == MODE_CHAIN:
        for i in range(ctx.n_chain):
            key = ctx.chain[i]
            if key == KEY_BINPACK:
                if sa != sb:
                    return sa < sb
            elif key == KEY_SPREAD:
                if sa != sb:
                    return sa > sb
            elif key == KEY_NUMA:
                if na != nb:
                    return na < nb
        return ctx.index[a] < ctx.index[b]
    if ctx.mode == SINGLE_MUTEX:
        if ctx.used[a] != ctx.used[b]:
            return ctx.used[a] > ctx.used[b]
        return na < nb
    binpack = ctx.mode == SINGLE_BINPACK
    if ctx.numa_bind:
        if na != nb:
            return na > nb if binpack else na < nb
        return sa < sb if binpack else sa > sb
    if sa != sb:
        return sa < sb if binpack else sa > sb
    return na < nb


# Sorts perm[0:n] in place as Go's sort.Sort would, comparing with _sort_less.
cdef void go_sort_perm(int* perm, int n, const SortCtx* ctx) noexcept nogil
