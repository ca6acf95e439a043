"""Bit-exact Python port of Go's ``sort.Sort`` (Go 1.26).

Why this module exists
----------------------
HAMi orders candidate GPU cards with ``sort.Sort`` and a ``Less`` that
compares only a few fields (free memory, used cores, score, ...).  Cards
that tie on every compared field are *equal* to the comparator, and
``sort.Sort`` is not stable: where such cards end up depends on the exact
sequence of comparisons and swaps the Go implementation performs.  Since the
first card(s) of the sorted list are the ones HAMi allocates, a simulator
that used Python's stable ``sorted`` would pick different physical cards
than the real scheduler whenever ties occur, which is most of the time on a
homogeneous node.

So instead of "a correct sort", this module reproduces *Go's* sort: the
same comparisons, in the same order, with the same swaps.  Given the same
input order and a comparator that agrees with Go's ``Less``, ``go_sort``
leaves the list in exactly the order Go would.

The algorithm
-------------
The port follows ``src/sort/zsortinterface.go`` (generated from
``gen_sort_variants.go``) plus ``Sort``/``xorshift``/``nextPowerOfTwo``
from ``src/sort/sort.go``:

* ``Sort``: nothing to do for n <= 1, otherwise pattern-defeating
  quicksort on ``[0, n)`` with a bad-pivot budget of ``bits.Len(n)``.
* ``pdqsort``: ranges of at most 12 elements go to insertion sort; when the
  budget is exhausted the range is heap-sorted; after an unbalanced split
  ``breakPatterns`` scrambles three elements; the pivot comes from
  ``choosePivot`` (static / median of three / Tukey ninther) which also
  reports whether the sample looked ascending or descending; descending
  ranges are reversed; apparently sorted ranges get a bounded
  ``partialInsertionSort``; if the pivot equals the element just left of
  the range, ``partitionEqual`` strips the run of equal elements; otherwise
  ``partition`` splits the range and the smaller half is recursed on.
* ``breakPatterns`` draws indices from a 64-bit xorshift generator seeded
  with the range length.  The shift triple changed from (13, 17, 5) to
  (13, 7, 17) in Go 1.24 (golang/go#70144); this port uses the Go 1.26
  triple.  Everything else has been unchanged since pdqsort landed in
  Go 1.19.

Two quirks are reproduced on purpose because they influence the result:
the leftward shift in ``partialInsertionSort`` walks down to index 1 of the
*whole* array rather than to the start of the range, and the duplicate
check before ``partitionEqual`` uses ``not less(data[a-1], pivot)``.

Only ``less`` is ever called, and elements are only exchanged pairwise, so
the permutation produced is a pure function of the outcomes of ``less``.

Verification: ``tests/test_gosort.py`` replays the orders recorded from the
real Go toolchain by ``tools/go_sort_vectors`` (``tests/data/go_sort_orders.json``).
A C-speed twin of this module lives in ``hamisim/_gosort.pyx``.
"""

from __future__ import annotations

from typing import Any, Callable, List, MutableSequence, Tuple

__all__ = ["go_sort", "go_sorted", "bits_len", "GO_VERSION"]

#: Go release whose ``sort.Sort`` output this module reproduces.
GO_VERSION = "go1.26"

Less = Callable[[Any, Any], bool]

_INSERTION_MAX = 12  # ranges this short are insertion-sorted
_NINTHER_MIN = 50  # from this length on the pivot is a Tukey ninther
_NINTHER_ALL_SWAPS = 12  # 4 medians x 3 compare-exchanges: "descending"
_PIS_MAX_STEPS = 5  # partialInsertionSort: max out-of-order pairs fixed
_PIS_MIN_LEN = 50  # partialInsertionSort: shorter ranges are never shifted

_HINT_UNKNOWN = 0
_HINT_INCREASING = 1
_HINT_DECREASING = 2

_U64 = (1 << 64) - 1


def bits_len(x: int) -> int:
    """Go's ``bits.Len(uint(x))``: bits needed to represent ``x`` (0 for 0)."""
    return int(x).bit_length()


def go_sort(data: MutableSequence[Any], less: Less) -> None:
    """Sort ``data`` in place exactly like Go's ``sort.Sort``.

    ``less(x, y)`` plays the role of ``Less(i, j)`` with ``x = data[i]`` and
    ``y = data[j]``; swapping two list slots plays the role of ``Swap``.
    ``less`` should be a strict weak ordering (as Go requires); with any
    other predicate the call still terminates and performs exactly the
    moves Go would, but the result need not be sorted.
    """
    n = len(data)
    if n <= 1:
        return
    _pdqsort(data, less, 0, n, bits_len(n))


