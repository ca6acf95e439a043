"""The simulation engine: pod arrivals and departures through time (SimPy).

Two modes:

* ``replay``: pods arrive at their trace times and run for ``duration`` after
  binding (or until an absolute ``deletion``, which also abandons a pod that
  is still pending). kube-scheduler v1.32's scheduling queue sits in front of
  HAMi (:mod:`hamisim.kube.queue` has its rules): pods are tried by priority,
  then queue timestamp; a pod that fits nowhere waits among the unschedulable
  pods until an event its rejectors care about (a bind, a running pod's update
  or departure) moves it, after its backoff, or until the 30 s flush after 5
  minutes. ``retry="none"`` gives one attempt per pod.
* ``fill``: the FGD paper's protocol: pods are submitted one at a time (one
  second apart), each gets one attempt, nothing departs.

Events at equal times: departures first, then arrivals in trace order and the
queue's flushes, then one scheduling pass over the active queue. The run ends
when nothing can change any more: every pod has arrived, no departure or
deletion is pending, and every pending pod has been tried since the cluster
last changed (later retries would meet the same cluster). Arrivals are read lazily from the
trace; each pod's work is a callback on a SimPy event, not a process.

What happens to a pod when it is bound, fails (and preempts), is deleted,
departs or finishes its init containers is :class:`PodLifecycle`, which the
scenario runner (:mod:`hamisim.studies.scenario`) drives too; the SimPy timing
and kube-scheduler's queue are :class:`_Engine`'s.

This module is the readable engine, the specification of a run.
:func:`simulate` hands a :class:`~hamisim.workload.Trace` on the kernel backend
to its compiled twin, :mod:`hamisim.sim.compiled`, which produces the identical
run several times faster (``EngineConfig.engine`` chooses explicitly); the
reference backend, ``check`` and what else
:func:`hamisim.sim.compiled.unsupported` names run here.
"""
from __future__ import annotations

import heapq
import math
from array import array
from time import perf_counter
from typing import Iterable, Mapping, Protocol, Sequence

import numpy as np
import simpy

from hamisim.cluster import Cluster
from hamisim.errors import HamisimError
from hamisim.hami.decision import Decision, devices_annotation, mig_allocations_annotation
from hamisim.hami.policy import parse_card_policy, pod_gpu_policy
from hamisim.hami.reference import (aligned_usage, app_containers_only, app_only_usage,
                                    collapsed_usage)
from hamisim.kube.queue import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    ASSIGNED_POD_UPDATE,
    REJ_EXTENDER,
    REJ_FIT,
    backoff_duration,
    backoff_flush_time,
    delay_to,
    leftover_flush_time,
    moved_by,
    queueing_hints,
)
from hamisim.kube.controllers import (
    JOB,
    POD_EVENT_DELAY,
    R_CREATIONS,
    R_DELETED,
    R_LATER,
    R_NEVER,
    R_PODS,
    R_WAITING,
    REFUSAL_FIELDS,
    controller_kind,
    refusal_rows,
    resync_delay,
)
from hamisim.kube.scheduler import KubeScheduler, full_message
from hamisim.pods import Container, Pod, admission_error
from hamisim.shapes import Shape, ShapeCache, gpu_request, request_class
from hamisim.sim.backend import make_scheduler
from hamisim.sim.config import ENGINES, EngineConfig, progress_bar, quiet_gc
from hamisim.sim.families import set_families
from hamisim.sim.metrics import ClusterMeter
from hamisim.sim.placement import MigMeter, PlacementMeter
from hamisim.sim.recorder import (
    EVENT_COLUMNS,
    INITIAL_STATE_CLASS,
    INITIAL_STATE_MESSAGE,
    Recorder,
    TableSink,
)
from hamisim.sim.result import RunCounts, SimResult, assemble_result
from hamisim.workload import Trace

__all__ = ["EngineConfig", "SimResult", "simulate", "choose_engine", "quiet_gc", "EVENT_COLUMNS",
           "PodLifecycle", "PodState", "Clock"]

# SimPy orders events at equal times by priority: departures, then arrivals and
# timers, then the scheduling pass.
_DEPART, _ARRIVE, _PASS = 0, 1, 2
#: pod shapes whose GPU request is remembered
_SHAPES_KEPT = 4096
_NAN = float("nan")


# -- the pod lifecycle: one event path for the engine and the scenario runner --


class PodState:
    """A pod a driver is responsible for, from arrival until it leaves."""

    __slots__ = ("pod", "order", "arrival", "duration", "deletion", "gpu", "status",
                 "attempts", "gen", "node", "usage", "cls", "first_attempt",
                 "bind_time", "devices", "mig", "preempted_by", "containers", "timestamp",
                 "rejectors", "message", "tried", "held", "deficit", "ctl", "refusals")

    def __init__(self, pod: Pod, order: int, arrival: float, duration: float | None,
                 deletion: float | None, gpu: float, cls: int) -> None:
        self.pod = pod
        self.order = order
        self.arrival = arrival
        self.duration = duration
        self.deletion = deletion
        self.gpu = gpu                  # GPUs asked (whole cards + fractional shares)
        #: queued, unschedulable, backoff, running, terminating, gone; uncreated:
        #: refused by HAMi's webhook, waiting for its controller to create it again
        self.status = "new"
        self.attempts = 0
        self.gen = 0                    # invalidates stale timers
        self.node = -1
        self.usage: tuple | None = None # (rows, slots, memory, cores) while running
        self.cls = cls                  # class code (Recorder.class_code)
        self.first_attempt = _NAN
        self.bind_time = _NAN
        self.devices: str | None = None
        self.mig: str | None = None     # hami.io/vgpu-mig-allocations while bound
        self.preempted_by: str | None = None
        self.containers: list | None = None     # picks, kept only to shrink at init_duration
        # kube-scheduler's queue (hamisim.kube.queue)
        self.timestamp = arrival        # arrival, then the time of the last failure
        self.rejectors = 0              # the plugins that rejected the last attempt
        self.message: str | None = None # the last FailedScheduling text written
        self.tried = -1                 # changes at the last attempt
        self.held: list | None = None   # its picks while bound (the defragmenter's undo)
        # what it truly uses beyond HAMi's booking, as meter rows (HAMi issue #2965)
        self.deficit: tuple | None = None
        self.ctl = -1                   # its controller's code (-1: a bare pod)
        self.refusals = 0               # creations HAMi's webhook refused


class Clock:
    """A clock without an event loop: the driver sets ``now``."""

    now: float = 0.0


def deficit_nodes(cluster: Cluster, aligned: Sequence[bool]) -> list[bool]:
    """Per node, whether HAMi #2965's deficit is measured there
    (:meth:`PodLifecycle._book_deficit`): where HAMi's list drops GPU-less
    containers (``aligned`` false), and not under a research node policy, whose
    model the compiled engine books apart."""
    from hamisim.research.plugins import on_research_model
    if on_research_model(cluster.scheduler.node_scheduler_policy):
        return [False] * len(aligned)
    return [not a for a in aligned]


