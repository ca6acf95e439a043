"""kube-scheduler's scheduling queue: when a pending pod is tried again.

The rules of kube-scheduler v1.32's ``PriorityQueue``
(``pkg/scheduler/backend/queue/scheduling_queue.go``) that decide *when* a pod
that did not fit is retried; both replay engines (:mod:`hamisim.sim.engine`,
readable, and its compiled twin in ``hamisim/_replay.pyx``) follow them, and
the tests check them against timelines worked out from kube-scheduler's
source (``tests/test_queue_timing.py``). Times are seconds since the
scheduler started (the simulation's 0), which is where kube-scheduler's two
periodic flushes start ticking.

* **Active queue.** Pods are popped by priority (higher first), then by the
  queue's timestamp (earlier first): the pod's arrival, or the time of its last
  failed attempt, so a pod that failed again sorts behind pods that were waiting
  before (kube-scheduler's ``PrioritySort``). Equal timestamps go in arrival
  order (kube-scheduler leaves them to its heap; hamisim's convention).
* **Backoff.** ``min(initial * 2**(attempts-1), max)`` (1 s doubling to 10 s),
  counted from the last failure; a pod in the backoff queue moves to the active
  queue at the first tick of ``flushBackoffQCompleted`` (every second) at or
  after its backoff ends.
* **After a failure** the pod goes to the unschedulable pods, remembering which
  plugins rejected it (:data:`REJ_STATIC`, :data:`REJ_FIT`,
  :data:`REJ_EXTENDER`); a failure that is an error, not a fit (HAMi's Filter
  returned an error), has no rejector and goes to the backoff queue instead.
* **QueueingHints** (on by default from 1.32): a cluster event moves an
  unschedulable pod only when one of its rejectors registered for it
  (:func:`moved_by`); HAMi is kube-scheduler's extender, which registers for
  every event. Moved pods whose backoff is over go straight to the active queue,
  the others to the backoff queue. Events hamisim models: a pod bound
  (``AssignedPodAdd``), a running pod updated (its deletion begins, its init
  containers finish: ``AssignedPodUpdate``), a running pod gone (departed,
  deleted, preempted: ``AssignedPodDelete``; a pod that Succeeded leaves the
  scheduler's informer, which filters out finished pods, as a delete).
* **The pod's own status.** kube-scheduler writes ``PodScheduled=False`` with
  the FailedScheduling message after a failure, but only when the message (or
  the nominated node) changed; that write is an update of the pending pod, and
  with QueueingHints the extender's registration moves it to the backoff queue.
  So a pod HAMi rejected is retried once after its first backoff, then waits.
* **Leftover flush.** Every 30 s (``flushUnschedulablePodsLeftover``), pods
  that have been unschedulable for *more than* 5 minutes since their last
  failure are moved (a pod failing at 2.0 s is retried at 330 s, not 302 s).

kube-scheduler 1.31 has QueueingHints off: only a running pod's deletion moves
pods (those NodeResourcesFit or HAMi rejected), and the pod's own status write
moves nothing. kube-scheduler 1.33 and later keep 1.32's rules here but also pop
from the backoff queue when the active queue is empty; hamisim does not model
that (their timing is 1.32's; DESIGN.md "Queue"). Not modelled either: node
events (HAMi v2.10.0 writes node annotations only when devices change and once
per node at start) and the milliseconds an attempt takes.
"""
from __future__ import annotations

import math
from typing import Sequence

from hamisim.kube.filters import kube_minor

__all__ = [
    "REJ_STATIC", "REJ_FIT", "REJ_EXTENDER", "ASSIGNED_POD_ADD", "ASSIGNED_POD_UPDATE",
    "ASSIGNED_POD_DELETE", "BACKOFF_FLUSH_PERIOD", "LEFTOVER_FLUSH_PERIOD",
    "queueing_hints", "backoff_duration", "backoff_flush_time", "leftover_flush_time",
    "moved_by", "delay_to", "queue_label", "active_queue_order",
]

