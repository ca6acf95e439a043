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
``nouse_gpuuuid``, ``numa_bind``, ``scoring_weights``, ``preemption_policy``)
and, for pods the flat columns cannot express, ``annotations`` /
``containers`` / ``init_containers`` (JSON values in JSON Lines; JSON text in
a CSV or Parquet cell). :func:`write_trace` uses those three only when needed.
kube-scheduler's constraints ``node_selector``, ``tolerations`` and
``affinity`` are JSON in Kubernetes' structure, the same way
(:mod:`hamisim.io.podspec`).

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
import re
import warnings
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from hamisim.cluster import Cluster
from hamisim.devices import NVIDIA, offered_to
from hamisim.errors import InputError, InputWarning
from hamisim.hami.policy import warn_pod_policies
from hamisim.hami.reference import type_allowed
from hamisim.io.documents import from_plain
from hamisim.io.outputs import atomic_file
from hamisim.io.podspec import (
    CONTAINER_COLUMN_RESOURCES,
    TRACE_COLUMN_ANNOTATIONS,
    TRACE_POD_KEYS,
    placement_json,
    pod_from_document,
    warn_core_limits,
    warn_no_card_allowed,
    warn_unmodelled_annotations,
)
from hamisim.kube.controllers import parse_controller
from hamisim.io.tables import (
    csv_header,
    csv_records,
    first_line,
    parse_float_cell,
    parse_int_cell,
    read_text,
    split_lines,
)
from hamisim.pods import GPUMEM, Container
from hamisim.workload import Trace, TracePod, pod_like

__all__ = ["TRACE_COLUMNS", "read_trace", "write_trace", "warn_suspect_units",
           "warn_unmatched_filters",
           "SUSPECT_GPUMEM_MIB", "LARGE_CARD_MIB"]

_TIME_COLUMNS = ("arrival", "duration", "deletion")
#: pod columns in seconds (a template's, unlike the row's timing)
_FLOAT_COLUMNS = ("init_duration",)
_INT_COLUMNS = ("gpu", "gpumem", "gpumem_percentage", "gpucores", "cpu_milli", "memory_mib",
                "priority", "termination_grace_period")
_JSON_COLUMNS = ("annotations", "containers", "init_containers", "node_selector",
                 "tolerations", "affinity")
#: MiB columns, which also take a byte quantity such as 16Gi
_MIB_COLUMNS = ("gpumem", "memory_mib")
#: Every column a native trace may have, in the order :func:`write_trace` writes them.
TRACE_COLUMNS: tuple[str, ...] = (
    "name", *_TIME_COLUMNS, "gpu", "gpumem", "gpumem_percentage", "gpucores", "cpu_milli",
    "memory_mib", *TRACE_COLUMN_ANNOTATIONS, "priority", *_JSON_COLUMNS, "preemption_policy",
    "termination_grace_period", "init_duration", "namespace", "class", "controller")
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
    if fmt in ("csv", "parquet"):
        trace = _fast_trace(name, fmt)
        if trace is not None:
            return trace
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
    warn_unmodelled_annotations((trace.where(tp), tp.pod.annotations) for tp in pods)
    warn_core_limits((trace.where(tp), tp.pod) for tp in pods)
    return trace


# ---------------------------------------------------------------------------
# the fast path: a C parser, column-wise checks, one pod per distinct request

#: the columns that say when a pod comes and goes, and what it is called
_ROW_COLUMNS = ("name", "arrival", "duration", "deletion", "class", "controller")
_WHITESPACE_EDGE = r"^\s|\s$"


class _Slow(Exception):
    """The fast path declines; the row-by-row reader decides (and locates errors)."""


def _fast_trace(path: str, fmt: str) -> Trace | None:
    """Read a CSV or Parquet trace with pyarrow's C readers, check the timing
    columns column by column, and validate each distinct combination of the
    pod columns once, with the row-by-row code, on its first row. Returns
    ``None`` (the caller then reads row by row, which reports any problem at its
    line exactly as before) whenever anything is unusual or wrong: a bad value,
    whitespace around a cell, a row the C parser cannot split cleanly."""
    try:
        table, line_of_row = _arrow_table(path, fmt)
        return _trace_from_table(table, line_of_row, path, fmt)
    except _Slow:
        return None


