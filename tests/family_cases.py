"""What the device-family test modules share: HAMi's vectors as pytest cases and
the checks every family's cases make (Fit, request generation, type check), the
CLI run in a folder, and the two engines' outputs compared table by table."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.cluster import SchedulerConfig
from hamisim.devices import Family, family
from hamisim.hami import reference as ref
from hamisim.pods import Container, Request, container_request

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


def assert_fit_case(ops, case: dict, word: str) -> list[dict]:
    """A ``TestDevices_Fit`` case on a backend of :mod:`vector_ops`: HAMi's fit and
    reason, and on a fit the cards in HAMi's order, each of the request's
    ``word``; returns the picks."""
    ok, picks, reason = ops.fit(case)
    exp = case["expect"]
    assert (ok, reason) == (exp["fit"], exp["reason"])
    if exp["fit"]:
        assert [p["uuid"] for p in picks] == exp["devices_ids"]
        assert all(p["type"] == word for p in picks)
    return picks


def assert_generated(fam: Family, c: Container, exp: dict) -> None:
    """``GenerateResourceRequests`` of ``c`` as HAMi's case ``exp`` has it (empty:
    no request), by the family's own function and by hamisim's pod model."""
    if not exp:
        assert fam.generate(c) is None and container_request(c, SchedulerConfig()) is None
        return
    fields = (exp["nums"], exp["memreq"], exp["mempercentagereq"], exp["coresreq"])
    assert fam.generate(c) == fields
    assert container_request(c, SchedulerConfig()) == Request(*fields, fam.word)


def assert_type_check(fam: Family, case: dict, card: ref.CardUsage) -> None:
    """``checkType``'s case: a request of another type than the family's word is
    no request of the family, and its Fit refuses ``card`` (``CardTypeMismatch``)."""
    ok = case["expect"][0]
    assert (family(case["request_type"]) is fam) == ok
    res = ref.fit([card], Request(1, 0, 100, 0, case["request_type"]), {}, "spread")
    assert res.fit == ok
    if not ok:
        assert res.reason == "1/1 CardTypeMismatch"


def _attempt(sched, pod, draw: float):
    """One attempt's outcome as the two engines must agree on it (the webhook's
    refusal as its text)."""
    try:
        d = sched.schedule(pod, draw)
    except ValueError as exc:
        return str(exc)
    return d.node, [[(p.uuid, p.usedmem, p.usedcores) for p in c] for c in d.containers], \
        d.message


def assert_sequence_agrees(cluster, data, pod_of, steps: int = 25) -> None:
    """Random creates and deletes on both engines (``pod_of(name)`` is the pods'
    strategy): every attempt and the final usage per card agree."""
    from hypothesis import strategies as st

    from hamisim.hami.reference import ReferenceScheduler
    from hamisim.sim.kernel import KernelScheduler
    r, k = ReferenceScheduler(cluster), KernelScheduler(cluster)
    names: list[str] = []
    for step in range(data.draw(st.integers(1, steps))):
        if names and data.draw(st.integers(0, 3)) == 0:
            name = names.pop(data.draw(st.integers(0, len(names) - 1)))
            r.delete(name)
            k.delete(name)
            continue
        pod = data.draw(pod_of(f"p{step}"))
        tie = data.draw(st.floats(0, 0.999))
        assert _attempt(r, pod, tie) == _attempt(k, pod, tie)
        if pod.name in r.pods:
            names.append(pod.name)
    assert r.usage_by_card() == k.usage_by_card()
