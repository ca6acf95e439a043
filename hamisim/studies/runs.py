"""Runs and comparisons: inputs -> engine -> results folders.

This is the layer behind ``hamisim run``, ``hamisim compare`` and
``hamisim plot``, and the Python API for notebooks::

    from hamisim.studies.runs import RunSpec, run
    res = run(RunSpec())                 # the bundled openb workload, HAMi defaults
    res.events, res.timeseries, res.summary
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import hashlib
import itertools
import json
import math
import os
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from hamisim._version import __version__
from hamisim.cluster import Cluster
from hamisim.devices import is_simulated
from hamisim.errors import InputError
from hamisim.io.bundled import workloads_dir
from hamisim.io.clusterfile import cluster_from_path
from hamisim.io.initialstate import InitialState, load_state
from hamisim.io.outputs import TableFiles, atomic_folder, read_table, write_json, write_table
from hamisim.io.traces import read_trace, warn_suspect_units, warn_unmatched_filters
from hamisim.hami.policy import policy_contains
from hamisim.registry import RESERVE_TOKEN, is_plugin_policy
from hamisim.research.plugins import default_backend, on_research_model
from hamisim.shapes import typical_shapes
from hamisim.sim.engine import EngineConfig, SimResult, quiet_gc, simulate
from hamisim.sim.recorder import TableSink
from hamisim.studies.fillcurves import curves
from hamisim.hami.quirks import hami_quirks, quirk_columns
from hamisim.studies.report import write_report
from hamisim.studies.unplaceable import find_unplaceable, unplaceable_pods
from hamisim.studies.workers import process_pool
from hamisim.workload import SCALE_JITTER_S, Trace, fill_workload, offered_load, retime, scale

__all__ = ["RunSpec", "Timing", "resolve_timing", "run", "run_prepared", "write_run",
           "DISCARD",
           "compare", "plot_folder", "DEFAULT_LOAD", "DEFAULT_N_PODS", "DEFAULT_MAX_LIFETIME",
           "default_cluster_path", "default_trace_path", "prepare", "Prepared",
           "spec_from_summary", "arrival_span", "describe_cluster", "describe_workload",
           "default_timing_notice", "format_duration", "COMPARE_COLUMNS", "run_to_folder",
           "sample_interval", "MAX_EVENT_ROWS", "offered_loads", "check_window",
           "describe_offered_load", "describe_window", "window_columns"]

#: offered GPU load of the bundled workload's re-timed replay (fraction of the
#: cluster's GPUs): busy enough that policies differ, not a permanent backlog.
DEFAULT_LOAD = 0.8
#: openb's lifetimes are heavy-tailed (41 pods living over a week carry 84 % of
#: the GPU-seconds) and its 8,152 pods are fewer than the ~6,600 that run at
#: once at 80 % load; a re-timed replay therefore caps lifetimes at one hour
#: and draws a longer stream of pods from the trace (hamisim.workload.retime).
DEFAULT_MAX_LIFETIME = 3600.0
DEFAULT_N_PODS = 40_000
#: time-series rows kept at event resolution before a run samples at an interval
MAX_EVENT_ROWS = 500_000


def default_cluster_path() -> Path:
    return workloads_dir() / "openb" / "openb_node_list_gpu_node.csv"


def default_trace_path() -> Path:
    return workloads_dir() / "openb" / "openb_pod_list_default.csv"


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines one run; equal specs give identical results.

    Replay timing (:func:`resolve_timing`): a native trace is replayed as
    traced unless ``load`` is given; an openb pod list is re-timed (its own
    timestamps load a cluster to about 1 %) unless ``as_traced=True``.
    ``as_traced=False`` forces re-timing at ``load`` (default
    :data:`DEFAULT_LOAD`). ``n_pods`` and ``max_lifetime`` are re-timing
    knobs: ``None`` takes the default for the trace (openb: 40,000 pods, one
    hour; a native trace: its own pods, no cap), ``max_lifetime=math.inf``
    asks for no cap.
    """

    cluster: str | None = None            # None = bundled openb GPU nodes
    trace: str | None = None              # None = bundled openb default pods
    resize: Mapping[str, int] | None = None   # node group -> replicas, instead of the file's
    gpu_policy: str | None = None         # None = the cluster file's (HAMi default spread)
    node_policy: str | None = None
    mode: str = "replay"
    as_traced: bool | None = None         # None = by trace (native: yes, openb: no)
    load: float | None = None             # re-time arrivals to this offered load
    #: multiply the trace's own pods by this factor, keeping their times
    #: (hamisim.workload.scale); replays as traced, not with ``load``
    scale: float | None = None
    max_lifetime: float | None = None     # re-timing: cap lifetimes (s); inf = no cap
    n_pods: int | None = None             # re-timing: pods drawn (with replacement)
    fill_to: float = 130.0
    seed: int = 0
    backend: str | None = "kernel"        # None: the kernel, or reference for a Python policy
    percentage_of_nodes_to_score: int | None = None
    node_tie_break: str | None = None
    retry: str = "backoff"
    progress: bool | None = None
    state: str | None = None              # initial state file (DESIGN §4.4); None = empty cluster
    check: bool = False                   # verify invariants after every event (sim.checker)
    #: time-series resolution, s: None = every event time up to MAX_EVENT_ROWS rows,
    #: then an interval chosen by the run; 0 = every event time, whatever the length
    sample_interval: float | None = None
    #: what-if (not HAMi): the periodic defragmenter, every this many seconds at
    #: most ``defrag_moves`` moves (EngineConfig.defrag_interval); None = none
    defrag_interval: float | None = None
    defrag_moves: int = 1
    #: the span (start, end), s, a replay's headline figures cover; None = the
    #: trace's own, first to last arrival (EngineConfig.window)
    window: tuple[float, float] | None = None
    #: overrides the cluster file's ``scheduler.init_container_usage``
    #: (``hami-v2.10`` or ``corrected``, the latter not HAMi); None = the file's
    init_container_usage: str | None = None
    #: the events table's failed attempts: ``aggregated`` (one row per pod and
    #: distinct FailedScheduling message, with ``count`` and ``last_time``) or
    #: ``all`` (one row per attempt); hamisim.sim.recorder.EVENTS_MODES
    events: str = "aggregated"

    @property
    def label(self) -> str:
        """``node=<policy> card=<policy>``; ``default`` where the cluster file decides."""
        return f"node={self.node_policy or 'default'} card={self.gpu_policy or 'default'}"


