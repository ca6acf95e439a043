"""The scale-up what-if: the fewest new nodes, per node group, for the pending pods.

Not HAMi behaviour: a question HAMi users ask of the cluster autoscaler. Given
a cluster (and the pods running on it, an initial state), the pods pending on
it and node-group templates (a cluster file whose groups are the kinds of node
that can be added, ``replicas`` the most of each), :func:`plan_scaleup` finds
the cheapest set of additions (each group's cost per node, 1 by default: the
fewest nodes) under which every pending pod binds when the pods are placed
together, one scheduling pass in kube-scheduler's queue order (priority, then
arrival, then file order), each decision HAMi v2.10's on the kernel, each
bound pod's use seen by the next.

The search lists additions by increasing cost and schedules each in turn, so
the first that places every pod is optimal. Beyond ``max_evaluations`` it
stops and goes greedy (add the node that places the most further pods per
unit of cost, until all are placed); every addition cheaper than the
exhaustive frontier was tried and failed, so the answer is reported with that
lower bound.

Beside it, what HAMi v2.10's dry-run filter for the autoscaler concludes pod by
pod (:func:`dry_run_verdicts`; HAMi's ``docs/develop/dry-run-filter-design.md``
and ``Scheduler.filterSimulation``): a request carrying whole Node objects
rebuilds their cards from the ``hami.io/node-nvidia-register`` annotation with
zero usage, so each pod is judged alone against one empty template node (pods
planned together cannot see each other's use), and a template without the
annotation, as a group with no node yet has, answers ``node unregistered``.
(Its live ResourceQuota cache, which that Fit still reads, is not modelled.)
"""
from __future__ import annotations

import dataclasses
import heapq
import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from hamisim.cluster import Cluster, Node
from hamisim.errors import HamisimError
from hamisim.hami.decision import NODE_UNREGISTERED
from hamisim.io.initialstate import InitialState
from hamisim.kube.queue import active_queue_order
from hamisim.pods import Pod
from hamisim.registry import not_hamis
from hamisim.sim.kernel import KernelScheduler
from hamisim.studies.unplaceable import find_unplaceable
from hamisim.workload import Trace

__all__ = ["NodeGroup", "ScaleUpPlan", "plan_scaleup", "node_groups",
           "queue_order", "dry_run_verdicts", "unplaceable_pending", "DEFAULT_MAX_EVALUATIONS"]

#: additions tried exhaustively before the search goes greedy
DEFAULT_MAX_EVALUATIONS = 2000


@dataclass(frozen=True)
class NodeGroup:
    """A kind of node the autoscaler can add: a template node, the most nodes
    that may be added, their cost each, and how many the cluster has now."""

    name: str
    template: Node
    max_new: int
    cost: float = 1.0
    existing: int = 0


@dataclass
class ScaleUpPlan:
    """What :func:`plan_scaleup` found."""

    #: nodes to add per group (every group listed), ``None`` when even the most
    #: nodes of every group leave some pod unplaced
    add: dict[str, int] | None
    cost: float | None
    #: ``exact`` (cheapest possible) or ``greedy`` (see ``lower_bound``)
    method: str
    #: every addition cheaper than this was tried and failed
    lower_bound: float
    evaluations: int
    #: pending pods placed without adding any node, and with the plan
    placed_now: int
    placed: int
    pending: int
    #: the pods left unplaced with the most of every group (when ``add`` is None)
    unplaced: list[str] = field(default_factory=list)


