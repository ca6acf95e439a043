"""Device families: which of HAMi's device backends a card belongs to, and which are simulated.

HAMi v2.10.0 has one backend per vendor (``pkg/device/<vendor>``), each with its
*common word* (``CommonWord()``): ``NVIDIA`` for ``pkg/device/nvidia``,
``MLU`` for Cambricon, ``DCU`` for Hygon, ``Ascend910B3`` and friends for
Huawei's Ascend (from the chart's device config), ... A container's request
carries its backend's word as its type, and the scheduler offers it the node's
cards whose type *contains* that word, case-insensitively
(``pkg/scheduler/score.go`` ``getNodeResources``: ``strings.Contains(
strings.ToLower(card type), strings.ToLower(request type))``). That test is
the whole of a card's family as HAMi decides it.

hamisim simulates the families of :data:`FAMILIES` (NVIDIA, Hygon DCU, the
four Iluvatar chips of HAMi's chart, AMD, Cambricon MLU, Biren, Moore Threads
the seven Ascend chips of HAMi's chart and Kunlunxin's whole cards and vXPU; one module per
vendor in this package,
sharing :class:`~hamisim.devices.family.Family`):
a card whose type contains none of their words (an ``Ascend910B``, a
``Metax-SGPU``, an empty type) is offered to no simulated pod, so it is never scheduled and is
left out of every GPU total and denominator (:attr:`hamisim.cluster.Cluster.n_cards`,
the meter's ``hami_gpu_total``, utilisation, fragmentation, offered load); the
cluster reader warns about such cards at their line. HAMi's node score still
counts every registered card, whatever its type (the kernel models that).

This package is the one place that decides: a backend added later (issue 37)
adds its module and its :class:`Family` to :data:`FAMILIES`, and everything
that counts cards follows (:func:`simulated_flags`); what a request of one
family may use is :func:`offer_mask` (NVIDIA's alone: :func:`nvidia_flags`). :data:`OTHER_FAMILIES` only names the backend a card probably
belongs to, for the warning.
"""
from __future__ import annotations

from typing import Iterable

from hamisim.devices.family import Family
from hamisim.devices import ascend as _ascend
from hamisim.devices import iluvatar as _iluvatar
from hamisim.devices.amd import AMD as _AMD
from hamisim.devices.biren import BIREN as _BIREN
from hamisim.devices.cambricon import MLU as _MLU
from hamisim.devices.family import RequestFields, Resources
from hamisim.devices.hygon import DCU as _DCU
from hamisim.devices.kunlun import KUNLUN as _KUNLUN
from hamisim.devices.kunlun import XPU as _XPU
from hamisim.devices.mthreads import MTHREADS as _MTHREADS
from hamisim.devices.nvidia import NVIDIA as _NVIDIA

__all__ = ["NVIDIA", "FAMILIES", "Family", "SIMULATED_FAMILIES", "OTHER_FAMILIES", "offered_to",
           "device_family", "family", "is_simulated", "backend_of", "simulated_flags",
           "simulated_cards", "nvidia_flags", "offer_mask", "exact_family", "OTHER_THAN_NVIDIA",
           "requested_family", "vendors", "case_mismatch"]

#: HAMi's NVIDIA backend's common word (``nvidia.NvidiaGPUDevice``), the type of its requests
NVIDIA = _NVIDIA.word

#: the families hamisim simulates, by ``fid`` (the order they are tried in)
FAMILIES: tuple[Family, ...] = (_NVIDIA, _DCU, *_iluvatar.FAMILIES, _AMD, _MLU, _BIREN,
                                 _MTHREADS, *_ascend.FAMILIES, _KUNLUN, _XPU)
assert all(f.fid == i for i, f in enumerate(FAMILIES)) and len(FAMILIES) <= 32

#: the families whose requests come from their own module (all but NVIDIA,
#: whose request generation reads the scheduler config: :mod:`hamisim.pods`)
OTHER_THAN_NVIDIA: tuple[Family, ...] = FAMILIES[1:]

#: their common words
SIMULATED_FAMILIES: tuple[str, ...] = tuple(f.word for f in FAMILIES)

_BY_WORD = {f.word: f for f in FAMILIES}


def family(word: str) -> Family | None:
    """The simulated family whose common word (a request's type) is ``word``."""
    return _BY_WORD.get(word)


def requested_family(c: Resources) -> tuple[Family, RequestFields | None] | None:
    """The first family other than NVIDIA whose count resource the container
    names, and its request (``None`` when the family drops it); ``None`` when
    it names none."""
    for f in OTHER_THAN_NVIDIA:
        if f.asks(c):
            return f, f.generate(c)
    return None


