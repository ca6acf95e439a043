"""The replay engine's events obey the simulation's invariants.

Random small clusters and traces (mutex, chains, multi-GPU, init containers,
deletions) are replayed; the event log is then re-played against a fresh
*reference* scheduler, which must take the identical decision at every
bind and unschedulable event, on the state at that moment.
"""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from hamisim import Card, Cluster, Container, Node, Pod, SchedulerConfig
from hamisim.hami.reference import ReferenceScheduler
from hamisim.kube.scheduler import KubeScheduler, full_message
from hamisim.pods import admission_error
from hamisim.shapes import typical_shapes
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.workload import TracePod

POLICIES = ["spread", "binpack", "mutex", "mutex,binpack", "binpack,numa", "topology-aware"]


def random_cluster(rng: random.Random) -> Cluster:
    nodes = []
    for i in range(rng.randint(2, 5)):
        cards = tuple(Card(f"GPU-{i}-{k}", k, count=rng.choice([2, 4, 10]),
                           devmem=rng.choice([8000, 16000]), devcore=100,
                           type=rng.choice(["NVIDIA-Tesla T4", "NVIDIA A10"]), numa=k % 2)
                      for k in range(rng.randint(1, 4)))
        nodes.append(Node(f"node-{i}", cards, cpu_milli=rng.choice([None, 16000])))
    sched = SchedulerConfig(gpu_scheduler_policy=rng.choice(POLICIES),
                            node_scheduler_policy=rng.choice(["binpack", "spread"]))
    return Cluster(tuple(nodes), sched)


def random_pod(rng: random.Random, j: int) -> Pod:
    def container():
        kind = rng.random()
        if kind < 0.25:
            return Container({"nvidia.com/gpu": rng.choice([1, 1, 2])})
        if kind < 0.5:
            return Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage":
                              rng.choice([20, 50, 80]), "nvidia.com/gpucores": rng.choice([20, 50])})
        if kind < 0.9:
            return Container({"nvidia.com/gpu": rng.choice([1, 2]),
                              "nvidia.com/gpumem": rng.choice([1000, 4000, 9000])})
        return Container({})
    ann = {}
    if rng.random() < 0.4:
        ann["hami.io/gpu-scheduler-policy"] = rng.choice(POLICIES)
    if rng.random() < 0.1:
        ann["nvidia.com/numa-bind"] = "true"
    containers = tuple(container() for _ in range(rng.choice([1, 1, 1, 2])))
    init = (container(),) if rng.random() < 0.1 else ()
    return Pod(f"p{j}", containers, init, ann, cpu_milli=rng.choice([0, 2000, 6000]),
               priority=rng.choice([0, 0, 0, 10]))


def random_trace(rng: random.Random, n: int) -> list[TracePod]:
    t, out = 0.0, []
    for j in range(n):
        t += rng.choice([0.0, rng.expovariate(0.5)])      # some equal arrival times
        duration = rng.choice([None, rng.uniform(0, 30), float(rng.randint(1, 20))])
        deletion = t + rng.uniform(0, 40) if rng.random() < 0.15 else None
        out.append(TracePod(random_pod(rng, j), t, duration, deletion))
    return out


def none_if_missing(value):
    """Missing strings read back from a DataFrame are NaN, not None."""
    return None if value is None or (isinstance(value, float) and value != value) else value


