"""kube-scheduler's filters in front of HAMi: NodeUnschedulable, TaintToleration,
NodeAffinity, in its order, before the resource fit and the sampling.

Expected values are worked out from kube-scheduler v1.32's source (plugins
nodeunschedulable, tainttoleration, nodeaffinity; component-helpers'
ToleratesTaint and label selector operators), not from hamisim's output.
"""
from __future__ import annotations

import dataclasses

import pytest

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig, Taint
from hamisim.errors import InputError
from hamisim.io.clusterfile import load_cluster
from hamisim.io.traces import read_trace, write_trace
from hamisim.kube.filters import (
    AFFINITY_MISMATCH,
    UNSCHEDULABLE,
    UNTOLERATED_TAINTS,
    node_affinity,
    requirement_matches,
    static_reason,
    taint_toleration,
    tolerates,
)
from hamisim.pods import Container, NodeSelectorRequirement, NodeSelectorTerm, Pod, Toleration
from hamisim.sim.backend import make_scheduler
from hamisim.workload import Trace, TracePod

GPU_TAINT = Taint("nvidia.com/gpu", "", "NoSchedule")
BACKENDS = ["kernel", "reference"]


@pytest.mark.parametrize("toleration, taint, expected", [
    # Equal (the default operator) compares the value exactly
    (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "v", "NoSchedule"), True),
    (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "w", "NoSchedule"), False),
    (Toleration("k", "Equal", "", ""), Taint("k", "", "NoExecute"), True),
    (Toleration("k", "", "v", ""), Taint("k", "v", "NoSchedule"), True),
    # Exists ignores the value; an empty key matches every key
    (Toleration("k", "Exists", "", ""), Taint("k", "anything", "NoExecute"), True),
    (Toleration("", "Exists", "", ""), Taint("other", "x", "NoSchedule"), True),
    (Toleration("", "Exists", "", "NoExecute"), Taint("other", "x", "NoSchedule"), False),
    # the effect must match unless empty; the key must match unless empty
    (Toleration("k", "Exists", "", "NoExecute"), Taint("k", "", "NoSchedule"), False),
    (Toleration("j", "Exists", "", ""), Taint("k", "", "NoSchedule"), False),
])
def test_toleration_matching_follows_kubernetes(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_the_first_untolerated_filtering_taint_is_reported():
    node = Node("n", taints=(Taint("soft", "", "PreferNoSchedule"),     # scoring only
                             Taint("dedicated", "ml", "NoExecute"),
                             GPU_TAINT))
    pod = Pod("p")
    assert taint_toleration(node, pod) == "node(s) had untolerated taint {dedicated: ml}"
    tolerant = dataclasses.replace(pod, tolerations=(Toleration("dedicated", "Equal", "ml"),))
    # an empty value prints as "{key: }"
    assert taint_toleration(node, tolerant) == "node(s) had untolerated taint {nvidia.com/gpu: }"
    assert taint_toleration(node, tolerant, hidden=True) == UNTOLERATED_TAINTS
    everything = dataclasses.replace(pod, tolerations=(Toleration("", "Exists"),))
    assert taint_toleration(node, everything) is None


def test_filters_run_in_kube_schedulers_order():
    node = Node("n", labels={"pool": "t4"}, taints=(GPU_TAINT,), unschedulable=True)
    pod = Pod("p", node_selector={"pool": "a100"})
    assert static_reason(node, pod) == UNSCHEDULABLE
    cordon_ok = dataclasses.replace(pod, tolerations=(
        Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"),))
    assert static_reason(node, cordon_ok).startswith("node(s) had untolerated taint")
    taint_ok = dataclasses.replace(cordon_ok, tolerations=cordon_ok.tolerations + (
        Toleration("nvidia.com/gpu", "Exists"),))
    assert static_reason(node, taint_ok) == AFFINITY_MISMATCH
    assert static_reason(node, dataclasses.replace(taint_ok, node_selector={"pool": "t4"})) \
        is None


@pytest.mark.parametrize("op, values, labels, expected", [
    ("In", ("a", "b"), {"k": "b"}, True),
    ("In", ("a",), {}, False),
    ("NotIn", ("a",), {}, True),                # an absent label is not in the set
    ("NotIn", ("a",), {"k": "a"}, False),
    ("Exists", (), {"k": ""}, True),
    ("DoesNotExist", (), {"k": "x"}, False),
    ("Gt", ("4",), {"k": "8"}, True),
    ("Gt", ("8",), {"k": "8"}, False),          # strictly greater
    ("Lt", ("8",), {"k": "-3"}, True),
    ("Gt", ("4",), {"k": "eight"}, False),      # a label that is no integer never matches
    ("Lt", ("4",), {}, False),
])
def test_selector_operators(op, values, labels, expected):
    assert requirement_matches(NodeSelectorRequirement("k", op, values), labels) is expected


def test_required_affinity_terms_are_ored_and_an_empty_term_matches_nothing():
    node = Node("gpu-1", labels={"pool": "a100", "zone": "z1"})
    t_pool = NodeSelectorTerm((NodeSelectorRequirement("pool", "In", ("h100",)),))
    t_zone = NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("z1",)),
                               NodeSelectorRequirement("pool", "Exists")))
    assert node_affinity(node, Pod("p", affinity=(t_pool,))) == AFFINITY_MISMATCH
    assert node_affinity(node, Pod("p", affinity=(t_pool, t_zone))) is None
    assert node_affinity(node, Pod("p", affinity=(NodeSelectorTerm(),))) == AFFINITY_MISMATCH
    by_name = NodeSelectorTerm(match_fields=(
        NodeSelectorRequirement("metadata.name", "In", ("gpu-1",)),))
    assert node_affinity(node, Pod("p", affinity=(by_name,))) is None
    # nodeSelector and affinity must both hold
    assert node_affinity(node, Pod("p", node_selector={"zone": "z2"}, affinity=(t_zone,))) \
        == AFFINITY_MISMATCH


