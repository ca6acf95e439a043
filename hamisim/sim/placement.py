"""How well pods were placed inside their machines: multi-GPU pods, MIG instances.

For every pod that holds two or more cards, :class:`PlacementMeter` measures
what the article hamisim comes from warns about ("the right count and the
wrong place"): how many NUMA nodes and PCIe switches its cards span, how many
of its card pairs have no NVLink, the lowest and mean pair score, and how many
of its cards have their nearest NIC on another NUMA node or PCIe switch. The
measures come from each node's :class:`~hamisim.topology.ServerTopology` (the
pair scores are the ones HAMi's device plugin derives from it, whether or not
the plugin publishes them); a node without one still has its cards' NUMA nodes
and, when given, its ``hami.io/node-nvidia-score``. Whatever a node does not
describe is null.

The meter adds these columns to the pods table (:data:`PLACEMENT_COLUMNS`) and
keeps running totals for the summary (:meth:`PlacementMeter.summary`).

On MIG cards, :class:`MigMeter` measures where instances sit inside a card:
the slices in use and the free slices their placement strands.
"""
from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hamisim.cluster import Cluster, Node
from hamisim.hami.gpuscore import gpu_scores

__all__ = ["PLACEMENT_COLUMNS", "PlacementMeter", "NodeFacts", "card_ids_of", "MigMeter",
           "MIG_TIMESERIES_COLUMNS"]

#: the pods table's placement columns (null for pods with fewer than two cards,
#: and where the node does not describe what a column measures)
PLACEMENT_COLUMNS = ("gpus", "numa_nodes", "pcie_switches", "pairs_without_nvlink",
                     "min_pair_score", "mean_pair_score", "gpus_nic_other_numa",
                     "gpus_nic_other_switch")

_NAN = float("nan")


def card_ids_of(devices: str) -> list[str]:
    """The distinct card ids of a ``hami.io/vgpu-devices-allocated`` value, in order
    (several families' values: joined by a space after a ``;``)."""
    seen: dict[str, None] = {}
    for segment in devices.replace("; ", ";").replace(";", ":").split(":"):
        if segment:
            seen.setdefault(segment.split(",", 1)[0], None)
    return list(seen)


class NodeFacts:
    """One node's cards by id, as positions into its measure arrays."""

    __slots__ = ("pos", "numa", "switch", "nvlink", "score", "nic_numa", "nic_switch")

    def __init__(self, node: Node) -> None:
        cards = node.cards
        self.pos = {c.id: i for i, c in enumerate(cards)}
        self.numa = [c.numa for c in cards]
        topo = node.topology
        self.switch = self.nvlink = self.nic_numa = self.nic_switch = None
        self.score = None
        if topo is not None:
            by_index = [c.index for c in cards]      # card position -> topology GPU
            self.switch = [topo.gpus[g].switch for g in by_index]
            n = len(cards)
            self.nvlink = [[max(topo.links(by_index[a], by_index[b]),
                                topo.links(by_index[b], by_index[a])) > 0 if a != b else False
                            for b in range(n)] for a in range(n)]
            derived, _ = gpu_scores(topo)
            self.score = [[derived[by_index[a]][by_index[b]] if a != b else 0
                           for b in range(n)] for a in range(n)]
            if topo.nics:
                near = [topo.nearest_nic(g) for g in by_index]
                self.nic_numa = [nic.numa != topo.gpus[g].numa for nic, g in zip(near, by_index)]
                self.nic_switch = [nic.switch != topo.gpus[g].switch
                                   for nic, g in zip(near, by_index)]
        elif node.pair_scores:
            ids = [c.id for c in cards]
            # HAMi's topology-aware policy reads a missing pair as 0
            self.score = [[node.pair_scores.get(a, {}).get(b, 0) if a != b else 0
                           for b in ids] for a in ids]


