"""kube-scheduler's resource fit (NodeResourcesFit) in front of HAMi.

HAMi's GPU resources are ``ignoredByScheduler``, so kube-scheduler's fit
checks CPU and memory only; pods without HAMi resources are placed by
kube-scheduler itself, which hamisim approximates by its LeastAllocated score
(DESIGN §3).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Iterable, Sequence

from hamisim.cluster import Node
from hamisim.pods import Pod

__all__ = ["INSUFFICIENT_CPU", "INSUFFICIENT_MEMORY", "resource_fit_reasons",
           "least_allocated_choice", "pod_request"]

#: NodeResourcesFit's reasons, as kube-scheduler words them.
INSUFFICIENT_CPU = "Insufficient cpu"
INSUFFICIENT_MEMORY = "Insufficient memory"


def pod_request(app: Iterable[Fraction], init: Iterable[tuple[Fraction, bool]] = (),
                overhead: Fraction = Fraction(0)) -> Fraction:
    """A pod's request of one resource as kube-scheduler counts it, on the node it
    asks for and, once bound, in that node's requested total for the pod's whole
    life (component-helpers ``PodRequests``, read by NodeResourcesFit and by
    NodeInfo's ``calculateResource``; init containers finishing change nothing).

    ``app``: the app containers' requests; ``init``: ``(request, restartable)``
    per init container in spec order, ``restartable`` for a sidecar
    (``restartPolicy: Always``). The larger of the app containers' sum plus every
    sidecar, and each init container on top of the sidecars started before it
    (each sidecar's running total counts as such a peak too); plus ``overhead``.
    """
    total = sum(app, Fraction(0))
    sidecars = peak = Fraction(0)
    for request, restartable in init:
        if restartable:
            sidecars += request
            peak = max(peak, sidecars)
        else:
            peak = max(peak, request + sidecars)
    return max(total + sidecars, peak) + overhead


def resource_fit_reasons(node: Node, requested: tuple[int, int], pod: Pod) -> list[str]:
    """NodeResourcesFit: the reasons a node cannot take the pod's CPU/memory.

    A node without ``cpu_milli`` / ``memory_mib`` does not constrain that resource;
    a pod that requests none of a resource fits it even on an overcommitted
    node (kube-scheduler checks a resource only when the request is positive).
    """
    reasons = []
    if node.cpu_milli is not None and 0 < pod.cpu_milli > node.cpu_milli - requested[0]:
        reasons.append(INSUFFICIENT_CPU)
    if node.memory_mib is not None and 0 < pod.memory_mib > node.memory_mib - requested[1]:
        reasons.append(INSUFFICIENT_MEMORY)
    return reasons


def least_allocated_choice(nodes: Sequence[Node], requested: Sequence[tuple[int, int]],
                           pod: Pod, tie_break: str = "last",
                           tie_draw: float | None = None) -> int | None:
    """Node for a pod without HAMi resources (placed by kube-scheduler itself).

    hamisim approximates kube-scheduler's default scoring by NodeResourcesFit
    ``LeastAllocated`` over CPU and memory (integer score 0..100, resources
    without a capacity ignored, a resource requested beyond its capacity
    scores 0 as ``leastRequestedScore`` has it); ties follow hamisim's node tie
    convention. ``requested``: what the node's bound pods request, without
    the nominated pods kube-scheduler's filter counted (its scores never see
    them). Returns the position in ``nodes``, or ``None`` if ``nodes`` is empty.
    """
    best: int | None = None
    best_score = -1
    scores = []
    for j, (node, (cpu, mem)) in enumerate(zip(nodes, requested)):
        parts = []
        if node.cpu_milli:
            parts.append(max(node.cpu_milli - cpu - pod.cpu_milli, 0) * 100 // node.cpu_milli)
        if node.memory_mib:
            parts.append(max(node.memory_mib - mem - pod.memory_mib, 0) * 100
                         // node.memory_mib)
        score = sum(parts) // len(parts) if parts else 0
        scores.append(score)
        if score >= best_score:
            best, best_score = j, score
    if best is not None and tie_break == "random" and tie_draw is not None:
        tied = [j for j, s in enumerate(scores) if s == best_score]
        best = tied[min(int(tie_draw * len(tied)), len(tied) - 1)]
    return best
