"""kube-scheduler around HAMi's extender: nominations and DefaultPreemption.

:class:`KubeScheduler` wraps a HAMi backend (reference or kernel, anything
with their ``schedule(pod, tie_draw, nominated=, only=)``) with what
kube-scheduler knows and HAMi does not: which pods run where with which
priority, which pods are nominated to which node after a preemption, and its
PostFilter (:mod:`hamisim.kube.preemption`). The engine and the scenario
runner schedule through it; it decides, they carry out (delete the victims,
write the events).

An attempt goes as kube-scheduler's ``schedulePod`` does: a nominated pod is
first tried on its nominated node alone (filters, then HAMi); otherwise the
usual sampling and HAMi's Filter, with the CPU and memory of the pods
nominated to a node (of at least this pod's priority) counted by
NodeResourcesFit. When no node takes the pod, DefaultPreemption runs (unless
the cluster file turns it off with ``scheduler.preemption: false``) and its
text is appended to the FailedScheduling message.
"""
from __future__ import annotations

import functools
import inspect
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from hamisim.cluster import Cluster
from hamisim.kube.filters import is_unresolvable, kube_minor
from hamisim.kube.fit import resource_fit_reasons
from hamisim.kube.fiterror import histogram_message
from hamisim.kube.preemption import (
    NEVER,
    NO_VICTIMS,
    NOT_HELPFUL,
    PostFilterResult,
    Victim,
    preempt,
)
from hamisim.pods import Pod

__all__ = ["KubeScheduler", "uniform_postfix", "full_message", "NO_CLAIMS", "with_dra",
           "recalls_deleting", "nominated_load"]

#: DynamicResources' PostFilter text for a pod without resource claims; the
#: plugin is on by default from kube-scheduler 1.34 and runs before
#: DefaultPreemption, whose text follows it after ", "
NO_CLAIMS = "no new claims to deallocate"


def with_dra(result: PostFilterResult, dra: bool) -> str:
    """The PostFilter message kube-scheduler keeps: DynamicResources' and
    DefaultPreemption's rejections joined with ", " (an Error from
    DefaultPreemption replaces them all; a nomination leaves none)."""
    if not dra or result.error or (not result.message and result.nominate is not None
                                   and result.nominate >= 0):
        return result.message
    return f"{NO_CLAIMS}, {result.message}" if result.message else NO_CLAIMS


@functools.lru_cache(maxsize=4096)
def uniform_postfix(n_nodes: int, n_potential: int, policy: str, dra: bool = False) -> str:
    """PostFilter's text when no running pod has a lower priority than the
    pod: every potential node reports ``No preemption victims found``."""
    if policy == "Never":
        text = "preemption: " + NEVER
    else:
        hist = {}
        if n_potential:
            hist[NO_VICTIMS] = n_potential
        if n_nodes > n_potential:
            hist[NOT_HELPFUL] = n_nodes - n_potential
        text = "preemption: " + histogram_message(n_nodes, hist)
    return f"{NO_CLAIMS}, {text}" if dra else text


def full_message(message: str, postfix: str) -> str:
    """FitError's text: the filter message, then PostFilter's after a space."""
    return f"{message} {postfix}" if postfix else message


def nominated_load(nominated: Mapping[str, tuple[int, int, int, int]], name: str,
                   priority: int) -> dict[int, tuple[int, int]] | None:
    """CPU and memory of the pods ``nominated`` to each node (name -> (node,
    priority, cpu, memory)) that kube-scheduler's NodeResourcesFit counts for the
    pod ``name`` of ``priority``: those of at least its priority, itself
    excluded (``None``: nothing to count). The shape the backends'
    ``schedule(..., nominated=)`` takes; ``hamisim validate`` counts them the same."""
    if not nominated:
        return None
    load: dict[int, list[int]] = {}
    for other, (node, prio, cpu, mem) in nominated.items():
        if other != name and prio >= priority:
            acc = load.setdefault(node, [0, 0])
            acc[0] += cpu
            acc[1] += mem
    return {i: (c, m) for i, (c, m) in load.items()} or None


@dataclass
class _Running:
    node: int
    victim: Victim


def recalls_deleting(kube_scheduler_version: str) -> bool:
    """Whether this kube-scheduler still preempts a victim already being deleted
    (<= 1.34; 1.35+ skips it): :meth:`KubeScheduler.preempt_victim`'s
    ``"update"``/``"event"`` against ``"skip"``."""
    return kube_minor(kube_scheduler_version) <= 34