class PlacementMeter:
    """The placement measures of multi-GPU pods, per pod and in total."""

    def __init__(self, cluster: Cluster) -> None:
        self.nodes = [NodeFacts(n) for n in cluster.nodes]
        self.any_topology = any(n.topology is not None for n in cluster.nodes)
        # totals over multi-GPU pods: overall and by number of cards
        self.by_size: dict[int, list[float]] = {}

    def measure(self, node: np.ndarray, devices: pa.StringArray) -> dict[str, np.ndarray]:
        """The placement columns for a batch of pods (their node index, -1 when
        none, and devices annotation, null when none); adds them to the totals."""
        n = len(devices)
        cols = {name: np.full(n, _NAN) for name in PLACEMENT_COLUMNS}
        # only annotations naming two cards or more need reading (found at C speed)
        several = pc.fill_null(pc.greater_equal(pc.count_substring(devices, ":"), 2), False)
        for row in np.flatnonzero(np.asarray(several, dtype=bool)):
            if node[row] < 0:
                continue
            ids = card_ids_of(devices[row].as_py())
            if len(ids) < 2:
                continue
            facts = self.nodes[int(node[row])]
            pos = [facts.pos[i] for i in ids]
            values = self._measure(facts, pos)
            for name, v in zip(PLACEMENT_COLUMNS, values):
                cols[name][row] = v
            self._add(values)
        return cols

    @staticmethod
    def _measure(f: NodeFacts, pos: list[int]) -> tuple[float, ...]:
        k = len(pos)
        numa = len({f.numa[p] for p in pos})
        switches = no_nvlink = low = mean = nic_numa = nic_switch = _NAN
        if f.switch is not None:
            switches = len({f.switch[p] for p in pos})
            no_nvlink = sum(1 for a, b in combinations(pos, 2) if not f.nvlink[a][b])
        if f.score is not None:
            ordered = [f.score[a][b] for a in pos for b in pos if a != b]
            low, mean = min(ordered), sum(ordered) / len(ordered)
        if f.nic_numa is not None:
            nic_numa = sum(f.nic_numa[p] for p in pos)
            nic_switch = sum(f.nic_switch[p] for p in pos)
        return (k, numa, switches, no_nvlink, low, mean, nic_numa, nic_switch)

    def _add(self, values: tuple[float, ...]) -> None:
        k, numa, switches, no_nvlink, low, mean, nic_numa, nic_switch = values
        acc = self.by_size.setdefault(int(k), [0.0] * 14)
        acc[0] += 1
        acc[1] += numa > 1
        for i, (v, bad) in enumerate(((switches, switches > 1),
                                      (no_nvlink, no_nvlink),
                                      (mean, mean), (low, low),
                                      (nic_numa, nic_numa), (nic_switch, nic_switch))):
            if not math.isnan(v):
                acc[2 + 2 * i] += 1            # pods where the measure exists
                acc[3 + 2 * i] += bad

    def summary(self) -> dict:
        """Totals for the run's summary: flat figures over every multi-GPU pod
        (``multi_gpu_pods``, ``cross_numa_pct``, ...) and the same per pod size
        under ``placement_by_gpus``; measures no node described are left out."""
        out: dict = {}
        if not self.by_size:
            return {"multi_gpu_pods": 0}
        total = [sum(acc[i] for acc in self.by_size.values()) for i in range(14)]
        out.update(_figures(total, self.by_size))
        out["placement_by_gpus"] = {str(k): _figures(acc, {k: acc})
                                    for k, acc in sorted(self.by_size.items())}
        return out


def _figures(acc: list[float], by_size: dict[int, list[float]]) -> dict:
    pods = acc[0]
    out = {"multi_gpu_pods": int(pods), "cross_numa_pct": 100.0 * acc[1] / pods}
    if acc[2]:
        out["cross_switch_pct"] = 100.0 * acc[3] / acc[2]
    if acc[4]:
        pairs = sum(a[4] * k * (k - 1) / 2 for k, a in by_size.items())
        out["pairs_without_nvlink_pct"] = 100.0 * acc[5] / pairs if pairs else 0.0
    if acc[6]:
        out["mean_pair_score"] = acc[7] / acc[6]
        out["mean_min_pair_score"] = acc[9] / acc[8]
    if acc[10]:
        gpus = sum(a[10] * k for k, a in by_size.items())
        out["gpus_nic_other_numa_pct"] = 100.0 * acc[11] / gpus
        out["gpus_nic_other_switch_pct"] = 100.0 * acc[13] / gpus
    return out


# ---------------------------------------------------------------------------
# MIG geometry: slices in use and slices stranded by where instances sit

#: the MIG time series' columns (``mig_timeseries`` table): one row per card
#: type each time its MIG cards changed
MIG_TIMESERIES_COLUMNS = ("time", "card_type", "mig_slots_total", "mig_slots_used",
                          "mig_slots_stranded", "mig_instances")


