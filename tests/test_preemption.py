"""kube-scheduler's DefaultPreemption with HAMi's extender (no preemptVerb).

Expected outcomes are worked out by hand from kube-scheduler v1.32's
``pkg/scheduler/framework/plugins/defaultpreemption`` and
``framework/preemption`` (SelectVictimsOnNode, pickOneNodeForPreemption,
calculateNumCandidates, the FitError text), not from hamisim's output.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.kube.preemption import (
    Victim,
    aggregate_errors,
    num_candidates,
    pick_candidate,
    select_victims,
)
from hamisim.io.scenariofile import CreateStep, DeleteStep, ExpectStep, Scenario, WaitStep
from hamisim.pods import Container, Pod
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.studies.scenario import run_scenario
from hamisim.workload import Trace, TracePod

BACKENDS = ["kernel", "reference"]


def _v(name, priority, start=0.0, cpu=0, seq=0):
    return Victim(name, priority, (start, seq), cpu)


@pytest.mark.parametrize("n, expected", [(1, 1), (50, 50), (100, 100), (999, 100),
                                         (1000, 100), (1500, 150), (20000, 2000)])
def test_number_of_candidates(n, expected):
    # max(10 % of the potential nodes, 100), capped at their number
    assert num_candidates(n) == expected


def test_victims_are_the_least_important_pods_that_free_enough():
    # node: 4000m CPU, 3500m requested; the preemptor (priority 100) asks 2000m
    pods = [_v("a", 10, cpu=2000), _v("b", 20, cpu=1500), _v("vip", 500, cpu=0)]

    def reasons(removed):
        free = 4000 - 3500 + sum(v.cpu_milli for v in removed)
        return [] if free >= 2000 else ["Insufficient cpu"]

    victims, why = select_victims(100, pods, reasons)
    # all lower pods removed -> fits; b (more important) is reprieved first
    # and still fits (2500m free); a cannot be: it is the one victim
    assert [v.name for v in victims] == ["a"] and why == []
    # nothing of lower priority: no victims at all
    assert select_victims(10, pods, reasons) == (None, ["No preemption victims found for "
                                                        "incoming pod"])
    # even without every lower pod it does not fit: the filter's own reason
    assert select_victims(100, pods, lambda removed: ["Insufficient memory"]) == (
        None, ["Insufficient memory"])


def test_equal_priority_victims_are_reprieved_earliest_start_first():
    pods = [_v("late", 5, start=9.0, cpu=1000), _v("early", 5, start=1.0, cpu=1000)]
    # room for exactly one of them to stay
    victims, _ = select_victims(
        50, pods, lambda removed: [] if len(removed) >= 1 else ["Insufficient cpu"])
    assert [v.name for v in victims] == ["late"]


def test_node_choice_follows_kube_schedulers_criteria():
    # 1. lowest highest-victim priority
    assert pick_candidate([(0, [_v("x", 9)]), (1, [_v("y", 3), _v("z", 3)])]) == 1
    # 2. then the lowest sum of priorities (+2^31 each: more victims weigh more)
    assert pick_candidate([(0, [_v("x", 3), _v("y", 3)]), (1, [_v("z", 3)])]) == 1
    # 3. (same sum is only possible with the same count) then the latest start
    #    among the highest-priority victims
    assert pick_candidate([(0, [_v("x", 3, start=5.0)]), (1, [_v("y", 3, start=8.0)])]) == 1
    # start times are whole seconds in the API: 5.2 and 5.9 tie
    assert pick_candidate([(0, [_v("x", 3, start=5.2, seq=1)]),
                           (1, [_v("y", 3, start=5.9, seq=2)])]) == 0
    # 4. then the first candidate
    assert pick_candidate([(0, [_v("x", 3)]), (1, [_v("y", 3)])]) == 0


def test_error_aggregate_prints_as_go_does():
    assert aggregate_errors(["e1"]) == "e1"
    assert aggregate_errors(["e1", "e2", "e1"]) == "[e1, e2]"


def _node(name, cpu=4000, devmem=16000):
    return Node(name, (Card(f"GPU-{name}", 0, devmem=devmem, type="NVIDIA-Tesla T4"),),
                cpu_milli=cpu)


def _pod(name, cpu, priority=0, mem=4000, **kw):
    return Pod(name, (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": mem}),),
               cpu_milli=cpu, priority=priority, **kw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bundled_preemption_scenario(backend):
    from hamisim.io.bundled import bundled_scenarios
    from hamisim.io.scenariofile import load_scenario
    result = run_scenario(load_scenario(bundled_scenarios()["preemption"]), backend, check=True)
    assert result.ok, [x for x in result.expectations if not x.ok]
    assert [(e.pod, e.message) for e in result.events if e.event == "preempt"] == [
        ("low-a", "Preempted by pod urgent on node node1")]


def _replay(cluster, pods, backend="kernel", seed=0):
    trace = Trace.from_pods("t", pods)
    return simulate(cluster, trace, EngineConfig(backend=backend, seed=seed))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_replay_preempts_and_the_preemptor_binds_on_its_nominated_node(backend):
    cluster = Cluster((_node("n1"), _node("n2", cpu=1000)))
    pods = [TracePod(_pod("low", 3000), 0.0, 100.0),
            TracePod(_pod("mid", 900, priority=5), 1.0, 100.0),
            TracePod(_pod("high", 2000, priority=10), 2.0, 50.0)]
    res = _replay(cluster, pods, backend)
    ev = res.events
    rows = list(zip(ev.time, ev.pod, ev.event, ev.node.fillna("")))
    # at 2.0 no node has 2000m free: n1 holds low (3000m of 4000m), n2 mid
    # (900m of 1000m, and 1000m < 2000m anyway: preempting mid cannot help
    # there). low is the victim on n1; high is retried after its 1 s backoff
    # and binds on n1.
    assert (2.0, "high", "unschedulable", "") in rows
    assert (2.0, "low", "preempt", "n1") in rows
    assert (3.0, "high", "bind", "n1") in rows
    msg = ev[(ev.pod == "high") & (ev.event == "unschedulable")].message.iloc[0]
    assert msg == "0/2 nodes are available: 2 Insufficient cpu."
    assert ev[ev.event == "preempt"].message.tolist() == ["Preempted by pod high on node n1"]
    # the victim counts among the departed (mid and high run out later)
    assert res.summary["preempted"] == 1 and res.summary["departed"] == 3
    pods_table = res.pods.set_index("pod")
    assert pods_table.loc["low", "departure"] == 2.0
    assert pods_table.loc["low", "preempted_by"] == "high"
    assert pods_table["preempted_by"].isna().sum() == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpu_contention_alone_preempts_nothing(backend):
    """The dry run sees CPU and memory only: with room for both, every lower
    pod is reprieved and kube-scheduler reports an error instead."""
    cluster = Cluster((_node("n1"),))
    pods = [TracePod(_pod("low", 100, mem=12000), 0.0, 100.0),
            TracePod(_pod("high", 100, priority=10, mem=12000), 1.0, 10.0)]
    ev = _replay(cluster, pods, backend).events
    assert not (ev.event == "preempt").any()
    msg = ev[(ev.pod == "high") & (ev.event == "unschedulable")].message.iloc[0]
    assert msg == ("0/1 nodes are available: 1 1/1 CardInsufficientMemory. preemption: "
                   'expected at least one victim pod on node "n1"')


def test_preemption_off_gives_the_short_message_and_no_victims():
    cluster = Cluster((_node("n1"),), SchedulerConfig(preemption=False))
    pods = [TracePod(_pod("low", 3000), 0.0, 100.0),
            TracePod(_pod("high", 2000, priority=10), 1.0, 10.0)]
    ev = _replay(cluster, pods).events
    assert not (ev.event == "preempt").any()
    assert ev[ev.event == "unschedulable"].message.iloc[0] == \
        "0/1 nodes are available: 1 Insufficient cpu."


def test_preemption_policy_never():
    cluster = Cluster((_node("n1"),))
    pods = [TracePod(_pod("low", 3000), 0.0, 100.0),
            TracePod(_pod("polite", 2000, priority=10, preemption_policy="Never"), 1.0, 10.0)]
    ev = _replay(cluster, pods).events
    assert not (ev.event == "preempt").any()
    assert ev[ev.event == "unschedulable"].message.iloc[0] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to "
        "preemptionPolicy=Never.")


def test_a_nominated_pods_cpu_is_counted_for_lower_priority_pods():
    """After preempting, the preemptor is nominated to n1: until it binds, a
    lower-priority pod arriving in between sees n1's CPU as taken."""
    cluster = Cluster((_node("n1"),))
    pods = [TracePod(_pod("low", 3000), 0.0, 100.0),
            TracePod(_pod("high", 2000, priority=10), 1.0, 10.0),
            TracePod(_pod("sneaky", 1500, priority=5), 1.5, 10.0)]
    ev = _replay(cluster, pods).events
    rows = list(zip(ev.time, ev.pod, ev.event))
    assert (1.0, "low", "preempt") in rows
    # at 1.5 n1 is empty but high (2000m) is nominated there: 1500m + 2000m
    # fit in 4000m, so sneaky binds; high still fits beside it at 2.0
    assert (1.5, "sneaky", "bind") in rows and (2.0, "high", "bind") in rows
    bigger = [TracePod(_pod("low", 3000), 0.0, 100.0),
              TracePod(_pod("high", 2000, priority=10), 1.0, 10.0),
              TracePod(_pod("sneaky", 2500, priority=5), 1.5, 10.0)]
    ev = _replay(cluster, bigger).events
    rows = list(zip(ev.time, ev.pod, ev.event))
    # 2500m + the nominated 2000m exceed 4000m: sneaky waits, high binds first
    assert (1.5, "sneaky", "unschedulable") in rows and (2.0, "high", "bind") in rows


