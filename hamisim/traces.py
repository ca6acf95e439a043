"""Workloads: trace files (DESIGN §4.2), the openb pod lists, and workload transforms.

A :class:`Trace` is a list of :class:`TracePod` (a :class:`hamisim.pods.Pod`
plus its timing and source line). The engine consumes it through
:meth:`Trace.iter_arrivals`: pods sorted once by ``(arrival, file order)``.

Reading (:func:`read_trace`) picks the format by extension:

* ``.csv``: a header row of DESIGN §4.2 column names; an empty cell is an
  absent value. A CSV whose header starts with the openb columns
  ``name,cpu_milli,memory_mib,num_gpu,gpu_milli`` is an Alibaba openb pod
  list and goes to :func:`hamisim.openb.read_openb_pods` instead.
* ``.jsonl``: one JSON object per line, keyed by the same names (blank lines
  skipped); ``null`` is absent; JSON numbers must be finite and integers
  must be written without a decimal point.
* ``.parquet``: one column per name; null is absent. Integer columns may be
  stored as floating point (pandas does that for integer columns with
  missing values) as long as every value is integral.

Columns (all optional except ``name`` and ``arrival``): ``arrival`` (s, >= 0),
``duration`` (s, >= 0, runs once bound), ``deletion`` (absolute s, >=
``arrival``; wins over ``duration``), the pod columns of
:mod:`hamisim.podspec` (``gpu``, ``gpumem``, ``gpumem_percentage``,
``gpucores``, ``cpu_milli``, ``memory_mib``, ``priority``, ``gpu_policy``,
``node_policy``, ``use_gputype``, ``nouse_gputype``, ``use_gpuuuid``,
``nouse_gpuuuid``, ``numa_bind``, ``scoring_weights``) and, for pods the
flat columns cannot express, ``annotations`` / ``containers`` /
``init_containers`` (JSON values in JSON Lines; JSON text in a CSV or
Parquet cell). :func:`write_trace` uses those three only when needed.

Every problem is an :class:`hamisim.errors.InputError` printed as
``file:line: problem``: the physical line of the row in a CSV (header = line
1) or JSON Lines file; in a Parquet file, which has no lines, the message is
``file: row N: problem`` with ``N`` the 1-based data row. Nothing is
half-loaded; a trace with no pods is an error.

Transforms (all return new objects and never touch the input):

* :func:`retime`: Poisson arrivals at the rate that offers a target GPU
  load, each pod keeping its lifetime;
* :func:`fill_workload`: the FGD paper's "fill the cluster to X %" workload.

GPU amounts (:func:`gpu_request`) are in whole-card units; see there for how
a fractional request counts.
"""
from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ._documents import from_plain
from ._tabular import (csv_header, csv_records, first_line, parse_float_cell, parse_int_cell,
                       read_text, split_lines)
from .errors import InputError
from .policy import warn_pod_policies
from .pods import GPU, GPUCORES, GPUMEM, GPUMEM_PERCENTAGE, Container, Pod
from .podspec import CONTAINER_COLUMN_RESOURCES, TRACE_COLUMN_ANNOTATIONS, TRACE_POD_KEYS, \
    pod_from_document

__all__ = [
    "TracePod", "Trace", "TRACE_COLUMNS", "read_trace", "write_trace", "gpu_request",
    "lifetime", "poisson_rate", "offered_load", "retime", "fill_workload",
    # re-exported from hamisim.openb (loaded on first use)
    "read_openb_pods", "read_openb_nodes", "cluster_from_path", "OPENB_CARD_MEMORY_MIB",
]

_TIME_COLUMNS = ("arrival", "duration", "deletion")
_INT_COLUMNS = ("gpu", "gpumem", "gpumem_percentage", "gpucores", "cpu_milli", "memory_mib",
                "priority")
_JSON_COLUMNS = ("annotations", "containers", "init_containers")
#: Every column a native trace may have, in the order :func:`write_trace` writes them.
TRACE_COLUMNS: tuple[str, ...] = (
    "name", *_TIME_COLUMNS, "gpu", "gpumem", "gpumem_percentage", "gpucores", "cpu_milli",
    "memory_mib", *TRACE_COLUMN_ANNOTATIONS, "priority", *_JSON_COLUMNS)
