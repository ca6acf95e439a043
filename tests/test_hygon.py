"""Hygon DCU (hamisim.devices.hygon): HAMi v2.10.0's unit-test facts on both
backends, and DCU nodes beside NVIDIA nodes through the CLI.

The vectors (tests/data/hami_vectors/hygon_*.json) are the cases of
``pkg/device/hygon/device_test.go`` at v2.10.0: ``TestDevices_Fit`` on the
reference and on the compiled kernel, request generation and the type filter
on the model.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from family_cases import VECTORS, assert_engines_agree, run_in as _run, vector_cases as _cases
from vector_ops import BACKENDS

from hamisim.cli import main
from hamisim.cluster import SchedulerConfig
from hamisim.devices import hygon
from hamisim.hami import reference as ref
from hamisim.kube.quantity import parse_quantity
from hamisim.pods import Container, Request, container_request


# -- HAMi's unit tests ------------------------------------------------------------
@pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))
@pytest.mark.parametrize("case", _cases("hygon_fit.json"))
def test_hygon_fit(ops, case):
    ok, picks, reason = ops.fit(case)
    exp = case["expect"]
    assert ok == exp["fit"]
    assert reason == exp["reason"]
    if "devices_ids" in exp:
        assert [p["uuid"] for p in picks] == exp["devices_ids"]
    if "count" in exp and exp["fit"]:
        # (a failed Fit's partial picks, which HAMi's test counts, are dropped
        # by its caller, fitInDevices: hamisim's Fit returns none)
        assert len(picks) == exp["count"]
    assert all(p["type"] == "DCU" for p in picks)


def _amount(v):
    # Go's Quantity.AsInt64 of the test's value (a quantity string: its integer value)
    if isinstance(v, str):
        q = parse_quantity(v)
        assert q.denominator == 1
        return int(q)
    return v


REQUEST_CASES = [c for c in _cases("hygon_requests.json") if c.values[0]["op"] == "generate"]
TYPE_CASES = [c for c in _cases("hygon_requests.json") if c.values[0]["op"] == "check_type"]


@pytest.mark.parametrize("case", REQUEST_CASES)
def test_hygon_request_generation(case):
    c = Container(limits={k: _amount(v) for k, v in case["limits"].items()},
                  requests={k: _amount(v) for k, v in case["requests"].items()})
    factor = case.get("memory_factor", 0)
    fields = hygon.request_fields(c, factor)
    exp = case["expect"]
    if not exp:
        assert fields is None
        return
    assert fields == (exp["nums"], exp["memreq"], exp["mempercentagereq"], exp["coresreq"])
    assert exp["type"] == hygon.DCU.word
    if factor <= hygon.MEMORY_FACTOR:
        # the pod model's request is the family's (the chart's memoryFactor, 1:
        # like 0, no scaling)
        nums, memreq, pct, cores = fields
        assert container_request(c, SchedulerConfig()) == Request(
            nums=nums, memreq=memreq, mempercentagereq=pct, coresreq=cores, type="DCU")


@pytest.mark.parametrize("case", TYPE_CASES)
def test_hygon_type_filter(case):
    assert ref.type_allowed(case["annotations"], case["card_type"], hygon.DCU.use_type,
                            hygon.DCU.nouse_type) == case["expect"]


def test_the_vectors_cover_hamis_tests():
    fit = json.loads((VECTORS / "hygon_fit.json").read_text())["cases"]
    reqs = json.loads((VECTORS / "hygon_requests.json").read_text())["cases"]
    assert len(fit) >= 15
    assert sum(c["op"] == "generate" for c in reqs) >= 8
    assert sum(c["op"] == "check_type" for c in reqs) >= 10


# -- DCU nodes beside NVIDIA nodes -------------------------------------------------
MIXED = """\
nodes:
  - name_prefix: t4
    replicas: 2
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name_prefix: dcu
    replicas: 2
    gpus: 8
    card: {type: DCU, devmem: 32768}
  - name: both
    devices:
      - {id: both-gpu, type: NVIDIA-Tesla T4, devmem: 15360}
      - {id: both-dcu, type: DCU, devmem: 32768}
