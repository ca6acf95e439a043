"""Biren (hamisim.devices.biren): HAMi v2.10.0's unit-test facts on both
backends, slots as a card's only limit, the JSON register import, and Biren
nodes beside NVIDIA nodes through the CLI.

The vectors (tests/data/hami_vectors/biren_*.json) are the cases of
``pkg/device/biren/device_test.go`` at v2.10.0: ``TestDevices_Fit`` on the
reference and on the compiled kernel; request generation, the type check,
registration and the allocation annotations on the model.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from family_cases import (VECTORS, assert_engines_agree, assert_fit_case, assert_generated,
                          assert_type_check, run_in as _run, vector_cases as _cases)
from vector_ops import BACKENDS

from hamisim.cli import main
from hamisim.devices import FAMILIES, biren, family, offer_mask
from hamisim.hami import reference as ref
from hamisim.hami.decision import Pick, devices_annotation
from hamisim.io.clusterfile import load_cluster
from hamisim.pods import Container, Request

BIREN = biren.BIREN


@pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))
@pytest.mark.parametrize("case", _cases("biren_fit.json"))
def test_biren_fit(ops, case):
    picks = assert_fit_case(ops, case, "Biren")
    assert all(p["usedmem"] == 0 for p in picks)


def test_a_pick_charges_no_memory_and_the_requests_cores():
    # the Go partial-allocation case's request, on cards with room: Usedmem 0,
    # Usedcores = Coresreq, whatever the card's memory
    cards = [ref.CardUsage(f"dev-{i}", i, "Biren", 100, 1280, 100) for i in range(3)]
    res = ref.fit(cards, Request(3, 512, 0, 20, "Biren"), {}, "spread")
    assert res.fit and [(p.uuid, p.usedmem, p.usedcores) for p in res.picks] == [
        ("dev-2", 0, 20), ("dev-1", 0, 20), ("dev-0", 0, 20)]


@pytest.mark.parametrize("case", _cases("biren_requests.json", "generate"))
def test_biren_request_generation(case):
    assert_generated(BIREN, Container(limits=case["limits"], requests=case["requests"]),
                     case["expect"])


def test_a_count_at_or_below_zero_or_past_int32_asks_nothing():
    for n in (0, -1, 2**32):                # Go's int32: 2**32 reads as 0
        assert BIREN.generate(Container(limits={BIREN.count_name: n})) is None
    assert BIREN.generate(Container(limits={BIREN.count_name: 2**32 + 3})) == (3, 0, 100, 0)


@pytest.mark.parametrize("case", _cases("biren_requests.json", "check_type"))
def test_a_request_of_another_type_fits_no_biren_card(case):
    assert_type_check(BIREN, case, ref.CardUsage("dev-0", 0, "Biren", 1, 0, 100))


@pytest.mark.parametrize("case", _cases("biren_requests.json", "patch"))
def test_the_allocation_is_hamis_encoding(case):
    containers = [[Pick(d["uuid"], d["usedmem"], d["usedcores"], type=d["type"]) for d in picks]
                  for picks in case["devices"]]
    text = devices_annotation(containers) if containers else None
    got = {} if text is None else {BIREN.to_allocate_annotation: text,
                                   BIREN.allocated_annotation: text}
    assert got == case["expect"]


def _node(name: str, annotations: dict) -> dict:
    return {"metadata": {"name": name, "annotations": annotations},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi"}}}


@pytest.mark.parametrize("case", _cases("biren_requests.json", "node_devices"))
def test_the_json_register_imports_as_go_decodes_it(case, tmp_path, capsys):
    nvidia = _node("gpu", {"hami.io/node-nvidia-register": json.dumps([{
        "id": "GPU-T4", "index": 0, "count": 10, "devmem": 15360, "devcore": 100,
        "type": "NVIDIA-Tesla T4", "numa": 0, "mode": "hami-core", "health": True}])})
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"kind": "List", "items": [_node("br", case["annotations"]),
                                                          nvidia]}))
    assert main(["import", str(path), "--out", str(tmp_path / "imp")]) == 0
    capsys.readouterr()
    cluster = load_cluster(tmp_path / "imp" / "cluster.yaml")
    cards = [c for n in cluster.nodes if n.name == "br" for c in n.cards]
    want = case["expect"]
    # devcore is 100 whatever the annotation says (here: left out, Go's 0)
    assert [{k: getattr(c, k) for k in w} for c, w in zip(cards, want)] == want
    assert len(cards) == len(want)


def test_the_vectors_cover_hamis_tests():
    fit = json.loads((VECTORS / "biren_fit.json").read_text())
    req = json.loads((VECTORS / "biren_requests.json").read_text())
    assert fit["source"]["file"] == req["source"]["file"] == "pkg/device/biren/device_test.go"
    assert len(fit["cases"]) == 9
    assert {c["op"] for c in req["cases"]} == {"generate", "check_type", "node_devices", "patch"}


def test_the_family_is_hamis_biren_backend():
    assert BIREN in FAMILIES and family("Biren") is BIREN
    assert BIREN.resource_names == ("birentech.com/gpu",)
    assert BIREN.register_annotation == "hami.io/node-biren-register"
    assert BIREN.allocated_annotation == "hami.io/Biren-devices-allocated"
    # offered by HAMi's substring test, in any case
    assert offer_mask("Biren-BR104") == offer_mask("biren") == 1 << BIREN.fid


def test_a_devcore_other_than_hamis_100_warns_at_its_line(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - name: b0\n    gpus: 2\n"
                    "    card: {type: Biren, count: 4, devmem: 65536, devcore: 64}\n")
    with pytest.warns(Warning) as caught:
        cluster = load_cluster(path)
    assert any(f"{path}:4" in str(w.message) and "devcore 64" in str(w.message)
               and "100" in str(w.message) for w in caught)
    assert [c.devcore for c in cluster.nodes[0].cards] == [64, 64]       # as written


# -- Biren nodes beside NVIDIA nodes --------------------------------------------------
CLUSTER = """\
nodes:
  - name_prefix: t4
    replicas: 1
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name_prefix: br
    replicas: 2
    gpus: 4
    card: {type: Biren, devmem: 65536, count: 2}