@dataclass(frozen=True)
class Timing:
    """How a replay times its arrivals, resolved for one trace.

    ``retimed`` False: the trace's own pods, arrivals, durations and
    deletions. True: :func:`hamisim.workload.retime` at offered GPU ``load``,
    drawing ``n_pods`` pods (``None``: each pod of the trace once) with
    lifetimes capped at ``max_lifetime`` s (``None``: no cap). ``by_default``
    says that the user did not ask for it (an openb pod list re-timed).
    """

    retimed: bool
    load: float | None = None
    n_pods: int | None = None
    max_lifetime: float | None = None
    by_default: bool = False

    @property
    def label(self) -> str:
        return "re-timed" if self.retimed else "as traced"


def resolve_timing(trace_format: str, *, as_traced: bool | None = None,
                   load: float | None = None, n_pods: int | None = None,
                   max_lifetime: float | None = None, state: bool = False,
                   scale: float | None = None) -> Timing:
    """The :class:`Timing` of a replay of a trace of ``trace_format``
    (:attr:`hamisim.workload.Trace.format`); see :class:`RunSpec`.

    Raises ``ValueError`` for knobs that contradict each other: re-timing
    knobs with ``as_traced=True``, or ``n_pods`` / ``max_lifetime`` on a
    trace that is replayed as traced. ``scale`` (:func:`hamisim.workload.scale`)
    keeps the trace's own times: it replays as traced (an openb pod list too) and
    goes with no re-timing knob.
    """
    openb = trace_format == "openb"
    knobs = [k for k, v in (("load (--load)", load), ("n_pods (--pods)", n_pods),
                            ("max_lifetime (--max-lifetime)", max_lifetime)) if v is not None]
    verb = "re-times" if len(knobs) == 1 else "re-time"
    if scale is not None:
        if knobs:
            raise ValueError(f"scale (--scale) multiplies the trace keeping its own times; "
                             f"{' and '.join(knobs)} {verb} it into Poisson arrivals: give "
                             "one or the other")
        return Timing(False)
    if as_traced:
        if knobs:
            raise ValueError(f"{' and '.join(knobs)} {verb} the trace; it does not go with "
                             "replaying it as traced (--as-traced)")
        return Timing(False)
    by_default = as_traced is None and load is None and openb and not state
    if as_traced is None and load is None and not by_default:
        if knobs:
            why = "with an initial state" if state else "a native trace's default"
            raise ValueError(f"{' and '.join(knobs)} {verb} a trace, but this one is "
                             f"replayed as traced ({why}): give a load (--load X) too")
        return Timing(False)
    cap = max_lifetime if max_lifetime is not None else (DEFAULT_MAX_LIFETIME if openb else None)
    return Timing(True, load if load is not None else DEFAULT_LOAD,
                  n_pods if n_pods is not None else (DEFAULT_N_PODS if openb else None),
                  None if cap is None or math.isinf(cap) else cap, by_default)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _cluster(spec: RunSpec) -> Cluster:
    # a card policy given on the command line is the chart's default policy, which
    # also decides whether the device plugin writes topology scores
    cluster = cluster_from_path(spec.cluster or str(default_cluster_path()), resize=spec.resize,
                                gpu_policy=spec.gpu_policy)
    changes = {}
    if spec.gpu_policy is not None:
        changes["gpu_scheduler_policy"] = spec.gpu_policy
    if spec.node_policy is not None:
        changes["node_scheduler_policy"] = spec.node_policy
    if spec.percentage_of_nodes_to_score is not None:
        changes["percentage_of_nodes_to_score"] = spec.percentage_of_nodes_to_score
    if spec.node_tie_break is not None:
        changes["node_tie_break"] = spec.node_tie_break
    if spec.init_container_usage is not None:
        changes["init_container_usage"] = spec.init_container_usage
    if changes:
        cluster = dataclasses.replace(
            cluster, scheduler=dataclasses.replace(cluster.scheduler, **changes))
    return cluster


@dataclass
class Prepared:
    """What :func:`run` hands the engine: the cluster (in simulated node order),
    the workload (arrivals in replay mode, submissions in fill mode), the
    typical shapes and the initial state (``None`` without one); also the
    trace as read and the replay's timing, for reports."""

    cluster: Cluster
    workload: Trace
    shapes: list
    state: InitialState | None
    trace_path: str
    trace: Trace
    timing: Timing | None = None            # None in fill mode
    #: seconds spent reading the cluster and the trace (for the console)
    timings: dict[str, float] = field(default_factory=dict)
    #: the factor the trace was scaled by (RunSpec.scale), None when it was not
    scale: float | None = None


def prepare(spec: RunSpec) -> Prepared:
    """Read and transform the inputs of ``spec`` exactly as :func:`run` does."""
    with quiet_gc():        # reading builds many objects; see engine.quiet_gc
        return _prepare(spec)