"""


def _trace(n: int = 120) -> str:
    rows = []
    for i in range(n):
        if i % 3 == 0:
            c = [{"limits": {"hygon.com/dcunum": 1 + i % 2, "hygon.com/dcumem": 4096 * (1 + i % 4),
                             "hygon.com/dcucores": 25}}]
        elif i % 3 == 1:
            c = [{"gpu": 1, "gpumem": 2048 * (1 + i % 3), "gpucores": 30}]
        else:
            # one container per family
            c = [{"gpu": 1, "gpumem": 1024}, {"limits": {"hygon.com/dcunum": 1}}]
        rows.append(json.dumps({"name": f"p{i}", "arrival": 15.0 * i, "duration": 900,
                                "containers": c}))
    return "\n".join(rows) + "\n"


@pytest.fixture
def mixed(tmp_path):
    (tmp_path / "cluster.yaml").write_text(MIXED)
    (tmp_path / "trace.jsonl").write_text(_trace())
    return tmp_path


def test_dcu_pods_land_on_dcu_cards_and_carry_their_annotation(mixed, capsys):
    _run(mixed, "out")
    console = capsys.readouterr().out
    assert "compiled (hamisim._replay)" in console
    assert "17 DCU, 9 NVIDIA-Tesla T4" in console
    pods = pd.read_parquet(mixed / "out" / "pods.parquet")
    bound = pods[pods["node"].notna()]
    assert len(bound) == 120
    for _, p in bound.iterrows():
        lists = p["devices"].split(" ")
        words = [{e.split(",")[1] for e in part.replace(";", ":").split(":") if e}
                 for part in lists]
        if p["pod"] in {f"p{i}" for i in range(0, 120, 3)}:
            assert words == [{"DCU"}] and p["node"].startswith(("dcu", "both"))
        elif p["pod"] in {f"p{i}" for i in range(1, 120, 3)}:
            assert words == [{"NVIDIA"}] and p["node"].startswith(("t4", "both"))
        else:
            # NVIDIA's list first, then DCU's: only the node with both has both
            assert words == [{"NVIDIA"}, {"DCU"}] and p["node"] == "both"
    # a DCU card's usage is what its pods asked
    ids = {d.split(",")[0] for d in bound["devices"] for d in d.replace(" ", "").replace(
        ";", ":").split(":") if d}
    assert any(i.startswith("GPU-dcu") for i in ids)


def test_the_compiled_engine_equals_the_python_engine_on_a_mixed_cluster(mixed):
    _run(mixed, "compiled")
    _run(mixed, "python", "--backend", "reference")
    assert_engines_agree(mixed)


def test_a_container_asking_two_families_is_a_located_error(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(MIXED)
    (tmp_path / "trace.jsonl").write_text(json.dumps({
        "name": "p", "arrival": 0, "duration": 10,
        "containers": [{"gpu": 1, "limits": {"hygon.com/dcunum": 1}}]}) + "\n")
    code = main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.jsonl"),
                 "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert "trace.jsonl:1" in err and "NVIDIA and DCU" in err
    assert not (tmp_path / "out").exists()


def test_a_dcu_request_reads_hygons_own_filters():
    cards = [ref.CardUsage("d0", 0, "DCU", 10, 32768, 100),
             ref.CardUsage("d1", 1, "Hygon-DCU-Z100", 10, 32768, 100)]
    r = Request(1, 1024, 0, 10, "DCU")
    # NVIDIA's annotations do not bind a DCU request ...
    res = ref.fit(cards, r, {"nvidia.com/use-gpuuuid": "nowhere",
                             "nvidia.com/vgpu-mode": "mig"}, "spread")
    assert res.fit and [p.uuid for p in res.picks] == ["d1"]
    # ... Hygon's do
    res = ref.fit(cards, r, {"hygon.com/nouse-dcutype": "z100"}, "spread")
    assert res.fit and [p.uuid for p in res.picks] == ["d0"]
    res = ref.fit(cards, r, {"hygon.com/use-gpuuuid": "nowhere"}, "spread")
    assert not res.fit and res.reason == "2/2 CardUuidMismatch"


def test_dcu_values_hami_drops_or_caps_are_located_warnings(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(MIXED)
    rows = [{"limits": {"hygon.com/dcunum": 1, "hygon.com/dcumem": 17179869184}},
            {"limits": {"hygon.com/dcunum": 1, "hygon.com/dcucores": 150}},
            {"limits": {"hygon.com/dcunum": 0}}]
    (tmp_path / "trace.jsonl").write_text("".join(
        json.dumps({"name": f"p{i}", "arrival": i, "duration": 60, "containers": [c]}) + "\n"
        for i, c in enumerate(rows)))
    _run(tmp_path, "out")
    err = capsys.readouterr().err
    assert ("trace.jsonl:1: warning: pod 'p0': hygon.com/dcunum 1, hygon.com/dcumem "
            "17179869184: HAMi's Hygon DCU request generation drops this request") in err
    assert ("trace.jsonl:2: warning: pod 'p1': hygon.com/dcucores 150 is more than one card's "
            "100 percent") in err
    assert "trace.jsonl:3: warning: pod 'p2': hygon.com/dcunum 0: HAMi's Hygon DCU" in err
    pods = pd.read_parquet(tmp_path / "out" / "pods.parquet").set_index("pod")
    # as HAMi: the dropped requests place no DCU; 150 % is charged as 100
    assert pods["devices"].isna().tolist() == [True, False, True]
    assert pods.loc["p1", "devices"].endswith(",DCU,32768,100:;")


def test_a_dcu_quantity_with_a_unit_is_a_located_error(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(MIXED)
    (tmp_path / "trace.jsonl").write_text(json.dumps({
        "name": "p", "arrival": 0, "duration": 10,
        "containers": [{"limits": {"hygon.com/dcunum": 1, "hygon.com/dcumem": "16Gi"}}]}) + "\n")
    code = main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.jsonl"),
                 "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "trace.jsonl:1" in err and "'hygon.com/dcumem' must be an integer" in err


def test_nvidias_quota_counts_nvidia_cards_alone(tmp_path):
    """HAMi credits each family's usage to its own resource names: DCU pods in a
    namespace with a limits.nvidia.com/gpumem quota neither use it up nor are
    refused by it; the NVIDIA pods still are."""
    (tmp_path / "cluster.yaml").write_text(
        MIXED + "quotas:\n  team:\n    limits.nvidia.com/gpumem: 4096\n")
    rows = []
    for i in range(8):
        c = ([{"limits": {"hygon.com/dcunum": 1, "hygon.com/dcumem": 8192}}] if i % 2 == 0
             else [{"gpu": 1, "gpumem": 2048}])
        if i == 7:      # a pod of each family in one
            c = [{"gpu": 1, "gpumem": 1024}, {"limits": {"hygon.com/dcunum": 1}}]
        rows.append(json.dumps({"name": f"p{i}", "arrival": i, "duration": 600,
                                "namespace": "team", "containers": c}))
    (tmp_path / "trace.jsonl").write_text("\n".join(rows) + "\n")
    for out, extra in (("compiled", ()), ("python", ("--backend", "reference"))):
        _run(tmp_path, out, *extra)
    pods = pd.read_parquet(tmp_path / "compiled" / "pods.parquet").set_index("pod")
    pd.testing.assert_frame_equal(pods.reset_index(),
                                  pd.read_parquet(tmp_path / "python" / "pods.parquet"))
    # every DCU pod binds whatever its memory; NVIDIA: 2048 + 2048 fit 4096, the third
    # is refused by the webhook, as is p7 (1024 more); p7's DCU asks nothing of the quota
    dcu = [f"p{i}" for i in range(0, 8, 2)]
    assert pods.loc[dcu, "bind"].notna().all()
    assert pods.loc[["p1", "p3"], "bind"].notna().all()
    assert pods.loc[["p5", "p7"], "bind"].isna().all()
