"""Server topologies in cluster files and the pair scores HAMi derives from them.

The scores are HAMi v2.10.0's ``CalculateGPUScore`` (``pkg/device/nvidia/
calculate_score.go``): the first tests are HAMi's own unit tests of it,
translated; the template cases are worked by hand from its link-type table.
"""
from __future__ import annotations

import textwrap
import warnings

import pytest

from hamisim import Container, Pod
from hamisim.errors import InputError, InputWarning
from hamisim.hami.gpuscore import gpu_scores, links_score, pair_score
from hamisim.io.clusterfile import load_cluster
from hamisim.io.kubeimport import cluster_yaml
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.topology import TEMPLATES, GpuPlace, ServerTopology
from hamisim.workload import Trace, TracePod

# ---------------------------------------------------------------------------
# HAMi's own tests (calculate_score_test.go), translated


def test_hami_nvlink_matrix():
    # Test_calculateGPUScore: NV1/NV2 between four GPUs, NVLink entries only
    nv = {(0, 1): 1, (0, 2): 1, (0, 3): 2, (1, 2): 2, (1, 3): 1, (2, 3): 2}
    kind = {1: "SingleNVLINKLink", 2: "TwoNVLINKLinks"}

    def links(a, b):
        return [kind[nv[(min(a, b), max(a, b))]]]

    want = {0: {1: 100, 2: 100, 3: 200}, 1: {0: 100, 2: 200, 3: 100},
            2: {0: 100, 1: 200, 3: 200}, 3: {0: 200, 1: 100, 2: 200}}
    got = {a: {b: links_score(links(a, b), links(b, a))[0] for b in range(4) if b != a}
           for a in range(4)}
    assert got == want


def test_hami_asymmetric_pair_scores_zero():
    # Test_calculateGPUPairScore_asymmetric: NVLink seen from GPU 0 only
    assert links_score(["P2PLinkSameCPU", "FourNVLINKLinks"], ["P2PLinkSameCPU"]) == (0, True)
    assert links_score(["P2PLinkSameCPU"], ["P2PLinkSameCPU", "FourNVLINKLinks"]) == (0, True)


def test_link_type_table():
    # calculateGPUPairScore's switch: PCIe types 10..60, NVLinks 100 each up to 18
    assert links_score(["P2PLinkCrossCPU"], ["P2PLinkCrossCPU"]) == (10, False)
    assert links_score(["P2PLinkHostBridge", "EighteenNVLINKLinks"], ["a", "b"]) == (1830, False)
    assert links_score(["P2PLinkMultiSwitch"], ["x"]) == (40, False)
    assert links_score(["P2PLinkUnknown"], ["x"]) == (0, False)      # no case: adds nothing


# ---------------------------------------------------------------------------
# templates, worked by hand


@pytest.mark.parametrize("name, pair, score", [
    # NVSwitch with 18 links each (1800) + the PCIe link: same socket 20, across 10
    ("dgx-h100", (0, 1), 1820), ("dgx-h100", (0, 4), 1810), ("dgx-h100", (7, 6), 1820),
    # 12 links each (1200); GPUs 0/1 share a switch (50)
    ("dgx-a100", (0, 1), 1250), ("dgx-a100", (0, 2), 1220), ("dgx-a100", (1, 5), 1210),
    # PCIe only: one switch 50, same socket 20, across 10
    ("pcie-8gpu", (0, 1), 50), ("pcie-8gpu", (0, 2), 20), ("pcie-8gpu", (3, 4), 10),
    ("pcie-4gpu", (0, 1), 50), ("pcie-4gpu", (2, 3), 50), ("pcie-4gpu", (1, 2), 10),
    ("t4-4gpu", (0, 1), 20), ("t4-4gpu", (1, 2), 10),
])
def test_template_pair_scores(name, pair, score):
    topo = TEMPLATES[name]
    assert pair_score(topo, *pair) == (score, False)
    scores, asymmetric = gpu_scores(topo)
    assert not asymmetric and scores[pair[0]][pair[1]] == scores[pair[1]][pair[0]] == score


