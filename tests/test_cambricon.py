"""Cambricon MLU (hamisim.devices.cambricon): HAMi v2.10.0's unit-test facts on
both backends, cards built from a node's capacity, and MLU nodes beside NVIDIA
nodes through the CLI.

The vectors (tests/data/hami_vectors/cambricon_*.json) are the cases of
``pkg/device/cambricon/device_test.go`` at v2.10.0: ``TestDevices_Fit`` on the
reference and on the compiled kernel; request generation and the type check
on the model.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from family_cases import (VECTORS, assert_engines_agree, assert_fit_case, assert_generated,
                          assert_type_check, run_in as _run, vector_cases as _cases)
from vector_ops import BACKENDS

from hamisim.cli import main
from hamisim.devices import FAMILIES, cambricon, family
from hamisim.hami import reference as ref
from hamisim.io.clusterfile import load_cluster
from hamisim.kube.quantity import parse_quantity
from hamisim.pods import Container

MLU = cambricon.MLU
_DOC = json.loads((VECTORS / "cambricon_requests.json").read_text())
#: HAMi's test configures the count as cambricon.com/mlu (ParseConfig's flag
#: default); the chart's name, hamisim's, is cambricon.com/vmlu
_NAMES = {_DOC["resource_names"]["count"]: MLU.count_name,
          _DOC["resource_names"]["memory"]: MLU.memory_name,
          _DOC["resource_names"]["cores"]: MLU.cores_name}


def _amount(v):
    # Go's Quantity of the test's value: a plain integer, or a quantity string
    # (16Gi: its integer value; AsInt64 of 16.0Gi fails in Go, and its value is
    # above the vmemory range here, so both drop the request)
    if isinstance(v, str):
        q = parse_quantity(v)
        assert q.denominator == 1
        return int(q)
    return v


def _container(case) -> Container:
    return Container(limits={_NAMES[k]: _amount(v) for k, v in case["limits"].items()},
                     requests={_NAMES[k]: _amount(v) for k, v in case["requests"].items()})


@pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))
@pytest.mark.parametrize("case", _cases("cambricon_fit.json"))
def test_cambricon_fit(ops, case):
    assert_fit_case(ops, case, "MLU")
    # (a failed Fit's partial picks, which HAMi's test counts as expect.count,
    # are dropped: Filter discards a failed node's picks)


@pytest.mark.parametrize("case", _cases("cambricon_requests.json", "generate"))
def test_cambricon_request_generation(case):
    assert_generated(MLU, _container(case), case["expect"])


@pytest.mark.parametrize("case", _cases("cambricon_requests.json", "check_type"))
def test_a_request_of_another_type_fits_no_mlu_card(case):
    # checkType: the request's type must be MLU (the card's type is not read)
    assert_type_check(MLU, case, ref.CardUsage("dev-0", 0, "MLU", 100, 8192, 100))


@pytest.mark.parametrize("case", _cases("cambricon_requests.json", "node_devices"))
def test_get_node_devices_builds_hamis_cards(case):
    cap = case["capacity"]
    made = cambricon.cards_from_capacity(case["node_name"], cap[MLU.cores_name],
                                         cap[MLU.memory_name])
    assert [{k: c[k] for k in case["expect"][0]} for c in made] == case["expect"]


def test_the_vectors_cover_hamis_tests():
    fit = json.loads((VECTORS / "cambricon_fit.json").read_text())
    req = json.loads((VECTORS / "cambricon_requests.json").read_text())
    assert fit["source"]["file"] == req["source"]["file"] == "pkg/device/cambricon/device_test.go"
    assert len(fit["cases"]) >= 10
    assert {c["op"] for c in req["cases"]} == {"generate", "check_type", "node_devices"}


def test_the_family_is_hamis_cambricon_backend():
    assert MLU in FAMILIES and family("MLU") is MLU
    assert (MLU.count_name, MLU.memory_name, MLU.cores_name) == (
        "cambricon.com/vmlu", "cambricon.com/mlu.smlu.vmemory", "cambricon.com/mlu.smlu.vcore")
    # no memory: the whole card; no cores: a whole card's (exclusive)
    assert MLU.generate(Container(limits={MLU.count_name: 2})) == (2, 0, 100, 100)
    # vmemory is 256 MiB units; Go's int32 of the cores, unchecked
    assert MLU.generate(Container(limits={MLU.count_name: 1, MLU.memory_name: 4,
                                          MLU.cores_name: 2**32 + 30})) == (1, 1024, 0, 30)
    # a vmemory whose x256 leaves int32 drops the request
    assert MLU.generate(Container(limits={MLU.count_name: 1,
                                          MLU.memory_name: 2**31 // 256})) is None


@pytest.mark.parametrize(("vcore", "vmemory", "cards", "devmem"), [
    (1, 1, 1, 25600),           # HAMi's Test_GetNodeDevices: one card of 1 x 256 x 100 MiB
    (400, 192, 4, 12288),       # four cards, the node's memory spread per 100 vcore
    (250, 30, 3, 3072),         # ceil(250 / 100) cards, memory per 100 vcore
    (0, 100, 0, None),          # no vcore: "device not found", no card
])
def test_cards_come_from_the_nodes_capacity(vcore, vmemory, cards, devmem):
    made = cambricon.cards_from_capacity("n1", vcore, vmemory)
    assert len(made) == cards
    assert [c["id"] for c in made] == [f"n1-cambricon-mlu-{i}" for i in range(cards)]
    assert all(c["devmem"] == devmem and c["count"] == 100 and c["devcore"] == 100
               and c["type"] == "MLU" and c["health"] for c in made)


def test_import_builds_mlu_cards_from_status_capacity(tmp_path, capsys):
    nodes = [
        {"metadata": {"name": "mlu-0", "annotations": {}},
         "status": {"allocatable": {"cpu": "64", "memory": "256Gi"},
                    "capacity": {MLU.cores_name: "400", MLU.memory_name: "768"}}},
        {"metadata": {"name": "gpu", "annotations": {"hami.io/node-nvidia-register": json.dumps([{
            "id": "GPU-0", "index": 0, "count": 10, "devmem": 15360, "devcore": 100,
            "type": "NVIDIA-Tesla T4", "numa": 0, "mode": "hami-core", "health": True}])}},
         "status": {"allocatable": {"cpu": "64", "memory": "256Gi"}}},
    ]
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"kind": "List", "items": nodes}))
    assert main(["import", str(path), "--out", str(tmp_path / "imp")]) == 0
    cluster = load_cluster(tmp_path / "imp" / "cluster.yaml")
    mlu = next(n for n in cluster.nodes if n.name == "mlu-0")
    assert [(c.id, c.type, c.count, c.devmem, c.devcore) for c in mlu.cards] == [
        (f"mlu-0-cambricon-mlu-{i}", "MLU", 100, 768 * 256 * 100 // 400, 100) for i in range(4)]


def test_a_card_written_other_than_hami_registers_it_warns_at_its_line(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - name: m0\n    gpus: 2\n"
                    "    card: {type: MLU370-X8, count: 10, devmem: 49152}\n")
    with pytest.warns(Warning) as caught:
        cluster = load_cluster(path)
    texts = [str(w.message) for w in caught]
    assert any(f"{path}:4" in t and "type 'MLU370-X8'" in t and "'MLU'" in t for t in texts)
    assert any(f"{path}:4" in t and "count 10" in t and "100" in t for t in texts)
    # simulated as written, and still offered to Cambricon's backend (substring)
    assert [c.count for c in cluster.nodes[0].cards] == [10, 10]


def test_an_mlu_card_counts_100_tenants_unless_the_file_says_otherwise(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - name: m0\n    gpus: 1\n    card: {type: MLU, devmem: 49152}\n"
                    "  - name: g0\n    gpus: 1\n    card: {type: NVIDIA-Tesla T4, devmem: 15360}\n")
    cluster = load_cluster(path)
    assert [n.cards[0].count for n in cluster.nodes] == [100, 10]


# -- MLU nodes beside NVIDIA nodes ----------------------------------------------------
CLUSTER = """\
nodes:
  - name_prefix: t4
    replicas: 2
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name_prefix: mlu
    replicas: 2
    gpus: 4
    card: {type: MLU, devmem: 49152}