@pytest.mark.parametrize("backend", BACKENDS)
def test_nominated_pods_count_for_the_filter_but_not_for_the_score(backend):
    """kube-scheduler adds nominated pods to a node for its filters only: the
    LeastAllocated score sees the bound pods, and a resource requested beyond
    capacity scores 0 instead of ruling the node out."""
    from hamisim.hami.reference import ReferenceScheduler
    from hamisim.sim.kernel import KernelScheduler
    make = KernelScheduler if backend == "kernel" else ReferenceScheduler
    cluster = Cluster((Node("n1", (), cpu_milli=4000), Node("n2", (), cpu_milli=4000)))
    sched = make(cluster)
    assert sched.schedule(Pod("bound", (Container(),), cpu_milli=1000), only=1).node == "n2"
    # n1 holds a 3000m nomination: 1000m free for the filter, 500m passes; the
    # score ranks n1 87 (4000-500 of 4000), n2 62 (4000-1000-500): n1 wins
    # (counting the nomination would score n1 12 and pick n2)
    pod = Pod("small", (Container(),), cpu_milli=500)
    assert sched.schedule(pod, nominated={0: (3000, 0)}).node == "n1"
    # a pod requesting nothing passes every node's filter even when the
    # nominations overcommit them; it still binds
    sched.delete("small")
    idle = Pod("idle", (Container(),))
    assert sched.schedule(idle, nominated={0: (9000, 0), 1: (9000, 0)}).node is not None


