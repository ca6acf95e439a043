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

import heapq
import sys
from dataclasses import dataclass, field
from typing import Iterable, Protocol, Sequence

import numpy as np
import pandas as pd
import simpy

from .cluster import Cluster
from .metrics import TIMESERIES_COLUMNS, ClusterMeter, Shape
from .outcome import Decision
from .pods import Pod
from .reference import collapsed_usage
from .scheduler import make_scheduler
from .traces import gpu_request

__all__ = ["EngineConfig", "SimResult", "simulate", "EVENT_COLUMNS"]

EVENT_COLUMNS = ("time", "pod", "event", "node", "devices", "message")

# SimPy orders events at equal times by priority: departures, then arrivals and
# timers, then the scheduling pass.
_DEPART, _ARRIVE, _PASS = 0, 1, 2


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


@dataclass
class SimResult:
    """A finished run: the event log, the time series and headline figures."""

    events: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict = field(default_factory=dict)
    #: allocated share of each card (nodes x cards, NaN where a node has
    #: fewer cards) at the moment the most cards had a tenant; see
    #: ClusterMeter.allocation_share
    occupancy: np.ndarray | None = None

    def summary_table(self) -> pd.DataFrame:
        """The headline figures (``summary["results"]`` when present) as one row."""
        flat = self.summary.get("results", self.summary)
        return pd.DataFrame([{k: v for k, v in flat.items() if not isinstance(v, dict)}])


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
    usage: dict = field(default_factory=dict)


class _Timer(simpy.events.Event):
    """A timeout with a chosen priority and one callback.

    ``simpy.Timeout`` always uses NORMAL priority; departures must come before
    arrivals at equal times and the scheduling pass after both, so the timer
    is scheduled directly with :meth:`simpy.Environment.schedule`.
    """

    def __init__(self, env: simpy.Environment, delay: float, priority: int, callback) -> None:
        super().__init__(env)
        self._ok = True
        self._value = None
        self.callbacks.append(callback)
        env.schedule(self, priority, delay)


class _Recorder:
    """Columnar event log and time series (one row per event time)."""

    def __init__(self) -> None:
        self.ev: dict[str, list] = {c: [] for c in EVENT_COLUMNS}
        self.ts: dict[str, list] = {c: [] for c in TIMESERIES_COLUMNS}
        self.ts["gpu_arrived"] = []
        self.ts["queueing_delay_s"] = []

    def event(self, time, pod, event, node=None, devices=None, message=None) -> None:
        ev = self.ev
        ev["time"].append(float(time))
        ev["pod"].append(pod)
        ev["event"].append(event)
        ev["node"].append(node)
        ev["devices"].append(devices)
        ev["message"].append(message)

    def sample(self, time: float, counts: dict, reading: dict) -> None:
        ts = self.ts
        if ts["time"] and ts["time"][-1] == time:
            for col in ts:
                ts[col].pop()
        ts["time"].append(float(time))
        for k, v in counts.items():
            ts[k].append(v)
        for k, v in reading.items():
            ts[k].append(v)

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        events = pd.DataFrame(self.ev, columns=list(EVENT_COLUMNS))
        ts = pd.DataFrame(self.ts)
        return events, ts


