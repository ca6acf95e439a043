"""The defragmentation what-if: the fewest pod moves that free cards or make room.

Not HAMi behaviour: HAMi never moves a running pod (HAMi issue #2072 asks for a
way to). A *move* evicts one running pod and lets the scheduler place it again
under the cluster's policies, HAMi v2.10's decision on the kernel, exactly as a
deleted pod's replacement would be placed; a move that puts the pod back where
it was is no move. :func:`plan_defrag` searches for the shortest sequence of
moves that reaches a goal:

* ``free_cards=N``: N more cards with no tenant;
* ``fit=pod``: the pending ``pod`` fits somewhere afterwards;
* ``budget=K`` alone: as many cards with no tenant as K moves can free.

The search tries every sequence of one move, then of two, ... up to
``max_moves`` (order matters: each placement sees the ones before), so the
first plan found is the shortest; past ``max_evaluations`` placements it goes
greedy (the move that frees the most cards, then leaves the most free memory
on the fewest cards) and reports how many moves were ruled out. The plan is
then replayed on a fresh scheduler and must land every pod where the search
saw it land.

The running pods come from an initial state (``hamisim import``, DESIGN
§4.4), which records their allocations, not their requests: a pod is placed
again with each container asking for its cards' count, memory and cores, and
the scheduler's default policies (its own policy annotations are not in the
state). Or from a finished run at a time (:func:`recorded_at`), with their
own requests.

On a cluster with MIG cards, a pod holding a MIG instance is never moved
(re-cutting MIG instances is not modelled; the plan counts these pods,
``kept_on_mig``); any other pod may move, and lands where HAMi places its
replacement, on a MIG card too (then with the instance HAMi's MIG rules give
it).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from hamisim._version import __version__
from hamisim.cluster import Cluster
from hamisim.hami.decision import Pick
from hamisim.hami.reference import aligned_usage, app_containers_only
from hamisim.errors import HamisimError, InputError
from hamisim.io.initialstate import (InitialPod, InitialState, decode_devices,
                                     with_mig_allocations)
from hamisim.kube.queue import active_queue_order
from hamisim.pods import GPU, GPUCORES, GPUMEM, Container, Pod, admit, pod_requests
from hamisim.registry import not_hamis
from hamisim.research.fragmentation import fragmentation
from hamisim.shapes import typical_shapes
from hamisim.sim.kernel import KernelScheduler
from hamisim.studies.runs import prepare_recorded

__all__ = ["Move", "DefragPlan", "plan_defrag", "pod_of", "state_at", "recorded_at",
           "RecordedState", "DEFAULT_MAX_MOVES", "DEFAULT_MAX_EVALUATIONS"]

DEFAULT_MAX_MOVES = 3
DEFAULT_MAX_EVALUATIONS = 20_000


@dataclass(frozen=True)
class Move:
    """One eviction and its re-placement: card ids before and after."""

    pod: str
    from_node: str
    from_cards: tuple[str, ...]
    to_node: str
    to_cards: tuple[str, ...]
    #: the MIG instances HAMi cut for it on MIG cards: ``profile@card:start``
    to_mig: tuple[str, ...] = ()


@dataclass
class DefragPlan:
    """What :func:`plan_defrag` found."""

    goal: str
    moves: list[Move]
    reached: bool
    #: ``exact`` (no shorter plan exists) or ``greedy``
    method: str
    #: every plan of fewer moves than this was tried and misses the goal
    shortest_possible: int
    evaluations: int
    zero_tenant_before: int
    zero_tenant_after: int
    #: free memory (MiB) on cards that have a tenant: what a whole-card pod cannot use
    scattered_mib_before: int
    scattered_mib_after: int
    #: FGD fragmentation, in GPUs, over the running pods' typical shapes (DESIGN §3),
    #: and the part of it placements caused (stranded)
    frag_before: float = 0.0
    frag_after: float = 0.0
    stranded_before: float = 0.0
    stranded_after: float = 0.0
    #: running pods holding a MIG instance, kept where they are (never moved)
    kept_on_mig: int = 0
    notes: list[str] = field(default_factory=list)


def pod_of(p: InitialPod) -> Pod:
    """A running pod as a request: each container asks for its cards' count,
    memory and cores (the state records allocations only)."""
    containers = []
    for picks in p.containers:
        limits = {}
        if picks:
            limits = {GPU: len(picks), GPUMEM: max(k.usedmem for k in picks),
                      GPUCORES: max(k.usedcores for k in picks)}
        containers.append(Container(limits=limits))
    init, app = containers[:p.n_init], containers[p.n_init:]
    return Pod(p.name, tuple(app), tuple(init), {}, p.cpu_milli, p.memory_mib,
               namespace=p.namespace)


@dataclass
class RecordedState:
    """A finished run's cluster at one simulated time (:func:`recorded_at`)."""

    cluster: Cluster
    #: the pods running (bound at or before the time, not gone) where they were
    #: then (the pods table's place, or a defragmenter move's), with what HAMi
    #: counted for them then (init containers done dropped)
    state: InitialState
    #: the running pods' requests as the workload gives them (initial-state
    #: pods: rebuilt from their allocations, :func:`pod_of`)
    requests: dict[str, Pod]
    #: the pods pending (arrived at or before the time, not bound, abandoned or
    #: gone by it), in kube-scheduler's queue order: higher priority first, then
    #: earlier arrival, then workload order
    pending: list[Pod]


