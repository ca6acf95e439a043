"""Choose a backend: the compiled kernel (default) or the readable reference.

Both backends take identical decisions; the reference is the executable
specification, the kernel the fast path. A missing compiled module is an
error, never a silent fallback to the slow path.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

from hamisim.cluster import Cluster
from hamisim.errors import HamisimError
from hamisim.hami.decision import Decision
from hamisim.pods import Pod

if TYPE_CHECKING:
    from hamisim.shapes import Shape

__all__ = ["BACKENDS", "Backend", "make_scheduler"]

BACKENDS = ("kernel", "reference")


class Backend(Protocol):
    """What the engine and the scenario runner need from a scheduler."""

    cluster: Cluster
    backend: str

    def schedule(self, pod: Pod, tie_draw: float | None = None) -> Decision: ...

    def delete(self, name: str) -> None: ...

    def usage_by_card(self) -> dict[str, tuple[int, int, int]]: ...


def make_scheduler(cluster: Cluster, backend: str = "kernel", shapes: Sequence["Shape"] = (),
                   seed: int = 0) -> Backend:
    """A fresh scheduler (empty pod cache) for ``cluster`` on ``backend``.

    When the cluster's ``node_scheduler_policy`` is one of the FGD paper's
    research policies (:data:`hamisim.research.model.RESEARCH_POLICIES`), or a
    user's :class:`~hamisim.research.policies.ModelPolicy` named
    ``python:PATH.py:NAME`` (reference backend only), the result
    is a :class:`hamisim.research.scheduler.ResearchScheduler`: ``shapes`` are then the
    typical pod shapes FGD scores with, ``seed`` seeds its tie-breaks and
    Random's draws. Both are ignored for HAMi's own policies.

    A ``python:PATH.py:NAME`` function ranking HAMi's nodes runs on the
    reference backend, or on the kernel when it is vectorised
    (:func:`hamisim.hami.noderows.vectorised`); a Python card policy on the
    reference only. The kernel refuses the others with a reason.
    """
    from hamisim.registry import is_plugin_policy, is_research_policy
    node_policy, card_policy = (cluster.scheduler.node_scheduler_policy,
                                cluster.scheduler.gpu_scheduler_policy)
    research_model = None
    if is_plugin_policy(node_policy):
        from hamisim.research.plugins import load_model_policy
        research_model = load_model_policy(node_policy)
    if is_research_policy(node_policy) or research_model is not None:
        if any(cluster.quota_of(ns) is not None for ns in cluster.quotas):
            raise HamisimError(
                f"the research policy {node_policy} models no "
                "ResourceQuota: remove the cluster file's 'quotas' to compare it")
        if any(c.mode == "mig" for n in cluster.nodes for c in n.cards):
            raise HamisimError(
                f"the research policy {node_policy} models no MIG "
                "placement: compare it on a cluster without 'mode: mig' cards")
        if backend not in BACKENDS:
            raise HamisimError(
                f"unknown backend {backend!r} (expected one of {', '.join(BACKENDS)})")
        from hamisim.research.scheduler import ResearchScheduler
        if backend == "kernel" and research_model is None:
            _kernel_module()
        policy = node_policy if research_model is None else research_model
        return ResearchScheduler(cluster, policy, shapes=shapes, seed=seed, backend=backend)
    if backend == "kernel" and is_plugin_policy(node_policy) and \
            not is_plugin_policy(card_policy):
        from hamisim.research.plugins import load_vectorised
        load_vectorised(node_policy)    # a per-candidate policy: say it needs the reference
        return _kernel_scheduler(cluster)
    if is_plugin_policy(node_policy) or is_plugin_policy(card_policy):
        if backend != "reference":
            theirs = node_policy if is_plugin_policy(node_policy) else card_policy
            raise HamisimError(f"the Python policy {theirs} runs on the readable backend: "
                               "add --backend reference")
        from hamisim.hami.reference import ReferenceScheduler
        from hamisim.research.plugins import load_card_policy, load_node_policy
        return ReferenceScheduler(
            cluster,
            node_score=load_node_policy(node_policy) if is_plugin_policy(node_policy) else None,
            card_order=load_card_policy(card_policy) if is_plugin_policy(card_policy) else None)
    if backend == "reference":
        from hamisim.hami.reference import ReferenceScheduler
        return ReferenceScheduler(cluster)
    if backend == "kernel":
        return _kernel_scheduler(cluster)
    raise HamisimError(f"unknown backend {backend!r} (expected one of {', '.join(BACKENDS)})")


def _kernel_scheduler(cluster: Cluster) -> Backend:
    """The compiled backend for ``cluster``, or the error that says how to get it."""
    try:
        from hamisim.sim.kernel import KernelScheduler
    except ImportError as exc:  # pragma: no cover - depends on the build
        raise _missing_kernel(exc) from exc
    return KernelScheduler(cluster)


def _missing_kernel(exc: ImportError) -> HamisimError:
    return HamisimError(
        "the compiled kernel hamisim._core is not built; reinstall with "
        "`pip install .` (a C compiler is needed), or pass --backend reference "
        f"({exc})")


def _kernel_module():
    """The compiled kernel, or the error that says how to get it."""
    try:
        from hamisim import _core
    except ImportError as exc:  # pragma: no cover - depends on the build
        raise _missing_kernel(exc) from exc
    return _core
