"""Huawei Ascend (hamisim.devices.ascend): HAMi v2.10.0's unit-test facts on
both backends, the vNPU templates and the webhook's refusals, hami-vnpu-core,
910 networks (Fit's choice and the node score), 910C module pairs, the JSON
registration with its NetworkID, and Ascend nodes beside NVIDIA nodes through
the CLI on both engines.

The vectors (tests/data/hami_vectors/ascend_*.json) are the cases of
``pkg/device/ascend/device_test.go`` and ``device_910c_pairing_test.go`` at
v2.10.0: Fit on the reference and on the compiled kernel; request generation,
the webhook, ``trimMemory``, ``ScoreNode``, registration, the allocation
annotations and the module choice on the model.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SLOW
from family_cases import (VECTORS, assert_engines_agree, assert_sequence_agrees,
                          run_in as _run, vector_cases as _cases)
from vector_ops import BACKENDS

from hamisim.cli import main
from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.devices import FAMILIES, ascend, family, offer_mask
from hamisim.hami import reference as ref
from hamisim.hami.decision import Pick, devices_annotation
from hamisim.hami.reference import ReferenceScheduler
from hamisim.io.clusterfile import load_cluster
from hamisim.kube.quantity import parse_quantity
from hamisim.pods import AdmissionDenied, Container, Pod, admit, container_request
from hamisim.sim.kernel import KernelScheduler

B3 = family("Ascend910B3")
C910 = family("Ascend910C")


def _ints(resources: dict) -> dict[str, int]:
    # the quantity strings some cases write ("16Gi", "-1m"): rounded away from
    # zero, so a negative one stays negative (HAMi tests its sign first)
    out = {}
    for k, v in resources.items():
        q = v if isinstance(v, int) else parse_quantity(v)
        out[k] = math.floor(q) if q < 0 else math.ceil(q)
    return out


def _config(d: dict) -> ascend.VNPUConfig:
    return ascend.VNPUConfig.from_device_config(d)


# -- HAMi's vectors --------------------------------------------------------------------
@pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))
@pytest.mark.parametrize("case", _cases("ascend_fit.json"))
def test_ascend_fit(ops, case):
    ok, picks, reason = ops.fit(case)
    exp = case["expect"]
    assert (ok, reason) == (exp["fit"], exp["reason"])
    if exp["fit"]:
        assert [(p["uuid"], p["usedmem"], p["usedcores"]) for p in picks] == [
            (p["uuid"], p["usedmem"], p["usedcores"]) for p in exp["picks"]]


@pytest.mark.parametrize("case", _cases("ascend_requests.json", "generate"))
def test_ascend_request_generation(case):
    c = Container(limits=_ints(case["limits"]), requests=_ints(case["requests"]))
    exp = case["expect"]
    got = ascend.request_fields(c, _config(case["config"]))
    assert got == (None if not exp else (exp["nums"], exp["memreq"], exp["mempercentagereq"],
                                         exp["coresreq"]))


@pytest.mark.parametrize("case", _cases("ascend_requests.json", "mutate"))
def test_the_webhook_trims_memory_to_templates_or_refuses(case):
    cfg = _config(case["config"])
    limits, requests = _ints(case["limits"]), _ints(case["requests"])
    error = ascend.admission_error(limits, requests, case["annotations"], cfg)
    assert error == case["expect_error"]
    if error is None:
        ascend.mutate(limits, requests, case["annotations"], cfg)
        assert (limits, requests) == (case["expect_limits"], case["expect_requests"])


@pytest.mark.parametrize("case", _cases("ascend_requests.json", "trim_memory"))
def test_trim_memory(case):
    assert ascend.trim_memory(_config(case["config"]), case["memory"]) == (
        case["expect_memory"], case["expect_template"])


@pytest.mark.parametrize("case", _cases("ascend_requests.json", "score_node"))
def test_score_node(case):
    fam = family(case["commonWord"])
    ids = [[d.get("network_id") if d.get("custom_info") else None for d in c]
           for c in case["pod_devices"]]
    score = ascend.network_score(ids) if fam.network_topology else np.float32(0)
    assert score == np.float32(case["expect"])


@pytest.mark.parametrize("case", _cases("ascend_requests.json", "best_combination_910c"))
def test_module_pairs(case):
    cands = case["candidates"]
    chosen = ascend.module_pairs([c["uuid"] for c in cands], [c["idx"] for c in cands],
                                 case["req_num"])
    assert chosen == case["expect_ids"]


@pytest.mark.parametrize("case", _cases("ascend_requests.json", "patch"))
def test_the_allocation_annotations(case):
    if not case["devices"]:
        return
    cfg = _config(case["config"])
    word = case["devices_key"]
    # (the Go case's picks name the type "Ascend": printed as given)
    containers = [[Pick(d["uuid"], d["usedmem"], d["usedcores"], d["idx"], type=word,
                        label=d["type"]) for d in c] for c in case["devices"]]
    exp = case["expect"]
    assert devices_annotation(containers) == exp[f"hami.io/{word}-devices-allocated"]
    info = [i for c in containers for i in ascend.runtime_info(c, case["pod_annotations"], cfg)]
    assert json.dumps(info, separators=(",", ":")) == exp[f"huawei.com/{word}"]


@pytest.mark.parametrize("case", _cases("ascend_requests.json", "check_type"))
def test_a_request_of_another_type_fits_no_card_of_the_chip(case):
    fam = family(case["commonWord"])
    ok = case["expect"][1]
    assert (family(case["request_type"]) is fam) == ok
    card = ref.CardUsage("a", type=case["commonWord"], count=4, devmem=1024, devcore=100)
    res = ref.fit([card], ref.Request(1, 0, 100, 0, case["request_type"]), {}, "spread")
    assert res.fit == ok


def test_the_vectors_cover_hamis_tests():
    fit = json.loads((VECTORS / "ascend_fit.json").read_text())
    req = json.loads((VECTORS / "ascend_requests.json").read_text())
    assert len(fit["cases"]) == 139
    assert {c["op"] for c in req["cases"]} == {
        "generate", "mutate", "trim_memory", "score_node", "node_devices", "patch",
        "check_type", "best_combination_910c"}


# -- the bundled chips ---------------------------------------------------------------
def test_the_chips_are_the_charts():
    assert [c.common_word for c in ascend.CHIPS] == [
        "Ascend910A", "Ascend910B2", "Ascend910B3", "Ascend910B4-1", "Ascend910B4",
        "Ascend310P", "Ascend910C"]
    assert all(f in FAMILIES for f in ascend.FAMILIES)
    assert B3.resource_names == ("huawei.com/Ascend910B3", "huawei.com/Ascend910B3-memory",
                                 "huawei.com/Ascend910B3-core")
    assert (B3.register_annotation, B3.allocated_annotation) == (
        "hami.io/node-register-Ascend910B3", "hami.io/Ascend910B3-devices-allocated")
    # 910 chips group by network; 310P does not; 910C takes modules
    assert [f.network_topology for f in ascend.FAMILIES] == [True] * 6 + [False]
    assert [f.word for f in ascend.FAMILIES if f.module_pairs] == ["Ascend910C"]
    # a 910B4-1 card is offered to 910B4 requests too (HAMi's substring test)
    assert offer_mask("Ascend910B4-1") == (1 << family("Ascend910B4-1").fid
                                           | 1 << family("Ascend910B4").fid)


def test_a_memory_rounds_up_to_the_chips_template_through_the_pod_model():
    pod = Pod(name="p", containers=(Container(limits={B3.count_name: 1,
                                                      B3.memory_name: 10000}),))
    c = admit(pod, SchedulerConfig()).containers[0]
    assert c.limits[B3.memory_name] == c.requests[B3.memory_name] == 16384
    assert container_request(c, SchedulerConfig()) == ref.Request(1, 16384, 0, 0, B3.word)
    # no memory: the whole card (memoryAllocatable), not a percentage
    pod = Pod(name="p", containers=(Container(limits={B3.count_name: 2}),))
    c = admit(pod, SchedulerConfig()).containers[0]
    assert container_request(c, SchedulerConfig()) == ref.Request(2, 65536, 0, 0, B3.word)


@pytest.mark.parametrize("limits, annotations, text", [
    ({"huawei.com/Ascend910B3": 1, "huawei.com/Ascend910B3-memory": 70000}, {},
     "huawei.com/Ascend910B3-memory 70000 is invalid"),
    ({"huawei.com/Ascend910B3": 2, "huawei.com/Ascend910B3-memory": 16384}, {},
     "vNPU not supported for multiple devices"),
    ({"huawei.com/Ascend910B3": 1, "huawei.com/Ascend910B3-core": 5}, {},
     "huawei.com/Ascend910B3-core is only supported in hami-core (soft split) mode"),
    ({"huawei.com/Ascend910C": 3}, {}, "Ascend910C device request must be 1 or 2*n, got 3"),
])
def test_the_webhook_refuses(limits, annotations, text):
    pod = Pod(name="p", containers=(Container(limits=limits),), annotations=annotations)
    with pytest.raises(AdmissionDenied) as err:
        admit(pod, SchedulerConfig())
    assert str(err.value) == f'admission webhook "vgpu.hami.io" denied the request: {text}'


def test_the_soft_split_keeps_the_memory_and_takes_cores():
    pod = Pod(name="p", annotations={ascend.VNPU_MODE: ascend.HAMI_CORE},
              containers=(Container(limits={B3.count_name: 2, B3.memory_name: 10000,
                                            B3.cores_name: 30}),))
    c = admit(pod, SchedulerConfig()).containers[0]
    assert container_request(c, SchedulerConfig()) == ref.Request(2, 10000, 0, 30, B3.word)


def test_910c_makes_one_npu_a_module():
    pod = Pod(name="p", containers=(Container(limits={C910.count_name: 1},
                                              requests={C910.count_name: 1}),))
    c = admit(pod, SchedulerConfig()).containers[0]
    assert c.limits[C910.count_name] == c.requests[C910.count_name] == 2


# -- the scheduler: hami-vnpu-core, networks, modules --------------------------------
def _node(name: str, word: str, n: int = 8, network=None, vnpu=None, devcore: int = 20,
          count: int = 4) -> Node:
    cards = tuple(Card(id=f"{name}-{j}", index=j, count=count, devmem=65536, devcore=devcore,
                       type=word, network_id=None if network is None else network(j))
                  for j in range(n))
    return Node(name=name, cards=cards, hami_vnpu_core=vnpu)


def _both(cluster: Cluster, pods: list[Pod]):
    """The decisions of both backends, which must agree; the last ones."""
    r, k = ReferenceScheduler(cluster), KernelScheduler(cluster)
    out = None
    for pod in pods:
        a, b = r.schedule(pod), k.schedule(pod)
        assert (a.node, [[p.uuid for p in c] for c in a.containers], a.message) == \
            (b.node, [[p.uuid for p in c] for c in b.containers], b.message)
        out = a
    return out


def _soft(n: int = 1, cores: int = 30) -> Pod:
    return Pod(name="s", annotations={ascend.VNPU_MODE: ascend.HAMI_CORE},
               containers=(Container(limits={B3.count_name: n, B3.memory_name: 4096,
                                             B3.cores_name: cores}),))


@pytest.mark.parametrize("node_value, global_default, fits", [
    (None, False, False), (None, True, True), ("true", False, True), ("false", True, False),
    ("yes", True, False)])
def test_a_soft_split_pod_needs_hami_vnpu_core(node_value, global_default, fits):
    cluster = Cluster(nodes=(_node("a", B3.word, vnpu=node_value),),
                      scheduler=SchedulerConfig(hami_vnpu_core=global_default))
    d = _both(cluster, [_soft(cores=60)])
    assert (d.node is not None) == fits
    if not fits:
        assert "1/8 ModeNotFit" in d.message
    else:
        # the card's cores count as 100 under the soft split (devcore 20 < 60)
        assert d.containers[0][0].usedcores == 60


def test_a_multi_npu_pod_takes_its_largest_network():
    # networks 0 (cards 0-2), 1 (cards 3-7): a 4-NPU pod takes network 1
    cluster = Cluster(nodes=(_node("a", B3.word, network=lambda j: 0 if j < 3 else 1),))
    pod = Pod(name="p", containers=(Container(limits={B3.count_name: 4}),))
    d = _both(cluster, [pod])
    assert {p.uuid for p in d.containers[0]} <= {f"a-{j}" for j in range(3, 8)}


def test_the_network_score_wins_binpack_and_loses_spread():
    # a: one network; b: no NetworkID, and busier (binpack would prefer it)
    def nodes():
        return (_node("a", B3.word, network=lambda j: 0), _node("b", B3.word))
    pod = Pod(name="p", containers=(Container(limits={B3.count_name: 2}),))
    for policy, expected in (("binpack", "a"), ("spread", "b")):
        cluster = Cluster(nodes=nodes(), scheduler=SchedulerConfig(node_scheduler_policy=policy))
        r, k = ReferenceScheduler(cluster), KernelScheduler(cluster)
        for s in (r, k):
            s.adopt("busy", 1, [[Pick("b-7", 16384, 0, 7, type=B3.word)]])
        a, b = r.schedule(pod), k.schedule(pod)
        assert a.node == b.node == expected, policy


def test_910c_takes_whole_modules_and_counts_its_reason_out_of_the_request():
    cluster = Cluster(nodes=(_node("a", C910.word, count=1),))
    r, k = ReferenceScheduler(cluster), KernelScheduler(cluster)
    # NPUs 1, 2 and 5 busy: modules {0,1}, {2,3}, {4,5} broken, {6,7} whole
    for s in (r, k):
        for j in (1, 2, 5):
            s.adopt(f"busy{j}", 0, [[Pick(f"a-{j}", 65536, 0, j, type=C910.word)]])
    two = Pod(name="two", containers=(Container(limits={C910.count_name: 2}),))
    a, b = r.schedule(two), k.schedule(two)
    assert [p.uuid for p in a.containers[0]] == [p.uuid for p in b.containers[0]] \
        == ["a-7", "a-6"]
    four = Pod(name="four", containers=(Container(limits={C910.count_name: 4}),))
    a, b = r.schedule(four), k.schedule(four)
    assert a.node is None and a.message == b.message
    # 7 cards taken or refused out of a request of 4, and the pairs found (none) listed
    assert "0/4 AllocatedCardsInsufficientRequest, 5/4 CardTimeSlicingExhausted" in a.message


# -- files and the CLI -------------------------------------------------------------------
CLUSTER = """\
scheduler:
  hami_vnpu_core: false
