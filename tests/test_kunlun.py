"""Kunlunxin (hamisim.devices.kunlun): HAMi v2.10.0's unit-test facts on both
backends, graghSelect's wings by position, the bubble score, the capacity and
JSON registrations, a count HAMi never places, and Kunlunxin nodes through the
CLI on both engines.

The vectors (tests/data/hami_vectors/kunlun_*.json) are the cases of
``pkg/device/kunlun/device_test.go``, ``vdevice_test.go`` and ``topo_test.go``
at v2.10.0: Fit and graghSelect on the reference and on the compiled kernel;
request generation, the webhook, trimMemory, ScoreNode, registration and the
allocation annotations on the model.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from family_cases import (VECTORS, assert_engines_agree, assert_sequence_agrees,
                          run_in as _run, vector_cases as _cases)
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SLOW
from vector_ops import BACKENDS, card

from hamisim.cli import main
from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.devices import FAMILIES, family, kunlun
from hamisim.hami import reference as ref
from hamisim.hami.decision import Pick, devices_annotation
from hamisim.hami.reference import ReferenceScheduler
from hamisim.io.clusterfile import load_cluster
from hamisim.pods import Container, Pod, admit, container_request
from hamisim.sim.kernel import KernelScheduler

KL, XPU = kunlun.KUNLUN, kunlun.XPU


def _with_backend(case: dict) -> dict:
    """The case with its request typed as its backend's word (several Go
    tests leave the type empty: the backend is chosen by the test)."""
    word = case.get("backend") or ("XPU" if case.get("predicate") == "FitVXPU" else "kunlun")
    return {**case, "request": {**case["request"], "type": word}}


# -- HAMi's vectors --------------------------------------------------------------------
@pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))
@pytest.mark.parametrize("case", _cases("kunlun_fit.json", "fit"))
def test_kunlun_fit(ops, case):
    ok, picks, reason = ops.fit(_with_backend(case))
    exp = case["expect"]
    assert (ok, reason) == (exp["fit"], exp["reason"])
    if exp["fit"]:
        assert [(p["uuid"], p["usedmem"], p["usedcores"], p["idx"]) for p in picks] == [
            (p["uuid"], p["usedmem"], p["usedcores"], p["idx"]) for p in exp["picks"]]


@pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))
@pytest.mark.parametrize("case", _cases("kunlun_fit.json", "graph_select"))
def test_graph_select_through_fit(ops, case):
    # graghSelect's indices are the picks of a Fit on the same list
    ok, picks, _ = ops.fit(_with_backend(case))
    assert [p["idx"] for p in picks] == case["expect"]["indices"]
    assert ok == bool(case["expect"]["indices"])


def _fits(case: dict) -> list[bool]:
    r = case.get("request") or {"memreq": 0}
    if case["predicate"] == "FitXPU":
        return [c["used"] == 0 and c["health"] for c in case["cards"]]
    return [ref._fits_slice(card(c), r["memreq"]) for c in case["cards"]]


@pytest.mark.parametrize("case", _cases("kunlun_fit.json", "graph_select"))
def test_graph_select(case):
    indices = [c["index"] for c in case["cards"]]
    assert kunlun.graph_select(_fits(case), indices, case["request"]["nums"]) == \
        case["expect"]["indices"]


@pytest.mark.parametrize("case", _cases("kunlun_requests.json", "interconnect")
                         + _cases("kunlun_requests.json", "devicepick"))
def test_the_pickers(case):
    indices = [c["index"] for c in case["cards"]]
    count = case["request"]["nums"]
    if case["op"] == "interconnect":
        got = kunlun._interconnect(_fits(case), indices, count)
    else:
        got = kunlun._pick(_fits(case), indices, case["start"], count)
    assert got == case["expect"]


@pytest.mark.parametrize("case", _cases("kunlun_requests.json", "generate"))
def test_kunlun_request_generation(case):
    if case.get("quantity_note"):
        pytest.skip("a fractional quantity: hamisim's readers refuse it at its line")
    c = Container(limits=case["limits"], requests=case["requests"])
    fam = family(case["backend"])
    exp = case["expect"]
    want = None if not exp or exp["nums"] <= 0 else (
        exp["nums"], exp["memreq"], exp["mempercentagereq"], exp["coresreq"])
    assert fam.generate(c) == want
    other = XPU if fam is KL else KL
    assert container_request(c, SchedulerConfig()) == (
        None if want is None else ref.Request(*want, fam.word)) or other.asks(c)


@pytest.mark.parametrize("case", _cases("kunlun_requests.json", "mutate"))
def test_the_webhook_trims_the_memory_limit(case):
    if case.get("quantity_note"):
        pytest.skip("a fractional quantity: hamisim's readers refuse it at its line")
    limits, requests = dict(case["limits"]), dict(case["requests"] or {})
    if case["backend"] == "XPU":
        kunlun.mutate(limits, requests, {})
    assert (limits, requests) == (case["expect_limits"], case["expect_requests"])
    assert case["expect_error"] is None


@pytest.mark.parametrize("case", _cases("kunlun_requests.json", "trim_memory"))
def test_trim_memory(case):
    assert kunlun.trim_memory(case["memory"]) == case["expect"]


@pytest.mark.parametrize("case", _cases("kunlun_requests.json", "score_node"))
def test_score_node(case):
    previous = [(d["type"], d["index"], d["used"]) for d in case["previous"]]
    picked = [(d["type"], d["idx"]) for c in case["pod_devices"] for d in c]
    got = kunlun.bubble_score(previous, picked) if case["backend"] == "kunlun" \
        else np.float32(0)
    assert got == np.float32(case["expect"])


@pytest.mark.parametrize("case", _cases("kunlun_requests.json", "count_bubble"))
def test_count_bubble(case):
    assert kunlun._bubbles(set(case["indices"])) == case["expect"]


@pytest.mark.parametrize("case", _cases("kunlun_requests.json", "fit_vxpu"))
def test_fit_vxpu(case):
    assert ref._fits_slice(card(case["card"]), case["request"]["memreq"]) == case["expect"]


@pytest.mark.parametrize("case", _cases("kunlun_requests.json", "patch"))
def test_the_allocation_annotation(case):
    fam = family(case["backend"])
    if case["devices"] is None:
        assert fam.allocated_annotation not in case["expect"]
        return
    containers = [[Pick(d["uuid"], d["usedmem"], d["usedcores"], d["idx"], type=d["type"])
                   for d in c] for c in case["devices"]]
    # a container without cards is a segment: the node has the family's cards
    assert devices_annotation(containers, pad_words=(fam.word,)) == \
        case["expect"][fam.allocated_annotation]


@pytest.mark.parametrize("case", _cases("kunlun_requests.json", "node_devices"))
def test_registration(case, tmp_path, capsys):
    name = case["node_name"] or "n"
    node = {"metadata": {"name": name, "annotations": case["annotations"]},
            "status": {"capacity": {k: str(v) for k, v in (case.get("capacity") or {}).items()},
                       "allocatable": {"cpu": "64", "memory": "256Gi"}}}
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "List", "items": [node]}))
    assert main(["import", str(tmp_path / "nodes.json"), "--out", str(tmp_path / "imp")]) == 0
    capsys.readouterr()
    cards = load_cluster(tmp_path / "imp" / "cluster.yaml").nodes[0].cards
    want = [(d["id"].replace("node1", name) if case["node_name"] else d["id"], d["index"],
             d["count"], d["devmem"], d["devcore"], d["type"], d.get("numa", 0), d["health"])
            for d in case["expect"]]
    assert [(c.id, c.index, c.count, c.devmem, c.devcore, c.type, c.numa, c.health)
            for c in cards] == want


def test_the_vectors_cover_hamis_tests():
    fit = json.loads((VECTORS / "kunlun_fit.json").read_text())
    req = json.loads((VECTORS / "kunlun_requests.json").read_text())
    assert len(fit["cases"]) == 41
    assert {"generate", "mutate", "trim_memory", "score_node", "node_devices", "patch",
            "interconnect", "devicepick"} <= {c["op"] for c in req["cases"]}


def test_the_families_are_hamis_kunlun_backends():
    assert KL in FAMILIES and XPU in FAMILIES and family("kunlun") is KL
    assert (KL.count_name, XPU.count_name, XPU.memory_name) == (
        "kunlunxin.com/xpu", "kunlunxin.com/vxpu", "kunlunxin.com/vxpu-memory")
    assert (KL.allocated_annotation, XPU.allocated_annotation) == (
        "hami.io/kunlun-allocated", "hami.io/xpu-devices-allocated")
    assert kunlun.QUADS[0] == (0, 1, 4, 5) and kunlun.CROSS_PAIRS[3] == (3, 7)


# -- the scheduler -----------------------------------------------------------------------
def _whole_node(name: str, n: int = 8) -> Node:
    return Node(name, tuple(Card(**c) for c in kunlun.cards_from_capacity(name, n)))


@pytest.mark.parametrize("busy, count, policy, expected", [
    # spec examples: the wings are positions of the sorted list, not card indices
    ({5}, 2, "spread", [0, 1]), ({5}, 4, "spread", [3, 4, 6, 7]), ({5}, 1, "spread", [0]),
    ({0}, 1, "binpack", [5]), ({0, 4}, 2, "binpack", [6, 7]),
    ({0, 1}, 4, "binpack", [2, 3, 4, 5]), ({0, 1}, 4, "spread", [4, 5, 6, 7])])
def test_the_wings_are_positions_of_the_sorted_list(busy, count, policy, expected):
    cluster = Cluster((_whole_node("a"),), SchedulerConfig(gpu_scheduler_policy=policy))
    for sched in (ReferenceScheduler(cluster), KernelScheduler(cluster)):
        for b in busy:
            sched.adopt(f"b{b}", 0, [[Pick(f"a-kunlun-{b}", 98304, 100, b, type="kunlun")]])
        d = sched.schedule(Pod(name="p", containers=(Container(limits={KL.count_name:
                                                                        count}),)))
        assert [p.idx for p in d.containers[0]] == expected


@pytest.mark.parametrize("count", [3, 5, 6, 7])
def test_a_count_graghselect_cannot_place_never_fits(count):
    cluster = Cluster((_whole_node("a"),))
    pod = Pod(name="p", containers=(Container(limits={KL.count_name: count}),))
    for sched in (ReferenceScheduler(cluster), KernelScheduler(cluster)):
        d = sched.schedule(pod)
        assert d.node is None and "1/8 NumaNotFit" in d.message


def test_a_vxpu_card_takes_one_slice_size():
    cards = tuple(Card(id=f"x{j}", index=j, count=4, devmem=98304, type="XPU")
                  for j in range(1))
    cluster = Cluster((Node("a", cards),))
    quarter = Pod(name="q", containers=(Container(limits={XPU.count_name: 1,
                                                          XPU.memory_name: 20000}),))
    half = Pod(name="h", containers=(Container(limits={XPU.count_name: 1,
                                                       XPU.memory_name: 40000}),))
    for sched in (ReferenceScheduler(cluster), KernelScheduler(cluster)):
        assert sched.schedule(quarter).node == "a"
        # 24576 in use: a 49152 slice fits the memory but not the slice size
        d = sched.schedule(half)
        assert d.node is None and "1/1 NumaNotFit" in d.message
        assert sched.schedule(quarter.renamed("q2")).node == "a"


def test_the_bubble_score_wins_binpack_and_loses_spread():
    # a: cards 0-3 busy; a 4-card pod on the free wing scores 3000 there,
    # b (fresh) scores 2000 (a wing of 4 leaves no bubble: 0 - 1 = -1 on a)
    for policy, expected in (("binpack", "a"), ("spread", "b")):
        cluster = Cluster((_whole_node("a"), _whole_node("b")),
                          SchedulerConfig(node_scheduler_policy=policy))
        got = []
        for sched in (ReferenceScheduler(cluster), KernelScheduler(cluster)):
            for i in range(4):
                sched.adopt(f"busy{i}", 0, [[Pick(f"a-kunlun-{i}", 98304, 100, i,
                                                  type="kunlun")]])
            got.append(sched.schedule(Pod(name="p", containers=(
                Container(limits={KL.count_name: 4}),))).node)
        assert got == [expected, expected], policy


def test_the_webhook_and_generation_give_quarter_half_or_whole_cards():
    pod = Pod(name="p", containers=(Container(limits={XPU.count_name: 2,
                                                      XPU.memory_name: 30000}),))
    c = admit(pod, SchedulerConfig()).containers[0]
    assert c.limits[XPU.memory_name] == c.requests[XPU.memory_name] == 49152
    assert container_request(c, SchedulerConfig()) == ref.Request(2, 49152, 0, 50, "XPU")


# -- files and the CLI -------------------------------------------------------------------
CLUSTER = """\
nodes:
  - name_prefix: t4
    replicas: 1
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name_prefix: kl
    replicas: 2
    gpus: 8
    card: {type: kunlun, devmem: 98304}
  - name_prefix: xpu
    replicas: 1
    gpus: 8
    card: {type: XPU, devmem: 98304, count: 4}
