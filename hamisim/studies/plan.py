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
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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
           "format_plan_report", "AGGREGATES"]

PLAN_KEYS = SWEEP_KEYS | {"target", "search", "aggregate"}
SEARCH_KEYS = frozenset({"min", "max", "step", "max_evaluations", "per_round"})
AGGREGATES = ("worst", "median", "mean")
DEFAULT_MAX_EVALUATIONS = 10
#: a pod class's figures (summary.json ``results.classes``) a target may name
CLASS_METRICS = ("pending_p50_s", "pending_p99_s", "pending_max_s", "queueing_delay_p50_s",
                 "queueing_delay_p99_s", "queueing_delay_max_s", "pods", "bound", "abandoned",
                 "pending_at_end")
_TARGET = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+of\s+class\s+(\S+))?\s*(<=|>=|<|>)\s*"
                     r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": lambda a, b: a <= b, "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
}


@dataclass(frozen=True)
class Target:
    """``metric op value``, e.g. ``pending_p99_s <= 60``; with ``pod_class``
    (``pending_p99_s of class train-8gpu <= 1800``) the figure of that pod
    class, from the cell's summary.json (``results.classes``)."""

    metric: str
    op: str
    value: float
    pod_class: str | None = None

    @classmethod
    def parse(cls, text: str, where: Value | None = None, path: str | None = None) -> Target:
        """Parse ``METRIC OP NUMBER``; ``InputError`` at ``where`` when malformed."""
        def error(problem: str) -> InputError:
            return where.error(problem) if where is not None else InputError(path, None, problem)

        m = _TARGET.match(text)
        if not m:
            raise error(f"'target' must read METRIC OP NUMBER with OP one of <=, <, >=, > "
                        f"(e.g. 'pending_p99_s <= 60'), got {text!r}")
        metric, pod_class, op, number = m.group(1), m.group(2), m.group(3), float(m.group(4))
        if pod_class is not None:
            if metric not in CLASS_METRICS:
                raise error(f"'target': a class's figure is one of {', '.join(CLASS_METRICS)}, "
                            f"got '{metric}'")
            return cls(metric, op, number, pod_class)
        if metric not in METRICS:
            import difflib
            hint = difflib.get_close_matches(metric, list(METRICS), n=1)
            raise error(f"'target': unknown metric '{metric}' (one of: {', '.join(METRICS)})"
                        + (f"; did you mean '{hint[0]}'?" if hint else ""))
        return cls(metric, op, number)

    @property
    def upper(self) -> bool:
        """Whether the target bounds the metric from above (``<=``, ``<``)."""
        return self.op in ("<=", "<")

    def met(self, x: float) -> bool:
        """Whether the value ``x`` of the metric meets the target."""
        return _OPS[self.op](x, self.value)

    @property
    def column(self) -> str:
        """The target's figure as a curve column: the metric, with its class."""
        return self.metric if self.pod_class is None else f"{self.metric}[{self.pod_class}]"

    def of(self, row: dict[str, Any], cells: Path) -> Any:
        """The figure of a cell's ``row`` (its folder under ``cells``); ``None`` when
        the class has no pod in the cell."""
        if self.pod_class is None:
            return row.get(self.metric)
        try:
            summary = json.loads((cells / row["cell"] / "summary.json").read_text())
        except (OSError, ValueError):
            return None
        for c in summary.get("results", {}).get("classes", []):
            if c.get("class") == self.pod_class:
                return c.get(self.metric)
        return None

    def __str__(self) -> str:
        of = f" of class {self.pod_class}" if self.pod_class is not None else ""
        return f"{self.metric}{of} {self.op} {self.value:g}"


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

    @property
    def group(self) -> str:
        """The node group whose replicas the search varies."""
        return str(self.grid.clusters[0].group)

    @property
    def sizes(self) -> list[int]:
        """The node counts the search may try: min, min+step, ... up to max."""
        return list(range(self.min, self.max + 1, self.step))


