"""AMD (hamisim.devices.amd): HAMi v2.10.0's unit-test facts on both backends,
and AMD nodes beside NVIDIA nodes through the CLI.

The vectors (tests/data/hami_vectors/amd_*.json) are the cases of
``pkg/device/amd/device_test.go`` at v2.10.0: ``TestDevices_Fit`` (cores as
Compute Units) on the reference and on the compiled kernel; request
generation, the webhook's refusal, the type filter, register decoding and the
allocation's encoding on the model. HAMi's tests configure the resource names
``amd.com/gpu-mem`` and ``amd.com/gpu-core-pct``; the chart's (hamisim's) are
``amd.com/gpumem`` and ``amd.com/gpucores``, so the cases are read with those.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from family_cases import (VECTORS, assert_engines_agree, assert_generated, run_in as _run,
                          vector_cases as _cases)
from vector_ops import BACKENDS

from hamisim.cli import main
from hamisim.cluster import SchedulerConfig
from hamisim.devices import amd, family
from hamisim.hami import reference as ref
from hamisim.hami.decision import Pick, devices_annotation
from hamisim.io.clusterfile import load_cluster
from hamisim.pods import AdmissionDenied, Container, Pod, Request, admit

AMD = amd.AMD
_DOC = json.loads((VECTORS / "amd_requests.json").read_text())
#: the test's resource names -> the chart's
_NAMES = {_DOC["resource_names"]["count"]: AMD.count_name,
          _DOC["resource_names"]["memory"]: AMD.memory_name,
          _DOC["resource_names"]["cores"]: AMD.cores_name}


def _container(case) -> Container:
    return Container(limits={_NAMES[k]: v for k, v in case["limits"].items()},
                     requests={_NAMES[k]: v for k, v in case.get("requests", {}).items()})


@pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))
@pytest.mark.parametrize("case", _cases("amd_fit.json"))
def test_amd_fit(ops, case):
    ok, picks, reason = ops.fit(case)
    exp = case["expect"]
    assert (ok, reason) == (exp["fit"], exp["reason"])
    if exp["fit"]:
        assert [p["uuid"] for p in picks] == exp["devices_ids"]
    for got, want in zip(picks, exp.get("picks") or []):
        # CUs charged, and the card's registered type named
        assert {k: got[k] for k in want} == want


@pytest.mark.parametrize("case", _cases("amd_requests.json", "generate"))
def test_amd_request_generation(case):
    assert_generated(AMD, _container(case), case["expect"])


@pytest.mark.parametrize("case", _cases("amd_requests.json", "mutate"))
def test_the_webhook_refuses_a_core_percentage_outside_1_to_100(case):
    pod = Pod(name="p", containers=(_container(case),))
    if case["expect_error"] is None:
        assert admit(pod, SchedulerConfig()).containers == pod.containers
        return
    with pytest.raises(AdmissionDenied) as err:
        admit(pod, SchedulerConfig())
    assert str(err.value) == ('admission webhook "vgpu.hami.io" denied the request: '
                              f"amd.com/gpucores {case['expect_error']}")


@pytest.mark.parametrize("case", _cases("amd_requests.json", "check_amd_type"))
def test_amd_type_filter(case):
    assert ref.type_allowed(case["annotations"], case["card_type"], AMD.use_type,
                            AMD.nouse_type) == case["expect"]


@pytest.mark.parametrize("case", _cases("amd_requests.json", "check_type"))
def test_amd_check_type(case):
    ok, found = case["expect"]
    assert (family(case["request_type"]) is AMD) == ok
    if ok:
        assert ref.type_allowed(case["annotations"], case["card_type"], AMD.use_type,
                                AMD.nouse_type) == found


@pytest.mark.parametrize("case", _cases("amd_requests.json", "patch"))
def test_the_allocation_is_hamis_encoding(case):
    containers = [[Pick(d["uuid"], d["usedmem"], d["usedcores"], type="AMD", label=d["type"])
                   for d in picks] for picks in case["devices"]]
    text = devices_annotation(containers)
    assert {AMD.to_allocate_annotation: text, AMD.allocated_annotation: text} == case["expect"]


def _node(name: str, annotations: dict) -> dict:
    return {"metadata": {"name": name, "annotations": annotations},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi"}}}


@pytest.mark.parametrize("case", _cases("amd_requests.json", "node_devices"))
def test_the_json_register_imports_as_go_decodes_it(case, tmp_path, capsys):
    ann = {} if case["annotation"] is None else {AMD.register_annotation: case["annotation"]}
    nvidia = _node("gpu", {"hami.io/node-nvidia-register": json.dumps([{
        "id": "GPU-T4", "index": 0, "count": 10, "devmem": 15360, "devcore": 100,
        "type": "NVIDIA-Tesla T4", "numa": 0, "mode": "hami-core", "health": True}])})
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"kind": "List", "items": [_node("amd", ann), nvidia]}))
    assert main(["import", str(path), "--out", str(tmp_path / "imp")]) == 0
    capsys.readouterr()
    cluster = load_cluster(tmp_path / "imp" / "cluster.yaml")
    cards = [c for n in cluster.nodes if n.name == "amd" for c in n.cards]
    want = case["expect"] if isinstance(case["expect"], list) else []
    assert [{k: getattr(c, k) for k in w} for c, w in zip(cards, want)] == want
    assert len(cards) == len(want)


def test_a_card_registered_without_health_is_unhealthy(tmp_path, capsys):
    reg = json.dumps([{"id": "MI-0", "count": 4, "devmem": 196608, "devcore": 304,
                       "type": "AMD_Instinct_MI300X"}])
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"kind": "List", "items": [
        _node("amd", {AMD.register_annotation: reg})]}))
    assert main(["import", str(path), "--out", str(tmp_path / "imp")]) == 0
    err = capsys.readouterr().err
    assert "card 0 ('MI-0') is not registered healthy" in err
    (card,) = load_cluster(tmp_path / "imp" / "cluster.yaml").nodes[0].cards
    assert (card.health, card.index, card.mode) == (False, 0, "")


def test_a_default_core_percentage_takes_every_cu():
    # 100 % by default: all 304 CUs; the next pod finds none (CardInsufficientCore)
    cards = [ref.CardUsage("mi", 0, "AMD_Instinct_MI300X", 4, 196608, 304)]
    first = ref.fit(cards, Request(1, 8192, 0, 100, "AMD"), {}, "spread")
    assert first.fit and (first.picks[0].usedcores, first.picks[0].label) == (
        304, "AMD_Instinct_MI300X")
    cards[0].used, cards[0].usedmem, cards[0].usedcores = 1, 8192, 304
    second = ref.fit(cards, Request(1, 8192, 0, 10, "AMD"), {}, "spread")
    assert not second.fit and second.reason == "1/1 CardInsufficientCore"


def test_the_vectors_cover_hamis_tests():
    fit = json.loads((VECTORS / "amd_fit.json").read_text())["cases"]
    assert len(fit) >= 10
    assert {c["op"] for c in _DOC["cases"]} >= {"generate", "mutate", "check_amd_type",
                                                "node_devices", "patch"}


# -- AMD nodes beside NVIDIA nodes -----------------------------------------------------
CLUSTER = """\
nodes:
  - name_prefix: t4
    replicas: 2
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name_prefix: mi
    replicas: 2
    gpus: 8
    card: {type: AMD_Instinct_MI300X, devmem: 196608, devcore: 304, count: 4}