class PodLifecycle:
    """A pod's life on the cluster, one event path for every driver.

    What happens to HAMi's scheduler, kube-scheduler's books
    (:class:`hamisim.kube.scheduler.KubeScheduler`), the pod's state, the meter,
    the invariant checker and the event rows when a pod of an initial state is
    adopted, when a pod is tried (bound, or failed with its PostFilter result
    and the preemption of its victims), is deleted (with or without a grace
    period), departs, or finishes its init containers. The replay engine
    (:class:`_Engine`) and the scenario runner (:mod:`hamisim.studies.scenario`)
    both subclass it, so a scenario runs on the engine's handlers; each driver
    keeps only its clock, timers, queue and output.

    What a driver provides (attributes, then methods the handlers call):

    * ``cluster``, ``sched`` (a HAMi backend), ``kube`` (its ``KubeScheduler``),
      ``rec`` (``event(time, pod, event, node, devices, message)``), ``meter``
      (``apply_rows``) and ``row_of`` (card id -> meter row), ``checker``
      (:class:`hamisim.sim.checker.Checker` or ``None``), ``env`` (``.now``,
      the clock), ``rng`` and ``random_ties``, ``_denied`` (``.get(pod)``: HAMi's
      admission webhook's refusal, or ``""``), ``quotas`` (the cluster has
      ResourceQuotas: :meth:`_create` asks HAMi's webhook), ``replay`` (a pod's timers run:
      its duration, grace period and init containers end), ``retry`` (a failed
      pod waits to be tried again; else it is abandoned), ``_aligned`` (per
      node: HAMi lists every container,
      :func:`hamisim.hami.reference.aligned_usage`), and the books
      :meth:`_start_books` sets;
    * ``_done(st, end)``: the pod left (or was refused) at ``end``;
    * ``_changed(event)``: the cluster changed by a ``hamisim.kube.queue``
      assigned-pod event;
    * ``_sample()``: a moment to sample the cluster;
    * ``_unschedulable(st, rejectors, message, renominated)``: the attempt
      failed and the pod is retried (the driver's queue takes it);
    * ``_own_update(st)``: kube-scheduler wrote the pending pod's status;
    * ``_dequeue(name)``: the pending pod left: out of the driver's queue;
    * ``_depart_in(delay, name)``: call :meth:`_delete` ``(name)`` after
      ``delay`` (a duration or a grace period ran out);
    * ``_init_in(delay, item)``: call :meth:`_init_done` ``(item)`` after ``delay``.

    A created pod enters through :meth:`_create` (counts, ``arrive`` row,
    checker, webhook), whichever driver creates it.

    The handlers are the engine's hot path: they use the attributes directly
    and call the driver's hooks only where something driver-specific happens.
    """

    def _start_books(self) -> None:
        """The pods and the counts the handlers keep, all empty."""
        self.pods: dict[str, PodState] = {}
        self.changes = 0        # cluster changes so far (binds, departures, updates)
        self.stale = 0          # pending pods not tried since the last change
        # the pods by what became of them
        self.n_arrived = self.n_pending = self.n_running = 0
        self.n_departed = self.n_abandoned = self.n_preempted = self.n_rejected = 0
        self.quirk_pods: set[str] = set()       # pods HAMi under-booked (issue #2965)
        self.gpu_arrived = 0.0
        self.delays = array("d")                # queueing delay of every bound pod
        self.n_attempts = 0
        #: pending pods by status (scheduler_pending_pods{queue}) and attempts by
        #: kube-scheduler's result (scheduler_schedule_attempts_total{result})
        self.n_status = dict.fromkeys(("queued", "backoff", "unschedulable"), 0)
        self.n_result = [0, 0, 0]        # scheduled, unschedulable, error
        self.row_time: float = -1.0             # binds at the current time, for the
        self.row_delay_sum = 0.0                # time series' queueing delay
        self.row_delay_n = 0
        self.decision_time = 0.0                # seconds inside sched.schedule
        #: per namespace, HAMi's webhook's refusals (controllers.REFUSAL_FIELDS)
        self.refusals: dict[str, list[int]] = {}
        self.n_uncreated = 0                    # pending pods waiting to be created

    def _set_status(self, st: PodState, status: str) -> None:
        """``st.status = status``, keeping the pending pods' counts by queue."""
        counts = self.n_status
        if st.status in counts:
            counts[st.status] -= 1
        if status in counts:
            counts[status] += 1
        st.status = status

    def _adopt(self, ip, node: int, order: int, cls: int) -> PodState:
        """The initial-state pod ``ip`` (:class:`hamisim.io.initialstate.InitialPod`)
        runs on ``node`` from time 0: adopted by HAMi and kube-scheduler, logged
        as an ``arrive`` and a ``bind`` row (message ``initial state``,
        ``devices`` re-encoded with every segment kept). Its departure, if any,
        is the driver's to schedule."""
        pod = Pod(ip.name, init_containers=(Container(),) * ip.n_init,
                  cpu_milli=ip.cpu_milli, memory_mib=ip.memory_mib, namespace=ip.namespace)
        st = PodState(pod, order, 0.0, None, ip.departure, 0.0, cls)
        self.pods[ip.name] = st
        self.n_arrived += 1
        self.n_pending += 1
        self.rec.event(0.0, ip.name, "arrive")
        if self.checker is not None:  # --check (hamisim/sim/checker.py)
            self.checker.arrive(ip.name)
        self.sched.adopt(ip.name, node, ip.containers, ip.n_init, ip.cpu_milli, ip.memory_mib,
                         namespace=ip.namespace)
        self.kube.bound(pod, node, 0.0)
        st.status, st.node = "running", node
        d = Decision(ip.name, self.cluster.nodes[node].name, ip.containers, node_index=node)
        st.usage = self._usage(st, d)
        self.meter.apply_rows(node, *st.usage, ip.cpu_milli, 1)
        self.n_pending -= 1
        self.n_running += 1
        devices = devices_annotation(ip.containers) if any(ip.containers) else None
        st.bind_time, st.devices = 0.0, devices
        st.mig = mig_allocations_annotation(ip.containers)
        self.rec.event(0.0, ip.name, "bind", d.node, devices, INITIAL_STATE_MESSAGE)
        if self.checker is not None:  # --check (hamisim/sim/checker.py)
            self.checker.adopt(pod, d)
        return st

    # -- an attempt ----------------------------------------------------------
    def _attempt(self, st: PodState) -> Decision | None:
        """Try the pod once: bound, or failed (then retried through the driver's
        ``_unschedulable``, or abandoned without ``retry``) with the victims of
        its preemption deleted; ``None`` when HAMi's admission webhook refused
        it (it is gone)."""
        now = self.env.now
        denied = self._denied.get(st.pod)
        if denied:
            # HAMi's admission webhook refused the pod: it was never created,
            # so it is never scheduled (kube-apiserver's answer is the message)
            self._abandon(st, denied, event="rejected")
            return None
        draw = float(self.rng.random()) if self.random_ties else None
        self.n_attempts += 1
        if not st.attempts:
            st.first_attempt = now
        st.attempts += 1
        if st.tried != self.changes:
            self.stale -= 1
            st.tried = self.changes
        nominated = self.kube.nominated.get(st.pod.name)
        started = perf_counter()
        post = None
        try:
            d, post = self.kube.schedule(st.pod, draw)
        except ValueError as err:     # HAMi Filter error or admission rejection
            d = Decision(st.pod.name, message=str(err))
        self.decision_time += perf_counter() - started
        if d.node is not None:
            self.n_result[0] += 1
            self._bind(st, d)
        else:
            # kube-scheduler's result: an error when no plugin rejected the pod
            self.n_result[1 if d.rejectors else 2] += 1
            message = full_message(d.message, post.message) if post else d.message
            self.rec.event(now, st.pod.name, "unschedulable", message=message)
            if self.checker is not None:  # --check (hamisim/sim/checker.py)
                self.checker.unschedulable(st.pod.name)
            if not self.retry:
                self._abandon(st, "not retried (retry: none)")
            else:
                renominated = self.kube.nominated.get(st.pod.name) != nominated
                self._unschedulable(st, d.rejectors, message, renominated)
            if post is not None and post.victims:
                node = self.cluster.nodes[post.nominate].name
                for name in post.cleared:
                    # kube-scheduler clears their nominated node: a status update
                    cleared = self.pods.get(name)
                    if cleared is not None:
                        self._own_update(cleared)
                for v in post.victims:
                    self._preempt(v.name, st.pod.name, node)
        return d

    def _usage(self, st: PodState, d: Decision) -> tuple:
        """The pod's cards as (meter rows, slots, memory, cores): the kernel's own
        bookkeeping when it gives it, else HAMi's collapsed usage of the decision."""
        if d.usage is not None:
            return d.usage
        per_card = collapsed_usage(d.containers, len(st.pod.init_containers),
                                   self._aligned[d.node_index])
        row = self.row_of
        return ([row[u] for u in per_card], [v[0] for v in per_card.values()],
                [v[1] for v in per_card.values()], [v[2] for v in per_card.values()])

    def _bind(self, st: PodState, d: Decision) -> None:
        now = self.env.now
        pod = st.pod
        self._set_status(st, "running")
        st.gen += 1
        st.node = node = d.node_index
        st.bind_time = now
        st.devices = devices = d.devices
        st.mig = d.mig_allocations
        st.held = d.containers
        st.usage = usage = self._usage(st, d)
        self.meter.apply_rows(node, *usage, pod.cpu_milli, 1)
        self._book_deficit(st, d.containers, len(pod.init_containers))
        self.n_pending -= 1
        self.n_running += 1
        delay = now - st.arrival
        self.delays.append(delay)
        if self.row_time != now:
            self.row_time, self.row_delay_sum, self.row_delay_n = now, 0.0, 0
        self.row_delay_sum += delay
        self.row_delay_n += 1
        self.kube.bound(pod, node, now)
        self.rec.event(now, pod.name, "bind", d.node, devices)
        if self.checker is not None:  # --check (hamisim/sim/checker.py)
            self.checker.bind(pod, d)
        self._changed(ASSIGNED_POD_ADD)
        if self.replay and st.deletion is None and st.duration is not None:
            self._depart_in(st.duration, pod.name)
        if self.replay and pod.init_duration is not None and pod.init_containers \
                and any(d.containers):
            st.containers = d.containers
            self._init_in(pod.init_duration, (st, st.gen))

    def _create(self, st: PodState) -> bool:
        """The pod of ``st`` is created at ``st.arrival``: counted as arrived and
        pending, logged as an ``arrive`` row, announced to the invariant checker,
        and refused (``rejected``, never scheduled) by HAMi's admission webhook
        when its namespace's quota is used up at its creation (only where the
        cluster has quotas: ``self.quotas``). True if it was admitted: the
        driver then queues or tries it."""
        self._register(st)
        self.stale += 1
        if self.quotas:
            denied = self.sched.admission_denial(st.pod)
            if denied:
                c = self._refused(st)
                c[R_PODS] += 1
                c[R_NEVER] += 1
                self._abandon(st, denied, event="rejected")
                return False
        return True

    def _register(self, st: PodState) -> None:
        """The pod arrived: counted as arrived and pending, an ``arrive`` row,
        announced to the invariant checker."""
        name = st.pod.name
        self.pods[name] = st
        self.n_arrived += 1
        self.n_pending += 1
        self.gpu_arrived += st.gpu
        self.rec.event(st.arrival, name, "arrive")
        if self.checker is not None:  # --check (hamisim/sim/checker.py)
            self.checker.arrive(name)

    def _refused(self, st: PodState) -> list[int]:
        """One more refused creation of ``st``; its namespace's counts."""
        st.refusals += 1
        c = self._refused_books(st)
        c[R_CREATIONS] += 1
        return c

    def _refused_books(self, st: PodState) -> list[int]:
        """The refusal counts of ``st``'s namespace (REFUSAL_FIELDS)."""
        c = self.refusals.get(st.pod.namespace)
        if c is None:
            c = self.refusals[st.pod.namespace] = [0] * len(REFUSAL_FIELDS)
        return c

    def _abandon(self, st: PodState, why: str, event: str = "abandon") -> None:
        """The pending pod is gone: deleted, not retried, or (``rejected``)
        refused by HAMi's admission webhook."""
        self.kube.gone(st.pod.name)
        if st.status == "uncreated":        # deleted before its controller created it
            self.n_uncreated -= 1
            self._refused_books(st)[R_DELETED] += 1
        elif st.tried != self.changes:
            self.stale -= 1
        self._set_status(st, "gone")
        st.gen += 1
        self._dequeue(st.pod.name)
        self.n_pending -= 1
        self.n_abandoned += 1
        if event == "rejected":
            self.n_rejected += 1
        self.rec.event(self.env.now, st.pod.name, event, message=why)
        self._done(st, self.env.now)
        if self.checker is not None:  # --check (hamisim/sim/checker.py)
            self.checker.abandon(st.pod.name)
        if self.replay:
            del self.pods[st.pod.name]      # memory stays flat in long replays

    # -- departures ----------------------------------------------------------
    def _book_deficit(self, st: PodState, containers: Sequence[Sequence],
                      n_init: int) -> None:
        """HAMi issue #2965 measured: what the bound pod of ``st`` truly uses (its
        containers counted as what they are, ``init_container_usage: corrected``)
        beyond what HAMi booked for it (``st.usage``), added to the meter's
        over-commit and kept in ``st.deficit`` until its usage changes. Nothing on a
        node whose list keeps GPU-less containers (or under the corrected accounting),
        where the two are equal, nor under a research node policy."""
        if not (n_init or st.pod.init_containers) or not self._quirk_nodes[st.node]:
            return
        have = {r: (u, m, c) for r, u, m, c in zip(*st.usage)}
        rows: list[int] = []
        used: list[int] = []
        mem: list[int] = []
        cores: list[int] = []
        for uuid, (u, m, c) in collapsed_usage(containers, n_init, True).items():
            r = self.row_of[uuid]
            bu, bm, bc = have.get(r, (0, 0, 0))
            if u != bu or m != bm or c != bc:
                rows.append(r)
                used.append(u - bu)
                mem.append(m - bm)
                cores.append(c - bc)
        if rows:
            st.deficit = (rows, used, mem, cores)
            self.meter.apply_deficit(rows, used, mem, cores, 1)
            self.quirk_pods.add(st.pod.name)

    def _drop_deficit(self, st: PodState) -> None:
        """Take the deficit :meth:`_book_deficit` added for ``st`` out of the meter."""
        if st.deficit is not None:
            self.meter.apply_deficit(*st.deficit, -1)
            st.deficit = None

    def _delete(self, name: str) -> None:
        """The pod's duration ran out (it Succeeded: HAMi and kube-scheduler
        release it at once), or its grace period after a deletion ended."""
        self._remove(name, "depart")

    def _init_done(self, item: tuple[PodState, int]) -> bool:
        """Every init container succeeded: HAMi v2.10.0 (``onUpdatePod`` ->
        ``AppContainersOnlyDeviceUsage``) drops the first ``len(init_containers)``
        entries of its list and keeps the rest, one slot per entry and card. On
        a real node the list has no entry for GPU-less containers, so this can
        drop app containers' usage (HAMi issue #2965). ``False`` (and nothing
        done) when the pod was rebound, is terminating or is gone."""
        st, gen = item
        if st.gen != gen or st.status != "running":
            return False  # HAMi's onUpdatePod only refreshes a terminating pod: no shrink
        name, node, n_init = st.pod.name, st.node, len(st.pod.init_containers)
        app_only = app_containers_only(st.containers, n_init, self._aligned[node])
        st_containers, st.containers = st.containers, None
        self.meter.apply_rows(node, *st.usage, 0, -1)
        self._drop_deficit(st)
        # adopt replaces the pod's usage and keeps a mutex-reserve pod's
        # reservation (a delete first would drop it: its cards are still held)
        self.sched.adopt(name, node, app_only, 0, st.pod.cpu_milli, st.pod.memory_mib,
                         namespace=st.pod.namespace, app_only=True)
        st.held = None          # the defragmenter leaves pods with init containers alone
        per_card = app_only_usage(app_only)
        row = self.row_of
        st.usage = ([row[u] for u in per_card], [v[0] for v in per_card.values()],
                    [v[1] for v in per_card.values()], [v[2] for v in per_card.values()])
        self.meter.apply_rows(node, *st.usage, 0, 1)
        self._book_deficit(st, st_containers[n_init:], 0)
        if self.checker is not None:  # --check (hamisim/sim/checker.py)
            self.checker.init_done(name, app_only)
        self._changed(ASSIGNED_POD_UPDATE)      # HAMi sees room on that card now
        self._sample()
        return True

    def _owned_pod_left(self, ctl: int) -> None:
        """A running pod of controller ``ctl`` left (the replay engine syncs
        the controller, :mod:`hamisim.kube.controllers`; other drivers have
        no controllers)."""

    def _preempt(self, name: str, preemptor: str, node: str) -> None:
        """kube-scheduler's preemption deletes the running pod ``name``
        (:meth:`hamisim.kube.scheduler.KubeScheduler.preempt_victim` says what
        happens to a pod whose deletion is already under way: its deadline
        stands, it is counted and attributed once; with kube-scheduler <= 1.34
        a ``preempt`` row is written again, and a pod deleted by its trace now
        counts as terminating by preemption, an assigned-pod update)."""
        vst = self.pods[name]
        message = f"Preempted by pod {preemptor} on node {node}"
        action = self.kube.preempt_victim(name, vst.status == "terminating")
        if action == "delete":
            vst.preempted_by = preemptor
            self._terminate(name, "preempt", message)
        elif action != "skip":
            self.rec.event(self.env.now, name, "preempt", node, message=message)
            if action == "update":
                self._changed(ASSIGNED_POD_UPDATE)      # its DisruptionTarget condition

    def _deletion(self, name: str) -> None:
        """The pod is deleted (a trace's ``deletion``, a scenario's ``delete``):
        a pending one is abandoned, a running one terminates (within its grace
        period, keeping its cards until then)."""
        self._terminate(name, "terminate")

    def _terminate(self, name: str, event: str, message: str | None = None) -> None:
        """``name`` is deleted: ``terminate`` (the trace's deletion) or
        ``preempt`` (a victim of kube-scheduler's preemption). With a
        ``termination_grace_period`` it keeps its node, cards and CPU until the
        period ends (HAMi and kube-scheduler both keep a terminating pod until
        it is gone), else it leaves at once. A pod already terminating is left
        alone: a second DELETE cannot restart or lengthen a graceful deletion
        under way (kube-apiserver only shortens it, and the pod's own period is
        no shorter), so it leaves when its first period ends. Without
        ``replay`` (fill mode has no clock) a pod terminating there holds its
        node and cards to the end."""
        st = self.pods.get(name)
        if st is None or st.status in ("gone", "terminating"):
            return
        grace = st.pod.termination_grace_period
        if st.status == "running" and grace > 0:
            self._set_status(st, "terminating")
            if event == "preempt":
                self.n_preempted += 1
            self.rec.event(self.env.now, name, event, self.cluster.nodes[st.node].name,
                           message=message)
            if self.replay:     # fill mode has no clock: it terminates to the end
                self._depart_in(grace, name)
            self._changed(ASSIGNED_POD_UPDATE)  # its deletionTimestamp is set
            return
        self._remove(name, "depart" if event == "terminate" else event, message)

    def _remove(self, name: str, event: str, message: str | None = None) -> None:
        """``name`` leaves: ``depart`` (its duration ran out, it was deleted, its
        grace period ended) or ``preempt`` (a victim of kube-scheduler's
        preemption without a grace period)."""
        st = self.pods.get(name)
        if st is None or st.status == "gone":
            return
        if st.status in ("running", "terminating"):
            self.sched.delete(name)
            self.kube.gone(name)
            self.meter.apply_rows(st.node, *st.usage, st.pod.cpu_milli, -1)
            self._drop_deficit(st)
            self._set_status(st, "gone")
            st.gen += 1
            self.n_running -= 1
            self.n_departed += 1
            if event == "preempt":
                self.n_preempted += 1
            self.rec.event(self.env.now, name, event, self.cluster.nodes[st.node].name,
                           message=message)
            self._done(st, self.env.now)
            if self.checker is not None:  # --check (hamisim/sim/checker.py)
                self.checker.depart(name)
            del self.pods[name]
            self._changed(ASSIGNED_POD_DELETE)
            if st.ctl >= 0:
                self._owned_pod_left(st.ctl)
        else:
            self._abandon(st, "deleted while pending")
        self._sample()


