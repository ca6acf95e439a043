"""kube-scheduler's sampling of feasible nodes (``percentageOfNodesToScore``).

Expectations come from kube-scheduler's own unit tests (``schedule_one_test.go``:
``TestNumFeasibleNodesToFind`` and ``TestFairEvaluationForNodes``) and from its
formula worked by hand (``numFeasibleNodesToFind``: below 100 nodes every
node; else ``n * p / 100`` with ``p = max(5, 50 - n/125)`` when unset, at
least 100), not from hamisim. The last test runs both backends on clusters
large enough for the window to be partial and to rotate.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SLOW, pods

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.hami.decision import Pick
from hamisim.hami.reference import ReferenceScheduler
from hamisim.kube.sampling import num_feasible_nodes_to_find, sample_feasible
from hamisim.sim.kernel import KernelScheduler


@pytest.mark.parametrize("percentage,n_nodes,want", [
    # kube-scheduler's TestNumFeasibleNodesToFind, case for case
    (0, 10, 10), (40, 10, 10), (0, 1000, 420), (40, 1000, 400), (0, 6000, 300),
    (40, 6000, 2400),
])
def test_kube_schedulers_own_table(percentage, n_nodes, want):
    assert num_feasible_nodes_to_find(percentage, n_nodes) == want


@pytest.mark.parametrize("percentage,n_nodes,want", [
    (0, 50, 50), (0, 99, 99), (30, 99, 99),            # fewer than 100 nodes: all of them
    (0, 100, 100),                                      # 50 % of 100 = 50, raised to 100
    (0, 200, 100), (0, 250, 120),                       # 49 %, 48 % (250/125 = 2)
    (0, 5000, 500),                                     # 50 - 40 = 10 %
    (0, 6249, 312),                                     # 50 - 49 = 1 % -> 5 %: 312.45
    (0, 12500, 625), (0, 20000, 1000),                  # 5 % floor
    (1, 20000, 200), (1, 5000, 100),                    # 50 -> raised to 100
    (10, 1500, 150), (99, 1500, 1485), (100, 1500, 1500), (100, 20000, 20000),
])
def test_the_formula_worked_by_hand(percentage, n_nodes, want):
    assert num_feasible_nodes_to_find(percentage, n_nodes) == want


def test_the_start_index_rotates_as_in_kube_schedulers_fairness_test():
    # TestFairEvaluationForNodes: 500 nodes, 30 %: 150 nodes per pass, the
    # next start advancing by 150 modulo 500, over more than two rounds
    n, start = 500, 0
    to_find = num_feasible_nodes_to_find(30, n)
    assert to_find == 150
    for i in range(2 * (n // to_find + 1)):
        window, rejected, start = sample_feasible(n, lambda _: [], 30, start)
        assert len(window) == to_find and not rejected
        assert start == (i + 1) * to_find % n


def test_rejected_nodes_are_examined_but_not_counted():
    # 300 nodes at 10 % (30, raised to 100 wanted), every third rejected,
    # search from 190: nodes 190, 191, ...
    # wrapping at 300; rejected ones are 190, 193, ... (i % 3 == 1). The 100th
    # feasible node is the 150th examined (two feasible per three examined).
    bad = {i for i in range(300) if i % 3 == 1}
    window, rejected, start = sample_feasible(
        300, lambda i: ["Insufficient cpu"] if i in bad else [], 10, 190)
    examined = [(190 + k) % 300 for k in range(150)]
    assert window == sorted(i for i in examined if i not in bad) and len(window) == 100
    assert sorted(rejected) == sorted(i for i in examined if i in bad)
    assert all(r == ["Insufficient cpu"] for r in rejected.values())
    assert start == (190 + 150) % 300


def _filled_cluster(n: int, pct: int, gpu_policy: str, node_policy: str, seed: int):
    """``n`` nodes of two T4s, every seventh with 8 CPUs, about 60 % of the
    cards holding a pod (8000, 12000 or 16000 MiB, some with 4 CPUs)."""
    rng = random.Random(seed)
    nodes = tuple(Node(f"n{i:04d}", (Card(f"G{i}a", 0, devmem=16000, type="NVIDIA-Tesla T4"),
                                     Card(f"G{i}b", 1, devmem=16000, type="NVIDIA-Tesla T4")),
                       cpu_milli=rng.choice([None, 8000]) if i % 7 == 0 else None)
                  for i in range(n))
    cluster = Cluster(nodes, SchedulerConfig(gpu_scheduler_policy=gpu_policy,
                                             node_scheduler_policy=node_policy,
                                             percentage_of_nodes_to_score=pct))
    ref, ker = ReferenceScheduler(cluster), KernelScheduler(cluster)
    for i, node in enumerate(nodes):
        for card in node.cards:
            if rng.random() < 0.6:
                pick = [[Pick(card.id, rng.choice([8000, 12000, 16000]), 0, card.index)]]
                cpu = rng.choice([0, 4000])
                for s in (ref, ker):
                    s.adopt(f"bg-{card.id}", i, pick, cpu_milli=cpu)
    return cluster, ref, ker


def _attempt(sched, pod):
    try:
        return sched.schedule(pod), None
    except ValueError as err:           # HAMi's Filter error: both must give it
        return None, str(err)


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW)
@given(n=st.integers(200, 1500), pct=st.sampled_from([0, 0, 10, 30]),
       gpu_policy=st.sampled_from(["binpack", "spread"]),
       node_policy=st.sampled_from(["binpack", "spread"]), seed=st.integers(0, 2**16),
       data=st.data())
def test_kernel_equals_reference_with_a_partial_rotating_window(n, pct, gpu_policy, node_policy,
                                                                seed, data):
    """More than half of the cards taken, so HAMi rejects much of each window."""
    cluster, ref, ker = _filled_cluster(n, pct, gpu_policy, node_policy, seed)
    ids = [c.id for node in cluster.nodes for c in node.cards]
    for step in range(6):
        pod = data.draw(pods(f"p{step}", ids), label="pod")
        assert _attempt(ker, pod) == _attempt(ref, pod), step
        assert ker.next_start == ref.next_start, step
    assert ker.usage_by_card() == ref.usage_by_card()
