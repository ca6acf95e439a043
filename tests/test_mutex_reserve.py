"""The what-if card policy mutex-reserve (HAMi issue #3038; not HAMi behaviour).

HAMi's ``mutex`` asks for a card with no tenant when the pod is placed and
reserves nothing: a later pod of another policy may join the card. Under
``mutex-reserve`` (read as ``mutex``) the card takes no other tenant until the
pod leaves; every other pod's Fit refuses it as ``CardReservedByMutex``. Both
backends agree decision for decision (here, and in the kernel-equals-reference
property test, which draws the token), and the compiled replay engine's runs
are the readable one's.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from hamisim import Card, Cluster, Container, Node, Pod, SchedulerConfig
from hamisim.cli import main
from hamisim.hami.policy import parse_card_policy, policy_problem
from hamisim.hami.reference import ReferenceScheduler
from hamisim.sim.compiled import unsupported
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.sim.kernel import KernelScheduler
from hamisim.workload import Trace, TracePod

BACKENDS = [ReferenceScheduler, KernelScheduler]
WORKLOAD = Path(__file__).parents[1] / "workloads" / "mutex-reserve"


def two_cards(policy: str = "binpack") -> Cluster:
    cards = tuple(Card(c, i, count=10, devmem=1000, devcore=100) for i, c in enumerate("AB"))
    return Cluster((Node("n0", cards),), SchedulerConfig(gpu_scheduler_policy=policy))


def pod(name: str, policy: str | None = None, mem: int = 100) -> Pod:
    ann = {"hami.io/gpu-scheduler-policy": policy} if policy else {}
    return Pod(name, (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": mem}),),
               annotations=ann)


def test_the_token_reads_as_mutex_and_reserves():
    p = parse_card_policy("mutex-reserve,binpack")
    q = parse_card_policy("mutex,binpack")
    assert (p.mode, p.chain, p.mutex, p.reserve) == (q.mode, q.chain, True, True)
    assert parse_card_policy("mutex-reserve").mode == parse_card_policy("mutex").mode
    assert not parse_card_policy("mutex").reserve
    assert "what-if, not HAMi" in policy_problem("mutex-reserve")


def test_a_runs_summary_and_report_name_the_what_if():
    from hamisim.studies.runs import not_hami_notes
    assert not_hami_notes(two_cards("mutex,binpack")) == []          # HAMi's own
    assert not_hami_notes(two_cards("mutex-reserve,binpack")) == [
        "card policy mutex-reserve,binpack: mutex-reserve keeps a card to its pod until it "
        "leaves (a what-if, HAMi issue #3038)"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reserved_card_takes_no_other_tenant_until_its_pod_leaves(backend):
    s = backend(two_cards())
    assert s.schedule(pod("m", "mutex-reserve")).devices == "B,NVIDIA,100,0:;"
    # binpack would put the others on B (it has a tenant); B is reserved
    assert s.schedule(pod("x")).devices == "A,NVIDIA,100,0:;"
    assert s.schedule(pod("y")).devices == "A,NVIDIA,100,0:;"
    d = s.schedule(pod("z", "mutex"))
    assert d.node is None and d.message == (
        "0/1 nodes are available: 1 1/2 CardReservedByMutex, "
        "1/2 ExclusiveDeviceAllocateConflict.")
    s.delete("m")                       # B is free again, and empty
    assert s.schedule(pod("z", "mutex")).devices == "B,NVIDIA,100,0:;"


@pytest.mark.parametrize("backend", BACKENDS)
def test_hamis_mutex_lets_a_later_pod_join(backend):
    s = backend(two_cards())
    assert s.schedule(pod("m", "mutex")).devices == "B,NVIDIA,100,0:;"
    assert s.schedule(pod("x")).devices == "B,NVIDIA,100,0:;"


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_reservation_survives_a_second_adoption(backend):
    # the engine adopts a pod again once its init containers finish
    s = backend(two_cards())
    d = s.schedule(pod("m", "mutex-reserve"))
    s.adopt("m", 0, d.containers)
    assert s.schedule(pod("x")).devices == "A,NVIDIA,100,0:;"


def test_replays_agree_on_both_backends_and_both_engines():
    cluster = two_cards("spread")
    pods = [TracePod(pod(f"p{i}", "mutex-reserve" if i % 3 == 0 else None, 300), 2.0 * i,
                     15.0) for i in range(30)]
    trace = Trace.from_pods("t", pods)
    # the compiled replay engine runs it (the kernel's reserved cards)
    assert unsupported(cluster, EngineConfig(), trace, ()) is None
    runs = [simulate(cluster, trace, EngineConfig(backend=b, engine=e, progress=False))
            for b, e in (("kernel", "compiled"), ("kernel", "python"), ("reference", "auto"))]
    assert runs[0].events.equals(runs[1].events)
    assert runs[0].events.equals(runs[2].events)
    assert "CardReservedByMutex" in " ".join(runs[0].events["message"].dropna())


def shared_exclusive_pods(folder: Path) -> int:
    """Exclusive pods that had another tenant on their card at some time."""
    pods = pd.read_parquet(folder / "pods.parquet")
    pods = pods[pods["bind"].notna()].copy()
    pods["card"] = pods["devices"].str.split(",").str[0]
    pods["end"] = pods["departure"].fillna(float("inf"))
    both = pods.merge(pods, on="card", suffixes=("", "_o"))
    overlap = both[(both["pod"] != both["pod_o"]) & (both["bind_o"] < both["end"])
                   & (both["bind"] < both["end_o"])]
    return overlap.loc[overlap["pod"].str.startswith("exclusive"), "pod"].nunique()


def test_the_bundled_what_if_keeps_exclusive_pods_alone(tmp_path, capsys):
    shared = {}
    for policy in ("mutex", "mutex-reserve"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(["run", str(WORKLOAD / "cluster.yaml"),
                         str(WORKLOAD / f"trace-{policy}.csv"), "--out",
                         str(tmp_path / policy), "--no-progress"]) == 0
        shared[policy] = shared_exclusive_pods(tmp_path / policy)
    assert shared["mutex-reserve"] == 0 and shared["mutex"] > 50, shared
    # explain --run replays the run, reservations included, up to a refused attempt
    events = pd.read_parquet(tmp_path / "mutex-reserve" / "events.parquet")
    refused = events[events["message"].str.contains("CardReservedByMutex", na=False)]
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["explain", "--run", str(tmp_path / "mutex-reserve"), "--pod",
                     refused["pod"].iloc[0]]) == 0
    assert "CardReservedByMutex (held by a mutex-reserve pod until it leaves" in \
        capsys.readouterr().out


@pytest.mark.parametrize("backend", ["kernel", "reference"])
def test_the_reservation_outlives_the_init_containers_in_a_replay(backend):
    """HAMi re-reads the pod once its init containers finish; the what-if
    reservation is the pod's, so its card still takes no other tenant."""
    card = Card("A", 0, count=10, devmem=1000, devcore=100)
    cluster = Cluster((Node("n0", (card,)),), SchedulerConfig(gpu_scheduler_policy="binpack"))
    m = Pod("m", (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 100}),),
            init_containers=(Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 500}),),
            annotations={"hami.io/gpu-scheduler-policy": "mutex-reserve"}, init_duration=1.0)
    trace = Trace.from_pods("t", [TracePod(m, 0.0, 20.0), TracePod(pod("z"), 5.0, 5.0)])
    runs = [simulate(cluster, trace, EngineConfig(backend=backend, engine=e, progress=False))
            for e in ("auto", "python")]
    assert runs[0].events.equals(runs[1].events)
    ev = runs[0].events
    assert ev[(ev.pod == "z") & (ev.event == "bind")].time.tolist() == [20.0]
    assert "CardReservedByMutex" in ev[ev.pod == "z"].message.dropna().iloc[0]


