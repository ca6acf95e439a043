"""YAML and JSON documents whose every value remembers its source line.

Readers of hamisim's input files (cluster, scenario, trace rows) load a file
with :func:`load_document` and validate it through the located-value API
below, so that every problem becomes ``InputError(path, line, problem)``,
printed as ``file:line: problem`` (1-based line).

* :class:`Value` wraps one value (mapping, list or scalar) with ``path`` and
  ``line``; ``as_int`` / ``as_str`` / ``as_bool`` / ``as_list`` / ``as_doc``
  check its type and raise located errors.
* :class:`Doc` is a :class:`Value` holding a mapping, with keyed helpers:
  ``get``, ``require``, ``require_int``, ``optional_int``, ``require_str``,
  ``optional_str``, ``optional_bool``, ``require_list``, ``optional_doc``,
  ``check_keys`` and ``key_line``.

Type rules every reader inherits: booleans are never integers; integers given
as floats (``1.5``, ``2.0``, ``.nan``, ``1e999``) are errors; integers are
bounded (``MAX_SAFE_INT`` = 2**53 unless a caller passes a tighter ``max``,
``INT32_MAX`` for card fields); ``null`` counts as absent for ``optional_*``.

Files: ``.json`` is parsed by a strict JSON parser (RFC 8259; no NaN or
Infinity, duplicate keys rejected); ``.yaml`` / ``.yml`` by PyYAML's safe
composer (YAML 1.1 scalars, anchors, aliases and ``<<`` merge keys allowed;
duplicate keys rejected). Bytes must be UTF-8 (a leading BOM is accepted).
Mapping keys must be strings (YAML integer keys are turned into their
decimal string). Embedded JSON strings (annotations pasted verbatim) are
parsed with :func:`parse_json`, giving every value one fixed line.
"""
from __future__ import annotations

import bisect
import difflib
import json
import json.decoder
import math
import os
import re
from fractions import Fraction
from typing import Any, Collection, Iterator

import yaml

from hamisim.errors import InputError
from hamisim.kube.quantity import parse_quantity

__all__ = [
    "MAX_SAFE_INT", "INT32_MAX", "Value", "Doc",
    "load_document", "load_mapping", "parse_yaml", "parse_json", "from_plain",
]

MAX_SAFE_INT = 2**53
INT32_MAX = 2**31 - 1
_MAX_FILE_BYTES = 1 << 30


def _describe(data: Any) -> str:
    """A short phrase naming a plain value's type and value, for messages."""
    if data is None:
        return "null"
    if isinstance(data, bool):
        return f"boolean {'true' if data else 'false'}"
    if isinstance(data, int):
        return f"integer {data}"
    if isinstance(data, float):
        return f"number {data!r}"
    if isinstance(data, str):
        text = data if len(data) <= 40 else data[:37] + "..."
        return f"string {text!r}"
    if isinstance(data, dict):
        return "a mapping"
    if isinstance(data, list):
        return "a list"
    return type(data).__name__