assert set(TRACE_COLUMNS) == set(TRACE_POD_KEYS)
_FORMATS = {".csv": "csv", ".parquet": "parquet", ".jsonl": "jsonl"}
OPENB_POD_HEADER_PREFIX = "name,cpu_milli,memory_mib,num_gpu,gpu_milli"


# ---------------------------------------------------------------------------
# the model

@dataclass(frozen=True)
class TracePod:
    """One pod of a trace with its timing.

    ``arrival``: creation time (s). ``duration``: seconds the pod runs once
    bound (``None`` = to the end of the run). ``deletion``: absolute deletion
    time (s); when set it wins over ``duration`` and a pod still pending then
    is abandoned. ``line``: where the pod came from in its source file (the
    physical line; the 1-based data row for Parquet).
    """

    pod: Pod
    arrival: float
    duration: float | None = None
    deletion: float | None = None
    line: int = 0

    @property
    def name(self) -> str:
        return self.pod.name


@dataclass
class Trace:
    """A named list of pods in file order.

    ``format`` is ``csv``, ``parquet``, ``jsonl``, ``openb`` (an openb pod
    list) or ``derived`` (built by a transform); ``path`` is the source file
    (kept by transforms, whose pods keep their source lines).
    """

    name: str
    pods: list[TracePod]
    path: str | None = None
    format: str = "derived"
    description: str = ""

    def __len__(self) -> int:
        return len(self.pods)

    def __iter__(self) -> Iterator[TracePod]:
        """The pods in file order (for :func:`fill_workload` that is submission
        order); use :meth:`iter_arrivals` for arrival order."""
        return iter(self.pods)

    def iter_arrivals(self) -> Iterator[TracePod]:
        """The pods in ``(arrival, file order)`` order (one stable sort, O(n) when
        already sorted)."""
        return iter(sorted(self.pods, key=_arrival_key))

    def where(self, tp: TracePod) -> str:
        """``file:line`` (``file: row N`` for Parquet) of a pod, for messages."""
        if self.path is None:
            return f"{self.name}: pod {tp.name}"
        if self.format == "parquet":
            return f"{self.path}: row {tp.line}"
        return f"{self.path}:{tp.line}"

    def total_gpu_request(self, *, card_memory_mib: int | None = None) -> float:
        """Sum of :func:`gpu_request` over the pods, in cards."""
        return math.fsum(gpu_request(tp.pod, card_memory_mib=card_memory_mib)
                         for tp in self.pods)

    @property
    def has_timestamps(self) -> bool:
        """Whether any pod has a lifetime (``duration`` or ``deletion``)."""
        return any(tp.duration is not None or tp.deletion is not None for tp in self.pods)


def _arrival_key(tp: TracePod) -> float:
    return tp.arrival


def lifetime(tp: TracePod) -> float | None:
    """How long the pod lives: ``deletion - arrival`` when a deletion is given
    (it wins), else ``duration``; ``None`` when it runs to the end."""
    if tp.deletion is not None:
        return tp.deletion - tp.arrival
    return tp.duration


def _container_gpus(c: Container, card_memory_mib: int | None) -> float:
    n = c.value(GPU) or 0
    if n <= 0:
        return 0.0
    pct, mem, cores = c.value(GPUMEM_PERCENTAGE), c.value(GPUMEM), c.value(GPUCORES)
    if pct is not None and pct > 0:
        mem_share = min(pct, 100) / 100
    elif mem and card_memory_mib:
        mem_share = min(mem / card_memory_mib, 1.0)
    else:
        # No memory asked: HAMi (default_memory 0) grants the whole card memory.
        # gpumem in MiB without a card size: counted as a whole card.
        mem_share = 1.0
    core_share = min(max(cores, 0), 100) / 100 if cores is not None else 0.0
    return n * max(mem_share, core_share)


