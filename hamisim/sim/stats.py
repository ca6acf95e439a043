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
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from hamisim.sim.recorder import INITIAL_STATE_CLASS

__all__ = ["time_weighted_mean", "run_statistics", "percentiles"]


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


def percentiles(values: np.ndarray, prefix: str) -> dict[str, float | None]:
    """``{prefix}_p50_s``, ``_p99_s``, ``_max_s`` of ``values`` (``None`` when empty)."""
    if len(values) == 0:
        return {f"{prefix}_p50_s": None, f"{prefix}_p99_s": None, f"{prefix}_max_s": None}
    return {f"{prefix}_p50_s": float(np.percentile(values, 50)),
            f"{prefix}_p99_s": float(np.percentile(values, 99)),
            f"{prefix}_max_s": float(np.max(values))}


def _waits(part: pd.DataFrame) -> dict[str, Any]:
    bound = part["bound"].to_numpy()
    return {"pods": int(len(part)), "bound": int(bound.sum()),
            "abandoned": int(part["abandoned"].sum()),
            "pending_at_end": int((~bound & ~part["abandoned"].to_numpy()).sum()),
            **percentiles(part["delay"].to_numpy()[bound], "queueing_delay"),
            **percentiles(part["wait"].to_numpy(), "pending")}


def run_statistics(pods: dict[str, np.ndarray], ts: pd.DataFrame,
                   groups_ts: pd.DataFrame | None, group_names: Sequence[str],
                   group_nodes: Sequence[int], group_gpus: Sequence[int],
                   end_time: float) -> dict[str, Any]:
    """Figures for ``summary.json``'s ``results``: pending time over every pod,
    time-weighted means of the cluster's allocation and fragmentation, and the
    ``classes`` and ``groups`` breakdowns (lists of mappings).

    ``pods`` holds per pod ``class``, ``group`` (code, -1 unbound), ``wait``,
    ``delay``, ``bound``, ``abandoned`` and ``unplaceable`` (``Recorder.pod_statistics``).
    Unplaceable pods (no node could hold them even empty) are left out of the
    pending percentiles and the classes; ``unplaceable_pending_*`` are theirs.
    """
    out: dict[str, Any] = {}
    table = pd.DataFrame(pods)
    arrived = table[table["class"] != INITIAL_STATE_CLASS]
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
        out["mean_gpu_allocated_pct"] = time_weighted_mean(t, alloc)
        out["mean_frag_pct_of_capacity"] = time_weighted_mean(
            t, ts["frag_pct_of_capacity"].to_numpy())
        out["mean_stranded_pct_of_capacity"] = time_weighted_mean(
            t, ts["stranded_pct_of_capacity"].to_numpy())
        out["mean_unfit_pct_of_capacity"] = time_weighted_mean(t, unfit)
    classes = [{"class": label, **_waits(part)}
               for label, part in arrived.groupby("class", sort=False)]
    classes.sort(key=lambda c: (-c["pods"], c["class"]))
    out["classes"] = classes
    groups = []
    bound_in = arrived[arrived["bound"]]
    for k, name in enumerate(group_names):
        mine = bound_in[bound_in["group"] == k]
        g: dict[str, Any] = {"group": name, "nodes": int(group_nodes[k]),
                             "gpus": int(group_gpus[k]), "pods_bound": int(len(mine)),
                             **percentiles(mine["delay"].to_numpy(), "queueing_delay")}
        if groups_ts is not None and len(groups_ts):
            rows = groups_ts[groups_ts["group"] == name]
            gpus = max(int(group_gpus[k]), 1)
            t = rows["time"].to_numpy()
            g["mean_gpu_allocated_pct"] = time_weighted_mean(
                t, rows["hami_gpu_allocated_pct"].to_numpy(), end_time)
            g["mean_stranded_pct_of_gpus"] = time_weighted_mean(
                t, 100.0 * rows["stranded_gpu"].to_numpy() / gpus, end_time)
            g["mean_unfit_pct_of_gpus"] = time_weighted_mean(
                t, 100.0 * rows["unfit_gpu"].to_numpy() / gpus, end_time)
        elif len(ts):                   # one group: the cluster's own series
            g["mean_gpu_allocated_pct"] = out["mean_gpu_allocated_pct"]
            g["mean_stranded_pct_of_gpus"] = out["mean_stranded_pct_of_capacity"]
            g["mean_unfit_pct_of_gpus"] = out["mean_unfit_pct_of_capacity"]
        groups.append(g)
    out["groups"] = groups
    return out
