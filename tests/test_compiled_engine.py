"""The compiled replay engine is the Python engine's twin: the identical run.

Random clusters (every corner of HAMi's rules, node groups, random tie-breaks,
kube-scheduler's sampling on larger clusters) and random traces (equal
arrival times, priorities, deletions before and after binding, pods that run
to the end, admission refusals and Filter errors, multi-container and init
pods, the trace's own class labels) are replayed by both engines under random
queue settings, and in fill mode; with the pod lifecycle too: an initial
state (pods adopted at time 0, some departing), deletions within a termination
grace period, init containers that finish (HAMi's onUpdatePod collapse) and
the what-if card policy mutex-reserve; and under the FGD paper's research node
policies (ResearchCore deciding, its own seeded draws in C); the events, the
pods table, the time series (per event and sampled), the per-group series, the
summary and the occupancy must be equal, value for value.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies import NAMESPACES, SLOW, clusters, pods

from hamisim import Card, Cluster, Container, Node, Pod, SchedulerConfig
from hamisim.cluster import Quota, Taint
from hamisim.mig import MigPlacement, MigProfile
from hamisim.io.initialstate import InitialPod
from hamisim.hami.decision import Pick
from hamisim.shapes import typical_shapes
from hamisim.sim.kernel import KernelScheduler
from hamisim.sim.compiled import simulate_compiled, unsupported
from hamisim.sim.engine import EngineConfig, choose_engine, simulate
from hamisim.sim.result import SimResult
from hamisim.workload import Trace, TracePod


@st.composite
def traces(draw, cluster: Cluster, max_pods: int = 30) -> Trace:
    card_ids = [c.id for n in cluster.nodes for c in n.cards]
    t = draw(st.sampled_from([0.0, 0.0, 2.5]))
    out = []
    for j in range(draw(st.integers(1, max_pods))):
        t += draw(st.sampled_from([0.0, 0.0, 0.25, 1.0, 3.7, 20.0, 400.0]))
        pod = draw(pods(f"p{j}", card_ids, what_ifs=True))
        pod = dataclasses.replace(
            pod, priority=draw(st.sampled_from([0, 0, 0, 5, -1])),
            # deleted pods keep their cards for their grace period; init
            # containers finish (HAMi's onUpdatePod collapse) after init_duration
            termination_grace_period=draw(st.sampled_from([0, 0, 1, 30])),
            init_duration=draw(st.sampled_from([None, 0.0, 2.0, 50.0]))
            if pod.init_containers else None)
        duration = draw(st.none() | st.sampled_from([0.0, 0.5, 1.0, 7.3, 40.0, 400.0]))
        deletion = None
        if draw(st.integers(0, 5)) == 0:
            deletion = t + draw(st.sampled_from([0.0, 0.25, 3.0, 30.0, 1000.0]))
        label = draw(st.sampled_from([None, None, None, "", "train", "serve"]))
        out.append(TracePod(pod, t, duration, deletion, j + 2, label))
    return Trace.from_pods("random", out)


@st.composite
def contended(draw, cluster: Cluster, max_pods: int = 30,
              grace: bool = False) -> tuple[Cluster, Trace]:
    """Small nodes and CPU/memory-hungry pods at several priorities (negative
    ones too), most of them allowed to preempt: DefaultPreemption finds
    victims, nominates, clears nominations, and often finds none. ``grace``:
    many pods have a termination grace period (victims then terminate, and
    may be chosen again), and kube-scheduler is 1.32 or 1.35 (which differ
    on such victims)."""
    nodes = tuple(dataclasses.replace(
        n, cpu_milli=draw(st.sampled_from([3000, 4000, 6000, None])),
        memory_mib=draw(st.sampled_from([4096, 8192, None]))) for n in cluster.nodes)
    cluster = dataclasses.replace(cluster, nodes=nodes, scheduler=dataclasses.replace(
        cluster.scheduler, preemption=draw(st.integers(0, 5)) != 0))
    if grace:
        cluster = dataclasses.replace(cluster, scheduler=dataclasses.replace(
            cluster.scheduler, preemption=True,
            kube_scheduler_version=draw(st.sampled_from(["1.32", "1.35"]))))
    out = []
    for tp in draw(traces(cluster, max_pods)).pods:
        pod = dataclasses.replace(
            tp.pod, cpu_milli=draw(st.sampled_from([0, 500, 1500, 2000, 3000])),
            memory_mib=draw(st.sampled_from([0, 0, 1024, 3000])),
            priority=draw(st.sampled_from([-3, -3, 0, 0, 7, 100])),
            preemption_policy=draw(st.sampled_from(["PreemptLowerPriority"] * 4 + ["Never"])),
            termination_grace_period=draw(st.sampled_from([0, 2, 30, 30])) if grace else 0)
        if draw(st.integers(0, 2)) == 0:
            # CPU/memory alone: the dry run's victims are all the pod needs
            pod = dataclasses.replace(pod, containers=(Container(),), init_containers=(),
                                      annotations={})
        out.append(tp._replace(pod=pod))
    return cluster, Trace.from_pods("contended", out)


@st.composite
def initial_states(draw, cluster: Cluster, min_pods: int = 0,
                   max_pods: int = 6) -> list[InitialPod]:
    """Pods running at time 0, placed where HAMi would place them one by one
    (a warm cluster, as ``hamisim import`` reads it), some departing later."""
    card_ids = [c.id for n in cluster.nodes for c in n.cards]
    sched = KernelScheduler(cluster)
    out = []
    for j in range(draw(st.integers(min_pods, max_pods))):
        pod = draw(pods(f"i{j}", card_ids))
        try:
            d = sched.schedule(pod)
        except ValueError:          # refused at admission or by HAMi's Filter
            continue
        if d.node is None:
            continue
        out.append(InitialPod(pod.name, d.node, d.containers, len(pod.init_containers),
                              pod.cpu_milli, pod.memory_mib,
                              draw(st.sampled_from([None, None, 0.0, 3.0, 100.0])),
                              namespace=pod.namespace))
    return out


@st.composite
def configs(draw) -> EngineConfig:
    return EngineConfig(
        mode=draw(st.sampled_from(["replay", "replay", "replay", "fill"])),
        retry=draw(st.sampled_from(["backoff", "backoff", "none"])),
        flush_after=draw(st.sampled_from([300.0, 7.5])),
        backoff_initial=draw(st.sampled_from([1.0, 0.25])),
        backoff_max=draw(st.sampled_from([10.0, 2.0])),
        backoff_flush_period=draw(st.sampled_from([1.0, 0.3])),
        leftover_flush_period=draw(st.sampled_from([30.0, 4.0])),
        sample_interval=draw(st.sampled_from([None, None, 0.5, 10.0])),
        seed=draw(st.integers(0, 3)))


def _grouped(draw, cluster: Cluster) -> Cluster:
    if draw(st.booleans()):
        return cluster
    nodes = tuple(dataclasses.replace(n, group=draw(st.sampled_from(["a", "b", "c"])))
                  for n in cluster.nodes)
    return dataclasses.replace(cluster, nodes=nodes)


def _canonical(summary: dict) -> str:
    return json.dumps(summary, sort_keys=True, default=str)


def assert_same_run(cluster: Cluster, trace: Trace, config: EngineConfig,
                    initial: list[InitialPod] = ()) -> SimResult:
    shapes = typical_shapes([tp.pod for tp in trace.pods], cluster.scheduler)
    want = simulate(cluster, trace, dataclasses.replace(config, engine="python"), shapes,
                    initial=initial)
    got = simulate(cluster, trace, dataclasses.replace(config, engine="compiled"), shapes,
                   initial=initial)
    for name in ("events", "pods", "timeseries", "group_timeseries"):
        a, b = getattr(want, name), getattr(got, name)
        assert (a is None) == (b is None), name
        if a is not None:
            pd.testing.assert_frame_equal(b, a, check_exact=True, obj=name)
    assert _canonical(got.summary) == _canonical(want.summary)
    assert np.array_equal(got.occupancy, want.occupancy, equal_nan=True)
    assert got.node_groups == want.node_groups
    return want


def _note(run: SimResult, trace: Trace | None = None, default_policy: str = "") -> None:
    ev = run.events.event
    if trace is not None:
        bound = set(run.events.pod[ev == "bind"])
        lifecycle = [tp.pod for tp in trace.pods if tp.pod.name in bound]
        if any(p.init_duration is not None and p.init_containers for p in lifecycle):
            event("a pod with init_duration bound")
        if any("reserve" in p.annotations.get("hami.io/gpu-scheduler-policy",
                                              default_policy) for p in lifecycle):
            event("a mutex-reserve pod bound")
    event("some pod unschedulable" if (ev == "unschedulable").any() else "all bound at once")
    if (ev == "abandon").any():
        event("abandoned")
    if (ev == "preempt").any():
        event("a pod was preempted")
    if run.events.message.dropna().str.contains(
            "preemption: .*(?:Insufficient|expected at least one victim)").any():
        event("a dry run without a candidate")
    if (run.events.event == "preempt").sum() > 1:
        event("several preemptions")
    if run.pods is not None and \
            (run.events.event == "preempt").sum() > run.pods.preempted_by.notna().sum():
        event("a terminating victim preempted again")
    if (ev == "move").any():
        event("the defragmenter moved a pod")
    if (ev == "terminate").any():
        event("a pod terminated within its grace period")
    if (run.events.message == "initial state").any():
        event("an initial state")
    if run.pods is not None and run.pods.mig_allocations.notna().any():
        event("a pod held MIG instances")


@settings(max_examples=200, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine(data):
    cluster = _grouped(data.draw,
                       data.draw(clusters(max_nodes=5, max_cards=8, with_quotas=False)))
    trace = data.draw(traces(cluster))
    initial = data.draw(initial_states(cluster))
    _note(assert_same_run(cluster, trace, data.draw(configs()), initial), trace)


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_on_mig_cards(data):
    """MIG instances taken and freed: the pods' hami.io/vgpu-mig-allocations, and
    every placement after a departure, are the Python engine's."""
    cluster = data.draw(clusters(max_nodes=3, max_cards=6, with_quotas=False,
                                 modes=["mig", "mig", "hami-core"]))
    trace = data.draw(traces(cluster))
    initial = data.draw(initial_states(cluster))
    _note(assert_same_run(cluster, trace, data.draw(configs()), initial), trace)


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_on_the_pod_lifecycle(data):
    """A warm cluster (an initial state of several pods), the what-if
    mutex-reserve as the cluster's card policy, and pods that terminate within a
    grace period or finish their init containers: the compiled engine runs them
    and the run is the Python engine's."""
    cluster = data.draw(clusters(max_nodes=4, max_cards=6, with_quotas=False))
    policy = data.draw(st.sampled_from(["mutex-reserve", "binpack,mutex-reserve",
                                        cluster.scheduler.gpu_scheduler_policy]))
    cluster = dataclasses.replace(cluster, scheduler=dataclasses.replace(
        cluster.scheduler, gpu_scheduler_policy=policy))
    trace = data.draw(traces(cluster, max_pods=20))
    initial = data.draw(initial_states(cluster, min_pods=2, max_pods=8))
    config = data.draw(configs())
    # the periodic defragmenter (a what-if) moves running pods now and then
    config = dataclasses.replace(config, defrag_interval=data.draw(st.sampled_from(
        [None, 5.0, 30.0, 400.0])), defrag_moves=data.draw(st.sampled_from([1, 3])))
    assert unsupported(cluster, config, trace, initial) is None
    _note(assert_same_run(cluster, trace, config, initial), trace, policy)


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_with_the_defragmenter(data):
    """The periodic defragmenter (a what-if) on binpacked cards, where moves
    empty cards: every trial re-placement, the moves and the run after them are
    the Python engine's."""
    nodes = tuple(Node(f"n{i}", tuple(Card(f"G{i}-{c}", c, 10, 16000, 100, "NVIDIA-A10")
                                      for c in range(data.draw(st.integers(1, 4)))),
                       cpu_milli=data.draw(st.sampled_from([None, 2000])))
                  for i in range(data.draw(st.integers(1, 3))))
    cluster = Cluster(nodes, SchedulerConfig(
        gpu_scheduler_policy=data.draw(st.sampled_from(
            ["binpack", "binpack", "mutex-reserve,binpack", "spread"])),
        node_scheduler_policy=data.draw(st.sampled_from(["binpack", "spread"])),
        node_tie_break=data.draw(st.sampled_from(["last", "random"]))))
    # card-sharing pods that come and go leave cards with one tenant to move
    t, out = 0.0, []
    for j in range(data.draw(st.integers(2, 30))):
        t += data.draw(st.sampled_from([0.0, 0.5, 2.0, 10.0]))
        share = {"nvidia.com/gpu": data.draw(st.sampled_from([1, 1, 1, 2])),
                 "nvidia.com/gpumem-percentage": data.draw(st.sampled_from([10, 25, 40, 60])),
                 "nvidia.com/gpucores": data.draw(st.sampled_from([0, 10, 30]))}
        pod = Pod(f"s{j}", (Container(share),), cpu_milli=data.draw(st.sampled_from([0, 500])),
                  termination_grace_period=data.draw(st.sampled_from([0, 0, 5])))
        out.append(TracePod(pod, t, data.draw(st.sampled_from([3.0, 20.0, 100.0, None])),
                            t + 15.0 if data.draw(st.integers(0, 5)) == 0 else None))
    trace = Trace.from_pods("shared", out)
    initial = data.draw(initial_states(cluster, max_pods=3))
    config = dataclasses.replace(
        data.draw(configs()), mode="replay", defrag_interval=data.draw(st.sampled_from(
            [1.0, 5.0, 30.0])), defrag_moves=data.draw(st.sampled_from([1, 2, 5])))
    _note(assert_same_run(cluster, trace, config, initial), trace)