def replay_on_reference(cluster: Cluster, trace: list[TracePod], events: pd.DataFrame,
                        seed: int = 0) -> None:
    """Check every invariant by re-playing the event log on the reference, with
    kube-scheduler's preemption around it (its dry-run offsets drawn as the
    engine draws them)."""
    ref = ReferenceScheduler(cluster)
    offsets = np.random.default_rng([seed, 1])
    kube = KubeScheduler(cluster, ref, lambda n: int(offsets.integers(n)))
    node_index = {n.name: i for i, n in enumerate(cluster.nodes)}
    pods = {tp.pod.name: tp for tp in trace}
    limits = {c.id: (c.count, c.devmem, c.devcore) for n in cluster.nodes for c in n.cards}
    arrived, bound_at, state = {}, {}, {}
    for row in events.itertuples(index=False):
        tp = pods[row.pod]
        if row.event == "arrive":
            assert row.pod not in arrived, "each pod arrives once"
            assert row.time == tp.arrival
            arrived[row.pod] = row.time
            state[row.pod] = "pending"
        elif row.event in ("bind", "unschedulable"):
            assert state[row.pod] == "pending" and row.time >= arrived[row.pod]
            before = ref.usage_by_card()
            try:
                d, post = kube.schedule(tp.pod)
            except ValueError as err:
                assert row.event == "unschedulable" and row.message == str(err)
                continue
            if row.event == "bind":
                assert d.bound and (d.node, d.devices) == (row.node, none_if_missing(row.devices))
                kube.bound(tp.pod, node_index[d.node], row.time)
                bound_at[row.pod] = row.time
                state[row.pod] = "running"
                policy = tp.pod.annotations.get("hami.io/gpu-scheduler-policy",
                                                cluster.scheduler.gpu_scheduler_policy)
                if "mutex" in [t.strip() for t in policy.split(",")]:
                    for pick in (p for c in d.containers for p in c):
                        assert before[pick.uuid][0] == 0, "mutex binds zero-tenant cards only"
                for uuid, (used, mem, cores) in ref.usage_by_card().items():
                    count, devmem, devcore = limits[uuid]
                    assert used <= count and mem <= devmem and cores <= devcore
            else:
                assert not d.bound and full_message(d.message, post.message) == row.message
                victims = {v.name for v in post.victims}
        elif row.event == "preempt":
            assert state[row.pod] == "running" and row.pod in victims
            ref.delete(row.pod)
            kube.gone(row.pod)
            state[row.pod] = "gone"
        elif row.event == "rejected":
            assert state[row.pod] == "pending" and row.message == admission_error(tp.pod)
            state[row.pod] = "gone"
        elif row.event == "depart":
            assert state[row.pod] == "running"
            expected = tp.deletion if tp.deletion is not None else bound_at[row.pod] + tp.duration
            assert row.time == pytest.approx(expected, abs=1e-9)
            ref.delete(row.pod)
            kube.gone(row.pod)
            state[row.pod] = "gone"
        elif row.event == "abandon":
            assert state[row.pod] == "pending" and row.time == tp.deletion
            kube.gone(row.pod)
            state[row.pod] = "gone"
    for name, st in state.items():
        if st == "running":
            tp = pods[name]
            assert tp.deletion is None and tp.duration is None or \
                (tp.deletion or bound_at[name] + tp.duration) > events.time.max() - 1e-9


@pytest.mark.parametrize("seed", range(25))
def test_replay_obeys_invariants(seed):
    rng = random.Random(seed)
    cluster = random_cluster(rng)
    trace = random_trace(rng, 40)
    res = simulate(cluster, trace, EngineConfig(backend="kernel", seed=seed),
                   typical_shapes([tp.pod for tp in trace], cluster.scheduler))
    assert (res.events.event == "arrive").sum() == len(trace)
    replay_on_reference(cluster, trace, res.events, seed)
    ts = res.timeseries
    assert (ts.pods_arrived == ts.pods_pending + ts.pods_running + ts.pods_departed
            + ts.pods_abandoned).all()
    assert ts.time.is_monotonic_increasing and ts.time.is_unique


def test_departures_come_before_arrivals_at_equal_times():
    card = Card("G0", 0, count=1, devmem=1000, devcore=100, type="NVIDIA-T4")
    cluster = Cluster((Node("n", (card,)),))
    whole = (Container({"nvidia.com/gpu": 1}),)
    trace = [TracePod(Pod("a", whole), 0.0, 5.0), TracePod(Pod("b", whole), 5.0, 1.0)]
    ev = simulate(cluster, trace, EngineConfig()).events
    assert list(zip(ev.event, ev.pod)) == [("arrive", "a"), ("bind", "a"), ("depart", "a"),
                                           ("arrive", "b"), ("bind", "b"), ("depart", "b")]


