"""HAMi's own unit-test facts (tests/data/hami_vectors, 548 checks) on every backend.

The vectors are read from their JSON files; each case becomes one pytest item
per backend. See tests/data/hami_vectors/README.md for the schema.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from vector_ops import BACKENDS

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.hami import reference as ref
from hamisim.hami.decision import parse_reason
from hamisim.hami.policy import parse_weights, pod_gpu_policy, policy_contains
from hamisim.pods import Container, Pod, Request, admit, container_request, default_core_limit
from hamisim.sim.backend import make_scheduler

VECTORS = Path(__file__).parent / "data" / "hami_vectors"


def _cases(kind_file: str):
    doc = json.loads((VECTORS / kind_file).read_text())
    params = []
    for i, case in enumerate(doc["cases"]):
        marks = [pytest.mark.skip(reason=case["skip_reason"])] if "skip_reason" in case else []
        params.append(pytest.param(case, id=f"{i}-{case['name'][:60]}", marks=marks))
    return params


backends = pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))


def f32(x) -> float:
    return float(np.float32(x))


# -- card score and comparator ---------------------------------------------------
@backends
@pytest.mark.parametrize("case", _cases("card_score.json"))
def test_card_score(ops, case):
    got = ops.card_score(case["card"], case["requests"], case["weights"])
    assert got == f32(case["expect_score"])
    for chk in case.get("sort_checks", []):
        order = ops.sort_order(chk["policy"], chk["numa_bind"], chk["cards_in_order"],
                               chk["scores"], chk["numa"])
        assert order[-1] == chk["expect_last"]


@backends
@pytest.mark.parametrize("case", _cases("card_less.json"))
def test_card_less(ops, case):
    assert ops.card_less(case["policy"], case["numa_bind"], case["a"], case["b"]) \
        == case["expect_less"]


@backends
@pytest.mark.parametrize("case", _cases("node_score.json"))
def test_node_score(ops, case):
    if case["op"] == "node_default_score":
        assert ops.node_base_score(case["cards"]) == f32(case["expect_score"])
    else:
        assert ops.node_less(case["policy"], case["a_score"], case["b_score"]) \
            == case["expect_less"]


# -- Fit ---------------------------------------------------------------------------
def _check_fit(expect: dict, ok: bool, picks: list[dict], reason: str) -> None:
    assert ok == expect["fit"]
    ids = [p["uuid"] for p in picks]
    if "devices" in expect and expect["fit"]:
        assert picks == expect["devices"]
    if "devices_ids" in expect:
        assert ids == expect["devices_ids"]
    if "devices_id_set" in expect:
        assert sorted(ids) == sorted(expect["devices_id_set"])
    if "count" in expect:
        assert len(ids) == expect["count"]
    if expect.get("reason"):
        assert reason == expect["reason"]
    if "reason_map" in expect:
        assert parse_reason(reason) == expect["reason_map"]
    if "reason_contains" in expect:
        assert expect["reason_contains"] in reason


@backends
@pytest.mark.parametrize("case", _cases("nvidia_fit.json"))
def test_nvidia_fit(ops, case):
    ok, picks, reason = ops.fit(case)
    _check_fit(case["expect"], ok, picks, reason)


@backends
@pytest.mark.parametrize("case", _cases("fit_container.json"))
def test_fit_container(ops, case):
    ok, ids, reason = ops.fit_container(case)
    exp = case["expect"]
    assert ok == exp["fit"]
    if "reason" in exp:
        assert reason == exp["reason"]
    if "devices_ids" in exp:
        assert ids == exp["devices_ids"]


@backends
@pytest.mark.parametrize("case", _cases("node_pipeline.json"))
def test_node_pipeline(ops, case):
    got = ops.node_pipeline(case)
    exp = case["expect"]
    for name, want in exp["nodes"].items():
        ok, devices, score, _ = got[name]
        assert ok, f"{name} should fit"
        assert devices == want["devices"]["NVIDIA"]
        assert score == f32(want["score"])
    for name, reason in exp.get("failed_nodes", {}).items():
        ok, _, _, got_reason = got[name]
        assert not ok
        assert got_reason == reason
    assert {n for n, r in got.items() if r[0]} == set(exp["nodes"])


# -- requests and annotation helpers (shared by both backends) ---------------------
@pytest.mark.parametrize(("gpu", "cores", "want"), [
    (1, 2**32 + 30, (1, 30)),        # Go's int32 of the cores: 30
    (1, 2**32 - 1, (1, -1)),         # -1: fits any card, booked as 0
    (2**32 + 2, 50, (2, 50)),        # the count too
    (2**32, 50, None),               # int32 0: no card asked
])
def test_nvidias_count_and_cores_are_gos_int32_of_the_value(gpu, cores, want):
    # GenerateResourceRequests: Nums int32(n), Coresreq int32(corenums), unchecked
    got = container_request(Container({"nvidia.com/gpu": gpu, "nvidia.com/gpucores": cores},
                                      {}), SchedulerConfig())
    assert (None if got is None else (got.nums, got.coresreq)) == want


@pytest.mark.parametrize("case", _cases("request_from_resources.json"))
def test_request_from_resources(case):
    if case["op"] == "generate":
        cfg = SchedulerConfig(default_memory=case["config"]["defaultMemory"],
                              default_cores=case["config"]["defaultCores"],
                              memory_factor=case["config"]["memoryFactor"])
        got = container_request(Container(case["limits"], case["requests"]), cfg)
        exp = case["expect"]
        assert got == (None if exp is None else Request(
            exp["nums"], exp["memreq"], exp["mempercentagereq"], exp["coresreq"], exp["type"]))
    else:
        names = case["resource_names"]
        got = default_core_limit(Container(case["limits"], case["requests"]),
                                 count=names["count"], memory=names["memory"],
                                 memory_percentage=names["memory_percentage"],
                                 cores=names["cores"])
        assert got == case["expect_core_limit"]
        if "expect_core_request_unchanged" in case:
            assert case["requests"][names["cores"]] == case["expect_core_request_unchanged"]


@pytest.mark.parametrize("case", _cases("annotation_filters.json"))
def test_annotation_filters(case):
    op = case["op"]
    if op == "uuid_allowed":
        got = ref.uuid_allowed(case["annotations"], case["card_id"], case["use_key"],
                               case["nouse_key"])
    elif op == "type_allowed":
        got = ref.type_allowed(case["annotations"], case["card_type"], case["use_key"],
                               case["nouse_key"])
    elif op == "mode_allowed":
        got = ref.mode_allowed(case["mode_annotation"], case["card_mode"])
    elif op == "policy_contains":
        got = policy_contains(case["policy"], case["target"])
    elif op == "pod_gpu_policy":
        got = pod_gpu_policy(case["default"], case["annotations"])
    elif op == "parse_reason":
        got = parse_reason(case["reason"])
    elif op == "parse_weights":
        if "expect_error" in case:
            with pytest.raises(ValueError, match=case["expect_error"].replace('"', '.')):
                parse_weights(case["value"])
            return
        got = dict(zip(("slot", "core", "memory"), parse_weights(case["value"])))
    else:
        pytest.fail(f"unknown op {op}")
    assert got == case["expect"]


# -- the three live-cluster experiments, step by step ------------------------------
def _scenario_cluster(doc: dict) -> Cluster:
    sd = doc["scheduler_defaults"]
    nv = sd["nvidia"]
    cfg = SchedulerConfig(gpu_scheduler_policy=sd["gpu_scheduler_policy"],
                          node_scheduler_policy=sd["node_scheduler_policy"],
                          default_memory=nv["defaultMemory"], default_cores=nv["defaultCores"],
                          memory_factor=nv["memoryFactor"], default_gpu_num=nv["defaultGPUNum"])
    nodes = tuple(
        Node(name, tuple(Card(c["id"], c["index"], c["count"], c["devmem"], c["devcore"],
                              c["type"], c["numa"], c["health"], c["mode"])
                         for c in n["cards"]))
        for name, n in doc["cluster"]["nodes"].items())
    return Cluster(nodes, cfg)


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("name", ["scenario_exp1.json", "scenario_exp2.json",
                                  "scenario_exp3.json"])
def test_scenario_vectors(backend, name):
    doc = json.loads((VECTORS / name).read_text())
    sched = make_scheduler(_scenario_cluster(doc), backend=backend)
    for step in doc["steps"]:
        exp = step["expect"]
        if step["op"] == "delete":
            sched.delete(step["pod"])
        else:
            containers = tuple(Container(c.get("limits", {}), c.get("requests", {}))
                               for c in step["containers"])
            pod = Pod(step["pod"], containers, annotations=step["annotations"])
            cfg = sched.cluster.scheduler
            assert container_request(admit(pod, cfg).containers[0], cfg) == Request(
                **{k: v for k, v in step["derived_request"].items()})
            d = sched.schedule(pod)
            assert d.bound == exp["bound"], step["id"]
            if exp["bound"]:
                assert d.node == exp["node"]
                assert d.card_ids == exp["cards"]
                assert d.devices == exp["allocated_annotation"]
            else:
                assert {n: ", ".join(r) for n, r in d.node_reasons.items()} \
                    == exp["node_reasons"]
                assert d.message == exp["message"]
        usage = sched.usage_by_card()
        for uuid, u in exp["usage_after"].items():
            assert usage[uuid] == (u["used"], u["usedmem"], u["usedcores"]), step["id"]
