"""kube-scheduler's DefaultPreemption (its PostFilter) in front of HAMi.

When no node passes a pod's filters, kube-scheduler runs DefaultPreemption
(kube-scheduler v1.32, read from its source; the strings are the same from
v1.31 to v1.34). With HAMi's extender, which has no ``preemptVerb``, it goes:

1. **Eligibility.** ``preemptionPolicy: Never`` → ``not eligible due to
   preemptionPolicy=Never.``; a pod nominated to a node where a lower-priority
   pod is still terminating because of a preemption → ``not eligible due to a
   terminating pod on the nominated node.`` (unless that node now fails an
   unresolvable filter).
2. **Potential nodes**: those whose filter status is ``Unschedulable``:
   rejected by NodeResourcesFit (CPU, memory) or by HAMi's extender
   (``FailedNodes``). Nodes rejected by NodeUnschedulable, TaintToleration or
   NodeAffinity (``UnschedulableAndUnresolvable``) and nodes the sampling never
   examined count as ``Preemption is not helpful for scheduling``.
3. **Dry run** on each potential node from a random offset (at most
   ``max(10 % of them, 100)`` candidates once one is found): remove every pod of
   strictly lower priority; none → ``No preemption victims found for incoming
   pod``; the pod still does not pass the *in-tree* filters (CPU, memory, with
   nominated pods of at least its priority counted) → their reasons; else
   reprieve the removed pods, most important first (higher priority, then
   earlier start), keeping each that still lets the pod fit. HAMi is **not**
   asked: its devices play no part in the dry run. A node where every pod is
   reprieved yields the error ``expected at least one victim pod on node "N"``.
4. **No candidate**: the message after ``preemption:`` is a second
   ``0/N nodes are available: …`` sentence over the dry-run statuses, or the
   errors when there were any (joined as Go's error aggregate prints them).
5. **A candidate**: the node with the fewest PDB violations (hamisim models no
   PodDisruptionBudgets), the lowest highest-victim priority, the lowest sum of
   victim priorities, the fewest victims, the latest start among its
   highest-priority victims, then the first in dry-run order. Its victims are
   deleted, lower-priority pods nominated to it lose the nomination and the
   preemptor is nominated to it (the attempt's message has no ``preemption:``
   part then).

Where kube-scheduler depends on goroutine timing (the dry run is parallel and
the last tie is broken by Go map order) hamisim follows the dry-run order from
the seeded offset. The consequence for HAMi: a GPU pod rejected for devices
alone preempts nothing (the dry run sees its CPU and memory fit with every pod
in place, so it reports the error above); it preempts only when CPU or memory
is short too, and then victims chosen for CPU and memory may not free a card:
HAMi is asked again on the nominated node, as in a real cluster.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from hamisim.kube.fiterror import histogram_message

__all__ = [
    "NOT_HELPFUL", "NO_VICTIMS", "NEVER", "TERMINATING", "MIN_CANDIDATE_PERCENTAGE",
    "MIN_CANDIDATES", "Victim", "PostFilterResult", "num_candidates", "select_victims",
    "pick_candidate", "preempt", "no_victim_error", "aggregate_errors",
]

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
#: DefaultPreemptionArgs defaults
MIN_CANDIDATE_PERCENTAGE = 10
MIN_CANDIDATES = 100
_INT32_OFFSET = 2**31


@dataclass(frozen=True)
class Victim:
    """A pod running on a node, as preemption sees it."""

    name: str
    priority: int
    #: (bind time in s, bind order): kube-scheduler compares start times, which
    #: the API keeps in whole seconds; the bind order only breaks what is left
    start: tuple[float, int]
    cpu_milli: int = 0
    memory_mib: int = 0
    #: deleted by an earlier preemption but still terminating
    terminating: bool = False


@dataclass
class PostFilterResult:
    """What DefaultPreemption decided for one failed attempt.

    ``message`` is the text after the filter message (``preemption: …``), empty
    when a node was nominated. ``nominate``: the node the pod is nominated to
    (``None``: keep the nomination it has; ``-1``: clear it). ``victims``: pods
    to delete. ``cleared``: lower-priority pods nominated to the chosen node,
    which lose their nomination.
    """

    message: str = ""
    nominate: int | None = None
    victims: list[Victim] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    #: the dry run ended in an error (status Error, not Unschedulable)
    error: bool = False


def num_candidates(n_potential: int) -> int:
    """``calculateNumCandidates``: 10 % of the potential nodes, at least 100, at most all."""
    n = n_potential * MIN_CANDIDATE_PERCENTAGE // 100
    return min(max(n, MIN_CANDIDATES), n_potential)


def no_victim_error(node_name: str) -> str:
    """The dry run's error for a node where the pod fits with every pod in place."""
    return f'expected at least one victim pod on node "{node_name}"'


def aggregate_errors(errors: Sequence[str]) -> str:
    """Go's ``utilerrors.NewAggregate(errs).Error()``: one error as itself, more
    deduplicated, joined with ", " and bracketed."""
    seen = list(dict.fromkeys(errors))
    if len(errors) == 1 or len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def _more_important(v: Victim) -> tuple:
    # MoreImportantPod: higher priority first, then earlier start (whole
    # seconds, as the API stores it); kube-scheduler's sort is not stable, so
    # hamisim breaks what remains by bind order
    return (-v.priority, math.floor(v.start[0]), v.start[1])


