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
    from hamisim.studies.scaleup import group_aliases
    path = tmp_path / "groups.yaml"
    path.write_text(GROUPS_WITH_NAMES)
    cluster = load_cluster(EXAMPLE / "cluster.yaml")
    templates = load_cluster(path)
    aliases = group_aliases(path)
    assert aliases == {"dgx": "h100"}
    by_prefix = node_groups(templates, cluster, {"dgx": 4.0, "spare": 2.0}, aliases)
    by_group = node_groups(templates, cluster, {"h100": 4.0, "spare": 2.0}, aliases)
    assert by_prefix == by_group
    assert {g.name: g.cost for g in by_group} == {"h100": 4.0, "t4": 1.0, "spare": 2.0}
    with pytest.raises(ValueError, match=r"no node group of the templates: x \(accepted: "
                                         r"h100 \(or dgx\), t4, spare\)"):
        node_groups(templates, cluster, {"x": 1.0}, aliases)
    with pytest.raises(ValueError, match="gives group h100 twice"):
        node_groups(templates, cluster, {"dgx": 1.0, "h100": 2.0}, aliases)
    args = ["scaleup", str(EXAMPLE / "cluster.yaml"), str(EXAMPLE / "pending.csv"),
            "--groups", str(path), "--state", str(EXAMPLE / "state.yaml"), "--json"]
    assert main(args + ["--cost", "dgx=4"]) == 0
    groups = {g["group"]: g["cost"] for g in json.loads(capsys.readouterr().out)["groups"]}
    assert groups == {"h100": 4.0, "t4": 1.0, "spare": 1.0}
    assert main(args + ["--cost", "a100=4"]) == 2
    assert "accepted: h100 (or dgx), t4, spare" in capsys.readouterr().err
