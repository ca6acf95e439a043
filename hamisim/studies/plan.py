"""Capacity planning: the fewest nodes of a node group for which a workload meets a target.

A *plan file* (DESIGN §4.5) is a sweep file (:mod:`hamisim.studies.sweep`) with one
value per axis except the seeds, a cluster entry that names the node group to
size (``vary``, without ``replicas``), and two more keys::

    cluster: {file: pool.yaml, vary: gpu}
    workload: {trace: openb:default, offered_gpus: 400, n_pods: 4000}
    policies: {node_scheduler_policy: binpack, gpu_scheduler_policy: spread}
    seeds: 2
    target: pending_p99_s <= 60          # METRIC <=|<|>=|> NUMBER, a results-table figure
    search: {min: 40, max: 300, step: 1, max_evaluations: 10, per_round: 1}
    aggregate: worst                     # worst (every seed meets it) | median | mean

The workload must not grow with the cluster, or every size would look alike:
a replay re-timed to ``offered_gpus`` (GPUs requested at once), or the
trace's own timestamps (``as_traced: true``).

The search assumes more nodes never hurt. It evaluates ``max`` first (if the
target fails there, there is no answer in the range), then narrows the
bracket (largest failing size, smallest meeting size) by bisection, or by
``per_round`` evenly spaced sizes per round (each round's cells run in
parallel), until the bracket closes or ``max_evaluations`` sizes were tried.
``min`` itself is evaluated only if the bracket closes down on it: an
undersized cluster's queue keeps growing, which makes its simulation the
slowest, so the search avoids it. Each size is a set of sweep cells (one per
seed) filed in ``OUT/cells/``, so a plan resumes like a sweep and a second
plan over the same cells costs nothing.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from hamisim.errors import InputError
from hamisim.io.clusterfile import MAX_REPLICAS
from hamisim.io.documents import Doc, Value, load_mapping
from hamisim.io.outputs import write_json
from hamisim.studies.sweep import (
    DEFAULT_RETRIES,
    METRICS,
    STATUS_OK,
    CellRunner,
    RunStats,
    prepare_out,
    results_table,
    write_results,
)
from hamisim.studies.report import notebook_html, write_report
from hamisim.studies.sweepfile import SWEEP_KEYS, _Grid, parse_grid

__all__ = ["Target", "Plan", "PlanOutcome", "load_plan", "plan_from_document", "run_plan",
           "format_plan_report", "AGGREGATES", "VaryGroup", "MultiPlanOutcome", "run_multi_plan",
           "format_multi_plan_report", "parse_vary_spec"]

PLAN_KEYS = SWEEP_KEYS | {"target", "search", "aggregate", "vary"}
VARY_KEYS = frozenset({"min", "max", "cost", "step"})
SEARCH_KEYS = frozenset({"min", "max", "step", "max_evaluations", "per_round"})
AGGREGATES = ("worst", "median", "mean")
DEFAULT_MAX_EVALUATIONS = 10
#: sizes a multi-group plan may evaluate by default (the cost-ordered search)
DEFAULT_MAX_EVALUATIONS_MULTI = 40
#: the most sizes (the product of the groups' ranges) a multi-group plan orders by cost
MAX_BOX = 1_000_000
#: a pod class's or namespace's figures (summary.json ``results.classes``,
#: ``results.namespaces``) a target may name
CLASS_METRICS = ("pending_p50_s", "pending_p95_s", "pending_p99_s", "pending_max_s",
                 "queueing_delay_p50_s", "queueing_delay_p95_s", "queueing_delay_p99_s",
                 "queueing_delay_max_s", "pods", "bound", "abandoned", "pending_at_end")
#: a node group's figures (``results.groups``: the pods bound on its nodes)
GROUP_METRICS = ("queueing_delay_p50_s", "queueing_delay_p95_s", "queueing_delay_p99_s",
                 "queueing_delay_max_s", "pods_bound", "mean_gpu_allocated_pct",
                 "mean_stranded_pct_of_gpus", "mean_unfit_pct_of_gpus")
#: where a scoped target reads its figure in summary.json's results
SCOPES = {"class": "classes", "namespace": "namespaces", "group": "groups"}
#: a target's number may carry a unit of time (seconds otherwise)
UNITS = {"": 1.0, "s": 1.0, "min": 60.0, "h": 3600.0}
_TARGET = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+of\s+(class|namespace|group)\s+(\S+))?"
                     r"\s*(<=|>=|<|>)\s*"
                     r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(s|min|h)?\s*$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": lambda a, b: a <= b, "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
}


@dataclass(frozen=True)
class Target:
    """``metric op value``, e.g. ``pending_p99_s <= 60``; with a scope, the figure
    of one pod class, namespace or node group from the cell's summary.json
    (``pending_p95_s of class train-8gpu <= 30min``, ``pending_p99_s of namespace
    team-a <= 10min``, ``queueing_delay_p99_s of group l40s <= 60``). A number may
    end in ``s``, ``min`` or ``h`` (kept in seconds)."""

    metric: str
    op: str
    value: float
    #: the pod class of a ``of class`` target (kept as a field: plans before scopes)
    pod_class: str | None = None
    #: ``namespace`` or ``group`` (``None``: the whole run, or a class)
    scope: str | None = None
    name: str | None = None

    @classmethod
    def parse(cls, text: str, where: Value | None = None, path: str | None = None) -> Target:
        """Parse ``METRIC [of class|namespace|group NAME] OP NUMBER[s|min|h]``;
        ``InputError`` at ``where`` when malformed."""
        def error(problem: str) -> InputError:
            return where.error(problem) if where is not None else InputError(path, None, problem)

        m = _TARGET.match(text)
        if not m:
            raise error(f"'target' must read METRIC OP NUMBER with OP one of <=, <, >=, > "
                        f"(e.g. 'pending_p99_s <= 60', 'pending_p95_s of class C <= 30min'), "
                        f"got {text!r}")
        metric, scope, name, op = m.group(1), m.group(2), m.group(3), m.group(4)
        number = float(m.group(5)) * UNITS[m.group(6) or ""]
        if m.group(6) and not metric.endswith("_s"):
            raise error(f"'target': {m.group(6)!r} is a unit of time, but '{metric}' is not a "
                        "time (its name does not end in _s)")
        if scope is not None:
            allowed = GROUP_METRICS if scope == "group" else CLASS_METRICS
            if metric not in allowed:
                raise error(f"'target': a {scope}'s figure is one of {', '.join(allowed)}, "
                            f"got '{metric}'")
            if scope == "class":
                return cls(metric, op, number, name)
            return cls(metric, op, number, None, scope, name)
        if metric not in METRICS:
            import difflib
            hint = difflib.get_close_matches(metric, list(METRICS), n=1)
            raise error(f"'target': unknown metric '{metric}' (one of: {', '.join(METRICS)})"
                        + (f"; did you mean '{hint[0]}'?" if hint else ""))
        return cls(metric, op, number)

    @property
    def scoped(self) -> tuple[str, str] | None:
        """``(scope, name)`` of a class, namespace or group target; else ``None``."""
        if self.pod_class is not None:
            return ("class", self.pod_class)
        return (str(self.scope), str(self.name)) if self.scope is not None else None

    @property
    def upper(self) -> bool:
        """Whether the target bounds the metric from above (``<=``, ``<``)."""
        return self.op in ("<=", "<")

    def met(self, x: float) -> bool:
        """Whether the value ``x`` of the metric meets the target."""
        return _OPS[self.op](x, self.value)

    @property
    def column(self) -> str:
        """The target's figure as a curve column: the metric, with its scope
        (``metric[class]`` for a class, as before scopes; ``metric[namespace=N]``)."""
        if self.pod_class is not None:
            return f"{self.metric}[{self.pod_class}]"
        if self.scope is not None:
            return f"{self.metric}[{self.scope}={self.name}]"
        return self.metric

    def of(self, row: dict[str, Any], cells: Path) -> Any:
        """The figure of a cell's ``row`` (its folder under ``cells``); ``None`` when
        the class, namespace or group has no entry in the cell."""
        scoped = self.scoped
        if scoped is None:
            return row.get(self.metric)
        try:
            summary = json.loads((cells / row["cell"] / "summary.json").read_text())
        except (OSError, ValueError):
            return None
        scope, name = scoped
        for c in summary.get("results", {}).get(SCOPES[scope], []):
            if c.get(scope) == name:
                return c.get(self.metric)
        return None

    def __str__(self) -> str:
        scoped = self.scoped
        of = f" of {scoped[0]} {scoped[1]}" if scoped is not None else ""
        return f"{self.metric}{of} {self.op} {self.value:g}"


@dataclass(frozen=True)
class VaryGroup:
    """A node group a plan sizes: its range and its cost per node."""

    name: str
    min: int
    max: int
    cost: float = 1.0
    step: int = 1

    @property
    def sizes(self) -> list[int]:
        """The node counts the search may try."""
        return list(range(self.min, self.max + 1, self.step))


@dataclass(frozen=True)
class Plan:
    """A loaded plan file."""

    path: str
    grid: _Grid
    target: Target
    min: int
    max: int
    step: int = 1
    max_evaluations: int = DEFAULT_MAX_EVALUATIONS
    per_round: int = 1
    aggregate: str = "worst"
    #: every target (``target`` is the first); a size meets the plan when it meets all
    targets: tuple[Target, ...] = ()
    #: the node groups a multi-group plan sizes (top-level ``vary``); empty: the
    #: single group of ``cluster: {vary: G}`` with ``search``'s range
    groups: tuple[VaryGroup, ...] = ()

    @property
    def all_targets(self) -> tuple[Target, ...]:
        """The targets a size must meet, all of them."""
        return self.targets or (self.target,)

    @property
    def group(self) -> str:
        """The node group whose replicas the search varies."""
        return str(self.grid.clusters[0].group)

    @property
    def sizes(self) -> list[int]:
        """The node counts the search may try: min, min+step, ... up to max."""
        return list(range(self.min, self.max + 1, self.step))


def load_plan(path: str | os.PathLike[str], *, target: str | Sequence[str] | None = None,
              min_nodes: int | None = None, max_nodes: int | None = None,
              max_evaluations: int | None = None, vary: Sequence[str] = ()) -> Plan:
    """Load and validate a plan file; keyword arguments override its values
    (``target``: one or several; ``vary``: ``GROUP:min=A,max=B,cost=C`` specs,
    :func:`parse_vary_spec`, replacing the file's node groups)."""
    name = os.fspath(path)
    return plan_from_document(load_mapping(name), name, target=target, min_nodes=min_nodes,
                              max_nodes=max_nodes, max_evaluations=max_evaluations, vary=vary)


def parse_vary_spec(text: str) -> tuple[str, dict[str, float]]:
    """``GROUP[:min=A][,max=B][,cost=C][,step=S]`` (``--vary``) -> (group, values);
    ``InputError`` (``--vary``) when malformed."""
    group, _, rest = text.partition(":")
    values: dict[str, float] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, number = item.partition("=")
        try:
            value = float(number)
        except ValueError:
            value = math.nan
        if not eq or key not in VARY_KEYS or not math.isfinite(value):
            raise InputError("--vary", None, f"{text!r}: give GROUP:min=A,max=B,cost=C "
                                             f"(keys {', '.join(sorted(VARY_KEYS))}), got {item!r}")
        values[key] = value
    if not group.strip():
        raise InputError("--vary", None, f"{text!r}: no node group before ':'")
    return group.strip(), values


def plan_from_document(doc: Doc, path: str, *, target: str | Sequence[str] | None = None,
                       min_nodes: int | None = None, max_nodes: int | None = None,
                       max_evaluations: int | None = None, vary: Sequence[str] = ()) -> Plan:
    """A :class:`Plan` from a loaded top-level mapping (see the module docstring)."""
    doc.check_keys(PLAN_KEYS, "a plan file")
    grid = parse_grid(doc, path, single=True)
    cl = grid.clusters[0]
    groups = _vary_groups(doc, cl, vary)
    if groups and cl.group is not None:
        raise (doc.get("vary") or doc).error(
            "give the node groups to size either as 'cluster: {vary: GROUP}' with 'search' "
            "or under a top-level 'vary', not both")
    if cl.group is None and not groups:
        where = doc.get("cluster") or doc
        raise where.error("a plan sizes a node group: give 'cluster' as "
                          "{file: CLUSTER, vary: GROUP}, or the groups and their costs under "
                          "'vary' ({GROUP: {min: A, max: B, cost: C}, ...})")
    wl = doc.optional_doc("workload")
    probe = grid.cells([cl.replicas[0] if cl.replicas else 1])[0]
    if probe.mode != "replay" or probe.load is not None:
        where = wl if wl is not None else doc
        raise where.error("a plan needs a workload that does not grow with the cluster: "
                          "'offered_gpus' (GPUs requested at once) or 'as_traced: true' "
                          "('load', an openb pod list's default re-timing and fill mode "
                          "scale with each cell's capacity)")
    targets = _targets(doc, path, grid, target)
    search = doc.optional_doc("search")
    search = search.with_context("search") if search is not None else None
    if search is not None:
        search.check_keys(SEARCH_KEYS, "'search'")
        if groups and ("min" in search or "max" in search or "step" in search):
            raise search.error("with a top-level 'vary', each group's range is given there "
                               "(min, max, step); 'search' takes max_evaluations and per_round")

    def get(key: str, default: int | None, override: int | None, lo: int, hi: int) -> int:
        if override is not None:
            if not lo <= override <= hi:
                raise InputError(None, None, f"--{key.replace('_', '-')} must be {lo}..{hi}, "
                                             f"got {override}")
            return override
        value = search.optional_int(key, default, min=lo, max=hi) if search is not None \
            else default
        if value is None:
            raise (search or doc).error(f"'search' needs '{key}'")
        return value

    if groups:
        if math.prod(len(g.sizes) for g in groups) > MAX_BOX:
            raise (doc.get("vary") or doc).error(
                f"'vary': the groups' ranges give more than {MAX_BOX:,} sizes together; "
                "narrow them (or raise 'step')")
        if min_nodes is not None or max_nodes is not None:
            raise InputError(None, None, "--min/--max size one group; with several, give "
                                         "each range with --vary GROUP:min=A,max=B")
        lo, hi, step = groups[0].min, groups[0].max, groups[0].step
    else:
        lo = get("min", 1, min_nodes, 1, MAX_REPLICAS)
        hi = get("max", None, max_nodes, 1, MAX_REPLICAS)
        if hi < lo:
            raise (search or doc).error(f"'search': max ({hi}) is below min ({lo})")
        step = get("step", 1, None, 1, MAX_REPLICAS)
    budget = get("max_evaluations", DEFAULT_MAX_EVALUATIONS if not groups
                 else DEFAULT_MAX_EVALUATIONS_MULTI, max_evaluations, 1, 1000)
    per_round = get("per_round", 1, None, 1, 1000)
    aggregate = doc.optional_str("aggregate", "worst")
    if aggregate not in AGGREGATES:
        raise doc.get("aggregate").error(f"'aggregate' must be one of {', '.join(AGGREGATES)}, "
                                         f"got {aggregate!r}")
    return Plan(path, grid, targets[0], lo, hi, step, budget, per_round, aggregate,
                targets=tuple(targets), groups=tuple(groups))


def _targets(doc: Doc, path: str, grid: _Grid, override: str | Sequence[str] | None
             ) -> list[Target]:
    """The plan's targets (``target``: one string or a list), each scope's name
    checked against the trace (classes, namespaces) or the cluster (groups)."""
    if override is not None:
        texts = [override] if isinstance(override, str) else list(override)
        parsed = [(Target.parse(t, path="--target"), None) for t in texts]
    else:
        tv = doc.require("target")
        items = tv.as_list("'target'") if tv.is_list else [tv]
        if not items:
            raise tv.error("'target' lists no target")
        parsed = [(Target.parse(v.as_str("'target'", nonempty=True), v), v) for v in items]
    known: dict[str, set[str]] = {}
    for tgt, where in parsed:
        scoped = tgt.scoped
        if scoped is None:
            continue
        scope, name = scoped
        if scope not in known:
            known[scope] = _scope_names(scope, grid)
        if name not in known[scope]:
            plural = {"class": "classes", "namespace": "namespaces", "group": "node groups"}
            message = (f"'target': no {'node group' if scope == 'group' else 'pod'} of the "
                       f"{'cluster' if scope == 'group' else 'trace'} has {scope} '{name}' "
                       f"({plural[scope]}: {', '.join(sorted(known[scope])) or 'none'})")
            raise (where.error(message) if where is not None
                   else InputError(path="--target", line=None, problem=message))
    return [t for t, _ in parsed]


def _scope_names(scope: str, grid: _Grid) -> set[str]:
    """The pod classes or namespaces of the plan's traces, or its cluster's groups."""
    if scope == "group":
        from hamisim.io.clusterfile import cluster_from_path
        return {n.group or n.name for n in cluster_from_path(grid.clusters[0].file.path).nodes}
    from hamisim.io.traces import read_trace
    out: set[str] = set()
    for f in grid.traces:
        trace = read_trace(f.path)
        out |= set(trace.class_labels) if scope == "class" else \
            {t.namespace for t in trace.templates}
    return out


def _vary_groups(doc: Doc, cl: Any, specs: Sequence[str]) -> list[VaryGroup]:
    """The top-level ``vary`` mapping (GROUP: {min, max, cost, step}), then the
    ``--vary`` specs, which replace it when given; each group checked against the
    cluster file."""
    from hamisim.studies.sweepfile import _check_group
    out: dict[str, VaryGroup] = {}
    v = doc.get("vary")
    if v is not None:
        vd = v.as_doc("'vary'")
        for name in vd.keys():
            g = vd.require(name)
            gd = g.as_doc(f"'vary: {name}'").with_context(f"vary: {name}")
            gd.check_keys(VARY_KEYS, f"'vary: {name}'")
            _check_group(cl.file, g, name)
            lo = gd.optional_int("min", 1, min=1, max=MAX_REPLICAS)
            hi = gd.optional_int("max", None, min=1, max=MAX_REPLICAS)
            if hi is None:
                raise gd.error(f"'vary: {name}' needs 'max': the most nodes the search tries")
            if hi < lo:
                raise gd.error(f"'vary: {name}': max ({hi}) is below min ({lo})")
            cv = gd.get("cost")
            cost = 1.0 if cv is None else cv.scalar
            if isinstance(cost, bool) or not isinstance(cost, (int, float)) \
                    or not 0 < cost < math.inf:
                raise (cv or gd).error(f"'vary: {name}': 'cost' must be a positive number "
                                       f"per node, got {cost!r}")
            out[name] = VaryGroup(name, lo, hi, float(cost), gd.optional_int("step", 1, min=1,
                                                                       max=MAX_REPLICAS))
    if specs:
        given: dict[str, VaryGroup] = {}
        for text in specs:
            name, values = parse_vary_spec(text)
            if name in given:
                raise InputError("--vary", None, f"group {name} is given twice")
            _check_group_cli(cl, name)
            base = out.get(name)
            lo = int(values.get("min", base.min if base else 1))
            hi = values.get("max", base.max if base else None)
            if hi is None:
                raise InputError("--vary", None, f"{text!r}: give max=B (the most {name} "
                                                 "nodes the search tries)")
            cost = values.get("cost", base.cost if base else 1.0)
            step = int(values.get("step", base.step if base else 1))
            if not (1 <= lo <= int(hi) <= MAX_REPLICAS and step >= 1 and 0 < cost < math.inf):
                raise InputError("--vary", None, f"{text!r}: need 1 <= min <= max <= "
                                                 f"{MAX_REPLICAS}, step >= 1, cost > 0")
            given[name] = VaryGroup(name, lo, int(hi), float(cost), step)
        out = given
    return list(out.values())


def _check_group_cli(cl: Any, name: str) -> None:
    from hamisim.studies.sweepfile import _group_entries
    groups = _group_entries(load_mapping(cl.file.path).data)
    if name not in groups:
        raise InputError("--vary", None, f"{cl.file.label} has no node group '{name}' "
                                         f"(node groups: {', '.join(groups) or 'none'})")


@dataclass(kw_only=True)
class _Explored:
    """What every plan's search leaves: the sizes it simulated and their files."""

    curve: pd.DataFrame
    table: pd.DataFrame
    out: Path
    figure: Path | None
    stats: RunStats
    note: str = ""
    failed: list[str] = field(default_factory=list)


@dataclass
class PlanOutcome(_Explored):
    """The answer of a plan and the curve it explored."""

    plan: Plan
    answer: int | None
    exact: bool
    bracket: tuple[int | None, int | None]      # (largest failing, smallest meeting) size

    def _repr_html_(self) -> str:
        """Jupyter: the answer, the search's figure and its curve."""
        said = f"{self.answer} nodes" if self.answer is not None else "no size in the range"
        return notebook_html(f"hamisim plan: {said} meet {self.plan.target}", self.curve,
                             self.figure)


def _aggregate(values: list[float], plan: Plan, target: Target | None = None) -> float:
    if plan.aggregate == "median":
        return float(np.median(values))
    if plan.aggregate == "mean":
        return float(np.mean(values))
    return float(max(values) if (target or plan.target).upper else min(values))


def _measure(plan: Plan, mine: list[dict[str, Any]], cells: Path, what: str
             ) -> tuple[dict[str, Any], list[str]]:
    """One size's figures from its cells' rows ``mine`` (one per seed): per target
    its aggregate over the seeds (and their min, median, max), ``met`` (every
    target met), ``missed`` (the targets it misses, as text); and the failed
    cells (``what`` names the size in their message)."""
    point: dict[str, Any] = {"seeds": 0}
    failed: list[str] = []
    missed: list[str] = []
    for t in plan.all_targets:
        got = {r["cell"]: t.of(r, cells) for r in mine}
        bad = [r for r in mine if r.get("status") != STATUS_OK or not _finite(got[r["cell"]])]
        failed.extend(f"{r['cell']} ({what}): {r.get('error') or t.column + ' missing'}"
                      for r in bad)
        values = [float(got[r["cell"]]) for r in mine if r not in bad]
        agg = _aggregate(values, plan, t) if values and not bad else math.nan
        m = t.column
        point.update({m: agg, f"{m}_min": min(values) if values else math.nan,
                      f"{m}_median": float(np.median(values)) if values else math.nan,
                      f"{m}_max": max(values) if values else math.nan})
        point["seeds"] = max(point["seeds"], len(values))
        if bad or not t.met(agg):
            missed.append(str(t))
    point["met"] = not failed and not missed
    point["missed"] = "; ".join(missed)
    return point, sorted(set(failed))


def run_plan(plan: Plan, out: str | os.PathLike[str], *, workers: int | None = None,
             dask_scheduler: str | None = None, resume: bool = False, overwrite: bool = False,
             fmt: str = "parquet", retries: int = DEFAULT_RETRIES, progress: bool | None = None,
             log: Callable[[str], None] | None = None) -> PlanOutcome | MultiPlanOutcome:
    """Search the node count (several groups: :func:`run_multi_plan`); write ``curve``,
    ``results``, ``plan.json`` and ``figures/plan.png`` into ``out`` (cells in
    ``out/cells/``)."""
    if plan.groups:
        return run_multi_plan(plan, out, workers=workers, dask_scheduler=dask_scheduler,
                              resume=resume, overwrite=overwrite, fmt=fmt, retries=retries,
                              progress=progress, log=log)
    out = prepare_out(out, resume=resume, overwrite=overwrite)
    sizes = plan.sizes
    points: dict[int, dict[str, Any]] = {}        # index into sizes -> evaluated point
    rows: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    stats = RunStats()
    with CellRunner(out, workers=workers, dask_scheduler=dask_scheduler, retries=retries,
                    fmt=fmt, progress=progress, cell_outputs=plan.grid.cell_outputs,
                    metrics=plan.grid.metrics,
                    log=log) as runner:

        def evaluate(idxs: list[int]) -> None:
            cells = plan.grid.cells(replicas_override=[sizes[i] for i in idxs])
            st = runner.run(cells, resume=True)
            _add_stats(stats, st)
            rows.update(st.rows)
            n_round = 1 + max((p["round"] for p in points.values()), default=0)
            for i in idxs:
                mine = [st.rows[c.id] for c in cells if c.replicas == sizes[i]]
                point, bad = _measure(plan, mine, runner.cells_dir, f"{sizes[i]} nodes")
                failed.extend(bad)
                points[i] = {"replicas": sizes[i], "round": n_round,
                             "nodes": mine[0].get("nodes"), "gpus": mine[0].get("gpus"),
                             **point}

        k = len(sizes) - 1
        unservable: dict[str, Any] | None = None
        evaluate([k])
        lo_i, hi_i = -1, k
        note = ""
        if failed:
            note = "cells failed; the search stopped"
        elif not points[k]["met"]:
            note = f"the target is not met even at {sizes[k]} nodes (the top of the range)"
            hi_i = None
            unservable = unservable_by_group(plan)
            if unservable["pods"]:
                note += (f"; {unservable['pods']} pods of the trace fit no node of group "
                         f"'{plan.group}' even empty ({unservable['summary']}): more "
                         f"'{plan.group}' nodes cannot serve them, their waits hang on the "
                         "other groups")
        while not failed and hi_i is not None and hi_i - lo_i > 1 \
                and len(points) < plan.max_evaluations:
            n = min(plan.per_round, plan.max_evaluations - len(points), hi_i - lo_i - 1)
            picks = sorted({lo_i + (hi_i - lo_i) * j // (n + 1) for j in range(1, n + 1)}
                           - {lo_i, hi_i} - set(points))
            if not picks:
                break
            evaluate(picks)
            if failed:
                note = "cells failed; the search stopped"
                break
            hi_i = min(i for i, p in points.items() if p["met"])
            lo_i = max((i for i, p in points.items() if not p["met"] and i < hi_i), default=-1)

    answer = sizes[hi_i] if hi_i is not None and not failed else None
    exact = answer is not None and hi_i - lo_i == 1 and lo_i >= 0
    bracket = (sizes[lo_i] if hi_i is not None and lo_i >= 0 else None,
               answer)
    if answer is not None and not exact:
        if lo_i < 0 and hi_i == 0:
            note = (f"the target is met at the bottom of the range ({sizes[0]} nodes); "
                    "fewer nodes may do")
        else:
            low = sizes[lo_i] + plan.step if lo_i >= 0 else sizes[0]
            note = (f"{plan.max_evaluations} evaluations used: the answer lies in "
                    f"{low}..{answer}")
    if answer is not None:
        wrong = sorted(sizes[i] for i, p in points.items() if i > hi_i and not p["met"])
        if wrong:
            note = (note + "; " if note else "") + (
                "not monotone: the target fails again at " + ", ".join(map(str, wrong))
                + " nodes (noise between seeds? add seeds or use aggregate: median)")
    curve = pd.DataFrame(sorted(points.values(), key=lambda p: p["replicas"]))
    curve = curve[["replicas", "nodes", "gpus", "round", "seeds", *_target_columns(plan),
                   "met", "missed"]]
    stats.rows = rows
    table = results_table(rows.values())
    write_results(table, out, "results", fmt)
    write_results(curve, out, "curve", fmt)
    cl = plan.grid.clusters[0]
    write_json({
        "plan_file": os.path.basename(plan.path), "cluster": cl.file.label, "group": plan.group,
        "target": str(plan.target), "aggregate": plan.aggregate,
        "policy": plan.grid.cells([sizes[0]])[0].label,
        "seeds": plan.grid.seeds, "range": {"min": plan.min, "max": plan.max,
                                            "step": plan.step},
        "max_evaluations": plan.max_evaluations, "evaluations": len(points),
        "answer": answer, "exact": exact,
        "bracket": {"largest_failing": bracket[0], "smallest_meeting": bracket[1]},
        "note": note, "failed_cells": failed,
        # the targets one node fewer misses: those that decide the size
        "binding": (points[lo_i]["missed"].split("; ") if answer is not None and lo_i >= 0
                    and points[lo_i]["missed"] else []),
        # with no answer: the trace's pods the group cannot serve (unservable_by_group)
        **({"unservable_by_group": {k: v for k, v in unservable.items() if k != "summary"}}
           if unservable else {}),
    }, out / "plan.json")
    figure = plot_plan(curve, plan, answer, out / "figures" / "plan.png") if len(curve) else None
    write_report(out)
    return PlanOutcome(plan, answer, exact, bracket, curve=curve, table=table, out=out,
                       figure=figure, stats=stats, note=note, failed=failed)


def _add_stats(stats: RunStats, more: RunStats) -> None:
    for k in ("ran", "reused", "failed", "retried"):
        setattr(stats, k, getattr(stats, k) + getattr(more, k))


def _target_columns(plan: Plan) -> list[str]:
    return [c for t in plan.all_targets
            for c in (t.column, f"{t.column}_min", f"{t.column}_median", f"{t.column}_max")]


def unservable_by_group(plan: Plan, groups: Sequence[str] | None = None) -> dict[str, Any]:
    """The trace's pods that no node of the varied group (or of any of ``groups``)
    takes even empty (one attempt per request on a cluster of one node of each,
    :func:`hamisim.studies.unplaceable.find_unplaceable`): ``pods`` (their count),
    ``classes`` (pods per class) and ``summary`` (text: the classes and the
    reasons). Adding nodes of the group cannot shorten their wait."""
    from hamisim.io.clusterfile import cluster_from_path
    from hamisim.io.traces import read_trace
    from hamisim.studies.unplaceable import find_unplaceable
    cl = plan.grid.clusters[0]
    names = list(groups) if groups is not None else [plan.group]
    cluster = cluster_from_path(cl.file.path, resize={g: 1 for g in names})
    mine = tuple(next(n for n in cluster.nodes if n.group == g) for g in names)
    classes: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for trace_file in plan.grid.traces:
        trace = read_trace(trace_file.path)
        found = find_unplaceable(dataclasses.replace(cluster, nodes=mine), trace.templates)
        if not found:
            continue
        labels = trace.class_labels
        for i in np.flatnonzero(np.isin(trace.template, list(found))).tolist():
            code = int(trace.pod_class[i])
            label = labels[code] if code >= 0 else "(no class)"
            classes[label] = classes.get(label, 0) + 1
            why = found[int(trace.template[i])]
            reasons[why] = reasons.get(why, 0) + 1
    top = sorted(classes.items(), key=lambda kv: (-kv[1], kv[0]))
    why = sorted(reasons.items(), key=lambda kv: -kv[1])
    summary = ", ".join(f"{n} of class {c}" for c, n in top[:4]) + (
        "; " + "; ".join(f"{n}: {w}" for w, n in why[:2]) if why else "")
    return {"pods": sum(classes.values()), "classes": dict(top), "summary": summary}


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def plot_plan(curve: pd.DataFrame, plan: Plan, answer: int | None, path: Path) -> Path:
    """The explored curve: the metric against the node count, seeds as error bars,
    the target as a line, the answer marked."""
    from hamisim.plots import _save, plt
    path.parent.mkdir(parents=True, exist_ok=True)
    t = plan.target
    m = t.column
    fig, ax = plt.subplots(figsize=(8, 4.8))
    x = curve["replicas"].to_numpy()
    y = curve[m].to_numpy(dtype=float)
    ax.plot(x, y, color="grey", lw=0.8, zorder=1)
    for met, colour, label in ((True, "tab:green", "meets the target"),
                               (False, "tab:red", "misses the target")):
        sel = curve["met"].to_numpy() == met
        if sel.any():
            lo = (curve[m] - curve[f"{m}_min"]).to_numpy(dtype=float)[sel]
            hi = (curve[f"{m}_max"] - curve[m]).to_numpy(dtype=float)[sel]
            ax.errorbar(x[sel], y[sel], yerr=[np.maximum(lo, 0), np.maximum(hi, 0)], fmt="o",
                        color=colour, capsize=3, label=label, zorder=2)
    for xi, yi, n in zip(x, y, curve["round"]):
        ax.annotate(str(n), (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7,
                    color="dimgrey")
    ax.axhline(t.value, color="black", ls="--", lw=0.9, label=f"target: {t}")
    if answer is not None:
        ax.axvline(answer, color="tab:green", ls=":", lw=1.2, label=f"answer: {answer} nodes")
    finite = y[np.isfinite(y)]
    if len(finite) and finite.max() > 50 * max(abs(t.value), 1e-9) and finite.max() > 0:
        ax.set_yscale("symlog", linthresh=max(abs(t.value), 1.0))
    agg = {"worst": "worst", "median": "median", "mean": "mean"}[plan.aggregate]
    seeds = len(plan.grid.seeds)
    ax.set(xlabel=f"nodes in group '{plan.group}'",
           ylabel=f"{m} ({agg} of {seeds} seed{'s' if seeds > 1 else ''})",
           title=f"Capacity plan: {t} (numbers: search round; bars: seed range)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return _save(fig, path)


def format_plan_report(o: PlanOutcome) -> str:
    """What ``hamisim plan`` prints: the answer, the curve, where files went."""
    p = o.plan
    t = p.target
    policy = p.grid.cells([p.sizes[0]])[0].label
    lines = []
    if o.answer is not None:
        pt = o.curve[o.curve["replicas"] == o.answer].iloc[0]
        lines.append(f"hamisim plan: {o.answer} nodes of group '{p.group}' "
                     f"({int(pt['gpus'])} GPUs) meet {t} under {policy} "
                     f"({p.aggregate} of {len(p.grid.seeds)} seed(s): {pt[t.column]:.4g})")
        if o.bracket[0] is not None:
            below = o.curve[o.curve["replicas"] == o.bracket[0]].iloc[0]
            lines.append(f"  {o.bracket[0]} nodes do not ({below[t.column]:.4g})"
                         if len(p.all_targets) == 1 else
                         f"  {o.bracket[0]} nodes do not: binding {below['missed']}")
    else:
        lines.append(f"hamisim plan: no answer for {t} under {policy} in "
                     f"{p.min}..{p.max} nodes of group '{p.group}'")
    if o.note:
        lines.append(f"  note: {o.note}")
    for f in o.failed:
        lines.append(f"  failed cell {f}")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        lines.append(o.curve.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    lines.append(f"explored {len(o.curve)} sizes ({o.stats.ran + o.stats.failed} cells run, "
                 f"{o.stats.reused} reused); written to {o.out}/ (report.html, curve, results, "
                 "plan.json, figures/plan.png, cells/)")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# several node groups at once

@dataclass
class MultiPlanOutcome(_Explored):
    """The answer of a plan over several node groups (:func:`run_multi_plan`)."""

    plan: Plan
    #: nodes per group of the cheapest size found to meet every target, or None
    answer: dict[str, int] | None
    cost: float | None
    #: whether every cheaper size was ruled out (then ``answer`` is the cheapest)
    exact: bool
    #: every size cheaper than this was ruled out (the cost of the cheapest one not)
    lower_bound: float | None
    #: per group: the targets one node fewer of that group misses (what decides it)
    binding: dict[str, list[str]]
    #: per group: the fewest nodes meeting every target with the other groups at
    #: their max (the search's first stage), None if not found within the budget
    floors: dict[str, int | None]
    #: the trace's pods no node of any varied group takes even empty
    unservable: dict[str, Any] = field(default_factory=dict)

    def _repr_html_(self) -> str:
        """Jupyter: the answer, the search's figure and its curve."""
        said = _sizes_text(self.answer) if self.answer else "no size in the ranges"
        return notebook_html(f"hamisim plan: {said}", self.curve, self.figure)


def _sizes_text(sizes: dict[str, int]) -> str:
    return ", ".join(f"{n} {g}" for g, n in sizes.items())


def _dominated(x: tuple[int, ...], y: tuple[int, ...]) -> bool:
    """Whether ``x <= y`` in every group."""
    return all(a <= b for a, b in zip(x, y))


def run_multi_plan(plan: Plan, out: str | os.PathLike[str], *, workers: int | None = None,
                   dask_scheduler: str | None = None, resume: bool = False,
                   overwrite: bool = False, fmt: str = "parquet", retries: int = DEFAULT_RETRIES,
                   progress: bool | None = None, log: Callable[[str], None] | None = None
                   ) -> MultiPlanOutcome:
    """The cheapest sizes of several node groups (``plan.groups``, each a range and
    a cost per node) at which every target is met; ``curve``, ``results``,
    ``plan.json`` and ``figures/plan.png`` written into ``out``.

    The search assumes more nodes of any group never hurt any target (each
    target's figure is monotone in every group's size); with that, a size that
    meets every target makes every larger one meet, and one that misses makes
    every smaller one miss. It runs in three stages:

    1. the top corner (every group at its max): if it misses, nothing in the
       ranges meets (the answer is None, and the pods no varied group can serve
       are named);
    2. per group, a bisection of its size with the others at their max: the
       fewest nodes ``f_g`` meeting there. Every size meeting the targets has
       at least ``f_g`` nodes of group ``g`` (fewer miss even with the most of
       the others);
    3. every size of the box ``f <= x <= max`` in order of cost (then of nodes,
       then of the groups' order): a size below one that missed is skipped, one
       above one that met is the answer, any other is simulated (``per_round``
       at a time). The first to meet is the cheapest (``exact``); beyond
       ``max_evaluations`` the search stops with the cheapest size that met so
       far and the cost below which every size was ruled out (``lower_bound``).
    """
    out = prepare_out(out, resume=resume, overwrite=overwrite)
    groups = plan.groups
    names = [g.name for g in groups]
    top = tuple(g.max for g in groups)
    points: dict[tuple[int, ...], dict[str, Any]] = {}
    rows: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    stats = RunStats()
    base = plan.grid.cells([1])

    def cost(x: tuple[int, ...]) -> float:
        return float(sum(g.cost * n for g, n in zip(groups, x)))

    def cells_of(x: tuple[int, ...]) -> list[Any]:
        from hamisim.studies.sweepfile import make_cell
        fields_ = [f.name for f in dataclasses.fields(base[0]) if f.name != "id"]
        return [make_cell(**{**{k: getattr(c, k) for k in fields_}, "group": names[0],
                             "replicas": x[0], "also": tuple(zip(names[1:], x[1:]))})
                for c in base]

    with CellRunner(out, workers=workers, dask_scheduler=dask_scheduler, retries=retries,
                    fmt=fmt, progress=progress, cell_outputs=plan.grid.cell_outputs,
                    metrics=plan.grid.metrics, log=log) as runner:

        def evaluate(xs: list[tuple[int, ...]], stage: int) -> None:
            xs = [x for x in dict.fromkeys(xs) if x not in points]
            if not xs:
                return
            by_x = {x: cells_of(x) for x in xs}
            st = runner.run([c for cs in by_x.values() for c in cs], resume=True)
            _add_stats(stats, st)
            rows.update(st.rows)
            n_round = 1 + max((p["round"] for p in points.values()), default=0)
            for x, cs in by_x.items():
                mine = [st.rows[c.id] for c in cs]
                point, bad = _measure(plan, mine, runner.cells_dir, _sizes_text(
                    dict(zip(names, x))))
                failed.extend(bad)
                points[x] = {**dict(zip(names, x)), "cost": cost(x), "stage": stage,
                             "round": n_round, "nodes": mine[0].get("nodes"),
                             "gpus": mine[0].get("gpus"), **point}

        def known(x: tuple[int, ...]) -> bool | None:
            """Met or missed by monotonicity from what was simulated; None: unknown."""
            if x in points:
                return bool(points[x]["met"])
            if any(not p["met"] and _dominated(x, y) for y, p in points.items()):
                return False
            if any(p["met"] and _dominated(y, x) for y, p in points.items()):
                return True
            return None

        evaluate([top], 1)
        note = ""
        floors: dict[str, int | None] = {n: None for n in names}
        answer: tuple[int, ...] | None = None
        lower: float | None = None
        if failed:
            note = "cells failed; the search stopped"
        elif not points[top]["met"]:
            note = ("the targets are not met even with every group at its max ("
                    + _sizes_text(dict(zip(names, top))) + f"): {points[top]['missed']}")
        else:
            # stage 2: per group, bisect its size with the others at their max (one
            # probe per group per round, the rounds' cells run together)
            sizes = [g.sizes for g in groups]
            bracket = [[-1, len(s) - 1] for s in sizes]     # (missing, meeting) index

            def probe(i: int, j: int) -> tuple[int, ...]:
                return tuple(sizes[i][j] if k == i else top[k] for k in range(len(groups)))

            while not failed and len(points) < plan.max_evaluations:
                picks = {i: (lo + hi) // 2 for i, (lo, hi) in enumerate(bracket)
                         if hi - lo > 1}
                if not picks:
                    break
                todo = [probe(i, j) for i, j in picks.items()][
                    :plan.max_evaluations - len(points)]
                evaluate(todo, 2)
                for i, j in picks.items():
                    x = probe(i, j)
                    if x in points:
                        bracket[i][0 if not points[x]["met"] else 1] = j
            for i, n in enumerate(names):
                if bracket[i][1] - bracket[i][0] == 1:
                    floors[n] = sizes[i][bracket[i][1]]
            # every meeting size has more of group i than its largest missing probe
            floor = tuple(sizes[i][bracket[i][0] + 1] for i in range(len(groups)))
            # stage 3: the box above the floors, by cost
            box = list(itertools.product(*[[v for v in s if v >= f]
                                           for s, f in zip(sizes, floor)]))
            box.sort(key=lambda x: (cost(x), sum(x), x))
            while not failed:
                undecided: list[tuple[int, ...]] = []
                for x in box:
                    k = known(x)
                    if k is False:
                        continue
                    if k is True:
                        if not undecided:
                            answer = x
                        break
                    undecided.append(x)
                    if len(undecided) >= plan.per_round:
                        break
                if answer is not None or not undecided:
                    break
                if len(points) >= plan.max_evaluations:
                    lower = cost(undecided[0])
                    break
                evaluate(undecided[:plan.max_evaluations - len(points)], 3)
            if failed:
                note = "cells failed; the search stopped"
    exact = answer is not None
    if answer is None and not failed and points.get(top, {}).get("met"):
        met = [x for x, p in points.items() if p["met"]]
        answer = min(met, key=lambda x: (cost(x), sum(x), x))
        note = (f"{plan.max_evaluations} evaluations used: the cheapest size that met costs "
                f"{cost(answer):g}; every size costing less than {lower:g} was ruled out")
    if exact:
        lower = cost(answer)
    binding: dict[str, list[str]] = {}
    if answer is not None:
        for i, (g, n) in enumerate(zip(groups, answer)):
            if n - g.step < g.min:
                binding[g.name] = []            # at the bottom of its range
                continue
            y = tuple(v - g.step if k == i else v for k, v in enumerate(answer))
            misses = [(z, p) for z, p in points.items() if not p["met"] and _dominated(y, z)]
            if misses:
                z, p = min(misses, key=lambda zp: sum(zp[0]))
                binding[g.name] = p["missed"].split("; ")
            else:
                binding[g.name] = ["(not decided: fewer nodes were not ruled out)"]
    unservable = unservable_by_group(plan, names)
    curve = pd.DataFrame(sorted(points.values(), key=lambda p: (p["cost"], p["round"])))
    curve = curve[[*names, "cost", "nodes", "gpus", "stage", "round", "seeds",
                   *_target_columns(plan), "met", "missed"]]
    stats.rows = rows
    table = results_table(rows.values())
    write_results(table, out, "results", fmt)
    write_results(curve, out, "curve", fmt)
    sizes_answer = dict(zip(names, answer)) if answer is not None else None
    write_json({
        "plan_file": os.path.basename(plan.path),
        "cluster": plan.grid.clusters[0].file.label,
        "groups": [dataclasses.asdict(g) for g in groups],
        "targets": [str(t) for t in plan.all_targets], "aggregate": plan.aggregate,
        "policy": base[0].label, "seeds": plan.grid.seeds,
        "max_evaluations": plan.max_evaluations, "evaluations": len(points),
        "answer": sizes_answer, "cost": cost(answer) if answer is not None else None,
        "exact": exact, "lower_bound": lower, "floors": floors, "binding": binding,
        "search": "monotone: top corner, per-group bisection, then sizes by cost",
        "note": note, "failed_cells": failed,
        "unservable": {k: v for k, v in unservable.items() if k != "summary"},
    }, out / "plan.json")
    figure = plot_multi_plan(curve, plan, answer, out / "figures" / "plan.png") \
        if len(curve) else None
    write_report(out)
    return MultiPlanOutcome(plan, sizes_answer, cost(answer) if answer is not None else None,
                            exact, lower, binding, floors, unservable, curve=curve, table=table,
                            out=out, figure=figure, stats=stats, note=note, failed=failed)


def plot_multi_plan(curve: pd.DataFrame, plan: Plan, answer: tuple[int, ...] | None,
                    path: Path) -> Path:
    """The sizes the search simulated, the first two groups as axes: green met
    every target, red missed one; the answer starred, cost as each point's label."""
    from hamisim.plots import _save, plt
    path.parent.mkdir(parents=True, exist_ok=True)
    a = plan.groups[0].name
    b = plan.groups[1].name if len(plan.groups) > 1 else "cost"     # one group: its cost
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for met, colour, label in ((True, "tab:green", "meets every target"),
                               (False, "tab:red", "misses a target")):
        sel = curve["met"].to_numpy() == met
        if sel.any():
            ax.scatter(curve[a][sel], curve[b][sel], color=colour, label=label, zorder=2)
    for _, r in curve.iterrows():
        ax.annotate(f"{r['cost']:g}", (r[a], r[b]), textcoords="offset points", xytext=(4, 4),
                    fontsize=7, color="dimgrey")
    if answer is not None:
        price = sum(g.cost * n for g, n in zip(plan.groups, answer))
        ax.scatter([answer[0]], [answer[1] if len(answer) > 1 else price], marker="*",
                   s=250, color="tab:green",
                   edgecolor="black", zorder=3, label=f"answer (cost {price:g})")
    others = f" (other groups: {', '.join(g.name for g in plan.groups[2:])} as searched)" \
        if len(plan.groups) > 2 else ""
    ax.set(xlabel=f"nodes in group '{a}' (cost {plan.groups[0].cost:g} each)",
           ylabel=f"nodes in group '{b}' (cost {plan.groups[1].cost:g} each)"
           if len(plan.groups) > 1 else "cost",
           title="Capacity plan: sizes simulated (labels: cost)" + others)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))     # node counts are whole
    if len(plan.groups) > 1:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return _save(fig, path)


def format_multi_plan_report(o: MultiPlanOutcome) -> str:
    """What ``hamisim plan`` prints for several node groups."""
    p = o.plan
    targets = " and ".join(str(t) for t in p.all_targets)
    lines = []
    if o.answer is not None:
        how = "the cheapest" if o.exact else "the cheapest found"
        lines.append(f"hamisim plan: {_sizes_text(o.answer)} nodes (cost {o.cost:g}, {how}) "
                     f"meet {targets} under {p.grid.cells([1])[0].label} "
                     f"({p.aggregate} of {len(p.grid.seeds)} seed(s))")
        for g in p.groups:
            why = o.binding.get(g.name, [])
            lines.append(f"  {g.name}: " + (f"one node fewer misses {'; '.join(why)}" if why
                                             else f"at the bottom of its range ({g.min})"))
    else:
        lines.append(f"hamisim plan: no answer for {targets} in "
                     + ", ".join(f"{g.name} {g.min}..{g.max}" for g in p.groups))
    if o.note:
        lines.append(f"  note: {o.note}")
    u = o.unservable
    if u.get("pods"):
        lines.append(f"  {u['pods']} pods of the trace fit no node of "
                     f"{', '.join(g.name for g in p.groups)} even empty ({u['summary']}): "
                     "no size of these groups serves them")
    for f in o.failed:
        lines.append(f"  failed cell {f}")
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        lines.append(o.curve.drop(columns=[c for c in o.curve if c.endswith(
            ("_min", "_median", "_max")) and c.rsplit("_", 1)[0] in
            {t.column for t in p.all_targets}]).to_string(
            index=False, float_format=lambda v: f"{v:.4g}"))
    lines.append(f"explored {len(o.curve)} sizes ({o.stats.ran + o.stats.failed} cells run, "
                 f"{o.stats.reused} reused); written to {o.out}/ (report.html, curve, results, "
                 "plan.json, figures/plan.png, cells/)")
    return "\n".join(lines) + "\n"
