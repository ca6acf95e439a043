"""Pods as HAMi's admission webhook and scheduler see them.

A :class:`Pod` lists containers with their resource ``limits`` / ``requests``
under the real resource names (``nvidia.com/gpu``, ``nvidia.com/gpumem``,
``nvidia.com/gpumem-percentage``, ``nvidia.com/gpucores``) and its annotations
under their real names. :func:`admit` applies the webhook's defaults once
(HAMI-SEMANTICS §2.3); :func:`container_request` turns one admitted container
into the per-container :class:`Request` that Fit consumes.

A pod also carries what kube-scheduler's own filters read before HAMi sees a
node (``nodeSelector``, ``tolerations``, required node affinity) and what its
preemption reads (``priority``, ``preemptionPolicy``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Mapping

from hamisim.cluster import SchedulerConfig
from hamisim.devices import OTHER_THAN_NVIDIA, requested_family
from hamisim.devices.family import int32

__all__ = [
    "GPU", "GPUMEM", "GPUMEM_PERCENTAGE", "GPUCORES", "NO_PERCENTAGE", "TOLERATION_OPERATORS",
    "SELECTOR_OPERATORS", "PREEMPTION_POLICIES", "Toleration", "NodeSelectorRequirement",
    "NodeSelectorTerm", "Container", "Pod", "WEBHOOK", "AdmissionDenied", "admission_error",
    "container_names", "Request", "admit", "default_core_limit", "container_request",
    "other_family_request", "pod_requests",
]

GPU = "nvidia.com/gpu"
GPUMEM = "nvidia.com/gpumem"
GPUMEM_PERCENTAGE = "nvidia.com/gpumem-percentage"
GPUCORES = "nvidia.com/gpucores"
#: HAMi's sentinel for "no memory percentage requested".
NO_PERCENTAGE = 101
_INT32_MAX = 2**31 - 1


#: ``spec.tolerations[].operator`` values (empty means ``Equal``).
TOLERATION_OPERATORS = ("Equal", "Exists")
#: node selector requirement operators of required node affinity.
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
#: ``spec.preemptionPolicy`` values; the first is Kubernetes' default.
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


@dataclass(frozen=True)
class Toleration:
    """One ``spec.tolerations[]`` entry. Empty ``key`` (with ``Exists``) matches
    every taint key, empty ``effect`` every effect."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """One ``matchExpressions`` (node labels) or ``matchFields`` entry
    (``metadata.name`` only) of a node selector term."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSelectorTerm:
    """One ``nodeSelectorTerms[]`` entry: its requirements are ANDed; a term
    with none matches no node."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True)
class Container:
    """Resource limits and requests of one container (resource name -> int)."""

    limits: Mapping[str, int] = field(default_factory=dict)
    requests: Mapping[str, int] = field(default_factory=dict)

    def value(self, name: str) -> int | None:
        """Limits win over requests, as in HAMi's request generation."""
        if name in self.limits:
            return self.limits[name]
        return self.requests.get(name)