def _arrow_table(path: str, fmt: str):
    import pyarrow as pa
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            if os.path.getsize(path) == 0:
                raise _Slow
            table = pq.read_table(path)
            columns = [str(c) for c in table.column_names]
            if len(set(columns)) != len(columns):
                raise _Slow
            try:
                # Parquet does not promise valid UTF-8 in string columns: checked
                # column-wise here (the row reader locates the damage)
                table.validate(full=True)
            except pa.ArrowInvalid:
                raise _Slow from None
            return table, 1                     # rows are reported as "row N" (1-based)
        import pyarrow.csv as pacsv
        with open(path, "rb") as fh:
            head = fh.readline().decode("utf-8-sig")
        if head.strip().startswith(OPENB_POD_HEADER_PREFIX):
            raise _Slow                         # an openb pod list: its own reader
        columns = [c.strip() for c in next(csv.reader([head]))]
        if not columns or len(set(columns)) != len(columns) or not all(columns):
            raise _Slow
        _check_quoting(path)
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=columns, skip_rows=1),
            parse_options=pacsv.ParseOptions(newlines_in_values=False,
                                              ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.string() for c in columns}, null_values=[""],
                strings_can_be_null=True, quoted_strings_can_be_null=True))
        return table, 2                         # data row k (0-based) is on line k + 2
    except _Slow:
        raise
    except (OSError, pa.ArrowException, ValueError, UnicodeDecodeError, StopIteration,
            csv.Error):
        raise _Slow from None


_QUOTED_LINE = re.compile(rb'^[^\n]*"[^\n]*$', re.M)


def _check_quoting(path: str) -> None:
    """``_Slow`` unless every line with a quote parses under Python's strict CSV
    rules, as the row reader's does: pyarrow's parser is lenient (it reads
    ``"b"x`` as ``bx``), and only lines with quotes can differ."""
    with open(path, "rb") as fh:
        data = fh.read()
    lines = [m.group().decode("utf-8", "replace") for m in _QUOTED_LINE.finditer(data)]
    if not lines:
        return
    if any(line.count('"') % 2 for line in lines):
        raise _Slow                     # a quoted field spans lines: line numbers shift
    try:
        for fields in csv.reader(lines, strict=True):
            pass
    except csv.Error:
        raise _Slow from None


