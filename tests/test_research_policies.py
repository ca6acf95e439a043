"""The FGD paper's research node policies (hamisim.research, hamisim/_research.pyx).

Hand-computed node and card choices of each policy on tiny clusters, the
HAMi-pod -> Open-Gpu-Share mapping, failure messages, and the property that
the compiled kernel and the plain-Python reference decide identically.
"""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.hami.decision import Pick
from hamisim.pods import Container, Pod
from hamisim.research.model import RESEARCH_POLICIES, card_milli, research_request
from hamisim.research.scheduler import ResearchScheduler
from hamisim.shapes import Shape
from hamisim.sim.backend import make_scheduler

BACKENDS = ("kernel", "reference")
GPU, CORES, PCT, MEM = ("nvidia.com/gpu", "nvidia.com/gpucores",
                        "nvidia.com/gpumem-percentage", "nvidia.com/gpumem")


def node(name, gpus, cpu=64_000, mem=256_000, model="T4", devmem=16_000):
    cards = tuple(Card(f"{name}-g{i}", i, 10, devmem, 100, f"NVIDIA-{model}")
                  for i in range(gpus))
    return Node(name, cards, cpu_milli=cpu, memory_mib=mem)


def cluster(*nodes, policy="fgd", **sched):
    return Cluster(tuple(nodes), SchedulerConfig(node_scheduler_policy=policy, **sched))


