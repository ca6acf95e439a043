# cython: language_level=3
"""The OpenMetrics writer's inner loop: sample lines assembled from byte pieces.

Standalone (no cimport from ``_core``). :mod:`hamisim.studies.openmetrics` decides
with numpy which samples a file holds; this copies each line's three pieces (the
series' name and labels, its value, its timestamp) into one buffer, so a
family's millions of lines cost no Python object each.
"""
from libc.stdint cimport int64_t
from libc.string cimport memcpy


def lines(const unsigned char[::1] heads, const int64_t[::1] head_at,
          const unsigned char[::1] values, const int64_t[::1] value_at,
          const unsigned char[::1] stamps, const int64_t[::1] stamp_at,
          const int64_t[::1] head, const int64_t[::1] value, const int64_t[::1] stamp,
          unsigned char[::1] out) -> int:
    """Write line ``p`` as ``heads[head[p]] + values[value[p]] + stamps[stamp[p]]``
    for every ``p``, one after the other, into ``out``; return the bytes written.

    Piece ``i`` of ``heads`` is ``heads[head_at[i]:head_at[i + 1]]`` (likewise
    ``values`` and ``stamps``); the caller checks the indices and sizes ``out``
    to the lines' total length (``IndexError`` when it is too small)."""
    cdef Py_ssize_t p, n = head.shape[0], size = out.shape[0]
    cdef int64_t pos = 0, a, b, c, i
    if value.shape[0] != n or stamp.shape[0] != n:
        raise ValueError("head, value and stamp must have one index per line")
    with nogil:
        for p in range(n):
            i = head[p]
            a = head_at[i + 1] - head_at[i]
            i = value[p]
            b = value_at[i + 1] - value_at[i]
            i = stamp[p]
            c = stamp_at[i + 1] - stamp_at[i]
            if pos + a + b + c > size:
                with gil:
                    raise IndexError("the output buffer is too small for the lines")
            memcpy(&out[pos], &heads[head_at[head[p]]], a)
            pos += a
            memcpy(&out[pos], &values[value_at[value[p]]], b)
            pos += b
            memcpy(&out[pos], &stamps[stamp_at[stamp[p]]], c)
            pos += c
    return pos