def gpu_request(pod: Pod, *, card_memory_mib: int | None = None) -> float:
    """The pod's GPU request in cards: Σ over containers of ``count × share``.

    ``share`` is the dominant fraction of one card the container holds: the
    larger of its memory share (``gpumem-percentage``/100; ``gpumem`` /
    ``card_memory_mib`` when a card size is given; 1 when no memory is asked,
    because HAMi then grants the whole card memory, and 1 for ``gpumem``
    without a card size) and its core share (``gpucores``/100). So a plain
    ``nvidia.com/gpu: 2`` is 2 cards, an openb pod with ``gpu_milli`` 810
    (percentage 81, cores 81) is 0.81. Init containers count as Kubernetes
    counts them: the pod holds max(Σ app containers, max init container).
    """
    app = sum(_container_gpus(c, card_memory_mib) for c in pod.containers)
    init = max((_container_gpus(c, card_memory_mib) for c in pod.init_containers), default=0.0)
    return max(app, init)


# ---------------------------------------------------------------------------
# reading

def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read a trace file (``.csv``, ``.parquet``, ``.jsonl``, or an openb pod list
    ``.csv``); raises :class:`InputError` on any problem."""
    name = os.fspath(path)
    ext = os.path.splitext(name)[1].lower()
    fmt = _FORMATS.get(ext)
    if fmt is None:
        raise InputError(name, None, f"unsupported trace file type '{ext or '(none)'}' "
                                     "(expected .csv, .parquet or .jsonl)")
    if fmt == "parquet":
        rows = _parquet_rows(name)
    else:
        text = read_text(name)
        if fmt == "csv" and first_line(text).strip().startswith(OPENB_POD_HEADER_PREFIX):
            from .openb import openb_pods_from_text
            return openb_pods_from_text(text, name)
        rows = _csv_rows(text, name) if fmt == "csv" else _jsonl_rows(text, name)
    pods = _build(rows, name, fmt)
    trace = Trace(name=_stem(name), pods=pods, path=name, format=fmt)
    warn_pod_policies((trace.where(tp), tp.pod.annotations) for tp in pods)
    return trace


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


# A raw row: (line, or 1-based row for Parquet; present values by column).
_Row = tuple[int, dict[str, Any]]


def _csv_rows(text: str, path: str) -> Iterator[_Row]:
    columns = csv_header(text, path)
    _check_columns(columns, path, 1)
    name_at = columns.index("name")
    for line, fields in csv_records(text, path, len(columns)):
        row: dict[str, Any] = {}
        name = fields[name_at].strip()
        for col, cell in zip(columns, fields):
            if not cell.strip():
                continue
            row[col] = _convert_cell(col, cell, path, line, name)
        yield line, row


def _convert_cell(col: str, cell: str, path: str, line: int, pod_name: str) -> Any:
    what = f"pod '{pod_name}': '{col}'" if pod_name else f"'{col}'"
    try:
        if col in _TIME_COLUMNS:
            return parse_float_cell(cell, what)
        if col in _INT_COLUMNS:
            return parse_int_cell(cell, what)
    except ValueError as exc:
        raise InputError(path, line, str(exc)) from None
    if col in _JSON_COLUMNS:
        return _json_cell(cell, path, line, what)
    return cell


def _json_cell(text: str, path: str, line: int, what: str) -> Any:
    try:
        return _json_value(text, what)
    except ValueError as exc:
        raise InputError(path, line, str(exc)) from None


def _json_value(text: str, what: str) -> Any:
    """Strict JSON (finite numbers, unique keys); ``ValueError`` naming ``what``."""
    try:
        return json.loads(text, parse_constant=_reject_constant,
                          object_pairs_hook=_unique_keys)
    except (json.JSONDecodeError, ValueError) as exc:
        raise ValueError(f"{what} must be JSON text: {exc}") from None


def _reject_constant(word: str) -> Any:
    raise ValueError(f"{word} is not allowed (numbers must be finite)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key '{k}'")
        out[k] = v
    return out


def _unknown_column(col: str, path: str, line: int | None) -> InputError:
    import difflib
    hint = difflib.get_close_matches(col, TRACE_COLUMNS, n=1)
    tip = f"; did you mean '{hint[0]}'?" if hint else ""
    return InputError(path, line, f"unknown column '{col}' (expected some of: "
                                  f"{', '.join(TRACE_COLUMNS)}){tip}")


def _check_columns(columns: Iterable[str], path: str, line: int | None) -> None:
    columns = list(columns)
    for col in columns:
        if col not in TRACE_POD_KEYS:
            raise _unknown_column(col, path, line)
    for required in ("name", "arrival"):
        if required not in columns:
            raise InputError(path, line, f"missing required column '{required}'")


def _jsonl_rows(text: str, path: str) -> Iterator[_Row]:
    for number, raw in enumerate(split_lines(text), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw, parse_constant=_reject_constant,
                              object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as exc:
            msg = exc.msg.removesuffix(" starting at")      # "Unterminated string starting at"
            raise InputError(path, number, f"invalid JSON: {msg[:1].lower()}{msg[1:]} "
                                           f"(at character {exc.colno})") from None
        except ValueError as exc:
            raise InputError(path, number, f"invalid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise InputError(path, number, "each line must hold a JSON object (one pod)")
        row = {k: v for k, v in data.items() if v is not None}
        for col in row:
            if col not in TRACE_POD_KEYS:
                raise _unknown_column(col, path, number)
        for required in ("name", "arrival"):
            if required not in row:
                raise InputError(path, number, f"missing required key '{required}'")
        yield number, row


def _parquet_rows(path: str) -> Iterator[_Row]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        if os.path.getsize(path) == 0:
            raise InputError(path, None, "file is empty")
        table = pq.read_table(path)
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    except (pa.ArrowException, ValueError) as exc:
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None
    columns = [str(c) for c in table.column_names]
    if len(set(columns)) != len(columns):
        dup = next(c for c in columns if columns.count(c) > 1)
        raise InputError(path, None, f"column '{dup}' appears twice")
    _check_columns(columns, path, None)
    values = {c: table.column(c).to_pylist() for c in columns}
    for i in range(table.num_rows):
        row: dict[str, Any] = {}
        for col in columns:
            v = values[col][i]
            if v is None:
                continue
            if col in _INT_COLUMNS and isinstance(v, float) and math.isfinite(v) \
                    and v.is_integer():
                v = int(v)
            elif col in _JSON_COLUMNS:
                if not isinstance(v, str):
                    raise InputError(path, None, f"row {i + 1}: '{col}' must be JSON text, "
                                                 f"got {v!r}")
                try:
                    v = _json_value(v, f"'{col}'")
                except ValueError as exc:
                    raise InputError(path, None, f"row {i + 1}: {exc}") from None
            row[col] = v
        yield i + 1, row


def _time(row: dict[str, Any], col: str, path: str, line: int, name: str) -> float | None:
    v = row.get(col)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(path, line, f"pod '{name}': '{col}' must be a number, got {v!r}")
    v = float(v)
    if not math.isfinite(v):
        raise InputError(path, line, f"pod '{name}': '{col}' must be a finite number, got {v!r}")
    if v < 0:
        raise InputError(path, line, f"pod '{name}': '{col}' must be >= 0, got {v!r}")
    return v


def _build(rows: Iterator[_Row], path: str, fmt: str) -> list[TracePod]:
    pods: list[TracePod] = []
    first_seen: dict[str, int] = {}
    parquet = fmt == "parquet"
    where = "row" if parquet else "line"
    for line, row in rows:
        try:
            tp = _trace_pod(row, path, line)
        except InputError as exc:
            if not parquet:
                raise
            raise InputError(path, None, f"row {line}: {exc.problem}") from None
        if tp.name in first_seen:
            msg = (f"duplicate pod name '{tp.name}' (first on {where} "
                   f"{first_seen[tp.name]}, again on {where} {line})")
            if parquet:
                raise InputError(path, None, f"row {line}: {msg}")
            raise InputError(path, line, msg)
        first_seen[tp.name] = line
        pods.append(tp)
    if not pods:
        raise InputError(path, None if parquet else 1, "the trace has no pods")
    return pods


def _trace_pod(row: dict[str, Any], path: str, line: int) -> TracePod:
    doc = from_plain(row, path, line).as_doc("a trace row")
    pod = pod_from_document(doc, path, allowed_keys=TRACE_POD_KEYS)
    if "arrival" not in row:
        raise InputError(path, line, f"pod '{pod.name}': missing required value 'arrival'")
    arrival = _time(row, "arrival", path, line, pod.name)
    duration = _time(row, "duration", path, line, pod.name)
    deletion = _time(row, "deletion", path, line, pod.name)
    assert arrival is not None
    if deletion is not None and deletion < arrival:
        raise InputError(path, line, f"pod '{pod.name}': 'deletion' {deletion!r} is before "
                                     f"'arrival' {arrival!r}")
    return TracePod(pod=pod, arrival=arrival, duration=duration, deletion=deletion, line=line)


# ---------------------------------------------------------------------------
# writing

_ANNOTATION_COLUMNS = {a: c for c, a in TRACE_COLUMN_ANNOTATIONS.items()}
_RESOURCE_COLUMNS = {r: c for c, r in CONTAINER_COLUMN_RESOURCES.items()}


def _row_of(tp: TracePod) -> dict[str, Any]:
    """The native columns of one pod (absent values omitted)."""
    pod = tp.pod
    row: dict[str, Any] = {"name": pod.name, "arrival": float(tp.arrival)}
    if tp.duration is not None:
        row["duration"] = float(tp.duration)
    if tp.deletion is not None:
        row["deletion"] = float(tp.deletion)
    shorthand = (len(pod.containers) == 1 and not pod.init_containers
                 and not pod.containers[0].requests
                 and set(pod.containers[0].limits) <= set(_RESOURCE_COLUMNS))
    if shorthand:
        for resource, value in pod.containers[0].limits.items():
            row[_RESOURCE_COLUMNS[resource]] = value
    else:
        if not pod.containers:
            raise ValueError(f"pod {pod.name}: a pod without containers cannot be written")
        row["containers"] = [_container_json(c, pod.name) for c in pod.containers]
        if pod.init_containers:
            row["init_containers"] = [_container_json(c, pod.name) for c in pod.init_containers]
    if pod.cpu_milli:
        row["cpu_milli"] = pod.cpu_milli
    if pod.memory_mib:
        row["memory_mib"] = pod.memory_mib
    if pod.priority:
        row["priority"] = pod.priority
    other = {}
    for annotation, value in pod.annotations.items():
        column = _ANNOTATION_COLUMNS.get(annotation)
        if column is None:
            other[annotation] = value
        else:
            row[column] = value
    if other:
        row["annotations"] = other
    return row


def _container_json(c: Container, pod: str) -> dict[str, Any]:
    for resource in (*c.limits, *c.requests):
        if resource not in _RESOURCE_COLUMNS:
            raise ValueError(f"pod {pod}: resource '{resource}' cannot be written to a trace")
    out: dict[str, Any] = {}
    if c.limits:
        out["limits"] = dict(c.limits)
    if c.requests:
        out["requests"] = dict(c.requests)
    return out


def write_trace(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write ``trace`` in the native format of ``path``'s extension (``.csv``,
    ``.parquet``, ``.jsonl``), atomically (temporary file + ``os.replace``).

    Only columns some pod uses are written; :func:`read_trace` gives back
    equal pods and timings. Raises ``ValueError`` for a pod the format cannot
    express (no containers, or a resource hamisim does not model).
    """
    name = os.fspath(path)
    ext = os.path.splitext(name)[1].lower()
    fmt = _FORMATS.get(ext)
    if fmt is None:
        raise ValueError(f"{name}: unsupported trace file type '{ext or '(none)'}' "
                         "(expected .csv, .parquet or .jsonl)")
    rows = [_row_of(tp) for tp in trace.pods]
    present = set().union(*rows) if rows else {"name", "arrival"}
    columns = [c for c in TRACE_COLUMNS if c in present]
    writer: Callable[[list[dict[str, Any]], list[str], str], None] = {
        "csv": _write_csv, "jsonl": _write_jsonl, "parquet": _write_parquet}[fmt]
    _atomic(name, lambda tmp: writer(rows, columns, tmp))


