"""Unplaceable pods: no node of the cluster could hold them even empty.

They are found once per request before the run (hamisim.studies.unplaceable), the
run itself is unchanged, and every output keeps them apart: the pods table
marks them, summary.json counts them (per reason, and the preemptions they
caused), the percentiles and the per-class table leave them out, the console,
report.html, compare and scaleup name them.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.io.clusterfile import cluster_from_path
from hamisim.io.traces import read_trace
from hamisim.sim.config import EngineConfig
from hamisim.sim.engine import simulate
from hamisim.studies.unplaceable import find_unplaceable, unplaceable_pods
from hamisim.studies.runs import RunSpec, find_unplaceable_pods, prepare, run_prepared
from hamisim.studies.scaleup import node_groups, unplaceable_pending

CLUSTER = """\
scheduler: {gpu_scheduler_policy: binpack, node_scheduler_policy: binpack}
quotas:
  team-a: {limits.nvidia.com/gpumem: 20000}
nodes:
  - {name_prefix: big, replicas: 2, cpu_milli: 16000, memory_mib: 65536, gpus: 4,
     labels: {pool: big}, card: {devmem: 40960, type: NVIDIA A100-SXM4-40GB}}
  - {name_prefix: t4, replicas: 2, cpu_milli: 8000, memory_mib: 32768, gpus: 2,
     taints: [{key: dedicated, value: infer, effect: NoSchedule}],
     card: {devmem: 15360, type: NVIDIA-Tesla-T4}}
