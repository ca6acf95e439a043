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

First an integer program (:func:`relaxation` and :func:`solve` below, HiGHS through
scipy's ``milp``: pods on node kinds under aggregate card-slot, GPU-memory,
GPU-core, CPU and memory capacities) gives a proven lower bound ``L`` of
the cost and its optimal addition, which is then scheduled: if it places every
pod it is the exact answer (``method: exact``, ``ip_confirmed``). Otherwise
the search lists additions by increasing cost and schedules each in turn,
skipping those cheaper than ``L`` and those the program itself rules out (both
provably place some pod nowhere), so the first that places every pod is
optimal. Beyond ``max_evaluations`` simulations it stops and goes greedy (add
the node that places the most further pods per unit of cost, until all are
placed), reported with the larger of ``L`` and the exhaustive frontier as its
lower bound and the gap between the two.

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

import numpy as np

from hamisim.cluster import Cluster, Node
from hamisim.errors import HamisimError
from hamisim.hami.decision import NODE_UNREGISTERED
from hamisim.io.initialstate import InitialState
from hamisim.kube.queue import active_queue_order
from hamisim.pods import GPU, GPUCORES, GPUMEM, Pod
from hamisim.registry import not_hamis
from hamisim.sim.kernel import KernelScheduler
from hamisim.studies.unplaceable import find_unplaceable
from hamisim.workload import Trace

__all__ = ["NodeGroup", "ScaleUpPlan", "plan_scaleup", "node_groups",
           "queue_order", "dry_run_verdicts", "unplaceable_pending", "DEFAULT_MAX_EVALUATIONS",
           "Relaxation", "relaxation", "solve"]

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
    #: the integer program's optimum (a proven lower bound; None: it has none)
    ip_cost: float | None = None
    ip_add: dict[str, int] | None = None
    #: whether simulating the program's addition placed every pod
    ip_confirmed: bool = False
    #: additions the program ruled out without simulating them
    ip_pruned: int = 0
    #: greedy: (cost - lower_bound) / cost; 0 when exact
    gap: float = 0.0


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
    rel = relaxation(cluster, groups, pods, state)
    ip = solve(rel)
    names = [g.name for g in groups]
    extra: dict = {"ip_cost": None if ip is None else ip[0],
                   "ip_add": None if ip is None else dict(zip(names, ip[1]))}
    floor = ip[0] if ip is not None else 0.0
    if ip is not None:
        done, left = placed(tuple(ip[1]))
        if not left:
            return dataclasses.replace(plan(tuple(ip[1]), "exact", ip[0], now, done),
                                       ip_confirmed=True, **extra)
    pruned = 0
    # additions by increasing cost, then fewer nodes, then group order
    heap = [(0.0, 0, zero)]
    queued = {zero}
    bound = 0.0
    while heap:
        cost, _, add = heapq.heappop(heap)
        bound = cost
        # cheaper than the program's optimum, or ruled out by it: no simulation
        if add != zero and cost >= floor - 1e-9 * max(1.0, floor):
            if ip is not None and solve(rel, add) is None:
                pruned += 1
            else:
                if evaluations >= max_evaluations:
                    break
                done, left = placed(add)
                if not left:
                    return dataclasses.replace(plan(add, "exact", cost, now, done),
                                               ip_pruned=pruned, **extra)
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
            out = plan(tuple(add), "greedy", max(bound, floor), now, done)
            return dataclasses.replace(out, ip_pruned=pruned,
                                       gap=(out.cost - out.lower_bound) / out.cost
                                       if out.cost else 0.0, **extra)


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

# ---------------------------------------------------------------------------
# the integer program
#
# The scale-up integer program: a proven lower bound on the cheapest addition.
#
# Not HAMi behaviour: a relaxation of the scale-up question
# (:mod:`hamisim.studies.scaleup`) solved exactly by HiGHS through
# :func:`scipy.optimize.milp`. Its variables are ``n_g``, the nodes added to
# each candidate group (integer, ``0..max_new``), and ``y_pk``, pod ``p``
# placed on node kind ``k`` (binary; one kind per pod). A *kind* is a node group
# of the cluster (its nodes now, plus ``n_g`` new ones when it is a candidate
# group) or a candidate group the cluster lacks. What it models, per kind:
#
# * which kinds a pod may use at all: those one empty node of which takes the
#   pod alone, decided by the kernel (HAMi v2.10's own filters: card type,
#   count, memory, cores, MIG, selectors, taints, CPU and memory);
# * aggregate capacities against the pods' summed demands: card slots (one per
#   requested card), GPU memory (absolute ``nvidia.com/gpumem`` requests times
#   their cards), GPU cores (``nvidia.com/gpucores`` times their cards), CPU and
#   memory, each kind's capacity being its node count times a node's.
#
# The running pods of an initial state take what HAMi counts them holding
# (``collapsed_usage``: slots, memory and cores per card; their CPU and memory)
# off their node's capacity, clipped at nothing left.
#
# What it does not model (each omission only lowers the bound, so it stays a
# bound): that a pod's cards lie on one node and each card's slots, memory
# and cores are per card (the kind is one big bin), percentage memory
# requests, and HAMi's placement order. Every addition that places every
# pending pod satisfies the program, so its optimum is a lower bound of the
# true cheapest addition; the simulation (:func:`hamisim.studies.scaleup.placed_count`)
# confirms or refutes an addition.