def _prepare(spec: RunSpec) -> Prepared:
    started = perf_counter()
    cluster = _cluster(spec)
    read_cluster = perf_counter()
    trace_path = spec.trace or str(default_trace_path())
    trace = source = read_trace(trace_path)
    read_trace_done = perf_counter()
    warn_suspect_units(trace, cluster)
    warn_unmatched_filters(trace, cluster)
    shapes = typical_shapes(trace.templates, cluster.scheduler, counts=trace.template_counts())
    state = load_state(spec.state, cluster) if spec.state is not None else None
    timing = None
    if spec.mode == "fill" and (spec.scale is not None or spec.window is not None):
        raise InputError(None, None, f"{'--scale' if spec.scale is not None else '--window'} "
                         "applies to replay mode; fill mode submits pods one per second")
    if spec.mode == "fill":
        # the paper's protocol also randomises the node order per seed
        order = np.random.default_rng(spec.seed).permutation(len(cluster.nodes))
        cluster = dataclasses.replace(cluster, nodes=tuple(cluster.nodes[i] for i in order))
        with _workload_error(spec, trace_path, "cannot fill the cluster (--mode fill)"):
            workload = fill_workload(trace, cluster.n_cards, spec.fill_to, spec.seed)
    else:
        try:
            timing = resolve_timing(trace.format, as_traced=spec.as_traced, load=spec.load,
                                    n_pods=spec.n_pods, max_lifetime=spec.max_lifetime,
                                    state=state is not None, scale=spec.scale)
        except ValueError as exc:
            raise InputError(trace_path, None, str(exc)) from None
        if timing.retimed:
            with _workload_error(spec, trace_path, "cannot re-time the trace to a GPU "
                                 "load (--load)", "; --as-traced replays its own times"):
                trace = retime(trace, timing.load, spec.seed, cluster.n_cards,
                               max_lifetime=timing.max_lifetime, n_pods=timing.n_pods)
        if spec.scale is not None:
            with _workload_error(spec, trace_path, f"cannot scale the trace (--scale "
                                 f"{spec.scale:g})"):
                trace = scale(trace, spec.scale, spec.seed)
        workload = trace
        check_window(spec.window, workload, trace_path)
    if state is not None:
        names = workload.names
        state.check_disjoint((names[i] for i in workload.arrival_order().tolist()),
                             f"the workload ({os.path.basename(trace_path)})")
    timings = {"read_cluster": read_cluster - started,
               "read_trace": read_trace_done - read_cluster,
               "prepare_workload": perf_counter() - read_trace_done}
    return Prepared(cluster, workload, shapes, state, trace_path, source, timing, timings,
                    scale=spec.scale if timing is not None else None)


@contextlib.contextmanager
def _workload_error(spec: RunSpec, trace_path: str, what: str, hint: str = ""):
    """A workload transform's ``ValueError`` (a trace without GPU requests or
    lifetimes, a cluster without GPUs) as an ``InputError`` naming the file."""
    try:
        yield
    except ValueError as exc:
        text = str(exc)
        if "capacity_gpus" in text:
            raise InputError(spec.cluster or str(default_cluster_path()), None,
                             f"{what}: the cluster has no GPUs{hint}") from None
        if "requests no GPU" in text:
            text = "no pod requests a GPU"
        name = os.path.splitext(os.path.basename(trace_path))[0]
        text = text.removeprefix(f"trace {name}: ")
        raise InputError(trace_path, None, f"{what}: {text}{hint}") from None


def check_window(window: tuple[float, float] | None, workload: Trace,
                 trace_path: str) -> None:
    """``--window START END`` against the workload, before the run: a span of
    finite seconds >= 0 with START < END that starts before the last arrival
    (else no pod would count); an END beyond the run's end is cut there
    (:func:`hamisim.sim.stats.headline_window`)."""
    if window is None:
        return
    start, end = window
    where = f"--window {start:g} {end:g}"
    if not (math.isfinite(start) and math.isfinite(end)) or start < 0:
        raise InputError(where, None, "START and END must be finite times >= 0")
    if not end > start:
        raise InputError(where, None, "END must be after START")
    last = float(workload.arrival.max()) if len(workload) else 0.0
    if start > last:
        raise InputError(where, None, f"the window starts at {format_duration(start)}, "
                         f"after the last arrival of {os.path.basename(trace_path)} (at "
                         f"{format_duration(last)}): no pod would count in its figures")


def offered_loads(prep: Prepared) -> tuple[float | None, float | None]:
    """The offered GPU load (:func:`hamisim.workload.offered_load`, as ``--load``
    defines it: Σ GPUs × lifetime / (cluster GPUs × last arrival)) of the trace
    as given and of the workload simulated (re-timed or scaled); ``None`` where
    it is undefined (every pod arriving at 0, no GPU in the cluster, fill mode)."""
    def load(trace: Trace) -> float | None:
        try:
            return offered_load(trace, prep.cluster.n_cards)
        except (ValueError, ZeroDivisionError):
            return None
    if prep.timing is None or not prep.cluster.n_cards:
        return None, None
    given = load(prep.trace)
    return given, (given if prep.workload is prep.trace else load(prep.workload))


def _pct(x: float | None) -> str:
    if x is None:
        return "undefined (every pod arrives at 0)"
    return f"{100 * x:.1f} %" if 100 * x >= 0.1 else f"{100 * x:.2g} %"


def describe_offered_load(prep: Prepared) -> str | None:
    """The console's offered-load line: the trace's own (:func:`offered_loads`)
    and, when the run changes it, the simulated one with how (``--scale``, or
    ``--load``'s Poisson re-timing); ``None`` in fill mode."""
    if prep.timing is None:
        return None
    given, simulated = offered_loads(prep)
    text = f"{_pct(given)} as traced"
    if prep.timing.retimed:
        return (f"{text}; re-timed (Poisson arrivals, --load: the daily cycle is not kept) "
                f"to {100 * prep.timing.load:g} %")
    if prep.scale is not None:
        return f"{text}; {_pct(simulated)} scaled x{prep.scale:g} (--scale)"
    return text


def describe_window(results: Mapping) -> str:
    """Which span the headline figures of a run's ``results`` cover."""
    w = results.get("window")
    if not w:
        return f"the whole run (0 - {format_duration(results.get('end_time_s', 0.0))})"
    what = "the trace's span, first to last arrival" if w["from"] == "trace" else w["from"]
    text = (f"{format_duration(w['start_s'])} - {format_duration(w['end_s'])} "
            f"({what}; {count(w['pods'], 'pod')} arriving in it)")
    if "requested_end_s" in w:
        text += f", cut at the run's end (asked {format_duration(w['requested_end_s'])})"
    return text


def not_hami_notes(cluster: Cluster, defrag_interval: float | None = None) -> list[str]:
    """What in a run is not HAMi v2.10 behaviour (research or Python policies,
    what-ifs), one phrase each; empty for HAMi's own policies."""
    s = cluster.scheduler
    node, card = s.node_scheduler_policy, s.gpu_scheduler_policy
    if on_research_model(node):
        notes = [f"node policy {node}: a research policy on the FGD paper's model (it places "
                 "cards itself; HAMi's card policy plays no part)"]
    else:
        notes = []
        if is_plugin_policy(node):
            notes.append(f"node policy {node}: your Python policy ranking the nodes HAMi's "
                         "Filter passed")
        if is_plugin_policy(card):
            notes.append(f"card policy {card}: your Python policy ordering the cards HAMi's "
                         "Fit tries")
        elif policy_contains(card, RESERVE_TOKEN):
            notes.append(f"card policy {card}: {RESERVE_TOKEN} keeps a card to its pod until "
                         "it leaves (a what-if, HAMi issue #3038)")
    if defrag_interval is not None:
        notes.append(f"a defragmenter moves running pods every {defrag_interval:g} s "
                     "(a what-if; HAMi never moves a running pod)")
    return notes


