"""Moore Threads (hamisim.devices.mthreads): HAMi v2.10.0's unit-test facts on
both backends, the webhook's whole cards and refusals, the case-sensitive type
test, one card a pod, the capacity import, and Moore Threads nodes beside
NVIDIA nodes through the CLI.

The vectors (tests/data/hami_vectors/mthreads_*.json) are the cases of
``pkg/device/mthreads/device_test.go`` at v2.10.0: ``TestDevices_Fit`` on the
reference and on the compiled kernel; request generation, the webhook, the
type check, registration, the allocation annotation and ``customFilterRule``
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
from hamisim.cluster import SchedulerConfig
from hamisim.devices import FAMILIES, case_mismatch, family, mthreads, offer_mask
from hamisim.hami import reference as ref
from hamisim.hami.decision import Pick, devices_annotation
from hamisim.io.clusterfile import load_cluster
from hamisim.kube.quantity import parse_quantity
from hamisim.pods import AdmissionDenied, Container, Pod, Request, admit, container_request

MT = mthreads.MTHREADS


def _ints(resources: dict) -> dict[str, int]:
    # Go's AsInt64 of the quantity strings some cases write ("16Gi"); hamisim's
    # readers give the same integers
    return {k: v if isinstance(v, int) else int(parse_quantity(v)) for k, v in resources.items()}


@pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))
@pytest.mark.parametrize("case", _cases("mthreads_fit.json"))
def test_mthreads_fit(ops, case):
    picks = assert_fit_case(ops, case, "Mthreads")
    if case["expect"]["fit"]:
        assert [(p["uuid"], p["usedmem"], p["usedcores"]) for p in picks] == [
            (p["uuid"], p["usedmem"], p["usedcores"]) for p in case["expect"]["picks"]]


@pytest.mark.parametrize("case", _cases("mthreads_requests.json", "generate"))
def test_mthreads_request_generation(case):
    assert_generated(MT, Container(limits=_ints(case["limits"]),
                                   requests=_ints(case["requests"])), case["expect"])


def test_memory_and_cores_are_split_per_card_with_gos_division():
    # 3 cards, 8 units = 4096 MiB -> 1365 MiB a card; cores 8 -> 2 a card
    c = Container(limits={MT.count_name: 3, MT.memory_name: 8, MT.cores_name: 8})
    assert MT.generate(c) == (3, 1365, 0, 2)
    # Go truncates toward zero: int32 cores that wrapped negative split to -1, not -2
    c = Container(limits={MT.count_name: 2, MT.cores_name: 2**32 - 3})
    assert MT.generate(c) == (2, 0, 100, -1)


@pytest.mark.parametrize("case", _cases("mthreads_requests.json", "mutate"))
def test_the_webhook_takes_whole_cards_or_refuses(case):
    pod = Pod(name="p", containers=(Container(limits=_ints(case["limits"]),
                                              requests=_ints(case["requests"])),))
    if case["expect_error"] is not None:
        with pytest.raises(AdmissionDenied) as err:
            admit(pod, SchedulerConfig())
        assert str(err.value) == ('admission webhook "vgpu.hami.io" denied the request: '
                                  + case["expect_error"])
        return
    admitted = admit(pod, SchedulerConfig()).containers[0]
    assert dict(admitted.limits) == case["expect_limits"]


def test_a_multi_card_request_asks_a_whole_48_gib_card_each():
    pod = Pod(name="p", containers=(Container(limits={MT.count_name: 2, MT.memory_name: 4}),))
    req = container_request(admit(pod, SchedulerConfig()).containers[0], SchedulerConfig())
    assert req == Request(2, 96 * 512, 0, 16, "Mthreads")
    # on cards of 32 GiB that never fits (quirk: 96 units whatever the card holds)
    cards = [ref.CardUsage(f"m-{i}", i, "Mthreads", 100, 32768, 16) for i in range(4)]
    res = ref.fit(cards, req, {}, "binpack")
    assert not res.fit and res.reason == "4/4 CardInsufficientMemory"


@pytest.mark.parametrize("case", _cases("mthreads_requests.json", "check_type"))
def test_a_request_of_another_type_fits_no_mthreads_card(case):
    assert_type_check(MT, case, ref.CardUsage("dev-0", 0, "Mthreads", 100, 8192, 16))


def test_fit_tests_the_card_type_case_sensitively():
    # the scheduler offers a lower-case type (getNodeResources lowers both), Fit refuses it
    assert offer_mask("mthreads-s4000") == 1 << MT.fid and case_mismatch("mthreads-s4000")
    assert not case_mismatch("Mthreads") and not case_mismatch("MTT-Mthreads-S4000")
    cards = [ref.CardUsage("a", 0, "mthreads-s4000", 100, 49152, 16),
             ref.CardUsage("b", 1, "Mthreads", 100, 49152, 16)]
    res = ref.fit(cards, Request(2, 1024, 0, 1, "Mthreads"), {}, "spread")
    assert not res.fit
    assert res.reason == "1/2 AllocatedCardsInsufficientRequest, 1/2 CardTypeMismatch"


@pytest.mark.parametrize("case", _cases("mthreads_requests.json", "custom_filter"))
def test_custom_filter_rule(case):
    # the rule through Fit: the earlier containers' picks against one candidate card
    earlier = [Pick(p["uuid"], 0, 0, type=case["allocated_key"])
               for c in case["allocated"] for p in c]
    card = ref.CardUsage(case["device"]["id"], 0, case["device"]["type"], 100, 8192, 16)
    res = ref.fit([card], Request(1, 512, 0, 1, "Mthreads"), {}, "spread", earlier=earlier)
    assert res.fit == case["expect"]
    if not case["expect"]:
        assert res.reason == "1/1 CardNotFoundCustomFilterRule"


def test_the_rule_reads_only_cards_typed_exactly_mthreads():
    # HAMi reads allocated[card type]: a card typed otherwise is never pinned
    earlier = [Pick("x", 0, 0, type="Mthreads")]
    card = ref.CardUsage("y", 0, "MTT-Mthreads-S4000", 100, 8192, 16)
    assert ref.fit([card], Request(1, 512, 0, 1, "Mthreads"), {}, "spread",
                   earlier=earlier).fit


@pytest.mark.parametrize("case", _cases("mthreads_requests.json", "patch"))
def test_the_allocation_is_hamis_encoding(case):
    containers = [[Pick(d["uuid"], d["usedmem"], d["usedcores"], type=d["type"]) for d in picks]
                  for picks in case["devices"]]
    assert devices_annotation(containers) == case["expect"][MT.allocated_annotation]


@pytest.mark.parametrize("case", _cases("mthreads_requests.json", "node_devices"))
def test_cards_come_from_the_capacity(case):
    cap = case["capacity"]
    cards = mthreads.cards_from_capacity(case["node_name"], cap[MT.cores_name],
                                         cap[MT.memory_name])
    assert [{k: c[k] for k in w} for c, w in zip(cards, case["expect"])] == case["expect"]
    assert len(cards) == len(case["expect"])


def test_the_capacity_imports_as_getnodedevices_builds_it(tmp_path, capsys):
    node = {"metadata": {"name": "mt", "annotations": {}},
            "status": {"capacity": {MT.cores_name: "128", MT.memory_name: "768"},
                       "allocatable": {"cpu": "64", "memory": "256Gi"}}}
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "List", "items": [node]}))
    assert main(["import", str(tmp_path / "nodes.json"), "--out", str(tmp_path / "imp")]) == 0
    capsys.readouterr()
    cards = load_cluster(tmp_path / "imp" / "cluster.yaml").nodes[0].cards
    # 128 cores / 16 = 8 cards of 768 x 512 x 16 / 128 = 49152 MiB
    assert [(c.id, c.type, c.count, c.devmem, c.devcore) for c in cards] == [
        (f"mt-mthreads-{i}", "Mthreads", 100, 49152, 16) for i in range(8)]


def test_the_vectors_cover_hamis_tests():
    fit = json.loads((VECTORS / "mthreads_fit.json").read_text())
    req = json.loads((VECTORS / "mthreads_requests.json").read_text())
    assert fit["source"]["file"] == req["source"]["file"] == "pkg/device/mthreads/device_test.go"
    assert len(fit["cases"]) == 15
    assert {c["op"] for c in req["cases"]} == {"generate", "mutate", "check_type",
                                               "node_devices", "patch", "custom_filter"}


def test_the_family_is_hamis_mthreads_backend():
    assert MT in FAMILIES and family("Mthreads") is MT
    assert MT.resource_names == ("mthreads.com/vgpu", "mthreads.com/sgpu-memory",
                                 "mthreads.com/sgpu-core")
    assert MT.allocated_annotation == "hami.io/mthreads-vgpu-devices-allocated"


def test_a_card_written_otherwise_than_hami_registers_it_warns_at_its_line(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - name: m0\n    gpus: 2\n"
                    "    card:\n      type: mthreads-s4000\n      devmem: 49152\n"
                    "      devcore: 100\n")
    with pytest.warns(Warning) as caught:
        cluster = load_cluster(path)
    text = [str(w.message) for w in caught]
    assert any(f"{path}:5" in t and "case-sensitively" in t for t in text)
    assert any(f"{path}:7" in t and "devcore 100" in t and "16" in t for t in text)
    assert [c.devcore for c in cluster.nodes[0].cards] == [100, 100]      # as written


def test_a_card_defaults_to_hamis_slots_and_cores(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - name: m0\n    gpus: 2\n"
                    "    card: {type: Mthreads, devmem: 49152}\n")
    card = load_cluster(path).nodes[0].cards[0]
    assert (card.count, card.devcore) == (100, 16)


# -- Moore Threads nodes beside NVIDIA nodes ------------------------------------------
CLUSTER = """\
nodes:
  - name_prefix: t4
    replicas: 1
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name_prefix: mt
    replicas: 2
    gpus: 4
    card: {type: Mthreads, devmem: 49152}
