"""`hamisim import`: kubectl dumps -> cluster file, initial state, pending trace."""
from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import pytest

from hamisim.cli import main
from hamisim.io.bundled import workloads_dir
from hamisim.devices import SIMULATED_FAMILIES, vendors
from hamisim.io.clusterfile import load_cluster

#: the simulated families' words as the card-type warning lists them
WORDS = ", ".join(repr(w) for w in SIMULATED_FAMILIES)
from hamisim.io.initialstate import load_state
from hamisim.io.kubeimport import import_kubectl, write_import
from hamisim.io.traces import read_trace

EXAMPLE = workloads_dir() / "kubectl-example"
NODES, PODS = EXAMPLE / "nodes.json", EXAMPLE / "pods.json"


def _items(path: Path) -> list[dict]:
    return json.loads(path.read_text())["items"]


def _by_name(items: list[dict]) -> dict[str, dict]:
    return {i["metadata"]["name"]: i for i in items}


def _register(node: dict) -> list[dict]:
    return json.loads(node["metadata"]["annotations"]["hami.io/node-nvidia-register"])


def _write(path: Path, items: list[dict]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "items": items, "kind": "List",
                                "metadata": {"resourceVersion": ""}}, indent=4, sort_keys=True)
                    + "\n")
    return path


def _line_of(path: Path, needle: str) -> int:
    for k, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return k
    raise AssertionError(f"{needle!r} not in {path}")


# ---------------------------------------------------------------------------
# the shipped example

@pytest.fixture(scope="module")
def example():
    return import_kubectl(NODES, PODS)