def test_preempting_traces_run_on_both_engines():
    cluster = Cluster((_node("n1"),))
    trace = Trace.from_pods("t", [TracePod(_pod("low", 3000), 0.0, 100.0),
                                  TracePod(_pod("high", 2000, priority=10), 1.0, 10.0)])
    auto = simulate(cluster, trace, EngineConfig())
    python = simulate(cluster, trace, EngineConfig(engine="python"))
    assert auto.events.equals(python.events)
    assert (python.events.event == "preempt").sum() == 1
    assert simulate(cluster, trace, EngineConfig(engine="compiled")).events.equals(
        python.events)
    # victims with a grace period terminate, on the compiled engine too
    graceful = Trace.from_pods("t", [
        TracePod(_pod("low", 3000, termination_grace_period=30), 0.0, 100.0),
        TracePod(_pod("high", 2000, priority=10), 1.0, 10.0)])
    compiled = simulate(cluster, graceful, EngineConfig(engine="compiled"))
    assert compiled.engine == "compiled"
    python = simulate(cluster, graceful, EngineConfig(engine="python"))
    assert compiled.events.equals(python.events)
    ev = python.events
    assert list(zip(ev.time[ev.pod == "low"], ev.event[ev.pod == "low"]))[-2:] == \
        [(1.0, "preempt"), (31.0, "depart")]



