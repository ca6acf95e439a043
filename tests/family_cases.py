"""What the device-family test modules share: HAMi's vectors as pytest cases,
the CLI run in a folder, and the two engines' outputs compared table by table."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hamisim.cli import main

VECTORS = Path(__file__).parent / "data" / "hami_vectors"


def vector_cases(name: str, op: str | None = None) -> list:
    """The cases of ``tests/data/hami_vectors/<name>`` (those of ``op`` when given),
    as pytest params named by their Go subtest."""
    doc = json.loads((VECTORS / name).read_text())
    return [pytest.param(c, id=f"{i}-{c['name'][:60]}") for i, c in enumerate(doc["cases"])
            if op is None or c.get("op") == op]


def run_in(d: Path, out: str, *extra: str) -> None:
    """``hamisim run`` on ``d/cluster.yaml`` and ``d/trace.jsonl`` into ``d/out``."""
    assert main(["run", str(d / "cluster.yaml"), str(d / "trace.jsonl"), "--out", str(d / out),
                 "--no-progress", *extra]) == 0


def assert_engines_agree(d: Path) -> None:
    """The runs in ``d/compiled`` and ``d/python`` (``--backend reference``)
    wrote equal pods, events and time series."""
    for table in ("pods", "events", "timeseries"):
        pd.testing.assert_frame_equal(pd.read_parquet(d / "compiled" / f"{table}.parquet"),
                                      pd.read_parquet(d / "python" / f"{table}.parquet"))
