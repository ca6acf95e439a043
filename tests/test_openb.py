"""The Alibaba openb pod and node lists (hamisim.io.openb) and cluster_from_path."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from hamisim.cluster import Cluster
from hamisim.errors import InputError
from hamisim.hami.reference import type_allowed
from hamisim.io.clusterfile import cluster_from_path
from hamisim.io.openb import (
    OPENB_CARD_MEMORY_MIB,
    openb_card_type,
    read_openb_nodes,
    read_openb_pods,
)
from hamisim.io.traces import read_trace
from hamisim.pods import GPU, GPUCORES, GPUMEM_PERCENTAGE, Container
from hamisim.shapes import gpu_request
from hamisim.workload import Trace, TracePod

OPENB = Path(__file__).resolve().parent.parent / "workloads" / "openb"
DEFAULT = OPENB / "openb_pod_list_default.csv"
GPU_NODES = OPENB / "openb_node_list_gpu_node.csv"


@pytest.fixture(scope="module")
def default_trace() -> Trace:
    return read_trace(DEFAULT)


def openb_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def error_of(path) -> InputError:
    with pytest.raises(InputError) as info:
        read_trace(path)
    return info.value


# ---------------------------------------------------------------------------
# openb pod lists

def test_openb_default_counts(default_trace):
    assert default_trace.format == "openb" and len(default_trace) == 8152
    limits = [tp.pod.containers[0].limits for tp in default_trace.pods]
    assert sum(1 for lim in limits if not lim) == 1088
    assert sum(1 for lim in limits if GPUCORES in lim) == 3078
    assert sum(1 for lim in limits if lim.get(GPU, 0) > 1) == 75
    assert default_trace.total_gpu_request() == pytest.approx(6086.8)


def test_openb_mapping_matches_the_rows(default_trace):
    rows = openb_rows(DEFAULT)
    for row, tp in zip(rows, default_trace.pods):
        assert tp.name == row["name"]
        assert (tp.pod.cpu_milli, tp.pod.memory_mib) == (int(row["cpu_milli"]),
                                                         int(row["memory_mib"]))
        assert tp.arrival == float(row["creation_time"])
        assert tp.deletion == float(row["deletion_time"]) and tp.duration is None
        assert gpu_request(tp.pod) == pytest.approx(
            int(row["num_gpu"]) * int(row["gpu_milli"]) / 1000)
    assert [tp.line for tp in default_trace.pods[:3]] == [2, 3, 4]


def find(trace: Trace, rows, pred) -> TracePod:
    index = next(i for i, r in enumerate(rows) if pred(r))
    return trace.pods[index]


def test_openb_fractional_pod(default_trace):
    tp = find(default_trace, openb_rows(DEFAULT), lambda r: r["gpu_milli"] == "810")
    assert tp.pod.containers == (Container({GPU: 1, GPUCORES: 81, GPUMEM_PERCENTAGE: 81}),)
    assert tp.pod.annotations == {}
    assert gpu_request(tp.pod) == pytest.approx(0.81)


def test_openb_multi_gpu_pod(default_trace):
    tp = find(default_trace, openb_rows(DEFAULT), lambda r: r["num_gpu"] == "8")
    assert tp.pod.containers == (Container({GPU: 8}),)
    assert gpu_request(tp.pod) == 8


def test_openb_cpu_only_pod(default_trace):
    tp = find(default_trace, openb_rows(DEFAULT), lambda r: r["num_gpu"] == "0")
    assert tp.pod.containers == (Container(),) and gpu_request(tp.pod) == 0
    assert tp.pod.cpu_milli > 0


def test_openb_gpu_spec():
    path = OPENB / "openb_pod_list_gpuspec10.csv"
    trace = read_trace(path)
    rows = openb_rows(path)
    tp = find(trace, rows, lambda r: r["gpu_spec"] == "V100M16|V100M32|V100M32")
    assert tp.pod.annotations == {"nvidia.com/use-gputype": "V100M16,V100M32"}
    specs = {r["gpu_spec"] for r in rows if r["gpu_spec"]}
    assert specs and sum(1 for tp in trace.pods if tp.pod.annotations) == \
        sum(1 for r in rows if r["gpu_spec"])
    # HAMi's substring match selects exactly the listed models' card types.
    for spec in specs:
        models = set(spec.split("|"))
        annotations = {"nvidia.com/use-gputype": ",".join(models)}
        allowed = {m for m in OPENB_CARD_MEMORY_MIB
                   if type_allowed(annotations, openb_card_type(m))}
        assert allowed == models, spec


def test_openb_model_names_do_not_overlap():
    for model in OPENB_CARD_MEMORY_MIB:
        hits = [other for other in OPENB_CARD_MEMORY_MIB
                if model.upper() in openb_card_type(other).upper()]
        assert hits == [model]


def test_openb_multigpu_file_has_no_timestamps():
    trace = read_trace(OPENB / "openb_pod_list_multigpu20.csv")
    assert len(trace) == 8324 and not trace.has_timestamps
    assert all(tp.arrival == 0 and tp.deletion is None for tp in trace.pods)
    assert [tp.name for tp in trace.iter_arrivals()] == [tp.name for tp in trace.pods]
    assert trace.total_gpu_request() == pytest.approx(7086.8)


@pytest.mark.parametrize("name,pods", [("cpu050", 7439), ("gpushare40", 8152)])
def test_openb_other_variants(name, pods):
    trace = read_openb_pods(OPENB / f"openb_pod_list_{name}.csv")
    assert len(trace) == pods


OPENB_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase," \
               "creation_time,deletion_time,scheduled_time\n"
OPENB_CASES = [
    ("milli-range", OPENB_HEADER + "p0,1000,10,1,500,,LS,Running,0,5,0\n"
                                   "p1,1000,10,1,1200,,LS,Running,0,5,0\n", 3,
     "pod 'p1': 'gpu_milli' must be <= 1000"),
    ("milli-zero", OPENB_HEADER + "p0,1000,10,1,0,,LS,Running,0,5,0\n", 2, "'gpu_milli' is 0"),
    ("milli-without-gpu", OPENB_HEADER + "p0,1000,10,0,500,,LS,Running,0,5,0\n", 2,
     "'gpu_milli' is 500 but 'num_gpu' is 0"),
    ("non-numeric", OPENB_HEADER + "p0,1k,10,1,500,,LS,Running,0,5,0\n", 2,
     "pod 'p0': 'cpu_milli' must be an integer, got '1k'"),
    ("deletion-before", OPENB_HEADER + "p0,1000,10,1,500,,LS,Running,9,5,0\n", 2,
     "'deletion_time' 5 is before 'creation_time' 9"),
    ("no-creation", OPENB_HEADER + "p0,1000,10,1,500,,LS,Running,,5,0\n", 2,
     "'creation_time' is empty"),
    ("duplicate", OPENB_HEADER + "p0,1,1,0,0,,LS,Running,0,5,0\np0,1,1,0,0,,LS,Running,0,5,0\n",
     3, "duplicate pod name 'p0' (first on line 2, again on line 3)"),
    ("header-only", OPENB_HEADER, 1, "the trace has no pods"),
    ("unknown-column", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,color\np,1,1,0,0,red\n", 1,
     "unknown openb pod-list column 'color'"),
]


@pytest.mark.parametrize("case,text,line,fragment", OPENB_CASES, ids=[c[0] for c in OPENB_CASES])
def test_openb_pod_errors(tmp_path, case, text, line, fragment):
    path = tmp_path / "openb.csv"
    path.write_text(text, encoding="utf-8")
    err = error_of(path)
    assert err.line == line and fragment in err.problem, str(err)


def test_openb_rounding_and_empty_deletion(tmp_path):
    path = tmp_path / "openb.csv"
    path.write_text(OPENB_HEADER + "p0,1,1,2,815,T4|T4,LS,Running,7,,\n"
                                   "p1,1,1,1,5,,BE,Failed,8,9,\n", encoding="utf-8")
    p0, p1 = read_trace(path).pods
    assert p0.pod.containers == (Container({GPU: 2, GPUCORES: 81, GPUMEM_PERCENTAGE: 81}),)
    assert p0.pod.annotations == {"nvidia.com/use-gputype": "T4"}
    assert (p0.arrival, p0.deletion, p1.deletion) == (7.0, None, 9.0)
    assert p1.pod.containers[0].limits[GPUCORES] == 1


def test_read_openb_pods_rejects_native(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("name,arrival\na,0\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.csv:1: not an openb pod list"):
        read_openb_pods(path)


# ---------------------------------------------------------------------------
# openb node lists and cluster_from_path

def test_openb_gpu_nodes():
    cluster = read_openb_nodes(GPU_NODES)
    assert isinstance(cluster, Cluster)
    assert len(cluster.nodes) == 1213 and cluster.n_cards == 6212
    per_type: dict[str, int] = {}
    for node in cluster.nodes:
        for card in node.cards:
            per_type[card.type] = per_type.get(card.type, 0) + 1
    assert per_type == {"NVIDIA-G2": 4392, "NVIDIA-T4": 842, "NVIDIA-G3": 312,
                        "NVIDIA-P100": 265, "NVIDIA-V100M32": 204, "NVIDIA-V100M16": 195,
                        "NVIDIA-A10": 2}
    node = cluster.nodes[0]
    assert (node.name, node.cpu_milli, node.memory_mib) == ("openb-node-0000", 64000, 262144)
    card = node.cards[1]
    assert (card.id, card.index, card.count, card.devmem, card.devcore, card.type, card.numa) == \
        ("GPU-openb-node-0000-1", 1, 10, 16280, 100, "NVIDIA-P100", 0)
    assert sum(n.cpu_milli for n in cluster.nodes) == 107_018_000


def test_openb_all_nodes_via_cluster_from_path():
    cluster = cluster_from_path(OPENB / "openb_node_list_all_node.csv")
    assert len(cluster.nodes) == 1523 and cluster.n_cards == 6212
    assert sum(1 for n in cluster.nodes if not n.cards) == 310


def test_cluster_from_path_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("nodes:\n  - name: n1\n    devices:\n"
                    "      - {id: GPU-A, devmem: 1000, type: NVIDIA-T4}\n", encoding="utf-8")
    assert cluster_from_path(path).n_cards == 1


NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"


@pytest.mark.parametrize("name,text,line,fragment", [
    ("c.csv", NODE_HEADER + "n0,1,1,2,T4\nn1,1,1,4,G1\n", 3, "unknown GPU model 'G1'"),
    ("c.csv", NODE_HEADER + "n0,1,1,2,\n", 2, "2 GPUs but no 'model'"),
    ("c.csv", NODE_HEADER + "n0,1,1,x,T4\n", 2, "node 'n0': 'gpu' must be an integer"),
    ("c.csv", NODE_HEADER + "n0,1,1,1,T4\nn0,1,1,1,T4\n", 3, "duplicate node 'n0'"),
    ("c.csv", NODE_HEADER, 1, "the node list has no nodes"),
    ("c.csv", "name,arrival\na,0\n", 1, "must be an openb node list"),
    ("c.txt", NODE_HEADER, None, "unsupported cluster file type '.txt'"),
])
def test_cluster_from_path_errors(tmp_path, name, text, line, fragment):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        cluster_from_path(path)
    assert info.value.line == line and fragment in info.value.problem, str(info.value)
