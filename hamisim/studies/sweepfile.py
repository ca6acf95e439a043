"""Sweep files: every combination of clusters, workloads, policies and seeds, as cells.

A *sweep file* (``.yaml``, ``.yml`` or ``.json``; DESIGN §4.5) names the axes::

    cluster:                         # a path, a list of entries, or one entry:
      file: pool.yaml                #   a cluster file (paths are relative to the sweep file)
      vary: gpu                      #   a node group of that file (its name_prefix or name) ...
      replicas: [4, 6, 8]            #   ... and its sizes, or {from: 4, to: 12, step: 2}
    workload:
      trace: openb:default           # a trace path, a bundled openb variant, or a list
      mode: replay                   # replay | fill
      load: [0.6, 0.8]               # re-timed replay: offered GPU load of each cell's cluster
      # offered_gpus: 400            #   ... or mean GPUs requested at once, the same stream
      #                              #   for every cluster size (capacity planning)
      # as_traced: true              #   ... or the trace's own timestamps (the default for
      #                              #   native traces; openb pod lists are re-timed to 0.8)
      # scale: [1.0, 1.3]            #   ... or the trace's own pods x F, keeping their
      #                              #   times (hamisim.workload.scale; not with load)
      n_pods: 4000                   # pods drawn by the re-timing (default: each pod once;
                                     #   openb: 40000)
      max_lifetime: 3600             # lifetimes capped (s); null = no cap (default: none;
                                     #   openb: 3600)
      retry: backoff                 # backoff | none
      # fill_to: [100, 130]          # fill mode: submit until this % of the GPUs is asked
    policies:                        # HAMi's names, as in a cluster file's scheduler: block
      node_scheduler_policy: [binpack, spread]
      gpu_scheduler_policy: [spread, "mutex,binpack"]
      # or a list of {node_scheduler_policy: ..., gpu_scheduler_policy: ...} combinations
    seeds: 3                         # seeds 0, 1, 2; or a list of seeds
    backend: kernel                  # kernel | reference (default: kernel; reference for
                                     # the cells with a python: policy)
    cell_outputs: [timeseries]       # per-cell tables besides summary.json: timeseries, events,
                                     # metrics ([] = summary.json only)
    # metrics_start: 2026-11-30T00:00:00Z  # with metrics: the wall-clock time of simulated
    # metrics_interval: 60                 #   time 0 and the seconds between samples

Every value of the workload and policy blocks may be one value or a list; the
cells are the cartesian product. A cell's identity is a hash of its inputs
(cluster and trace *contents*, every parameter, hamisim's version), computed
by :func:`make_cell`; :mod:`hamisim.studies.sweep`, which runs the cells, names each
cell's folder after it. :func:`parse_grid` reads the axes shared by sweep and
plan files (:mod:`hamisim.studies.plan`).
"""
from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from hamisim._version import __version__
from hamisim.errors import InputError
from hamisim.hami.policy import warn_policy
from hamisim.io.bundled import workloads_dir
from hamisim.io.clusterfile import MAX_REPLICAS
from hamisim.io.documents import Doc, Value, load_mapping
from hamisim.registry import is_plugin_policy
from hamisim.research.plugins import check_policy, default_backend, on_research_model, plugin_file

__all__ = [
    "InputFile", "Cell", "make_cell", "ClusterAxis", "Sweep", "load_sweep",
    "sweep_from_document", "parse_grid", "SWEEP_KEYS", "CLUSTER_ENTRY_KEYS", "WORKLOAD_KEYS",
    "POLICY_KEYS", "RANGE_KEYS", "CELL_OUTPUTS", "OPENB_TRACES", "OPENB_CLUSTERS",
]

SWEEP_KEYS = frozenset({"cluster", "workload", "policies", "seeds", "backend", "cell_outputs",
                        "metrics_start", "metrics_interval"})
CLUSTER_ENTRY_KEYS = frozenset({"file", "vary", "replicas"})
WORKLOAD_KEYS = frozenset({"trace", "mode", "load", "offered_gpus", "as_traced", "n_pods", "scale",
                           "max_lifetime", "retry", "fill_to"})
