"""hamisim defrag: the fewest pod moves that free cards or make room for a pod.

A what-if, not HAMi behaviour. A move evicts a running pod and lets HAMi place
it again; the search's answer must be as short as the shortest plan a brute
force finds (every sequence of up to three distinct pods, each replayed on a
fresh scheduler), its after-figures must be those of the replay, and the
greedy fallback must report the length it ruled out.
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from hamisim.cli import main
from hamisim.io.clusterfile import load_cluster
from hamisim.io.initialstate import load_state
from hamisim.io.traces import read_trace
from hamisim.studies.defrag import _World, plan_defrag, pod_of

EXAMPLE = Path(__file__).parents[1] / "workloads" / "defrag"


@pytest.fixture(scope="module")
def example():
    cluster = load_cluster(EXAMPLE / "cluster.yaml")
    return cluster, load_state(EXAMPLE / "state.yaml", cluster)


def shortest_by_brute_force(cluster, state, reached, longest=3):
    names = sorted(p.name for p in state.pods)
    for k in range(longest + 1):
        for seq in itertools.permutations(names, k):
            world = _World(cluster, state)
            if all(world.move(n) is not None for n in seq) and reached(world):
                return k
    return None


@pytest.mark.parametrize("goal", ["free 1", "free 2", "free 3", "fit"])
def test_the_plan_is_as_short_as_brute_force_finds(example, goal):
    cluster, state = example
    zero = _World(cluster, state).zero_tenant()
    if goal == "fit":
        pod = read_trace(EXAMPLE / "pending.csv").trace_pod(0).pod
        plan = plan_defrag(cluster, state, fit=pod)
        want = shortest_by_brute_force(cluster, state, lambda w: w.fits(pod))
    else:
        n = int(goal.split()[1])
        plan = plan_defrag(cluster, state, free_cards=n)
        want = shortest_by_brute_force(cluster, state, lambda w: w.zero_tenant() >= zero + n)
    assert plan.reached and plan.method == "exact"
    assert len(plan.moves) == plan.shortest_possible == want
    assert plan.zero_tenant_before == zero
    if goal != "fit":
        assert plan.zero_tenant_after >= zero + int(goal.split()[1])
    else:       # over the pending pod's shape too, the moves lower FGD fragmentation
        assert 0 < plan.frag_after < plan.frag_before


def test_a_budget_frees_as_many_cards_as_its_moves_can(example):
    cluster, state = example
    plan = plan_defrag(cluster, state, budget=2)
    best = max(_World(cluster, state).zero_tenant() if not seq else _after(cluster, state, seq)
               for k in range(3) for seq in itertools.permutations(
                   sorted(p.name for p in state.pods), k))
    assert plan.zero_tenant_after == best and len(plan.moves) <= 2


def _after(cluster, state, seq):
    world = _World(cluster, state)
    return world.zero_tenant() if all(world.move(n) is not None for n in seq) else -1


def test_the_greedy_fallback_says_what_it_ruled_out(example):
    cluster, state = example
    plan = plan_defrag(cluster, state, free_cards=3, max_evaluations=10)
    assert plan.method == "greedy" and plan.shortest_possible == 2
    assert plan.reached and len(plan.moves) >= 3


def test_a_running_pod_asks_for_what_it_holds(example):
    _, state = example
    pod = pod_of(next(p for p in state.pods if p.name == "serve-3"))
    (c,) = pod.containers
    assert c.limits == {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 5000,
                        "nvidia.com/gpucores": 20}


def test_cli(capsys):
    args = ["defrag", str(EXAMPLE / "cluster.yaml"), str(EXAMPLE / "state.yaml")]
    assert main(args + ["--fit", str(EXAMPLE / "pending.csv")]) == 0
    out = capsys.readouterr().out
    assert "a what-if, not HAMi behaviour" in out and "goal reached: shortest possible" in out
    assert main(args + ["--free-cards", "8"]) == 1
    out = capsys.readouterr().out
    assert "NOT reached" in out and "--max-moves" in out and "--max-evaluations" not in out
    # the evaluation limit, not the move limit, stopped this search: the text names it,
    # and the moves shown are marked as not reaching the goal
    assert main(args + ["--free-cards", "8", "--max-evaluations", "5"]) == 1
    out = capsys.readouterr().out
    assert "--max-evaluations 5 bounds the search" in out and "--max-moves" not in out
    assert "does not reach the goal" in out.split("  1. move")[0]
    assert main(args + ["--budget", "1", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["moves"]) == 1
    assert main(args) == 2
    assert "defrag needs a goal" in capsys.readouterr().err


def test_a_runs_state_at_a_time(tmp_path, capsys):
    import warnings

    import pandas as pd
    workload = Path(__file__).parents[1] / "workloads" / "mutex-reserve"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", str(workload / "cluster.yaml"), str(workload / "trace-mutex.csv"),
                     "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    from hamisim.studies.defrag import state_at
    cluster, state, requests = state_at(tmp_path / "run", 7200.0)
    pods = pd.read_parquet(tmp_path / "run" / "pods.parquet")
    running = pods[(pods["bind"] <= 7200) & ~(pods["departure"] <= 7200)]
    assert sorted(p.name for p in state.pods) == sorted(running["pod"])
    # the requests are the trace's: the exclusive pods keep their mutex policy
    exclusive = [n for n in requests if n.startswith("exclusive")]
    assert exclusive and all(requests[n].annotations == {"hami.io/gpu-scheduler-policy": "mutex"}
                             for n in exclusive)
    capsys.readouterr()
    assert main(["defrag", "--run", str(tmp_path / "run"), "--at", "7200",
                 "--free-cards", "1"]) == 0
    assert "goal reached: shortest possible" in capsys.readouterr().out
    assert main(["defrag", "--run", str(tmp_path / "run")]) == 2


# -- the periodic defragmenter in a replay (EngineConfig.defrag_interval) --------------
def scattered_trace():
    """Sixteen 7000 MiB pods pair up on the eight T4 cards (card binpack); the odd
    ones leave at 50 s, one pod per card stays; a 2-card pod needing two empty
    cards arrives at 100 s."""
    from hamisim import Container, Pod
    from hamisim.workload import Trace, TracePod
    share = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 7000, "nvidia.com/gpucores": 20}
    pods = [TracePod(Pod(f"s{k:02d}", (Container(share),)), float(k),
                     5000.0 if k % 2 == 0 else 50.0 - k) for k in range(16)]
    whole = {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 15000, "nvidia.com/gpucores": 100}
    pods.append(TracePod(Pod("train", (Container(whole),)), 100.0, 600.0))
    return Trace.from_pods("scattered", pods)


@pytest.mark.parametrize("backend", ["kernel", "reference"])
def test_the_defragmenter_makes_room_for_a_whole_card_pod(example, backend):
    from hamisim.sim.engine import EngineConfig, simulate
    cluster, _ = example
    plain = simulate(cluster, scattered_trace(), EngineConfig(backend=backend, progress=False))
    moved = simulate(cluster, scattered_trace(), EngineConfig(
        backend=backend, progress=False, defrag_interval=300.0, defrag_moves=2))
    assert plain.pods.set_index("pod").loc["train", "bind"] == 5010.0   # waits for s00..
    assert moved.pods.set_index("pod").loc["train", "bind"] == 300.0
    moves = moved.events[moved.events["event"] == "move"]
    assert list(moves["time"][:2]) == [300.0, 300.0] and moved.summary["defrag_moves"] == len(
        moves)
    assert moves["message"].str.startswith("defragmenter (a hamisim what-if): from ").all()
    assert "defrag_moves" not in plain.summary


def test_both_backends_and_both_engines_move_the_same_pods(example):
    from hamisim.sim.engine import EngineConfig, simulate
    cluster, _ = example
    runs = [simulate(cluster, scattered_trace(), EngineConfig(
        backend=b, engine=e, progress=False, defrag_interval=120.0, defrag_moves=3))
        for b, e in (("kernel", "compiled"), ("kernel", "python"), ("reference", "auto"))]
    assert (runs[0].events.event == "move").any()
    assert runs[0].events.equals(runs[1].events)
    assert runs[0].events.equals(runs[2].events)
    assert runs[0].pods.equals(runs[1].pods)


def test_the_defragmenter_is_refused_where_it_cannot_run(example, tmp_path, capsys):
    from hamisim.errors import HamisimError
    from hamisim.sim.compiled import unsupported
    from hamisim.sim.engine import EngineConfig, simulate
    cluster, _ = example
    # the compiled engine runs it; --check does not follow its moves
    assert unsupported(cluster, EngineConfig(defrag_interval=60.0), scattered_trace(), ()) is None
    with pytest.raises(HamisimError, match="an interval > 0"):
        simulate(cluster, scattered_trace(), EngineConfig(defrag_interval=0.0, engine="compiled"))
    with pytest.raises(HamisimError, match="--check does not follow"):
        simulate(cluster, scattered_trace(), EngineConfig(defrag_interval=60.0, check=True))
    assert main(["run", str(EXAMPLE / "cluster.yaml"), str(EXAMPLE / "pending.csv"),
                 "--mode", "fill", "--defrag-every", "60", "--out", str(tmp_path / "r")]) == 2
    assert "--defrag-every applies to replay mode" in capsys.readouterr().err


def test_explain_replays_a_run_across_its_moves(tmp_path, capsys):
    import warnings
    workload = Path(__file__).parents[1] / "workloads" / "mutex-reserve"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", str(workload / "cluster.yaml"), str(workload / "trace-mutex.csv"),
                     "--out", str(tmp_path / "run"), "--no-progress", "--defrag-every", "600",
                     "--defrag-moves", "2", "--metrics-out", str(tmp_path / "m.om"),
                     "--metrics-start", "0", "--metrics-interval", "300"]) == 0
    out = capsys.readouterr().out
    assert "defragmenter (what-if, not HAMi)" in out
    notes = json.loads((tmp_path / "run" / "summary.json").read_text())["not_hami"]
    assert notes == ["a defragmenter moves running pods every 600 s (a what-if; HAMi never "
                     "moves a running pod)"]
    import pandas as pd
    events = pd.read_parquet(tmp_path / "run" / "events.parquet")
    # the last attempt after the tenth move: replaying up to it goes across ten moves
    tenth = events.index[events["event"] == "move"][9]
    later = events.loc[tenth:]
    pod = later.loc[later["event"].isin(["bind", "unschedulable"]), "pod"].iloc[-1]
    assert main(["explain", "--run", str(tmp_path / "run"), "--pod", pod]) == 0
    # the metrics file follows every pod to each place it held: its cards without a
    # tenant are the time series' at every sample (the moves change which ones)
    import numpy as np
    ts = pd.read_parquet(tmp_path / "run" / "timeseries.parquet")
    zero: dict[int, float] = {}
    for line in (tmp_path / "m.om").read_text().splitlines():
        if line.startswith("hamisim_gpu_zero_tenant_cards "):
            _, value, stamp = line.rsplit(" ", 2)
            zero[int(stamp)] = float(value)
    grid = np.array(sorted(zero))
    rows = np.searchsorted(ts["time"].to_numpy(), grid, side="right") - 1
    assert len(grid) > 20 and [zero[t] for t in grid] == list(
        ts["hami_gpu_zero_tenant"].to_numpy()[rows])


# -- clusters with MIG cards: pods holding MIG instances stay put ------------------------
MIG_CLUSTER = """\
scheduler:
  gpu_scheduler_policy: binpack
  node_scheduler_policy: spread