def test_example_cards_pairs_cordons_allocatable(example):
    nodes = _by_name(_items(NODES))
    cluster = example.cluster
    assert [n.name for n in cluster.nodes] == ["cpu-node-1", "gpu-node-1", "gpu-node-2",
                                               "gpu-node-3"]
    by = {n.name: n for n in cluster.nodes}
    assert by["cpu-node-1"].cards == () and not by["cpu-node-1"].registered
    for name in ("gpu-node-1", "gpu-node-2", "gpu-node-3"):
        reg = _register(nodes[name])
        node = by[name]
        # every card, in registration order, with the annotation's fields
        assert [c.id for c in node.cards] == [d["id"] for d in reg]
        for c, d in zip(node.cards, reg):
            assert (c.index, c.count, c.devmem, c.devcore, c.type, c.numa, c.health, c.mode) == (
                d.get("index", 0), d["count"], d["devmem"], d["devcore"], d["type"],
                d.get("numa", 0), d["health"], d["mode"])
    assert by["gpu-node-1"].cards[0].type == "NVIDIA-Tesla T4"
    assert by["gpu-node-2"].cards[0].devmem == 40960
    # pair scores: the annotation's list form, card by card
    scores = json.loads(nodes["gpu-node-2"]["metadata"]["annotations"]["hami.io/node-nvidia-score"])
    assert by["gpu-node-2"].pair_scores == {e["uuid"]: e["score"] for e in scores}
    assert by["gpu-node-1"].pair_scores == {}
    # the per-GPU cordon annotation
    cordoned = nodes["gpu-node-2"]["metadata"]["annotations"]["hami.io/device-cordon"]
    assert by["gpu-node-2"].cordon == frozenset({cordoned})
    assert all(not by[n].cordon for n in ("cpu-node-1", "gpu-node-1", "gpu-node-3"))
    # allocatable: 15900m CPU; 63997844Ki memory rounded down to MiB
    assert (by["gpu-node-1"].cpu_milli, by["gpu-node-1"].memory_mib) == (15900, 63997844 // 1024)
    assert (by["cpu-node-1"].cpu_milli, by["cpu-node-1"].memory_mib) == (31900, 131296728 // 1024)
    assert example.warnings == []


def test_example_running_and_pending_pods(example):
    running = {e["name"]: e for e in example.state_entries}
    # finished pods (Succeeded, Failed) hold nothing; every other bound pod does
    assert "ml/train-old-7" not in running and "default/cuda-vectoradd" not in running
    assert example.skipped_finished == 2
    assert len(running) == 10
    pods = _by_name(_items(PODS))
    alice = pods["jupyter-alice-0"]["metadata"]["annotations"]
    assert running["default/jupyter-alice-0"] == {
        "name": "default/jupyter-alice-0", "node": alice["hami.io/vgpu-node"],
        "devices": alice["hami.io/vgpu-devices-allocated"], "cpu_milli": 2000,
        "memory_mib": 8192}
    # CPU-only pods bound by the default scheduler count for CPU and memory
    # (and every pod keeps its namespace, for HAMi's ResourceQuota)
    assert running["spark/spark-pi-exec-1"] == {"name": "spark/spark-pi-exec-1",
                                                "node": "gpu-node-3", "namespace": "spark",
                                                "cpu_milli": 14000, "memory_mib": 24 * 1024}
    # init containers all succeeded: HAMi shrinks the pod to its app containers
    serve = running["ml/serve-embeddings-6d5f8c7b9-x2kqp"]
    assert serve["init_containers"] == 1 and serve["init_finished"] is True
    # pending pods in creation order, requests as the containers give them
    assert [tp.pod.name for tp in example.pending] == [
        "ml/finetune-llama-0", "ml/bert-eval-2x7kd", "ml/embed-batch-q8w2n",
        "default/jupyter-carol-0"]
    llama = example.pending[0].pod
    assert llama.containers[0].limits == {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 32000,
                                          "nvidia.com/gpucores": 50}
    assert (llama.cpu_milli, llama.memory_mib) == (8000, 32 * 1024)
    bert = example.pending[1].pod
    assert bert.annotations == {"hami.io/gpu-scheduler-policy": "mutex"}
    assert [tp.pod.namespace for tp in example.pending] == ["ml", "ml", "ml", "default"]
    assert all(tp.arrival == 0.0 and tp.duration is None for tp in example.pending)


def test_written_files_read_back(tmp_path, example):
    files = write_import(copy.deepcopy(example), tmp_path / "imp")
    assert set(files) == {"cluster", "state", "pending"}
    cluster = load_cluster(files["cluster"])
    assert cluster == example.cluster
    state = load_state(files["state"], cluster)
    assert [p.name for p in state.pods] == [e["name"] for e in example.state_entries]
    assert [p.namespace for p in state.pods] == [p.name.split("/")[0] for p in state.pods]
    serve = next(p for p in state.pods if p.name.startswith("ml/serve-embeddings"))
    assert serve.containers[0] == [] and len(serve.containers[1]) == 1   # init dropped
    trace = read_trace(files["pending"])
    assert [tp.pod for tp in trace.pods] == [tp.pod for tp in example.pending]
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())   # no leftovers


def test_written_cluster_quotes_any_text_yaml_reads_back(tmp_path):
    # JSON's surrogate pairs (beyond U+FFFF) are not YAML escapes; the fuzz
    # tests found a policy name the written cluster file could not read back
    from hamisim import Card, Cluster, Node, SchedulerConfig
    from hamisim.io.kubeimport import cluster_yaml
    for text in ("\U00010000", 'a"b\\c', "tab\there", "é", "\x7f", "line\nbreak", "\u2028"):
        cluster = Cluster((Node("n", (Card("G", 0, count=1, devmem=1000, devcore=100,
                                           type="NVIDIA-T4"),)),),
                          SchedulerConfig(gpu_scheduler_policy=text))
        path = tmp_path / "c.yaml"
        path.write_text(cluster_yaml(cluster, "test"), encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # not HAMi policies: warned about
            assert load_cluster(path).scheduler.gpu_scheduler_policy == text


def test_cli_import_exit_and_summary(tmp_path, capsys):
    out = tmp_path / "imp"
    assert main(["import", str(NODES), str(PODS), "--out", str(out),
                 "--gpu-policy", "binpack"]) == 0
    text = capsys.readouterr().out
    assert "4 nodes (3 with HAMi cards, 8 cards, 1 cordoned)" in text
    assert "10 running pods (5 holding cards), 4 pending pods, 2 finished pods skipped" in text
    assert load_cluster(out / "cluster.yaml").scheduler.gpu_scheduler_policy == "binpack"
    # nodes only: a cluster and an empty state, no trace
    out2 = tmp_path / "nodes-only"
    assert main(["import", str(NODES), "--out", str(out2)]) == 0
    assert sorted(p.name for p in out2.iterdir()) == ["cluster.yaml", "state.yaml"]


# ---------------------------------------------------------------------------
# variants of the encoding

def _gpu_node(name="n1", **annotations) -> dict:
    reg = [{"id": f"GPU-{name}-a", "count": 10, "devmem": 15360, "devcore": 100,
            "type": "NVIDIA-Tesla T4", "mode": "hami-core", "health": True},
           {"id": f"GPU-{name}-b", "index": 1, "count": 10, "devmem": 15360, "devcore": 100,
            "type": "NVIDIA-Tesla T4", "mode": "hami-core", "health": True}]
    ann = {"hami.io/node-nvidia-register": json.dumps(reg, separators=(",", ":"))}
    ann.update(annotations)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": ann},
            "spec": {},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def _pod(name, node=None, ns="default", phase="Running", annotations=None, limits=None,
         requests=None, init=None) -> dict:
    c = {"name": "main", "image": "x", "resources": {}}
    if limits:
        c["resources"]["limits"] = limits
    if requests:
        c["resources"]["requests"] = requests
    spec = {"containers": [c], "schedulerName": "hami-scheduler"}
    if init:
        spec["initContainers"] = init
    if node:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": ns}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": phase}}