POLICY_KEYS = frozenset({"node_scheduler_policy", "gpu_scheduler_policy",
                         "percentage_of_nodes_to_score", "node_tie_break"})
RANGE_KEYS = frozenset({"from", "to", "step"})
CELL_OUTPUTS = ("timeseries", "events", "metrics")

#: bundled openb inputs by the names a sweep file may use (``openb:<name>``)
OPENB_TRACES = {v: f"openb_pod_list_{v}.csv"
                for v in ("default", "cpu050", "gpushare40", "gpuspec10", "multigpu20")}
OPENB_CLUSTERS = {"gpu_node": "openb_node_list_gpu_node.csv",
                  "all_node": "openb_node_list_all_node.csv"}


# ---------------------------------------------------------------------------
# the model

@dataclass(frozen=True)
class InputFile:
    """A file cells read, identified by its content.

    ``label`` is how the sweep file names it (shown in tables and messages),
    ``path`` where the submitting machine reads it; workers receive the bytes.
    """

    label: str
    path: str
    sha256: str
    #: a trace's :attr:`hamisim.workload.Trace.format` (``csv``, ``openb``, ...);
    #: it decides the default timing of a replay
    format: str = ""

    @property
    def name(self) -> str:
        """The file name (its extension picks the reader)."""
        return os.path.basename(self.path)


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: every input fixed. ``id`` is a hash of them all."""

    id: str
    cluster: InputFile
    group: str | None
    replicas: int | None
    trace: InputFile
    mode: str
    load: float | None
    offered_gpus: float | None
    n_pods: int | None
    max_lifetime: float | None
    fill_to: float | None
    retry: str | None
    node_policy: str | None
    gpu_policy: str | None
    percentage_of_nodes_to_score: int | None
    node_tie_break: str | None
    seed: int
    backend: str
    #: the trace's own pods x this factor (hamisim.workload.scale), None = as given
    scale: float | None = None
    #: further node groups resized with ``group`` (a plan varying several groups):
    #: (group, replicas) pairs, in the plan's order
    also: tuple[tuple[str, int], ...] = ()

    @property
    def resize(self) -> dict[str, int] | None:
        """The node groups this cell resizes: ``group`` and those of ``also``."""
        if self.group is None:
            return None
        return {self.group: int(self.replicas or 0), **dict(self.also)}

    @property
    def label(self) -> str:
        """The policy label of tables and plots (``node=<p> card=<p>``)."""
        if on_research_model(self.node_policy):
            return str(self.node_policy)
        return f"node={self.node_policy or 'default'} card={self.gpu_policy or 'default'}"

    def params(self) -> dict[str, Any]:
        """The cell's input columns of the results table."""
        return {"cell": self.id, "cluster": self.cluster.label, "group": self.group,
                "replicas": self.replicas, "trace": self.trace.label, "mode": self.mode,
                "load": self.load, "offered_gpus": self.offered_gpus, "n_pods": self.n_pods,
                "max_lifetime_s": self.max_lifetime, "fill_to_pct": self.fill_to,
                "retry": self.retry, "node_policy": self.node_policy,
                "gpu_policy": self.gpu_policy,
                "percentage_of_nodes_to_score": self.percentage_of_nodes_to_score,
                "node_tie_break": self.node_tie_break, "policy": self.label,
                "seed": self.seed, "backend": self.backend, "scale": self.scale,
                **({"sizes": " ".join(f"{g}={n}" for g, n in self.resize.items())}
                   if self.also and self.resize else {})}

    def identity(self) -> dict[str, Any]:
        """Everything the results depend on (the id is a hash of this)."""
        return _identity(self)