#: the resources the program counts, per kind and per pod
RESOURCES = ("card slots", "GPU memory MiB", "GPU cores", "CPU milli", "memory MiB")


@dataclass(frozen=True)
class Relaxation:
    """The program's data: per kind (existing count, candidate group index or
    -1, capacity per node), per pod its demands and allowed kinds."""

    kinds: tuple[str, ...]
    #: kinds x resources: the capacity of the nodes it has now (counted as empty)
    existing: np.ndarray
    #: per kind: the candidate group it grows with, -1 if none
    grows: np.ndarray
    #: kinds x resources: one node's capacity (inf = not limited)
    capacity: np.ndarray
    #: pods x resources
    demand: np.ndarray
    #: pods x kinds: one empty node of the kind takes the pod alone
    allowed: np.ndarray
    costs: np.ndarray
    max_new: np.ndarray

    @property
    def servable(self) -> np.ndarray:
        """Per pod: some kind may take it."""
        return self.allowed.any(axis=1)


def _node_capacity(node: Node) -> list[float]:
    cards = node.cards
    return [float(sum(c.count for c in cards)), float(sum(c.devmem for c in cards)),
            float(sum(c.devcore for c in cards)),
            math.inf if node.cpu_milli is None else float(node.cpu_milli),
            math.inf if node.memory_mib is None else float(node.memory_mib)]


def _pod_demand(pod: Pod) -> list[float]:
    slots = mem = cores = 0.0
    for c in pod.containers:
        n = c.value(GPU) or 0
        slots += n
        mem += n * (c.value(GPUMEM) or 0)        # percentages: not counted
        cores += n * (c.value(GPUCORES) or 0)
    return [slots, mem, cores, float(pod.cpu_milli), float(pod.memory_mib)]


def _fits_alone(template: Node, cluster: Cluster, pods: Sequence[Pod]) -> np.ndarray:
    """Per pod: one empty copy of ``template`` takes it alone (the kernel decides)."""
    alone = dataclasses.replace(cluster, nodes=(template,))
    sched = KernelScheduler(alone)
    out = np.zeros(len(pods), dtype=bool)
    for i, pod in enumerate(pods):
        try:
            d = sched.schedule(pod)
        except ValueError:
            continue
        if d.bound:
            out[i] = True
            sched.delete(pod.name)
    return out


def relaxation(cluster: Cluster, groups: Sequence, pods: Sequence[Pod],
               state: InitialState | None = None) -> Relaxation:
    """The program for adding nodes of ``groups`` (:class:`NodeGroup`) to ``cluster``
    (its running pods ``state``) so that ``pods`` fit (the section's comment)."""
    held = _held(cluster, state)
    by_kind: dict[str, list[Node]] = {}
    for node in cluster.nodes:
        by_kind.setdefault(node.group or node.name, []).append(node)
    kinds: list[str] = []
    grows: list[int] = []
    capacity: list[tuple[np.ndarray, np.ndarray]] = []
    allowed: list[np.ndarray] = []
    group_of = {g.name: j for j, g in enumerate(groups)}
    for name, nodes in by_kind.items():
        # a group's nodes may differ: a kind is as big as its largest node, and
        # a pod may use it when any of its nodes takes the pod alone
        caps = np.array([_node_capacity(n) for n in nodes])
        free = np.maximum(caps - np.array([held.get(n.name, np.zeros(len(RESOURCES)))
                                           for n in nodes]), 0.0)
        fits = np.zeros(len(pods), dtype=bool)
        for n in {_shape(n): n for n in nodes}.values():
            fits |= _fits_alone(n, cluster, pods)
        j = group_of.get(name, -1)
        kinds.append(name)
        grows.append(j)
        if j >= 0:
            caps = np.vstack([caps, _node_capacity(groups[j].template)])
            fits |= _fits_alone(groups[j].template, cluster, pods)
        # existing nodes summed, new ones counted per node below
        capacity.append((caps.max(axis=0), free.sum(axis=0)))
        allowed.append(fits)
    for j, g in enumerate(groups):
        if g.name in by_kind:
            continue
        kinds.append(g.name)
        grows.append(j)
        cap = np.array(_node_capacity(g.template))
        capacity.append((cap, np.zeros_like(cap)))
        allowed.append(_fits_alone(g.template, cluster, pods))
    per_node = np.array([c[0] for c in capacity]).reshape(len(kinds), len(RESOURCES))
    now = np.array([c[1] for c in capacity]).reshape(len(kinds), len(RESOURCES))
    for k, j in enumerate(grows):
        if j >= 0:
            per_node[k] = _node_capacity(groups[j].template)
    rel = Relaxation(tuple(kinds), now, np.array(grows, dtype=np.int64), per_node,
                     np.array([_pod_demand(p) for p in pods]).reshape(len(pods), len(RESOURCES)),
                     np.array(allowed).T.reshape(len(pods), len(kinds)),
                     np.array([g.cost for g in groups], dtype=float),
                     np.array([g.max_new for g in groups], dtype=float))
    return rel