def _atomic(path: str, write: Callable[[str], None]) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _cell(col: str, v: Any) -> str:
    if v is None:
        return ""
    if col in _JSON_COLUMNS:
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _write_csv(rows: list[dict[str, Any]], columns: list[str], tmp: str) -> None:
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(columns)
        for row in rows:
            out.writerow([_cell(c, row.get(c)) for c in columns])


def _write_jsonl(rows: list[dict[str, Any]], columns: list[str], tmp: str) -> None:
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps({c: row[c] for c in columns if c in row},
                                separators=(",", ":"), allow_nan=False))
            fh.write("\n")


def _write_parquet(rows: list[dict[str, Any]], columns: list[str], tmp: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    arrays, fields = [], []
    for col in columns:
        vals = [row.get(col) for row in rows]
        if col in _TIME_COLUMNS:
            typ = pa.float64()
        elif col in _INT_COLUMNS:
            typ = pa.int64()
        else:
            typ = pa.string()
            if col in _JSON_COLUMNS:
                vals = [None if v is None else json.dumps(v, separators=(",", ":")) for v in vals]
        arrays.append(pa.array(vals, type=typ))
        fields.append(pa.field(col, typ, nullable=col not in ("name", "arrival")))
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), tmp)


# ---------------------------------------------------------------------------
# transforms

