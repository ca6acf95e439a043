"""What a scheduling attempt produces, in HAMi's and kube-scheduler's words.

Both backends report Fit rejections as counts per reason *code*; this module
turns them into HAMi's reason strings (``"2/2 ExclusiveDeviceAllocateConflict"``),
kube-scheduler's ``FailedScheduling`` message and the
``hami.io/vgpu-devices-allocated`` annotation, so the two backends share one
formatting path.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from hamisim.kube.fit import INSUFFICIENT_CPU, INSUFFICIENT_MEMORY
from hamisim.kube.fiterror import failed_scheduling_message, histogram_message

__all__ = [
    "REASONS", "REASON_CODE", "LISTED_ZERO", "NODE_INSUFFICIENT_DEVICE", "NODE_UNREGISTERED",
    "DEVICE_TYPE_NOT_FOUND", "INSUFFICIENT_CPU", "INSUFFICIENT_MEMORY",
    "Pick", "Decision", "fit_reason", "parse_reason", "failed_scheduling_message",
    "histogram_message",
    "devices_annotation", "pads_empty_segments", "mig_allocations_annotation",
    "encode_mig_allocations",
]

#: HAMi's per-card reason keys (pkg/device/common/common.go), in code order.
#: ``CardCordoned`` is HAMi v2.10.0's per-GPU cordon; ``ResourceQuotaNotFit``
#: its namespace quota (Fit checks it after the mutex rule, before memory).
REASONS: tuple[str, ...] = (
    "CardNotHealth",
    "CardCordoned",
    "CardTypeMismatch",
    "NumaNotFit",
    "CardUuidMismatch",
    "CardTimeSlicingExhausted",
    "ExclusiveDeviceAllocateConflict",
    "CardInsufficientMemory",
    "CardInsufficientCore",
    "CardComputeUnitsExhausted",
    "AllocatedCardsInsufficientRequest",
    "ResourceQuotaNotFit",
    "CardMigTopologyInfeasible",
    # what-if (hamisim.registry.RESERVE_TOKEN), not HAMi's: a card a mutex-reserve pod holds
    "CardReservedByMutex",
    # Moore Threads' customFilterRule (hamisim.devices.mthreads)
    "CardNotFoundCustomFilterRule",
    # Ascend: a hami-core pod on a node without hami-vnpu-core (hamisim.devices.ascend)
    "ModeNotFit",
)
#: a reason count HAMi lists with 0 (Ascend 910C sets
#: ``AllocatedCardsInsufficientRequest`` to the NPUs its module choice found,
#: even none): the histograms' "present, 0" (a count of 0 is "absent")
LISTED_ZERO = -1
REASON_CODE = {name: i for i, name in enumerate(REASONS)}

# Whole-node reasons that are not per-card histograms.
NODE_INSUFFICIENT_DEVICE = "NodeInsufficientDevice"
NODE_UNREGISTERED = "node unregistered"
DEVICE_TYPE_NOT_FOUND = "Device type not found"
# kube-scheduler NodeResourcesFit reasons (hamisim.kube.fit), re-exported.


@dataclass(frozen=True)
class Pick:
    """One card given to one container: HAMi's ``ContainerDevice``."""

    uuid: str
    usedmem: int
    usedcores: int
    idx: int = 0
    #: on a MIG card: ``(profile, start, size)`` HAMi chose (the pod's
    #: ``hami.io/vgpu-mig-allocations`` entry); ``None`` elsewhere
    mig: tuple[str, int, int] | None = None
    #: the request's type: its device family's common word (``NVIDIA``, ``DCU``)
    type: str = "NVIDIA"
    #: the type the allocation names when it is not ``type``: AMD's writes the
    #: card's registered type (``AMD_Instinct_MI300X``); ``None`` = ``type``
    label: str | None = None