class KubeScheduler:
    """A HAMi backend behind kube-scheduler's nominations and preemption.

    ``draw_offset(n)`` gives the dry run's random start among ``n`` nodes
    (seeded by the caller; drawn only when some node has a pod of lower
    priority than the preemptor).
    """

    def __init__(self, cluster: Cluster, sched, draw_offset: Callable[[int], int]) -> None:
        self.cluster = cluster
        self.sched = sched
        # the FGD paper's research schedulers model no kube-scheduler around them
        self.kube = "only" in inspect.signature(sched.schedule).parameters
        self.enabled = cluster.scheduler.preemption and self.kube
        # kube-scheduler 1.34+: DynamicResources' PostFilter runs first
        self.dra = self.kube and kube_minor(cluster.scheduler.kube_scheduler_version) >= 34
        self.draw_offset = draw_offset
        #: kube-scheduler <= 1.34 still sends its preemption calls to a victim
        #: that is already being deleted; 1.35+ skips it (see preempt_victim)
        self.recalls_deleting = recalls_deleting(cluster.scheduler.kube_scheduler_version)
        self.n_nodes = len(cluster.nodes)
        self.names = [n.name for n in cluster.nodes]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.running: dict[str, _Running] = {}
        self.on_node: list[dict[str, Victim]] = [{} for _ in cluster.nodes]
        self.requested = [[0, 0] for _ in cluster.nodes]
        self.priorities: Counter[int] = Counter()
        #: name -> (node, priority, cpu, memory)
        self.nominated: dict[str, tuple[int, int, int, int]] = {}
        self.seq = 0

    # -- what runs where ---------------------------------------------------
    def bound(self, pod: Pod, node: int, time: float) -> None:
        """``pod`` runs on ``node`` from ``time`` (a bind or an initial-state pod)."""
        self.nominated.pop(pod.name, None)
        self.seq += 1
        v = Victim(pod.name, pod.priority, (time, self.seq), pod.cpu_milli, pod.memory_mib)
        self.running[pod.name] = _Running(node, v)
        self.on_node[node][pod.name] = v
        self.requested[node][0] += pod.cpu_milli
        self.requested[node][1] += pod.memory_mib
        self.priorities[pod.priority] += 1

    def terminating(self, name: str) -> bool:
        """``name`` carries preemption's ``DisruptionTarget`` condition and is
        being deleted: a pod nominated to its node and of higher priority is
        not eligible to preempt (``podTerminatingByPreemption``). A pod deleted
        otherwise (its trace's deletion, a scenario's ``delete``) is not marked.
        Returns whether the mark is new (the condition's patch is a pod update)."""
        r = self.running.get(name)
        if r is None or r.victim.terminating:
            return False
        v = Victim(r.victim.name, r.victim.priority, r.victim.start, r.victim.cpu_milli,
                   r.victim.memory_mib, terminating=True)
        r.victim = v
        self.on_node[r.node][name] = v
        return True

    def preempt_victim(self, name: str, deleting: bool) -> str:
        """What kube-scheduler's ``prepareCandidate`` does to the victim ``name``
        of a preemption; ``deleting``: its deletion is already under way (an
        earlier preemption, or its own deletion, with a grace period not over).
        Every driver of preemption (the engine, a scenario) applies the answer:

        * ``"delete"``: not being deleted. kube-scheduler patches its
          ``DisruptionTarget`` condition (marked here, see :meth:`terminating`),
          deletes it and records the ``Preempted`` event: the caller writes a
          ``preempt`` row, counts the pod preempted (once in its life) and
          begins its deletion (gone at once, or terminating for its grace
          period, an assigned-pod update).
        * ``"update"`` / ``"event"``: already being deleted, kube-scheduler
          <= 1.34 (it calls ``PreemptPod`` for every victim). kube-apiserver
          ignores the second DELETE (a graceful deletion can only be shortened,
          and the pod's own period is no shorter), so the deadline stands, and
          the pod is not counted again nor its ``preempted_by`` changed; the
          event is recorded again: the caller writes a ``preempt`` row.
          ``"update"``: the condition was not set yet (the pod was deleted by
          its own deletion): the patch is an assigned-pod update, and it now
          counts as terminating by preemption (marked here).
        * ``"skip"``: already being deleted, kube-scheduler 1.35+ (and
          1.34.0-1.34.1, before the revert) skips such a victim: no call, no
          event, nothing for the caller to do.

        kube-scheduler's dry run itself does consider terminating pods (every
        pod of lower priority on the node), so they can be chosen again.
        """
        if not deleting:
            self.terminating(name)
            return "delete"
        if not self.recalls_deleting:
            return "skip"
        return "update" if self.terminating(name) else "event"

    def gone(self, name: str) -> None:
        """``name`` left: departed, deleted, preempted or abandoned. A pending
        pod deleted must come here too: kube-scheduler's ``PriorityQueue.Delete``
        clears its nomination, whose CPU and memory other pods stop counting."""
        self.nominated.pop(name, None)
        r = self.running.pop(name, None)
        if r is None:
            return
        del self.on_node[r.node][name]
        self.requested[r.node][0] -= r.victim.cpu_milli
        self.requested[r.node][1] -= r.victim.memory_mib
        self.priorities[r.victim.priority] -= 1
        if not self.priorities[r.victim.priority]:
            del self.priorities[r.victim.priority]

    def _nominated_load(self, pod: Pod) -> dict[int, tuple[int, int]] | None:
        """CPU and memory of the pods nominated to each node that kube-scheduler
        counts for ``pod`` (:func:`nominated_load`)."""
        return nominated_load(self.nominated, pod.name, pod.priority)

    # -- one attempt --------------------------------------------------------
    def schedule(self, pod: Pod, tie_draw: float | None = None
                 ) -> tuple[object, PostFilterResult | None]:
        """One attempt of ``pod``: the backend's decision
        (:class:`hamisim.hami.decision.Decision`), and when no node took it,
        DefaultPreemption's result (``None`` when preemption is off).

        Raises ``ValueError`` as the backend does (admission refusals, HAMi
        Filter errors: kube-scheduler runs no PostFilter after an error).
        """
        if not self.kube:
            return self.sched.schedule(pod, tie_draw), None
        load = self._nominated_load(pod)
        nominated = self.nominated.get(pod.name)
        if nominated is not None:
            try:
                d = self.sched.schedule(pod, tie_draw, nominated=load, only=nominated[0])
            except ValueError:
                d = None              # logged by kube-scheduler; the full pass follows
            if d is not None and d.bound:
                return d, None
        d = self.sched.schedule(pod, tie_draw, nominated=load) if load else \
            self.sched.schedule(pod, tie_draw)
        if d.bound:
            return d, None
        if not self.enabled:
            return d, PostFilterResult(NO_CLAIMS) if self.dra else None
        return d, self._post_filter(pod, d, nominated[0] if nominated else -1)

    def _post_filter(self, pod: Pod, d, nominated: int) -> PostFilterResult:
        if pod.preemption_policy == "Never":        # the first check: nothing else is read
            return PostFilterResult(uniform_postfix(self.n_nodes, 0, "Never", self.dra))
        lowest = min(self.priorities) if self.priorities else None
        if nominated < 0 and (lowest is None or lowest >= pod.priority):
            # nobody to preempt anywhere: the outcome follows from the counts
            return PostFilterResult(uniform_postfix(self.n_nodes, d.n_potential,
                                                    pod.preemption_policy, self.dra))
        statuses = {self.index[name]: reasons for name, reasons in d.node_reasons.items()}
        nodes = self.cluster.nodes

        def fit_reasons(i: int, removed: Sequence[Victim]) -> list[str]:
            cpu, mem = self.requested[i]
            cpu -= sum(v.cpu_milli for v in removed)
            mem -= sum(v.memory_mib for v in removed)
            if self.nominated:
                for name, (node, prio, c, m) in self.nominated.items():
                    if node == i and name != pod.name and prio >= pod.priority:
                        cpu += c
                        mem += m
            return resource_fit_reasons(nodes[i], (cpu, mem), pod)

        result = preempt(
            priority=pod.priority, policy=pod.preemption_policy, n_nodes=self.n_nodes,
            node_names=self.names, statuses=statuses,
            unresolvable=lambda reasons: is_unresolvable(reasons[0]),
            pods_on=lambda i: list(self.on_node[i].values()), fit_reasons=fit_reasons,
            offset=self.draw_offset, nominated=nominated,
            nominated_pods=lambda i: [(name, prio) for name, (node, prio, _, _)
                                      in self.nominated.items() if node == i])
        if result.nominate is not None:
            if result.nominate >= 0:
                self.nominated[pod.name] = (result.nominate, pod.priority, pod.cpu_milli,
                                            pod.memory_mib)
                for name in result.cleared:
                    self.nominated.pop(name, None)
            else:
                self.nominated.pop(pod.name, None)
        result.message = with_dra(result, self.dra)
        return result
