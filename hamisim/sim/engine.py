"""The simulation engine: pod arrivals and departures through time (SimPy).

Two modes:

* ``replay``: pods arrive at their trace times and run for ``duration`` after
  binding (or until an absolute ``deletion``, which also abandons a pod that
  is still pending). kube-scheduler's queue sits in front of HAMi: pods are
  tried by priority, then arrival order; a pod that fits nowhere waits in the
  unschedulable queue until a pod departs, then retries after its backoff
  (``backoff_initial`` doubling per failed attempt up to ``backoff_max``), or
  after ``flush_after`` seconds at the latest (kube-scheduler's 5-minute
  flush of unschedulable pods). ``retry="none"`` gives one attempt per pod.
* ``fill``: the FGD paper's protocol: pods are submitted one at a time (one
  second apart), each gets one attempt, nothing departs.

Events at equal times: departures first, then arrivals in trace order, then
one scheduling pass over the active queue. Arrivals are read lazily from the
trace; each pod's work is a callback on a SimPy event, not a process.
"""
from __future__ import annotations

import gc
import heapq
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Protocol, Sequence

import numpy as np
import pandas as pd
import simpy

from hamisim.cluster import Cluster
from hamisim.hami.decision import Decision, devices_annotation
from hamisim.hami.reference import collapsed_usage
from hamisim.pods import Container, Pod
from hamisim.shapes import Shape, gpu_request, request_class
from hamisim.sim.backend import make_scheduler
from hamisim.sim.metrics import ClusterMeter, PodUsage
from hamisim.sim.recorder import EVENT_COLUMNS, INITIAL_STATE_CLASS, INITIAL_STATE_MESSAGE, Recorder
from hamisim.sim.stats import run_statistics

__all__ = ["EngineConfig", "SimResult", "simulate", "quiet_gc", "EVENT_COLUMNS"]

# SimPy orders events at equal times by priority: departures, then arrivals and
# timers, then the scheduling pass.
_DEPART, _ARRIVE, _PASS = 0, 1, 2
#: pod shapes whose GPU request is remembered
_SHAPES_KEPT = 4096


class TracePodLike(Protocol):
    pod: Pod
    arrival: float
    duration: float | None
    deletion: float | None


@dataclass(frozen=True)
class EngineConfig:
    """How the engine drives the scheduler (kube-scheduler's queue settings)."""

    mode: str = "replay"             # replay | fill
    retry: str = "backoff"           # backoff | none
    backoff_initial: float = 1.0
    backoff_max: float = 10.0
    flush_after: float = 300.0
    seed: int = 0
    backend: str = "kernel"
    progress: bool | None = None     # None = only on a terminal
    #: time-series resolution: ``None`` = one row per event time; else at most
    #: one row per this many seconds (the state after the first event at or past
    #: each sampling time), which keeps long replays' tables small
    sample_interval: float | None = None
    #: assert the simulation's invariants after every event (hamisim.sim.checker);
    #: a violation raises hamisim.sim.checker.InvariantError
    check: bool = False


@dataclass
class SimResult:
    """A finished run: the event log, the pods, the time series and headline figures."""

    events: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict = field(default_factory=dict)
    #: allocated share of each card (nodes x cards, NaN where a node has
    #: fewer cards) at the moment the most cards had a tenant, nodes ordered by
    #: group (first-seen order, cluster order within); see
    #: ClusterMeter.allocation_share
    occupancy: np.ndarray | None = None
    #: one row per pod (hamisim.sim.recorder.POD_COLUMNS)
    pods: pd.DataFrame | None = None
    #: per node group, a row whenever its nodes changed (several groups only)
    group_timeseries: pd.DataFrame | None = None
    #: the node group of each node, in cluster order (for figures)
    node_groups: list[str] | None = None

    def summary_table(self) -> pd.DataFrame:
        """The headline figures (``summary["results"]`` when present) as one row
        (the per-class and per-group breakdowns left out)."""
        flat = self.summary.get("results", self.summary)
        return pd.DataFrame([{k: v for k, v in flat.items()
                              if not isinstance(v, (dict, list))}])