nodes:
  - name: t4-0
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name: a100-mig
    gpus: 2
    card: {type: NVIDIA A100-SXM4-40GB, mode: mig}
"""

# four pods of 60 % cores, one per T4 card (two cannot share one), and one pod on a
# 1g.5gb instance of the first A100
MIG_STATE = """\
pods:
  - {name: serve-0, node: t4-0, devices: "GPU-t4-0-0,NVIDIA,3000,60:;"}
  - {name: serve-1, node: t4-0, devices: "GPU-t4-0-1,NVIDIA,4000,60:;"}
  - {name: serve-2, node: t4-0, devices: "GPU-t4-0-2,NVIDIA,2000,60:;"}
  - {name: serve-3, node: t4-0, devices: "GPU-t4-0-3,NVIDIA,5000,60:;"}
  - name: mig-0
    node: a100-mig
    devices: "GPU-a100-mig-0,NVIDIA,4864,15:;"
    mig_allocations: '[{"containerIndex":0,"gpuUUID":"GPU-a100-mig-0","profile":"1g.5gb",
                        "placement":{"start":6,"size":1}}]'
"""


@pytest.fixture(scope="module")
def mig_example(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mig")
    (folder / "cluster.yaml").write_text(MIG_CLUSTER)
    (folder / "state.yaml").write_text(MIG_STATE)
    cluster = load_cluster(folder / "cluster.yaml")
    return folder, cluster, load_state(folder / "state.yaml", cluster)


@pytest.mark.parametrize("goal", [1, 2, 3])
def test_pods_on_mig_cards_stay_and_the_others_move_as_hami_places_them(mig_example, goal):
    from hamisim.hami.reference import ReferenceScheduler
    _, cluster, state = mig_example
    plan = plan_defrag(cluster, state, free_cards=goal)
    assert plan.kept_on_mig == 1 and any("MIG" in n for n in plan.notes)
    assert all(m.pod != "mig-0" for m in plan.moves)
    # as short as every sequence of the pods not on a MIG card allows
    zero = _World(cluster, state).zero_tenant()
    others = sorted(p.name for p in state.pods if p.name != "mig-0")
    want = next((k for k in range(4) for seq in itertools.permutations(others, k)
                 if _after_moves(cluster, state, seq) >= zero + goal), None)
    assert plan.reached == (want is not None)
    if plan.reached:
        assert len(plan.moves) == want and plan.zero_tenant_after >= zero + goal
    # the first moves land on the MIG card (no T4 card has cores left for them), each
    # with the MIG instance HAMi's readable implementation gives it on the same state
    assert plan.moves[0].to_node == "a100-mig"
    ref = ReferenceScheduler(cluster)
    state.adopt_into(ref, cluster)
    world = _World(cluster, state)
    for m in plan.moves:
        ref.delete(m.pod)
        d = ref.schedule(world.pods[m.pod])
        assert world.move(m.pod) is not None
        assert d.containers == world.where[m.pod][1]
        assert all((p.mig is not None) == (m.to_node == "a100-mig") for p in d.containers[0])
        assert m.to_mig == tuple(f"{p.mig[0]}@{p.uuid}:{p.mig[1]}" for p in d.containers[0]
                                 if p.mig is not None)


def _after_moves(cluster, state, seq):
    world = _World(cluster, state)
    return world.zero_tenant() if all(world.move(n) is not None for n in seq) else -1


def test_cli_on_a_mig_cluster_says_how_many_pods_it_kept(mig_example, capsys):
    folder, _, _ = mig_example
    args = ["defrag", str(folder / "cluster.yaml"), str(folder / "state.yaml")]
    assert main(args + ["--free-cards", "2"]) == 0
    out = capsys.readouterr().out
    assert "goal reached: shortest possible" in out
    assert "1 pod holding a MIG instance kept where it is" in out
    assert "-> a100-mig GPU-a100-mig-0 (MIG 1g.5gb@GPU-a100-mig-0:" in out
    assert main(args + ["--free-cards", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kept_on_mig"] == 1


def test_a_runs_state_on_a_mig_cluster_keeps_its_mig_instances(mig_example, tmp_path, capsys):
    import pandas as pd

    from hamisim.studies.defrag import state_at
    folder, _, _ = mig_example
    # 3000 MiB at 60 % cores: four fill the T4 cards, the next ones get MIG instances
    (tmp_path / "trace.csv").write_text("name,arrival,duration,gpu,gpumem,gpucores\n" + "".join(
        f"p{k},{k},{100 - k},1,3000,60\n" for k in range(7)))
    assert main(["run", str(folder / "cluster.yaml"), str(tmp_path / "trace.csv"),
                 "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    table = pd.read_parquet(tmp_path / "run" / "pods.parquet").set_index("pod")
    on_mig = set(table.index[table["mig_allocations"].notna()])
    assert on_mig
    _usage_is_the_runs(tmp_path / "run", [3.5, 10.0])
    cluster, state, _ = state_at(tmp_path / "run", 10.0)
    for p in state.pods:
        migs = [k.mig for picks in p.containers for k in picks]
        assert all(m is not None for m in migs) if p.name in on_mig else migs == [None]
        if p.name in on_mig:
            entry = json.loads(table.loc[p.name, "mig_allocations"])[0]
            assert migs[0] == (entry["profile"], entry["placement"]["start"],
                               entry["placement"]["size"])
    capsys.readouterr()
    assert main(["defrag", "--run", str(tmp_path / "run"), "--at", "10", "--budget", "1",
                 "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["kept_on_mig"] == len(on_mig)
    assert not {m["pod"] for m in plan["moves"]} & on_mig


def _usage_is_the_runs(folder, times):
    """At each time, the cards' usage of state_at is the one the run's time series
    records then (cards with no tenant, memory, cores)."""
    import pandas as pd

    from hamisim.studies.defrag import state_at
    ts = pd.read_parquet(folder / "timeseries.parquet")
    for t in times:
        cluster, state, _ = state_at(folder, t)
        use = _World(cluster, state).sched.usage_by_card().values()
        row = ts[ts["time"] <= t].iloc[-1]
        assert (sum(1 for u, _, _ in use if u == 0), sum(m for _, m, _ in use) * 2 ** 20,
                sum(c for _, _, c in use)) == (row["hami_gpu_zero_tenant"],
                                               row["hami_gpu_memory_allocated_bytes"],
                                               row["hami_gpu_core_allocated"]), t


def test_a_runs_state_follows_the_defragmenters_moves(tmp_path):
    import warnings

    import pandas as pd
    workload = Path(__file__).parents[1] / "workloads" / "mutex-reserve"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", str(workload / "cluster.yaml"), str(workload / "trace-mutex.csv"),
                     "--out", str(tmp_path / "run"), "--no-progress", "--defrag-every", "600",
                     "--defrag-moves", "2"]) == 0
    events = pd.read_parquet(tmp_path / "run" / "events.parquet")
    # just after each of the first rounds: the pods moved there are where the moves put
    # them, not where the pods table leaves them at the end
    rounds = sorted(set(events.loc[events["event"] == "move", "time"]))[:4]
    assert rounds
    _usage_is_the_runs(tmp_path / "run", [t + 1e-6 for t in rounds])


def test_a_runs_state_drops_init_containers_once_done(tmp_path):
    from hamisim import Container, Pod
    from hamisim.io.traces import write_trace
    from hamisim.workload import Trace, TracePod
    (tmp_path / "cluster.yaml").write_text(
        "nodes:\n  - name: t4\n    gpus: 1\n    card: {type: NVIDIA-Tesla T4, devmem: 15360}\n")
    # HAMi drops the first entry of the pod's list when its init container is done: on
    # a T4 node, whose list has no entry for the GPU-less init container, that is the app
    # container's card (HAMi issue #2965), so the card is free for the second pod at 20 s
    whole = Container({"nvidia.com/gpu": 1})
    first = Pod("first", (whole,), init_containers=(Container(),), init_duration=10.0)
    write_trace(Trace.from_pods("init", [TracePod(first, 0.0, 1000.0),
                                         TracePod(Pod("second", (whole,)), 15.0, 100.0)]),
                tmp_path / "trace.jsonl")
    assert main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.jsonl"),
                 "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    _usage_is_the_runs(tmp_path / "run", [5.0, 12.0])


MOVE_ONTO_MIG_CLUSTER = """\
scheduler: {gpu_scheduler_policy: spread}
nodes:
  - name: n
    devices:
      - {id: G0, index: 0, devmem: 40960, type: NVIDIA A100-SXM4-40GB}
      - {id: G1, index: 1, devmem: 40960, type: NVIDIA A100-SXM4-40GB, mode: mig}
