"""hamisim scaleup: the cheapest nodes to add so the pending pods bind together.

A what-if, not HAMi behaviour. The exact search is checked against brute force
(every addition scheduled, the cheapest that places every pod) on the bundled
example under several costs, the greedy fallback against the exact answer and
its own lower bound, and the per-pod dry-run verdicts against HAMi v2.10's
rules (a group with no node answers "node unregistered").
"""
from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest

from hamisim.cli import main
from hamisim.io.clusterfile import load_cluster
from hamisim.io.initialstate import load_state
from hamisim.io.traces import read_trace
from hamisim.studies.scaleup import (
    _grown,
    dry_run_verdicts,
    node_groups,
    placed_count,
    plan_scaleup,
    queue_order,
)

EXAMPLE = Path(__file__).parents[1] / "workloads" / "scaleup"


@pytest.fixture(scope="module")
def example():
    cluster = load_cluster(EXAMPLE / "cluster.yaml")
    return (cluster, load_cluster(EXAMPLE / "groups.yaml"),
            load_state(EXAMPLE / "state.yaml", cluster),
            queue_order(read_trace(EXAMPLE / "pending.csv")))


def brute_force(cluster, groups, pods, state):
    """The cheapest addition placing every pod, trying them all."""
    best = None
    for add in itertools.product(*(range(g.max_new + 1) for g in groups)):
        cost = sum(g.cost * n for g, n in zip(groups, add))
        if best is not None and cost >= best[0]:
            continue
        if not placed_count(_grown(cluster, groups, add), state, pods)[1]:
            best = (cost, add)
    return best


@pytest.mark.parametrize("costs", [{}, {"a100": 5.0}, {"t4": 0.5, "a100": 1.5}])
def test_the_exact_search_finds_the_brute_force_optimum(example, costs):
    cluster, templates, state, pods = example
    groups = node_groups(templates, cluster, costs)
    plan = plan_scaleup(cluster, groups, pods, state)
    cost, add = brute_force(cluster, groups, pods, state)
    assert plan.method == "exact" and plan.cost == cost
    assert not placed_count(_grown(cluster, groups, list(plan.add.values())), state, pods)[1]
    assert plan.placed == plan.pending == len(pods) and plan.placed_now < len(pods)


def test_the_greedy_answer_places_every_pod_above_its_bound(example):
    cluster, templates, state, pods = example
    groups = node_groups(templates, cluster, {"a100": 3.0})
    exact = plan_scaleup(cluster, groups, pods, state)
    greedy = plan_scaleup(cluster, groups, pods, state, max_evaluations=2)
    assert greedy.method == "greedy"
    assert greedy.lower_bound <= exact.cost <= greedy.cost
    assert not placed_count(_grown(cluster, groups, list(greedy.add.values())), state,
                            pods)[1]


def test_no_addition_is_reported_with_the_pods_left(example):
    cluster, templates, state, pods = example
    groups = [g for g in node_groups(templates, cluster) if g.name == "t4"]
    plan = plan_scaleup(cluster, groups, pods, state)
    assert plan.add is None and plan.unplaced == ["llm-0"]      # 30000 MiB > a T4


def test_the_dry_run_judges_each_pod_alone(example):
    cluster, templates, state, pods = example
    groups = node_groups(templates, cluster)
    verdicts = dry_run_verdicts(cluster, groups, pods)
    assert {v["a100"] for v in verdicts.values()} == {"node unregistered"}
    assert verdicts["llm-0"]["t4"] == "0/1 nodes are available: 1 4/4 CardInsufficientMemory."
    # every other pod fits an empty T4 node alone, though together they need more
    assert all(v["t4"] == "fits" for name, v in verdicts.items() if name != "llm-0")


def test_cli_prints_the_plan_and_refuses_bad_costs(capsys):
    args = ["scaleup", str(EXAMPLE / "cluster.yaml"), str(EXAMPLE / "pending.csv"),
            "--groups", str(EXAMPLE / "groups.yaml"), "--state", str(EXAMPLE / "state.yaml")]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plan"]["method"] == "exact" and out["plan"]["placed"] == 12
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "a what-if, not HAMi behaviour" in text and "node unregistered" in text
    assert main(args + ["--cost", "h100=2"]) == 2
    assert "--cost names no node group" in capsys.readouterr().err
    assert main(args + ["--cost", "t4=-1"]) == 2
    assert "positive" in capsys.readouterr().err