def run_backend(spec: RunSpec, prep: Prepared) -> str:
    """The backend the run takes: ``spec.backend``, or when that is ``None``
    the readable one for a Python policy and the kernel otherwise."""
    s = prep.cluster.scheduler
    return spec.backend or default_backend(s.node_scheduler_policy, s.gpu_scheduler_policy)


def run(spec: RunSpec = RunSpec()) -> SimResult:
    """One simulation; ``result.summary`` also records the inputs."""
    return run_prepared(spec, prepare(spec))


def run_prepared(spec: RunSpec, prep: Prepared, sink: TableSink | None = None) -> SimResult:
    """The simulation of :func:`run` on inputs already :func:`prepare` d; ``sink``
    receives the events and pods tables as the run goes (see :func:`run_to_folder`)."""
    cluster, trace_path, timing = prep.cluster, prep.trace_path, prep.timing
    backend = run_backend(spec, prep)
    cfg = EngineConfig(mode=spec.mode, seed=spec.seed, backend=backend,
                       retry="none" if spec.mode == "fill" else spec.retry,
                       progress=spec.progress, check=spec.check,
                       sample_interval=sample_interval(spec, prep.workload),
                       defrag_interval=spec.defrag_interval, defrag_moves=spec.defrag_moves,
                       window=spec.window, events=spec.events)
    checked = perf_counter()
    unplaceable = find_unplaceable_pods(prep.workload, cluster, backend, prep.shapes, spec.seed)
    checked = perf_counter() - checked
    result = simulate(cluster, prep.workload, cfg, prep.shapes,
                      initial=prep.state.pods if prep.state is not None else (), sink=sink,
                      unplaceable=unplaceable)
    s = cluster.scheduler
    retimed = timing is not None and timing.retimed
    result.summary = {
        "hamisim_version": __version__,
        "inputs": {
            "cluster": os.path.basename(spec.cluster or str(default_cluster_path())),
            "cluster_sha256": _sha256(spec.cluster or str(default_cluster_path())),
            "trace": os.path.basename(trace_path),
            "trace_sha256": _sha256(trace_path),
            "trace_pods": len(prep.trace),
            "mode": spec.mode,
            "timing": timing.label if timing is not None else None,
            "load": timing.load if retimed else None,
            "max_lifetime_s": timing.max_lifetime if retimed else None,
            "n_pods": timing.n_pods if retimed else None,
            "scale": spec.scale,
            "window": list(spec.window) if spec.window is not None else None,
            "fill_to_pct": spec.fill_to if spec.mode == "fill" else None,
            "seed": spec.seed, "backend": backend, "retry": cfg.retry,
            "events": spec.events,
            # which engine ran (both give the identical run) and, for the Python
            # one, what kept the compiled engine from running it
            "engine": result.engine,
            **({"engine_reason": result.engine_reason} if result.engine_reason else {}),
            # where the inputs were read from, for `hamisim explain --run`
            "cluster_path": os.path.abspath(spec.cluster or str(default_cluster_path())),
            "trace_path": os.path.abspath(trace_path),
        },
        "scheduler": dataclasses.asdict(s),
        "cluster": {"nodes": len(cluster.nodes), "gpus": cluster.n_cards,
                    "description": describe_cluster(
                        prep, spec.cluster or str(default_cluster_path())),
                    "group_runs": _runs(result.node_groups or []),
                    # cards HAMi's NVIDIA backend never offers (hamisim.devices), when any
                    **({"cards_not_counted": n} if (n := len(cluster.unsimulated_cards()))
                       else {})},
        "workload": {"pods": len(prep.workload), "arrival_span_s": arrival_span(prep.workload),
                     "description": describe_workload(prep),
                     **dict(zip(("offered_gpu_load_as_given", "offered_gpu_load"),
                                offered_loads(prep)))},
        "typical_shapes": len(prep.shapes),
        "label": (s.node_scheduler_policy if on_research_model(s.node_scheduler_policy)
                  else f"node={s.node_scheduler_policy} card={s.gpu_scheduler_policy}")
        # an --init-container-usage override names its run (compare: a row per value)
        + (f" init={spec.init_container_usage}" if spec.init_container_usage else ""),
        "not_hami": not_hami_notes(cluster, spec.defrag_interval),
        "results": result.summary,
    }
    # HAMi's quirks that moved this run, in numbers (hamisim.hami.quirks)
    result.summary["results"]["hami_quirks"] = hami_quirks(
        result.summary["results"].get("hami_quirks", {}), prep.workload, cluster)
    result.timings = {**prep.timings, **result.timings, "unplaceable_check": checked}
    if spec.resize:
        result.summary["inputs"]["resize"] = dict(spec.resize)
    if spec.defrag_interval is not None:
        result.summary["inputs"]["defrag"] = {"interval_s": spec.defrag_interval,
                                              "moves": spec.defrag_moves}
    if spec.state is not None:
        result.summary["inputs"].update({
            "state": os.path.basename(spec.state), "state_sha256": _sha256(spec.state),
            "state_path": os.path.abspath(spec.state)})
        if prep.state.warnings:
            result.summary["inputs"]["state_warnings"] = list(prep.state.warnings)
    return result


def find_unplaceable_pods(workload: Trace, cluster: Cluster, backend: str = "kernel",
                          shapes: Sequence = (), seed: int = 0) -> dict[str, str]:
    """``{pod name: reason}`` of the workload's pods no node of ``cluster`` could
    hold even empty (:mod:`hamisim.studies.unplaceable`: one attempt per distinct
    request on the run's backend and policies, every node examined)."""
    used = np.unique(workload.template).tolist() if len(workload) else []
    found = find_unplaceable(cluster, workload.templates, backend, shapes, seed, used=used)
    return unplaceable_pods(workload, found)


def _runs(groups: Sequence[str]) -> list[list]:
    """``[first row, group]`` of each group's block of rows once nodes are ordered by
    group (first-seen order), as the occupancy matrix is."""
    counts: dict[str, int] = {}
    for g in groups:
        counts[g] = counts.get(g, 0) + 1
    out, start = [], 0
    for g, n in counts.items():
        out.append([start, g])
        start += n
    return out