def _identity(c: Cell | dict) -> dict[str, Any]:
    get = c.get if isinstance(c, dict) else (lambda k: getattr(c, k))
    ident = {k: get(k) for k in (
        "group", "replicas", "mode", "load", "offered_gpus", "n_pods", "max_lifetime",
        "fill_to", "retry", "node_policy", "gpu_policy", "percentage_of_nodes_to_score",
        "node_tie_break", "seed", "backend")}
    if get("scale") is not None:      # absent otherwise: earlier cells keep their ids
        ident["scale"] = get("scale")
    also = get("also") if isinstance(c, Cell) or "also" in c else ()
    if also:                          # as scale: absent otherwise
        ident["also"] = [list(pair) for pair in also]
    ident["cluster_sha256"] = get("cluster").sha256
    ident["trace_sha256"] = get("trace").sha256
    for key in ("node_policy", "gpu_policy"):
        # a user's Python policy: a changed file is a new cell (not the modules it imports)
        if is_plugin_policy(get(key)):
            ident[f"{key}_sha256"] = _sha256(plugin_file(get(key)))
    ident["hamisim_version"] = __version__
    return ident


def make_cell(**fields: Any) -> Cell:
    """A :class:`Cell` from its fields (``id`` computed)."""
    text = json.dumps(_identity(fields), sort_keys=True, separators=(",", ":"))
    return Cell(id=hashlib.sha256(text.encode()).hexdigest()[:16], **fields)


@dataclass(frozen=True)
class ClusterAxis:
    """One ``cluster`` entry: a file, optionally a node group and its sizes."""

    file: InputFile
    group: str | None = None
    replicas: tuple[int, ...] = ()
    line: int = 0


@dataclass(frozen=True)
class Sweep:
    """A loaded sweep file: its cells in expansion order."""

    path: str
    cells: tuple[Cell, ...]
    cell_outputs: frozenset[str] = frozenset({"timeseries"})
    #: with the ``metrics`` output: (Unix time of simulated time 0, seconds between samples)
    metrics: tuple[float, float] | None = None


# ---------------------------------------------------------------------------
# loading

@dataclass
class _Grid:
    """The axes of a sweep or plan file before expansion."""

    clusters: list[ClusterAxis]
    traces: list[InputFile]
    workloads: list[dict[str, Any]]
    policies: list[dict[str, Any]]
    seeds: list[int]
    backend: str | None          # None: per cell, the kernel unless a policy is in Python
    cell_outputs: frozenset[str]
    metrics: tuple[float, float] | None = None

    def cells(self, replicas_override: Iterable[int] | None = None) -> list[Cell]:
        out = []
        for cl in self.clusters:
            sizes: Sequence[int | None]
            if replicas_override is not None:
                sizes = list(replicas_override)
            else:
                sizes = list(cl.replicas) or [None]
            for r, trace, wl, pol, seed in itertools.product(
                    sizes, self.traces, self.workloads, self.policies, self.seeds):
                backend = self.backend or default_backend(pol.get("node_policy"),
                                                          pol.get("gpu_policy"))
                out.append(make_cell(cluster=cl.file, group=cl.group, replicas=r, trace=trace,
                                     seed=seed, backend=backend,
                                     **resolve_workload(wl, trace.format), **pol))
        return out


def resolve_workload(wl: Mapping[str, Any], trace_format: str) -> dict[str, Any]:
    """A workload block's values for one trace, defaults resolved as ``hamisim run``
    resolves them (:func:`hamisim.studies.runs.resolve_timing`): a native trace as
    traced unless ``load`` or ``offered_gpus`` is given, an openb pod list re-timed.
    ``load``, ``n_pods`` and ``max_lifetime`` (``None`` = no cap) come out as the
    cell runs them; a replay with neither ``load`` nor ``offered_gpus`` is as traced.
    Raises ``ValueError`` for knobs that do not apply."""
    from hamisim.studies.runs import resolve_timing
    out = {k: v for k, v in wl.items() if k != "as_traced"}
    if wl["mode"] != "replay":
        return out
    offered = wl["offered_gpus"] is not None
    timing = resolve_timing(trace_format, as_traced=False if offered else wl["as_traced"],
                            load=None if offered else wl["load"], n_pods=wl["n_pods"],
                            max_lifetime=wl["max_lifetime"])
    out.update(load=timing.load if timing.retimed and not offered else None,
               n_pods=timing.n_pods if timing.retimed else None,
               max_lifetime=timing.max_lifetime if timing.retimed else None)
    return out