"""

TOLERATE = '"[{""key"":""dedicated"",""operator"":""Exists"",""effect"":""NoSchedule""}]"'
#: one pod per reason kind, and pods that fit an empty cluster somewhere
TRACE_ROWS = {     # gpu, gpumem, cpu_milli, memory_mib, use_gputype, selector, tolerations, ns
    "gpus-8": "8,,1000,1024,,,,default",               # more cards than any node
    "type-b200": "1,,1000,1024,B200,,,default",         # a type the cluster lacks
    "gpumem": "1,50000,1000,1024,,,,default",           # more memory than any card
    "cpu": "1,,20000,1024,,,,default",                  # more CPU than any node
    "memory": "1,,1000,100000,,,,default",              # more memory than any node
    "selector": '1,,1000,1024,,"{""pool"":""none""}",,default',
    "taint-t4": "1,,1000,1024,NVIDIA-Tesla-T4,,,default",    # T4s only behind the taint
    "quota": "1,30000,1000,1024,,,,team-a",             # over team-a's quota alone
    "fits-a100": "4,,16000,1024,,,,default",            # a whole big node
    "fits-t4": f"1,,1000,1024,NVIDIA-Tesla-T4,,{TOLERATE},default",
    "fits-quota": "1,20000,1000,1024,,,,team-a",
}


def write_inputs(tmp_path: Path, rows: dict[str, str] = TRACE_ROWS,
                 arrivals: dict[str, float] | None = None) -> tuple[Path, Path]:
    (tmp_path / "c.yaml").write_text(CLUSTER)
    lines = ["name,arrival,duration,gpu,gpumem,gpucores,cpu_milli,memory_mib,use_gputype,"
             "node_selector,tolerations,namespace,priority"]
    for k, (name, row) in enumerate(rows.items()):
        gpu, gpumem, rest = row.split(",", 2)
        lines.append(f"{name},{(arrivals or {}).get(name, k)},100,{gpu},{gpumem},,{rest},"
                     f"{10 if name == 'gpus-8' else 0}")
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    return tmp_path / "c.yaml", tmp_path / "t.csv"


def reasons_of(tmp_path: Path) -> dict[str, str]:
    c, t = write_inputs(tmp_path)
    trace = read_trace(str(t))
    return unplaceable_pods(trace, find_unplaceable(cluster_from_path(str(c)),
                                                    trace.templates))


def test_each_reason_kind_is_found_and_said(tmp_path):
    found = reasons_of(tmp_path)
    assert set(found) == {name for name in TRACE_ROWS if not name.startswith("fits")}
    assert found["gpus-8"] == "asks 8 GPUs, the largest node has 4"
    assert found["type-b200"] == "asks GPU type B200, no card in the cluster has it"
    assert "CardInsufficientMemory on 2/4 nodes" in found["gpumem"]
    assert "Insufficient cpu on 2/4 nodes" in found["cpu"]
    assert "Insufficient memory on 2/4 nodes" in found["memory"]
    assert "didn't match Pod's node affinity/selector on 2/4 nodes" in found["selector"]
    # the T4 nodes refuse it for their taint, the A100 nodes for the type
    assert found["taint-t4"] == ("CardTypeMismatch on 2/4 nodes, node(s) had untolerated "
                                 "taint {dedicated: infer} on 2/4 nodes")
    assert found["quota"] == "asks more than namespace team-a's ResourceQuota allows"


def test_a_reason_every_node_gives_is_said_in_words(tmp_path):
    (tmp_path / "c.yaml").write_text(
        "nodes:\n  - {name_prefix: n, replicas: 3, cpu_milli: 4000, gpus: 1,"
        " card: {devmem: 16000, type: NVIDIA-Tesla-T4}}\n")
    (tmp_path / "t.csv").write_text("name,arrival,gpu,cpu_milli\np,0,1,5000\n")
    trace = read_trace(str(tmp_path / "t.csv"))
    found = find_unplaceable(cluster_from_path(str(tmp_path / "c.yaml")), trace.templates)
    assert found == {0: "asks more CPU than any node has: Insufficient cpu on 3/3 nodes"}


def test_too_few_cards_is_said_as_the_cards_hami_counts(tmp_path):
    # HAMi counts only cards whose type contains NVIDIA: 1 GPU on nodes of two
    # "Tesla-T4" cards, and 2 GPUs on nodes with one NVIDIA card beside one such
    def found(devices, gpus):
        (tmp_path / "c.yaml").write_text(
            f"nodes:\n  - {{name_prefix: n, replicas: 2, devices: {devices}}}\n")
        (tmp_path / "t.csv").write_text(f"name,arrival,gpu\np,0,{gpus}\n")
        trace = read_trace(str(tmp_path / "t.csv"))
        return find_unplaceable(cluster_from_path(str(tmp_path / "c.yaml")), trace.templates)

    tesla = "{type: Tesla-T4, devmem: 15360}"
    assert found(f"[{tesla}, {tesla}]", 1) == {0: (
        "asks 1 GPU, and no card's type contains NVIDIA (HAMi counts no other card): "
        "NodeInsufficientDevice on 2/2 nodes")}
    assert found(f"[{{type: NVIDIA-Tesla-T4, devmem: 15360}}, {tesla}]", 2) == {0: (
        "asks 2 GPUs, and no node has more than 1 cards HAMi counts (their type contains "
        "NVIDIA): NodeInsufficientDevice on 2/2 nodes")}


def test_a_blank_type_list_names_no_type_as_hami_reads_it():
    # a blank use-gputype sets no constraint (HAMi's CheckType): the reason is the
    # nodes', not a missing type; a list of separators only matches no type
    from hamisim import Card, Container, Node, Pod
    from hamisim.studies.unplaceable import summarise
    cards = [[Card("c0", devmem=15360, type="NVIDIA-Tesla-T4")]]
    reasons = {"n": ["Insufficient cpu"]}

    def said(value):
        pod = Pod("p", (Container({"nvidia.com/gpu": 1}),),
                  annotations={"nvidia.com/use-gputype": value})
        return summarise(pod, reasons, 1, 1, cards)

    assert said("  ") == "asks more CPU than any node has: Insufficient cpu on 1/1 nodes"
    assert said(" , ") == "asks GPU type  , , no card in the cluster has it"
    assert said(" t4 ") == said("  ")


def test_mig_geometry_and_node_affinity_are_found(tmp_path):
    # only 1g/2g profiles are allowed: 30000 MiB fits no MIG instance of any card
    mig = Path(__file__).parents[1] / "workloads" / "mig" / "cluster-mig-small.yaml"
    affinity = ('"{""nodeAffinity"":{""requiredDuringSchedulingIgnoredDuringExecution"":'
                '{""nodeSelectorTerms"":[{""matchExpressions"":[{""key"":""zone"",'
                '""operator"":""In"",""values"":[""moon""]}]}]}}}"')
    (tmp_path / "t.csv").write_text("name,arrival,gpu,gpumem,affinity\n"
                                    "big,0,1,30000,\nok,1,1,9000,\n"
                                    f"far,2,1,9000,{affinity}\n")
    trace = read_trace(str(tmp_path / "t.csv"))
    found = unplaceable_pods(trace, find_unplaceable(cluster_from_path(str(mig)),
                                                     trace.templates))
    assert found == {
        "big": "asks a MIG instance no card's profiles and free slices offer: "
               "CardMigTopologyInfeasible on 6/6 nodes",
        "far": "node(s) didn't match Pod's node affinity/selector on 6/6 nodes"}


def test_a_pod_that_fits_only_the_empty_cluster_is_not_unplaceable(tmp_path):
    # "fits-a100" asks a whole big node while both are busy: it waits, then binds
    rows = {"busy-0": TRACE_ROWS["fits-a100"], "busy-1": TRACE_ROWS["fits-a100"],
            "fits-a100": TRACE_ROWS["fits-a100"], "type-b200": TRACE_ROWS["type-b200"]}
    c, t = write_inputs(tmp_path, rows, {"busy-0": 0, "busy-1": 0, "fits-a100": 1,
                                         "type-b200": 2})
    spec = RunSpec(cluster=str(c), trace=str(t), progress=False)
    res = run_prepared(spec, prepare(spec))
    pods = res.pods.set_index("pod")
    assert not pods.loc["fits-a100", "unplaceable"] and pods.loc["fits-a100", "wait_s"] > 0
    assert pods.loc["fits-a100", "bind"] == pytest.approx(100.0)
    assert pods["unplaceable"].tolist().count(True) == 1 and pods.loc["type-b200", "unplaceable"]
    assert pods.loc["type-b200", "unplaceable_reason"] == ("asks GPU type B200, no card in the "
                                                          "cluster has it")
    assert pd.isna(pods.loc["fits-a100", "unplaceable_reason"])


def test_outputs_keep_them_out_of_the_percentiles_and_classes(tmp_path):
    c, t = write_inputs(tmp_path)
    spec = RunSpec(cluster=str(c), trace=str(t), progress=False)
    res = run_prepared(spec, prepare(spec))
    r, pods = res.summary["results"], res.pods
    stuck = pods[pods["unplaceable"]]
    rest = pods[~pods["unplaceable"]]
    assert r["unplaceable"] == len(stuck) == 8
    assert r["pending_p99_s"] == pytest.approx(np.percentile(rest["wait_s"], 99))
    assert r["pending_max_s"] == pytest.approx(rest["wait_s"].max())
    assert r["unplaceable_pending_max_s"] == pytest.approx(stuck["wait_s"].max())
    assert r["unplaceable_pending_max_s"] > r["pending_max_s"]
    assert sum(c["pods"] for c in r["classes"]) == len(rest)
    by_reason = {x["reason"]: x for x in r["unplaceable_reasons"]}
    assert sum(x["pods"] for x in by_reason.values()) == 8
    assert by_reason["asks 8 GPUs, the largest node has 4"]["examples"] == ["gpus-8"]
    # the quota pod is refused at creation (HAMi's webhook) and still counted here
    assert pods.set_index("pod").loc["quota", "unplaceable"]


PREEMPTION_CLUSTER = """\
nodes:
  - {name: n0, cpu_milli: 8000, gpus: 4, card: {devmem: 16000, type: NVIDIA-Tesla-T4}}