def _capped(tp: TracePod, max_lifetime: float | None) -> float | None:
    life = lifetime(tp)
    if life is not None and max_lifetime is not None:
        life = min(life, max_lifetime)
    return life


def _finite_gl(trace: Trace, card_memory_mib: int | None,
               max_lifetime: float | None) -> tuple[list[TracePod], list[float]]:
    if max_lifetime is not None and not max_lifetime > 0:
        raise ValueError(f"max_lifetime must be a positive number, got {max_lifetime!r}")
    pods = list(trace.iter_arrivals())
    gl = []
    for tp in pods:
        life = _capped(tp, max_lifetime)
        gl.append(0.0 if life is None else
                  gpu_request(tp.pod, card_memory_mib=card_memory_mib) * life)
    return pods, gl


def poisson_rate(trace: Trace, target_load: float, capacity_gpus: float, *,
                 card_memory_mib: int | None = None, max_lifetime: float | None = None) -> float:
    """Arrival rate (pods/s) at which ``trace``'s pods offer ``target_load`` of
    ``capacity_gpus``: λ = target_load × capacity_gpus / E[g × L].

    ``g`` is :func:`gpu_request` (cards), ``L`` is :func:`lifetime` (s) and
    the mean runs over all pods, pods without a lifetime counting 0 (they
    never leave, so they add load on top that grows with the run).
    ``max_lifetime`` caps every lifetime first (see :func:`retime`).
    """
    if not target_load > 0 or not math.isfinite(target_load):
        raise ValueError(f"target_load must be a positive number, got {target_load!r}")
    if not capacity_gpus > 0 or not math.isfinite(capacity_gpus):
        raise ValueError(f"capacity_gpus must be a positive number, got {capacity_gpus!r}")
    if not trace.pods:
        raise ValueError(f"trace {trace.name} has no pods")
    _, gl = _finite_gl(trace, card_memory_mib, max_lifetime)
    mean = math.fsum(gl) / len(gl)
    if mean <= 0:
        raise ValueError(f"trace {trace.name}: no pod has both a GPU request and a positive "
                         "lifetime, so no arrival rate gives a GPU load")
    return target_load * capacity_gpus / mean