def node_groups(templates: Cluster, cluster: Cluster,
                costs: Mapping[str, float] | None = None) -> list[NodeGroup]:
    """The groups of a templates cluster file: per group (a node's ``group``: the
    entry's ``group`` key, else its ``name_prefix``; a single node without one is
    a group of its own, by ``name``) the first node as template and the node
    count as the most that may be added; ``existing`` counts the cluster's nodes
    of that group, else (a cluster without that group, e.g. imported) its nodes
    of the template's kind (same cards: type, memory, cores, slots).

    ``costs`` are keyed by group name or by another name the templates file
    gives it (:attr:`~hamisim.cluster.Cluster.group_aliases`: an entry's
    ``name_prefix`` or ``name``); a name of neither, or two names of one group,
    is a ``ValueError`` listing the names accepted."""
    seen: dict[str, list[Node]] = {}
    for node in templates.nodes:
        seen.setdefault(node.group or node.name, []).append(node)
    bad = [name for name, cost in (costs or {}).items() if not 0 < cost < math.inf]
    if bad:
        raise ValueError(f"--cost must be a positive number per node: {', '.join(bad)}")
    costs = _costs_by_group(costs or {}, seen, templates.group_aliases)
    have: dict[str, int] = {}
    for node in cluster.nodes:
        if node.group:
            have[node.group] = have.get(node.group, 0) + 1
    kinds: dict[tuple, int] = {}
    for node in cluster.nodes:
        kinds[_kind(node)] = kinds.get(_kind(node), 0) + 1
    # a group the cluster file does not name (an imported cluster has no groups)
    # counts the nodes of its template's kind
    return [NodeGroup(name, nodes[0], len(nodes), float(costs.get(name, 1.0)),
                      have.get(name) or kinds.get(_kind(nodes[0]), 0))
            for name, nodes in seen.items()]


def _costs_by_group(costs: Mapping[str, float], groups: Mapping[str, object],
                    aliases: Mapping[str, str]) -> dict[str, float]:
    """``costs`` keyed by group name; a group's own name wins over an alias."""
    out: dict[str, float] = {}
    given: dict[str, str] = {}
    unknown = []
    for name, cost in costs.items():
        group = name if name in groups else aliases.get(name)
        if group not in groups:
            unknown.append(name)
            continue
        if group in out:
            raise ValueError(f"--cost gives group {group} twice ({given[group]} and {name})")
        out[group], given[group] = float(cost), name
    if unknown:
        other: dict[str, list[str]] = {}
        for alias, group in aliases.items():
            if alias not in groups:
                other.setdefault(group, []).append(alias)
        accepted = ", ".join(f"{g} (or {', '.join(other[g])})" if g in other else g
                             for g in groups)
        raise ValueError(f"--cost names no node group of the templates: "
                         f"{', '.join(sorted(unknown))} (accepted: {accepted})")
    return out


def _kind(node: Node) -> tuple:
    """What makes two nodes the same kind: their cards' type, memory, cores and
    slots (the autoscaler's template stands for nodes like that)."""
    return tuple(sorted((c.type, c.devmem, c.devcore, c.count) for c in node.cards))


def queue_order(trace: Trace) -> list[Pod]:
    """The pending pods as kube-scheduler's active queue pops them: higher
    priority first, then earlier arrival, then file order."""
    rows = active_queue_order(trace.priority, trace.arrival, range(len(trace)))
    return [trace.trace_pod(i).pod for i in rows]


def _new_node(template: Node, name: str) -> Node:
    """A copy of ``template`` named ``name``, its cards renamed after it."""
    def rename(card_id: str) -> str:
        return card_id.replace(template.name, name) if template.name in card_id \
            else f"{card_id}@{name}"
    ids = {c.id: rename(c.id) for c in template.cards}
    cards = tuple(dataclasses.replace(c, id=ids[c.id]) for c in template.cards)
    pairs = {ids[a]: {ids[b]: s for b, s in row.items()}
             for a, row in template.pair_scores.items()}
    return dataclasses.replace(template, name=name, cards=cards, pair_scores=pairs,
                               cordon=frozenset(ids[c] for c in template.cordon))


def _grown(cluster: Cluster, groups: Sequence[NodeGroup], add: Sequence[int]) -> Cluster:
    new = [_new_node(g.template, f"{g.name}-new-{k}")
           for g, n in zip(groups, add) for k in range(n)]
    return dataclasses.replace(cluster, nodes=tuple(cluster.nodes) + tuple(new))


def placed_count(cluster: Cluster, state: InitialState | None, pods: Sequence[Pod]) -> \
        tuple[int, list[str]]:
    """How many of ``pods`` bind in one pass, in order, on ``cluster`` (with the
    state's pods running), and the names of those that do not."""
    sched = KernelScheduler(cluster)
    if state is not None:
        state.adopt_into(sched, cluster)
    left = []
    for pod in pods:
        try:
            d = sched.schedule(pod)
        except ValueError:          # HAMi refuses the pod outright: no node helps
            left.append(pod.name)
            continue
        if not d.bound:
            left.append(pod.name)
    return len(pods) - len(left), left