"""

_SHAPES = ([{"limits": {KL.count_name: 1}}], [{"limits": {KL.count_name: 2}}],
           [{"limits": {KL.count_name: 4}}],
           [{"limits": {XPU.count_name: 1, XPU.memory_name: 20000}}],
           [{"limits": {XPU.count_name: 2}}], [{"gpu": 1, "gpumem": 2048}])


def _trace(n: int = 60) -> str:
    return "".join(json.dumps({"name": f"p{i}", "arrival": 20.0 * i, "duration": 600,
                               "containers": _SHAPES[i % len(_SHAPES)]}) + "\n"
                   for i in range(n))


def test_kunlun_pods_on_both_engines(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.jsonl").write_text(_trace())
    _run(tmp_path, "compiled")
    console = capsys.readouterr().out
    assert "compiled (hamisim._replay)" in console
    assert "kunlun (16 cards), XPU (8 cards)" in console
    _run(tmp_path, "python", "--backend", "reference")
    assert_engines_agree(tmp_path)
    pods = pd.read_parquet(tmp_path / "compiled" / "pods.parquet").set_index("pod")
    for i in range(60):
        devices = pods.loc[f"p{i}", "devices"]
        cards = [e for e in devices.rstrip(";").replace(";", ":").split(":") if e]
        kind = i % len(_SHAPES)
        if kind < 3:
            assert len(cards) == (1, 2, 4)[kind]
            assert all(e.endswith(",kunlun,98304,100") for e in cards)
        elif kind == 3:
            assert cards[0].endswith(",XPU,24576,25")
        elif kind == 4:
            assert len(cards) == 2 and all(e.endswith(",XPU,98304,100") for e in cards)


def test_a_count_of_3_warns_at_its_line(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    bad = {"name": "three", "arrival": 0, "duration": 60,
           "containers": [{"limits": {KL.count_name: 3}}]}
    (tmp_path / "trace.jsonl").write_text(_trace(3) + json.dumps(bad) + "\n")
    _run(tmp_path, "compiled")
    err = capsys.readouterr().err
    assert (f"{tmp_path / 'trace.jsonl'}:4: warning: pod 'three': kunlunxin.com/xpu 3: "
            "HAMi's Kunlunxin topology (graghSelect) places 1, 2, 4 or 8 cards only") in err


# -- kernel = reference on Kunlunxin clusters -------------------------------------------
@st.composite
def _kunlun_clusters(draw):
    nodes = []
    for i in range(draw(st.integers(1, 4))):
        n = draw(st.sampled_from([1, 3, 4, 8, 8, 8, 10]))
        if draw(st.booleans()):
            cards = tuple(Card(**c) for c in kunlun.cards_from_capacity(f"n{i}", n))
        else:
            cards = tuple(Card(id=f"n{i}-x{j}", index=j, count=draw(st.sampled_from([2, 4])),
                               devmem=98304, type=draw(st.sampled_from(["XPU", "Kunlun-XPU"])),
                               health=draw(st.integers(0, 9)) != 0) for j in range(n))
        nodes.append(Node(f"n{i}", cards))
    return Cluster(tuple(nodes), SchedulerConfig(
        node_scheduler_policy=draw(st.sampled_from(["binpack", "spread"])),
        gpu_scheduler_policy=draw(st.sampled_from(["spread", "binpack", "mutex", "numa"])),
        percentage_of_nodes_to_score=draw(st.sampled_from([0, 100])),
        node_tie_break=draw(st.sampled_from(["last", "random"]))))


@st.composite
def _kunlun_pods(draw, name: str, ids: list[str]):
    containers = []
    for _ in range(draw(st.integers(1, 2))):
        if draw(st.booleans()):
            limits = {KL.count_name: draw(st.sampled_from([1, 1, 2, 3, 4, 8]))}
        else:
            limits = {XPU.count_name: draw(st.sampled_from([1, 2, 4]))}
            if draw(st.booleans()):
                limits[XPU.memory_name] = draw(st.sampled_from([0, 20000, 40000, 98304]))
        containers.append(Container(limits=limits))
    ann = {}
    if ids and draw(st.integers(0, 4)) == 0:
        ann[draw(st.sampled_from(["hami.io/use-xpu-uuid", "baidu.com/nouse-gpuuuid"]))] = \
            ",".join(draw(st.lists(st.sampled_from(ids), max_size=3)))
    return Pod(name=name, containers=tuple(containers), annotations=ann)


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(cluster=_kunlun_clusters(), data=st.data())
def test_kernel_equals_reference_on_kunlun_clusters(cluster, data):
    ids = [c.id for n in cluster.nodes for c in n.cards]
    assert_sequence_agrees(cluster, data, lambda name: _kunlun_pods(name, ids))
