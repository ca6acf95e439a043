"""What every device family of HAMi shares: its identity and the rules its Fit applies.

HAMi v2.10.0 gives each backend (``pkg/device/<vendor>``) the same interface
(``pkg/device/devices.go``): a *common word* that is both its registry key and
the ``Type`` of the requests it generates, resource names, annotations for
card type and UUID filters, and a ``Fit`` that walks the node's cards from the
last one. The backends differ in which of the steps NVIDIA's Fit has they
take at all; :class:`Family` records that as flags, so one readable Fit
(:func:`hamisim.hami.reference.fit`) and one compiled Fit (``_core._fit``)
serve every family.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Protocol

__all__ = ["Family", "Resources", "RequestFields", "int32", "INT32_MAX", "memory_in_units"]


class Resources(Protocol):
    """What a family's request generation reads of a container
    (:class:`hamisim.pods.Container`)."""

    limits: dict[str, int]
    requests: dict[str, int]

    def value(self, name: str) -> int | None: ...


#: ``GenerateResourceRequests`` of one container: ``(nums, memreq,
#: mempercentagereq, coresreq)``, or ``None`` when the container asks no card of
#: the family (or asks one in a way the family drops)
RequestFields = tuple[int, int, int, int]


#: Go's ``math.MaxInt32``
INT32_MAX = 2**31 - 1


def int32(x: int) -> int:
    """Go's ``int32(x)`` of an ``int64``: the low 32 bits, signed."""
    return ((x + 2**31) % 2**32) - 2**31


def memory_in_units(c: Resources, name: str, unit_mib: int) -> int | None:
    """A container's memory resource ``name`` counted in units of ``unit_mib``
    MiB, as MiB: 0 when it is not asked, ``None`` when HAMi drops the whole
    request (a negative value, or one beyond int32 once scaled: Cambricon's,
    Iluvatar's and Moore Threads' ``GenerateResourceRequests``)."""
    mem = c.value(name)
    if mem is None:
        return 0
    if mem < 0 or mem > INT32_MAX // unit_mib:
        return None
    return mem * unit_mib