def test_an_imported_cluster_counts_its_nodes_of_the_templates_kind(tmp_path):
    example = Path(__file__).parents[1] / "workloads" / "kubectl-example"
    assert main(["import", str(example / "nodes.json"), str(example / "pods.json"),
                 "--out", str(tmp_path / "imp")]) == 0
    cluster = load_cluster(tmp_path / "imp" / "cluster.yaml")
    t4 = next(n for n in cluster.nodes if n.name == "gpu-node-1")
    templates = load_cluster(EXAMPLE / "groups.yaml")
    (a100,) = [g for g in node_groups(templates, cluster) if g.name == "a100"]
    assert a100.existing == 0                   # no node with 8 x A100 40GB
    t4_kind = dataclasses.replace(templates, nodes=(dataclasses.replace(
        t4, name="t4-0", group="t4"),))
    (group,) = node_groups(t4_kind, cluster)
    assert group.existing == 2                  # gpu-node-1 and gpu-node-3


GROUPS_WITH_NAMES = """\
nodes:
  - name_prefix: dgx
    group: h100
    replicas: 2
    gpus: 8
    card: {type: NVIDIA H100 80GB HBM3, devmem: 81559}
  - name_prefix: t4
    replicas: 3
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name: spare
    gpus: 2
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
"""


def test_a_cost_names_a_group_by_its_group_its_prefix_or_its_node_name(tmp_path, capsys):
    path = tmp_path / "groups.yaml"
    path.write_text(GROUPS_WITH_NAMES)
    cluster = load_cluster(EXAMPLE / "cluster.yaml")
    templates = load_cluster(path)
    # the reader keeps the other names; the JSON fast path of the same file too
    assert templates.group_aliases == {"dgx": "h100"}
    import yaml
    as_json = tmp_path / "groups.json"
    data = yaml.safe_load(GROUPS_WITH_NAMES)
    data["nodes"].append({"name": "solo", "group": "spare2", "devices": []})
    as_json.write_text(json.dumps(data))
    assert load_cluster(as_json).group_aliases == {"dgx": "h100", "solo": "spare2"}
    by_prefix = node_groups(templates, cluster, {"dgx": 4.0, "spare": 2.0})
    by_group = node_groups(templates, cluster, {"h100": 4.0, "spare": 2.0})
    assert by_prefix == by_group
    assert {g.name: g.cost for g in by_group} == {"h100": 4.0, "t4": 1.0, "spare": 2.0}
    with pytest.raises(ValueError, match=r"no node group of the templates: x \(accepted: "
                                         r"h100 \(or dgx\), t4, spare\)"):
        node_groups(templates, cluster, {"x": 1.0})
    with pytest.raises(ValueError, match="gives group h100 twice"):
        node_groups(templates, cluster, {"dgx": 1.0, "h100": 2.0})
    args = ["scaleup", str(EXAMPLE / "cluster.yaml"), str(EXAMPLE / "pending.csv"),
            "--groups", str(path), "--state", str(EXAMPLE / "state.yaml"), "--json"]
    assert main(args + ["--cost", "dgx=4"]) == 0
    groups = {g["group"]: g["cost"] for g in json.loads(capsys.readouterr().out)["groups"]}
    assert groups == {"h100": 4.0, "t4": 1.0, "spare": 1.0}
    assert main(args + ["--cost", "a100=4"]) == 2
    assert "accepted: h100 (or dgx), t4, spare" in capsys.readouterr().err


# -- scaleup --run DIR --at T: the state and pending pods of a finished run ------------
@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """The example replayed: the state's pods run on, the pending pods arrive 1 s
    apart and never leave (no duration), three of them bind."""
    out = tmp_path_factory.mktemp("run") / "run"
    assert main(["run", str(EXAMPLE / "cluster.yaml"), str(EXAMPLE / "pending.csv"),
                 "--state", str(EXAMPLE / "state.yaml"), "--out", str(out),
                 "--no-progress"]) == 0
    return out


