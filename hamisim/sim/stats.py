"""Headline figures of a run, from its tables: waits and utilisation, overall,
per pod class and per node group.

Two waits are reported. The *queueing delay* is the time from arrival to
bind of the pods that were bound (kube-scheduler's scheduling latency as a
pod sees it). The *pending time* counts every pod that arrived: arrival to
bind, else to abandonment, else to the end of the run, so pods that never got
a node weigh in (what a capacity target is about). Pods of an initial state
count in neither.

Means over time (``mean_*``) weight each time-series row by how long its
values held: up to the next row, and the last row not at all. Fill runs,
which have one row per submitted pod one second apart, thus average over
the submissions.

A replay's headline figures cover a *window* (:func:`headline_window`): by
default the trace's own span, first to last arrival, so that the drain (the
run going on until the last pod leaves) does not dilute them; the means then
integrate the step functions over the window only (:func:`window_mean`), and
the waits count the pods that arrived in it (each with its whole wait, even
when it ends after the window). :func:`windowed_statistics` adds the window,
the drain after it and the whole run's figures to the summary.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from hamisim.sim.recorder import INITIAL_STATE_CLASS

__all__ = ["time_weighted_mean", "window_mean", "run_statistics", "percentiles",
           "headline_window", "windowed_statistics", "WHOLE_RUN_KEYS"]


def time_weighted_mean(time: np.ndarray, values: np.ndarray, end: float | None = None) -> float:
    """Mean of a step function: ``values[i]`` holds from ``time[i]`` to ``time[i+1]``
    (the last one to ``end``, or not at all). The plain mean when no time passes."""
    if len(values) == 0:
        return float("nan")
    t = np.asarray(time, dtype=float)
    v = np.asarray(values, dtype=float)
    stop = np.append(t[1:], t[-1] if end is None else max(end, t[-1]))
    w = stop - t
    total = w.sum()
    if total <= 0:
        return float(v.mean())
    return float((v * w).sum() / total)


def window_mean(time: np.ndarray, values: np.ndarray, start: float = -np.inf,
                end: float = np.inf, until: float | None = None) -> float:
    """Mean of a step function over ``[start, end]``: ``values[i]`` holds from
    ``time[i]`` to ``time[i+1]``, the last one to ``until`` (or not at all), and
    the function is not defined before ``time[0]``, so the window is cut to
    ``[time[0], until or time[-1]]``. With the whole line as the window this is
    :func:`time_weighted_mean`; when the cut window has no length, the value
    holding at its start (NaN without rows)."""
    if len(values) == 0:
        return float("nan")
    t = np.asarray(time, dtype=float)
    v = np.asarray(values, dtype=float)
    stop = np.append(t[1:], t[-1] if until is None else max(until, t[-1]))
    w = np.clip(np.minimum(stop, end) - np.maximum(t, start), 0.0, None)
    total = w.sum()
    if total <= 0:
        if start == -np.inf:
            return float(v.mean())
        k = int(np.clip(np.searchsorted(t, start, side="right") - 1, 0, len(t) - 1))
        return float(v[k])
    return float((v * w).sum() / total)


def percentiles(values: np.ndarray, prefix: str) -> dict[str, float | None]:
    """``{prefix}_p50_s``, ``_p99_s``, ``_max_s`` of ``values`` (``None`` when empty)."""
    if len(values) == 0:
        return {f"{prefix}_p50_s": None, f"{prefix}_p99_s": None, f"{prefix}_max_s": None}
    return {f"{prefix}_p50_s": float(np.percentile(values, 50)),
            f"{prefix}_p99_s": float(np.percentile(values, 99)),
            f"{prefix}_max_s": float(np.max(values))}


def breakdown_percentiles(values: np.ndarray, prefix: str) -> dict[str, float | None]:
    """:func:`percentiles` with ``{prefix}_p95_s`` beside them: the figures of a
    class, namespace or node group, which a plan's targets name (DESIGN §5)."""
    out = percentiles(values, prefix)
    out[f"{prefix}_p95_s"] = float(np.percentile(values, 95)) if len(values) else None
    return out


def _waits(part: pd.DataFrame) -> dict[str, Any]:
    bound = part["bound"].to_numpy()
    return {"pods": int(len(part)), "bound": int(bound.sum()),
            "abandoned": int(part["abandoned"].sum()),
            "pending_at_end": int((~bound & ~part["abandoned"].to_numpy()).sum()),
            **breakdown_percentiles(part["delay"].to_numpy()[bound], "queueing_delay"),
            **breakdown_percentiles(part["wait"].to_numpy(), "pending")}