def vendors() -> str:
    """The simulated families in words, for messages (``NVIDIA, Hygon DCU,
    Iluvatar (MR-V100, MR-V50, BI-V150, BI-V100), AMD, Cambricon MLU, Biren, Moore Threads,
    Ascend (Ascend910A, ...)``)."""
    out: list[str] = []
    for f in FAMILIES:
        chips = [g.word for g in FAMILIES if g.package == f.package]
        if len(chips) == 1:
            out.append(f.vendor)
        elif f.word == chips[0]:
            out.append(f"{f.vendor.split()[0]} ({', '.join(chips)})")
    return ", ".join(out)

#: HAMi v2.10.0's other backends: common word (``CommonWord()``; Ascend's and
#: Iluvatar's come from the chart's device config, so their chip prefix is given
#: here), vendor, package under ``pkg/device``; tried in order after the simulated ones
OTHER_FAMILIES: tuple[tuple[str, str, str], ...] = (
    ("Ascend", "Huawei Ascend (a chip outside the chart's vnpus list)", "ascend"),
    ("Iluvatar", "Iluvatar (a chip outside the chart's iluvatars list)", "iluvatar"),
    ("MR-V", "Iluvatar (a chip outside the chart's iluvatars list)", "iluvatar"),
    ("BI-V", "Iluvatar (a chip outside the chart's iluvatars list)", "iluvatar"),
    ("Metax", "MetaX", "metax"),
    ("Enflame", "Enflame", "enflame"),
    ("GCU", "Enflame GCU", "enflame"),
    ("AWSNeuron", "AWS Neuron", "awsneuron"),
    ("Vastai", "Vastai", "vastai"),
)


def offered_to(request_type: str, card_type: str) -> bool:
    """HAMi's ``getNodeResources`` test: does a request of ``request_type`` (its
    backend's common word) see a card of ``card_type``? Go's ``ToLower`` on both
    sides, then a substring test."""
    return request_type.lower() in card_type.lower()


def device_family(card_type: str) -> str | None:
    """The family of a card: the first simulated family whose word its type
    contains (as :func:`offered_to`), else the first of :data:`OTHER_FAMILIES`,
    else ``None`` (an empty or unknown type: no backend of HAMi's offers it)."""
    for word in SIMULATED_FAMILIES:
        if offered_to(word, card_type):
            return word
    for word, _, _ in OTHER_FAMILIES:
        if offered_to(word, card_type):
            return word
    return None


def is_simulated(card_type: str) -> bool:
    """Is a card of this type one hamisim schedules and counts as a GPU?"""
    return any(offered_to(word, card_type) for word in SIMULATED_FAMILIES)


def backend_of(card_type: str) -> str | None:
    """HAMi's backend a card of an unsimulated type probably belongs to, in words
    (``"HAMi's Huawei Ascend backend, pkg/device/ascend"``); ``None`` when no
    word matches or the type is simulated."""
    if is_simulated(card_type):
        return None
    family = device_family(card_type)
    return next((f"HAMi's {vendor} backend, pkg/device/{package}"
                 for word, vendor, package in OTHER_FAMILIES if word == family), None)


def _flags(cards: Iterable, test) -> list[bool]:
    # each distinct type decided once (a large cluster has a hundred thousand
    # cards and a handful of types)
    memo: dict[str, bool] = {}
    out = []
    for c in cards:
        ok = memo.get(c.type)
        if ok is None:
            ok = memo[c.type] = test(c.type)
        out.append(ok)
    return out


def simulated_flags(cards: Iterable) -> list[bool]:
    """Per card of ``cards`` (objects with a ``type``): is it of a simulated
    family, a GPU every total counts?"""
    return _flags(cards, is_simulated)


def simulated_cards(cards: Iterable) -> int:
    """How many of ``cards`` (objects with a ``type``) are of a simulated family."""
    return sum(simulated_flags(cards))


def offer_mask(card_type: str) -> int:
    """The families a card of ``card_type`` is offered to, as bits ``1 << fid``
    (HAMi's ``getNodeResources`` substring test per family word)."""
    return sum(1 << f.fid for f in FAMILIES if offered_to(f.word, card_type))


def exact_family(card_type: str) -> int:
    """``fid + 1`` of the family whose word equals ``card_type`` exactly (its
    requests count in the card's score, ``ComputeScore``), else 0."""
    f = _BY_WORD.get(card_type)
    return 0 if f is None else f.fid + 1


def case_mismatch(card_type: str) -> bool:
    """Is a card of ``card_type`` offered to a family whose Fit tests the type
    case-sensitively (Moore Threads) and refused there (``CardTypeMismatch``)?"""
    return any(f.type_case_sensitive and offered_to(f.word, card_type)
               and f.word not in card_type for f in FAMILIES)


def nvidia_flags(cards: Iterable) -> list[bool]:
    """Per card of ``cards``: does HAMi offer it to an NVIDIA request (the vendor
    filter of Fit and ``NodeInsufficientDevice``)? Not :func:`simulated_flags`:
    a family simulated later is counted but never offered to NVIDIA pods."""
    return _flags(cards, lambda t: offered_to(NVIDIA, t))