class TracePodLike(Protocol):
    pod: Pod
    arrival: float
    duration: float | None
    deletion: float | None


class _Timer(simpy.events.Event):
    """A timeout with a chosen priority whose one callback gets the timer.

    ``simpy.Timeout`` always uses NORMAL priority; departures must come before
    arrivals at equal times and the scheduling pass after both, so the timer
    is scheduled directly with :meth:`simpy.Environment.schedule`. What to do
    rides on the event (``action(arg)``, and whether it is ``live``), so no
    closure is made per timer.
    """

    __slots__ = ("action", "arg", "live")

    def __init__(self, env: simpy.Environment, delay: float, priority: int, callback,
                 action=None, arg=None, live: bool = False) -> None:
        # simpy.Event.__init__ sets only env and callbacks; inlined (hot path)
        self.env = env
        self.callbacks = [callback]
        self._ok = True
        self._value = None
        self.action = action
        self.arg = arg
        self.live = live
        env.schedule(self, priority, delay)


class _Engine(PodLifecycle):
    """A run: SimPy's clock and timers and kube-scheduler's queue around the pod
    lifecycle's handlers (:class:`PodLifecycle`)."""

    def __init__(self, cluster: Cluster, config: EngineConfig, shapes: Sequence[Shape],
                 sink: TableSink | None = None, unplaceable: Mapping[str, str] | None = None):
        self.cluster = cluster
        self.cfg = config
        if config.defrag_interval is not None:
            from hamisim.research.plugins import on_research_model
            if not config.defrag_interval > 0 or config.defrag_moves < 1:
                raise HamisimError("the defragmenter needs an interval > 0 and at least one "
                                   "move")
            if on_research_model(cluster.scheduler.node_scheduler_policy):
                raise HamisimError("the defragmenter moves pods under HAMi's policies, not "
                                   "under a research node policy")
            if config.check:
                raise HamisimError("--check does not follow the defragmenter's moves")
        self.sched = make_scheduler(cluster, backend=config.backend, shapes=shapes,
                                    seed=config.seed)
        self.meter = ClusterMeter(cluster, shapes)
        m = self.meter
        self.node_groups = [m.group_names[g] for g in m.node_group]
        self.rec = Recorder([n.name for n in cluster.nodes], self.node_groups, sink,
                            PlacementMeter(cluster), MigMeter(cluster, shapes), unplaceable,
                            events=config.events)
        self.many_groups = len(m.group_names) > 1
        self._gpus = ShapeCache(gpu_request, _SHAPES_KEPT)
        self._classes = ShapeCache(lambda pod: self.rec.class_code(request_class(pod)),
                                   _SHAPES_KEPT)
        self._denied = ShapeCache(lambda pod: admission_error(pod) or "", _SHAPES_KEPT)
        self.rng = np.random.default_rng(config.seed)
        # preemption's dry-run offsets have their own stream, so a run without
        # preemption draws exactly what it drew before it existed
        offsets = np.random.default_rng([config.seed, 1])
        self.kube = KubeScheduler(cluster, self.sched, lambda n: int(offsets.integers(n)))
        self.random_ties = cluster.scheduler.node_tie_break == "random"
        #: some namespace has a ResourceQuota: HAMi's webhook checks pods at creation
        self.quotas = any(cluster.quota_of(ns) is not None for ns in cluster.quotas)
        self.replay = config.mode == "replay"
        self.retry = config.retry != "none" and config.mode == "replay"   # fill: one attempt
        self.env = simpy.Environment()
        self._start_books()                     # pods and counts (PodLifecycle)
        self.active: list[tuple[int, float, int, str]] = []
        #: unschedulable pods HAMi rejected (moved by any pod event with
        #: QueueingHints), and those only NodeResourcesFit and the static filters
        #: rejected (moved by a running pod's departure); pods only the static
        #: filters rejected wait for the leftover flush
        self.unschedulable_extender: dict[str, None] = {}
        self.unschedulable_fit: dict[str, None] = {}
        self.hints = queueing_hints(cluster.scheduler.kube_scheduler_version)
        self.pass_wanted = False                # a scheduling pass is due at this time
        self.pass_scheduled = False             # ... and queued as a SimPy event
        self.upcoming = None                    # next (order, trace pod) to arrive
        self.n_defrag_moves = 0
        # backoff pods whose retry lapsed (_retry while _over()), by name: the
        # defragmenter can change the cluster after that, and then they retry
        self.lapsed: dict[str, int] = {}
        # workload controllers (hamisim.kube.controllers): they create a pod
        # HAMi's webhook refused again, so only where quotas can refuse
        self.controllers = self.quotas and self.replay
        self.ctl_code: dict[tuple[str, str], int] = {}
        self.ctl_kind: list[int] = []
        self.ctl_fail: list[int] = []           # failed syncs since the last full one
        self.ctl_next: list[float] = []         # the pending sync's time (inf: none)
        self.ctl_wait: list[list[PodState]] = []    # its pods waiting, in arrival order
        self.ctl_timers = 0                     # pending sync timers (stale ones too)
        self.live = 0                           # pending timers that can change state
        self.next_sample = 0.0                  # with a sample interval
        self.feeder_done = False
        self.peak_alloc = -1
        self.peak_time = 0.0
        self.row_of = m.row                     # card id -> meter row (other backends)
        self._aligned = [aligned_usage(n, cluster.scheduler) for n in cluster.nodes]
        self._quirk_nodes = deficit_nodes(cluster, self._aligned)
        # --check: independent books verified after every event; None costs one test
        self.checker = None
        if config.check:
            from hamisim.sim.checker import Checker
            self.checker = Checker.for_engine(self)

    @property
    def counts(self) -> dict[str, int]:
        """The pods by what became of them (names as in the time series)."""
        return {"pods_arrived": self.n_arrived, "pods_pending": self.n_pending,
                "pods_running": self.n_running, "pods_departed": self.n_departed,
                "pods_abandoned": self.n_abandoned}

    # -- bookkeeping -------------------------------------------------------
    def _sample(self, force: bool = False) -> None:
        now = self.env.now
        interval = self.cfg.sample_interval
        if interval is not None and not force:
            if now < self.next_sample:
                return
            self.next_sample = now + interval
        # mean wait of the pods bound at this time (NaN when none was)
        delay = self.row_delay_sum / self.row_delay_n \
            if self.row_time == now and self.row_delay_n else _NAN
        m = self.meter
        q = self.n_status
        m.sample(now, self.n_arrived, self.n_pending, self.n_running, self.n_departed,
                 self.n_abandoned, self.gpu_arrived, delay,
                 (q["queued"], q["backoff"], q["unschedulable"]), tuple(self.n_result))
        if self.many_groups:
            self.rec.sample_groups(now, m.changed_groups())
        alloc = m.sum_alloc
        if alloc > self.peak_alloc:
            self.peak_alloc = alloc
            self.peak_time = now
            m.snapshot_peak()

    def _at(self, delay: float, priority: int, action, arg=None) -> None:
        """Call ``action(arg)`` after ``delay``, then settle the pass (see _settle)."""
        _Timer(self.env, delay, priority, self._on_timer, action, arg)

    def _at_live(self, delay: float, priority: int, action, arg=None) -> None:
        """Like :meth:`_at`, for a timer that changes the cluster (departure,
        deletion, end of a grace period or of init containers).

        While none is pending, all pods have arrived and every pending pod was
        tried since the last change, nothing can change any more: the queue's
        timers then lapse, and with them the simulation.
        """
        self.live += 1
        _Timer(self.env, delay, priority, self._on_timer, action, arg, live=True)

    def _depart_in(self, delay: float, name: str) -> None:
        """:meth:`_delete` ``(name)`` after ``delay``, a live departure timer
        (PodLifecycle's hook; :meth:`_at_live` inlined: once per bound pod)."""
        self.live += 1
        _Timer(self.env, delay, _DEPART, self._on_timer, self._delete, name, True)

    def _init_in(self, delay: float, item: tuple[PodState, int]) -> None:
        """:meth:`_init_done` ``(item)`` after ``delay`` (PodLifecycle's hook)."""
        self.live += 1
        _Timer(self.env, delay, _DEPART, self._on_timer, self._init_done, item, True)

    def _on_timer(self, timer: _Timer) -> None:
        if timer.live:
            self.live -= 1
        timer.action(timer.arg)
        self._settle()

    def _request_pass(self) -> None:
        """Ask for one scheduling pass at the current time (after everything
        else that happens at this time)."""
        self.pass_wanted = True

    def _settle(self) -> None:
        """End of a callback: run the requested pass now if nothing else is
        due at this time, else queue it behind the events that are.

        Running it inline is what the queued pass would do next, without an
        event per arrival or departure.
        """
        if not self.pass_wanted or self.pass_scheduled:
            return
        if self.env.peek() > self.env.now:
            self._pass()
        else:
            self.pass_scheduled = True
            _Timer(self.env, 0, _PASS, self._queued_pass)

    def _queued_pass(self, _timer: _Timer) -> None:
        self.pass_scheduled = False
        self._pass()

    def _class_of(self, tp) -> int:
        """The code of the trace's class label, else of :func:`request_class`."""
        label = getattr(tp, "pod_class", None)
        if label:
            return self.rec.class_code(label)
        return self._classes.get(getattr(tp, "pod", tp))

    def _done(self, st: PodState, end: float) -> None:
        """Write the pod's row: it left at ``end``, or the run is over (NaN)."""
        self.rec.pod_done(st.pod.name, st.cls, st.arrival, st.first_attempt, st.bind_time,
                          st.node, st.devices, st.attempts, end, st.preempted_by, st.mig)

    def _enqueue(self, st: PodState) -> None:
        """Into the active queue: by priority, then queue timestamp, then arrival."""
        self._set_status(st, "queued")
        st.gen += 1
        heapq.heappush(self.active, (-st.pod.priority, st.timestamp, st.order, st.pod.name))

    # -- arrivals ----------------------------------------------------------
    def _arrivals(self, timer: _Timer) -> None:
        """Arrive every pod due now, then set a timer for the next one.

        ``timer.arg`` is ``(iterator of (order, trace pod), progress bar or
        None)``; the next pod waiting for its time is kept in ``self.upcoming``.
        """
        pods, progress = feed = timer.arg
        now = self.env.now
        tp = self.upcoming
        while tp is not None and tp[1].arrival <= now:
            self._arrive(*tp)
            if progress is not None:
                progress.update(1)
            tp = self.upcoming = next(pods, None)
        if tp is None:
            self.feeder_done = True
        else:
            _Timer(self.env, tp[1].arrival - now, _ARRIVE, self._arrivals, arg=feed)
        self._settle()

    def _arrive(self, order: int, tp: TracePodLike) -> None:
        pod = tp.pod
        name = pod.name
        now = self.env.now
        st = PodState(pod, order, float(now), tp.duration, tp.deletion, self._gpus.get(pod),
                       self._class_of(tp))
        owner = getattr(tp, "controller", None)
        if owner is not None and self.controllers:
            self._arrive_owned(st, owner)
            return
        if not self._create(st):
            return      # refused by HAMi's webhook: never scheduled
        if tp.deletion is not None:
            self._at_live(max(tp.deletion - now, 0.0), _DEPART, self._deletion, name)
        self._enqueue(st)
        self.pass_wanted = True

    # -- workload controllers (hamisim.kube.controllers) --------------------
    def _arrive_owned(self, st: PodState, owner: str) -> None:
        """A pod of controller ``owner`` arrives: the controller's sync creates
        it (and any of its pods waiting before it)."""
        key = (st.pod.namespace, owner)         # a controller is namespaced
        c = self.ctl_code.get(key)
        if c is None:
            c = self.ctl_code[key] = len(self.ctl_kind)
            self.ctl_kind.append(controller_kind(owner))
            self.ctl_fail.append(0)
            self.ctl_next.append(math.inf)
            self.ctl_wait.append([])
        st.ctl = c
        self._register(st)
        st.status = "uncreated"
        self.n_uncreated += 1
        if st.deletion is not None:
            self._at_live(max(st.deletion - self.env.now, 0.0), _DEPART, self._deletion,
                          st.pod.name)
        self.ctl_wait[c].append(st)
        self._sync(c)

    def _sync(self, c: int) -> None:
        """Controller ``c`` creates its waiting pods, oldest first, in slow-start
        batches of 1, 2, 4, ...; the batch in which HAMi's webhook refuses one
        ends the sync, and the controller asks for its next sync after its
        rate limiter's delay. A sync that creates every pod resets the delay.
        When nothing else can change the cluster any more (every pod arrived, no
        timer that changes it, every pending pod tried since the last change), a
        sync that created nothing asks for no other: its namespace's usage
        cannot fall, so every later sync would be refused the same way."""
        wait = [st for st in self.ctl_wait[c] if st.status == "uncreated"]
        created = i = 0
        batch, refused = 1, False
        while i < len(wait) and not refused:
            for st in wait[i:i + batch]:
                if self._create_owned(st):
                    created += 1
                else:
                    refused = True
            i += batch
            batch *= 2
        self.ctl_wait[c] = [st for st in wait if st.status == "uncreated"]
        if not refused:
            self.ctl_fail[c] = 0                # queue.Forget
            return
        failures = self.ctl_fail[c]
        self.ctl_fail[c] = failures + 1
        if created or not (self.feeder_done and self.live == 0 and self.stale == 0):
            self._ask_sync(c, resync_delay(self.ctl_kind[c], failures))

    def _create_owned(self, st: PodState) -> bool:
        """The controller creates ``st``: refused by HAMi's webhook (a
        ``rejected`` row; it keeps waiting) or created (into the active queue)."""
        denied = self.sched.admission_denial(st.pod)
        if denied:
            c = self._refused(st)
            if st.refusals == 1:
                c[R_PODS] += 1
            self.rec.event(self.env.now, st.pod.name, "rejected", message=denied)
            return False
        if st.refusals or self.env.now > st.arrival:
            self._refused_books(st)[R_LATER] += 1
        self.n_uncreated -= 1
        self.stale += 1
        self._enqueue(st)
        self.pass_wanted = True
        return True

    def _ask_sync(self, c: int, delay: float) -> None:
        """Controller ``c`` is synced after ``delay``; its work queue keeps the
        earliest of the syncs asked for."""
        when = self.env.now + delay
        if when < self.ctl_next[c]:
            self.ctl_next[c] = when
            self.ctl_timers += 1
            self._at(delay, _ARRIVE, self._resync, (c, when))

    def _resync(self, item: tuple[int, float]) -> None:
        c, when = item
        self.ctl_timers -= 1
        if self.ctl_next[c] != when:
            return                              # an earlier sync took its place
        self.ctl_next[c] = math.inf
        self._sync(c)

    def _owned_pod_left(self, c: int) -> None:
        """A running pod of controller ``c`` left: a ReplicaSet syncs at once,
        a Job after syncJobBatchPeriod (only where the sync can matter: pods
        wait, or its failures are not reset)."""
        if not (self.ctl_wait[c] or self.ctl_fail[c]):
            return
        if self.ctl_kind[c] == JOB:
            self._ask_sync(c, POD_EVENT_DELAY[JOB])
        else:
            self._sync(c)

    # -- scheduling --------------------------------------------------------
    def _pass(self) -> None:
        self.pass_wanted = False
        active, pods = self.active, self.pods
        while active:
            name = heapq.heappop(active)[3]
            st = pods.get(name)
            if st is None or st.status != "queued":
                continue
            self._attempt(st)
        # a pass asked for during this one (a bind moving pods) is this one: it
        # ran until the active queue was empty
        self.pass_wanted = False
        self._sample()

    # -- kube-scheduler's queue (hamisim.kube.queue) ------------------------
    def _unschedulable(self, st: PodState, rejectors: int, message: str,
                       renominated: bool) -> None:
        """The attempt failed: the pod waits among the unschedulable pods, or in
        the backoff queue after an error (no plugin rejected it)."""
        now = self.env.now
        st.timestamp = now
        st.rejectors = rejectors
        # kube-scheduler writes the PodScheduled condition only when it changes
        written = message != st.message or renominated
        st.message = message
        if not rejectors:
            self._to_backoff(st)
            return
        self._set_status(st, "unschedulable")
        st.gen += 1
        if rejectors & REJ_EXTENDER:
            self.unschedulable_extender[st.pod.name] = None
        elif rejectors & REJ_FIT:
            self.unschedulable_fit[st.pod.name] = None
        when = leftover_flush_time(now, self.cfg.flush_after, self.cfg.leftover_flush_period)
        self._at(delay_to(now, when), _ARRIVE, self._leftover, (st, st.gen))
        if written:
            self._own_update(st)

    def _dequeue(self, name: str) -> None:
        """The pending pod left: no longer among the unschedulable pods."""
        self.unschedulable_extender.pop(name, None)
        self.unschedulable_fit.pop(name, None)

    def _own_update(self, st: PodState) -> None:
        """kube-scheduler wrote the pending pod's status: with QueueingHints the
        extender's registration for every event moves it."""
        if st.status == "unschedulable" and self.hints and st.rejectors & REJ_EXTENDER:
            self._move(st)

    def _changed(self, event: int) -> None:
        """The cluster changed by ``event``: every pending pod may fit now (the
        run goes on until each was tried), and the unschedulable pods whose
        rejectors registered for the event move."""
        self.changes += 1
        self.stale = self.n_pending - self.n_uncreated
        if self.lapsed:
            # their backoff ended while nothing could change; now something did
            for name, gen in self.lapsed.items():
                st = self.pods[name]
                if st.gen == gen and st.status == "backoff":
                    self._enqueue(st)
                    self._request_pass()
            self.lapsed.clear()
        if self.unschedulable_extender and moved_by(event, REJ_EXTENDER, self.hints):
            for name in list(self.unschedulable_extender):
                self._move(self.pods[name])
        if self.unschedulable_fit and moved_by(event, REJ_FIT, self.hints):
            for name in list(self.unschedulable_fit):
                self._move(self.pods[name])

    def _backoff_end(self, st: PodState) -> float:
        return st.timestamp + backoff_duration(st.attempts, self.cfg.backoff_initial,
                                               self.cfg.backoff_max)

    def _move(self, st: PodState) -> None:
        """Out of the unschedulable pods: to the active queue when its backoff
        is over, else to the backoff queue."""
        self.unschedulable_extender.pop(st.pod.name, None)
        self.unschedulable_fit.pop(st.pod.name, None)
        if self._backoff_end(st) <= self.env.now:
            self._enqueue(st)
            self._request_pass()
        else:
            self._to_backoff(st)

    def _to_backoff(self, st: PodState) -> None:
        """Into the backoff queue, until the flush tick after its backoff ends."""
        self._set_status(st, "backoff")
        st.gen += 1
        now = self.env.now
        when = backoff_flush_time(self._backoff_end(st), self.cfg.backoff_flush_period)
        self._at(delay_to(now, when), _ARRIVE, self._retry, (st, st.gen))

    def _over(self) -> bool:
        """Whether nothing can change any more (then the queue's timers lapse)."""
        return self.feeder_done and self.live == 0 and self.stale == 0 and not self.ctl_timers

    def _retry(self, item: tuple[PodState, int]) -> None:
        st, gen = item
        if st.gen == gen and st.status == "backoff":
            if not self._over():
                self._enqueue(st)
                self._request_pass()
            elif self.cfg.defrag_interval is not None:
                self.lapsed[st.pod.name] = gen      # until the defragmenter moves a pod

    def _leftover(self, item: tuple[PodState, int]) -> None:
        st, gen = item
        if st.gen == gen and st.status == "unschedulable" and not self._over():
            self._move(st)

    # -- the periodic defragmenter (a what-if, not HAMi) ------------------
    def _defrag_round(self, _arg=None) -> None:
        """Up to ``defrag_moves`` moves, each the one that empties the most cards
        (on ties the first pod by name); then the next round, unless nothing can
        change any more and this round moved nothing."""
        moved = 0
        while moved < self.cfg.defrag_moves and self._defrag_move():
            moved += 1
        if moved:
            self._sample()
        if moved or not self._over():
            self._at(self.cfg.defrag_interval, _ARRIVE, self._defrag_round)

    def _movable(self) -> list[PodState]:
        """Running pods the defragmenter may move: on cards, no init containers,
        no MIG instance, by name."""
        return sorted((st for st in self.pods.values() if st.status == "running"
                       and st.held is not None and st.usage[0] and st.mig is None
                       and not st.pod.init_containers), key=lambda st: st.pod.name)

    def _replace(self, st: PodState) -> Decision | None:
        """Evict ``st`` and let HAMi place it again; ``None`` (and nothing changed)
        when it lands on the same cards."""
        sched, start = self.sched, self.sched.next_start
        sched.delete(st.pod.name)
        d = sched.schedule(st.pod)
        if not d.bound or (d.node_index == st.node and
                           sorted(self._usage(st, d)[0]) == sorted(st.usage[0])):
            self._restore(st, start)
            return None
        return d

    def _restore(self, st: PodState, start: int) -> None:
        sched, pod = self.sched, st.pod
        sched.delete(pod.name)
        sched.adopt(pod.name, st.node, st.held, 0, pod.cpu_milli, pod.memory_mib,
                    namespace=pod.namespace, reserve=self._reserves(pod))
        sched.next_start = start

    def _reserves(self, pod: Pod) -> bool:
        return parse_card_policy(pod_gpu_policy(self.cluster.scheduler.gpu_scheduler_policy,
                                                pod.annotations)).reserve

    def _emptied(self, st: PodState, d: Decision) -> int:
        """Cards with no tenant after moving ``st`` as ``d``, minus before."""
        used = self.meter.used
        old = dict(zip(st.usage[0], st.usage[1]))
        new = set(self._usage(st, d)[0])
        freed = sum(1 for r, slots in old.items() if used[r] == slots and r not in new)
        taken = sum(1 for r in new if used[r] - old.get(r, 0) == 0)
        return freed - taken

    def _defrag_move(self) -> bool:
        """The best single move, if it empties a card: made and recorded."""
        best, best_gain = None, 0
        for st in self._movable():
            start = self.sched.next_start
            d = self._replace(st)
            if d is None:
                continue
            gain = self._emptied(st, d)
            self._restore(st, start)
            if gain > best_gain:
                best, best_gain = st, gain
        if best is None:
            return False
        st, now = best, self.env.now
        d = self._replace(st)
        old = f"{self.cluster.nodes[st.node].name} {st.devices}"
        self.meter.apply_rows(st.node, *st.usage, st.pod.cpu_milli, -1)
        self._drop_deficit(st)
        self.kube.gone(st.pod.name)
        st.node, st.devices, st.held = d.node_index, d.devices, d.containers
        st.mig = d.mig_allocations        # a move onto a MIG card takes an instance
        st.usage = self._usage(st, d)
        self.meter.apply_rows(st.node, *st.usage, st.pod.cpu_milli, 1)
        self._book_deficit(st, d.containers, len(st.pod.init_containers))
        self.kube.bound(st.pod, st.node, now)
        self.n_defrag_moves += 1
        self.rec.event(now, st.pod.name, "move", d.node, d.devices,
                       f"defragmenter (a hamisim what-if): from {old}")
        self._changed(ASSIGNED_POD_DELETE)
        self._changed(ASSIGNED_POD_ADD)
        return True

    # -- modes -----------------------------------------------------------
    def run_replay(self, trace: Iterable[TracePodLike], total: int | None) -> None:
        progress = progress_bar(total, self.cfg.progress)
        pods = enumerate(trace)
        self.upcoming = next(pods, None)
        if self.upcoming is None:
            self.feeder_done = True
        else:
            _Timer(self.env, max(self.upcoming[1].arrival, 0.0), _ARRIVE, self._arrivals,
                   arg=(pods, progress))
        if self.cfg.defrag_interval is not None:
            self._at(self.cfg.defrag_interval, _ARRIVE, self._defrag_round)
        try:
            self.env.run()
        finally:
            if progress is not None:
                progress.close()            # also on Ctrl-C: the message starts a line
        if self.cfg.sample_interval is not None:
            self._sample(force=True)        # the final state

    def run_fill(self, pods: Iterable, total: int | None) -> None:
        self.env = Clock()             # no event loop, only a clock
        progress = progress_bar(total, self.cfg.progress)
        try:
            self._fill(pods, progress)
        finally:
            if progress is not None:
                progress.close()

    def _fill(self, pods: Iterable, progress) -> None:
        for order, item in enumerate(pods):
            pod = getattr(item, "pod", item)
            self.env.now = float(order)        # one submission per second
            st = PodState(pod, order, float(order), None, None, self._gpus.get(pod),
                           self._class_of(item))
            # created like any pod: one HAMi's webhook refuses is never attempted
            # (no scheduling pass, so no sample: as a replay's refused arrival)
            if self._create(st):
                self._attempt(st)
                self._sample()
            if progress is not None:
                progress.update(1)

    # -- initial state -----------------------------------------------------
    def adopt_initial(self, initial: Sequence) -> None:
        """Pods already running when the run starts (:mod:`hamisim.io.initialstate`).

        Each is adopted into the scheduler and the meter at time 0, before the
        first event, and logged as an ``arrive`` and a ``bind`` row (message
        ``initial state``, ``devices`` re-encoded with every segment kept);
        it departs at its ``departure`` time in replay mode, else runs on.
        """
        if not initial:
            return
        node_index = {n.name: i for i, n in enumerate(self.cluster.nodes)}
        cls = self.rec.class_code(INITIAL_STATE_CLASS)
        for order, ip in enumerate(initial, start=-len(initial)):
            self._adopt(ip, node_index[ip.node], order, cls)
            if ip.departure is not None and self.replay:
                self._depart_in(ip.departure, ip.name)
        self.n_initial = len(initial)
        self._sample()

    def result(self) -> SimResult:
        rec = self.rec
        for st in sorted(self.pods.values(), key=lambda s: s.order):
            if st.status != "gone":
                self._done(st, _NAN)      # still pending or running at the end
            if st.status == "uncreated":
                self._refused_books(st)[R_WAITING] += 1
        rec.close_failed_attempts()
        rec.flush_events()
        rec.flush_pods(rec.last_time)
        counts = RunCounts(self.n_arrived, self.n_pending, self.n_running, self.n_departed,
                           self.n_abandoned, self.n_attempts,
                           np.frombuffer(self.delays, dtype=np.float64), self.peak_time,
                           getattr(self, "n_initial", 0), self.n_preempted, self.n_rejected,
                           self.n_defrag_moves, len(self.quirk_pods),
                           refusal_rows(self.refusals))
        return assemble_result(rec, self.meter, counts, self.cfg.sample_interval,
                               self.node_groups, self.many_groups,
                               replay=self.cfg.mode == "replay", window=self.cfg.window)