def load_plan(path: str | os.PathLike[str], *, target: str | None = None,
              min_nodes: int | None = None, max_nodes: int | None = None,
              max_evaluations: int | None = None) -> Plan:
    """Load and validate a plan file; keyword arguments override its values."""
    name = os.fspath(path)
    return plan_from_document(load_mapping(name), name, target=target, min_nodes=min_nodes,
                              max_nodes=max_nodes, max_evaluations=max_evaluations)


def plan_from_document(doc: Doc, path: str, *, target: str | None = None,
                       min_nodes: int | None = None, max_nodes: int | None = None,
                       max_evaluations: int | None = None) -> Plan:
    """A :class:`Plan` from a loaded top-level mapping (see the module docstring)."""
    doc.check_keys(PLAN_KEYS, "a plan file")
    grid = parse_grid(doc, path, single=True)
    cl = grid.clusters[0]
    if cl.group is None:
        where = doc.get("cluster") or doc
        raise where.error("a plan sizes a node group: give 'cluster' as "
                          "{file: CLUSTER, vary: GROUP}")
    wl = doc.optional_doc("workload")
    probe = grid.cells([cl.replicas[0] if cl.replicas else 1])[0]
    if probe.mode != "replay" or probe.load is not None:
        where = wl if wl is not None else doc
        raise where.error("a plan needs a workload that does not grow with the cluster: "
                          "'offered_gpus' (GPUs requested at once) or 'as_traced: true' "
                          "('load', an openb pod list's default re-timing and fill mode "
                          "scale with each cell's capacity)")
    if target is not None:
        tgt = Target.parse(target, path="--target")
    else:
        tv = doc.require("target")
        tgt = Target.parse(tv.as_str("'target'", nonempty=True), tv)
    if tgt.pod_class is not None:
        from hamisim.io.traces import read_trace
        labels = {label for f in grid.traces for label in read_trace(f.path).class_labels}
        if tgt.pod_class not in labels:
            message = (f"'target': no pod of the trace has class '{tgt.pod_class}' (classes: "
                       f"{', '.join(sorted(labels)) or 'none'})")
            raise (InputError(path="--target", line=None, problem=message) if target is not None
                   else doc.require("target").error(message))
    search = doc.optional_doc("search")
    search = search.with_context("search") if search is not None else None
    if search is not None:
        search.check_keys(SEARCH_KEYS, "'search'")

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

    lo = get("min", 1, min_nodes, 1, MAX_REPLICAS)
    hi = get("max", None, max_nodes, 1, MAX_REPLICAS)
    if hi < lo:
        raise (search or doc).error(f"'search': max ({hi}) is below min ({lo})")
    step = get("step", 1, None, 1, MAX_REPLICAS)
    budget = get("max_evaluations", DEFAULT_MAX_EVALUATIONS, max_evaluations, 1, 1000)
    per_round = get("per_round", 1, None, 1, 1000)
    aggregate = doc.optional_str("aggregate", "worst")
    if aggregate not in AGGREGATES:
        raise doc.get("aggregate").error(f"'aggregate' must be one of {', '.join(AGGREGATES)}, "
                                         f"got {aggregate!r}")
    return Plan(path, grid, tgt, lo, hi, step, budget, per_round, aggregate)


@dataclass
class PlanOutcome:
    """The answer of a plan and the curve it explored."""

    plan: Plan
    answer: int | None
    exact: bool
    bracket: tuple[int | None, int | None]      # (largest failing, smallest meeting) size
    curve: pd.DataFrame
    table: pd.DataFrame
    out: Path
    figure: Path | None
    stats: RunStats
    note: str = ""
    failed: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """Jupyter: the answer, the search's figure and its curve."""
        said = f"{self.answer} nodes" if self.answer is not None else "no size in the range"
        return notebook_html(f"hamisim plan: {said} meet {self.plan.target}", self.curve,
                             self.figure)


def _aggregate(values: list[float], plan: Plan) -> float:
    if plan.aggregate == "median":
        return float(np.median(values))
    if plan.aggregate == "mean":
        return float(np.mean(values))
    return float(max(values) if plan.target.upper else min(values))


