"""kube-scheduler's queue timing, against timelines worked out from its source.

Every expected time below comes from kube-scheduler v1.32's scheduling queue
(``pkg/scheduler/backend/queue/scheduling_queue.go``; the rules are summarised
in :mod:`hamisim.kube.queue`), not from a run of hamisim: t = 0 is the
scheduler's start, when its backoff flush (every 1 s) and leftover flush
(every 30 s, pods unschedulable for more than 5 min) start ticking; a pod's
backoff is 1 s doubling to 10 s by attempts, counted from its last failure.
Each timeline runs on both engines (the readable one and its compiled twin).
"""
from __future__ import annotations

import pytest

from hamisim import Card, Cluster, Container, Node, Pod, SchedulerConfig
from hamisim.kube import queue
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.workload import Trace, TracePod

ENGINES = ["python", "compiled"]
WHOLE = (Container({"nvidia.com/gpu": 1}),)


def one_card_cluster(version: str = "1.32", cpu: int | None = None, preemption=True,
                     nodes: int = 1) -> Cluster:
    return Cluster(tuple(Node(f"n{i}", (Card(f"G{i}", 0, count=1, devmem=1000, devcore=100,
                                                type="NVIDIA-T4"),), cpu_milli=cpu)
                         for i in range(nodes)),
                   SchedulerConfig(kube_scheduler_version=version, preemption=preemption))


def attempts(cluster: Cluster, pods: list[TracePod], engine: str) -> dict[str, list]:
    """Per pod, its attempts as (time, outcome) pairs."""
    res = simulate(cluster, Trace.from_pods("t", pods),
                   EngineConfig(engine=engine, progress=False))
    ev = res.events
    tried = ev[ev.event.isin(["bind", "unschedulable"])]
    out: dict[str, list] = {}
    for t, pod, what in zip(tried.time, tried.pod, tried.event):
        out.setdefault(pod, []).append((float(t), what))
    return out


def times(tries: list) -> list[float]:
    return [t for t, _ in tries]