def test_unschedulable_pod_retries_after_departure_and_backoff():
    card = Card("G0", 0, count=1, devmem=1000, devcore=100, type="NVIDIA-T4")
    cluster = Cluster((Node("n", (card,)),))
    whole = (Container({"nvidia.com/gpu": 1}),)
    trace = [TracePod(Pod("a", whole), 0.0, 0.5), TracePod(Pod("b", whole), 0.2, 1.0)]
    ev = simulate(cluster, trace, EngineConfig()).events
    rows = list(zip(ev.time, ev.pod, ev.event))
    # b fails at 0.2 (HAMi rejects it); kube-scheduler's first status write on
    # b requeues it into the backoff queue (1 s, ends at 1.2); a departs at 0.5
    # but b is no longer unschedulable, so it waits for the 1 s flush at 2.0
    assert (0.2, "b", "unschedulable") in rows
    assert (0.5, "a", "depart") in rows
    assert (2.0, "b", "bind") in rows


def test_retry_none_abandons_after_one_attempt():
    card = Card("G0", 0, count=1, devmem=1000, devcore=100, type="NVIDIA-T4")
    cluster = Cluster((Node("n", (card,)),))
    whole = (Container({"nvidia.com/gpu": 1}),)
    trace = [TracePod(Pod("a", whole), 0.0, 0.5), TracePod(Pod("b", whole), 0.2, 1.0)]
    ev = simulate(cluster, trace, EngineConfig(retry="none")).events
    assert list(ev[ev.pod == "b"].event) == ["arrive", "unschedulable", "abandon"]


def test_deletion_abandons_a_pending_pod():
    card = Card("G0", 0, count=1, devmem=1000, devcore=100, type="NVIDIA-T4")
    cluster = Cluster((Node("n", (card,)),))
    whole = (Container({"nvidia.com/gpu": 1}),)
    trace = [TracePod(Pod("a", whole), 0.0, None), TracePod(Pod("b", whole), 1.0, None, 3.0)]
    ev = simulate(cluster, trace, EngineConfig()).events
    b = ev[ev.pod == "b"]
    # tried at 1.0 and, after its own status write and 1 s backoff, at 2.0
    assert list(b.event) == ["arrive", "unschedulable", "unschedulable", "abandon"]
    assert list(b.time) == [1.0, 1.0, 2.0, 3.0]


def test_five_minute_flush_retries_without_departures():
    card = Card("G0", 0, count=1, devmem=1000, devcore=100, type="NVIDIA-T4")
    cluster = Cluster((Node("n", (card,)),))
    whole = (Container({"nvidia.com/gpu": 1}),)
    trace = [TracePod(Pod("a", whole), 0.0, None, 1000.0), TracePod(Pod("b", whole), 1.0)]
    ev = simulate(cluster, trace, EngineConfig()).events
    b = ev[(ev.pod == "b") & (ev.event == "unschedulable")]
    # its own status write retries it at 2.0, then the 30 s flush ticks more
    # than 300 s after each failure (tests/test_queue_timing.py has more)
    assert list(b.time) == [1.0, 2.0, 330.0, 660.0, 990.0]


def test_pod_retried_thousands_of_times_keeps_the_ten_second_backoff():
    # A two-card pod on a one-card node never fits; each of 1,200 short pods'
    # departures (20 s apart) wakes it once its 10 s backoff is over. The
    # doubling must stay capped however many attempts it has made (2**1024
    # overflowed a float before).
    card = Card("G0", 0, count=1, devmem=1000, devcore=100, type="NVIDIA-T4")
    cluster = Cluster((Node("n", (card,)),))
    trace = [TracePod(Pod("big", (Container({"nvidia.com/gpu": 2}),)), 0.0, None, 24_500.0)]
    trace += [TracePod(Pod(f"s{k}", (Container({"nvidia.com/gpu": 1}),)), 20.0 * k, 19.0)
              for k in range(1200)]
    trace.sort(key=lambda tp: tp.arrival)
    res = simulate(cluster, trace, EngineConfig())
    ev = res.events
    tries = ev[(ev.pod == "big") & (ev.event == "unschedulable")]
    assert len(tries) > 1100
    assert list(ev[ev.pod == "big"].event)[-1] == "abandon"
    assert res.summary["bound"] == 1200
