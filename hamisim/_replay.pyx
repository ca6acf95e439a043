# cython: language_level=3
# The module hamisim._replay: the replay engine, compiled.
#
# hamisim.sim.engine._Engine is the readable specification of replay mode;
# ReplayCore is its twin and must produce the identical run: the same events
# in the same order at the same times, the same pods table, time series and
# counts (tests/test_replay_core.py runs both on random traces and clusters).
# Each method below is named after the engine method it mirrors.
#
# The Python engine schedules SimPy events ordered by (time, priority,
# insertion); ReplayCore keeps its own heap of timers with the same key and
# the same priorities, so events at equal times come out in the same order.
# SimPy stays the clock: hamisim.sim.compiled drives run(horizon) from a SimPy
# process, up to the next event of any other process.
#
# What stays in Python: the failure message of an unschedulable attempt when
# FailText (_failtext.pyx, which builds it in C) declines or is not given (the
# message of a pod refused at admission or by a Filter error names the pod),
# batches of rows handed to the sink, the random tie-break draws (numpy's
# generator, drawn in blocks), the progress bar; for DefaultPreemption (whose
# dry run is C: _post_filter) the dry run's random offset, drawn only when a
# lower-priority pod runs on a potential node, and the victims' message.

from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libc.math cimport INFINITY, NAN, ldexp, floor, ceil, nextafter
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.exc cimport PyErr_CheckSignals

from hamisim._codes cimport ST_FIT, Q_WIDTH, Q_FAM, FAM_NVIDIA
from hamisim._types cimport Cards, Pod, Scratch
from hamisim._textbuf cimport grow_text
from hamisim._core cimport Core, PodSpec
from hamisim._meter cimport MeterCore
from hamisim._failtext cimport FailText
from hamisim._research cimport ResearchCore, _bounded_draw
from cpython.pycapsule cimport PyCapsule_GetPointer

import numpy as np

cdef enum:
    # PostFilter texts kept (ReplayCore.pf_post) before the cache starts anew
    PF_POST_CAP = 4096

cdef enum:
    # a node's remembered dry-run verdict (ReplayCore.pf_mcode): none (a
    # candidate or not known), no lower-priority pod, an error (no victim
    # needed), insufficient CPU/memory with every victim gone (+ their bits)
    PFM_NONE = 0
    PFM_NOVICT = 1
    PFM_ERROR = 2
    PFM_BITS = 3
    # bytes the dry-run memos may take in all (9 per template and node)
    PF_MEMO_BUDGET = 256 * 1024 * 1024

cdef enum:
    # the columns of ReplayCore.sc_col (the shortcut of repeated failures)
    SC_START = 0        # next_start the failure was made at; -1: every node examined
    SC_START_OUT = 1    # next_start it left
    SC_PRIORITY = 2     # the pod's priority (the dry run and the nominated load read it)
    SC_REJ = 3          # rej_last
    SC_PF = 4           # PostFilter's verdict
    SC_DRAW = 5         # the dry run's offset draw: its n, -1 none
    SC_LOW = 6          # the lowest priority rank running (the dry run's first check)
    SC_W = 7

cdef enum:
    # SimPy priorities of hamisim.sim.engine (_DEPART, _ARRIVE, _PASS)
    P_DEPART = 0
    P_ARRIVE = 1
    P_PASS = 2
    # timer kinds
    T_ARRIVALS = 0      # the next arrival time (engine._arrivals)
    T_PASS = 1          # a queued scheduling pass (engine._queued_pass)
    T_DELETE = 2        # deletion or end of run time (engine._delete), live
    T_FLUSH = 3         # the leftover flush of an unschedulable pod (engine._leftover)
    T_RETRY = 4         # the backoff flush of a pod in backoff (engine._retry)
    T_DELETION = 5      # the trace deletes the pod (engine._deletion), live
    T_INIT_DONE = 6     # its init containers finished (engine._init_done), live
    T_DEFRAG = 7        # a round of the periodic defragmenter (engine._defrag_round)
    T_RESYNC = 8        # a controller's sync (engine._resync; pod = the controller)
    # pod status (engine._PodState.status)
    S_NEW = 0
    S_QUEUED = 1
    S_UNSCHEDULABLE = 2
    S_BACKOFF = 3
    S_RUNNING = 4
    S_GONE = 5
    S_TERMINATING = 6   # deleted, within its grace period (keeps node and cards)
    S_UNCREATED = 7     # refused by HAMi's webhook, waiting for its controller
    # kube-scheduler's queue (hamisim.kube.queue): rejector bits, events, lists
    REJ_STATIC = 1
    REJ_FIT = 2
    REJ_EXTENDER = 4
    EV_ASSIGNED_ADD = 0
    EV_ASSIGNED_UPDATE = 1
    EV_ASSIGNED_DELETE = 2
    U_NONE = -1
    U_EXTENDER = 0      # engine.unschedulable_extender
    U_FIT = 1           # engine.unschedulable_fit
    # event kinds, as hamisim.sim.recorder.EVENT_KINDS
    E_ARRIVE = 0
    E_BIND = 1
    E_UNSCHEDULABLE = 2
    E_DEPART = 3
    E_ABANDON = 4
    E_PREEMPT = 5
    E_REJECTED = 6
    E_TERMINATE = 7
    E_MOVE = 8              # the defragmenter moved the pod (a hamisim what-if)
    # hamisim.kube.controllers: kinds, and the fields of REFUSAL_FIELDS
    CK_REPLICASET = 0
    CK_JOB = 1
    R_CREATIONS = 0
    R_PODS = 1
    R_LATER = 2
    R_NEVER = 3
    R_DELETED = 4
    R_WAITING = 5
    # templates: encoded, refused at admission, failing HAMi's Filter
    TK_OK = 0
    TK_ADMISSION = 1
    TK_FILTER_ERROR = 2
    # DefaultPreemption's outcome of a failed attempt (ReplayCore._post_filter)
    PF_UNIFORM = 0          # nobody to preempt: the text follows from the counts
    PF_NOMINATED = 1        # victims chosen, the pod nominated (no `preemption:` text)
    PF_HIST = 2             # no candidate: the dry run's reasons
    PF_NOT_HELPFUL = 3      # no potential node at all
    PF_ERRORS = 4           # every dry run ended in "expected at least one victim"
    PF_TERMINATING = 5      # a lower-priority pod still terminates on its nominated node
    REPLAY_BATCH = 65536    # rows per batch (hamisim.sim.recorder.BATCH_ROWS)
    DRAW_BLOCK = 4096       # tie-break draws fetched at a time


cdef int _vitem_cmp(const void* a, const void* b) noexcept nogil:
    cdef const VItem* x = <const VItem*>a
    cdef const VItem* y = <const VItem*>b
    if x.neg_priority != y.neg_priority:
        return -1 if x.neg_priority < y.neg_priority else 1
    if x.start != y.start:
        return -1 if x.start < y.start else 1
    if x.seq != y.seq:
        return -1 if x.seq < y.seq else 1
    return 0


cdef inline int _fit_bits(int64_t pcpu, int64_t pmem, int64_t alloc_cpu, int64_t alloc_mem,
                          int64_t req_cpu, int64_t req_mem) noexcept nogil:
    # hamisim.kube.fit.resource_fit_reasons as bits (1 cpu, 2 memory; -1 = unconstrained)
    cdef int bits = 0
    if pcpu > 0 and alloc_cpu != -1 and pcpu > alloc_cpu - req_cpu:
        bits |= 1
    if pmem > 0 and alloc_mem != -1 and pmem > alloc_mem - req_mem:
        bits |= 2
    return bits


cdef inline bint _timer_less(const RTimer* a, const RTimer* b) noexcept nogil:
    if a.time != b.time:
        return a.time < b.time
    if a.prio != b.prio:
        return a.prio < b.prio
    return a.seq < b.seq


cdef inline bint _qitem_less(const QItem* a, const QItem* b) noexcept nogil:
    if a.neg_priority != b.neg_priority:
        return a.neg_priority < b.neg_priority
    if a.timestamp != b.timestamp:
        return a.timestamp < b.timestamp
    return a.order < b.order


# One binary min-heap for both queues (timers ordered as SimPy orders events,
# the active queue as kube-scheduler's): a fused type, so each specialisation
# compares with its own inline ordering, as the two hand-written copies did.
ctypedef fused HeapItem:
    RTimer
    QItem


cdef inline bint _heap_less(const HeapItem* a, const HeapItem* b) noexcept nogil:
    if HeapItem is RTimer:
        return _timer_less(a, b)
    else:
        return _qitem_less(a, b)


cdef inline void _heap_push(HeapItem* h, Py_ssize_t n, HeapItem x) noexcept nogil:
    # x into h[0 .. n-1] (room for n + 1 items)
    cdef Py_ssize_t i = n, parent
    while i > 0:
        parent = (i - 1) >> 1
        if not _heap_less(&x, &h[parent]):
            break
        h[i] = h[parent]
        i = parent
    h[i] = x


cdef inline HeapItem _heap_pop(HeapItem* h, Py_ssize_t n) noexcept nogil:
    # the least of h[0 .. n-1] (n >= 1); the rest stays a heap of n - 1
    cdef HeapItem top = h[0], last
    cdef Py_ssize_t i = 0, child
    n -= 1
    if n > 0:
        last = h[n]
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and _heap_less(&h[child + 1], &h[child]):
                child += 1
            if not _heap_less(&h[child], &last):
                break
            h[i] = h[child]
            i = child
        h[i] = last
    return top


cdef inline double _delay_to(double now, double when) noexcept nogil:
    # hamisim.kube.queue.delay_to: the delay that lands exactly on `when`
    cdef double delay = when - now
    if delay <= 0.0:
        return 0.0
    while now + delay < when:
        delay = nextafter(delay, INFINITY)
    while now + delay > when:
        delay = nextafter(delay, -INFINITY)
    return delay


cdef inline double _backoff_duration(int attempts, double initial, double maximum) noexcept nogil:
    # hamisim.kube.queue.backoff_duration
    cdef int doublings = attempts - 1
    if attempts <= 0:
        return 0.0
    if doublings > 64:
        doublings = 64
    return min(initial * ldexp(1.0, doublings), maximum)


# hamisim.kube.controllers: the rate limiters and syncJobBatchPeriod
cdef double _RS_BASE_DELAY = 0.005, _RS_MAX_DELAY = 1000.0
cdef double _JOB_BASE_DELAY = 1.0, _JOB_MAX_DELAY = 60.0, _JOB_SYNC_BATCH_PERIOD = 1.0


cdef inline double _resync_delay(int kind, int failures) noexcept nogil:
    # controllers.resync_delay
    cdef double base = _RS_BASE_DELAY, cap = _RS_MAX_DELAY
    if kind == CK_JOB:
        base, cap = _JOB_BASE_DELAY, _JOB_MAX_DELAY
    if failures >= 64:
        return cap
    return min(ldexp(base, failures), cap)


cdef inline double _clock() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef inline Py_ssize_t _write_int(char* out, int64_t v) noexcept nogil:
    # decimal digits of v at out, returns how many (as Python's str(int))
    cdef char tmp[24]
    cdef Py_ssize_t n = 0, k = 0
    cdef uint64_t u
    if v < 0:
        out[0] = 45        # '-'
        k = 1
        u = <uint64_t>(-(v + 1)) + 1
    else:
        u = <uint64_t>v
    while True:
        tmp[n] = <char>(48 + u % 10)     # '0' + digit
        n += 1
        u //= 10
        if u == 0:
            break
    while n > 0:
        n -= 1
        out[k] = tmp[n]
        k += 1
    return k