@dataclass(frozen=True)
class Family:
    """One HAMi device backend as its v2.10.0 source defines it.

    ``fid`` is the family's number in hamisim (the bit of the kernel's
    per-card offer mask, ``_core._fit``); the rest is HAMi's.
    """

    #: ``CommonWord()``: the registry key and every request's ``Type``
    word: str
    #: the vendor, in words (console and warnings)
    vendor: str
    #: the package under HAMi's ``pkg/device``
    package: str
    fid: int
    #: resource names (``GetResourceNames``; the chart's device-config
    #: defaults); ``""`` where the backend has none (Biren's memory and cores)
    count_name: str
    memory_name: str
    cores_name: str
    #: pod annotations of ``CheckType`` (``None``: the family has none)
    use_type: str | None
    nouse_type: str | None
    #: pod annotations of ``CheckUUID``
    use_uuid: str
    nouse_uuid: str
    #: the node annotation the device plugin registers its cards in
    register_annotation: str
    #: the pod annotations ``PatchAnnotations`` writes (to-allocate, allocated)
    to_allocate_annotation: str
    allocated_annotation: str
    # -- which of NVIDIA's Fit steps the family's Fit takes ---------------
    #: ``nvidia.com/vgpu-mode`` against the card's mode
    checks_mode: bool = False
    #: ``hami.io/device-cordon`` (``CardCordoned``)
    checks_cordon: bool = False
    #: ``nvidia.com/numa-bind``'s regrouping by NUMA node
    numa_bind: bool = False
    #: the ResourceQuota re-check per candidate card (``ResourceQuotaNotFit``)
    fit_quota: bool = False
    #: MIG cards (``mode: mig``)
    mig: bool = False
    #: the ``topology-aware`` card policy's pair scores
    topology: bool = False
    #: AMD's Fit: a card's ``devcore`` is Compute Units and a request's cores a
    #: percentage of them; memory first (none asked = the whole card), then CUs;
    #: no clamp at 100, no exclusive-at-100 and no ``CardComputeUnitsExhausted``
    #: steps; the allocation names the card's own type
    cores_as_cus: bool = False
    #: Biren's Fit: no memory and no core step, and a pick charges neither
    #: (a card is shared by as many pods as its slots); the request's
    #: ``mempercentagereq`` still counts in the card score
    slots_only: bool = False
    #: Moore Threads' Fit: the card's type must contain the word
    #: case-sensitively (Go's ``strings.Contains``), else ``CardTypeMismatch``
    type_case_sensitive: bool = False
    #: Moore Threads' ``customFilterRule``: on a card typed exactly the word,
    #: every earlier container of the pod in the same pass holds only that card,
    #: else ``CardNotFoundCustomFilterRule``
    one_card_per_pod: bool = False
    #: Ascend's Fit: a pod annotated ``huawei.com/vnpu-mode: hami-core`` fits
    #: only a node that runs hami-vnpu-core (else ``ModeNotFit``, counted once),
    #: and its cards' cores are taken as 100 (:mod:`hamisim.devices.ascend`)
    vnpu: bool = False
    #: Ascend 910's Fit and ScoreNode: on a node where every offered card has a
    #: ``NetworkID``, every acceptable card is gathered and the largest networks
    #: are taken first; the node score gains 10 x the pod's network share
    network_topology: bool = False
    #: Ascend 910C's Fit: a request of several NPUs takes whole modules (pairs
    #: of ``index // 2``), else ``AllocatedCardsInsufficientRequest`` out of the request
    module_pairs: bool = False
    #: Kunlunxin's Fit (``graghSelect``): cards chosen by wings of the sorted
    #: list, ``"whole"`` (a card with no tenant; a pick adds its slot alone to
    #: the working usage) or ``"slices"`` (vXPU: one slice size per card);
    #: ``""`` for every other family (:mod:`hamisim.devices.kunlun`)
    wings: str = ""
    #: a second pair of UUID annotations a card must also pass (Kunlunxin's
    #: legacy ``baidu.com/use-gpuuuid`` / ``nouse-gpuuuid``), or ``None``
    legacy_uuid: tuple[str, str] | None = None
    # -- the family's own code (its module) -------------------------------
    #: ``GenerateResourceRequests`` (NVIDIA's lives in :mod:`hamisim.pods`, which
    #: needs the scheduler config)
    generate: Callable[[Resources], RequestFields | None] | None = field(
        default=None, compare=False, repr=False)
    #: ``MutateAdmission``'s rewrite of a container's limits and requests, in
    #: place, given ``(limits, requests, pod annotations)``
    mutate: Callable[[dict[str, int], dict[str, int], Mapping[str, str]], None] | None = field(
        default=None, compare=False, repr=False)
    #: ``MutateAdmission``'s refusal of a container, given ``(limits,
    #: requests, pod annotations)``: the error text (the webhook answers HTTP
    #: 500 with it), or ``None``
    refuse: Callable[[Mapping[str, int], Mapping[str, int], Mapping[str, str]], str | None] \
        | None = field(default=None, compare=False, repr=False)
    #: ``GetNodeDevices`` of a ``capacity`` family: ``(node, cores capacity,
    #: memory capacity) -> card mappings`` (``[]``: no device)
    capacity_cards: Callable[[str, int, int], list[dict]] | None = field(
        default=None, compare=False, repr=False)
    #: the capacity a ``capacity`` family's cards are built from (default: its
    #: cores resource; Kunlunxin's whole cards: its count)
    capacity_resource: str | None = None
    #: how its device plugin registers cards: ``text`` (HAMi's colon/comma
    #: ``DecodeNodeDevices``), ``json`` (``UnMarshalNodeDevices``) or
    #: ``capacity`` (built from the node's capacity, no annotation)
    register_format: str = "text"
    #: how hamisim deploys the family where HAMi's chart does not by default
    #: (said in the console and in ``results.families``), or ``None``
    assumed: str | None = None
    #: a card's slots when a cluster file leaves ``count`` out (NVIDIA: the
    #: chart's ``deviceSplitCount``; Cambricon: the 100 every card registers)
    default_count: int = 10
    #: the one card type the backend registers (Cambricon's ``MLU``), or ``None``
    registered_type: str | None = None
    #: the unit of a request's memory value, in MiB (Iluvatar's ``vMem``: 256)
    memory_unit_mib: int = 1
    #: the ``devcore`` ``GetNodeDevices`` gives every card (Biren's 100 whatever
    #: the annotation says, Moore Threads' 16 from the capacity), or ``None``;
    #: a cluster file's default
    registered_devcore: int | None = None

    @property
    def resource_names(self) -> tuple[str, ...]:
        """Count, memory and cores resource names (those the backend has)."""
        return tuple(n for n in (self.count_name, self.memory_name, self.cores_name) if n)

    def asks(self, c: Resources) -> bool:
        """Does the container name the family's count resource (limits or requests)?"""
        return self.count_name in c.limits or self.count_name in c.requests
