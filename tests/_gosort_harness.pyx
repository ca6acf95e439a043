# cython: language_level=3
"""Test-only harness around the compiled sort, hamisim._gosort.

Compiled at test time by tests/test_gosort.py with the project root on
Cython's include path; it cimports go_sort_perm from the built module (so the
module under test is the one the kernel calls) and exposes a Python entry point
that sorts row numbers by integer keys.

The keys go in SortCtx's numa column under the single binpack mode with every
score equal and no numa binding: HAMi's comparator then reduces to
``numa[a] < numa[b]``, i.e. Go's Less on the keys, and equal keys are equal.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free

from hamisim._codes cimport SINGLE_BINPACK
from hamisim._gosort cimport SortCtx, go_sort_perm


def sort_perm(keys):
    """Return the order of original positions after Go's sort.Sort on keys."""
    cdef Py_ssize_t n = len(keys)
    cdef Py_ssize_t i
    cdef Py_ssize_t size = n if n > 0 else 1
    cdef int64_t* karr = <int64_t*>malloc(size * sizeof(int64_t))
    cdef float* score = <float*>malloc(size * sizeof(float))
    cdef int* perm = <int*>malloc(size * sizeof(int))
    cdef SortCtx ctx
    if karr == NULL or score == NULL or perm == NULL:
        free(karr)
        free(score)
        free(perm)
        raise MemoryError()
    try:
        for i in range(n):
            karr[i] = keys[i]
            score[i] = 0.0
            perm[i] = <int>i
        ctx.score = score
        ctx.numa = karr
        ctx.used = NULL
        ctx.index = NULL
        ctx.mode = SINGLE_BINPACK
        ctx.n_chain = 0
        ctx.numa_bind = False
        with nogil:
            go_sort_perm(perm, <int>n, &ctx)
        return [perm[i] for i in range(n)]
    finally:
        free(karr)
        free(score)
        free(perm)
