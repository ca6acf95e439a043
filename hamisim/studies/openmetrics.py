"""A run as OpenMetrics text: what Prometheus would have scraped from HAMi's
scheduler and kube-scheduler while the simulated cluster ran.

``promtool tsdb create-blocks-from openmetrics FILE DIR`` turns the file into
Prometheus blocks, so HAMi's own Grafana dashboard (``hami-vgpu-dashboard.json``)
and hamisim's (``workloads/grafana/hamisim-dashboard.json``) show the simulated
day. Every series is sampled on one grid: ``start + k * interval`` for the
simulated times ``0, interval, 2 * interval, ...`` up to the end of the run,
each sample the state right after every event at or before that instant (a
scrape just then). HAMi's per-card and per-container series keep only the
samples a query needs (every change, an unchanged value again after
Prometheus's 5-minute lookback at most, the run's last instant): a default
run's file is a fifth of the full grid's, and an instant query answers as on
the full grid while the series lasts.

The families, names, HELP texts, label names and units are HAMi v2.10.0's
(``cmd/scheduler/metrics.go``: a fresh registry wrapped with the const label
``zone="vGPU"``; memory in bytes; cores in the card's own units, 0..100 for
NVIDIA; ``hami_node_gpu_memory_allocated_ratio`` a fraction 0..1) and
kube-scheduler 1.32's (``scheduler_pending_pods{queue}``,
``scheduler_schedule_attempts_total{profile,result}``). The per-card values are
summed from the pods' ``hami.io/vgpu-devices-allocated`` (pods table
``devices``) as HAMi's ``getNodesUsage`` does: every container's entry counts,
init containers' too. ``hamisim_*`` families carry what only the simulator
knows (fragmentation, zero-tenant cards, pods by state, topology quality).

Not exported: HAMi's quota families (``hami_resource_quota_*``), its MIG
instance info (only instances the device plugin realised appear there, and a
simulation realises none), ``hami_build_info`` and the legacy names.
Where one container holds two MIG instances of one card, HAMi would emit two
samples with the same labels (its endpoint then answers with an error); the
file has one sample with their sum.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import IO, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from hamisim._openmetrics import lines as _lines
from hamisim.cluster import Cluster
from hamisim.devices import simulated_flags
from hamisim.io.outputs import atomic_file, read_table
from hamisim.workload import Trace

__all__ = ["MetricsFile", "write_openmetrics", "write_run_metrics", "namespaces_of",
           "parse_start", "HAMI_ZONE", "SCHEDULER_PROFILE",
           "DEFAULT_INTERVAL", "LOOKBACK", "RETENTION", "refresh_every", "default_start",
           "series_end", "retention_warning", "utc"]

#: HAMi's scheduler wraps its registry with ``zone="vGPU"`` (metrics.go initMetrics)
HAMI_ZONE = "vGPU"
#: the kube-scheduler profile HAMi's chart deploys (``schedulerName``)
SCHEDULER_PROFILE = "hami-scheduler"
#: seconds between samples: Prometheus's default scrape interval
DEFAULT_INTERVAL = 60.0
#: Prometheus's ``--query.lookback-delta`` default: a query finds a series' last
#: sample only if it is younger than this, so an unchanged value is repeated
#: within it
LOOKBACK = 300.0
#: Prometheus's default ``--storage.tsdb.retention.time`` (15 days)
RETENTION = 15 * 86400.0
_MIB = 1 << 20
# cells of a (samples x cards) block built at once: bounds the memory of a
# large cluster over a long run
_BLOCK_CELLS = 1 << 22
# bytes of sample lines assembled before each write: a buffer that stays in the
# CPU's cache makes the kernel's copy into the page cache several times cheaper
# (default run: 0.11-0.14 s of system time at 1 MiB, 0.80-0.88 s at 16 MiB)
_BUFFER = 1 << 20


@dataclass(frozen=True)
class MetricsFile:
    """What :func:`write_openmetrics` wrote: its path, its size, the families,
    series and samples, and the first and last sample's Unix time."""

    path: str
    size_bytes: int
    families: int
    series: int
    samples: int
    first: float
    last: float
    interval: float

    def describe(self) -> str:
        """One line for the console."""
        first, last = utc(self.first), utc(self.last)
        return (f"{self.path}: {self.families} families, {self.series:,} series, "
                f"{self.samples:,} samples every {self.interval:g} s from {first} to {last} "
                f"({self.size_bytes / 1e6:,.1f} MB)")