def go_sorted(items, less: Less) -> List[Any]:
    """Return a new list with ``items`` in the order ``sort.Sort`` gives."""
    out = list(items)
    go_sort(out, less)
    return out


# ---------------------------------------------------------------------------
# Small building blocks.  All ranges are half-open [a, b).


def _insertion_sort(data, less: Less, a: int, b: int) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and less(data[j], data[j - 1]):
            data[j], data[j - 1] = data[j - 1], data[j]
            j -= 1


def _sift_down(data, less: Less, lo: int, hi: int, first: int) -> None:
    """Restore the max-heap property below ``lo`` in the heap ``data[first:first+hi]``."""
    root = lo
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and less(data[first + child], data[first + child + 1]):
            child += 1
        if not less(data[first + root], data[first + child]):
            return
        data[first + root], data[first + child] = data[first + child], data[first + root]
        root = child


def _heap_sort(data, less: Less, a: int, b: int) -> None:
    first, hi = a, b - a
    for i in range((hi - 1) // 2, -1, -1):  # heapify, largest on top
        _sift_down(data, less, i, hi, first)
    for i in range(hi - 1, -1, -1):  # move the top to the end, shrink
        data[first], data[first + i] = data[first + i], data[first]
        _sift_down(data, less, 0, i, first)


def _reverse_range(data, a: int, b: int) -> None:
    i, j = a, b - 1
    while i < j:
        data[i], data[j] = data[j], data[i]
        i += 1
        j -= 1


class _XorShift:
    """Go's ``sort.xorshift``: 64-bit xorshift with the (13, 7, 17) triple."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed & _U64

    def next(self) -> int:
        r = self.state
        r ^= (r << 13) & _U64
        r ^= r >> 7
        r ^= (r << 17) & _U64
        self.state = r
        return r


def _break_patterns(data, a: int, b: int) -> None:
    """Swap the three middle elements of [a, b) with pseudo-random partners.

    The generator is seeded with the range length, so this is deterministic.
    """
    length = b - a
    if length < 8:
        return
    rng = _XorShift(length)
    mask = (1 << bits_len(length)) - 1  # nextPowerOfTwo(length) - 1
    centre = a + (length // 4) * 2
    for idx in range(centre - 1, centre + 2):
        other = rng.next() & mask
        if other >= length:
            other -= length
        data[idx], data[a + other] = data[a + other], data[idx]


# ---------------------------------------------------------------------------
# Pivot selection.


class _SwapCounter:
    """Counts how many compare-exchanges found the sample out of order."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


def _order2(data, less: Less, x: int, y: int, swaps: _SwapCounter) -> Tuple[int, int]:
    """Return the indices ``x, y`` ordered so that data[first] <= data[second]."""
    if less(data[y], data[x]):
        swaps.count += 1
        return y, x
    return x, y


def _median(data, less: Less, x: int, y: int, z: int, swaps: _SwapCounter) -> int:
    """Index of the median of data[x], data[y], data[z] (a 3-element network)."""
    x, y = _order2(data, less, x, y, swaps)
    y, z = _order2(data, less, y, z, swaps)
    x, y = _order2(data, less, x, y, swaps)
    return y


def _median_adjacent(data, less: Less, m: int, swaps: _SwapCounter) -> int:
    return _median(data, less, m - 1, m, m + 1, swaps)


def _choose_pivot(data, less: Less, a: int, b: int) -> Tuple[int, int]:
    """Pick a pivot index in [a, b) and guess whether the range is presorted."""
    length = b - a
    quarter = length // 4
    i, j, k = a + quarter, a + quarter * 2, a + quarter * 3
    swaps = _SwapCounter()
    if length >= 8:
        if length >= _NINTHER_MIN:
            i = _median_adjacent(data, less, i, swaps)
            j = _median_adjacent(data, less, j, swaps)
            k = _median_adjacent(data, less, k, swaps)
        j = _median(data, less, i, j, k, swaps)
    if swaps.count == 0:
        return j, _HINT_INCREASING
    if swaps.count == _NINTHER_ALL_SWAPS:
        return j, _HINT_DECREASING
    return j, _HINT_UNKNOWN


# ---------------------------------------------------------------------------
# Partitioning.


def _partial_insertion_sort(data, less: Less, a: int, b: int) -> bool:
    """Try to finish an almost-sorted range cheaply; True if [a, b) is sorted."""
    i = a + 1
    for _ in range(_PIS_MAX_STEPS):
        while i < b and not less(data[i], data[i - 1]):
            i += 1
        if i == b:
            return True
        if b - a < _PIS_MIN_LEN:
            return False
        data[i], data[i - 1] = data[i - 1], data[i]
        if i - a >= 2:
            # Go bounds this walk by index 1 of the whole array, not by a.
            j = i - 1
            while j >= 1:
                if not less(data[j], data[j - 1]):
                    break
                data[j], data[j - 1] = data[j - 1], data[j]
                j -= 1
        if b - i >= 2:
            j = i + 1
            while j < b:
                if not less(data[j], data[j - 1]):
                    break
                data[j], data[j - 1] = data[j - 1], data[j]
                j += 1
    return False


def _partition(data, less: Less, a: int, b: int, pivot: int) -> Tuple[int, bool]:
    """Hoare-style split of [a, b) around data[pivot].

    Afterwards elements left of the returned index are < pivot, those right
    of it are >= pivot, and the pivot itself sits at the returned index.
    The flag tells whether no element had to be exchanged.
    """
    data[a], data[pivot] = data[pivot], data[a]
    p = data[a]  # the pivot value stays at slot a until the final swap
    i, j = a + 1, b - 1
    while i <= j and less(data[i], p):
        i += 1
    while i <= j and not less(data[j], p):
        j -= 1
    if i > j:
        data[j], data[a] = data[a], data[j]
        return j, True
    data[i], data[j] = data[j], data[i]
    i += 1
    j -= 1
    while True:
        while i <= j and less(data[i], p):
            i += 1
        while i <= j and not less(data[j], p):
            j -= 1
        if i > j:
            break
        data[i], data[j] = data[j], data[i]
        i += 1
        j -= 1
    data[j], data[a] = data[a], data[j]
    return j, False


def _partition_equal(data, less: Less, a: int, b: int, pivot: int) -> int:
    """Move elements equal to data[pivot] to the front of [a, b).

    Assumes nothing in the range is smaller than the pivot; returns the
    first index of the "greater than pivot" part.
    """
    data[a], data[pivot] = data[pivot], data[a]
    p = data[a]
    i, j = a + 1, b - 1
    while True:
        while i <= j and not less(p, data[i]):
            i += 1
        while i <= j and less(p, data[j]):
            j -= 1
        if i > j:
            return i
        data[i], data[j] = data[j], data[i]
        i += 1
        j -= 1


# ---------------------------------------------------------------------------
# Driver.


def _pdqsort(data, less: Less, a: int, b: int, limit: int) -> None:
    """Pattern-defeating quicksort of [a, b) with ``limit`` bad pivots allowed."""
    was_balanced = True
    was_partitioned = True
    while True:
        length = b - a
        if length <= _INSERTION_MAX:
            _insertion_sort(data, less, a, b)
            return
        if limit == 0:
            _heap_sort(data, less, a, b)
            return
        if not was_balanced:
            _break_patterns(data, a, b)
            limit -= 1

        pivot, hint = _choose_pivot(data, less, a, b)
        if hint == _HINT_DECREASING:
            _reverse_range(data, a, b)
            pivot = (b - 1) - (pivot - a)  # same element, mirrored position
            hint = _HINT_INCREASING

        if was_balanced and was_partitioned and hint == _HINT_INCREASING:
            if _partial_insertion_sort(data, less, a, b):
                return

        # Pivot not greater than the element left of the range: the range
        # starts with a run equal to the pivot, skip past it.
        if a > 0 and not less(data[a - 1], data[pivot]):
            a = _partition_equal(data, less, a, b, pivot)
            continue

        mid, was_partitioned = _partition(data, less, a, b, pivot)
        left_len, right_len = mid - a, b - mid
        threshold = length // 8
        if left_len < right_len:
            was_balanced = left_len >= threshold
            _pdqsort(data, less, a, mid, limit)
            a = mid + 1
        else:
            was_balanced = right_len >= threshold
            _pdqsort(data, less, mid + 1, b, limit)
            b = mid