"""
# x fills the MIG card until 20 s, so b lands on G0; a then takes an instance on
# G1, and b's own binpack policy moves it next to a at the first round (30 s)
MOVE_ONTO_MIG_TRACE = ("name,arrival,duration,gpu,gpumem,gpucores,gpu_policy\n"
                       "x,0,20,1,39000,0,\nb,1,500,1,4000,0,binpack\na,25,500,1,4000,0,\n")


@pytest.mark.parametrize("engine", ["compiled", "python"])
def test_a_pod_moved_onto_a_mig_card_holds_its_instance(tmp_path, engine):
    """The pods table's mig_allocations follow a move: a pod the defragmenter
    moves from a HAMi-core card onto a MIG card holds a MIG instance there."""
    from hamisim.sim.engine import EngineConfig, simulate
    (tmp_path / "cluster.yaml").write_text(MOVE_ONTO_MIG_CLUSTER)
    (tmp_path / "trace.csv").write_text(MOVE_ONTO_MIG_TRACE)
    run = simulate(load_cluster(str(tmp_path / "cluster.yaml")),
                   read_trace(str(tmp_path / "trace.csv")),
                   EngineConfig(engine=engine, progress=False, defrag_interval=30.0))
    assert run.engine == engine
    moves = run.events[run.events.event == "move"]
    assert list(moves.pod) == ["b"] and moves.devices.iloc[0].startswith("G1,")
    b = run.pods.set_index("pod").loc["b"]
    assert b.devices.startswith("G1,")
    mig = json.loads(b.mig_allocations)
    assert [m["gpuUUID"] for m in mig] == ["G1"]