def _trace_from_table(table, first_line: int, path: str, fmt: str) -> Trace:
    import pyarrow as pa
    import pyarrow.compute as pc
    columns = [str(c) for c in table.column_names]
    if any(c not in TRACE_POD_KEYS for c in columns) or "name" not in columns \
            or "arrival" not in columns or table.num_rows == 0:
        raise _Slow
    n = table.num_rows
    strings = {c: table.column(c) for c in columns}
    for c, col in strings.items():
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) \
                and c in _ROW_COLUMNS[:1] + _ROW_COLUMNS[4:] + _JSON_COLUMNS:
            raise _Slow
    names_col = strings["name"]
    if names_col.null_count or pc.count_distinct(names_col).as_py() != n \
            or pc.any(pc.match_substring_regex(names_col, _WHITESPACE_EDGE)).as_py():
        raise _Slow                             # missing, repeated or padded names
    times = {c: _time_column(strings[c], c == "arrival") if c in strings
             else np.full(n, np.nan) for c in ("arrival", "duration", "deletion")}
    arrival, duration, deletion = times["arrival"], times["duration"], times["deletion"]
    if np.any(deletion < arrival):
        raise _Slow
    # one template per distinct combination of the pod columns (priority included)
    pod_cols = [c for c in columns if c not in _ROW_COLUMNS]
    if pod_cols:
        parts = [pc.cast(strings[c], pa.string()) for c in pod_cols]
        # absent and empty differ ("\x00" for absent): one key per distinct row
        key = pc.binary_join_element_wise(*parts, pa.scalar("", pa.string()), "\x1f",
                                          null_handling="replace", null_replacement="\x00")
        encoded = pc.dictionary_encode(key).combine_chunks()
        template = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
        n_templates = len(encoded.dictionary)
    else:
        template = np.zeros(n, dtype=np.int32)
        n_templates = 1
    first = np.full(n_templates, n, dtype=np.int64)
    np.minimum.at(first, template, np.arange(n))
    templates = []
    for row in first.tolist():
        values = {c: strings[c][row].as_py() for c in columns}
        tp = _representative(values, path, fmt, row + first_line)
        templates.append(tp.pod)
    labels: list[str] = []
    pod_class = np.full(n, -1, dtype=np.int32)
    if "class" in strings:
        encoded = pc.dictionary_encode(strings["class"]).combine_chunks()
        codes = encoded.indices
        # labels as the row reader reads them: trimmed, blank = none
        raw = [str(x).strip() for x in encoded.dictionary.to_pylist()]
        labels, position = _first_seen(x for x in raw if x)
        remap = np.array([position[x] if x else -1 for x in raw] + [-1], dtype=np.int32)
        codes = pc.fill_null(codes, len(raw)).to_numpy(zero_copy_only=False)
        pod_class = remap[codes]
    owners: list[str] = []
    controller = np.full(n, -1, dtype=np.int32)
    if "controller" in strings:
        encoded = pc.dictionary_encode(strings["controller"]).combine_chunks()
        raw = encoded.dictionary.to_pylist()
        try:            # each distinct value checked once; the row reader locates a bad one
            checked = [parse_controller(x) for x in raw]
        except ValueError:
            raise _Slow from None
        owners, position = _first_seen(checked)
        remap = np.array([position[x] for x in checked] + [-1], dtype=np.int32)
        codes = pc.fill_null(encoded.indices, len(raw)).to_numpy(zero_copy_only=False)
        controller = remap[codes]
    names = names_col.to_pylist()
    trace = Trace(_stem(path), path=path, format=fmt, columns={
        "names": names, "arrival": arrival, "duration": duration, "deletion": deletion,
        "template": template,
        "priority": np.array([t.priority for t in templates], dtype=np.int32)[template],
        "line": np.arange(first_line, first_line + n, dtype=np.int64),
        "pod_class": pod_class,
        "templates": [pod_like(t, "", t.priority) for t in templates],
        "class_labels": labels, "controller": controller, "controller_names": owners})
    order = np.argsort(first, kind="stable")
    warn_pod_policies((trace.where_line(int(first[k]) + first_line, names[first[k]]),
                       templates[k].annotations) for k in order.tolist())
    warn_unmodelled_annotations((trace.where_line(int(first[k]) + first_line, names[first[k]]),
                                 templates[k].annotations) for k in order.tolist())
    warn_core_limits((trace.where_line(int(first[k]) + first_line, names[first[k]]),
                      pod_like(templates[k], names[first[k]], templates[k].priority))
                     for k in order.tolist())
    return trace


def _first_seen(values) -> tuple[list[str], dict[str, int]]:
    """The distinct ``values`` in first-seen order, and each one's position
    (by dict: a list's ``index`` per value is quadratic in distinct values)."""
    order = list(dict.fromkeys(values))
    return order, {x: i for i, x in enumerate(order)}