def test_a_lapsed_retry_comes_back_when_the_defragmenter_moves_a_pod():
    """A pending pod whose backoff ends while nothing else can change has its
    retry lapse (the run's end); a defragmenter move later changes the cluster,
    and the pod is tried again. Before, it stayed in backoff with no timer, the
    run never counted as over and both engines ran defragmenter rounds forever
    (found by the property test above)."""
    cards = tuple(Card(f"G0-{c}", c, 10, 16000, 100, "NVIDIA-A10") for c in range(3))
    cluster = Cluster((Node("n0", cards),), SchedulerConfig(
        gpu_scheduler_policy="binpack", node_scheduler_policy="binpack"))
    rows = [  # name, arrival, duration, count, memory %, cores, CPU, grace period
        (0.0, None, 1, 25, 0, 500, 0), (2.0, 20.0, 2, 25, 0, 500, 5),
        (2.5, 100.0, 1, 40, 30, 0, 0), (3.0, 20.0, 1, 25, 10, 0, 0),
        (3.0, 20.0, 1, 40, 30, 500, 5), (3.5, None, 2, 60, 10, 500, 0),
        (5.5, 100.0, 1, 25, 30, 0, 5), (15.5, None, 1, 40, 30, 500, 5),
        (25.5, 20.0, 2, 10, 0, 0, 5), (25.5, None, 1, 25, 0, 0, 5),
        (35.5, 100.0, 2, 40, 0, 500, 0), (45.5, None, 1, 10, 30, 0, 5),
        (46.0, 100.0, 1, 40, 30, 500, 5), (56.0, 3.0, 1, 40, 0, 0, 0),
        (66.0, 100.0, 1, 10, 30, 0, 0), (66.0, 20.0, 1, 25, 0, 0, 0),
        (66.5, None, 1, 60, 0, 0, 5), (68.5, 100.0, 1, 40, 0, 500, 0),
        (78.5, 100.0, 2, 10, 30, 0, 5)]
    trace = Trace.from_pods("lapsed", [
        TracePod(Pod(f"s{j}", (Container({"nvidia.com/gpu": n, "nvidia.com/gpumem-percentage": m,
                                           "nvidia.com/gpucores": c}),),
                     cpu_milli=cpu, termination_grace_period=grace), t, d)
        for j, (t, d, n, m, c, cpu, grace) in enumerate(rows)])
    whole = (Pick("G0-2", 16000, 0, 2), Pick("G0-1", 16000, 0, 1))
    initial = [InitialPod("i0", "n0", [list(whole), [], []], 0, 10000, 0, 100.0)]
    config = EngineConfig(mode="replay", backoff_initial=0.25, backoff_max=2.0,
                          backoff_flush_period=1.0, leftover_flush_period=30.0,
                          defrag_interval=30.0, defrag_moves=5)
    run = assert_same_run(cluster, trace, config, initial)
    ev = run.events
    moves = ev.time[ev.event == "move"]
    assert len(moves)
    # s5 was tried again after the defragmenter's last move
    tried = ev[(ev.pod == "s5") & (ev.event == "unschedulable")]
    assert tried.time.max() >= moves.max() or (ev[ev.pod == "s5"].event == "bind").any()