def arrival_span(workload: Trace) -> float:
    """Simulated seconds from the first to the last arrival of a workload."""
    if not len(workload):
        return 0.0
    return float(workload.arrival.max() - workload.arrival.min())


def format_duration(seconds: float) -> str:
    """``45 s``, ``12.5 min``, ``1 h``, ``4.2 h``, ``7.8 days``: a span read at a glance."""
    def num(x: float) -> str:
        return f"{x:.1f}".removesuffix(".0")
    if seconds < 120:
        return f"{num(seconds)} s"
    if seconds < 3600:
        return f"{num(seconds / 60)} min"
    if seconds < 3 * 86400:
        return f"{num(seconds / 3600)} h"
    return f"{num(seconds / 86400)} days"


def count(n: int, noun: str) -> str:
    """``1 pod``, ``2,000 pods``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def describe_cluster(prep: Prepared, path: str) -> str:
    """``cluster.yaml: 24 nodes, 160 GPUs (128 NVIDIA-H100, 32 NVIDIA-T4)``, then the
    cards it does not count as GPUs (:mod:`hamisim.devices`), when there are any."""
    types: dict[str, int] = {}
    for node in prep.cluster.nodes:
        for card in node.cards:
            types[card.type] = types.get(card.type, 0) + 1
    gpu = {t: n for t, n in types.items() if is_simulated(t)}
    other = {t: n for t, n in types.items() if t not in gpu}

    def kinds(of: dict[str, int]) -> str:
        return ", ".join(f"{n:,} {t or repr(t)}"
                         for t, n in sorted(of.items(), key=lambda kv: -kv[1]))
    quotas = sum(1 for ns in prep.cluster.quotas if prep.cluster.quota_of(ns) is not None)
    return (f"{os.path.basename(path)}: {count(len(prep.cluster.nodes), 'node')}, "
            f"{count(prep.cluster.n_cards, 'GPU')}" + (f" ({kinds(gpu)})" if len(gpu) > 1 else "")
            + (f", and {count(sum(other.values()), 'card')} not counted (no simulated family: "
               f"{kinds(other)})" if other else "")
            + (f", HAMi ResourceQuota in {count(quotas, 'namespace')}" if quotas else ""))


def describe_workload(prep: Prepared) -> str:
    """What was simulated: file, pods, time span, as traced or re-timed."""
    name = os.path.basename(prep.trace_path)
    n = len(prep.workload)
    timing = prep.timing
    if timing is None:                       # fill mode
        return f"{name}: {count(n, 'pod')} submitted one per second (FGD fill protocol)"
    span = format_duration(arrival_span(prep.workload))
    if not timing.retimed and prep.scale is not None:
        return (f"{name}: {count(n, 'pod')} from its {len(prep.trace):,} arriving over {span}, "
                f"as traced, scaled x{prep.scale:g} (its own arrival times; copies "
                f"jittered by up to ±{format_duration(SCALE_JITTER_S)})")
    if not timing.retimed:
        return f"{name}: {count(n, 'pod')} arriving over {span}, as traced"
    drawn = f" drawn from its {len(prep.trace):,}," if timing.n_pods is not None else ""
    cap = (f", lifetimes capped at {format_duration(timing.max_lifetime)}"
           if timing.max_lifetime is not None else "")
    return (f"{name}: {count(n, 'pod')}{drawn} arriving over {span}, re-timed to "
            f"{100 * timing.load:g} % offered GPU load (Poisson arrivals{cap})")


def default_timing_notice(prep: Prepared) -> str | None:
    """The one line that says, before the run, that an openb pod list is
    re-timed although nobody asked (``None`` otherwise)."""
    timing = prep.timing
    if timing is None or not timing.by_default:
        return None
    try:
        own = f"its own timestamps offer about {100 * offered_load(prep.trace, prep.cluster.n_cards):.0g} % load"
    except ValueError:
        own = "it has no timestamps"
    return (f"{os.path.basename(prep.trace_path)} is an openb pod list ({own}): simulating "
            f"{describe_workload(prep).split(': ', 1)[1]}; --as-traced replays it as "
            "traced, --load/--pods/--max-lifetime change the re-timing")


def spec_from_summary(summary: dict) -> RunSpec:
    """The :class:`RunSpec` of a finished run, from its ``summary.json``: the
    recorded input paths and the scheduler settings as simulated."""
    inputs, sched = summary["inputs"], summary["scheduler"]
    replay = inputs["mode"] == "replay"
    # summaries before the timing key re-timed exactly when a load was recorded
    retimed = replay and (inputs.get("timing") == "re-timed"
                          or ("timing" not in inputs and inputs.get("load") is not None))
    cap = inputs.get("max_lifetime_s")
    return RunSpec(
        cluster=inputs["cluster_path"], trace=inputs["trace_path"],
        resize=inputs.get("resize"),
        gpu_policy=sched["gpu_scheduler_policy"], node_policy=sched["node_scheduler_policy"],
        mode=inputs["mode"], as_traced=not retimed if replay else None,
        load=inputs["load"] if retimed else None,
        max_lifetime=(math.inf if cap is None else cap) if retimed else None,
        n_pods=inputs.get("n_pods") if retimed else None,
        fill_to=inputs["fill_to_pct"] if not replay else 130.0, seed=inputs["seed"],
        backend=inputs["backend"], retry=inputs["retry"],
        percentage_of_nodes_to_score=sched["percentage_of_nodes_to_score"],
        node_tie_break=sched["node_tie_break"], progress=False,
        state=inputs.get("state_path"),
        defrag_interval=(inputs.get("defrag") or {}).get("interval_s"),
        defrag_moves=(inputs.get("defrag") or {}).get("moves", 1),
        scale=inputs.get("scale"),
        window=tuple(inputs["window"]) if inputs.get("window") else None,
        # results written before the key kept a row per attempt
        events=inputs.get("events", "all"))


def prepare_recorded(folder: str | os.PathLike[str], what: str) -> tuple[dict, RunSpec, Prepared]:
    """The summary, spec and prepared inputs of the run in results ``folder``,
    read again from the files its summary records, which must be unchanged
    (SHA-256); ``what`` names the command for the messages (``explain``)."""
    folder = Path(folder)
    summary_path = folder / "summary.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError(str(summary_path), None,
                         f"cannot read the run's summary ({err.strerror or err}); is "
                         f"{folder} a results folder of 'hamisim run'?") from None
    except ValueError as err:
        raise InputError(str(summary_path), None, f"not valid JSON: {err}") from None
    inputs = summary.get("inputs", {}) if isinstance(summary, dict) else {}
    if "cluster_path" not in inputs or "scheduler" not in summary:
        raise InputError(str(summary_path), None, "this summary does not record where the "
                         "run's inputs are (written by an older hamisim, or not by 'run'); "
                         "run it again")
    for key in ("cluster", "trace", "state"):
        path = inputs.get(f"{key}_path")
        if path is None:
            continue
        if not os.path.exists(path):
            raise InputError(path, None, f"the run's {key} file is gone; {what} replays the "
                                         "run from its inputs")
        if _sha256(path) != inputs.get(f"{key}_sha256"):
            raise InputError(path, None, f"the run's {key} file changed since the run "
                                         f"(SHA-256 differs); {what} needs the same inputs")
    try:
        spec = spec_from_summary(summary)
    except (KeyError, TypeError) as err:
        raise InputError(str(summary_path), None, f"this summary lacks {err} (written by "
                         f"hamisim {summary.get('hamisim_version')}, this is {__version__}); "
                         "run it again") from None
    return summary, spec, prepare(spec)


def write_run(result: SimResult, out: str | os.PathLike[str], fmt: str = "parquet",
              title: str = "", *, figure_workers: int = 1) -> Path:
    """Write a finished in-memory run: events, pods, timeseries (and per-group
    timeseries_groups), summary.json and figures/, atomically (``figure_workers`` as
    in :func:`run_to_folder`)."""
    with atomic_folder(out) as tmp:
        write_table(result.events, tmp, "events", fmt)
        if result.pods is not None:
            write_table(result.pods, tmp, "pods", fmt)
        _write_rest(result, tmp, fmt, title, figure_workers)
    return Path(out)


def run_to_folder(spec: RunSpec, prep: Prepared, out: str | os.PathLike[str],
                  fmt: str = "parquet", title: str = "", *,
                  figure_workers: int = 1) -> SimResult:
    """Run and write the results folder, the events and pods tables streamed to it
    in batches as the run goes (memory flat in the number of pods); the folder
    appears whole at the end, or not at all. The result's ``events`` and ``pods``
    are ``None``; ``timings["write"]`` is the time spent writing.

    ``figure_workers`` > 1 draws the figures on that many worker processes (at most
    one per figure, :func:`~hamisim.studies.workers.process_pool`) while this one
    writes the tables; the files are the same as drawn here. The workers come from
    the fork server: started early with
    :data:`~hamisim.studies.workers.FIGURE_MODULES` preloaded (``hamisim run`` does
    so before it reads its inputs), they start with matplotlib loaded. A worker
    that dies (killed, out of memory) costs nothing but time: the figures not yet
    drawn are drawn here."""
    with atomic_folder(out) as tmp:
        sink = TableFiles(tmp, fmt)
        try:
            result = run_prepared(spec, prep, sink=sink)
        finally:
            sink.close()
        started = perf_counter()
        _write_rest(result, tmp, fmt, title, figure_workers)
        result.timings["write"] = sink.seconds + perf_counter() - started
        result.timings["simulate"] -= sink.seconds
    return result


def _write_rest(result: SimResult, folder: Path, fmt: str, title: str,
                figure_workers: int = 1) -> None:
    from hamisim.plots import draw
    jobs = _figures(result.summary, result.timeseries, result.occupancy,
                    result.group_timeseries, folder / "figures", title, result.mig_timeseries,
                    result.family_timeseries)
    with _figure_pool(figure_workers, len(jobs)) as pool:
        # the dearest figures first, so that the last one to finish is a cheap one
        drawing: dict[str, cf.Future] = {}
        try:
            for job in (sorted(jobs, key=lambda j: -j.weight) if pool is not None else ()):
                drawing[job.name] = pool.submit(draw, job)
        except BrokenProcessPool:       # a worker died already: the rest are drawn here
            pass
        write_table(result.timeseries, folder, "timeseries", fmt)
        if result.group_timeseries is not None:
            write_table(result.group_timeseries, folder, "timeseries_groups", fmt)
        if result.mig_timeseries is not None:
            write_table(result.mig_timeseries, folder, "timeseries_mig", fmt)
        if result.family_timeseries is not None:
            write_table(result.family_timeseries, folder, "timeseries_families", fmt)
        if result.occupancy is not None:
            np.save(folder / "occupancy.npy", result.occupancy)
        write_json(result.summary, folder / "summary.json")
        for job in jobs:                # in order; a worker's error is raised here
            if job.name in drawing:
                try:
                    drawing[job.name].result()
                    continue
                except BrokenProcessPool:
                    # a worker died (killed: out of memory, a signal): the figures it
                    # and the others had not finished are drawn here, once no worker
                    # is left that could still be writing one
                    pool.shutdown(wait=True)
            draw(job)
    write_report(folder)        # embeds the PNGs as written: nothing is drawn twice


@contextlib.contextmanager
def _figure_pool(workers: int, jobs: int) -> Iterator[cf.ProcessPoolExecutor | None]:
    """A pool for a run's figures, or None to draw them in this process (one worker
    or one figure). On any exception (Ctrl-C included) the figures not started are
    dropped and those being drawn finish before it propagates, so no worker writes
    into a results folder that is being removed."""
    if min(workers, jobs) < 2:
        yield None
        return
    pool = process_pool(min(workers, jobs))
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def sample_interval(spec: RunSpec, workload: Trace) -> float | None:
    """The time-series resolution of a run: ``spec.sample_interval`` when set (0 =
    every event time), else every event time up to :data:`MAX_EVENT_ROWS` rows,
    and beyond that the interval that spreads about half of them over the
    workload's arrivals (a replay has about two event times per pod)."""
    if spec.sample_interval is not None:
        return spec.sample_interval or None
    if spec.mode != "replay" or 2 * len(workload) <= MAX_EVENT_ROWS:
        return None
    span = arrival_span(workload)
    return max(span, 1.0) / (MAX_EVENT_ROWS / 2)