class _Engine:
    def __init__(self, cluster: Cluster, config: EngineConfig, shapes: Sequence[Shape]):
        self.cluster = cluster
        self.cfg = config
        self.sched = make_scheduler(cluster, backend=config.backend, shapes=shapes,
                                    seed=config.seed)
        self.meter = ClusterMeter(cluster, shapes)
        self.rec = _Recorder()
        self.rng = np.random.default_rng(config.seed)
        self.random_ties = cluster.scheduler.node_tie_break == "random"
        self.env = simpy.Environment()
        self.pods: dict[str, _PodState] = {}
        self.active: list[tuple[int, int, str]] = []
        self.unschedulable: dict[str, None] = {}
        self.pass_pending = False
        self.counts = {"pods_arrived": 0, "pods_pending": 0, "pods_running": 0,
                       "pods_departed": 0, "pods_abandoned": 0}
        self.gpu_arrived = 0.0
        self.delays: list[float] = []
        self.n_attempts = 0
        self.fill_clock: float | None = None    # fill mode has no event loop
        self.live = 0                           # pending timers that can change state
        self.next_sample = 0.0                  # with a sample interval
        self.row_time: float = -1.0             # binds at the current time, for the
        self.row_delays: list[float] = []       # time series' queueing delay
        self.feeder_done = False
        self.peak_alloc = -1
        self.peak_usage = self.meter.allocation_share()

    @property
    def now(self) -> float:
        return self.env.now if self.fill_clock is None else self.fill_clock

    # -- bookkeeping -------------------------------------------------------
    def _sample(self, force: bool = False) -> None:
        interval = self.cfg.sample_interval
        if interval is not None and not force:
            if self.now < self.next_sample:
                return
            self.next_sample = self.now + interval
        self.rec.sample(self.now, self.counts, self.meter.reading())
        self.rec.ts["gpu_arrived"].append(self.gpu_arrived)
        # mean wait of the pods bound at this time (NaN when none was)
        waits = self.row_delays if self.row_time == self.now else []
        self.rec.ts["queueing_delay_s"].append(float(np.mean(waits)) if waits else float("nan"))
        if self.meter.sum_alloc > self.peak_alloc:
            self.peak_alloc = self.meter.sum_alloc
            self.peak_usage = self.meter.allocation_share()

    def _at(self, delay: float, priority: int, callback) -> None:
        _Timer(self.env, delay, priority, callback)

    def _at_live(self, delay: float, priority: int, callback) -> None:
        """A timer that can change the cluster (departure, deletion, backoff end).

        While none is pending and all pods have arrived, nothing can change any
        more: the 5-minute flush then stops, and with it the simulation.
        """
        self.live += 1

        def fire(event, cb=callback):
            self.live -= 1
            cb(event)
        _Timer(self.env, delay, priority, fire)

    def _request_pass(self) -> None:
        if not self.pass_pending:
            self.pass_pending = True
            self._at(0, _PASS, self._pass)

    def _enqueue(self, st: _PodState) -> None:
        st.status = "queued"
        st.gen += 1
        heapq.heappush(self.active, (-st.pod.priority, st.order, st.pod.name))

    # -- arrivals ----------------------------------------------------------
    def _feeder(self, trace: Iterable[TracePodLike], progress):
        for order, tp in enumerate(trace):
            if tp.arrival > self.env.now:
                yield self.env.timeout(tp.arrival - self.env.now)
            self._arrive(order, tp)
            if progress is not None:
                progress.update(1)
        self.feeder_done = True

    def _arrive(self, order: int, tp: TracePodLike) -> None:
        name = tp.pod.name
        st = _PodState(tp.pod, order, float(self.now), tp.duration, tp.deletion,
                       gpu_request(tp.pod))
        self.pods[name] = st
        self.counts["pods_arrived"] += 1
        self.counts["pods_pending"] += 1
        self.gpu_arrived += st.gpu
        self.rec.event(self.now, name, "arrive")
        if tp.deletion is not None:
            self._at_live(max(tp.deletion - self.env.now, 0.0), _DEPART,
                          lambda _e, n=name: self._delete(n))
        self._enqueue(st)
        self._request_pass()

    # -- scheduling --------------------------------------------------------
    def _pass(self, _event=None) -> None:
        self.pass_pending = False
        while self.active:
            _, _, name = heapq.heappop(self.active)
            st = self.pods.get(name)
            if st is None or st.status != "queued":
                continue
            self._attempt(st)
        self._sample()

    def _attempt(self, st: _PodState) -> Decision | None:
        now = self.now
        draw = float(self.rng.random()) if self.random_ties else None
        self.n_attempts += 1
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
            if self.cfg.retry == "none":
                self._abandon(st, "not retried (retry: none)")
            else:
                st.status = "unschedulable"
                st.gen += 1
                self.unschedulable[st.pod.name] = None
                gen = st.gen
                self._at(self.cfg.flush_after, _ARRIVE,
                         lambda _e, s=st, g=gen: self._flush(s, g))
        return d

    def _bind(self, st: _PodState, d: Decision) -> None:
        now = self.now
        st.status = "running"
        st.gen += 1
        st.node = d.node_index
        n_init = len(st.pod.init_containers)
        st.usage = collapsed_usage(d.containers, n_init)
        self.meter.apply(st.node, st.usage, st.pod.cpu_milli, +1)
        self.counts["pods_pending"] -= 1
        self.counts["pods_running"] += 1
        self.delays.append(now - st.arrival)
        if self.row_time != now:
            self.row_time, self.row_delays = now, []
        self.row_delays.append(now - st.arrival)
        self.rec.event(now, st.pod.name, "bind", d.node, d.devices)
        if self.cfg.mode == "replay" and st.deletion is None and st.duration is not None:
            self._at_live(st.duration, _DEPART, lambda _e, n=st.pod.name: self._delete(n))

    def _abandon(self, st: _PodState, why: str) -> None:
        st.status = "gone"
        st.gen += 1
        self.unschedulable.pop(st.pod.name, None)
        self.counts["pods_pending"] -= 1
        self.counts["pods_abandoned"] += 1
        self.rec.event(self.now, st.pod.name, "abandon", message=why)
        if self.fill_clock is None:
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
            self.rec.event(self.now, name, "depart", self.cluster.nodes[st.node].name)
            del self.pods[name]
            self._wake_unschedulable()
        else:
            self._abandon(st, "deleted while pending")
        self._sample()

    def _backoff(self, st: _PodState) -> float:
        return min(self.cfg.backoff_initial * 2 ** max(st.attempts - 1, 0), self.cfg.backoff_max)

    def _wake_unschedulable(self) -> None:
        """A pod departed: every unschedulable pod goes to the active queue, or
        waits out the rest of its backoff first."""
        now = self.now
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
                self._at_live(ready - now, _ARRIVE, lambda _e, s=st, g=gen: self._retry(s, g))

    def _retry(self, st: _PodState, gen: int) -> None:
        if st.gen == gen and st.status == "backoff":
            self._enqueue(st)
            self._request_pass()

    def _flush(self, st: _PodState, gen: int) -> None:
        if self.feeder_done and self.live == 0:
            return          # nothing can change any more: the run is over
        if st.gen == gen and st.status == "unschedulable":
            self.unschedulable.pop(st.pod.name, None)
            self._enqueue(st)
            self._request_pass()

    # -- modes -----------------------------------------------------------
    def run_replay(self, trace: Iterable[TracePodLike], total: int | None) -> None:
        progress = _progress_bar(total, self.cfg.progress)
        self.env.process(self._feeder(trace, progress))
        self.env.run()
        if self.cfg.sample_interval is not None:
            self._sample(force=True)        # the final state
        if progress is not None:
            progress.close()

    def run_fill(self, pods: Iterable, total: int | None) -> None:
        progress = _progress_bar(total, self.cfg.progress)
        for order, item in enumerate(pods):
            pod = getattr(item, "pod", item)
            self.fill_clock = float(order)     # one submission per second
            st = _PodState(pod, order, float(order), None, None,
                           gpu_request(pod))
            self.pods[pod.name] = st
            self.counts["pods_arrived"] += 1
            self.counts["pods_pending"] += 1
            self.gpu_arrived += st.gpu
            self.rec.event(order, pod.name, "arrive")
            self._attempt(st)
            self._sample()
            if progress is not None:
                progress.update(1)
        if progress is not None:
            progress.close()

    def result(self) -> SimResult:
        events, ts = self.rec.frames()
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
            "end_time_s": float(self.rec.ev["time"][-1]) if self.rec.ev["time"] else 0.0,
        }
        if len(ts):
            summary["peak_gpu_allocated"] = int(ts["hami_gpu_allocated"].max())
            summary["mean_frag_pct_of_capacity"] = float(ts["frag_pct_of_capacity"].mean())
            summary["final_unallocated_gpu_pct"] = float(
                100.0 * ts["unallocated_gpu"].iloc[-1] / max(self.meter.capacity, 1))
        return SimResult(events, ts, summary, self._occupancy())

    def _occupancy(self) -> np.ndarray:
        m = self.meter
        per_node = np.diff(m.node_start)
        width = int(per_node.max()) if len(per_node) else 0
        occ = np.full((m.n_nodes, width), np.nan)
        share = self.peak_usage
        for i in range(m.n_nodes):
            a, b = m.node_start[i], m.node_start[i + 1]
            occ[i, : b - a] = share[a:b]
        return occ


def _progress_bar(total: int | None, enabled: bool | None):
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="pod", desc="simulating", leave=False)


def simulate(cluster: Cluster, workload: Iterable, config: EngineConfig = EngineConfig(),
             shapes: Sequence[Shape] = (), total: int | None = None) -> SimResult:
    """Run one simulation.

    ``workload`` is, in ``replay`` mode, trace pods (``.pod``, ``.arrival``,
    ``.duration``, ``.deletion``) in arrival order; in ``fill`` mode, pods (or
    trace pods) in submission order. ``shapes`` are the
    typical pod shapes for the fragmentation metric. The same inputs and seed
    give identical results.
    """
    eng = _Engine(cluster, config, shapes)
    if config.mode == "fill":
        eng.run_fill(workload, total)
    elif config.mode == "replay":
        eng.run_replay(workload, total)
    else:
        raise ValueError(f"unknown mode {config.mode!r} (replay or fill)")
    return eng.result()