def test_legacy_register_encoding_is_read_with_a_warning(tmp_path):
    node = _gpu_node()
    node["metadata"]["annotations"]["hami.io/node-nvidia-register"] = (
        "GPU-x,10,15360,100,NVIDIA-Tesla T4,0,true:GPU-y,4,8000,100,NVIDIA-Tesla T4,1,false:")
    res = import_kubectl(_write(tmp_path / "nodes.json", [node]), None)
    cards = res.cluster.nodes[0].cards
    assert [(c.id, c.index, c.count, c.devmem, c.numa, c.health) for c in cards] == [
        ("GPU-x", 0, 10, 15360, 0, True), ("GPU-y", 1, 4, 8000, 1, False)]
    assert any("older colon-separated encoding" in w for w in res.warnings)


def test_cordoned_node_and_unknown_cordon_ids(tmp_path):
    """``kubectl cordon`` is kube-scheduler's business (the node is unschedulable,
    its cards are not cordoned); HAMi's per-GPU cordon names cards."""
    a = _gpu_node("a", **{"hami.io/device-cordon": " GPU-a-b , GPU-gone,"})
    b = _gpu_node("b")
    b["spec"]["unschedulable"] = True
    res = import_kubectl(_write(tmp_path / "nodes.json", [a, b]), None)
    by = {n.name: n for n in res.cluster.nodes}
    assert by["a"].cordon == frozenset({"GPU-a-b"}) and not by["a"].unschedulable
    assert by["b"].cordon == frozenset() and by["b"].unschedulable
    assert any("GPU-gone" in w for w in res.warnings)