def _figures(summary: dict, ts: pd.DataFrame, occupancy, groups_ts, folder: Path,
             title: str = "", mig_ts: pd.DataFrame | None = None,
             family_ts: pd.DataFrame | None = None) -> list:
    """The figures of a run, titled with its policies, workload and cluster, as
    :class:`~hamisim.plots.FigureJob` s (:func:`~hamisim.plots.draw` draws one)."""
    from hamisim.plots import run_figures
    fill = summary.get("inputs", {}).get("mode") == "fill"
    results = summary.get("results", {})
    context = _context(summary)
    peak = (results["peak_time_s"], results["peak_gpu_allocated"]) \
        if "peak_time_s" in results else None
    runs = [tuple(r) for r in summary.get("cluster", {}).get("group_runs", [])]
    return run_figures(ts, occupancy, folder, fill, title or summary.get("label", ""),
                       context=context, peak=peak, groups_ts=groups_ts, group_runs=runs,
                       mig_ts=mig_ts, family_ts=family_ts)


#: the columns a comparison reports, by mode: what matters in a replay (waits,
#: allocation over time) and in the FGD fill protocol (what is left unallocated)
COMPARE_COLUMNS = {
    "replay": ("policy", "seed", "bound", "abandoned", "pending_at_end", "pending_p50_s",
               "pending_p99_s", "pending_max_s", "mean_gpu_allocated_pct",
               "mean_stranded_pct_of_capacity", "mean_frag_pct_of_capacity",
               "cross_numa_pct", "pairs_without_nvlink_pct", "mean_pair_score",
               "mig_slots_used_mean_pct", "mig_slots_stranded_mean_pct"),
    "fill": ("policy", "seed", "bound", "abandoned", "peak_gpu_allocated",
             "mean_frag_pct_of_capacity", "final_unallocated_gpu_pct"),
}


