"""Writing a run's results folder atomically (DESIGN §5).

Everything is written into a hidden sibling folder first and moved into place
at the end, so a crash or Ctrl-C never leaves a half-written results folder
(nor the hidden one); a previous folder of the same name is replaced only
once the new one is complete, and an existing *file* is never replaced.
Nothing written depends on the wall clock, so the same inputs and seed give
byte-identical files.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

import pandas as pd

from hamisim.errors import InputError

__all__ = ["FORMATS", "atomic_folder", "write_table", "write_json", "read_table"]

FORMATS = ("parquet", "csv")


@contextmanager
def atomic_folder(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``target`` when the block succeeds.

    On any exception, Ctrl-C included, the temporary folder is removed and
    ``target`` is left as it was. The final swap (previous folder aside, new
    folder in, previous folder removed) ignores Ctrl-C, so an interrupt never
    leaves neither or both. ``InputError`` when ``target`` is an existing
    file (it is never replaced by a folder) or cannot be created.
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
        with _sigint_ignored():
            _swap_in(tmp, target)
    except BaseException:
        with _sigint_ignored():
            shutil.rmtree(tmp, ignore_errors=True)
        raise


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


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ctrl-C is ignored inside the block (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:                # a handler not installed from Python
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


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
