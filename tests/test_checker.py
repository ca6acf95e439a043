"""The invariant checker (``--check``, ``EngineConfig(check=True)``; hamisim.sim.checker).

It must stay silent on every bundled scenario and on a replay of the bundled
openb workload, and stop a run whose state is corrupted, naming the event.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hamisim.cli import main
from hamisim.cluster import Card, Cluster, Node
from hamisim.hami.decision import Decision, Pick
from hamisim.hami.reference import collapsed_usage
from hamisim.io.bundled import bundled_scenarios
from hamisim.io.scenariofile import load_scenario
from hamisim.pods import GPU, GPUMEM, Container, Pod
from hamisim.sim import engine as engine_mod
from hamisim.sim.checker import EXIT_INVARIANT, Checker, InvariantError, pod_contribution
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.sim.kernel import KernelScheduler
from hamisim.sim.metrics import ClusterMeter
from hamisim.studies.runs import RunSpec, run
from hamisim.studies.scenario import run_scenario
from hamisim.workload import TracePod

CLUSTER = Cluster(nodes=(
    Node("n1", (Card("GPU-A", 0, devmem=16000), Card("GPU-B", 1, devmem=16000)),
         cpu_milli=8000),
    Node("n2", (Card("GPU-C", 0, devmem=16000),), cpu_milli=8000),
))


def pod(name: str, gpus: int = 1, mem: int = 4000, cpu: int = 1000) -> Pod:
    return Pod(name, (Container({GPU: gpus, GPUMEM: mem}),), cpu_milli=cpu)


def workload() -> list[TracePod]:
    """Arrivals that bind, wait, depart and get abandoned."""
    pods = [TracePod(pod(f"p{i}", mem=9000), float(i), duration=5.0) for i in range(8)]
    pods.append(TracePod(pod("big", gpus=3), 2.5, deletion=4.0))     # fits nowhere: abandoned
    pods.append(TracePod(pod("cpu", gpus=0, cpu=500), 3.0, duration=1.0))
    return sorted(pods, key=lambda tp: tp.arrival)


# ---------------------------------------------------------------------------
# silent on correct runs

@pytest.mark.parametrize("backend", ["kernel", "reference"])
@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_every_bundled_scenario_passes_the_checker(name, backend):
    scenario = load_scenario(bundled_scenarios()[name])
    result = run_scenario(scenario, backend=backend, check=True)
    assert result.ok and result.events


def test_a_short_openb_replay_passes_the_checker():
    res = run(RunSpec(n_pods=1500, check=True))
    r = res.summary["results"]
    assert r["pods"] == 1500 and r["bound"] > 0 and r["departed"] > 0
    assert r["pods"] == r["departed"] + r["abandoned"] + r["pending_at_end"] + r["running_at_end"]


@pytest.mark.parametrize("spec", [
    RunSpec(mode="fill", fill_to=40, check=True),
    RunSpec(mode="fill", fill_to=40, node_policy="fgd", check=True),
    RunSpec(n_pods=800, gpu_policy="mutex,binpack,numa", node_policy="spread", retry="none",
            check=True),
], ids=["fill", "fill-fgd", "replay-mutex-no-retry"])
def test_openb_modes_and_policies_pass_the_checker(spec):
    assert run(spec).summary["results"]["bound"] > 0


@pytest.mark.parametrize("backend", ["kernel", "reference"])
def test_replay_with_waits_and_abandons_passes(backend):
    res = simulate(CLUSTER, workload(), EngineConfig(backend=backend, check=True))
    r = res.summary
    assert r["abandoned"] == 1 and r["departed"] == 9 and r["bound"] == 9


def test_a_replay_from_an_imported_cluster_state_passes(tmp_path):
    """Pods adopted from a kubectl dump (an initial state) enter the books too."""
    kube = Path(__file__).resolve().parent.parent / "workloads" / "kubectl-example"
    if not (kube / "nodes.json").exists():
        pytest.skip("no kubectl example")
    from hamisim.io.kubeimport import import_kubectl, write_import
    files = write_import(import_kubectl(kube / "nodes.json", kube / "pods.json"), tmp_path / "i")
    res = run(RunSpec(cluster=str(files["cluster"]), trace=str(files["pending"]),
                      state=str(files["state"]), load=None, check=True))
    assert res.summary["results"].get("initial_pods", 0) > 0


def test_cli_check_flags(tmp_path, capsys):
    cpath, tpath = tmp_path / "c.yaml", tmp_path / "t.csv"
    cpath.write_text("nodes:\n  - name: n1\n    devices:\n"
                     "      - {id: GPU-A, devmem: 16000, type: NVIDIA}\n")
    tpath.write_text("name,arrival,duration,gpu,gpumem\na,0,2,1,9000\nb,1,2,1,9000\n")
    out = tmp_path / "out"
    assert main(["run", str(cpath), str(tpath), "--as-traced", "--check", "--out", str(out),
                 "--format", "csv"]) == 0
    assert main(["compare", str(cpath), str(tpath), "--as-traced", "--check",
                 "--gpu-policy", "binpack", "--gpu-policy", "spread",
                 "--out", str(tmp_path / "cmp"), "--format", "csv"]) == 0
    assert main(["scenario", "mutex-exp1", "--check"]) == 0
    assert (out / "summary.json").exists() and "invariant" not in capsys.readouterr().err


def test_check_off_is_off():
    eng = engine_mod._Engine(CLUSTER, EngineConfig(), ())
    assert EngineConfig().check is False and eng.checker is None


# ---------------------------------------------------------------------------
# corrupted state is caught, with the event named

def _double_counting_meter(monkeypatch):
    original = ClusterMeter.apply_rows

    def apply_rows(self, node, rows, used, mem, cores, cpu_milli=0, sign=1):
        original(self, node, rows, used, mem, cores, cpu_milli, sign)
        if sign > 0:                                     # the bug: GPU usage counted twice
            original(self, node, rows, used, mem, cores, 0, sign)
    monkeypatch.setattr(ClusterMeter, "apply_rows", apply_rows)


def test_a_double_counting_meter_stops_the_run_at_the_first_bind(monkeypatch):
    _double_counting_meter(monkeypatch)
    with pytest.raises(InvariantError) as info:
        simulate(CLUSTER, workload(), EngineConfig(check=True))
    err = info.value
    assert (err.kind, err.pod, err.at) == ("bind", "p0", "t=0 s")
    assert str(err).startswith("invariant violated after the bind event of pod 'p0' at t=0 s: ")
    assert "the metrics meter holds slots 2, memory 18000 MiB" in str(err)
    assert "the bound pods hold slots 1, memory 9000 MiB" in str(err)


def test_without_check_the_same_corruption_goes_unnoticed(monkeypatch):
    _double_counting_meter(monkeypatch)
    simulate(CLUSTER, workload(), EngineConfig(check=False))


def test_cli_exits_3_with_the_event(monkeypatch, tmp_path, capsys):
    _double_counting_meter(monkeypatch)
    cpath, tpath = tmp_path / "c.yaml", tmp_path / "t.csv"
    cpath.write_text("nodes:\n  - name: n1\n    devices:\n"
                     "      - {id: GPU-A, devmem: 16000, type: NVIDIA}\n")
    tpath.write_text("name,arrival,duration,gpu,gpumem\nfirst,2.5,1,1,1000\n")
    out = tmp_path / "out"
    status = main(["run", str(cpath), str(tpath), "--as-traced", "--check", "--out", str(out)])
    err = capsys.readouterr().err
    assert status == EXIT_INVARIANT == 3
    assert err.startswith("hamisim: invariant violated after the bind event of pod 'first' "
                          "at t=2.5 s: card 'GPU-A': the metrics meter holds slots 2")
    assert not out.exists()


def test_a_scheduler_that_forgets_nothing_is_caught_at_the_departure(monkeypatch):
    monkeypatch.setattr(KernelScheduler, "delete", lambda self, name: None)
    with pytest.raises(InvariantError) as info:
        simulate(CLUSTER, workload(), EngineConfig(check=True))
    err = info.value
    assert (err.kind, err.pod, err.at) == ("depart", "p0", "t=5 s")
    assert "the scheduler's cache holds slots 1, memory 9000 MiB" in err.problem
    assert "the bound pods hold slots 0, memory 0 MiB" in err.problem


def test_counters_that_do_not_add_up_are_caught(monkeypatch):
    original = engine_mod._Engine._abandon

    def abandon(self, st, why):
        self.n_abandoned += 1                         # the bug: counted twice
        original(self, st, why)
    monkeypatch.setattr(engine_mod._Engine, "_abandon", abandon)
    with pytest.raises(InvariantError) as info:
        simulate(CLUSTER, workload(), EngineConfig(check=True))
    err = info.value
    assert (err.kind, err.pod, err.at) == ("abandon", "big", "t=4 s")
    assert "arrived 6 != pending 1 + running 4 + departed 0 + abandoned 2" in err.problem


def test_a_decision_on_a_card_of_another_node_is_caught(monkeypatch):
    original = KernelScheduler.schedule

    def schedule(self, p, draw=None):
        d = original(self, p, draw)
        if d.bound and d.node == "n2":
            d = dataclasses.replace(d, node="n1", node_index=0)    # the bug: wrong node
        return d
    monkeypatch.setattr(KernelScheduler, "schedule", schedule)
    with pytest.raises(InvariantError) as info:
        simulate(CLUSTER, workload(), EngineConfig(check=True))
    assert info.value.kind == "bind"
    assert "card 'GPU-C' is not a card of node 'n1'" in info.value.problem


def test_scenario_check_names_the_step(monkeypatch, capsys):
    monkeypatch.setattr(KernelScheduler, "delete", lambda self, name: None)
    scenario = load_scenario(bundled_scenarios()["mutex-exp1"])
    with pytest.raises(InvariantError) as info:
        run_scenario(scenario, check=True)
    assert (info.value.kind, info.value.pod, info.value.at) == ("depart", "plain-1", "step 5")
    assert main(["scenario", "mutex-exp1", "--check"]) == 3
    assert "after the depart event of pod 'plain-1' at step 5" in capsys.readouterr().err
    run_scenario(scenario, check=False)            # unnoticed without the checker


# ---------------------------------------------------------------------------
# the checker's own rules

def one_node_checker() -> Checker:
    return Checker(Cluster(nodes=(Node("n", (Card("G", 0, count=2, devmem=1000, devcore=100),),
                                       cpu_milli=1000),)))


def bind(ck: Checker, name: str, mem: int, cores: int = 0, cpu: int = 0) -> None:
    ck.bind(Pod(name, (Container({GPU: 1}),), cpu_milli=cpu),
            Decision(name, "n", [[Pick("G", mem, cores)]], node_index=0))


@pytest.mark.parametrize("pods,problem", [
    ([(600, 0, 0), (600, 0, 0)], "holds slots 2, memory 1200 MiB, cores 0 of its capacity"),
    ([(0, 60, 0), (0, 60, 0)], "cores 120 of its capacity"),
    ([(1, 0, 0), (1, 0, 0), (1, 0, 0)], "holds slots 3"),
    ([(0, 0, 700), (0, 0, 700)], "node 'n': the bound pods request 1400 CPU milli of its 1000"),
])
def test_capacity_is_checked_at_every_bind(pods, problem):
    ck = one_node_checker()
    with pytest.raises(InvariantError) as info:
        for i, (mem, cores, cpu) in enumerate(pods):
            ck.arrive(f"p{i}")
            bind(ck, f"p{i}", mem, cores, cpu)
    assert problem in info.value.problem and info.value.kind == "bind"


@pytest.mark.parametrize("events,problem", [
    ([("arrive", "a"), ("arrive", "a")], "pod 'a' arrives while it is still pending"),
    ([("arrive", "a"), ("depart", "a")], "a depart event needs the pod running, but it is pending"),
    ([("bind", "a")], "a bind event needs the pod pending, but it is not in the cluster"),
    ([("arrive", "a"), ("bind", "a"), ("abandon", "a")],
     "an abandon event needs the pod pending, but it is running"),
    ([("arrive", "a"), ("bind", "a"), ("bind", "a")], "needs the pod pending, but it is running"),
])
def test_pod_states_follow_the_event_order(events, problem):
    ck = one_node_checker()
    with pytest.raises(InvariantError) as info:
        for kind, name in events:
            if kind == "bind":
                bind(ck, name, 100)
            else:
                getattr(ck, kind)(name)
    assert problem in info.value.problem


def test_an_overcommitted_initial_state_is_tolerated_until_something_binds_there():
    ck = one_node_checker()
    for name in ("i1", "i2", "i3"):               # three tenants on a card of two slots
        ck.arrive(name)
        ck.adopt(Pod(name), Decision(name, "n", [[Pick("G", 100, 0)]], node_index=0))
    ck.depart("i1")
    ck.finish()
    ck.arrive("new")
    with pytest.raises(InvariantError, match="holds slots 3"):
        bind(ck, "new", 100)


picks = st.lists(st.lists(st.builds(Pick, st.sampled_from(["A", "B", "C"]),
                                    st.integers(0, 5000), st.integers(0, 100)), max_size=3),
                 min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(containers=picks, n_init=st.integers(0, 3))
def test_the_books_agree_with_the_schedulers_rule(containers, n_init):
    """Two independent writings of HAMi's per-pod usage (app containers add up,
    init containers are max'ed against them) agree."""
    n_init = min(n_init, len(containers) - 1)
    assert pod_contribution(containers, n_init) == collapsed_usage(containers, n_init)


def test_a_meter_with_wrong_fragmentation_is_caught(monkeypatch):
    # the twin (hamisim.research.fragmentation) recomputes it from the books
    monkeypatch.setattr(ClusterMeter, "sum_frag",
                        property(lambda self: self._core.sum_frag + 500_000))
    with pytest.raises(InvariantError) as info:
        simulate(CLUSTER, workload(), EngineConfig(check=True))
    assert "fragmented GPUs, the bound pods leave" in str(info.value)
    assert info.value.kind in ("end", "arrive", "bind", "depart", "unschedulable")
