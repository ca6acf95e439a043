"""The node-policy interface on the FGD paper's model (hamisim.research.policies).

The six research policies are subclasses of ``ModelPolicy`` and the readable
backend runs them through it (``test_research_policies.py`` holds that path
against the compiled kernel). Here: a user's subclass named
``python:PATH.py:NAME`` is driven exactly like the built-in it extends; a
policy of one's own is checked against a brute force written from the
documented rules (filter, highest score, last of a tie, the policy's cards);
the worked example; the errors a user meets.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from hamisim.cli import main
from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.errors import HamisimError
from hamisim.pods import Container, Pod
from hamisim.research.model import RESEARCH_POLICIES, card_milli
from hamisim.research.scheduler import ResearchScheduler
from hamisim.shapes import Shape
from hamisim.sim.backend import make_scheduler

EXAMPLE = Path(__file__).parents[1] / "workloads" / "policies" / "packing_bestfit.py"
GPU, CORES, PCT = "nvidia.com/gpu", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage"


def node(name, gpus, cpu=64_000):
    return Node(name, tuple(Card(f"{name}-g{i}", i, 10, 16_000, 100, "NVIDIA-T4")
                            for i in range(gpus)), cpu_milli=cpu, memory_mib=256_000)


def cluster(*nodes, policy, **sched):
    return Cluster(tuple(nodes), SchedulerConfig(node_scheduler_policy=policy, **sched))


def gpu_pod(name, k, milli, cpu=1000):
    limits = {GPU: k} if milli == 1000 else {GPU: k, CORES: milli // 10, PCT: milli // 10}
    return Pod(name, (Container(limits),), cpu_milli=cpu, memory_mib=100)


def policy_file(tmp_path, body: str, name: str = "mine.py") -> str:
    path = tmp_path / name
    path.write_text("from hamisim.research.policies import *\n\n" + textwrap.dedent(body))
    return str(path)


def workload(seed: int, n: int = 40):
    """Pods and deletions: share pods, whole and multi-card pods, CPU-only pods."""
    rng = np.random.default_rng(seed)
    steps = []
    for j in range(n):
        if j > 3 and rng.random() < 0.2:
            steps.append(("delete", f"p{int(rng.integers(j))}"))
            continue
        kind = rng.integers(3)
        cpu = int(rng.choice([0, 500, 4000, 20_000]))
        if kind == 0:
            steps.append(("create", gpu_pod(f"p{j}", 1, int(rng.choice([100, 300, 550, 900])),
                                            cpu)))
        elif kind == 1:
            steps.append(("create", gpu_pod(f"p{j}", int(rng.choice([1, 2, 4])), 1000, cpu)))
        else:
            steps.append(("create", Pod(f"p{j}", (Container({}),), cpu_milli=cpu)))
    return steps


NODES = (node("a", 2, 16_000), node("b", 4), node("c", 8, 32_000), node("d", 1, 8000),
         node("e", 4, 24_000), node("f", 0, 8000))
SHAPES = [Shape(1000, 1, pct=30, cores=30, weight=0.5), Shape(4000, 2, pct=101, cores=100,
                                                                  weight=0.3),
          Shape(2000, 0, weight=0.2)]


@pytest.mark.parametrize("builtin", RESEARCH_POLICIES)
def test_a_subclass_that_changes_nothing_decides_as_the_compiled_builtin(tmp_path, builtin):
    cls = {"random": "RandomPolicy", "dotprod": "DotProduct", "gpuclustering": "GpuClustering",
           "gpupacking": "GpuPacking", "bestfit": "BestFit", "fgd": "FGD"}[builtin]
    path = policy_file(tmp_path, f"class Same({cls}):\n    pass\n")
    for tie in ("last", "random"):
        for seed in (1, 2):
            theirs = make_scheduler(cluster(*NODES, policy=builtin, node_tie_break=tie),
                                    "kernel", SHAPES, seed)
            mine = make_scheduler(cluster(*NODES, policy=f"python:{path}:Same",
                                          node_tie_break=tie), "reference", SHAPES, seed)
            assert isinstance(mine, ResearchScheduler) and mine.code == -1
            for op, arg in workload(seed):
                if op == "delete":
                    theirs.delete(arg)
                    mine.delete(arg)
                    continue
                a, b = theirs.schedule(arg), mine.schedule(arg)
                assert (a.node, a.containers, a.message) == (b.node, b.containers, b.message)
            assert theirs.free_milli() == mine.free_milli()


MINE = """\
class Emptiest(ModelPolicy):
    # the node with the most free GPU, then the most free CPU in thousands;
    # the fitting cards with the highest positions
    def score(self, node, pod):
        return (node.gpu_left, node.free_cpu // 1000)

    def cards(self, node, pod, draw):
        return node.fitting(pod.milli)[-pod.k:]
"""


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_a_users_policy_places_as_its_rules_say(tmp_path, seed):
    path = policy_file(tmp_path, MINE)
    sched = make_scheduler(cluster(*NODES, policy=f"python:{path}:Emptiest"), "reference")
    # brute force: the model's state kept by hand
    left = {n.name: [1000] * len(n.cards) for n in NODES}
    cpu_free = {n.name: n.cpu_milli for n in NODES}
    held: dict[str, tuple[str, list[int], int, int]] = {}
    placed = 0
    for op, arg in workload(seed, 60):
        if op == "delete":
            sched.delete(arg)
            if arg in held:
                name, cards, milli, cpu = held.pop(arg)
                for p in cards:
                    left[name][p] += milli
                cpu_free[name] += cpu
            continue
        pod = arg
        lim = pod.containers[0].limits
        k = lim.get(GPU, 0)
        milli = card_milli(lim.get(CORES, 100 if k else 0), lim.get(PCT, 101)) if k else 0
        best, best_score = None, None
        for n in NODES:
            fitting = [p for p, free in enumerate(left[n.name]) if free >= milli]
            if pod.cpu_milli > cpu_free[n.name] or (k and len(fitting) < k):
                continue
            score = (sum(left[n.name]), cpu_free[n.name] // 1000)
            if best is None or score >= best_score:          # ties: the last node
                best, best_score, cards = n.name, score, fitting[-k:] if k else []
        d = sched.schedule(pod)
        assert d.node == best, pod.name
        if best is None:
            assert d.message.startswith("0/6 nodes are available")
            continue
        assert [c.split("-g")[1] for c in d.card_ids] == [str(p) for p in cards]
        for p in cards:
            left[best][p] -= milli
        cpu_free[best] -= pod.cpu_milli
        held[pod.name] = (best, cards, milli, pod.cpu_milli)
        placed += 1
    assert placed > 20
    assert sched.free_milli() == {f"{n}-g{p}": v for n, cards in left.items()
                                  for p, v in enumerate(cards)}


def test_the_worked_example_breaks_gpupackings_ties_by_bestfit():
    # three empty nodes: GpuPacking scores them all 31 (two free cards) and takes
    # the last; the example takes the one BestFit prefers, the least CPU left
    nodes = (node("big", 2, 64_000), node("small", 2, 8000), node("mid", 2, 32_000))
    pod = gpu_pod("x", 1, 500, cpu=2000)
    plain = make_scheduler(cluster(*nodes, policy="gpupacking"), "reference")
    assert plain.schedule(pod).node == "mid" and plain.core.n_tied == 3
    example = make_scheduler(cluster(*nodes, policy=f"python:{EXAMPLE}:PackingThenBestFit"),
                             "reference")
    d = example.schedule(pod)
    assert (d.node, d.card_ids, example.core.n_tied) == ("small", ["small-g0"], 1)
    assert example.core.best_score[0] == 31
    # the next share pod packs onto the used card's node (GpuPacking's own rule)
    assert example.schedule(gpu_pod("y", 1, 300, cpu=1000)).card_ids == ["small-g0"]


@pytest.mark.parametrize("body, problem", [
    ("class P(ModelPolicy):\n    def score(self, node, pod):\n        return float('nan')\n",
     "scored node a NaN"),
    ("class P(ModelPolicy):\n    def score(self, node, pod):\n        return 1 / 0\n",
     "failed scoring pod x: ZeroDivisionError"),
    ("class P(ModelPolicy):\n    pass\n", "P defines no score"),
    ("class P(ModelPolicy):\n    def score(self, node, pod):\n        return 0\n"
     "    def cards(self, node, pod, draw):\n        return [0, 0]\n",
     "not 2 distinct fitting cards of node"),
])
def test_a_broken_policy_says_what_is_wrong(tmp_path, body, problem):
    path = policy_file(tmp_path, body, name=f"p{abs(hash(body))}.py")
    sched = make_scheduler(cluster(node("a", 2), policy=f"python:{path}:P"), "reference")
    with pytest.raises(HamisimError, match=problem):
        sched.schedule(gpu_pod("x", 2, 1000))


def test_where_a_model_policy_cannot_go(tmp_path):
    path = policy_file(tmp_path, "class P(BestFit):\n    pass\n", name="where.py")
    spec = f"python:{path}:P"
    with pytest.raises(HamisimError, match="add --backend reference"):
        make_scheduler(cluster(node("a", 2), policy=spec), "kernel")
    with pytest.raises(HamisimError, match="a card policy is a function"):
        make_scheduler(Cluster((node("a", 2),), SchedulerConfig(gpu_scheduler_policy=spec)),
                       "reference")
    from hamisim.explain import explain_pod
    with pytest.raises(HamisimError, match="explain covers HAMi's own placement"):
        explain_pod(cluster(node("a", 2), policy=spec), gpu_pod("x", 1, 1000))


def test_the_cli_says_it_is_not_hamis_and_labels_the_run(tmp_path, capsys):
    import json
    (tmp_path / "c.yaml").write_text(textwrap.dedent("""\
        nodes:
          - {name_prefix: t4, replicas: 3, gpus: 2, cpu_milli: 16000, card: {devmem: 15360, type: NVIDIA-T4}}
        """))
    (tmp_path / "t.csv").write_text("name,arrival,duration,gpu,gpucores,gpumem_percentage\n"
                                    + "".join(f"p{i},{i},30,1,40,40\n" for i in range(8)))
    args = ["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--node-policy",
            f"python:{EXAMPLE}:PackingThenBestFit", "--out", str(tmp_path / "r"),
            "--no-progress"]
    assert main(args + ["--backend", "kernel"]) == 2
    assert "add --backend reference" in capsys.readouterr().err
    assert main(args) == 0                  # no --backend: the readable one, said so
    out = capsys.readouterr().out
    assert "the Python policy runs on the readable backend" in out
    assert (f"hamisim run: python:{EXAMPLE}:PackingThenBestFit (a research policy on the FGD "
            "paper's model, not HAMi behaviour)") in out
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["inputs"]["backend"] == "reference"
    assert summary["not_hami"] == [f"node policy python:{EXAMPLE}:PackingThenBestFit: a "
                                   "research policy on the FGD paper's model (it places cards "
                                   "itself; HAMi's card policy plays no part)"]
    report = (tmp_path / "r" / "report.html").read_text()
    assert "<dt>not HAMi behaviour</dt><dd>node policy python:" in report
    assert summary["label"] == f"python:{EXAMPLE}:PackingThenBestFit"
    assert summary["results"]["bound"] == 8
    # packing: two 40 % pods per card, so four cards
    pods = __import__("pandas").read_parquet(tmp_path / "r" / "pods.parquet")
    assert pods["devices"].str.split(",").str[0].nunique() == 4
