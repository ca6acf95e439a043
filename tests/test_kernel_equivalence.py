"""The compiled kernel takes the reference's decision in every case.

Random clusters (mixed card types, up to 16 cards per node so Go's pdqsort
path is exercised, cordons, pair scores, CPU/memory, labels, taints, cordoned
nodes) and random pods (selectors, tolerations, node affinity, nominated
pods' CPU and memory, a nominated node's first look) in random sequences of
creates and deletes are run through both backends; every step must give the
identical :class:`~hamisim.hami.decision.Decision` (or raise the identical error)
and leave identical per-card usage.
"""
from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies import SLOW, clusters, pods

from hamisim.cluster import Cluster
from hamisim.devices import offered_to
from hamisim.hami.reference import ReferenceScheduler
from hamisim.sim.kernel import KernelScheduler


def _run(sched, pod, tie_draw, **kube):
    """The decision, or the input error the pod gets (HAMi's webhook refusing it,
    HAMi's Filter failing on its annotations): both backends must agree on
    it. Any other exception is a bug and fails the test."""
    try:
        return sched.schedule(pod, tie_draw, **kube), None
    except ValueError as exc:
        return None, (type(exc), str(exc))


def _check_sequence(data, cluster: Cluster, max_steps: int) -> None:
    ref, ker = ReferenceScheduler(cluster), KernelScheduler(cluster)
    if any(len(n.cards) > 12 for n in cluster.nodes):
        event("a node with > 12 cards (pdqsort)")
    card_ids = [c.id for n in cluster.nodes for c in n.cards]
    names: list[str] = []
    for step in range(data.draw(st.integers(1, max_steps), label="steps")):
        op = data.draw(st.sampled_from(["create", "create", "create", "retry", "delete"]),
                       label="op") if names else "create"
        if op == "delete":
            name = data.draw(st.sampled_from(names), label="delete")
            ref.delete(name)
            ker.delete(name)
        else:
            name = f"pod-{step}" if op == "create" else data.draw(st.sampled_from(names))
            pod = data.draw(pods(name, card_ids, what_ifs=True), label="pod")
            tie_draw = data.draw(st.none() | st.floats(0, 1, exclude_max=True), label="tie")
            kube = {}
            if data.draw(st.integers(0, 4), label="kube") == 0:
                # kube-scheduler's view: pods nominated to nodes after a
                # preemption, and a nominated pod's first look at its node
                n = len(cluster.nodes)
                kube["nominated"] = {data.draw(st.integers(0, n - 1)): (
                    data.draw(st.sampled_from([0, 500, 4000])),
                    data.draw(st.sampled_from([0, 1024])))}
                if data.draw(st.booleans()):
                    kube["only"] = data.draw(st.integers(0, n - 1), label="only")
            denial = ref.admission_denial(pod)
            assert ker.admission_denial(pod) == denial, (step, pod)
            if denial is not None:
                event("refused for its quota")
            want, want_err = _run(ref, pod, tie_draw, **kube)
            got, got_err = _run(ker, pod, tie_draw, **kube)
            assert got_err == want_err, (step, pod)
            if "only" in kube and want is not None and not want.bound:
                # the nominated node refused the pod: nothing else is compared
                # (kube-scheduler goes on with a full pass)
                assert got is not None and not got.bound, (step, pod)
                continue
            assert got == want, (step, pod)
            if want is not None and not want.bound:
                assert got.n_potential == want.n_potential, (step, pod)
            event("error" if want_err else "bound" if want.bound else "unschedulable")
            if want is not None and not want.bound and "ResourceQuotaNotFit" in want.message:
                event("a node refused for the quota")
            if want is not None and not want.bound and "CardReservedByMutex" in want.message:
                event("a card refused as reserved (mutex-reserve)")
            if want is not None and want.bound and any(len(c) > 1 for c in want.containers):
                event("multi-card container bound")
            if want is not None and want.bound and any(p.mig for c in want.containers
                                                       for p in c):
                event("MIG instance bound")
            if want is not None and not want.bound and "CardMigTopologyInfeasible" in \
                    want.message:
                event("a MIG card refused for its geometry")
            if name not in names:
                names.append(name)
        assert ker.usage_by_card() == ref.usage_by_card(), step
        if ker.state.has_mig:
            assert _mig_in_use(ker) == _mig_in_use(ref), step
        assert ker.next_start == ref.next_start, step
        for ns in [ns for ns in cluster.quotas if cluster.quota_of(ns) is not None]:
            assert ker.namespace_usage(ns) == ref.namespace_usage(ns), (step, ns)


def _mig_in_use(sched) -> dict[str, int]:
    """Per MIG card, the slots its instances cover (a bit mask)."""
    if isinstance(sched, KernelScheduler):
        s = sched.state
        occ = s.mig_arrays["mig_occ"].tolist()
        return {cid: occ[r] for r, cid in enumerate(s.card_ids) if s.mig_arrays["is_mig"][r]}
    out = {}
    for cards in sched.card_usage():
        for c in cards:
            # MIG is NVIDIA's alone (a card of another type in mode "mig" is none)
            if c.mode == "mig" and offered_to("NVIDIA", c.type):
                mask = 0
                for pl in c.mig_in_use:
                    mask |= pl.mask
                out[c.id] = mask
    return out


@settings(max_examples=800, deadline=None, suppress_health_check=SLOW)
@given(cluster=clusters(), data=st.data())
def test_kernel_equals_reference(cluster, data):
    _check_sequence(data, cluster, max_steps=10)


@settings(max_examples=300, deadline=None, suppress_health_check=SLOW)
@given(cluster=clusters(max_nodes=3, max_cards=8, modes=["mig", "mig", "mig", "hami-core"]),
       data=st.data())
def test_kernel_equals_reference_mig(cluster, data):
    """Clusters of MIG cards (and some hami-core ones beside them): profile
    choice, placements, revisits, and deletes that free placements."""
    _check_sequence(data, cluster, max_steps=14)


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(cluster=clusters(min_nodes=100, max_nodes=130, max_cards=2), data=st.data())
def test_kernel_equals_reference_sampled_window(cluster, data):
    """>= 100 nodes: kube-scheduler's rotating sample of feasible nodes."""
    _check_sequence(data, cluster, max_steps=8)
