"""Writing a run's results folder atomically (DESIGN §5).

Everything is written into a hidden sibling folder first and moved into place
at the end, so a crash or Ctrl-C never leaves a half-written results folder;
a previous folder of the same name is replaced only once the new one is
complete. Nothing written depends on the wall clock, so the same inputs and
seed give byte-identical files.
"""
from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

import pandas as pd

__all__ = ["FORMATS", "atomic_folder", "write_table", "write_json", "read_table"]

FORMATS = ("parquet", "csv")


@contextmanager
def atomic_folder(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``target`` when the block succeeds."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


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
