"""Sweeps: every combination of clusters, workloads, policies and seeds, run as cells.

A *sweep file* (``.yaml``, ``.yml`` or ``.json``; DESIGN §4.4) names the axes::

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
      # as_traced: true              #   ... or the trace's own timestamps
      n_pods: 4000                   # pods drawn by the re-timing
      max_lifetime: 3600             # lifetimes capped (s); null = no cap
      retry: backoff                 # backoff | none
      # fill_to: [100, 130]          # fill mode: submit until this % of the GPUs is asked
    policies:                        # HAMi's names, as in a cluster file's scheduler: block
      node_scheduler_policy: [binpack, spread]
      gpu_scheduler_policy: [spread, "mutex,binpack"]
      # or a list of {node_scheduler_policy: ..., gpu_scheduler_policy: ...} combinations
    seeds: 3                         # seeds 0, 1, 2; or a list of seeds
    backend: kernel                  # kernel | reference
    cell_outputs: [timeseries]       # per-cell tables besides summary.json: timeseries, events
                                     # ([] = summary.json only)

Every value of the workload and policy blocks may be one value or a list; the
cells are the cartesian product. A cell's identity is a hash of its inputs
(cluster and trace *contents*, every parameter, hamisim's version), which
names its folder ``OUT/cells/<id>/``; ``cell.json`` is written last inside
that folder and the folder is moved into place atomically, so a cell is
either finished or absent. ``--resume`` skips finished cells.

Cells run in a local process pool (:class:`concurrent.futures.ProcessPoolExecutor`)
or on a Dask cluster through ``distributed.Client(...).get_executor()``. The
cluster and trace files travel with each cell as bytes, so workers need no
shared filesystem, only hamisim itself. Results come back to the submitting
process, which files each cell as it completes and finally writes
``OUT/results.<fmt>``: one row per cell, sorted by cell id, built from the
cells' ``cell.json`` files -- hence byte-identical whatever ran the cells and
in whatever order they finished.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import difflib
import hashlib
import itertools
import json
import math
import multiprocessing
import multiprocessing.util
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from collections import deque
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import __version__
from ._documents import Doc, Value, load_mapping
from .bundled import workloads_dir
from .clusterfile import MAX_REPLICAS
from .errors import HamisimError, InputError
from .outputs import FORMATS, atomic_folder, write_json, write_table
from .policy import PolicyWarning, warn_policy
from .research import is_research_policy

__all__ = [
    "InputFile", "Cell", "make_cell", "Sweep", "load_sweep", "sweep_from_document", "parse_grid",
    "run_sweep", "SweepOutcome", "CellRunner", "CellTask", "RunStats", "run_cell_task",
    "results_table", "write_results", "write_sweep_manifest", "read_cell_row", "plot_sweep",
    "prepare_out", "format_report", "INPUT_COLUMNS", "METRICS", "OPENB_TRACES",
    "OPENB_CLUSTERS",
]

SWEEP_KEYS = frozenset({"cluster", "workload", "policies", "seeds", "backend", "cell_outputs"})
CLUSTER_ENTRY_KEYS = frozenset({"file", "vary", "replicas"})
WORKLOAD_KEYS = frozenset({"trace", "mode", "load", "offered_gpus", "as_traced", "n_pods",
                           "max_lifetime", "retry", "fill_to"})
POLICY_KEYS = frozenset({"node_scheduler_policy", "gpu_scheduler_policy",
                         "percentage_of_nodes_to_score", "node_tie_break"})
RANGE_KEYS = frozenset({"from", "to", "step"})
CELL_OUTPUTS = ("timeseries", "events")

#: bundled openb inputs by the names a sweep file may use (``openb:<name>``)
OPENB_TRACES = {v: f"openb_pod_list_{v}.csv"
                for v in ("default", "cpu050", "gpushare40", "gpuspec10", "multigpu20")}
OPENB_CLUSTERS = {"gpu_node": "openb_node_list_gpu_node.csv",
                  "all_node": "openb_node_list_all_node.csv"}

#: the input columns of the results table, in order
INPUT_COLUMNS = ("cell", "cluster", "group", "replicas", "trace", "mode", "load",
                 "offered_gpus", "n_pods", "max_lifetime_s", "fill_to_pct", "retry",
                 "node_policy", "gpu_policy", "percentage_of_nodes_to_score", "node_tie_break",
                 "policy", "seed", "backend")
#: the headline figures of a cell, in table order (further figures the engine
#: reports follow, sorted by name)
METRICS = ("nodes", "gpus", "pods", "bound", "departed", "abandoned", "pending_at_end",
           "running_at_end", "attempts", "pending_p50_s", "pending_p99_s", "pending_max_s",
           "queueing_delay_p50_s", "queueing_delay_p99_s", "queueing_delay_max_s",
           "abandoned_pct", "unplaced_pct", "peak_gpu_allocated", "peak_gpu_allocated_pct",
           "mean_frag_pct_of_capacity", "final_unallocated_gpu_pct", "end_time_s")
STATUS_OK, STATUS_FAILED = "ok", "failed"
#: a worker that dies is replaced and its cell run again, at most this many times
DEFAULT_RETRIES = 2


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

    @property
    def label(self) -> str:
        """The policy label of tables and plots (``node=<p> card=<p>``)."""
        if is_research_policy(self.node_policy):
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
                "seed": self.seed, "backend": self.backend}

    def identity(self) -> dict[str, Any]:
        """Everything the results depend on (the id is a hash of this)."""
        return _identity(self)


def _identity(c: Cell | dict) -> dict[str, Any]:
    get = c.get if isinstance(c, dict) else (lambda k: getattr(c, k))
    ident = {k: get(k) for k in (
        "group", "replicas", "mode", "load", "offered_gpus", "n_pods", "max_lifetime",
        "fill_to", "retry", "node_policy", "gpu_policy", "percentage_of_nodes_to_score",
        "node_tie_break", "seed", "backend")}
    ident["cluster_sha256"] = get("cluster").sha256
    ident["trace_sha256"] = get("trace").sha256
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
    backend: str
    cell_outputs: frozenset[str]

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
                out.append(make_cell(cluster=cl.file, group=cl.group, replicas=r, trace=trace,
                                     seed=seed, backend=self.backend, **wl, **pol))
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
    return Sweep(path=path, cells=tuple(cells), cell_outputs=grid.cell_outputs)


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
    policies = _policies(doc.get("policies"), single=single)
    seeds = _seeds(doc.get("seeds"))
    backend = doc.optional_str("backend", "kernel")
    if backend not in ("kernel", "reference"):
        raise doc.get("backend").error(f"'backend' must be 'kernel' or 'reference', got "
                                       f"{backend!r}")
    outputs = frozenset({"timeseries"})
    ov = doc.get("cell_outputs")
    if ov is not None and ov.is_list and not ov.as_list("'cell_outputs'"):
        outputs = frozenset()           # summary.json only
    elif ov is not None and not ov.is_null:
        outputs = frozenset(v.scalar for v, _ in _values(
            ov, "'cell_outputs'", lambda v, w: _choice(v, w, CELL_OUTPUTS), single=False))
    return _Grid(clusters, traces, workloads, policies, seeds, backend, outputs)


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
    from .traces import cluster_from_path
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
    from .traces import read_trace
    if v is None or v.is_null:
        default = workloads_dir() / "openb" / OPENB_TRACES["default"]
        return [InputFile("openb:default", str(default), _sha256(default))]
    files: list[InputFile] = []
    seen: dict[str, int] = {}
    for item, f in _values(v, "'trace'", lambda x, w: _input_file(x, w, base, OPENB_TRACES),
                           single=single):
        if f.sha256 in seen:
            raise item.error(f"'trace': {f.label} has the same content as the trace on line "
                             f"{seen[f.sha256]}")
        seen[f.sha256] = item.line
        read_trace(f.path)      # a broken trace stops the sweep before it starts
        files.append(f)
    return files


_REPLAY_ONLY = ("load", "offered_gpus", "as_traced", "n_pods", "max_lifetime", "retry")


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
            "fill_to": None, "retry": None}
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
    as_traced = doc.optional_bool("as_traced", False)
    if as_traced:
        for key in ("load", "offered_gpus", "n_pods", "max_lifetime"):
            if key in doc:
                raise doc.error(f"'{key}' re-times the trace; it does not go with "
                                "'as_traced: true'", line=doc.key_line(key))
        return [{**none, "mode": "replay", "retry": r} for r in retries]
    if "load" in doc and "offered_gpus" in doc:
        raise doc.error("give 'load' (a fraction of each cell's GPUs) or 'offered_gpus' "
                        "(GPUs requested at once), not both", line=doc.key_line("offered_gpus"))
    from .study import DEFAULT_LOAD, DEFAULT_MAX_LIFETIME, DEFAULT_N_PODS
    loads: list[tuple[str, float]]
    if "offered_gpus" in doc:
        loads = [("offered_gpus", x) for x in axis("offered_gpus", _number, [])]
    else:
        loads = [("load", x) for x in axis("load", lambda x, w: _number(x, w, hi=10.0),
                                           [DEFAULT_LOAD])]
    n_pods = axis("n_pods", lambda x, w: x.as_int(w, min=1, max=100_000_000), [DEFAULT_N_PODS])
    lifetimes = axis("max_lifetime", _number, [DEFAULT_MAX_LIFETIME])
    return [{**none, "mode": "replay", key: x, "n_pods": n, "max_lifetime": lt, "retry": r}
            for (key, x), n, lt, r in itertools.product(loads, n_pods, lifetimes, retries)]


# -- policies and seeds ---------------------------------------------------------

def _node_policy(v: Value, what: str) -> str:
    text = v.as_str(what, nonempty=True)
    # HAMi ranks nodes like binpack under any other string; hamisim does the
    # same and says so (README: policies HAMi ignores are not errors)
    warn_policy(f"{v.path}:{v.line}", text, "node", research_ok=True)
    return text


def _card_policy(v: Value, what: str) -> str:
    text = v.as_str(what, nonempty=True)
    warn_policy(f"{v.path}:{v.line}", text, "gpu")
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


# ---------------------------------------------------------------------------
# running one cell (in a worker process or a Dask worker thread)

@dataclass(frozen=True)
class CellTask:
    """What a worker needs: the cell and the bytes of its cluster and trace files."""

    cell: Cell
    cluster_bytes: bytes
    trace_bytes: bytes
    cell_outputs: frozenset[str]
    version: str = __version__


_WORKDIR: Path | None = None
_WORKDIR_LOCK = threading.Lock()


def _workdir() -> Path:
    """A private folder of this worker process for the cells' input files."""
    global _WORKDIR
    with _WORKDIR_LOCK:
        if _WORKDIR is None or not _WORKDIR.is_dir():
            _WORKDIR = Path(tempfile.mkdtemp(prefix="hamisim-cells-"))
            # multiprocessing's finalizers also run in pool workers, where
            # atexit does not (they leave through os._exit)
            multiprocessing.util.Finalize(None, shutil.rmtree, args=(str(_WORKDIR), True),
                                          exitpriority=0)
        return _WORKDIR


