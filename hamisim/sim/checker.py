"""The invariant checker: ``--check`` on ``run``, ``compare`` and ``scenario``.

A :class:`Checker` keeps its own books of a simulation and, after every
event (arrive, bind, unschedulable, depart, abandon), asserts:

1. **capacity**: no card holds more slots than its ``count``, more memory than
   its ``devmem`` or more cores than its ``devcore``, and no node more CPU than
   its ``cpu_milli`` (when the node declares one);
2. **usage = sum of allocations**: every card's slots, memory and cores equal
   the sum over the pods bound now of what their :class:`~hamisim.hami.decision.Decision`
   gave them -- in the checker's own books, in the metrics meter the time
   series is read from (per card and its running cluster sums), and in the
   scheduler's own cache (the pod cache HAMi scores from);
3. **fragmentation**: after an event on a node, the meter's free,
   fragmented and unfit terms of that node equal the readable twin's
   (:mod:`hamisim.research.fragmentation`) computed from the checker's own
   books (every event on small clusters, every :data:`FRAGMENTATION_EVERY`
   events otherwise: the twin is plain Python); at the end, the meter's
   running cluster totals equal the twin over the whole cluster;
4. **pod accounting**: ``arrived = pending + running + departed + abandoned``
   on the engine's counters, which also equal the checker's own counts; every
   event happens to a pod in a state that allows it (a pod binds only while
   pending, departs only while running, ...), and a bound pod's cards all
   belong to the node it was bound to.

The books are built from the Decisions alone: a pod's per-card contribution
is recomputed here from its picks (app containers on one card add up, one
slot each; init containers are max'ed against them and hold one slot when
alone; HAMI-SEMANTICS §9.2), not taken from the engine's or the
scheduler's own bookkeeping, so a double count on either side shows.

Cost: the card checks are vectorised over the cluster's cards, so a check
costs tens of microseconds per event on the 6,212-card openb cluster. The
scheduler's cache is compared after every event when it is exposed as arrays
(the kernel backend) or the cluster is small (at most
:data:`SMALL_CLUSTER_CARDS` cards); otherwise every :data:`SCHEDULER_EVERY`
events and at the end of the run. With checking off, the engine holds
``checker = None`` and pays one ``is not None`` test per event.

A violation raises :class:`InvariantError`, which names the event that caused
it (time, kind, pod); the CLI prints it and exits with status 3
(:data:`EXIT_INVARIANT`).
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from hamisim.cluster import Cluster
from hamisim.errors import HamisimError
from hamisim.hami.decision import Decision, Pick
from hamisim.pods import Pod
from hamisim.research.fragmentation import FragmentationTwin

__all__ = ["Checker", "InvariantError", "EXIT_INVARIANT", "SMALL_CLUSTER_CARDS",
           "SCHEDULER_EVERY", "FRAGMENTATION_EVERY"]

#: exit status of the CLI when the checker stops a run
EXIT_INVARIANT = 3
#: clusters up to this many cards get their scheduler cache compared after
#: every event even when the scheduler exposes no arrays
SMALL_CLUSTER_CARDS = 512
#: otherwise, the scheduler cache is compared every this many events
SCHEDULER_EVERY = 1024
#: on clusters above SMALL_CLUSTER_CARDS, the event's node's fragmentation is
#: recomputed by the twin every this many events
FRAGMENTATION_EVERY = 16

_COUNTERS = ("pods_arrived", "pods_pending", "pods_running", "pods_departed", "pods_abandoned")
_PENDING, _RUNNING = "pending", "running"


class InvariantError(HamisimError):
    """An invariant of the simulation does not hold after an event.

    ``at`` (``t=12.5 s`` in a run, ``step 3`` in a scenario), ``kind``
    (``arrive``, ``bind``, ``unschedulable``, ``depart``, ``abandon``, ``end``)
    and ``pod`` name the event after which it was found; ``problem`` says what
    does not hold.
    """

    def __init__(self, at: str, kind: str, pod: str | None, problem: str) -> None:
        self.at = at
        self.kind = kind
        self.pod = pod
        self.problem = problem
        who = f" of pod '{pod}'" if pod is not None else ""
        super().__init__(f"invariant violated after the {kind} event{who} at {at}: {problem}")


def pod_contribution(containers: Sequence[Sequence[Pick]], n_init: int, listed_all: bool = True,
                     summed: bool = False) -> dict[str, tuple[int, int, int]]:
    """What one bound pod holds per card: ``{uuid: (slots, memory, cores)}``.

    Written independently of :func:`hamisim.hami.reference.collapsed_usage` (the
    scheduler's and meter's rule) so that the checker's books do not share
    its code: app containers on a card add up, one slot each; an init
    container holds one slot and its memory and cores; per card the pod holds
    the larger of its app total and its largest init container. HAMi v2.10.0
    counts the first ``n_init`` entries of its list as init containers; unless
    ``listed_all``, containers without cards have no entry in that list.
    ``summed``: the entries are the app containers HAMi keeps once the init
    containers succeeded; it sums them without the larger-of rule's floor at
    zero (a negative request lowers the card's books).
    """
    app: dict[str, list[int]] = {}
    init: dict[str, list[int]] = {}
    entries = list(containers) if listed_all else [c for c in containers if len(c)]
    for k, picks in enumerate(entries):
        for p in picks:
            if k < n_init:
                t = init.setdefault(p.uuid, [1, 0, 0])
                t[1] = max(t[1], p.usedmem)
                t[2] = max(t[2], p.usedcores)
            else:
                t = app.setdefault(p.uuid, [0, 0, 0])
                t[0] += 1
                t[1] += p.usedmem
                t[2] += p.usedcores
    if summed:
        return {uuid: (a[0], a[1], a[2]) for uuid, a in app.items()}
    out = {}
    for uuid in {**init, **app}:
        a, i = app.get(uuid, (0, 0, 0)), init.get(uuid, (0, 0, 0))
        out[uuid] = (max(a[0], i[0]), max(a[1], i[1]), max(a[2], i[2]))
    return out


class _Bound:
    __slots__ = ("node", "rows", "amounts", "cpu")

    def __init__(self, node: int, rows: list[int], amounts: list[tuple[int, int, int]],
                 cpu: int) -> None:
        self.node = node
        self.rows = rows
        self.amounts = amounts
        self.cpu = cpu


class Checker:
    """Independent books of one simulation, checked after every event.

    ``scheduler`` (a :class:`hamisim.sim.backend.Backend`) and ``meter`` (a
    :class:`hamisim.sim.metrics.ClusterMeter`) are compared with the books when
    given; ``counts`` returns the engine's pod counters (the keys of
    ``_COUNTERS``; without it the engine counters are not checked) and
    ``where`` says where the run is now, for messages (``t=12.5 s``).
    """

    def __init__(self, cluster: Cluster, *, scheduler=None, meter=None,
                 counts: Callable[[], Mapping[str, int]] | None = None,
                 where: Callable[[], str] = lambda: "t=0 s") -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.meter = meter
        self.counts = counts
        self.where = where
        cards = [(i, c) for i, n in enumerate(cluster.nodes) for c in n.cards]
        self.card_ids = [c.id for _, c in cards]
        self.row = {cid: r for r, cid in enumerate(self.card_ids)}
        self.node_of_row = [i for i, _ in cards]
        self.node_names = [n.name for n in cluster.nodes]
        # HAMi lists GPU-less containers only on nodes with a card typed
        # exactly "NVIDIA" (unless the corrected accounting is asked for)
        corrected = cluster.scheduler.init_container_usage == "corrected"
        self.listed_all = [corrected or any(c.type == "NVIDIA" for c in n.cards)
                           for n in cluster.nodes]
        self.count = np.array([c.count for _, c in cards], dtype=np.int64)
        self.devmem = np.array([c.devmem for _, c in cards], dtype=np.int64)
        self.devcore = np.array([c.devcore for _, c in cards], dtype=np.int64)
        self.node_cpu = [n.cpu_milli for n in cluster.nodes]
        self.used = np.zeros(len(cards), dtype=np.int64)
        self.usedmem = np.zeros(len(cards), dtype=np.int64)
        self.usedcores = np.zeros(len(cards), dtype=np.int64)
        self.cpu_used = [0] * len(cluster.nodes)
        self.totals = [0, 0, 0]         # slots, memory, cores over the cluster
        self.tolerated: set[int] = set()  # cards an initial state left over capacity
        self.tolerated_nodes: set[int] = set()  # ... and nodes it left over their CPU
        # cards whose books HAMi's shrink to the app containers took below zero
        # (a negative request: Iluvatar's unchecked vCore)
        self.may_go_negative: set[int] = set()
        self._ne = np.empty(len(cards), dtype=bool)
        self.bound: dict[str, _Bound] = {}
        self.status: dict[str, str] = {}
        self.n = dict.fromkeys(_COUNTERS, 0)
        self.events = 0
        self._sched_arrays = self._scheduler_arrays()
        self._twin: FragmentationTwin | None = None      # built at its first use
        # each node's card rows are consecutive: node i has rows node_start[i]:[i + 1]
        self._node_start = np.searchsorted(np.array(self.node_of_row, dtype=np.int64),
                                           np.arange(len(cluster.nodes) + 1)).tolist()

    @classmethod
    def for_engine(cls, engine) -> "Checker":
        """A checker wired to a :class:`hamisim.sim.engine._Engine` (its scheduler,
        meter, counters and clock; the clock is read live because fill mode
        swaps it)."""
        return cls(engine.cluster, scheduler=engine.sched, meter=engine.meter,
                   counts=lambda: engine.counts, where=lambda: f"t={engine.env.now:g} s")

    # -- events ------------------------------------------------------------
    def arrive(self, name: str) -> None:
        if name in self.status:
            self._fail("arrive", name, f"pod '{name}' arrives while it is still "
                                       f"{self.status[name]}")
        self.status[name] = _PENDING
        self.n["pods_arrived"] += 1
        self.n["pods_pending"] += 1
        self._verify("arrive", name, ())

    def unschedulable(self, name: str) -> None:
        self._expect(name, _PENDING, "unschedulable")
        self._verify("unschedulable", name, ())

    def bind(self, pod: Pod, decision: Decision) -> None:
        self._bind(pod, decision, "bind")

    def adopt(self, pod: Pod, decision: Decision) -> None:
        """A pod of an initial state bound before the run starts (after its
        :meth:`arrive`). A real cluster may be overcommitted: cards it leaves
        over capacity are tolerated as long as nothing more binds there."""
        self._bind(pod, decision, "adopt")

    def _bind(self, pod: Pod, decision: Decision, kind: str) -> None:
        name = pod.name
        self._expect(name, _PENDING, kind)
        node = decision.node_index
        if not 0 <= node < len(self.node_names) or decision.node != self.node_names[node]:
            self._fail(kind, name, f"the decision names node {decision.node!r} at index "
                                     f"{node}, which is not that node of the cluster")
        contrib = pod_contribution(decision.containers, len(pod.init_containers),
                                   self.listed_all[node])
        rows = []
        for uuid in contrib:
            r = self.row.get(uuid)
            if r is None or self.node_of_row[r] != node:
                self._fail(kind, name, f"card '{uuid}' is not a card of node "
                                         f"'{decision.node}'")
            rows.append(r)
        amounts = list(contrib.values())
        self._add(rows, amounts, +1)
        self.cpu_used[node] += pod.cpu_milli
        self.bound[name] = _Bound(node, rows, amounts, pod.cpu_milli)
        self.status[name] = _RUNNING
        self.n["pods_pending"] -= 1
        self.n["pods_running"] += 1
        if kind == "adopt":
            self.tolerated.update(r for r in rows if self._over(r))
            cap = self.node_cpu[node]
            if cap is not None and self.cpu_used[node] > cap:
                self.tolerated_nodes.add(node)
            self._verify(kind, name, (), node, cpu=False)
        else:
            self._verify(kind, name, rows, node)

    def depart(self, name: str) -> None:
        self._expect(name, _RUNNING, "depart")
        b = self.bound.pop(name)
        self._add(b.rows, b.amounts, -1)
        self.cpu_used[b.node] -= b.cpu
        del self.status[name]
        self.n["pods_running"] -= 1
        self.n["pods_departed"] += 1
        self._verify("depart", name, b.rows, b.node)

    def init_done(self, name: str, app_entries: Sequence[Sequence[Pick]]) -> None:
        """HAMi keeps only ``app_entries`` of a running pod once its init
        containers have succeeded (each entry one slot per card it names)."""
        self._expect(name, _RUNNING, "init done")
        b = self.bound[name]
        self._add(b.rows, b.amounts, -1)
        contrib = pod_contribution(app_entries, 0, summed=True)
        b.rows = [self.row[u] for u in contrib]
        b.amounts = list(contrib.values())
        self.may_go_negative.update(r for r, a in zip(b.rows, b.amounts) if min(a) < 0)
        self._add(b.rows, b.amounts, +1)
        self._verify("init done", name, b.rows, b.node)

    def abandon(self, name: str) -> None:
        self._expect(name, _PENDING, "abandon")
        del self.status[name]
        self.n["pods_pending"] -= 1
        self.n["pods_abandoned"] += 1
        self._verify("abandon", name, ())

    def finish(self) -> None:
        """The end of the run: every check over every card, the scheduler included."""
        rows = [r for r in range(len(self.card_ids)) if r not in self.tolerated]
        self._verify("end", None, rows, scheduler=True)
        for i in range(len(self.node_names)):
            if self.cpu_used[i] < 0:
                self._check_cpu("end", None, i)

    def _add(self, rows: list[int], amounts: list[tuple[int, int, int]], sign: int) -> None:
        t = self.totals
        for r, (u, m, c) in zip(rows, amounts):
            self.used[r] += sign * u
            self.usedmem[r] += sign * m
            self.usedcores[r] += sign * c
            t[0] += sign * u
            t[1] += sign * m
            t[2] += sign * c

    # -- checks ------------------------------------------------------------
    def _fail(self, kind: str, pod: str | None, problem: str) -> None:
        raise InvariantError(self.where(), kind, pod, problem)

    def _expect(self, name: str, status: str, kind: str) -> None:
        have = self.status.get(name)
        if have != status:
            state = have or "not in the cluster (never arrived, or gone)"
            article = "an" if kind[0] in "aeiou" else "a"
            self._fail(kind, name, f"{article} {kind} event needs the pod {status}, but it is "
                                   f"{state}")

    def _over(self, r: int) -> bool:
        return bool(self.used[r] > self.count[r] or self.usedmem[r] > self.devmem[r]
                    or self.usedcores[r] > self.devcore[r])

    def _verify(self, kind: str, pod: str | None, rows, node: int | None = None, *,
                scheduler: bool = False, cpu: bool = True) -> None:
        self.events += 1
        for r in rows:
            if self._over(r) or self.used[r] < 0 or (
                    (self.usedmem[r] < 0 or self.usedcores[r] < 0)
                    and r not in self.may_go_negative):
                self._fail(kind, pod, f"card '{self.card_ids[r]}' holds "
                           f"{self._triple(r)} of its capacity "
                           f"(slots {self.count[r]}, memory {self.devmem[r]} MiB, "
                           f"cores {self.devcore[r]})")
        if node is not None and cpu:
            self._check_cpu(kind, pod, node)
        if self.meter is not None:
            self._compare("the metrics meter", kind, pod, self.meter.used, self.meter.usedmem,
                          self.meter.usedcores)
            sums = (self.meter.sum_used, self.meter.sum_usedmem, self.meter.sum_usedcores)
            own = tuple(self.totals)
            if tuple(int(x) for x in sums) != own:
                self._fail(kind, pod, f"the metrics meter's cluster totals (slots, memory, "
                                      f"cores) are {tuple(int(x) for x in sums)}, the bound "
                                      f"pods hold {own}")
            if node is not None and self.meter.node_cpu_used[node] != self.cpu_used[node]:
                self._fail(kind, pod, f"node '{self.node_names[node]}': the metrics meter "
                                      f"counts {int(self.meter.node_cpu_used[node])} CPU milli "
                                      f"in use, the bound pods request {self.cpu_used[node]}")
        if self.scheduler is not None and (
                scheduler or self._sched_arrays is not None
                or len(self.card_ids) <= SMALL_CLUSTER_CARDS
                or self.events % SCHEDULER_EVERY == 0):
            self._check_scheduler(kind, pod)
        if self.meter is not None and (scheduler or node is not None and (
                len(self.card_ids) <= SMALL_CLUSTER_CARDS
                or self.events % FRAGMENTATION_EVERY == 0)):
            self._check_fragmentation(kind, pod, node)
        if self.counts is not None:
            self._check_counts(kind, pod)

    def _usage(self, rows) -> dict[str, tuple[int, int, int]]:
        return {self.card_ids[r]: (int(self.used[r]), int(self.usedmem[r]),
                                   int(self.usedcores[r])) for r in rows}

    def _check_fragmentation(self, kind: str, pod: str | None, node: int | None) -> None:
        """The meter's fragmentation against its readable twin: the event's node
        after each event, the running cluster totals at the end."""
        if self._twin is None:
            self._twin = FragmentationTwin(self.cluster, self.meter.shapes)
        m = self.meter
        if node is not None:
            rows = range(self._node_start[node], self._node_start[node + 1])
            mine = self._twin.node(node, self._usage(rows), self.cpu_used[node])
            theirs = (m.node_free[node], m.node_frag[node], m.node_unfit[node])
            where, tol = f"node '{self.node_names[node]}': ", 1e-6    # micro-GPU rounding
        else:
            twin = self._twin.reading(self._usage(range(len(self.card_ids))), self.cpu_used)
            mine = (twin.free, twin.frag, twin.unfit)
            theirs = (m.sum_free, m.sum_frag, m.sum_unfit)
            where, tol = "", (len(self.node_names) + 1) * 1e-6
        for what, a, b in zip(("free", "fragmented", "unfit"), mine, theirs):
            if abs(b / 1e6 - a) > tol:
                self._fail(kind, pod, f"{where}the metrics meter counts {b / 1e6:.6f} {what} "
                                      f"GPUs, the bound pods leave {a:.6f}")

    def _triple(self, r: int) -> str:
        return (f"slots {self.used[r]}, memory {self.usedmem[r]} MiB, "
                f"cores {self.usedcores[r]}")

    def _check_cpu(self, kind: str, pod: str | None, node: int) -> None:
        cap = self.node_cpu[node]
        used = self.cpu_used[node]
        if used < 0 or (cap is not None and used > cap and node not in self.tolerated_nodes):
            self._fail(kind, pod, f"node '{self.node_names[node]}': the bound pods request "
                                  f"{used} CPU milli of its {cap}")

    def _compare(self, who: str, kind: str, pod: str | None, used, usedmem, usedcores) -> None:
        for own, theirs in ((self.used, used), (self.usedmem, usedmem),
                            (self.usedcores, usedcores)):
            if np.not_equal(own, theirs, out=self._ne).any():
                r = int(np.flatnonzero(self._ne)[0])
                self._fail(kind, pod, f"card '{self.card_ids[r]}': {who} holds slots "
                                      f"{int(used[r])}, memory {int(usedmem[r])} MiB, cores "
                                      f"{int(usedcores[r])}; the bound pods hold "
                                      f"{self._triple(r)}")

    def _scheduler_arrays(self):
        """The scheduler's usage arrays in cluster card order, when it exposes them."""
        state = getattr(self.scheduler, "state", None)
        arrays = tuple(getattr(state, a, None) for a in ("used", "usedmem", "usedcores"))
        if any(a is None for a in arrays) or list(getattr(state, "card_ids", [])) \
                != self.card_ids:
            return None
        return arrays

    def _check_scheduler(self, kind: str, pod: str | None) -> None:
        if self._sched_arrays is not None:
            self._compare("the scheduler's cache", kind, pod, *self._sched_arrays)
            return
        by_card = self.scheduler.usage_by_card()
        n = len(self.card_ids)
        used, mem, cores = (np.zeros(n, dtype=np.int64) for _ in range(3))
        for cid, (u, m, c) in by_card.items():
            r = self.row.get(cid)
            if r is None:
                if u or m or c:
                    self._fail(kind, pod, f"the scheduler's cache holds usage on card "
                                          f"'{cid}', which is not in the cluster")
                continue
            used[r], mem[r], cores[r] = u, m, c
        self._compare("the scheduler's cache", kind, pod, used, mem, cores)

    def _check_counts(self, kind: str, pod: str | None) -> None:
        theirs = self.counts()
        c = {k: int(theirs[k]) for k in _COUNTERS}
        if c["pods_arrived"] != (c["pods_pending"] + c["pods_running"] + c["pods_departed"]
                                 + c["pods_abandoned"]):
            self._fail(kind, pod, "the engine's counters do not add up: arrived "
                       f"{c['pods_arrived']} != pending {c['pods_pending']} + running "
                       f"{c['pods_running']} + departed {c['pods_departed']} + abandoned "
                       f"{c['pods_abandoned']}")
        if c != self.n:
            diff = ", ".join(f"{k[5:]} {c[k]} (expected {self.n[k]})"
                             for k in _COUNTERS if c[k] != self.n[k])
            self._fail(kind, pod, f"the engine's counters disagree with the events: {diff}")
