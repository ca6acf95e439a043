"""HAMi v2.10.0's ResourceQuota for NVIDIA cards: ``gpumem`` and ``gpucores`` per namespace.

HAMi enforces its own quota, not kube-apiserver's: it reads only the
``limits.nvidia.com/gpumem`` and ``limits.nvidia.com/gpucores`` keys of a
namespace's ResourceQuota (:class:`hamisim.cluster.Quota`; the memory limit is
multiplied by ``memory_factor``) and counts, per namespace, the collapsed
usage (``CollapseInitContainerUsage``, :func:`hamisim.hami.reference.collapsed_usage`)
of every pod in its cache. Read from HAMi's ``pkg/device/quota.go``,
``pkg/scheduler/webhook.go`` and ``pkg/device/nvidia/device.go`` at v2.10.0.

It checks twice:

* **Admission** (the webhook, once, when the pod is created): the whole
  pod's request, ``max(sum of app containers, largest init container)`` of
  ``memreq x nums`` and ``coresreq x nums`` (a percentage or whole-card memory
  request counts 0 MiB here), against the namespace's usage then. A pod that
  would exceed it is refused: it never exists (:data:`QUOTA_DENIED`).
* **Fit** (every card a container could take): the pod's own entries of this
  pass so far plus this card, collapsed, against the namespace's usage
  without the pod. A card that would exceed it counts ``ResourceQuotaNotFit``
  and Fit goes on to the next card. Memory is the card's resolved amount, so
  percentages count here in MiB of that card.

The test is ``used + request > limit`` (equal still fits); a limit of 0 blocks
any non-zero request. Only NVIDIA's requests and cards count (HAMi credits each
family's usage to its own resource names, ``countPodDevices``; NVIDIA's
``fitQuota`` collapses NVIDIA's list alone): a pod's DCU containers are, for
this quota, containers without a card (:func:`nvidia_only`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from hamisim.cluster import Quota, SchedulerConfig
from hamisim.pods import WEBHOOK, Pod, Request, admit, pod_requests

__all__ = ["QUOTA_DENIED", "QuotaGate", "quota_gate", "nvidia_only", "usage_totals",
           "pod_quota_request",
           "webhook_request", "quota_denial"]

#: kube-apiserver's answer when HAMi's webhook refuses a pod for its quota
QUOTA_DENIED = f'admission webhook "{WEBHOOK}" denied the request: exceeding resource quota'


@dataclass(frozen=True)
class QuotaGate:
    """One namespace's limits (memory already x ``memory_factor``; ``None`` =
    not set) and its usage without the pod being placed."""

    limit_mem: int | None
    limit_cores: int | None
    used_mem: int = 0
    used_cores: int = 0

    def fits(self, mem: int, cores: int) -> bool:
        """HAMi's ``FitQuota``: whether ``mem`` MiB and ``cores`` more stay within the limits."""
        if self.limit_mem is not None and self.used_mem + mem > self.limit_mem:
            return False
        return self.limit_cores is None or self.used_cores + cores <= self.limit_cores


def quota_gate(quota: Quota | None, memory_factor: int, used: tuple[int, int]) -> QuotaGate | None:
    """The gate for a namespace with ``quota`` and ``used`` = (MiB, cores), or
    ``None`` when the namespace has no limit."""
    if quota is None or not quota.limits:
        return None
    mem = quota.memory
    if mem is not None and memory_factor > 1:
        mem *= memory_factor
    return QuotaGate(mem, quota.cores, used[0], used[1])


def nvidia_only(containers: Sequence[Sequence]) -> list[list]:
    """The pod's containers as NVIDIA's list sees them: each container's NVIDIA
    picks (another family's container: none, as a container without a card)."""
    return [[p for p in picks if p.type == "NVIDIA"] for picks in containers]


def usage_totals(usage: Mapping[str, tuple[int, int, int]]) -> tuple[int, int]:
    """A pod's quota usage from its collapsed usage ``{card: (slots, MiB, cores)}``."""
    return sum(u[1] for u in usage.values()), sum(u[2] for u in usage.values())


def pod_quota_request(requests: Sequence[Request | None], n_init: int) -> tuple[int, int]:
    """The webhook's view of the whole pod: ``(MiB, cores)`` as the larger of the
    app containers' sum and the largest init container (``memreq x nums``)."""
    app_mem = app_cores = init_mem = init_cores = 0
    for j, r in enumerate(requests):
        if r is None or r.type != "NVIDIA":     # another family's names, another quota
            continue
        mem, cores = r.memreq * r.nums, r.coresreq * r.nums
        if j < n_init:
            init_mem, init_cores = max(init_mem, mem), max(init_cores, cores)
        else:
            app_mem, app_cores = app_mem + mem, app_cores + cores
    return max(app_mem, init_mem), max(app_cores, init_cores)


def webhook_request(pod: Pod, config: SchedulerConfig) -> tuple[int, int] | None:
    """``(MiB, cores)`` HAMi's webhook checks ``pod`` against its namespace's
    quota for, or ``None`` when it checks nothing: the pod asks for no card
    memory or cores, or the webhook refuses it for another reason
    (:func:`hamisim.pods.admission_error`, reported where it is first scheduled).
    Depends on the pod's shape only, so an engine may compute it once per shape."""
    try:
        admitted = admit(pod, config)
    except ValueError:
        return None
    mem, cores = pod_quota_request(*pod_requests(admitted, config))
    if mem == 0 and cores == 0:
        return None
    return mem, cores


def quota_denial(gate: QuotaGate | None, pod: Pod, config: SchedulerConfig) -> str | None:
    """kube-apiserver's answer when HAMi's webhook refuses to create ``pod`` for
    its namespace's quota (``gate``, with the usage at creation), or ``None``.

    A pod the webhook refuses for another reason (:func:`hamisim.pods.admission_error`,
    checked before the quota) gets ``None`` here: that refusal is reported
    where the pod is first scheduled."""
    if gate is None:
        return None
    request = webhook_request(pod, config)
    if request is None:
        return None
    return None if gate.fits(*request) else QUOTA_DENIED