"""


def _trace(n: int = 60) -> str:
    rows = []
    for i in range(n):
        c = ([{"limits": {BIREN.count_name: 1}}], [{"requests": {BIREN.count_name: 2}}],
             [{"gpu": 1, "gpumem": 2048}])[i % 3]
        rows.append(json.dumps({"name": f"p{i}", "arrival": 10.0 * i, "duration": 300,
                                "containers": c}))
    return "\n".join(rows) + "\n"


def test_biren_pods_share_cards_by_slots_on_both_engines(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.jsonl").write_text(_trace())
    _run(tmp_path, "compiled")
    console = capsys.readouterr().out
    assert "compiled (hamisim._replay)" in console and "Biren (8 cards)" in console
    _run(tmp_path, "python", "--backend", "reference")
    assert_engines_agree(tmp_path)
    pods = pd.read_parquet(tmp_path / "compiled" / "pods.parquet").set_index("pod")
    entries = {}
    for i in range(60):
        if i % 3 == 2:
            continue
        # no memory and no cores charged; the card is the only limit
        cards = [e for e in pods.loc[f"p{i}", "devices"].rstrip(";").split(":") if e]
        assert len(cards) == (1 if i % 3 == 0 else 2)
        assert all(e.endswith(",Biren,0,0") for e in cards)
        assert pods.loc[f"p{i}", "node"].startswith("br")
        entries[f"p{i}"] = cards
    summary = json.loads((tmp_path / "compiled" / "summary.json").read_text())
    fams = {f["family"]: f for f in summary["results"]["families"]}
    assert fams["Biren"]["cards"] == 8 and fams["Biren"]["pods"] == 40
    assert fams["Biren"]["mean_memory_allocated_pct"] == 0.0


def test_a_card_takes_as_many_tenants_as_its_slots(tmp_path):
    # one card of 2 slots: the third pod waits for a tenant to leave
    (tmp_path / "cluster.yaml").write_text(
        "nodes:\n  - name: b0\n    gpus: 1\n    card: {type: Biren, devmem: 65536, count: 2}\n")
    rows = [{"name": f"p{i}", "arrival": i, "duration": 100,
             "containers": [{"limits": {BIREN.count_name: 1}}]} for i in range(3)]
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _run(tmp_path, "out")
    pods = pd.read_parquet(tmp_path / "out" / "pods.parquet").set_index("pod")
    assert list(pods.bind) == [0.0, 1.0, 100.0]
    events = pd.read_parquet(tmp_path / "out" / "events.parquet")
    waits = events[(events.pod == "p2") & (events.event == "unschedulable")].message
    assert waits.str.contains("1/1 CardTimeSlicingExhausted").all()