def load_sweep(path: str | os.PathLike[str]) -> Sweep:
    """Load and validate a sweep file; raises :class:`InputError` (``file:line:``)."""
    name = os.fspath(path)
    return sweep_from_document(load_mapping(name), name)


def sweep_from_document(doc: Doc, path: str) -> Sweep:
    """A :class:`Sweep` from a loaded top-level mapping."""
    doc.check_keys(SWEEP_KEYS, "a sweep file")
    grid = parse_grid(doc, path, single=False)
    cells = grid.cells()
    seen: dict[str, Cell] = {}
    for c in cells:
        if c.id in seen:
            raise InputError(path, None, f"the sweep lists the same cell twice ({c.params()})")
        seen[c.id] = c
    return Sweep(path=path, cells=tuple(cells), cell_outputs=grid.cell_outputs,
                 metrics=grid.metrics)


def parse_grid(doc: Doc, path: str, *, single: bool) -> _Grid:
    """The shared axes of sweep and plan files. ``single``: every axis but the
    seeds takes one value (a plan), and a varied group needs no ``replicas``."""
    base = Path(path).resolve().parent
    clusters = _clusters(doc.get("cluster"), base, single=single)
    wl_doc = doc.optional_doc("workload")
    if wl_doc is None:
        wl_doc = Doc(doc.path, doc.line, children={}, key_lines={})
    wl_doc = wl_doc.with_context("workload")
    wl_doc.check_keys(WORKLOAD_KEYS, "'workload'")
    traces = _traces(wl_doc.get("trace"), base, single=single)
    workloads = _workloads(wl_doc, single=single)
    for trace in traces:
        for wl in workloads:
            try:
                resolve_workload(wl, trace.format)
            except ValueError as exc:
                key = next(k for k in ("n_pods", "max_lifetime", "load") if k in wl_doc)
                text = exc.args[0]
                for cli in (" (--load X)", " (--load)", " (--pods)", " (--max-lifetime)",
                            " (--as-traced)"):
                    text = text.replace(cli, "")
                raise wl_doc.error(f"{text} (trace {trace.label})",
                                   line=wl_doc.key_line(key)) from None
    policies = _policies(doc.get("policies"), single=single)
    seeds = _seeds(doc.get("seeds"))
    backend = doc.optional_str("backend")
    if backend not in (None, "kernel", "reference"):
        raise doc.get("backend").error(f"'backend' must be 'kernel' or 'reference', got "
                                       f"{backend!r}")
    outputs = frozenset({"timeseries"})
    ov = doc.get("cell_outputs")
    if ov is not None and ov.is_list and not ov.as_list("'cell_outputs'"):
        outputs = frozenset()           # summary.json only
    elif ov is not None and not ov.is_null:
        outputs = frozenset(v.scalar for v, _ in _values(
            ov, "'cell_outputs'", lambda v, w: _choice(v, w, CELL_OUTPUTS), single=False))
    return _Grid(clusters, traces, workloads, policies, seeds, backend, outputs,
                 _metrics(doc, "metrics" in outputs))


def _metrics(doc: Doc, wanted: bool) -> tuple[float, float] | None:
    """``metrics_start`` and ``metrics_interval``: needed by, and only with, the
    ``metrics`` cell output (``hamisim run --metrics-start/--metrics-interval``)."""
    from hamisim.studies.openmetrics import DEFAULT_INTERVAL, parse_start
    start, interval = doc.get("metrics_start"), doc.get("metrics_interval")
    if not wanted:
        for key, value in (("metrics_start", start), ("metrics_interval", interval)):
            if value is not None:
                raise value.error(f"'{key}' is for the metrics cell output: add metrics to "
                                  "'cell_outputs'")
        return None
    if start is None or start.is_null:
        raise doc.error("the metrics cell output needs 'metrics_start', the wall-clock time "
                        "of simulated time 0 (e.g. metrics_start: 2026-11-30T00:00:00Z)",
                        line=doc.key_line("cell_outputs"))
    try:
        seconds = parse_start(str(start.scalar))
    except ValueError as exc:
        raise start.error(f"'metrics_start': {exc}") from None
    step = DEFAULT_INTERVAL
    if interval is not None and not interval.is_null:
        step = interval.scalar
        if isinstance(step, bool) or not isinstance(step, (int, float)) \
                or not 0 < step < math.inf:
            raise interval.error(f"'metrics_interval' must be a positive number of seconds, "
                                 f"got {interval.describe()}")
    return seconds, float(step)


