"""The compiled meter's fragmentation equals its readable twin
(:mod:`hamisim.research.fragmentation`) on random clusters and replays.

Clusters with unhealthy and cordoned cards, mixed card types and modes, CPU
limits and node groups; typical shapes drawn from random pods (type filters,
MiB and percentage memory, exclusive and zero cores, CPU-only shapes);
running totals kept by the meter through binds and deletions, compared after
every step with the twin computed from scratch from the scheduler's cache.
"""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies import SLOW, clusters, pods

from hamisim.cluster import Card, Cluster, Node, group_of
from hamisim.hami.reference import ReferenceScheduler, aligned_usage, collapsed_usage
from hamisim.pods import Container, Pod
from hamisim.research.fragmentation import card_free, fragmentation, unfit_weights
from hamisim.shapes import Shape, typical_shapes
from hamisim.sim.metrics import ClusterMeter

MICRO = 1e6


def _assert_same(meter: ClusterMeter, cluster: Cluster, twin, step) -> None:
    # the meter rounds each node's terms to micro-GPUs
    tol = (len(cluster.nodes) + 1) / MICRO
    assert meter.sum_free / MICRO == pytest.approx(twin.free, abs=tol), step
    assert meter.sum_frag / MICRO == pytest.approx(twin.frag, abs=tol), step
    assert meter.sum_unfit / MICRO == pytest.approx(twin.unfit, abs=tol), step
    for k, name in enumerate(meter.group_names):
        g = twin.groups[name]
        assert meter.group_sums["free"][k] / MICRO == pytest.approx(g.free, abs=tol), name
        assert meter.group_sums["frag"][k] / MICRO == pytest.approx(g.frag, abs=tol), name
        assert meter.group_sums["unfit"][k] / MICRO == pytest.approx(g.unfit, abs=tol), name


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(cluster=clusters(max_nodes=5, max_cards=8, with_quotas=False), data=st.data())
def test_meter_equals_the_readable_twin_over_a_replay(cluster, data):
    if data.draw(st.booleans()):        # node groups
        cluster = dataclasses.replace(cluster, nodes=tuple(
            dataclasses.replace(n, group=f"g{i % 2}") for i, n in enumerate(cluster.nodes)))
    ids = [c.id for n in cluster.nodes for c in n.cards]
    pool = [data.draw(pods(f"s{k}", ids)) for k in range(data.draw(st.integers(1, 6)))]
    shapes = typical_shapes(pool, cluster.scheduler)
    meter = ClusterMeter(cluster, shapes)
    sched = ReferenceScheduler(cluster)
    aligned = [aligned_usage(n, cluster.scheduler) for n in cluster.nodes]
    idle = fragmentation(cluster, shapes, {})
    assert idle.stranded == pytest.approx(0.0, abs=1e-9)   # an idle cluster strands nothing
    _assert_same(meter, cluster, idle, "idle")
    bound: dict[str, tuple] = {}
    for step in range(data.draw(st.integers(1, 12))):
        if bound and data.draw(st.integers(0, 3)) == 0:
            name = data.draw(st.sampled_from(sorted(bound)))
            node, usage, cpu = bound.pop(name)
            sched.delete(name)
            meter.apply(node, usage, cpu, -1)
        else:
            pod = data.draw(pods(f"p{step}", ids))
            try:
                d = sched.schedule(pod)
            except ValueError:
                continue
            if not d.bound:
                continue
            usage = collapsed_usage(d.containers, len(pod.init_containers),
                                    aligned[d.node_index])
            bound[pod.name] = (d.node_index, usage, pod.cpu_milli)
            meter.apply(d.node_index, usage, pod.cpu_milli, 1)
        cpu = [c for c, _ in sched.node_requested()]
        twin = fragmentation(cluster, shapes, sched.usage_by_card(), cpu)
        _assert_same(meter, cluster, twin, step)
        event("stranded > 0" if twin.stranded > 1e-9 else "nothing stranded")


# ---------------------------------------------------------------------------
# the twin's rules, worked by hand