def _held(cluster: Cluster, state: InitialState | None) -> dict[str, np.ndarray]:
    """Per node, what the state's running pods hold of each resource (HAMi's count)."""
    from hamisim.hami.reference import collapsed_usage
    if state is None:
        return {}
    card_node = {c.id: n.name for n in cluster.nodes for c in n.cards}
    out: dict[str, np.ndarray] = {}
    for p in state.pods:
        row = out.setdefault(p.node, np.zeros(len(RESOURCES)))
        row[3] += p.cpu_milli
        row[4] += p.memory_mib
        for uuid, (used, mem, cores) in collapsed_usage(p.containers, p.n_init).items():
            if card_node.get(uuid) == p.node:
                row[:3] += (used, mem, cores)
    return out


def _shape(node: Node) -> tuple:
    return (tuple((c.type, c.devmem, c.devcore, c.count) for c in node.cards),
            node.cpu_milli, node.memory_mib, repr(node.labels), repr(node.taints))


def solve(rel: Relaxation, fixed: Sequence[int] | None = None) -> tuple[float, list[int]] | None:
    """The program's optimum ``(cost, nodes added per group)``, ``None`` when no
    addition satisfies it. ``fixed``: the additions given, only feasibility asked."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    n_groups = len(rel.costs)
    pairs = np.argwhere(rel.allowed)                 # (pod, kind) variables
    n_pods = rel.demand.shape[0]
    if n_pods and not rel.servable.all():
        return None
    n_var = n_groups + len(pairs)
    c = np.concatenate([rel.costs, np.zeros(len(pairs))])
    rows, lo, hi = [], [], []
    # each pod on exactly one kind
    for p in range(n_pods):
        row = np.zeros(n_var)
        row[n_groups + np.flatnonzero(pairs[:, 0] == p)] = 1.0
        rows.append(row)
        lo.append(1.0)
        hi.append(1.0)
    # per kind and resource: demand placed there <= capacity now + per node * n_g
    for k in range(len(rel.kinds)):
        on_k = np.flatnonzero(pairs[:, 1] == k)
        for r in range(len(RESOURCES)):
            if not math.isfinite(rel.capacity[k, r]) or not math.isfinite(rel.existing[k, r]):
                continue
            d = rel.demand[pairs[on_k, 0], r]
            if not d.any():
                continue
            row = np.zeros(n_var)
            row[n_groups + on_k] = d
            j = rel.grows[k]
            if j >= 0:
                row[j] = -rel.capacity[k, r]
            rows.append(row)
            lo.append(-np.inf)
            hi.append(float(rel.existing[k, r]))
    lb = np.zeros(n_var)
    ub = np.concatenate([rel.max_new, np.ones(len(pairs))])
    if fixed is not None:
        lb[:n_groups] = ub[:n_groups] = np.asarray(fixed, dtype=float)
    constraints = [LinearConstraint(np.array(rows), lo, hi)] if rows else []
    res = milp(c, constraints=constraints, integrality=np.ones(n_var),
               bounds=Bounds(lb, ub), options={"presolve": True})
    if res.x is None:
        return None
    add = [int(round(v)) for v in res.x[:n_groups]]
    return float(np.dot(rel.costs, add)), add