class Value:
    """One loaded value (mapping, list or scalar) with its file and line.

    ``context`` (for example ``"node 'n1': card 0"``) prefixes every message
    raised through this value and is inherited by its children.
    """

    __slots__ = ("path", "line", "_data", "_items", "_children", "_key_lines", "context")

    def __init__(self, path: str | None, line: int, data: Any = None, *,
                 items: list[Value] | None = None,
                 children: dict[str, Value] | None = None,
                 key_lines: dict[str, int] | None = None,
                 context: str = "") -> None:
        self.path = path
        self.line = line
        self._data = data
        self._items = items
        self._children = children
        self._key_lines = key_lines
        self.context = context

    # -- inspection -------------------------------------------------------
    @property
    def is_mapping(self) -> bool:
        return self._children is not None

    @property
    def is_list(self) -> bool:
        return self._items is not None

    @property
    def is_null(self) -> bool:
        return self._children is None and self._items is None and self._data is None

    @property
    def data(self) -> Any:
        """The plain Python value (dicts, lists, scalars), built on demand."""
        if self._children is not None:
            return {k: v.data for k, v in self._children.items()}
        if self._items is not None:
            return [v.data for v in self._items]
        return self._data

    @property
    def scalar(self) -> Any:
        """The scalar (str, int, float, bool or None); ``None`` for a mapping or list."""
        return self._data

    def describe(self) -> str:
        if self._children is not None:
            return "a mapping"
        if self._items is not None:
            return "a list"
        return _describe(self._data)

    def __repr__(self) -> str:
        return f"Value({self.data!r}, line={self.line})"

    # -- errors -----------------------------------------------------------
    def error(self, problem: str, line: int | None = None) -> InputError:
        """An :class:`InputError` at this value's line (or ``line``), context-prefixed."""
        if self.context:
            problem = f"{self.context}: {problem}"
        return InputError(self.path, self.line if line is None else line, problem)

    def with_context(self, context: str) -> Value:
        """The same value whose messages (and children's) start with ``context``."""
        clone = object.__new__(type(self))
        clone.path = self.path
        clone.line = self.line
        clone._data = self._data
        clone._items = self._items
        clone._children = self._children
        clone._key_lines = self._key_lines
        clone.context = context
        return clone

    def _child_context(self, child: Value) -> Value:
        return child.with_context(self.context) if self.context and not child.context else child

    # -- typed access -----------------------------------------------------
    def as_int(self, what: str, *, min: int | None = None, max: int | None = MAX_SAFE_INT) -> int:
        """This value as an ``int``; ``what`` names it in messages (e.g. ``"'count'"``)."""
        data = self._data
        if self._children is not None or self._items is not None or isinstance(data, bool) \
                or not isinstance(data, (int, float)):
            raise self.error(f"{what} must be an integer, got {self.describe()}")
        if isinstance(data, float):
            if math.isnan(data) or math.isinf(data):
                raise self.error(f"{what} must be an integer, got {data!r}")
            if data.is_integer():
                raise self.error(f"{what} must be an integer, got the number {data!r} "
                                 "(write it without a decimal point or exponent)")
            raise self.error(f"{what} must be an integer, got the fractional number {data!r}")
        limit = MAX_SAFE_INT if max is None else max
        if data > limit:
            raise self.error(f"{what} is too large: {data} (at most {limit})")
        if data < -MAX_SAFE_INT:
            raise self.error(f"{what} is too small: {data} (at least {-MAX_SAFE_INT})")
        if min is not None and data < min:
            raise self.error(f"{what} must be >= {min}, got {data}")
        return data

    def as_quantity(self, what: str) -> Fraction:
        """A Kubernetes quantity (``500m``, ``2Gi``, ``4``) as an exact fraction:
        a string or a number, never negative."""
        data = self._data
        if isinstance(data, bool) or self.is_mapping or self.is_list or data is None:
            raise self.error(f"{what} must be a quantity string, got {self.describe()}")
        text = str(data) if isinstance(data, (int, float)) else data
        try:
            q = parse_quantity(text)
        except ValueError as err:
            raise self.error(f"{what}: {err}") from None
        if q < 0:
            raise self.error(f"{what} must not be negative, got {text!r}")
        return q

    def as_str(self, what: str, *, nonempty: bool = False) -> str:
        """This value as a ``str`` (numbers and booleans are not converted)."""
        if not isinstance(self._data, str) or self._children is not None or self._items is not None:
            raise self.error(f"{what} must be a string, got {self.describe()}")
        if nonempty and not self._data.strip():
            raise self.error(f"{what} must not be empty")
        return self._data

    def as_bool(self, what: str) -> bool:
        if not isinstance(self._data, bool):
            raise self.error(f"{what} must be true or false, got {self.describe()}")
        return self._data

    def as_list(self, what: str) -> list[Value]:
        """The items of a list value (each a :class:`Value` with its own line)."""
        if self._items is None:
            raise self.error(f"{what} must be a list, got {self.describe()}")
        return [self._child_context(v) for v in self._items]

    def as_doc(self, what: str) -> Doc:
        """This mapping value as a :class:`Doc`."""
        if self._children is None:
            raise self.error(f"{what} must be a mapping, got {self.describe()}")
        if isinstance(self, Doc):
            return self
        return Doc(self.path, self.line, children=self._children,
                   key_lines=self._key_lines, context=self.context)