@pytest.mark.parametrize("backend", ["kernel", "reference"])
def test_the_reservation_outlives_init_containers_in_a_scenario_as_in_a_replay(
        tmp_path, backend):
    # HAMi re-reads the pod when its init containers finish; its cards stay reserved
    from hamisim.io.scenariofile import load_scenario
    from hamisim.studies.scenario import run_scenario
    path = tmp_path / "s.yaml"
    path.write_text("""
scheduler: {gpu_scheduler_policy: binpack}
nodes:
  - name: n0
    devices: [{id: A, devmem: 1000, type: NVIDIA}, {id: B, devmem: 1000, type: NVIDIA}]
steps:
  - create:
      name: m
      annotations: {hami.io/gpu-scheduler-policy: mutex-reserve}
      init_containers: [{gpu: 1, gpumem: 100}]
      containers: [{gpu: 1, gpumem: 100}]
      init_duration: 10
  - wait: 10
  - create: {name: x, gpu: 1, gpumem: 100}
""")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scenario = load_scenario(path)
    events = run_scenario(scenario, backend=backend).events
    assert [(e.pod, e.event, e.devices) for e in events] == [
        ("m", "bind", "B,NVIDIA,100,0:;B,NVIDIA,100,0:;"), ("m", "init done", None),
        ("x", "bind", "A,NVIDIA,100,0:;")]
    # the replay engine, which the scenario runs on, places x alike
    m = next(s.pod for s in scenario.steps if getattr(s, "pod", None) is not None)
    trace = Trace.from_pods("t", [TracePod(m, 0.0, 100.0), TracePod(pod("x"), 10.0, 100.0)])
    run = simulate(scenario.cluster, trace, EngineConfig(backend=backend, engine="python",
                                                         progress=False))
    binds = run.events[run.events["event"] == "bind"]
    assert binds.set_index("pod")["devices"].to_dict() == {
        "m": "B,NVIDIA,100,0:;B,NVIDIA,100,0:;", "x": "A,NVIDIA,100,0:;"}