def compare(specs: Sequence[RunSpec], out: str | os.PathLike[str], fmt: str = "parquet",
            announce: Callable[[str], None] | None = None, *, workers: int = 1,
            keep_runs: bool = False) -> pd.DataFrame:
    """Run every spec and write the comparison; return its table (a row per run).

    ``out`` gets ``compare`` (the headline figures of every run), ``compare_classes``
    and ``compare_groups`` (per pod class and per node group), in fill mode the
    ``curves`` table (FGD's binning, :mod:`hamisim.studies.fillcurves`),
    ``figures/compare.png`` and ``runs/<policy>-seed<k>/`` with each run's time series
    and summary, or with ``keep_runs`` its whole results folder (events, pods, figures:
    ``hamisim explain --run`` works on it). ``workers`` > 1 runs them on that many
    processes; the outputs are the same. ``announce`` receives the default-timing
    notice of the first run, if any.
    """
    if not specs:
        raise ValueError("compare needs at least one run")
    first = prepare(specs[0])         # its warnings and timing notice, once, before the runs
    notice = default_timing_notice(first) if announce else None
    if notice:
        announce(notice + (" (each seed draws its own)" if len(specs) > 1 else ""))
    s = first.cluster.scheduler
    readable = sorted({p for spec in specs if spec.backend is None
                       for p in (spec.node_policy or s.node_scheduler_policy,
                                 spec.gpu_policy or s.gpu_scheduler_policy)
                       if default_backend(p, None) == "reference"})
    if readable and announce:
        others = any(spec.backend is not None or default_backend(
            spec.node_policy or s.node_scheduler_policy,
            spec.gpu_policy or s.gpu_scheduler_policy) == "kernel" for spec in specs)
        announce(f"{', '.join(readable)} runs on the readable backend (--backend reference)"
                 + ("; the other policies on the kernel" if others else ""))
    from hamisim.plots import plot_compare, plot_fill_curves, plot_placement
    names = _run_names(specs, first.cluster.scheduler)
    fill = specs[0].mode == "fill"
    with atomic_folder(out) as tmp:
        (tmp / "runs").mkdir()
        jobs = [(spec, str(tmp / "runs" / name), fmt, keep_runs)
                for spec, name in zip(specs, names)]
        if workers > 1 and len(jobs) > 1:
            # no progress bars from processes running side by side
            jobs = [(dataclasses.replace(s, progress=False), *rest) for s, *rest in jobs]
            with process_pool(min(workers, len(jobs))) as pool:
                outcomes = list(pool.map(_compare_one, jobs))
        else:
            outcomes = [_compare_one(job, first if k == 0 else None)
                        for k, job in enumerate(jobs)]
        rows, classes, groups, series, curve_parts = [], [], [], {}, []
        for spec, (summary, ts) in zip(specs, outcomes):
            label, r = summary["label"], summary["results"]
            key = {"policy": label,
                   "node_policy": summary["scheduler"]["node_scheduler_policy"],
                   "gpu_policy": summary["scheduler"]["gpu_scheduler_policy"], "seed": spec.seed,
                   "init_container_usage": summary["scheduler"]["init_container_usage"]}
            inputs = summary["inputs"]
            rows.append({**key, **{k: v for k, v in r.items()
                                   if not isinstance(v, (dict, list))},
                         # which engine ran it (each run says so, as a run's summary does)
                         "engine": inputs.get("engine"),
                         "engine_reason": inputs.get("engine_reason"),
                         # the span its headline figures cover (None: the whole run)
                         **window_columns(r),
                         # HAMi #2965's double-booking in this run (hamisim.hami.quirks)
                         **quirk_columns(r),
                         **{k: summary["workload"].get(k) for k in (
                             "offered_gpu_load_as_given", "offered_gpu_load")}})
            classes += [{**key, **c} for c in r.get("classes", [])]
            groups += [{**key, **g} for g in r.get("groups", [])]
            series.setdefault(label, []).append(ts)
            if fill:
                curve_parts.append(curves(ts, label, spec.seed))
        table = pd.DataFrame(rows)
        write_table(table, tmp, "compare", fmt)
        write_table(pd.DataFrame(classes), tmp, "compare_classes", fmt)
        write_table(pd.DataFrame(groups), tmp, "compare_groups", fmt)
        (tmp / "figures").mkdir()
        if fill:
            table_c = pd.concat(curve_parts, ignore_index=True)
            write_table(table_c, tmp, "curves", fmt)
            plot_fill_curves(table_c, tmp / "figures" / "compare.png",
                             context=_context(outcomes[0][0]))
        else:
            plot_compare(series, tmp / "figures" / "compare.png", fill,
                         context=_context(outcomes[0][0]))
        placed = [{"policy": s["label"], "pending_p99_s": s["results"].get("pending_p99_s", 0.0),
                   "placement_by_gpus": s["results"]["placement_by_gpus"]}
                  for s, _ in outcomes if s["results"].get("multi_gpu_pods")]
        if placed:
            plot_placement(placed, tmp / "figures" / "placement.png",
                           context=_context(outcomes[0][0]))
        write_report(tmp)
    return table