cdef class ReplayCore:
    """The replay engine's event loop and bookkeeping for one run (see
    :mod:`hamisim.sim.compiled`, which builds it, drives it and reads it).

    Pods are numbered in arrival order (the engine's ``order``); every input
    array is indexed that way. The kernel (:class:`Core`) and the meter
    (:class:`MeterCore`) are the scheduler's and the meter's own objects, so
    their state after the run is what the Python engine would leave.
    """

    def __cinit__(self):
        self.timers = NULL
        self.active = NULL
        self.slot_n = NULL
        self.slot_rows = self.slot_used = self.slot_mem = self.slot_cores = NULL
        self.free_slots = NULL
        self.after_n = NULL
        self.after_rows = self.after_used = self.after_mem = self.after_cores = NULL
        self.def_n = NULL
        self.def_buf = NULL
        self.text = NULL
        self.vic_cur = self.vic_best = NULL
        self.vic_cap = 0
        self.pf_mver = NULL
        self.pf_mcode = NULL
        self.pf_mnom = NULL
        self.pf_mprio = NULL
        self.pf_memo_n = 0

    def __dealloc__(self):
        free(self.timers)
        free(self.active)
        free(self.slot_n)
        free(self.slot_rows)
        free(self.slot_used)
        free(self.slot_mem)
        free(self.slot_cores)
        free(self.free_slots)
        free(self.after_n)
        free(self.after_rows)
        free(self.after_used)
        free(self.after_mem)
        free(self.after_cores)
        free(self.def_n)
        free(self.def_buf)
        free(self.text)
        free(self.vic_cur)
        free(self.vic_best)
        cdef Py_ssize_t t
        if self.pf_mver != NULL and self.pf_mcode != NULL:
            for t in range(self.pf_memo_n):
                free(self.pf_mver[t])
                free(self.pf_mcode[t])
        free(self.pf_mver)
        free(self.pf_mcode)
        free(self.pf_mnom)
        free(self.pf_mprio)

    def __init__(self, Core core, MeterCore meter, *, arrival, duration, deletion, template,
                 priority, pod_class, t_spec, t_kind, t_wants_gpu, t_node_spread,
                 t_n_init, t_cpu, t_mem, t_gpu, node_start, pad_empty, card_ids,
                 bint retry, double flush_after, double backoff_initial, double backoff_max,
                 sample_interval, bint random_ties, int wanted, int next_start,
                 bint many_groups, int n_groups, fail_message, pod_error, draw_block, progress,
                 on_events, on_pods, aligned=None, bint hints=True,
                 double backoff_flush_period=1.0, double leftover_flush_period=30.0,
                 mp_name=(), pl_place=(), mig_annotation=None, FailText fail_text=None,
                 bint preemption=False, t_never=None, draw_offset=None, preempt_message=None,
                 victim_message=None, preempt_postfix=None, bint recalls_deleting=False,
                 t_qns=None, t_qmem=None, t_qcores=None, q_lim_mem=None, q_lim_cores=None,
                 quota_denied=None, ctl=None, ctl_kind=None,
                 t_grace=None, t_init_after=None, t_reserve=None, int n_initial=0,
                 double defrag_interval=0.0, int defrag_moves=0, by_name=None,
                 node_names=None, ResearchCore research=None, bint aggregate=False,
                 pad_fam=None, fam_words=(b"NVIDIA",), fam_labels=0, type_words=()):
        from array import array
        cdef Py_ssize_t n = len(arrival), i
        self.core = core
        self.meter = meter
        if research is not None and not research.replaying:
            raise ValueError("research: call ResearchCore.replay_setup first")
        self.rcore = research
        self.n_pods = <int>n
        self.arrival, self.duration, self.deletion = arrival, duration, deletion
        self.tmpl, self.priority, self.pod_class = template, priority, pod_class
        self.t_spec = list(t_spec)
        self.t_kind, self.t_wants_gpu, self.t_node_spread = t_kind, t_wants_gpu, t_node_spread
        self.t_n_init, self.t_cpu, self.t_mem, self.t_gpu = t_n_init, t_cpu, t_mem, t_gpu
        n_t = len(t_spec)
        self._init_gate_classes()
        self.t_grace = np.zeros(n_t) if t_grace is None else t_grace
        self.t_init_after = np.full(n_t, np.nan) if t_init_after is None else t_init_after
        self.t_reserve = np.zeros(n_t, dtype=np.uint8) if t_reserve is None else t_reserve
        if not 0 <= n_initial <= n:
            raise ValueError("n_initial: more initial pods than pods")
        self.n_initial = n_initial
        self.defrag_interval, self.defrag_moves = defrag_interval, defrag_moves
        self.n_defrag_moves = 0
        self.lapsed = []
        self.trial_node = -1
        if defrag_interval > 0:
            if by_name is None or len(by_name) != n or node_names is None:
                raise ValueError("the defragmenter needs by_name (every pod) and node_names")
            self.by_name = by_name
            self.node_names = list(node_names)
        self.node_start, self.pad_empty = node_start, pad_empty
        # per node: the families other than NVIDIA whose lists are padded there
        self.pad_fam = np.zeros(len(pad_empty), dtype=np.uint32) if pad_fam is None \
            else np.ascontiguousarray(pad_fam, dtype=np.uint32)
        self.fam_words = list(fam_words)
        self.fam_labels = fam_labels
        self.type_words = list(type_words)
        self._init_quotas(len(t_kind), t_qns, t_qmem, t_qcores, q_lim_mem, q_lim_cores,
                          quota_denied)
        self._init_controllers(n, ctl, ctl_kind)
        self.sc_key = np.full(max(len(t_kind), 1), -1, dtype=np.int64)
        self.sc_rel = np.full(max(len(t_kind), 1), -1, dtype=np.int64)
        self.q_ns_ver = np.zeros(max(len(q_lim_mem) if q_lim_mem is not None else 0, 1),
                                 dtype=np.int64)
        self.sc_col = np.zeros((max(len(t_kind), 1), SC_W), dtype=np.int32)
        self.sc_msg = [None] * len(t_kind)
        self.pf_memo_n = len(t_kind)
        self.pf_mver = <int64_t**>calloc(max(self.pf_memo_n, 1), sizeof(int64_t*))
        self.pf_mcode = <int8_t**>calloc(max(self.pf_memo_n, 1), sizeof(int8_t*))
        self.pf_mnom = <int64_t*>calloc(max(self.pf_memo_n, 1), sizeof(int64_t))
        self.pf_mprio = <int32_t*>calloc(max(self.pf_memo_n, 1), sizeof(int32_t))
        if self.pf_mver == NULL or self.pf_mcode == NULL or self.pf_mnom == NULL \
                or self.pf_mprio == NULL:
            raise MemoryError()
        self.pf_memo_bytes = 0
        self.sc_err = [None] * len(t_kind)
        self.nom_ver = self.q_ver = self.n_reused = 0
        self.use_shortcut = True
        self.aligned = pad_empty if aligned is None else aligned
        encoded = [c.encode("utf-8") for c in card_ids]
        off = np.zeros(len(encoded) + 1, dtype=np.int64)
        off[1:] = np.cumsum([len(b) for b in encoded])
        self.card_off = off
        self.card_text = b"".join(encoded) + b"\0"
        self.card_chars = self.card_text
        self.retry, self.flush_after = retry, flush_after
        self.backoff_initial, self.backoff_max = backoff_initial, backoff_max
        self.hints = hints
        self.backoff_period, self.leftover_period = backoff_flush_period, leftover_flush_period
        self.sampled = sample_interval is not None
        self.interval = sample_interval if self.sampled else 0.0
        self.random_ties, self.wanted, self.next_start = random_ties, wanted, next_start
        self.many_groups = many_groups
        self.fail_message, self.draw_block, self.progress = fail_message, draw_block, progress
        self.pod_error = pod_error
        self.ftext = fail_text
        self.preempt_postfix = preempt_postfix
        self.pf_post = {}
        self.on_events, self.on_pods = on_events, on_pods
        # per pod
        self.status = np.zeros(n, dtype=np.int8)
        self.attempts = np.zeros(n, dtype=np.int32)
        self.gen = np.zeros(n, dtype=np.int32)
        self.fl_due = np.full(n, -1.0)
        self.fl_armed = np.full(n, -1.0)
        self.fl_seq = np.zeros(n, dtype=np.int64)
        self.fl_gen = np.zeros(n, dtype=np.int32)
        self.q_pod = np.zeros(n, dtype=np.uint8)
        self.n_quirk_pods = 0
        self.node = np.full(n, -1, dtype=np.int32)
        self.slot = np.full(n, -1, dtype=np.int32)
        self.u_prev = np.full(n, -1, dtype=np.int32)
        self.u_next = np.full(n, -1, dtype=np.int32)
        self.arrived_at = np.zeros(n, dtype=np.float64)
        self.first_attempt = np.full(n, np.nan)
        self.bind_time = np.full(n, np.nan)
        self.timestamp = np.zeros(n, dtype=np.float64)
        self.u_list = np.full(n, U_NONE, dtype=np.int8)
        self.tried = np.full(n, -1, dtype=np.int64)
        self.message = [None] * n
        self.rej_last = 0
        self.changes = self.stale = 0
        for i in range(2):
            self.u_head[i] = self.u_tail[i] = -1
            self.u_count[i] = 0
        # slots and scratch
        widths = np.diff(np.asarray(node_start))
        self.slot_width = max(int(widths.max()) if len(widths) else 1, 1)
        self.slot_cap = 0
        self.n_free = 0
        self.slot_devices = []
        self.slot_mig = []
        self.slot_mig_after = []
        self.has_mig = core.table.c.mig_cnt != NULL
        self.mp_name, self.pl_place = list(mp_name), list(pl_place)
        self.mig_annotation = mig_annotation
        if self.has_mig and mig_annotation is None:
            raise ValueError("a cluster with MIG cards needs mig_annotation")
        self._grow_slots()
        w = self.slot_width
        self.c_app_u = np.zeros(w, dtype=np.int64)
        self.c_app_m = np.zeros(w, dtype=np.int64)
        self.c_app_c = np.zeros(w, dtype=np.int64)
        self.c_ini_m = np.zeros(w, dtype=np.int64)
        self.c_ini_c = np.zeros(w, dtype=np.int64)
        self.c_ini = np.zeros(w, dtype=np.uint8)
        self.c_touched = np.zeros(w, dtype=np.uint8)
        self.c_list = np.zeros(w, dtype=np.int32)
        self.text_cap = 4096
        self.text = <char*>malloc(self.text_cap)
        self.cap_timers = 1024
        self.timers = <RTimer*>malloc(self.cap_timers * sizeof(RTimer))
        self.cap_active = 1024
        self.active = <QItem*>malloc(self.cap_active * sizeof(QItem))
        if self.text == NULL or self.timers == NULL or self.active == NULL:
            raise MemoryError()
        self.n_timers = self.n_active = 0
        self.seq = 0
        # the run
        self.now = 0.0
        self.upcoming = 0
        self.feeder_done = False
        self.pass_wanted = self.pass_scheduled = False
        self.n_arrived = self.n_pending = self.n_running = 0
        self.n_departed = self.n_abandoned = self.n_attempts = self.live = self.n_rejected = 0
        self.n_status[:] = [n, 0, 0, 0, 0, 0, 0, 0]    # every pod starts S_NEW
        self.n_result[:] = [0, 0, 0]
        self.gpu_arrived = 0.0
        self.next_sample = 0.0
        self.row_time = -1.0
        self.row_delay_sum = 0.0
        self.row_delay_n = 0
        self.peak_alloc = -1
        self.peak_time = 0.0
        self.decision_time = 0.0
        self.last_time = 0.0
        self.draws = np.zeros(0)
        self.n_draws = self.next_draw = 0
        self.arrivals_reported = n_initial
        # records
        self.np_ev_time = np.zeros(REPLAY_BATCH)
        self.np_ev_kind = np.zeros(REPLAY_BATCH, dtype=np.int8)
        self.np_ev_node = np.zeros(REPLAY_BATCH, dtype=np.int64)
        self.np_ev_pod = np.zeros(REPLAY_BATCH, dtype=np.int64)
        self.ev_time, self.ev_kind = self.np_ev_time, self.np_ev_kind
        self.ev_node, self.ev_pod = self.np_ev_node, self.np_ev_pod
        self.np_ev_count = np.zeros(REPLAY_BATCH, dtype=np.int64)
        self.np_ev_last = np.zeros(REPLAY_BATCH)
        self.ev_count, self.ev_last = self.np_ev_count, self.np_ev_last
        self.ev_n = 0
        # failed attempts aggregated (Recorder.event): per pod its open rows, a list
        # in creation order through ag_next, the one last met first; freed rows reused
        self.aggregate = aggregate
        self.ag_head = np.full(n, -1, dtype=np.int64)
        self.ag_tail = np.full(n, -1, dtype=np.int64)
        self.ag_cur = np.full(n, -1, dtype=np.int64)
        self.ag_free = -1
        self.ag_index = {}
        self.ag_opened = 0
        self.ag_n = 0
        self._ag_grow(64)
        self.ev_dev_rows, self.ev_devs, self.ev_msg_rows, self.ev_msgs = [], [], [], []
        self.np_pd_pod = np.zeros(REPLAY_BATCH, dtype=np.int64)
        self.np_pd_class = np.zeros(REPLAY_BATCH, dtype=np.int32)
        self.np_pd_arrival = np.zeros(REPLAY_BATCH)
        self.np_pd_first = np.zeros(REPLAY_BATCH)
        self.np_pd_bind = np.zeros(REPLAY_BATCH)
        self.np_pd_node = np.zeros(REPLAY_BATCH, dtype=np.int64)
        self.np_pd_attempts = np.zeros(REPLAY_BATCH, dtype=np.int64)
        self.np_pd_end = np.zeros(REPLAY_BATCH)
        self.pd_pod, self.pd_class = self.np_pd_pod, self.np_pd_class
        self.pd_arrival, self.pd_first = self.np_pd_arrival, self.np_pd_first
        self.pd_bind, self.pd_node = self.np_pd_bind, self.np_pd_node
        self.pd_attempts, self.pd_end = self.np_pd_attempts, self.np_pd_end
        self.pd_devs = []
        self.pd_migs = []
        self.pd_n = 0
        self.np_pd_preempted = np.full(REPLAY_BATCH, -1, dtype=np.int32)
        self.pd_preempted = self.np_pd_preempted
        self._init_kube(n, priority, preemption, t_never, draw_offset, preempt_message,
                        victim_message)
        self.recalls_deleting = recalls_deleting
        self.np_s_class = np.zeros(n, dtype=np.int32)
        self.np_s_node = np.zeros(n, dtype=np.int32)
        self.np_s_arrival = np.zeros(n)
        self.np_s_bind = np.zeros(n)
        self.np_s_end = np.zeros(n)
        self.np_delays = np.zeros(n)
        self.s_class, self.s_node = self.np_s_class, self.np_s_node
        self.s_arrival, self.s_bind, self.s_end = self.np_s_arrival, self.np_s_bind, self.np_s_end
        self.delays = self.np_delays
        self.s_n = self.n_delays = 0
        g = max(n_groups, 1)
        self.g_now = np.zeros((g, 7), dtype=np.int64)
        self.g_present = np.zeros(g, dtype=np.uint8)
        self.g_order = np.zeros(g, dtype=np.int32)
        self.n_present = 0
        self.g_has_time = False
        self.g_time = 0.0
        self.g_times = array("d")
        self.g_rows = array("q")
        # the initial state's pods never arrive: adopt() places them
        self.upcoming = n_initial
        if n > n_initial:
            self._schedule(max(self.arrival[n_initial], 0.0), P_ARRIVE, T_ARRIVALS, -1, 0)
        else:
            self.feeder_done = True
        if defrag_interval > 0:
            self._schedule(defrag_interval, P_ARRIVE, T_DEFRAG, -1, 0)

    # -- ResourceQuota (KernelScheduler's namespace usage, engine._arrive) --------
    cdef int _init_quotas(self, Py_ssize_t n_templates, t_qns, t_qmem, t_qcores, q_lim_mem,
                          q_lim_cores, quota_denied) except -1:
        # no quota columns: no namespace has a limit
        self.quotas = t_qns is not None and len(q_lim_mem) > 0
        if not self.quotas:
            return 0        # every reader of the columns below asks self.quotas first
        if len(t_qns) != n_templates or len(t_qmem) != n_templates \
                or len(t_qcores) != n_templates or len(q_lim_cores) != len(q_lim_mem):
            raise ValueError("quota columns: expected one entry per template / namespace")
        self.t_qns, self.t_qmem, self.t_qcores = t_qns, t_qmem, t_qcores
        self.q_lim_mem, self.q_lim_cores = q_lim_mem, q_lim_cores
        self.q_used_mem = np.zeros(len(q_lim_mem), dtype=np.int64)
        self.q_used_cores = np.zeros(len(q_lim_mem), dtype=np.int64)
        self.quota_denied = quota_denied
        return 0

    cdef inline void _quota_apply(self, int k, int sign) noexcept:
        # KernelScheduler._add (sign 1) / delete (-1): pod k's collapsed usage (its
        # slot) counts for its namespace. Whatever rewrites a bound pod's slot (the
        # init-container collapse) calls this with -1 before and +1 after.
        cdef int ns = self.t_qns[self.tmpl[k]], sl = self.slot[k], i
        cdef Py_ssize_t base
        cdef int64_t mem = 0, cores = 0
        self.q_ver += 1
        if ns < 0 or sl < 0:
            return
        self.q_ns_ver[ns] += 1
        base = <Py_ssize_t>sl * self.slot_width
        for i in range(self.slot_n[sl]):
            # NVIDIA's quota counts NVIDIA's cards alone (countPodDevices per family)
            if not (self.core.table.c.offer[self.slot_rows[base + i]] & (1 << FAM_NVIDIA)):
                continue
            mem += self.slot_mem[base + i]
            cores += self.slot_cores[base + i]
        self.q_used_mem[ns] += sign * mem
        self.q_used_cores[ns] += sign * cores

    cdef inline bint _quota_denies(self, int k) noexcept:
        # HAMi's webhook at creation (hamisim.hami.quota.quota_denial): the pod's
        # whole request against its namespace's usage now (used + request > limit,
        # written so that a limit near int64's end cannot overflow)
        cdef int t = self.tmpl[k], ns = self.t_qns[t]
        cdef int64_t mem = self.t_qmem[t], lim
        if ns < 0 or mem < 0:
            return False
        lim = self.q_lim_mem[ns]
        if lim >= 0 and mem > lim - self.q_used_mem[ns]:
            return True
        lim = self.q_lim_cores[ns]
        return lim >= 0 and self.t_qcores[t] > lim - self.q_used_cores[ns]

    # -- workload controllers (engine._arrive_owned .. engine._owned_pod_left) ----
    cdef int _init_controllers(self, Py_ssize_t n, ctl, ctl_kind) except -1:
        # they create a pod HAMi's webhook refused again, so only where quotas
        # can refuse (and in replay: fill mode passes no ctl)
        cdef Py_ssize_t n_ctl = len(ctl_kind) if ctl_kind is not None else 0
        self.controllers = self.quotas and ctl is not None and n_ctl > 0
        self.n_uncreated = self.ctl_timers = 0
        self.q_ref = np.zeros((max(len(self.q_lim_mem) if self.quotas else 0, 1), 6),
                              dtype=np.int64)
        self.ctl_refusals = np.zeros(max(n, 1), dtype=np.int32)
        if not self.controllers:
            return 0
        if len(ctl) != n:
            raise ValueError("ctl: expected one entry per pod")
        self.ctl = np.ascontiguousarray(ctl, dtype=np.int32)
        self.ctl_kind = np.ascontiguousarray(ctl_kind, dtype=np.uint8)
        self.ctl_fail = np.zeros(n_ctl, dtype=np.int32)
        self.ctl_next = np.full(n_ctl, INFINITY)
        self.cw_head = np.full(n_ctl, -1, dtype=np.int32)
        self.cw_tail = np.full(n_ctl, -1, dtype=np.int32)
        self.cw_next = np.full(n, -1, dtype=np.int32)
        return 0

    cdef int _arrive_owned(self, int k, int c) except -1:
        # engine._arrive_owned: the controller's sync creates pod k (and any of
        # its pods waiting before it)
        cdef double deletion = self.deletion[k]
        self._set_status(k, S_UNCREATED)
        self.n_uncreated += 1
        if deletion == deletion:
            self.live += 1
            self._schedule(max(deletion - self.now, 0.0), P_DEPART, T_DELETION, k, 0)
        self.cw_next[k] = -1
        if self.cw_tail[c] >= 0:
            self.cw_next[self.cw_tail[c]] = k
        else:
            self.cw_head[c] = k
        self.cw_tail[c] = k
        return self._sync(c)

    cdef int _sync(self, int c) except -1:
        # engine._sync: slow-start batches of 1, 2, 4, ... over the waiting
        # pods; the batch with a refusal ends the sync; the list keeps the pods
        # still waiting, in order
        cdef int k = self.cw_head[c], nxt, tail = -1, created = 0, in_batch = 0, batch = 1
        cdef int failures
        cdef bint refused = False, stop = False
        self.cw_head[c] = -1
        while k >= 0:
            nxt = self.cw_next[k]
            if self.status[k] == S_UNCREATED:
                if not stop:
                    if self._create_owned(k):
                        created += 1
                    else:
                        refused = True
                    in_batch += 1
                    if in_batch == batch:
                        in_batch = 0
                        batch *= 2
                        stop = refused
                if self.status[k] == S_UNCREATED:
                    self.cw_next[k] = -1
                    if tail >= 0:
                        self.cw_next[tail] = k
                    else:
                        self.cw_head[c] = k
                    tail = k
            k = nxt
        self.cw_tail[c] = tail
        if not refused:
            self.ctl_fail[c] = 0                # queue.Forget
            return 0
        failures = self.ctl_fail[c]
        self.ctl_fail[c] = failures + 1
        if created or not (self.feeder_done and self.live == 0 and self.stale == 0):
            self._ask_sync(c, _resync_delay(self.ctl_kind[c], failures))
        return 0

    cdef int _create_owned(self, int k) except -1:
        # engine._create_owned: 0 refused by HAMi's webhook (a rejected row;
        # it keeps waiting), 1 created (into the active queue)
        cdef int ns = self.t_qns[self.tmpl[k]]
        if self._quota_denies(k):
            self.ctl_refusals[k] += 1
            self.q_ref[ns, R_CREATIONS] += 1
            if self.ctl_refusals[k] == 1:
                self.q_ref[ns, R_PODS] += 1
            self._event(E_REJECTED, k, -1, None, self.quota_denied)
            return 0
        if ns >= 0 and (self.ctl_refusals[k] or self.now > self.arrived_at[k]):
            self.q_ref[ns, R_LATER] += 1
        self.n_uncreated -= 1
        self.stale += 1
        self._enqueue(k)
        self.pass_wanted = True
        return 1

    cdef int _ask_sync(self, int c, double delay) except -1:
        # engine._ask_sync: the work queue keeps the earliest sync asked for
        cdef double when = self.now + delay
        if when < self.ctl_next[c]:
            self.ctl_next[c] = when
            self.ctl_timers += 1
            self._schedule(delay, P_ARRIVE, T_RESYNC, c, 0)
        return 0

    cdef int _owned_pod_left(self, int c) except -1:
        # engine._owned_pod_left: a ReplicaSet syncs at once, a Job after
        # syncJobBatchPeriod (only where pods wait or failures stand)
        if self.cw_head[c] < 0 and self.ctl_fail[c] == 0:
            return 0
        if self.ctl_kind[c] == CK_JOB:
            return self._ask_sync(c, _JOB_SYNC_BATCH_PERIOD)
        return self._sync(c)

    cdef inline void _quota_gate(self, int t, PodSpec spec) noexcept:
        # KernelScheduler._schedule: HAMi's Fit checks the namespace's usage now
        cdef int ns = self.t_qns[t]
        if ns < 0:
            return                  # spec.p.quota stays False (PodSpec's default)
        spec.p.quota = True
        spec.p.q_used_mem = self.q_used_mem[ns]
        spec.p.q_used_cores = self.q_used_cores[ns]
        spec.p.q_lim_mem = self.q_lim_mem[ns]
        spec.p.q_lim_cores = self.q_lim_cores[ns]

    # -- buffers -------------------------------------------------------------
    cdef int _grow_slots(self) except -1:
        cdef int old = self.slot_cap, cap = max(2 * old, 1024), i
        cdef Py_ssize_t w = self.slot_width
        self.slot_n = <int32_t*>realloc(self.slot_n, cap * sizeof(int32_t))
        self.slot_rows = <int64_t*>realloc(self.slot_rows, cap * w * sizeof(int64_t))
        self.slot_used = <int64_t*>realloc(self.slot_used, cap * w * sizeof(int64_t))
        self.slot_mem = <int64_t*>realloc(self.slot_mem, cap * w * sizeof(int64_t))
        self.slot_cores = <int64_t*>realloc(self.slot_cores, cap * w * sizeof(int64_t))
        self.free_slots = <int32_t*>realloc(self.free_slots, cap * sizeof(int32_t))
        self.after_n = <int32_t*>realloc(self.after_n, cap * sizeof(int32_t))
        self.after_rows = <int64_t*>realloc(self.after_rows, cap * w * sizeof(int64_t))
        self.after_used = <int64_t*>realloc(self.after_used, cap * w * sizeof(int64_t))
        self.after_mem = <int64_t*>realloc(self.after_mem, cap * w * sizeof(int64_t))
        self.after_cores = <int64_t*>realloc(self.after_cores, cap * w * sizeof(int64_t))
        self.def_n = <int32_t*>realloc(self.def_n, 2 * cap * sizeof(int32_t))
        self.def_buf = <int64_t*>realloc(self.def_buf, 8 * cap * w * sizeof(int64_t))
        if (self.def_n == NULL or self.def_buf == NULL or self.slot_n == NULL or self.slot_rows == NULL or self.slot_used == NULL
                or self.slot_mem == NULL or self.slot_cores == NULL or self.free_slots == NULL
                or self.after_n == NULL or self.after_rows == NULL or self.after_used == NULL
                or self.after_mem == NULL or self.after_cores == NULL):
            raise MemoryError()
        # new slots free, lowest first
        for i in range(cap - 1, old - 1, -1):
            self.free_slots[self.n_free] = i
            self.n_free += 1
        self.slot_devices.extend([None] * (cap - old))
        self.slot_mig.extend([None] * (cap - old))
        self.slot_mig_after.extend([None] * (cap - old))
        self.slot_cap = cap
        return 0

    cdef int _text_room(self, Py_ssize_t need) except -1:
        return grow_text(&self.text, &self.text_cap, need)

    # -- timers (SimPy's queue) ------------------------------------------------
    cdef int _schedule(self, double delay, int prio, int kind, int pod, int gen) except -1:
        self.seq += 1
        # the time as simpy.Environment.schedule computes it
        return self._push_timer(self.now + delay, self.seq - 1, prio, kind, pod, gen)

    cdef int _push_timer(self, double time, int64_t seq, int prio, int kind, int pod,
                         int gen) except -1:
        cdef RTimer t
        cdef RTimer* h
        t.time = time
        t.seq = seq
        t.prio = prio
        t.kind = kind
        t.pod = pod
        t.gen = gen
        if self.n_timers == self.cap_timers:
            h = <RTimer*>realloc(self.timers, 2 * self.cap_timers * sizeof(RTimer))
            if h == NULL:
                raise MemoryError()
            self.timers = h
            self.cap_timers *= 2
        _heap_push(self.timers, self.n_timers, t)
        self.n_timers += 1
        return 0

    cdef int _flush_later(self, int k, double delay) except -1:
        # _schedule(delay, P_ARRIVE, T_FLUSH, k, gen[k]) as far as anything can
        # tell: the same time, seq and gen. The one difference is that a pod's
        # timer that the new one makes stale (its gen is gone) is not joined by
        # it in the heap but carries the new one's key, and re-arms there when
        # it pops (_flush_popped). The stale timer's pop does nothing but set the
        # clock; the re-armed timer pops at its own time, the last of the pod's.
        cdef double when = self.now + delay
        self.fl_due[k] = when
        self.fl_seq[k] = self.seq
        self.fl_gen[k] = self.gen[k]
        self.seq += 1
        if 0.0 <= self.fl_armed[k] <= when:
            return 0
        self.fl_armed[k] = when
        return self._push_timer(when, self.fl_seq[k], P_ARRIVE, T_FLUSH, k, self.gen[k])

    cdef int _flush_popped(self, RTimer* t) except -1:
        # a flush timer popped: pod t.pod's latest one (then _leftover), or an
        # older one, stale, that moves on to the latest's time and key
        cdef int k = t.pod
        if t.seq == self.fl_seq[k]:
            self.fl_armed[k] = -1.0
            return self._leftover(k, t.gen)
        self.fl_armed[k] = self.fl_due[k]
        return self._push_timer(self.fl_due[k], self.fl_seq[k], P_ARRIVE, T_FLUSH, k,
                                self.fl_gen[k])

    cdef RTimer _pop_timer(self) noexcept nogil:
        cdef RTimer top = _heap_pop(self.timers, self.n_timers)
        self.n_timers -= 1
        return top

    cdef inline double _peek(self) noexcept nogil:
        return self.timers[0].time if self.n_timers else INFINITY

    cdef inline void _set_status(self, int k, int status):
        # the counts behind scheduler_pending_pods{queue} (engine._set_status)
        self.n_status[self.status[k]] -= 1
        self.status[k] = status
        self.n_status[status] += 1

    # -- the active queue --------------------------------------------------------
    cdef int _enqueue(self, int k) except -1:
        cdef QItem q
        cdef QItem* h
        self._set_status(k, S_QUEUED)
        self.gen[k] += 1
        if self.n_active == self.cap_active:
            h = <QItem*>realloc(self.active, 2 * self.cap_active * sizeof(QItem))
            if h == NULL:
                raise MemoryError()
            self.active = h
            self.cap_active *= 2
        q.neg_priority = -<int64_t>self.priority[k]
        q.timestamp = self.timestamp[k]
        q.order = k
        _heap_push(self.active, self.n_active, q)
        self.n_active += 1
        return 0

    cdef int _pop_active(self) noexcept nogil:
        cdef QItem top = _heap_pop(self.active, self.n_active)
        self.n_active -= 1
        return <int>top.order

    # -- the unschedulable lists (dicts in insertion order in the engine) ---------
    cdef inline void _u_add(self, int k, int lst) noexcept:
        self.u_list[k] = lst
        self.u_prev[k] = self.u_tail[lst]
        self.u_next[k] = -1
        if self.u_tail[lst] >= 0:
            self.u_next[self.u_tail[lst]] = k
        else:
            self.u_head[lst] = k
        self.u_tail[lst] = k
        self.u_count[lst] += 1

    cdef inline void _u_remove(self, int k) noexcept:
        cdef int lst = self.u_list[k], p, q
        if lst == U_NONE:
            return
        p = self.u_prev[k]
        q = self.u_next[k]
        if p >= 0:
            self.u_next[p] = q
        else:
            self.u_head[lst] = q
        if q >= 0:
            self.u_prev[q] = p
        else:
            self.u_tail[lst] = p
        self.u_prev[k] = self.u_next[k] = -1
        self.u_count[lst] -= 1
        self.u_list[k] = U_NONE

    # -- records (Recorder.event, Recorder.pod_done) ------------------------------
    cdef int _event(self, int kind, int k, int64_t node, object devices,
                    object message) except -1:
        self.last_time = self.now
        if self.aggregate:
            if kind == E_UNSCHEDULABLE:
                return self._failed(k, message)
            if self.ag_head[k] >= 0:
                self._close_failed(k)
        return self._row(self.now, kind, k, node, devices, message, 1, self.now)

    cdef int _failed(self, int k, object message) except -1:
        # a failed attempt joins its pod's open row for that message (Recorder.event)
        cdef int64_t i = self.ag_cur[k]
        if i >= 0 and (self.ag_msg[i] is message or self.ag_msg[i] == message):
            self.ag_count[i] += 1
            self.ag_last[i] = self.now
            return 0
        # another of its open rows: a dict, not a walk (a pod pending for hours
        # on a saturated cluster has hundreds of open rows)
        key = (k, message)
        found = self.ag_index.get(key)
        if found is not None:
            i = <int64_t>found
            self.ag_count[i] += 1
            self.ag_last[i] = self.now
            self.ag_cur[k] = i
            return 0
        if self.ag_free < 0:
            self._ag_grow(2 * self.ag_n)
        i = self.ag_free
        self.ag_free = self.ag_next[i]
        self.ag_first[i] = self.ag_last[i] = self.now
        self.ag_count[i] = 1
        self.ag_seq[i] = self.ag_opened
        self.ag_opened += 1
        self.ag_pod[i] = k
        self.ag_msg[i] = message
        self.ag_index[key] = i
        self.ag_next[i] = -1
        if self.ag_tail[k] >= 0:
            self.ag_next[self.ag_tail[k]] = i
        else:
            self.ag_head[k] = i
        self.ag_tail[k] = i
        self.ag_cur[k] = i
        return 0

    cdef int _ag_grow(self, Py_ssize_t size) except -1:
        # room for `size` open rows; the new ones join the free list
        cdef Py_ssize_t old = self.ag_n, i
        self.np_ag_first = np.resize(self.np_ag_first, size) if old else np.zeros(size)
        self.np_ag_last = np.resize(self.np_ag_last, size) if old else np.zeros(size)
        self.np_ag_count = np.resize(self.np_ag_count, size) if old \
            else np.zeros(size, dtype=np.int64)
        self.np_ag_seq = np.resize(self.np_ag_seq, size) if old \
            else np.zeros(size, dtype=np.int64)
        self.np_ag_pod = np.resize(self.np_ag_pod, size) if old \
            else np.zeros(size, dtype=np.int64)
        self.np_ag_next = np.resize(self.np_ag_next, size) if old \
            else np.zeros(size, dtype=np.int64)
        self.ag_first, self.ag_last = self.np_ag_first, self.np_ag_last
        self.ag_count, self.ag_seq = self.np_ag_count, self.np_ag_seq
        self.ag_pod, self.ag_next = self.np_ag_pod, self.np_ag_next
        if old:
            self.ag_msg.extend([None] * (size - old))
        else:
            self.ag_msg = [None] * size
        for i in range(size - 1, old - 1, -1):
            self.ag_next[i] = self.ag_free
            self.ag_free = i
        self.ag_n = size
        return 0

    cdef int _close_failed(self, int k) except -1:
        # pod k's open rows, in creation order, before its row of another kind
        cdef int64_t i = self.ag_head[k], j
        while i >= 0:
            j = self.ag_next[i]
            self._row(self.ag_first[i], E_UNSCHEDULABLE, k, -1, None, self.ag_msg[i],
                      self.ag_count[i], self.ag_last[i])
            del self.ag_index[(k, self.ag_msg[i])]
            self.ag_msg[i] = None
            self.ag_next[i] = self.ag_free
            self.ag_free = i
            i = j
        self.ag_head[k] = self.ag_tail[k] = self.ag_cur[k] = -1
        return 0

    def close_failed_attempts(self):
        """Write the open aggregated rows (pods pending at the end of the run), in the
        order they were opened (Recorder.close_failed_attempts)."""
        cdef Py_ssize_t i
        cdef list open_ = []
        if not self.aggregate:
            return
        for i in range(self.ag_n):
            if self.ag_msg[i] is not None:
                open_.append((self.ag_seq[i], i))
        open_.sort()
        for _, i in open_:
            self._row(self.ag_first[i], E_UNSCHEDULABLE, self.ag_pod[i], -1, None,
                      self.ag_msg[i], self.ag_count[i], self.ag_last[i])
            self.ag_msg[i] = None
        self.ag_index.clear()
        self.ag_head[:] = -1
        self.ag_tail[:] = -1
        self.ag_cur[:] = -1

    cdef int _row(self, double time, int kind, int64_t k, int64_t node, object devices,
                  object message, int64_t count, double last) except -1:
        cdef Py_ssize_t row = self.ev_n
        self.ev_time[row] = time
        self.ev_kind[row] = kind
        self.ev_node[row] = node
        self.ev_pod[row] = k
        self.ev_count[row] = count
        self.ev_last[row] = last
        if devices is not None:
            self.ev_dev_rows.append(row)
            self.ev_devs.append(devices)
        if message is not None:
            self.ev_msg_rows.append(row)
            self.ev_msgs.append(message)
        self.ev_n = row + 1
        if self.ev_n >= REPLAY_BATCH:
            self.flush_events()
        return 0

    def flush_events(self):
        """Hand the events recorded so far to ``on_events(n)`` and start afresh."""
        if self.ev_n:
            self.on_events(self.ev_n)
            self.ev_n = 0
            self.ev_dev_rows, self.ev_devs, self.ev_msg_rows, self.ev_msgs = [], [], [], []

    cdef int _done(self, int k, double end) except -1:
        # engine._done: the pod's row (it left at `end`, or NaN: the run is over)
        cdef Py_ssize_t row = self.pd_n, s = self.s_n
        cdef int c = self.pod_class[k], sl = self.slot[k]
        self.pd_pod[row] = k
        self.pd_class[row] = c
        self.pd_arrival[row] = self.arrived_at[k]
        self.pd_first[row] = self.first_attempt[k]
        self.pd_bind[row] = self.bind_time[k]
        self.pd_node[row] = self.node[k]
        self.pd_attempts[row] = self.attempts[k]
        self.pd_end[row] = end
        self.pd_preempted[row] = self.preemptor[k]
        self.pd_devs.append(self.slot_devices[sl] if sl >= 0 else None)
        self.pd_migs.append(self.slot_mig[sl][2] if sl >= 0 and self.slot_mig[sl] is not None
                            else None)
        self.pd_n = row + 1
        self.s_class[s] = c
        self.s_node[s] = self.node[k]
        self.s_arrival[s] = self.pd_arrival[row]
        self.s_bind[s] = self.bind_time[k]
        self.s_end[s] = end
        self.s_n = s + 1
        if self.pd_n >= REPLAY_BATCH:
            self.flush_pods()
        return 0

    def flush_pods(self):
        """Hand the pods recorded so far to ``on_pods(n)`` and start afresh."""
        if self.pd_n:
            self.on_pods(self.pd_n)
            self.pd_n = 0
            self.pd_devs = []
        self.pd_migs = []

    # -- the time series (engine._sample, Recorder.sample_groups) -----------------
    cdef int _sample(self, bint force) except -1:
        cdef double now = self.now, delay
        cdef MeterCore m = self.meter
        if self.sampled and not force:
            if now < self.next_sample:
                return 0
            self.next_sample = now + self.interval
        # mean wait of the pods bound at this time (NaN when none was)
        if self.row_time == now and self.row_delay_n:
            delay = self.row_delay_sum / self.row_delay_n
        else:
            delay = NAN
        m._sample_c(now, self.n_arrived, self.n_pending, self.n_running, self.n_departed,
                    self.n_abandoned, self.gpu_arrived, delay, self.n_status[S_QUEUED],
                    self.n_status[S_BACKOFF], self.n_status[S_UNSCHEDULABLE],
                    self.n_result[0], self.n_result[1], self.n_result[2])
        if self.many_groups:
            self._sample_groups(now)
        if m.sum_alloc > self.peak_alloc:
            self.peak_alloc = m.sum_alloc
            self.peak_time = now
            m._snapshot_c()
        return 0

    cdef int _sample_groups(self, double time) except -1:
        cdef MeterCore m = self.meter
        cdef Py_ssize_t g
        if not self.g_has_time or time != self.g_time:
            self.flush_groups()
            self.g_time = time
            self.g_has_time = True
        for g in range(m.g_dirty.shape[0]):
            if not m.g_dirty[g]:
                continue
            m.g_dirty[g] = 0
            if not self.g_present[g]:
                self.g_present[g] = 1
                self.g_order[self.n_present] = <int32_t>g
                self.n_present += 1
            self.g_now[g, 0] = g
            self.g_now[g, 1] = m.g_alloc[g]
            self.g_now[g, 2] = m.g_free[g]
            self.g_now[g, 3] = m.g_frag[g]
            self.g_now[g, 4] = m.g_unfit[g]
            self.g_now[g, 5] = m.g_usedmem[g]
            self.g_now[g, 6] = m.g_usedcores[g]
        return 0

    def flush_groups(self):
        """Move the current time's per-group rows to ``g_times`` / ``g_rows``."""
        cdef Py_ssize_t i, g, c
        for i in range(self.n_present):
            g = self.g_order[i]
            self.g_times.append(self.g_time)
            for c in range(7):
                self.g_rows.append(self.g_now[g, c])
            self.g_present[g] = 0
        self.n_present = 0

    # -- arrivals (engine._arrivals, engine._arrive) --------------------------------
    cdef int _arrivals(self) except -1:
        cdef double now = self.now
        cdef int k = self.upcoming
        while k < self.n_pods and self.arrival[k] <= now:
            self._arrive(k)
            k += 1
            self.upcoming = k
        if self.progress is not None and (k - self.arrivals_reported >= 4096
                                          or k >= self.n_pods):
            self.progress(k - self.arrivals_reported)
            self.arrivals_reported = k
        if k >= self.n_pods:
            self.feeder_done = True
        else:
            self._schedule(self.arrival[k] - now, P_ARRIVE, T_ARRIVALS, -1, 0)
        self._settle()
        return 0

    cdef int _arrive(self, int k) except -1:
        cdef double now = self.now, deletion = self.deletion[k]
        cdef int ns
        self.arrived_at[k] = now
        self.timestamp[k] = now
        self.n_arrived += 1
        self.n_pending += 1
        self.gpu_arrived += self.t_gpu[self.tmpl[k]]
        self._event(E_ARRIVE, k, -1, None, None)
        if self.controllers and self.ctl[k] >= 0:
            return self._arrive_owned(k, self.ctl[k])
        self.stale += 1
        if self.quotas and self._quota_denies(k):
            # HAMi's webhook refused to create it (its namespace's quota was
            # used up when it was created): it is never scheduled
            ns = self.t_qns[self.tmpl[k]]
            self.ctl_refusals[k] += 1
            self.q_ref[ns, R_CREATIONS] += 1
            self.q_ref[ns, R_PODS] += 1
            self.q_ref[ns, R_NEVER] += 1
            self._abandon(k, self.quota_denied, E_REJECTED)
            return 0
        if deletion == deletion:
            self.live += 1
            self._schedule(max(deletion - now, 0.0), P_DEPART, T_DELETION, k, 0)
        self._enqueue(k)
        self.pass_wanted = True
        return 0

    # -- scheduling (engine._pass, engine._attempt, engine._bind) --------------------
    cdef int _pass(self) except -1:
        cdef int k
        self.pass_wanted = False
        while self.n_active:
            k = self._pop_active()
            if self.status[k] != S_QUEUED:
                continue
            self._attempt(k)
        self.pass_wanted = False        # asked for during this pass: served by it
        self._sample(False)
        return 0

    cdef double _draw(self) except? -1.0:
        if self.next_draw == self.n_draws:
            self.draws = self.draw_block(DRAW_BLOCK)
            self.n_draws = self.draws.shape[0]
            self.next_draw = 0
        self.next_draw += 1
        return self.draws[self.next_draw - 1]

    cdef int _attempt(self, int k) except -1:
        # One scheduling attempt of pod k (engine._attempt). A failure whose
        # state stands is answered by the shortcut of repeated failures:
        # _remember keeps a failed attempt's outcome per template with the
        # state it was made in, _reuse gives it back to the next attempt of the
        # same template made in the same state (a lookup instead of sampling,
        # HAMi's Fit on every window node and the dry run).
        cdef double now = self.now, draw = 0.0, started
        cdef int node, nominated, pf, t, start_in
        cdef int64_t key
        if self.t_kind[self.tmpl[k]] == TK_ADMISSION:
            # refused by HAMi's admission webhook: never created, never scheduled
            self._abandon(k, self.pod_error(k), E_REJECTED)
            return 0
        if self.random_ties:
            draw = self._draw()
        self.n_attempts += 1
        if not self.attempts[k]:
            self.first_attempt[k] = now
        self.attempts[k] += 1
        if self.tried[k] != self.changes:
            self.stale -= 1
            self.tried[k] = self.changes
        started = _clock()
        message = None
        nominated = self.nom_node[k]
        pf = PF_UNIFORM
        t = self.tmpl[k]
        key = self._state_key() if self.use_shortcut and nominated < 0 else -1
        if key >= 0 and self.sc_rel[t] >= 0 and self.sc_key[t] != key \
                and self.sc_col[t, SC_LOW] == self.low_rank \
                and self._relevant_key(t) == self.sc_rel[t]:
            self.sc_key[t] = key        # what changed since is nothing this pod reads
        if key >= 0 and self.sc_key[t] == key and self.sc_col[t, SC_PRIORITY] == self.priority[k] \
                and (self.sc_col[t, SC_START] < 0 or self.sc_col[t, SC_START] == self.next_start):
            node = -1
            message = self._reuse(k, t)
            pf = self.sc_col[t, SC_PF]
        else:
            start_in = self.next_start
            node = self._schedule_kube(k, draw)
            if node < 0:
                if node == -1:
                    if self.preemption:
                        pf = self._post_filter(k)
                    # the uniform verdict (nobody to preempt, the saturated case):
                    # FailText in C; a dry run's verdict: its own text
                    message = self._fail_text(t) if pf == PF_UNIFORM \
                        else self._post_filter_message(k, pf)
                    if key >= 0:
                        self._remember(k, t, key, start_in, pf, message)
                else:
                    message = self.pod_error(k)
                    self.rej_last = 0           # an error: no plugin rejected it
        self.decision_time += _clock() - started
        if node >= 0:
            self.n_result[0] += 1
            self._bind(k, node)
            return 0
        # kube-scheduler's result: an error when no plugin rejected the pod
        self.n_result[1 if self.rej_last else 2] += 1
        self._event(E_UNSCHEDULABLE, k, -1, None, message)
        if not self.retry:
            self._abandon(k, "not retried (retry: none)")
        else:
            self._unschedulable(k, self.rej_last, message, self.nom_node[k] != nominated)
        if pf == PF_NOMINATED:
            self._preempt_victims(k)
        return 0

    cdef inline int64_t _state_key(self) noexcept:
        # Everything a failed attempt of a given template and priority read
        # besides next_start: every node's cards, CPU/memory, MIG and
        # reservations (Core.ver_all), the running pods and queue hints
        # (changes: every cluster event), the nominations (nom_ver) and the
        # namespaces' quota usage (q_ver). Each only grows, so their sum
        # changes whenever one does.
        return self.core.ver_all + self.changes + self.nom_ver + self.q_ver

    cdef int _init_gate_classes(self) except -1:
        # the templates' distinct static gates, as the kernel's gate classes
        # (_relevant_key reads a class's count of node changes, not every node's)
        cdef PodSpec spec
        cdef Py_ssize_t n = self.core.table.n_nodes
        cdef int t
        classes: dict = {}
        gates = []
        self.t_gate_cls = np.full(max(len(self.t_spec), 1), -1, dtype=np.int32)
        for t in range(len(self.t_spec)):
            spec = <PodSpec>self.t_spec[t]
            if spec.p.gate == NULL or n == 0:
                continue
            key = (<char*>spec.p.gate)[:4 * n]
            c = classes.get(key)
            if c is None:
                c = classes[key] = len(gates)
                gates.append(np.frombuffer(key, dtype=np.int32))
            self.t_gate_cls[t] = c
        self.core.set_gate_classes(gates)
        return 0

    cdef int64_t _relevant_key(self, int t) noexcept:
        # What template t's failure read of the state key's parts: the nodes
        # its static filters pass (a node that NodeAffinity, TaintToleration or
        # NodeUnschedulable rejects is rejected whatever its usage, and it is
        # no potential node for the dry run), its namespace's quota usage, the
        # nominations. The gate's nodes count through its gate class: the
        # changes of those nodes (node_ver's bumps there, the nominated pods'
        # passing load included); without a static gate every node counts:
        # ver_all, which grows with every change of any node (_schedule_kube
        # takes the passing load out of it). Each only ever grows while
        # something changes, which is what a key needs.
        cdef int64_t key = self.nom_ver
        cdef int c = self.t_gate_cls[t], ns
        if c < 0:
            key += self.core.ver_all
        else:
            key += self.core.cls_ver[c]
        if self.quotas:
            ns = self.t_qns[t]
            if ns >= 0:
                key += self.q_ns_ver[ns]
        return key

    cdef int _remember(self, int k, int t, int64_t key, int start_in, int pf,
                       object message) except -1:
        # Keep the failed attempt just made (kube-scheduler's and HAMi's
        # verdicts, DefaultPreemption's) for template t, if it is a function of
        # the state key, the priority and next_start alone: HAMi's kernel (not a
        # research policy, not a user's ranking), a pod not nominated before or
        # after, a dry run that nominated nobody, no state changed meanwhile.
        cdef PodSpec spec = <PodSpec>self.t_spec[t]
        cdef Py_ssize_t j, n, w
        if self.rcore is not None or self.t_kind[t] != TK_OK or message is None:
            return 0
        if spec.user_rank and self.ranker is not None:
            return 0
        if pf == PF_NOMINATED or pf == PF_TERMINATING or self.nom_node[k] >= 0:
            return 0
        if pf == PF_ERRORS and self.preempt_postfix is None:
            return 0
        if self._state_key() != key:
            return 0
        self.sc_key[t] = key
        self.sc_rel[t] = self._relevant_key(t)
        self.sc_col[t, SC_LOW] = self.low_rank
        # every node examined (fewer feasible nodes than wanted): the same
        # window, verdicts and next_start from wherever the sampling starts
        self.sc_col[t, SC_START] = -1 if self.core.n_window < self.wanted else start_in
        self.sc_col[t, SC_START_OUT] = self.next_start
        self.sc_col[t, SC_PRIORITY] = self.priority[k]
        self.sc_col[t, SC_REJ] = self.rej_last
        self.sc_col[t, SC_PF] = pf
        self.sc_col[t, SC_DRAW] = self.pf_drawn if self.preemption else -1
        if pf == PF_ERRORS:
            # the text names the error nodes in the order the dry run met
            # them, from its random offset: keep them by position among the
            # potential nodes (the visit order is a rotation of that order)
            n = self.pf_n_errors
            w = 0
            for j in range(1, n):
                if self.pf_errpos[j] < self.pf_errpos[j - 1]:
                    w = j
                    break
            order = np.empty(2 * n, dtype=np.int32)
            for j in range(n):
                order[j] = self.pf_errpos[(w + j) % n]
                order[n + j] = self.pf_errs[(w + j) % n]
            # the filters' part of the text: PostFilter's follows it after a
            # space (full_message)
            post = self.preempt_postfix(PF_ERRORS, 0, 0, 0, 0,
                                        [self.pf_errs[j] for j in range(n)])
            if post is None or not message.endswith(" " + post):
                self.sc_key[t] = self.sc_rel[t] = -1
                return 0
            self.sc_err[t] = [order, {}]
            self.sc_msg[t] = message[:len(message) - len(post) - 1]
        else:
            self.sc_msg[t] = message
            self.sc_err[t] = None
        return 0

    cdef object _reuse(self, int k, int t):
        # The remembered failure of template t, for pod k's attempt in the
        # same state: next_start moves as it did, the dry run draws its offset
        # as it did (the random stream stays the run's), and a verdict naming
        # nodes names them from that offset.
        cdef int32_t[::1] order
        cdef dict texts
        cdef int n, j, first, start = 0, d = self.sc_col[t, SC_DRAW]
        self.n_reused += 1
        self.rej_last = self.sc_col[t, SC_REJ]
        if self.sc_col[t, SC_START] >= 0:
            self.next_start = self.sc_col[t, SC_START_OUT]
        self.n_best = self.n_cleared = 0
        if d >= 0:
            start = <int>self._offset(d)
        if self.sc_col[t, SC_PF] != PF_ERRORS:
            return self.sc_msg[t]
        order, texts = self.sc_err[t]
        n = order.shape[0] // 2
        first = 0
        for j in range(n):
            if order[j] >= start:
                first = j
                break
        message = texts.get(first)
        if message is None:
            # the nodes from the offset on, then those before it (the dry run's
            # visit order), in kube-scheduler's words after the filters' text
            errors = [order[n + (first + j) % n] for j in range(n)]
            message = texts[first] = self.sc_msg[t] + " " + self.preempt_postfix(
                PF_ERRORS, 0, 0, 0, 0, errors)
        return message

    cdef object _fail_text(self, int t):
        # kube-scheduler's text for the failed attempt just made (the kernel's
        # buffers) when PostFilter's verdict is the uniform one: built in C, else
        # by fail_message (which reads counts/ncards); a research policy's own text
        if self.rcore is not None:
            return self.rcore.replay_fail_text()
        if self.ftext is not None:
            message = self.ftext.text(t)
            if message is not None:
                return message
        self.core._fill_counts()
        return self.fail_message(t)

    cdef int _decide(self, int k, double draw) except -3:
        # KernelScheduler.schedule: the chosen node, its usage in a new slot;
        # -1 no node fits, -2 the template's own error (admission or Filter)
        cdef int t = self.tmpl[k], kind = self.t_kind[t], best, node, n, j
        cdef Core core = self.core
        cdef PodSpec spec = <PodSpec>self.t_spec[t]
        cdef bint wants_gpu
        if kind == TK_ADMISSION:
            return -2
        if self.rcore is not None:
            return self._research_decide(k, t, kind)
        core._fit_pod(spec)
        if self.quotas:
            self._quota_gate(t, spec)
        if kind == TK_FILTER_ERROR:
            # HAMi's Filter errors out after kube-scheduler sampled the nodes
            core._attempt(&spec.p, self.next_start, self.wanted, False, False, True, True)
            self.next_start = core.next_start
            return -2
        wants_gpu = self.t_wants_gpu[t]
        if spec.user_rank and self.ranker is not None:
            # KernelScheduler._choose: the user's policy picks the winner (tied holds it)
            core._rank_attempt(&spec.p, self.next_start, self.wanted, self.ranker,
                               draw if self.random_ties else -1.0)
        else:
            core._attempt(&spec.p, self.next_start, self.wanted, wants_gpu,
                          self.t_node_spread[t], False, self.random_ties)
        self.next_start = core.next_start
        best = core.best
        if best < 0:
            # sim.kernel.attempt_rejectors: HAMi removed the nodes that passed
            self.rej_last = REJ_EXTENDER if core.n_window else 0
            if core.rej_union & 3:
                self.rej_last |= REJ_FIT
            if core.rej_union >> 2:
                self.rej_last |= REJ_STATIC
            return -1
        if self.random_ties:
            n = core.n_tied
            j = <int>(draw * n)
            if j > n - 1:
                j = n - 1
            best = <int>core.tied[j]
        node = <int>core.window[best]
        self._hold(k, node)
        return node

    cdef int _research_decide(self, int k, int t, int kind) except -3:
        # ResearchScheduler.schedule (no kube-scheduler around it: no nominations,
        # no preemption): ResearchCore decides; the pod's cards go into a new slot
        cdef int node, sl
        cdef Py_ssize_t base
        if kind == TK_FILTER_ERROR:
            return -2                   # its request cannot be mapped (pod_error)
        node = self.rcore.replay_attempt(t, self.next_start, self.wanted)
        self.next_start = self.rcore.next_start
        if node < 0:
            self.rej_last = REJ_FIT     # a resource filter's verdict
            return -1
        sl = self.slot[k] = self._new_slot()
        base = <Py_ssize_t>sl * self.slot_width
        self.slot_devices[sl] = self.rcore.replay_take(
            t, node, self.aligned[node], self.pad_empty[node], self.slot_rows + base,
            self.slot_used + base, self.slot_mem + base, self.slot_cores + base,
            self.slot_n + sl, self.after_rows + base, self.after_used + base,
            self.after_mem + base, self.after_cores + base, self.after_n + sl)
        self.slot_mig[sl] = None
        self._kernel_apply(k, node, 1)
        return node

    cdef int _hold(self, int k, int node) except -1:
        # the chosen node's usage (the kernel's picks) in a new slot, applied
        cdef int t = self.tmpl[k]
        cdef Core core = self.core
        cdef PodSpec spec = <PodSpec>self.t_spec[t]
        cdef bint wants_gpu = self.t_wants_gpu[t]
        self.slot[k] = self._new_slot()
        if not wants_gpu:
            self.slot_n[self.slot[k]] = 0
            self.slot_devices[self.slot[k]] = None
            self.slot_mig[self.slot[k]] = None
        else:
            if core.placed != node:
                if core._place_c(spec, node) != ST_FIT:
                    raise AssertionError("kernel: chosen node no longer fits")
            self._take_picks(k, node, spec.n_cont, self.t_n_init[t])
        self._kernel_apply(k, node, 1)
        if self.quotas:
            self._quota_apply(k, 1)
        return 0

    cdef int _take_picks(self, int k, int node, int n_cont, int n_init) except -1:
        # the pod's collapsed usage (hamisim.hami.reference.collapsed_usage) and its
        # devices annotation, from the kernel's pick buffers, into the pod's slot
        cdef Scratch* s = &self.core.s
        cdef int sl = self.slot[k], ci, i, p, n = 0, b, e
        cdef Py_ssize_t w = self.slot_width, base = <Py_ssize_t>sl * w
        cdef int64_t r0 = self.node_start[node]
        if n_init == 0 and n_cont == 1 and not self.has_mig:
            # one container: distinct cards, one slot each (a MIG card may give one
            # container several instances: the general path counts them per card);
            # HAMi's collapse books a negative request (Iluvatar's vCore) as zero
            for i in range(s.out_n[0]):
                self.slot_rows[base + i] = r0 + s.out_pos[i]
                self.slot_used[base + i] = 1
                self.slot_mem[base + i] = max(s.out_mem[i], <int64_t>0)
                self.slot_cores[base + i] = max(s.out_cores[i], <int64_t>0)
            n = s.out_n[0]
        else:
            # HAMi tells init from app entries by position in its list, which
            # has no entry for GPU-less containers on a node that does not pad
            e = -1
            for ci in range(n_cont):
                if s.out_n[ci] > 0 or self.aligned[node]:
                    e += 1
                for i in range(s.out_n[ci]):
                    b = ci * s.cap_p + i
                    p = s.out_pos[b]
                    if not self.c_touched[p]:
                        self.c_touched[p] = 1
                        self.c_list[n] = p
                        n += 1
                        self.c_app_u[p] = self.c_app_m[p] = self.c_app_c[p] = 0
                        self.c_ini[p] = 0
                        self.c_ini_m[p] = self.c_ini_c[p] = 0
                    self._collapse_pick(p, s.out_mem[b], s.out_cores[b], e >= n_init)
            for i in range(n):
                p = self.c_list[i]
                self.c_touched[p] = 0
                self.slot_rows[base + i] = r0 + p
                self.slot_used[base + i] = max(self.c_app_u[p], <int64_t>self.c_ini[p])
                self.slot_mem[base + i] = max(self.c_app_m[p], self.c_ini_m[p])
                self.slot_cores[base + i] = max(self.c_app_c[p], self.c_ini_c[p])
            if self.t_init_after[self.tmpl[k]] == self.t_init_after[self.tmpl[k]]:
                self._keep_app_usage(sl, n, r0)
            if n_init > 0 and not self.aligned[node]:
                self._keep_deficit(k, sl, n, n_cont, n_init, r0)
        self.slot_n[sl] = n
        self.slot_devices[sl] = self._devices_text(node, n_cont, self.tmpl[k])
        self.slot_mig[sl] = self._mig_instances(node, n_cont) if self.has_mig else None
        if self.has_mig and self.slot_mig[sl] is not None \
                and self.t_init_after[self.tmpl[k]] == self.t_init_after[self.tmpl[k]]:
            self.slot_mig_after[sl] = self._mig_app_instances(node, n_cont, n_init)
        return 0

    cdef inline void _collapse_pick(self, int p, int64_t mem, int64_t cores,
                                    bint app) noexcept:
        # one pick on card position p into the collapse scratch: app containers on
        # one card add up, init containers count the largest, one slot
        if app:
            self.c_app_u[p] += 1
            self.c_app_m[p] += mem
            self.c_app_c[p] += cores
        else:
            self.c_ini[p] = 1
            if mem > self.c_ini_m[p]:
                self.c_ini_m[p] = mem
            if cores > self.c_ini_c[p]:
                self.c_ini_c[p] = cores

    cdef void _keep_app_usage(self, int sl, int n, int64_t r0) noexcept:
        # engine._init_done's usage, kept at bind while the picks are at hand:
        # app_only_usage of the app entries (their sums, unfloored: the e >= n_init sums of the
        # c_app_* scratch _take_picks just filled for the first n cards of c_list)
        cdef Py_ssize_t base = <Py_ssize_t>sl * self.slot_width
        cdef int i, p, m = 0
        for i in range(n):
            p = self.c_list[i]
            if self.c_app_u[p] == 0:
                continue            # only init entries were on this card
            self.after_rows[base + m] = r0 + p
            self.after_used[base + m] = self.c_app_u[p]
            self.after_mem[base + m] = self.c_app_m[p]
            self.after_cores[base + m] = self.c_app_c[p]
            m += 1
        self.after_n[sl] = m

    cdef void _keep_deficit(self, int k, int sl, int n, int n_cont, int n_init,
                            int64_t r0) noexcept:
        # engine._book_deficit: the true usage (every container its own entry, as
        # init_container_usage: corrected counts it) of the first n cards of c_list,
        # minus what _take_picks booked in the slot now and in after_* for later
        cdef Scratch* s = &self.core.s
        cdef Py_ssize_t w = self.slot_width, base = <Py_ssize_t>sl * w, q = 8 * base
        cdef int ci, i, j, p, b, m = 0
        cdef int64_t du, dm, dc, au, am, ac
        for i in range(n):
            p = self.c_list[i]
            self.c_app_u[p] = self.c_app_m[p] = self.c_app_c[p] = 0
            self.c_ini[p] = 0
            self.c_ini_m[p] = self.c_ini_c[p] = 0
        for ci in range(n_cont):
            for i in range(s.out_n[ci]):
                b = ci * s.cap_p + i
                p = s.out_pos[b]
                self._collapse_pick(p, s.out_mem[b], s.out_cores[b], ci >= n_init)
        for i in range(n):
            p = self.c_list[i]
            du = max(self.c_app_u[p], <int64_t>self.c_ini[p]) - self.slot_used[base + i]
            dm = max(self.c_app_m[p], self.c_ini_m[p]) - self.slot_mem[base + i]
            dc = max(self.c_app_c[p], self.c_ini_c[p]) - self.slot_cores[base + i]
            if du != 0 or dm != 0 or dc != 0:
                self.def_buf[q + m] = r0 + p
                self.def_buf[q + w + m] = du
                self.def_buf[q + 2 * w + m] = dm
                self.def_buf[q + 3 * w + m] = dc
                m += 1
        self.def_n[2 * sl] = m
        if self.t_init_after[self.tmpl[k]] != self.t_init_after[self.tmpl[k]]:
            return                  # its init containers are never done
        m = 0
        for i in range(n):
            p = self.c_list[i]
            au = am = ac = 0
            for j in range(self.after_n[sl]):
                if self.after_rows[base + j] == r0 + p:
                    au, am, ac = self.after_used[base + j], self.after_mem[base + j], \
                        self.after_cores[base + j]
                    break
            du, dm, dc = self.c_app_u[p] - au, self.c_app_m[p] - am, self.c_app_c[p] - ac
            if du != 0 or dm != 0 or dc != 0:
                self.def_buf[q + 4 * w + m] = r0 + p
                self.def_buf[q + 5 * w + m] = du
                self.def_buf[q + 6 * w + m] = dm
                self.def_buf[q + 7 * w + m] = dc
                m += 1
        self.def_n[2 * sl + 1] = m

    cdef inline void _meter_deficit(self, int k, int sl, int sign) noexcept:
        # the slot's deficit (engine._book_deficit / _drop_deficit): after the pod's
        # booked usage is added, before it is removed; the pod counted once
        cdef Py_ssize_t w = self.slot_width, q = 8 * <Py_ssize_t>sl * w
        if self.def_n[2 * sl] == 0:
            return
        self.meter._deficit_c(self.def_buf + q, self.def_buf + q + w,
                              self.def_buf + q + 2 * w, self.def_buf + q + 3 * w,
                              self.def_n[2 * sl], sign)
        if sign > 0 and not self.q_pod[k]:
            self.q_pod[k] = 1
            self.n_quirk_pods += 1

    cdef object _mig_app_instances(self, int node, int n_cont, int n_init):
        # the MIG instances of the app entries (HAMi's list: aligned positions), which
        # the kernel keeps after engine._init_done re-adopts the pod
        cdef Scratch* s = &self.core.s
        cdef int ci, i, b, e = -1
        cdef int64_t r0 = self.node_start[node]
        rows, masks = [], []
        for ci in range(n_cont):
            if s.out_n[ci] > 0 or self.aligned[node]:
                e += 1
            if e < n_init:
                continue
            for i in range(s.out_n[ci]):
                b = ci * s.cap_p + i
                if s.out_prof[b] >= 0:
                    rows.append(r0 + s.out_pos[b])
                    masks.append(self.core.table.c.pl_mask[s.out_pl[b]])
        return tuple(rows), tuple(masks)

    cdef object _mig_instances(self, int node, int n_cont):
        # the pod's MIG instances (rows, masks) and hami.io/vgpu-mig-allocations,
        # as hamisim.hami.decision.mig_allocations_annotation writes it
        cdef Scratch* s = &self.core.s
        cdef int ci, i, b, c = -1
        cdef int64_t r0 = self.node_start[node]
        cdef bint pad = self.pad_empty[node]
        rows, masks, entries = [], [], []
        for ci in range(n_cont):
            if s.out_n[ci] == 0 and not pad:
                continue
            c += 1
            for i in range(s.out_n[ci]):
                b = ci * s.cap_p + i
                if s.out_prof[b] < 0:
                    continue
                rows.append(r0 + s.out_pos[b])
                masks.append(self.core.table.c.pl_mask[s.out_pl[b]])
                start, size = self.pl_place[s.out_pl[b]]
                entries.append((c, i, self.card_text[self.card_off[r0 + s.out_pos[b]]:
                                                      self.card_off[r0 + s.out_pos[b] + 1]]
                                .decode("utf-8"), self.mp_name[s.out_prof[b]], start, size))
        if not rows:
            return None
        return tuple(rows), tuple(masks), self.mig_annotation(entries)

    cdef object _devices_text(self, int node, int n_cont, int t):
        # hamisim.hami.decision.devices_annotation of the picks in the buffers:
        # per device family with picks (a container asks one family, its
        # request row's Q_FAM), its list, the lists joined by a space
        cdef Scratch* s = &self.core.s
        cdef const int64_t* req = (<PodSpec>self.t_spec[t]).p.req
        cdef Py_ssize_t pos = 0
        cdef int ci, f
        cdef uint32_t present = 0
        for ci in range(n_cont):
            if s.out_n[ci] > 0:
                present |= (<uint32_t>1) << req[ci * Q_WIDTH + Q_FAM]
        if not present:
            return None
        for f in range(32):
            if not (present >> f) & 1:
                continue
            if pos:
                self._text_room(pos + 1)
                self.text[pos] = 32      # ' '
                pos += 1
            pos = self._family_text(pos, node, n_cont, req, f,
                                    self.pad_empty[node] if f == FAM_NVIDIA
                                    else (self.pad_fam[node] >> f) & 1)
        return PyUnicode_DecodeUTF8(self.text, pos, NULL)

    cdef Py_ssize_t _family_text(self, Py_ssize_t pos, int node, int n_cont,
                                 const int64_t* req, int f, bint pad) except -1:
        # one family's list from text position pos (decision._family_list)
        cdef Scratch* s = &self.core.s
        cdef Py_ssize_t row, idlen, wlen
        cdef int ci, i, b
        cdef int64_t r0 = self.node_start[node]
        cdef bytes word = self.fam_words[f]
        cdef const char* wchars = word
        wlen = len(word)
        for ci in range(n_cont):
            if s.out_n[ci] == 0 or req[ci * Q_WIDTH + Q_FAM] != f:
                if pad:
                    self._text_room(pos + 1)
                    self.text[pos] = 59      # ';'
                    pos += 1
                continue
            for i in range(s.out_n[ci]):
                b = ci * s.cap_p + i
                row = r0 + s.out_pos[b]
                if (self.fam_labels >> f) & 1:
                    # AMD's list names the card's registered type
                    word = self.type_words[self.core.table.c.type_id[row]]
                    wchars = word
                    wlen = len(word)
                idlen = self.card_off[row + 1] - self.card_off[row]
                self._text_room(pos + idlen + wlen + 64)
                memcpy(self.text + pos, self.card_chars + self.card_off[row], idlen)
                pos += idlen
                self.text[pos] = 44      # ','
                pos += 1
                memcpy(self.text + pos, wchars, wlen)
                pos += wlen
                self.text[pos] = 44      # ','
                pos += 1
                pos += _write_int(self.text + pos, s.out_mem[b])
                self.text[pos] = 44      # ','
                pos += 1
                pos += _write_int(self.text + pos, s.out_cores[b])
                self.text[pos] = 58      # ':'
                pos += 1
            self._text_room(pos + 1)
            self.text[pos] = 59      # ';'
            pos += 1
        return pos

    cdef inline void _kernel_apply(self, int k, int node, int sign) noexcept:
        # KernelScheduler._add (sign 1) / delete (-1): the kernel's usage and aggregates
        cdef int sl = self.slot[k], t = self.tmpl[k]
        cdef Py_ssize_t base = <Py_ssize_t>sl * self.slot_width
        if self.rcore is not None:      # the research policy's books instead
            self.rcore.replay_apply(k, t, node, self.slot_rows + base, self.slot_mem + base,
                                    self.slot_cores + base, self.slot_n[sl], sign)
            return
        self.core._apply_c(node, self.slot_rows + base, self.slot_used + base,
                           self.slot_mem + base, self.slot_cores + base, self.slot_n[sl],
                           self.t_cpu[t], self.t_mem[t], sign)
        cdef Py_ssize_t j
        cdef int64_t* reserved
        if self.t_reserve[t]:
            # what-if mutex-reserve (KernelScheduler._add/delete): its cards refuse others
            reserved = <int64_t*>self.core.table.c.reserved
            for j in range(self.slot_n[sl]):
                reserved[self.slot_rows[base + j]] += sign
        if self.has_mig and self.slot_mig[sl] is not None:
            rows, masks, _ = self.slot_mig[sl]
            for j in range(len(rows)):
                self.core._mig_add(rows[j], masks[j], sign)

    cdef inline void _meter_apply(self, int k, int node, int sign) noexcept:
        cdef int sl = self.slot[k], t = self.tmpl[k]
        cdef Py_ssize_t base = <Py_ssize_t>sl * self.slot_width
        self.meter._apply_c(node, self.slot_rows + base, self.slot_used + base,
                            self.slot_mem + base, self.slot_cores + base, self.slot_n[sl],
                            self.t_cpu[t], sign)
        self._meter_deficit(k, sl, sign)

    cdef inline void _meter_apply_cards(self, int k, int node, int sign) noexcept:
        # the pod's cards only (engine._init_done changes its cards, not its CPU)
        cdef int sl = self.slot[k]
        cdef Py_ssize_t base = <Py_ssize_t>sl * self.slot_width
        self.meter._apply_c(node, self.slot_rows + base, self.slot_used + base,
                            self.slot_mem + base, self.slot_cores + base, self.slot_n[sl],
                            0, sign)
        self._meter_deficit(k, sl, sign)

    cdef int _bind(self, int k, int node) except -1:
        cdef double now = self.now, delay, duration = self.duration[k]
        self._set_status(k, S_RUNNING)
        self.gen[k] += 1
        self.node[k] = node
        self.bind_time[k] = now
        self._meter_apply(k, node, 1)
        self.n_pending -= 1
        self.n_running += 1
        delay = now - self.arrived_at[k]
        self.delays[self.n_delays] = delay
        self.n_delays += 1
        if self.row_time != now:
            self.row_time = now
            self.row_delay_sum = 0.0
            self.row_delay_n = 0
        self.row_delay_sum += delay
        self.row_delay_n += 1
        self.message[k] = None              # only a pending pod's text is compared
        self._kube_bound(k, node)
        self._event(E_BIND, k, node, self.slot_devices[self.slot[k]], None)
        if self.deletion[k] != self.deletion[k] and duration == duration:
            self.live += 1
            self._schedule(duration, P_DEPART, T_DELETE, k, 0)
        self._changed(EV_ASSIGNED_ADD)
        if self.t_init_after[self.tmpl[k]] == self.t_init_after[self.tmpl[k]] \
                and self.slot_n[self.slot[k]] > 0:
            # (the engine: init_duration, init containers, and some container got cards)
            self.live += 1
            self._schedule(self.t_init_after[self.tmpl[k]], P_DEPART, T_INIT_DONE, k,
                           self.gen[k])
        return 0

    cdef int _abandon(self, int k, str why, int kind=E_ABANDON) except -1:
        self._kube_gone(k)
        self._u_remove(k)
        self.message[k] = None
        if self.status[k] == S_UNCREATED:   # deleted before its controller created it
            self.n_uncreated -= 1
            if self.t_qns[self.tmpl[k]] >= 0:
                self.q_ref[self.t_qns[self.tmpl[k]], R_DELETED] += 1
        elif self.tried[k] != self.changes:
            self.stale -= 1
        self._set_status(k, S_GONE)
        self.gen[k] += 1
        self.n_pending -= 1
        self.n_abandoned += 1
        if kind == E_REJECTED:
            self.n_rejected += 1
        self._event(kind, k, -1, None, why)
        self._done(k, self.now)
        return 0

    # -- departures (engine._delete, engine._terminate, engine._remove) ------------
    cdef int _delete(self, int k) except -1:
        return self._remove(k, E_DEPART, None)

    cdef int _remove(self, int k, int kind, object message) except -1:
        # `k` leaves: E_DEPART (duration or grace period over, deleted) or
        # E_PREEMPT (a victim without a grace period)
        cdef int st = self.status[k], node, sl
        if st == S_GONE or st == S_NEW:
            return 0
        if st == S_RUNNING or st == S_TERMINATING:
            node = self.node[k]
            self._kernel_apply(k, node, -1)
            self._kube_gone(k)
            if self.quotas:
                self._quota_apply(k, -1)
            self._meter_apply(k, node, -1)
            self._set_status(k, S_GONE)
            self.gen[k] += 1
            self.n_running -= 1
            self.n_departed += 1
            self._event(kind, k, node, None, message)
            self._done(k, self.now)
            self._free_slot(self.slot[k])
            self.slot[k] = -1
            self._changed(EV_ASSIGNED_DELETE)
            if self.controllers and self.ctl[k] >= 0:
                self._owned_pod_left(self.ctl[k])
        else:
            self._abandon(k, "deleted while pending")
        self._sample(False)
        return 0

    # -- the pod lifecycle (engine._terminate, engine._init_done, adopt_initial) ----
    cdef int _terminate(self, int k, int kind, object message) except -1:
        # engine._terminate: pod k is deleted (kind E_TERMINATE: the trace's
        # deletion; E_PREEMPT: a preemption's victim, with its message, counted
        # preempted here once, _preempt_victims having marked it terminating).
        # With a grace period a running pod keeps its node, cards and CPU until
        # the period ends (a live timer), else it leaves at once. A terminating
        # pod is not deleted again: a second delete neither restarts nor
        # shortens its grace period.
        cdef int st = self.status[k]
        cdef double grace = self.t_grace[self.tmpl[k]]
        if st == S_GONE or st == S_NEW or st == S_TERMINATING:
            return 0
        if kind == E_PREEMPT:
            self.n_preempted += 1           # victims run: _remove leaves them at once
        if st == S_RUNNING and grace > 0:
            self._set_status(k, S_TERMINATING)
            self._event(kind, k, self.node[k], None, message)
            if grace < INFINITY:    # (fill mode: infinite, the pod never leaves)
                self.live += 1
                self._schedule(grace, P_DEPART, T_DELETE, k, 0)
            self._changed(EV_ASSIGNED_UPDATE)   # its deletionTimestamp is set
            return 0
        return self._remove(k, E_DEPART if kind == E_TERMINATE else kind, message)

    cdef int _init_done(self, int k, int gen) except -1:
        # engine._init_done: HAMi's onUpdatePod keeps the app entries of its
        # list (HAMi issue #2965 on nodes that list no GPU-less containers);
        # the kernel's usage is re-adopted, the meter's cards follow, CPU stays
        cdef int node = self.node[k], sl = self.slot[k], i
        cdef Py_ssize_t base = <Py_ssize_t>sl * self.slot_width, q
        if self.gen[k] != gen or self.status[k] != S_RUNNING:
            return 0        # a terminating pod is only refreshed: no shrink
        self._meter_apply_cards(k, node, -1)
        self._kernel_apply(k, node, -1)
        if self.quotas:
            self._quota_apply(k, -1)        # the namespace's usage follows the slot
        if self.rcore is not None:
            self.rcore.replay_readopted(k)  # ResearchScheduler.adopt of the app cards
        for i in range(self.after_n[sl]):
            self.slot_rows[base + i] = self.after_rows[base + i]
            self.slot_used[base + i] = self.after_used[base + i]
            self.slot_mem[base + i] = self.after_mem[base + i]
            self.slot_cores[base + i] = self.after_cores[base + i]
        self.slot_n[sl] = self.after_n[sl]
        q = 8 * base
        for i in range(4):                  # the deficit once the init containers are done
            memcpy(self.def_buf + q + i * self.slot_width,
                   self.def_buf + q + (4 + i) * self.slot_width,
                   self.def_n[2 * sl + 1] * sizeof(int64_t))
        self.def_n[2 * sl] = self.def_n[2 * sl + 1]
        self.def_n[2 * sl + 1] = 0
        if self.slot_mig[sl] is not None:
            # the kernel keeps the app entries' instances; the annotation stays
            rows, masks = self.slot_mig_after[sl]
            self.slot_mig[sl] = (rows, masks, self.slot_mig[sl][2])
            self.slot_mig_after[sl] = None
        self._kernel_apply(k, node, 1)
        if self.quotas:
            self._quota_apply(k, 1)
        self._meter_apply_cards(k, node, 1)
        self._changed(EV_ASSIGNED_UPDATE)      # HAMi sees room on that card now
        self._sample(False)
        return 0

    def adopt(self, int k, int node, rows, used, mem, cores, devices, mig, double departure,
              str message):
        """engine.adopt_initial for initial pod ``k`` (< ``n_initial``), before
        :meth:`run`: it arrives and binds at time 0 on ``node`` holding ``rows``
        (card rows) with ``used``/``mem``/``cores`` each (its collapsed usage),
        ``devices`` its annotation (or None), ``mig`` None or ``(rows, masks,
        annotation)`` of its MIG instances; it departs at ``departure`` (NaN:
        never). Call :meth:`adopted` after the last one."""
        cdef int sl, i, n = len(rows)
        cdef Py_ssize_t base
        if not 0 <= k < self.n_initial or k != self.n_arrived or self.now != 0.0:
            raise ValueError("adopt: the initial pods in order, before the run")
        if n > self.slot_width:
            raise ValueError("adopt: more cards than its node has")
        sl = self.slot[k] = self._new_slot()
        base = <Py_ssize_t>sl * self.slot_width
        for i in range(n):
            self.slot_rows[base + i] = rows[i]
            self.slot_used[base + i] = used[i]
            self.slot_mem[base + i] = mem[i]
            self.slot_cores[base + i] = cores[i]
        self.slot_n[sl] = n
        self.slot_devices[sl] = devices
        self.slot_mig[sl] = mig
        self.arrived_at[k] = self.timestamp[k] = 0.0
        self.n_arrived += 1
        self.n_pending += 1
        self._event(E_ARRIVE, k, -1, None, None)
        self._kernel_apply(k, node, 1)
        if self.quotas:
            self._quota_apply(k, 1)         # as KernelScheduler.adopt counts its namespace
        self._kube_bound(k, node)
        self._set_status(k, S_RUNNING)
        self.node[k] = node
        self._meter_apply(k, node, 1)
        self.n_pending -= 1
        self.n_running += 1
        self.bind_time[k] = 0.0
        self._event(E_BIND, k, node, devices, message)
        if departure == departure:
            self.live += 1
            self._schedule(departure, P_DEPART, T_DELETE, k, 0)

    def adopted(self):
        """After the initial pods: the time series' row at time 0."""
        self._sample(False)

    # -- the periodic defragmenter (a what-if, not HAMi: engine._defrag_round ...) --
    cdef int _defrag_round(self) except -1:
        # up to defrag_moves moves; then the next round, unless nothing can
        # change any more and this round moved nothing
        cdef int moved = 0
        while moved < self.defrag_moves and self._defrag_move():
            moved += 1
        if moved:
            self._sample(False)
        if moved or not self._over():
            self._schedule(self.defrag_interval, P_ARRIVE, T_DEFRAG, -1, 0)
        return 0

    cdef inline bint _movable(self, int k) noexcept:
        # engine._movable: running, on cards, no init containers, no MIG instance,
        # placed by an attempt (initial pods hold no picks the engine could undo)
        cdef int sl = self.slot[k]
        return (self.status[k] == S_RUNNING and k >= self.n_initial and self.slot_n[sl] > 0
                and self.slot_mig[sl] is None and self.t_n_init[self.tmpl[k]] == 0)

    cdef int _defrag_replace(self, int k) except -2:
        # engine._replace: evict k and let HAMi place it again (no tie draw: the
        # last best node). Returns a slot holding the new usage, the kernel holding
        # the pod there (node in trial_node); -1 when it lands on the same cards
        # or nowhere (then nothing changed, next_start included)
        cdef int node = self.node[k], old = self.slot[k], t = self.tmpl[k], ts, nn, i, j
        cdef int start = self.next_start
        cdef Core core = self.core
        cdef PodSpec spec = <PodSpec>self.t_spec[t]
        cdef bint same
        cdef Py_ssize_t ob = <Py_ssize_t>old * self.slot_width, nb
        self._kernel_apply(k, node, -1)
        core._fit_pod(spec)
        if self.quotas:
            # engine._replace: deleted, then scheduled with its namespace's quota
            self._quota_apply(k, -1)
            self._quota_gate(t, spec)
        core._attempt(&spec.p, self.next_start, self.wanted, True, self.t_node_spread[t],
                      False, False)
        self.next_start = core.next_start
        if core.best >= 0:
            nn = <int>core.window[core.best]
            if core.placed != nn:
                if core._place_c(spec, nn) != ST_FIT:
                    raise AssertionError("kernel: chosen node no longer fits")
            ts = self.slot[k] = self._new_slot()
            self._take_picks(k, nn, spec.n_cont, self.t_n_init[t])
            same = nn == node and self.slot_n[ts] == self.slot_n[old]
            nb = <Py_ssize_t>ts * self.slot_width
            i = 0
            while same and i < self.slot_n[ts]:
                same = False
                for j in range(self.slot_n[old]):
                    if self.slot_rows[nb + i] == self.slot_rows[ob + j]:
                        same = True
                        break
                i += 1
            if not same:
                self._kernel_apply(k, nn, 1)
                self.slot[k] = old
                if self.quotas:
                    self._quota_apply(k, 1)     # the same request on either node
                self.trial_node = nn
                return ts
            self._free_slot(ts)
            self.slot[k] = old
        self._kernel_apply(k, node, 1)
        if self.quotas:
            self._quota_apply(k, 1)
        self.next_start = start
        return -1

    cdef inline void _free_slot(self, int sl):
        # the slot's objects dropped and the slot back among the free ones
        self.slot_devices[sl] = None
        self.slot_mig[sl] = None
        self.slot_mig_after[sl] = None
        self.free_slots[self.n_free] = sl
        self.n_free += 1

    cdef inline int _new_slot(self) except -1:
        # a free slot (the slot arrays grow when none is left)
        cdef int sl
        if self.n_free == 0:
            self._grow_slots()
        self.n_free -= 1
        sl = self.free_slots[self.n_free]
        self.def_n[2 * sl] = self.def_n[2 * sl + 1] = 0    # no deficit unless _take_picks
        return sl

    cdef int _defrag_undo(self, int k, int ts, int start) except -1:
        # engine._restore: the pod back on its own cards, the trial's slot freed
        cdef int old = self.slot[k]
        self.slot[k] = ts
        self._kernel_apply(k, self.trial_node, -1)
        self.slot[k] = old
        self._kernel_apply(k, self.node[k], 1)
        self._free_slot(ts)
        self.next_start = start
        return 0

    cdef int _defrag_gain(self, int k, int ts) noexcept:
        # engine._emptied: cards left with no tenant by the move, minus cards it
        # takes that had none (the meter's slots, untouched by the trials)
        cdef int old = self.slot[k], i, j, freed = 0, taken = 0
        cdef Py_ssize_t ob = <Py_ssize_t>old * self.slot_width
        cdef Py_ssize_t nb = <Py_ssize_t>ts * self.slot_width
        cdef int64_t r, mine
        cdef bint kept
        cdef int64_t[::1] used = self.meter.used
        for i in range(self.slot_n[old]):
            r = self.slot_rows[ob + i]
            kept = False
            for j in range(self.slot_n[ts]):
                if self.slot_rows[nb + j] == r:
                    kept = True
                    break
            if used[r] == self.slot_used[ob + i] and not kept:
                freed += 1
        for j in range(self.slot_n[ts]):
            r = self.slot_rows[nb + j]
            mine = 0
            for i in range(self.slot_n[old]):
                if self.slot_rows[ob + i] == r:
                    mine = self.slot_used[ob + i]
                    break
            if used[r] - mine == 0:
                taken += 1
        return freed - taken

    cdef bint _defrag_move(self) except -1:
        # engine._defrag_move: the best single move (most cards emptied, on ties
        # the first pod by name), made and recorded, if it empties a card
        cdef int best = -1, best_gain = 0, gain, k, ts, start, old, node
        cdef Py_ssize_t i
        for i in range(self.n_pods):
            k = <int>self.by_name[i]
            if not self._movable(k):
                continue
            start = self.next_start
            ts = self._defrag_replace(k)
            if ts < 0:
                continue
            gain = self._defrag_gain(k, ts)
            self._defrag_undo(k, ts, start)
            if gain > best_gain:
                best, best_gain = k, gain
        if best < 0:
            return False
        k = best
        ts = self._defrag_replace(k)
        if ts < 0:
            raise AssertionError("defragmenter: the best move no longer moves")
        old, node = self.slot[k], self.node[k]
        message = (f"defragmenter (a hamisim what-if): from {self.node_names[node]} "
                   f"{self.slot_devices[old]}")
        self._meter_apply(k, node, -1)
        self._kube_gone(k)
        self._free_slot(old)
        self.slot[k] = ts
        self.node[k] = self.trial_node
        self._meter_apply(k, self.trial_node, 1)
        self._kube_bound(k, self.trial_node)     # it starts anew there
        self.n_defrag_moves += 1
        self._event(E_MOVE, k, self.trial_node, self.slot_devices[ts], message)
        self._changed(EV_ASSIGNED_DELETE)
        self._changed(EV_ASSIGNED_ADD)
        return True

    # -- kube-scheduler's queue (engine._unschedulable ... engine._leftover) ------
    cdef int _unschedulable(self, int k, int rejectors, object message,
                            bint renominated=False) except -1:
        cdef double now = self.now, when
        cdef bint written
        self.timestamp[k] = now
        # kube-scheduler writes the PodScheduled condition only when it changes
        written = message != self.message[k] or renominated
        self.message[k] = message
        if not rejectors:
            self._to_backoff(k)
            return 0
        self._set_status(k, S_UNSCHEDULABLE)
        self.gen[k] += 1
        if rejectors & REJ_EXTENDER:
            self._u_add(k, U_EXTENDER)
        elif rejectors & REJ_FIT:
            self._u_add(k, U_FIT)
        # hamisim.kube.queue.leftover_flush_time
        when = (floor((now + self.flush_after) / self.leftover_period) + 1.0) * self.leftover_period
        self._flush_later(k, _delay_to(now, when))
        if written and self.hints and rejectors & REJ_EXTENDER:
            self._move(k)       # its own status update
        return 0

    cdef int _changed(self, int event) except -1:
        cdef int k, nxt, gen
        self.changes += 1
        self.stale = self.n_pending - self.n_uncreated
        if self.lapsed:
            # backoff pods whose retry lapsed while nothing could change
            # (engine._changed): the defragmenter changed something since
            for k, gen in self.lapsed:
                if self.gen[k] == gen and self.status[k] == S_BACKOFF:
                    self._enqueue(k)
                    self.pass_wanted = True
            self.lapsed = []
        # hamisim.kube.queue.moved_by
        if self.u_count[U_EXTENDER] and (event == EV_ASSIGNED_DELETE or self.hints):
            k = self.u_head[U_EXTENDER]
            while k >= 0:
                nxt = self.u_next[k]
                self._move(k)
                k = nxt
        if self.u_count[U_FIT] and event == EV_ASSIGNED_DELETE:
            k = self.u_head[U_FIT]
            while k >= 0:
                nxt = self.u_next[k]
                self._move(k)
                k = nxt
        return 0

    cdef inline double _backoff_end(self, int k) noexcept:
        return self.timestamp[k] + _backoff_duration(self.attempts[k], self.backoff_initial,
                                                     self.backoff_max)

    cdef int _move(self, int k) except -1:
        self._u_remove(k)
        if self._backoff_end(k) <= self.now:
            self._enqueue(k)
            self.pass_wanted = True
        else:
            self._to_backoff(k)
        return 0

    cdef int _to_backoff(self, int k) except -1:
        cdef double when
        self._set_status(k, S_BACKOFF)
        self.gen[k] += 1
        # hamisim.kube.queue.backoff_flush_time
        when = ceil(self._backoff_end(k) / self.backoff_period) * self.backoff_period
        self._schedule(_delay_to(self.now, when), P_ARRIVE, T_RETRY, k, self.gen[k])
        return 0

    cdef inline bint _over(self) noexcept:
        return self.feeder_done and self.live == 0 and self.stale == 0 and self.ctl_timers == 0

    cdef int _retry(self, int k, int gen) except -1:
        if self.gen[k] == gen and self.status[k] == S_BACKOFF:
            if not self._over():
                self._enqueue(k)
                self.pass_wanted = True
            elif self.defrag_interval > 0:
                self.lapsed.append((k, gen))    # until the defragmenter moves a pod
        return 0

    cdef int _leftover(self, int k, int gen) except -1:
        if self.gen[k] == gen and self.status[k] == S_UNSCHEDULABLE and not self._over():
            self._move(k)
        return 0

    # -- kube-scheduler: nominations and DefaultPreemption (hamisim.kube.scheduler,
    # hamisim.kube.preemption; engine._attempt carries out the outcome) -----------
    cdef int64_t _offset(self, int64_t n) except -1:
        # DefaultPreemption's random offset among n potential nodes
        # (rand.Intn(n) in kube-scheduler; the run's own offset stream)
        if self.offset_bitgen != NULL:
            return _bounded_draw(self.offset_bitgen, n)
        return <int64_t>self.draw_offset(n)

    cdef int _init_kube(self, Py_ssize_t n, priority, bint preemption, t_never, draw_offset,
                        preempt_message, victim_message) except -1:
        cdef int n_nodes = self.core.table.n_nodes
        self.preemption = preemption
        self.t_never = np.zeros(len(self.t_spec), dtype=np.uint8) if t_never is None \
            else np.ascontiguousarray(t_never, dtype=np.uint8)
        self.draw_offset = draw_offset
        self.offset_bitgen = NULL
        if isinstance(draw_offset, np.random.Generator):
            # the dry run's offsets drawn in C, as draw_offset.integers(n) draws
            self.offset_rng = draw_offset
            self.offset_bitgen = <bitgen_t*>PyCapsule_GetPointer(
                draw_offset.bit_generator.capsule, "BitGenerator")
        self.preempt_message = preempt_message
        self.victim_message = victim_message
        levels, rank = np.unique(np.asarray(priority, dtype=np.int64), return_inverse=True)
        self.prio_rank = np.ascontiguousarray(rank, dtype=np.int32)
        self.n_ranks = len(levels)
        self.rank_count = np.zeros(max(self.n_ranks, 1), dtype=np.int64)
        self.low_rank = self.n_ranks
        self.node_rank_cnt = np.zeros((max(n_nodes, 1), max(self.n_ranks, 1)), dtype=np.int32)
        self.bind_seq = np.zeros(n, dtype=np.int64)
        self.kube_start = np.zeros(n)
        self.bind_counter = 0
        self.terminating = np.zeros(n, dtype=np.uint8)
        self.on_prev = np.full(n, -1, dtype=np.int32)
        self.on_next = np.full(n, -1, dtype=np.int32)
        self.on_head = np.full(max(n_nodes, 1), -1, dtype=np.int32)
        self.on_tail = np.full(max(n_nodes, 1), -1, dtype=np.int32)
        self.nom_node = np.full(n, -1, dtype=np.int32)
        self.nom_prev = np.full(n, -1, dtype=np.int32)
        self.nom_next = np.full(n, -1, dtype=np.int32)
        self.nom_head = self.nom_tail = -1
        self.n_nom = 0
        self.preemptor = np.full(n, -1, dtype=np.int32)
        self.n_preempted = 0
        self.pf_mark = np.zeros(max(n_nodes, 1), dtype=np.uint8)
        self.pf_cpu = np.zeros(max(n_nodes, 1), dtype=np.int64)
        self.pf_mem = np.zeros(max(n_nodes, 1), dtype=np.int64)
        self.pf_nodes = np.zeros(max(n_nodes, 1), dtype=np.int32)
        self.pf_errs = np.zeros(max(n_nodes, 1), dtype=np.int32)
        self.pf_errpos = np.zeros(max(n_nodes, 1), dtype=np.int32)
        self.pf_start = self.pf_npot = 0
        self.pf_drawn = -1
        self.pf_cleared = np.zeros(max(n, 1), dtype=np.int32)
        self.n_best = self.n_cleared = self.pf_n_errors = 0
        self.pf_node = -1
        return 0

    cdef int _kube_bound(self, int k, int node) except -1:
        # KubeScheduler.bound: the pod runs on `node` (its nomination ends)
        cdef int r = self.prio_rank[k], tail = self.on_tail[node]
        self._unnominate(k)
        self.bind_counter += 1
        self.bind_seq[k] = self.bind_counter
        self.kube_start[k] = self.now
        self.on_prev[k] = tail
        self.on_next[k] = -1
        if tail >= 0:
            self.on_next[tail] = k
        else:
            self.on_head[node] = k
        self.on_tail[node] = k
        self.rank_count[r] += 1
        self.node_rank_cnt[node, r] += 1
        if r < self.low_rank:
            self.low_rank = r
        return 0

    cdef int _kube_gone(self, int k) except -1:
        # KubeScheduler.gone: the pod left (running or terminating) or was
        # abandoned (pending)
        cdef int node, p, q, r
        self._unnominate(k)
        if self.status[k] != S_RUNNING and self.status[k] != S_TERMINATING:
            return 0
        node = self.node[k]
        p = self.on_prev[k]
        q = self.on_next[k]
        if p >= 0:
            self.on_next[p] = q
        else:
            self.on_head[node] = q
        if q >= 0:
            self.on_prev[q] = p
        else:
            self.on_tail[node] = p
        self.on_prev[k] = self.on_next[k] = -1
        self.terminating[k] = 0
        r = self.prio_rank[k]
        self.rank_count[r] -= 1
        self.node_rank_cnt[node, r] -= 1
        if r == self.low_rank and self.rank_count[r] == 0:
            while self.low_rank < self.n_ranks and self.rank_count[self.low_rank] == 0:
                self.low_rank += 1
        return 0

    cdef inline void _nominate(self, int k, int node) noexcept:
        # kube-scheduler's nominator map: a pod nominated again keeps its place
        if self.nom_node[k] < 0:
            self.nom_prev[k] = self.nom_tail
            self.nom_next[k] = -1
            if self.nom_tail >= 0:
                self.nom_next[self.nom_tail] = k
            else:
                self.nom_head = k
            self.nom_tail = k
            self.n_nom += 1
        if self.nom_node[k] != node:
            self.nom_ver += 1
        self.nom_node[k] = node

    cdef inline void _unnominate(self, int k) noexcept:
        cdef int p, q
        if self.nom_node[k] < 0:
            return
        p = self.nom_prev[k]
        q = self.nom_next[k]
        if p >= 0:
            self.nom_next[p] = q
        else:
            self.nom_head = q
        if q >= 0:
            self.nom_prev[q] = p
        else:
            self.nom_tail = p
        self.nom_prev[k] = self.nom_next[k] = -1
        self.nom_node[k] = -1
        self.n_nom -= 1
        self.nom_ver += 1

    cdef int _nominated_load(self, int k, int sign) noexcept:
        # KubeScheduler._nominated_load into the kernel's requested CPU/memory
        # (KernelScheduler.schedule's `nominated=`): the pods nominated to a node
        # with at least `k`'s priority, `k` excluded. Returns how many. The
        # load goes on the index's leaves alone and comes off the same way,
        # unless some node was refreshed meanwhile (Core._nominate_c).
        cdef int j = self.nom_head, applied = 0, t
        cdef int32_t p = self.priority[k]
        cdef bint propagate = sign < 0 and self.core.n_refresh != self.nom_refresh
        if sign > 0:
            self.nom_refresh = self.core.n_refresh
        while j >= 0:
            if j != k and self.priority[j] >= p:
                t = self.tmpl[j]
                self.core._nominate_c(self.nom_node[j], self.t_cpu[t], self.t_mem[t], sign,
                                      propagate)
                applied += 1
            j = self.nom_next[j]
        return applied

    cdef int _schedule_kube(self, int k, double draw) except -3:
        # KubeScheduler.schedule: a nominated pod tries its node alone first;
        # nominated pods' CPU/memory count for kube-scheduler's filter meanwhile
        cdef int node, loaded
        cdef int64_t saved
        if self.n_nom == 0:
            return self._decide(k, draw)
        saved = self.core.ver_all
        loaded = self._nominated_load(k, 1)
        node = -3
        try:
            if self.nom_node[k] >= 0 and self.t_kind[self.tmpl[k]] == TK_OK and \
                    self._decide_only(k, self.nom_node[k]):
                node = self.nom_node[k]
            else:
                node = self._decide(k, draw)
            return node
        finally:
            if loaded:
                self._nominated_load(k, -1)
                if node < 0:
                    # the nominated pods' load came and went: no node changed
                    # (the shortcut of repeated failures keys on ver_all)
                    self.core.ver_all = saved

    cdef bint _decide_only(self, int k, int node) except -1:
        # KernelScheduler._only: kube-scheduler's filters and HAMi on `node`;
        # on success the pod holds its cards there
        cdef int t = self.tmpl[k]
        cdef PodSpec spec = <PodSpec>self.t_spec[t]
        cdef Core core = self.core
        cdef const Cards* c = &core.table.c
        if spec.p.gate != NULL and spec.p.gate[node] != 0:
            return False
        if _fit_bits(self.t_cpu[t], self.t_mem[t], c.alloc_cpu[node], c.alloc_mem[node],
                     c.req_cpu[node], c.req_mem[node]):
            return False
        if self.t_wants_gpu[t]:
            core._fit_pod(spec)
            if self.quotas:
                self._quota_gate(t, spec)       # as KernelScheduler._schedule before _only
            if core._place_c(spec, node) != ST_FIT:
                return False
        self._hold(k, node)
        return True

    cdef int _vic_room(self, Py_ssize_t need) except -1:
        cdef Py_ssize_t cap = self.vic_cap
        cdef VItem* a
        cdef VItem* b
        if need <= cap:
            return 0
        while cap < need:
            cap = max(2 * cap, 64)
        a = <VItem*>realloc(self.vic_cur, cap * sizeof(VItem))
        if a == NULL:
            raise MemoryError()
        self.vic_cur = a
        b = <VItem*>realloc(self.vic_best, cap * sizeof(VItem))
        if b == NULL:
            raise MemoryError()
        self.vic_best = b
        self.vic_cap = cap
        return 0

    cdef int _post_filter(self, int k) except -1:
        # KubeScheduler._post_filter and hamisim.kube.preemption.preempt, on the
        # kernel's buffers of the failed attempt; applies the nominations and
        # leaves the victims (vic_best[:n_best]) for _preempt_victims
        cdef int t = self.tmpl[k], nominated = self.nom_node[k], i, j, v, n_pot = 0
        cdef int n_nodes = self.core.table.n_nodes, start, wanted, n_lower, nv, n_cand
        cdef int32_t p = self.priority[k]
        cdef int64_t pcpu = self.t_cpu[t], pmem = self.t_mem[t], sum_cpu, sum_mem
        cdef int64_t base_cpu, base_mem, top, best_top = 0, psum, best_sum = 0
        cdef double earliest, best_earliest = 0.0
        cdef bint any_lower, better
        cdef int bits
        cdef Core core = self.core
        cdef const Cards* c = &core.table.c
        cdef VItem* tmp
        cdef const int64_t* nver = core.node_ver
        cdef int64_t* mver = NULL
        cdef int8_t* mcode = NULL
        cdef bint use_memo
        cdef int code
        self.n_best = self.n_cleared = self.pf_n_errors = 0
        self.pf_drawn = -1
        if self.t_never[t]:
            return PF_UNIFORM               # the first check: nothing else is read
        if nominated < 0 and self.low_rank >= self.prio_rank[k]:
            return PF_UNIFORM               # nobody to preempt anywhere
        # the nodes' statuses: 1 Unschedulable (potential), 2 ...AndUnresolvable
        for j in range(core.n_rejected):
            self.pf_mark[core.rej_node[j]] = 2 if core.rej_bits[j] >> 2 else 1
        for j in range(core.n_window):
            self.pf_mark[core.window[j]] = 1
        if nominated >= 0 and self.pf_mark[nominated] != 2:
            v = self.on_head[nominated]
            while v >= 0:
                if self.terminating[v] and self.priority[v] < p:
                    for j in range(n_nodes):
                        self.pf_mark[j] = 0
                    return PF_TERMINATING
                v = self.on_next[v]
        any_lower = False
        for i in range(n_nodes):
            if self.pf_mark[i] == 1:
                self.pf_nodes[n_pot] = i
                n_pot += 1
                if not any_lower and self.low_rank < self.prio_rank[k]:
                    # a pod of lower priority runs there: the per-node counts by
                    # priority rank (ranks order as priorities do)
                    for v in range(self.low_rank, self.prio_rank[k]):
                        if self.node_rank_cnt[i, v]:
                            any_lower = True
                            break
            self.pf_mark[i] = 0
        if n_pot == 0:
            self._unnominate(k)
            return PF_NOT_HELPFUL
        start = <int>self._offset(n_pot) if any_lower else 0
        self.pf_start, self.pf_npot = start, n_pot
        self.pf_drawn = n_pot if any_lower else -1
        # calculateNumCandidates
        wanted = n_pot * 10 // 100
        if wanted < 100:
            wanted = 100
        if wanted > n_pot:
            wanted = n_pot
        # the CPU/memory of the pods nominated to each node that count for `k`
        j = self.nom_head
        while j >= 0:
            if j != k and self.priority[j] >= p:
                self.pf_cpu[self.nom_node[j]] += self.t_cpu[self.tmpl[j]]
                self.pf_mem[self.nom_node[j]] += self.t_mem[self.tmpl[j]]
            j = self.nom_next[j]
        self.pf_n_cpu = self.pf_n_mem = self.pf_n_novict = self.pf_n_dry = 0
        n_cand = 0
        # the dry run's memo (nodes unchanged since this template's last dry run
        # at this priority under these nominations: their verdict again)
        use_memo = nominated < 0 and self._pf_memo_for(t, p)
        if use_memo:
            mver = self.pf_mver[t]
            mcode = self.pf_mcode[t]
        for j in range(n_pot):
            i = self.pf_nodes[(start + j) % n_pot]
            if use_memo and mver[i] == nver[i]:
                code = mcode[i]
                if code == PFM_NOVICT:
                    self.pf_n_novict += 1
                    self.pf_n_dry += 1
                    continue
                if code == PFM_ERROR:
                    self.pf_errs[self.pf_n_errors] = i
                    self.pf_errpos[self.pf_n_errors] = (start + j) % n_pot
                    self.pf_n_errors += 1
                    continue
                if code >= PFM_BITS:
                    bits = code - PFM_BITS
                    self.pf_n_cpu += bits & 1
                    self.pf_n_mem += bits >> 1
                    self.pf_n_dry += 1
                    continue
            if use_memo:
                mver[i] = nver[i]
                mcode[i] = PFM_NONE
            # SelectVictimsOnNode: every pod of lower priority removed
            n_lower = 0
            sum_cpu = sum_mem = 0
            v = self.on_head[i]
            while v >= 0:
                if self.priority[v] < p:
                    self._vic_room(n_lower + 1)
                    self.vic_cur[n_lower].neg_priority = -<int64_t>self.priority[v]
                    self.vic_cur[n_lower].start = floor(self.kube_start[v])
                    self.vic_cur[n_lower].seq = self.bind_seq[v]
                    self.vic_cur[n_lower].pod = v
                    n_lower += 1
                    sum_cpu += self.t_cpu[self.tmpl[v]]
                    sum_mem += self.t_mem[self.tmpl[v]]
                v = self.on_next[v]
            if n_lower == 0:
                if use_memo:
                    mcode[i] = PFM_NOVICT
                self.pf_n_novict += 1
                self.pf_n_dry += 1
                continue
            base_cpu = c.req_cpu[i] + self.pf_cpu[i]
            base_mem = c.req_mem[i] + self.pf_mem[i]
            bits = _fit_bits(pcpu, pmem, c.alloc_cpu[i], c.alloc_mem[i],
                             base_cpu - sum_cpu, base_mem - sum_mem)
            if bits:
                if use_memo:
                    mcode[i] = PFM_BITS + bits
                self.pf_n_cpu += bits & 1
                self.pf_n_mem += bits >> 1
                self.pf_n_dry += 1
                continue
            # reprieve, most important first; who must go stays removed
            qsort(self.vic_cur, n_lower, sizeof(VItem), _vitem_cmp)
            nv = 0
            for v in range(n_lower):
                sum_cpu -= self.t_cpu[self.tmpl[self.vic_cur[v].pod]]
                sum_mem -= self.t_mem[self.tmpl[self.vic_cur[v].pod]]
                if _fit_bits(pcpu, pmem, c.alloc_cpu[i], c.alloc_mem[i],
                             base_cpu - sum_cpu, base_mem - sum_mem):
                    sum_cpu += self.t_cpu[self.tmpl[self.vic_cur[v].pod]]
                    sum_mem += self.t_mem[self.tmpl[self.vic_cur[v].pod]]
                    self.vic_cur[nv] = self.vic_cur[v]
                    nv += 1
            if nv == 0:
                # "expected at least one victim pod": kept by node, after the loop
                if use_memo:
                    mcode[i] = PFM_ERROR
                self.pf_errs[self.pf_n_errors] = i
                self.pf_errpos[self.pf_n_errors] = (start + j) % n_pot
                self.pf_n_errors += 1
                continue
            # pickOneNodeForPreemption, one candidate at a time (ties: the first)
            top = -self.vic_cur[0].neg_priority
            psum = 0
            earliest = INFINITY
            for v in range(nv):
                psum += -self.vic_cur[v].neg_priority + 2147483648
                if -self.vic_cur[v].neg_priority == top and self.vic_cur[v].start < earliest:
                    earliest = self.vic_cur[v].start
            if n_cand == 0:
                better = True
            elif top != best_top:
                better = top < best_top
            elif psum != best_sum:
                better = psum < best_sum
            elif nv != self.n_best:
                better = nv < self.n_best
            else:
                better = earliest > best_earliest
            if better:
                tmp = self.vic_best
                self.vic_best = self.vic_cur
                self.vic_cur = tmp
                self.n_best = nv
                self.pf_node = i
                best_top, best_sum, best_earliest = top, psum, earliest
            n_cand += 1
            if n_cand >= wanted:
                break
        j = self.nom_head
        while j >= 0:
            self.pf_cpu[self.nom_node[j]] = 0
            self.pf_mem[self.nom_node[j]] = 0
            j = self.nom_next[j]
        if n_cand == 0:
            self.n_best = 0
            if self.pf_n_errors:
                return PF_ERRORS            # the nomination stays
            self._unnominate(k)
            return PF_HIST
        # lower-priority pods nominated to the node lose it; `k` is nominated
        j = self.nom_head
        while j >= 0:
            v = self.nom_next[j]
            if self.nom_node[j] == self.pf_node and self.priority[j] < p:
                self.pf_cleared[self.n_cleared] = j
                self.n_cleared += 1
                self._unnominate(j)
            j = v
        self._nominate(k, self.pf_node)
        return PF_NOMINATED

    cdef bint _pf_memo_for(self, int t, int32_t p) except -1:
        # Template t's memo of per-node dry-run verdicts, made valid for
        # priority p and the nominations now (PodSpec's memo of Fit outcomes
        # does the same for HAMi's filter): a node's verdict follows from its
        # pods, their priorities and requests, its CPU/memory (all counted in
        # node_ver), the nominated pods' load there (nom_ver) and the pod's
        # priority and request. A candidate's victims are never remembered.
        cdef Py_ssize_t n = max(self.core.table.n_nodes, 1), i
        cdef int64_t* mver = self.pf_mver[t]
        if mver == NULL:
            if self.pf_memo_bytes + 9 * n > PF_MEMO_BUDGET:
                return False
            mver = <int64_t*>malloc(n * sizeof(int64_t))
            self.pf_mcode[t] = <int8_t*>calloc(n, sizeof(int8_t))
            if mver == NULL or self.pf_mcode[t] == NULL:
                free(mver)
                raise MemoryError()
            self.pf_mver[t] = mver
            self.pf_memo_bytes += 9 * n
            self.pf_mnom[t] = -1
        if self.pf_mnom[t] != self.nom_ver or self.pf_mprio[t] != p:
            for i in range(n):
                mver[i] = -1
            self.pf_mnom[t] = self.nom_ver
            self.pf_mprio[t] = p
        return True

    cdef object _post_filter_message(self, int k, int pf):
        # the FailedScheduling text when DefaultPreemption's verdict is not the
        # uniform one (compiled._preempt_message formats it; it reads the
        # reason histogram, whose remembered rows must be written out first).
        # FailText builds it where PostFilter's part does not name nodes: a
        # saturated cluster with priorities fails this way on most attempts
        errors = None
        if self.ftext is not None and self.preempt_postfix is not None:
            if pf == PF_HIST:
                key = (self.pf_n_cpu, self.pf_n_mem, self.pf_n_novict, self.pf_n_dry)
            elif pf == PF_ERRORS:
                # the nodes where the dry run found no victim (the saturated
                # case with priorities: the pod fits kube's filters, HAMi said
                # no): the same nodes give the same text, kept for the next
                # attempts (a bounded cache: a text is ~50 bytes per node)
                key = PyBytes_FromStringAndSize(<char*>&self.pf_errs[0],
                                                self.pf_n_errors * sizeof(int32_t))
                if len(self.pf_post) >= PF_POST_CAP:
                    self.pf_post.clear()
            else:
                key = pf
            post = self.pf_post.get(key)
            if post is None:
                if pf == PF_ERRORS:
                    errors = [self.pf_errs[j] for j in range(self.pf_n_errors)]
                post = self.preempt_postfix(pf, self.pf_n_cpu, self.pf_n_mem,
                                            self.pf_n_novict, self.pf_n_dry, errors)
                if post is not None:
                    post = self.pf_post[key] = post.encode("utf-8")
            if post is not None:
                message = self.ftext.text_with(self.tmpl[k], post)
                if message is not None:
                    return message
        self.core._fill_counts()
        if pf == PF_ERRORS:
            errors = [self.pf_errs[j] for j in range(self.pf_n_errors)]
        return self.preempt_message(self.tmpl[k], pf, self.pf_n_cpu, self.pf_n_mem,
                                    self.pf_n_novict, self.pf_n_dry, errors)

    cdef int _preempt_victims(self, int k) except -1:
        # engine._attempt after a nomination: the cleared pods' status update,
        # then the victims deleted, most important first (engine._preempt,
        # KubeScheduler.preempt_victim): a victim not being deleted is marked
        # terminating by preemption (the dry run's check reads the mark) and
        # deleted; one already terminating keeps its deadline, and only
        # kube-scheduler <= 1.34 calls it again: a repeated preempt row, and
        # if its own deletion was under way the mark, an assigned-pod update
        cdef int j, v, node = self.pf_node, n = self.n_best
        for j in range(self.n_cleared):
            v = self.pf_cleared[j]
            if self.hints and self.u_list[v] == U_EXTENDER:
                self._move(v)               # engine._own_update
        self.n_cleared = 0
        if n == 0:
            return 0
        message = self.victim_message(k, node)
        # vic_best is PostFilter scratch: copy the victims out before any call
        victims = [self.vic_best[j].pod for j in range(n)]
        self.n_best = 0
        for v in victims:
            if self.status[v] != S_TERMINATING:
                self.terminating[v] = 1
                self.preemptor[v] = k
                self._terminate(v, E_PREEMPT, message)
            elif self.recalls_deleting:
                self._event(E_PREEMPT, v, node, None, message)
                if not self.terminating[v]:
                    self.terminating[v] = 1
                    self._changed(EV_ASSIGNED_UPDATE)   # its DisruptionTarget condition
        return 0

    # -- the loop (SimPy's step, engine._on_timer, engine._settle) ------------------
    cdef int _settle(self) except -1:
        if not self.pass_wanted or self.pass_scheduled:
            return 0
        if self._peek() > self.now:
            self._pass()
        else:
            self.pass_scheduled = True
            self._schedule(0.0, P_PASS, T_PASS, -1, 0)
        return 0

    cdef int _dispatch(self, RTimer* t) except -1:
        if t.kind == T_ARRIVALS:
            self._arrivals()
        elif t.kind == T_PASS:
            self.pass_scheduled = False
            self._pass()
        else:
            if t.kind == T_DELETE:
                self.live -= 1
                self._delete(t.pod)
            elif t.kind == T_DELETION:
                self.live -= 1
                self._terminate(t.pod, E_TERMINATE, None)
            elif t.kind == T_INIT_DONE:
                self.live -= 1
                self._init_done(t.pod, t.gen)
            elif t.kind == T_DEFRAG:
                self._defrag_round()
            elif t.kind == T_FLUSH:
                self._flush_popped(t)
            elif t.kind == T_RESYNC:
                self.ctl_timers -= 1
                if self.ctl_next[t.pod] == t.time:     # else an earlier sync took its place
                    self.ctl_next[t.pod] = INFINITY
                    self._sync(t.pod)
            else:
                self._retry(t.pod, t.gen)
            self._settle()
        return 0

    @property
    def next_time(self):
        """Time of the next event (inf when none is left)."""
        return self._peek()

    def run(self, double horizon=INFINITY):
        """Process every event before ``horizon`` (all of them by default).
        Ctrl-C (any pending signal) stops it between two events."""
        cdef RTimer t
        cdef uint32_t steps = 0
        while self.n_timers and self.timers[0].time < horizon:
            t = self._pop_timer()
            self.now = t.time
            self._dispatch(&t)
            steps += 1
            if steps & 1023 == 0:
                PyErr_CheckSignals()

    def finish(self, bint final_sample=True):
        """After the last event: the final time-series row (when sampled and
        ``final_sample``; fill mode has none) and a row for every pod still
        pending or running, in arrival order (engine.result)."""
        cdef int k
        if self.sampled and final_sample:
            self._sample(True)
        for k in range(self.n_pods):
            if self.status[k] != S_GONE and self.status[k] != S_NEW:
                self._done(k, NAN)
            if self.status[k] == S_UNCREATED and self.t_qns[self.tmpl[k]] >= 0:
                self.q_ref[self.t_qns[self.tmpl[k]], R_WAITING] += 1
