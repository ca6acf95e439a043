"""Allocation and fragmentation readings of ClusterMeter, by hand-computed cases."""
from __future__ import annotations

import pytest

from hamisim import Card, Cluster, Container, Node, Pod, SchedulerConfig
from hamisim.shapes import Shape, typical_shapes
from hamisim.sim.metrics import ClusterMeter


def card(cid: str, idx: int = 0, **kw) -> Card:
    base = dict(count=10, devmem=10000, devcore=100, type="NVIDIA-T4")
    base.update(kw)
    return Card(cid, idx, **base)


def test_empty_cluster_has_no_fragment_for_a_fitting_shape():
    cl = Cluster((Node("n", (card("A"), card("B", 1))),))
    m = ClusterMeter(cl, [Shape(0, 1, pct=50, cores=50)])
    r = m.reading()
    assert r["unallocated_gpu"] == 2.0 and r["frag_gpu"] == 0.0
    assert r["hami_gpu_zero_tenant"] == 2 and r["nodes_gpu_idle"] == 1


def test_card_too_small_for_the_shape_is_fragment():
    cl = Cluster((Node("n", (card("A"), card("B", 1))),))
    m = ClusterMeter(cl, [Shape(0, 1, pct=50, cores=50)])
    # A keeps 30 % of its cores and memory free: too little for a 50 % shape
    m.apply(0, {"A": (1, 7000, 70)})
    r = m.reading()
    assert r["unallocated_gpu"] == pytest.approx(1.3)
    assert r["frag_gpu"] == pytest.approx(0.3)
    assert r["frag_pct_of_capacity"] == pytest.approx(15.0)
    assert r["frag_rate_pct"] == pytest.approx(100 * 0.3 / 1.3)
    assert r["hami_gpu_allocated"] == 1 and r["nodes_gpu_idle"] == 0
    m.apply(0, {"A": (1, 7000, 70)}, sign=-1)
    assert m.reading()["frag_gpu"] == 0.0 and m.reading()["nodes_gpu_idle"] == 1


def test_cpu_only_shape_counts_all_free_gpu_and_weights_mix():
    cl = Cluster((Node("n", (card("A"),)),))
    m = ClusterMeter(cl, [Shape(1000, 0, weight=0.25), Shape(0, 1, pct=50, cores=50,
                                                              weight=0.75)])
    assert m.reading()["frag_gpu"] == pytest.approx(0.25)


def test_node_that_cannot_host_counts_everything():
    # two cards each half free, shape wants two whole cards: nothing fits
    cl = Cluster((Node("n", (card("A"), card("B", 1))),))
    m = ClusterMeter(cl, [Shape(0, 2, pct=100, cores=100)])
    m.apply(0, {"A": (1, 5000, 50), "B": (1, 5000, 50)})
    assert m.reading()["frag_gpu"] == pytest.approx(1.0)


def test_cpu_shortage_turns_a_fitting_node_into_fragment():
    cl = Cluster((Node("n", (card("A"),), cpu_milli=4000),))
    m = ClusterMeter(cl, [Shape(3000, 1, pct=10, cores=10)])
    assert m.reading()["frag_gpu"] == 0.0
    m.apply(0, {}, cpu_milli=2000)
    assert m.reading()["frag_gpu"] == pytest.approx(1.0)


def test_full_slots_make_a_card_unusable():
    cl = Cluster((Node("n", (card("A", count=2),)),))
    m = ClusterMeter(cl, [Shape(0, 1, memreq=100)])
    m.apply(0, {"A": (2, 200, 0)})
    r = m.reading()
    assert r["unallocated_gpu"] == 0.0 and r["hami_vgpu_slots_allocated"] == 2


def test_typical_shapes_cover_95_percent_and_normalise():
    cfg = SchedulerConfig()
    pods = [Pod(f"a{i}", (Container({"nvidia.com/gpu": 1}),)) for i in range(90)]
    pods += [Pod(f"b{i}", (Container({"nvidia.com/gpu": 2}),)) for i in range(6)]
    pods += [Pod(f"c{i}", (Container({"nvidia.com/gpu": 4}),)) for i in range(4)]
    shapes = typical_shapes(pods, cfg)
    assert [s.nums for s in shapes] == [1, 2]
    assert sum(s.weight for s in shapes) == pytest.approx(1.0)
    assert shapes[0].weight == pytest.approx(90 / 96)
    assert shapes[0].cores == 100 and shapes[0].pct == 100