def window_columns(results: Mapping) -> dict[str, float | None]:
    """``window_start_s`` / ``window_end_s`` of a run's headline figures, for the
    tables of compare and sweep (``None``: the whole run)."""
    w = results.get("window") or {}
    return {"window_start_s": w.get("start_s"), "window_end_s": w.get("end_s")}


def _compare_one(job: tuple, prep: Prepared | None = None) -> tuple[dict, pd.DataFrame]:
    """One run of a comparison, its folder written; (summary, time series)."""
    spec, folder, fmt, keep = job
    prep = prep if prep is not None else prepare(spec)
    if keep:
        result = run_to_folder(spec, prep, folder, fmt)
    else:
        result = run_prepared(spec, prep, sink=DISCARD)
        Path(folder).mkdir(parents=True)
        write_table(result.timeseries, Path(folder), "timeseries", fmt)
        write_json(result.summary, Path(folder) / "summary.json")
    return result.summary, result.timeseries


class DiscardSink:
    """A sink for tables nobody keeps (a comparison without --keep-runs, a sweep
    cell whose events are not asked for): the recorder does not even build them."""

    discards = True

    def write(self, name: str, table) -> None:
        pass


DISCARD = DiscardSink()


def _run_names(specs: Sequence[RunSpec], scheduler) -> list[str]:
    """``<policy>-seed<k>`` per run, numbered when a research node policy labels
    several card policies alike."""
    names, seen = [], set()
    for spec in specs:
        node = spec.node_policy or scheduler.node_scheduler_policy
        card = spec.gpu_policy or scheduler.gpu_scheduler_policy
        label = node if on_research_model(node) else f"node={node} card={card}"
        if spec.init_container_usage:
            label += f" init={spec.init_container_usage}"
        base = f"{_slug(label)}-seed{spec.seed}"
        name = next(n for k in itertools.count(1)
                    if (n := base + (f"-{k}" if k > 1 else "")) not in seen)
        seen.add(name)
        names.append(name)
    return names


def _plot_compare_folder(folder: Path) -> list[Path]:
    """Redraw a comparison's figure from its runs' time series (and curves)."""
    from hamisim.plots import plot_compare, plot_fill_curves
    figures = folder / "figures"
    figures.mkdir(exist_ok=True)
    curves_path = _table_path(folder, "curves")
    runs = sorted(p for p in (folder / "runs").iterdir() if p.is_dir()) \
        if (folder / "runs").is_dir() else []
    if curves_path is not None:
        context = _context(json.loads((runs[0] / "summary.json").read_text())) if runs else ""
        return [plot_fill_curves(read_table(curves_path), figures / "compare.png",
                                 context=context)]
    series: dict[str, list[pd.DataFrame]] = {}
    context = ""
    for run_dir in runs:
        summary = json.loads((run_dir / "summary.json").read_text())
        ts_path = _table_path(run_dir, "timeseries")
        if ts_path is None:
            raise FileNotFoundError(f"{run_dir}: no timeseries.parquet or timeseries.csv")
        series.setdefault(summary["label"], []).append(read_table(ts_path))
        context = context or _context(summary)
    if not series:
        raise FileNotFoundError(f"{folder}: a comparison folder without runs/")
    return [plot_compare(series, figures / "compare.png", False, context=context)]


def _slug(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in label).strip("_")


def plot_folder(folder: str | os.PathLike[str]) -> list[Path]:
    """Redraw the figures of a results folder written by :func:`write_run` or
    :func:`compare`."""
    folder = Path(folder)
    if any((folder / f"compare.{ext}").exists() for ext in ("parquet", "csv")):
        return _plot_compare_folder(folder)
    ts_path = _table_path(folder, "timeseries")
    if ts_path is None:
        raise FileNotFoundError(f"{folder}: no timeseries.parquet or timeseries.csv")
    summary = json.loads((folder / "summary.json").read_text())
    occ_path = folder / "occupancy.npy"
    occ = np.load(occ_path) if occ_path.exists() else None
    groups_path = _table_path(folder, "timeseries_groups")
    groups_ts = read_table(groups_path) if groups_path is not None else None
    mig_path = _table_path(folder, "timeseries_mig")
    mig_ts = read_table(mig_path) if mig_path is not None else None
    families_path = _table_path(folder, "timeseries_families")
    family_ts = read_table(families_path) if families_path is not None else None
    from hamisim.plots import draw
    jobs = _figures(summary, read_table(ts_path), occ, groups_ts, folder / "figures",
                    mig_ts=mig_ts, family_ts=family_ts)
    return [p for p in map(draw, jobs) if p is not None]


def _context(summary: dict) -> str:
    """The workload and the cluster of a run, a line each, for figure titles."""
    return "\n".join(d for d in (summary.get("workload", {}).get("description"),
                                 summary.get("cluster", {}).get("description")) if d)


def _table_path(folder: Path, name: str) -> Path | None:
    return next((p for p in (folder / f"{name}.parquet", folder / f"{name}.csv")
                 if p.exists()), None)


def policy_grid(node_policies: Sequence[str], gpu_policies: Sequence[str], seeds: int,
                base: RunSpec, usages: Sequence[str | None] = (None,)) -> list[RunSpec]:
    """Every node policy x card policy x seed (x ``init_container_usage`` override,
    when several are given), on top of ``base``."""
    if list(usages) == [None]:
        usages = [base.init_container_usage]
    return [dataclasses.replace(base, node_policy=n, gpu_policy=g, seed=base.seed + k,
                                init_container_usage=u)
            for u, n, g, k in itertools.product(usages, node_policies, gpu_policies,
                                                range(seeds))]
