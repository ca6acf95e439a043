"""The kernel's fast node choice (per-node aggregates, candidates in policy order)
takes the reference's decision on larger, partly full clusters.

The kernel skips nodes whose aggregates show they cannot fit and fully
evaluates candidates best first, stopping at the first fit; this is only
exercised when many nodes are full or nearly so and many scores tie, so each
example first fills a cluster of up to 30 nodes with fractional, whole-card and
mutex pods (comparing every decision), then runs a random sequence as in
tests/test_kernel_equivalence.py.
"""
from __future__ import annotations

from dataclasses import replace

from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_kernel_equivalence import SLOW, _run, clusters, pods

from hamisim.hami.reference import ReferenceScheduler
from hamisim.pods import GPU, GPUCORES, GPUMEM, GPUMEM_PERCENTAGE, Container, Pod
from hamisim.sim.kernel import KernelScheduler


@st.composite
def fill_pods(draw, name: str):
    limits = {GPU: draw(st.sampled_from([1, 1, 1, 2, 3]))}
    kind = draw(st.sampled_from(["pct", "pct", "mem", "whole"]))
    if kind == "pct":
        limits[GPUMEM_PERCENTAGE] = draw(st.sampled_from([10, 20, 25, 50, 70, 100]))
        limits[GPUCORES] = draw(st.sampled_from([0, 10, 25, 50, 100]))
    elif kind == "mem":
        limits[GPUMEM] = draw(st.sampled_from([1000, 4000, 8000, 15360]))
        limits[GPUCORES] = draw(st.sampled_from([0, 30, 60]))
    ann = {}
    if draw(st.integers(0, 4)) == 0:
        ann["hami.io/gpu-scheduler-policy"] = draw(st.sampled_from(
            ["mutex", "mutex,binpack", "binpack", "spread", "mutex,binpack,numa", "mutex-reserve",
             "mutex-reserve,binpack"]))
    if draw(st.integers(0, 4)) == 0:
        ann["hami.io/node-scheduler-policy"] = draw(st.sampled_from(["binpack", "spread"]))
    if draw(st.integers(0, 9)) == 0:
        ann["nvidia.com/use-gputype"] = draw(st.sampled_from(["T4", "A100", "a10"]))
    cpu = draw(st.sampled_from([0, 0, 500, 4000]))
    return Pod(name, (Container(limits=limits),), (), ann, cpu, 0)


@settings(max_examples=110, deadline=None, suppress_health_check=SLOW)
@given(cluster=clusters(min_nodes=8, max_nodes=30, max_cards=8), data=st.data())
def test_fast_choice_on_filled_clusters(cluster, data):
    ref, ker = ReferenceScheduler(cluster), KernelScheduler(cluster)
    n_fill = data.draw(st.integers(10, 60), label="fill")
    for k in range(n_fill):
        pod = data.draw(fill_pods(f"fill-{k}"), label="fill pod")
        tie_draw = data.draw(st.none() | st.floats(0, 1, exclude_max=True), label="tie")
        want, want_err = _run(ref, pod, tie_draw)
        got, got_err = _run(ker, pod, tie_draw)
        assert got_err == want_err, (k, pod)
        assert got == want, (k, pod)
        assert ker.next_start == ref.next_start, k
        if want is not None:
            event("fill bound" if want.bound else "fill unschedulable")
    assert ker.usage_by_card() == ref.usage_by_card()
    # Then creates, retries and deletes of any pod shape from the filled state.
    card_ids = [c.id for n in cluster.nodes for c in n.cards]
    names = [f"fill-{k}" for k in range(n_fill)]
    for step in range(data.draw(st.integers(1, 8), label="steps")):
        op = data.draw(st.sampled_from(["create", "create", "delete"]), label="op")
        if op == "delete":
            name = data.draw(st.sampled_from(names), label="delete")
            ref.delete(name)
            ker.delete(name)
        else:
            pod = data.draw(pods(f"pod-{step}", card_ids), label="pod")
            tie_draw = data.draw(st.none() | st.floats(0, 1, exclude_max=True), label="tie")
            want, want_err = _run(ref, pod, tie_draw)
            got, got_err = _run(ker, pod, tie_draw)
            assert got_err == want_err, (step, pod)
            assert got == want, (step, pod)
            names.append(pod.name)
        assert ker.usage_by_card() == ref.usage_by_card(), step
        assert ker.next_start == ref.next_start, step


