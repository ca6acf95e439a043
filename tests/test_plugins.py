"""Users' own node policies in Python (``python:PATH.py:FUNCTION``; not HAMi behaviour).

HAMi's Filter still decides which nodes fit and which cards each container
gets; the user's function only ranks the fitting nodes. Checked against a
brute force (every node tried alone for each pod), on the worked example
(``workloads/policies/numa_pack.py``), and for the errors a user meets.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies import SLOW, clusters, pods

from hamisim import Card, Cluster, Container, Node, Pod, SchedulerConfig
from hamisim.cli import main
from hamisim.errors import HamisimError
from hamisim.hami.reference import ReferenceScheduler
from hamisim.research.plugins import load_node_policy
from hamisim.sim.backend import make_scheduler

EXAMPLE = Path(__file__).parents[1] / "workloads" / "policies" / "numa_pack.py"


def cluster(policy: str, nodes: int = 4, numa=(0, 0, 1, 1)) -> Cluster:
    return Cluster(tuple(Node(f"n{i}", tuple(
        Card(f"G{i}-{k}", k, count=4, devmem=10000, numa=numa[k]) for k in range(4)),
        cpu_milli=8000) for i in range(nodes)),
        SchedulerConfig(node_scheduler_policy=policy, gpu_scheduler_policy="binpack"))


def gpu_pod(name: str, gpus: int, mem: int, **ann) -> Pod:
    return Pod(name, (Container({"nvidia.com/gpu": gpus, "nvidia.com/gpumem": mem}),),
               annotations=ann, cpu_milli=1000)


def test_a_users_policy_picks_its_best_fitting_node(tmp_path):
    (tmp_path / "first.py").write_text("def score(c):\n    return -c.index\n")
    policy = f"python:{tmp_path / 'first.py'}:score"
    c = cluster(policy)
    sched = make_scheduler(c, backend="reference")
    bound: list = []
    sizes = [(1, 6000), (2, 9000), (1, 3000), (4, 5000), (2, 8000), (1, 9500), (3, 4000)] * 2
    for k, (gpus, mem) in enumerate(sizes):
        pod = gpu_pod(f"p{k}", gpus, mem)
        fitting = []
        for i in range(len(c.nodes)):       # brute force: each node alone, on a copy
            alone = ReferenceScheduler(c)
            for name, node, containers in bound:
                alone.adopt(name, node, containers, 0, 1000)
            if alone.schedule(pod, only=i).bound:
                fitting.append(i)
        d = sched.schedule(pod)
        assert d.node_index == (min(fitting) if fitting else -1), k
        if d.bound:
            bound.append((pod.name, d.node_index, d.containers))
    assert len({n for _, n, _ in bound}) > 1          # the cluster filled up past one node


def test_the_worked_example_keeps_cards_on_one_numa_node():
    # n0 is fuller (binpack's choice) but its two cards with room sit on different
    # NUMA nodes; n1 is empty
    policy = f"python:{EXAMPLE}:score"
    for name, want in (("binpack", "n0"), (policy, "n1")):
        sched = make_scheduler(cluster(name, nodes=2), backend="reference")
        for k, card in enumerate(("G0-1", "G0-3")):
            d = sched.schedule(gpu_pod(f"fill{k}", 1, 9000, **{"nvidia.com/use-gpuuuid": card}))
            assert d.node == "n0"
        d = sched.schedule(gpu_pod("pair", 2, 9000))
        assert d.node == want, name
        numa = {c.numa for c in sched.cluster.nodes[d.node_index].cards
                if c.id in {p.uuid for p in d.containers[0]}}
        assert len(numa) == (2 if name == "binpack" else 1)


def test_a_pods_own_node_policy_annotation_keeps_hamis_ranking(tmp_path):
    (tmp_path / "first.py").write_text("def score(c):\n    return -c.index\n")
    sched = make_scheduler(cluster(f"python:{tmp_path / 'first.py'}:score"), "reference")
    assert sched.schedule(gpu_pod("x", 1, 1000)).node == "n0"
    # binpack by annotation: the fullest node, n0 again; spread: an empty one, the last
    assert sched.schedule(gpu_pod("y", 1, 1000, **{
        "hami.io/node-scheduler-policy": "spread"})).node == "n3"


@pytest.mark.parametrize("text, spec, problem", [
    ("def score(c):\n    return 1\n", "python:{dir}/p.py", "expected python:PATH.py:FUNCTION"),
    ("def score(c):\n    return 1\n", "python:{dir}/nope.py:score", "no such file"),
    ("def score(c):\n    return 1\n", "python:{dir}/p.py:rank", "defines no function 'rank'"),
    ("raise RuntimeError('boom')\n", "python:{dir}/p.py:score", "RuntimeError: boom"),
])
def test_bad_policies_say_what_is_wrong(tmp_path, text, spec, problem):
    (tmp_path / "p.py").write_text(text)
    with pytest.raises(HamisimError, match=problem):
        load_node_policy(spec.format(dir=tmp_path))


def _small_inputs(folder, replicas: int) -> None:
    """c.yaml: ``replicas`` T4 nodes of two cards; t.csv: six 4000 MiB pods."""
    (folder / "c.yaml").write_text(
        "nodes:\n  - {name_prefix: t4, replicas: %d, gpus: 2, "
        "card: {devmem: 15360, type: NVIDIA-T4}}\n" % replicas)
    (folder / "t.csv").write_text("name,arrival,duration,gpu,gpumem\n"
                                  + "".join(f"p{i},{i},30,1,4000\n" for i in range(6)))


def test_the_cli_runs_it_on_the_reference_backend(tmp_path, capsys):
    _small_inputs(tmp_path, 2)
    (tmp_path / "nan.py").write_text("def score(c):\n    return float('nan')\n")
    args = ["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--node-policy",
            f"python:{EXAMPLE}:score_each", "--out", str(tmp_path / "r"), "--no-progress"]
    assert main(args + ["--backend", "kernel"]) == 2
    assert "add --backend reference" in capsys.readouterr().err
    assert main(args) == 0                  # no --backend: the readable one
    out = capsys.readouterr().out
    assert f"node=python:{EXAMPLE}:score_each" in out and "readable backend" in out
    args[4] = f"python:{tmp_path / 'nan.py'}:score"
    assert main(args + ["--backend", "reference"]) == 2
    assert "scored node t4-0 NaN" in capsys.readouterr().err


def test_a_policy_file_that_is_not_there_is_a_located_error(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(textwrap.dedent("""\
        scheduler:
          node_scheduler_policy: python:nowhere.py:score
        nodes:
          - {name_prefix: t4, replicas: 1, gpus: 1, card: {devmem: 15360, type: NVIDIA-T4}}
        """))
    (tmp_path / "t.csv").write_text("name,arrival,duration,gpu\np0,0,30,1\n")
    run = ["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--backend", "reference",
           "--out", str(tmp_path / "r"), "--no-progress"]
    assert main(run) == 2
    assert f"{tmp_path / 'c.yaml'}:2: scheduler: policy 'python:nowhere.py:score': no such file: " \
           "nowhere.py" in capsys.readouterr().err
    (tmp_path / "p.py").write_text("def score(c):\n    return 0\n")
    assert main(run + ["--node-policy", f"python:{tmp_path / 'p.py'}:rank"]) == 2
    assert capsys.readouterr().err.startswith("hamisim: --node-policy: node policy ")
    assert not (tmp_path / "r").exists()


def test_the_planning_what_ifs_refuse_policies_they_do_not_place_with(tmp_path):
    from hamisim.io.initialstate import InitialState
    from hamisim.studies.defrag import plan_defrag
    from hamisim.studies.scaleup import plan_scaleup
    for policy in ("fgd", f"python:{EXAMPLE}:score"):
        c = cluster(policy, nodes=1)
        with pytest.raises(HamisimError, match="under HAMi's own policies"):
            plan_defrag(c, InitialState([]), free_cards=1)
        with pytest.raises(HamisimError, match="under HAMi's own policies"):
            plan_scaleup(c, [], [])


def test_a_users_card_policy_orders_the_cards_fit_tries(tmp_path):
    # the highest index first: Fit takes the last cards, whatever HAMi's order
    (tmp_path / "last.py").write_text("def score(card, request):\n    return card.index\n")
    c = cluster("binpack", nodes=1)
    c = Cluster(c.nodes, SchedulerConfig(gpu_scheduler_policy=f"python:{tmp_path}/last.py:score"))
    sched = make_scheduler(c, backend="reference")
    assert sched.schedule(gpu_pod("a", 1, 1000)).devices == "G0-3,NVIDIA,1000,0:;"
    assert sched.schedule(gpu_pod("b", 2, 9500)).devices == \
        "G0-2,NVIDIA,9500,0:G0-1,NVIDIA,9500,0:;"       # G0-3 has 9000 MiB free
    # a pod naming HAMi's binpack keeps HAMi's order (the fullest card first)
    d = sched.schedule(gpu_pod("c", 1, 500, **{"hami.io/gpu-scheduler-policy": "binpack"}))
    assert d.devices.startswith("G0-")
    with pytest.raises(HamisimError, match="add --backend reference"):
        make_scheduler(c, backend="kernel")
    from hamisim.sim.kernel import KernelScheduler
    plain = KernelScheduler(cluster("binpack", nodes=1))
    with pytest.raises(HamisimError, match="runs on the readable backend"):
        plain.schedule(gpu_pod("d", 1, 500, **{
            "hami.io/gpu-scheduler-policy": f"python:{tmp_path}/last.py:score"}))


def test_a_scenario_with_a_python_policy_takes_the_readable_backend(tmp_path, capsys):
    (tmp_path / "last.py").write_text("def score(card, request):\n    return card.index\n")
    (tmp_path / "s.yaml").write_text(textwrap.dedent(f"""\
        scheduler: {{gpu_scheduler_policy: "python:{tmp_path}/last.py:score"}}
        nodes:
          - name: n1
            devices:
              - {{id: GPU-A, devmem: 15360, type: NVIDIA-Tesla T4}}
              - {{id: GPU-B, devmem: 15360, type: NVIDIA-Tesla T4}}
        steps:
          - create: {{name: p, gpu: 1, gpumem: 1000}}
          - expect: {{p: GPU-B}}
        """))
    assert main(["scenario", str(tmp_path / "s.yaml")]) == 0
    capsys.readouterr()
    assert main(["scenario", str(tmp_path / "s.yaml"), "--backend", "kernel"]) == 2
    assert "add --backend reference" in capsys.readouterr().err


def test_the_card_example_spreads_over_empty_cards():
    c = cluster("binpack", nodes=1)
    c = Cluster(c.nodes, SchedulerConfig(
        gpu_scheduler_policy=f"python:{EXAMPLE.with_name('coolest_card.py')}:score"))
    sched = make_scheduler(c, backend="reference")
    cards = [sched.schedule(gpu_pod(f"p{k}", 1, 2000)).devices.split(",")[0] for k in range(5)]
    assert cards == ["G0-0", "G0-1", "G0-2", "G0-3", "G0-0"]


# -- vectorised node policies (one call per attempt, both backends) ----------
POLICIES = Path(__file__).parent / "data" / "policies" / "vector_rank.py"


def _decide(sched, pod, tie_draw, **kube):
    try:
        return sched.schedule(pod, tie_draw, **kube), None
    except ValueError as exc:
        return None, (type(exc), str(exc))


@settings(max_examples=120, deadline=None, suppress_health_check=SLOW)
@given(cluster=clusters(min_nodes=3, max_nodes=6, max_cards=6),
       name=st.sampled_from(["record", "record", "mixed"]),
       data=st.data())
def test_a_vectorised_policy_decides_alike_on_the_kernel_and_the_reference(cluster, name,
                                                                           data):
    """The kernel's rows (filled in C) equal the reference's (built from its
    objects), column for column, and both backends take the same decisions,
    ties and random tie-breaks included; ``record``'s per-candidate twin on
    the reference (one call per node) takes them too."""
    import dataclasses

    policy = f"python:{POLICIES}:{name}"
    cluster = dataclasses.replace(cluster, scheduler=dataclasses.replace(
        cluster.scheduler, node_scheduler_policy=policy))
    ref, ker = make_scheduler(cluster, "reference"), make_scheduler(cluster, "kernel")
    each = make_scheduler(dataclasses.replace(cluster, scheduler=dataclasses.replace(
        cluster.scheduler, node_scheduler_policy=f"python:{POLICIES}:ties_each")),
        "reference") if name == "record" else None
    assert ker.backend == "kernel" and ker.ranker is not None
    seen = load_node_policy(f"python:{POLICIES}:record").__globals__["SEEN"]
    card_ids = [c.id for n in cluster.nodes for c in n.cards]
    names: list[str] = []
    for step in range(data.draw(st.integers(1, 20), label="steps")):
        if names and data.draw(st.integers(0, 4)) == 0:
            gone = data.draw(st.sampled_from(names))
            for sched in (ref, ker, each):
                if sched is not None:
                    sched.delete(gone)
            continue
        if data.draw(st.integers(0, 2)):
            # a plain GPU pod, most of which fit somewhere: rows to rank
            pod = gpu_pod(f"pod-{step}", data.draw(st.integers(1, 2)),
                          data.draw(st.sampled_from([500, 1000, 4000, 8000])),
                          **data.draw(st.sampled_from([{}, {}, {"nvidia.com/numa-bind": "true"},
                                                       {"hami.io/node-scheduler-policy":
                                                        "spread"}])))
        else:
            pod = data.draw(pods(f"pod-{step}", card_ids, what_ifs=True), label="pod")
        tie_draw = data.draw(st.none() | st.floats(0, 1, exclude_max=True), label="tie")
        kube = {}
        if data.draw(st.integers(0, 4)) == 0:
            kube["nominated"] = {data.draw(st.integers(0, len(cluster.nodes) - 1)): (
                data.draw(st.sampled_from([0, 500, 4000])), data.draw(st.sampled_from([0, 1024])))}
        seen.clear()
        want = _decide(ref, pod, tie_draw, **kube)
        want_seen, seen[:] = list(seen), []
        got = _decide(ker, pod, tie_draw, **kube)
        assert got == want, (step, pod)
        if each is not None:
            assert _decide(each, pod, tie_draw, **kube) == want, (step, pod)
        assert len(seen) == len(want_seen), step
        for a, b in zip(seen, want_seen):
            for col in a:
                np.testing.assert_array_equal(a[col], b[col], err_msg=f"{step} {col}")
        if want[0] is not None and want[0].bound:
            names.append(pod.name)
            event("ranked" if want_seen else "bound without the policy")
            if want_seen and len(want_seen[0]["index"]) > 1:
                event("several fitting nodes")
                if tie_draw is not None and cluster.scheduler.node_tie_break == "random":
                    event("several fitting nodes, random tie-break")
        assert ker.usage_by_card() == ref.usage_by_card(), step
        assert ker.next_start == ref.next_start, step


def test_the_worked_example_ranks_alike_vectorised_and_per_candidate():
    # score (vectorised) on the kernel and on the reference, score_each (one call
    # per node) on the reference: the same node for every pod of a mixed sequence
    runs = [make_scheduler(cluster(f"python:{EXAMPLE}:{fn}", nodes=6), backend)
            for fn, backend in (("score", "kernel"), ("score", "reference"),
                                ("score_each", "reference"))]
    assert runs[0].backend == "kernel"
    chosen = []
    for k, (gpus, mem) in enumerate([(2, 9000), (1, 3000), (2, 4000), (1, 9500), (3, 2000),
                                     (2, 6000), (1, 1000), (4, 3000)] * 2):
        pod = gpu_pod(f"p{k}", gpus, mem)
        nodes = {s.schedule(pod).node for s in runs}
        assert len(nodes) == 1, (k, nodes)
        chosen.append(nodes.pop())
    assert len(set(chosen)) > 1


def test_a_vectorised_policy_runs_on_the_kernel_by_default(tmp_path, capsys):
    _small_inputs(tmp_path, 3)
    (tmp_path / "first.py").write_text(
        "import numpy as np\nfrom hamisim.research.plugins import vectorised\n\n"
        "@vectorised\ndef score(nodes):\n    return -nodes.index\n\n"
        "@vectorised\ndef nan(nodes):\n    return np.full(len(nodes), np.nan)\n\n"
        "@vectorised\ndef short(nodes):\n    return [1.0]\n")
    args = ["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--node-policy",
            f"python:{tmp_path / 'first.py'}:score", "--out", str(tmp_path / "r"),
            "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "readable backend" not in out and f"node=python:{tmp_path / 'first.py'}:score" in out
    import pandas as pd
    assert set(pd.read_parquet(tmp_path / "r" / "pods.parquet").node) == {"t4-0"}  # lowest index
    for fn, problem in (("nan", "scored node t4-0 NaN"), ("short", r"returned \(1,\) scores")):
        args[4] = f"python:{tmp_path / 'first.py'}:{fn}"
        for backend in ("kernel", "reference"):
            assert main(args + ["--backend", backend]) == 2
            assert re.search(problem, capsys.readouterr().err), (fn, backend)