def run_plan(plan: Plan, out: str | os.PathLike[str], *, workers: int | None = None,
             dask_scheduler: str | None = None, resume: bool = False, overwrite: bool = False,
             fmt: str = "parquet", retries: int = DEFAULT_RETRIES, progress: bool | None = None,
             log: Callable[[str], None] | None = None) -> PlanOutcome:
    """Search the node count; write ``curve``, ``results``, ``plan.json`` and
    ``figures/plan.png`` into ``out`` (cells in ``out/cells/``)."""
    out = prepare_out(out, resume=resume, overwrite=overwrite)
    sizes = plan.sizes
    points: dict[int, dict[str, Any]] = {}        # index into sizes -> evaluated point
    rows: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    stats = RunStats()
    metric = plan.target.column
    with CellRunner(out, workers=workers, dask_scheduler=dask_scheduler, retries=retries,
                    fmt=fmt, progress=progress, cell_outputs=plan.grid.cell_outputs,
                    metrics=plan.grid.metrics,
                    log=log) as runner:

        def evaluate(idxs: list[int]) -> None:
            cells = plan.grid.cells(replicas_override=[sizes[i] for i in idxs])
            st = runner.run(cells, resume=True)
            for k in ("ran", "reused", "failed", "retried"):
                setattr(stats, k, getattr(stats, k) + getattr(st, k))
            rows.update(st.rows)
            n_round = 1 + max((p["round"] for p in points.values()), default=0)
            for i in idxs:
                mine = [st.rows[c.id] for c in cells if c.replicas == sizes[i]]
                got = {r["cell"]: plan.target.of(r, runner.cells_dir) for r in mine}
                bad = [r for r in mine if r.get("status") != STATUS_OK
                       or not _finite(got[r["cell"]])]
                if bad:
                    failed.extend(f"{r['cell']} ({sizes[i]} nodes): "
                                  f"{r.get('error') or metric + ' missing'}" for r in bad)
                values = [float(got[r["cell"]]) for r in mine if r not in bad]
                agg = _aggregate(values, plan) if values and not bad else math.nan
                points[i] = {
                    "replicas": sizes[i], "round": n_round,
                    "nodes": mine[0].get("nodes"), "gpus": mine[0].get("gpus"),
                    "seeds": len(values), metric: agg,
                    f"{metric}_min": min(values) if values else math.nan,
                    f"{metric}_median": float(np.median(values)) if values else math.nan,
                    f"{metric}_max": max(values) if values else math.nan,
                    "met": bool(not bad and plan.target.met(agg)),
                }

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
    curve = curve[["replicas", "nodes", "gpus", "round", "seeds", metric, f"{metric}_min",
                   f"{metric}_median", f"{metric}_max", "met"]]
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
        # with no answer: the trace's pods the group cannot serve (unservable_by_group)
        **({"unservable_by_group": {k: v for k, v in unservable.items() if k != "summary"}}
           if unservable else {}),
    }, out / "plan.json")
    figure = plot_plan(curve, plan, answer, out / "figures" / "plan.png") if len(curve) else None
    write_report(out)
    return PlanOutcome(plan, answer, exact, bracket, curve, table, out, figure, stats, note,
                       failed)


def unservable_by_group(plan: Plan) -> dict[str, Any]:
    """The trace's pods that no node of the varied group takes even empty (one
    attempt per request on a cluster of one node of that group,
    :func:`hamisim.studies.unplaceable.find_unplaceable`): ``pods`` (their count),
    ``classes`` (pods per class) and ``summary`` (text: the classes and the
    reasons). Adding nodes of the group cannot shorten their wait."""
    from hamisim.io.clusterfile import cluster_from_path
    from hamisim.io.traces import read_trace
    from hamisim.studies.unplaceable import find_unplaceable
    cl = plan.grid.clusters[0]
    cluster = cluster_from_path(cl.file.path, resize={plan.group: 1})
    mine = tuple(n for n in cluster.nodes if n.group == plan.group)[:1]
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
            lines.append(f"  {o.bracket[0]} nodes do not ({below[t.column]:.4g})")
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
