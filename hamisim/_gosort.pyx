# cython: language_level=3
# Go sort.Sort (Go 1.26) for a permutation array: the module hamisim._gosort.
#
# This is the compiled twin of hamisim/hami/gosort.py; see that module's
# docstring for why hamisim needs Go's exact (unstable) ordering and for an
# outline of the algorithm (pdqsort from Go's src/sort/zsortinterface.go,
# plus Sort/xorshift/nextPowerOfTwo from src/sort/sort.go).  Both files must
# stay step-for-step identical: tests/test_gosort.py checks each of them
# against orders recorded from the real Go toolchain.
#
# _gosort.pxd declares the comparison: SortCtx (the card list's keys) and
# _sort_less (HAMi's card comparator, inline), and the entry point
#
#     go_sort_perm(perm, n, ctx)
#
# sorts perm[0:n] in place.  The values stored in perm (e.g. card row
# numbers) are what _sort_less receives; Go's Less(i, j) is
# _sort_less(ctx, perm[i], perm[j]) and Go's Swap(i, j) exchanges perm[i]
# and perm[j].  Nothing here allocates, raises or touches Python objects;
# recursion depth is O(log n).  Internal names carry a _gs_ prefix.
# Divisions use C semantics (cdivision), which is what Go's integer "/"
# does; all operands are non-negative anyway.

cimport cython
from libc.stdint cimport uint64_t

# Sortedness hints reported by the pivot choice.
cdef enum:
    _GS_HINT_UNKNOWN = 0
    _GS_HINT_INCREASING = 1
    _GS_HINT_DECREASING = 2


cdef inline int _gs_bits_len(unsigned int x) noexcept nogil:
    # Go's bits.Len: number of bits needed to represent x (0 for x == 0).
    cdef int n = 0
    while x != 0:
        x >>= 1
        n += 1
    return n


cdef inline void _gs_swap(int* perm, int i, int j) noexcept nogil:
    cdef int t = perm[i]
    perm[i] = perm[j]
    perm[j] = t


cdef inline bint _gs_less(int* perm, int i, int j, const SortCtx* ctx) noexcept nogil:
    # Go's data.Less(i, j) on positions of the permutation.
    return _sort_less(ctx, perm[i], perm[j])


cdef void _gs_insertion_sort(int* perm, int a, int b, const SortCtx* ctx) noexcept nogil:
    cdef int i, j
    for i in range(a + 1, b):
        j = i
        while j > a and _gs_less(perm, j, j - 1, ctx):
            _gs_swap(perm, j, j - 1)
            j -= 1


cdef void _gs_sift_down(int* perm, int lo, int hi, int first, const SortCtx* ctx) noexcept nogil:
    # Max-heap fix-up below lo inside the heap perm[first:first+hi].
    cdef int root = lo
    cdef int child
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and _gs_less(perm, first + child, first + child + 1, ctx):
            child += 1
        if not _gs_less(perm, first + root, first + child, ctx):
            return
        _gs_swap(perm, first + root, first + child)
        root = child


@cython.cdivision(True)
cdef void _gs_heap_sort(int* perm, int a, int b, const SortCtx* ctx) noexcept nogil:
    cdef int first = a
    cdef int hi = b - a
    cdef int i
    i = (hi - 1) // 2
    while i >= 0:
        _gs_sift_down(perm, i, hi, first, ctx)
        i -= 1
    i = hi - 1
    while i >= 0:
        _gs_swap(perm, first, first + i)
        _gs_sift_down(perm, 0, i, first, ctx)
        i -= 1


cdef void _gs_reverse_range(int* perm, int a, int b) noexcept nogil:
    cdef int i = a
    cdef int j = b - 1
    while i < j:
        _gs_swap(perm, i, j)
        i += 1
        j -= 1


cdef inline uint64_t _gs_xorshift_next(uint64_t* state) noexcept nogil:
    # Go's sort.xorshift.Next, (13, 7, 17) triple used since Go 1.24.
    cdef uint64_t r = state[0]
    r ^= r << 13
    r ^= r >> 7
    r ^= r << 17
    state[0] = r
    return r


