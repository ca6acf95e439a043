# cython: language_level=3
# A growable C text buffer shared by the compiled modules that build messages
# (FailText, ReplayCore): declarations and inline code only.
from libc.stdlib cimport realloc


cdef inline int grow_text(char** buf, Py_ssize_t* cap, Py_ssize_t need) except -1:
    # make room for ``need`` bytes in ``*buf`` (capacity ``*cap``), doubling
    cdef char* p
    cdef Py_ssize_t size = cap[0]
    if need <= size:
        return 0
    while size < need:
        size *= 2
    p = <char*>realloc(buf[0], size)
    if p == NULL:
        raise MemoryError()
    buf[0] = p
    cap[0] = size
    return 0