@dataclass
class Decision:
    """The result of one scheduling attempt.

    ``containers`` holds, for a bound pod, one list of :class:`Pick` per
    container (init containers first, GPU-less containers as empty lists).
    ``node_reasons`` maps every node that was examined and rejected to its
    reason strings (a node rejected by kube-scheduler for both CPU and memory
    has two). A backend may pass ``reasons_factory`` instead, so the map of a
    large cluster is only built when someone reads it.
    """

    pod: str
    node: str | None = None
    containers: list[list[Pick]] = field(default_factory=list)
    message: str | None = None
    _node_reasons: dict[str, list[str]] | None = field(default=None, repr=False,
                                                       compare=False)
    node_index: int = -1
    #: whether GPU-less containers get an empty annotation segment: HAMi pads
    #: them under the card *model* type, so only nodes whose cards are typed
    #: exactly ``NVIDIA`` show them (HAMI-SEMANTICS §9.1.9).
    pad_empty: bool = True
    #: the other families whose lists HAMi pads the same way on this node (a
    #: card typed exactly their word there): their common words
    pad_words: frozenset[str] = frozenset()
    reasons_factory: Callable[[], dict[str, list[str]]] | None = field(
        default=None, repr=False, compare=False)
    #: a bound pod's usage as ``(card rows, slots, memory, cores)`` in cluster card
    #: order, when the backend has it at hand (the compiled kernel); ``None``:
    #: derive it from ``containers`` (HAMi's collapsed usage)
    usage: tuple | None = field(default=None, repr=False, compare=False)
    _devices: str | None = field(default=None, repr=False, compare=False)
    #: for an attempt no node took: how many nodes were rejected with
    #: kube-scheduler's ``Unschedulable`` code (CPU/memory or HAMi), the nodes
    #: where preemption might help (the others were rejected as unresolvable
    #: or never examined)
    n_potential: int = 0
    #: for an attempt no node took: which kube-scheduler plugins rejected it, as
    #: :mod:`hamisim.kube.queue`'s bits (``REJ_STATIC | REJ_FIT | REJ_EXTENDER``);
    #: 0 for an error (HAMi's Filter failed), which the queue retries after backoff
    rejectors: int = 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return (self.pod, self.node, self.containers, self.message, self.node_index,
                self.pad_empty, self.node_reasons) == (
                    other.pod, other.node, other.containers, other.message, other.node_index,
                    other.pad_empty, other.node_reasons)

    @property
    def node_reasons(self) -> dict[str, list[str]]:
        if self._node_reasons is None:
            self._node_reasons = self.reasons_factory() if self.reasons_factory else {}
        return self._node_reasons

    @property
    def mig_allocations(self) -> str | None:
        """``hami.io/vgpu-mig-allocations`` of a bound pod with MIG instances, else ``None``."""
        if self.node is None:
            return None
        return mig_allocations_annotation(self.containers, self.pad_empty)

    @property
    def bound(self) -> bool:
        return self.node is not None

    @property
    def devices(self) -> str | None:
        """The ``hami.io/vgpu-devices-allocated`` value; ``None`` when pending or
        when HAMi placed no card (a pod without GPU requests)."""
        if self._devices is None:
            if self.node is None or not any(self.containers):
                return None
            self._devices = devices_annotation(self.containers, self.pad_empty,
                                               self.pad_words)
        return self._devices

    @property
    def card_ids(self) -> list[str]:
        """All cards of the pod, in annotation order."""
        return [p.uuid for c in self.containers for p in c]


def fit_reason(counts: Mapping[str, int], n_cards: int) -> str:
    """HAMi's Fit failure string: ``"<n>/<cards> <Key>"`` sorted as strings
    (a :data:`LISTED_ZERO` count is written ``0/<cards>``)."""
    parts = [f"{max(n, 0)}/{n_cards} {key}" for key, n in counts.items()
             if n > 0 or n == LISTED_ZERO]
    return ", ".join(sorted(parts))


def parse_reason(reason: str) -> dict[str, int]:
    """Inverse of :func:`fit_reason`: reason key -> count."""
    out: dict[str, int] = {}
    for part in reason.split(", "):
        part = part.strip()
        if not part:
            continue
        frac, _, key = part.partition(" ")
        out[key] = int(frac.split("/")[0])
    return out


