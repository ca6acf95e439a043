"""kube-scheduler's FailedScheduling text (``FitError.Error()``).

``0/N nodes are available:`` then one ``"<count> <reason>"`` entry per
distinct reason string over the nodes that reported one, sorted as strings
(Go's ``sort.Strings``: ``"10 x"`` before ``"2 y"``), joined with ``", "`` and
closed by ``.``. DefaultPreemption's verdict, when it ran, follows after a
space (:mod:`hamisim.kube.scheduler`).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

__all__ = ["failed_scheduling_message", "histogram_message"]


def failed_scheduling_message(n_nodes: int, node_reasons: Mapping[str, Iterable[str]]) -> str:
    """kube-scheduler's FailedScheduling text (without any preemption suffix).

    One histogram entry per distinct reason string, ``"<count> <reason>"``,
    sorted as strings and joined with ``", "``.
    """
    hist: Counter[str] = Counter()
    for reasons in node_reasons.values():
        hist.update(reasons)
    return histogram_message(n_nodes, hist)


def histogram_message(n_nodes: int, hist: Mapping[str, int]) -> str:
    """:func:`failed_scheduling_message` from the reason histogram itself."""
    msg = f"0/{n_nodes} nodes are available:"
    entries = sorted(f"{n} {reason}" for reason, n in hist.items())
    if entries:
        msg += " " + ", ".join(entries) + "."
    return msg
