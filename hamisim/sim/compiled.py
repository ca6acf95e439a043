"""The replay engine, compiled: :class:`hamisim._replay.ReplayCore` driven by SimPy.

:mod:`hamisim.sim.engine` is the readable replay engine; this module runs the
same replay with its event loop and bookkeeping compiled, for long traces
(a Python callback per pod event costs tens of microseconds, several times the
scheduling decision itself). The two are twins in the way the kernel and the
reference scheduler are: same events in the same order at the same times,
same pods table, time series, summary and figures, checked on random clusters
and traces by ``tests/test_compiled_engine.py``. The Python engine stays the
specification and the path for everything the compiled one does not cover
(:func:`unsupported`): the reference backend (per-candidate Python policies
and Python card policies with it, and a user's ``ModelPolicy``), ``--check``,
workloads that are not a :class:`Trace`. ResourceQuota, vectorised Python
node policies and the FGD paper's six research node policies (ResearchCore
deciding in C; their seeded draws drawn in C from the research scheduler's own
generator) run here, and so does the pod lifecycle: an initial state (the core's first pods, adopted
before the run), deletions within a termination grace period, init
containers that finish, the what-if mutex-reserve and periodic defragmenter
(in C: rounds are rare, but a round tries every running pod); and priorities
with DefaultPreemption, victims with a grace period included. Fill mode runs
as the replay it is (pod *k* arrives at *k* s and gets one attempt).

How it runs: the trace's columns are put in arrival order, each distinct pod
request (the trace's templates) is admitted and encoded once by the kernel
scheduler, and :class:`~hamisim._replay.ReplayCore` keeps the engine's timers
in a heap ordered as SimPy orders events (time, priority, insertion). SimPy
remains the clock: one SimPy process runs the core up to the next event of any
other process in the environment, so other processes can be added to a run;
alone, the core runs from start to end in one step. What stays in Python is
per batch (rows handed to the sink), per new reason text of a failure (the
message itself is built in C by :class:`hamisim._failtext.FailText` where nobody
could be preempted), per block (random tie-break draws) and per DefaultPreemption
dry run that can find victims (its random offset and its FailedScheduling text;
the dry run itself, the nominations and the victims' deletion are compiled).
"""
from __future__ import annotations

import math
from time import perf_counter
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import simpy

from hamisim import _failtext, _replay, _research
from hamisim.cluster import Cluster
from hamisim.devices import FAMILIES
from hamisim.sim.families import set_families
from hamisim.errors import HamisimError
from hamisim.hami.decision import encode_mig_allocations
from hamisim.hami.decision import devices_annotation, mig_allocations_annotation
from hamisim.hami.policy import filter_error
from hamisim.hami.quota import QUOTA_DENIED, webhook_request
from hamisim.kube.filters import kube_minor
from hamisim.kube.fit import INSUFFICIENT_CPU, INSUFFICIENT_MEMORY
from hamisim.kube.fiterror import histogram_message
from hamisim.kube.preemption import NO_VICTIMS, NOT_HELPFUL, TERMINATING, aggregate_errors, \
    no_victim_error
from hamisim.kube.queue import queueing_hints
from hamisim.kube.scheduler import (
    NO_CLAIMS,
    full_message,
    recalls_deleting,
    uniform_postfix,
)
from hamisim.pods import Container, Pod, admission_error
from hamisim.registry import is_plugin_policy, is_research_policy
from hamisim.kube.controllers import controller_kind, refusal_rows
from hamisim.research.model import P_FGD, pod_class, reasons_of, research_request
from hamisim.research.plugins import runs_compiled
from hamisim.sim.backend import make_scheduler
from hamisim.shapes import Shape, gpu_request, request_class
from hamisim.sim.config import EngineConfig, progress_bar, quiet_gc
from hamisim.sim.kernel import KernelScheduler, _limit
from hamisim.sim.metrics import ClusterMeter
from hamisim.sim.placement import MigMeter, PlacementMeter
from hamisim.sim.recorder import (
    BATCH_ROWS,
    INITIAL_STATE_CLASS,
    INITIAL_STATE_MESSAGE,
    Recorder,
    TableSink,
)
from hamisim.sim.result import RunCounts, SimResult, assemble_result
from hamisim.workload import Trace

__all__ = ["unsupported", "simulate_compiled"]

assert BATCH_ROWS == 65536, "hamisim._replay.ReplayCore batches 65,536 rows"
assert tuple(_research.RESEARCH_REASONS) == tuple(reasons_of(15)), \
    "hamisim._research research reasons out of date"

# ReplayCore's template kinds
_TK_OK, _TK_ADMISSION, _TK_FILTER_ERROR = 0, 1, 2