#: the pods-table columns :func:`recorded_at` reads
_COLUMNS = ("pod", "arrival", "bind", "node", "devices", "departure", "abandon")


def recorded_at(folder: str | os.PathLike[str], time: float, what: str = "defrag") -> \
        RecordedState:
    """The run in results ``folder`` at simulated ``time``, read again from the
    inputs its summary records (:func:`~hamisim.studies.runs.prepare_recorded`)
    and its pods table. ``what`` names the command in messages. Raises
    :class:`InputError` for a folder that is not a run's, a pods table without
    the columns needed (another hamisim version's) and a time after the run's end."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(str(folder), None, "no such results folder (give the --out folder "
                                            "of 'hamisim run')")
    summary, _, prep = prepare_recorded(folder, what)
    table = next((p for p in (folder / "pods.parquet", folder / "pods.csv") if p.exists()),
                 None)
    if table is None:
        raise InputError(str(folder), None, "no pods.parquet or pods.csv in the folder")
    pods = pd.read_parquet(table) if table.suffix == ".parquet" else pd.read_csv(table)
    missing = [c for c in _COLUMNS if c not in pods.columns]
    if missing:
        raise InputError(str(table), None, f"no column {', '.join(missing)}: not a pods table "
                         f"this hamisim ({__version__}) writes{_written_by(summary)}; run it "
                         "again")
    end = (summary.get("results") or {}).get("end_time_s")
    if end is not None and time > end:
        raise InputError(str(folder / "summary.json"), None,
                         f"--at {time:g}: the run ends at {end:g} s (give 0..{end:g})")
    arrival = pods["arrival"].to_numpy(dtype=float)
    bind = pods["bind"].to_numpy(dtype=float)
    gone = pods["departure"].to_numpy(dtype=float)
    abandon = pods["abandon"].to_numpy(dtype=float)
    # every pod bound and not gone holds its CPU and memory, a CPU-only one (null
    # devices) too
    running = pods[(bind <= time) & ~(gone <= time)]
    waiting = pods[(arrival <= time) & ~(bind <= time) & ~(gone <= time)
                   & ~(abandon <= time)]
    cluster = prep.cluster
    workload = prep.workload
    index = {name: i for i, name in enumerate(workload.names)}
    requests = {name: workload.pod(i) for i, name in enumerate(workload.names)}
    initial = {p.name: p for p in prep.state.pods} if prep.state is not None else {}
    cards = {n.name: {c.id: c for c in n.cards} for n in cluster.nodes}
    migs = running["mig_allocations"] if "mig_allocations" in running.columns else \
        [None] * len(running)
    # the pods table keeps a moved pod's last place; where it was at the time is in
    # the events table (only a run with the defragmenter moves pods)
    moved = _places_at(folder, time) if (summary.get("inputs") or {}).get("defrag") else {}
    replay = (summary.get("inputs") or {}).get("mode") == "replay"
    nodes = {n.name: n for n in cluster.nodes}
    out_pods, out_requests = [], {}
    for name, node, devices, mig, bound in zip(running["pod"], running["node"],
                                               running["devices"], migs, running["bind"]):
        if name in moved and moved[name] != (node, devices):
            # the instances recorded are those of its last place, not of this one
            (node, devices), mig = moved[name], None
        elif name in initial:
            p = initial[name]
            out_pods.append(p)
            out_requests[name] = pod_of(p)
            continue
        if pd.isna(devices) or not devices:
            # no card: an initial-state pod without devices (io.initialstate)
            pod = requests[name]
            out_pods.append(InitialPod(name, node, [], 0, pod.cpu_milli, pod.memory_mib,
                                       namespace=pod.namespace))
            out_requests[name] = pod
            continue
        containers = with_mig_allocations(
            None if pd.isna(mig) else mig, decode_devices(devices, None, cards[node], node),
            cards[node], str(table), f"pod '{name}'")
        if name in initial:         # moved (the defragmenter moves no init containers)
            p = dataclasses.replace(initial[name], node=node, containers=containers)
            out_pods.append(p)
            out_requests[name] = pod_of(p)
            continue
        pod = requests[name]
        containers, n_init = _per_container(containers, pod, cluster)
        if n_init and replay and pod.init_duration is not None and any(containers) \
                and bound + pod.init_duration <= time:
            # its init containers are done (sim.engine's _init_done)
            containers, n_init = app_containers_only(
                containers, n_init, aligned_usage(nodes[node], cluster.scheduler)), 0
        out_pods.append(InitialPod(name, node, containers, n_init, pod.cpu_milli,
                                   pod.memory_mib, namespace=pod.namespace))
        out_requests[name] = pod
    rows = [(index[name], float(at)) for name, at in zip(waiting["pod"], waiting["arrival"])
            if name in index]
    queue = [rows[k][0] for k in active_queue_order(
        [workload.priority[i] for i, _ in rows], [at for _, at in rows], [i for i, _ in rows])]
    return RecordedState(cluster, InitialState(out_pods, path=str(table)), out_requests,
                         [workload.pod(i) for i in queue])


def _per_container(segments: list[list[Pick]], pod: Pod, cluster: Cluster) -> \
        tuple[list[list[Pick]], int]:
    """A pod's devices annotation as the scheduler held its picks: one list per
    container, init containers first, and their count. On most nodes HAMi's
    annotation has no segment for a container without a card request: the
    segments then go, in order, to the containers that request one."""
    n_init = len(pod.init_containers)
    total = n_init + len(pod.containers)
    if len(segments) == total:
        return segments, n_init
    reqs, _ = pod_requests(admit(pod, cluster.scheduler), cluster.scheduler)
    if len(segments) != sum(r is not None for r in reqs):
        return segments, 0          # not this pod's shape: its segments as app containers
    it = iter(segments)
    return [next(it) if r is not None else [] for r in reqs], n_init


def _places_at(folder: Path, time: float) -> dict[str, tuple[str, str]]:
    """Per pod the defragmenter moved: its node and devices at ``time`` (its last
    ``bind`` or ``move`` row of the events table at or before it)."""
    path = next((p for p in (folder / "events.parquet", folder / "events.csv") if p.exists()),
                None)
    if path is None:
        raise InputError(str(folder), None, "no events.parquet or events.csv in the folder "
                                            "(the defragmenter's moves are there)")
    cols = ["time", "pod", "event", "node", "devices"]
    events = pd.read_parquet(path, columns=cols) if path.suffix == ".parquet" else \
        pd.read_csv(path, usecols=cols)
    ever = set(events.loc[events["event"] == "move", "pod"])
    rows = events[events["pod"].isin(ever) & events["event"].isin(("bind", "move"))
                  & (events["time"].to_numpy(dtype=float) <= time)]
    return {name: (node, devices) for name, node, devices in
            zip(rows["pod"], rows["node"], rows["devices"])}


def _written_by(summary: dict) -> str:
    version = summary.get("hamisim_version")
    return "" if version == __version__ else f" (the run's summary says hamisim {version})"


def state_at(folder: str | os.PathLike[str], time: float) -> \
        tuple[Cluster, InitialState, dict[str, Pod]]:
    """The cluster of the run in results ``folder``, the pods running on it at
    simulated ``time`` (bound at or before it, not gone) where they were then,
    and their requests as its workload gives them (so their own policy
    annotations count); :func:`recorded_at`."""
    at = recorded_at(folder, time, "defrag")
    return at.cluster, at.state, at.requests


class _World:
    """A scheduler holding the state, with moves that can be undone."""

    def __init__(self, cluster: Cluster, state: InitialState,
                 requests: Mapping[str, Pod] | None = None) -> None:
        policy = not_hamis(cluster.scheduler.node_scheduler_policy,
                           cluster.scheduler.gpu_scheduler_policy)
        if policy is not None:
            raise HamisimError(f"defrag places pods under HAMi's own policies, not under "
                               f"{policy}")
        self.cluster = cluster
        self.sched = KernelScheduler(cluster)
        state.adopt_into(self.sched, cluster)
        index = {n.name: i for i, n in enumerate(cluster.nodes)}
        self.where: dict[str, tuple] = {
            p.name: (index[p.node], p.containers, p.n_init, p.cpu_milli, p.memory_mib,
                     p.namespace) for p in state.pods}
        requests = requests or {}
        self.pods = {p.name: requests.get(p.name) or pod_of(p) for p in state.pods}
        #: pods holding a MIG instance: never moved (moving one would re-cut MIG
        #: instances, which is not modelled); every other pod may move anywhere
        #: HAMi places it, a MIG card included
        self.on_mig = frozenset(p.name for p in state.pods
                                if any(k.mig is not None for picks in p.containers
                                       for k in picks))
        self.evaluations = 0

    def move(self, name: str) -> tuple | None:
        """Evict and re-place ``name``; returns the old placement (for
        :meth:`undo`) or ``None`` when it lands where it was (nothing changed)."""
        old = self.where[name]
        # kube-scheduler's sampling start moves with every attempt: an undone
        # move (or a trial of the goal pod) must not shift the next one's
        start = self.sched.next_start
        self.sched.delete(name)
        self.evaluations += 1
        d = self.sched.schedule(self.pods[name])
        new = (d.node_index, d.containers, old[2], old[3], old[4], old[5])
        if not d.bound or (new[0] == old[0] and _cards(new[1]) == _cards(old[1])):
            # unbound cannot happen (its own place is free); the same cards: no move
            self.sched.delete(name)
            self.sched.adopt(name, *old[:5], namespace=old[5])
            self.sched.next_start = start
            return None
        self.where[name] = new
        return old + (start,)

    def undo(self, name: str, old: tuple) -> None:
        self.sched.delete(name)
        self.sched.adopt(name, *old[:5], namespace=old[5])
        self.sched.next_start = old[6]
        self.where[name] = old[:6]

    def zero_tenant(self) -> int:
        return sum(1 for used, _, _ in self.sched.usage_by_card().values() if used == 0)

    def fragmentation(self, shapes) -> tuple[float, float]:
        """(FGD fragmentation, its stranded part), in GPUs, over ``shapes``."""
        f = fragmentation(self.cluster, shapes, self.sched.usage_by_card(),
                          self.sched.state.req_cpu.tolist())
        return f.frag, f.stranded

    def scattered(self) -> int:
        devmem = {c.id: c.devmem for n in self.cluster.nodes for c in n.cards}
        return sum(devmem[cid] - mem for cid, (used, mem, _) in
                   self.sched.usage_by_card().items() if used > 0)

    def fits(self, pod: Pod) -> bool:
        self.evaluations += 1
        start = self.sched.next_start
        d = self.sched.schedule(pod)
        if d.bound:
            self.sched.delete(pod.name)
        self.sched.next_start = start
        return d.bound


def _move(cluster: Cluster, name: str, old: tuple, new: tuple) -> Move:
    return Move(name, cluster.nodes[old[0]].name, _cards(old[1]), cluster.nodes[new[0]].name,
                _cards(new[1]), tuple(f"{p.mig[0]}@{p.uuid}:{p.mig[1]}" for picks in new[1]
                                      for p in picks if p.mig is not None))


def _cards(containers: Sequence[Sequence[Pick]]) -> tuple[str, ...]:
    return tuple(sorted({p.uuid for picks in containers for p in picks}))


def plan_defrag(cluster: Cluster, state: InitialState, *, free_cards: int | None = None,
                fit: Pod | None = None, budget: int | None = None,
                requests: Mapping[str, Pod] | None = None,
                max_moves: int = DEFAULT_MAX_MOVES,
                max_evaluations: int = DEFAULT_MAX_EVALUATIONS) -> DefragPlan:
    """The shortest sequence of moves reaching the goal (module docstring).
    ``requests``: the running pods as requests (default: rebuilt from their
    allocations, :func:`pod_of`)."""
    if free_cards is None and fit is None and budget is None:
        raise ValueError("give a goal: free_cards, fit, or budget alone")
    if free_cards is not None and fit is not None:
        raise ValueError("give one goal: free_cards or fit")
    world = _World(cluster, state, requests)
    names = sorted(set(world.pods) - world.on_mig)
    zero0, scattered0 = world.zero_tenant(), world.scattered()
    # the fragmentation is measured over the running pods' shapes, and the pending one's
    shapes = typical_shapes([*world.pods.values(), *([fit] if fit is not None else [])],
                            cluster.scheduler)
    frag0 = world.fragmentation(shapes)
    depth_limit = min(max_moves, budget) if budget is not None else max_moves
    if free_cards is not None:
        goal = f"free {free_cards} more card{'s' if free_cards != 1 else ''}"
        reached = lambda: world.zero_tenant() >= zero0 + free_cards       # noqa: E731
    elif fit is not None:
        goal = f"make room for pod {fit.name}"
        reached = lambda: world.fits(fit)                                  # noqa: E731
    else:
        goal = f"free as many cards as {budget} move{'s' if budget != 1 else ''} can"
        reached = None
    best: list = [world.zero_tenant(), []]       # for the budget goal: best found
    path: list[tuple[str, tuple, Move]] = []
    out_of_time = False

    def search(depth: int) -> bool:
        nonlocal out_of_time
        if reached is not None and len(path) == depth:
            return reached()
        if reached is None and len(path) == depth:
            z = world.zero_tenant()
            if z > best[0]:
                best[0], best[1] = z, [m for _, _, m in path]
            return False
        for name in names:
            if any(name == n for n, _, _ in path):
                continue
            if world.evaluations >= max_evaluations:
                out_of_time = True
                return False
            old = world.move(name)
            if old is None:
                continue
            new = world.where[name]
            path.append((name, old, _move(cluster, name, old, new)))
            found = search(depth)
            if found:
                return True
            _, old, _ = path.pop()
            world.undo(name, old)
        return False

    tried = 0
    def plan(moves, done, method, shortest) -> DefragPlan:
        after = _replayed(cluster, state, moves, requests)
        frag1 = after.fragmentation(shapes)
        out = DefragPlan(goal, list(moves), done, method, shortest, world.evaluations,
                         zero0, after.zero_tenant(), scattered0, after.scattered(),
                         frag0[0], frag1[0], frag0[1], frag1[1], len(world.on_mig))
        if world.on_mig:
            out.notes.append(f"{len(world.on_mig)} pod(s) holding MIG instances kept where "
                             "they are (moving MIG instances is not modelled)")
        return out

    if reached is not None and reached():
        return plan([], True, "exact", 0)
    for depth in range(1, depth_limit + 1):
        if search(depth):
            return plan([m for _, _, m in path], True, "exact", depth)
        if out_of_time:
            break
        tried = depth
    if reached is None and not out_of_time:
        return plan(best[1], True, "exact", len(best[1]))
    # greedy: the move freeing the most cards, then leaving the least scattered memory
    moves: list[Move] = []
    while len(moves) < depth_limit and not (reached is not None and reached()):
        options = []
        for name in names:
            if any(m.pod == name for m in moves):
                continue
            old = world.move(name)
            if old is None:
                continue
            new = world.where[name]
            options.append((world.zero_tenant(), -world.scattered(), name,
                            _move(cluster, name, old, new)))
            world.undo(name, old)
        if not options:
            break
        *_, name, move = max(options, key=lambda o: o[:2])
        world.move(name)
        moves.append(move)
    result = plan(moves, reached() if reached is not None else True, "greedy", tried + 1)
    result.notes.append(f"every plan of up to {tried} move(s) was tried before the search "
                        "went greedy")
    return result


def _replayed(cluster: Cluster, state: InitialState, moves: Sequence[Move],
              requests: Mapping[str, Pod] | None = None) -> _World:
    """The moves replayed on a fresh scheduler, checked to land as planned."""
    world = _World(cluster, state, requests)
    for m in moves:
        assert world.move(m.pod) is not None, m
        node, containers = world.where[m.pod][:2]
        assert (cluster.nodes[node].name, _cards(containers)) == (m.to_node, m.to_cards), m
    return world
