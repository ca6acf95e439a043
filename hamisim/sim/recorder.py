"""What a run leaves behind: the event log and the pods table, streamed in batches.

:class:`Recorder` appends one row per scheduling event (``arrive``, ``bind``,
``unschedulable``, ``depart``, ``abandon``; DESIGN §5) — by default a pod's failed
attempts with one message as one ``unschedulable`` row with their ``count`` and
first and last time, kept open while the pod is pending (memory grows with the
pending pods' distinct messages, not with attempts) — and one row per pod when
its story ends (departure or abandonment; the pods still pending or running
at the end come last), into typed arrays. Every :data:`BATCH_ROWS` rows the
batch is handed to a *sink* as a pandas DataFrame and the arrays start
afresh, so a long run holds one batch of each table, not the whole log: a
sink that writes files (``hamisim.io.outputs.TableFiles``) keeps memory flat,
:class:`MemorySink` keeps the batches for an in-memory result. The same rows
come out whatever the sink. The time series is kept by the compiled meter
(:meth:`hamisim.sim.metrics.ClusterMeter.sample`); per node group, rows of raw
sums are kept here (:meth:`Recorder.sample_groups`).
"""
from __future__ import annotations

from array import array
from typing import Mapping, Protocol, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hamisim.sim.metrics import GROUP_TIMESERIES_COLUMNS
from hamisim.sim.placement import PLACEMENT_COLUMNS, MigMeter, PlacementMeter

__all__ = ["Recorder", "MemorySink", "TableSink", "EVENT_COLUMNS", "EVENT_KINDS", "EVENTS_MODES",
           "POD_COLUMNS", "INITIAL_STATE_MESSAGE", "INITIAL_STATE_CLASS", "BATCH_ROWS"]

#: Columns of the events table, in order. ``count``: the occurrences the row
#: stands for (an aggregated ``unschedulable`` row: the pod's failed attempts with
#: that message; every other row 1); ``last_time``: the last of them (= ``time``,
#: the first, for a single occurrence).
EVENT_COLUMNS = ("time", "pod", "event", "node", "devices", "message", "count", "last_time")
#: values of the ``events`` setting: one ``unschedulable`` row per pod and distinct
#: message (default), or one per attempt
EVENTS_MODES = ("aggregated", "all")
#: The values of its ``event`` column.
EVENT_KINDS = ("arrive", "bind", "unschedulable", "depart", "abandon", "preempt", "rejected",
               "terminate", "move")
#: ``message`` of the ``bind`` rows a run writes for the pods of its initial state.
INITIAL_STATE_MESSAGE = "initial state"
#: ``class`` of those pods in the pods table (their requests are not known)
INITIAL_STATE_CLASS = "(initial state)"
#: Columns of the pods table, in order: one row per pod, in the order the pods'
#: stories ended (departure or abandonment), then the pods still pending or
#: running at the end of the run, in arrival order. ``wait_s`` is the pod's
#: pending time: arrival to bind, else to abandonment, else to the end of the
#: run; ``departure`` and ``abandon`` are times (NaN when it did not happen),
#: ``group`` the node group of its node, ``preempted_by`` the pod whose
#: preemption deleted it (null otherwise), ``mig_allocations`` HAMi's
#: ``hami.io/vgpu-mig-allocations`` of a pod holding MIG instances (null otherwise),
#: ``unplaceable`` whether no node could hold it even empty
#: (:mod:`hamisim.studies.unplaceable`) and ``unplaceable_reason`` why (null otherwise).
POD_COLUMNS = ("pod", "class", "arrival", "first_attempt", "bind", "wait_s", "node", "group",
               "devices", "attempts", "departure", "abandon", "preempted_by",
               *PLACEMENT_COLUMNS, "mig_allocations", "unplaceable", "unplaceable_reason")
#: rows per batch handed to the sink
BATCH_ROWS = 1 << 16

_NAN = float("nan")