def _materialise(name: str, data: bytes, key: str) -> Path:
    """``data`` as a file called ``name`` (the extension picks the reader)."""
    folder = _workdir() / key
    path = folder / name
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.{os.getpid()}-{threading.get_ident()}"
        tmp.write_bytes(data)
        os.replace(tmp, path)       # concurrent threads write the same bytes
    return path


def _derived_cluster(path: Path, group: str, replicas: int) -> Path:
    """The cluster file with node group ``group`` resized to ``replicas`` (as JSON)."""
    data = load_mapping(path).data
    data["nodes"][_group_entries(data)[group]]["replicas"] = replicas
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    stem = os.path.splitext(path.name)[0]
    key = hashlib.sha256(text.encode()).hexdigest()[:32]
    return _materialise(f"{stem}-{group}-{replicas}.json", text.encode(), key)


def _pending_times(events: pd.DataFrame, end_time: float) -> np.ndarray:
    """Per pod: arrival to bind, else to abandonment, else to the end of the run.

    Unlike the engine's queueing delay (bound pods only), this counts the pods
    that never got a node, which is what a capacity target is about.
    """
    if events.empty:
        return np.zeros(0)
    ev = events[["time", "pod", "event"]]
    kind = ev["event"].astype(str)

    def first(name: str) -> pd.Series:
        sel = ev[kind == name]
        return sel.drop_duplicates("pod").set_index("pod")["time"]

    arrive = first("arrive")
    left = first("bind").reindex(arrive.index)
    left = left.fillna(first("abandon").reindex(arrive.index)).fillna(end_time)
    return (left - arrive).to_numpy(dtype=float)