def unsupported(cluster: Cluster, config: EngineConfig, workload, initial: Sequence) -> str | None:
    """Why the compiled engine cannot run this (``None`` when it can): the
    reference backend, ``--check``, a workload that is not a :class:`Trace`, a
    Python node policy that is not vectorised (a user's ``ModelPolicy`` on the
    research model included), a Python card policy. The six research node
    policies run compiled (ResearchCore inside ReplayCore)."""
    if config.backend != "kernel":
        return f"the {config.backend} backend"
    if config.check:
        return "--check"
    if not isinstance(workload, Trace):
        return "a workload that is not a Trace"
    if is_plugin_policy(cluster.scheduler.node_scheduler_policy) and not runs_compiled(
            cluster.scheduler.node_scheduler_policy, None):
        return f"the Python node policy {cluster.scheduler.node_scheduler_policy} " \
               "(a vectorised one runs compiled)"
    if is_plugin_policy(cluster.scheduler.gpu_scheduler_policy):
        return f"the Python card policy {cluster.scheduler.gpu_scheduler_policy}"
    return None


def _class_codes(trace: Trace, order: np.ndarray, rec: Recorder) -> np.ndarray:
    """Per pod in arrival order, its class code in ``rec``: the trace's label when
    it has one, else :func:`request_class` of its template; codes made in order of
    first arrival, as the engine makes them."""
    labels: list[str] = []
    index: dict[str, int] = {}

    def uid(label: str) -> int:
        if label not in index:
            index[label] = len(labels)
            labels.append(label)
        return index[label]

    tmpl_uid = np.array([uid(request_class(t)) for t in trace.templates], dtype=np.int64)
    trace_uid = np.array([uid(x) if x else -1 for x in trace.class_labels], dtype=np.int64)
    tmpl = trace.template[order]
    per_pod = tmpl_uid[tmpl] if len(tmpl_uid) else np.zeros(len(order), dtype=np.int64)
    own = trace.pod_class[order]
    if len(trace_uid):
        mapped = np.where(own >= 0, trace_uid[np.maximum(own, 0)], -1)
        per_pod = np.where(mapped >= 0, mapped, per_pod)
    code = np.full(len(labels), -1, dtype=np.int32)
    if len(per_pod):
        seen, first = np.unique(per_pod, return_index=True)
        for u in seen[np.argsort(first)].tolist():
            code[u] = rec.class_code(labels[u])
    return code[per_pod] if len(per_pod) else np.zeros(0, dtype=np.int32)


def _templates(sched: KernelScheduler, trace: Trace, replay: bool,
               initial: Sequence = ()) -> dict:
    """The per-template columns ReplayCore takes (encoded once per distinct request),
    then one template per initial pod (its CPU and memory; it is never attempted)."""
    cols: dict[str, list] = {k: [] for k in (
        "t_spec", "t_kind", "t_wants_gpu", "t_node_spread", "t_n_init", "t_cpu",
        "t_mem", "t_gpu", "t_grace", "t_init_after", "t_reserve")}
    for pod in trace.templates:
        reserve = False
        try:
            shape = sched.encode(pod)
        except ValueError:              # refused at admission: no attempt is made
            spec, kind, wants, spread, n_init = None, _TK_ADMISSION, 0, 0, 0
        else:
            spec = shape.spec
            kind = _TK_OK if shape.filter_error is None else _TK_FILTER_ERROR
            wants, spread, n_init = shape.wants_gpu, shape.node_spread, shape.n_init
            reserve = shape.reserve
        # engine._bind: init containers finish only in replay mode
        init_after = pod.init_duration if replay and pod.init_duration is not None \
            and pod.init_containers else math.nan
        for key, value in (("t_spec", spec), ("t_kind", kind),
                           ("t_wants_gpu", wants), ("t_node_spread", spread),
                           ("t_n_init", n_init), ("t_cpu", pod.cpu_milli),
                           ("t_mem", pod.memory_mib), ("t_gpu", gpu_request(pod)),
                           # fill mode: a victim terminates to the end (no clock)
                           ("t_grace", pod.termination_grace_period
                            if replay or not pod.termination_grace_period else math.inf),
                           ("t_init_after", init_after), ("t_reserve", reserve)):
            cols[key].append(value)
    for ip in initial:
        for key, value in (("t_spec", None), ("t_kind", _TK_OK), ("t_wants_gpu", 0),
                           ("t_node_spread", 0), ("t_n_init", ip.n_init),
                           ("t_cpu", ip.cpu_milli), ("t_mem", ip.memory_mib), ("t_gpu", 0.0),
                           ("t_grace", 0), ("t_init_after", math.nan), ("t_reserve", False)):
            cols[key].append(value)
    out: dict = {"t_spec": cols["t_spec"]}
    for key, dtype in (("t_kind", np.uint8), ("t_wants_gpu", np.uint8),
                       ("t_node_spread", np.uint8), ("t_n_init", np.int32),
                       ("t_cpu", np.int64), ("t_mem", np.int64), ("t_gpu", np.float64),
                       ("t_grace", np.float64), ("t_init_after", np.float64),
                       ("t_reserve", np.uint8)):
        out[key] = np.array(cols[key], dtype=dtype)
    return out


