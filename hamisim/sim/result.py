"""What a run returns: :class:`SimResult`, assembled from the recorder and the meter.

:func:`assemble_result` is shared by the Python engine (:mod:`hamisim.sim.engine`)
and its compiled twin (:mod:`hamisim.sim.compiled`): both hand it their recorder
(events and pods already flushed), the meter and the run's counters, so the
summary, time series and occupancy are computed by one piece of code.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from hamisim.sim.families import family_statistics, family_timeseries
from hamisim.sim.metrics import TIMESERIES_COLUMNS, ClusterMeter
from hamisim.sim.recorder import (
    EVENT_COLUMNS,
    INITIAL_STATE_CLASS,
    POD_COLUMNS,
    MemorySink,
    Recorder,
)
from hamisim.sim.stats import (
    WHOLE_RUN_KEYS,
    headline_window,
    percentiles,
    run_statistics,
    windowed_statistics,
)

__all__ = ["SimResult", "RunCounts", "assemble_result"]


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
    #: clusters with MIG cards: per card type, a row whenever its MIG slices changed
    #: (hamisim.sim.placement.MIG_TIMESERIES_COLUMNS)
    mig_timeseries: pd.DataFrame | None = None
    #: clusters of several device families: per family, a row whenever its
    #: allocation changed (hamisim.sim.families.FAMILY_TIMESERIES_COLUMNS)
    family_timeseries: pd.DataFrame | None = None
    #: seconds spent: ``simulate`` in all, ``decisions`` inside the scheduler's
    #: ``schedule`` (the rest is the engine's own work); not part of the results
    timings: dict[str, float] = field(default_factory=dict)
    #: scheduling attempts the compiled engine answered by its shortcut of
    #: repeated failures (the same failure in the same state: a lookup; the
    #: Python engine decides every attempt: 0); not part of the results
    reused_attempts: int = 0
    #: which engine ran: ``compiled`` (hamisim.sim.compiled) or ``python``
    #: (hamisim.sim.engine); both give the identical run
    engine: str = ""
    #: with the Python engine, why (what the compiled one does not run)
    engine_reason: str | None = None

    def summary_table(self) -> pd.DataFrame:
        """The headline figures (``summary["results"]`` when present) as one row
        (the per-class and per-group breakdowns left out)."""
        flat = self.summary.get("results", self.summary)
        return pd.DataFrame([{k: v for k, v in flat.items()
                              if not isinstance(v, (dict, list))}])

    def _repr_html_(self) -> str:
        """Jupyter: the headline figures and the run's utilisation over time."""
        table = self.summary_table().T.rename(columns={0: "value"})
        return (f"<div><strong>hamisim run</strong> {html.escape(self.summary.get('label', ''))}"
                f"{_utilisation_svg(self.timeseries)}{table.to_html()}</div>")


def _utilisation_svg(ts: pd.DataFrame, width: int = 640, height: int = 180) -> str:
    """An inline SVG (no plotting library: sim/ draws nothing else): the share of
    GPUs with a tenant and of memory allocated over time, in percent."""
    if ts is None or len(ts) < 2 or not ts["hami_gpu_total"].iloc[0]:
        return ""
    t = ts["time"].to_numpy(dtype=float)
    span = (t[-1] - t[0]) or 1.0
    step = max(len(t) // 600, 1)
    lines = {"GPUs with a tenant": ("#1f77b4", 100 * ts["hami_gpu_allocated"]
                                    / ts["hami_gpu_total"]),
             "memory allocated": ("#2ca02c", 100 * ts["hami_gpu_memory_allocated_bytes"]
                                  / ts["hami_gpu_memory_total_bytes"].clip(lower=1))}
    left, top, w, h = 40, 10, width - 50, height - 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-size="11" font-family="sans-serif">',
             f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#999"/>',
             f'<text x="2" y="{top + 8}">100 %</text><text x="14" y="{top + h}">0 %</text>',
             f'<text x="{left}" y="{height - 14}">time {t[0]:,.0f} s</text>',
             f'<text x="{left + w - 90}" y="{height - 14}">{t[-1]:,.0f} s</text>']
    for k, (label, (colour, y)) in enumerate(lines.items()):
        ys = y.to_numpy(dtype=float)[::step]
        xs = t[::step]
        pts = " ".join(f"{left + w * (x - t[0]) / span:.1f},{top + h * (1 - v / 100):.1f}"
                       for x, v in zip(xs, ys))
        parts.append(f'<polyline fill="none" stroke="{colour}" points="{pts}"/>')
        parts.append(f'<text x="{left + 10 + 170 * k}" y="{height - 2}" fill="{colour}">'
                     f'{label} (%)</text>')
    return "".join(parts) + "</svg>"