def devices_annotation(containers: Sequence[Sequence[Pick]], pad_empty: bool = True,
                       pad_words: Iterable[str] = ()) -> str:
    """Encode the pod's allocation annotation (``hami.io/vgpu-devices-allocated``
    for NVIDIA, ``hami.io/dcu-devices-allocated`` for DCU, ...).

    Each card ``UUID,<type>,<mem>,<cores>:`` (``type``: its family's word);
    each container closed by ``;``. A container without cards of the family
    gives an empty segment only when the family's list is padded on the node
    (NVIDIA: ``pad_empty``; another family: its word in ``pad_words``). A pod
    with cards of several families (one family per container) gets each
    family's value, in :data:`hamisim.devices.FAMILIES` order, joined by a
    space (a hamisim convention: HAMi writes one annotation per family).
    """
    from hamisim.devices import SIMULATED_FAMILIES
    present = {p.type for picks in containers for p in picks}
    if present <= {"NVIDIA"}:
        return _family_list(containers, "NVIDIA", pad_empty)
    pads = set(pad_words)
    return " ".join(_family_list(containers, word, pad_empty if word == "NVIDIA"
                                 else word in pads)
                    for word in SIMULATED_FAMILIES if word in present)


def _family_list(containers: Sequence[Sequence[Pick]], word: str, pad: bool) -> str:
    out = []
    for picks in containers:
        own = [p for p in picks if p.type == word]
        if own:
            out.append("".join(f"{p.uuid},{p.label or word},{p.usedmem},{p.usedcores}:"
                               for p in own) + ";")
        elif pad:
            out.append(";")
    return "".join(out)


def mig_allocations_annotation(containers: Sequence[Sequence[Pick]],
                               pad_empty: bool = True) -> str | None:
    """Encode ``hami.io/vgpu-mig-allocations`` (HAMi's ``EncodeMigAllocations``),
    or ``None`` when no card is a MIG instance (HAMi then writes no annotation).

    One entry per MIG instance: ``containerIndex`` is the container's position
    in HAMi's device list (GPU-less containers take one only when
    ``pad_empty``, as in :func:`devices_annotation`), ``deviceIndex`` the
    card's position in the container's list; the runtime fields (``migUUID``,
    ...) are the device plugin's, added later.
    """
    listed = [picks for picks in containers if picks or pad_empty]
    return encode_mig_allocations([(c, d, p.uuid, *p.mig) for c, picks in enumerate(listed)
                                   for d, p in enumerate(picks) if p.mig is not None])


def encode_mig_allocations(entries: Sequence[tuple[int, int, str, str, int, int]]
                           ) -> str | None:
    """The annotation's JSON for ``(containerIndex, deviceIndex, gpuUUID, profile,
    start, size)`` entries, as Go's ``encoding/json`` writes it; ``None`` for none."""
    if not entries:
        return None
    text = json.dumps([{"containerIndex": c, "deviceIndex": d, "gpuUUID": uuid,
                        "profile": profile, "placement": {"start": start, "size": size}}
                       for c, d, uuid, profile, start, size in entries],
                      separators=(",", ":"), ensure_ascii=False)
    # Go's encoding/json escapes these for HTML safety
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def pads_empty_segments(card_types: Iterable[str]) -> bool:
    """Whether a node's annotation keeps empty segments (a card typed exactly ``NVIDIA``)."""
    return any(t == "NVIDIA" for t in card_types)


def padded_words(card_types: Iterable[str]) -> frozenset[str]:
    """The families other than NVIDIA whose lists a node pads: those with a card
    typed exactly their word there (HAMi pads under ``nodeDeviceBaseTypes``)."""
    from hamisim.devices import SIMULATED_FAMILIES
    types = set(card_types)
    return frozenset(w for w in SIMULATED_FAMILIES if w != "NVIDIA" and w in types)