class Doc(Value):
    """A mapping value: keyed access with located, typed errors.

    Missing-key errors point at the mapping's own line; wrong-type errors at
    the offending value's line; unknown-key errors at the key's line.
    """

    __slots__ = ()

    def __contains__(self, key: str) -> bool:
        return key in self._children

    def __len__(self) -> int:
        return len(self._children)

    def keys(self) -> list[str]:
        return list(self._children)

    def items(self) -> Iterator[tuple[str, Value]]:
        for k, v in self._children.items():
            yield k, self._child_context(v)

    def key_line(self, key: str) -> int:
        """Line of ``key`` itself (the mapping's line when absent)."""
        return self._key_lines.get(key, self.line)

    def get(self, key: str) -> Value | None:
        """The value under ``key``, or ``None`` when the key is absent."""
        v = self._children.get(key)
        return None if v is None else self._child_context(v)

    def _present(self, key: str) -> Value | None:
        v = self.get(key)
        return None if v is None or v.is_null else v

    def require(self, key: str) -> Value:
        v = self.get(key)
        if v is None:
            raise self.error(f"missing required key '{key}'")
        return v

    def require_int(self, key: str, *, min: int | None = None, max: int | None = MAX_SAFE_INT) -> int:
        return self.require(key).as_int(f"'{key}'", min=min, max=max)

    def optional_int(self, key: str, default: int | None = None, *, min: int | None = None,
                     max: int | None = MAX_SAFE_INT) -> int | None:
        v = self._present(key)
        return default if v is None else v.as_int(f"'{key}'", min=min, max=max)

    def require_str(self, key: str, *, nonempty: bool = True) -> str:
        return self.require(key).as_str(f"'{key}'", nonempty=nonempty)

    def optional_str(self, key: str, default: str | None = None, *, nonempty: bool = False) -> str | None:
        v = self._present(key)
        return default if v is None else v.as_str(f"'{key}'", nonempty=nonempty)

    def optional_bool(self, key: str, default: bool | None = None) -> bool | None:
        v = self._present(key)
        return default if v is None else v.as_bool(f"'{key}'")

    def require_list(self, key: str) -> list[Value]:
        return self.require(key).as_list(f"'{key}'")

    def optional_list(self, key: str) -> list[Value] | None:
        v = self._present(key)
        return None if v is None else v.as_list(f"'{key}'")

    def require_doc(self, key: str) -> Doc:
        return self.require(key).as_doc(f"'{key}'")

    def optional_doc(self, key: str) -> Doc | None:
        v = self._present(key)
        return None if v is None else v.as_doc(f"'{key}'")

    def check_keys(self, allowed: Collection[str], what: str = "") -> None:
        """Reject the first key not in ``allowed`` (in file order), suggesting near misses."""
        for key in self._children:
            if key in allowed:
                continue
            hint = difflib.get_close_matches(key, list(allowed), n=1)
            where = f" in {what}" if what else ""
            expected = ", ".join(sorted(allowed))
            tip = f"; did you mean '{hint[0]}'?" if hint else ""
            raise self.error(f"unknown key '{key}'{where} (expected one of: {expected}){tip}",
                             line=self.key_line(key))


# ---------------------------------------------------------------------------
# loading

