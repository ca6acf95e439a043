"""Writing a run's results folder atomically (DESIGN §5).

Everything is written into a hidden sibling folder first and moved into place
at the end, so a crash or Ctrl-C never leaves a half-written results folder
(nor the hidden one); a previous folder of the same name is replaced only
once the new one is complete, and an existing *file* is never replaced.
The same inputs, seed and ``--metrics-start`` give byte-identical files: the
only value taken from the wall clock is ``run --metrics-out``'s default start
(the moment of the run), which summary.json records so that giving it as
``--metrics-start`` writes the same bytes again. SIGTERM is the same as Ctrl-C here once
:func:`sigterm_as_interrupt` is installed (the CLI does).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

import pandas as pd

from hamisim.errors import InputError, Terminated

__all__ = ["FORMATS", "atomic_folder", "atomic_file", "write_table", "write_json", "read_table",
           "TableFiles", "sigterm_as_interrupt"]

FORMATS = ("parquet", "csv")


@contextmanager
def atomic_file(target: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary path beside ``target`` to write; it replaces ``target`` when
    the block ends normally and is removed when it raises (or on Ctrl-C), so
    ``target`` is never half-written. The file gets the permissions any new
    file gets (the umask's), as if ``target`` were written directly."""
    name = os.fspath(target)
    folder = os.path.dirname(os.path.abspath(name))
    while True:     # mkstemp's own files are private (0600): not for results
        tmp = os.path.join(folder, f".{os.path.basename(name)}.{os.getpid()}."
                                   f"{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        os.replace(tmp, name)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextmanager
def atomic_folder(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``target`` when the block succeeds.

    On any exception, Ctrl-C (and SIGTERM, :func:`sigterm_as_interrupt`)
    included, the temporary folder is removed and ``target`` is left as it
    was. The final swap (previous folder aside, new folder in, previous folder
    removed) and that removal hold both signals back, so an interrupt never
    leaves neither or both, nor half a temporary folder; one that arrived
    during the swap is acted on right after it, as its handler would have (the
    :class:`KeyboardInterrupt` then carries ``results_written``, ``target``:
    the folder is complete, and the CLI says so). ``InputError`` when
    ``target`` is an existing file (it is never replaced by a folder) or
    cannot be created.
    """
    target = Path(target)
    if target.name in ("", ".", ".."):
        raise InputError(str(target), None, "the results folder needs a name of its own "
                                            "(not '.', '..' or '/')")
    if target.exists() and not target.is_dir():
        raise InputError(str(target), None, "exists and is not a folder; results are written "
                                            "to a folder (choose another --out)")
    tmp = target.parent / f".{target.name}.partial-{os.getpid()}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
    except OSError as exc:
        blocker = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
        why = f"{blocker} is a file" if blocker is not None else exc.strerror or str(exc)
        raise InputError(str(target), None, f"cannot create the results folder: {why}") from None
    try:
        yield tmp
        with _interrupts_held() as held:
            _swap_in(tmp, target)
    except BaseException:
        with _interrupts_held():        # already unwinding: one held here is moot
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if held:
        _deliver(held[0], target)


def _swap_in(tmp: Path, target: Path) -> None:
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    shutil.rmtree(old, ignore_errors=True)
    had = target.exists()
    if had:
        os.replace(target, old)
    try:
        os.replace(tmp, target)
    except BaseException:
        if had:
            os.replace(old, target)     # the previous results stay
        raise
    shutil.rmtree(old, ignore_errors=True)


#: the signals that interrupt a run: Ctrl-C, and SIGTERM once turned into one
_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _interrupts_held() -> Iterator[list[int]]:
    """Ctrl-C and SIGTERM wait until the block ends: one that arrives inside it
    is only appended to the yielded list, for the caller to act on after the
    block (:func:`_deliver`). Main thread only (elsewhere a no-op); a signal
    ignored, or whose handler was not installed from Python, is left alone."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = {sig: signal.getsignal(sig) for sig in _INTERRUPTS}
    previous = {sig: handler for sig, handler in previous.items()
                if handler is not None and handler != signal.SIG_IGN}

    def hold(signum, frame) -> None:
        held.append(signum)
    for sig in previous:
        signal.signal(sig, hold)
    try:
        yield held
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _deliver(signum: int, folder: Path) -> None:
    """Act on the interrupt ``signum`` held back while ``folder`` was swapped in,
    as its handler does (Ctrl-C and SIGTERM raise, SIGTERM's default ends the
    process); a :class:`KeyboardInterrupt` raised carries ``results_written``."""
    try:
        signal.raise_signal(signum)     # the Python handler runs before it returns
    except KeyboardInterrupt as exc:
        exc.results_written = folder
        raise


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside the block SIGTERM raises :class:`~hamisim.errors.Terminated` (a
    :class:`KeyboardInterrupt`), so that ``timeout``, a batch system or a CI job
    stopping the process unwinds it as Ctrl-C does: every results folder is
    written whole or not at all. Main thread only (elsewhere a no-op), and not
    where SIGTERM is ignored (the process was started to ignore it)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) in (signal.SIG_IGN, None):
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def write_table(df: pd.DataFrame, folder: Path, name: str, fmt: str) -> Path:
    """``folder/name.parquet`` or ``folder/name.csv``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (parquet or csv)")
    path = folder / f"{name}.{fmt}"
    if fmt == "parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_csv(path, index=False, lineterminator="\n")
    return path


class TableFiles:
    """Tables written batch by batch into a folder as a run produces them.

    ``write(name, table)`` appends a batch (a :class:`pyarrow.Table` as the
    recorder makes them, or a DataFrame) to ``folder/name.<fmt>``: Parquet as
    one row group per batch (the file's schema is the first batch's, object
    columns as strings), CSV rows after one header. The files hold the same rows,
    and read back as the same table, as :func:`write_table` of the whole table;
    :meth:`close` finishes them. ``seconds`` is the time spent writing.
    """

    def __init__(self, folder: Path, fmt: str) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r} (parquet or csv)")
        self.folder = Path(folder)
        self.fmt = fmt
        self.seconds = 0.0
        self._writers: dict[str, object] = {}
        self._schemas: dict = {}
        self.paths: dict[str, Path] = {}

    def write(self, name: str, table) -> None:
        """Append a batch (a :class:`pyarrow.Table`, or a DataFrame) to ``name``."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        started = time.perf_counter()
        path = self.paths.setdefault(name, self.folder / f"{name}.{self.fmt}")
        if self.fmt == "csv":
            frame = table.to_pandas() if isinstance(table, pa.Table) else table
            first = name not in self._writers
            frame.to_csv(path, index=False, lineterminator="\n", mode="w" if first else "a",
                         header=first)
            self._writers[name] = True
        else:
            if not isinstance(table, pa.Table):
                fields = [pa.field(c, _arrow_type(table[c].dtype)) for c in table.columns]
                table = pa.Table.from_pandas(table, schema=pa.schema(fields),
                                             preserve_index=False)
            schema = self._schemas.get(name)
            if schema is None:
                schema = self._schemas[name] = table.schema
                self._writers[name] = pq.ParquetWriter(path, schema)
            self._writers[name].write_table(table.cast(schema))
        self.seconds += time.perf_counter() - started

    def close(self) -> None:
        """Finish every file."""
        for writer in self._writers.values():
            if writer is not True:
                writer.close()
        self._writers = {name: True for name in self._writers}


def _arrow_type(dtype):
    """The Parquet column type of a batch column: numbers as they are, the rest
    (names, labels, annotations; object or string dtype) as strings."""
    import pyarrow as pa
    if pd.api.types.is_bool_dtype(dtype):
        return pa.bool_()
    if pd.api.types.is_integer_dtype(dtype):
        return pa.int64()
    if pd.api.types.is_float_dtype(dtype):
        return pa.float64()
    return pa.string()


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    path = Path(path)
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


def write_json(obj: Mapping, path: Path) -> Path:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n")
    return path


def _jsonable(value):
    if hasattr(value, "item"):          # numpy scalars
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
