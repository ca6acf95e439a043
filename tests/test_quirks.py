"""HAMi v2.10's quirks that move a run's figures, measured (summary ``hami_quirks``).

The init-container accounting (HAMi issue #2965): on a node whose cards are not
typed exactly ``NVIDIA``, HAMi books a pod behind a GPU-less init container below
what it uses, and drops its app container's usage once the init container is done.
Both engines measure what the pods truly use (every container counted as what it
is, ``init_container_usage: corrected``) beyond HAMi's booking, per card.
"""
from __future__ import annotations

import random

import pytest

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.pods import Container, Pod
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.workload import Trace, TracePod

WHOLE = Container({"nvidia.com/gpu": 1})      # the webhook adds gpucores 100, the whole memory
ENGINES = ["python", "compiled"]


def _cluster(n_cards: int = 1, usage: str = "hami-v2.10", policy: str = "binpack",
             card_type: str = "NVIDIA-Tesla T4", nodes: int = 1) -> Cluster:
    return Cluster(tuple(
        Node(f"n{i}", tuple(Card(f"GPU-{i}-{k}", k, devmem=15360, type=card_type)
                            for k in range(n_cards)), cpu_milli=64000)
        for i in range(nodes)),
        SchedulerConfig(gpu_scheduler_policy=policy, init_container_usage=usage))


def _run(cluster: Cluster, pods: list[TracePod], engine: str):
    res = simulate(cluster, Trace.from_pods("t", pods), EngineConfig(engine=engine))
    assert res.engine == engine
    return res.summary["hami_quirks"]["init_container_usage"]


def _two_on_one_card() -> list[TracePod]:
    # first holds the card 0..1000 s, its GPU-less init container done at 10 s;
    # second (100 % cores too) waits from 1 s, binds at 10 s, leaves at 110 s
    first = Pod("first", (WHOLE,), init_containers=(Container(),), init_duration=10.0)
    return [TracePod(first, 0.0, 1000.0), TracePod(Pod("second", (WHOLE,)), 1.0, 100.0)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_card_double_booked_by_hand(engine):
    """Two whole-card pods on one T4 for 100 s: 200 % of its cores and twice its
    15360 MiB, 2 of its 10 slots (no slot over-commit)."""
    q = _run(_cluster(), _two_on_one_card(), engine)
    assert q["pods_affected"] == 1 and q["cards_affected"] == 1
    assert q["cards_overcommitted"] == q["peak_cards_overcommitted"] == 1
    assert q["peak_cores_over"] == 100 and q["peak_memory_over_mib"] == 15360
    assert q["peak_slots_over"] == 0 and q["slot_seconds_over"] == 0.0
    assert q["card_seconds_overcommitted"] == 100.0
    assert q["core_seconds_over"] == 100.0 * 100
    assert q["memory_mib_seconds_over"] == 15360.0 * 100


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("usage, card_type", [("corrected", "NVIDIA-Tesla T4"),
                                              ("hami-v2.10", "NVIDIA")])
def test_no_deficit_where_hami_counts_right(engine, usage, card_type):
    """The corrected accounting, and HAMi's own on cards typed exactly ``NVIDIA``
    (its list keeps GPU-less containers): nothing affected, nothing over."""
    q = _run(_cluster(usage=usage, card_type=card_type), _two_on_one_card(), engine)
    assert q["pods_affected"] == q["cards_affected"] == q["cards_overcommitted"] == 0
    assert q["card_seconds_overcommitted"] == 0.0


@pytest.mark.parametrize("engine", ENGINES)
def test_slots_over_commit_by_hand(engine):
    """A card of 2 slots: two pods each behind a GPU-less init container, then a
    third; HAMi counts 1 slot once both are done, so 3 tenants share 2 slots."""
    cluster = Cluster((Node("n", (Card("GPU-0", 0, devmem=15360, count=2,
                                       type="NVIDIA-Tesla T4"),), cpu_milli=64000),),
                      SchedulerConfig(gpu_scheduler_policy="binpack"))
    small = Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000,
                       "nvidia.com/gpucores": 10})
    pods = [TracePod(Pod(f"init{i}", (small,), init_containers=(Container(),),
                         init_duration=5.0), float(i), 1000.0) for i in range(2)]
    pods.append(TracePod(Pod("late", (small, small)), 20.0, 100.0))
    q = _run(cluster, pods, engine)
    # at 20 s HAMi books late's 2 slots (and nothing for the others): 4 tenants, 2 slots
    assert q["pods_affected"] == 2
    assert q["peak_slots_over"] == 2
    assert q["slot_seconds_over"] == 2 * 100.0
    assert q["peak_cores_over"] == 0 and q["peak_memory_over_mib"] == 0