"""


def _trace(n: int = 90) -> str:
    rows = []
    for i in range(n):
        c = ([{"limits": {AMD.count_name: 1, AMD.memory_name: 49152, AMD.cores_name: 25}}],
             [{"limits": {AMD.count_name: 2, AMD.memory_name: 98304, AMD.cores_name: 50}}],
             [{"gpu": 1, "gpumem": 2048}])[i % 3]
        rows.append(json.dumps({"name": f"p{i}", "arrival": 10.0 * i, "duration": 500,
                                "containers": c}))
    return "\n".join(rows) + "\n"


@pytest.fixture
def mixed(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.jsonl").write_text(_trace())
    return tmp_path


def test_amd_pods_are_charged_cus_on_both_engines(mixed, capsys):
    _run(mixed, "compiled")
    assert "compiled (hamisim._replay)" in capsys.readouterr().out
    _run(mixed, "python", "--backend", "reference")
    assert_engines_agree(mixed)
    pods = pd.read_parquet(mixed / "compiled" / "pods.parquet").set_index("pod")
    for i in range(0, 90, 3):
        # 25 % of 304 CUs = 76; the list names the card's type
        assert pods.loc[f"p{i}", "devices"].endswith(",AMD_Instinct_MI300X,49152,76:;")
    for i in range(1, 90, 3):
        entries = [e for e in pods.loc[f"p{i}", "devices"].rstrip(";").split(":") if e]
        assert len(entries) == 2 and all(e.endswith(",AMD_Instinct_MI300X,98304,152")
                                         for e in entries)


def test_a_core_percentage_outside_1_to_100_is_refused_by_the_webhook(mixed):
    (mixed / "trace.jsonl").write_text(json.dumps({
        "name": "bad", "arrival": 0, "duration": 10,
        "containers": [{"limits": {AMD.count_name: 1, AMD.cores_name: 150}}]}) + "\n")
    _run(mixed, "out")
    pods = pd.read_parquet(mixed / "out" / "pods.parquet")
    assert pods["bind"].isna().all()
    events = pd.read_parquet(mixed / "out" / "events.parquet")
    assert events["message"].str.contains(
        "amd.com/gpucores must be an integer percentage between 1 and 100").any()