def _research_templates(rsched, trace: Trace, replay: bool, initial: Sequence = ()
                        ) -> tuple[dict, dict]:
    """ReplayCore's per-template columns for a research node policy (as
    :func:`_templates`, from :func:`hamisim.research.model.research_request`
    instead of HAMi's encoding: the Python engine asks HAMi's webhook first,
    ``_TK_FILTER_ERROR`` is a request the model cannot map, an error each
    attempt), and the arguments of :meth:`hamisim._research.ResearchCore.replay_setup`."""
    cols: dict[str, list] = {k: [] for k in (
        "t_kind", "t_wants_gpu", "t_n_init", "t_cpu", "t_mem", "t_gpu", "t_grace",
        "t_init_after")}
    rcols: dict[str, list] = {k: [] for k in (
        "t_cpu", "t_cpu_s", "t_mem", "t_k", "t_milli", "t_tok", "t_spec", "t_cls",
        "t_noreq", "t_n_init")}
    cc_off, cc = [0], []
    none_ok = np.zeros(rsched.core.n_types, dtype=np.uint8)
    pods = [(pod, True) for pod in trace.templates] + \
        [(Pod(ip.name, init_containers=(Container(),) * ip.n_init, cpu_milli=ip.cpu_milli,
              memory_mib=ip.memory_mib), False) for ip in initial]
    for pod, attempted in pods:
        req = None
        kind = _TK_OK
        if attempted and admission_error(pod):
            kind = _TK_ADMISSION
        elif attempted:
            try:
                req = research_request(pod, rsched.config)
            except ValueError:
                kind = _TK_FILTER_ERROR
        init_after = pod.init_duration if replay and pod.init_duration is not None \
            and pod.init_containers else math.nan
        for key, value in (("t_kind", kind), ("t_wants_gpu", req is not None and req.k > 0),
                           ("t_n_init", len(pod.init_containers)), ("t_cpu", pod.cpu_milli),
                           ("t_mem", pod.memory_mib),
                           ("t_gpu", gpu_request(pod) if attempted else 0.0),
                           ("t_grace", (pod.termination_grace_period if replay or not
                                        pod.termination_grace_period else math.inf)
                            if attempted else 0),
                           ("t_init_after", init_after if attempted else math.nan)):
            cols[key].append(value)
        if req is None:
            values = (pod.cpu_milli, 0, pod.memory_mib, 0, 0, none_ok, -1, -1, 0,
                      len(pod.init_containers))
        else:
            tok = rsched.type_filter(req.use_gputype, req.nouse_gputype)
            values = (req.cpu_milli, req.score_cpu, req.memory_mib, req.k, req.milli, tok,
                      rsched._spec_id(req, tok) if rsched.code == P_FGD else -1,
                      pod_class(req.k, req.milli, rsched.max_cards), req.no_requests,
                      len(pod.init_containers))
            cc.extend(req.container_cards)
        for key, value in zip(rcols, values):
            rcols[key].append(value)
        cc_off.append(len(cc))
    out: dict = {"t_spec": [None] * len(pods)}
    for key, dtype in (("t_kind", np.uint8), ("t_wants_gpu", np.uint8), ("t_n_init", np.int32),
                       ("t_cpu", np.int64), ("t_mem", np.int64), ("t_gpu", np.float64),
                       ("t_grace", np.float64), ("t_init_after", np.float64)):
        out[key] = np.array(cols[key], dtype=dtype)
    n = len(pods)
    out["t_node_spread"] = np.zeros(n, dtype=np.uint8)
    out["t_reserve"] = np.zeros(n, dtype=np.uint8)      # no what-if card policy there
    setup = {key: np.array(rcols[key], dtype=dtype) for key, dtype in (
        ("t_cpu", np.int64), ("t_cpu_s", np.int64), ("t_mem", np.int64), ("t_k", np.int32),
        ("t_milli", np.int64), ("t_spec", np.int32), ("t_cls", np.int32),
        ("t_noreq", np.uint8), ("t_n_init", np.int32))}
    setup["t_tok"] = np.array(rcols["t_tok"], dtype=np.uint8).reshape(n, rsched.core.n_types)
    setup["t_cc_off"] = np.array(cc_off, dtype=np.int64)
    setup["t_cc"] = np.array(cc, dtype=np.int32)
    return out, setup


