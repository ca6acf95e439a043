"""Step-by-step scenario files: a cluster plus create / delete / expect steps.

Layout (DESIGN §4.3): the ``scheduler`` and ``nodes`` keys of a cluster file
(see :mod:`hamisim.clusterfile`) plus ``steps``, a non-empty list whose items
are mappings with exactly one key:

* ``create: {name: ..., gpu: ..., ...}`` -- a pod in the trace-column form of
  :mod:`hamisim.podspec` (``arrival``/``duration``/``deletion`` are not allowed);
* ``delete: NAME`` -- a pod created by an earlier step and not deleted since;
* ``expect: {NAME: OUTCOME, ...}`` -- OUTCOME is a string: a card id, a comma
  list of card ids (whitespace around commas is dropped), ``pending`` or
  ``deleted``; every card id must exist in the cluster and every pod must
  have been created by an earlier step.

A pod name may be created again only after it was deleted. All checks are
load-time checks and raise :class:`hamisim.errors.InputError` at the step's
line.

With an initial state (``--state``, :mod:`hamisim.initialstate`) its pods are
running before the first step: ``delete`` and ``expect`` may name them, and
``create`` may reuse a name only after deleting them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ._documents import Doc, load_mapping
from .cluster import Cluster
from .clusterfile import cluster_from_document
from .initialstate import InitialState, load_state
from .pods import Pod
from .policy import warn_pod_policies
from .podspec import SCENARIO_POD_KEYS, pod_from_document

__all__ = [
    "CreateStep", "DeleteStep", "ExpectStep", "Scenario", "Step",
    "load_scenario", "scenario_from_document", "EXPECT_PENDING", "EXPECT_DELETED",
    "ScenarioEvent", "ExpectationResult", "ScenarioResult", "run_scenario", "format_table",
]

EXPECT_PENDING = "pending"
EXPECT_DELETED = "deleted"
_STEP_KINDS = ("create", "delete", "expect")


@dataclass(frozen=True)
class CreateStep:
    """Create ``pod`` and schedule it at once."""

    pod: Pod
    line: int


@dataclass(frozen=True)
class DeleteStep:
    """Delete the pod named ``pod_name`` (then retry pending pods)."""

    pod_name: str
    line: int


@dataclass(frozen=True)
class ExpectStep:
    """Pod name -> expected outcome: card id(s) joined by ``,``, ``pending`` or ``deleted``."""

    expected: dict[str, str]
    line: int


Step = CreateStep | DeleteStep | ExpectStep


@dataclass
class Scenario:
    """A loaded scenario file: its cluster and its steps in file order."""

    cluster: Cluster
    steps: list[Step]
    path: str
    state: InitialState | None = None


# ---------------------------------------------------------------------------
# loading

def load_scenario(path: str | os.PathLike[str],
                  state: str | os.PathLike[str] | None = None) -> Scenario:
    """Load and validate a scenario file (and an initial ``state`` file, checked
    against the scenario's cluster); raises ``InputError`` on any problem."""
    name = os.fspath(path)
    return scenario_from_document(load_mapping(name), name, state_path=state)


def scenario_from_document(doc: Doc, path: str, *,
                           state_path: str | os.PathLike[str] | None = None) -> Scenario:
    """Build a :class:`Scenario` from a loaded top-level mapping."""
    cluster = cluster_from_document(doc, path, extra_keys=("steps",))
    state = load_state(state_path, cluster) if state_path is not None else None
    steps_v = doc.require("steps")
    items = steps_v.as_list("'steps'")
    if not items:
        raise steps_v.error("'steps' is empty")
    card_ids = {c.id for n in cluster.nodes for c in n.cards}
    # pod name -> line of its latest create (0: running in the initial state)
    created: dict[str, int] = dict.fromkeys(state.names(), 0) if state else {}
    live: set[str] = set(created)
    steps: list[Step] = []
    for i, item in enumerate(items):
        step = item.as_doc(f"step {i}").with_context(f"step {i}")
        kinds = [k for k in step.keys() if k in _STEP_KINDS]
        unknown = [k for k in step.keys() if k not in _STEP_KINDS]
        if unknown:
            step.check_keys(_STEP_KINDS, "a step")
        if len(kinds) != 1:
            raise step.error("a step needs exactly one of 'create', 'delete', 'expect'"
                             + (f" (got {', '.join(kinds)})" if kinds else " (got none)"))
        kind = kinds[0]
        line = step.line
        if kind == "create":
            pod = pod_from_document(step.require_doc("create"), path,
                                    allowed_keys=SCENARIO_POD_KEYS)
            if pod.name in live:
                origin = (f"created on line {created[pod.name]}" if created[pod.name]
                          else "running in the initial state")
                raise step.error(f"pod '{pod.name}' already exists ({origin}); "
                                 "delete it first")
            created[pod.name] = line
            live.add(pod.name)
            steps.append(CreateStep(pod=pod, line=line))
        elif kind == "delete":
            name = step.require_str("delete")
            if name not in created:
                raise step.get("delete").error(f"pod '{name}' is not created by any earlier step")
            if name not in live:
                raise step.get("delete").error(f"pod '{name}' is already deleted")
            live.discard(name)
            steps.append(DeleteStep(pod_name=name, line=line))
        else:
            steps.append(ExpectStep(expected=_expectations(step, created, card_ids), line=line))
    warn_pod_policies((f"{path}:{st.line}", st.pod.annotations)
                      for st in steps if isinstance(st, CreateStep))
    return Scenario(cluster=cluster, steps=steps, path=path, state=state)


def _expectations(step: Doc, created: dict[str, int], card_ids: set[str]) -> dict[str, str]:
    exp = step.require_doc("expect")
    if len(exp) == 0:
        raise exp.error("'expect' is empty")
    out: dict[str, str] = {}
    for pod, v in exp.items():
        if pod not in created:
            raise exp.error(f"expect names pod '{pod}', which no earlier step creates",
                            line=exp.key_line(pod))
        text = v.as_str(f"the expectation for pod '{pod}' (a card id, a comma list of card "
                        f"ids, '{EXPECT_PENDING}' or '{EXPECT_DELETED}')", nonempty=True).strip()
        if text in (EXPECT_PENDING, EXPECT_DELETED):
            out[pod] = text
            continue
        ids = [p.strip() for p in text.split(",")]
        for cid in ids:
            if not cid:
                raise v.error(f"the expectation for pod '{pod}' has an empty card id: {text!r}")
            if cid not in card_ids:
                raise v.error(f"the expectation for pod '{pod}' names card '{cid}', which is "
                              f"not in the cluster (or write '{EXPECT_PENDING}' / "
                              f"'{EXPECT_DELETED}')")
        out[pod] = ",".join(ids)
    return out


# ---------------------------------------------------------------------------
# running

@dataclass(frozen=True)
class ScenarioEvent:
    """One row of a scenario run: ``bind``, ``unschedulable`` or ``delete``."""

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


def _same_cards(expected: str, actual: str) -> bool:
    if expected in (EXPECT_PENDING, EXPECT_DELETED) or actual in (EXPECT_PENDING,
                                                                 EXPECT_DELETED):
        return expected == actual
    return sorted(expected.split(",")) == sorted(actual.split(","))


def run_scenario(scenario: Scenario, backend: str = "kernel", check: bool = False
                 ) -> ScenarioResult:
    """Run every step in order on a fresh scheduler.

    A ``create`` is scheduled at once; after each ``delete`` every pending pod
    is retried once, in creation order. A bound pod's state is its card ids
    in annotation order; expectations compare card ids as a multiset. The
    pods of the scenario's initial state are adopted before the first step.
    ``check=True`` verifies the invariants of :mod:`hamisim.checker` after
    every event (raising :class:`hamisim.checker.InvariantError`).
    """
    from .scheduler import make_scheduler

    sched = make_scheduler(scenario.cluster, backend=backend)
    at = ["the initial state"]
    checker = None
    if check:  # --check: independent books of the cards (hamisim/checker.py)
        from .checker import Checker
        checker = Checker(scenario.cluster, scheduler=sched, where=lambda: at[0])
    events: list[ScenarioEvent] = []
    checks: list[ExpectationResult] = []
    state: dict[str, str] = {}
    if scenario.state is not None:
        scenario.state.adopt_into(sched, scenario.cluster)
        for ip in scenario.state.pods:
            ids = [p.uuid for picks in ip.containers for p in picks]
            state[ip.name] = ",".join(ids) if ids else f"(no GPU) {ip.node}"
        if checker is not None:
            checker.adopt_state(scenario.state)
    pending: dict[str, Pod] = {}          # insertion order = creation order

    def attempt(step: int, pod: Pod) -> None:
        at[0] = f"step {step}"
        if checker is not None and pod.name not in pending:
            checker.arrive(pod.name)
        try:
            d = sched.schedule(pod)
        except ValueError as err:
            # A HAMi Filter error (e.g. bad device-scoring-weights) or an
            # admission rejection: the pod is not placed.
            events.append(ScenarioEvent(step, pod.name, "unschedulable", message=str(err)))
            state[pod.name] = EXPECT_PENDING
            pending[pod.name] = pod
            if checker is not None:
                checker.unschedulable(pod.name)
            return
        if d.bound:
            events.append(ScenarioEvent(step, pod.name, "bind", d.node, d.devices))
            state[pod.name] = ",".join(d.card_ids) if d.card_ids else f"(no GPU) {d.node}"
            pending.pop(pod.name, None)
            if checker is not None:
                checker.bind(pod, d)
        else:
            events.append(ScenarioEvent(step, pod.name, "unschedulable", message=d.message))
            state[pod.name] = EXPECT_PENDING
            pending[pod.name] = pod
            if checker is not None:
                checker.unschedulable(pod.name)

    for i, step in enumerate(scenario.steps):
        if isinstance(step, CreateStep):
            attempt(i, step.pod)
        elif isinstance(step, DeleteStep):
            sched.delete(step.pod_name)
            was_pending = pending.pop(step.pod_name, None) is not None
            state[step.pod_name] = EXPECT_DELETED
            events.append(ScenarioEvent(i, step.pod_name, "delete"))
            if checker is not None:
                at[0] = f"step {i}"
                (checker.abandon if was_pending else checker.depart)(step.pod_name)
            for pod in list(pending.values()):
                attempt(i, pod)
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
