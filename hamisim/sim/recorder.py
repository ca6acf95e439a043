"""What a run leaves behind: the event log and the time series, kept columnar.

:class:`Recorder` appends one row per scheduling event (``arrive``, ``bind``,
``unschedulable``, ``depart``, ``abandon``; DESIGN §5) and one time-series row
per event time, and builds the two pandas tables once, at the end.
"""
from __future__ import annotations

from array import array
from typing import Sequence

import numpy as np
import pandas as pd

from hamisim.sim.metrics import TIMESERIES_COLUMNS

__all__ = ["Recorder", "EVENT_COLUMNS", "EVENT_KINDS", "INITIAL_STATE_MESSAGE"]

#: Columns of the events table, in order.
EVENT_COLUMNS = ("time", "pod", "event", "node", "devices", "message")
#: The values of its ``event`` column.
EVENT_KINDS = ("arrive", "bind", "unschedulable", "depart", "abandon")
#: ``message`` of the ``bind`` rows a run writes for the pods of its initial state.
INITIAL_STATE_MESSAGE = "initial state"


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