def test_lifecycle_runs_in_the_compiled_engine():
    """An initial pod departing, a deletion within a grace period and init
    containers that finish, on one card: each shows in the run, identically."""
    card = Card("G0", 0, count=4, devmem=1000, devcore=100, type="NVIDIA-T4")
    cluster = Cluster((Node("n", (card,)),))
    def gpu(mem):
        return Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": mem})
    warm = KernelScheduler(cluster).schedule(Pod("warm", (gpu(600),)))
    initial = [InitialPod("warm", "n", warm.containers, 0, 0, 0, 5.0)]
    init_pod = Pod("init", (gpu(300),), init_containers=(gpu(700),), init_duration=2.0)
    pods_ = [TracePod(dataclasses.replace(Pod("slow", (gpu(100),)),
                                          termination_grace_period=30), 1.0, None, 3.0),
             TracePod(init_pod, 6.0, 100.0),
             TracePod(Pod("after", (gpu(600),)), 6.5, 10.0)]
    trace = Trace.from_pods("life", pods_)
    assert unsupported(cluster, EngineConfig(), trace, initial) is None
    run = assert_same_run(cluster, trace, EngineConfig(), initial)
    ev = run.events
    assert list(ev.event[ev.pod == "warm"]) == ["arrive", "bind", "depart"]
    assert list(ev.time[ev.pod == "warm"]) == [0.0, 0.0, 5.0]
    # deleted at 3 s, the pod keeps its card until its grace period ends at 33 s
    assert list(zip(ev.event[ev.pod == "slow"], ev.time[ev.pod == "slow"]))[-2:] == \
        [("terminate", 3.0), ("depart", 33.0)]
    # 'after' needs 600 MiB: the init pod holds 700 until its init container ends at 8 s
    after = ev[(ev.pod == "after") & (ev.event == "bind")]
    assert list(after.time) == [8.0]
    assert run.summary["initial_pods"] == 1