def _research_pod_error(trace: Trace, order: np.ndarray, config, n_init: int = 0):
    """``pod_error(k)`` under a research policy (:func:`_pod_error`): the
    webhook's refusal, else why the model cannot map the pod's request."""
    def pod_error(k: int) -> str:
        pod = trace.pod(int(order[k - n_init]))
        denied = admission_error(pod)
        if denied:
            return denied
        try:
            research_request(pod, config)
        except ValueError as err:
            return str(err)
        raise AssertionError("pod_error: the pod maps onto the research model")
    return pod_error


def _quotas(sched: KernelScheduler, trace: Trace,
            initial: Sequence = ()) -> dict:
    """ReplayCore's ResourceQuota columns: namespaces with a limit get codes
    0.. (in name order); per template its namespace code (-1: no limit there)
    and the webhook's request (MiB, cores; -1 MiB: the webhook checks nothing);
    per code the limits (memory x
    ``memory_factor``; -1 = not set). The initial pods' templates follow the
    trace's (as in :func:`_templates`): their namespace counts, the webhook
    never checks them (they already run)."""
    cfg = sched.config
    names = sorted(sched._quota_ns)
    code = {ns: c for c, ns in enumerate(names)}
    gates = [sched.quota_gate(ns) for ns in names]      # nothing is bound yet: usage 0
    n = len(trace.templates) + len(initial)
    t_qns = np.full(n, -1, dtype=np.int32)
    t_qmem = np.full(n, -1, dtype=np.int64)
    t_qcores = np.zeros(n, dtype=np.int64)
    for t, pod in enumerate(trace.templates):
        c = code.get(pod.namespace, -1)
        if c < 0:
            continue
        t_qns[t] = c
        request = webhook_request(pod, cfg)
        if request is not None:
            t_qmem[t], t_qcores[t] = request
    for j, ip in enumerate(initial):
        t_qns[len(trace.templates) + j] = code.get(ip.namespace, -1)
    return {"t_qns": t_qns, "t_qmem": t_qmem, "t_qcores": t_qcores,
            "q_lim_mem": np.array([_limit(g.limit_mem) for g in gates], dtype=np.int64),
            "q_lim_cores": np.array([_limit(g.limit_cores) for g in gates], dtype=np.int64),
            "quota_denied": QUOTA_DENIED}
def _adopt_initial(core, sched: KernelScheduler, initial: Sequence, replay: bool,
                   rsched=None) -> None:
    """engine.adopt_initial on the core: initial pod ``k`` is the core's pod ``k``;
    its usage is HAMi's collapsed usage of its picks, as the kernel adopts it
    (``rsched``: a research policy's ResearchScheduler, whose books the core
    keeps as ResearchScheduler.adopt records the pod)."""
    node_index = {n.name: i for i, n in enumerate(sched.cluster.nodes)}
    for k, ip in enumerate(initial):
        i = node_index[ip.node]
        if rsched is not None:
            b = rsched.bound_of(i, ip.containers, ip.n_init, ip.cpu_milli, ip.memory_mib)
            rsched.core.replay_initial(k, b.node, b.pos, b.milli, b.cpu_milli, b.memory_mib,
                                       b.cls)
        rows, used, mem, cores, mig_rows, mig_masks = sched.card_usage(i, ip.containers,
                                                                       ip.n_init)
        devices = devices_annotation(ip.containers) if any(ip.containers) else None
        annotation = mig_allocations_annotation(ip.containers)
        core.adopt(k, i, rows, used, mem, cores, devices,
                   (mig_rows, mig_masks, annotation)
                   if mig_rows or annotation is not None else None,
                   ip.departure if ip.departure is not None and replay else math.nan,
                   INITIAL_STATE_MESSAGE)
    if initial:
        core.adopted()