nodes:
  - name_prefix: t4
    replicas: 1
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name_prefix: b3
    replicas: 2
    annotations: {hami-vnpu-core: "true"}
    devices:
      - {index: 0, type: Ascend910B3, count: 4, devmem: 65536, devcore: 20, customInfo: {NetworkID: 0}}
      - {index: 1, type: Ascend910B3, count: 4, devmem: 65536, devcore: 20, customInfo: {NetworkID: 0}}
      - {index: 2, type: Ascend910B3, count: 4, devmem: 65536, devcore: 20, customInfo: {NetworkID: 1}}
      - {index: 3, type: Ascend910B3, count: 4, devmem: 65536, devcore: 20, customInfo: {NetworkID: 1}}
  - name_prefix: c910
    replicas: 1
    gpus: 4
    card: {type: Ascend910C, count: 1, devmem: 65536, devcore: 20}
"""


#: the trace's pods by position: (containers, annotations)
_SHAPES = (
    ([{"limits": {B3.count_name: 1, B3.memory_name: 10000}}], {}),
    ([{"limits": {B3.count_name: 2}}], {}),
    ([{"limits": {B3.count_name: 1, B3.memory_name: 4096, B3.cores_name: 25}}],
     {ascend.VNPU_MODE: ascend.HAMI_CORE}),
    ([{"limits": {C910.count_name: 1}}], {}),
    ([{"gpu": 1, "gpumem": 2048}], {}),
)


def _trace(n: int = 80) -> str:
    rows = []
    for i in range(n):
        containers, ann = _SHAPES[i % len(_SHAPES)]
        rows.append(json.dumps({"name": f"p{i}", "arrival": 10.0 * i, "duration": 300,
                                "containers": containers,
                                **({"annotations": ann} if ann else {})}))
    return "\n".join(rows) + "\n"


def test_ascend_pods_on_both_engines(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.jsonl").write_text(_trace())
    _run(tmp_path, "compiled")
    console = capsys.readouterr().out
    assert "compiled (hamisim._replay)" in console
    assert "Ascend910B3 (8 cards)" in console and "--enable-ascend" in console
    _run(tmp_path, "python", "--backend", "reference")
    assert_engines_agree(tmp_path)
    pods = pd.read_parquet(tmp_path / "compiled" / "pods.parquet").set_index("pod")
    for i in range(80):
        node, devices = pods.loc[f"p{i}", "node"], pods.loc[f"p{i}", "devices"]
        cards = [e for e in devices.rstrip(";").replace(";", ":").split(":") if e]
        kind = i % 5
        if kind == 0:
            # 10000 MiB rounds up to the 16 GiB template
            assert node.startswith("b3") and cards[0].endswith(",Ascend910B3,16384,0")
        elif kind == 1:
            # whole cards from one network (cards 0-1 or 2-3 of a node)
            assert len(cards) == 2 and all(e.endswith(",Ascend910B3,65536,0") for e in cards)
            assert len({int(e.split(",")[0].rsplit("-", 1)[1]) // 2 for e in cards}) == 1
        elif kind == 2:
            assert cards[0].endswith(",Ascend910B3,4096,25")
        elif kind == 3:
            # one 910C NPU becomes a whole module
            assert node.startswith("c910") and len(cards) == 2
        else:
            assert node.startswith("t4")


def test_a_cluster_file_reads_networks_and_hami_vnpu_core(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    cluster = load_cluster(tmp_path / "cluster.yaml")
    b3 = [n for n in cluster.nodes if n.name.startswith("b3")]
    assert [c.network_id for c in b3[0].cards] == [0, 0, 1, 1]
    assert b3[0].hami_vnpu_core == "true" and cluster.scheduler.hami_vnpu_core is False
    assert [c.network_id for c in cluster.nodes[-1].cards] == [None] * 4


def test_a_node_annotation_hami_does_not_read_as_true_warns_at_its_line(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - name: a\n    annotations:\n      hami-vnpu-core: \"yes\"\n"
                    "    gpus: 1\n    card: {type: Ascend910B3, devmem: 65536}\n")
    with pytest.warns(Warning) as caught:
        cluster = load_cluster(path)
    assert any(f"{path}:4" in str(w.message) and "reads it as false" in str(w.message)
               for w in caught)
    assert cluster.nodes[0].hami_vnpu_core == "yes"


def test_a_memory_no_template_holds_warns_at_its_line(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    bad = {"name": "bad", "arrival": 0, "duration": 60,
           "containers": [{"limits": {B3.count_name: 1, B3.memory_name: 70000}}]}
    (tmp_path / "trace.jsonl").write_text(_trace(5) + json.dumps(bad) + "\n")
    _run(tmp_path, "compiled")
    out = capsys.readouterr()
    assert (f"{tmp_path / 'trace.jsonl'}:6: warning: pod 'bad': HAMi's admission webhook "
            "refuses to create it (huawei.com/Ascend910B3-memory 70000 is invalid)") in out.err
    assert "refused by HAMi's admission webhook 1" in out.out


def test_the_registration_imports_with_its_network(tmp_path, capsys):
    cards = [{"id": f"npu-{i}", "index": i, "count": 4, "devmem": 65536, "devcore": 20,
              "type": "Ascend910B3", "numa": 0, "health": True,
              "customInfo": {"NetworkID": float(i // 2)}} for i in range(4)]
    node = {"metadata": {"name": "a1", "annotations": {
        B3.register_annotation: json.dumps(cards), ascend.NODE_ANNOTATION: "true"}},
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi"}}}
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "List", "items": [node]}))
    assert main(["import", str(tmp_path / "nodes.json"), "--out", str(tmp_path / "imp")]) == 0
    capsys.readouterr()
    n = load_cluster(tmp_path / "imp" / "cluster.yaml").nodes[0]
    assert [(c.id, c.type, c.network_id) for c in n.cards] == [
        (f"npu-{i}", "Ascend910B3", i // 2) for i in range(4)]
    assert n.hami_vnpu_core == "true"


# -- kernel = reference on Ascend clusters ---------------------------------------------
_CHIPS = ("Ascend910B3", "Ascend910C", "Ascend310P", "Ascend910B4")


@st.composite
def _ascend_clusters(draw):
    nodes = []
    for i in range(draw(st.integers(1, 5))):
        word = draw(st.sampled_from(_CHIPS))
        n = draw(st.integers(1, 16))
        mode = draw(st.sampled_from(["all", "none", "some"]))
        cards = []
        for j in range(n):
            network = None if mode == "none" or (mode == "some" and j % 3 == 0) \
                else draw(st.sampled_from([0, 0, 1, 2]))
            cards.append(Card(id=f"n{i}-{j}", index=j, count=draw(st.sampled_from([1, 2, 4])),
                              devmem=draw(st.sampled_from([65536, 32768, 16384])),
                              devcore=draw(st.sampled_from([20, 100])), type=word,
                              health=draw(st.integers(0, 15)) != 0, network_id=network))
        nodes.append(Node(name=f"n{i}", cards=tuple(cards),
                          hami_vnpu_core=draw(st.sampled_from([None, "true", "false"]))))
    return Cluster(tuple(nodes), SchedulerConfig(
        node_scheduler_policy=draw(st.sampled_from(["binpack", "spread"])),
        gpu_scheduler_policy=draw(st.sampled_from(["spread", "binpack", "mutex,binpack"])),
        percentage_of_nodes_to_score=draw(st.sampled_from([0, 50, 100])),
        node_tie_break=draw(st.sampled_from(["last", "random"])),
        hami_vnpu_core=draw(st.booleans())))


@st.composite
def _ascend_pods(draw, name: str):
    containers = []
    for _ in range(draw(st.integers(1, 2))):
        word = draw(st.sampled_from(_CHIPS))
        limits = {f"huawei.com/{word}": draw(st.sampled_from([1, 1, 2, 3, 4, 8]))}
        if draw(st.booleans()):
            limits[f"huawei.com/{word}-memory"] = draw(st.sampled_from(
                [0, 3000, 8192, 16384, 30000, 65536, 70000]))
        if draw(st.integers(0, 3)) == 0:
            limits[f"huawei.com/{word}-core"] = draw(st.sampled_from([0, 10, 50, 100]))
        containers.append(Container(limits=limits))
    ann = {ascend.VNPU_MODE: ascend.HAMI_CORE} if draw(st.integers(0, 2)) == 0 else {}
    init = (Container(limits={f"huawei.com/{_CHIPS[0]}": 1}),) \
        if draw(st.integers(0, 5)) == 0 else ()
    return Pod(name=name, containers=tuple(containers), init_containers=init, annotations=ann)


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(cluster=_ascend_clusters(), data=st.data())
def test_kernel_equals_reference_on_ascend_clusters(cluster, data):
    assert_sequence_agrees(cluster, data, _ascend_pods)