def _headline(result) -> dict[str, Any]:
    """The cell's row figures: the engine's summary plus capacity figures."""
    summary = result.summary
    r = {k: v for k, v in summary["results"].items() if not isinstance(v, (dict, list))}
    r = {k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
    r["nodes"] = int(summary["cluster"]["nodes"])
    r["gpus"] = int(summary["cluster"]["gpus"])
    waits = _pending_times(result.events, float(r.get("end_time_s", 0.0)))
    for q, name in ((50, "pending_p50_s"), (99, "pending_p99_s")):
        r[name] = float(np.percentile(waits, q)) if len(waits) else 0.0
    r["pending_max_s"] = float(waits.max()) if len(waits) else 0.0
    pods = int(r.get("pods", 0))
    r["abandoned_pct"] = 100.0 * r.get("abandoned", 0) / pods if pods else 0.0
    r["unplaced_pct"] = 100.0 * (pods - r.get("bound", 0)) / pods if pods else 0.0
    if "peak_gpu_allocated" in r:
        r["peak_gpu_allocated_pct"] = 100.0 * r["peak_gpu_allocated"] / max(r["gpus"], 1)
    return r


def run_cell_task(task: CellTask) -> dict[str, Any]:
    """Run one cell; a cell that fails on its inputs is returned as ``failed``.

    Only infrastructure failures (a dying worker) escape as exceptions: the
    caller retries those, while a bad cell would fail again.
    """
    cell = task.cell
    paths: dict[str, str] = {}
    try:
        if task.version != __version__:
            raise HamisimError(f"the worker runs hamisim {__version__}, the sweep "
                               f"{task.version}; results would not be comparable")
        from .study import RunSpec, run
        from .traces import cluster_from_path
        cluster_path = _materialise(cell.cluster.name, task.cluster_bytes, cell.cluster.sha256)
        paths[str(cluster_path)] = cell.cluster.label
        if cell.group is not None:
            cluster_path = _derived_cluster(cluster_path, cell.group, cell.replicas)
            paths[str(cluster_path)] = f"{cell.cluster.label} ({cell.group} x {cell.replicas})"
        trace_path = _materialise(cell.trace.name, task.trace_bytes, cell.trace.sha256)
        paths[str(trace_path)] = cell.trace.label
        load = cell.load
        if cell.offered_gpus is not None:
            n_cards = cluster_from_path(cluster_path).n_cards
            if n_cards == 0:
                raise InputError(str(cluster_path), None, "the cluster has no GPUs to load")
            load = cell.offered_gpus / n_cards
        spec = RunSpec(cluster=str(cluster_path), trace=str(trace_path),
                       gpu_policy=cell.gpu_policy, node_policy=cell.node_policy, mode=cell.mode,
                       load=load, max_lifetime=cell.max_lifetime, n_pods=cell.n_pods,
                       fill_to=cell.fill_to if cell.fill_to is not None else 130.0,
                       seed=cell.seed, backend=cell.backend,
                       percentage_of_nodes_to_score=cell.percentage_of_nodes_to_score,
                       node_tie_break=cell.node_tie_break, retry=cell.retry or "backoff",
                       progress=False)
        result = run(spec)
        out: dict[str, Any] = {"status": STATUS_OK, "error": None,
                               "metrics": _headline(result), "summary": result.summary,
                               "tables": {}}
        if "timeseries" in task.cell_outputs:
            out["tables"]["timeseries"] = result.timeseries
        if "events" in task.cell_outputs:
            out["tables"]["events"] = result.events
        return out
    except Exception as exc:  # noqa: BLE001 - the cell fails, the sweep goes on
        text = str(exc) if isinstance(exc, HamisimError) else f"{type(exc).__name__}: {exc}"
        for tmp, label in sorted(paths.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(tmp, label)   # no worker-local paths in the table
        return {"status": STATUS_FAILED, "error": text, "metrics": {}, "summary": None,
                "tables": {}}


# ---------------------------------------------------------------------------
# executing cells

@dataclass
class RunStats:
    """What :meth:`CellRunner.run` did."""

    ran: int = 0
    reused: int = 0
    failed: int = 0
    retried: int = 0
    rows: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)


def _init_worker() -> None:
    """Set up a local pool worker."""
    # Ctrl-C reaches the whole process group: the submitting process alone
    # handles it (and stops the workers), so workers print no tracebacks
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the submitting process showed the inputs' policy warnings once already
    warnings.simplefilter("ignore", PolicyWarning)
    # a pool worker outlives a killed submitting process (it waits on a queue
    # it holds both ends of): leave with it instead of lingering
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True,
                         name="hamisim-exit-with-parent").start()


