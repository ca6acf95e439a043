"""kube-scheduler's node sampling in front of HAMi (``percentageOfNodesToScore``).

In clusters of 100 nodes or more kube-scheduler stops its filter pass once it
has found enough feasible nodes, starting each pod's search where the last
one stopped, so HAMi's extender only sees a rotating sample of the feasible
nodes (DESIGN §3).
"""
from __future__ import annotations

from typing import Callable

__all__ = ["num_feasible_nodes_to_find", "sample_feasible", "MIN_FEASIBLE_NODES",
           "MIN_FEASIBLE_PERCENTAGE", "DEFAULT_PERCENTAGE"]

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