def test_memory_percentage_boundaries():
    """A card whose free memory is at the edge of a percentage request: the
    kernel must not skip the node (binpack prefers the used node A over B)."""
    from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
    from hamisim.hami.decision import Pick

    cases = 0
    for devmem in (7, 100, 1000, 8191, 15360):
        cluster = Cluster(tuple(
            Node(name, (Card(id=f"GPU-{name}", count=10, devmem=devmem, devcore=100,
                             type="NVIDIA-T4"),))
            for name in ("a", "b")), SchedulerConfig(node_scheduler_policy="binpack"))
        ref, ker = ReferenceScheduler(cluster), KernelScheduler(cluster)
        for pct in range(1, 101):
            need = devmem * pct // 100
            for free in {need - 1, need, need + 1}:
                if not 0 <= free <= devmem:
                    continue
                for s in (ref, ker):
                    s.adopt("bg", 0, [[Pick("GPU-a", devmem - free, 0)]])
                pod = Pod("p", (Container(limits={GPU: 1, GPUMEM_PERCENTAGE: pct,
                                                  GPUCORES: 0}),))
                want, got = ref.schedule(pod), ker.schedule(pod)
                assert got == want, (devmem, pct, free)
                assert want.node == ("a" if free >= need else "b")
                for s in (ref, ker):
                    s.delete("p")
                cases += 1
    assert cases > 1000


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(cluster=clusters(min_nodes=1, max_nodes=300, max_cards=8), data=st.data())
def test_ordered_index_equals_the_scan(cluster, data):
    """When every node is examined, the kernel answers from its ordered node
    index; the same kernel scanning every node must take the same decision
    at every step of a fill with deletes, on clusters of up to 300 nodes."""
    cluster = replace(cluster, scheduler=replace(cluster.scheduler,
                                                 percentage_of_nodes_to_score=100))
    indexed, scan = KernelScheduler(cluster), KernelScheduler(cluster)
    scan._core.use_index = False
    names: list[str] = []
    for k in range(data.draw(st.integers(20, 120), label="steps")):
        if names and data.draw(st.integers(0, 5), label="delete?") == 0:
            name = data.draw(st.sampled_from(names), label="delete")
            indexed.delete(name)
            scan.delete(name)
            continue
        pod = data.draw(fill_pods(f"p{k}"), label="pod")
        want, want_err = _run(scan, pod, None)
        got, got_err = _run(indexed, pod, None)
        assert got_err == want_err, (k, pod)
        assert got == want, (k, pod)
        if want is not None and want.bound:
            names.append(pod.name)
            event("bound")
    assert indexed.usage_by_card() == scan.usage_by_card()


def test_a_failure_is_remembered_until_the_node_changes():
    """The memo of failed evaluations: a request that failed on a node is not
    evaluated there again until the node's cards change; the decisions and the
    failure text stay those of a kernel that evaluates every time."""
    from hamisim.cluster import Card, Cluster, Node
    from hamisim.hami.decision import Pick

    cluster = Cluster(tuple(
        Node(f"n{i}", tuple(Card(id=f"G{i}-{k}", index=k, count=10, devmem=8000, devcore=100,
                                 type="NVIDIA-T4") for k in range(2)))
        for i in range(4)))
    memo, plain = KernelScheduler(cluster), KernelScheduler(cluster)
    plain._core.use_memo = False
    for s in (memo, plain):
        for i in range(4):        # 3000 and 1000 MiB free: a candidate, but Fit fails
            s.adopt(f"a{i}", i, [[Pick(f"G{i}-0", 5000, 0)]])
            s.adopt(f"b{i}", i, [[Pick(f"G{i}-1", 7000, 0)]])
    two = Pod("two", (Container(limits={GPU: 2, GPUMEM: 3000}),))

    def attempt() -> int:
        got, want = memo.schedule(two), plain.schedule(two)
        assert got == want and got.node is None
        assert plain._core.n_evaluated >= 4      # every node, by the index and the scan
        return memo._core.n_evaluated
    assert attempt() == plain._core.n_evaluated  # the first failure: no memo yet
    assert attempt() == 4         # the memo is made, and filled once per node
    assert attempt() == 0         # nothing changed: every failure remembered
    for s in (memo, plain):       # node 1 changes (and still cannot take the pod)
        s.adopt("c", 1, [[Pick("G1-1", 500, 0)]])
    assert attempt() == 1
    assert attempt() == 0
    for s in (memo, plain):       # node 2 frees a card: the pod fits there
        s.delete("b2")
    got, want = memo.schedule(two), plain.schedule(two)
    assert got == want and got.node == "n2"