def _random_workload(seed: int) -> list[TracePod]:
    rng = random.Random(seed)
    out = []
    for i in range(160):
        n_app = rng.choice([1, 1, 2, 3])
        apps = tuple(Container({"nvidia.com/gpu": rng.choice([1, 1, 2]),
                                "nvidia.com/gpumem": rng.choice([1000, 3000, 6000]),
                                "nvidia.com/gpucores": rng.choice([0, 20, 50, 100])})
                     for _ in range(n_app))
        inits = rng.choice([(), (Container(),), (Container(), Container()),
                            (Container({"nvidia.com/gpu": 1,
                                        "nvidia.com/gpumem": 2000}), Container())])
        done = rng.choice([None, 5.0, 30.0]) if inits else None
        out.append(TracePod(Pod(f"p{i}", apps, init_containers=inits, init_duration=done),
                            rng.uniform(0, 600), rng.uniform(20, 400)))
    return sorted(out, key=lambda p: p.arrival)


@pytest.mark.parametrize("policy, defrag", [("binpack", None), ("spread", None),
                                            ("spread", 50.0)])
def test_both_engines_measure_alike(policy, defrag):
    """A mixed workload (GPU-less and GPU init containers, several app containers
    on one card, init containers done or never; the defragmenter moving pods whose
    init containers still run): the same figures, value for value."""
    cluster = _cluster(n_cards=4, policy=policy, nodes=3)
    trace = Trace.from_pods("t", _random_workload(7 if defrag is None else 11))
    figures = []
    for engine in ENGINES:
        res = simulate(cluster, trace, EngineConfig(engine=engine, defrag_interval=defrag))
        assert res.engine == engine
        assert res.summary.get("defrag_moves", 0) > 0 or defrag is None
        figures.append(res.summary["hami_quirks"]["init_container_usage"])
    assert figures[0] == figures[1]
    assert figures[0]["pods_affected"] > 0 and figures[0]["cards_overcommitted"] > 0


# -- the other quirks, read off the pods as run ---------------------------------

def test_misread_policies_and_cores_above_100_count_their_pods():
    from hamisim.hami.quirks import quirk_lines, trace_quirks
    plain = Pod("plain", (WHOLE,))
    packed = Pod("packed", (WHOLE,), annotations={"hami.io/gpu-scheduler-policy": "pack"})
    ranked = Pod("ranked", (WHOLE,), annotations={"hami.io/node-scheduler-policy": "bin-pack"})
    greedy = Pod("greedy", (Container({"nvidia.com/gpu": 2, "nvidia.com/gpucores": 150}),))
    reserve = Pod("reserve", (WHOLE,),
                  annotations={"hami.io/gpu-scheduler-policy": "mutex-reserve"})
    pods = [TracePod(p, float(i), 10.0) for i, p in enumerate(
        [plain, packed, packed, ranked, greedy, greedy, greedy, reserve])]
    # each TracePod of the same Pod shares a template: the counts are per pod
    q = trace_quirks(Trace.from_pods("t", pods), _cluster())
    assert q["policy_read_as"]["pods_affected"] == 3
    by = {(e["kind"], e["policy"]): e for e in q["policy_read_as"]["policies"]}
    assert set(by) == {("card", "pack"), ("node", "bin-pack")}    # mutex-reserve: a what-if
    assert by[("card", "pack")]["pods"] == 2 and "like spread" in by[("card", "pack")]["hami_reads"]
    assert "like binpack" in by[("node", "bin-pack")]["hami_reads"]
    assert q["gpucores_above_100"] == {"pods_affected": 3,
                                       "values": [{"gpucores": 150, "pods": 3}]}
    lines = quirk_lines(q)
    assert any("'pack' of 2 pods" in x for x in lines)
    assert any("gpucores above 100" in x and "150 (3 pods)" in x for x in lines)
    assert quirk_lines({"policy_read_as": {"pods_affected": 0, "policies": []},
                        "gpucores_above_100": {"pods_affected": 0, "values": []}}) == []


# -- every output says so --------------------------------------------------------

_CLUSTER = """scheduler: {gpu_scheduler_policy: binpack}
nodes:
  - name_prefix: t4
    replicas: 1
    gpus: 1
    cpu_milli: 64000
    memory_mib: 262144
    card: {type: NVIDIA-Tesla-T4, devmem: 15360}
"""
_TRACE = (
    '{"name": "first", "arrival": 0, "duration": 1000, "gpu": 1, "gpucores": 100, '
    '"init_containers": [{}], "init_duration": 10}\n'
    '{"name": "second", "arrival": 1, "duration": 100, "gpu": 1, "gpucores": 100}\n')