# -- value helpers ------------------------------------------------------------

def _values(v: Value, what: str, conv: Callable[[Value, str], Any], *,
            single: bool) -> list[tuple[Value, Any]]:
    """``v`` as a list of converted values (a scalar is a list of one)."""
    if v.is_list:
        items = v.as_list(what)
        if single and len(items) != 1:
            raise v.error(f"{what}: a plan takes one value here, not a list")
        if not items:
            raise v.error(f"{what} is an empty list")
    else:
        items = [v]
    out: list[tuple[Value, Any]] = []
    seen: dict[str, int] = {}
    for item in items:
        value = conv(item, what)
        key = json.dumps(value, sort_keys=True, default=str)
        if key in seen:
            raise item.error(f"{what}: {value!r} is listed twice (first on line {seen[key]})")
        seen[key] = item.line
        out.append((item, value))
    return out


def _number(v: Value, what: str, *, lo: float = 0.0, hi: float | None = None,
            lo_open: bool = True) -> float:
    data = v.scalar
    if v.is_mapping or v.is_list or isinstance(data, bool) or not isinstance(data, (int, float)):
        raise v.error(f"{what} must be a number, got {v.describe()}")
    if not math.isfinite(data):
        raise v.error(f"{what} must be a finite number, got {data!r}")
    if (data <= lo) if lo_open else (data < lo):
        raise v.error(f"{what} must be {'>' if lo_open else '>='} {lo:g}, got {data!r}")
    if hi is not None and data > hi:
        raise v.error(f"{what} must be at most {hi:g}, got {data!r}")
    return float(data)


def _choice(v: Value, what: str, allowed: Sequence[str]) -> str:
    text = v.as_str(what)
    if text not in allowed:
        hint = difflib.get_close_matches(text, list(allowed), n=1)
        raise v.error(f"{what} must be one of {', '.join(allowed)}, got {text!r}"
                      + (f"; did you mean '{hint[0]}'?" if hint else ""))
    return text