def offered_load(trace: Trace, capacity_gpus: float, *,
                 card_memory_mib: int | None = None, max_lifetime: float | None = None) -> float:
    """Offered GPU load of ``trace`` as a fraction of ``capacity_gpus``:
    Σ g × L / (capacity × T), with T the last arrival time (arrivals counted
    from 0) and pods without a lifetime left out. For a :func:`retime` d
    trace this estimates its ``target_load`` (relative error ~ 1/√n)."""
    pods, gl = _finite_gl(trace, card_memory_mib, max_lifetime)
    span = pods[-1].arrival if pods else 0.0
    if span <= 0:
        raise ValueError(f"trace {trace.name}: all pods arrive at 0; the load is undefined")
    return math.fsum(gl) / (capacity_gpus * span)


def retime(trace: Trace, target_load: float, seed: int, capacity_gpus: float, *,
           card_memory_mib: int | None = None, max_lifetime: float | None = None,
           n_pods: int | None = None) -> Trace:
    """The same pods with Poisson arrivals offering ``target_load`` of the cluster.

    Pods keep their order (:meth:`Trace.iter_arrivals`) and their lifetime,
    which becomes ``duration`` (run time once bound, so a pod that waits
    still runs its full lifetime; ``deletion`` is cleared): ``L = deletion −
    arrival`` when the pod has a deletion time, else its ``duration``; pods
    without either keep ``duration=None`` (run to the end).

    Arrivals are the partial sums of exponential gaps with mean 1/λ drawn
    from ``numpy.random.default_rng(seed)``, starting at 0, with

        λ = target_load × capacity_gpus / E[g × L]      (:func:`poisson_rate`)

    so by Little's law the mean concurrently requested GPUs are
    λ·E[g×L] = target_load × capacity_gpus. ``g`` is :func:`gpu_request` in
    cards (``count × share``). Zero-lifetime pods are kept (they arrive and
    leave at once, adding nothing to the load); pods without a lifetime count
    0 in E[g × L] and stay forever, so their load comes on top. Right-censored
    pods (openb: 34 pods deleted at the trace's end) keep their observed,
    truncated lifetime — a lower bound, at most a small bias.

    The load is a long-run (steady-state) figure, reached only after the run
    lasts longer than the longest lifetimes. Heavy tails matter: in openb's
    ``default`` list 41 pods living over a week carry 84 % of Σ g × L, so a
    retimed copy (arrivals over ~10 h at load 0.8) averages only ~6 % GPU
    load over its arrival window. ``max_lifetime`` (s) caps every lifetime
    (before λ is computed, and in the returned durations) to make a
    finite-horizon replay reach the target; e.g. 3600 caps 17 % of openb's
    pods.

    A trace may also be too short to reach steady state at all: the system
    holds λ·E[L] pods at once (≈ 6,600 openb pods at load 0.8 of 6,212
    GPUs, more than half of the 8,152-pod list). ``n_pods`` then draws that
    many pods uniformly with replacement (from the same generator, before
    the gaps) in place of the trace's own sequence, renamed ``<name>-r<k>``
    with ``k`` the arrival index; the rate is unchanged (the draw has the
    same E[g × L]), so the run lasts ≈ ``n_pods``/λ.
    """
    rate = poisson_rate(trace, target_load, capacity_gpus, card_memory_mib=card_memory_mib,
                        max_lifetime=max_lifetime)
    pods = list(trace.iter_arrivals())
    rng = np.random.default_rng(seed)
    if n_pods is not None:
        if isinstance(n_pods, bool) or not isinstance(n_pods, int) or n_pods < 1:
            raise ValueError(f"n_pods must be a positive integer, got {n_pods!r}")
        picks = rng.integers(len(pods), size=n_pods)
        pods = [replace(pods[i], pod=pods[i].pod.renamed(f"{pods[i].name}-r{k}"))
                for k, i in enumerate(picks)]
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=len(pods)))
    out = [TracePod(pod=tp.pod, arrival=float(t), duration=_capped(tp, max_lifetime),
                    deletion=None,
                    line=tp.line) for tp, t in zip(pods, arrivals)]
    desc = (f"{trace.name} retimed: Poisson arrivals at {rate:.6g} pods/s for GPU load "
            f"{target_load:g} of {capacity_gpus:g} GPUs, seed {seed}"
            + (f", lifetimes capped at {max_lifetime:g} s" if max_lifetime is not None else ""))
    return Trace(name=trace.name, pods=out, path=trace.path, format=trace.format,
                 description=desc)