#: rejected by NodeUnschedulable, TaintToleration or NodeAffinity on some node
#: (no pod event can change their verdict)
REJ_STATIC = 1
#: rejected by NodeResourcesFit (CPU, memory) on some node
REJ_FIT = 2
#: ``Extender``: HAMi removed nodes that passed kube-scheduler's filters
REJ_EXTENDER = 4

#: cluster events (kube-scheduler's ``EventAssignedPod*``)
ASSIGNED_POD_ADD = 0
ASSIGNED_POD_UPDATE = 1
ASSIGNED_POD_DELETE = 2

#: seconds between ``flushBackoffQCompleted`` runs (``wait.Until``, 1 s)
BACKOFF_FLUSH_PERIOD = 1.0
#: seconds between ``flushUnschedulablePodsLeftover`` runs (30 s)
LEFTOVER_FLUSH_PERIOD = 30.0


def active_queue_order(priority: Sequence[int], arrival: Sequence[float],
                       order: Sequence[int]) -> list[int]:
    """Positions ``0..n-1`` of pods waiting since their arrival (none tried yet) in
    the order the active queue pops them: higher ``priority`` first, then earlier
    ``arrival``, then lower ``order`` (the workload's file order)."""
    return sorted(range(len(order)),
                  key=lambda k: (-int(priority[k]), float(arrival[k]), int(order[k])))


def queueing_hints(version: str) -> bool:
    """Whether kube-scheduler ``version`` runs with QueueingHints (the
    ``SchedulerQueueingHints`` gate is on by default from 1.32)."""
    return kube_minor(version) >= 32


def queue_label(version: str) -> str:
    """What a run's console says about the queue modelled for ``version``."""
    minor = kube_minor(version)
    if minor < 32:
        return f"kube-scheduler {version} queue (QueueingHints off)"
    if minor == 32:
        return f"kube-scheduler {version} queue (QueueingHints on)"
    return (f"kube-scheduler 1.32 queue timing ({version} also pops backed-off pods when "
            f"idle, not modelled)")


def backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """The backoff after ``attempts`` attempts (``calculateBackoffDuration``):
    ``initial`` doubled per attempt after the first, at most ``maximum``."""
    if attempts <= 0:
        return 0.0
    # the exponent is bounded so a pod tried thousands of times cannot overflow
    return min(initial * 2.0 ** min(attempts - 1, 64), maximum)


def backoff_flush_time(expiry: float, period: float = BACKOFF_FLUSH_PERIOD) -> float:
    """When the backoff flush, ticking every ``period`` from 0, moves a pod
    whose backoff ends at ``expiry``: the first tick at or after it (a pod
    still backs off while its end is *after* the tick)."""
    return math.ceil(expiry / period) * period


def leftover_flush_time(timestamp: float, max_wait: float,
                        period: float = LEFTOVER_FLUSH_PERIOD) -> float:
    """When the leftover flush, ticking every ``period`` from 0, moves a pod
    unschedulable since ``timestamp``: the first tick *more than* ``max_wait``
    after it."""
    return (math.floor((timestamp + max_wait) / period) + 1) * period


def moved_by(event: int, rejectors: int, hints: bool) -> bool:
    """Whether ``event`` moves an unschedulable pod that ``rejectors`` rejected.

    With QueueingHints the extender (HAMi) registered for every event, and
    NodeResourcesFit for pod deletions (an assigned pod's delete frees CPU and
    memory); the static filters register for node events only. Without them
    (1.31) assigned pods' adds and updates move no pod hamisim models (they
    only move pods with inter-pod affinity), and a delete moves the pods whose
    rejectors registered for it.
    """
    if event == ASSIGNED_POD_DELETE:
        return bool(rejectors & (REJ_FIT | REJ_EXTENDER))
    return hints and bool(rejectors & REJ_EXTENDER)


def delay_to(now: float, when: float) -> float:
    """The delay that a timer scheduled at ``now`` needs to fire exactly at
    ``when`` (an event loop adds delay to now; ``when - now`` can round so
    that the sum misses ``when``)."""
    delay = when - now
    if delay <= 0.0:
        return 0.0
    while now + delay < when:
        delay = math.nextafter(delay, math.inf)
    while now + delay > when:
        delay = math.nextafter(delay, -math.inf)
    return delay
