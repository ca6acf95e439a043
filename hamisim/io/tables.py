"""Line-located reading of tabular text files (CSV, JSON Lines) and strict number cells.

Shared by the trace readers (:mod:`hamisim.io.traces`, :mod:`hamisim.io.openb`).
Every problem is an :class:`InputError` at the physical line of the
offending record (the header is line 1), so a user can open the file at that
line.

* :func:`read_text` reads a whole file as UTF-8 (BOM accepted), reporting
  the line of the first undecodable byte and rejecting an empty file.
* :func:`csv_records` yields ``(line, fields)`` for every CSV record after
  the header, skipping blank lines; ``line`` is the physical line on which
  the record starts (a quoted field may span lines).
* :func:`parse_int_cell` / :func:`parse_float_cell` accept plain decimal
  text only (no ``1_000``, no hex, no ``nan`` / ``inf``).
"""
from __future__ import annotations

import csv
import math
import os
import re
from typing import Iterator

from hamisim.errors import InputError
from hamisim.io.documents import read_text as _read_text

__all__ = ["read_text", "csv_header", "csv_records", "parse_int_cell", "parse_float_cell",
           "first_line", "split_lines"]

_MAX_FILE_BYTES = 1 << 32
_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_NONFINITE = re.compile(r"[+-]?(?:nan|inf|infinity)\Z", re.IGNORECASE)


def read_text(path: str | os.PathLike[str]) -> str:
    """The file's text (UTF-8, BOM stripped); ``InputError`` when unreadable, not
    UTF-8 (at the line of the bad byte) or empty (only whitespace)."""
    name = os.fspath(path)
    text = _read_text(name, _MAX_FILE_BYTES)
    if not text.strip():
        raise InputError(name, None, "file is empty")
    return text


def first_line(text: str) -> str:
    """The first line of ``text`` without its line ending."""
    return text.split("\n", 1)[0].rstrip("\r")


def split_lines(text: str) -> list[str]:
    """``text`` split after each ``\\n`` (line ends kept): the lines editors number."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _reader(text: str):  # -> csv.reader
    return csv.reader(split_lines(text), strict=True)


def csv_header(text: str, path: str) -> list[str]:
    """The header row's column names (stripped); rejects blank and duplicate names."""
    try:
        header = next(_reader(text))
    except (StopIteration, csv.Error) as exc:
        raise InputError(path, 1, f"cannot parse the CSV header: {exc}") from None
    columns = [c.strip() for c in header]
    seen: set[str] = set()
    for i, c in enumerate(columns):
        if not c:
            raise InputError(path, 1, f"column {i + 1} of the header has no name")
        if c in seen:
            raise InputError(path, 1, f"column '{c}' appears twice in the header")
        seen.add(c)
    return columns


def csv_records(text: str, path: str, n_columns: int) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of each record after the header; blank lines are skipped.

    Raises ``InputError`` for broken quoting and for a record whose field
    count differs from the header's.
    """
    reader = _reader(text)
    end = 0
    try:
        next(reader)
        end = reader.line_num
        for fields in reader:
            line = end + 1
            end = reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            if len(fields) != n_columns:
                raise InputError(path, line, f"the row has {len(fields)} fields but the header "
                                             f"has {n_columns} columns")
            yield line, fields
    except csv.Error as exc:
        raise InputError(path, end + 1, f"cannot parse the CSV row: {exc}") from None


def parse_int_cell(cell: str, what: str) -> int:
    """A decimal integer cell; ``ValueError`` with a message naming ``what`` otherwise."""
    text = cell.strip()
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        raise ValueError(f"{what} must be an integer, got {text!r} "
                         "(write it without a decimal point or exponent)")
    raise ValueError(f"{what} must be an integer, got {text!r}")


def parse_float_cell(cell: str, what: str) -> float:
    """A finite decimal number cell; ``ValueError`` naming ``what`` otherwise."""
    text = cell.strip()
    if _NONFINITE.match(text):
        raise ValueError(f"{what} must be a finite number, got {text!r}")
    if not _FLOAT.match(text):
        raise ValueError(f"{what} must be a number, got {text!r}")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {text!r} (too large)")
    return value