def test_labels_taints_and_pod_constraints_are_carried(tmp_path):
    node = _gpu_node("a")
    node["metadata"]["labels"] = {"pool": "a100", "kubernetes.io/hostname": "a"}
    node["spec"]["taints"] = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                              {"key": "dedicated", "value": "ml", "effect": "NoExecute",
                               "timeAdded": "2026-11-30T10:00:00Z"}]
    res = import_kubectl(_write(tmp_path / "nodes.json", [node]), None)
    n = res.cluster.nodes[0]
    assert n.labels == {"pool": "a100", "kubernetes.io/hostname": "a"}
    assert [(t.key, t.value, t.effect) for t in n.taints] == [
        ("nvidia.com/gpu", "", "NoSchedule"), ("dedicated", "ml", "NoExecute")]
    # a pending pod keeps what kube-scheduler's filters read; inter-pod
    # affinity (not modelled) is dropped with a warning
    pod = _pod("p", limits={"nvidia.com/gpu": 1})
    pod["spec"].update({
        "nodeSelector": {"pool": "a100"}, "preemptionPolicy": "Never",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                         "effect": "NoSchedule", "tolerationSeconds": 30}],
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "pool", "operator": "In", "values": ["a100", "h100"]}]}]}},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}})
    res = import_kubectl(_write(tmp_path / "nodes.json", [node]),
                         _write(tmp_path / "pods.json", [pod]))
    got = res.pending[0].pod
    assert got.node_selector == {"pool": "a100"} and got.preemption_policy == "Never"
    assert [(t.key, t.operator, t.effect) for t in got.tolerations] == [
        ("nvidia.com/gpu", "Exists", "NoSchedule")]
    assert [[(r.key, r.operator, r.values) for r in t.match_expressions]
            for t in got.affinity] == [[("pool", "In", ("a100", "h100"))]]
    assert any("podAntiAffinity not modelled" in w for w in res.warnings)
    # the written files read back to the same node and pod
    out = write_import(res, tmp_path / "out")
    again = load_cluster(out["cluster"]).nodes[0]
    assert (again.labels, again.taints, again.unschedulable) == (n.labels, n.taints, False)
    assert read_trace(out["pending"]).pods[0].pod == got


def test_node_without_register_annotation_is_unregistered(tmp_path):
    node = _gpu_node()
    del node["metadata"]["annotations"]["hami.io/node-nvidia-register"]
    res = import_kubectl(_write(tmp_path / "nodes.json", [node]), None)
    assert not res.cluster.nodes[0].registered


def test_pod_phases_and_placements(tmp_path):
    nodes = _write(tmp_path / "nodes.json", [_gpu_node()])
    hami = {"hami.io/vgpu-node": "n1", "hami.io/vgpu-devices-allocated": "GPU-n1-a,NVIDIA,1000,0:;"}
    pods = _write(tmp_path / "pods.json", [
        _pod("run", "n1", annotations=hami, limits={"nvidia.com/gpu": "1"}),
        _pod("done", "n1", phase="Succeeded", annotations=hami),
        _pod("fail", "n1", phase="Failed", annotations=hami),
        # filtered by HAMi, not yet bound: HAMi already counts it
        _pod("binding", None, phase="Pending", annotations={**hami, "hami.io/bind-phase":
                                                            "allocating"}),
        # its bind failed: it will be filtered again, so it is pending
        _pod("retry", None, phase="Pending", annotations={**hami, "hami.io/bind-phase": "failed"},
             limits={"nvidia.com/gpu": "1"}),
        _pod("elsewhere", "other-node", requests={"cpu": "1"}),
        _pod("wait", None, phase="Pending", limits={"nvidia.com/gpu": "1",
                                                    "nvidia.com/gpumem-percentage": "50"},
             requests={"cpu": "250m", "memory": "1Gi"},
             annotations={"hami.io/gpu-scheduler-policy": "binpack",
                          "kubectl.kubernetes.io/last-applied-configuration": "{}"}),
    ])
    res = import_kubectl(nodes, pods)
    assert [e["name"] for e in res.state_entries] == ["default/run", "default/binding"]
    assert [tp.pod.name for tp in res.pending] == ["default/retry", "default/wait"]
    assert (res.skipped_finished, res.skipped_elsewhere) == (2, 1)
    wait = res.pending[1].pod
    assert (wait.cpu_milli, wait.memory_mib) == (250, 1024)
    assert wait.annotations == {"hami.io/gpu-scheduler-policy": "binpack"}