def plan_scaleup(cluster: Cluster, groups: Sequence[NodeGroup], pods: Sequence[Pod],
                 state: InitialState | None = None,
                 max_evaluations: int = DEFAULT_MAX_EVALUATIONS) -> ScaleUpPlan:
    """The cheapest additions that place every pod of ``pods`` (module docstring)."""
    policy = not_hamis(cluster.scheduler.node_scheduler_policy,
                       cluster.scheduler.gpu_scheduler_policy)
    if policy is not None:
        raise HamisimError(f"scaleup places pods under HAMi's own policies, not under {policy}")
    n_groups = len(groups)
    evaluations = 0

    def placed(add: tuple[int, ...]) -> tuple[int, list[str]]:
        nonlocal evaluations
        evaluations += 1
        return placed_count(_grown(cluster, groups, add), state, pods)

    def plan(add, method, bound, now, done, left=()) -> ScaleUpPlan:
        names = [g.name for g in groups]
        cost = None if add is None else sum(g.cost * n for g, n in zip(groups, add))
        return ScaleUpPlan(None if add is None else dict(zip(names, add)), cost, method,
                           bound, evaluations, now, done, len(pods), list(left))

    zero = (0,) * n_groups
    now, left = placed(zero)
    if not left:
        return plan(zero, "exact", 0.0, now, now)
    most = tuple(g.max_new for g in groups)
    best, left_most = placed(most)
    if left_most:
        return plan(None, "exact", math.inf, now, best, left_most)
    # additions by increasing cost, then fewer nodes, then group order
    heap = [(0.0, 0, zero)]
    queued = {zero}
    bound = 0.0
    while heap:
        cost, _, add = heapq.heappop(heap)
        bound = cost
        if add != zero:
            if evaluations >= max_evaluations:
                break
            done, left = placed(add)
            if not left:
                return plan(add, "exact", cost, now, done)
        for j, g in enumerate(groups):
            if add[j] < g.max_new:
                nxt = add[:j] + (add[j] + 1,) + add[j + 1:]
                if nxt not in queued:
                    queued.add(nxt)
                    heapq.heappush(heap, (cost + g.cost, sum(nxt), nxt))
    else:
        raise AssertionError("the most nodes place every pod, so the search ends there")
    # greedy from nothing: the node placing the most further pods per unit cost
    add = list(zero)
    done = now
    while True:
        options = []
        for j, g in enumerate(groups):
            if add[j] < g.max_new:
                trial = tuple(add[:j] + [add[j] + 1] + add[j + 1:])
                got, left = placed(trial)
                options.append(((got - done) / g.cost if g.cost > 0 else math.inf,
                                -j, trial, got, left))
        _, _, trial, done, left = max(options)
        add = list(trial)
        if not left:
            return plan(tuple(add), "greedy", bound, now, done)


def dry_run_verdicts(cluster: Cluster, groups: Sequence[NodeGroup], pods: Sequence[Pod]) -> \
        dict[str, dict[str, str]]:
    """HAMi v2.10's dry-run filter, pod by pod: per pod and group, ``fits`` when
    the pod alone fits one empty node of the group, else the reason (HAMi's
    message); a group with no node yet answers ``node unregistered``."""
    out: dict[str, dict[str, str]] = {pod.name: {} for pod in pods}
    for g in groups:
        alone = Cluster((_new_node(g.template, f"{g.name}-template"),), cluster.scheduler)
        sched = KernelScheduler(alone)
        for pod in pods:
            verdict = out[pod.name]
            if not g.existing:
                verdict[g.name] = NODE_UNREGISTERED
                continue
            try:
                d = sched.schedule(pod)
            except ValueError as err:
                verdict[g.name] = str(err)
                continue
            verdict[g.name] = "fits" if d.bound else d.message
            sched.delete(pod.name)          # the next pod sees an empty node again
    return out


def unplaceable_pending(cluster: Cluster, groups: Sequence[NodeGroup],
                        pods: Sequence[Pod]) -> dict[str, str]:
    """``{pod name: reason}`` of the pods no addition can place: no node of the
    cluster, nor a new node of any group, could hold them even empty (one
    attempt each on the empty cluster plus one node per group that may grow,
    :func:`hamisim.studies.unplaceable.find_unplaceable`). Plan for the others."""
    grown = _grown(cluster, groups, [1 if g.max_new else 0 for g in groups])
    found = find_unplaceable(grown, pods)
    return {pods[i].name: reason for i, reason in found.items()}
