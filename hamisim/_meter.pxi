# Included from _core.pyx: the per-node refresh of hamisim.metrics.ClusterMeter.
#
# One node's free amount and FGD-style fragmentation over the typical pod
# shapes, recomputed after a bind or departure on that node (the meter keeps
# cluster totals as sums of these per-node terms). The rules are those of
# ClusterMeter's docstring; values are returned in micro-GPUs, rounded half to
# even like Python's round().

from libc.math cimport nearbyint


cdef class MeterCore:
    """The meter's arrays, held once, so a refresh costs no argument conversion.

    The arrays are the ClusterMeter's own (shared, updated in place by it).
    """
    cdef const int64_t[::1] used, usedmem, usedcores, count, devmem, devcore
    cdef const uint8_t[::1] usable
    cdef const int64_t[::1] s_nums, s_memreq, s_pct, s_cores, s_cpu
    cdef const uint8_t[::1] s_has_pct
    cdef const double[::1] s_weight
    cdef const uint8_t[:, ::1] type_ok

    def __init__(self, used, usedmem, usedcores, count, devmem, devcore, usable,
                 s_nums, s_memreq, s_pct, s_has_pct, s_cores, s_cpu, s_weight, type_ok):
        self.used, self.usedmem, self.usedcores = used, usedmem, usedcores
        self.count, self.devmem, self.devcore, self.usable = count, devmem, devcore, usable
        self.s_nums, self.s_memreq, self.s_pct, self.s_has_pct = s_nums, s_memreq, s_pct, s_has_pct
        self.s_cores, self.s_cpu, self.s_weight, self.type_ok = s_cores, s_cpu, s_weight, type_ok

    def refresh(self, Py_ssize_t a, Py_ssize_t b, int64_t cpu_free):
        """Refresh one node (cards ``a:b``): ``(allocated cards, idle, free µGPU, frag µGPU)``.

        ``cpu_free`` < 0 means the node's CPU is not a constraint.
        """
        return meter_refresh(a, b, self.used, self.usedmem, self.usedcores, self.count,
                             self.devmem, self.devcore, self.usable, cpu_free, self.s_nums,
                             self.s_memreq, self.s_pct, self.s_has_pct, self.s_cores,
                             self.s_cpu, self.s_weight, self.type_ok)


cdef tuple meter_refresh(Py_ssize_t a, Py_ssize_t b,
                  const int64_t[::1] used, const int64_t[::1] usedmem,
                  const int64_t[::1] usedcores, const int64_t[::1] count,
                  const int64_t[::1] devmem, const int64_t[::1] devcore,
                  const uint8_t[::1] usable, int64_t cpu_free,
                  const int64_t[::1] s_nums, const int64_t[::1] s_memreq,
                  const int64_t[::1] s_pct, const uint8_t[::1] s_has_pct,
                  const int64_t[::1] s_cores, const int64_t[::1] s_cpu,
                  const double[::1] s_weight, const uint8_t[:, ::1] type_ok):
    cdef Py_ssize_t i, s, n_shapes = s_nums.shape[0]
    cdef int64_t alloc = 0, n_host, need
    cdef double total = 0.0, frag = 0.0, stranded, share, fc, fm
    cdef bint idle = b > a, host, can
    cdef double f[64]
    if b - a > 64:
        raise ValueError("meter_refresh: more than 64 cards on one node")
    for i in range(a, b):
        if used[i] > 0:
            alloc += 1
            idle = False
        fc = <double>(devcore[i] - usedcores[i]) / devcore[i] if devcore[i] > 0 else 0.0
        fm = <double>(devmem[i] - usedmem[i]) / devmem[i] if devmem[i] > 0 else 0.0
        share = fc if fc < fm else fm
        share = 0.0 if share < 0.0 else (1.0 if share > 1.0 else share)
        f[i - a] = share if (used[i] < count[i] and usable[i]) else 0.0
        total += f[i - a]
    if n_shapes and b > a:
        with nogil:
            for s in range(n_shapes):
                if s_nums[s] == 0:
                    frag += s_weight[s] * total
                    continue
                n_host = 0
                stranded = 0.0
                for i in range(a, b):
                    if s_memreq[s] > 0:
                        need = s_memreq[s]
                    elif s_has_pct[s]:
                        need = devmem[i] * s_pct[s] // 100
                    else:
                        need = 0
                    host = (used[i] < count[i] and usable[i] and type_ok[s, i]
                            and devmem[i] - usedmem[i] >= need
                            and devcore[i] - usedcores[i] >= s_cores[s])
                    if host and s_cores[s] == 100 and devcore[i] == 100 and used[i] > 0:
                        host = False
                    if host and s_cores[s] == 0 and devcore[i] != 0 \
                            and usedcores[i] == devcore[i]:
                        host = False
                    if host:
                        n_host += 1
                    else:
                        stranded += f[i - a]
                can = n_host >= s_nums[s] and (cpu_free < 0 or cpu_free >= s_cpu[s])
                frag += s_weight[s] * (stranded if can else total)
    return (alloc, idle, <int64_t>nearbyint(total * 1e6), <int64_t>nearbyint(frag * 1e6))
