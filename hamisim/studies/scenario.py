"""Running a scenario: its steps in order against one scheduler.

A ``create`` is scheduled at once, a ``delete`` frees the pod and retries every
pending pod once, an ``expect`` compares the pods' cards with what the file
says; :func:`format_table` prints the result for a terminal. The file format
and its reader are :mod:`hamisim.io.scenariofile`. What a bind, a failure, a
preemption, a deletion, a departure or init containers that finish do is the
replay engine's (:class:`hamisim.sim.engine.PodLifecycle`): the runner keeps
only its steps, the retries after them and its rows.
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
from hamisim.io.initialstate import InitialState
from hamisim.kube.queue import ASSIGNED_POD_DELETE
from hamisim.kube.scheduler import KubeScheduler
from hamisim.hami.reference import aligned_usage
from hamisim.pods import Pod, admission_error
from hamisim.research.plugins import default_backend
from hamisim.shapes import ShapeCache
from hamisim.sim.backend import make_scheduler
from hamisim.sim.checker import Checker
from hamisim.sim.engine import Clock, PodLifecycle, PodState, deficit_nodes
from hamisim.sim.metrics import ClusterMeter

__all__ = ["ScenarioEvent", "ExpectationResult", "ScenarioResult", "run_scenario",
           "format_table"]


@dataclass(frozen=True)
class ScenarioEvent:
    """One row of a scenario run: ``bind``, ``unschedulable``, ``delete``,
    ``preempt`` (a running pod deleted by kube-scheduler's preemption; with
    kube-scheduler <= 1.34 again for a victim already terminating, whose
    deadline stands),
    ``rejected`` (HAMi's admission webhook refused to create the pod),
    ``gone`` (a deleted pod's grace period ended) or ``init done`` (its init
    containers finished: HAMi keeps only the app containers' usage)."""

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


#: the lifecycle's event rows a scenario shows; it writes ``delete``, ``gone`` and
#: ``init done`` itself (a deletion, the end of a grace period and of init
#: containers are its steps), and no ``arrive``, ``abandon``, ``terminate`` or
#: ``depart`` row
_ROWS = frozenset(("bind", "unschedulable", "rejected", "preempt"))


class _Rows:
    """The scenario's event rows, as the lifecycle's recorder (``event``), from
    the first step on (``step`` is ``None`` while the initial state is adopted);
    each pod's last FailedScheduling message."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.events: list[ScenarioEvent] = []
        self.messages: dict[str, str] = {}

    def event(self, time, pod, event, node=None, devices=None, message=None) -> None:
        if event in _ROWS and self.step is not None:
            self.events.append(ScenarioEvent(self.step, pod, event, node, devices, message))
            if event != "bind" and event != "preempt":
                self.messages[pod] = message


class _Run(PodLifecycle):
    """One scenario on the pod lifecycle's handlers (hamisim.sim.engine):
    steps instead of a queue, and the clock moved by ``wait`` steps."""

    def __init__(self, scenario: Scenario, backend: str, check: bool) -> None:
        cluster = self.cluster = scenario.cluster
        self.sched = make_scheduler(cluster, backend=backend)
        self.kube = KubeScheduler(cluster, self.sched, lambda n: 0)
        self.meter = ClusterMeter(cluster)
        self.row_of = self.meter.row
        self.rec = _Rows()
        self.env = Clock()
        self.rng, self.random_ties = None, False    # a scenario draws no node tie-break
        self._denied = ShapeCache(lambda pod: admission_error(pod) or "")
        self.replay = self.retry = True
        self._aligned = [aligned_usage(n, cluster.scheduler) for n in cluster.nodes]
        self._quirk_nodes = deficit_nodes(cluster, self._aligned)
        #: some namespace has a ResourceQuota: HAMi's webhook checks pods at creation
        self.quotas = any(cluster.quota_of(ns) is not None for ns in cluster.quotas)
        self._start_books()
        self.at = "the initial state"
        self.checker = None
        if check:  # --check: independent books of the cards (hamisim/sim/checker.py)
            self.checker = Checker(cluster, scheduler=self.sched, where=lambda: self.at)
        #: each pod's state as ``expect`` reads it: its cards, or a keyword
        self.state: dict[str, str] = {}
        self.freed = False          # a pod left or shrank: retry the pending ones
        self.deadlines: dict[str, float] = {}               # terminating pod -> gone at
        self.init_end: dict[str, tuple[float, tuple]] = {}  # pod -> (init done at, item)
        self.created = 0

    # -- the lifecycle's hooks -------------------------------------------------
    def _done(self, st: PodState, end: float) -> None:
        self.state[st.pod.name] = EXPECT_DELETED    # a refused pod: attempt() says so
        self.init_end.pop(st.pod.name, None)        # its init containers end with it

    def _changed(self, event: int) -> None:
        # only a pod that left frees room for a retry (wait() adds init containers
        # that finished); a bind or a terminating pod does not
        if event == ASSIGNED_POD_DELETE:
            self.freed = True

    def _sample(self) -> None:
        pass

    def _unschedulable(self, st: PodState, rejectors: int, message: str,
                       renominated: bool) -> None:
        self._set_status(st, "unschedulable")   # retried by the steps

    def _own_update(self, st: PodState) -> None:
        pass

    def _dequeue(self, name: str) -> None:
        pass

    def _depart_in(self, delay: float, name: str) -> None:
        self.deadlines[name] = self.env.now + delay     # only grace periods here

    def _init_in(self, delay: float, item: tuple) -> None:
        self.init_end[item[0].pod.name] = (self.env.now + delay, item)

    # -- steps ------------------------------------------------------------------
    def adopt_state(self, initial: InitialState) -> None:
        """The pods of the initial state run from the start (no rows)."""
        node_index = {n.name: i for i, n in enumerate(self.cluster.nodes)}
        for order, ip in enumerate(initial.pods, start=-len(initial.pods)):
            self._adopt(ip, node_index[ip.node], order, 0)
            ids = [p.uuid for picks in ip.containers for p in picks]
            self.state[ip.name] = ",".join(ids) if ids else f"(no GPU) {ip.node}"

    def create(self, pod: Pod) -> None:
        """The pod is created (HAMi's webhook checks its namespace's quota) and
        tried at once."""
        st = PodState(pod, self.created, self.env.now, None, None, 0.0, 0)
        self.created += 1
        if self._create(st):        # its arrive row is not one of a scenario's rows
            self.attempt(st)
        else:
            self.state[pod.name] = EXPECT_REJECTED

    def attempt(self, st: PodState) -> None:
        d = self._attempt(st)
        name = st.pod.name
        if d is None:
            self.state[name] = EXPECT_REJECTED
        elif d.node is not None:
            self.state[name] = ",".join(d.card_ids) if d.card_ids else f"(no GPU) {d.node}"
        else:
            self.state[name] = EXPECT_PENDING

    def delete(self, name: str) -> None:
        """A ``delete`` row, then the pod is deleted: a pending one is abandoned
        (kube-scheduler's PriorityQueue.Delete clears its nomination too), a
        running one terminates; one already terminating or gone is left alone."""
        self.rec.events.append(ScenarioEvent(self.rec.step, name, "delete"))
        self._deletion(name)

    def retry_pending(self) -> None:
        """Every pending pod once, higher priority first, then in creation order;
        again while that freed room."""
        while True:
            self.freed = False
            pending = [st for st in self.pods.values() if st.status == "unschedulable"]
            for st in sorted(pending, key=lambda st: (-st.pod.priority, st.order)):
                if st.status == "unschedulable":
                    self.attempt(st)
            if not self.freed:
                return

    def wait(self, seconds: float) -> None:
        """The clock moves: init containers that finished by now shrink their pod
        (HAMi keeps only the app entries), then deleted pods whose grace period
        ended are gone, each in time order."""
        now = self.env.now = self.env.now + seconds
        step = self.rec.step
        for name, (end, item) in sorted(self.init_end.items(), key=lambda t: t[1][0]):
            if end <= now:
                del self.init_end[name]
                if self._init_done(item):     # not when terminating (HAMi only refreshes it)
                    self.rec.events.append(ScenarioEvent(step, name, "init done"))
                    self.freed = True
        for name, end in sorted(self.deadlines.items(), key=lambda t: t[1]):
            if end <= now:
                del self.deadlines[name]
                self.rec.events.append(ScenarioEvent(step, name, "gone"))
                self._delete(name)


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
    Binds, failures, preemptions, deletions, departures and init containers
    that finish run on the replay engine's handlers
    (:class:`hamisim.sim.engine.PodLifecycle`).
    ``check=True`` verifies the invariants of :mod:`hamisim.sim.checker` after
    every event (raising :class:`hamisim.sim.checker.InvariantError`).
    ``backend=None``: the kernel, or the readable backend for a Python policy.
    """
    s = scenario.cluster.scheduler
    backend = backend or default_backend(s.node_scheduler_policy, s.gpu_scheduler_policy)
    run = _Run(scenario, backend, check)
    if scenario.state is not None:
        run.adopt_state(scenario.state)
    rows = run.rec
    checks: list[ExpectationResult] = []
    for i, step in enumerate(scenario.steps):
        rows.step = i
        run.at = f"step {i}"
        if isinstance(step, CreateStep):
            run.create(step.pod)
            if run.freed:
                run.retry_pending()
        elif isinstance(step, DeleteStep):
            run.delete(step.pod_name)
            run.retry_pending()
        elif isinstance(step, WaitStep):
            run.wait(step.seconds)
            if run.freed:
                run.retry_pending()
        elif isinstance(step, ExpectMessageStep):
            for pod, expected in step.expected.items():
                actual = rows.messages.get(pod) or "(no FailedScheduling message)"
                checks.append(ExpectationResult(i, pod, expected, actual, expected == actual))
        else:
            for pod, expected in step.expected.items():
                actual = run.state[pod]
                checks.append(ExpectationResult(i, pod, expected, actual,
                                                _same_cards(expected, actual)))
    if run.checker is not None:
        run.at = "the end"
        run.checker.finish()
    return ScenarioResult(scenario.path, backend, rows.events, checks)


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