"""


def _trace(n: int = 90) -> str:
    rows = []
    for i in range(n):
        c = ([{"limits": {MLU.count_name: 1, MLU.memory_name: 16, MLU.cores_name: 25}}],
             [{"limits": {MLU.count_name: 2}}],
             [{"gpu": 1, "gpumem": 2048}])[i % 3]
        rows.append(json.dumps({"name": f"p{i}", "arrival": 10.0 * i, "duration": 400,
                                "containers": c}))
    return "\n".join(rows) + "\n"


def test_mlu_pods_land_on_mlu_cards_on_both_engines(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.jsonl").write_text(_trace())
    _run(tmp_path, "compiled")
    console = capsys.readouterr().out
    assert "compiled (hamisim._replay)" in console and "MLU (8 cards)" in console
    _run(tmp_path, "python", "--backend", "reference")
    assert_engines_agree(tmp_path)
    pods = pd.read_parquet(tmp_path / "compiled" / "pods.parquet").set_index("pod")
    for i in range(0, 90, 3):
        # vmemory 16 = 16 x 256 MiB, 25 percent of the card's cores
        assert pods.loc[f"p{i}", "devices"].endswith(",MLU,4096,25:;")
        assert pods.loc[f"p{i}", "node"].startswith("mlu")
    whole = [i for i in range(1, 90, 3) if not pd.isna(pods.loc[f"p{i}", "bind"])]
    assert whole
    for i in whole:
        # no cores asked: 100 of each of two cards, no memory: the whole card
        entries = [e for e in pods.loc[f"p{i}", "devices"].rstrip(";").split(":") if e]
        assert len(entries) == 2 and all(e.endswith(",MLU,49152,100") for e in entries)
    summary = json.loads((tmp_path / "compiled" / "summary.json").read_text())
    fams = {f["family"]: f for f in summary["results"]["families"]}
    assert fams["MLU"]["cards"] == 8 and fams["MLU"]["pods"] == 60


def test_a_whole_card_request_waits_for_a_card_nobody_shares(tmp_path):
    # cores default to 100: a card with any tenant refuses it, even with room
    # for the memory and cores asked (a tenant asking no cores)
    (tmp_path / "cluster.yaml").write_text(
        "nodes:\n  - name: m0\n    gpus: 1\n    card: {type: MLU, devmem: 49152}\n")
    rows = [{"name": "small", "arrival": 0, "duration": 100,
             "containers": [{"limits": {MLU.count_name: 1, MLU.memory_name: 4,
                                        MLU.cores_name: 0}}]},
            {"name": "whole", "arrival": 1, "duration": 100,
             "containers": [{"limits": {MLU.count_name: 1, MLU.memory_name: 4}}]}]
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _run(tmp_path, "out")
    pods = pd.read_parquet(tmp_path / "out" / "pods.parquet").set_index("pod")
    assert pods.loc["whole", "bind"] == pytest.approx(100.0)
    events = pd.read_parquet(tmp_path / "out" / "events.parquet")
    waits = events[(events.pod == "whole") & (events.event == "unschedulable")].message
    assert waits.str.contains("ExclusiveDeviceAllocateConflict").any()