@cython.cdivision(True)
cdef void _gs_break_patterns(int* perm, int a, int b) noexcept nogil:
    # Swap the three middle elements with partners drawn from a xorshift
    # generator seeded by the range length.
    cdef int length = b - a
    cdef uint64_t state, mask
    cdef int centre, idx, other
    if length < 8:
        return
    state = <uint64_t>length
    mask = ((<uint64_t>1) << _gs_bits_len(<unsigned int>length)) - 1
    centre = a + (length // 4) * 2
    for idx in range(centre - 1, centre + 2):
        other = <int>(_gs_xorshift_next(&state) & mask)
        if other >= length:
            other -= length
        _gs_swap(perm, idx, a + other)


cdef inline void _gs_order2(int* perm, int* x, int* y, int* swaps, const SortCtx* ctx) noexcept nogil:
    # Order the index pair (x, y) so that perm[x] <= perm[y]; count flips.
    cdef int t
    if _gs_less(perm, y[0], x[0], ctx):
        swaps[0] += 1
        t = x[0]
        x[0] = y[0]
        y[0] = t


cdef inline int _gs_median(int* perm, int x, int y, int z, int* swaps, const SortCtx* ctx) noexcept nogil:
    _gs_order2(perm, &x, &y, swaps, ctx)
    _gs_order2(perm, &y, &z, swaps, ctx)
    _gs_order2(perm, &x, &y, swaps, ctx)
    return y


cdef inline int _gs_median_adjacent(int* perm, int m, int* swaps, const SortCtx* ctx) noexcept nogil:
    return _gs_median(perm, m - 1, m, m + 1, swaps, ctx)


@cython.cdivision(True)
cdef int _gs_choose_pivot(int* perm, int a, int b, int* hint, const SortCtx* ctx) noexcept nogil:
    # Returns the pivot index; *hint receives the sortedness guess.
    cdef int length = b - a
    cdef int quarter = length // 4
    cdef int i = a + quarter
    cdef int j = a + quarter * 2
    cdef int k = a + quarter * 3
    cdef int swaps = 0
    if length >= 8:
        if length >= 50:  # Tukey ninther
            i = _gs_median_adjacent(perm, i, &swaps, ctx)
            j = _gs_median_adjacent(perm, j, &swaps, ctx)
            k = _gs_median_adjacent(perm, k, &swaps, ctx)
        j = _gs_median(perm, i, j, k, &swaps, ctx)
    if swaps == 0:
        hint[0] = _GS_HINT_INCREASING
    elif swaps == 12:  # every compare-exchange of the ninther flipped
        hint[0] = _GS_HINT_DECREASING
    else:
        hint[0] = _GS_HINT_UNKNOWN
    return j


cdef bint _gs_partial_insertion_sort(int* perm, int a, int b, const SortCtx* ctx) noexcept nogil:
    # Fix at most 5 adjacent inversions (only for ranges of >= 50 elements);
    # returns True if perm[a:b] ends up sorted.
    cdef int i = a + 1
    cdef int steps = 0
    cdef int j
    while steps < 5:
        steps += 1
        while i < b and not _gs_less(perm, i, i - 1, ctx):
            i += 1
        if i == b:
            return True
        if b - a < 50:
            return False
        _gs_swap(perm, i, i - 1)
        if i - a >= 2:
            j = i - 1
            while j >= 1:  # bounded by the array start, as in Go
                if not _gs_less(perm, j, j - 1, ctx):
                    break
                _gs_swap(perm, j, j - 1)
                j -= 1
        if b - i >= 2:
            j = i + 1
            while j < b:
                if not _gs_less(perm, j, j - 1, ctx):
                    break
                _gs_swap(perm, j, j - 1)
                j += 1
    return False


cdef int _gs_partition(int* perm, int a, int b, int pivot, bint* already, const SortCtx* ctx) noexcept nogil:
    # Split perm[a:b] around the pivot (kept at slot a until the end):
    # smaller elements left of the returned index, the rest right of it.
    # *already is set when no exchange was needed.
    cdef int i, j
    _gs_swap(perm, a, pivot)
    i = a + 1
    j = b - 1
    while i <= j and _gs_less(perm, i, a, ctx):
        i += 1
    while i <= j and not _gs_less(perm, j, a, ctx):
        j -= 1
    if i > j:
        _gs_swap(perm, j, a)
        already[0] = True
        return j
    _gs_swap(perm, i, j)
    i += 1
    j -= 1
    while True:
        while i <= j and _gs_less(perm, i, a, ctx):
            i += 1
        while i <= j and not _gs_less(perm, j, a, ctx):
            j -= 1
        if i > j:
            break
        _gs_swap(perm, i, j)
        i += 1
        j -= 1
    _gs_swap(perm, j, a)
    already[0] = False
    return j


cdef int _gs_partition_equal(int* perm, int a, int b, int pivot, const SortCtx* ctx) noexcept nogil:
    # Gather the elements equal to the pivot at the front of perm[a:b]
    # (nothing in the range is smaller); returns where the rest begins.
    cdef int i, j
    _gs_swap(perm, a, pivot)
    i = a + 1
    j = b - 1
    while True:
        while i <= j and not _gs_less(perm, a, i, ctx):
            i += 1
        while i <= j and _gs_less(perm, a, j, ctx):
            j -= 1
        if i > j:
            return i
        _gs_swap(perm, i, j)
        i += 1
        j -= 1


@cython.cdivision(True)
cdef void _gs_pdqsort(int* perm, int a, int b, int limit, const SortCtx* ctx) noexcept nogil:
    cdef bint was_balanced = True
    cdef bint was_partitioned = True
    cdef int hint = _GS_HINT_UNKNOWN
    cdef int length, pivot, mid, left_len, right_len, threshold
    while True:
        length = b - a
        if length <= 12:
            _gs_insertion_sort(perm, a, b, ctx)
            return
        if limit == 0:
            _gs_heap_sort(perm, a, b, ctx)
            return
        if not was_balanced:
            _gs_break_patterns(perm, a, b)
            limit -= 1

        pivot = _gs_choose_pivot(perm, a, b, &hint, ctx)
        if hint == _GS_HINT_DECREASING:
            _gs_reverse_range(perm, a, b)
            pivot = (b - 1) - (pivot - a)
            hint = _GS_HINT_INCREASING

        if was_balanced and was_partitioned and hint == _GS_HINT_INCREASING:
            if _gs_partial_insertion_sort(perm, a, b, ctx):
                return

        if a > 0 and not _gs_less(perm, a - 1, pivot, ctx):
            a = _gs_partition_equal(perm, a, b, pivot, ctx)
            continue

        mid = _gs_partition(perm, a, b, pivot, &was_partitioned, ctx)
        left_len = mid - a
        right_len = b - mid
        threshold = length // 8
        if left_len < right_len:
            was_balanced = left_len >= threshold
            _gs_pdqsort(perm, a, mid, limit, ctx)
            a = mid + 1
        else:
            was_balanced = right_len >= threshold
            _gs_pdqsort(perm, mid + 1, b, limit, ctx)
            b = mid


cdef void go_sort_perm(int* perm, int n, const SortCtx* ctx) noexcept nogil:
    """Sort perm[0:n] in place exactly like Go's sort.Sort (see file header)."""
    if n <= 1:
        return
    _gs_pdqsort(perm, 0, n, _gs_bits_len(<unsigned int>n), ctx)
