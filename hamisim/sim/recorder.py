"""What a run leaves behind: the event log, the pods and the time series, kept columnar.

:class:`Recorder` appends one row per scheduling event (``arrive``, ``bind``,
``unschedulable``, ``depart``, ``abandon``; DESIGN §5), one row per pod (filled
in when the pod's story ends), one time-series row per event time and, on
clusters of several node groups, one row per group whose nodes changed; it
builds the pandas tables once, at the end.
"""
from __future__ import annotations

from array import array
from typing import Sequence

import numpy as np
import pandas as pd

from hamisim.sim.metrics import GROUP_TIMESERIES_COLUMNS, TIMESERIES_COLUMNS

__all__ = ["Recorder", "EVENT_COLUMNS", "EVENT_KINDS", "POD_COLUMNS", "INITIAL_STATE_MESSAGE",
           "INITIAL_STATE_CLASS"]

#: Columns of the events table, in order.
EVENT_COLUMNS = ("time", "pod", "event", "node", "devices", "message")
#: The values of its ``event`` column.
EVENT_KINDS = ("arrive", "bind", "unschedulable", "depart", "abandon")
#: ``message`` of the ``bind`` rows a run writes for the pods of its initial state.
INITIAL_STATE_MESSAGE = "initial state"
#: ``class`` of those pods in the pods table (their requests are not known)
INITIAL_STATE_CLASS = "(initial state)"
#: Columns of the pods table, in order: one row per pod in arrival order.
#: ``wait_s`` is the pod's pending time: arrival to bind, else to abandonment,
#: else to the end of the run; ``departure`` and ``abandon`` are times (NaN when
#: it did not happen), ``group`` the node group of its node.
POD_COLUMNS = ("pod", "class", "arrival", "first_attempt", "bind", "wait_s", "node", "group",
               "devices", "attempts", "departure", "abandon")