def select_victims(priority: int, pods: Sequence[Victim],
                   fit_reasons: Callable[[Sequence[Victim]], list[str]]
                   ) -> tuple[list[Victim] | None, list[str]]:
    """``SelectVictimsOnNode`` for one node.

    ``fit_reasons(removed)`` gives the in-tree filter reasons of the pod on the
    node with ``removed`` taken off (``[]`` = it fits). Returns
    ``(victims, [])`` on success (possibly no victim at all), else
    ``(None, reasons)``.
    """
    lower = [v for v in pods if v.priority < priority]
    if not lower:
        return None, [NO_VICTIMS]
    reasons = fit_reasons(lower)
    if reasons:
        return None, reasons
    removed = list(lower)
    victims = []
    for v in sorted(lower, key=_more_important):
        removed.remove(v)
        if fit_reasons(removed):
            removed.append(v)
            victims.append(v)
    return victims, []


def pick_candidate(candidates: Sequence[tuple[int, list[Victim]]]) -> int:
    """``pickOneNodeForPreemption``: the position in ``candidates`` (node, victims)
    of the chosen one. Every victim list is non-empty and in importance order."""
    best = list(range(len(candidates)))

    def keep(score) -> None:
        top = max(score(candidates[i][1]) for i in best)
        best[:] = [i for i in best if score(candidates[i][1]) == top]

    keep(lambda vs: -vs[0].priority)
    keep(lambda vs: -sum(v.priority + _INT32_OFFSET for v in vs))
    keep(lambda vs: -len(vs))

    def latest_start(vs: list[Victim]) -> int:
        # pod start times are whole seconds in the API (RFC 3339): pods started
        # within one second tie, and the next rule decides
        top = vs[0].priority
        return min(math.floor(v.start[0]) for v in vs if v.priority == top)

    keep(latest_start)
    return best[0]


def preempt(*, priority: int, policy: str, n_nodes: int, node_names: Sequence[str],
            statuses: Mapping[int, list[str]], unresolvable: Callable[[list[str]], bool],
            pods_on: Callable[[int], Sequence[Victim]],
            fit_reasons: Callable[[int, Sequence[Victim]], list[str]],
            offset: Callable[[int], int], nominated: int = -1,
            nominated_pods: Callable[[int], Sequence[tuple[str, int]]] = lambda i: ()
            ) -> PostFilterResult:
    """DefaultPreemption for one pod that no node took.

    ``statuses``: every examined and rejected node (index) with its filter
    reasons; ``unresolvable(reasons)`` says whether such a status is
    ``UnschedulableAndUnresolvable``. ``pods_on(i)``: the pods running on node
    ``i``; ``fit_reasons(i, removed)``: the in-tree reasons of the pod on node
    ``i`` without ``removed``; ``offset(n)``: the dry run's random start among
    ``n`` potential nodes, called only when some potential node has pods of
    lower priority (elsewhere the outcome cannot depend on it).
    ``nominated``: the pod's nominated node (-1 none); ``nominated_pods(i)``:
    ``(name, priority)`` of the pods nominated to node ``i``.
    """
    if policy == "Never":
        return PostFilterResult("preemption: " + NEVER)
    if nominated >= 0:
        st = statuses.get(nominated)
        if not (st is not None and unresolvable(st)) and any(
                v.terminating and v.priority < priority for v in pods_on(nominated)):
            return PostFilterResult("preemption: " + TERMINATING)
    potential = [i for i in range(n_nodes)
                 if i in statuses and not unresolvable(statuses[i])]
    if not potential:
        return PostFilterResult(
            "preemption: " + histogram_message(n_nodes, {NOT_HELPFUL: n_nodes}), nominate=-1)
    start = 0
    if any(v.priority < priority for i in potential for v in pods_on(i)):
        start = offset(len(potential))
    wanted = num_candidates(len(potential))
    dry: dict[int, list[str]] = {}
    errors: list[str] = []
    candidates: list[tuple[int, list[Victim]]] = []
    for k in range(len(potential)):
        i = potential[(start + k) % len(potential)]
        victims, reasons = select_victims(priority, pods_on(i),
                                          lambda removed, i=i: fit_reasons(i, removed))
        if victims:
            candidates.append((i, victims))
            if len(candidates) >= wanted:
                break
        elif victims is not None:
            errors.append(no_victim_error(node_names[i]))
        else:
            dry[i] = reasons
    if not candidates:
        if errors:
            return PostFilterResult("preemption: " + aggregate_errors(errors), error=True)
        hist: dict[str, int] = {}
        for reasons in dry.values():
            for r in reasons:
                hist[r] = hist.get(r, 0) + 1
        if n_nodes > len(dry):
            hist[NOT_HELPFUL] = hist.get(NOT_HELPFUL, 0) + n_nodes - len(dry)
        return PostFilterResult("preemption: " + histogram_message(n_nodes, hist),
                                nominate=-1)
    node, victims = candidates[pick_candidate(candidates)]
    cleared = [name for name, p in nominated_pods(node) if p < priority]
    return PostFilterResult("", nominate=node, victims=victims, cleared=cleared)