def test_direct_nvlink_and_one_sided_links():
    gpus = (GpuPlace(0, 0), GpuPlace(0, 0), GpuPlace(1, 1))
    topo = ServerTopology(gpus, nvlink={(0, 1): 4, (1, 2): 2, (2, 1): 0})
    assert pair_score(topo, 0, 1) == (450, False)        # 4 NVLinks + one switch
    assert pair_score(topo, 1, 0) == (450, False)        # given one way: both ways
    assert pair_score(topo, 1, 2) == (0, True)           # GPU 2 sees no NVLink to 1
    assert pair_score(topo, 2, 1) == (0, True)
    assert pair_score(topo, 0, 2) == (10, False)


# ---------------------------------------------------------------------------
# cluster files


def write(tmp_path, text: str):
    path = tmp_path / "cluster.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_template_alone_gives_cards_numa_and_scores(tmp_path):
    path = write(tmp_path, """\
        scheduler: {gpu_scheduler_policy: topology-aware}
        nodes:
          - {name_prefix: dgx, replicas: 2, topology: dgx-h100}
        """)
    node = load_cluster(path).nodes[1]
    assert [c.id for c in node.cards] == [f"GPU-dgx-1-{i}" for i in range(8)]
    assert {(c.type, c.devmem, c.count, c.devcore) for c in node.cards} == {
        ("NVIDIA H100 80GB HBM3", 81559, 10, 100)}
    assert [c.numa for c in node.cards] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert node.pair_scores["GPU-dgx-1-0"]["GPU-dgx-1-5"] == 1810
    assert node.topology.template == "dgx-h100"


def test_scores_follow_the_chart_unless_the_topology_says(tmp_path):
    # HAMi's chart sets ENABLE_TOPOLOGY_SCORE only for the topology-aware default
    spread = write(tmp_path, "nodes:\n  - {name: a, topology: pcie-4gpu}\n")
    node = load_cluster(spread).nodes[0]
    assert node.pair_scores == {} and [c.numa for c in node.cards] == [0, 0, 1, 1]
    on = write(tmp_path, "nodes:\n  - {name: a, topology: {template: pcie-4gpu, score: true}}\n")
    assert load_cluster(on).nodes[0].pair_scores["GPU-a-0"] == {"GPU-a-1": 50, "GPU-a-2": 10,
                                                                "GPU-a-3": 10}
    off = write(tmp_path, "scheduler: {gpu_scheduler_policy: topology-aware}\nnodes:\n"
                          "  - {name: a, topology: {template: pcie-4gpu, score: false}}\n")
    assert load_cluster(off).nodes[0].pair_scores == {}


def test_explicit_pair_scores_win_and_own_cards_take_the_topology_numa(tmp_path):
    path = write(tmp_path, """\
        scheduler: {gpu_scheduler_policy: topology-aware}
        nodes:
          - name: a
            gpus: 4
            card: {devmem: 24576, type: NVIDIA-A10}
            topology: pcie-4gpu
            nvidia_score: {"0": {"1": 7}}
        """)
    node = load_cluster(path).nodes[0]
    assert node.pair_scores == {"GPU-a-0": {"GPU-a-1": 7}}
    assert [(c.type, c.numa) for c in node.cards] == [("NVIDIA-A10", n) for n in (0, 0, 1, 1)]


def test_custom_topology_with_asymmetric_nvlink_warns(tmp_path):
    path = write(tmp_path, """\
        scheduler: {gpu_scheduler_policy: topology-aware}
        nodes:
          - name: a
            gpus: 2
            card: {devmem: 1000, type: NVIDIA-T4}
            topology:
              gpus: [{numa: 0, switch: 0}, {numa: 0, switch: 1}]
              nvlink: [[0, 1, 4], [1, 0, 0]]
        """)
    with pytest.warns(InputWarning, match=r"cluster.yaml:6: .*AsymmetricGPUP2PLink"):
        node = load_cluster(path).nodes[0]
    assert node.pair_scores == {"GPU-a-0": {"GPU-a-1": 0}, "GPU-a-1": {"GPU-a-0": 0}}