def _time_column(col, required: bool) -> np.ndarray:
    """A timing column as float64 (NaN where absent); ``_Slow`` unless every value
    is a finite number >= 0 written as the row reader accepts it."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if required and col.null_count:
        raise _Slow
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        # arrow's parser takes what the row reader takes (no spaces, no 0x, no 1_000),
        # and inf or nan, which the finiteness check below turns away
        try:
            values = pc.cast(col, pa.float64())
        except pa.ArrowInvalid:
            raise _Slow from None
    elif pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        values = pc.cast(col, pa.float64())
    else:
        raise _Slow
    out = values.to_numpy(zero_copy_only=False).astype(np.float64)    # null -> NaN
    if values.null_count:
        present = ~pc.is_null(values).to_numpy(zero_copy_only=False)
        checked = out[present]
    else:
        checked = out
    if not np.all(np.isfinite(checked)) or np.any(checked < 0):
        raise _Slow                             # NaN, inf or negative: the row reader says so
    return out


def _representative(values: dict, path: str, fmt: str, line: int) -> TracePod:
    """The row at ``line`` read exactly as the row-by-row reader reads it."""
    try:
        return _row_pod(values, path, fmt, line)
    except InputError:
        raise _Slow from None


def _row_pod(values: dict, path: str, fmt: str, line: int) -> TracePod:
    name = values.get("name") or ""
    if fmt == "csv":
        row = {c: _convert_cell(c, v, path, line, name) for c, v in values.items()
               if v is not None and v.strip()}
    else:
        row = {}
        for c, v in values.items():
            if v is None:
                continue
            if c in _INT_COLUMNS and isinstance(v, float) and math.isfinite(v) \
                    and v.is_integer():
                v = int(v)
            elif c in _JSON_COLUMNS:
                if not isinstance(v, str):
                    raise _Slow
                try:
                    v = _json_value(v, f"'{c}'")
                except ValueError:
                    raise _Slow from None
            row[c] = v
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # the trace's warnings come once, in order
        return _trace_pod(row, path, line)


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
        if col in _TIME_COLUMNS or col in _FLOAT_COLUMNS:
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
        table.validate(full=True)               # string columns hold valid UTF-8
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
    owner = row.get("controller")
    if owner is not None:
        try:
            owner = parse_controller(owner)
        except ValueError as err:
            raise InputError(path, line, f"pod '{pod.name}': {err}") from None
    return TracePod(pod=pod, arrival=arrival, duration=duration, deletion=deletion, line=line,
                    pod_class=label.strip() if label is not None else None, controller=owner)


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
    if tp.controller is not None:
        row["controller"] = tp.controller
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
    row.update(placement_json(pod))
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
    with atomic_file(name) as tmp:
        writer(rows, columns, tmp)


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
        if col in _TIME_COLUMNS or col in _FLOAT_COLUMNS:
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
    found: dict[int, list] = {}                 # gpumem -> [first row, pods, card]
    counts = trace.template_counts()
    first = trace.first_rows()
    for t, pod in enumerate(trace.templates):   # once per distinct request
        if not counts[t]:
            continue
        values = {c.value(GPUMEM) for c in (*pod.init_containers, *pod.containers)}
        values = {v for v in values if v is not None and 0 < v < SUSPECT_GPUMEM_MIB}
        if not values:
            continue
        ann = pod.annotations or {}
        key = (ann.get("nvidia.com/use-gputype"), ann.get("nvidia.com/nouse-gputype"))
        if key not in smallest:
            sizes = [c.devmem for n in cluster.nodes for c in n.cards
                     if offered_to(NVIDIA, c.type) and type_allowed(ann, c.type)]
            smallest[key] = min(sizes) if sizes else None
        if smallest[key] is None or smallest[key] < LARGE_CARD_MIB:
            continue
        for v in values:
            entry = found.setdefault(v, [int(first[t]), 0, smallest[key]])
            entry[0] = min(entry[0], int(first[t]))
            entry[1] += int(counts[t])
    for value, (row, n, card) in sorted(found.items()):
        tp = trace.trace_pod(row)
        others = f" ({n} pods ask for gpumem {value})" if n > 1 else ""
        warnings.warn(InputWarning(trace.where(tp), (
            f"pod '{tp.name}': gpumem {value} is MiB, did you mean {value * 1024} "
            f"({value} GiB)? Every card it may use has at least {card} MiB{others}")),
            stacklevel=2)


def warn_unmatched_filters(trace: Trace, cluster: Cluster) -> None:
    """Warn (at the first pod's row) about card filters that leave pods no card of
    ``cluster`` (:func:`hamisim.io.podspec.warn_no_card_allowed`), once per
    distinct request."""
    counts = trace.template_counts()
    first = trace.first_rows()
    rows = sorted(int(first[t]) for t in range(len(trace.templates)) if counts[t])
    warn_no_card_allowed(((trace.where(tp), tp.pod) for tp in map(trace.trace_pod, rows)),
                         [c for n in cluster.nodes for c in n.cards])