class Recorder:
    """Columnar event log and time series (one row per event time).

    Events are kept in typed arrays (time, kind and node as codes) plus the
    pod names; device annotations and messages, present on few rows, are kept
    sparsely. So an event costs a few dozen bytes and no Python object of its
    own besides its pod name, and the table is built once at the end.
    """

    KINDS = EVENT_KINDS

    def __init__(self, node_names: Sequence[str]) -> None:
        self.node_names = list(node_names)
        self._node_code = {name: i for i, name in enumerate(self.node_names)}
        self._kind_code = {k: i for i, k in enumerate(self.KINDS)}
        self.time = array("d")
        self.kind = array("b")
        self.node = array("q")             # index into node_names, -1 = none
        self.pod: list[str] = []
        # sparse columns: (rows that have a value, the values)
        self.devices: tuple[array, list[str]] = (array("q"), [])
        self.message: tuple[array, list[str]] = (array("q"), [])
        self.ts: dict[str, list] = {c: [] for c in TIMESERIES_COLUMNS}
        self.ts["gpu_arrived"] = []
        self.ts["queueing_delay_s"] = []
        # the per-group series: raw sums of finished times, flat, 7 per row, and the
        # rows of the current time by group (a later sample at the same time replaces
        # its groups' rows)
        self.group_times = array("d")
        self.group_rows = array("q")
        self._group_time: float | None = None
        self._group_now: dict[int, tuple] = {}
        # the pods, by row = arrival order; filled in by pod_done
        self.p_name: list[str] = []
        self.p_class = array("i")
        self.class_names: list[str] = []
        self._class_code: dict[str, int] = {}
        self.p_arrival = array("d")
        self.p_first = array("d")
        self.p_bind = array("d")
        self.p_node = array("q")
        self.p_devices: list[str | None] = []
        self.p_attempts = array("q")
        self.p_end = array("d")

    def __len__(self) -> int:
        return len(self.pod)

    def event(self, time, pod, event, node=None, devices=None, message=None) -> None:
        row = len(self.pod)
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

    def sample(self, time: float, counts: dict, reading: dict) -> None:
        ts = self.ts
        if ts["time"] and ts["time"][-1] == time:
            for col in ts:
                ts[col].pop()
        ts["time"].append(float(time))
        for k, v in counts.items():
            ts[k].append(v)
        for k, v in reading.items():
            ts[k].append(v)

    def sample_groups(self, time: float, rows: Sequence[tuple]) -> None:
        """Per-group raw sums at ``time`` (rows of ``ClusterMeter.changed_groups``,
        keyed by their first field, the group code)."""
        if time != self._group_time:
            self._flush_groups()
            self._group_time = time
        for row in rows:
            self._group_now[row[0]] = row

    def _flush_groups(self) -> None:
        t = self._group_time
        for row in self._group_now.values():
            self.group_times.append(t)
            self.group_rows.extend(row)
        self._group_now = {}

    # -- pods ------------------------------------------------------------
    def pod_arrive(self, name: str, pod_class: str, arrival: float) -> int:
        """A new pod's row (its number is the pod's arrival order)."""
        code = self._class_code.get(pod_class)
        if code is None:
            code = self._class_code[pod_class] = len(self.class_names)
            self.class_names.append(pod_class)
        nan = float("nan")
        self.p_name.append(name)
        self.p_class.append(code)
        self.p_arrival.append(arrival)
        self.p_first.append(nan)
        self.p_bind.append(nan)
        self.p_node.append(-1)
        self.p_devices.append(None)
        self.p_attempts.append(0)
        self.p_end.append(nan)
        return len(self.p_name) - 1

    def pod_done(self, row: int, first_attempt: float, bind: float, node: int,
                 devices: str | None, attempts: int, end: float) -> None:
        """What happened to the pod of ``row`` (``end``: its departure or abandonment,
        NaN when it was still pending or running at the end)."""
        self.p_first[row] = first_attempt
        self.p_bind[row] = bind
        self.p_node[row] = node
        self.p_devices[row] = devices
        self.p_attempts[row] = attempts
        self.p_end[row] = end

    def pods_frame(self, group_of_node: Sequence[str], end_time: float) -> pd.DataFrame:
        """The pods table (:data:`POD_COLUMNS`); empties the pod columns."""
        arrival = np.frombuffer(self.p_arrival, dtype=np.float64)
        bind = np.frombuffer(self.p_bind, dtype=np.float64)
        end = np.frombuffer(self.p_end, dtype=np.float64)
        node = np.frombuffer(self.p_node, dtype=np.int64)
        bound = ~np.isnan(bind)
        left = np.where(bound, bind, np.where(np.isnan(end), end_time, end))
        nodes = np.array(self.node_names + [None], dtype=object)
        groups = np.array(list(group_of_node) + [None], dtype=object)
        cols = {
            "pod": pd.Series(self.p_name, dtype=object),
            "class": pd.Series(np.array(self.class_names, dtype=object)[
                np.frombuffer(self.p_class, dtype=np.int32)] if self.class_names
                else np.zeros(0, dtype=object)),
            "arrival": arrival.copy(),
            "first_attempt": np.frombuffer(self.p_first, dtype=np.float64).copy(),
            "bind": bind.copy(),
            "wait_s": left - arrival,
            "node": nodes[node],
            "group": groups[node],
            "devices": pd.Series(self.p_devices, dtype=object),
            "attempts": np.frombuffer(self.p_attempts, dtype=np.int64).copy(),
            "departure": np.where(bound, end, np.nan),
            "abandon": np.where(bound, np.nan, end),
        }
        self.p_name, self.p_devices = [], []
        return pd.DataFrame(cols, columns=list(POD_COLUMNS))

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

    def _sparse(self, values: tuple[array, list[str]]) -> np.ndarray:
        rows, vals = values
        col = np.full(len(self.pod), None, dtype=object)
        if vals:
            col[np.frombuffer(rows, dtype=np.int64)] = np.array(vals, dtype=object)
        return col

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The event table and the time series. Empties the recorder: each
        column's source is dropped once converted, so the log is held about
        once, not twice, at the end of a long run."""
        nodes = np.array(self.node_names + [None], dtype=object)   # code -1 -> None
        cols = {
            "time": pd.Series(np.frombuffer(self.time, dtype=np.float64).copy()),
            "event": pd.Series(np.array(self.KINDS, dtype=object)[
                np.frombuffer(self.kind, np.int8)]),
            "node": pd.Series(nodes[np.frombuffer(self.node, dtype=np.int64)]),
        }
        self.time, self.kind, self.node = array("d"), array("b"), array("q")
        cols["devices"] = pd.Series(self._sparse(self.devices))
        self.devices = (array("q"), [])
        cols["message"] = pd.Series(self._sparse(self.message))
        self.message = (array("q"), [])
        cols["pod"] = pd.Series(self.pod)
        self.pod = []
        events = pd.DataFrame(cols, columns=list(EVENT_COLUMNS))
        ts = pd.DataFrame(self.ts)
        return events, ts