@dataclass(frozen=True)
class Pod:
    """A pod spec: app containers, init containers, annotations, CPU/memory.

    ``cpu_milli`` / ``memory_mib`` are the pod's kube-scheduler requests (sum
    over containers, as kube-scheduler's NodeResourcesFit uses them).
    """

    name: str
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    cpu_milli: int = 0
    memory_mib: int = 0
    priority: int = 0
    #: ``spec.nodeSelector``: every label must be present with this value
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    #: ``spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
    #: .nodeSelectorTerms`` (ORed); ``None`` = no required node affinity
    affinity: tuple[NodeSelectorTerm, ...] | None = None
    #: ``spec.preemptionPolicy``: ``PreemptLowerPriority`` (default) or ``Never``
    preemption_policy: str = "PreemptLowerPriority"
    #: ``spec.terminationGracePeriodSeconds``: once deleted (or preempted) a
    #: running pod keeps its node and cards this long. hamisim's default is 0
    #: (gone at once), not Kubernetes' 30
    termination_grace_period: int = 0
    #: seconds after binding when every init container has succeeded: HAMi
    #: v2.10.0 then keeps only the app containers' usage, dropping the first
    #: ``len(init_containers)`` entries of its list (``AppContainersOnlyDeviceUsage``);
    #: ``None`` = they never finish as far as HAMi sees (its usage stays)
    init_duration: float | None = None
    #: ``metadata.namespace``: whose ResourceQuota (cluster file ``quotas``) the
    #: pod's cards count against
    namespace: str = "default"

    @property
    def constrained(self) -> bool:
        """Whether the pod restricts nodes by labels (selector or affinity)."""
        return bool(self.node_selector) or self.affinity is not None

    def renamed(self, name: str) -> "Pod":
        """This pod under another name (its computed :attr:`shape_key` carries over)."""
        pod = replace(self, name=name)
        pod.__dict__["shape_key"] = self.shape_key
        return pod

    @cached_property
    def shape_key(self) -> tuple | None:
        """A hashable key of everything but the name and priority that placement
        reads (containers, annotations, CPU and memory, node selector,
        tolerations, node affinity, preemption policy, namespace), or ``None`` when some
        value is unhashable. Pods with equal keys are placed alike, so the
        schedulers and the engine cache their per-pod work under it.

        Computed once per pod object: treat a pod's mappings as frozen once
        it has been handed to a scheduler.
        """
        try:
            key = (tuple([(tuple(c.limits.items()), tuple(c.requests.items()))
                          for c in self.containers]),
                   tuple([(tuple(c.limits.items()), tuple(c.requests.items()))
                          for c in self.init_containers]),
                   tuple(self.annotations.items()) if self.annotations else (),
                   self.cpu_milli, self.memory_mib)
            if (self.node_selector or self.tolerations or self.affinity is not None
                    or self.preemption_policy != "PreemptLowerPriority"
                    or self.termination_grace_period or self.init_duration is not None):
                key += (tuple(sorted(self.node_selector.items())), self.tolerations,
                        self.affinity, self.preemption_policy,
                        self.termination_grace_period, self.init_duration)
            if self.namespace != "default":
                key += ("namespace", self.namespace)
            hash(key)
        except TypeError:
            return None
        return key


@dataclass(frozen=True)
class Request:
    """One container's NVIDIA request as handed to Fit (HAMi ``ContainerDeviceRequest``)."""

    nums: int
    memreq: int = 0
    mempercentagereq: int = NO_PERCENTAGE
    coresreq: int = 0
    type: str = "NVIDIA"


def default_core_limit(container: Container, *, count: str = GPU, memory: str = GPUMEM,
                       memory_percentage: str = GPUMEM_PERCENTAGE,
                       cores: str = GPUCORES) -> int | None:
    """The ``gpucores`` limit after the webhook's default-exclusivity rule.

    Returns the (possibly defaulted) core limit, or ``None`` when none is
    written. A count with no cores becomes exclusive (cores 100) when the
    percentage is exactly 100, or when no memory is asked for at all.
    """
    if cores in container.limits:
        return container.limits[cores]
    has_count = count in container.limits or count in container.requests
    if not has_count or cores in container.requests:
        return None
    pct = container.value(memory_percentage)
    if pct is not None:
        return 100 if pct == 100 else None
    if not memory or container.value(memory) is None:
        return 100
    return None


def _admit_container(c: Container, config: SchedulerConfig,
                     annotations: Mapping[str, str]) -> Container:
    limits = dict(c.limits)
    if GPU not in limits and config.default_gpu_num > 0 and any(
            k in limits for k in (GPUCORES, GPUMEM, GPUMEM_PERCENTAGE)):
        limits[GPU] = config.default_gpu_num
    c = replace(c, limits=limits)
    core = default_core_limit(c)
    if core is not None and GPUCORES not in limits:
        limits[GPUCORES] = core
    requests = dict(c.requests)
    for fam in OTHER_THAN_NVIDIA:
        # the other backends' MutateAdmission (Iluvatar's core limit, Ascend's
        # templates)
        if fam.mutate is not None and (fam.count_name in limits
                                       or fam.count_name in requests):
            fam.mutate(limits, requests, annotations)
    return replace(c, limits=limits, requests=requests)


#: the name of HAMi's mutating webhook (``vgpu.hami.io``) as kube-apiserver quotes it
WEBHOOK = "vgpu.hami.io"


class AdmissionDenied(ValueError):
    """HAMi's admission webhook refused to create the pod: no pod exists, so it
    is never scheduled. ``str()`` is what kube-apiserver answers the client."""


def container_names(pod: Pod) -> list[str]:
    """Container names in the webhook's order (init containers first). hamisim
    keeps no names: ``init-<j>`` and ``container-<j>`` by position."""
    return ([f"init-{j}" for j in range(len(pod.init_containers))]
            + [f"container-{j}" for j in range(len(pod.containers))])