def read_text(path: str | os.PathLike[str], max_bytes: int = _MAX_FILE_BYTES) -> str:
    """A whole file as UTF-8 text (BOM stripped).

    ``InputError`` when unreadable, larger than ``max_bytes`` or not UTF-8 (at
    the line of the bad byte).
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(name, None, f"cannot read file: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise InputError(name, None, f"file is larger than {max_bytes >> 30} GiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(name, line, f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} "
                                     f"at offset {exc.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def load_document(path: str | os.PathLike[str]) -> Value:
    """Read a ``.yaml`` / ``.yml`` / ``.json`` file into a located :class:`Value`.

    Raises :class:`InputError` for an unreadable, empty, non-UTF-8 or
    syntactically broken file, or for duplicate mapping keys.
    """
    name = os.fspath(path)
    ext = os.path.splitext(name)[1].lower()
    if ext not in (".yaml", ".yml", ".json"):
        raise InputError(name, None, f"unsupported file type '{ext or '(none)'}' "
                                     "(expected .yaml, .yml or .json)")
    text = read_text(name)
    return parse_json(text, name) if ext == ".json" else parse_yaml(text, name)


def load_mapping(path: str | os.PathLike[str]) -> Doc:
    """:func:`load_document`, requiring a mapping at the top level."""
    root = load_document(path)
    if not root.is_mapping:
        raise root.error(f"the file must hold a mapping at the top level, got {root.describe()}")
    return root.as_doc("top level")


def from_plain(data: Any, path: str | None, line: int, context: str = "") -> Value:
    """Wrap plain Python data (e.g. a CSV row as a dict) with one fixed line.

    Returns a :class:`Doc` for a dict. Keys must be strings.
    """
    if isinstance(data, dict):
        children = {}
        for k, v in data.items():
            if not isinstance(k, str):
                raise InputError(path, line, f"mapping key must be a string, got {_describe(k)}")
            children[k] = from_plain(v, path, line)
        return Doc(path, line, children=children, key_lines=dict.fromkeys(children, line),
                   context=context)
    if isinstance(data, (list, tuple)):
        return Value(path, line, items=[from_plain(v, path, line) for v in data], context=context)
    return Value(path, line, data, context=context)


# -- YAML -------------------------------------------------------------------

_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


class _SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader (libyaml's parser when available) with memoised
    implicit-tag resolution: large cluster files repeat the same few keys and
    numbers, and resolution dominates the load time otherwise."""

    _resolved: dict[tuple[str, bool, bool], str] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit is not None:
            key = (value, implicit[0], implicit[1])
            tag = self._resolved.get(key)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(self._resolved) < 100_000:
                    self._resolved[key] = tag
            return tag
        return super().resolve(kind, value, implicit)


def parse_yaml(text: str, path: str | None) -> Value:
    """Parse YAML text (one document) into a located :class:`Value`."""
    loader = None
    try:
        try:
            loader = _SafeLoader(text)
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            problem = exc.problem or exc.context or "syntax error"
            if exc.context and exc.problem:
                problem = (f"{exc.context}, {problem}" if problem.startswith("but ")
                           else f"{problem} ({exc.context})")
            raise InputError(path, line, f"invalid YAML: {problem}") from None
        except yaml.reader.ReaderError as exc:
            line = text.count("\n", 0, max(exc.position, 0)) + 1
            raise InputError(path, line, f"invalid YAML: unacceptable character "
                                         f"#x{exc.character:04x} ({exc.reason})") from None
        except yaml.YAMLError as exc:  # pragma: no cover - other PyYAML errors
            raise InputError(path, None, f"invalid YAML: {exc}") from None
        if node is None:
            raise InputError(path, 1, "file is empty (expected a mapping)")
        return _YamlBuilder(loader, path).build(node)
    finally:
        if loader is not None:
            loader.dispose()