RESEARCH = ["random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd"]


@pytest.mark.slow
@pytest.mark.parametrize("policy", RESEARCH)
@settings(max_examples=12, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_under_a_research_policy(policy, data):
    """A research node policy decides in ResearchCore, its ties and Random's
    card draws from the scheduler's own generator drawn in C: the same run as
    the Python engine's ResearchScheduler on mixed and unusable cards, CPU and
    memory limits, fractional, multi-card and init-container pods, deletions,
    a warm start (placed by HAMi, re-read by the model) and both tie-breaks."""
    cluster = data.draw(clusters(max_nodes=4, max_cards=6, with_quotas=False,
                                 modes=["hami-core", "mps"]))
    initial = data.draw(initial_states(cluster, max_pods=3))
    cluster = dataclasses.replace(cluster, scheduler=dataclasses.replace(
        cluster.scheduler, node_scheduler_policy=policy,
        node_tie_break=data.draw(st.sampled_from(["last", "random"]))))
    trace = data.draw(traces(cluster, max_pods=25))
    config = data.draw(configs())
    assert choose_engine(cluster, config, trace, initial) == ("compiled", None)
    run = assert_same_run(cluster, trace, config, initial)
    _note(run, trace)
    if (run.events.event == "bind").sum() > 1:
        event("several pods bound")


@pytest.mark.parametrize("what", ["defragmenter", "quota", "mig"])
def test_a_research_policy_refuses_the_same_on_both_engines(what):
    """What a research policy does not model (the defragmenter, ResourceQuota,
    MIG cards) is refused by the compiled engine with the Python engine's words."""
    one_g = (MigProfile("1g.5gb", 4864, 15, 1, tuple(MigPlacement(i, 1) for i in range(7)), 7),)
    card = Card("g0", 0, 10, 16000, 100, "NVIDIA-A100",
                **({"mode": "mig", "mig_profiles": one_g} if what == "mig" else {}))
    cluster = Cluster((Node("n", (card,), 8000, 16000),),
                      SchedulerConfig(node_scheduler_policy="bestfit"),
                      quotas={"default": Quota(memory=1000)} if what == "quota" else {})
    trace = Trace.from_pods("t", [TracePod(Pod("a", (Container({"nvidia.com/gpu": 1}),)),
                                           0.0, 1.0)])
    config = EngineConfig(defrag_interval=5.0 if what == "defragmenter" else None)
    errors = []
    for engine in ("python", "compiled"):
        with pytest.raises(Exception) as err:
            simulate(cluster, trace, dataclasses.replace(config, engine=engine))
        errors.append((type(err.value), str(err.value)))
    assert errors[0] == errors[1]
    expected = {"defragmenter": "the defragmenter moves pods under HAMi's policies",
                "quota": "the research policy bestfit models no ResourceQuota",
                "mig": "the research policy bestfit models no MIG placement"}[what]
    assert errors[0][1].startswith(expected), errors[0][1]


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_sampled_window(data):
    """>= 100 nodes: kube-scheduler's rotating sample decides which nodes are seen."""
    cluster = data.draw(clusters(min_nodes=100, max_nodes=120, max_cards=2, with_quotas=False))
    trace = data.draw(traces(cluster, max_pods=60))
    _note(assert_same_run(cluster, trace, data.draw(configs())))


@settings(max_examples=120, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_with_preemption(data):
    """Priorities and DefaultPreemption: the same victims, nominations (the
    nominated node tried alone, nominated pods' CPU/memory counted, lower ones
    cleared), dry-run offsets and FailedScheduling texts."""
    cluster, trace = data.draw(contended(
        data.draw(clusters(max_nodes=4, max_cards=4, with_quotas=False))))
    assert unsupported(cluster, EngineConfig(), trace, ()) is None
    _note(assert_same_run(cluster, trace, data.draw(configs())))


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_with_preemption_and_grace_periods(data):
    """Priorities, DefaultPreemption and termination grace periods together:
    victims terminate (counted once, marked for the dry run's check on the
    nominated node), trace deletions within a grace period, victims already
    terminating chosen again (kube-scheduler 1.32 preempts them again, 1.35
    skips them): the same run."""
    cluster, trace = data.draw(contended(
        data.draw(clusters(max_nodes=3, max_cards=4, with_quotas=False)), max_pods=25,
        grace=True))
    assert unsupported(cluster, EngineConfig(), trace, ()) is None
    _note(assert_same_run(cluster, trace, data.draw(configs())))


@pytest.mark.filterwarnings("ignore::hamisim.errors.InputWarning")
def test_compiled_engine_equals_python_engine_on_a_found_preemption_grace_case():
    """A case hypothesis found (seed 121745257969732481305108750632713916824 of the
    test above, unshrunk): one node without cards, preemption, grace periods,
    kube-scheduler 1.35. Both engines scored the node with the nominated pods'
    memory, beyond its capacity, and so failed a pod that requests nothing with
    no reason at all ('0/1 nodes are available: '); their dry runs then worded
    that impossible state differently. kube-scheduler's score sees no nominated
    pods and floors at 0: the pod binds, and the engines agree."""
    from hamisim.io.traces import read_trace
    trace = read_trace(Path(__file__).parent / "data" / "preemption-grace-divergence.csv")
    cluster = Cluster(nodes=(Node(name="node0", cards=(), memory_mib=8192),),
                      scheduler=SchedulerConfig(gpu_scheduler_policy="mutex,topology-aware",
                                                node_scheduler_policy="binpack",
                                                preemption=True,
                                                kube_scheduler_version="1.35"))
    config = EngineConfig(mode="replay", retry="backoff", backoff_initial=0.25,
                          backoff_max=10.0, flush_after=7.5, backoff_flush_period=1.0,
                          leftover_flush_period=4.0, seed=1, sample_interval=0.5,
                          events="all")
    assert_same_run(cluster, trace, config)


@pytest.mark.parametrize("version", ["1.32", "1.35"])
@pytest.mark.parametrize("deleted", [False, True], ids=["preempted", "deleted"])
def test_a_terminating_victim_preempted_again(version, deleted):
    """`low` terminates for 30 s, preempted by `mid` (or deleted by its trace
    first); `hi` then chooses it again. kube-scheduler 1.32 preempts it again
    (another preempt row; a deleted pod's first one, which marks it and makes
    `mid`'s retries see a terminating pod on its node), 1.35 skips it; either
    way its deadline stands and it is counted and attributed once."""
    def cpu(name, milli, prio, t, deletion=None, grace=0):
        return TracePod(Pod(name, (Container({}),), cpu_milli=milli, priority=prio,
                            termination_grace_period=grace), t, None, deletion)
    card = Card("G", 0, count=4, devmem=10240, devcore=100, type="NVIDIA-A100")
    cluster = Cluster((Node("n", (card,), cpu_milli=4000),),
                      SchedulerConfig(kube_scheduler_version=version))
    trace = Trace.from_pods("again", [cpu("low", 3000, 0, 0.0, 0.5 if deleted else None, 30),
                                      cpu("mid", 2000, 5, 1.0), cpu("hi", 2000, 10, 2.0)])
    assert unsupported(cluster, EngineConfig(), trace, ()) is None
    run = assert_same_run(cluster, trace, EngineConfig())
    ev = run.events[run.events.pod == "low"]
    # a victim chosen again: 1.32 writes a row (the first one of a deleted pod)
    want = {False: [(1.0, "mid"), (2.0, "hi")] if version == "1.32" else [(1.0, "mid")],
            True: [(1.0, "mid"), (2.0, "hi")] if version == "1.32" else []}[deleted]
    preempt = ev[ev.event == "preempt"]
    assert list(zip(preempt.time, preempt.message)) == \
        [(t, f"Preempted by pod {p} on node n") for t, p in want]
    assert list(ev.time[ev.event == "depart"]) == [30.5 if deleted else 31.0]
    assert run.summary.get("preempted", 0) == (0 if deleted else 1)   # (0: not shown)
    low = run.pods[run.pods.pod == "low"].preempted_by
    assert list(low.fillna("-")) == ["-" if deleted else "mid"]
    # both preemptors bind once low is gone (2000m each)
    binds = run.events[run.events.event == "bind"]
    assert set(binds.pod) == {"low", "mid", "hi"}


def _preemption_cluster() -> Cluster:
    card = lambda i: Card(f"gpu-{i}", 0, count=4, devmem=10240, devcore=100,  # noqa: E731
                          type="NVIDIA-A100")
    return Cluster((Node("a", (card("a"),), cpu_milli=4000),
                    Node("b", (card("b"),), cpu_milli=4000)))


def test_preemptions_and_nominations_are_the_same_run():
    """Two nodes full of low-priority pods. A mid-priority pod preempts one and
    is nominated; before its retry a high-priority pod preempts on that same
    node (the fewest victims) and clears the nomination, a second one finds
    the first one's nomination counted there and preempts on the other node;
    the mid pod is nominated again and preempts on the other node. A pod short
    of cards alone reprieves every pod ("expected at least one victim")."""
    def cpu(name, milli, prio, t, d=None):
        return TracePod(Pod(name, (Container({}),), cpu_milli=milli, priority=prio), t, d)
    pods_ = [cpu(f"low{i}", 2000, -1, 0.0) for i in range(4)]
    pods_ += [cpu("mid", 2000, 5, 10.0, 50.0), cpu("hi0", 4000, 10, 10.5, 50.0),
              cpu("hi1", 2000, 10, 10.5, 50.0),
              TracePod(Pod("big", (Container({"nvidia.com/gpu": 2}),), priority=10), 20.0, 5.0)]
    cluster, trace = _preemption_cluster(), Trace.from_pods("preempt", pods_)
    assert unsupported(cluster, EngineConfig(), trace, ()) is None
    run = assert_same_run(cluster, trace, EngineConfig(seed=3))
    ev = run.events
    preempted = ev[ev.event == "preempt"]
    assert run.summary["preempted"] == len(preempted) == 4       # mid twice
    assert set(run.pods.preempted_by.dropna()) == {"mid", "hi0", "hi1"}
    assert preempted.message.str.fullmatch(r"Preempted by pod (mid|hi0|hi1) on node [ab]").all()
    mid = ev[ev.pod == "mid"]
    assert list(mid.event) == ["arrive", "unschedulable", "unschedulable", "bind", "depart"]
    assert mid.time.iloc[3] > ev[(ev.pod == "hi0") & (ev.event == "bind")].time.iloc[0]
    big = ev[(ev.pod == "big") & (ev.event == "unschedulable")].message
    # only node a has a pod of lower priority (mid); once it is gone, none
    assert big.iloc[0].endswith('preemption: expected at least one victim pod on node "a"')
    assert big.iloc[-1].endswith("preemption: 0/2 nodes are available: 2 No preemption "
                                 "victims found for incoming pod.")


VECTOR_POLICIES = Path(__file__).parent / "data" / "policies" / "vector_rank.py"


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_with_a_vectorised_node_policy(data):
    """A vectorised Python node policy (not HAMi) runs in the compiled engine
    (no fallback), called once per attempt as by the kernel scheduler."""
    cluster = data.draw(clusters(max_nodes=5, max_cards=8, with_quotas=False))
    policy = f"python:{VECTOR_POLICIES}:{data.draw(st.sampled_from(['ties', 'mixed']))}"
    cluster = dataclasses.replace(cluster, scheduler=dataclasses.replace(
        cluster.scheduler, node_scheduler_policy=policy))
    trace = data.draw(traces(cluster))
    config = data.draw(configs())
    assert unsupported(cluster, config, trace, ()) is None
    _note(assert_same_run(cluster, trace, config))


def test_a_vectorised_policy_keeps_each_pods_own_failure_reasons():
    """Two pods that fail for different reasons, retried while nothing changes:
    each failure text names the pod's own reason (a remembered failure's
    counts are written out before the Python engine's kernel scheduler reads
    them; they once carried the other pod's reason there)."""
    t4 = Card("GPU-t4", 0, count=10, devmem=15360, devcore=100, type="NVIDIA-Tesla T4")
    cluster = Cluster((Node("n", (t4,)),))
    cluster = dataclasses.replace(cluster, scheduler=dataclasses.replace(
        cluster.scheduler, node_scheduler_policy=f"python:{VECTOR_POLICIES}:ties"))
    big = Pod("big", (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 20000}),))
    a100 = Pod("a100", (Container({"nvidia.com/gpu": 1}),),
               annotations={"nvidia.com/use-gputype": "A100"})
    trace = Trace.from_pods("reasons", [TracePod(big, 0.0), TracePod(a100, 0.0, None, 1000.0)])
    run = assert_same_run(cluster, trace, EngineConfig())
    failed = run.events[run.events.event == "unschedulable"]
    assert len(failed) > 4
    assert failed[failed.pod == "big"].message.str.contains("CardInsufficientMemory").all()
    assert failed[failed.pod == "a100"].message.str.contains("CardTypeMismatch").all()