def admission_error(pod: Pod) -> str | None:
    """Why HAMi v2.10.0's webhook refuses ``pod``, as the client sees it, or ``None``.

    The checks a hamisim pod can fail: NVIDIA's ``MutateAdmission`` errors
    (HTTP 500) on a ``gpumem-percentage`` outside 0..100 (limits, else
    requests), AMD's on a core percentage outside 1..100 (limits), Moore
    Threads' on a count at or below 0 or a one-card memory limit outside its
    sizes (:mod:`hamisim.devices.mthreads`), init containers first, each container's backends in family order. (No containers, privileged containers,
    ``spec.nodeName`` and ResourceQuota are the webhook's other checks; hamisim
    pods cannot carry the first three.)
    """
    for name, c in zip(container_names(pod), (*pod.init_containers, *pod.containers)):
        pct = c.value(GPUMEM_PERCENTAGE)
        if pct is not None and not 0 <= pct <= 100:
            # kube-apiserver's ToStatusErr only prefixes the webhook's own text
            # (its HTTP 500 is kept; "Internal error occurred" is for a webhook
            # that could not be called)
            return (f'admission webhook "{WEBHOOK}" denied the '
                    f"request: invalid {GPUMEM_PERCENTAGE} value {pct} in container {name}: "
                    "must be an integer between 0 and 100")
        for fam in OTHER_THAN_NVIDIA:
            # the other backends' MutateAdmission errors (AMD's core percentage)
            problem = (fam.refuse(c.limits, c.requests, pod.annotations)
                       if fam.refuse is not None else None)
            if problem is not None:
                return f'admission webhook "{WEBHOOK}" denied the request: {problem}'
    return None


def admit(pod: Pod, config: SchedulerConfig) -> Pod:
    """Apply HAMi's admission webhook mutation to every container.

    Raises :class:`AdmissionDenied` when the webhook refuses the pod
    (:func:`admission_error`).
    """
    error = admission_error(pod)
    if error is not None:
        raise AdmissionDenied(error)
    return replace(
        pod,
        containers=tuple(_admit_container(c, config, pod.annotations) for c in pod.containers),
        init_containers=tuple(_admit_container(c, config, pod.annotations)
                              for c in pod.init_containers),
    )


def container_request(c: Container, config: SchedulerConfig) -> Request | None:
    """HAMi's request generation for one (admitted) container.

    The container's NVIDIA request, else its request of another simulated
    family (:mod:`hamisim.devices`; a container asks one family: the trace
    readers refuse one that asks two). ``None`` when it asks for no card, or
    when HAMi drops the request (NVIDIA: a memory request that leaves int32
    after ``memory_factor``; the other families: see their modules).
    """
    nums = c.value(GPU)
    if not nums or nums <= 0 or int32(nums) <= 0:
        # HAMi takes Go's int32 of the count (and of the cores below): a count
        # whose int32 is not positive asks no card
        return other_family_request(c)
    nums = int32(nums)
    memreq = c.value(GPUMEM) or 0
    # HAMi v2.10.0 drops the request (silently, no error) when the memory is
    # negative or would leave int32 once multiplied by memory_factor.
    factor = max(config.memory_factor, 1)
    if memreq < 0 or memreq > _INT32_MAX // factor:
        return None
    memreq *= factor
    pct = NO_PERCENTAGE
    raw_pct = c.value(GPUMEM_PERCENTAGE)
    if raw_pct is not None:
        raw_pct = min(raw_pct, 100)
        if raw_pct > 0:
            pct = raw_pct
    if pct == NO_PERCENTAGE and memreq == 0:
        if config.default_memory != 0:
            memreq = config.default_memory
        else:
            pct = 100
    cores = c.value(GPUCORES)
    coresreq = config.default_cores if cores is None else int32(cores)
    return Request(nums=nums, memreq=memreq, mempercentagereq=pct, coresreq=coresreq)


def other_family_request(c: Container) -> Request | None:
    """The container's request of a simulated family other than NVIDIA, if any
    (each family's ``GenerateResourceRequests``, tried in :data:`hamisim.devices.FAMILIES` order)."""
    asked = requested_family(c)
    if asked is None or asked[1] is None:
        return None
    fam, (nums, memreq, pct, cores) = asked
    return Request(nums=nums, memreq=memreq, mempercentagereq=pct, coresreq=cores,
                   type=fam.word)


def pod_requests(pod: Pod, config: SchedulerConfig) -> tuple[list[Request | None], int]:
    """Per-container requests of an admitted pod, init containers first.

    Returns ``(requests, n_init)``; containers without a card request give ``None``.
    """
    reqs = [container_request(c, config) for c in pod.init_containers]
    reqs += [container_request(c, config) for c in pod.containers]
    return reqs, len(pod.init_containers)