class _Tables:
    """Turns the core's batches into the recorder's tables (names, devices, messages)."""

    def __init__(self, core_ref: list, rec: Recorder, names: pa.Array) -> None:
        self.core_ref = core_ref
        self.rec = rec
        self.names = names              # by arrival order
        self.end_time: float | None = None

    def events(self, n: int) -> None:
        core = self.core_ref[0]
        self.rec.write_events(
            core.np_ev_time[:n], core.np_ev_kind[:n], core.np_ev_node[:n],
            self.names.take(core.np_ev_pod[:n]),
            _sparse(core.ev_dev_rows, core.ev_devs, n),
            _sparse(core.ev_msg_rows, core.ev_msgs, n),
            core.np_ev_count[:n], core.np_ev_last[:n])

    def pods(self, n: int) -> None:
        core = self.core_ref[0]
        self.rec.write_pods(
            self.names.take(core.np_pd_pod[:n]), core.np_pd_class[:n], core.np_pd_arrival[:n],
            core.np_pd_first[:n], core.np_pd_bind[:n], core.np_pd_node[:n],
            np.array(core.pd_devs, dtype=object), core.np_pd_attempts[:n],
            core.np_pd_end[:n], self.end_time,
            preempted_by=_preemptors(self.names, core.np_pd_preempted[:n]),
            mig_allocations=np.array(core.pd_migs, dtype=object)
            if any(m is not None for m in core.pd_migs) else None)


def _preemptors(names: pa.Array, preemptor: np.ndarray) -> np.ndarray | None:
    """The pods table's ``preempted_by`` (None when no pod of the batch was a victim)."""
    hit = preemptor >= 0
    if not hit.any():
        return None
    col = np.full(len(preemptor), None, dtype=object)
    col[hit] = np.array(names.take(preemptor[hit]).to_pylist(), dtype=object)
    return col


def _sparse(rows: list[int], values: list[str], n: int) -> np.ndarray:
    col = np.full(n, None, dtype=object)
    if values:
        col[np.array(rows, dtype=np.int64)] = np.array(values, dtype=object)
    return col


def _fail_message(sched: KernelScheduler, trace: Trace, wants_gpu: np.ndarray):
    """``(fail_message, postfix, postfix_class)``: ``fail_message(t)`` is kube-scheduler's
    FailedScheduling text for the attempt of a pod of template ``t`` that just
    failed, with DefaultPreemption's verdict when nobody could be preempted
    (ReplayCore decided so in C; other verdicts are :func:`_preempt_message`'s);
    ``postfix(t, potential)`` is that verdict's text alone (the same for
    templates of one ``postfix_class``), for :class:`hamisim._failtext.FailText`,
    which builds the rest in C."""
    policies = [t.preemption_policy for t in trace.templates]
    preemption = sched.config.preemption
    dra = kube_minor(sched.config.kube_scheduler_version) >= 34
    n_nodes = sched.state.n_nodes
    wants = [bool(w) for w in wants_gpu]

    # templates with one preemption policy get one PostFilter text
    codes: dict[str, int] = {}
    postfix_class = np.array([codes.setdefault(p, len(codes)) for p in policies],
                             dtype=np.int32)

    def postfix(t: int, potential: int) -> str:
        if not preemption:
            return NO_CLAIMS if dra else ""
        return uniform_postfix(n_nodes, potential, policies[t], dra)

    def fail_message(t: int) -> str:
        return full_message(sched.failure_message(wants[t]),
                            postfix(t, sched.potential_nodes()))
    return fail_message, postfix, postfix_class


# ReplayCore's PostFilter outcomes (PF_* in _replay.pyx)
_PF_NOMINATED, _PF_HIST, _PF_NOT_HELPFUL, _PF_ERRORS, _PF_TERMINATING = 1, 2, 3, 4, 5


def _preempt_message(sched: KernelScheduler, wants_gpu: np.ndarray):
    """``(preempt_message, preempt_postfix)`` for a failed attempt whose PostFilter
    dry run ReplayCore made (as :func:`hamisim.kube.preemption.preempt` and
    :func:`hamisim.kube.scheduler.with_dra` word it): the counts of the dry run's
    reasons, or the nodes where it found no victim.
    ``preempt_message(t, outcome, n_cpu, n_mem, n_no_victims, n_dry, error_nodes)``
    is the whole FailedScheduling text; ``preempt_postfix(outcome, n_cpu, n_mem,
    n_no_victims, n_dry, error_nodes=None)`` its PostFilter part alone (``""``: none),
    the same for every template, for :class:`hamisim._failtext.FailText`, which builds
    the rest in C (errors name their nodes: ``None`` without ``error_nodes``)."""
    dra = kube_minor(sched.config.kube_scheduler_version) >= 34
    names = sched.state.node_names
    n_nodes = sched.state.n_nodes
    wants = [bool(w) for w in wants_gpu]

    def preempt_postfix(outcome: int, n_cpu: int, n_mem: int, n_novict: int,
                        n_dry: int, errors=None) -> str | None:
        if outcome == _PF_NOMINATED:
            return ""                       # a nomination: no preemption text
        if outcome == _PF_ERRORS:           # an Error: DynamicResources' text is dropped
            return None if errors is None else "preemption: " + aggregate_errors(
                [no_victim_error(names[i]) for i in errors])
        if outcome == _PF_TERMINATING:
            text = "preemption: " + TERMINATING
        elif outcome == _PF_NOT_HELPFUL:
            text = "preemption: " + histogram_message(n_nodes, {NOT_HELPFUL: n_nodes})
        else:
            hist = {}
            for reason, n in ((INSUFFICIENT_CPU, n_cpu), (INSUFFICIENT_MEMORY, n_mem),
                              (NO_VICTIMS, n_novict), (NOT_HELPFUL, n_nodes - n_dry)):
                if n:
                    hist[reason] = n
            text = "preemption: " + histogram_message(n_nodes, hist)
        return f"{NO_CLAIMS}, {text}" if dra else text

    def preempt_message(t: int, outcome: int, n_cpu: int, n_mem: int, n_novict: int,
                        n_dry: int, errors) -> str:
        message = sched.failure_message(wants[t])
        return full_message(message, preempt_postfix(outcome, n_cpu, n_mem, n_novict, n_dry,
                                                     errors))
    return preempt_message, preempt_postfix