def test_in_fill_mode_a_victim_with_a_grace_period_terminates_to_the_end():
    """Fill mode has no clock (pods never leave): a victim with a grace period
    is preempted and keeps its CPU, so its preemptor stays pending; both
    engines agree."""
    cluster = Cluster((_node("n1"),))
    trace = Trace.from_pods("t", [
        TracePod(_pod("low", 3000, termination_grace_period=30), 0.0, 100.0),
        TracePod(_pod("high", 2000, priority=10), 1.0, 10.0)])
    runs = [simulate(cluster, trace, EngineConfig(mode="fill", engine=e))
            for e in ("compiled", "python")]
    assert runs[0].events.equals(runs[1].events)
    ev = runs[1].events
    assert list(ev.event[ev.pod == "low"]) == ["arrive", "bind", "preempt"]
    assert "bind" not in set(ev.event[ev.pod == "high"])
    assert runs[1].summary["preempted"] == 1

def test_the_dry_run_offset_is_seeded():
    """Several equally good candidates: the first in dry-run order from a
    seeded random offset wins, so a seed gives one answer and seeds differ."""
    nodes = tuple(_node(f"n{i}") for i in range(6))
    pods = [TracePod(_pod(f"low{i}", 3000), 0.0, 100.0) for i in range(6)]
    pods.append(TracePod(_pod("high", 2000, priority=10), 1.0, 10.0))
    chosen = set()
    for seed in range(6):
        ev = _replay(Cluster(nodes), pods, seed=seed).events
        again = _replay(Cluster(nodes), pods, seed=seed).events
        assert ev.equals(again)
        victim = ev[ev.event == "preempt"]
        assert len(victim) == 1
        chosen.add(victim.node.iloc[0])
        # the offset is the seed's own stream: kube-scheduler's rand.Int31n(6)
        offset = int(np.random.default_rng([seed, 1]).integers(6))
        assert victim.node.iloc[0] == f"n{offset}"
    assert len(chosen) > 1


def test_replay_through_check_sees_preemptions():
    cluster = Cluster((_node("n1"),))
    trace = Trace.from_pods("t", [TracePod(_pod("low", 3000), 0.0, 100.0),
                                  TracePod(_pod("high", 2000, priority=10), 1.0, 10.0)])
    res = simulate(cluster, trace, EngineConfig(check=True))
    assert res.summary["preempted"] == 1