@st.composite
def _quotas(draw) -> dict[str, Quota]:
    """ResourceQuotas on one to three namespaces, from limits no pod reaches to
    ones a single pod exceeds (0 blocks every request)."""
    out = {}
    for ns in draw(st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=3, unique=True)):
        out[ns] = Quota(memory=draw(st.sampled_from([None, 0, 3000, 12000, 40000, 10**9])),
                        cores=draw(st.sampled_from([None, None, 0, 60, 150, 400])))
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_with_quotas(data):
    """ResourceQuota: the webhook's refusals at creation and Fit's
    ResourceQuotaNotFit against the namespace's usage, which grows on binds and
    shrinks on departures, counts an initial state's pods, follows the
    init-container collapse and the defragmenter's moves."""
    cluster = data.draw(clusters(max_nodes=4, max_cards=6, with_quotas=False))
    cluster = dataclasses.replace(cluster, quotas=data.draw(_quotas()))
    trace = data.draw(traces(cluster))
    initial = data.draw(st.just(()) | initial_states(cluster, max_pods=4))
    config = data.draw(configs())
    if config.mode == "replay" and data.draw(st.booleans()):
        config = dataclasses.replace(config, defrag_interval=data.draw(st.sampled_from(
            [5.0, 30.0])), defrag_moves=data.draw(st.sampled_from([1, 3])))
    run = assert_same_run(cluster, trace, config, initial)
    _note(run)
    ev = run.events
    if (ev.event == "rejected").any():
        event("refused at creation for its quota")
    if ev.message.str.contains("ResourceQuotaNotFit", regex=False).any():
        event("a card refused for the quota")