@dataclass
class RunCounts:
    """The counters an engine keeps during a run, for :func:`assemble_result`."""

    arrived: int
    pending: int
    running: int
    departed: int
    abandoned: int
    attempts: int
    #: queueing delay of every bound pod, in bind order
    delays: np.ndarray
    #: the first time the most cards had a tenant
    peak_time: float
    initial: int = 0
    #: running pods deleted by kube-scheduler's preemption (counted in departed)
    preempted: int = 0
    #: pods HAMi's admission webhook refused (counted in abandoned)
    rejected: int = 0
    #: what-if: pods the periodic defragmenter moved (EngineConfig.defrag_interval)
    defrag_moves: int = 0
    #: pods HAMi's init-container accounting booked below their true usage (#2965)
    quirk_pods: int = 0
    #: per namespace, HAMi's webhook's quota refusals and what became of the
    #: pods (:func:`hamisim.kube.controllers.refusal_rows`)
    refusals: list = field(default_factory=list)


def assemble_result(rec: Recorder, meter: ClusterMeter, counts: RunCounts,
                    sample_interval: float | None, node_groups: Sequence[str],
                    many_groups: bool, *, replay: bool = True,
                    window: tuple[float, float] | None = None) -> SimResult:
    """The run's :class:`SimResult` once the recorder holds every row (events and
    pods flushed): the tables (when kept in memory), the time series, the summary
    and the occupancy at the peak.

    A replay's headline figures cover ``window`` (``--window``; ``None``: the
    trace's span, :func:`hamisim.sim.stats.headline_window`); a fill run's the
    whole run."""
    m = meter
    end_time = rec.last_time
    sink = rec.sink
    events = sink.table("events", EVENT_COLUMNS) if isinstance(sink, MemorySink) else None
    pods = sink.table("pods", POD_COLUMNS) if isinstance(sink, MemorySink) else None
    ts = pd.DataFrame(m.timeseries(), columns=[*TIMESERIES_COLUMNS, "gpu_arrived",
                                               "queueing_delay_s"])
    groups_ts = rec.groups_frame(m) if many_groups else None
    summary = {
        "pods": counts.arrived, "bound": len(counts.delays),
        "departed": counts.departed, "abandoned": counts.abandoned,
        "pending_at_end": counts.pending, "running_at_end": counts.running,
        "attempts": counts.attempts,
        # None (null) when no pod bound: no delay to summarise
        **percentiles(counts.delays, "queueing_delay"),
        "end_time_s": float(end_time),
    }
    if rec.placement is not None:
        summary.update(rec.placement.summary())     # multi-GPU placements
    mig_ts = None
    if rec.mig is not None:                         # MIG slices in use and stranded
        summary.update(rec.mig.summary(float(end_time)))
        mig_ts = rec.mig.frame()
    if counts.initial:
        summary["initial_pods"] = counts.initial
    if counts.preempted:
        summary["preempted"] = counts.preempted
    if counts.rejected:
        summary["rejected"] = counts.rejected
    if counts.refusals:
        summary["quota_refusals"] = counts.refusals
    if counts.defrag_moves:
        summary["defrag_moves"] = counts.defrag_moves
    # pods no node could hold even empty: apart from the waits' percentiles
    summary["unplaceable"] = sum(n for n, _ in rec.unplaceable_reasons.values())
    if summary["unplaceable"]:
        summary["unplaceable_preemptions"] = rec.unplaceable_preemptions
        summary["unplaceable_reasons"] = [
            {"reason": reason, "pods": n, "examples": names}
            for reason, (n, names) in sorted(rec.unplaceable_reasons.items(),
                                             key=lambda kv: -kv[1][0])]
    if len(ts):
        summary["peak_gpu_allocated"] = int(ts["hami_gpu_allocated"].max())
        summary["peak_time_s"] = float(counts.peak_time)
        summary["final_unallocated_gpu_pct"] = float(
            100.0 * ts["unallocated_gpu"].iloc[-1] / max(m.capacity, 1))
    if sample_interval is not None:
        summary["timeseries_interval_s"] = float(sample_interval)
    group_nodes = np.bincount(m.node_group, minlength=len(m.group_names))
    pod_stats = rec.pod_statistics(m.node_group, float(end_time))
    span = headline_window(pod_stats, float(end_time), window) if replay else None
    args = (pod_stats, ts, groups_ts, m.group_names, group_nodes, m.group_cards,
            float(end_time))
    if span is None:
        summary.update(run_statistics(*args))
    else:
        whole = {k: summary[k] for k in WHOLE_RUN_KEYS if k in summary}
        summary.update(windowed_statistics(*args, span))
        summary["whole_run"] = {**whole, **summary["whole_run"]}
        if rec.mig is not None:
            summary.update(rec.mig.summary(span["end_s"], span["start_s"]))
    family_ts = None
    if rec.families is not None and "family" in pod_stats:
        summary["families"] = _families(rec, pod_stats, float(end_time), span)
        family_ts = family_timeseries(rec.families)
    summary["hami_quirks"] = {"init_container_usage": init_container_quirk(m, counts,
                                                                          float(end_time))}
    return SimResult(events, ts, summary, occupancy_at_peak(m), pods, groups_ts,
                     list(node_groups), mig_timeseries=mig_ts, family_timeseries=family_ts)


