"""The compiled engine's shortcut of repeated failures (DESIGN §4, issue 36).

kube-scheduler retries an unschedulable pod at every cluster event that may
help it; in an overloaded cluster most of those attempts meet nodes that did
not change since a pod of the same shape last failed there. The compiled
engine then answers the attempt from what it remembered (the failure's text,
the dry run's outcome, the random draws it consumed) instead of evaluating
every node again. The attempt still counts, still draws what kube-scheduler
would draw, and still writes its FailedScheduling event: a run with the
shortcut must be the run without it, value for value, on every output.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies import SLOW, clusters
from test_compiled_engine import (_quotas, _saturating_cluster, _saturating_trace, configs,
                                  contended)

from hamisim import Card, Cluster, Container, Node, Pod, _replay
from hamisim.shapes import typical_shapes
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.sim.result import SimResult
from hamisim.workload import Trace, TracePod


def _compiled(cluster, trace: Trace, config: EngineConfig, shortcut: bool) -> SimResult:
    """``trace`` replayed by the compiled engine with the shortcut on or off."""
    shapes = typical_shapes([tp.pod for tp in trace.pods], cluster.scheduler)
    make = _replay.ReplayCore

    def core(*args, **kwargs):
        c = make(*args, **kwargs)
        c.use_shortcut = shortcut
        return c
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_replay, "ReplayCore", core)
        return simulate(cluster, trace, dataclasses.replace(config, engine="compiled"), shapes)


def _assert_same(with_: SimResult, without: SimResult) -> None:
    for name in ("events", "pods", "timeseries", "group_timeseries", "mig_timeseries"):
        a, b = getattr(without, name), getattr(with_, name)
        assert (a is None) == (b is None), name
        if a is not None:
            pd.testing.assert_frame_equal(b, a, check_exact=True, obj=name)
    assert with_.summary == without.summary
    assert without.reused_attempts == 0


@pytest.mark.parametrize("events", ["all", "aggregated"])
def test_a_saturated_replay_answers_most_attempts_from_the_shortcut(events):
    # 400 pods of four shapes on ten nodes, one tainted, one cordoned, one
    # short of CPU: most attempts fail, most of them on nodes that did not
    # change since the same shape last failed there.
    trace = _saturating_trace(400, (0, 1000, 0, 3000), seed=3)
    config = EngineConfig(backoff_max=2.0, flush_after=7.5, leftover_flush_period=4.0,
                          events=events)
    with_ = _compiled(_saturating_cluster(), trace, config, shortcut=True)
    without = _compiled(_saturating_cluster(), trace, config, shortcut=False)
    _assert_same(with_, without)
    failed = with_.events[with_.events.event == "unschedulable"]
    attempts = int(failed["count"].sum()) if "count" in failed else len(failed)
    assert attempts > 10_000
    # more than half the failed attempts cost a lookup
    assert attempts / 2 < with_.reused_attempts < attempts


def test_only_the_first_of_identical_failures_is_evaluated():
    # One card, held by "a" from 0 s to 100 s; "b" (the same shape) arrives at
    # 1 s and is retried by the leftover flush (every 4 s once 7.5 s
    # unschedulable) while nothing changes: its first failure is evaluated,
    # every later one is a lookup, until a's departure changes the node: the
    # attempt after it (once b's backoff, at most 10 s, has run out) binds b.
    node = Node("n0", (Card("G0", 0, count=1, devmem=16000, devcore=100),))
    cluster = Cluster((node,))
    gpu = (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 16000}),)
    trace = Trace.from_pods("one card", [TracePod(Pod("a", gpu), 0.0, 100.0, None),
                                         TracePod(Pod("b", gpu), 1.0, 10.0, None)])
    config = EngineConfig(flush_after=7.5, leftover_flush_period=4.0)
    with_ = _compiled(cluster, trace, config, shortcut=True)
    without = _compiled(cluster, trace, config, shortcut=False)
    _assert_same(with_, without)
    failed = with_.events[(with_.events.event == "unschedulable")]
    assert (failed.pod == "b").all() and len(failed) > 10
    assert with_.reused_attempts == len(failed) - 1
    binds = with_.events[with_.events.event == "bind"].set_index("pod").time
    assert binds["a"] == 0.0 and 100.0 < binds["b"] <= 110.0


@settings(max_examples=70, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_the_shortcut_changes_no_saturated_run(data):
    """Random clusters (MIG cards, topologies, taints, cordons) with quotas and
    pods at several priorities (DefaultPreemption's dry run, nominations,
    victims) arriving faster than they leave: with and without the shortcut
    the compiled engine's outputs are equal, value for value."""
    cluster = data.draw(clusters(max_nodes=4, max_cards=6, with_quotas=False))
    cluster = dataclasses.replace(cluster, quotas=data.draw(_quotas()))
    if data.draw(st.booleans()):
        cluster, trace = data.draw(contended(cluster, max_pods=40))
    else:
        from test_compiled_engine import traces
        trace = data.draw(traces(cluster, max_pods=50))
    trace = Trace.from_pods("saturated", [tp._replace(arrival=0.2 * j)
                                          for j, tp in enumerate(trace.pods)])
    config = dataclasses.replace(data.draw(configs()),
                                 events=data.draw(st.sampled_from(["all", "aggregated"])))
    with_ = _compiled(cluster, trace, config, shortcut=True)
    without = _compiled(cluster, trace, config, shortcut=False)
    _assert_same(with_, without)
    event("attempts reused" if with_.reused_attempts else "nothing reused")


def test_a_gate_class_counts_the_changes_of_the_nodes_it_passes():
    """The shortcut's key of a template with a static gate (node selector,
    tolerations, affinity) follows its gate class: changes of the nodes the gate
    passes move it, changes elsewhere do not."""
    import numpy as np
    from hamisim.sim.kernel import KernelScheduler
    cluster = Cluster(tuple(Node(f"n{i}", (Card(f"GPU-{i}", 0, devmem=16000),),
                                 cpu_milli=4000) for i in range(3)))
    core = KernelScheduler(cluster)._core
    core.set_gate_classes([np.array([0, 1, 0], dtype=np.int32),
                           np.array([1, 1, 0], dtype=np.int32)])
    before = [core.gate_class_version(c) for c in (0, 1)]
    core.apply(0, [0], [1], [1000], [10], 500, 0, 1)         # a pod on n0
    assert [core.gate_class_version(c) for c in (0, 1)] == [before[0] + 1, before[1]]
    core.apply(1, [1], [1], [1000], [10], 500, 0, 1)         # n1: no class passes it
    assert [core.gate_class_version(c) for c in (0, 1)] == [before[0] + 1, before[1]]
    core.nominate(2, 1000, 0, 1)                             # n2's CPU, both classes
    core.nominate(2, 1000, 0, -1)
    assert [core.gate_class_version(c) for c in (0, 1)] == [before[0] + 3, before[1] + 2]
    with pytest.raises(IndexError):
        core.gate_class_version(2)