def test_several_instances_on_one_mig_card_of_a_small_node():
    """One container with four MIG instances on a node of one card: the compiled
    engine counts them per card (its per-pod slots are as wide as a node's cards)."""
    one_g = (MigProfile("1g.5gb", 4864, 15, 1, tuple(MigPlacement(i, 1) for i in range(7)), 7),)
    cluster = Cluster((Node("n", (Card("G", 0, 7, 40960, 100, "NVIDIA", mode="mig",
                                      mig_profiles=one_g),)),
                       Node("m", (Card("H", 0, 10, 40960, 100, "NVIDIA"),))))
    def pod(name, gpus, mode):
        return Pod(name, (Container({"nvidia.com/gpu": gpus, "nvidia.com/gpumem": 1000}),),
                   annotations={"nvidia.com/vgpu-mode": mode})
    # the MIG pod binds first; the next pod's per-pod slot follows its own
    pods_ = [TracePod(pod("mig", 4, "mig"), 0.0, 3.0),
             TracePod(pod("core", 1, "hami-core"), 1.0, 10.0),
             TracePod(pod("mig-again", 4, "mig"), 5.0, 3.0)]
    run = assert_same_run(cluster, Trace.from_pods("mig", pods_), EngineConfig())
    assert run.pods.mig_allocations.notna().sum() == 2
    assert run.timeseries.hami_gpu_allocated.iloc[-1] == 0


def _one_card_cluster() -> Cluster:
    card = Card("G0", 0, count=1, devmem=1000, devcore=100, type="NVIDIA-T4")
    return Cluster((Node("n", (card,)),))


def test_a_long_saturated_replay_is_the_same_run():
    # Thousands of retries, flushes and wake-ups on a full cluster: the queue's
    # bookkeeping (backoff, unschedulable set, live timers) over a long run.
    whole = (Container({"nvidia.com/gpu": 1}),)
    # priorities order the queue; pods short of a card alone find no victim
    # (CPU and memory fit with every pod in place): DefaultPreemption's error
    pods_ = [TracePod(Pod(f"p{k}", whole, priority=k % 3,
                          preemption_policy="Never" if k % 5 == 0 else "PreemptLowerPriority"),
                      0.7 * k, 5.0 + k % 7, None if k % 11 else 0.7 * k + 40.0)
             for k in range(600)]
    events = assert_same_run(_one_card_cluster(), Trace.from_pods("busy", pods_),
                             EngineConfig()).events
    assert (events.event == "unschedulable").sum() > 1000
    assert events.message.str.endswith('expected at least one victim pod on node "n"').any()


def test_tables_over_several_batches_are_the_same_run():
    # more than 65,536 pods: the events and pods tables each leave the engine in
    # several batches (the compiled engine reuses its buffers between them)
    cards = tuple(Card(f"G{k}", k, count=4, devmem=16000, devcore=100, type="NVIDIA-T4")
                  for k in range(4))
    cluster = Cluster(tuple(Node(f"n{i}", tuple(dataclasses.replace(c, id=f"{c.id}-{i}")
                                                for c in cards)) for i in range(8)))
    shapes = [(Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}),),
              (Container({"nvidia.com/gpu": 2, "nvidia.com/gpumem": 2000}),)]
    rng = np.random.default_rng(5)
    pods_ = [TracePod(Pod(f"p{k}", shapes[k % 2]), 0.05 * k, float(rng.exponential(1.0)),
                      None, k + 2, "odd" if k % 3 else None) for k in range(68_000)]
    events = assert_same_run(cluster, Trace.from_pods("long", pods_), EngineConfig()).events
    assert len(events) > 3 * 65_536


