# cython: language_level=3
# FailText, declared for hamisim._replay (which asks it for a failed attempt's
# text); its definition and docstring are in _failtext.pyx.
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t

from hamisim._core cimport Core

cdef enum:
    FT_GATES = 64               # gate codes handled here (beyond: the Python text)


@cython.final
cdef class FailText:
    cdef Core core
    cdef object reason_of, postfix_of
    cdef const uint8_t[::1] wants_gpu
    cdef bytes head                         # "0/<nodes> nodes are available:"
    # reason texts, merged by text
    cdef dict rt_index
    cdef list rt_bytes
    cdef const char** rt_ptr
    cdef int32_t* rt_len
    cdef int32_t* rcount
    cdef int32_t* touched
    cdef Py_ssize_t* eoff                   # per entry of the text: offset, length
    cdef int32_t* elen
    cdef int32_t n_rt, cap_rt, n_touched
    # reason of an outcome id / gate code / CPU-memory bit, -1 not asked yet
    cdef int32_t* id_reason
    cdef int32_t cap_id
    cdef int32_t gate_reason[FT_GATES]
    cdef int32_t bit_reason[3]
    # PostFilter's texts (bytes, None not asked) by class x potential nodes
    cdef const int32_t[::1] pclass
    cdef list pf_text
    cdef Py_ssize_t pf_width
    # outcome ids of the window: counts and the ids seen (cap_idc each)
    cdef int32_t* idcount
    cdef int32_t* tid
    cdef int32_t cap_idc
    cdef char* buf
    cdef Py_ssize_t cap
    # per template, its last text (str): a text equal to it is returned as that
    # object, so the engine's comparisons and dict lookups of it are by identity
    cdef list last_text
    #: texts built here / declined (the caller's Python built them)
    cdef readonly int64_t n_built, n_declined

    cdef int _reason(self, int kind, value) except -2
    cdef int _grow_reasons(self, int32_t cap) except -1
    cdef int _grow_ids(self, int32_t need) except -1
    cdef int _id_reason(self, int32_t oid) except -2
    cdef inline int _count(self, int idx) noexcept
    cdef int _room(self, Py_ssize_t need) except -1
    cdef object text(self, int t)
    cdef object text_with(self, int t, bytes postfix)
    cdef object _text(self, int t, bytes postfix)
    cdef object _shared(self, int t, Py_ssize_t n)