@dataclass
class _PodState:
    pod: Pod
    order: int
    arrival: float
    duration: float | None
    deletion: float | None
    gpu: float                        # GPUs asked (whole cards + fractional shares)
    status: str = "new"               # queued, unschedulable, backoff, running, gone
    attempts: int = 0
    last_attempt: float = 0.0
    gen: int = 0                      # invalidates stale timers
    node: int = -1
    usage: PodUsage | None = None     # the meter's view of its cards while running
    row: int = -1                     # its row in the pods table
    first_attempt: float = float("nan")
    bind_time: float = float("nan")
    devices: str | None = None


class _Timer(simpy.events.Event):
    """A timeout with a chosen priority whose one callback gets the timer.

    ``simpy.Timeout`` always uses NORMAL priority; departures must come before
    arrivals at equal times and the scheduling pass after both, so the timer
    is scheduled directly with :meth:`simpy.Environment.schedule`. What to do
    rides on the event (``action(arg)``, and whether it is ``live``), so no
    closure is made per timer.
    """

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


class _FillClock:
    """The clock of fill mode, which has no event loop (``now`` is set per pod)."""

    now: float = 0.0


class _Engine:
    def __init__(self, cluster: Cluster, config: EngineConfig, shapes: Sequence[Shape]):
        self.cluster = cluster
        self.cfg = config
        self.sched = make_scheduler(cluster, backend=config.backend, shapes=shapes,
                                    seed=config.seed)
        self.meter = ClusterMeter(cluster, shapes)
        self.rec = Recorder([n.name for n in cluster.nodes])
        self.many_groups = len(self.meter.group_names) > 1
        self._class_of: dict[tuple, str] = {}  # request class per pod shape
        self.rng = np.random.default_rng(config.seed)
        self.random_ties = cluster.scheduler.node_tie_break == "random"
        self.env = simpy.Environment()
        self.pods: dict[str, _PodState] = {}
        self.active: list[tuple[int, int, str]] = []
        self.unschedulable: dict[str, None] = {}
        self.pass_wanted = False                # a scheduling pass is due at this time
        self.pass_scheduled = False             # ... and queued as a SimPy event
        self.upcoming = None                    # next (order, trace pod) to arrive
        self._gpus_of: dict[tuple, float] = {}  # GPUs asked per pod shape
        self.counts = {"pods_arrived": 0, "pods_pending": 0, "pods_running": 0,
                       "pods_departed": 0, "pods_abandoned": 0}
        self.gpu_arrived = 0.0
        self.delays: list[float] = []
        self.n_attempts = 0
        self.live = 0                           # pending timers that can change state
        self.next_sample = 0.0                  # with a sample interval
        self.row_time: float = -1.0             # binds at the current time, for the
        self.row_delays: list[float] = []       # time series' queueing delay
        self.feeder_done = False
        self.peak_alloc = -1
        self.peak_time = 0.0
        self.peak_usage = self.meter.usage_snapshot()   # raw usage at the peak
        # --check: independent books verified after every event; None costs one test
        self.checker = None
        if config.check:
            from hamisim.sim.checker import Checker
            self.checker = Checker.for_engine(self)

    # -- bookkeeping -------------------------------------------------------
    def _sample(self, force: bool = False) -> None:
        interval = self.cfg.sample_interval
        if interval is not None and not force:
            if self.env.now < self.next_sample:
                return
            self.next_sample = self.env.now + interval
        self.rec.sample(self.env.now, self.counts, self.meter.reading())
        if self.many_groups:
            self.rec.sample_groups(self.env.now, self.meter.changed_groups())
        self.rec.ts["gpu_arrived"].append(self.gpu_arrived)
        # mean wait of the pods bound at this time (NaN when none was)
        waits = self.row_delays if self.row_time == self.env.now else []
        self.rec.ts["queueing_delay_s"].append(sum(waits) / len(waits) if waits else float("nan"))
        if self.meter.sum_alloc > self.peak_alloc:
            self.peak_alloc = self.meter.sum_alloc
            self.peak_time = self.env.now
            self.meter.usage_snapshot(out=self.peak_usage)

    def _at(self, delay: float, priority: int, action, arg=None) -> None:
        """Call ``action(arg)`` after ``delay``, then settle the pass (see _settle)."""
        _Timer(self.env, delay, priority, self._on_timer, action, arg)

    def _at_live(self, delay: float, priority: int, action, arg=None) -> None:
        """Like :meth:`_at`, for a timer that can change the cluster (departure,
        deletion, backoff end).

        While none is pending and all pods have arrived, nothing can change any
        more: the 5-minute flush then stops, and with it the simulation.
        """
        self.live += 1
        _Timer(self.env, delay, priority, self._on_timer, action, arg, live=True)

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

    def _gpus(self, pod: Pod) -> float:
        """:func:`gpu_request`, once per pod shape."""
        key = pod.shape_key
        if key is None:
            return gpu_request(pod)
        gpus = self._gpus_of.get(key)
        if gpus is None:
            if len(self._gpus_of) >= _SHAPES_KEPT:
                self._gpus_of.clear()       # bounded, whatever the trace
            gpus = self._gpus_of[key] = gpu_request(pod)
        return gpus

    def _pod_class(self, tp) -> str:
        """The trace's class label, else :func:`request_class`, once per pod shape."""
        label = getattr(tp, "pod_class", None)
        if label:
            return label
        pod = getattr(tp, "pod", tp)
        key = pod.shape_key
        if key is None:
            return request_class(pod)
        label = self._class_of.get(key)
        if label is None:
            if len(self._class_of) >= _SHAPES_KEPT:
                self._class_of.clear()
            label = self._class_of[key] = request_class(pod)
        return label

    def _done(self, st: _PodState, end: float) -> None:
        """Fill in the pod's row: it left (``end``) or the run is over (NaN)."""
        self.rec.pod_done(st.row, st.first_attempt, st.bind_time, st.node, st.devices,
                          st.attempts, end)

    def _enqueue(self, st: _PodState) -> None:
        st.status = "queued"
        st.gen += 1
        heapq.heappush(self.active, (-st.pod.priority, st.order, st.pod.name))

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
        name = tp.pod.name
        st = _PodState(tp.pod, order, float(self.env.now), tp.duration, tp.deletion,
                       self._gpus(tp.pod))
        st.row = self.rec.pod_arrive(name, self._pod_class(tp), st.arrival)
        self.pods[name] = st
        self.counts["pods_arrived"] += 1
        self.counts["pods_pending"] += 1
        self.gpu_arrived += st.gpu
        self.rec.event(self.env.now, name, "arrive")
        if self.checker is not None:  # --check (hamisim/sim/checker.py)
            self.checker.arrive(name)
        if tp.deletion is not None:
            self._at_live(max(tp.deletion - self.env.now, 0.0), _DEPART, self._delete, name)
        self._enqueue(st)
        self._request_pass()

    # -- scheduling --------------------------------------------------------
    def _pass(self) -> None:
        self.pass_wanted = False
        while self.active:
            _, _, name = heapq.heappop(self.active)
            st = self.pods.get(name)
            if st is None or st.status != "queued":
                continue
            self._attempt(st)
        self._sample()

    def _attempt(self, st: _PodState) -> Decision | None:
        now = self.env.now
        draw = float(self.rng.random()) if self.random_ties else None
        self.n_attempts += 1
        if not st.attempts:
            st.first_attempt = now
        st.attempts += 1
        st.last_attempt = now
        try:
            d = self.sched.schedule(st.pod, draw)
        except ValueError as err:     # HAMi Filter error or admission rejection
            d = Decision(st.pod.name, message=str(err))
        if d.bound:
            self._bind(st, d)
        else:
            self.rec.event(now, st.pod.name, "unschedulable", message=d.message)
            if self.checker is not None:  # --check (hamisim/sim/checker.py)
                self.checker.unschedulable(st.pod.name)
            if self.cfg.retry == "none":
                self._abandon(st, "not retried (retry: none)")
            else:
                st.status = "unschedulable"
                st.gen += 1
                self.unschedulable[st.pod.name] = None
                gen = st.gen
                self._at(self.cfg.flush_after, _ARRIVE, self._flush, (st, gen))
        return d

    def _bind(self, st: _PodState, d: Decision) -> None:
        now = self.env.now
        st.status = "running"
        st.gen += 1
        st.node = d.node_index
        st.bind_time = now
        st.devices = d.devices
        n_init = len(st.pod.init_containers)
        st.usage = self.meter.pod_usage(collapsed_usage(d.containers, n_init))
        self.meter.apply(st.node, st.usage, st.pod.cpu_milli, +1)
        self.counts["pods_pending"] -= 1
        self.counts["pods_running"] += 1
        self.delays.append(now - st.arrival)
        if self.row_time != now:
            self.row_time, self.row_delays = now, []
        self.row_delays.append(now - st.arrival)
        self.rec.event(now, st.pod.name, "bind", d.node, d.devices)
        if self.checker is not None:  # --check (hamisim/sim/checker.py)
            self.checker.bind(st.pod, d)
        if self.cfg.mode == "replay" and st.deletion is None and st.duration is not None:
            self._at_live(st.duration, _DEPART, self._delete, st.pod.name)

    def _abandon(self, st: _PodState, why: str) -> None:
        st.status = "gone"
        st.gen += 1
        self.unschedulable.pop(st.pod.name, None)
        self.counts["pods_pending"] -= 1
        self.counts["pods_abandoned"] += 1
        self.rec.event(self.env.now, st.pod.name, "abandon", message=why)
        self._done(st, self.env.now)
        if self.checker is not None:  # --check (hamisim/sim/checker.py)
            self.checker.abandon(st.pod.name)
        if self.cfg.mode == "replay":
            del self.pods[st.pod.name]      # memory stays flat in long replays

    # -- departures and retries ------------------------------------------
    def _delete(self, name: str) -> None:
        st = self.pods.get(name)
        if st is None or st.status == "gone":
            return
        if st.status == "running":
            self.sched.delete(name)
            self.meter.apply(st.node, st.usage, st.pod.cpu_milli, -1)
            st.status = "gone"
            st.gen += 1
            self.counts["pods_running"] -= 1
            self.counts["pods_departed"] += 1
            self.rec.event(self.env.now, name, "depart", self.cluster.nodes[st.node].name)
            self._done(st, self.env.now)
            if self.checker is not None:  # --check (hamisim/sim/checker.py)
                self.checker.depart(name)
            del self.pods[name]
            self._wake_unschedulable()
        else:
            self._abandon(st, "deleted while pending")
        self._sample()

    def _backoff(self, st: _PodState) -> float:
        # kube-scheduler doubles up to the cap; the exponent is bounded so a
        # pod retried thousands of times cannot overflow a float
        doublings = min(max(st.attempts - 1, 0), 64)
        return min(self.cfg.backoff_initial * 2.0 ** doublings, self.cfg.backoff_max)

    def _wake_unschedulable(self) -> None:
        """A pod departed: every unschedulable pod goes to the active queue, or
        waits out the rest of its backoff first."""
        now = self.env.now
        for name in list(self.unschedulable):
            st = self.pods[name]
            del self.unschedulable[name]
            ready = st.last_attempt + self._backoff(st)
            if ready <= now:
                self._enqueue(st)
                self._request_pass()
            else:
                st.status = "backoff"
                st.gen += 1
                gen = st.gen
                self._at_live(ready - now, _ARRIVE, self._retry, (st, gen))

    def _retry(self, item: tuple[_PodState, int]) -> None:
        st, gen = item
        if st.gen == gen and st.status == "backoff":
            self._enqueue(st)
            self._request_pass()

    def _flush(self, item: tuple[_PodState, int]) -> None:
        st, gen = item
        if self.feeder_done and self.live == 0:
            return          # nothing can change any more: the run is over
        if st.gen == gen and st.status == "unschedulable":
            self.unschedulable.pop(st.pod.name, None)
            self._enqueue(st)
            self._request_pass()

    # -- modes -----------------------------------------------------------
    def run_replay(self, trace: Iterable[TracePodLike], total: int | None) -> None:
        progress = _progress_bar(total, self.cfg.progress)
        pods = enumerate(trace)
        self.upcoming = next(pods, None)
        if self.upcoming is None:
            self.feeder_done = True
        else:
            _Timer(self.env, max(self.upcoming[1].arrival, 0.0), _ARRIVE, self._arrivals,
                   arg=(pods, progress))
        self.env.run()
        if self.cfg.sample_interval is not None:
            self._sample(force=True)        # the final state
        if progress is not None:
            progress.close()

    def run_fill(self, pods: Iterable, total: int | None) -> None:
        self.env = _FillClock()             # no event loop, only a clock
        progress = _progress_bar(total, self.cfg.progress)
        for order, item in enumerate(pods):
            pod = getattr(item, "pod", item)
            self.env.now = float(order)        # one submission per second
            st = _PodState(pod, order, float(order), None, None, self._gpus(pod))
            st.row = self.rec.pod_arrive(pod.name, self._pod_class(item), st.arrival)
            self.pods[pod.name] = st
            self.counts["pods_arrived"] += 1
            self.counts["pods_pending"] += 1
            self.gpu_arrived += st.gpu
            self.rec.event(order, pod.name, "arrive")
            if self.checker is not None:  # --check (hamisim/sim/checker.py)
                self.checker.arrive(pod.name)
            self._attempt(st)
            self._sample()
            if progress is not None:
                progress.update(1)
        if progress is not None:
            progress.close()

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
        for order, ip in enumerate(initial, start=-len(initial)):
            i = node_index[ip.node]
            pod = Pod(ip.name, init_containers=(Container(),) * ip.n_init,
                      cpu_milli=ip.cpu_milli, memory_mib=ip.memory_mib)
            st = _PodState(pod, order, 0.0, None, ip.departure, 0.0)
            st.row = self.rec.pod_arrive(ip.name, INITIAL_STATE_CLASS, 0.0)
            self.pods[ip.name] = st
            self.counts["pods_arrived"] += 1
            self.counts["pods_pending"] += 1
            self.rec.event(0.0, ip.name, "arrive")
            if self.checker is not None:  # --check (hamisim/sim/checker.py)
                self.checker.arrive(ip.name)
            self.sched.adopt(ip.name, i, ip.containers, ip.n_init, ip.cpu_milli, ip.memory_mib)
            st.status, st.node = "running", i
            st.usage = self.meter.pod_usage(collapsed_usage(ip.containers, ip.n_init))
            self.meter.apply(i, st.usage, ip.cpu_milli, +1)
            self.counts["pods_pending"] -= 1
            self.counts["pods_running"] += 1
            d = Decision(ip.name, self.cluster.nodes[i].name, ip.containers, node_index=i)
            devices = devices_annotation(ip.containers) if any(ip.containers) else None
            st.bind_time, st.devices = 0.0, devices
            self.rec.event(0.0, ip.name, "bind", d.node, devices, INITIAL_STATE_MESSAGE)
            if self.checker is not None:  # --check (hamisim/sim/checker.py)
                self.checker.adopt(pod, d)
            if ip.departure is not None and self.cfg.mode == "replay":
                self._at_live(ip.departure, _DEPART, self._delete, ip.name)
        self.n_initial = len(initial)
        self._sample()

    def result(self) -> SimResult:
        for st in self.pods.values():
            if st.status != "gone":
                self._done(st, float("nan"))      # still pending or running at the end
        events, ts = self.rec.frames()
        m = self.meter
        node_groups = [m.group_names[g] for g in m.node_group]
        end_time = float(events["time"].iloc[-1]) if len(events) else 0.0
        pods = self.rec.pods_frame(node_groups, end_time)
        groups_ts = self.rec.groups_frame(m) if self.many_groups else None
        delays = np.array(self.delays) if self.delays else np.zeros(1)
        c = self.counts
        summary = {
            "pods": c["pods_arrived"], "bound": len(self.delays),
            "departed": c["pods_departed"], "abandoned": c["pods_abandoned"],
            "pending_at_end": c["pods_pending"], "running_at_end": c["pods_running"],
            "attempts": self.n_attempts,
            "queueing_delay_p50_s": float(np.percentile(delays, 50)),
            "queueing_delay_p99_s": float(np.percentile(delays, 99)),
            "queueing_delay_max_s": float(delays.max()),
            "end_time_s": end_time,
        }
        if getattr(self, "n_initial", 0):
            summary["initial_pods"] = self.n_initial
        if len(ts):
            summary["peak_gpu_allocated"] = int(ts["hami_gpu_allocated"].max())
            summary["peak_time_s"] = float(self.peak_time)
            summary["final_unallocated_gpu_pct"] = float(
                100.0 * ts["unallocated_gpu"].iloc[-1] / max(m.capacity, 1))
        group_nodes = np.bincount(m.node_group, minlength=len(m.group_names))
        summary.update(run_statistics(pods, ts, groups_ts, m.group_names, group_nodes,
                                      m.group_cards, end_time))
        return SimResult(events, ts, summary, self._occupancy(), pods, groups_ts, node_groups)

    def _occupancy(self) -> np.ndarray:
        """Allocated share of each card at the peak: a row per node, nodes ordered
        by group (groups in first-seen order, cluster order within), so each group
        is one block of rows."""
        m = self.meter
        per_node = np.diff(m.node_start)
        width = int(per_node.max()) if len(per_node) else 0
        occ = np.full((m.n_nodes, width), np.nan)
        share = m.allocation_share(self.peak_usage)
        for row, i in enumerate(np.argsort(m.node_group, kind="stable")):
            a, b = m.node_start[i], m.node_start[i + 1]
            occ[row, : b - a] = share[a:b]
        return occ