class _YamlBuilder:
    def __init__(self, loader: Any, path: str | None) -> None:
        self.loader = loader
        self.path = path
        self.memo: dict[int, Value] = {}
        self.active: set[int] = set()
        self.scalars: dict[tuple[str, str], Any] = {}

    def build(self, node: yaml.Node) -> Value:
        key = id(node)
        if key in self.memo:  # aliases share one Value: no exponential blow-up
            return self.memo[key]
        if key in self.active:
            raise InputError(self.path, node.start_mark.line + 1, "invalid YAML: recursive alias")
        self.active.add(key)
        try:
            value = self._build(node)
        finally:
            self.active.discard(key)
        self.memo[key] = value
        return value

    def _build(self, node: yaml.Node) -> Value:
        line = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode):
            return Value(self.path, line, self._scalar(node))
        if isinstance(node, yaml.SequenceNode):
            return Value(self.path, line, items=[self.build(n) for n in node.value])
        children: dict[str, Value] = {}
        key_lines: dict[str, int] = {}
        merges: list[yaml.Node] = []
        for knode, vnode in node.value:
            kline = knode.start_mark.line + 1
            if knode.tag == _MERGE_TAG:
                merges.append(vnode)
                continue
            k = self._key(knode)
            if k in children:
                raise InputError(self.path, kline,
                                 f"duplicate key '{k}' (first given on line {key_lines[k]})")
            children[k] = self.build(vnode)
            key_lines[k] = kline
        for mnode in merges:  # own keys win, then earlier merged mappings
            sources = mnode.value if isinstance(mnode, yaml.SequenceNode) else [mnode]
            for src in sources:
                merged = self.build(src)
                if not merged.is_mapping:
                    raise InputError(self.path, src.start_mark.line + 1,
                                     "invalid YAML: '<<' merges only mappings")
                doc = merged.as_doc("merge")
                for k, v in doc.items():
                    if k not in children:
                        children[k] = v
                        key_lines[k] = doc.key_line(k)
        return Doc(self.path, line, children=children, key_lines=key_lines)

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag == _STR_TAG:
            return node.value
        key = (node.tag, node.value)
        if key in self.scalars:
            return self.scalars[key]
        try:
            data = self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise InputError(self.path, node.start_mark.line + 1,
                             f"invalid YAML value: {exc}") from None
        if not isinstance(data, (str, int, float, bool, type(None))):
            # timestamps, binary: keep the source text so messages show it
            data = node.value
        self.scalars[key] = data
        return data

    def _key(self, knode: yaml.Node) -> str:
        line = knode.start_mark.line + 1
        if not isinstance(knode, yaml.ScalarNode):
            raise InputError(self.path, line, "mapping keys must be plain strings, "
                                              "not lists or mappings")
        k = self._scalar(knode)
        if isinstance(k, int) and not isinstance(k, bool):
            return str(k)
        if not isinstance(k, str):
            raise InputError(self.path, line, f"mapping key must be a string, got "
                                              f"{_describe(k)} (quote it: '{knode.value}')")
        return k


# -- JSON -------------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_NONSTANDARD = ("NaN", "Infinity", "-Infinity")
_MAX_DEPTH = 500


class _JsonError(Exception):
    def __init__(self, pos: int, msg: str) -> None:
        super().__init__(msg)
        self.pos = pos
        self.msg = msg


def parse_json(text: str, path: str | None, *, line: int | None = None,
               first_line: int = 1, context: str = "") -> Value:
    """Parse strict JSON text into a located :class:`Value`.

    Lines count from ``first_line``. With ``line`` given, every value gets
    that one line and errors say where in the text they are (for JSON
    embedded in a string, e.g. a pasted annotation). ``context`` prefixes
    every message, as :meth:`Value.with_context` does.
    """
    parser = _JsonParser(text, path, line, first_line)
    prefix = f"{context}: " if context else ""
    try:
        root = parser.parse()
    except _JsonError as exc:
        where = f" (at character {exc.pos + 1})" if line is not None else ""
        raise InputError(path, parser.line_of(exc.pos),
                         f"{prefix}invalid JSON: {exc.msg}{where}") from None
    except InputError as exc:
        if not prefix:
            raise
        raise InputError(exc.path, exc.line, prefix + exc.problem) from None
    return root.with_context(context) if context else root