@pytest.mark.parametrize("engine", ENGINES)
def test_pod_hami_rejects_is_retried_at_the_source_s_times(engine):
    # The worked timeline (kube-queue notes, v1.32 defaults). b fits nowhere
    # because HAMi rejects the only node (its card is taken), so its rejector is
    # "Extender". 0.4: attempt 1 fails; the first PodScheduled=False write is an
    # update of b that the extender's Pod/All registration requeues: backoff 1 s
    # ends at 1.4, the 1 s flush moves it at 2.0: attempt 2, same message, no
    # write. The leftover flush moves it at the first 30 s tick more than 300 s
    # after its last failure: 330 (302 < 330), then 660 (630 - 330 is not > 300),
    # then 990. a's deletion at 1000 is an AssignedPodDelete; b's backoff (10 s
    # after 5 attempts) ended at 1000, so it is tried at once and binds.
    pods = [TracePod(Pod("a", WHOLE), 0.0, None, 1000.0), TracePod(Pod("b", WHOLE), 0.4)]
    b = attempts(one_card_cluster(), pods, engine)["b"]
    assert b == [(0.4, "unschedulable"), (2.0, "unschedulable"), (330.0, "unschedulable"),
                 (660.0, "unschedulable"), (990.0, "unschedulable"), (1000.0, "bind")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_departure_retries_a_hami_rejected_pod_at_once(engine):
    # b failed at 0.4 and 2.0 (backoff 2 s from 2.0: over at 4.0); a's deletion
    # at 100 moves it straight to the active queue: attempt at 100, not at a tick.
    pods = [TracePod(Pod("a", WHOLE), 0.0, None, 100.0), TracePod(Pod("b", WHOLE), 0.4)]
    b = attempts(one_card_cluster(), pods, engine)["b"]
    assert b == [(0.4, "unschedulable"), (2.0, "unschedulable"), (100.0, "bind")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_departure_inside_the_backoff_waits_for_the_next_flush_tick(engine):
    # a leaves at 2.5: b failed at 2.0 (attempt 2, backoff 2 s, over at 4.0), so
    # the move puts it in the backoff queue; the 1 s flush at 4.0 moves it.
    pods = [TracePod(Pod("a", WHOLE), 0.0, 2.5), TracePod(Pod("b", WHOLE), 0.4)]
    b = attempts(one_card_cluster(), pods, engine)["b"]
    assert b == [(0.4, "unschedulable"), (2.0, "unschedulable"), (4.0, "bind")]


@pytest.mark.parametrize("engine", ENGINES)
def test_pod_only_node_resources_fit_rejects_waits_for_the_leftover_flush(engine):
    # b needs CPU the node no longer has: NodeResourcesFit rejects the node, so
    # HAMi is never asked and b's only rejector is NodeResourcesFit, which does
    # not register for b's own update. Attempts: 0.4, then 330 (300.4 < 330),
    # 660, 990; a's deletion at 1000 (AssignedPodDelete, which NodeResourcesFit
    # registered) moves it at once.
    cpu = (Container({"nvidia.com/gpu": 1}),)
    pods = [TracePod(Pod("a", WHOLE, cpu_milli=4000), 0.0, None, 1000.0),
            TracePod(Pod("b", cpu, cpu_milli=1000), 0.4)]
    b = attempts(one_card_cluster(cpu=4000), pods, engine)["b"]
    assert times(b) == [0.4, 330.0, 660.0, 990.0, 1000.0]
    assert b[-1][1] == "bind"


@pytest.mark.parametrize("engine", ENGINES)
def test_binds_requeue_hami_rejected_pods_but_not_resource_rejected_ones(engine):
    # Two nodes: n0's card is busy until 400 (a), n1 has no card free either
    # (c); g pods need no GPU and bind on arrival at 3 and 50: each bind is an
    # AssignedPodAdd. b (HAMi rejected): 0.4, 2.0 (own write), then the bind at
    # 3 finds its backoff (2 s from 2.0) running -> backoff queue -> flush tick
    # 4.0; the bind at 50 finds it over (4 s from 4.0) -> attempt at 50; then
    # the leftover flush at 360 (350 < 360); a leaves at 400 -> attempt, bind.
    # r (NodeResourcesFit rejected on both nodes): binds do not move it;
    # 0.5, then 330, then a's delete at 400.
    cluster = Cluster(tuple(Node(f"n{i}", (Card(f"G{i}", 0, count=1, devmem=1000, devcore=100,
                                                    type="NVIDIA-T4"),), cpu_milli=8000)
                            for i in range(2)), SchedulerConfig(kube_scheduler_version="1.32"))
    pods = [TracePod(Pod("a", WHOLE, cpu_milli=7000), 0.0, None, 400.0),
            TracePod(Pod("c", WHOLE, cpu_milli=7000), 0.0),
            TracePod(Pod("b", WHOLE), 0.4),
            TracePod(Pod("r", WHOLE, cpu_milli=4000), 0.5),
            TracePod(Pod("g1", (Container({}),)), 3.0),
            TracePod(Pod("g2", (Container({}),)), 50.0)]
    got = attempts(cluster, pods, engine)
    assert times(got["b"]) == [0.4, 2.0, 4.0, 50.0, 360.0, 400.0]
    assert times(got["r"]) == [0.5, 330.0, 400.0]
    assert got["r"][-1][1] == "bind"      # r sorts before b: its timestamp (330) is older


@pytest.mark.parametrize("engine", ENGINES)
def test_kube_scheduler_1_31_has_no_queueing_hints(engine):
    # 1.31: QueueingHints off. b's own status write and g's bind move nothing;
    # only the leftover flush (330) and a's delete (400) retry b.
    pods = [TracePod(Pod("a", WHOLE), 0.0, None, 400.0), TracePod(Pod("b", WHOLE), 0.4),
            TracePod(Pod("g", (Container({}),)), 50.0)]
    cluster = Cluster((Node("n0", (Card("G0", 0, count=1, devmem=1000, devcore=100,
                                        type="NVIDIA-T4"),)),),
                      SchedulerConfig(kube_scheduler_version="1.31"))
    b = attempts(cluster, pods, engine)["b"]
    assert times(b) == [0.4, 330.0, 400.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_static_filter_rejection_waits_for_the_leftover_flush_only(engine):
    # b's nodeSelector matches no node: NodeAffinity rejects it everywhere and
    # registers for node label events only, so a's departure at 100 moves
    # nothing; the leftover flush retries it at 330, 660 and 990, and g's
    # deletion at 1000 (which moves nothing either) changes the cluster, so the
    # run goes on until b is tried once more: the leftover flush at 1320.
    pods = [TracePod(Pod("a", WHOLE), 0.0, 100.0),
            TracePod(Pod("g", (Container({}),)), 0.0, None, 1000.0),
            TracePod(Pod("b", WHOLE, node_selector={"zone": "nowhere"}), 0.4)]
    b = attempts(one_card_cluster(), pods, engine)["b"]
    assert times(b) == [0.4, 330.0, 660.0, 990.0, 1320.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_hami_filter_error_is_retried_after_every_backoff(engine):
    # An error from HAMi's Filter (invalid weights annotation) is not a fit
    # failure: no rejector plugin, so the pod goes to the backoff queue after
    # every attempt (1, 2, 4, 8, 10, 10 ... s from each failure, moved on the
    # 1 s ticks): 0.4, 2, 4, 8, 16, 26, 36, 46. a's deletion at 50 changes the
    # cluster, so the run goes on until b is tried once more, at 56.
    bad = Pod("b", WHOLE, annotations={"hami.io/device-scoring-weights": "slot=1"})
    pods = [TracePod(Pod("a", WHOLE), 0.0, None, 50.0), TracePod(bad, 0.4)]
    b = attempts(one_card_cluster(), pods, engine)["b"]
    assert times(b) == [0.4, 2.0, 4.0, 8.0, 16.0, 26.0, 36.0, 46.0, 56.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_active_queue_order_is_priority_then_queue_timestamp(engine):
    # y arrives first and HAMi rejects it (0.0, again at 1.0 after its own
    # status write: timestamp 1.0); x arrives later, needs CPU the node lacks
    # (NodeResourcesFit: no retry until a delete; timestamp 0.5). a's deletion
    # at 100 frees the card and the CPU and moves both: x's timestamp is older,
    # so x is tried first and takes the card although y arrived first.
    pods = [TracePod(Pod("a", WHOLE, cpu_milli=4000), 0.0, None, 100.0),
            TracePod(Pod("y", WHOLE), 0.0),
            TracePod(Pod("x", WHOLE, cpu_milli=1000), 0.5)]
    got = attempts(one_card_cluster(cpu=4000), pods, engine)
    assert got["y"][:2] == [(0.0, "unschedulable"), (1.0, "unschedulable")]
    assert got["x"][0] == (0.5, "unschedulable")
    assert (100.0, "bind") in got["x"]
    assert (100.0, "unschedulable") in got["y"]


def test_pods_waiting_since_arrival_pop_by_priority_then_arrival_then_file_order():
    # positions 0..4: priority 0 at 5 s, 10 at 9 s, 0 at 5 s (file order 1 < 3),
    # 0 at 1 s, 10 at 9 s (file order 0 < 4)
    got = queue.active_queue_order([0, 10, 0, 0, 10], [5.0, 9.0, 5.0, 1.0, 9.0],
                                   [3, 4, 1, 2, 0])
    assert got == [4, 1, 3, 2, 0]


@pytest.mark.parametrize("engine", ENGINES)
def test_higher_priority_goes_first_whatever_the_timestamp(engine):
    # lo waits from 0.0 (timestamp 1.0 after its second attempt); hi arrives
    # at 50 with priority 10 while the card is still busy, fails (timestamp
    # 50, then 51). a's deletion at 100 moves both: hi goes first, binds.
    pods = [TracePod(Pod("a", WHOLE), 0.0, None, 100.0),
            TracePod(Pod("lo", WHOLE), 0.0),
            TracePod(Pod("hi", WHOLE, priority=10, preemption_policy="Never"), 50.0)]
    got = attempts(one_card_cluster(preemption=False), pods, engine)
    assert got["hi"][-1] == (100.0, "bind")
    assert got["lo"][-1] == (100.0, "unschedulable")


@pytest.mark.parametrize("engine", ENGINES)
def test_run_ends_when_no_retry_can_meet_a_changed_cluster(engine):
    # Nothing departs: b was tried after the last change, so its retries
    # (which kube-scheduler would go on making) would meet the same cluster;
    # the run stops with b pending after its first attempt.
    pods = [TracePod(Pod("a", WHOLE), 0.0), TracePod(Pod("b", WHOLE), 0.4)]
    res = simulate(one_card_cluster(), Trace.from_pods("t", pods),
                   EngineConfig(engine=engine, progress=False))
    assert list(res.events.event) == ["arrive", "bind", "arrive", "unschedulable"]
    assert res.summary["pending_at_end"] == 1


def test_queue_rules_from_the_source():
    # calculateBackoffDuration: 0 attempts -> 0; then 1, 2, 4, 8, 10, 10 s
    assert [queue.backoff_duration(n, 1.0, 10.0) for n in range(7)] == [0, 1, 2, 4, 8, 10, 10]
    assert queue.backoff_duration(5000, 1.0, 10.0) == 10.0
    # flushBackoffQCompleted: the first 1 s tick at or after the end
    assert queue.backoff_flush_time(1.4) == 2.0
    assert queue.backoff_flush_time(3.0) == 3.0
    # flushUnschedulablePodsLeftover: strictly more than 300 s, on 30 s ticks
    assert queue.leftover_flush_time(2.0, 300.0) == 330.0
    assert queue.leftover_flush_time(330.0, 300.0) == 660.0
    assert queue.leftover_flush_time(0.4, 300.0) == 330.0
    assert queue.leftover_flush_time(0.0, 300.0) == 330.0
    # QueueingHints: on from 1.32
    assert not queue.queueing_hints("1.31") and queue.queueing_hints("1.32")
    # which events move which rejectors
    ext, fit, static = queue.REJ_EXTENDER, queue.REJ_FIT, queue.REJ_STATIC
    for hints in (True, False):
        assert queue.moved_by(queue.ASSIGNED_POD_DELETE, fit, hints)
        assert queue.moved_by(queue.ASSIGNED_POD_DELETE, ext, hints)
        assert not queue.moved_by(queue.ASSIGNED_POD_DELETE, static, hints)
        assert not queue.moved_by(queue.ASSIGNED_POD_ADD, fit | static, hints)
    assert queue.moved_by(queue.ASSIGNED_POD_ADD, ext, True)
    assert queue.moved_by(queue.ASSIGNED_POD_UPDATE, ext | static, True)
    assert not queue.moved_by(queue.ASSIGNED_POD_ADD, ext, False)
    # a timer lands exactly on its tick
    for now, when in ((0.1, 330.0), (0.30000000000000004, 2.0), (1e-9, 1.0), (7.7, 7.7)):
        assert now + queue.delay_to(now, when) == when


def queue_rows(cluster: Cluster, pods: list[TracePod], engine: str, at: list[float]) -> list:
    """(active, backoff, unschedulable, scheduled, unschedulable, error attempts)
    of the time-series row at each time of ``at``."""
    ts = simulate(cluster, Trace.from_pods("t", pods),
                  EngineConfig(engine=engine, progress=False)).timeseries.set_index("time")
    cols = ["pods_pending_active", "pods_pending_backoff", "pods_pending_unschedulable",
            "attempts_scheduled", "attempts_unschedulable", "attempts_error"]
    assert (ts[cols[:3]].sum(axis=1) == ts["pods_pending"]).all()
    return [tuple(int(v) for v in ts.loc[t, cols]) for t in at]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_time_series_counts_pending_pods_by_queue_and_attempts_by_result(engine):
    # The first timeline: b's first failure (0.4) writes its status, which moves
    # it to the backoff queue (backoff until 1.4); its second (2.0) writes
    # nothing, so it stays among the unschedulable pods; the leftover flush's
    # attempts fail (330, 660, 990); a's deletion at 1000 lets it bind.
    pods = [TracePod(Pod("a", WHOLE), 0.0, None, 1000.0), TracePod(Pod("b", WHOLE), 0.4)]
    rows = queue_rows(one_card_cluster(), pods, engine, [0.0, 0.4, 2.0, 990.0, 1000.0])
    assert rows == [(0, 0, 0, 1, 0, 0), (0, 1, 0, 1, 1, 0), (0, 0, 1, 1, 2, 0),
                    (0, 0, 1, 1, 5, 0), (0, 0, 0, 2, 5, 0)]
    # an error from HAMi's Filter is kube-scheduler's result "error", in backoff
    bad = Pod("b", WHOLE, annotations={"hami.io/device-scoring-weights": "slot=1"})
    pods = [TracePod(Pod("a", WHOLE), 0.0, None, 50.0), TracePod(bad, 0.4)]
    assert queue_rows(one_card_cluster(), pods, engine, [0.4, 46.0]) == [
        (0, 1, 0, 1, 0, 1), (0, 1, 0, 1, 0, 8)]
