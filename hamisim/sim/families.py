"""Per device family figures of a run on a mixed cluster (``results.families``).

A cluster whose cards belong to more than one simulated family
(:mod:`hamisim.devices`) mixes units a headline should not mix: NPU or DCU
memory beside GPU memory, an AMD card's Compute Units beside percentages.
:class:`FamilyMeter` reads every bound pod's allocation (the ``devices``
column, as the pods table is written) and keeps one row per card it names:
the card, its family, the memory and cores charged, and when the pod held it.
:func:`family_statistics` turns those rows into, per family and over the
headline window: the share of the family's cards with a tenant (the union of
their holders' intervals), of its memory and of its cores allocated (time
weighted), and the pending times of the pods that asked for it (a pod's
families come from its requests: :func:`pod_families`).

Fragmentation is not split by family here: it is the meter's, over every
card (DESIGN §5).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hamisim.cluster import Cluster, SchedulerConfig
from hamisim.devices import FAMILIES, device_family, family
from hamisim.pods import AdmissionDenied, Pod, admit, pod_requests
from hamisim.sim.stats import percentiles

__all__ = ["FamilyMeter", "pod_families", "family_statistics", "cluster_families",
           "set_families", "family_timeseries", "FAMILY_TIMESERIES_COLUMNS"]

#: the columns of :func:`family_timeseries` (``timeseries_families.parquet``)
FAMILY_TIMESERIES_COLUMNS = ("time", "family", "cards", "cards_with_tenant",
                             "cards_with_tenant_pct", "memory_allocated_mib",
                             "memory_allocated_pct", "cores_allocated", "cores_allocated_pct")


def cluster_families(cluster: Cluster) -> list[int]:
    """The fids of the simulated families the cluster has cards of, in
    :data:`~hamisim.devices.FAMILIES` order."""
    present = {device_family(c.type) for n in cluster.nodes for c in n.cards}
    return [f.fid for f in FAMILIES if f.word in present]


def pod_families(pod: Pod, config: SchedulerConfig) -> int:
    """The families a pod asks for, as bits ``1 << fid`` (0: none, or refused
    by the webhook)."""
    try:
        reqs, _ = pod_requests(admit(pod, config), config)
    except AdmissionDenied:
        return 0
    mask = 0
    for r in reqs:
        if r is not None:
            fam = family(r.type)
            if fam is not None:
                mask |= 1 << fam.fid
    return mask


class FamilyMeter:
    """The cards each bound pod held, per family (see the module).

    ``cluster``: the run's cluster (card ids name the cards; a card's family is
    :func:`~hamisim.devices.device_family` of its type)."""

    def __init__(self, cluster: Cluster) -> None:
        cards = [c for n in cluster.nodes for c in n.cards]
        self.card_ids = pa.array([c.id for c in cards], pa.string())
        fam_of = {f.word: f.fid for f in FAMILIES}
        self.card_fid = np.array([fam_of.get(device_family(c.type), -1) for c in cards],
                                 dtype=np.int64)
        self.fids = cluster_families(cluster)
        self.capacity = {
            fid: {"cards": int((self.card_fid == fid).sum()),
                  "memory_mib": int(sum(c.devmem for c, f in zip(cards, self.card_fid)
                                        if f == fid)),
                  "cores": int(sum(c.devcore for c, f in zip(cards, self.card_fid)
                                   if f == fid)),
                  "types": sorted({c.type for c, f in zip(cards, self.card_fid) if f == fid})}
            for fid in self.fids}
        self._parts: list[pd.DataFrame] = []

    def collect(self, devices: pa.StringArray, bind: np.ndarray, stop: np.ndarray) -> None:
        """A batch of pods' allocations (null: none), bind times and the times
        they let go (departure, abandonment or the run's end)."""
        if not len(devices):
            return
        parts = pc.split_pattern_regex(pc.fill_null(devices, ""), "[:; ]+")
        pod = np.asarray(pc.list_parent_indices(parts), dtype=np.int64)
        flat = pc.list_flatten(parts)
        keep = np.asarray(pc.not_equal(flat, ""), dtype=bool)
        if not keep.any():
            return
        flat = flat.filter(pa.array(keep))
        pod = pod[keep]
        # an entry is "id,type,mem,cores"; ids hold no comma
        fields = pc.split_pattern(flat, ",", reverse=True, max_splits=3)
        card = np.asarray(pc.fill_null(pc.index_in(pc.list_element(fields, 0),
                                                   value_set=self.card_ids), -1),
                          dtype=np.int64)
        mem = np.asarray(pc.cast(pc.list_element(fields, 2), pa.int64()), dtype=np.int64)
        cores = np.asarray(pc.cast(pc.list_element(fields, 3), pa.int64()), dtype=np.int64)
        self._parts.append(pd.DataFrame({
            "card": card, "fid": np.where(card >= 0, self.card_fid[np.maximum(card, 0)], -1),
            "mem": mem, "cores": cores, "start": np.asarray(bind, dtype=float)[pod],
            "end": np.asarray(stop, dtype=float)[pod]}))

    def frame(self) -> pd.DataFrame:
        """Every card a pod held: ``card``, ``fid``, ``mem``, ``cores``, ``start``, ``end``."""
        if not self._parts:
            return pd.DataFrame({k: np.zeros(0) for k in
                                 ("card", "fid", "mem", "cores", "start", "end")})
        if len(self._parts) > 1:
            self._parts = [pd.concat(self._parts, ignore_index=True)]
        return self._parts[0]


def _held_seconds(rows: pd.DataFrame) -> float:
    """Card-seconds with at least one tenant: per card, the union of its rows'
    intervals (rows already cut to a window)."""
    if not len(rows):
        return 0.0
    r = rows.sort_values(["card", "start"], kind="stable")
    card = r["card"].to_numpy()
    start, end = r["start"].to_numpy(), r["end"].to_numpy()
    # the latest end among the card's earlier intervals
    reach = pd.Series(end).groupby(card).cummax().to_numpy()
    prev = np.empty_like(reach)
    prev[0] = -np.inf
    prev[1:] = reach[:-1]
    prev[np.r_[True, card[1:] != card[:-1]]] = -np.inf
    return float(np.clip(end - np.maximum(start, prev), 0.0, None).sum())


def family_statistics(meter: FamilyMeter, pod_mask: np.ndarray, waits: np.ndarray,
                      bound: np.ndarray, counted: np.ndarray,
                      span: tuple[float, float]) -> list[dict[str, Any]]:
    """Per family of the cluster, over ``span`` (``start, end``): capacity, the
    mean shares with a tenant / memory / cores allocated, and the pods that
    asked for it (``pod_mask``: :func:`pod_families` per pod in pods-table
    order; ``counted``: the pods the headline counts, those that arrived in
    the window)."""
    a, b = span
    length = b - a
    rows = meter.frame()
    rows = rows[rows["card"] >= 0]
    start = np.maximum(rows["start"].to_numpy(), a)
    end = np.minimum(rows["end"].to_numpy(), b)
    live = end > start
    cut = rows[live].assign(start=start[live], end=end[live])
    out = []
    for fid in meter.fids:
        f = FAMILIES[fid]
        cap = meter.capacity[fid]
        mine = cut[cut["fid"] == fid]
        held = (mine["end"] - mine["start"]).to_numpy()
        asked = counted & ((pod_mask >> fid) & 1).astype(bool)
        row: dict[str, Any] = {
            "family": f.word, "vendor": f.vendor, "card_types": cap["types"],
            "cards": cap["cards"], "memory_mib": cap["memory_mib"],
            "cores": cap["cores"],
            "cores_unit": "compute units" if f.cores_as_cus else "percent of a card",
            **({"assumed": f.assumed} if f.assumed else {}),
            "pods": int(asked.sum()), "pods_bound": int((asked & bound).sum()),
            **percentiles(waits[asked], "pending")}
        if length > 0 and cap["cards"]:
            row["mean_gpu_allocated_pct"] = 100.0 * _held_seconds(mine) / (cap["cards"] * length)
            row["mean_memory_allocated_pct"] = (
                100.0 * float((mine["mem"].to_numpy() * held).sum())
                / (cap["memory_mib"] * length) if cap["memory_mib"] else None)
            row["mean_cores_allocated_pct"] = (
                100.0 * float((mine["cores"].to_numpy() * held).sum())
                / (cap["cores"] * length) if cap["cores"] else None)
        out.append(row)
    return out


def family_timeseries(meter: FamilyMeter) -> pd.DataFrame:
    """Per family of the cluster, a row from time 0 and whenever its allocation
    changed: its cards with a tenant, memory (MiB) and cores allocated (AMD's in
    Compute Units), each also as a percentage of the family's capacity
    (:data:`FAMILY_TIMESERIES_COLUMNS`). At a time when one pod leaves a card
    and another takes it, the row holds the state after both."""
    rows = meter.frame()
    rows = rows[rows["card"] >= 0]
    parts = []
    for fid in meter.fids:
        cap = meter.capacity[fid]
        mine = rows[rows["fid"] == fid]
        n = len(mine)
        t = np.concatenate([mine["start"].to_numpy(), mine["end"].to_numpy(), [0.0]])
        card = np.concatenate([mine["card"].to_numpy()] * 2 + [[-1]]).astype(np.int64)
        step = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64), [0]])
        mem = np.concatenate([mine["mem"].to_numpy(), -mine["mem"].to_numpy(), [0]])
        cores = np.concatenate([mine["cores"].to_numpy(), -mine["cores"].to_numpy(), [0]])
        # by time, a departure before an arrival at the same time
        order = np.lexsort((step, t))
        t, card, step = t[order], card[order], step[order]
        holders = pd.Series(step).groupby(card).cumsum().to_numpy()
        tenanted = np.cumsum((holders > 0).astype(np.int64) - (holders - step > 0))
        used_mem = np.cumsum(mem[order].astype(np.int64))
        used_cores = np.cumsum(cores[order].astype(np.int64))
        last = np.r_[t[1:] != t[:-1], True]          # the state after a time's changes
        cards, memory, core_total = cap["cards"], cap["memory_mib"], cap["cores"]
        parts.append(pd.DataFrame({
            "time": t[last], "family": FAMILIES[fid].word, "cards": cards,
            "cards_with_tenant": tenanted[last],
            "cards_with_tenant_pct": 100.0 * tenanted[last] / max(cards, 1),
            "memory_allocated_mib": used_mem[last],
            "memory_allocated_pct": 100.0 * used_mem[last] / memory if memory else np.nan,
            "cores_allocated": used_cores[last],
            "cores_allocated_pct": 100.0 * used_cores[last] / core_total if core_total
            else np.nan}))
    if not parts:
        return pd.DataFrame({c: [] for c in FAMILY_TIMESERIES_COLUMNS})
    return pd.concat(parts, ignore_index=True)[list(FAMILY_TIMESERIES_COLUMNS)]


def masks_of(pods: Sequence[Pod], config: SchedulerConfig) -> np.ndarray:
    """:func:`pod_families` of each pod."""
    return np.array([pod_families(p, config) for p in pods], dtype=np.uint32)


def set_families(rec, cluster: Cluster, trace) -> None:
    """Give ``rec`` (a :class:`~hamisim.sim.recorder.Recorder`) the per-family
    books when ``cluster`` has cards of several families (both engines call
    this, so their results are equal); ``trace``: a
    :class:`~hamisim.workload.Trace`."""
    if len(cluster_families(cluster)) > 1:
        rec.set_families(FamilyMeter(cluster), trace.names, trace.template,
                         masks_of(trace.templates, cluster.scheduler))
