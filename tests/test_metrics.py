"""Allocation and fragmentation readings of ClusterMeter, by hand-computed cases."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ---------------------------------------------------------------------------
# unfit and stranded: FGD's fragmentation split into what no placement caused
# and what placement caused

def test_an_idle_mixed_cluster_has_unfit_gpu_and_nothing_stranded():
    t4 = Node("t4", (card("A", devmem=16000, type="NVIDIA-T4"),))
    h100 = Node("h100", (card("B", devmem=80000, type="NVIDIA-H100"),))
    # half the pods want 40 GB: only the H100 can host them
    m = ClusterMeter(Cluster((t4, h100)), [Shape(0, 1, memreq=40000, weight=0.5),
                                           Shape(0, 1, memreq=1000, weight=0.5)])
    r = m.reading()
    assert r["frag_gpu"] == pytest.approx(0.5)          # FGD: half the idle T4
    assert r["unfit_gpu"] == pytest.approx(0.5) and r["stranded_gpu"] == 0.0
    # a small pod on the H100 leaves too little for the 40 GB shape: stranded
    m.apply(1, {"B": (1, 50000, 0)})
    r = m.reading()
    free_h100 = 30000 / 80000
    assert r["stranded_gpu"] == pytest.approx(0.5 * free_h100)
    assert r["unfit_gpu"] == pytest.approx(0.5)
    assert r["frag_gpu"] == pytest.approx(r["unfit_gpu"] + r["stranded_gpu"])


def test_type_filters_and_cpu_only_shapes_make_gpu_unfit():
    cl = Cluster((Node("n", (card("A", type="NVIDIA-T4"), card("B", 1, type="NVIDIA-A10"))),))
    shapes = [Shape(0, 1, pct=10, cores=10, use_gputype="A10", weight=0.6),
              Shape(500, 0, weight=0.4)]
    r = ClusterMeter(cl, shapes).reading()
    # the T4 serves neither shape (1.0 of its free GPU), the A10 only the first (0.4)
    assert r["unfit_gpu"] == pytest.approx(1.0 + 0.4) and r["stranded_gpu"] == 0.0


def test_group_sums_follow_the_nodes():
    nodes = (Node("a0", (card("A"),), group="a"), Node("a1", (card("B"),), group="a"),
             Node("t", (card("C", type="NVIDIA-X"),)))
    m = ClusterMeter(Cluster(nodes), [Shape(0, 1, pct=50, cores=50)])
    assert m.group_names == ["a", "NVIDIA-X"]
    first = {row[0]: row for row in m.group_readings()}
    assert set(first) == {"a", "NVIDIA-X"}                # every group, once
    assert m.group_readings() == []                       # nothing changed since
    m.apply(1, {"B": (1, 7000, 70)})
    (row,) = m.group_readings()
    assert row[0] == "a" and row[1] == 2 and row[2] == 1 and row[3] == pytest.approx(50.0)
    assert row[7] == pytest.approx(1.3)                   # free GPU in group a


@st.composite
def metered_cluster(draw):
    n_nodes = draw(st.integers(1, 4))
    types = ["NVIDIA-T4", "NVIDIA-A100"]
    nodes = []
    for i in range(n_nodes):
        cards = tuple(Card(f"n{i}c{k}", k, count=draw(st.integers(1, 4)),
                           devmem=draw(st.sampled_from([8000, 16000, 40000])),
                           devcore=100, type=draw(st.sampled_from(types)),
                           health=draw(st.booleans()) or k > 0)
                      for k in range(draw(st.integers(1, 4))))
        nodes.append(Node(f"n{i}", cards, cpu_milli=draw(st.sampled_from([None, 4000, 16000])),
                          group=draw(st.sampled_from([None, "g"]))))
    shapes = [Shape(draw(st.sampled_from([0, 2000, 8000])), draw(st.integers(0, 3)),
                    memreq=draw(st.sampled_from([0, 4000, 20000])),
                    pct=draw(st.sampled_from([101, 25, 100])),
                    cores=draw(st.sampled_from([0, 30, 100])),
                    use_gputype=draw(st.sampled_from(["", "A100"])),
                    weight=draw(st.floats(0.05, 1.0)))
              for _ in range(draw(st.integers(1, 4)))]
    return Cluster(tuple(nodes)), shapes


def unfit_by_hand(cluster: Cluster, shapes, free: dict[str, float]) -> float:
    """The definition, shape by shape: a card's free GPU is unfit for a shape when
    the card, or its node, could not host it even if it were empty."""
    total = 0.0
    for s in shapes:
        for node in cluster.nodes:
            def hostable(c: Card) -> bool:
                need = s.memreq if s.memreq else (c.devmem * s.pct // 100 if s.pct != 101
                                                  else 0)
                return (c.health and c.count >= 1 and (not s.use_gputype or s.use_gputype.lower()
                                          in c.type.lower())
                        and c.devmem >= need and c.devcore >= s.cores)
            node_ok = (s.nums > 0 and sum(hostable(c) for c in node.cards) >= s.nums
                       and (node.cpu_milli is None or node.cpu_milli >= s.cpu_milli))
            for c in node.cards:
                if not (node_ok and hostable(c)):
                    total += s.weight * free[c.id]
    return total


@settings(max_examples=150, deadline=None)
@given(metered_cluster(), st.data())
def test_unfit_is_the_part_of_fragmentation_no_placement_caused(case, data):
    cluster, shapes = case
    norm = sum(s.weight for s in shapes)
    shapes = [Shape(s.cpu_milli, s.nums, s.memreq, s.pct, s.cores, s.use_gputype,
                    s.nouse_gputype, s.weight / norm) for s in shapes]
    m = ClusterMeter(cluster, shapes)
    idle = m.reading()
    assert idle["stranded_gpu"] == pytest.approx(0.0, abs=1e-5)   # no placement, no strand
    for i, node in enumerate(cluster.nodes):                      # load some cards
        usage = {c.id: (1, data.draw(st.integers(0, c.devmem)), data.draw(st.integers(0, 100)))
                 for c in node.cards if data.draw(st.booleans())}
        m.apply(i, usage)
    r = m.reading()
    share = m.allocation_share()
    free = {}
    for i, node in enumerate(cluster.nodes):
        for k, c in enumerate(node.cards):
            row = m.row[c.id]
            fc = (c.devcore - m.usedcores[row]) / c.devcore
            fm = (c.devmem - m.usedmem[row]) / c.devmem
            usable = c.health and m.used[row] < c.count
            free[c.id] = min(max(min(fc, fm), 0.0), 1.0) if usable else 0.0
    assert share.shape == (m.n_cards,)
    assert r["unfit_gpu"] == pytest.approx(unfit_by_hand(cluster, shapes, free), abs=1e-5)
    assert r["frag_gpu"] + 1e-5 >= r["unfit_gpu"]
    assert r["stranded_gpu"] == pytest.approx(max(r["frag_gpu"] - r["unfit_gpu"], 0), abs=1e-6)
    # the per-group sums add up to the cluster's
    rows = m.group_readings(changed_only=False)
    assert sum(row[1] for row in rows) == m.n_cards
    assert sum(row[9] for row in rows) == pytest.approx(r["unfit_gpu"], abs=1e-5)
    assert sum(row[8] for row in rows) == pytest.approx(r["frag_gpu"], abs=1e-5)


def test_a_card_hamis_nvidia_backend_never_offers_counts_in_no_total():
    # a T4 beside an Enflame GCU on one node, and a node of Ascend cards: every reading
    # equals the cluster's without those cards (hamisim.devices)
    shapes = [Shape(0, 1, pct=50, cores=50, weight=0.5), Shape(0, 2, pct=100, cores=100,
                                                              weight=0.5)]
    mixed = Cluster((Node("m", (card("A"), card("GCU", 1, type="Enflame-S60", devmem=32768))),
                     Node("npu", tuple(card(f"N{k}", k, type="Ascend910B") for k in range(4)))))
    alone = Cluster((Node("m", (card("A"),)), Node("npu", ())))
    got, want = ClusterMeter(mixed, shapes), ClusterMeter(alone, shapes)
    assert got.reading() == want.reading()
    assert got.reading()["hami_gpu_total"] == 1 and got.reading()["nodes_gpu_idle"] == 1
    for m in (got, want):
        m.apply(0, {"A": (1, 2000, 30)})
    assert got.reading() == want.reading() and got.reading()["nodes_gpu_idle"] == 0
    # per group too (the groups are named by card type, so apart from the names)
    assert [row[1:] for row in got.group_readings(changed_only=False)] == \
        [row[1:] for row in want.group_readings(changed_only=False)]
    # the cards keep their rows (HAMi's per-card figures list them), with no share
    assert got.n_cards == 6 and list(got.allocation_share()) == [0.3, 0, 0, 0, 0, 0]