class TableSink(Protocol):
    """Where the recorder's batches go: ``write("events" | "pods", table)``, each
    batch a :class:`pyarrow.Table` (built column by column at C speed, no pandas
    on the way). A sink with a true ``discards`` attribute gets no batches."""

    def write(self, name: str, table: pa.Table) -> None: ...


class MemorySink:
    """Keeps every batch; :meth:`table` joins them into one DataFrame."""

    def __init__(self) -> None:
        self.frames: dict[str, list[pa.Table]] = {}

    def write(self, name: str, table: pa.Table) -> None:
        self.frames.setdefault(name, []).append(table)

    def table(self, name: str, columns: Sequence[str]) -> pd.DataFrame:
        parts = self.frames.pop(name, [])
        if not parts:
            return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
        return pa.concat_tables(parts).to_pandas()


class Recorder:
    """Columnar event log and pods table, flushed to a sink in batches."""

    KINDS = EVENT_KINDS

    def __init__(self, node_names: Sequence[str], node_groups: Sequence[str],
                 sink: TableSink | None = None,
                 placement: PlacementMeter | None = None, mig: MigMeter | None = None,
                 unplaceable: Mapping[str, str] | None = None,
                 events: str = "aggregated") -> None:
        self.node_names = list(node_names)
        #: failed attempts as one row per pod and distinct message (``aggregated``)
        #: or one row per attempt (``all``)
        if events not in EVENTS_MODES:
            raise ValueError(f"events must be one of {', '.join(EVENTS_MODES)}, got {events!r}")
        self.aggregate = events == "aggregated"
        #: the open aggregates: pod -> message -> [first, last, count, creation number]
        self._open: dict[str, dict[str, list]] = {}
        self._opened = 0
        #: pod name -> why no node could hold it even empty (hamisim.studies.unplaceable);
        #: marked in the pods table and kept apart in the statistics
        self.unplaceable = dict(unplaceable or {})
        self._unplaceable_names = pa.array(list(self.unplaceable), pa.string())
        #: per pod, in pods-table order: 1 when unplaceable (pod_statistics)
        self.s_unplaceable = array("b")
        #: unplaceable pods by reason, in first-seen order: [pods, first names]
        self.unplaceable_reasons: dict[str, list] = {}
        #: running pods whose preemptor was an unplaceable pod
        self.unplaceable_preemptions = 0
        #: per pod, in pods-table order: its namespace's code (set_namespaces), and
        #: the namespaces by code; None until the engine names them
        self.s_namespace: array | None = None
        self.namespace_names: list[str] = []
        self._ns_pods: pa.Array | None = None
        self._ns_codes = np.zeros(0, dtype=np.int32)
        #: on a cluster of several device families: the cards each pod held
        #: (hamisim.sim.families) and, per pod in pods-table order, the families
        #: it asked for (set_families); None otherwise
        self.families = None
        self.s_family: array | None = None
        self._fam_pods: pa.Array | None = None
        self._fam_masks = np.zeros(0, dtype=np.uint32)
        #: measures multi-GPU pods' placements as their rows are written
        self.placement = placement
        #: reads MIG pods' instances as their rows are written (clusters with MIG cards)
        self.mig = mig if mig is not None and mig.active else None
        # names by code, for Arrow's take (code -1 is the null at the end)
        self._nodes = pa.array(self.node_names + [None], pa.string())
        self._groups = pa.array(list(node_groups) + [None], pa.string())
        self._node_code = {name: i for i, name in enumerate(self.node_names)}
        self._kind_code = {k: i for i, k in enumerate(self.KINDS)}
        self._kinds = pa.array(self.KINDS, pa.string())
        self.sink = sink if sink is not None else MemorySink()
        self.discards = bool(getattr(self.sink, "discards", False))
        self.n_events = 0
        self.last_time = 0.0                # of the last event (the run's end)
        self._new_events()
        self._new_pods()
        self.class_names: list[str] = []
        self._class_code: dict[str, int] = {}
        # per pod, what the statistics need (kept for the whole run: 25 bytes a pod)
        self.s_class = array("i")
        self.s_group = array("i")
        self.s_arrival = array("d")
        self.s_bind = array("d")
        self.s_end = array("d")
        # the per-group series: raw sums of finished times, flat, 7 per row, and the
        # rows of the current time by group (a later sample at the same time replaces
        # its groups' rows)
        self.group_times = array("d")
        self.group_rows = array("q")
        self._group_time: float | None = None
        self._group_now: dict[int, tuple] = {}

    # -- events ------------------------------------------------------------
    def _new_events(self) -> None:
        self.time = array("d")
        self.kind = array("b")
        self.node = array("q")             # index into node_names, -1 = none
        self.pod: list[str] = []
        # sparse columns: (rows of the batch that have a value, the values)
        self.devices: tuple[array, list[str]] = (array("q"), [])
        self.message: tuple[array, list[str]] = (array("q"), [])
        self.count = array("q")
        self.last = array("d")

    def __len__(self) -> int:
        return self.n_events

    def event(self, time, pod, event, node=None, devices=None, message=None) -> None:
        self.last_time = time
        if self.aggregate:
            # a failed attempt joins its pod's row for that message; the pod's rows
            # are written before its next row of another kind (its bind, its
            # abandonment), or at the end of the run (close_failed_attempts)
            if event == "unschedulable":
                open_ = self._open.setdefault(pod, {})
                entry = open_.get(message)
                if entry is None:
                    open_[message] = [time, time, 1, self._opened]
                    self._opened += 1
                else:
                    entry[1] = time
                    entry[2] += 1
                return
            if pod in self._open:
                self._close(pod, self._open.pop(pod))
        self._row(time, pod, event, node, devices, message, 1, time)

    def _close(self, pod: str, open_: dict[str, list]) -> None:
        for message, (first, last, count, _) in open_.items():
            self._row(first, pod, "unschedulable", None, None, message, count, last)

    def close_failed_attempts(self) -> None:
        """Write the aggregated rows still open (pods pending at the end of the run),
        in the order they were opened."""
        rows = [(entry[3], pod, message, entry) for pod, open_ in self._open.items()
                for message, entry in open_.items()]
        self._open = {}
        for _, pod, message, (first, last, count, _) in sorted(rows, key=lambda r: r[0]):
            self._row(first, pod, "unschedulable", None, None, message, count, last)

    def _row(self, time, pod, event, node, devices, message, count, last) -> None:
        row = len(self.pod)
        self.count.append(count)
        self.last.append(last)
        self.time.append(time)
        self.kind.append(self._kind_code[event])
        self.node.append(-1 if node is None else self._node_code[node])
        self.pod.append(pod)
        if devices is not None:
            self.devices[0].append(row)
            self.devices[1].append(devices)
        if message is not None:
            self.message[0].append(row)
            self.message[1].append(message)
        if row + 1 >= BATCH_ROWS:
            self.flush_events()

    def flush_events(self) -> None:
        """Hand the events recorded so far to the sink."""
        n = len(self.pod)
        if not n:
            return
        time = np.frombuffer(self.time, dtype=np.float64).copy()
        kind = np.frombuffer(self.kind, np.int8)
        node = np.frombuffer(self.node, dtype=np.int64)
        pod = np.array(self.pod, dtype=object)
        devices, message = _sparse(self.devices, n), _sparse(self.message, n)
        count = np.frombuffer(self.count, dtype=np.int64)
        last = np.frombuffer(self.last, dtype=np.float64)
        self._new_events()
        self.write_events(time, kind, node, pod, devices, message, count, last)

    def write_events(self, time: np.ndarray, kind: np.ndarray, node: np.ndarray,
                     pod, devices, message, count: np.ndarray, last_time: np.ndarray) -> None:
        """Hand a batch of events, given column by column, to the sink: ``kind``
        as codes into :data:`EVENT_KINDS`, ``node`` as node indices (-1 none),
        ``pod``, ``devices`` and ``message`` as Arrow string arrays or object
        arrays (None where empty), ``count`` and ``last_time`` as in
        :data:`EVENT_COLUMNS`. The compiled engine's path; :meth:`event` rows
        arrive here through :meth:`flush_events`. :attr:`last_time` is the
        caller's to keep."""
        self.n_events += len(time)
        if self.discards:
            return
        # copies: Arrow may share a NumPy buffer, and the callers reuse theirs
        table = pa.table([pa.array(np.array(time, dtype=np.float64)), _strings(pod),
                          self._kinds.take(np.asarray(kind, dtype=np.int64)),
                          self._nodes.take(self._node_take(node)),
                          _strings(devices), _strings(message),
                          pa.array(np.array(count, dtype=np.int64)),
                          pa.array(np.array(last_time, dtype=np.float64))],
                         names=list(EVENT_COLUMNS))
        self.sink.write("events", table)

    def _node_take(self, node) -> np.ndarray:
        node = np.asarray(node, dtype=np.int64)
        return np.where(node < 0, len(self.node_names), node)

    # -- pods --------------------------------------------------------------
    def _new_pods(self) -> None:
        self.p_name: list[str] = []
        self.p_class = array("i")
        self.p_arrival = array("d")
        self.p_first = array("d")
        self.p_bind = array("d")
        self.p_node = array("q")
        self.p_devices: list[str | None] = []
        self.p_attempts = array("q")
        self.p_end = array("d")
        self.p_preempted_by: list[str | None] = []
        self.p_mig: list[str | None] = []

    def class_code(self, label: str) -> int:
        """The code of a class label (made on first use)."""
        code = self._class_code.get(label)
        if code is None:
            code = self._class_code[label] = len(self.class_names)
            self.class_names.append(label)
        return code

    def pod_done(self, name: str, class_code: int, arrival: float, first_attempt: float,
                 bind: float, node: int, devices: str | None, attempts: int,
                 end: float, preempted_by: str | None = None,
                 mig_allocations: str | None = None) -> None:
        """A pod's row: it left at ``end`` (departure when bound, abandonment
        otherwise), or the run is over (``end`` NaN); ``preempted_by``: the
        preemptor when a preemption deleted it."""
        self.p_name.append(name)
        self.p_class.append(class_code)
        self.p_arrival.append(arrival)
        self.p_first.append(first_attempt)
        self.p_bind.append(bind)
        self.p_node.append(node)
        self.p_devices.append(devices)
        self.p_attempts.append(attempts)
        self.p_end.append(end)
        self.p_preempted_by.append(preempted_by)
        self.p_mig.append(mig_allocations)
        self.s_class.append(class_code)
        self.s_group.append(node)           # a node index until statistics() maps it
        self.s_arrival.append(arrival)
        self.s_bind.append(bind)
        self.s_end.append(end)
        if len(self.p_name) >= BATCH_ROWS:
            self.flush_pods()

    def flush_pods(self, end_time: float | None = None) -> None:
        """Hand the pods recorded so far to the sink; ``end_time`` ends the waits of
        the pods still pending (at the end of the run)."""
        n = len(self.p_name)
        if not n:
            return
        cols = (np.array(self.p_name, dtype=object),
                np.frombuffer(self.p_class, dtype=np.int32),
                np.frombuffer(self.p_arrival, dtype=np.float64),
                np.frombuffer(self.p_first, dtype=np.float64),
                np.frombuffer(self.p_bind, dtype=np.float64),
                np.frombuffer(self.p_node, dtype=np.int64),
                np.array(self.p_devices, dtype=object),
                np.frombuffer(self.p_attempts, dtype=np.int64),
                np.frombuffer(self.p_end, dtype=np.float64))
        preempted_by = np.array(self.p_preempted_by, dtype=object) \
            if any(x is not None for x in self.p_preempted_by) else None
        mig = np.array(self.p_mig, dtype=object) \
            if any(x is not None for x in self.p_mig) else None
        self.write_pods(*cols, end_time=end_time, preempted_by=preempted_by,
                        mig_allocations=mig)
        self._new_pods()

    def write_pods(self, name: np.ndarray, class_code: np.ndarray, arrival: np.ndarray,
                   first_attempt: np.ndarray, bind: np.ndarray, node: np.ndarray,
                   devices: np.ndarray, attempts: np.ndarray, end: np.ndarray,
                   end_time: float | None = None, preempted_by=None,
                   mig_allocations=None) -> None:
        """Hand a batch of pods' rows, given column by column (as :meth:`pod_done`
        takes them), to the sink; ``end_time`` as in :meth:`flush_pods`. The
        statistics' columns are not kept: give them to :meth:`set_pod_statistics`."""
        device_texts = _strings(devices)
        where = self.placement.measure(np.asarray(node), device_texts) \
            if self.placement is not None else None
        if self.mig is not None and mig_allocations is not None:
            self.mig.collect(np.asarray(bind, dtype=np.float64),
                             np.asarray(end, dtype=np.float64), list(mig_allocations))
        flags, reasons = self._mark_unplaceable(_strings(name), preempted_by)
        self._mark_namespaces(_strings(name))
        self._mark_families(_strings(name))
        arrival = np.array(arrival, dtype=np.float64)
        bind = np.array(bind, dtype=np.float64)
        end = np.array(end, dtype=np.float64)
        if self.families is not None:
            self.families.collect(device_texts, bind, end if end_time is None
                                  else np.where(np.isnan(end), end_time, end))
        if self.discards:
            return
        take = self._node_take(node)
        bound = ~np.isnan(bind)
        stop = end if end_time is None else np.where(np.isnan(end), end_time, end)
        labels = pa.array(self.class_names, pa.string())
        nan_null = {"from_pandas": True}    # NaN (did not happen) is written as null
        cols = [
            _strings(name),
            labels.take(np.asarray(class_code, dtype=np.int64)),
            pa.array(arrival, **nan_null),
            pa.array(np.array(first_attempt, dtype=np.float64), **nan_null),   # a copy
            pa.array(bind, **nan_null),
            pa.array(np.where(bound, bind, stop) - arrival, **nan_null),
            self._nodes.take(take),
            self._groups.take(take),
            device_texts,
            pa.array(np.array(attempts, dtype=np.int64)),
            pa.array(np.where(bound, end, np.nan), **nan_null),
            pa.array(np.where(bound, np.nan, end), **nan_null),
            pa.nulls(len(arrival), pa.string()) if preempted_by is None
            else _strings(preempted_by),
        ]
        for c in PLACEMENT_COLUMNS:
            kind = pa.float64() if c == "mean_pair_score" else pa.int64()
            cols.append(pa.nulls(len(arrival), kind) if where is None
                        else pa.array(where[c], **nan_null).cast(kind))
        cols.append(pa.nulls(len(arrival), pa.string()) if mig_allocations is None
                    else _strings(mig_allocations))
        cols += [pa.array(flags.astype(bool)), reasons]
        self.sink.write("pods", pa.table(cols, names=list(POD_COLUMNS)))

    def _mark_unplaceable(self, names: pa.Array, preempted_by) -> tuple[np.ndarray, pa.Array]:
        """A batch's ``unplaceable`` flags and reasons (kept for the statistics and
        the per-reason counts), and the victims whose preemptor was unplaceable."""
        n = len(names)
        if not self.unplaceable:
            self.s_unplaceable.frombytes(bytes(n))
            return np.zeros(n, dtype=np.int8), pa.nulls(n, pa.string())
        hit = pc.is_in(names, value_set=self._unplaceable_names)
        flags = np.asarray(hit.to_numpy(zero_copy_only=False), dtype=np.int8)
        self.s_unplaceable.frombytes(flags.tobytes())
        reasons = np.full(n, None, dtype=object)
        for i in np.flatnonzero(flags).tolist():
            name = names[i].as_py()
            reason = reasons[i] = self.unplaceable[name]
            entry = self.unplaceable_reasons.setdefault(reason, [0, []])
            entry[0] += 1
            if len(entry[1]) < 5:
                entry[1].append(name)
        if preempted_by is not None:
            by = pc.is_in(_strings(preempted_by), value_set=self._unplaceable_names)
            self.unplaceable_preemptions += int(pc.sum(by).as_py() or 0)
        return flags, _strings(reasons)

    def set_families(self, meter, names: Sequence[str], template: np.ndarray,
                     template_masks: np.ndarray) -> None:
        """A mixed cluster's per-family books: ``meter`` (a
        :class:`hamisim.sim.families.FamilyMeter`) reads the pods' allocations,
        and pod ``names[i]`` asked for the families ``template_masks[template[i]]``
        (:func:`hamisim.sim.families.pod_families`); a pod not named here (an
        initial state's) asked none. Call before the first pods are written."""
        self.families = meter
        self._fam_pods = pa.array(list(names), pa.string())
        self._fam_masks = np.append(np.asarray(template_masks, dtype=np.uint32)[
            np.asarray(template, dtype=np.int64)], np.uint32(0)).astype(np.uint32)
        self.s_family = array("I")

    def _mark_families(self, names: pa.Array) -> None:
        if self.s_family is None:
            return
        at = pc.index_in(names, value_set=self._fam_pods)
        idx = np.asarray(pc.fill_null(at, len(self._fam_masks) - 1).to_numpy(
            zero_copy_only=False), dtype=np.int64)
        self.s_family.frombytes(self._fam_masks[idx].tobytes())

    def set_namespaces(self, names: Sequence[str], template: np.ndarray,
                       template_namespaces: Sequence[str]) -> None:
        """The trace's pods' namespaces (pod ``names[i]`` has template ``template[i]``,
        whose namespace is ``template_namespaces[template[i]]``: a
        :class:`~hamisim.workload.Trace`'s ``names``, ``template`` and its templates'
        ``namespace``), for the per-namespace waits (``results.namespaces``); a pod
        not named here (an initial state's) counts as ``default``. Call before the
        first pods are written."""
        labels = sorted(set(template_namespaces) | {"default"})
        code = {ns: i for i, ns in enumerate(labels)}
        per_template = np.array([code[ns] for ns in template_namespaces], dtype=np.int32)
        self.namespace_names = labels
        self._ns_pods = pa.array(list(names), pa.string())
        self._ns_codes = np.append(per_template[np.asarray(template, dtype=np.int64)],
                                   np.int32(code["default"])).astype(np.int32)
        self.s_namespace = array("i")

    def _mark_namespaces(self, names: pa.Array) -> None:
        if self.s_namespace is None:
            return
        at = pc.index_in(names, value_set=self._ns_pods)
        # a pod the trace does not name (null index) takes the last code: default
        idx = np.asarray(pc.fill_null(at, len(self._ns_codes) - 1).to_numpy(
            zero_copy_only=False), dtype=np.int64)
        self.s_namespace.frombytes(self._ns_codes[idx].tobytes())

    def set_pod_statistics(self, class_code: np.ndarray, node: np.ndarray,
                           arrival: np.ndarray, bind: np.ndarray, end: np.ndarray) -> None:
        """The per-pod columns :meth:`pod_statistics` reads, in pods-table order, when
        the rows were written with :meth:`write_pods` (the compiled engine)."""
        self.s_class = np.ascontiguousarray(class_code, dtype=np.int32)
        self.s_group = np.ascontiguousarray(node, dtype=np.int32)
        self.s_arrival = np.ascontiguousarray(arrival, dtype=np.float64)
        self.s_bind = np.ascontiguousarray(bind, dtype=np.float64)
        self.s_end = np.ascontiguousarray(end, dtype=np.float64)

    def pod_statistics(self, node_group: np.ndarray, end_time: float) -> dict[str, np.ndarray]:
        """Per pod (in the pods table's order): ``class`` (label), ``group`` (code,
        -1 unbound), ``arrival``, ``wait`` (pending time), ``delay`` (queueing delay, NaN
        unbound), ``bound``, ``abandoned``, ``unplaceable`` (and ``namespace`` once
        :meth:`set_namespaces` named them); for
        :func:`hamisim.sim.stats.run_statistics`."""
        node = np.frombuffer(self.s_group, dtype=np.int32).astype(np.int64)
        arrival = np.frombuffer(self.s_arrival, dtype=np.float64)
        bind = np.frombuffer(self.s_bind, dtype=np.float64)
        end = np.frombuffer(self.s_end, dtype=np.float64)
        bound = ~np.isnan(bind)
        group = np.where(node >= 0, np.append(node_group, -1)[node], -1)
        labels = np.array(self.class_names, dtype=object)
        return {"class": labels[np.frombuffer(self.s_class, dtype=np.int32)] if len(labels)
                else np.zeros(0, dtype=object),
                "group": group,
                "wait": np.where(bound, bind, np.where(np.isnan(end), end_time, end)) - arrival,
                "delay": bind - arrival, "bound": bound, "arrival": arrival,
                "abandoned": ~bound & ~np.isnan(end),
                "unplaceable": np.frombuffer(self.s_unplaceable, dtype=np.int8).astype(bool),
                **({"namespace": np.array(self.namespace_names, dtype=object)[
                    np.frombuffer(self.s_namespace, dtype=np.int32)]}
                   if self.s_namespace is not None else {}),
                **({"family": np.frombuffer(self.s_family, dtype=np.uint32)}
                   if self.s_family is not None else {})}

    # -- per-group series ----------------------------------------------------
    def sample_groups(self, time: float, rows: Sequence[tuple]) -> None:
        """Per-group raw sums at ``time`` (rows of ``ClusterMeter.changed_groups``,
        keyed by their first field, the group code)."""
        if time != self._group_time:
            self._flush_groups()
            self._group_time = time
        for row in rows:
            self._group_now[row[0]] = row

    def set_group_rows(self, times, rows) -> None:
        """The per-group series as raw rows (flat, 7 per row) with their times,
        when they were kept elsewhere (the compiled engine)."""
        self._group_now = {}
        self.group_times = times
        self.group_rows = rows

    def _flush_groups(self) -> None:
        t = self._group_time
        for row in self._group_now.values():
            self.group_times.append(t)
            self.group_rows.extend(row)
        self._group_now = {}

    def groups_frame(self, meter) -> pd.DataFrame:
        """The per-group series (:data:`GROUP_TIMESERIES_COLUMNS`), the readings
        computed by ``meter.group_table`` from the raw sums."""
        self._flush_groups()
        raw = np.frombuffer(self.group_rows, dtype=np.int64).reshape(-1, 7)
        times = np.frombuffer(self.group_times, dtype=np.float64)
        table = pd.DataFrame(meter.group_table(times.copy(), raw),
                             columns=list(GROUP_TIMESERIES_COLUMNS))
        self.group_rows, self.group_times = array("q"), array("d")
        return table


def _strings(values) -> pa.Array:
    """An Arrow string array of ``values`` (an Arrow array already, or objects
    with None where empty)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    return pa.array(values, pa.string(), from_pandas=True)


def _sparse(values: tuple[array, list[str]], n: int) -> np.ndarray:
    rows, vals = values
    col = np.full(n, None, dtype=object)
    if vals:
        col[np.frombuffer(rows, dtype=np.int64)] = np.array(vals, dtype=object)
    return col
