"""kube-scheduler in front of HAMi: resource fit and node sampling.

HAMi's extender only sees the nodes that kube-scheduler's own filters let
through, and in clusters of 100 nodes or more only a rotating sample of them
(``percentageOfNodesToScore``). HAMi's GPU resources are ``ignoredByScheduler``,
so kube-scheduler's fit checks CPU and memory only (DESIGN §3).
"""
from __future__ import annotations

from typing import Callable, Sequence

from .cluster import Node
from .outcome import INSUFFICIENT_CPU, INSUFFICIENT_MEMORY
from .pods import Pod

__all__ = ["num_feasible_nodes_to_find", "resource_fit_reasons", "sample_feasible",
           "least_allocated_choice"]

MIN_FEASIBLE_NODES = 100
MIN_FEASIBLE_PERCENTAGE = 5
DEFAULT_PERCENTAGE = 50


def num_feasible_nodes_to_find(percentage: int, n_nodes: int) -> int:
    """How many feasible nodes kube-scheduler looks for before it stops.

    ``percentage`` 0 means the adaptive default ``max(5, 50 - n/125)``.
    """
    if n_nodes < MIN_FEASIBLE_NODES or percentage >= 100:
        return n_nodes
    if percentage <= 0:
        percentage = max(MIN_FEASIBLE_PERCENTAGE, DEFAULT_PERCENTAGE - n_nodes // 125)
    return max(MIN_FEASIBLE_NODES, n_nodes * percentage // 100)


def resource_fit_reasons(node: Node, requested: tuple[int, int], pod: Pod) -> list[str]:
    """NodeResourcesFit: the reasons a node cannot take the pod's CPU/memory.

    A node without ``cpu_milli`` / ``memory_mib`` does not constrain that resource.
    """
    reasons = []
    if node.cpu_milli is not None and pod.cpu_milli > node.cpu_milli - requested[0]:
        reasons.append(INSUFFICIENT_CPU)
    if node.memory_mib is not None and pod.memory_mib > node.memory_mib - requested[1]:
        reasons.append(INSUFFICIENT_MEMORY)
    return reasons


def sample_feasible(n_nodes: int, reasons_of: Callable[[int], list[str]], percentage: int,
                    start: int) -> tuple[list[int], dict[int, list[str]], int]:
    """kube-scheduler's feasible-node search from a rotating start index.

    Visits nodes ``start, start+1, …`` (mod n) until enough feasible nodes are
    found. Returns the feasible nodes in cluster order (hamisim's tie
    convention), the rejected nodes with their reasons, and the next start
    index (advanced by the number of nodes examined).
    """
    if n_nodes == 0:
        return [], {}, 0
    wanted = num_feasible_nodes_to_find(percentage, n_nodes)
    feasible: list[int] = []
    rejected: dict[int, list[str]] = {}
    examined = 0
    for step in range(n_nodes):
        i = (start + step) % n_nodes
        examined += 1
        reasons = reasons_of(i)
        if reasons:
            rejected[i] = reasons
        else:
            feasible.append(i)
            if len(feasible) >= wanted:
                break
    feasible.sort()
    return feasible, rejected, (start + examined) % n_nodes


def least_allocated_choice(nodes: Sequence[Node], requested: Sequence[tuple[int, int]],
                           pod: Pod, tie_break: str = "last",
                           tie_draw: float | None = None) -> int | None:
    """Node for a pod without HAMi resources (placed by kube-scheduler itself).

    hamisim approximates kube-scheduler's default scoring by NodeResourcesFit
    ``LeastAllocated`` over CPU and memory (integer score 0..100, resources
    without a capacity ignored); ties follow hamisim's node tie convention.
    Returns the position in ``nodes``, or ``None`` if ``nodes`` is empty.
    """
    best: int | None = None
    best_score = -1
    scores = []
    for j, (node, (cpu, mem)) in enumerate(zip(nodes, requested)):
        parts = []
        if node.cpu_milli:
            parts.append((node.cpu_milli - cpu - pod.cpu_milli) * 100 // node.cpu_milli)
        if node.memory_mib:
            parts.append((node.memory_mib - mem - pod.memory_mib) * 100 // node.memory_mib)
        score = sum(parts) // len(parts) if parts else 0
        scores.append(score)
        if score >= best_score:
            best, best_score = j, score
    if best is not None and tie_break == "random" and tie_draw is not None:
        tied = [j for j, s in enumerate(scores) if s == best_score]
        best = tied[min(int(tie_draw * len(tied)), len(tied) - 1)]
    return best