def fill_workload(trace: Trace, capacity_gpus: float, fill_to_pct: float, seed: int, *,
                  card_memory_mib: int | None = None, fgd_stop_quirk: bool = False) -> Trace:
    """The FGD paper's workload (FGD-OPENB.md §3 steps 2-3): pods in submission order.

    1. Sort the pods by name, shuffle them with ``numpy.random.default_rng(seed)``.
    2. Target T = ``fill_to_pct``/100 × ``capacity_gpus`` (cards). While the
       total :func:`gpu_request` is below T, draw a pod uniformly with
       replacement from the name-sorted original list; stop when adding it
       would pass T, else append it renamed ``<name>-tuned-<i>`` (i = 0, 1, …)
       and go on. CPU-only draws are appended and never stop the loop.
    3. If the total is above T, remove uniformly random pods (any pod,
       CPU-only included, as FGD does) until it is at most T.

    FGD's stop check adds the drawn pod's *per-GPU* share instead of its
    total (a quirk that lets multi-GPU draws overshoot T); pass
    ``fgd_stop_quirk=True`` to reproduce it. The RNG differs from Go's, so
    the exact pods differ from FGD's run of the same seed.

    Returns a :class:`Trace` whose pods are in submission order with
    ``arrival`` = submission index (0, 1, 2, …; so :meth:`Trace.iter_arrivals`
    keeps the order under any sort), no lifetime (no departures), and the
    line of their source row.
    """
    if not capacity_gpus > 0 or not math.isfinite(capacity_gpus):
        raise ValueError(f"capacity_gpus must be a positive number, got {capacity_gpus!r}")
    if not fill_to_pct >= 0 or not math.isfinite(fill_to_pct):
        raise ValueError(f"fill_to_pct must be a number >= 0, got {fill_to_pct!r}")
    if not trace.pods:
        raise ValueError(f"trace {trace.name} has no pods")
    source = sorted(trace.pods, key=lambda tp: tp.name)
    req = [gpu_request(tp.pod, card_memory_mib=card_memory_mib) for tp in source]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(source))
    chosen: list[tuple[TracePod, float]] = [(source[i], req[i]) for i in order]
    target = fill_to_pct / 100.0 * capacity_gpus
    eps = 1e-9 * max(target, 1.0)
    total = math.fsum(req)
    if total < target:
        if max(req) <= 0:
            raise ValueError(f"trace {trace.name} requests no GPU; it cannot fill a cluster")
        names = {tp.name for tp in source}
        i = 0
        while True:
            k = int(rng.integers(len(source)))
            tp, g = source[k], req[k]
            step = g / max(tp.pod.containers[0].value(GPU) or 1, 1) \
                if fgd_stop_quirk and tp.pod.containers else g
            if total + step > target + eps:
                break
            new_name = f"{tp.name}-tuned-{i}"
            if new_name in names:
                raise ValueError(f"trace {trace.name}: pod name {new_name} already exists")
            # only the pod and its source line are kept below
            chosen.append((TracePod(tp.pod.renamed(new_name), 0.0, line=tp.line), g))
            total += g
            i += 1
    else:
        while total > target + eps:
            k = int(rng.integers(len(chosen)))
            total -= chosen.pop(k)[1]
    pods = [TracePod(pod=tp.pod, arrival=float(n), duration=None, deletion=None, line=tp.line)
            for n, (tp, _) in enumerate(chosen)]
    desc = (f"{trace.name} filled to {fill_to_pct:g} % of {capacity_gpus:g} GPUs "
            f"(FGD method), seed {seed}: {len(pods)} pods, {total:.1f} GPUs requested")
    return Trace(name=trace.name, pods=pods, path=trace.path, format=trace.format,
                 description=desc)


# ---------------------------------------------------------------------------
# openb (hamisim.openb), loaded on first use

_OPENB_NAMES = ("read_openb_pods", "read_openb_nodes", "cluster_from_path",
                "OPENB_CARD_MEMORY_MIB")


def __getattr__(name: str) -> Any:
    if name in _OPENB_NAMES:
        from . import openb
        return getattr(openb, name)
    raise AttributeError(f"module 'hamisim.traces' has no attribute {name!r}")