def test_a_runs_pending_pods_at_a_time_are_those_arrived_and_not_bound(example_run, capsys):
    import pandas as pd

    from hamisim.studies.defrag import recorded_at
    capsys.readouterr()
    table = pd.read_parquet(example_run / "pods.parquet")
    for at in (0.0, 5.0, 12.0):
        got = recorded_at(example_run, at, "scaleup")
        arrived = table[(table["arrival"] <= at) & ~(table["bind"] <= at)]
        # the trace has no priorities: queue order is arrival order
        assert [p.name for p in got.pending] == list(arrived.sort_values("arrival")["pod"])
        assert sorted(p.name for p in got.state.pods) == sorted(table[table["bind"] <= at]["pod"])
    end = recorded_at(example_run, 12.0, "scaleup")
    groups = node_groups(load_cluster(EXAMPLE / "groups.yaml"), end.cluster)
    plan = plan_scaleup(end.cluster, groups, end.pending, end.state)
    # the run tried every pending pod on this very state: none binds without a new node
    assert plan.placed_now == 0 and plan.pending == len(end.pending) > 0
    assert not placed_count(_grown(end.cluster, groups, list(plan.add.values())), end.state,
                            end.pending)[1]
    args = ["scaleup", "--run", str(example_run), "--at", "12", "--groups",
            str(EXAMPLE / "groups.yaml")]
    assert main(args + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plan"]["add"] == plan.add
    assert main(args) == 0
    assert f"{len(end.pending)} pending pods on {example_run} at t=12 s" in \
        capsys.readouterr().out


def test_scaleup_run_refuses_what_it_cannot_read(example_run, tmp_path, capsys):
    import shutil

    import pandas as pd
    groups = ["--groups", str(EXAMPLE / "groups.yaml")]

    def refused(*args):
        assert main(["scaleup", *args, *groups]) == 2
        return capsys.readouterr().err

    capsys.readouterr()
    assert "no such results folder" in refused("--run", str(tmp_path / "nope"), "--at", "1")
    assert "the run ends at 12 s (give 0..12)" in refused("--run", str(example_run), "--at",
                                                          "13")
    assert "takes --at T and no CLUSTER PENDING or --state" in refused(
        "--run", str(example_run), "--at", "1", "--state", str(EXAMPLE / "state.yaml"))
    assert "takes --at T" in refused("--run", str(example_run))
    assert "needs CLUSTER PENDING, or --run DIR --at T" in refused(
        str(EXAMPLE / "cluster.yaml"))
    # a folder another version wrote: a pods table without a column, a summary without a key
    old = tmp_path / "old"
    shutil.copytree(example_run, old)
    pods = pd.read_parquet(old / "pods.parquet")
    pods.drop(columns=["abandon"]).to_parquet(old / "pods.parquet")
    err = refused("--run", str(old), "--at", "1")
    assert str(old / "pods.parquet") in err and "no column abandon" in err
    summary = json.loads((old / "summary.json").read_text())
    del summary["inputs"]["seed"]
    summary["hamisim_version"] = "0.0.1"
    (old / "summary.json").write_text(json.dumps(summary))
    err = refused("--run", str(old), "--at", "1")
    assert str(old / "summary.json") in err and "lacks 'seed' (written by hamisim 0.0.1" in err


def test_a_runs_state_keeps_the_cpu_of_pods_running_without_a_gpu(tmp_path, capsys):
    # a CPU-only pod holds 30,000m of the node's 32,000m: the state at 1 s (the run's
    # end) holds it with its CPU, so the 4,000m GPU pod pending then fits no node now
    (tmp_path / "cluster.yaml").write_text(
        "nodes:\n  - name: t4\n    gpus: 2\n    cpu_milli: 32000\n    memory_mib: 65536\n"
        "    card: {type: NVIDIA-Tesla T4, devmem: 15360}\n")
    (tmp_path / "trace.csv").write_text(
        "name,arrival,gpu,cpu_milli,memory_mib\ncpu-only,0,0,30000,1024\n"
        "gpu-pod,1,1,4000,1024\n")
    assert main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.csv"),
                 "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    from hamisim.studies.defrag import recorded_at
    got = recorded_at(tmp_path / "run", 1.0, "scaleup")
    [held] = got.state.pods
    assert (held.name, held.node, held.containers, held.cpu_milli, held.memory_mib) == \
        ("cpu-only", "t4", [], 30000, 1024)
    assert [p.name for p in got.pending] == ["gpu-pod"]
    capsys.readouterr()
    (tmp_path / "groups.yaml").write_text(
        "nodes:\n  - name_prefix: t4\n    replicas: 2\n    gpus: 2\n    cpu_milli: 32000\n"
        "    memory_mib: 65536\n    card: {type: NVIDIA-Tesla T4, devmem: 15360}\n")
    assert main(["scaleup", "--run", str(tmp_path / "run"), "--at", "1", "--groups",
                 str(tmp_path / "groups.yaml"), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["placed_now"] == 0 and plan["add"] == {"t4": 1}


# ---------------------------------------------------------------------------
# the integer program (scaleup.relaxation, scaleup.solve)

def test_the_program_is_a_relaxation_of_the_simulated_placement(example):
    """Every addition the program rules out leaves some pod unplaced when scheduled,
    so its optimum is a lower bound of the brute-force optimum."""
    from hamisim.studies.scaleup import relaxation, solve
    cluster, templates, state, pods = example
    groups = node_groups(templates, cluster, {"a100": 5.0})
    rel = relaxation(cluster, groups, pods, state)
    ruled_out = 0
    for add in itertools.product(*(range(g.max_new + 1) for g in groups)):
        if solve(rel, add) is None:
            ruled_out += 1
            assert placed_count(_grown(cluster, groups, add), state, pods)[1], add
    assert ruled_out > 0                    # the program prunes something
    ip_cost, _ = solve(rel)
    assert ip_cost <= brute_force(cluster, groups, pods, state)[0]


@pytest.mark.parametrize("costs", [{}, {"a100": 5.0}, {"t4": 0.5, "a100": 1.5}])
def test_without_running_pods_the_program_is_confirmed_exact(example, costs):
    """On the empty cluster the aggregate program's addition is what HAMi places:
    the answer is the program's, confirmed by the simulation, and brute force agrees."""
    cluster, templates, _, pods = example
    groups = node_groups(templates, cluster, costs)
    plan = plan_scaleup(cluster, groups, pods, None)
    cost, _ = brute_force(cluster, groups, pods, None)
    assert plan.method == "exact" and plan.cost == cost
    assert plan.ip_confirmed and plan.ip_cost == plan.cost and plan.ip_add == plan.add
    assert plan.evaluations == 3            # nothing added, the most, the program's addition


def test_greedy_reports_its_gap_to_the_proven_bound(example):
    cluster, templates, state, pods = example
    groups = node_groups(templates, cluster, {"a100": 5.0})
    exact = plan_scaleup(cluster, groups, pods, state)
    greedy = plan_scaleup(cluster, groups, pods, state, max_evaluations=2)
    assert greedy.method == "greedy" and exact.method == "exact"
    assert greedy.ip_cost <= greedy.lower_bound <= exact.cost <= greedy.cost
    assert greedy.gap == pytest.approx((greedy.cost - greedy.lower_bound) / greedy.cost)
    assert exact.gap == 0.0 and exact.ip_cost <= exact.cost


def test_cli_prints_the_integer_program(capsys):
    args = ["scaleup", str(EXAMPLE / "cluster.yaml"), str(EXAMPLE / "pending.csv"),
            "--groups", str(EXAMPLE / "groups.yaml"), "--state", str(EXAMPLE / "state.yaml"),
            "--cost", "a100=5"]
    assert main(args) == 0
    text = capsys.readouterr().out
    # the running model servers' memory counted, the bound is 6 (t4 +1, a100 +1), below 7
    assert "integer program (aggregate capacities, a proven lower bound): cost 6" in text
    assert "add t4 +2, a100 +1 (cost 7; exact" in text
    assert main(args + ["--max-evaluations", "4"]) == 0
    assert "gap of the greedy answer to the proven bound: 12.5 %" in capsys.readouterr().out
    assert main(args[:-2]) == 0                 # equal costs: the program's addition places all
    assert "cost 2 with t4 +0, a100 +2; simulated: places every pod" in capsys.readouterr().out


def test_the_two_group_workload_gets_the_brute_force_optimum():
    """workloads/plan (H100 and L40S groups, pending 8-GPU training among inference
    and notebooks): the exact answer is the cheapest addition brute force finds."""
    folder = Path(__file__).parents[1] / "workloads" / "plan"
    cluster = load_cluster(folder / "cluster.yaml")
    groups = node_groups(load_cluster(folder / "groups.yaml"), cluster, {"h100": 4.0})
    pods = queue_order(read_trace(folder / "pending.csv"))
    plan = plan_scaleup(cluster, groups, pods)
    cost, add = brute_force(cluster, groups, pods, None)
    assert plan.method == "exact" and plan.cost == cost
    assert plan.ip_cost <= plan.cost
    greedy = plan_scaleup(cluster, groups, pods, max_evaluations=3)
    assert greedy.cost >= plan.cost and greedy.lower_bound <= plan.cost