def simulate(cluster: Cluster, workload: Iterable, config: EngineConfig = EngineConfig(),
             shapes: Sequence[Shape] = (), total: int | None = None,
             initial: Sequence = (), sink: TableSink | None = None,
             unplaceable: Mapping[str, str] | None = None) -> SimResult:
    """Run one simulation.

    ``workload`` is a :class:`hamisim.workload.Trace` (replayed in arrival order,
    filled in file order), or trace pods (``.pod``, ``.arrival``, ``.duration``,
    ``.deletion``) in arrival order in ``replay`` mode, pods (or trace pods) in
    submission order in ``fill`` mode. ``shapes`` are the typical pod shapes for
    the fragmentation metric. ``initial`` are pods running from the start
    (:class:`hamisim.io.initialstate.InitialPod`), adopted before the first
    event. ``sink`` receives the events and pods tables in batches as the run
    goes (``result.events`` and ``result.pods`` are then ``None``); without one
    they are kept in memory. ``unplaceable`` maps the pods no node could hold
    even empty to why (:mod:`hamisim.studies.unplaceable`): it changes no decision,
    only marks them in the pods table and keeps them apart in the summary.
    The same inputs and seed give identical results,
    whichever engine runs them (``config.engine``: the compiled twin where it
    applies, see :func:`hamisim.sim.compiled.unsupported`).
    """
    if config.mode not in ("fill", "replay"):
        raise ValueError(f"unknown mode {config.mode!r} (replay or fill)")
    if config.engine not in ENGINES:
        raise ValueError(f"unknown engine {config.engine!r} ({', '.join(ENGINES)})")
    engine, why = choose_engine(cluster, config, workload, initial)
    if engine == "compiled":
        from hamisim.sim import compiled
        result = compiled.simulate_compiled(cluster, workload, config, shapes, sink,
                                            initial, unplaceable)
        result.engine, result.engine_reason = engine, None
        return result
    if config.engine == "compiled":
        raise ValueError(why)           # "the compiled engine does not run ..."
    started = perf_counter()
    eng = _Engine(cluster, config, shapes, sink, unplaceable)
    if isinstance(workload, Trace):
        eng.rec.set_namespaces(workload.names, workload.template,
                               [t.namespace for t in workload.templates])
        set_families(eng.rec, cluster, workload)
        total = len(workload) if total is None else total
        workload = workload.iter_arrivals() if config.mode == "replay" else iter(workload)
    with quiet_gc():
        eng.adopt_initial(initial)
        if config.mode == "fill":
            eng.run_fill(workload, total)
        else:
            eng.run_replay(workload, total)
        if eng.checker is not None:  # --check (hamisim/sim/checker.py)
            eng.checker.finish()
        result = eng.result()
    result.timings = {"simulate": perf_counter() - started, "decisions": eng.decision_time}
    result.engine, result.engine_reason = engine, why
    return result


def choose_engine(cluster: Cluster, config: EngineConfig, workload,
                  initial: Sequence = ()) -> tuple[str, str | None]:
    """Which engine :func:`simulate` runs these inputs on: ``("compiled", None)``,
    or ``("python", reason)`` with what keeps the compiled twin from running them
    (``config.engine == "python"``: it was asked for). ``config.engine ==
    "compiled"`` still names the reason; :func:`simulate` then refuses the run."""
    if config.engine == "python":
        return "python", "the Python engine was asked for (engine: python)"
    from hamisim.sim import compiled
    why = compiled.unsupported(cluster, config, workload, initial)
    if why is None:
        return "compiled", None
    return "python", f"the compiled engine does not run {why}"
