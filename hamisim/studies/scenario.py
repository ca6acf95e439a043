"""Running a scenario: its steps in order against one scheduler.

A ``create`` is scheduled at once, a ``delete`` frees the pod and retries every
pending pod once, an ``expect`` compares the pods' cards with what the file
says; :func:`format_table` prints the result for a terminal. The file format
and its reader are :mod:`hamisim.io.scenariofile`.
"""
from __future__ import annotations

from dataclasses import dataclass

from hamisim.io.scenariofile import (
    EXPECT_DELETED,
    EXPECT_PENDING,
    EXPECT_REJECTED,
    CreateStep,
    DeleteStep,
    ExpectMessageStep,
    Scenario,
    WaitStep,
)
from hamisim.kube.scheduler import KubeScheduler, full_message
from hamisim.hami.reference import aligned_usage
from hamisim.pods import AdmissionDenied, Pod
from hamisim.research.plugins import default_backend
from hamisim.sim.backend import make_scheduler
from hamisim.sim.checker import Checker

__all__ = ["ScenarioEvent", "ExpectationResult", "ScenarioResult", "run_scenario",
           "format_table"]


@dataclass(frozen=True)
class ScenarioEvent:
    """One row of a scenario run: ``bind``, ``unschedulable``, ``delete``,
    ``preempt`` (a running pod deleted by kube-scheduler's preemption; with
    kube-scheduler <= 1.34 again for a victim already terminating, whose
    deadline stands),
    ``rejected`` (HAMi's admission webhook refused to create the pod) or
    ``gone`` (a deleted pod's grace period ended)."""

    step: int
    pod: str
    event: str
    node: str | None = None
    devices: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class ExpectationResult:
    step: int
    pod: str
    expected: str
    actual: str
    ok: bool


@dataclass
class ScenarioResult:
    """Events and checked expectations of one scenario run."""

    path: str
    backend: str
    events: list[ScenarioEvent]
    expectations: list[ExpectationResult]

    @property
    def ok(self) -> bool:
        return all(e.ok for e in self.expectations)

    def to_json(self) -> dict:
        """The ``hamisim scenario --json`` object (DESIGN §5)."""
        return {
            "events": [{"step": e.step, "pod": e.pod, "event": e.event, "node": e.node,
                        "devices": e.devices, "message": e.message} for e in self.events],
            "expectations": [{"step": x.step, "pod": x.pod, "expected": x.expected,
                              "actual": x.actual, "ok": x.ok} for x in self.expectations],
        }


_KEYWORDS = (EXPECT_PENDING, EXPECT_DELETED, EXPECT_REJECTED)


def _same_cards(expected: str, actual: str) -> bool:
    if expected in _KEYWORDS or actual in _KEYWORDS:
        return expected == actual
    return sorted(expected.split(",")) == sorted(actual.split(","))