def parse_start(text: str) -> float:
    """``--metrics-start``: an ISO 8601 time with a time zone
    (``2026-11-30T00:00:00Z``, ``2026-11-30T08:00:00+08:00``) or Unix seconds, as
    Unix seconds. Raises ``ValueError`` with what was expected."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = datetime.fromisoformat(value.replace("z", "Z"))
        except ValueError:
            raise ValueError(f"'{text}' is neither an ISO 8601 time "
                             "(e.g. 2026-11-30T00:00:00Z) nor Unix seconds") from None
        if when.tzinfo is None:
            raise ValueError(f"'{text}' has no time zone: add Z for UTC or an offset "
                             "such as +08:00 (Prometheus stores UTC)")
        seconds = when.timestamp()
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"'{text}' is not a time after 1970-01-01")
    return seconds


def refresh_every(interval: float, lookback: float = LOOKBACK) -> int:
    """How many sample intervals an unchanged value may go unrepeated: the most
    whose span reaches no further than Prometheus's lookback (5 at 60 s: every
    300 s), at least 1 (every sample, when the interval exceeds the lookback).

    A span of exactly the lookback suffices: an instant query at ``t`` takes the
    series' last sample at or before ``t``, so between two samples ``s`` and
    ``s + lookback`` that sample is younger than the lookback (Prometheus 3's
    left-open window counts it, 2's closed one too) and at ``s + lookback`` the
    new sample itself answers."""
    return max(1, math.floor(lookback / interval + 1e-9))


def series_end(timeseries: pd.DataFrame, interval: float = DEFAULT_INTERVAL) -> float:
    """The simulated time of the file's last sample: the run's end, down to the
    sample grid."""
    end = float(timeseries["time"].iloc[-1]) if len(timeseries) else 0.0
    return math.floor(max(end, 0.0) / interval + 1e-9) * interval


def default_start(now: float, end: float) -> float:
    """``--metrics-start`` when not given: the Unix time that puts the last
    sample (simulated time ``end``) at ``now``, down to a whole minute, so that
    the series end at the moment of the run, inside Prometheus's retention."""
    return float(math.floor((now - end) / 60.0) * 60)


def utc(seconds: float) -> str:
    """Unix seconds as ISO 8601 UTC (``2026-11-30T00:00:00Z``), as
    ``--metrics-start`` takes it."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def retention_warning(first: float, last: float, now: float,
                      retention: float = RETENTION) -> str | None:
    """What to tell the user when samples from ``first`` to ``last`` (Unix
    seconds) reach back beyond Prometheus's default retention at ``now``
    (Prometheus deletes those blocks when it starts); ``None`` when they don't."""
    cutoff = now - retention
    if first >= cutoff:
        return None
    days = retention / 86400
    span = math.ceil((now - first) / 86400)
    part = ("all of them" if last < cutoff else
            f"those before {utc(cutoff)}")
    return (f"the samples start on {utc(first)}, more than {days:g} days ago: a Prometheus with "
            f"its default retention ({days:g} d) deletes {part}; start it with "
            f"--storage.tsdb.retention.time={span + 1}d or longer"
            + (", or give a later --metrics-start" if now - (last - first) >= cutoff else
               f" (the run spans more than {days:g} days)"))


def write_openmetrics(path: str | os.PathLike[str], cluster: Cluster, timeseries: pd.DataFrame,
                      pods: pd.DataFrame, start: float, interval: float = DEFAULT_INTERVAL,
                      namespaces: Mapping[str, str] | None = None,
                      labels: Mapping[str, str] | None = None) -> MetricsFile:
    """Write the run as OpenMetrics text to ``path``, atomically.

    ``timeseries`` and ``pods`` are the run's tables (``pods`` needs ``pod``,
    ``node``, ``bind``, ``departure`` and ``devices``; the topology columns when
    present); ``start`` is the Unix time of simulated time 0, ``interval`` the
    seconds between samples; ``namespaces`` maps pod names to their namespace
    where it is not ``default``; ``labels`` are added to every series (a sweep
    names its cell, so several cells can share one Prometheus).

    The per-card and per-container families (all but a few dozen series, and
    nearly all the bytes) hold a sample on the grid only where a query needs
    one: a series' first, every change of value, an unchanged value again every
    :func:`refresh_every` intervals (at most Prometheus's 5-minute lookback),
    and the run's last instant. An instant query at any time while a series
    lasts therefore returns what it would on the full grid (a series that ends,
    its pod gone, goes stale up to ``refresh_every - 1`` intervals sooner, 4
    minutes at 60 s, never later); ``*_over_time``
    functions over those families count samples, not time. Counters and the
    cluster-wide gauges keep every sample.
    """
    if not interval > 0:
        raise ValueError(f"the metrics interval must be positive, not {interval}")
    end = series_end(timeseries, interval)
    grid = np.arange(int(round(end / interval)) + 1) * interval
    whole = float(start).is_integer() and float(interval).is_integer()
    stamps = [(f" {int(start) + int(t)}\n" if whole else f" {start + t:.3f}\n").encode()
              for t in grid]
    series = _Series(cluster, pods, grid, namespaces or {})
    counts = [0, 0, 0]          # series, samples, families
    with atomic_file(path) as tmp:
        with open(tmp, "wb") as out:
            writer = _Writer(out, stamps, counts, sorted((labels or {}).items()),
                             refresh_every(interval))
            series.write(writer, timeseries)
            out.write(b"# EOF\n")
        size = os.path.getsize(tmp)
    return MetricsFile(os.fspath(path), size, counts[2], counts[0], counts[1],
                       start + grid[0], start + grid[-1], float(interval))


#: the pods-table columns the export reads
POD_COLUMNS_READ = ("pod", "node", "bind", "departure", "devices", "gpus", "numa_nodes",
                    "pcie_switches")


def write_run_metrics(path: str | os.PathLike[str], prep, timeseries: pd.DataFrame,
                      folder: str | os.PathLike[str], fmt: str, start: float,
                      interval: float = DEFAULT_INTERVAL) -> MetricsFile:
    """:func:`write_openmetrics` for a run written to ``folder`` (its pods table
    in format ``fmt``), ``prep`` its :class:`~hamisim.studies.runs.Prepared`."""
    table = os.path.join(os.fspath(folder), f"pods.{fmt}")
    pods = pd.read_parquet(table, columns=list(POD_COLUMNS_READ)) if fmt == "parquet" \
        else read_table(table)
    events = os.path.join(os.fspath(folder), f"events.{fmt}")
    if fmt == "parquet":
        moves = pd.read_parquet(events, columns=["time", "pod", "event", "message"],
                                filters=[("event", "==", "move")])
    else:
        moves = read_table(events)
        moves = moves[moves["event"] == "move"]
    return write_openmetrics(path, prep.cluster, timeseries, _split_moves(pods, moves), start,
                             interval, namespaces_of(prep.workload, prep.state))


def _split_moves(pods: pd.DataFrame, moves: pd.DataFrame) -> pd.DataFrame:
    """The pods table with a row per placement of each pod the what-if
    defragmenter moved (its events' ``move`` rows, whose message names the
    place it left): a row until each move, then one from the last."""
    if moves.empty:
        return pods
    moved = set(moves["pod"])
    rows = []
    first = {name: row for name, row in zip(pods["pod"], pods.to_dict("records"))
             if name in moved}
    for name, group in moves.sort_values("time", kind="stable").groupby("pod", sort=True):
        row = first[name]
        start = row["bind"]
        for t, message in zip(group["time"], group["message"]):
            node, devices = message.rsplit("from ", 1)[1].split(" ", 1)
            rows.append({**row, "bind": start, "departure": t, "node": node,
                         "devices": devices})
            start = t
        rows.append({**row, "bind": start})
    return pd.concat([pods[~pods["pod"].isin(moved)], pd.DataFrame(rows, columns=pods.columns)],
                     ignore_index=True)


def namespaces_of(workload: Trace, state=None) -> dict[str, str]:
    """Pod name -> namespace for the pods of ``workload`` and of an initial
    ``state`` outside ``default``."""
    out: dict[str, str] = {}
    spaces = [t.namespace for t in workload.templates]
    if any(ns != "default" for ns in spaces):
        for name, template in zip(workload.names, workload.template.tolist()):
            if spaces[template] != "default":
                out[name] = spaces[template]
    for pod in getattr(state, "pods", ()):
        if pod.namespace != "default":
            out[pod.name] = pod.namespace
    return out


class _Writer:
    """Families and series into the (UTF-8) text, the lines assembled at C speed.

    ``stamps`` are the grid's ``b" <unix time>\\n"`` tails; ``every`` is the
    refresh period of a thinned series, in samples."""

    def __init__(self, out: IO[bytes], stamps: list[bytes], counts: list[int],
                 extra: Sequence[tuple[str, str]] = (), every: int = 1) -> None:
        self.out, self.stamps, self.counts = out, stamps, counts
        self.extra = tuple(extra)
        self.every = every
        self._stamps = _pieces(stamps)
        self._buffer = np.empty(0, dtype=np.uint8)

    def head(self, name: str, labels: Iterable[tuple[str, str]] = ()) -> str:
        """A series' name and labels (the file's extra labels added)."""
        return name + self.labels(labels)

    def labels(self, labels: Iterable[tuple[str, str]] = ()) -> str:
        """``{...}`` of a series (the file's extra labels added), '' without labels."""
        pairs = [*labels, *self.extra]
        return _labels(pairs) if pairs else ""

    def template(self, keys: Sequence[str], escaped: bool = False) -> Callable[..., str]:
        """:meth:`labels` for many series with the label names ``keys``: a
        function of their values, in the order of ``keys`` (``escaped``: values
        the caller already escaped with :func:`_escape`)."""
        pairs = sorted([*((k, i) for i, k in enumerate(keys)), *self.extra],
                       key=lambda pair: pair[0])
        text = ",".join(f'{k}="{{{x}}}"' if isinstance(x, int) else
                        f'{k}="{_escape(x).replace("{", "{{").replace("}", "}}")}"'
                        for k, x in pairs)
        form = ("{{" + text + "}}").format
        return form if escaped else lambda *values: form(*map(_escape, values))

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.out.write(f"# TYPE {name} {kind}\n# HELP {name} {help_text}\n".encode())
        self.counts[2] += 1

    def _runs(self, heads: Sequence[bytes], values: Sequence[bytes], head: np.ndarray,
              value: np.ndarray, first: np.ndarray, stop: np.ndarray) -> None:
        """Run ``i``: the line ``heads[head[i]] + values[value[i]]`` (a series
        and its value) at samples ``first[i]`` .. ``stop[i] - 1`` (``stop >
        first``): the first, every ``every``-th after it, and the run's last
        instant when it is the file's. The samples are chosen with numpy and the
        lines assembled by :func:`hamisim._openmetrics.lines`, no Python object
        per sample."""
        first = np.asarray(first, dtype=np.int64)
        stop = np.asarray(stop, dtype=np.int64)
        k, every = len(self.stamps), self.every
        # samples per run: first, first + every, ... below stop, and the last
        # instant where the stride steps over it
        last = (stop == k) & ((stop - 1 - first) % every != 0)
        n = (stop - first + every - 1) // every + last
        total = int(n.sum())
        if not total:
            return
        run = np.repeat(np.arange(len(n)), n)
        begin = np.cumsum(n) - n
        stamp = first[run] + (np.arange(total) - begin[run]) * every
        stamp[(begin + n - 1)[last]] = k - 1
        self._emit(heads, values, np.asarray(head, dtype=np.int64)[run],
                   np.asarray(value, dtype=np.int64)[run], stamp)
        self.counts[1] += total

    def _emit(self, heads: Sequence[bytes], values: Sequence[bytes], head: np.ndarray,
              value: np.ndarray, stamp: np.ndarray) -> None:
        """The lines ``heads[head[p]] + values[value[p]] + stamps[stamp[p]]``,
        in buffers of about ``_BUFFER`` bytes."""
        pieces = [_pieces(heads), _pieces(values), self._stamps]
        size = sum(np.diff(at)[index] for (_, at), index in zip(pieces, (head, value, stamp)))
        ends = np.cumsum(size)
        cuts = [0, *np.searchsorted(ends, np.arange(_BUFFER, int(ends[-1]), _BUFFER),
                                     side="right").tolist(), len(ends)]
        need = min(int(ends[-1]), _BUFFER + int(size.max()))
        if len(self._buffer) < need:    # one buffer for the file: no page faults per family
            self._buffer = np.empty(need, dtype=np.uint8)
        buffer = self._buffer
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            if hi > lo:
                used = _lines(*pieces[0], *pieces[1], *pieces[2], head[lo:hi], value[lo:hi],
                              stamp[lo:hi], buffer)
                self.out.write(memoryview(buffer)[:used])

    def columns(self, heads: Sequence[str], values: np.ndarray, integer: bool,
                thin: bool = True) -> None:
        """Series ``heads[j]`` with the values ``values[:, j]`` (samples x series),
        one after the other; ``thin``: a sample at every change of value, an
        unchanged value again every ``every`` samples and at the last."""
        k = len(values)
        if not len(heads) or not k:
            return
        every = self.every
        if not thin:
            self.every = 1
        changed = np.ones(values.shape, dtype=bool)
        changed[1:] = values[1:] != values[:-1]
        if values.dtype.kind == "f":        # NaN after NaN is no change (NaN != NaN)
            changed[1:] &= ~(np.isnan(values[1:]) & np.isnan(values[:-1]))
        series, start = np.nonzero(changed.T)       # each run of one value, by series
        stop = np.append(start[1:], k)
        stop[np.flatnonzero(np.diff(series))] = k      # a series' last run ends with the file
        # each distinct value formatted once (NaNs are one value here: all "NaN")
        distinct, which = np.unique(values[start, series], return_inverse=True)
        texts = [f" {_number(v, integer)}".encode() for v in distinct.tolist()]
        self._runs([h.encode() for h in heads], texts, series, which.reshape(-1), start, stop)
        self.every = every
        self.counts[0] += len(heads)

    def column(self, head: str, values: np.ndarray, integer: bool, thin: bool = False) -> None:
        """One series, every sample unless ``thin``."""
        self.columns([head], np.asarray(values).reshape(-1, 1), integer, thin)

    def spans(self, heads: Sequence[str], values: np.ndarray, first: np.ndarray,
              stop: np.ndarray) -> None:
        """Series ``heads[j]`` holding the integer ``values[j]`` at samples
        ``first[j]`` .. ``stop[j] - 1`` (thinned: the first, every ``every``-th,
        and the run's last instant when the series lasts to it)."""
        first, stop = np.asarray(first), np.asarray(stop)
        live = np.flatnonzero(stop > first)
        distinct, which = np.unique(np.asarray(values)[live], return_inverse=True)
        self._runs([heads[i].encode() for i in live.tolist()],
                   [f" {int(v)}".encode() for v in distinct.tolist()],
                   np.arange(len(live)), which.reshape(-1), first[live], stop[live])
        self.counts[0] += len(live)


def _pieces(items: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``items`` as one byte array and the offsets of each (``len(items) + 1``)."""
    at = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in items], out=at[1:])
    return np.frombuffer(b"".join(items), dtype=np.uint8), at


def _number(value, integer: bool) -> str:
    if integer:
        return str(int(value))
    value = float(value)
    if math.isnan(value):
        return "NaN"
    return repr(value) if not value.is_integer() else str(int(value))


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    """``{a="x",b="y"}`` sorted by name as Go's exposition writes them, values escaped."""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(pairs)) + "}"


def _escape(value: str) -> str:
    if "\\" not in value and '"' not in value and "\n" not in value:
        return value
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


#: HAMi's per-card families: name, HELP, extra labels beyond
#: node/device_uuid/device_index/device_type (metrics.go collectNodeMetrics)
_CARD_FAMILIES = (
    ("hami_gpu_memory_limit_bytes", "Device memory limit for a certain GPU", (), "memory_limit"),
    ("hami_gpu_core_limit_ratio", "Device core limit for a certain GPU", (), "core_limit"),
    ("hami_gpu_memory_allocated_bytes", "Device memory allocated for a certain GPU",
     ("device_cores",), "memory"),
    ("hami_gpu_shared_count", "Number of containers sharing this GPU", (), "count"),
    ("hami_gpu_core_allocated_ratio", "Device core allocated for a certain GPU", (), "cores"),
    ("hami_node_gpu_overview", "GPU overview on a certain node",
     ("device_cores", "device_memory_limit"), "memory"),
    ("hami_node_gpu_memory_allocated_ratio", "GPU Memory Allocated Percentage on a certain GPU",
     (), "memory_ratio"),
)


class _Series:
    """The run's per-card usage on the sample grid, from the pods' allocations."""

    def __init__(self, cluster: Cluster, pods: pd.DataFrame, grid: np.ndarray,
                 namespaces: Mapping[str, str]) -> None:
        self.grid = grid
        self.namespaces = namespaces
        self._block: tuple[tuple[int, int], dict[str, np.ndarray]] | None = None
        cards = [(node.name, card) for node in cluster.nodes for card in node.cards]
        self.cards = cards
        self.devmem = np.array([c.devmem for _, c in cards], dtype=np.int64)
        self.devcore = np.array([c.devcore for _, c in cards], dtype=np.int64)
        #: GPUs (hamisim.devices): HAMi lists every registered card, hamisim's own
        #: figures count only these
        self.gpu = np.array(simulated_flags(c for _, c in cards), dtype=bool)
        column = {c.id: i for i, (_, c) in enumerate(cards)}
        bound = pods[pods["bind"].notna() & pods["devices"].notna()]
        k = len(grid)
        # the sample range [first, stop) of each bound pod: bound at or before the
        # sample instant, not yet gone at it
        first = np.searchsorted(grid, bound["bind"].to_numpy(dtype=float), side="left")
        gone = bound["departure"].to_numpy(dtype=float)
        stop = np.where(np.isnan(gone), k, np.searchsorted(grid, np.nan_to_num(gone),
                                                             side="left"))
        self.pod_first, self.pod_stop = first, stop
        self.pod_rows = bound
        # one entry per (pod, container, card) of the annotations
        rows, ctr, col, mem, core = [], [], [], [], []
        for i, text in enumerate(bound["devices"].tolist()):
            # several device families: their values joined by a space after a ';'
            for value in text.split("; "):
                for c, container in enumerate(value.rstrip(";").split(";")):
                    for entry in container.split(":")[:-1]:
                        uuid, _, used_mem, used_cores = entry.split(",")
                        rows.append(i)
                        ctr.append(c)
                        col.append(column[uuid])
                        mem.append(int(used_mem))
                        core.append(int(used_cores))
        self.e_row = np.array(rows, dtype=np.int64)
        self.e_ctr = np.array(ctr, dtype=np.int64)
        self.e_col = np.array(col, dtype=np.int64)
        self.e_mem = np.array(mem, dtype=np.int64)
        self.e_core = np.array(core, dtype=np.int64)
        self.e_first = first[self.e_row] if len(rows) else np.zeros(0, dtype=np.int64)
        self.e_stop = stop[self.e_row] if len(rows) else np.zeros(0, dtype=np.int64)
        order = np.argsort(self.e_col, kind="stable")
        for name in ("e_row", "e_ctr", "e_col", "e_mem", "e_core", "e_first", "e_stop"):
            setattr(self, name, getattr(self, name)[order])

    # -- per card ------------------------------------------------------------------
    def usage(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        """(samples, cards lo..hi) memory MiB, cores and container entries in use
        (the last block asked is kept: every family reads it)."""
        if self._block is not None and self._block[0] == (lo, hi):
            return self._block[1]
        k = len(self.grid)
        a, b = np.searchsorted(self.e_col, [lo, hi])
        cols = self.e_col[a:b] - lo
        out = {}
        for name, weight in (("mem", self.e_mem[a:b]), ("core", self.e_core[a:b]),
                             ("count", np.ones(b - a, dtype=np.int64))):
            delta = np.zeros((k + 1, hi - lo), dtype=np.int64)
            np.add.at(delta, (self.e_first[a:b], cols), weight)
            np.add.at(delta, (self.e_stop[a:b], cols), -weight)
            out[name] = np.cumsum(delta, axis=0)[:k]
        self._block = ((lo, hi), out)
        return out

    def write(self, w: _Writer, ts: pd.DataFrame) -> None:
        """Every family, in a fixed order."""
        n_cards = len(self.cards)
        k = len(self.grid)
        block = max(1, _BLOCK_CELLS // max(k, 1))
        amd = np.array([_amd(c.type, c.devcore) for _, c in self.cards], dtype=bool)
        # the label sets of the card families, written out once per card
        label_sets = {}
        base = ("node", "device_uuid", "device_index", "device_type", "zone")
        more = {"device_cores": self.devcore.tolist(), "device_memory_limit": self.devmem.tolist()}
        for extra in {extra for _, _, extra, _ in _CARD_FAMILIES}:
            form = w.template(base + extra)
            label_sets[extra] = [
                form(node, card.id, str(card.index), card.type, HAMI_ZONE,
                     *(str(more[key][i]) for key in extra))
                for i, (node, card) in enumerate(self.cards)]
        for name, help_text, extra, what in _CARD_FAMILIES:
            w.family(name, "gauge", help_text)
            for lo in range(0, n_cards, block):
                hi = min(lo + block, n_cards)
                used = self.usage(lo, hi)
                devmem, devcore = self.devmem[lo:hi], self.devcore[lo:hi]
                heads = [name + text for text in label_sets[extra][lo:hi]]
                if what == "memory_limit":
                    values = np.broadcast_to(devmem * _MIB, (k, hi - lo))
                elif what == "core_limit":
                    values = np.broadcast_to(np.where(amd[lo:hi], 100, devcore), (k, hi - lo))
                elif what == "memory":
                    values = used["mem"] * _MIB
                elif what == "count":
                    values = used["count"]
                elif what == "cores":
                    values = np.where(amd[lo:hi], np.ceil(used["core"] / np.maximum(devcore, 1)
                                                          * 100).astype(np.int64),
                                      used["core"])
                else:                   # HAMi skips the ratio of a card without memory
                    has = np.flatnonzero(devmem > 0)
                    w.columns([heads[j] for j in has.tolist()],
                              used["mem"][:, has] / devmem[has], False)
                    continue
                w.columns(heads, values, True)
        self._containers(w)
        self._scheduler(w, ts)
        self._hamisim(w, ts)

    # -- per container ---------------------------------------------------------------
    def _containers(self, w: _Writer) -> None:
        """HAMi's collectContainerMetrics: one series per pod, container and card
        while the pod holds it (memory summed where one container has two
        instances of a MIG card)."""
        entries = pd.DataFrame({"row": self.e_row, "ctr": self.e_ctr, "col": self.e_col,
                                "mem": self.e_mem, "core": self.e_core})
        merged = entries.groupby(["row", "ctr", "col"], sort=True).sum().reset_index()
        r_all = merged["row"].to_numpy()
        c_all = merged["col"].to_numpy()
        # each pod's and card's label values escaped once, not once per series
        rows = self.pod_rows
        names, nodes = rows["pod"].tolist(), rows["node"].tolist()
        pod_labels = {}
        for r in np.unique(r_all).tolist():
            pod = names[r]
            namespace = self.namespaces.get(pod, "default")
            if pod.startswith(namespace + "/"):   # imported pods are named namespace/name
                pod = pod[len(namespace) + 1:]
            pod_labels[r] = (_escape(namespace), _escape(nodes[r]), _escape(pod))
        uuids = [_escape(card.id) for _, card in self.cards]
        form = w.template(("namespace", "node", "pod", "container_index", "device_uuid", "zone"),
                          escaped=True)
        zone = _escape(HAMI_ZONE)
        texts = [form(*pod_labels[r], str(c), uuids[col], zone)
                 for r, c, col in zip(r_all.tolist(), merged["ctr"].tolist(), c_all.tolist())]
        first, stop = self.pod_first[r_all], self.pod_stop[r_all]
        amd = np.array([_amd(card.type, card.devcore) for _, card in self.cards], dtype=bool)
        core = merged["core"].to_numpy()
        devcore = np.maximum(self.devcore[c_all], 1)
        for name, help_text, values in (
                ("hami_vgpu_memory_allocated_bytes", "vGPU memory allocated from a container",
                 merged["mem"].to_numpy() * _MIB),
                ("hami_vgpu_core_allocated_ratio", "vGPU core allocated from a container",
                 np.where(amd[c_all], np.ceil(core / devcore * 100), core).astype(np.int64))):
            w.family(name, "gauge", help_text)
            w.spans([name + text for text in texts], values, first, stop)

    # -- kube-scheduler ------------------------------------------------------------
    def _at_samples(self, ts: pd.DataFrame) -> np.ndarray:
        """The time-series row of each sample: the last at or before it (-1: none yet)."""
        return np.searchsorted(ts["time"].to_numpy(dtype=float), self.grid, side="right") - 1

    def _step(self, ts: pd.DataFrame, column: str, rows: np.ndarray) -> np.ndarray:
        values = ts[column].to_numpy()
        return np.where(rows >= 0, values[np.maximum(rows, 0)], 0)

    def _scheduler(self, w: _Writer, ts: pd.DataFrame) -> None:
        rows = self._at_samples(ts)
        w.family("scheduler_pending_pods", "gauge",
                 "Number of pending pods, by the queue type. 'active' means number of pods in "
                 "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
                 "number of pods in unschedulablePods that the scheduler attempted to schedule "
                 "and failed; 'gated' is the number of unschedulable pods that the scheduler "
                 "never attempted to schedule because they are gated.")
        for queue, column in (("active", "pods_pending_active"),
                              ("backoff", "pods_pending_backoff"),
                              ("unschedulable", "pods_pending_unschedulable"), ("gated", None)):
            values = self._step(ts, column, rows) if column else np.zeros(len(rows), np.int64)
            w.column(w.head("scheduler_pending_pods", [("queue", queue)]), values, True)
        w.family("scheduler_schedule_attempts", "counter",
                 "Number of attempts to schedule pods, by the result. 'unschedulable' means a "
                 "pod could not be scheduled, while 'error' means an internal scheduler "
                 "problem.")
        for result in ("scheduled", "unschedulable", "error"):
            w.column(w.head("scheduler_schedule_attempts_total",
                            [("profile", SCHEDULER_PROFILE), ("result", result)]),
                     self._step(ts, f"attempts_{result}", rows), True)

    # -- what only the simulator knows ------------------------------------------------
    def _hamisim(self, w: _Writer, ts: pd.DataFrame) -> None:
        rows = self._at_samples(ts)
        # before the first row the fragmentation is the first row's (no event yet)
        clamped = np.maximum(rows, 0)
        for name, help_text, column in _HAMISIM_GAUGES:
            w.family(name, "gauge", help_text)
            w.column(w.head(name), ts[column].to_numpy(dtype=float)[clamped], False)
        w.family("hamisim_gpu_zero_tenant_cards", "gauge",
                 "Cards with no container on them (what HAMi's mutex policy asks for)")
        zero = np.zeros(len(self.grid), dtype=np.int64)
        block = max(1, _BLOCK_CELLS // max(len(self.grid), 1))
        for lo in range(0, len(self.cards), block):
            hi = min(lo + block, len(self.cards))
            zero += ((self.usage(lo, hi)["count"] == 0) & self.gpu[lo:hi]).sum(axis=1)
        w.column(w.head("hamisim_gpu_zero_tenant_cards"), zero, True)
        w.family("hamisim_pods", "gauge", "Pods by state: pending (created, not bound) "
                 "or running (bound, not yet gone)")
        for state in ("pending", "running"):
            w.column(w.head("hamisim_pods", [("state", state)]),
                     self._step(ts, f"pods_{state}", rows), True)
        for event, help_text in (("arrived", "Pods created so far"),
                                 ("departed", "Pods gone after running (finished, deleted "
                                              "or preempted) so far"),
                                 ("abandoned", "Pods gone before they were bound so far")):
            name = f"hamisim_pods_{event}"
            w.family(name, "counter", help_text)
            w.column(w.head(name + "_total"), self._step(ts, f"pods_{event}", rows), True)
        self._topology(w)

    def _topology(self, w: _Writer) -> None:
        """Running pods with several cards, and those whose cards span NUMA nodes
        or PCIe switches (nodes with a described topology only)."""
        rows = self.pod_rows
        k = len(self.grid)
        gpus = _column(rows, "gpus")
        for name, help_text, column in (
                ("hamisim_multi_gpu_pods_running", "Running pods holding several cards of a "
                 "node with a described topology", None),
                ("hamisim_multi_gpu_pods_cross_numa", "Running multi-card pods whose cards "
                 "sit on more than one NUMA node", "numa_nodes"),
                ("hamisim_multi_gpu_pods_cross_pcie_switch", "Running multi-card pods whose "
                 "cards sit under more than one PCIe switch", "pcie_switches")):
            chosen = gpus > 1
            if column is not None:
                chosen &= _column(rows, column) > 1
            delta = np.zeros(k + 1, dtype=np.int64)
            np.add.at(delta, self.pod_first[chosen], 1)
            np.add.at(delta, self.pod_stop[chosen], -1)
            w.family(name, "gauge", help_text)
            w.column(w.head(name), np.cumsum(delta)[:k], True)


def _column(rows: pd.DataFrame, name: str) -> np.ndarray:
    if name not in rows:
        return np.zeros(len(rows))
    return np.nan_to_num(rows[name].to_numpy(dtype=float))


def _amd(card_type: str, total: int) -> bool:
    """HAMi's normalizeAMDCoreMetrics applies (AMD cards count compute units)."""
    return card_type.upper().startswith("AMD") and total > 0


#: cluster-wide figures of the time series (DESIGN §3)
_HAMISIM_GAUGES = (
    ("hamisim_gpu_unallocated_gpus", "Unallocated GPU capacity, in GPUs (FGD's measure)",
     "unallocated_gpu"),
    ("hamisim_gpu_fragmented_gpus", "Free capacity the typical pod shapes cannot use where "
     "it is (FGD fragmentation), in GPUs", "frag_gpu"),
    ("hamisim_gpu_stranded_gpus", "Fragmented capacity that placements caused, in GPUs",
     "stranded_gpu"),
    ("hamisim_gpu_unfit_gpus", "Fragmented capacity no placement caused (unusable even on an "
     "empty node), in GPUs", "unfit_gpu"),
)