def run_statistics(pods: dict[str, np.ndarray], ts: pd.DataFrame,
                   groups_ts: pd.DataFrame | None, group_names: Sequence[str],
                   group_nodes: Sequence[int], group_gpus: Sequence[int],
                   end_time: float, window: tuple[float, float] | None = None
                   ) -> dict[str, Any]:
    """Figures for ``summary.json``'s ``results``: pending time over every pod,
    time-weighted means of the cluster's allocation and fragmentation, and the
    ``classes`` and ``groups`` breakdowns (lists of mappings).

    ``pods`` holds per pod ``class``, ``group`` (code, -1 unbound), ``wait``,
    ``delay``, ``bound``, ``abandoned`` and ``unplaceable`` (``Recorder.pod_statistics``).
    Unplaceable pods (no node could hold them even empty) are left out of the
    pending percentiles and the classes; ``unplaceable_pending_*`` are theirs.

    ``window`` ``(start, end)``: the means cover that span of the time series and
    the waits the pods that arrived in it (``pods["arrival"]``); ``None``: the
    whole run and every pod.
    """
    out: dict[str, Any] = {}
    table = pd.DataFrame(pods)
    arrived = table[table["class"] != INITIAL_STATE_CLASS]
    start, end = window if window is not None else (-np.inf, np.inf)
    if window is not None and "arrival" in arrived:
        at = arrived["arrival"].to_numpy()
        arrived = arrived[(at >= start) & (at <= end)]
    if "unplaceable" in arrived and arrived["unplaceable"].any():
        # pods no node could hold even empty wait to the end whatever the
        # policy: their own line, not the headline's percentiles
        stuck = arrived[arrived["unplaceable"]]
        arrived = arrived[~arrived["unplaceable"]]
        out.update(percentiles(stuck["wait"].to_numpy(), "unplaceable_pending"))
    out.update(percentiles(arrived["wait"].to_numpy(), "pending"))
    if len(ts):
        t = ts["time"].to_numpy()
        cap = ts["hami_gpu_total"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            alloc = np.where(cap > 0, 100.0 * ts["hami_gpu_allocated"].to_numpy() / cap, 0.0)
            unfit = np.where(cap > 0, 100.0 * ts["unfit_gpu"].to_numpy() / cap, 0.0)
        out["mean_gpu_allocated_pct"] = window_mean(t, alloc, start, end)
        out["mean_frag_pct_of_capacity"] = window_mean(
            t, ts["frag_pct_of_capacity"].to_numpy(), start, end)
        out["mean_stranded_pct_of_capacity"] = window_mean(
            t, ts["stranded_pct_of_capacity"].to_numpy(), start, end)
        out["mean_unfit_pct_of_capacity"] = window_mean(t, unfit, start, end)
    classes = [{"class": label, **_waits(part)}
               for label, part in arrived.groupby("class", sort=False)]
    classes.sort(key=lambda c: (-c["pods"], c["class"]))
    out["classes"] = classes
    if "namespace" in arrived:
        # the same figures per namespace (every namespace of the trace, even empty
        # in a window: a plan's target names one)
        spaces = sorted(set(pods["namespace"][np.asarray(pods["class"]) != INITIAL_STATE_CLASS]))
        parts = dict(tuple(arrived.groupby("namespace", sort=False)))
        out["namespaces"] = [{"namespace": ns, **_waits(parts.get(ns, arrived.iloc[:0]))}
                             for ns in spaces]
    groups = []
    bound_in = arrived[arrived["bound"]]
    for k, name in enumerate(group_names):
        mine = bound_in[bound_in["group"] == k]
        g: dict[str, Any] = {"group": name, "nodes": int(group_nodes[k]),
                             "gpus": int(group_gpus[k]), "pods_bound": int(len(mine)),
                             **breakdown_percentiles(mine["delay"].to_numpy(),
                                                     "queueing_delay")}
        if groups_ts is not None and len(groups_ts):
            rows = groups_ts[groups_ts["group"] == name]
            gpus = max(int(group_gpus[k]), 1)
            t = rows["time"].to_numpy()
            g["mean_gpu_allocated_pct"] = window_mean(
                t, rows["hami_gpu_allocated_pct"].to_numpy(), start, end, end_time)
            g["mean_stranded_pct_of_gpus"] = window_mean(
                t, 100.0 * rows["stranded_gpu"].to_numpy() / gpus, start, end, end_time)
            g["mean_unfit_pct_of_gpus"] = window_mean(
                t, 100.0 * rows["unfit_gpu"].to_numpy() / gpus, start, end, end_time)
        elif len(ts):                   # one group: the cluster's own series
            g["mean_gpu_allocated_pct"] = out["mean_gpu_allocated_pct"]
            g["mean_stranded_pct_of_gpus"] = out["mean_stranded_pct_of_capacity"]
            g["mean_unfit_pct_of_gpus"] = out["mean_unfit_pct_of_capacity"]
        groups.append(g)
    out["groups"] = groups
    return out


#: the headline figures whose whole-run values ``results.whole_run`` keeps when
#: they cover a window (DESIGN §5)
WHOLE_RUN_KEYS = (
    "mean_gpu_allocated_pct", "mean_frag_pct_of_capacity", "mean_stranded_pct_of_capacity",
    "mean_unfit_pct_of_capacity", "pending_p50_s", "pending_p99_s", "pending_max_s",
    "unplaceable_pending_p50_s", "unplaceable_pending_p99_s", "unplaceable_pending_max_s",
    "queueing_delay_p50_s", "queueing_delay_p99_s", "queueing_delay_max_s",
    "mig_slots_used_mean_pct", "mig_slots_stranded_mean_pct")
_GROUP_MEANS = ("mean_gpu_allocated_pct", "mean_stranded_pct_of_gpus", "mean_unfit_pct_of_gpus")


def headline_window(pods: dict[str, np.ndarray], end_time: float,
                    requested: tuple[float, float] | None = None) -> dict[str, Any] | None:
    """The span a replay's headline figures cover, as ``results.window`` records it.

    ``requested`` (``--window START END``, checked before the run: START < END,
    START before the last arrival) is cut at the run's end (``requested_end_s``
    keeps what was asked); ``from`` says which (``--window`` or ``trace``).
    Without it, the trace's own span: its first to its last arrival (pods of an
    initial state left out); ``None`` (the whole run) when that span has no
    length (every pod arrives at once) or no pod arrived.
    """
    if requested is not None:
        start, end = float(requested[0]), float(requested[1])
        out: dict[str, Any] = {"from": "--window"}
        if end > end_time:
            out["requested_end_s"] = end
            end = max(float(end_time), start)
    else:
        arrival = np.asarray(pods["arrival"], dtype=float)[
            np.asarray(pods["class"]) != INITIAL_STATE_CLASS]
        if not len(arrival) or not arrival.max() > arrival.min():
            return None
        start, end = float(arrival.min()), float(arrival.max())
        out = {"from": "trace"}
    return {"start_s": start, "end_s": end, "length_s": end - start, **out}


def windowed_statistics(pods: dict[str, np.ndarray], ts: pd.DataFrame,
                        groups_ts: pd.DataFrame | None, group_names: Sequence[str],
                        group_nodes: Sequence[int], group_gpus: Sequence[int],
                        end_time: float, window: dict[str, Any]) -> dict[str, Any]:
    """:func:`run_statistics` over ``window`` (:func:`headline_window`), with
    ``window`` (and the pods it counts), ``drain`` (the run after the window:
    its span, the pods arriving in it and the cluster's means over it) and
    ``whole_run`` (:data:`WHOLE_RUN_KEYS` and the groups' means over the whole
    run, as summaries before windows gave them).

    ``queueing_delay_*`` are given only when the window leaves arrived pods out
    (those of the pods that arrived in it); otherwise the run's own stand."""
    span = (window["start_s"], window["end_s"])
    args = (pods, ts, groups_ts, group_names, group_nodes, group_gpus, end_time)
    whole = run_statistics(*args)
    out = run_statistics(*args, window=span)
    arrival = np.asarray(pods["arrival"], dtype=float)
    counted = np.asarray(pods["class"]) != INITIAL_STATE_CLASS
    inside = counted & (arrival >= span[0]) & (arrival <= span[1])
    if inside.sum() < counted.sum():
        bound = np.asarray(pods["bound"], dtype=bool) & inside
        out.update(percentiles(np.asarray(pods["delay"], dtype=float)[bound],
                               "queueing_delay"))
    out["window"] = {**window, "pods": int(inside.sum())}
    drain: dict[str, Any] = {"start_s": span[1], "end_s": float(end_time),
                             "length_s": max(float(end_time) - span[1], 0.0),
                             "pods_arrived": int((counted & (arrival > span[1])).sum())}
    if drain["length_s"] > 0 and len(ts):
        after = run_statistics(*args, window=(span[1], float(end_time)))
        drain.update({k: after[k] for k in WHOLE_RUN_KEYS[:4]})
    out["drain"] = drain
    kept = {k: whole[k] for k in WHOLE_RUN_KEYS if k in whole}
    kept["groups"] = [{"group": g["group"], **{k: g[k] for k in _GROUP_MEANS if k in g}}
                      for g in whole["groups"]]
    out["whole_run"] = kept
    return out
