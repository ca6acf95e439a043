"""Step-by-step scenario files: a cluster plus create / delete / expect steps.

Layout (DESIGN §4.3): the ``scheduler`` and ``nodes`` keys of a cluster file
(see :mod:`hamisim.io.clusterfile`) plus ``steps``, a non-empty list whose items
are mappings with exactly one key:

* ``create: {name: ..., gpu: ..., ...}`` -- a pod in the trace-column form of
  :mod:`hamisim.io.podspec` (``arrival``/``duration``/``deletion`` are not allowed);
* ``delete: NAME`` -- a pod created by an earlier step and not deleted since;
* ``expect: {NAME: OUTCOME, ...}`` -- OUTCOME is a string: a card id, a comma
  list of card ids (whitespace around commas is dropped), ``pending``,
  ``deleted`` or ``rejected`` (refused by HAMi's admission webhook); every
  card id must exist in the cluster and every pod must have been created by
  an earlier step;
* ``expect_message: {NAME: MESSAGE, ...}`` -- the pod's last FailedScheduling
  message (kube-scheduler's text, preemption verdict included) is exactly
  MESSAGE (the pod must have been created by an earlier step);
* ``wait: SECONDS`` -- time passes: a deleted or preempted pod with a
  ``termination_grace_period`` holds its cards until that much time has
  passed since, then leaves (and pending pods are retried).

A pod name may be created again only after it was deleted. All checks are
load-time checks and raise :class:`hamisim.errors.InputError` at the step's
line. :func:`hamisim.studies.scenario.run_scenario` runs a loaded scenario.

With an initial state (``--state``, :mod:`hamisim.io.initialstate`) its pods are
running before the first step: ``delete`` and ``expect`` may name them, and
``create`` may reuse a name only after deleting them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from hamisim.cluster import Cluster
from hamisim.hami.policy import warn_pod_policies
from hamisim.io.clusterfile import cluster_from_document
from hamisim.io.documents import Doc, load_mapping
from hamisim.io.initialstate import InitialState, load_state
from hamisim.io.podspec import (
    SCENARIO_POD_KEYS,
    pod_from_document,
    warn_core_limits,
    warn_no_card_allowed,
    warn_unmodelled_annotations,
)
from hamisim.pods import Pod

__all__ = [
    "CreateStep", "DeleteStep", "ExpectStep", "ExpectMessageStep", "WaitStep", "Scenario",
    "Step",
    "load_scenario", "scenario_from_document", "EXPECT_PENDING", "EXPECT_DELETED",
    "EXPECT_REJECTED",
]

EXPECT_PENDING = "pending"
EXPECT_DELETED = "deleted"
#: refused by HAMi's admission webhook (the pod was never created)
EXPECT_REJECTED = "rejected"
_STEP_KINDS = ("create", "delete", "expect", "expect_message", "wait")


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


@dataclass(frozen=True)
class ExpectMessageStep:
    """Pod name -> its expected last FailedScheduling message."""

    expected: dict[str, str]
    line: int


@dataclass(frozen=True)
class WaitStep:
    """Let ``seconds`` pass: terminating pods whose grace period ends leave."""

    seconds: float
    line: int


Step = CreateStep | DeleteStep | ExpectStep | ExpectMessageStep | WaitStep


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
            raise step.error("a step needs exactly one of 'create', 'delete', 'expect', "
                             "'expect_message', 'wait'"
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
        elif kind == "expect":
            steps.append(ExpectStep(expected=_expectations(step, created, card_ids), line=line))
        elif kind == "wait":
            v = step.require("wait")
            if isinstance(v.scalar, bool) or not isinstance(v.scalar, (int, float)) \
                    or not v.scalar >= 0 or v.scalar == float("inf"):
                raise v.error(f"'wait' must be a number of seconds >= 0, got {v.describe()}")
            steps.append(WaitStep(seconds=float(v.scalar), line=line))
        else:
            exp = step.require_doc("expect_message")
            if len(exp) == 0:
                raise exp.error("'expect_message' is empty")
            messages = {}
            for pod, v in exp.items():
                if pod not in created:
                    raise exp.error(f"expect_message names pod '{pod}', which no earlier step "
                                    "creates", line=exp.key_line(pod))
                messages[pod] = v.as_str(f"the expected message of pod '{pod}'",
                                         nonempty=True)
            steps.append(ExpectMessageStep(expected=messages, line=line))
    warn_pod_policies((f"{path}:{st.line}", st.pod.annotations)
                      for st in steps if isinstance(st, CreateStep))
    warn_unmodelled_annotations((f"{path}:{st.line}", st.pod.annotations)
                                for st in steps if isinstance(st, CreateStep))
    warn_core_limits((f"{path}:{st.line}", st.pod)
                     for st in steps if isinstance(st, CreateStep))
    warn_no_card_allowed(((f"{path}:{st.line}", st.pod)
                          for st in steps if isinstance(st, CreateStep)),
                         [c for n in cluster.nodes for c in n.cards])
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
                        f"ids, '{EXPECT_PENDING}', '{EXPECT_DELETED}' or '{EXPECT_REJECTED}')",
                        nonempty=True).strip()
        if text in (EXPECT_PENDING, EXPECT_DELETED, EXPECT_REJECTED):
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