def share(name, milli, cpu=1000, mem=100, **ann):
    limits = {GPU: 1, CORES: milli // 10, PCT: milli // 10}
    return Pod(name, (Container(limits),), annotations=ann, cpu_milli=cpu, memory_mib=mem)


def whole(name, k=1, cpu=1000, mem=100, **ann):
    return Pod(name, (Container({GPU: k}),), annotations=ann, cpu_milli=cpu, memory_mib=mem)


def cpu_only(name, cpu=1000, mem=100):
    return Pod(name, (Container({}),), cpu_milli=cpu, memory_mib=mem)


def sched(cl, backend="kernel", shapes=(), seed=0):
    s = make_scheduler(cl, backend=backend, shapes=shapes, seed=seed)
    assert isinstance(s, ResearchScheduler)
    return s


def hold(s, name, node_index, card, milli, cpu=0):
    """Put a share pod of ``milli`` on card ``card`` (initial state)."""
    node = s.cluster.nodes[node_index]
    c = next(c for c in node.cards if c.id == card)
    s.adopt(name, node_index, [[Pick(card, c.devmem * milli // 1000, milli // 10, c.index)]],
            cpu_milli=cpu)


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------
def test_card_milli_rule():
    assert card_milli(81, 81) == 810
    assert card_milli(100, 100) == 1000
    assert card_milli(150, 101) == 1000        # cores capped at 100
    assert card_milli(0, 30) == 300            # percentage only
    assert card_milli(0, 101) == 1000          # MiB only: a whole card


def test_research_request_from_hami_pods():
    cfg = SchedulerConfig()
    r = research_request(share("a", 470, cpu=3000, mem=5), cfg)
    assert (r.cpu_milli, r.memory_mib, r.k, r.milli) == (3000, 5, 1, 470)
    r = research_request(whole("b", 4), cfg)         # webhook: cores 100
    assert (r.k, r.milli) == (4, 1000)
    r = research_request(cpu_only("c", cpu=0, mem=0), cfg)
    assert (r.k, r.milli, r.score_cpu, r.no_requests) == (0, 0, 100, True)
    r = research_request(Pod("d", (Container({GPU: 1, MEM: 2000}),)), cfg)
    assert (r.k, r.milli) == (1, 1000)
    r = research_request(share("e", 300, **{"nvidia.com/use-gputype": "T4,P100"}), cfg)
    assert r.use_gputype == "T4,P100"
    with pytest.raises(ValueError):
        research_request(Pod("f", (Container({GPU: 1, PCT: 150}),)), cfg)


def test_make_scheduler_dispatch():
    cl = cluster(node("a", 1), policy="gpupacking")
    for backend in BACKENDS:
        s = make_scheduler(cl, backend=backend)
        assert isinstance(s, ResearchScheduler) and s.backend == backend
        assert s.policy == "gpupacking"
    hami = make_scheduler(dataclasses.replace(cl, scheduler=SchedulerConfig()))
    assert not isinstance(hami, ResearchScheduler)
    assert isinstance(make_scheduler(cluster(node("a", 1), policy="FGD")), ResearchScheduler)


# ---------------------------------------------------------------------------
# Policies, hand-computed
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_bestfit_picks_the_tightest_node_and_card(backend):
    s = sched(cluster(node("a", 2), node("b", 2), policy="bestfit"), backend)
    hold(s, "x", 0, "a-g0", 600, cpu=1000)
    d = s.schedule(share("p", 300))
    # a: 1 - [.5 * 62000/128000 + .5 * 1100/8000] = 0.6890625 -> 68
    # b: 1 - [.5 * 63000/128000 + .5 * 1700/8000] = 0.6476563 -> 64
    assert s.core.best_score == 68
    assert (d.node, d.card_ids) == ("a", ["a-g0"])      # the card with 400 free
    assert d.containers[0][0] == Pick("a-g0", 16_000 * 300 // 1000, 30, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bestfit_whole_cards_take_the_lowest_fully_free(backend):
    s = sched(cluster(node("a", 4), policy="bestfit"), backend)
    hold(s, "x", 0, "a-g1", 100)
    d = s.schedule(whole("p", 2))
    assert d.card_ids == ["a-g0", "a-g2"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpupacking_prefers_partly_used_cards(backend):
    s = sched(cluster(node("e8", 8), node("e1", 1), node("p", 2), policy="gpupacking"),
              backend)
    hold(s, "x", 2, "p-g0", 500)
    d = s.schedule(share("s", 300))
    assert (d.node, d.card_ids, s.core.best_score) == ("p", ["p-g0"], 95)  # 100 - 50/10
    s.delete("s")
    d = s.schedule(whole("w"))
    # p needs one fully free card: 50 - 1; empty e1: max(33-1, 1); empty e8: max(25, 8)
    assert (d.node, d.card_ids, s.core.best_score) == ("p", ["p-g1"], 49)
    s.delete("w")
    hold(s, "y", 2, "p-g1", 500)
    assert s.schedule(whole("w2")).node == "e1"                # 32 beats 25
    assert s.core.best_score == 32


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpupacking_and_clustering_leave_cpu_only_pods_to_the_tie_break(backend):
    for policy in ("gpupacking", "gpuclustering"):
        s = sched(cluster(node("a", 1), node("b", 1), node("c", 1), policy=policy), backend)
        d = s.schedule(cpu_only("c1"))
        assert (s.core.best_score, s.core.n_tied, d.node) == (0, 3, "c")   # last of the tie


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpuclustering_bands(backend):
    s = sched(cluster(node("w", 4), node("s", 4), node("e", 4), policy="gpuclustering"),
              backend)
    assert s.schedule(whole("w1")).node == "e"       # all empty: 25 + 12 each, last node
    assert s.core.best_score == 37
    s.delete("w1")
    hold(s, "x", 1, "s-g0", 500)                     # s hosts a share pod
    s.adopt("whole", 0, [[Pick("w-g0", 16_000, 100, 0)]])   # w hosts a 1-card pod
    d = s.schedule(share("p", 200))
    # s: 75 + 25*4500//8000 = 89; e: 25 + 12 = 37; w: 0 + 25*5000//8000 = 15
    assert (d.node, d.card_ids, s.core.best_score) == ("s", ["s-g0"], 89)
    d = s.schedule(whole("q"))
    # w: 75 + 15 = 90 (only 1-card pods); s: 0 + 25*4700//8000 = 14; e: 37
    assert (d.node, s.core.best_score) == ("w", 90)
    assert s.schedule(cpu_only("c")).node == "e" and s.core.best_score == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_dotprod_smallest_normalised_dot_product(backend):
    s = sched(cluster(node("a", 2, cpu=64_000), node("b", 2, cpu=32_000), node("c", 2),
                      policy="dotprod"), backend)
    hold(s, "x", 2, "c-g0", 500, cpu=48_000)        # c: 16000 CPU and 1500 milli free
    d = s.schedule(cpu_only("p", cpu=16_000))
    # a: 1 - (.5*.125)/2 -> 96; b: 1 - (.25*.125)/2 -> 98; c: 1 - (.125*.125)/2 -> 99
    assert (d.node, s.core.best_score) == ("c", 99)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dotprod_takes_the_best_card(backend):
    s = sched(cluster(node("a", 4), policy="dotprod"), backend)
    hold(s, "x", 0, "a-g2", 300)
    hold(s, "y", 0, "a-g3", 600)
    assert s.schedule(share("p", 350)).card_ids == ["a-g3"]   # 400 free: the tightest


@pytest.mark.parametrize("backend", BACKENDS)
def test_fgd_prefers_the_placement_whose_fragmentation_grows_least(backend):
    shapes = [Shape(1000, 1, pct=100, cores=100, weight=1.0)]    # typical pod: 1 whole card
    s = sched(cluster(node("n1", 2), node("n2", 1), policy="fgd"), backend, shapes)
    hold(s, "x", 0, "n1-g0", 500)
    d = s.schedule(share("p", 500))
    # n1/g0: F 500 -> 0, 100*sigmoid(0.5) = 62; n1/g1: 500 -> 1000, 37; n2: 0 -> 500, 37
    assert (d.node, d.card_ids, s.core.best_score) == ("n1", ["n1-g0"], 62)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fgd_cpu_only_pods_avoid_starving_typical_pods_of_cpu(backend):
    shapes = [Shape(1000, 1, pct=100, cores=100, weight=0.5), Shape(500, 0, weight=0.5)]
    s = sched(cluster(node("a", 1, cpu=64_000), node("b", 1, cpu=1500), policy="fgd"),
              backend, shapes)
    d = s.schedule(cpu_only("c", cpu=1000))
    # b: the card shape loses its CPU: F 500 -> 1000 -> 100*sigmoid(-0.5) = 37; a: 50
    assert (d.node, s.core.best_score) == ("a", 50)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fgd_model_mismatch_counts_all_free(backend):
    # the typical pod wants P100: the T4 node's free milli is all fragment either way
    shapes = [Shape(1000, 1, pct=50, cores=50, use_gputype="P100", weight=1.0)]
    s = sched(cluster(node("t", 2), node("p", 1, model="P100"), policy="fgd"), backend, shapes)
    d = s.schedule(share("x", 500))
    # t: 2000 -> 1500 fragment, +0.5 -> 62; p: 0 -> 0 (500 left still hosts), 50
    assert (d.node, s.core.best_score) == ("t", 62)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_is_seed_reproducible(backend):
    cl = cluster(*(node(f"n{i}", 2) for i in range(6)), policy="random")
    pods = [share(f"p{i}", 300) for i in range(20)]

    def run(seed):
        s = sched(cl, backend, seed=seed)
        return [(d.node, tuple(d.card_ids)) for d in (s.schedule(p) for p in pods)]

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_random_tie_break_is_seeded():
    cl = cluster(*(node(f"n{i}", 1) for i in range(8)), policy="bestfit",
                 node_tie_break="random")
    first = [sched(cl, seed=s).schedule(whole("p")).node for s in range(12)]
    assert len(set(first)) > 1
    assert first == [sched(cl, seed=s).schedule(whole("p")).node for s in range(12)]
    cl_last = dataclasses.replace(cl, scheduler=dataclasses.replace(cl.scheduler,
                                                                    node_tie_break="last"))
    assert {sched(cl_last, seed=s).schedule(whole("p")).node for s in range(12)} == {"n7"}



@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**63), ranges=st.lists(
    st.integers(1, 40) | st.integers(41, 2**31) | st.sampled_from(
        [2**31 + 1, 2**32 - 1, 2**32, 3, 5, 7, 1000, 3 * 2**30]), min_size=1, max_size=60))
def test_draws_in_c_are_generator_integers(seed, ranges):
    """ReplayCore draws a research policy's ties and Random's cards in C from the
    scheduler's generator: the values ``rng.integers(n)`` gives, the generator
    left in the same state (nothing drawn for n = 1, rejections and the 2**32
    edge included)."""
    import numpy as np

    from hamisim import _research
    ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
    ranges = ranges + [n + 1 for n in ranges if n < 2**32]   # (C: n <= 2**32)
    assert _research.bounded_draws(ours, ranges) == [int(numpys.integers(n)) for n in ranges]
    assert ours.bit_generator.state == numpys.bit_generator.state


# ---------------------------------------------------------------------------
# Failures, state
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_failure_message(backend):
    s = sched(cluster(node("a", 2), node("b", 2, cpu=500), node("c", 1, model="P100"),
                      node("d", 0), policy="bestfit"), backend)
    d = s.schedule(whole("p", 3))
    assert not d.bound
    assert d.message == "0/4 nodes are available: 1 Insufficient cpu, 3 Insufficient GPU."
    d = s.schedule(whole("q", 2, **{"nvidia.com/use-gputype": "P100"}))
    assert d.message == ("0/4 nodes are available: 1 GPU model mismatch, 1 Insufficient cpu, "
                         "2 Insufficient GPU.")
    assert d.node_reasons["b"] == ["Insufficient cpu"]
    assert d.node_reasons["a"] == ["GPU model mismatch"]
    assert d.node_reasons["c"] == ["Insufficient GPU"]
    assert d.node_reasons["d"] == ["Insufficient GPU"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_delete_and_usage(backend):
    s = sched(cluster(node("a", 2), policy="gpupacking"), backend)
    d = s.schedule(share("p", 250))
    assert s.free_milli() == {"a-g0": 750, "a-g1": 1000}
    assert s.usage_by_card()["a-g0"] == (1, 16_000 * 250 // 1000, 25)
    assert d.devices == "a-g0,NVIDIA,4000,25:;"
    s.delete("p")
    assert s.free_milli() == {"a-g0": 1000, "a-g1": 1000}
    assert s.usage_by_card()["a-g0"] == (0, 0, 0)


def test_memory_and_unusable_cards():
    n = node("a", 2, mem=1000)
    n = dataclasses.replace(n, cards=(dataclasses.replace(n.cards[0], health=False),
                                      n.cards[1]))
    s = sched(cluster(n, policy="bestfit"))
    assert s.schedule(share("p", 100, mem=2000)).message == \
        "0/1 nodes are available: 1 Insufficient memory."
    assert s.schedule(share("q", 100)).card_ids == ["a-g1"]   # a-g0 is unhealthy


# ---------------------------------------------------------------------------
# Kernel == reference
# ---------------------------------------------------------------------------
MODELS = ("T4", "P100")


@st.composite
def scenarios(draw):
    n_nodes = draw(st.integers(1, 5))
    nodes = []
    for i in range(n_nodes):
        nodes.append(node(f"n{i}", draw(st.sampled_from([0, 1, 2, 4, 8])),
                          cpu=draw(st.sampled_from([4000, 16_000, 64_000])),
                          mem=draw(st.sampled_from([2000, 100_000])),
                          model=draw(st.sampled_from(MODELS))))
    policy = draw(st.sampled_from(RESEARCH_POLICIES))
    tie = draw(st.sampled_from(["last", "random"]))
    shapes = []
    for _ in range(draw(st.integers(0, 4))):
        nums = draw(st.sampled_from([0, 1, 1, 2]))
        cores = draw(st.sampled_from([25, 50, 100])) if nums else 0
        cores = 100 if nums > 1 else cores
        shapes.append(Shape(draw(st.sampled_from([500, 2000, 8000])), nums, pct=cores or 101,
                            cores=cores, use_gputype=draw(st.sampled_from(["", "P100"])),
                            weight=draw(st.floats(0.05, 1.0))))
    steps = []
    for j in range(draw(st.integers(1, 25))):
        if steps and draw(st.integers(0, 4)) == 0:
            steps.append(("delete", f"p{draw(st.integers(0, j - 1))}"))
            continue
        kind = draw(st.sampled_from(["share", "whole", "cpu"]))
        cpu = draw(st.sampled_from([0, 500, 3000, 12_000]))
        ann = {"nvidia.com/use-gputype": "T4"} if draw(st.integers(0, 5)) == 0 else {}
        if kind == "share":
            pod = share(f"p{j}", draw(st.sampled_from([50, 250, 470, 810])), cpu=cpu, **ann)
        elif kind == "whole":
            pod = whole(f"p{j}", draw(st.sampled_from([1, 1, 2, 4])), cpu=cpu, **ann)
        else:
            pod = cpu_only(f"p{j}", cpu=cpu, mem=draw(st.sampled_from([0, 100])))
        steps.append(("create", pod))
    return cluster(*nodes, policy=policy, node_tie_break=tie), shapes, steps, draw(
        st.integers(0, 5))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_kernel_equals_reference(sc):
    cl, shapes, steps, seed = sc
    k = sched(cl, "kernel", shapes, seed)
    r = sched(cl, "reference", shapes, seed)
    for op, arg in steps:
        if op == "delete":
            k.delete(arg)
            r.delete(arg)
            continue
        a, b = k.schedule(arg), r.schedule(arg)
        assert (a.node, a.containers, a.message) == (b.node, b.containers, b.message)
        assert a.node_reasons == b.node_reasons
        assert k.core.best_score == r.core.best_score
    assert k.free_milli() == r.free_milli()


def test_kernel_equals_reference_with_node_sampling():
    nodes = [node(f"n{i:03d}", 1 + i % 4, cpu=8000 + 1000 * (i % 7)) for i in range(150)]
    shapes = [Shape(1000, 1, pct=50, cores=50, weight=0.6), Shape(3000, 0, weight=0.4)]
    for policy in RESEARCH_POLICIES:
        cl = cluster(*nodes, policy=policy, percentage_of_nodes_to_score=10)
        k, r = sched(cl, "kernel", shapes, 1), sched(cl, "reference", shapes, 1)
        for j in range(60):
            pod = share(f"p{j}", 300, cpu=2000) if j % 3 else whole(f"p{j}", 1 + j % 2)
            a, b = k.schedule(pod), r.schedule(pod)
            assert (a.node, a.card_ids, a.message) == (b.node, b.card_ids, b.message)
        assert k.next_start == r.next_start