@pytest.mark.parametrize("topology, line, needle", [
    ("dgx-h10", 2, "unknown topology template 'dgx-h10' (did you mean 'dgx-h100'?)"),
    ("{template: pcie-4gpu, gpus: []}", 2, "'gpus' is empty"),
    ("{gpus: [{numa: 0, switch: 0}, {numa: 1, switch: 0}]}", 2,
     "PCIe switch 0 is on NUMA node 0 and 1"),
    ("{template: pcie-4gpu, nvlink: [[0, 0, 2]]}", 2, "an NVLink joins two GPUs"),
    ("{template: pcie-4gpu, nvlink: [[0, 1, 19]]}", 2, "at most 18"),
    ("{template: pcie-4gpu, nvlink: [[0, 9, 1]]}", 2, "at most 3"),
    ("{template: pcie-4gpu, colour: red}", 2, "unknown key 'colour'"),
    ("{nvlink: []}", 2, "needs 'template' or 'gpus'"),
])
def test_bad_topologies_are_located(tmp_path, topology, line, needle):
    path = write(tmp_path, f"nodes:\n  - {{name: a, topology: {topology}}}\n")
    with pytest.raises(InputError) as err:
        load_cluster(path)
    assert str(err.value).startswith(f"{path}:{line}:") and needle in str(err.value)


def test_cards_must_match_the_topology(tmp_path):
    path = write(tmp_path, "nodes:\n  - {name: a, gpus: 3, card: {devmem: 1000, type: NVIDIA-T4}, "
                           "topology: pcie-4gpu}\n")
    with pytest.raises(InputError, match="describes 4 GPUs .* indexes \\[0, 1, 2\\]"):
        load_cluster(path)
    path = write(tmp_path, "nodes:\n  - {name: a, gpus: 4, card: {devmem: 1000, type: NVIDIA-T4, numa: 1}, "
                           "topology: pcie-4gpu}\n")
    with pytest.raises(InputError, match="card 0 says numa 1, its topology 0"):
        load_cluster(path)


def test_written_cluster_reads_back_with_its_topology(tmp_path):
    path = write(tmp_path, """\
        scheduler: {gpu_scheduler_policy: topology-aware}
        nodes:
          - {name_prefix: dgx, replicas: 2, topology: dgx-a100}
          - name: c
            gpus: 3
            card: {devmem: 1000, type: NVIDIA-T4}
            topology:
              gpus: [{numa: 0, switch: 0, board: 0}, {numa: 0, switch: 0, board: 0}, {}]
              nvlink: [[0, 2, 3]]
              nics: [{numa: 0, switch: 0}]
              score: true
        """)
    cluster = load_cluster(path)
    assert cluster.nodes[2].pair_scores["GPU-c-0"] == {"GPU-c-1": 60, "GPU-c-2": 350}
    out = tmp_path / "written.yaml"
    out.write_text(cluster_yaml(cluster, "test"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_cluster(out) == cluster


# ---------------------------------------------------------------------------
# what HAMi does with them


@pytest.mark.parametrize("backend", ["kernel", "reference"])
def test_topology_aware_keeps_a_pair_on_one_switch(tmp_path, backend):
    # the article's 4-GPU box: a 2-GPU pod gets GPUs 0+1 or 2+3 (one PCIe
    # switch, score 50), never 1+2 (across sockets, 10)
    path = write(tmp_path, "scheduler: {gpu_scheduler_policy: topology-aware}\n"
                           "nodes:\n  - {name: box, topology: pcie-4gpu}\n")
    pods = [TracePod(Pod(f"p{i}", (Container({"nvidia.com/gpu": 2}),)), float(i))
            for i in range(2)]
    res = simulate(load_cluster(path), Trace.from_pods("t", pods),
                   EngineConfig(backend=backend, progress=False))
    binds = res.events[res.events.event == "bind"]
    pairs = [sorted(int(d.split(",")[0][-1]) for d in devices.split(":") if d.strip(";"))
             for devices in binds.devices]
    assert sorted(map(tuple, pairs)) == [(0, 1), (2, 3)]


def test_bundled_topology_study_loads_and_runs(tmp_path):
    # the README's study: its cluster, trace and sweep file read without a warning
    from hamisim.io.bundled import workloads_dir
    from hamisim.io.traces import read_trace
    from hamisim.studies.sweep import load_sweep
    root = workloads_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cluster = load_cluster(root / "topology" / "cluster.yaml")
        trace = read_trace(root / "topology" / "trace.csv")
        sweep = load_sweep(root / "sweeps" / "topology-chains.yaml")
    assert cluster.n_cards == 80 and len(trace) == 500 and len(sweep.cells) == 6
    assert {n.topology.template for n in cluster.nodes} == {"dgx-h100", "pcie-8gpu", "pcie-4gpu"}
    res = simulate(cluster, trace, EngineConfig(progress=False))
    assert set(res.summary["placement_by_gpus"]) == {"2", "4", "8"}