def test_pod_cpu_memory_is_kube_schedulers_pod_request(tmp_path):
    nodes = _write(tmp_path / "nodes.json", [_gpu_node()])
    p = _pod("p", None, phase="Pending", requests={"cpu": "1", "memory": "1Gi"})
    p["spec"]["containers"].append({"name": "side", "resources": {"limits": {"cpu": "500m",
                                                                              "memory": "1Gi"}}})
    p["spec"]["initContainers"] = [
        {"name": "big-init", "resources": {"requests": {"cpu": "3", "memory": "512Mi"}}},
        {"name": "sidecar", "restartPolicy": "Always",
         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]
    p["spec"]["overhead"] = {"cpu": "10m"}
    res = import_kubectl(nodes, _write(tmp_path / "pods.json", [p]))
    pod = res.pending[0].pod
    # max(app 1.5 + sidecar 0.1, init 3) + overhead; memory max(2Gi + 64Mi, 512Mi)
    assert (pod.cpu_milli, pod.memory_mib) == (3010, 2048 + 64)
    assert len(pod.init_containers) == 2


# ---------------------------------------------------------------------------
# bad input: one located message, exit status 2

def _cli_error(capsys, *args) -> str:
    assert main(["import", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hamisim: ") and "Traceback" not in err
    return err


def test_malformed_json_is_located(tmp_path, capsys):
    bad = tmp_path / "nodes.json"
    bad.write_text('{"items": [\n  {"metadata": {"name": "n1"},}\n]}\n')
    err = _cli_error(capsys, str(bad), "--out", str(tmp_path / "o"))
    assert f"{bad}:2: invalid JSON" in err
    assert not (tmp_path / "o").exists()


def test_bad_register_annotation_is_located(tmp_path, capsys):
    node = _gpu_node()
    node["metadata"]["annotations"]["hami.io/node-nvidia-register"] = \
        '[{"id":"GPU-1","count":"ten","devmem":1,"type":"NVIDIA"}]'
    path = _write(tmp_path / "nodes.json", [node])
    err = _cli_error(capsys, str(path), "--out", str(tmp_path / "o"))
    line = _line_of(path, "hami.io/node-nvidia-register")
    assert f"{path}:{line}: node 'n1': annotation hami.io/node-nvidia-register" in err
    assert "'count' must be an integer" in err


def test_bad_quantity_is_located(tmp_path, capsys):
    node = _gpu_node()
    node["status"]["allocatable"]["memory"] = "32GB"
    path = _write(tmp_path / "nodes.json", [node])
    err = _cli_error(capsys, str(path), "--out", str(tmp_path / "o"))
    assert f"{path}:{_line_of(path, '32GB')}:" in err and "not a Kubernetes quantity" in err


def test_fractional_gpu_is_rejected(tmp_path, capsys):
    nodes = _write(tmp_path / "nodes.json", [_gpu_node()])
    pods = _write(tmp_path / "pods.json", [_pod("p", phase="Pending",
                                                limits={"nvidia.com/gpu": "500m"})])
    err = _cli_error(capsys, str(nodes), str(pods), "--out", str(tmp_path / "o"))
    assert f"{pods}:{_line_of(pods, '500m')}:" in err and "whole number" in err


@pytest.mark.parametrize("annotations,needle,problem", [
    ({"hami.io/vgpu-node": "n9", "hami.io/vgpu-devices-allocated": "GPU-n1-a,NVIDIA,1,0:;"},
     '"n9"', "hami.io/vgpu-node is 'n9' but spec.nodeName is 'n1'"),
    ({"hami.io/vgpu-node": "n9", "hami.io/vgpu-devices-allocated": "GPU-n1-a,NVIDIA,1,0:;",
      "unbound": "yes"}, '"n9"', "names node 'n9', which is not in the node dump"),
    ({"hami.io/vgpu-node": "n1", "hami.io/vgpu-devices-allocated": "GPU-zz,NVIDIA,1,0:;"},
     "GPU-zz", "names card 'GPU-zz', which is not a card of node 'n1'"),
    ({"hami.io/vgpu-node": "n1", "hami.io/vgpu-devices-allocated": "GPU-n1-a,NVIDIA,x,0:;"},
     "GPU-n1-a,NVIDIA,x", "memory 'x' is not a non-negative integer"),
    ({"hami.io/vgpu-node": "n1", "hami.io/vgpu-devices-allocated": "GPU-n1-a,NVIDIA:;"},
     "GPU-n1-a,NVIDIA:", "has 2 fields"),
])
def test_bad_placements_are_located(tmp_path, capsys, annotations, needle, problem):
    nodes = _write(tmp_path / "nodes.json", [_gpu_node()])
    bound = annotations.pop("unbound", None) is None
    pods = _write(tmp_path / "pods.json", [_pod("p", "n1" if bound else None,
                                                annotations=annotations)])
    err = _cli_error(capsys, str(nodes), str(pods), "--out", str(tmp_path / "o"))
    assert f"{pods}:{_line_of(pods, needle)}:" in err and problem in err


def test_wrong_file_kind(tmp_path, capsys):
    nodes = _write(tmp_path / "nodes.json", [_gpu_node()])
    err = _cli_error(capsys, str(nodes), str(nodes), "--out", str(tmp_path / "o"))
    assert "expected kind 'Pod'" in err


def test_missing_file(tmp_path, capsys):
    err = _cli_error(capsys, str(tmp_path / "nope.json"), "--out", str(tmp_path / "o"))
    assert "nope.json: cannot read file" in err


def test_resource_quotas_are_read_as_hami_reads_them(tmp_path):
    from hamisim.cluster import Quota
    example = Path(__file__).parent.parent / "workloads" / "kubectl-example"
    result = import_kubectl(example / "nodes.json", example / "pods.json",
                            quotas_path=example / "quotas.json")
    # only limits.nvidia.com/gpumem and limits.nvidia.com/gpucores are HAMi's
    assert result.cluster.quotas == {"ml": Quota(160000, 400), "default": Quota(12000, None)}
    assert result.warnings == ["ResourceQuota ml/gpu-quota: pods, requests.nvidia.com/gpu not "
                               "enforced by HAMi (kube-apiserver's quota is not modelled); "
                               "ignored"]
    files = write_import(result, tmp_path / "imp")
    assert load_cluster(files["cluster"]).quotas == result.cluster.quotas
    # several objects in one namespace: the later value wins, key by key
    rq = {"kind": "List", "items": [
        {"kind": "ResourceQuota", "metadata": {"name": "a", "namespace": "t"},
         "spec": {"hard": {"limits.nvidia.com/gpumem": "100", "limits.nvidia.com/gpucores": "5"}}},
        {"kind": "ResourceQuota", "metadata": {"name": "b", "namespace": "t"},
         "spec": {"hard": {"limits.nvidia.com/gpumem": "300"}}}]}
    path = tmp_path / "rq.json"
    path.write_text(json.dumps(rq))
    again = import_kubectl(example / "nodes.json", None, quotas_path=path)
    assert again.cluster.quotas == {"t": Quota(300, 5)}


def test_a_pod_manifest_limits_over_requests_and_priority():
    from hamisim.errors import InputError
    from hamisim.io.documents import from_plain
    from hamisim.io.kubeimport import pod_from_kubernetes

    def manifest(gpumem_request: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "ml"},
                "spec": {"priority": 1000, "preemptionPolicy": "Never", "containers": [{
                    "name": "c", "resources": {
                        "limits": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000",
                                   "cpu": "2"},
                        "requests": {"nvidia.com/gpu": "1",
                                     "nvidia.com/gpumem": gpumem_request, "cpu": "500m"}}}]}}

    pod = pod_from_kubernetes(from_plain(manifest("4000"), "pod.json", 1).as_doc("the pod"))
    assert (pod.name, pod.namespace, pod.priority, pod.preemption_policy) == \
        ("ml/x", "ml", 1000, "Never")
    # requests repeating their limits say nothing more: HAMi reads limits first
    assert pod.containers[0].limits == {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}
    assert pod.containers[0].requests == {}
    assert pod.cpu_milli == 500                  # kube-scheduler's fit reads the request
    # an extended resource's request must equal its limit (the API server's rule)
    with pytest.raises(InputError, match="requests nvidia.com/gpumem: must be equal to "
                                         "nvidia.com/gpumem limit"):
        pod_from_kubernetes(from_plain(manifest("3000"), "pod.json", 1).as_doc("the pod"))


def test_mig_cards_and_their_pods_are_imported(tmp_path):
    # a node whose device plugin runs in mig mode, and a pod holding two 1g instances
    profiles = [{"name": "1g.5gb", "memoryMB": 4864, "core": 15, "sliceCount": 1,
                 "placements": [{"start": s, "size": 1} for s in range(7)]},
                {"name": "2g.10gb", "memoryMB": 9984, "core": 29, "sliceCount": 2,
                 "placements": [{"start": s, "size": 2} for s in (0, 2, 4)]}]
    reg = [{"id": "GPU-m", "count": 7, "devmem": 40960, "devcore": 100,
            "type": "NVIDIA A100-SXM4-40GB", "mode": "mig", "health": True,
            "migProfiles": profiles}]
    node = _gpu_node("m1")
    node["metadata"]["annotations"]["hami.io/node-nvidia-register"] = json.dumps(reg)
    allocations = json.dumps([
        {"containerIndex": 0, "deviceIndex": d, "gpuUUID": "GPU-m", "profile": "1g.5gb",
         "placement": {"start": s, "size": 1}, "migUUID": f"MIG-{d}", "gpuInstanceID": d,
         "computeInstanceID": 0} for d, s in ((0, 6), (1, 5))])
    pod = _pod("two", "m1", limits={"nvidia.com/gpu": 2, "nvidia.com/gpumem": 4000},
               annotations={"hami.io/vgpu-node": "m1",
                            "hami.io/vgpu-devices-allocated":
                                "GPU-m,NVIDIA,4864,15:GPU-m,NVIDIA,4864,15:;",
                            "hami.io/vgpu-mig-allocations": allocations})
    res = import_kubectl(_write(tmp_path / "nodes.json", [node]),
                         _write(tmp_path / "pods.json", [pod]))
    files = write_import(res, tmp_path / "imp")
    cluster = load_cluster(files["cluster"])
    card = cluster.nodes[0].cards[0]
    assert card.mode == "mig" and [p.name for p in card.mig_profiles] == ["1g.5gb", "2g.10gb"]
    state = load_state(files["state"], cluster)
    assert [p.mig for p in state.pods[0].containers[0]] == [("1g.5gb", 6, 1), ("1g.5gb", 5, 1)]
    # the imported instances occupy their slots: a 2g now goes to {0,2}, a 1g to 4
    from hamisim.sim.backend import make_scheduler
    from hamisim.pods import Container, Pod
    for backend in ("reference", "kernel"):
        s = make_scheduler(cluster, backend)
        state.adopt_into(s, cluster)
        d = s.schedule(Pod("p", (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}),)))
        assert d.containers[0][0].mig == ("1g.5gb", 4, 1), backend