class MigMeter:
    """MIG slices in use, and free slices stranded by geometry, over a run.

    A MIG card's *slices* are its placement slots (NVML's memory slices: 8 on
    an A100 or H100, 4 on an A30). A slot is *in use* when an instance covers
    it. A free slot is *stranded* when no placement that is free as the card is
    now used covers it with a profile large enough for some typical pod
    shape's memory (its MiB, or its percentage of this card, as HAMi resolves
    it): a pod of the workload cannot use it without first moving an instance.
    Without typical GPU shapes, any registered profile counts.

    The meter reads the pods' ``hami.io/vgpu-mig-allocations`` as their rows
    are written (:meth:`collect`), then replays the binds and departures
    (:meth:`frame`, :meth:`summary`).
    """

    def __init__(self, cluster: Cluster, shapes=()) -> None:
        mems = [s for s in shapes if s.nums > 0]
        #: per MIG card id: (card type, slot mask, masks of its useful placements)
        self.cards: dict[str, tuple[str, int, list[int]]] = {}
        self.types: dict[str, int] = {}
        for node in cluster.nodes:
            for c in node.cards:
                if c.mode != "mig":
                    continue
                end = max((p.start + p.size for q in c.mig_profiles for p in q.placements),
                          default=0)
                need = min((s.memreq if s.memreq > 0 else
                            c.devmem * s.pct // 100 if s.pct <= 100 else 0 for s in mems),
                           default=0)
                useful = [p.mask for q in c.mig_profiles if q.memory_mb >= need
                          for p in q.placements]
                self.cards[c.id] = (c.type, (1 << end) - 1, useful)
                self.types[c.type] = self.types.get(c.type, 0) + end
        self._changes: list[tuple[float, int, str, int]] = []   # time, +1/-1, card, mask

    @property
    def active(self) -> bool:
        return bool(self.cards)

    def collect(self, bind: np.ndarray, end: np.ndarray, allocations) -> None:
        """Pods' rows: bind and end times (NaN: still running) and their annotations."""
        for b, e, text in zip(bind.tolist(), end.tolist(), allocations):
            if text is None or b != b:
                continue
            for entry in json.loads(text):
                card = entry["gpuUUID"]
                if card not in self.cards:
                    continue
                pl = entry["placement"]
                mask = ((1 << pl["size"]) - 1) << pl["start"]
                self._changes.append((b, 1, card, mask))
                if e == e:
                    self._changes.append((e, -1, card, mask))

    def _replay(self):
        """Yield ``(time, {type: (used, stranded, instances)})``: at 0, then after
        every time something changed (all its changes applied)."""
        counts = {cid: [0] * 64 for cid in self.cards}
        state = {cid: (0, 0, 0) for cid in self.cards}      # used, stranded, instances
        by_type = {t: [0, 0, 0] for t in self.types}
        changes = sorted(self._changes, key=lambda c: c[0])
        if not changes or changes[0][0] > 0:
            yield 0.0, {t: tuple(v) for t, v in by_type.items()}
        i = 0
        while i < len(changes):
            t = changes[i][0]
            delta: dict[str, int] = {}
            while i < len(changes) and changes[i][0] == t:
                _, sign, cid, mask = changes[i]
                cnt = counts[cid]
                for b in range(64):
                    if mask >> b & 1:
                        cnt[b] += sign
                delta[cid] = delta.get(cid, 0) + sign
                i += 1
            for cid, d in delta.items():
                ctype, slots, useful = self.cards[cid]
                occ = sum(1 << b for b, n in enumerate(counts[cid]) if n > 0)
                usable = 0
                for m in useful:
                    if not m & occ:
                        usable |= m
                new = (bin(occ & slots).count("1"), bin(slots & ~occ & ~usable).count("1"),
                       state[cid][2] + d)
                agg = by_type[ctype]
                for k in range(3):
                    agg[k] += new[k] - state[cid][k]
                state[cid] = new
            yield t, {ct: tuple(v) for ct, v in by_type.items()}

    def frame(self):
        """The MIG time series (:data:`MIG_TIMESERIES_COLUMNS`) as a pandas DataFrame."""
        rows = []
        last: dict[str, tuple] = {}
        for t, per_type in self._replay():
            for ct, v in per_type.items():
                if last.get(ct) != v:
                    rows.append((t, ct, self.types[ct], *v))
                    last[ct] = v
        return pd.DataFrame(rows, columns=list(MIG_TIMESERIES_COLUMNS))

    def summary(self, end_time: float, start: float = 0.0) -> dict:
        """Time-weighted means over ``[start, end_time]`` and peaks (over the whole
        run), in all and per card type."""
        span = max(float(end_time), 0.0)
        start = min(max(float(start), 0.0), span)
        acc = {ct: [0.0, 0.0, 0] for ct in self.types}          # used*s, stranded*s, peak
        peak_total = 0
        prev_t, prev = 0.0, {ct: (0, 0, 0) for ct in self.types}
        for t, per_type in [*self._replay(), (span, None)]:
            dt = max(min(t, span) - max(min(prev_t, span), start), 0.0)
            for ct, v in prev.items():
                acc[ct][0] += v[0] * dt
                acc[ct][1] += v[1] * dt
            if per_type is None:
                break
            for ct, v in per_type.items():
                acc[ct][2] = max(acc[ct][2], v[0])
            peak_total = max(peak_total, sum(v[0] for v in per_type.values()))
            prev_t, prev = t, per_type

        def figures(total: int, used: float, stranded: float, peak: int) -> dict:
            denom = total * (span - start)
            return {"mig_slots_total": total,
                    "mig_slots_used_mean_pct": 100.0 * used / denom if denom else 0.0,
                    "mig_slots_stranded_mean_pct": 100.0 * stranded / denom if denom else 0.0,
                    "mig_slots_used_peak": peak}

        out = figures(sum(self.types.values()), sum(a[0] for a in acc.values()),
                      sum(a[1] for a in acc.values()), peak_total)
        out["mig_by_card_type"] = {ct: figures(self.types[ct], *acc[ct]) for ct in self.types}
        return out