"""


def _trace(n: int = 60) -> str:
    rows = []
    for i in range(n):
        c = ([{"limits": {MT.count_name: 1, MT.memory_name: 8, MT.cores_name: 4}}],
             [{"limits": {MT.count_name: 2}}],
             [{"limits": {MT.count_name: 1, MT.memory_name: 4, MT.cores_name: 2}},
              {"limits": {MT.count_name: 1, MT.memory_name: 4, MT.cores_name: 2}}],
             [{"gpu": 1, "gpumem": 2048}])[i % 4]
        rows.append(json.dumps({"name": f"p{i}", "arrival": 10.0 * i, "duration": 300,
                                "containers": c}))
    return "\n".join(rows) + "\n"


def test_mthreads_pods_on_both_engines(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.jsonl").write_text(_trace())
    _run(tmp_path, "compiled")
    console = capsys.readouterr().out
    assert "compiled (hamisim._replay)" in console and "Mthreads (8 cards)" in console
    _run(tmp_path, "python", "--backend", "reference")
    assert_engines_agree(tmp_path)
    pods = pd.read_parquet(tmp_path / "compiled" / "pods.parquet").set_index("pod")
    for i in range(60):
        devices = pods.loc[f"p{i}", "devices"]
        if i % 4 == 3:
            assert pods.loc[f"p{i}", "node"].startswith("t4")
            continue
        cards = [e for e in devices.rstrip(";").replace(";", ":").split(":") if e]
        if i % 4 == 0:
            assert len(cards) == 1 and cards[0].endswith(",Mthreads,4096,4")
        elif i % 4 == 1:
            # the webhook's whole cards: 96 units = 49152 MiB and 16 cores each
            assert len(cards) == 2 and all(e.endswith(",Mthreads,49152,16") for e in cards)
        else:
            # customFilterRule: both containers on one card
            assert len(cards) == 2 and len({e.split(",")[0] for e in cards}) == 1


def test_a_container_after_a_multi_card_one_never_fits(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    row = {"name": "p0", "arrival": 0, "duration": 60, "containers": [
        {"limits": {MT.count_name: 2}}, {"limits": {MT.count_name: 1, MT.memory_name: 2}}]}
    (tmp_path / "trace.jsonl").write_text(json.dumps(row) + "\n")
    _run(tmp_path, "compiled")
    _run(tmp_path, "python", "--backend", "reference")
    for out in ("compiled", "python"):
        events = pd.read_parquet(tmp_path / out / "events.parquet")
        waits = events[events.event == "unschedulable"].message
        assert len(waits) and waits.str.contains("CardNotFoundCustomFilterRule").all()