def _sha256(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _input_file(v: Value, what: str, base: Path, bundled: Mapping[str, str]) -> InputFile:
    text = v.as_str(what, nonempty=True)
    if text.startswith("openb:"):
        variant = text[len("openb:"):]
        if variant not in bundled:
            hint = difflib.get_close_matches(variant, list(bundled), n=1)
            raise v.error(f"{what}: no bundled openb file '{variant}' (known: "
                          f"{', '.join('openb:' + k for k in bundled)})"
                          + (f"; did you mean 'openb:{hint[0]}'?" if hint else ""))
        path = workloads_dir() / "openb" / bundled[variant]
    else:
        path = Path(text).expanduser()
        if not path.is_absolute():
            path = base / path
    if not path.is_file():
        raise v.error(f"{what}: no such file: {text} (relative paths start at the folder "
                      "of the sweep file)")
    try:
        sha = _sha256(path)
    except OSError as exc:
        raise v.error(f"{what}: cannot read {text}: {exc.strerror or exc}") from None
    return InputFile(label=text, path=str(path), sha256=sha)


# -- clusters -------------------------------------------------------------------

def _clusters(v: Value | None, base: Path, *, single: bool) -> list[ClusterAxis]:
    if v is None or v.is_null:
        default = workloads_dir() / "openb" / OPENB_CLUSTERS["gpu_node"]
        return [ClusterAxis(InputFile("openb:gpu_node", str(default), _sha256(default)))]
    entries = [v] if not v.is_list else v.as_list("'cluster'")
    if v.is_list and not entries:
        raise v.error("'cluster' is an empty list")
    if single and len(entries) != 1:
        raise v.error("'cluster': a plan takes one cluster entry, not a list")
    out: list[ClusterAxis] = []
    seen: dict[tuple, int] = {}
    for pos, item in enumerate(entries):
        axis = _cluster_entry(item, base, single=single, pos=pos if v.is_list else None)
        key = (axis.file.sha256, axis.group)
        if key in seen:
            raise item.error(f"this cluster entry repeats the one on line {seen[key]}")
        seen[key] = item.line
        out.append(axis)
    return out


def _cluster_entry(item: Value, base: Path, *, single: bool, pos: int | None) -> ClusterAxis:
    what = "'cluster'" if pos is None else f"'cluster' entry {pos}"
    if not item.is_mapping:
        f = _input_file(item, what, base, OPENB_CLUSTERS)
        _validate_cluster(f)
        return ClusterAxis(f, line=item.line)
    doc = item.as_doc(what)
    doc.check_keys(CLUSTER_ENTRY_KEYS, f"a {what} mapping")
    f = _input_file(doc.require("file"), "'file'", base, OPENB_CLUSTERS)
    _validate_cluster(f)
    group = doc.optional_str("vary", nonempty=True)
    rv = doc.get("replicas")
    if group is None:
        if rv is not None:
            raise doc.error("'replicas' needs 'vary': the node group whose replicas change",
                            line=doc.key_line("replicas"))
        return ClusterAxis(f, line=doc.line)
    _check_group(f, doc.get("vary"), group)
    if single:
        if rv is not None:
            raise doc.error("a plan searches the replicas itself: give the range under "
                            "'search' (min, max), not 'replicas' here",
                            line=doc.key_line("replicas"))
        return ClusterAxis(f, group, (), doc.line)
    if rv is None or rv.is_null:
        raise doc.error(f"'vary: {group}' needs 'replicas': a list of node counts or "
                        "{from: A, to: B, step: S}")
    return ClusterAxis(f, group, tuple(_replicas(rv)), doc.line)


def _replicas(v: Value) -> list[int]:
    if v.is_mapping:
        r = v.as_doc("'replicas'")
        r.check_keys(RANGE_KEYS, "a 'replicas' range")
        lo = r.require_int("from", min=1, max=MAX_REPLICAS)
        hi = r.require_int("to", min=1, max=MAX_REPLICAS)
        step = r.optional_int("step", 1, min=1, max=MAX_REPLICAS)
        if hi < lo:
            raise r.error(f"'replicas': 'to' ({hi}) is below 'from' ({lo})")
        sizes = list(range(lo, hi + 1, step))
        if len(sizes) > 10_000:
            raise r.error(f"'replicas' range gives {len(sizes)} sizes (at most 10000)")
        return sizes
    return [x for _, x in _values(
        v, "'replicas'", lambda x, w: x.as_int(w, min=1, max=MAX_REPLICAS), single=False)]


def _validate_cluster(f: InputFile) -> None:
    """Load the cluster once, so a broken cluster file stops the sweep before it starts."""
    from hamisim.io.clusterfile import cluster_from_path
    cluster_from_path(f.path)


def _group_entries(data: Any) -> dict[str, int]:
    """Node-group names (``name_prefix`` or ``name``) -> position in ``nodes``."""
    groups: dict[str, int] = {}
    nodes = data.get("nodes") if isinstance(data, dict) else None
    for i, entry in enumerate(nodes or []):
        if isinstance(entry, dict) and "replicas" in entry:
            name = entry.get("name_prefix", entry.get("name"))
            if isinstance(name, str):
                groups[name] = i
    return groups


def _check_group(f: InputFile, where: Value, group: str) -> None:
    if os.path.splitext(f.path)[1].lower() not in (".yaml", ".yml", ".json"):
        raise where.error(f"'vary' needs a cluster file with node groups (.yaml/.json); "
                          f"{f.label} is not one")
    groups = _group_entries(load_mapping(f.path).data)
    if group not in groups:
        hint = difflib.get_close_matches(group, list(groups), n=1)
        known = ", ".join(groups) or "none"
        raise where.error(f"'vary': {f.label} has no node group '{group}' (node groups, "
                          f"entries with 'replicas': {known})"
                          + (f"; did you mean '{hint[0]}'?" if hint else ""))


# -- workload -------------------------------------------------------------------

def _traces(v: Value | None, base: Path, *, single: bool) -> list[InputFile]:
    from hamisim.io.traces import read_trace
    if v is None or v.is_null:
        default = workloads_dir() / "openb" / OPENB_TRACES["default"]
        return [InputFile("openb:default", str(default), _sha256(default), "openb")]
    files: list[InputFile] = []
    seen: dict[str, int] = {}
    for item, f in _values(v, "'trace'", lambda x, w: _input_file(x, w, base, OPENB_TRACES),
                           single=single):
        if f.sha256 in seen:
            raise item.error(f"'trace': {f.label} has the same content as the trace on line "
                             f"{seen[f.sha256]}")
        seen[f.sha256] = item.line
        # a broken trace stops the sweep before it starts; its format decides its timing
        files.append(replace(f, format=read_trace(f.path).format))
    return files


_REPLAY_ONLY = ("load", "offered_gpus", "as_traced", "n_pods", "max_lifetime", "retry", "scale")


def _workloads(doc: Doc, *, single: bool) -> list[dict[str, Any]]:
    mode = doc.optional_str("mode", "replay")
    if mode not in ("replay", "fill"):
        raise doc.get("mode").error(f"'mode' must be 'replay' or 'fill', got {mode!r}")

    def axis(key: str, conv: Callable[[Value, str], Any], default: list) -> list:
        v = doc.get(key)
        if v is None or (v.is_null and key != "max_lifetime"):
            return default
        if v.is_null:                   # max_lifetime: null = no cap
            return [None]
        return [x for _, x in _values(v, f"'{key}'", conv, single=single)]

    none = {"load": None, "offered_gpus": None, "n_pods": None, "max_lifetime": None,
            "fill_to": None, "retry": None, "as_traced": None, "scale": None}
    if mode == "fill":
        for key in _REPLAY_ONLY:
            if key in doc:
                raise doc.error(f"'{key}' applies to replay mode, not fill",
                                line=doc.key_line(key))
        fills = axis("fill_to", lambda x, w: _number(x, w, hi=1000.0), [130.0])
        return [{**none, "mode": "fill", "fill_to": f} for f in fills]
    if "fill_to" in doc:
        raise doc.error("'fill_to' applies to fill mode (mode: fill)",
                        line=doc.key_line("fill_to"))
    retries = axis("retry", lambda x, w: _choice(x, w, ("backoff", "none")), ["backoff"])
    as_traced = doc.optional_bool("as_traced", None)
    if "scale" in doc:              # the trace's own times, so no re-timing knob
        for key in ("load", "offered_gpus", "n_pods", "max_lifetime"):
            if key in doc:
                raise doc.error(f"'{key}' re-times the trace into Poisson arrivals; it does "
                                "not go with 'scale', which keeps the trace's own times",
                                line=doc.key_line(key))
        scales = axis("scale", _number, [])
        return [{**none, "mode": "replay", "as_traced": True, "scale": f, "retry": r}
                for f, r in itertools.product(scales, retries)]
    if as_traced:
        for key in ("load", "offered_gpus", "n_pods", "max_lifetime"):
            if key in doc:
                raise doc.error(f"'{key}' re-times the trace; it does not go with "
                                "'as_traced: true'", line=doc.key_line(key))
        return [{**none, "mode": "replay", "as_traced": True, "retry": r} for r in retries]
    if "load" in doc and "offered_gpus" in doc:
        raise doc.error("give 'load' (a fraction of each cell's GPUs) or 'offered_gpus' "
                        "(GPUs requested at once), not both", line=doc.key_line("offered_gpus"))
    loads: list[tuple[str, float | None]]
    if "offered_gpus" in doc:
        loads = [("offered_gpus", x) for x in axis("offered_gpus", _number, [])]
    else:
        loads = [("load", x) for x in axis("load", lambda x, w: _number(x, w, hi=10.0),
                                           [None])]
    n_pods = axis("n_pods", lambda x, w: x.as_int(w, min=1, max=100_000_000), [None])
    # null = no cap (inf here, None once resolved); absent = the trace's default
    lifetimes = [math.inf if x is None else x for x in axis(
        "max_lifetime", _number, ["default"])] if "max_lifetime" in doc else [None]
    return [{**none, "mode": "replay", "as_traced": as_traced, key: x, "n_pods": n,
             "max_lifetime": lt, "retry": r}
            for (key, x), n, lt, r in itertools.product(loads, n_pods, lifetimes, retries)]


# -- policies and seeds ---------------------------------------------------------

def _node_policy(v: Value, what: str) -> str:
    text = v.as_str(what, nonempty=True)
    # HAMi ranks nodes like binpack under any other string; hamisim does the
    # same and says so (README: policies HAMi ignores are not errors)
    warn_policy(f"{v.path}:{v.line}", text, "node", research_ok=True)
    check_policy(v.path, v.line, text, "node")
    return text


def _card_policy(v: Value, what: str) -> str:
    text = v.as_str(what, nonempty=True)
    warn_policy(f"{v.path}:{v.line}", text, "gpu")
    check_policy(v.path, v.line, text, "gpu")
    return text


_POLICY_CONV: dict[str, Callable[[Value, str], Any]] = {
    "node_scheduler_policy": _node_policy,
    "gpu_scheduler_policy": _card_policy,
    "percentage_of_nodes_to_score": lambda v, w: v.as_int(w, min=0, max=100),
    "node_tie_break": lambda v, w: _choice(v, w, ("last", "random")),
}
_POLICY_FIELD = {"node_scheduler_policy": "node_policy", "gpu_scheduler_policy": "gpu_policy",
                 "percentage_of_nodes_to_score": "percentage_of_nodes_to_score",
                 "node_tie_break": "node_tie_break"}


def _policies(v: Value | None, *, single: bool) -> list[dict[str, Any]]:
    empty = {f: None for f in _POLICY_FIELD.values()}
    if v is None or v.is_null:
        return [empty]
    if v.is_list:
        items = v.as_list("'policies'")
        if not items:
            raise v.error("'policies' is an empty list")
        if single and len(items) != 1:
            raise v.error("'policies': a plan evaluates one policy combination, not a list")
        combos, seen = [], {}
        for pos, item in enumerate(items):
            doc = item.as_doc(f"'policies' entry {pos}").with_context(f"policies entry {pos}")
            doc.check_keys(POLICY_KEYS, "a policy combination")
            combo = dict(empty)
            for key, val in doc.items():
                if val.is_list:
                    raise val.error(f"'{key}': one value per combination (use the mapping "
                                    "form of 'policies' for a product)")
                if not val.is_null:
                    combo[_POLICY_FIELD[key]] = _POLICY_CONV[key](val, f"'{key}'")
            key = json.dumps(combo, sort_keys=True)
            if key in seen:
                raise doc.error(f"this combination repeats the one on line {seen[key]}")
            seen[key] = doc.line
            combos.append(combo)
        return combos
    doc = v.as_doc("'policies'").with_context("policies")
    doc.check_keys(POLICY_KEYS, "'policies'")
    axes = []
    for key in ("node_scheduler_policy", "gpu_scheduler_policy",
                "percentage_of_nodes_to_score", "node_tie_break"):
        val = doc.get(key)
        if val is None or val.is_null:
            axes.append([None])
        else:
            axes.append([x for _, x in _values(val, f"'{key}'", _POLICY_CONV[key],
                                               single=single)])
    return [dict(zip(_POLICY_FIELD.values(), combo)) for combo in itertools.product(*axes)]


def _seeds(v: Value | None) -> list[int]:
    if v is None or v.is_null:
        return [0]
    if v.is_list:
        return [x for _, x in _values(v, "'seeds'", lambda x, w: x.as_int(w, min=0),
                                      single=False)]
    k = v.as_int("'seeds'", min=1, max=100_000)
    return list(range(k))
