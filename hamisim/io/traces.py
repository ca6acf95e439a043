"""Trace files (DESIGN §4.2): reading and writing native traces.

:func:`read_trace` returns a :class:`hamisim.workload.Trace`; it picks the
format by extension:

* ``.csv``: a header row of DESIGN §4.2 column names; an empty cell is an
  absent value. A CSV whose header starts with the openb columns
  ``name,cpu_milli,memory_mib,num_gpu,gpu_milli`` is an Alibaba openb pod
  list and goes to :func:`hamisim.io.openb.openb_pods_from_text` instead.
* ``.jsonl``: one JSON object per line, keyed by the same names (blank lines
  skipped); ``null`` is absent; JSON numbers must be finite and integers
  must be written without a decimal point.
* ``.parquet``: one column per name; null is absent. Integer columns may be
  stored as floating point (pandas does that for integer columns with
  missing values) as long as every value is integral.

Columns (all optional except ``name`` and ``arrival``): ``arrival`` (s, >= 0),
``duration`` (s, >= 0, runs once bound), ``deletion`` (absolute s, >=
``arrival``; wins over ``duration``), the pod columns of
:mod:`hamisim.io.podspec` (``gpu``, ``gpumem``, ``gpumem_percentage``,
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
"""
from __future__ import annotations

import csv
import json
import math
import os
import tempfile
import warnings
from typing import Any, Callable, Iterable, Iterator

from hamisim.cluster import Cluster
from hamisim.errors import InputError, InputWarning
from hamisim.hami.policy import warn_pod_policies
from hamisim.io.documents import from_plain
from hamisim.io.podspec import (
    CONTAINER_COLUMN_RESOURCES,
    TRACE_COLUMN_ANNOTATIONS,
    TRACE_POD_KEYS,
    pod_from_document,
)
from hamisim.io.tables import (
    csv_header,
    csv_records,
    first_line,
    parse_float_cell,
    parse_int_cell,
    read_text,
    split_lines,
)
from hamisim.hami.reference import type_allowed
from hamisim.pods import GPUMEM, Container
from hamisim.workload import Trace, TracePod

__all__ = ["TRACE_COLUMNS", "read_trace", "write_trace", "warn_suspect_units",
           "SUSPECT_GPUMEM_MIB", "LARGE_CARD_MIB"]

_TIME_COLUMNS = ("arrival", "duration", "deletion")
_INT_COLUMNS = ("gpu", "gpumem", "gpumem_percentage", "gpucores", "cpu_milli", "memory_mib",
                "priority")
_JSON_COLUMNS = ("annotations", "containers", "init_containers")
#: MiB columns, which also take a byte quantity such as 16Gi
_MIB_COLUMNS = ("gpumem", "memory_mib")
#: Every column a native trace may have, in the order :func:`write_trace` writes them.
TRACE_COLUMNS: tuple[str, ...] = (
    "name", *_TIME_COLUMNS, "gpu", "gpumem", "gpumem_percentage", "gpucores", "cpu_milli",
    "memory_mib", *TRACE_COLUMN_ANNOTATIONS, "priority", *_JSON_COLUMNS, "class")
assert set(TRACE_COLUMNS) == set(TRACE_POD_KEYS)
_FORMATS = {".csv": "csv", ".parquet": "parquet", ".jsonl": "jsonl"}
OPENB_POD_HEADER_PREFIX = "name,cpu_milli,memory_mib,num_gpu,gpu_milli"


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
            from hamisim.io.openb import openb_pods_from_text
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
        text = cell.strip()
        if col in _MIB_COLUMNS and not text.lstrip("+-").isdigit():
            return text     # maybe a byte quantity (16Gi): the pod reader converts or rejects it
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
        # names are decoded lazily: a damaged schema fails here, not in read_table
        columns = [str(c) for c in table.column_names]
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    except (pa.ArrowException, ValueError) as exc:      # UnicodeDecodeError included
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None
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
    label = row.get("class")
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise InputError(path, line, f"pod '{pod.name}': 'class' must be a non-empty label, "
                                     f"got {label!r}")
    return TracePod(pod=pod, arrival=arrival, duration=duration, deletion=deletion, line=line,
                    pod_class=label.strip() if label is not None else None)


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
    if tp.pod_class is not None:
        row["class"] = tp.pod_class
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
# plausibility against the cluster

#: a ``gpumem`` below this many MiB ...
SUSPECT_GPUMEM_MIB = 256
#: ... on a pod whose every possible card has at least this many is probably GiB
LARGE_CARD_MIB = 8192


def warn_suspect_units(trace: Trace, cluster: Cluster) -> None:
    """Warn (:class:`~hamisim.errors.InputWarning`, at the first pod's row) about
    ``gpumem`` values that are probably GiB written where MiB are meant: below
    :data:`SUSPECT_GPUMEM_MIB` on a pod whose every possible card (NVIDIA, of a
    type its filter allows) has at least :data:`LARGE_CARD_MIB`. Once per
    distinct value, with the number of pods asking it."""
    smallest: dict[tuple, int | None] = {}      # type filter -> smallest card memory
    found: dict[int, list] = {}                 # gpumem -> [first pod, pods]
    for tp in trace.pods:
        values = {c.value(GPUMEM) for c in (*tp.pod.init_containers, *tp.pod.containers)}
        values = {v for v in values if v is not None and 0 < v < SUSPECT_GPUMEM_MIB}
        if not values:
            continue
        ann = tp.pod.annotations or {}
        key = (ann.get("nvidia.com/use-gputype"), ann.get("nvidia.com/nouse-gputype"))
        if key not in smallest:
            sizes = [c.devmem for n in cluster.nodes for c in n.cards
                     if "NVIDIA" in c.type.upper() and type_allowed(ann, c.type)]
            smallest[key] = min(sizes) if sizes else None
        if smallest[key] is None or smallest[key] < LARGE_CARD_MIB:
            continue
        for v in values:
            entry = found.setdefault(v, [tp, 0, smallest[key]])
            entry[1] += 1
    for value, (tp, n, card) in sorted(found.items()):
        others = f" ({n} pods ask for gpumem {value})" if n > 1 else ""
        warnings.warn(InputWarning(trace.where(tp), (
            f"pod '{tp.name}': gpumem {value} is MiB, did you mean {value * 1024} "
            f"({value} GiB)? Every card it may use has at least {card} MiB{others}")),
            stacklevel=2)