def _progress_bar(total: int | None, enabled: bool | None):
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="pod", desc="simulating", leave=False)


@contextmanager
def quiet_gc():
    """No automatic garbage collection inside the block (the event loop; also
    the reading of inputs, which builds many long-lived objects).

    A long run keeps a few hundred thousand long-lived objects (the cluster,
    the event columns), and CPython's automatic full collections walk all of
    them every few ten thousand pods: they cost more than the simulation
    itself in a million-pod replay (and even a young collection walks
    every running pod's objects). The engine creates almost no reference
    cycles (8 cyclic objects left by a 100,000-pod replay, freed at the
    next collection after the block), so automatic collection is paused;
    the previous state is restored on exit, also on error.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()




def simulate(cluster: Cluster, workload: Iterable, config: EngineConfig = EngineConfig(),
             shapes: Sequence[Shape] = (), total: int | None = None,
             initial: Sequence = ()) -> SimResult:
    """Run one simulation.

    ``workload`` is, in ``replay`` mode, trace pods (``.pod``, ``.arrival``,
    ``.duration``, ``.deletion``) in arrival order; in ``fill`` mode, pods (or
    trace pods) in submission order. ``shapes`` are the
    typical pod shapes for the fragmentation metric. ``initial`` are pods
    running from the start (:class:`hamisim.io.initialstate.InitialPod`), adopted
    before the first event. The same inputs and seed give identical results.
    """
    if config.mode not in ("fill", "replay"):
        raise ValueError(f"unknown mode {config.mode!r} (replay or fill)")
    eng = _Engine(cluster, config, shapes)
    with quiet_gc():
        eng.adopt_initial(initial)
        if config.mode == "fill":
            eng.run_fill(workload, total)
        else:
            eng.run_replay(workload, total)
        if eng.checker is not None:  # --check (hamisim/sim/checker.py)
            eng.checker.finish()
        return eng.result()