def test_what_the_compiled_engine_does_not_run_goes_to_the_python_engine():
    cluster = _one_card_cluster()
    trace = Trace.from_pods("t", [TracePod(Pod("a", (Container({"nvidia.com/gpu": 1}),)),
                                           0.0, 1.0)])
    assert unsupported(cluster, EngineConfig(), trace, ()) is None
    assert unsupported(cluster, EngineConfig(mode="fill"), trace, ()) is None
    assert unsupported(cluster, EngineConfig(backend="reference"), trace, ()) \
        == "the reference backend"
    assert unsupported(cluster, EngineConfig(check=True), trace, ()) == "--check"
    assert unsupported(cluster, EngineConfig(), list(trace.pods), ()) \
        == "a workload that is not a Trace"
    # the pod lifecycle runs compiled: an initial state, grace periods, init
    # containers that finish, the what-if mutex-reserve
    life = Trace.from_pods("life", [TracePod(Pod(
        "b", (Container({"nvidia.com/gpu": 1}),), init_containers=(Container(),),
        annotations={"hami.io/gpu-scheduler-policy": "mutex-reserve"},
        termination_grace_period=30, init_duration=1.0), 0.0, None, 5.0)])
    warm = [InitialPod("w", "n", [[]], departure=2.0)]
    assert unsupported(cluster, EngineConfig(), life, warm) is None
    fgd = dataclasses.replace(cluster, scheduler=dataclasses.replace(
        cluster.scheduler, node_scheduler_policy="fgd"))
    assert unsupported(fgd, EngineConfig(), trace, ()) is None      # research runs compiled
    for name, why in (("ties", None), ("score_each", "the Python node policy")):
        path = VECTOR_POLICIES if name == "ties" else \
            Path(__file__).parents[1] / "workloads" / "policies" / "numa_pack.py"
        mine = dataclasses.replace(cluster, scheduler=dataclasses.replace(
            cluster.scheduler, node_scheduler_policy=f"python:{path}:{name}"))
        got = unsupported(mine, EngineConfig(), trace, ())
        assert got == why if why is None else got.startswith(why), name
    with pytest.raises(ValueError, match="does not run the reference backend"):
        simulate(cluster, trace, EngineConfig(backend="reference", engine="compiled"))
    with pytest.raises(ValueError, match="does not run --check"):
        simulate_compiled(cluster, trace, EngineConfig(check=True))
    with pytest.raises(ValueError, match="unknown engine"):
        simulate(cluster, trace, EngineConfig(engine="fast"))
    # auto: the reference backend's run goes to the Python engine and succeeds
    assert simulate(cluster, trace, EngineConfig(backend="reference")).summary["bound"] == 1


def test_duplicate_pod_names_are_refused():
    whole = (Container({"nvidia.com/gpu": 1}),)
    trace = Trace.from_pods("dup", [TracePod(Pod("a", whole), 0.0, 1.0),
                                    TracePod(Pod("a", whole), 1.0, 1.0)])
    with pytest.raises(ValueError, match="pod names must be unique"):
        simulate(_one_card_cluster(), trace, EngineConfig(engine="compiled"))


def _saturating_cluster() -> Cluster:
    # cards of two sizes, a node short of CPU, a tainted and a cordoned node: the
    # failure text has Fit histograms, CPU and static-filter reasons
    def node(i: int, **kw) -> Node:
        big = i % 2 == 0
        cards = tuple(Card(f"G{i}-{c}", c, count=2 if big else 1,
                           devmem=16000 if big else 8000, devcore=100,
                           type="NVIDIA-V100" if big else "NVIDIA-T4")
                      for c in range(2 if big else 3))
        return Node(f"n{i}", cards, cpu_milli=8000, memory_mib=64000, **kw)
    nodes = [node(i) for i in range(8)]
    nodes.append(node(8, taints=(Taint("dedicated", "ml", "NoSchedule"),)))
    nodes.append(node(9, unschedulable=True))
    nodes.append(dataclasses.replace(node(10), cpu_milli=500))
    return Cluster(tuple(nodes))


def _saturating_trace(n: int, cpus: tuple[int, int, int, int], seed: int,
                      priorities: tuple[int, ...] = (),
                      namespaces: tuple[str, ...] = ()) -> Trace:
    """``n`` pods 0.3 s apart, each of one of four shapes (1 GPU 6000 MiB, 2 GPUs
    3000 MiB, 1 GPU 60 % cores, no GPU) with the shape's CPU from ``cpus``, a
    priority drawn from ``priorities`` (none: 0), a namespace drawn from
    ``namespaces`` (none: default), exponential lifetimes of 20 s."""
    shapes_ = [Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 6000}),
               Container({"nvidia.com/gpu": 2, "nvidia.com/gpumem": 3000}),
               Container({"nvidia.com/gpu": 1, "nvidia.com/gpucores": 60}), Container({})]
    rng = np.random.default_rng(seed)
    pods_ = []
    for k in range(n):
        j = int(rng.integers(0, 4))
        priority = int(rng.choice(priorities)) if priorities else 0
        namespace = str(rng.choice(namespaces)) if namespaces else "default"
        pods_.append(TracePod(Pod(f"p{k}", (shapes_[j],), cpu_milli=cpus[j], priority=priority,
                                  namespace=namespace),
                              0.3 * k, float(rng.exponential(20.0)), None))
    return Trace.from_pods("saturated", pods_)