def _families(rec: Recorder, pod_stats: dict, end_time: float,
              span: dict | None) -> list[dict]:
    """``results.families`` over the headline's span (the whole run without one)."""
    window = (span["start_s"], span["end_s"]) if span is not None else (0.0, end_time)
    arrival = np.asarray(pod_stats["arrival"], dtype=float)
    counted = ((np.asarray(pod_stats["class"]) != INITIAL_STATE_CLASS)
               & ~np.asarray(pod_stats["unplaceable"], dtype=bool))
    if span is not None:
        counted &= (arrival >= window[0]) & (arrival <= window[1])
    return family_statistics(rec.families, np.asarray(pod_stats["family"], dtype=np.int64),
                             np.asarray(pod_stats["wait"], dtype=float),
                             np.asarray(pod_stats["bound"], dtype=bool), counted, window)


def init_container_quirk(m: ClusterMeter, counts: RunCounts, end_time: float) -> dict:
    """HAMi v2.10's init-container accounting (issue #2965) measured against the
    true usage (every container counted as what it is): pods it booked below their
    usage, cards that carried such a pod, and the over-commit on the cards (true
    usage beyond a card's slots, cores or memory) at its peak and integrated over
    the run. All zero under ``init_container_usage: corrected``."""
    q = m.quirk_figures(end_time)
    return {"pods_affected": int(counts.quirk_pods), **q}


def occupancy_at_peak(m: ClusterMeter) -> np.ndarray:
    """Allocated share of each card at the peak: a row per node, nodes ordered
    by group (groups in first-seen order, cluster order within), so each group
    is one block of rows. NaN where a node has fewer cards, and for a card that
    is no GPU (:mod:`hamisim.devices`): it is drawn as absent, not as idle."""
    per_node = np.diff(m.node_start)
    width = int(per_node.max()) if len(per_node) else 0
    occ = np.full((m.n_nodes, width), np.nan)
    share = np.where(m.counted, m.allocation_share(m.peak_usage()), np.nan)
    starts = m.node_start
    for row, i in enumerate(np.argsort(m.node_group, kind="stable").tolist()):
        a, b = starts[i], starts[i + 1]
        occ[row, : b - a] = share[a:b]
    return occ