@pytest.fixture
def files(tmp_path):
    """A folder holding cluster.yaml (one T4) and trace.jsonl (_two_on_one_card's pods)."""
    for name, text in (("cluster.yaml", _CLUSTER), ("trace.jsonl", _TRACE)):
        (tmp_path / name).write_text(text)
    return tmp_path


def test_run_reports_the_double_booking_everywhere(files, capsys):
    import json

    from hamisim.cli import main
    args = ["run", str(files / "cluster.yaml"), str(files / "trace.jsonl")]
    assert main([*args, "--out", str(files / "run")]) == 0
    said = capsys.readouterr().out
    assert "HAMi quirks that moved this run" in said
    assert "1 pods booked below what they use, on 1 cards" in said
    assert "the most on one card: +100 % cores, +15,360 MiB\n" in said
    assert "--init-container-usage corrected" in said
    r = json.loads((files / "run" / "summary.json").read_text())["results"]
    q = r["hami_quirks"]["init_container_usage"]
    assert q["accounting"] == "hami-v2.10" and q["pods_affected"] == 1
    assert q["card_seconds_overcommitted"] == 100.0 and q["core_seconds_over"] == 10000.0
    html = (files / "run" / "report.html").read_text()
    assert "<h2>HAMi quirks that moved this run</h2>" in html and "+100 % cores" in html
    # the corrected run: second waits for the card; nothing to report
    assert main([*args, "--out", str(files / "fixed"), "--init-container-usage",
                 "corrected"]) == 0
    assert "HAMi quirks" not in capsys.readouterr().out
    r = json.loads((files / "fixed" / "summary.json").read_text())["results"]
    assert r["hami_quirks"]["init_container_usage"]["accounting"] == "corrected"
    assert r["hami_quirks"]["init_container_usage"]["pods_affected"] == 0
    assert r["pending_max_s"] > 900
    assert "HAMi quirks" not in (files / "fixed" / "report.html").read_text()


def test_compare_puts_the_double_booking_beside_the_corrected_run(files, capsys):
    import pandas as pd

    from hamisim.cli import main
    assert main(["compare", str(files / "cluster.yaml"), str(files / "trace.jsonl"), "--out",
                 str(files / "cmp"), "--format", "csv", "--init-container-usage",
                 "hami-v2.10,corrected"]) == 0
    said = capsys.readouterr().out
    assert "init=hami-v2.10 seed 0: 1 pods booked below what they use, 1 cards" in said
    table = pd.read_csv(files / "cmp" / "compare.csv")
    assert table["init_pods_underbooked"].tolist() == [1, 0]
    assert table["overcommitted_card_hours"].tolist() == pytest.approx([100 / 3600, 0.0])


def test_the_readme_example_prints_what_the_readme_shows(tmp_path, capsys):
    import re
    from pathlib import Path

    from hamisim.cli import main
    root = Path(__file__).resolve().parent.parent
    text = (root / "README.md").read_text(encoding="utf-8")
    part = text[text.index("**HAMi quirks that moved this run**"):]
    command, shown = re.findall(r"```\n\$ (hamisim run .*?)\n(.*?)```", part, re.S)[0]
    argv = command.split()[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "ic")
    argv = [str(root / a) if a.startswith("workloads/") else a for a in argv]
    assert main([*argv, "--no-progress"]) == 0
    printed = capsys.readouterr().out.splitlines()
    for line in shown.strip("\n").splitlines():
        assert line in printed


def test_memory_a_quota_does_not_see_counts_its_pods():
    """HAMi's webhook counts a percentage or whole-card memory request as 0 MiB
    against the namespace's memory quota: those pods, in namespaces with one."""
    from dataclasses import replace

    from hamisim.cluster import Quota
    from hamisim.hami.quirks import quirk_lines, trace_quirks
    cluster = replace(_cluster(), quotas={"team-a": Quota(memory=40000),
                                          "team-b": Quota(cores=200)})
    mib = Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000})
    pct = Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 50})
    pods = [Pod("whole-a", (WHOLE,), namespace="team-a"),
            Pod("pct-a", (pct,), namespace="team-a"),
            Pod("mib-a", (mib,), namespace="team-a"),            # counted: not a quirk
            Pod("whole-b", (WHOLE,), namespace="team-b"),        # no memory quota there
            Pod("whole-default", (WHOLE,))]
    q = trace_quirks(Trace.from_pods("t", [TracePod(p, 0.0, 1.0) for p in pods]), cluster)
    assert q["quota_memory_uncounted"] == {"pods_affected": 2,
                                           "namespaces": [{"namespace": "team-a", "pods": 2}]}
    assert any("0 MiB): 2 pods (team-a (2))" in x for x in quirk_lines(q))