class _JsonParser:
    def __init__(self, text: str, path: str | None, fixed_line: int | None, first_line: int) -> None:
        self.s = text
        self.path = path
        self.fixed = fixed_line
        self.first = first_line
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def line_of(self, pos: int) -> int:
        if self.fixed is not None:
            return self.fixed
        return bisect.bisect_left(self.newlines, pos) + self.first

    def ws(self, i: int) -> int:
        return _WS.match(self.s, i).end()

    def parse(self) -> Value:
        i = self.ws(0)
        if i == len(self.s):
            raise InputError(self.path, self.fixed or self.first,
                             "file is empty (expected a JSON object)" if self.fixed is None
                             else "invalid JSON: empty string")
        value, i = self.value(i, 0, [])
        i = self.ws(i)
        if i != len(self.s):
            raise _JsonError(i, "extra data after the end of the JSON value")
        return value

    def eof(self, opened: list[tuple[str, int]]) -> _JsonError:
        end = len(self.s.rstrip(" \t\r\n")) - 1  # report the last line with text
        if opened:
            ch, pos = opened[-1]
            where = "" if self.fixed is not None else f" on line {self.line_of(pos)}"
            return _JsonError(end, f"unexpected end of input: '{ch}' opened{where} is never closed")
        return _JsonError(end, "unexpected end of input")

    def value(self, i: int, depth: int, opened: list[tuple[str, int]]) -> tuple[Value, int]:
        s = self.s
        if i >= len(s):
            raise self.eof(opened)
        if depth > _MAX_DEPTH:
            raise _JsonError(i, f"nesting deeper than {_MAX_DEPTH} levels")
        ch = s[i]
        line = self.line_of(i)
        if ch == "{":
            return self.obj(i, depth, opened)
        if ch == "[":
            opened.append(("[", i))
            items: list[Value] = []
            i = self.ws(i + 1)
            if i < len(s) and s[i] == "]":
                opened.pop()
                return Value(self.path, line, items=items), i + 1
            while True:
                item, i = self.value(self.ws(i), depth + 1, opened)
                items.append(item)
                i = self.ws(i)
                if i >= len(s):
                    raise self.eof(opened)
                if s[i] == "]":
                    opened.pop()
                    return Value(self.path, line, items=items), i + 1
                if s[i] != ",":
                    raise _JsonError(i, f"expected ',' or ']' in a list, got {s[i]!r}")
                i += 1
        if ch == '"':
            text, i = self.string(i, opened)
            return Value(self.path, line, text), i
        m = _NUMBER.match(s, i)
        if m:
            tok = m.group(0)
            if m.group(1) or m.group(2):
                num: Any = float(tok)
            else:
                if len(tok) > 4000:
                    raise _JsonError(i, "number is too long")
                num = int(tok)
            return Value(self.path, line, num), m.end()
        for word, lit in _LITERALS.items():
            if s.startswith(word, i):
                return Value(self.path, line, lit), i + len(word)
        for word in _NONSTANDARD:
            if s.startswith(word, i):
                raise _JsonError(i, f"{word} is not allowed in JSON (numbers must be finite)")
        raise _JsonError(i, f"expected a value, got {ch!r}")

    def string(self, i: int, opened: list[tuple[str, int]]) -> tuple[str, int]:
        try:
            return json.decoder.scanstring(self.s, i + 1, True)
        except json.JSONDecodeError as exc:
            if exc.msg.startswith("Unterminated string"):
                raise _JsonError(i, "unterminated string") from None
            if exc.msg.startswith("Invalid control character"):
                raise _JsonError(exc.pos, "control character (e.g. a raw newline) inside a string") from None
            raise _JsonError(exc.pos, exc.msg.lower()) from None

    def obj(self, i: int, depth: int, opened: list[tuple[str, int]]) -> tuple[Value, int]:
        s = self.s
        line = self.line_of(i)
        opened.append(("{", i))
        children: dict[str, Value] = {}
        key_lines: dict[str, int] = {}
        i = self.ws(i + 1)
        if i < len(s) and s[i] == "}":
            opened.pop()
            return Doc(self.path, line, children=children, key_lines=key_lines), i + 1
        while True:
            if i >= len(s):
                raise self.eof(opened)
            if s[i] != '"':
                raise _JsonError(i, f"expected a quoted key, got {s[i]!r}")
            kline = self.line_of(i)
            key, i = self.string(i, opened)
            if key in children:
                raise InputError(self.path, kline,
                                 f"duplicate key '{key}' (first given on line {key_lines[key]})"
                                 if self.fixed is None else
                                 f"invalid JSON: duplicate key '{key}'")
            i = self.ws(i)
            if i >= len(s):
                raise self.eof(opened)
            if s[i] != ":":
                raise _JsonError(i, f"expected ':' after key '{key}', got {s[i]!r}")
            children[key], i = self.value(self.ws(i + 1), depth + 1, opened)
            key_lines[key] = kline
            i = self.ws(i)
            if i >= len(s):
                raise self.eof(opened)
            if s[i] == "}":
                opened.pop()
                return Doc(self.path, line, children=children, key_lines=key_lines), i + 1
            if s[i] != ",":
                raise _JsonError(i, f"expected ',' or '}}' in an object, got {s[i]!r}")
            i = self.ws(i + 1)