def _pod_error(sched: KernelScheduler, trace: Trace, order: np.ndarray, n_init: int = 0):
    """``pod_error(k)``: the message of the core's pod ``k`` (the trace's pod
    ``k - n_init`` in arrival order, after the initial pods) when its template
    is refused at admission or fails HAMi's Filter (the message names the pod)."""
    def pod_error(k: int) -> str:
        pod = trace.pod(int(order[k - n_init]))
        try:
            shape = sched.encode(pod)
        except ValueError as err:
            return str(err)
        assert shape.filter_error is not None, "pod_error: the pod encodes"
        return filter_error(shape.filter_error, pod.name)
    return pod_error


def _replay_process(env: simpy.Environment, core):
    """Run the core up to the next event of any other process, then wait for its
    next time; alone in the environment, the core runs to the end in one step."""
    while True:
        core.run(env.peek())
        if core.next_time == math.inf:
            break
        yield env.timeout(max(core.next_time - env.now, 0.0))
    if core.now > env.now:
        yield env.timeout(core.now - env.now)


def simulate_compiled(cluster: Cluster, trace: Trace, config: EngineConfig = EngineConfig(),
                      shapes: Sequence[Shape] = (),
                      sink: TableSink | None = None,
                      initial: Sequence = (),
                      unplaceable: Mapping[str, str] | None = None) -> SimResult:
    """Replay ``trace`` on ``cluster`` with the compiled engine (see the module
    docstring); arguments and result as :func:`hamisim.sim.engine.simulate`
    (``initial``: pods running from the start; ``unplaceable`` marks pods for the
    recorder only). Raises ``ValueError`` when
    :func:`unsupported` names a reason."""
    why = unsupported(cluster, config, trace, initial)
    if why is not None:
        raise ValueError(f"the compiled engine does not run {why}")
    started = perf_counter()
    if config.mode == "fill":
        # the paper's protocol as a replay: pod k arrives at k s (file order),
        # gets one attempt and never leaves
        n = len(trace)
        trace = trace.with_columns(arrival=np.arange(n, dtype=np.float64),
                                   duration=np.full(n, np.nan), deletion=np.full(n, np.nan))
    sched = KernelScheduler(cluster)
    meter = ClusterMeter(cluster, shapes)
    node_groups = [meter.group_names[g] for g in meter.node_group]
    rec = Recorder([n.name for n in cluster.nodes], node_groups, sink, PlacementMeter(cluster),
                   MigMeter(cluster, shapes), unplaceable, events=config.events)
    rec.set_namespaces(trace.names, trace.template, [t.namespace for t in trace.templates])
    set_families(rec, cluster, trace)
    many_groups = len(meter.group_names) > 1
    order = trace.arrival_order()
    names = pa.array(trace.names, pa.string()).take(order)
    if len(names) and not _unique(names):
        raise ValueError(f"{trace.name}: pod names must be unique within a trace")
    n_init = len(initial)
    replay = config.mode == "replay"
    defrag = config.defrag_interval is not None
    if defrag and (not config.defrag_interval > 0 or config.defrag_moves < 1):
        raise HamisimError("the defragmenter needs an interval > 0 and at least one move")
    research = is_research_policy(cluster.scheduler.node_scheduler_policy)
    if research and defrag:
        raise HamisimError("the defragmenter moves pods under HAMi's policies, not "
                           "under a research node policy")
    # a research policy decides with its own scheduler (its checks, its seeded
    # generator); HAMi's kernel scheduler still gives the cluster's arrays
    rsched = make_scheduler(cluster, backend="kernel", shapes=shapes, seed=config.seed) \
        if research else None
    if n_init:
        # the core's pods 0 .. n_init-1 are the initial state, then the trace's
        names = pa.concat_arrays([pa.array([ip.name for ip in initial], pa.string()), names])
        if not _unique(names):
            raise ValueError(f"{trace.name}: pod names must be unique among the trace's "
                             "and the initial state's pods")
    with quiet_gc():
        if n_init:
            # engine.adopt_initial makes its class before any pod arrives
            initial_class = rec.class_code(INITIAL_STATE_CLASS)
        classes = _class_codes(trace, order, rec)
        state = sched.state
        random_ties = cluster.scheduler.node_tie_break == "random"
        rng = np.random.default_rng(config.seed)
        # the dry run's offsets: their own stream, as in the Python engine
        offsets = np.random.default_rng([config.seed, 1])
        bar = progress_bar(len(order), config.progress)
        try:
            if research:
                templates, setup = _research_templates(rsched, trace, replay, initial)
                rsched.core.replay_setup(
                    policy=rsched.code,
                    draw_ties=rsched.tie_random or rsched.model_policy.random_ties,
                    rng=rsched.rng, card_ids=rsched.card_ids, card_devmem=rsched.card_devmem,
                    n_pods=n_init + len(order), n_initial=n_init, **setup)
            else:
                templates = _templates(sched, trace, replay, initial)
            # fill mode submits pods through HAMi's webhook as replay does
            quotas = _quotas(sched, trace, initial=initial)
            fail_message, postfix, postfix_class = _fail_message(sched, trace,
                                                                 templates["t_wants_gpu"])
            preempt_message, preempt_postfix = _preempt_message(sched, templates["t_wants_gpu"])
            core_ref: list = []
            tables = _Tables(core_ref, rec, names)
            n_t = len(trace.templates)
            # initial pods: at time 0, departures adopted (not the trace's columns),
            # one template each, after the trace's
            nan = np.full(n_init, np.nan)
            core = _replay.ReplayCore(
                sched._core, meter._core,
                arrival=np.concatenate([np.zeros(n_init), trace.arrival[order]]),
                duration=np.concatenate([nan, trace.duration[order]]),
                deletion=np.concatenate([nan, trace.deletion[order]]),
                template=np.concatenate([np.arange(n_t, n_t + n_init, dtype=np.int32),
                                         trace.template[order].astype(np.int32)]),
                priority=np.concatenate([np.zeros(n_init, np.int32),
                                         trace.priority[order].astype(np.int32)]),
                pod_class=np.concatenate([np.full(n_init, initial_class if n_init else 0,
                                                  np.int32), classes.astype(np.int32)]),
                n_initial=n_init,
                # the defragmenter runs in replay mode (engine.run_replay)
                defrag_interval=float(config.defrag_interval) if defrag and replay else 0.0,
                defrag_moves=int(config.defrag_moves),
                by_name=np.argsort(np.array(names.to_pylist(), dtype=object), kind="stable")
                if defrag and replay else None,
                node_names=[n.name for n in cluster.nodes],
                **templates, **quotas,
                # workload controllers act in replay (fill mode: one attempt per pod)
                **_controllers(trace, order, n_init, replay),
                node_start=np.ascontiguousarray(state.node_start, dtype=np.int64),
                pad_empty=np.array(sched._pad_empty, dtype=np.uint8),
                pad_fam=np.array([sum(1 << f.fid for f in FAMILIES if f.word in words)
                                  for words in sched._pad_words], dtype=np.uint32),
                fam_words=[f.word.encode() for f in FAMILIES],
                fam_labels=sum(1 << f.fid for f in FAMILIES if f.cores_as_cus),
                type_words=[t.encode() for t in state.type_names],
                aligned=np.array(sched._aligned, dtype=np.uint8),
                card_ids=list(state.card_ids),
                retry=config.retry != "none" and config.mode == "replay",
                flush_after=float(config.flush_after),
                backoff_initial=float(config.backoff_initial),
                backoff_max=float(config.backoff_max),
                hints=queueing_hints(cluster.scheduler.kube_scheduler_version),
                backoff_flush_period=float(config.backoff_flush_period),
                leftover_flush_period=float(config.leftover_flush_period),
                sample_interval=config.sample_interval,
                random_ties=random_ties,
                wanted=rsched._wanted if research else sched._wanted,
                next_start=rsched.next_start if research else sched.next_start,
                many_groups=many_groups, n_groups=len(meter.group_names),
                fail_message=fail_message,
                fail_text=None if research else _failtext.FailText(
                    sched._core, templates["t_wants_gpu"], postfix_class, sched.reason_text,
                    postfix),
                pod_error=_research_pod_error(trace, order, cluster.scheduler, n_init)
                if research else _pod_error(sched, trace, order, n_init),
                draw_block=rng.random,
                progress=bar.update if bar is not None else None,
                on_events=tables.events, on_pods=tables.pods,
                mp_name=state.mp_name, pl_place=state.pl_place,
                mig_annotation=encode_mig_allocations,
                # the research schedulers model no kube-scheduler around them
                # (KubeScheduler passes their attempts through)
                preemption=bool(cluster.scheduler.preemption) and not research,
                # (the initial pods' templates: never attempted, never preempting)
                t_never=np.array([t.preemption_policy == "Never" for t in trace.templates]
                                 + [False] * n_init, dtype=np.uint8),
                recalls_deleting=recalls_deleting(cluster.scheduler.kube_scheduler_version),
                draw_offset=offsets,   # drawn in C from its bit generator
                preempt_message=preempt_message, preempt_postfix=preempt_postfix,
                victim_message=lambda k, node: f"Preempted by pod {names[k].as_py()} on node "
                                               f"{cluster.nodes[node].name}",
                research=rsched.core if research else None,
                aggregate=rec.aggregate)
            core.ranker = sched.ranker      # a vectorised Python node policy, or None
            core_ref.append(core)
            _adopt_initial(core, sched, initial, replay, rsched)
            env = simpy.Environment()
            env.process(_replay_process(env, core))
            env.run()
        finally:
            if bar is not None:
                bar.close()             # also on Ctrl-C: the message starts a line
        core.finish(final_sample=config.mode == "replay")
        sched.next_start = core.next_start
        rec.last_time = core.last_time
        core.close_failed_attempts()
        core.flush_events()
        tables.end_time = core.last_time
        core.flush_pods()
        n = core.s_n
        rec.set_pod_statistics(core.np_s_class[:n], core.np_s_node[:n],
                               core.np_s_arrival[:n], core.np_s_bind[:n], core.np_s_end[:n])
        if many_groups:
            core.flush_groups()
            rec.set_group_rows(core.g_times, core.g_rows)
        counts = RunCounts(core.n_arrived, core.n_pending, core.n_running, core.n_departed,
                           core.n_abandoned, core.n_attempts, core.np_delays[:core.n_delays],
                           core.peak_time, preempted=core.n_preempted, initial=n_init,
                           rejected=core.n_rejected, defrag_moves=core.n_defrag_moves,
                           quirk_pods=core.n_quirk_pods,
                           refusals=_refusal_rows(core.q_ref, sched))
        result = assemble_result(rec, meter, counts, config.sample_interval, node_groups,
                                 many_groups, replay=config.mode == "replay",
                                 window=config.window)
    result.timings = {"simulate": perf_counter() - started, "decisions": core.decision_time}
    result.reused_attempts = int(core.n_reused)
    return result


