# cython: language_level=3
"""Test-only harness around hamisim/_gosort.pxi.

Compiled at test time by tests/test_gosort.py with hamisim/ on Cython's
include path.  It plays the part of hamisim/_core.pyx: it defines SortCtx
and _sort_less before including the kernel, then exposes a Python entry
point that sorts row numbers by integer keys.
"""

from libc.stdlib cimport malloc, free


ctypedef struct SortCtx:
    const long* keys


cdef inline bint _sort_less(const SortCtx* ctx, int a, int b) noexcept nogil:
    return ctx.keys[a] < ctx.keys[b]


include "_gosort.pyx"


def sort_perm(keys):
    """Return the order of original positions after Go's sort.Sort on keys."""
    cdef Py_ssize_t n = len(keys)
    cdef Py_ssize_t i
    cdef long* karr = <long*>malloc((n if n > 0 else 1) * sizeof(long))
    cdef int* perm = <int*>malloc((n if n > 0 else 1) * sizeof(int))
    cdef SortCtx ctx
    if karr == NULL or perm == NULL:
        free(karr)
        free(perm)
        raise MemoryError()
    try:
        for i in range(n):
            karr[i] = keys[i]
            perm[i] = <int>i
        ctx.keys = karr
        with nogil:
            go_sort_perm(perm, <int>n, &ctx)
        return [perm[i] for i in range(n)]
    finally:
        free(karr)
        free(perm)