def test_victims_of_equal_priority_to_the_preemptor_are_never_chosen():
    cluster = Cluster((_node("n1"),))
    pods = [TracePod(_pod("peer", 3000, priority=10), 0.0, 100.0),
            TracePod(dataclasses.replace(_pod("high", 2000, priority=10)), 1.0, 10.0)]
    ev = _replay(cluster, pods).events
    assert not (ev.event == "preempt").any()
    assert ev[ev.event == "unschedulable"].message.iloc[0].endswith(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")


def test_a_terminating_victim_keeps_its_node_for_its_grace_period():
    """Deleted with a grace period, a victim holds its CPU and cards until it
    ends; the preemptor, nominated there, cannot preempt again meanwhile
    (not eligible: a terminating pod on its nominated node) and binds after."""
    cluster = Cluster((_node("n1"), Node("n2", cpu_milli=1000)))
    pods = [TracePod(_pod("low", 3000, termination_grace_period=30), 0.0, 1000.0),
            # a CPU-only pod on n2 whose departure at 10 wakes the queue
            TracePod(Pod("blip", (Container(),), cpu_milli=100), 0.5, 9.5),
            TracePod(_pod("high", 2000, priority=10), 1.0, 10.0)]
    ev = _replay(cluster, pods).events
    rows = list(zip(ev.time, ev.pod, ev.event))
    assert (1.0, "low", "preempt") in rows and (31.0, "low", "depart") in rows
    binds = ev[(ev.pod == "high") & (ev.event == "bind")]
    assert binds.time.tolist() == [31.0] and binds.node.tolist() == ["n1"]
    later = ev[(ev.pod == "high") & (ev.event == "unschedulable") & (ev.time > 1.0)]
    assert len(later) and later.message.str.endswith(
        "preemption: not eligible due to a terminating pod on the nominated node.").all()


def test_a_deleted_pod_keeps_its_cards_for_its_grace_period():
    cluster = Cluster((_node("n1"),))
    first = TracePod(_pod("first", 100, mem=12000, termination_grace_period=20), 0.0, None,
                     5.0)
    second = TracePod(_pod("second", 100, mem=12000), 1.0, 10.0)
    res = _replay(cluster, [first, second])
    rows = list(zip(res.events.time, res.events.pod, res.events.event))
    assert (5.0, "first", "terminate") in rows and (25.0, "first", "depart") in rows
    assert [r for r in rows if r[1] == "second" and r[2] == "bind"] == [(25.0, "second", "bind")]
    # the compiled engine runs the grace period too: the same run
    trace = Trace.from_pods("t", [first, second])
    compiled = simulate(cluster, trace, EngineConfig(engine="compiled"))
    assert compiled.events.equals(simulate(cluster, trace, EngineConfig(engine="python")).events)


def _scenario(cluster, *steps):
    return Scenario(cluster, list(steps), "scenario")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_deleted_pending_preemptor_gives_up_its_nomination(backend):
    """kube-scheduler's PriorityQueue.Delete clears a deleted pending pod's
    nomination: the CPU it was counted for on its nominated node is free for
    the next pod at once."""
    cluster = Cluster((_node("n1"),))
    result = run_scenario(_scenario(
        cluster,
        CreateStep(_pod("low", 3000, termination_grace_period=30), 0),
        # preempts low (terminating for 30 s) and is nominated to n1
        CreateStep(_pod("high", 2000, priority=10), 1),
        DeleteStep("high", 2),
        # 3000m (low, terminating) + 1000m fit in 4000m once high's 2000m is gone
        CreateStep(_pod("small", 1000, mem=1000), 3),
        ExpectStep({"high": "deleted", "small": "GPU-n1", "low": "GPU-n1"}, 4)),
        backend, check=True)
    assert result.ok, [x for x in result.expectations if not x.ok]
    assert [(e.pod, e.event) for e in result.events if e.step == 1] == [
        ("high", "unschedulable"), ("low", "preempt")]


@pytest.mark.parametrize("version, repeated", [("1.32", True), ("1.35", False)])
def test_a_scenario_preempting_a_terminating_pod_keeps_its_deadline(version, repeated):
    """A second preemption of a pod already terminating cannot lengthen its
    deletion (kube-apiserver only ever shortens a grace period): it leaves
    30 s after the first. kube-scheduler <= 1.34 still sends its calls and
    records the Preempted event again; 1.35+ skips such a victim."""
    cluster = Cluster((_node("n1"),), SchedulerConfig(kube_scheduler_version=version))
    result = run_scenario(_scenario(
        cluster,
        CreateStep(_pod("low", 3000, termination_grace_period=30), 0),
        CreateStep(_pod("high1", 2000, priority=10), 1),      # preempts low at 0 s
        WaitStep(20.0, 2),
        # n1: low's 3000m + high1's nominated 2000m; without low both fit
        CreateStep(_pod("high2", 2000, priority=10), 3),
        WaitStep(10.0, 4),                                    # 30 s: low's grace ends
        ExpectStep({"low": "deleted", "high1": "GPU-n1", "high2": "GPU-n1"}, 5)),
        "kernel", check=True)
    assert result.ok, [x for x in result.expectations if not x.ok]
    low = [(e.step, e.event, e.message) for e in result.events if e.pod == "low"]
    assert low[0] == (0, "bind", None)
    assert low[1:] == [(1, "preempt", "Preempted by pod high1 on node n1")] + (
        [(3, "preempt", "Preempted by pod high2 on node n1")] if repeated else []) + [
        (4, "gone", None)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("version, repeated", [("1.32", True), ("1.35", False)])
def test_a_replay_preempting_a_terminating_victim_lets_its_grace_period_run(
        backend, version, repeated):
    """high2 preempts low while low is still terminating for high1: low keeps
    its first deadline (31 s), is counted preempted once, by high1."""
    cluster = Cluster((_node("n1"),), SchedulerConfig(kube_scheduler_version=version))
    pods = [TracePod(_pod("low", 3000, termination_grace_period=30), 0.0, 1000.0),
            TracePod(_pod("high1", 2000, priority=10), 1.0, 100.0),
            TracePod(_pod("high2", 2000, priority=10), 5.0, 100.0)]
    res = _replay(cluster, pods, backend)
    ev = res.events
    low = ev[(ev.pod == "low") & ~ev.event.isin(["arrive", "bind"])]
    assert list(zip(low.time, low.event)) == [(1.0, "preempt")] + (
        [(5.0, "preempt")] if repeated else []) + [(31.0, "depart")]
    binds = ev[ev.event == "bind"]
    assert list(zip(binds.time, binds.pod))[1:] == [(31.0, "high1"), (31.0, "high2")]
    assert res.summary["preempted"] == 1
    assert res.pods.set_index("pod").loc["low", "preempted_by"] == "high1"


@pytest.mark.parametrize("version, marked", [("1.32", True), ("1.35", False)])
def test_preempting_a_pod_its_trace_deleted_leaves_its_deletion_alone(version, marked):
    """low is terminating because its trace deleted it (1.0 s + 30 s). high's
    dry run still takes it (every lower-priority pod counts, terminating or
    not), but its deletion stands: it leaves at 31 s and was not preempted.
    kube-scheduler <= 1.34 still patches its DisruptionTarget condition and
    records the event, so high then waits as for its own victim (not
    eligible); 1.35+ skips it and high keeps re-running preemption."""
    cluster = Cluster((_node("n1"), Node("n2", cpu_milli=1000)),
                      SchedulerConfig(kube_scheduler_version=version))
    pods = [TracePod(_pod("low", 3000, termination_grace_period=30), 0.0, None, 1.0),
            # a CPU-only pod on n2 whose departure at 10 s retries high
            TracePod(Pod("blip", (Container(),), cpu_milli=100), 0.5, 9.5),
            TracePod(_pod("high", 2000, priority=10), 2.0, 10.0)]
    res = _replay(cluster, pods)
    ev = res.events
    low = ev[(ev.pod == "low") & ~ev.event.isin(["arrive", "bind"])]
    assert list(zip(low.time, low.event)) == [(1.0, "terminate")] + (
        [(2.0, "preempt")] if marked else []) + [(31.0, "depart")]
    high = ev[ev.pod == "high"]
    assert high[high.event == "bind"].time.tolist() == [31.0]
    later = high[(high.event == "unschedulable") & (high.time > 2.0)].message
    waits = later.str.endswith(
        "preemption: not eligible due to a terminating pod on the nominated node.")
    assert len(later) and (waits.all() if marked else not waits.any())
    assert "preempted" not in res.summary
    assert res.pods.set_index("pod")["preempted_by"].isna().all()


def test_a_victims_own_deletion_does_not_cut_its_grace_period_short():
    """low, preempted at 1 s with 30 s of grace, is deleted by its trace at
    10 s: the second DELETE asks for the pod's own period, which is no
    shorter, so kube-apiserver leaves the deletion as it is (31 s)."""
    cluster = Cluster((_node("n1"),))
    pods = [TracePod(_pod("low", 3000, termination_grace_period=30), 0.0, None, 10.0),
            TracePod(_pod("high", 2000, priority=10), 1.0, 100.0)]
    ev = _replay(cluster, pods).events
    low = ev[(ev.pod == "low") & ~ev.event.isin(["arrive", "bind"])]
    assert list(zip(low.time, low.event)) == [(1.0, "preempt"), (31.0, "depart")]
    assert ev[(ev.pod == "high") & (ev.event == "bind")].time.tolist() == [31.0]
