# cython: language_level=3
# The module hamisim._failtext: kube-scheduler's FailedScheduling text, built in C.
#
# The readable specification is hamisim.sim.kernel.KernelScheduler.failure_message
# (the reason histogram of the failed attempt) with
# hamisim.kube.fiterror.histogram_message and hamisim.kube.scheduler.full_message
# (+ uniform_postfix): "0/<nodes> nodes are available: <n> <reason>, ...." with
# the entries sorted as strings, then PostFilter's text after a space.
#
# Why in C: on a saturated cluster most attempts fail, and the text built in
# Python per failure cost more than the attempt itself. Here Python is asked
# only for what is new: the reason text of an outcome id, gate code or
# CPU/memory bit (once each; equal texts share one reason, as the histogram's
# dict keys merge them), and PostFilter's text for a (postfix class, number of
# potential nodes) not seen before. Everything else is counting and byte copies.

cimport cython
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcmp, memcpy
from cpython.unicode cimport PyUnicode_DecodeUTF8

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except NULL

from hamisim._codes cimport N_REASONS
from hamisim._memo cimport ID_ROWS, ROW_W
from hamisim._textbuf cimport grow_text


cdef inline Py_ssize_t _ft_int(char* out, int64_t v) noexcept nogil:
    # decimal digits of v >= 0 at out, returns how many (str(int))
    cdef char tmp[24]
    cdef Py_ssize_t n = 0, k = 0
    cdef uint64_t u = <uint64_t>v
    while True:
        tmp[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    while n > 0:
        n -= 1
        out[k] = tmp[n]
        k += 1
    return k


cdef inline bint _ft_less(const char* a, Py_ssize_t na, const char* b, Py_ssize_t nb) noexcept nogil:
    # byte order of UTF-8 = code point order of Python's str comparison
    cdef int c = memcmp(a, b, na if na < nb else nb)
    if c != 0:
        return c < 0
    return na < nb


@cython.final
cdef class FailText:
    """The FailedScheduling text of the kernel's last failed attempt, built in C.

    ``reason_of(kind, value)`` gives a reason's text (``None``: this builder
    declines and the caller must build the text in Python): kind 0 a gate
    code, 1 a window status code, 2 ``(n_cards, counts)`` of a Fit failure,
    3 the CPU (1) / memory (2) bit. ``postfix_of(template, potential)`` gives
    PostFilter's text for ``potential`` nodes where preemption might help
    (``""``: none), asked once per ``(postfix_class[template], potential)``:
    templates of one class must get one text. The text equals
    ``full_message(failure_message(wants_gpu), postfix)`` value for value.
    """

    def __cinit__(self):
        self.rt_ptr = NULL
        self.rt_len = self.rcount = self.touched = self.id_reason = NULL
        self.eoff = NULL
        self.elen = NULL
        self.idcount = self.tid = NULL
        self.buf = NULL

    def __dealloc__(self):
        free(self.rt_ptr)
        free(self.rt_len)
        free(self.rcount)
        free(self.touched)
        free(self.eoff)
        free(self.elen)
        free(self.idcount)
        free(self.tid)
        free(self.id_reason)
        free(self.buf)

    def __init__(self, Core core, wants_gpu, postfix_class, reason_of, postfix_of):
        cdef int i
        self.core = core
        self.wants_gpu = wants_gpu
        self.reason_of, self.postfix_of = reason_of, postfix_of
        self.head = f"0/{core.table.n_nodes} nodes are available:".encode("utf-8")
        self.rt_index, self.rt_bytes = {}, []
        self.n_rt = self.cap_rt = self.n_touched = 0
        self.cap_id = 0
        for i in range(FT_GATES):
            self.gate_reason[i] = -1
        for i in range(3):
            self.bit_reason[i] = -1
        self.pclass = postfix_class
        n_class = (max(postfix_class) + 1) if len(postfix_class) else 0
        self.pf_width = core.table.n_nodes + 1
        self.pf_text = [None] * (n_class * self.pf_width)
        self.cap_idc = 0
        self.cap = 1024
        self.buf = <char*>malloc(self.cap)
        if self.buf == NULL:
            raise MemoryError()
        self.n_built = self.n_declined = 0
        self.last_text = [None] * len(wants_gpu)

    cdef int _reason(self, int kind, value) except -2:
        # the index of the reason text Python gives for (kind, value); -1 declined
        text = self.reason_of(kind, value)
        if text is None:
            return -1
        b = text.encode("utf-8")
        idx = self.rt_index.get(b)
        if idx is not None:
            return idx
        if self.n_rt == self.cap_rt:
            self._grow_reasons(max(2 * self.cap_rt, 16))
        self.rt_bytes.append(b)
        self.rt_ptr[self.n_rt] = <const char*>(<bytes>b)
        self.rt_len[self.n_rt] = <int32_t>len(b)
        self.rcount[self.n_rt] = 0
        self.rt_index[b] = self.n_rt
        self.n_rt += 1
        return self.n_rt - 1

    cdef int _grow_reasons(self, int32_t cap) except -1:
        cdef const char** p = <const char**>realloc(self.rt_ptr, cap * sizeof(char*))
        if p == NULL:
            raise MemoryError()
        self.rt_ptr = p
        cdef int32_t* a = <int32_t*>realloc(self.rt_len, cap * sizeof(int32_t))
        if a == NULL:
            raise MemoryError()
        self.rt_len = a
        a = <int32_t*>realloc(self.rcount, cap * sizeof(int32_t))
        if a == NULL:
            raise MemoryError()
        self.rcount = a
        a = <int32_t*>realloc(self.touched, cap * sizeof(int32_t))
        if a == NULL:
            raise MemoryError()
        self.touched = a
        a = <int32_t*>realloc(self.elen, cap * sizeof(int32_t))
        if a == NULL:
            raise MemoryError()
        self.elen = a
        cdef Py_ssize_t* e = <Py_ssize_t*>realloc(self.eoff, cap * sizeof(Py_ssize_t))
        if e == NULL:
            raise MemoryError()
        self.eoff = e
        self.cap_rt = cap
        return 0

    cdef int _grow_ids(self, int32_t need) except -1:
        cdef int32_t cap = max(2 * self.cap_idc, need, 64), i
        cdef int32_t* a = <int32_t*>realloc(self.idcount, cap * sizeof(int32_t))
        if a == NULL:
            raise MemoryError()
        self.idcount = a
        for i in range(self.cap_idc, cap):
            a[i] = 0
        a = <int32_t*>realloc(self.tid, cap * sizeof(int32_t))
        if a == NULL:
            raise MemoryError()
        self.tid = a
        self.cap_idc = cap
        return 0

    cdef int _id_reason(self, int32_t oid) except -2:
        # the reason index of a window outcome id (asked once per id)
        cdef int32_t cap, i
        cdef const int32_t* row
        if oid >= self.cap_id:
            cap = max(2 * self.cap_id, oid + 64)
            p = <int32_t*>realloc(self.id_reason, cap * sizeof(int32_t))
            if p == NULL:
                raise MemoryError()
            self.id_reason = p
            for i in range(self.cap_id, cap):
                self.id_reason[i] = -2
            self.cap_id = cap
        if self.id_reason[oid] == -2:
            if oid < ID_ROWS:
                self.id_reason[oid] = self._reason(1, oid)
            else:
                row = self.core.itab.rows + <Py_ssize_t>(oid - ID_ROWS) * ROW_W
                self.id_reason[oid] = self._reason(
                    2, (int(row[0]), [int(row[1 + i]) for i in range(N_REASONS)]))
        return self.id_reason[oid]

    cdef inline int _count(self, int idx) noexcept:
        if self.rcount[idx] == 0:
            self.touched[self.n_touched] = idx
            self.n_touched += 1
        self.rcount[idx] += 1
        return 0

    cdef int _room(self, Py_ssize_t need) except -1:
        return grow_text(&self.buf, &self.cap, need)

    cdef object text(self, int t):
        """The text of the failed attempt just made by a pod of template ``t``,
        or ``None`` when some part must come from Python."""
        return self._text(t, None)

    cdef object text_with(self, int t, bytes postfix):
        """:meth:`text` with PostFilter's text given (UTF-8; ``b""``: none): a
        DefaultPreemption dry run's verdict instead of the uniform one."""
        return self._text(t, postfix)

    cdef object _text(self, int t, bytes postfix):
        cdef Core core = self.core
        cdef int r, j, bits, g, idx, a, b, m, i
        cdef int64_t potential = core.n_window
        cdef int32_t oid, nt
        cdef int32_t* idc
        cdef int32_t* tid
        cdef const int32_t* wid
        cdef Py_ssize_t pos, start, hl, x
        cdef const int32_t* rej = &core.rej_bits[0]
        cdef bint ok = True
        self.n_touched = 0
        # kube-scheduler's filters: static gates, then CPU and memory
        for r in range(core.n_rejected):
            bits = rej[r]
            g = bits >> 2
            if g:
                if g >= FT_GATES:
                    ok = False
                    break
                if self.gate_reason[g] == -1:
                    self.gate_reason[g] = self._reason(0, g)
                    if self.gate_reason[g] < 0:
                        self.gate_reason[g] = -3
                idx = self.gate_reason[g]
                if idx < 0:
                    ok = False
                    break
                self._count(idx)
                continue
            potential += 1          # Unschedulable: preemption might help there
            b = 1
            while b <= 2:
                if bits & b:
                    if self.bit_reason[b] == -1:
                        self.bit_reason[b] = self._reason(3, b)
                        if self.bit_reason[b] < 0:
                            self.bit_reason[b] = -3
                    idx = self.bit_reason[b]
                    if idx < 0:
                        ok = False
                        break
                    self._count(idx)
                b += 1
            if not ok:
                break
        # HAMi's window (only a GPU pod is filtered by HAMi): counts by outcome
        # id first (a tight loop), then the few ids seen to their reasons
        if ok and self.wants_gpu[t]:
            if ID_ROWS + core.itab.n > self.cap_idc:
                self._grow_ids(ID_ROWS + core.itab.n)
            idc = self.idcount
            tid = self.tid
            wid = core.wid
            nt = 0
            for j in range(core.n_window):
                oid = wid[j]
                if oid < 0:
                    ok = False              # not remembered: no id
                    break
                if idc[oid] == 0:
                    tid[nt] = oid
                    nt += 1
                idc[oid] += 1
            for i in range(nt):
                oid = tid[i]
                if ok:
                    if oid >= self.cap_id or self.id_reason[oid] == -2:
                        self._id_reason(oid)
                    idx = self.id_reason[oid]
                    if idx < 0:
                        ok = False
                    else:
                        if self.rcount[idx] == 0:
                            self.touched[self.n_touched] = idx
                            self.n_touched += 1
                        self.rcount[idx] += idc[oid]
                idc[oid] = 0
        if not ok:
            for i in range(self.n_touched):
                self.rcount[self.touched[i]] = 0
            self.n_declined += 1
            return None
        # PostFilter's uniform text, asked once per class and node count
        if postfix is None:
            x = self.pclass[t] * self.pf_width + potential
            postfix = self.pf_text[x]
        if postfix is None:
            post = self.postfix_of(t, potential)
            if post is None:
                for i in range(self.n_touched):
                    self.rcount[self.touched[i]] = 0
                self.n_declined += 1
                return None
            postfix = self.pf_text[x] = post.encode("utf-8")
        # the entries "<n> <reason>" after the message's room, sorted as strings
        m = self.n_touched
        hl = len(self.head)
        x = 0
        for i in range(m):
            x += 24 + 1 + self.rt_len[self.touched[i]]
        start = hl + len(postfix) + x + 2 * m + 8
        self._room(start + x)
        pos = start
        for i in range(m):
            idx = self.touched[i]
            self.eoff[i] = pos
            pos += _ft_int(self.buf + pos, self.rcount[idx])
            self.buf[pos] = 32                      # ' '
            pos += 1
            memcpy(self.buf + pos, self.rt_ptr[idx], self.rt_len[idx])
            pos += self.rt_len[idx]
            self.elen[i] = <int32_t>(pos - self.eoff[i])
            self.rcount[idx] = 0
        for a in range(1, m):                       # insertion sort: few entries
            x = self.eoff[a]
            oid = self.elen[a]
            b = a
            while b > 0 and _ft_less(self.buf + x, oid, self.buf + self.eoff[b - 1],
                                     self.elen[b - 1]):
                self.eoff[b] = self.eoff[b - 1]
                self.elen[b] = self.elen[b - 1]
                b -= 1
            self.eoff[b] = x
            self.elen[b] = oid
        pos = 0
        memcpy(self.buf, <const char*>self.head, hl)
        pos = hl
        for i in range(m):
            self.buf[pos] = 44 if i else 32         # ',' then ' ' / the first ' '
            pos += 1
            if i:
                self.buf[pos] = 32
                pos += 1
            memcpy(self.buf + pos, self.buf + self.eoff[i], self.elen[i])
            pos += self.elen[i]
        if m:
            self.buf[pos] = 46                      # '.'
            pos += 1
        if len(postfix):
            self.buf[pos] = 32
            pos += 1
            memcpy(self.buf + pos, <const char*>postfix, len(postfix))
            pos += len(postfix)
        self.n_touched = 0
        self.n_built += 1
        return self._shared(t, pos)

    cdef object _shared(self, int t, Py_ssize_t n):
        # the text in buf[:n] as a str: template t's last one when equal (a
        # pending pod's attempts mostly repeat their text), else a new one
        cdef Py_ssize_t ln
        cdef const char* p
        last = self.last_text[t]
        if last is not None:
            p = PyUnicode_AsUTF8AndSize(last, &ln)
            if ln == n and memcmp(p, self.buf, n) == 0:
                return last
        text = PyUnicode_DecodeUTF8(self.buf, n, NULL)
        self.last_text[t] = text
        return text