def _controllers(trace: Trace, order: np.ndarray, n_init: int, replay: bool) -> dict:
    """ReplayCore's controller columns: per pod (initial pods first, bare) its
    controller's code, a controller being a namespace's ``Kind/name``; per code
    its kind. None in fill mode or without controllers."""
    if not replay or not trace.controller_names:
        return {"ctl": None, "ctl_kind": None}
    spaces = {ns: i for i, ns in enumerate(sorted({t.namespace for t in trace.templates}))}
    t_space = np.array([spaces[t.namespace] for t in trace.templates], dtype=np.int64)
    owner = trace.controller[order].astype(np.int64)
    key = np.where(owner >= 0, t_space[trace.template[order]] * len(trace.controller_names)
                   + owner, -1)
    owned = key >= 0
    codes, ctl = np.unique(key[owned], return_inverse=True)
    per_pod = np.full(len(order), -1, dtype=np.int32)
    per_pod[owned] = ctl
    kinds = [controller_kind(trace.controller_names[int(k) % len(trace.controller_names)])
             for k in codes.tolist()]
    return {"ctl": np.concatenate([np.full(n_init, -1, np.int32), per_pod]),
            "ctl_kind": np.array(kinds, dtype=np.uint8)}


def _refusal_rows(q_ref, sched: KernelScheduler) -> list[dict]:
    """``quota_refusals`` from the core's counts per quota namespace code (the
    codes of :func:`_quotas`)."""
    counts = np.asarray(q_ref)
    return refusal_rows({ns: counts[c].tolist() for c, ns in enumerate(sorted(sched._quota_ns))})


def _unique(names: pa.Array) -> bool:
    return len(pc.unique(names)) == len(names)
