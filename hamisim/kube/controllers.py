"""Workload controllers: who creates a pod again when HAMi's webhook refuses it.

A trace row may name the controller that owns its pod (the ``controller``
column, ``Kind/name``). A bare pod the webhook refuses (its namespace's
ResourceQuota is used up) is simply never created, as before. A pod owned by a
ReplicaSet or a Job is created again by kube-controller-manager, and its wait
for the quota is part of the workload's wait. The rules, from
kube-controller-manager v1.34 (``pkg/controller/replicaset``,
``pkg/controller/job``, client-go's ``util/workqueue``):

* **A sync** of the controller creates its missing pods, oldest first, in
  slow-start batches of 1, 2, 4, ... (``slowStartBatch``); the first batch in
  which a creation fails ends the sync (the rest of that batch is still sent,
  later batches are not). A sync in which every creation succeeded resets the
  controller's failure count (``queue.Forget``).
* **After a failed sync** the controller is synced again after its rate
  limiter's delay (``queue.AddRateLimited``), growing with the failures since
  the last full success: ReplicaSet ``5 ms * 2**failures`` up to 1000 s
  (``DefaultTypedControllerRateLimiter``; its 10 per second token bucket is not
  modelled), Job ``1 s * 2**failures`` up to 60 s (``DefaultJobApiBackOff``,
  ``MaxJobApiBackOff``). The work queue keeps one pending sync per controller,
  at the earliest time asked.
* **Other syncs**: a new pod of the controller in the trace (a scale-up: the
  controller's own update) syncs it at once; one of its pods leaving (it
  departed, was deleted or preempted) syncs a ReplicaSet at once and a Job after
  ``syncJobBatchPeriod`` (1 s). kube-controller-manager also syncs on every
  update of an owned pod (its bind, the start of its deletion); hamisim does not
  (a simplification: such a sync only retries earlier). The quota freeing up
  does not sync it either: controllers do
  not watch ResourceQuotas, so a refused pod waits for its controller's next
  sync even when its namespace has room again (a wait hamisim reports).
* **Deletion**: a refused pod whose trace ``deletion`` comes first is given up
  (the controller was scaled down or deleted): ``abandon``, ``deleted while
  pending``.

Each refused creation is a ``rejected`` event row (kube-apiserver's answer as
its message); a pod created after a refusal keeps its trace name (Kubernetes
would give a ReplicaSet's or Job's new pod a new random suffix), so its pod row
spans its whole wait, from the trace's arrival. Only quota refusals are
retried: a pod the webhook refuses for its request itself would be refused at
every sync, so it is refused once, as a bare pod. Fill mode (one attempt per
pod, no clock) ignores controllers. Not modelled: StatefulSets (their ordered
creation), DaemonSets, CronJobs (write the Job each run creates), a Deployment
by its own name (its pods belong to its ReplicaSet).
"""
from __future__ import annotations

import re

__all__ = ["CONTROLLER_KINDS", "RS", "JOB", "parse_controller", "controller_kind", "REFUSAL_FIELDS",
           "refusal_rows",
           "resync_delay", "POD_EVENT_DELAY", "RS_BASE_DELAY", "RS_MAX_DELAY", "JOB_BASE_DELAY",
           "JOB_MAX_DELAY", "JOB_SYNC_BATCH_PERIOD"]

#: kind codes (the compiled engine's too)
RS, JOB = 0, 1
#: the kinds hamisim models, by their Kubernetes ``kind`` (case-sensitive)
CONTROLLER_KINDS: dict[str, int] = {"ReplicaSet": RS, "Job": JOB}

#: ReplicaSet: client-go's DefaultTypedControllerRateLimiter, per item
RS_BASE_DELAY, RS_MAX_DELAY = 0.005, 1000.0
#: Job: DefaultJobApiBackOff and MaxJobApiBackOff
JOB_BASE_DELAY, JOB_MAX_DELAY = 1.0, 60.0
#: Job: syncJobBatchPeriod, the delay of a sync a pod event asks for
JOB_SYNC_BATCH_PERIOD = 1.0
#: per kind, the delay of the sync one of its pods leaving asks for
POD_EVENT_DELAY = (0.0, JOB_SYNC_BATCH_PERIOD)

_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_NOT_MODELLED = {
    "Deployment": "a Deployment's pods are owned by its ReplicaSet: write ReplicaSet/<name>",
    "StatefulSet": "StatefulSets (their ordered creation) are not modelled",
    "DaemonSet": "DaemonSets are not modelled",
    "CronJob": "a CronJob's pods are owned by the Job each run creates: write Job/<name>",
}


def parse_controller(value: object) -> str:
    """``value`` checked as ``Kind/name`` (``ReplicaSet/web``, ``Job/train-7``):
    a modelled kind, spelt as Kubernetes spells it, and a DNS subdomain name
    (at most 253 characters). Returns it trimmed; raises ``ValueError`` saying
    what is wrong (with the spelling meant, where one is likely)."""
    if not isinstance(value, str) or "/" not in value:
        raise ValueError(f"'controller' must be Kind/name (ReplicaSet/web, Job/train-7), "
                         f"got {value!r}")
    text = value.strip()
    kind, _, name = text.partition("/")
    if kind not in CONTROLLER_KINDS:
        meant = next((k for k in (*CONTROLLER_KINDS, *_NOT_MODELLED)
                      if k.lower() == kind.lower()), None)
        if meant in _NOT_MODELLED:
            raise ValueError(f"'controller' {text!r}: {_NOT_MODELLED[meant]}")
        hint = f" (did you mean {meant}/{name}?)" if meant else ""
        raise ValueError(f"'controller' {text!r}: kind must be ReplicaSet or Job, "
                         f"spelt so{hint}")
    if len(name) > 253 or not _NAME.match(name):
        raise ValueError(f"'controller' {text!r}: the name must be a DNS subdomain "
                         f"(lower-case letters, digits, '-' and '.', at most 253 characters)")
    return text


def controller_kind(controller: str) -> int:
    """The kind code (:data:`RS`, :data:`JOB`) of a checked ``Kind/name``."""
    return CONTROLLER_KINDS[controller.partition("/")[0]]


def resync_delay(kind: int, failures: int) -> float:
    """The rate limiter's delay before the next sync after a failed one, with
    ``failures`` failed syncs before it since the last full success (0 for the
    first)."""
    base, cap = (RS_BASE_DELAY, RS_MAX_DELAY) if kind == RS else (JOB_BASE_DELAY, JOB_MAX_DELAY)
    if failures >= 64:
        return cap
    return min(base * 2.0 ** failures, cap)


#: ``summary.json``'s ``quota_refusals`` rows, per namespace: creations HAMi's
#: webhook refused; the pods refused at least once; bare pods refused (never
#: created); and the controllers' pods not created at their arrival (refused, or
#: behind a refused one in their controller's list) by what became of them:
#: created later, given up (their deletion came first), still waiting at the end
REFUSAL_FIELDS = ("refused_creations", "pods_refused", "created_later", "never_created",
                  "deleted_before_created", "waiting_at_end")
#: indices into a namespace's counts
R_CREATIONS, R_PODS, R_LATER, R_NEVER, R_DELETED, R_WAITING = range(6)


def refusal_rows(counts: dict[str, list[int]]) -> list[dict]:
    """``quota_refusals``: one mapping per namespace with a refusal, by name."""
    return [{"namespace": ns, **dict(zip(REFUSAL_FIELDS, (int(v) for v in c)))}
            for ns, c in sorted(counts.items()) if c[R_CREATIONS]]