def _saturated_twins(monkeypatch, trace: Trace, quotas: dict[str, Quota] | None = None):
    """Replay ``trace`` on :func:`_saturating_cluster` (with ``quotas``) with the
    compiled engine (its FailText objects recorded) and with the Python engine
    without the memo of failed evaluations; assert the runs equal. Returns (the
    Python run, the FailText objects built)."""
    from hamisim import _failtext
    cluster = dataclasses.replace(_saturating_cluster(), quotas=quotas or {})
    config = EngineConfig(backoff_max=2.0, flush_after=7.5, leftover_flush_period=4.0)
    built, make = [], _failtext.FailText

    def fail_text(*args):
        built.append(make(*args))
        return built[-1]
    monkeypatch.setattr(_failtext, "FailText", fail_text)
    want, got = _memo_twins(cluster, trace, config)
    return want, built, got.reused_attempts


def _memo_twins(cluster: Cluster, trace: Trace,
                config: EngineConfig) -> tuple[SimResult, SimResult]:
    """Replay ``trace`` with the compiled engine and with the Python engine
    without the memo of failed evaluations; assert the runs equal. Returns the
    Python run and the compiled one."""
    shapes = typical_shapes([tp.pod for tp in trace.pods], cluster.scheduler)
    got = simulate(cluster, trace, dataclasses.replace(config, engine="compiled"), shapes)
    init = KernelScheduler.__init__

    def without_memo(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._core.use_memo = False
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(KernelScheduler, "__init__", without_memo)
        want = simulate(cluster, trace, dataclasses.replace(config, engine="python"), shapes)
    for name in ("events", "pods", "timeseries"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name),
                                      check_exact=True, obj=name)
    assert _canonical(got.summary) == _canonical(want.summary)
    return want, got


def test_a_saturated_replay_reuses_failed_evaluations_and_builds_its_text_in_c(monkeypatch):
    # Many more pods than cards, of a few shapes, arriving while others leave:
    # most attempts fail, on nodes that mostly have not changed since the same
    # request last failed there (the kernel's memo of failed evaluations) and
    # with texts built in C (FailText). The run must be the one the Python
    # engine makes re-running HAMi's Fit on every node and building every text
    # in Python, value for value.
    trace = _saturating_trace(400, (0, 1000, 0, 3000), seed=3)
    want, built, reused = _saturated_twins(monkeypatch, trace)
    failed = want.events[want.events.event == "unschedulable"]
    assert len(failed) > 1000
    assert failed.message.nunique() > 20          # the histograms change as pods come and go
    assert failed.message.str.contains("Insufficient cpu").any()
    assert failed.message.str.contains("untolerated taint").any()
    assert failed.message.str.contains("CardInsufficientMemory").any()
    # every text came from C (none declined)
    # (attempts the shortcut of repeated failures answered reuse a text FailText built)
    assert reused > 0 and built[0].n_built + reused == len(failed)
    assert built[0].n_declined == 0


def test_a_saturated_replay_under_resource_quotas_reuses_failed_evaluations(monkeypatch):
    # The saturated replay with ResourceQuotas that bind: HAMi's Fit reads the
    # namespace's usage, so a remembered failure holds only while that usage
    # (and the node) is unchanged. The run must be the Python engine's without
    # the memo, value for value, with quota failures among the texts.
    trace = _saturating_trace(400, (0, 1000, 0, 3000), seed=7,
                              namespaces=("team-a", "team-b", "default"))
    quotas = {"team-a": Quota(memory=9000), "team-b": Quota(memory=20000, cores=150)}
    want, _, _ = _saturated_twins(monkeypatch, trace, quotas)
    failed = want.events[want.events.event == "unschedulable"].message
    assert len(failed) > 500
    assert failed.str.contains("ResourceQuotaNotFit").any()
    assert failed.str.contains("CardInsufficientMemory").any()


def test_a_saturated_replay_with_priorities_builds_the_uniform_and_dry_run_texts_in_c(
        monkeypatch):
    # The saturated replay above with three priorities and CPU that binds: the
    # dry run nominates (the nominated pods' CPU counted on their nodes while
    # the memo of failed evaluations is in use), finds no candidate, or errs.
    # Every failure's text is FailText's, the errors' too (their PostFilter
    # part, naming nodes, is kept per set of nodes), and the run is the one
    # the Python engine makes without the memo.
    trace = _saturating_trace(300, (3000, 1000, 0, 4000), seed=5, priorities=(-1, 0, 0, 5))
    want, built, reused = _saturated_twins(monkeypatch, trace)
    failed = want.events[want.events.event == "unschedulable"].message
    errors = failed.str.contains("expected at least one victim")
    assert len(failed) > 500 and want.summary["preempted"] > 0
    assert (~failed.str.contains("preemption:")).any()                 # nominated
    assert failed.str.contains("preemption: .*Insufficient cpu").any()  # no candidate
    assert failed.str.contains("No preemption victims found").any()
    assert errors.any()
    # (attempts the shortcut of repeated failures answered reuse a text FailText built)
    assert reused > 0 and built[0].n_built + reused == len(failed)
    assert built[0].n_declined == 0


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_the_memo_of_failed_evaluations_changes_no_saturated_run(data):
    """Random clusters (MIG cards, topologies, taints, cordons) with quotas, pods
    at several priorities arriving faster than they leave: the compiled engine
    with the memo of failed evaluations (failures reused while node and quota
    state stand) is the run the Python engine makes re-running HAMi's Fit on
    every node at every attempt, value for value."""
    cluster = data.draw(clusters(max_nodes=4, max_cards=6, with_quotas=False))
    cluster = dataclasses.replace(cluster, quotas=data.draw(_quotas()))
    trace = data.draw(traces(cluster, max_pods=60))
    # saturate: every pod arrives within seconds, whatever its lifetime
    trace = Trace.from_pods("saturated", [tp._replace(arrival=0.2 * j)
                                          for j, tp in enumerate(trace.pods)
                                          if tp.deletion is None])
    want, _ = _memo_twins(cluster, trace, EngineConfig(backoff_max=2.0, flush_after=7.5,
                                                       leftover_flush_period=4.0))
    failed = (want.events.event == "unschedulable").sum()
    event("many failed attempts" if failed > 20 else "few failed attempts")
    if want.events.message.str.contains("ResourceQuotaNotFit", regex=False).any():
        event("a card refused for the quota")
    _note(want)
