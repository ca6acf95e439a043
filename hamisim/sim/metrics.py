"""Cluster allocation and fragmentation, kept up to date per changed node.

:class:`ClusterMeter` mirrors HAMi's per-card usage (the same collapsed
usage the schedulers hold) in numpy arrays and keeps cluster totals as sums
of per-node terms, so a bind or a departure costs work on that one node, not
a rescan of the cluster.

Fragmentation follows the FGD paper (Weng et al., ATC '23; FGD-OPENB.md
§4.1), generalised from milli-GPU to HAMi cards:

* a card's *free amount* ``f`` (in GPUs) is ``min(free cores / devcore,
  free memory / devmem)``, and 0 when its slots are exhausted or it is
  unhealthy or cordoned;
* a card can *host* a typical pod shape when HAMi's Fit would accept it on
  that card alone: a free slot, enough memory (the shape's MiB, or its
  percentage of this card), enough cores, the exclusive-card rules, the
  type filter;
* a node can host a shape when at least ``k`` of its cards can and its free
  CPU covers the shape's CPU; then the free amount of the cards that cannot
  host the shape is fragment, otherwise all of the node's free amount is
  (a CPU-only shape counts all free GPU as fragment, as in FGD);
* node fragmentation is the popularity-weighted sum over the typical shapes
  and cluster fragmentation the sum over nodes.

Typical shapes are the workload's most popular pod shapes covering at least
95 % of its pods (FGD's target workload), see :func:`hamisim.shapes.typical_shapes`.

FGD's measure also counts free GPU that no placement could ever make useful:
on a mixed cluster, idle T4s that cannot host an H100-only shape are
"fragmented" before any pod arrives. The meter splits it in two:

* ``unfit``: free GPU that a typical shape cannot use *even on an empty node*
  (its type filter, memory, cores or card count rule the card or node out, as
  do unhealthy and cordoned cards; CPU-only shapes rule out every card),
  weighted like FGD: per card a
  constant weight (the summed popularity of the shapes it cannot serve) times
  its free amount;
* ``stranded``: the rest, ``frag - unfit``, free GPU that the shapes could use
  on an empty node but not as the cards are now used: fragmentation caused by
  placement. An idle cluster has none.

Every total is also kept per node group (:func:`hamisim.cluster.group_of`).
Cards of a type HAMi's NVIDIA backend never offers (:mod:`hamisim.devices`)
keep a row (HAMi's per-card figures list them) but count in no total: not as
GPUs, slots, memory or cores, not as free or fragmented capacity.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

import numpy as np

from hamisim import _meter
from hamisim.cluster import Cluster, group_of
from hamisim.devices import simulated_flags
from hamisim.hami.reference import type_allowed
from hamisim.pods import NO_PERCENTAGE
from hamisim.shapes import NOUSE_GPUTYPE, USE_GPUTYPE, Shape

__all__ = ["ClusterMeter", "PodUsage", "TIMESERIES_COLUMNS", "GROUP_TIMESERIES_COLUMNS"]

_MICRO = 1_000_000


TIMESERIES_COLUMNS = (
    "time", "pods_arrived", "pods_pending", "pods_running", "pods_departed", "pods_abandoned",
    "hami_gpu_total", "hami_gpu_allocated", "hami_gpu_zero_tenant", "nodes_gpu_idle",
    "hami_vgpu_slots_total", "hami_vgpu_slots_allocated",
    "hami_gpu_memory_total_bytes", "hami_gpu_memory_allocated_bytes",
    "hami_gpu_core_total", "hami_gpu_core_allocated", "hami_gpu_core_allocated_ratio",
    "unallocated_gpu", "frag_gpu", "frag_pct_of_capacity", "frag_rate_pct",
    "unfit_gpu", "stranded_gpu", "stranded_pct_of_capacity",
    "pods_pending_active", "pods_pending_backoff", "pods_pending_unschedulable",
    "attempts_scheduled", "attempts_unschedulable", "attempts_error",
)
#: Columns of the per-group time series (one row per group whose nodes changed).
GROUP_TIMESERIES_COLUMNS = (
    "time", "group", "hami_gpu_total", "hami_gpu_allocated", "hami_gpu_allocated_pct",
    "hami_gpu_memory_total_bytes", "hami_gpu_memory_allocated_bytes",
    "hami_gpu_core_allocated_ratio", "unallocated_gpu", "frag_gpu", "unfit_gpu",
    "stranded_gpu",
)


def _type_matrix(shapes: Sequence[Shape], types: Sequence[str]) -> np.ndarray:
    """(shapes, cards) booleans: may the shape use the card's type? Evaluated
    once per distinct type string."""
    names, inverse = np.unique(np.array(types, dtype=object).astype(str), return_inverse=True)
    per_type = np.array([[type_allowed({USE_GPUTYPE: x.use_gputype,
                                        NOUSE_GPUTYPE: x.nouse_gputype}, t) for t in names]
                         for x in shapes], dtype=bool).reshape(len(shapes), len(names))
    return per_type[:, inverse.reshape(-1)] if len(types) else per_type


class PodUsage(NamedTuple):
    """One pod's usage in a meter's terms: card rows and (slots, memory, cores) each."""

    rows: list[int]
    amounts: list[tuple[int, int, int]]


class ClusterMeter:
    """Per-card usage and per-node aggregates of a cluster, updated incrementally."""

    def __init__(self, cluster: Cluster, shapes: Sequence[Shape] = ()) -> None:
        nodes = cluster.nodes
        self.n_nodes = len(nodes)
        self.node_start = np.zeros(self.n_nodes + 1, dtype=np.int64)
        self.row: dict[str, int] = {}
        count, devmem, devcore, usable, types = [], [], [], [], []
        counted = simulated_flags(c for node in nodes for c in node.cards)
        for i, node in enumerate(nodes):
            for c in node.cards:
                self.row[c.id] = len(count)
                usable.append(counted[len(count)] and c.health and c.id not in node.cordon)
                count.append(c.count)
                devmem.append(c.devmem)
                devcore.append(c.devcore)
                types.append(c.type)
            self.node_start[i + 1] = len(count)
        self.count = np.array(count, dtype=np.int64)
        self.devmem = np.array(devmem, dtype=np.int64)
        self.devcore = np.array(devcore, dtype=np.int64)
        self.usable = np.array(usable, dtype=bool)
        self._usable_u8 = self.usable.astype(np.uint8)
        #: per card: is it a GPU (a simulated family)? The others count in no total
        self.counted = np.array(counted, dtype=bool)
        self._counted_u8 = self.counted.astype(np.uint8)
        self.used = np.zeros_like(self.count)
        self.usedmem = np.zeros_like(self.count)
        self.usedcores = np.zeros_like(self.count)
        self.node_cpu = np.array([-1 if n.cpu_milli is None else n.cpu_milli for n in nodes],
                                 dtype=np.int64)
        self.node_cpu_used = np.zeros(self.n_nodes, dtype=np.int64)
        self.shapes = list(shapes)
        # the shapes as arrays, and each shape's type filter per card
        sh = self.shapes
        self._sh = {
            "nums": np.array([x.nums for x in sh], dtype=np.int64),
            "memreq": np.array([x.memreq for x in sh], dtype=np.int64),
            "pct": np.array([x.pct for x in sh], dtype=np.int64),
            "has_pct": np.array([x.pct != NO_PERCENTAGE for x in sh], dtype=np.uint8),
            "cores": np.array([x.cores for x in sh], dtype=np.int64),
            "cpu": np.array([x.cpu_milli for x in sh], dtype=np.int64),
            "weight": np.array([x.weight for x in sh], dtype=float),
            "type_ok": np.ascontiguousarray(_type_matrix(sh, types), dtype=np.uint8),
        }
        self.n_cards = len(count)
        #: the GPUs, denominator of every share: the counted cards
        self.n_gpus = int(self.counted.sum())
        self.capacity = float(self.n_gpus)
        gpu = self.counted
        self.totals = {
            "slots_total": int(self.count[gpu].sum()), "memory_total": int(self.devmem[gpu].sum()),
            "core_total": int(self.devcore[gpu].sum()),
        }
        # per-node terms whose sums are the cluster totals; free amount and
        # fragment in micro-GPUs (integers), so the running cluster sums stay
        # exact however many updates they see
        self.node_alloc = np.zeros(self.n_nodes, dtype=np.int64)
        self.node_free = np.zeros(self.n_nodes, dtype=np.int64)
        self.node_frag = np.zeros(self.n_nodes, dtype=np.int64)
        self.node_idle = np.zeros(self.n_nodes, dtype=np.uint8)
        self.node_unfit = np.zeros(self.n_nodes, dtype=np.int64)
        # node groups: names in first-seen order, a code per node, fixed totals
        names = [group_of(n) for n in nodes]
        self.group_names = list(dict.fromkeys(names))
        code = {g: k for k, g in enumerate(self.group_names)}
        self.node_group = np.array([code[g] for g in names], dtype=np.int32)
        card_group = np.repeat(self.node_group, np.diff(self.node_start)) \
            if self.n_cards else np.zeros(0, dtype=np.int32)
        n_groups = len(self.group_names)
        self.group_cards = np.bincount(card_group, gpu, minlength=n_groups).astype(np.int64)
        self.group_memory = np.bincount(card_group, self.devmem * gpu, minlength=n_groups)
        self.group_cores = np.bincount(card_group, self.devcore * gpu, minlength=n_groups)
        self.group_sums = {k: np.zeros(n_groups, dtype=np.int64) for k in (
            "alloc", "idle", "free", "frag", "unfit", "used", "usedmem", "usedcores")}
        self.group_dirty = np.zeros(n_groups, dtype=np.uint8)
        self.card_unfit = self._unfit_weights(nodes)
        sh = self._sh
        g = self.group_sums
        self._core = _meter.MeterCore(
            self.used, self.usedmem, self.usedcores, self.count, self.devmem, self.devcore,
            self._usable_u8, self._counted_u8, self.node_start, self.node_cpu, self.node_cpu_used,
            self.node_alloc, self.node_free, self.node_frag, self.node_idle,
            sh["nums"], sh["memreq"], sh["pct"], sh["has_pct"], sh["cores"], sh["cpu"],
            sh["weight"], sh["type_ok"], self.card_unfit, self.node_unfit, self.node_group,
            g["alloc"], g["idle"], g["free"], g["frag"], g["unfit"], g["used"], g["usedmem"],
            g["usedcores"], self.group_dirty)

    def _unfit_weights(self, nodes) -> np.ndarray:
        """Per card, the summed weight of the typical shapes that cannot use it even on
        an empty node: the card itself cannot host the shape (type, memory, cores, no
        slot, unhealthy or cordoned), or its node cannot (too few such cards, too little
        CPU capacity); every card for a CPU-only shape."""
        sh = self._sh
        u = np.zeros(self.n_cards, dtype=float)
        if not self.n_cards:
            return u
        node_of = np.repeat(np.arange(self.n_nodes), np.diff(self.node_start))
        for s in range(len(self.shapes)):
            w = float(sh["weight"][s])
            k = int(sh["nums"][s])
            if k == 0:
                u += w
                continue
            if sh["memreq"][s] > 0:
                need = np.full(self.n_cards, int(sh["memreq"][s]), dtype=np.int64)
            elif sh["has_pct"][s]:
                need = self.devmem * int(sh["pct"][s]) // 100
            else:
                need = np.zeros(self.n_cards, dtype=np.int64)
            card_ok = (self.usable & (self.count >= 1) & sh["type_ok"][s].astype(bool)
                       & (self.devmem >= need) & (self.devcore >= sh["cores"][s]))
            hosts = np.bincount(node_of, card_ok, minlength=self.n_nodes)
            cpu = int(sh["cpu"][s])
            node_ok = (hosts >= k) & ((self.node_cpu < 0) | (self.node_cpu >= cpu))
            u += w * ~(card_ok & node_ok[node_of])
        return u

    # -- running sums (kept by the compiled core) ------------------------
    sum_alloc = property(lambda self: self._core.sum_alloc, doc="cards with a tenant")
    sum_idle = property(lambda self: self._core.sum_idle, doc="nodes whose cards are all idle")
    sum_free = property(lambda self: self._core.sum_free, doc="free GPU share, micro-GPUs")
    sum_frag = property(lambda self: self._core.sum_frag, doc="fragmented share, micro-GPUs")
    sum_unfit = property(lambda self: self._core.sum_unfit,
                         doc="share no typical shape can use even on an empty node, micro-GPUs")
    sum_used = property(lambda self: self._core.sum_used, doc="vGPU slots in use")
    sum_usedmem = property(lambda self: self._core.sum_usedmem, doc="card memory in use, MiB")
    sum_usedcores = property(lambda self: self._core.sum_usedcores, doc="card cores in use")

    # -- updates ---------------------------------------------------------
    def apply(self, node: int, usage: Mapping[str, tuple[int, int, int]] | PodUsage,
              cpu_milli: int = 0, sign: int = 1) -> None:
        """Add (``sign=1``) or remove (``-1``) one pod's usage on ``node``:
        ``usage`` as :func:`hamisim.hami.reference.collapsed_usage` gives it, or
        its :meth:`pod_usage` (cheaper when applied more than once)."""
        if not isinstance(usage, PodUsage):
            usage = self.pod_usage(usage)
        self._core.apply(node, usage.rows, usage.amounts, cpu_milli, sign)

    def pod_usage(self, usage: Mapping[str, tuple[int, int, int]]) -> PodUsage:
        """``usage`` by card id, resolved to this meter's card rows."""
        row = self.row
        return PodUsage([row[u] for u in usage], list(usage.values()))

    # -- readings --------------------------------------------------------
    def usage_snapshot(self, out: np.ndarray | None = None) -> np.ndarray:
        """Per card, slots, cores and memory in use now, as a (3, cards) array.

        Written into ``out`` when given (no allocation), for callers that keep
        the state at some moment and read :meth:`allocation_share` of it later.
        """
        if out is None:
            out = np.empty((3, self.n_cards), dtype=np.int64)
        np.copyto(out[0], self.used)
        np.copyto(out[1], self.usedcores)
        np.copyto(out[2], self.usedmem)
        return out

    # -- the time series and the peak, kept by the compiled core -----------------
    def sample(self, time: float, arrived: int, pending: int, running: int, departed: int,
               abandoned: int, gpu_arrived: float, delay: float,
               queues: tuple[int, int, int] = (0, 0, 0),
               attempts: tuple[int, int, int] = (0, 0, 0)) -> None:
        """Record a time-series row at ``time`` (a later row at the same time replaces
        it). ``queues``: the pending pods in kube-scheduler's active queue, backoff
        queue and unschedulable pods; ``attempts``: the attempts so far that
        scheduled a pod, found it unschedulable, ended in an error."""
        self._core.sample(time, arrived, pending, running, departed, abandoned, gpu_arrived,
                          delay, *queues, *attempts)

    def timeseries(self) -> dict[str, np.ndarray]:
        """The recorded rows as :data:`TIMESERIES_COLUMNS` (plus ``gpu_arrived`` and
        ``queueing_delay_s``), computed column by column as :meth:`reading` does."""
        time, x, f = self._core.series()
        t = self.totals
        alloc = x[:, 5]
        used_cores = x[:, 9]
        free = x[:, 10] / _MICRO
        frag = x[:, 11] / _MICRO
        unfit = x[:, 12] / _MICRO
        stranded = np.maximum(frag - unfit, 0.0)
        n = len(time)
        with np.errstate(invalid="ignore", divide="ignore"):
            return {
                "time": time, "pods_arrived": x[:, 0], "pods_pending": x[:, 1],
                "pods_running": x[:, 2], "pods_departed": x[:, 3], "pods_abandoned": x[:, 4],
                "hami_gpu_total": np.full(n, self.n_gpus, dtype=np.int64),
                "hami_gpu_allocated": alloc, "hami_gpu_zero_tenant": self.n_gpus - alloc,
                "nodes_gpu_idle": x[:, 6],
                "hami_vgpu_slots_total": np.full(n, t["slots_total"], dtype=np.int64),
                "hami_vgpu_slots_allocated": x[:, 7],
                "hami_gpu_memory_total_bytes": np.full(n, t["memory_total"] * 2**20,
                                                       dtype=np.int64),
                "hami_gpu_memory_allocated_bytes": x[:, 8] * 2**20,
                "hami_gpu_core_total": np.full(n, t["core_total"], dtype=np.int64),
                "hami_gpu_core_allocated": used_cores,
                "hami_gpu_core_allocated_ratio": used_cores / t["core_total"]
                if t["core_total"] else np.zeros(n),
                "unallocated_gpu": free,
                "frag_gpu": frag,
                "frag_pct_of_capacity": 100.0 * frag / self.capacity if self.capacity
                else np.zeros(n),
                "frag_rate_pct": np.where(free > 0, 100.0 * frag / np.where(free > 0, free, 1),
                                          0.0),
                "unfit_gpu": unfit,
                "stranded_gpu": stranded,
                "stranded_pct_of_capacity": 100.0 * stranded / self.capacity if self.capacity
                else np.zeros(n),
                "pods_pending_active": x[:, 13], "pods_pending_backoff": x[:, 14],
                "pods_pending_unschedulable": x[:, 15], "attempts_scheduled": x[:, 16],
                "attempts_unschedulable": x[:, 17], "attempts_error": x[:, 18],
                "gpu_arrived": f[:, 0],
                "queueing_delay_s": f[:, 1],
            }

    def snapshot_peak(self) -> None:
        """Remember the usage now as the peak's (see :meth:`peak_usage`)."""
        self._core.snapshot_peak()

    def peak_usage(self) -> np.ndarray:
        """Per card, slots, cores and memory in use at the last :meth:`snapshot_peak`."""
        return self._core.peak_usage()

    def apply_rows(self, node: int, rows: list[int], used: list[int], mem: list[int],
                   cores: list[int], cpu_milli: int = 0, sign: int = 1) -> None:
        """:meth:`apply` with a pod's usage as card rows and three parallel lists."""
        self._core.apply_rows(node, rows, used, mem, cores, cpu_milli, sign)

    def apply_deficit(self, rows: list[int], used: list[int], mem: list[int], cores: list[int],
                      sign: int = 1) -> None:
        """What a pod truly uses beyond HAMi's booking on its card rows (HAMi issue
        #2965's init-container accounting), added (``sign=1``) or removed."""
        self._core.apply_deficit(rows, used, mem, cores, sign)

    def quirk_figures(self, end_time: float) -> dict[str, float]:
        """The over-commit HAMi's init-container accounting left on the cards up to
        ``end_time`` (:meth:`hamisim._meter.MeterCore.quirk_figures`)."""
        return self._core.quirk_figures(end_time)

    def allocation_share(self, snapshot: np.ndarray | None = None) -> np.ndarray:
        """Per card, the largest of its used share of slots, cores and memory
        (now, or at a :meth:`usage_snapshot`)."""
        used, usedcores, usedmem = (self.used, self.usedcores, self.usedmem) \
            if snapshot is None else snapshot
        with np.errstate(divide="ignore", invalid="ignore"):
            parts = [np.where(cap > 0, use / cap, 0.0) for use, cap in (
                (used, self.count), (usedcores, self.devcore), (usedmem, self.devmem))]
        return np.maximum.reduce(parts)

    def reading(self) -> dict[str, float]:
        """Cluster totals now (names as in :data:`TIMESERIES_COLUMNS`)."""
        t = self.totals
        used_cores = self.sum_usedcores
        free = self.sum_free / _MICRO
        frag = self.sum_frag / _MICRO
        unfit = self.sum_unfit / _MICRO
        # per node frag >= unfit exactly; rounding to micro-GPUs may leave -1e-6
        stranded = max(frag - unfit, 0.0)
        return {
            "hami_gpu_total": self.n_gpus,
            "hami_gpu_allocated": self.sum_alloc,
            "hami_gpu_zero_tenant": self.n_gpus - self.sum_alloc,
            "nodes_gpu_idle": self.sum_idle,
            "hami_vgpu_slots_total": t["slots_total"],
            "hami_vgpu_slots_allocated": self.sum_used,
            "hami_gpu_memory_total_bytes": t["memory_total"] * 2**20,
            "hami_gpu_memory_allocated_bytes": self.sum_usedmem * 2**20,
            "hami_gpu_core_total": t["core_total"],
            "hami_gpu_core_allocated": used_cores,
            "hami_gpu_core_allocated_ratio": used_cores / t["core_total"] if t["core_total"] else 0.0,
            "unallocated_gpu": free,
            "frag_gpu": frag,
            "frag_pct_of_capacity": 100.0 * frag / self.capacity if self.capacity else 0.0,
            "frag_rate_pct": 100.0 * frag / free if free > 0 else 0.0,
            "unfit_gpu": unfit,
            "stranded_gpu": stranded,
            "stranded_pct_of_capacity": 100.0 * stranded / self.capacity if self.capacity
            else 0.0,
        }

    def changed_groups(self) -> list[tuple]:
        """The raw running sums of the groups whose nodes changed since the last call:
        ``(group code, alloc, free, frag, unfit, usedmem, usedcores)``, free, frag
        and unfit in micro-GPUs (:meth:`group_table` turns them into readings)."""
        return self._core.take_changed_groups()

    def group_table(self, time: np.ndarray, raw: np.ndarray) -> dict[str, np.ndarray]:
        """Readings (:data:`GROUP_TIMESERIES_COLUMNS`) from rows of
        :meth:`changed_groups` taken at ``time``, computed column by column."""
        g = raw[:, 0].astype(np.int64) if len(raw) else np.zeros(0, dtype=np.int64)
        cards = self.group_cards[g]
        cores = self.group_cores[g]
        frag = raw[:, 3] / _MICRO
        unfit = raw[:, 4] / _MICRO
        with np.errstate(invalid="ignore", divide="ignore"):
            return {
                "time": time,
                "group": np.array(self.group_names, dtype=object)[g],
                "hami_gpu_total": cards,
                "hami_gpu_allocated": raw[:, 1].astype(np.int64),
                "hami_gpu_allocated_pct": np.where(cards > 0, 100.0 * raw[:, 1] / cards, 0.0),
                "hami_gpu_memory_total_bytes": self.group_memory[g] * 2**20,
                "hami_gpu_memory_allocated_bytes": raw[:, 5].astype(np.int64) * 2**20,
                "hami_gpu_core_allocated_ratio": np.where(cores > 0, raw[:, 6] / cores, 0.0),
                "unallocated_gpu": raw[:, 2] / _MICRO,
                "frag_gpu": frag,
                "unfit_gpu": unfit,
                "stranded_gpu": np.maximum(frag - unfit, 0.0),
            }

    def group_readings(self, changed_only: bool = True) -> list[tuple]:
        """Per-group readings now, as rows of :data:`GROUP_TIMESERIES_COLUMNS`
        without the time: the groups whose nodes changed since the last call
        (every group with ``changed_only=False``), in group order."""
        if not changed_only:
            self.group_dirty[:] = 1
        raw = np.array(self.changed_groups(), dtype=np.int64).reshape(-1, 7)
        cols = self.group_table(np.zeros(len(raw)), raw)
        names = GROUP_TIMESERIES_COLUMNS[1:]
        return [tuple(cols[c][k] for c in names) for k in range(len(raw))]