"""


def preemption_inputs(tmp_path: Path) -> tuple[str, str]:
    # a low-priority pod holds most of the CPU; a high-priority pod asking more
    # cards than the node has is short of CPU too, so kube-scheduler preempts for
    # it, and HAMi then refuses its cards: again with every new victim
    (tmp_path / "c.yaml").write_text(PREEMPTION_CLUSTER)
    (tmp_path / "t.csv").write_text(
        "name,arrival,duration,gpu,cpu_milli,priority\n"
        "low-0,0,,1,6000,0\nstuck,1,,8,4000,100\nlow-1,2,,1,6000,0\nok,3,50,1,1000,0\n")
    return str(tmp_path / "c.yaml"), str(tmp_path / "t.csv")


def test_preemptions_they_caused_are_counted_apart(tmp_path):
    c, t = preemption_inputs(tmp_path)
    spec = RunSpec(cluster=c, trace=t, progress=False)
    res = run_prepared(spec, prepare(spec))
    r, pods = res.summary["results"], res.pods
    assert r["unplaceable"] == 1
    victims = pods["preempted_by"].eq("stuck").sum()
    assert victims >= 1 and r["unplaceable_preemptions"] == victims
    assert r["preempted"] >= victims


@pytest.mark.parametrize("inputs", ["reasons", "preemption"])
def test_both_engines_mark_and_count_alike(tmp_path, inputs):
    c, t = (preemption_inputs(tmp_path) if inputs == "preemption"
            else map(str, write_inputs(tmp_path)))
    spec = RunSpec(cluster=c, trace=t, progress=False)
    prep = prepare(spec)
    marks = find_unplaceable_pods(prep.workload, prep.cluster)
    assert marks
    runs = [simulate(prep.cluster, prep.workload, EngineConfig(engine=e, progress=False),
                     prep.shapes, unplaceable=marks) for e in ("python", "compiled")]
    assert [r.engine for r in runs] == ["python", "compiled"]
    pd.testing.assert_frame_equal(runs[0].pods, runs[1].pods)
    assert runs[0].summary == runs[1].summary


def test_cli_run_report_and_compare_name_them(tmp_path, capsys):
    c, t = write_inputs(tmp_path)
    out = tmp_path / "run"
    assert main(["run", str(c), str(t), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "(without the unplaceable)" in text
    assert "unplaceable (no node, even empty)  8 pods" in text
    assert "asks 8 GPUs, the largest node has 4: gpus-8" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["results"]["unplaceable"] == 8
    page = (out / "report.html").read_text()
    assert "<h2>Unplaceable pods</h2>" in page and "asks GPU type B200" in page
    pods = pd.read_parquet(out / "pods.parquet")
    assert pods["unplaceable"].sum() == 8
    cmp = tmp_path / "cmp"
    assert main(["compare", str(c), str(t), "--node-policy", "binpack", "--node-policy",
                 "spread", "--out", str(cmp)]) == 0
    text = capsys.readouterr().out
    assert "unplaceable: 8 pods no node holds even empty" in text
    table = pd.read_parquet(cmp / "compare.parquet")
    assert table["unplaceable"].tolist() == [8, 8]
    assert "<h2>Unplaceable pods</h2>" in (cmp / "report.html").read_text()


def test_scaleup_plans_for_the_others_and_names_them(tmp_path, capsys):
    c, _ = write_inputs(tmp_path)
    (tmp_path / "groups.yaml").write_text(
        "nodes:\n  - {name_prefix: big, replicas: 2, cpu_milli: 16000, memory_mib: 65536,"
        " gpus: 4, labels: {pool: big}, card: {devmem: 40960, type: NVIDIA A100-SXM4-40GB}}\n"
        "  - {name_prefix: huge, replicas: 1, cpu_milli: 32000, memory_mib: 262144,"
        " gpus: 8, card: {devmem: 81920, type: NVIDIA H100}}\n")
    (tmp_path / "p.csv").write_text(
        "name,arrival,gpu,gpumem,cpu_milli,use_gputype\n"
        "eight,0,8,,1000,\na,1,4,,16000,\nb,2,4,,16000,\nc,3,4,,16000,\n"
        "sixteen,4,16,,1000,\nb200,5,1,,1000,B200\n")
    cluster = cluster_from_path(str(c))
    groups = node_groups(cluster_from_path(str(tmp_path / "groups.yaml")), cluster)
    pods = [p.pod for p in read_trace(str(tmp_path / "p.csv")).pods]
    # 8 GPUs fit a new huge node; 16 GPUs and B200 fit no group
    assert unplaceable_pending(cluster, groups, pods) == {
        "sixteen": "asks 16 GPUs, the largest node has 8",
        "b200": "asks GPU type B200, no card in the cluster has it"}
    args = ["scaleup", str(c), str(tmp_path / "p.csv"), "--groups",
            str(tmp_path / "groups.yaml")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "2 pods no group can place" in text and "the plan is for the other 4" in text
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["unplaceable"]) == {"sixteen", "b200"}
    plan = out["plan"]
    assert plan["pending"] == plan["placed"] == 4 and plan["add"] == {"big": 1, "huge": 1}


def test_explain_shows_the_requested_type(tmp_path, capsys):
    c, t = write_inputs(tmp_path)
    assert main(["explain", str(c), str(t), "--pod", "type-b200"]) == 0
    assert "GPU type: only B200 (nvidia.com/use-gputype)" in capsys.readouterr().out
    assert main(["explain", str(c), str(t), "--pod", "type-b200", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu_types"] == {"use": "B200"}