def _exit_with(parent: Any) -> None:
    parent.join()                   # returns when the parent process is gone
    os._exit(1)


def _lost_worker_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning "the worker went away", not "the cell is bad"."""
    errors: list[type[BaseException]] = [BrokenProcessPool, cf.CancelledError]
    try:
        from distributed import KilledWorker
        from distributed.comm.core import CommClosedError
        errors += [KilledWorker, CommClosedError]
    except ImportError:
        pass
    return tuple(errors)


class CellRunner:
    """Runs cells and files each one in ``OUT/cells/<id>/`` as it completes.

    Local by default: a process pool of ``workers`` processes (default: the
    CPUs available). With ``dask_scheduler`` (``tcp://host:port``) the cells go
    to that Dask cluster through ``distributed.Client(...).get_executor()``.
    A cell whose worker dies (a broken pool, a lost Dask worker) is run again,
    at most ``retries`` times; a cell that fails on its inputs is filed with
    status ``failed`` and its error. Use as a context manager.
    """

    def __init__(self, out: str | os.PathLike[str], *, workers: int | None = None,
                 dask_scheduler: str | None = None, retries: int = DEFAULT_RETRIES,
                 fmt: str = "parquet", progress: bool | None = None,
                 cell_outputs: Iterable[str] = ("timeseries",),
                 task: Callable[[CellTask], dict] = run_cell_task,
                 log: Callable[[str], None] | None = None) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}")
        self.out = Path(out)
        self.cells_dir = self.out / "cells"
        self.workers = workers or _cpu_count()
        self.dask_scheduler = dask_scheduler
        self.retries = retries
        self.fmt = fmt
        self.progress = progress
        self.cell_outputs = frozenset(cell_outputs)
        self.task = task
        self.log = log or (lambda msg: print(f"hamisim: {msg}", file=sys.stderr))
        self._executor: cf.Executor | None = None
        self._client = None
        self._bytes: dict[str, bytes] = {}

    # -- executors ----------------------------------------------------------
    def __enter__(self) -> CellRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(abort=exc[0] is not None)

    def _start(self) -> cf.Executor:
        if self._executor is None:
            self._executor = (self._dask_executor() if self.dask_scheduler
                              else self._local_pool())
        return self._executor

    def _local_pool(self) -> cf.Executor:
        methods = multiprocessing.get_all_start_methods()
        # a fork server forks workers from a clean single-threaded process that
        # has imported hamisim once: fast start, and safe when the caller has
        # threads (a Dask client, a progress bar)
        if "forkserver" in methods:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["hamisim.sweep", "hamisim.study"])
        else:                                       # pragma: no cover - Windows
            ctx = multiprocessing.get_context("spawn")
        return cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx,
                                      initializer=_init_worker)

    def _dask_executor(self) -> cf.Executor:
        try:
            from distributed import Client
        except ImportError:
            raise HamisimError("--dask-scheduler needs Dask: pip install 'hamisim[dask]'") \
                from None
        import dask
        try:
            # Dask's own connect timeout (30 s unless configured otherwise)
            self._client = Client(self.dask_scheduler,
                                  timeout=dask.config.get("distributed.comm.timeouts.connect"))
        except (OSError, TimeoutError, ValueError) as exc:
            raise HamisimError(f"cannot reach the Dask scheduler {self.dask_scheduler}: "
                               f"{exc}") from None
        # retries= covers exceptions escaping a task; a lost worker's task is
        # rescheduled by the Dask scheduler itself, and resubmitted here after
        # KilledWorker
        return self._client.get_executor(retries=self.retries)

    def _window(self) -> int:
        """Cells in flight at once (each carries its input files' bytes)."""
        if self._client is not None:
            try:
                threads = sum(self._client.nthreads().values())
            except Exception:  # noqa: BLE001 - only a sizing hint
                threads = 0
            return max(2, 2 * threads)
        return 2 * self.workers

    def _restart_pool(self) -> None:
        self._kill_pool()
        self._executor = self._local_pool()

    def _kill_pool(self) -> None:
        ex = self._executor
        self._executor = None
        if ex is None:
            return
        if isinstance(ex, cf.ProcessPoolExecutor):
            procs = list(getattr(ex, "_processes", {}).values())
            ex.shutdown(wait=False, cancel_futures=True)
            for p in procs:             # our own workers: do not wait for a long cell
                if p.is_alive():
                    p.terminate()
            for p in procs:
                p.join(timeout=5)
        else:
            ex.shutdown(wait=False)

    def close(self, abort: bool = False) -> None:
        """Stop the workers (at once when ``abort``) and disconnect from Dask."""
        if self._executor is not None:
            if abort or not isinstance(self._executor, cf.ProcessPoolExecutor):
                self._kill_pool()
            else:
                self._executor.shutdown(wait=True)
                self._executor = None
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- cells ----------------------------------------------------------------
    def finished(self, cell: Cell) -> dict[str, Any] | None:
        """The filed row of a cell that finished successfully, else ``None``."""
        row = read_cell_row(self.cells_dir / cell.id)
        return row if row is not None and row.get("status") == STATUS_OK else None

    def _payload(self, cell: Cell) -> CellTask:
        return CellTask(cell, self._read(cell.cluster), self._read(cell.trace),
                        self.cell_outputs)

    def _read(self, f: InputFile) -> bytes:
        data = self._bytes.get(f.sha256)
        if data is None:
            data = Path(f.path).read_bytes()
            if hashlib.sha256(data).hexdigest() != f.sha256:
                raise InputError(f.path, None, "the file changed while the sweep was running")
            self._bytes[f.sha256] = data
        return data

    def run(self, cells: Sequence[Cell], *, resume: bool = True) -> RunStats:
        """Run every cell that is not finished yet; return the rows of all of them.

        With ``resume`` false, finished cells are run again (and replaced).
        """
        stats = RunStats()
        todo: deque[Cell] = deque()
        for cell in cells:
            row = self.finished(cell) if resume else None
            if row is not None:
                stats.rows[cell.id] = row
                stats.reused += 1
            else:
                todo.append(cell)
        if not todo:
            return stats
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        _clean_partials(self.cells_dir)
        bar = _progress_bar(len(todo), self.progress)
        attempts: dict[str, int] = {}
        in_flight: dict[cf.Future, Cell] = {}
        # cells that were in a process pool when it broke: which one killed its
        # worker is unknown, so each runs alone next, and only a cell that
        # breaks the pool alone is charged an attempt
        suspects: deque[Cell] = deque()
        lost = _lost_worker_errors()

        def file(cell: Cell, out: Mapping[str, Any]) -> None:
            stats.rows[cell.id] = self._file(cell, out)
            if out["status"] == STATUS_OK:
                stats.ran += 1
            else:
                stats.failed += 1
                self.log(f"cell {cell.id} failed: {out['error']}")
            if bar is not None:
                bar.update(1)

        def charge(cell: Cell, exc: BaseException, queue: deque[Cell]) -> None:
            n = attempts[cell.id] = attempts.get(cell.id, 0) + 1
            if n <= self.retries:
                stats.retried += 1
                self.log(f"cell {cell.id}: its worker was lost ({type(exc).__name__}); "
                         f"running it again ({n}/{self.retries})")
                queue.append(cell)
            else:
                file(cell, _failure(f"the worker running this cell was lost {n} times "
                                    f"({type(exc).__name__})"))

        def collect(fut: cf.Future, cell: Cell) -> BaseException | None:
            """File a completed cell; return the error if its process pool broke."""
            try:
                out = fut.result()
            except BrokenProcessPool as exc:
                return exc
            except lost as exc:             # Dask: the scheduler knows the culprit
                charge(cell, exc, todo)
                return None
            except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
                out = _failure(f"{type(exc).__name__}: {exc}")
            file(cell, out)
            return None

        def submit(cell: Cell, queue: deque[Cell]) -> bool:
            """Submit ``cell`` (taken from ``queue``); False if the pool is broken."""
            try:
                in_flight[self._submit(cell, attempts.get(cell.id, 0))] = cell
            except BrokenProcessPool:       # a worker died since the last wait
                queue.appendleft(cell)      # it never ran: no attempt is charged
                return False
            except InputError as err:       # an input file changed since it was loaded
                file(cell, _failure(str(err)))
            return True

        try:
            self._start()
            window = self._window()
            while todo or suspects or in_flight:
                usable = True
                if suspects:
                    if not in_flight:
                        usable = submit(suspects.popleft(), suspects)
                else:
                    while usable and todo and len(in_flight) < window:
                        usable = submit(todo.popleft(), todo)
                if not in_flight:
                    if not usable:
                        self._restart_pool()
                    continue
                done, _ = cf.wait(list(in_flight), return_when=cf.FIRST_COMPLETED)
                broken: list[tuple[Cell, BaseException]] = []
                for fut in done:
                    cell = in_flight.pop(fut)
                    exc = collect(fut, cell)
                    if exc is not None:
                        broken.append((cell, exc))
                if broken:
                    # a broken pool fails every cell it holds: collect them all
                    # (finished ones are kept), then start a fresh pool
                    cf.wait(list(in_flight))
                    for fut, cell in in_flight.items():
                        exc = collect(fut, cell)
                        if exc is not None:
                            broken.append((cell, exc))
                    in_flight.clear()
                    if len(broken) == 1:
                        charge(*broken[0], suspects)
                    else:
                        stats.retried += len(broken)
                        self.log(f"a worker process died ({type(broken[0][1]).__name__}); "
                                 f"the {len(broken)} cells in its pool run again, one at a "
                                 "time")
                        suspects.extend(cell for cell, _ in broken)
                    self._restart_pool()
        finally:
            if bar is not None:
                bar.close()
        return stats

    def _submit(self, cell: Cell, attempt: int) -> cf.Future:
        executor = self._start()
        payload = self._payload(cell)
        if self._client is not None:
            # a readable, unique task key in Dask's dashboard; a new key per
            # attempt so a resubmission is never mistaken for the lost task
            return executor.submit(self.task, payload, key=f"hamisim-cell-{cell.id}-{attempt}")
        return executor.submit(self.task, payload)

    def _file(self, cell: Cell, out: Mapping[str, Any]) -> dict[str, Any]:
        """Write the cell's folder atomically, ``cell.json`` last; return its row."""
        row = {**cell.params(), "status": out["status"], "error": out.get("error"),
               **out.get("metrics", {})}
        with atomic_folder(self.cells_dir / cell.id) as tmp:
            if out.get("summary") is not None:
                write_json(out["summary"], tmp / "summary.json")
            for name, table in sorted(out.get("tables", {}).items()):
                write_table(table, tmp, name, self.fmt)
            write_json({"row": row, "inputs": cell.identity(),
                        "files": {"cluster": cell.cluster.label, "trace": cell.trace.label}},
                       tmp / "cell.json")
        return row


def _failure(error: str) -> dict[str, Any]:
    return {"status": STATUS_FAILED, "error": error, "metrics": {}, "summary": None,
            "tables": {}}


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                          # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


_LEFTOVER = re.compile(r"\.(?:partial|old)-(\d+)$")


def _clean_partials(folder: Path) -> None:
    """Remove what a killed run left half-written (never a finished cell, nor the
    folder another live process is writing right now)."""
    for p in folder.glob(".*"):
        m = _LEFTOVER.search(p.name)
        if p.is_dir() and m and not _alive(int(m.group(1))):
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False                # ours, from an earlier run in this process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:                 # e.g. another user's process
        return True
    return True


def _progress_bar(total: int, enabled: bool | None):
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="cell", desc="sweep", leave=False)


def read_cell_row(folder: Path) -> dict[str, Any] | None:
    """The row in ``folder/cell.json``, or ``None`` if the cell is not filed."""
    try:
        doc = json.loads((folder / "cell.json").read_text())
    except (OSError, ValueError):
        return None
    row = doc.get("row") if isinstance(doc, dict) else None
    return row if isinstance(row, dict) else None


# ---------------------------------------------------------------------------
# the results folder

def results_table(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per cell, sorted by cell id; columns :data:`INPUT_COLUMNS`,
    ``status``, ``error``, :data:`METRICS`, then any further figures by name."""
    rows = sorted(rows, key=lambda r: r["cell"])
    known = set(INPUT_COLUMNS) | {"status", "error"} | set(METRICS)
    extra = sorted({k for r in rows for k in r} - known)
    columns = [*INPUT_COLUMNS, "status", "error", *METRICS, *extra]
    return pd.DataFrame([[r.get(c) for c in columns] for r in rows], columns=columns)


def write_results(table: pd.DataFrame, out: Path, name: str, fmt: str) -> Path:
    """``out/name.fmt``, replaced atomically."""
    with atomic_folder(out / f".{name}-table") as tmp:
        path = write_table(table, tmp, name, fmt)
        final = out / path.name
        os.replace(path, final)
    shutil.rmtree(out / f".{name}-table", ignore_errors=True)
    return final


_OUR_FILES = ("cells", "figures", "sweep.json", "plan.json", "results.parquet", "results.csv",
              "curve.parquet", "curve.csv")


def prepare_out(out: str | os.PathLike[str], *, resume: bool, overwrite: bool) -> Path:
    """Check the results folder: new, resumed, or replaced on request.

    A folder holding earlier cells is never overwritten silently: ``resume``
    continues it, ``overwrite`` removes hamisim's files from it first.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(str(out), None, "--out names a file, not a folder")
    if out.is_dir() and any(out.iterdir()):
        ours = (out / "cells").is_dir() or (out / "sweep.json").exists() \
            or (out / "plan.json").exists()
        if not ours:
            raise InputError(str(out), None, "the folder exists and holds no hamisim sweep; "
                                             "choose another --out")
        if overwrite:
            for name in _OUR_FILES:
                p = out / name
                if p.is_dir():
                    shutil.rmtree(p)
                elif p.exists():
                    p.unlink()
        elif not resume:
            raise InputError(str(out), None, "the folder holds an earlier sweep: pass --resume "
                                             "to continue it (finished cells are kept) or "
                                             "--overwrite to start afresh")
    out.mkdir(parents=True, exist_ok=True)
    return out


@dataclass
class SweepOutcome:
    """A finished sweep: the results table and what was run or reused."""

    table: pd.DataFrame
    out: Path
    results_path: Path
    figure: Path | None
    stats: RunStats

    @property
    def failed(self) -> pd.DataFrame:
        return self.table[self.table["status"] != STATUS_OK]


def run_sweep(sweep: Sweep, out: str | os.PathLike[str], *, workers: int | None = None,
              dask_scheduler: str | None = None, resume: bool = False,
              overwrite: bool = False, fmt: str = "parquet", retries: int = DEFAULT_RETRIES,
              progress: bool | None = None,
              log: Callable[[str], None] | None = None) -> SweepOutcome:
    """Run a sweep into ``out``: ``cells/<id>/``, ``results.<fmt>``, ``figures/sweep.png``."""
    out = prepare_out(out, resume=resume, overwrite=overwrite)
    write_sweep_manifest(out, sweep)
    with CellRunner(out, workers=workers, dask_scheduler=dask_scheduler, retries=retries,
                    fmt=fmt, progress=progress, cell_outputs=sweep.cell_outputs,
                    log=log) as runner:
        stats = runner.run(sweep.cells, resume=True)
    table = results_table(stats.rows[c.id] for c in sweep.cells)
    path = write_results(table, out, "results", fmt)
    figure = plot_sweep(table, out / "figures" / "sweep.png")
    return SweepOutcome(table, out, path, figure, stats)


def write_sweep_manifest(out: Path, sweep: Sweep) -> Path:
    """``sweep.json``: the sweep file and every cell's inputs, by cell id."""
    doc = {"hamisim_version": __version__, "sweep_file": os.path.basename(sweep.path),
           "sweep_sha256": _sha256(sweep.path), "cells": len(sweep.cells),
           "cell_inputs": {c.id: c.params() for c in sweep.cells}}
    tmp = out / f".sweep.json.{os.getpid()}"
    write_json(doc, tmp)
    os.replace(tmp, out / "sweep.json")
    return out / "sweep.json"


# ---------------------------------------------------------------------------
# plots

#: candidates for the x axis of the sweep plot, first varying one wins
X_AXES = ("replicas", "offered_gpus", "load", "fill_to_pct", "n_pods", "max_lifetime_s")
_SERIES = ("cluster", "group", "trace", "retry", "policy", "percentage_of_nodes_to_score",
           "node_tie_break", "backend")
_PANELS = {
    "replay": (("pending_p99_s", "pending time p99 (s)"),
               ("unplaced_pct", "pods never placed (%)"),
               ("peak_gpu_allocated_pct", "peak GPUs with a tenant (%)"),
               ("mean_frag_pct_of_capacity", "mean fragmentation (% of GPUs)")),
    "fill": (("final_unallocated_gpu_pct", "unallocated GPU at the end (%)"),
             ("unplaced_pct", "pods not placed (%)"),
             ("peak_gpu_allocated_pct", "peak GPUs with a tenant (%)"),
             ("mean_frag_pct_of_capacity", "mean fragmentation (% of GPUs)")),
}


def _varying(table: pd.DataFrame, col: str) -> bool:
    return col in table and table[col].dropna().nunique() > 1


def plot_sweep(table: pd.DataFrame, path: Path) -> Path | None:
    """Headline figures against the first varying numeric axis (else one point per
    combination): the median over seeds with a min-max band. ``None`` when no
    cell succeeded."""
    from matplotlib.ticker import MaxNLocator

    from .plots import _save, plt
    ok = table[table["status"] == STATUS_OK]
    if ok.empty:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    x = next((c for c in X_AXES if _varying(ok, c)), None)
    series_cols = [c for c in (*_SERIES, *X_AXES) if c != x and _varying(ok, c)]
    mode = str(ok["mode"].iloc[0])
    panels = [(m, t) for m, t in _PANELS.get(mode, _PANELS["replay"]) if m in ok]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), squeeze=False)
    groups = list(ok.groupby(series_cols, sort=True, dropna=False)) if series_cols \
        else [((), ok)]
    labels = [_series_label(series_cols, key) for key, _ in groups]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = {lab: {"color": colours[i % len(colours)],
                    "ls": ("-", "--", ":", "-.")[i // len(colours) % 4]}
              for i, lab in enumerate(labels)}
    seeds = ok["seed"].nunique()
    for ax, (metric, title) in zip(axes.flat, panels):
        for (key, g), label in zip(groups, labels):
            if x is not None:
                agg = g.groupby(x)[metric].agg(["median", "min", "max"]).sort_index()
                ax.plot(agg.index, agg["median"], marker="o", ms=3, label=label, **styles[label])
                if seeds > 1:
                    ax.fill_between(agg.index, agg["min"], agg["max"], alpha=0.15, lw=0,
                                    color=styles[label]["color"])
            else:
                pos = labels.index(label)
                vals = g[metric].to_numpy(dtype=float)
                med = float(np.median(vals))
                ax.errorbar([pos], [med], yerr=[[med - vals.min()], [vals.max() - med]],
                            fmt="o", capsize=4, color=styles[label]["color"], label=label)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        if x is not None:
            ax.set_xlabel(x)
            if x in ("replicas", "n_pods"):
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles, names = axes.flat[0].get_legend_handles_labels()
    if x is not None and len(labels) > 1:
        fig.legend(handles, names, loc="lower center", ncol=min(3, len(labels)), fontsize=8)
    band = f"median over {seeds} seeds, band min–max" if seeds > 1 else "one seed"
    fig.suptitle(f"Sweep: {len(ok)} cells ({band})", fontsize=11)
    if x is not None and len(labels) > 1:
        fig.tight_layout(rect=(0, 0.06 + 0.025 * ((len(labels) - 1) // 3), 1, 1))
        fig.savefig(path, dpi=130, metadata={"Software": None})
        plt.close(fig)
        return path
    return _save(fig, path)


def _series_label(cols: Sequence[str], key: Any) -> str:
    if not cols:
        return "all cells"
    key = key if isinstance(key, tuple) else (key,)
    parts = []
    for c, v in zip(cols, key):
        parts.append(str(v) if c == "policy" else f"{c}={v}")
    return " ".join(parts)


# ---------------------------------------------------------------------------
# reporting (the CLI prints this)

def format_report(outcome: SweepOutcome, columns: Sequence[str] | None = None,
                  max_rows: int = 40) -> str:
    """A short text report: counts, a compact table, failures, where files went."""
    t = outcome.table
    s = outcome.stats
    lines = [f"hamisim sweep: {len(t)} cells, {int((t['status'] == STATUS_OK).sum())} ok, "
             f"{int((t['status'] != STATUS_OK).sum())} failed "
             f"(ran {s.ran + s.failed}, reused {s.reused}"
             + (f", {s.retried} rerun after a lost worker" if s.retried else "") + ")"]
    varying = [c for c in INPUT_COLUMNS[1:] if c not in ("policy", "seed") and _varying(t, c)]
    if _varying(t, "policy") or "node_policy" in varying or "gpu_policy" in varying:
        varying = [c for c in varying if c not in ("node_policy", "gpu_policy")] + ["policy"]
    fill = bool((t["mode"] == "fill").any())
    metrics = columns or [m for m in (("final_unallocated_gpu_pct",) if fill else
                                      ("pending_p99_s",))
                          + ("unplaced_pct", "peak_gpu_allocated_pct", "mean_frag_pct_of_capacity")
                          if m in t]
    # the file is sorted by cell id (stable across runs); people read it by inputs
    view = t[[*varying, "seed", "status", *metrics, "cell"]].sort_values(
        [*varying, "seed"], kind="stable")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        text = view.head(max_rows).to_string(index=False, float_format=lambda v: f"{v:.2f}")
    lines.append(text)
    if len(t) > max_rows:
        lines.append(f"... {len(t) - max_rows} more rows in {outcome.results_path}")
    for _, r in outcome.failed.iterrows():
        lines.append(f"failed {r['cell']}: {r['error']}")
    files = [outcome.results_path.name, "cells/"]
    if outcome.figure is not None:
        files.append("figures/sweep.png")
    lines.append(f"results written to {outcome.out}/ ({', '.join(files)})")
    return "\n".join(lines) + "\n"