def test_gang_markers_of_pending_pods_warn_once_at_the_first(tmp_path):
    """A PodGroup label or annotation (Coscheduling, Volcano) is dropped with one
    located warning per marker: hamisim schedules the pending pods one by one."""
    pods = []
    for k in range(3):
        p = _pod(f"w{k}", phase="Pending", limits={"nvidia.com/gpu": 1},
                 annotations={"scheduling.k8s.io/group-name": "job"} if k else None)
        p["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "job"}
        pods.append(p)
    path = _write(tmp_path / "pods.json", pods)
    res = import_kubectl(_write(tmp_path / "nodes.json", [_gpu_node()]), path)
    gang = [w for w in res.warnings if "gang scheduling" in w]
    first = _line_of(path, '"name": "w0"')
    assert len(gang) == 2, res.warnings
    assert gang[0].startswith(f"{path}:") and "pod default/w0 and 2 more pending pods: " \
        "scheduling.x-k8s.io/pod-group (scheduler-plugins Coscheduling's PodGroup" in gang[0]
    assert "pod default/w1 and 1 more pending pods: scheduling.k8s.io/group-name" in gang[1]
    assert int(gang[0].split(":")[1]) <= first
    assert [tp.pod.name for tp in res.pending] == ["default/w0", "default/w1", "default/w2"]


def test_cards_hamis_nvidia_backend_never_offers_warn_once_and_are_not_gpus(tmp_path, capsys):
    """A card registered with a type without NVIDIA is imported (HAMi's node score
    sees it), warned about once at the dump's line, and not counted as a GPU; another
    backend's register annotation is not imported, with a warning naming it."""
    npu = _gpu_node("npu", **{"hami.io/node-register-Ascend910B": "[]",
                              "hami.io/node-dcu-register": "[]"})
    reg = json.loads(npu["metadata"]["annotations"]["hami.io/node-nvidia-register"])
    for card in reg:
        card["type"] = "Ascend910B"
    npu["metadata"]["annotations"]["hami.io/node-nvidia-register"] = json.dumps(reg)
    path = _write(tmp_path / "nodes.json", [_gpu_node(), npu])
    out = tmp_path / "imp"
    assert main(["import", str(path), "--out", str(out)]) == 0
    stdout, err = capsys.readouterr()
    line = _line_of(path, '"hami.io/node-nvidia-register": "[{\\"id\\": \\"GPU-npu-a')
    warned = [w for w in err.splitlines() if "contains none of " + WORDS in w]
    assert warned == [w for w in warned if w.startswith(f"hamisim: {path}:{line}: warning: "
                                                       "card type 'Ascend910B' (2 cards on "
                                                       "node npu)")] and len(warned) == 1
    assert "hamisim: warning: node npu: hami.io/node-register-Ascend910B registers cards of " \
           "another of HAMi's device backends; hamisim simulates the backends of " \
           f"{vendors()} only" in err
    # Hygon's annotation is read: "[]" is no colon/comma list, HAMi registers no DCU
    assert "node npu: hami.io/node-dcu-register '[]' has no ':'" in err
    assert "2 nodes (2 with HAMi cards, 2 cards, 2 more not counted as GPUs (type not " \
           "NVIDIA))" in stdout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = load_cluster(out / "cluster.yaml")
    assert cluster.n_cards == 2 and len(cluster.unsimulated_cards()) == 2


def test_hygon_dcu_register_is_imported_beside_nvidias_cards(tmp_path, capsys):
    """hami.io/node-dcu-register (HAMi's colon/comma encoding, DecodeNodeDevices:
    7 fields give index 0) joins the node's NVIDIA cards; one that does not decode
    is skipped with a warning, as HAMi skips it."""
    both = _gpu_node("both", **{"hami.io/node-dcu-register":
                                "DCU-0,10,32768,100,DCU,0,true:DCU-1,10,32768,100,DCU,1,true,1,"
                                "hami-core:"})
    bad = _gpu_node("bad", **{"hami.io/node-dcu-register": "DCU-9,10,32768,100,DCU:"})
    path = _write(tmp_path / "nodes.json", [both, bad])
    out = tmp_path / "imp"
    assert main(["import", str(path), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert ("node bad: annotation hami.io/node-dcu-register: card 0 'DCU-9,10,32768,100,DCU' "
            "has 5 fields") in err and "HAMi skips the annotation, so no DCU there" in err
    cluster = load_cluster(out / "cluster.yaml")
    by_name = {n.name: n for n in cluster.nodes}
    dcus = [c for c in by_name["both"].cards if c.type == "DCU"]
    assert [(c.id, c.index, c.numa, c.devmem) for c in dcus] == [
        ("DCU-0", 0, 0, 32768), ("DCU-1", 1, 1, 32768)]
    assert len(by_name["both"].cards) == len(by_name["bad"].cards) + 2
    assert not any(c.type == "DCU" for c in by_name["bad"].cards)