T4 = dict(count=4, devmem=16000, devcore=100, type="NVIDIA-Tesla T4")


def test_hand_worked_node():
    # two T4s: A holds 12000 MiB and 50 cores, B is idle; one shape of 8000 MiB
    node = Node("n", (Card("A", 0, **T4), Card("B", 1, **T4)), cpu_milli=16000)
    cluster = Cluster((node,))
    usage = {"A": (1, 12000, 50)}
    # A: min(50/100, 4000/16000) = 0.25 free; B: 1.0
    assert card_free(node.cards[0], node, usage["A"]) == 0.25
    half = Shape(cpu_milli=1000, nums=1, memreq=8000, weight=1.0)
    f = fragmentation(cluster, [half], usage, [0])
    # A cannot host 8000 MiB (4000 free): its 0.25 is fragment; nothing unfit
    assert (f.free, f.frag, f.unfit) == (1.25, 0.25, 0.0)
    # a 2-card shape: only B can host, the node cannot: all 1.25 is fragment
    two = Shape(cpu_milli=0, nums=2, memreq=8000, weight=1.0)
    assert fragmentation(cluster, [two], usage, [0]).frag == 1.25
    # not enough free CPU (16000 - 15500 < 1000): all of it, and it is stranded
    f = fragmentation(cluster, [half], usage, [15500])
    assert (f.frag, f.unfit, f.stranded) == (1.25, 0.0, 1.25)


def test_unfit_is_what_an_empty_node_could_not_serve():
    h100 = dict(count=4, devmem=81920, devcore=100, type="NVIDIA-H100")
    node = Node("n", (Card("T", 0, **T4), Card("H", 1, **h100)))
    only_h100 = Shape(cpu_milli=0, nums=1, memreq=40000, use_gputype="H100", weight=0.75)
    cpu_only = Shape(cpu_milli=500, nums=0, weight=0.25)
    assert unfit_weights(node, [only_h100, cpu_only]) == {"T": 1.0, "H": 0.25}
    f = fragmentation(Cluster((node,)), [only_h100, cpu_only], {})
    # idle: T counts fully for both shapes, H only for the CPU-only one
    assert f.frag == pytest.approx(1.0 + 0.25) and f.stranded == pytest.approx(0.0)
    assert f.groups[group_of(node)].frag == pytest.approx(f.frag)


def test_exclusive_rules_decide_hosting():
    node = Node("n", (Card("A", 0, **T4), Card("B", 1, **T4)))
    cluster = Cluster((node,))
    # cores 100 needs a card without a tenant: A holds 1000 MiB and 0 cores, so
    # memory and cores are free, yet it cannot host; its 15000/16000 is fragment
    exclusive = Shape(cpu_milli=0, nums=1, memreq=1000, cores=100, weight=1.0)
    f = fragmentation(cluster, [exclusive], {"A": (1, 1000, 0)})
    assert f.frag == pytest.approx(15000 / 16000)
    meter = ClusterMeter(cluster, [exclusive])          # the compiled meter agrees
    meter.apply(0, {"A": (1, 1000, 0)})
    assert meter.sum_frag / MICRO == pytest.approx(15000 / 16000, abs=1e-6)
    # a 0-core request cannot go on a card whose cores are all taken: with A's
    # cores full only B hosts, so a 2-card shape fits nowhere and B's whole
    # free card is fragment
    zero = Shape(cpu_milli=0, nums=2, memreq=100, cores=0, weight=1.0)
    f = fragmentation(cluster, [zero], {"A": (1, 1000, 100)})
    assert f.free == 1.0 and f.frag == 1.0 and f.stranded == 1.0
    meter = ClusterMeter(cluster, [zero])
    meter.apply(0, {"A": (1, 1000, 100)})
    assert meter.sum_frag / MICRO == pytest.approx(1.0, abs=1e-6)
    pod = Pod("p", (Container({"nvidia.com/gpu": 1}),))
    assert typical_shapes([pod], cluster.scheduler)[0].cores == 100