def _card(i: int, node: str) -> Card:
    return Card(f"GPU-{node}-{i}", i, devmem=16000, type="NVIDIA-Tesla T4")


def _gpu_pod(name: str, **kw) -> Pod:
    return Pod(name, (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000}),), **kw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_scheduling_message_counts_each_plugins_reason(backend):
    nodes = (Node("cordoned", (_card(0, "c"),), unschedulable=True),
             Node("tainted", (_card(0, "t"),), taints=(GPU_TAINT,)),
             Node("other-pool", (_card(0, "o"),), labels={"pool": "b"}),
             Node("busy", (_card(0, "b"),), cpu_milli=1000, labels={"pool": "a"}))
    sched = make_scheduler(Cluster(nodes), backend)
    d = sched.schedule(_gpu_pod("p", cpu_milli=2000, node_selector={"pool": "a"}))
    # sorted as strings: "1 Insufficient cpu" < "1 node(s) d..." < "1 node(s) h..." < "1 node(s) w..."
    assert d.message == ("0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match "
                         "Pod's node affinity/selector, 1 node(s) had untolerated taint "
                         "{nvidia.com/gpu: }, 1 node(s) were unschedulable.")
    # only the resource fit is resolvable by preemption
    assert d.n_potential == 1
    assert d.node_reasons == {"cordoned": [UNSCHEDULABLE],
                              "tainted": ["node(s) had untolerated taint {nvidia.com/gpu: }"],
                              "other-pool": [AFFINITY_MISMATCH],
                              "busy": ["Insufficient cpu"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_filtered_nodes_do_not_count_as_feasible_in_the_sample(backend):
    """200 nodes, adaptive percentage (50 - 200/125 = 49 % -> 98 -> at least 100
    feasible nodes to find): with the odd nodes tainted, kube-scheduler walks
    nodes 0..198 to find the 100 untainted ones, and the rotation advances by
    the 199 nodes it examined."""
    nodes = tuple(Node(f"n{i:03d}", (_card(0, f"n{i}"),),
                       taints=(GPU_TAINT,) if i % 2 == 1 else ())
                  for i in range(200))
    sched = make_scheduler(Cluster(nodes, SchedulerConfig(gpu_scheduler_policy="binpack")),
                           backend)
    d = sched.schedule(_gpu_pod("p"))
    assert d.bound and int(d.node[1:]) % 2 == 0
    assert sched.next_start == 199
    # a pod that tolerates the taint finds its 100 nodes after 100 steps
    d = sched.schedule(_gpu_pod("q", tolerations=(Toleration("nvidia.com/gpu", "Exists"),)))
    assert d.bound and sched.next_start == (199 + 100) % 200


@pytest.mark.parametrize("backend", BACKENDS)
def test_unschedulable_node_no_longer_means_cordoned_cards(backend):
    """A cordoned node is kube-scheduler's verdict, also for pods without GPUs."""
    node = Node("n", (_card(0, "n"),), unschedulable=True)
    sched = make_scheduler(Cluster((node,)), backend)
    for pod in (_gpu_pod("gpu"), Pod("cpu", (Container(),), cpu_milli=100)):
        d = sched.schedule(pod)
        assert not d.bound and d.message == "0/1 nodes are available: 1 node(s) were unschedulable."


@pytest.mark.parametrize("version, message", [
    ("1.32", "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: }. "
             "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
    ("1.34", "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: }. "
             "no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption "
             "is not helpful for scheduling."),
    ("1.35", "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to "
             "deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful "
             "for scheduling."),
])
@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_kube_scheduler_version_selects_its_texts(version, message, engine):
    from hamisim.sim.engine import EngineConfig, simulate
    cluster = Cluster((Node("n", (_card(0, "n"),), taints=(GPU_TAINT,)),),
                      SchedulerConfig(kube_scheduler_version=version))
    trace = Trace.from_pods("t", [TracePod(_gpu_pod("p"), 0.0, 1.0)])
    ev = simulate(cluster, trace, EngineConfig(retry="none", engine=engine)).events
    assert ev[ev.event == "unschedulable"].message.tolist() == [message]


def test_cluster_file_nodes_and_groups_carry_labels_taints_and_cordon(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "scheduler: {kube_scheduler_version: '1.34', preemption: false}\n"
        "nodes:\n"
        "  - name_prefix: a100\n"
        "    replicas: 2\n"
        "    labels: {pool: a100, gpus: '8'}\n"
        "    taints:\n"
        "      - {key: nvidia.com/gpu, effect: NoSchedule}\n"
        "      - {key: dedicated, value: ml, effect: NoExecute}\n"
        "    gpus: 1\n"
        "    card: {devmem: 40960, type: NVIDIA-A100}\n"
        "  - name: spare\n"
        "    unschedulable: true\n")
    cluster = load_cluster(path)
    assert cluster.scheduler.kube_scheduler_version == "1.34"
    assert cluster.scheduler.preemption is False
    a, b, spare = cluster.nodes
    assert a.labels == b.labels == {"pool": "a100", "gpus": "8"}
    assert a.taints == (GPU_TAINT, Taint("dedicated", "ml", "NoExecute"))
    assert spare.unschedulable and not a.unschedulable


def test_a_yes_for_unschedulable_is_an_error_not_a_default(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("nodes:\n  - name: n\n    unschedulable: maybe\n")
    with pytest.raises(InputError) as err:
        load_cluster(path)
    assert err.value.line == 3 and "unschedulable" in err.value.problem


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_trace_columns_round_trip(tmp_path, ext):
    term = NodeSelectorTerm((NodeSelectorRequirement("pool", "In", ("a100", "h100")),
                             NodeSelectorRequirement("gpus", "Gt", ("4",))),
                            (NodeSelectorRequirement("metadata.name", "NotIn", ("bad",)),))
    pod = _gpu_pod("p", priority=7, node_selector={"zone": "z1"},
                   tolerations=(Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
                                Toleration("dedicated", "Equal", "ml", "")),
                   affinity=(term,), preemption_policy="Never",
                   termination_grace_period=30, init_duration=12.5)
    trace = Trace.from_pods("t", [TracePod(pod, 0.0, 5.0), TracePod(_gpu_pod("q"), 1.0, 5.0)])
    path = tmp_path / f"t.{ext}"
    write_trace(trace, path)
    back = read_trace(path)
    assert [tp.pod for tp in back.pods] == [tp.pod for tp in trace.pods]


def test_a_csv_trace_with_kubernetes_json_cells(tmp_path):
    import csv
    affinity = ('{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":'
                '{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"NotIn",'
                '"values":["z9"]}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[]}}')
    path = tmp_path / "t.csv"
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["name", "arrival", "gpu", "node_selector", "tolerations", "affinity"])
        out.writerow(["p", 0, 1, '{"pool":"a100"}',
                      '[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]',
                      affinity])
    pod = read_trace(path).pod(0)
    assert pod.node_selector == {"pool": "a100"}
    assert pod.tolerations == (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),)
    assert pod.affinity == (NodeSelectorTerm((NodeSelectorRequirement("zone", "NotIn",
                                                                      ("z9",)),)),)


def test_inter_pod_affinity_in_a_trace_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"name":"p","arrival":0,"gpu":1,"affinity":{"podAntiAffinity":'
                    '{"requiredDuringSchedulingIgnoredDuringExecution":[]}}}\n')
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert err.value.line == 1 and "inter-pod affinity" in err.value.problem