def run_scenario(scenario: Scenario, backend: str | None = "kernel", check: bool = False
                 ) -> ScenarioResult:
    """Run every step in order on a fresh scheduler.

    A ``create`` is scheduled at once; after each ``delete``, and after a
    preemption deleted its victims, every pending pod is retried once, higher
    priority first, then in creation order (kube-scheduler's queue order). A
    pod that preempts others is nominated to their node, as kube-scheduler
    does; no preemption happens when the cluster's ``scheduler.preemption`` is
    false. A bound pod's state is its card ids
    in annotation order; expectations compare card ids as a multiset. The
    pods of the scenario's initial state are adopted before the first step.
    ``check=True`` verifies the invariants of :mod:`hamisim.sim.checker` after
    every event (raising :class:`hamisim.sim.checker.InvariantError`).
    ``backend=None``: the kernel, or the readable backend for a Python policy.
    """
    s = scenario.cluster.scheduler
    backend = backend or default_backend(s.node_scheduler_policy, s.gpu_scheduler_policy)
    sched = make_scheduler(scenario.cluster, backend=backend)
    kube = KubeScheduler(scenario.cluster, sched, lambda n: 0)
    at = ["the initial state"]
    checker = None
    if check:  # --check: independent books of the cards (hamisim/sim/checker.py)
        checker = Checker(scenario.cluster, scheduler=sched, where=lambda: at[0])
    events: list[ScenarioEvent] = []
    checks: list[ExpectationResult] = []
    state: dict[str, str] = {}
    if scenario.state is not None:
        scenario.state.adopt_into(sched, scenario.cluster)
        node_index = {n.name: i for i, n in enumerate(scenario.cluster.nodes)}
        for ip in scenario.state.pods:
            kube.bound(Pod(ip.name, cpu_milli=ip.cpu_milli, memory_mib=ip.memory_mib),
                       node_index[ip.node], 0.0)
            ids = [p.uuid for picks in ip.containers for p in picks]
            state[ip.name] = ",".join(ids) if ids else f"(no GPU) {ip.node}"
        if checker is not None:
            checker.adopt_state(scenario.state)
    pending: dict[str, Pod] = {}          # insertion order = creation order
    freed = [False]                       # a preemption deleted pods: retry
    clock = [0.0]                         # advanced by wait steps
    terminating: dict[str, float] = {}    # deleted pod -> end of its grace period
    grace_of: dict[str, int] = {}         # running pod -> its grace period
    init_end: dict[str, tuple] = {}       # running pod -> (when its init containers end, ...)
    aligned = [aligned_usage(n, scenario.cluster.scheduler) for n in scenario.cluster.nodes]

    def init_done(name: str) -> None:
        """HAMi keeps only the app entries of its list (see the engine's _init_done)."""
        _, pod, d = init_end.pop(name)
        entries = d.containers if aligned[d.node_index] else [c for c in d.containers if c]
        app_only = [list(c) for c in entries[len(pod.init_containers):]]
        sched.delete(name)
        sched.adopt(name, d.node_index, app_only, 0, pod.cpu_milli, pod.memory_mib,
                    namespace=pod.namespace)
        if checker is not None:
            checker.init_done(name, app_only)
        freed[0] = True
    messages: dict[str, str] = {}         # each pod's last FailedScheduling message

    quotas = any(scenario.cluster.quota_of(ns) is not None for ns in scenario.cluster.quotas)

    def attempt(step: int, pod: Pod, created: bool = False) -> None:
        at[0] = f"step {step}"
        if checker is not None and pod.name not in pending:
            checker.arrive(pod.name)
        post = None
        try:
            if created and quotas:
                # HAMi's webhook checks the namespace's quota once, at creation
                denied = sched.admission_denial(pod)
                if denied:
                    raise AdmissionDenied(denied)
            d, post = kube.schedule(pod)
        except AdmissionDenied as err:
            # HAMi's admission webhook refused it: the pod never exists
            events.append(ScenarioEvent(step, pod.name, "rejected", message=str(err)))
            messages[pod.name] = str(err)
            state[pod.name] = EXPECT_REJECTED
            pending.pop(pod.name, None)
            kube.gone(pod.name)           # as the engine's _abandon: no nomination left
            if checker is not None:
                checker.abandon(pod.name)
            return
        except ValueError as err:
            # A HAMi Filter error (e.g. bad device-scoring-weights) or an
            # admission rejection: the pod is not placed.
            events.append(ScenarioEvent(step, pod.name, "unschedulable", message=str(err)))
            messages[pod.name] = str(err)
            state[pod.name] = EXPECT_PENDING
            pending[pod.name] = pod
            if checker is not None:
                checker.unschedulable(pod.name)
            return
        if d.bound:
            events.append(ScenarioEvent(step, pod.name, "bind", d.node, d.devices))
            state[pod.name] = ",".join(d.card_ids) if d.card_ids else f"(no GPU) {d.node}"
            pending.pop(pod.name, None)
            kube.bound(pod, d.node_index, clock[0])
            grace_of[pod.name] = pod.termination_grace_period
            if pod.init_duration is not None and pod.init_containers and any(d.containers):
                init_end[pod.name] = (clock[0] + pod.init_duration, pod, d)
            if checker is not None:
                checker.bind(pod, d)
        else:
            message = full_message(d.message, post.message) if post else d.message
            events.append(ScenarioEvent(step, pod.name, "unschedulable", message=message))
            messages[pod.name] = message
            state[pod.name] = EXPECT_PENDING
            pending[pod.name] = pod
            if checker is not None:
                checker.unschedulable(pod.name)
            if post is not None and post.victims:
                node = scenario.cluster.nodes[post.nominate].name
                for v in post.victims:
                    # a victim already terminating keeps its deadline; kube-scheduler
                    # <= 1.34 records the event again, 1.35+ skips it (preempt_victim)
                    action = kube.preempt_victim(v.name, v.name in terminating)
                    if action == "skip":
                        continue
                    events.append(ScenarioEvent(
                        step, v.name, "preempt", node,
                        message=f"Preempted by pod {pod.name} on node {node}"))
                    if action == "delete":
                        leave(v.name, step)

    def leave(name: str, step: int) -> None:
        """A running pod is deleted: gone now, or at the end of its grace period.
        A pod already terminating is left alone: a second DELETE cannot restart
        or lengthen a graceful deletion under way (kube-apiserver only shortens
        it, and the pod's own period is no shorter)."""
        if name in terminating:
            return
        grace = grace_of.get(name, 0)
        if grace > 0:
            terminating[name] = clock[0] + grace
            return
        init_end.pop(name, None)
        sched.delete(name)
        kube.gone(name)
        state[name] = EXPECT_DELETED
        if checker is not None:
            checker.depart(name)
        freed[0] = True

    def retry_pending(step: int) -> None:
        while True:
            freed[0] = False
            order = {name: k for k, name in enumerate(pending)}
            for pod in sorted(pending.values(), key=lambda p: (-p.priority, order[p.name])):
                if pod.name in pending:
                    attempt(step, pod)
            if not freed[0]:
                return

    for i, step in enumerate(scenario.steps):
        if isinstance(step, CreateStep):
            attempt(i, step.pod, created=True)
            if freed[0]:
                retry_pending(i)
        elif isinstance(step, DeleteStep):
            events.append(ScenarioEvent(i, step.pod_name, "delete"))
            at[0] = f"step {i}"
            if pending.pop(step.pod_name, None) is not None:
                # kube-scheduler's PriorityQueue.Delete clears its nomination too
                kube.gone(step.pod_name)
                state[step.pod_name] = EXPECT_DELETED
                if checker is not None:
                    checker.abandon(step.pod_name)
            elif step.pod_name not in terminating and state.get(step.pod_name) not in (
                    EXPECT_DELETED, EXPECT_REJECTED):
                leave(step.pod_name, i)
            retry_pending(i)
        elif isinstance(step, WaitStep):
            clock[0] += step.seconds
            at[0] = f"step {i}"
            for name, (end, _, _) in sorted(init_end.items(), key=lambda t: t[1][0]):
                # a terminating pod is not shrunk (HAMi's onUpdatePod only refreshes it)
                if end <= clock[0] and name not in terminating and \
                        state.get(name) != EXPECT_DELETED:
                    events.append(ScenarioEvent(i, name, "init done"))
                    init_done(name)
            for name, end in sorted(terminating.items(), key=lambda t: t[1]):
                if end <= clock[0]:
                    del terminating[name]
                    grace_of[name] = 0
                    events.append(ScenarioEvent(i, name, "gone"))
                    leave(name, i)
            if freed[0]:
                retry_pending(i)
        elif isinstance(step, ExpectMessageStep):
            for pod, expected in step.expected.items():
                actual = messages.get(pod) or "(no FailedScheduling message)"
                checks.append(ExpectationResult(i, pod, expected, actual, expected == actual))
        else:
            for pod, expected in step.expected.items():
                actual = state[pod]
                checks.append(ExpectationResult(i, pod, expected, actual,
                                                _same_cards(expected, actual)))
    if checker is not None:
        at[0] = "the end"
        checker.finish()
    return ScenarioResult(scenario.path, backend, events, checks)


def format_table(result: ScenarioResult) -> str:
    """Events as an aligned table, then the expectations, for a terminal."""
    rows = [("STEP", "POD", "EVENT", "NODE", "DEVICES / MESSAGE")]
    for e in result.events:
        detail = e.devices if e.event == "bind" else (e.message or "")
        rows.append((str(e.step), e.pod, e.event, e.node or "-", detail or "-"))
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    lines = ["  ".join(r[c].ljust(widths[c]) for c in range(4)) + "  " + r[4] for r in rows]
    if result.expectations:
        lines.append("")
        for x in result.expectations:
            mark = "ok  " if x.ok else "FAIL"
            extra = "" if x.ok else f" (got {x.actual})"
            lines.append(f"{mark} step {x.step}: {x.pod} -> {x.expected}{extra}")
        n_ok = sum(x.ok for x in result.expectations)
        lines.append(f"{n_ok}/{len(result.expectations)} expectations met")
    return "\n".join(lines) + "\n"
