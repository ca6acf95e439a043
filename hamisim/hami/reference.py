"""HAMi v2.10.0 placement, written to be read beside ``HAMI-SEMANTICS.md``.

This module is the executable specification (the role msprime's
``algorithms.py`` plays): plain Python objects, no speed tricks, one function
per step of the spec, each named after the section it implements. The
compiled kernel (:mod:`hamisim._core`) must take the same decision for every
attempt; ``tests/test_kernel_equivalence.py`` checks that on random clusters.

Float32 matters: HAMi computes card and node scores in ``float32`` and compares
them exactly, so every score here is a :class:`numpy.float32` and every
operation is done in that type, left to right as in Go.
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from hamisim.cluster import Cluster, Node
from hamisim.errors import HamisimError
from hamisim.devices import FAMILIES, SIMULATED_FAMILIES, family, offered_to
from hamisim.devices.amd import cus
from hamisim.devices.ascend import (is_hami_core, module_pairs, network_choice, network_score,
                                    node_supports_hami_core)
from hamisim.devices.kunlun import bubble_score, graph_select
from hamisim.hami.decision import (
    LISTED_ZERO,
    DEVICE_TYPE_NOT_FOUND,
    NODE_INSUFFICIENT_DEVICE,
    NODE_UNREGISTERED,
    Decision,
    Pick,
    failed_scheduling_message,
    fit_reason,
    padded_words,
    pads_empty_segments,
)
from hamisim.hami.gosort import go_sort
from hamisim.hami.mig import MIG_MODE, select_candidate
from hamisim.hami.noderows import choose_row, is_vectorised, reference_rows
from hamisim.hami.quota import QuotaGate, nvidia_only, quota_denial, quota_gate, usage_totals
from hamisim.hami.policy import (
    KEY_BINPACK,
    KEY_NUMA,
    KEY_SPREAD,
    MODE_CHAIN,
    SINGLE_BINPACK,
    SINGLE_MUTEX,
    CardPolicy,
    node_policy_spread,
    numa_bind,
    parse_card_policy,
    pod_gpu_policy,
    pod_node_policy,
    filter_error,
    pod_weights,
)
from hamisim.kube.filters import hides_taints, is_unresolvable, static_reasons
from hamisim.kube.queue import REJ_EXTENDER, REJ_FIT, REJ_STATIC
from hamisim.kube.fit import least_allocated_choice, resource_fit_reasons
from hamisim.kube.sampling import sample_feasible
from hamisim.mig import MigPlacement, MigProfile
from hamisim.pods import NO_PERCENTAGE, Pod, Request, admit, pod_requests

__all__ = [
    "CardUsage", "FitResult", "card_score", "card_less", "sort_cards", "node_base_score",
    "node_less", "uuid_allowed", "type_allowed", "mode_allowed", "fit", "aligned_usage",
    "app_containers_only", "app_only_usage", "cached_usage",
    "fit_in_devices", "is_mig_request", "NodeFit", "score_node", "quota_check", "ReferenceScheduler", "Tracer",
]

f32 = np.float32
_TEN = f32(10)

USE_UUID = "nvidia.com/use-gpuuuid"
NOUSE_UUID = "nvidia.com/nouse-gpuuuid"
USE_TYPE = "nvidia.com/use-gputype"
NOUSE_TYPE = "nvidia.com/nouse-gputype"
VGPU_MODE = "nvidia.com/vgpu-mode"


# ---------------------------------------------------------------------------
# §2.1 / §2.2  A card with its usage counters (HAMi's DeviceUsage)
# ---------------------------------------------------------------------------
@dataclass
class CardUsage:
    """A card as the scheduler sees it during one Filter call."""

    id: str
    index: int = 0
    type: str = "NVIDIA"
    count: int = 0
    devmem: int = 0
    devcore: int = 0
    used: int = 0
    usedmem: int = 0
    usedcores: int = 0
    numa: int = 0
    health: bool = True
    mode: str = ""
    cordoned: bool = False
    score: np.float32 = field(default_factory=lambda: f32(0))
    #: a MIG card's registered profiles and the placements in use (HAMi's
    #: ``MigProfiles`` and ``MigAllocationsInUse``)
    mig_profiles: tuple[MigProfile, ...] = ()
    mig_in_use: list[MigPlacement] = field(default_factory=list)
    #: what-if (not HAMi): pods holding the card under ``mutex-reserve``
    #: (:data:`hamisim.registry.RESERVE_TOKEN`); such a card takes no other tenant
    reserved: int = 0
    #: Ascend 910: ``customInfo.NetworkID`` of the registration (``None``: none)
    network_id: int | None = None

    def copy(self) -> "CardUsage":
        """A working copy for one Fit pass: what Fit and the usage updates
        change (the counters, ``score``, the MIG placements in use) is the
        copy's own; the rest is immutable and shared. Much cheaper than
        ``copy.deepcopy``, which dominated the reference backend's attempts."""
        new = object.__new__(CardUsage)
        new.__dict__.update(self.__dict__)
        new.mig_in_use = list(self.mig_in_use)
        return new


# ---------------------------------------------------------------------------
# Tracing hooks (hamisim explain)
# ---------------------------------------------------------------------------
class Tracer:
    """Observer of one placement attempt; every hook is a no-op here.

    Pass an instance (``ReferenceScheduler.schedule(pod, trace=...)``, or the
    ``trace`` argument of :func:`score_node`, :func:`fit_in_devices` and
    :func:`fit`) to be told each step as the reference takes it;
    :mod:`hamisim.explain` builds its explanation this way. Hooks only
    observe: the arguments are live objects (cards are re-sorted and their
    usage changes as containers are placed), so copy what you keep, and never
    modify them. Without a tracer nothing is called.
    """

    def attempt(self, pod: Pod, requests: Sequence[Request | None], n_init: int) -> None:
        """The admitted pod and its per-container requests (init containers first)."""

    def policy(self, policy_text: str, policy: CardPolicy, node_policy: str,
               weights: tuple[int, int, int]) -> None:
        """The card policy, node policy and card-score weights in force (GPU pods)."""

    def sampled(self, window: list[int], rejected: Mapping[int, list[str]], start: int) -> None:
        """kube-scheduler's pass: feasible nodes handed on, rejected nodes with reasons."""

    def node(self, i: int) -> None:
        """HAMi starts evaluating node ``i`` (cluster order)."""

    def container(self, j: int, init: bool, request: Request | None) -> None:
        """Container ``j`` (init containers first) is placed on the current node."""

    def family_score(self, bonus: np.float32, score: np.float32) -> None:
        """A family's ``ScoreNode`` (Ascend 910's networks) added ``bonus``: the
        node's score is now ``score``."""

    def node_score(self, score: np.float32) -> None:
        """The node's base score, before the pod (§5.3)."""

    def scored(self, cards: Sequence[CardUsage]) -> None:
        """Card scores of the current container, cards in their current order."""

    def sorted(self, cards: Sequence[CardUsage], vendor_cards: Sequence[CardUsage]) -> None:
        """The node's cards after the sort, and the NVIDIA cards handed to Fit."""

    def request_failed(self, reason: str) -> None:
        """The request fails before Fit (``NodeInsufficientDevice``, ``Device type not found``)."""

    def visit(self, card: CardUsage, verdict: str) -> None:
        """Fit examines ``card``: ``verdict`` is the first reason key that rejects it,
        or ``"picked"``."""

    def numa_regroup(self, card: CardUsage, discarded: Sequence[Pick]) -> None:
        """numa-bind: ``card`` starts a new NUMA group; ``discarded`` picks are dropped."""

    def fit_done(self, result: "FitResult") -> None:
        """Fit's result for the current request."""

    def node_done(self, i: int, result: "NodeFit") -> None:
        """HAMi's verdict on node ``i``."""

    def ranked(self, order: Sequence[int], chosen: int) -> None:
        """Fitting nodes after the node sort (§5.4), and the node chosen."""


def _visit(trace: Tracer | None, card: CardUsage, verdict: str) -> None:
    if trace is not None:
        trace.visit(card, verdict)


# ---------------------------------------------------------------------------
# §3.1  Card score
# ---------------------------------------------------------------------------
def card_score(card: CardUsage, requests: Sequence[Request],
               weights: tuple[int, int, int] = (1, 1, 1)) -> np.float32:
    """Utilisation score of ``card`` if the container's requests were added.

    Only requests whose type string *equals* the card type count (the
    card-type quirk: real cards are ``NVIDIA-<model>``, requests ``NVIDIA``).
    """
    if card.count == 0 or card.devcore == 0 or card.devmem == 0:
        return f32(0)
    n = c = m = 0
    for r in requests:
        if r.type != card.type:
            continue
        n += 1                      # one slot per request, whatever r.nums
        c += r.coresreq
        if r.mempercentagereq not in (0, NO_PERCENTAGE):
            m += card.devmem * r.mempercentagereq // 100
        else:
            m += r.memreq
    slot = f32(n + card.used) / f32(card.count)
    core = f32(c + card.usedcores) / f32(card.devcore)
    mem = f32(m + card.usedmem) / f32(card.devmem)
    ws, wc, wm = (f32(w) for w in weights)
    return _TEN * ((ws * slot + wc * core) + wm * mem)


# ---------------------------------------------------------------------------
# §3.2  Card comparator ("a sorts before b")
# ---------------------------------------------------------------------------
def card_less(policy: CardPolicy, a, b) -> bool:
    """HAMi's ``DeviceUsageList.Less``; ``a``/``b`` need score, numa, used, index."""
    if policy.mode == MODE_CHAIN:
        for key in policy.chain:
            if key == KEY_BINPACK:
                if a.score != b.score:
                    return bool(a.score < b.score)
            elif key == KEY_SPREAD:
                if a.score != b.score:
                    return bool(a.score > b.score)
            elif key == KEY_NUMA:
                if a.numa != b.numa:
                    return a.numa < b.numa
        return a.index < b.index
    if policy.mode == SINGLE_MUTEX:
        return a.used > b.used if a.used != b.used else a.numa < b.numa
    binpack = policy.mode == SINGLE_BINPACK
    if policy.numa_bind:
        if a.numa != b.numa:
            return a.numa > b.numa if binpack else a.numa < b.numa
        return bool(a.score < b.score) if binpack else bool(a.score > b.score)
    if a.score != b.score:
        return bool(a.score < b.score) if binpack else bool(a.score > b.score)
    return a.numa < b.numa


def sort_cards(cards: list, policy: CardPolicy) -> None:
    """Sort in place exactly as Go's ``sort.Sort`` would (§3.3)."""
    go_sort(cards, lambda a, b: card_less(policy, a, b))


# ---------------------------------------------------------------------------
# §5.3  Node base score and §5.4 node comparator
# ---------------------------------------------------------------------------
def node_base_score(cards: Sequence[CardUsage]) -> np.float32:
    """Utilisation of a node *before* the pod, over all its cards (no weights)."""
    count = sum(c.count for c in cards)
    devcore = sum(c.devcore for c in cards)
    devmem = sum(c.devmem for c in cards)
    if count == 0 or devcore == 0 or devmem == 0:
        return f32(0)
    used = sum(c.used for c in cards)
    usedcores = sum(c.usedcores for c in cards)
    usedmem = sum(c.usedmem for c in cards)
    return _TEN * ((f32(used) / f32(count) + f32(usedcores) / f32(devcore))
                   + f32(usedmem) / f32(devmem))


def node_less(node_policy: str, a_score: np.float32, b_score: np.float32) -> bool:
    """Node comparator: spread puts higher scores first, anything else lower."""
    if node_policy_spread(node_policy):
        return bool(f32(a_score) > f32(b_score))
    return bool(f32(a_score) < f32(b_score))


# ---------------------------------------------------------------------------
# §2.4  Annotation filters
# ---------------------------------------------------------------------------
def _members(value: str | None) -> list[str] | None:
    """A filter annotation's members, or ``None`` when it sets no constraint.

    HAMi v2.10.0's CheckType/CheckUUID: a value that is absent or blank after
    trimming sets no constraint; any other value does, even one made only of
    separators (``","``), whose members are all empty and match no card.
    """
    if value is None or not value.strip():
        return None
    return [m.strip() for m in value.split(",") if m.strip()]


def uuid_allowed(annotations: Mapping[str, str], card_id: str,
                 use_key: str = USE_UUID, nouse_key: str = NOUSE_UUID) -> bool:
    """``use-gpuuuid`` / ``nouse-gpuuuid``: exact, trimmed ids; blank = no
    constraint; only separators = a ``use`` list no card is on."""
    use = _members(annotations.get(use_key))
    if use is not None and card_id not in use:
        return False
    return card_id not in (_members(annotations.get(nouse_key)) or ())


def type_allowed(annotations: Mapping[str, str], card_type: str,
                 use_key: str = USE_TYPE, nouse_key: str = NOUSE_TYPE) -> bool:
    """``use-gputype`` / ``nouse-gputype``: case-insensitive substrings of the
    type; blank = no constraint; only separators = a ``use`` list matching no type."""
    upper = card_type.upper()
    use = _members(annotations.get(use_key))
    if use is not None and not any(m.upper() in upper for m in use):
        return False
    return not any(m.upper() in upper for m in (_members(annotations.get(nouse_key)) or ()))


def mode_allowed(mode_annotation: str | None, card_mode: str) -> bool:
    """``nvidia.com/vgpu-mode``: the card mode must be a substring of the value."""
    return mode_annotation is None or card_mode in mode_annotation


# ---------------------------------------------------------------------------
# §4  NVIDIA Fit
# ---------------------------------------------------------------------------
@dataclass
class FitResult:
    fit: bool
    picks: list[Pick]
    reasons: Counter
    n_cards: int

    @property
    def reason(self) -> str:
        return "" if self.fit else fit_reason(self.reasons, self.n_cards)


def _pair(pair_scores: Mapping[str, Mapping[str, int]], a: str, b: str) -> int:
    return pair_scores.get(a, {}).get(b, 0)


def _topology_choice(picks: list[Pick], origin: int,
                     pair_scores: Mapping[str, Mapping[str, int]]) -> list[Pick]:
    """§4 topology-aware: choose ``origin`` of the acceptable cards."""
    if origin == 1:
        best, best_sum = picks[0], None
        for p in picks:
            total = sum(_pair(pair_scores, p.uuid, q.uuid) for q in picks if q is not p)
            if best_sum is None or total < best_sum:
                best, best_sum = p, total
        return [best]
    best_combo, best_sum = None, None
    for combo in itertools.combinations(picks, origin):
        total = sum(_pair(pair_scores, a.uuid, b.uuid)
                    for a, b in itertools.combinations(combo, 2))
        if best_sum is None or total > best_sum:
            best_combo, best_sum = list(combo), total
    return best_combo


def fit(cards: Sequence[CardUsage], request: Request, annotations: Mapping[str, str],
        policy: str, pair_scores: Mapping[str, Mapping[str, int]] | None = None,
        trace: Tracer | None = None,
        quota: Callable[[list[Pick]], bool] | None = None,
        earlier: Sequence[Pick] = (), vnpu_core: bool = False) -> FitResult:
    """HAMi's ``Fit`` of the request's family: walk ``cards`` (already sorted,
    offered to the family) from the last one.

    NVIDIA's Fit has every step below; another family's
    (:class:`hamisim.devices.Family`) skips those it lacks (only NVIDIA reads
    ``vgpu-mode``, the device cordon, ``numa-bind``, the quota, MIG and
    ``topology-aware``) and reads its own type and UUID annotations. AMD's
    (``cores_as_cus``) charges Compute Units after the ``mutex`` step
    (:mod:`hamisim.devices.amd`); Biren's (``slots_only``) takes the card
    there, charging no memory and no cores (:mod:`hamisim.devices.biren`).
    ``policy`` is the pod's card policy string (annotation, else scheduler
    default); only its ``mutex`` and ``topology-aware`` tokens act here.
    ``quota``: HAMi's ResourceQuota check, called with this container's
    picks so far plus the candidate card (:func:`quota_check`); ``None`` = the
    namespace has no quota. ``earlier``: the picks of the pod's earlier
    containers in this pass (HAMi's ``allocated``), which Moore Threads'
    ``customFilterRule`` reads (:mod:`hamisim.devices.mthreads`).
    ``vnpu_core``: whether the node runs Ascend's hami-vnpu-core, which a
    ``hami-core`` pod needs (:mod:`hamisim.devices.ascend`, also for its
    network and module choices). Usage is not updated; the caller adds the picks.
    """
    cp = parse_card_policy(policy)
    fam = family(request.type) or FAMILIES[0]
    if fam.wings:
        return _wings_fit(cards, request, annotations, cp.mutex, fam, trace)
    word_ok = request.type == fam.word
    # Moore Threads: the cards its earlier containers hold (one card per pod)
    pinned = ({p.uuid for p in earlier if p.type == fam.word} if fam.one_card_per_pod
              else set())
    bind = fam.numa_bind and numa_bind(annotations)
    topology = fam.topology and cp.topology
    if not fam.fit_quota:
        quota = None
    mode_ann = annotations.get(VGPU_MODE) if fam.checks_mode else None
    origin = nums = request.nums
    coresreq = request.coresreq
    reasons: Counter = Counter()
    # Ascend: a soft-split pod needs hami-vnpu-core on the node; its cards'
    # cores count as 100
    soft = fam.vnpu and is_hami_core(annotations)
    if soft and not vnpu_core:
        reasons["ModeNotFit"] += 1
        return FitResult(False, [], reasons, len(cards))
    # Ascend 910 with every card in a network, 910C's modules: gather every
    # acceptable card, choose after the walk
    networks = fam.network_topology and all(c.network_id is not None for c in cards)
    pairs = fam.module_pairs and origin > 1
    gather = topology or networks or pairs
    prevnuma = -1
    picks: list[Pick] = []
    # CustomFilterRule replays this Fit's earlier picks on a MIG card: the
    # placements they took, per card
    queued: dict[str, list[MigPlacement]] = {}
    i = len(cards) - 1
    while i >= 0:
        card = cards[i]
        i -= 1
        if not card.health:
            reasons["CardNotHealth"] += 1
            _visit(trace, card, "CardNotHealth")
            continue
        if fam.checks_cordon and card.cordoned:
            reasons["CardCordoned"] += 1
            _visit(trace, card, "CardCordoned")
            continue
        if ((fam.use_type is not None
             and not type_allowed(annotations, card.type, fam.use_type, fam.nouse_type))
                or not mode_allowed(mode_ann, card.mode) or not word_ok
                or (fam.type_case_sensitive and fam.word not in card.type)):
            reasons["CardTypeMismatch"] += 1
            _visit(trace, card, "CardTypeMismatch")
            continue
        if bind and card.numa != prevnuma:
            if trace is not None:
                trace.numa_regroup(card, picks if nums != origin else [])
            if nums != origin:
                reasons["NumaNotFit"] += len(picks)
            nums, prevnuma, picks, queued = origin, card.numa, [], {}
        if not uuid_allowed(annotations, card.id, fam.use_uuid, fam.nouse_uuid):
            reasons["CardUuidMismatch"] += 1
            _visit(trace, card, "CardUuidMismatch")
            continue
        if card.used >= card.count:
            reasons["CardTimeSlicingExhausted"] += 1
            _visit(trace, card, "CardTimeSlicingExhausted")
            continue
        if card.reserved:           # what-if (mutex-reserve), not HAMi
            reasons["CardReservedByMutex"] += 1
            _visit(trace, card, "CardReservedByMutex")
            continue
        if cp.mutex and card.used > 0:
            reasons["ExclusiveDeviceAllocateConflict"] += 1
            _visit(trace, card, "ExclusiveDeviceAllocateConflict")
            continue
        if fam.slots_only:
            # Biren: no memory or core step; the pick charges neither
            picks.append(Pick(card.id, 0, coresreq, card.index, type=request.type))
            _visit(trace, card, "picked")
            nums -= 1
            if nums == 0:
                return FitResult(True, picks, reasons, len(cards))
            continue
        if fam.cores_as_cus:
            # AMD: memory (none asked = the whole card), then Compute Units
            mem = request.memreq if request.memreq > 0 or card.devmem <= 0 else card.devmem
            if card.devmem - card.usedmem < mem:
                reasons["CardInsufficientMemory"] += 1
                _visit(trace, card, "CardInsufficientMemory")
                continue
            cu = cus(card.devcore, card.devmem, mem, request.coresreq)
            if cu is None or card.devcore - card.usedcores < cu:
                reasons["CardInsufficientCore"] += 1
                _visit(trace, card, "CardInsufficientCore")
                continue
            picks.append(Pick(card.id, mem, cu, card.index, type=request.type, label=card.type))
            _visit(trace, card, "picked")
            nums -= 1
            if nums == 0:
                return FitResult(True, picks, reasons, len(cards))
            continue
        if coresreq > 100:
            coresreq = 100          # sticky for the rest of the walk
        mem = request.memreq if request.memreq > 0 else 0
        if request.mempercentagereq != NO_PERCENTAGE and request.memreq == 0:
            mem = card.devmem * request.mempercentagereq // 100
        if quota is not None and not quota([*picks, Pick(card.id, mem, coresreq, card.index)]):
            reasons["ResourceQuotaNotFit"] += 1
            _visit(trace, card, "ResourceQuotaNotFit")
            continue
        if card.devmem - card.usedmem < mem:
            reasons["CardInsufficientMemory"] += 1
            _visit(trace, card, "CardInsufficientMemory")
            continue
        devcore = 100 if soft else card.devcore
        if devcore - card.usedcores < coresreq:
            reasons["CardInsufficientCore"] += 1
            _visit(trace, card, "CardInsufficientCore")
            continue
        if devcore == 100 and coresreq == 100 and card.used > 0:
            reasons["ExclusiveDeviceAllocateConflict"] += 1
            _visit(trace, card, "ExclusiveDeviceAllocateConflict")
            continue
        if devcore != 0 and card.usedcores == devcore and coresreq == 0:
            reasons["CardComputeUnitsExhausted"] += 1
            _visit(trace, card, "CardComputeUnitsExhausted")
            continue
        if pinned and card.type == fam.word and pinned != {card.id}:
            # Moore Threads' customFilterRule: all of a pod's cards are one card
            reasons["CardNotFoundCustomFilterRule"] += 1
            _visit(trace, card, "CardNotFoundCustomFilterRule")
            continue
        mig = fam.mig and card.mode == MIG_MODE
        if mig:
            # §11.3 CustomFilterRule: a profile >= mem with a free placement,
            # after this Fit's earlier picks on the card took theirs
            on_card = queued.setdefault(card.id, [])
            choice = select_candidate(card.mig_profiles, [*card.mig_in_use, *on_card], mem)
            if choice is None:
                reasons["CardMigTopologyInfeasible"] += 1
                _visit(trace, card, "CardMigTopologyInfeasible")
                continue
            on_card.append(choice[1])
        picks.append(Pick(card.id, mem, coresreq, card.index, type=request.type))
        _visit(trace, card, "picked")
        if not gather:
            nums -= 1
            if nums == 0:
                return FitResult(True, picks, reasons, len(cards))
        if mig:
            i += 1          # §11.4 a MIG card is visited again for the next instance
    if pairs:
        # Ascend 910C: whole modules, and the reason counts out of the request
        chosen = module_pairs(picks, [p.idx for p in picks], origin)
        if len(chosen) != origin:
            reasons["AllocatedCardsInsufficientRequest"] = len(chosen) or LISTED_ZERO
            return FitResult(False, [], reasons, origin)
        return FitResult(True, chosen, reasons, len(cards))
    if topology or networks:
        if len(picks) == origin:
            return FitResult(True, picks, reasons, len(cards))
        if len(picks) > origin:
            if topology:
                chosen = _topology_choice(picks, origin, pair_scores or {})
            elif origin == 1:
                chosen = picks[:1]
            else:
                by_id = {c.id: c.network_id for c in cards}
                chosen = network_choice(picks, [by_id[p.uuid] for p in picks], origin)
            return FitResult(True, chosen, reasons, len(cards))
    if picks:
        reasons["AllocatedCardsInsufficientRequest"] = len(picks)
    return FitResult(False, [], reasons, len(cards))


def _fits_slice(card: CardUsage, memreq: int) -> bool:
    """``FitVXPU``: healthy, room for the slice, and only slices of its size."""
    if not card.health or memreq + card.usedmem > card.devmem:
        return False
    return card.used == 0 or card.usedmem // card.used == memreq


def _wings_fit(cards: Sequence[CardUsage], request: Request, annotations: Mapping[str, str],
               mutex: bool, fam, trace: Tracer | None) -> FitResult:
    """Kunlunxin's Fit (:mod:`hamisim.devices.kunlun`): every card of the sorted
    list tested (UUID filters, then the family's predicate), ``graghSelect``
    on the results by position, each chosen index mapped to its first card."""
    whole = fam.wings == "whole"
    uuid_bad: set[str] = set()
    flags = []
    for card in cards:
        if not (uuid_allowed(annotations, card.id, fam.use_uuid, fam.nouse_uuid)
                and uuid_allowed(annotations, card.id, *fam.legacy_uuid)):
            uuid_bad.add(card.id)
            flags.append(False)
        elif whole:
            flags.append(card.used == 0 and card.health)
        else:
            flags.append(_fits_slice(card, request.memreq) and not (mutex and card.used > 0))
    chosen = graph_select(flags, [c.index for c in cards], request.nums)
    reasons: Counter = Counter()
    if not chosen:
        conflicts = sum(1 for c in cards if c.used > 0 and _fits_slice(c, request.memreq)) \
            if not whole and mutex else 0
        if conflicts:
            reasons["ExclusiveDeviceAllocateConflict"] = conflicts
        elif uuid_bad:
            reasons["CardUuidMismatch"] = len(uuid_bad)
        else:
            reasons["NumaNotFit"] = 1
        return FitResult(False, [], reasons, len(cards))
    picks = []
    for idx in chosen:
        card = next((c for c in cards if c.index == idx), None)
        if card is None:
            continue            # an index no card has: skipped, Fit still succeeds
        mem, cores = (card.devmem, card.devcore) if whole else (request.memreq, request.coresreq)
        picks.append(Pick(card.id, mem, cores, card.index, type=request.type))
        _visit(trace, card, "picked")
    return FitResult(True, picks, reasons, len(cards))


# ---------------------------------------------------------------------------
# §5.1  One container on one node
# ---------------------------------------------------------------------------
def fit_in_devices(cards: list[CardUsage], requests: Sequence[Request],
                   annotations: Mapping[str, str], policy: CardPolicy,
                   weights: tuple[int, int, int] = (1, 1, 1),
                   pair_scores: Mapping[str, Mapping[str, int]] | None = None,
                   registered_types: Sequence[str] = SIMULATED_FAMILIES,
                   trace: Tracer | None = None,
                   quota: Callable[[list[Pick]], bool] | None = None,
                   card_order: Callable[[CardUsage, Request], float] | None = None,
                   earlier: Sequence[Pick] = (), vnpu_core: bool = False,
                   ) -> tuple[bool, list[Pick], str]:
    """Score, sort (in place) and Fit one container's requests on a node.

    ``cards`` is the node's working list: it is re-sorted in place and the
    picks' usage is added to it, so the next container sees both.
    ``card_order`` (not HAMi): a user's card policy, ``f(card, request) ->
    float``; the cards are sorted by it (stable), so Fit, which walks the list
    from its end, tries the highest first. ``earlier``: the picks of the pod's
    earlier containers in this pass, ``vnpu_core``: the node's Ascend
    hami-vnpu-core (:func:`fit`). Returns ``(fit, picks, reason)``.
    """
    for card in cards:
        card.score = card_score(card, requests, weights)
    if trace is not None:
        trace.scored(cards)
    picks: list[Pick] = []
    for k in requests:
        if k.type not in registered_types:
            if trace is not None:
                trace.request_failed(DEVICE_TYPE_NOT_FOUND)
            return False, [], DEVICE_TYPE_NOT_FOUND
        if card_order is None:
            sort_cards(cards, policy)
        else:
            cards.sort(key=lambda c: float(card_order(c, k)))
        vendor_cards = [c for c in cards if offered_to(k.type, c.type)]
        if trace is not None:
            trace.sorted(cards, vendor_cards)
        if k.nums > len(vendor_cards) and not is_mig_request(k, vendor_cards, annotations):
            if trace is not None:
                trace.request_failed(NODE_INSUFFICIENT_DEVICE)
            return False, [], NODE_INSUFFICIENT_DEVICE
        res = fit(vendor_cards, k, annotations, policy.text, pair_scores, trace, quota,
                  [*earlier, *picks], vnpu_core)
        if trace is not None:
            trace.fit_done(res)
        if not res.fit:
            return False, [], res.reason
        by_id = {c.id: c for c in cards}
        slot_only = getattr(family(k.type), "wings", "") == "whole"
        added = []
        for p in res.picks:
            card = by_id[p.uuid]
            if card.mode == MIG_MODE and k.type == "NVIDIA":
                # §11.5 AddResourceUsage: the pick becomes the profile it gets
                choice = select_candidate(card.mig_profiles, card.mig_in_use, p.usedmem)
                if choice is None:
                    return False, [], (f"AddResourceUsage failed for device {card.id}: "
                                       "MIG profile and placement allocation failed")
                prof, place = choice
                p = Pick(p.uuid, prof.memory_mb, prof.core, p.idx,
                         (prof.name, place.start, place.size))
                card.mig_in_use.append(place)
            card.used += 1
            if not slot_only:   # Kunlunxin's whole cards: AddResourceUsage adds the slot alone
                card.usedmem += p.usedmem
                card.usedcores += p.usedcores
            added.append(p)
        picks += added
    return True, picks, ""


def is_mig_request(request: Request, vendor_cards: Sequence[CardUsage],
                   annotations: Mapping[str, str]) -> bool:
    """``isMIGRequest``: an NVIDIA request whose pod allows MIG (no
    ``nvidia.com/vgpu-mode``, or one containing ``mig``) on a node with a MIG
    card may ask for more cards than the node has (§11.4)."""
    if request.type != "NVIDIA":
        return False
    mode = annotations.get(VGPU_MODE)
    if mode is not None and MIG_MODE not in mode:
        return False
    return any(c.mode == MIG_MODE for c in vendor_cards)


# ---------------------------------------------------------------------------
# §5.2  The whole pod on one node
# ---------------------------------------------------------------------------
@dataclass
class NodeFit:
    fit: bool
    score: np.float32
    containers: list[list[Pick]]
    reason: str = ""


def quota_check(gate: QuotaGate | None, earlier: Sequence[Sequence[Pick]], n_init: int,
                aligned: bool) -> Callable[[list[Pick]], bool] | None:
    """HAMi's ``fitQuota`` for one container: whether the pod's entries of
    this pass so far (``earlier``: the init containers before it in the init
    pass, the app containers before it in the app pass, GPU-less ones as
    empty lists) plus the container's own cards (the argument) stay within
    the namespace's quota.

    HAMi collapses that list as it collapses a cached pod: by position, the
    first ``n_init`` entries as init containers (max per card), the rest
    summed, so in the app pass the first app containers are taken for init
    containers; on a node whose list drops GPU-less containers (``aligned``
    False) positions shift (:func:`collapsed_usage`).
    """
    if gate is None:
        return None
    # NVIDIA's list: another family's containers hold no NVIDIA card
    earlier = nvidia_only(earlier)

    def check(current: list[Pick]) -> bool:
        return gate.fits(*usage_totals(collapsed_usage([*earlier, current], n_init, aligned)))
    return check


def score_node(cards: list[CardUsage], containers: Sequence[Request | None], n_init: int,
               annotations: Mapping[str, str], policy: CardPolicy,
               weights: tuple[int, int, int] = (1, 1, 1),
               pair_scores: Mapping[str, Mapping[str, int]] | None = None,
               trace: Tracer | None = None, quota: QuotaGate | None = None,
               aligned: bool = True, corrected: bool = False,
               card_order: Callable[[CardUsage, Request], float] | None = None,
               vnpu_core: bool = False) -> NodeFit:
    """Evaluate a pod on a node whose cards carry the current usage.

    Init containers are fitted each on a fresh copy of the current usage (they
    do not stack); app containers accumulate on one working copy. The node
    score is the base score before the pod, plus the families' ``ScoreNode``
    (Ascend 910's networks, :func:`family_node_score`). ``cards`` is not modified.
    ``quota``: the pod's namespace quota (:mod:`hamisim.hami.quota`), checked
    per card with HAMi's list of this pass (``aligned``: see :func:`aligned_usage`);
    ``corrected`` (``init_container_usage: corrected``) checks the pod's
    containers so far, init containers first, each counted as what it is.
    """
    allocation: list[list[Pick]] = []
    for j, req in enumerate(containers[:n_init]):
        if trace is not None:
            trace.container(j, True, req)
        if req is None:
            allocation.append([])
            continue
        ok, picks, reason = fit_in_devices(
            [c.copy() for c in cards], [req], annotations, policy, weights, pair_scores,
            trace=trace, quota=quota_check(quota, allocation, n_init, aligned),
            card_order=card_order, earlier=[p for c in allocation for p in c],
            vnpu_core=vnpu_core)
        if not ok:
            return NodeFit(False, f32(0), [], reason)
        allocation.append(picks)
    app = [c.copy() for c in cards]
    score = node_base_score(app)
    if trace is not None:
        trace.node_score(score)
    for j, req in enumerate(containers[n_init:], start=n_init):
        if trace is not None:
            trace.container(j, False, req)
        if req is None:
            allocation.append([])
            continue
        ok, picks, reason = fit_in_devices(
            app, [req], annotations, policy, weights, pair_scores, trace=trace,
            quota=quota_check(quota, allocation if corrected else allocation[n_init:], n_init,
                              aligned), card_order=card_order,
            earlier=[p for c in allocation[n_init:] for p in c], vnpu_core=vnpu_core)
        if not ok:
            return NodeFit(False, f32(0), [], reason)
        allocation.append(picks)
    bonus = family_node_score(cards, allocation)
    if bonus:
        score = f32(score + bonus)
        if trace is not None:
            trace.family_score(bonus, score)
    return NodeFit(True, score, allocation)


def family_node_score(cards: Sequence[CardUsage], allocation: Sequence[Sequence[Pick]]
                      ) -> np.float32:
    """``OverrideScore``'s device part: the families' ``ScoreNode`` summed in
    float32 (Ascend 910's network share, :func:`hamisim.devices.ascend.network_score`;
    Kunlunxin's wing bubbles against ``cards``, the node before the pod,
    :func:`hamisim.devices.kunlun.bubble_score`; every other family's is 0),
    families in :data:`~hamisim.devices.FAMILIES` order (HAMi's is Go's map order)."""
    total = f32(0)
    network = {c.id: c.network_id for c in cards}
    for fam in FAMILIES:
        if fam.wings == "whole":
            picked = [(p.type, p.idx) for picks in allocation for p in picks
                      if p.type == fam.word]
            if picked:
                total = f32(total + bubble_score([(c.type, c.index, c.used) for c in cards],
                                                 picked))
            continue
        if not fam.network_topology:
            continue
        ids = [[network[p.uuid] for p in picks if p.type == fam.word] for picks in allocation]
        if any(ids):
            total = f32(total + network_score(ids))
    return total


# ---------------------------------------------------------------------------
# §2.2  Pod cache -> usage (HAMi v2.10.0 collapsed usage with slot counts)
# ---------------------------------------------------------------------------
def collapsed_usage(containers: Sequence[Sequence[Pick]], n_init: int, aligned: bool = True
                    ) -> dict[str, tuple[int, int, int]]:
    """One cached pod's contribution per card: ``{uuid: (used, mem, cores)}``.

    App containers on one card add up (one slot each, HAMi v2.10.0); init
    containers are max'ed against that and count one slot when alone.

    HAMi tells init from app entries only by their position in its list
    (``CollapseInitContainerUsage``: the first ``n_init`` are init). On a node
    whose cards are not typed exactly ``NVIDIA`` (every real node) that list
    has no entry for a container without GPUs (``aligned=False``,
    :func:`aligned_usage`), so with GPU-less init containers the first app
    containers with GPUs are taken for init containers: max'ed, not summed.
    """
    if not aligned:
        containers = [picks for picks in containers if picks]
    if n_init == 0 and len(containers) == 1:
        # The common case: one container on distinct cards, one slot each. HAMi
        # takes the larger of the init peak (none: zero) and the app sum, so a
        # negative request (Iluvatar's unchecked vCore) books zero, not below.
        one = {p.uuid: (1, max(p.usedmem, 0), max(p.usedcores, 0)) for p in containers[0]}
        if len(one) == len(containers[0]):
            return one
    app: dict[str, list[int]] = {}
    for picks in containers[n_init:]:
        for p in picks:
            u = app.setdefault(p.uuid, [0, 0, 0])
            u[0] += 1
            u[1] += p.usedmem
            u[2] += p.usedcores
    init: dict[str, list[int]] = {}
    for picks in containers[:n_init]:
        for p in picks:
            u = init.setdefault(p.uuid, [1, 0, 0])
            u[1] = max(u[1], p.usedmem)
            u[2] = max(u[2], p.usedcores)
    out: dict[str, tuple[int, int, int]] = {}
    for uuid in list(init) + [u for u in app if u not in init]:
        a = app.get(uuid, [0, 0, 0])
        i = init.get(uuid, [0, 0, 0])
        out[uuid] = (max(a[0], i[0]), max(a[1], i[1]), max(a[2], i[2]))
    return out


def app_only_usage(containers: Sequence[Sequence[Pick]]) -> dict[str, tuple[int, int, int]]:
    """A pod's usage per card once its init containers succeeded:
    ``{uuid: (used, mem, cores)}``, the app entries (:func:`app_containers_only`)
    summed, one slot per entry. HAMi v2.10.0's ``AppContainersOnlyDeviceUsage``
    sums without :func:`collapsed_usage`'s floor at zero, so a negative request
    (Iluvatar's unchecked vCore) lowers the card's books after the shrink."""
    out: dict[str, list[int]] = {}
    for picks in containers:
        for p in picks:
            u = out.setdefault(p.uuid, [0, 0, 0])
            u[0] += 1
            u[1] += p.usedmem
            u[2] += p.usedcores
    return {uuid: (u[0], u[1], u[2]) for uuid, u in out.items()}


def cached_usage(containers: Sequence[Sequence[Pick]], n_init: int, aligned: bool,
                 app_only: bool) -> dict[str, tuple[int, int, int]]:
    """What HAMi's cache holds for one pod per card: :func:`app_only_usage` once
    it shrank the pod to its app containers (``app_only``), else
    :func:`collapsed_usage`."""
    return app_only_usage(containers) if app_only else collapsed_usage(containers, n_init,
                                                                        aligned)


def aligned_usage(node: Node, config) -> bool:
    """Whether HAMi's per-container list on ``node`` keeps an entry for
    containers without GPUs (its padding goes under the cards' model types:
    only a card typed exactly ``NVIDIA`` pads the NVIDIA list), or the
    cluster asks for the corrected accounting (``init_container_usage:
    corrected``)."""
    return config.init_container_usage == "corrected" or \
        pads_empty_segments(c.type for c in node.cards)


def app_containers_only(containers: Sequence[Sequence[Pick]], n_init: int, aligned: bool
                        ) -> list[list[Pick]]:
    """A pod's per-container picks once every init container succeeded: HAMi
    v2.10.0 (``AppContainersOnlyDeviceUsage``) drops the first ``n_init``
    entries of its list and keeps the rest. Its list has no entry for GPU-less
    containers unless ``aligned`` (:func:`aligned_usage`), so this can drop app
    containers' picks (HAMi issue #2965)."""
    entries = containers if aligned else [c for c in containers if c]
    return [list(c) for c in entries[n_init:]]


# ---------------------------------------------------------------------------
# §5.4, §6  The scheduler: kube-scheduler in front, HAMi's Filter behind
# ---------------------------------------------------------------------------
@dataclass
class _Cached:
    node: int
    containers: list[list[Pick]]
    n_init: int
    cpu_milli: int
    memory_mib: int
    namespace: str = "default"
    #: its card policy has the what-if token mutex-reserve: its cards are reserved
    reserve: bool = False
    #: ``containers`` are the app entries HAMi kept after the init containers
    #: succeeded (booked by :func:`app_only_usage`)
    app_only: bool = False


@dataclass(frozen=True)
class NodeCandidate:
    """A node HAMi's Filter passed for a pod, as a user's node policy sees it
    (:mod:`hamisim.research.plugins`): the node, its cards' usage before the
    pod, the cards HAMi's Fit picked for each container, HAMi's own node score
    (the binpack score, §5.3) and the pod."""

    index: int
    node: Node
    cards: tuple[CardUsage, ...]
    picks: tuple[tuple[Pick, ...], ...]
    hami_score: float
    pod: Pod


class ReferenceScheduler:
    """HAMi's scheduler on a cluster, one attempt at a time (the oracle).

    Usage is rebuilt from the pod cache at every attempt, as HAMi does.
    ``node_score`` (not HAMi): a user's node policy, ``f(NodeCandidate) ->
    float``, or a vectorised one (:func:`hamisim.hami.noderows.vectorised`,
    ``f(NodeRows) -> scores``, called once per attempt), the highest wins (ties: the last in cluster order, or a draw
    under the ``random`` tie-break); it ranks the nodes of the pods whose node
    policy is the cluster's (a pod's own annotation keeps HAMi's ranking).
    ``card_order`` likewise orders the cards Fit tries (:func:`fit_in_devices`)
    for the pods whose card policy is the cluster's.
    """

    backend = "reference"

    def __init__(self, cluster: Cluster,
                 node_score: Callable[[NodeCandidate], float] | None = None,
                 card_order: Callable[[CardUsage, Request], float] | None = None) -> None:
        self.cluster = cluster
        self.node_score = node_score
        #: a user's card policy (:func:`fit_in_devices`), for pods whose card policy
        #: is the cluster's
        self.card_order = card_order
        self.config = cluster.scheduler
        self.pods: dict[str, _Cached] = {}
        self.next_start = 0
        #: per node: whether HAMi's list keeps GPU-less containers (aligned_usage)
        self._aligned = [aligned_usage(n, self.config) for n in cluster.nodes]

    # -- state ---------------------------------------------------------
    def card_usage(self) -> list[list[CardUsage]]:
        """Every node's cards with usage rebuilt from the pod cache."""
        nodes = [[CardUsage(c.id, c.index, c.type, c.count, c.devmem, c.devcore,
                            numa=c.numa, health=c.health, mode=c.mode,
                            cordoned=c.id in n.cordon, mig_profiles=c.mig_profiles,
                            network_id=c.network_id)
                  for c in n.cards]
                 for n in self.cluster.nodes]
        aligned = self._aligned
        for cached in self.pods.values():
            by_id = {c.id: c for c in nodes[cached.node]}
            # every instance of hami.io/vgpu-mig-allocations occupies its placement
            for picks in cached.containers:
                for p in picks:
                    if p.mig is not None:
                        by_id[p.uuid].mig_in_use.append(MigPlacement(p.mig[1], p.mig[2]))
            for uuid, (used, mem, cores) in cached_usage(
                    cached.containers, cached.n_init, aligned[cached.node],
                    cached.app_only).items():
                card = by_id[uuid]
                card.used += used
                card.usedmem += mem
                card.usedcores += cores
                card.reserved += cached.reserve
        return nodes

    def node_requested(self) -> list[tuple[int, int]]:
        """CPU and memory requested on each node by the cached pods."""
        req = [[0, 0] for _ in self.cluster.nodes]
        for cached in self.pods.values():
            req[cached.node][0] += cached.cpu_milli
            req[cached.node][1] += cached.memory_mib
        return [(a, b) for a, b in req]

    def adopt(self, name: str, node_index: int, containers: list[list[Pick]],
              n_init: int = 0, cpu_milli: int = 0, memory_mib: int = 0,
              namespace: str = "default", reserve: bool = False,
              app_only: bool = False) -> None:
        """Record a placement made elsewhere (an initial state), as HAMi's
        informer does for a pod that already carries its annotations.
        ``reserve``: the what-if mutex-reserve holds its cards (kept when a
        pod placed here is adopted again, e.g. after its init containers).
        ``app_only``: ``containers`` are the app entries HAMi keeps once the
        init containers succeeded (``n_init`` 0; booked by :func:`app_only_usage`)."""
        previous = self.pods.get(name)
        self.pods[name] = _Cached(node_index, containers, n_init, cpu_milli, memory_mib,
                                  namespace, reserve or (previous is not None
                                                         and previous.reserve), app_only)

    def namespace_usage(self, namespace: str) -> tuple[int, int]:
        """``(MiB, cores)`` the cached pods of ``namespace`` count against its quota."""
        mem = cores = 0
        for cached in self.pods.values():
            if cached.namespace == namespace:
                m, c = usage_totals(cached_usage(nvidia_only(cached.containers),
                                                 cached.n_init, self._aligned[cached.node],
                                                 cached.app_only))
                mem += m
                cores += c
        return mem, cores

    def quota_gate(self, namespace: str) -> QuotaGate | None:
        """The namespace's quota with its current usage, ``None`` without a limit."""
        quota = self.cluster.quota_of(namespace)
        if quota is None:
            return None
        return quota_gate(quota, self.config.memory_factor, self.namespace_usage(namespace))

    def admission_denial(self, pod: Pod) -> str | None:
        """Why HAMi's webhook refuses to create ``pod`` now for its namespace's
        quota (kube-apiserver's answer), or ``None``. Call it once, when the
        pod is created; a pod the webhook refuses for another reason
        (:func:`hamisim.pods.admission_error`) is left to :meth:`schedule`."""
        return quota_denial(self.quota_gate(pod.namespace), pod, self.config)

    def delete(self, name: str) -> None:
        """Drop a pod from the cache (pod deleted, Succeeded or Failed)."""
        self.pods.pop(name, None)

    def usage_by_card(self) -> dict[str, tuple[int, int, int]]:
        """``{card id: (used, usedmem, usedcores)}`` as HAMi's cache holds it now."""
        return {c.id: (c.used, c.usedmem, c.usedcores)
                for cards in self.card_usage() for c in cards}

    # -- one attempt -----------------------------------------------------
    def schedule(self, pod: Pod, tie_draw: float | None = None,
                 trace: Tracer | None = None, *,
                 nominated: Mapping[int, tuple[int, int]] | None = None,
                 only: int | None = None) -> Decision:
        """One scheduling attempt of ``pod``; a bound pod enters the cache.

        ``tie_draw`` in [0, 1) picks among equally scored nodes when the
        cluster's ``node_tie_break`` is ``random``; the last node otherwise.
        ``trace`` observes every step (:class:`Tracer`); it changes nothing.
        ``nominated``: per node, the CPU and memory of the pods nominated there
        that kube-scheduler's resource filter counts for this pod (nominated
        pods of at least its priority). ``only``: try this node alone, without
        sampling (kube-scheduler's first look at a pod's nominated node); a
        pod it does not take is left as it was.
        """
        self.pods.pop(pod.name, None)     # re-scheduling never double-counts
        cfg = self.config
        pod = admit(pod, cfg)
        requests, n_init = pod_requests(pod, cfg)
        if trace is not None:
            trace.attempt(pod, requests, n_init)
        nodes = self.cluster.nodes
        # kube-scheduler's filters count the nominated pods, its scores do not
        placed = self.node_requested()
        requested = list(placed)
        if nominated:
            for i, (cpu, mem) in nominated.items():
                requested[i] = (requested[i][0] + cpu, requested[i][1] + mem)
        wants_gpu = any(r is not None for r in requests)
        # kube-scheduler's filters in its order: NodeUnschedulable, TaintToleration,
        # NodeAffinity (hamisim.kube.filters), then NodeResourcesFit
        static = static_reasons(nodes, pod, hides_taints(cfg.kube_scheduler_version))

        def filter_reasons(i: int) -> list[str]:
            if static is not None and static[i] is not None:
                return [static[i]]
            return resource_fit_reasons(nodes[i], requested[i], pod)

        start = self.next_start
        if only is not None:
            rejected = {}
            window = [] if filter_reasons(only) else [only]
        else:
            window, rejected, self.next_start = sample_feasible(
                len(nodes), filter_reasons, cfg.percentage_of_nodes_to_score,
                self.next_start)
        if trace is not None:
            trace.sampled(window, rejected, start)
        node_reasons = {nodes[i].name: r for i, r in rejected.items()}

        if not wants_gpu:
            choice = least_allocated_choice(
                [nodes[i] for i in window], [placed[i] for i in window], pod,
                cfg.node_tie_break, tie_draw)
            if choice is None:
                return _failed(len(nodes), node_reasons, pod.name, rejected, window)
            i = window[choice]
            self.pods[pod.name] = _Cached(i, [[] for _ in requests], n_init,
                                          pod.cpu_milli, pod.memory_mib, pod.namespace)
            return Decision(pod.name, nodes[i].name, [[] for _ in requests], node_index=i)

        policy_text = pod_gpu_policy(cfg.gpu_scheduler_policy, pod.annotations)
        policy = parse_card_policy(policy_text, numa_bind(pod.annotations))
        try:
            weights = pod_weights(pod.annotations)
        except ValueError as err:       # HAMi's Filter fails with an error
            raise ValueError(filter_error(str(err), pod.name)) from None
        node_policy = pod_node_policy(cfg.node_scheduler_policy, pod.annotations)
        if trace is not None:
            trace.policy(policy_text, policy, node_policy, weights)
        usage = self.card_usage()
        gate = self.quota_gate(pod.namespace)
        fits: list[tuple[int, NodeFit]] = []
        for i in window:
            node: Node = nodes[i]
            if trace is not None:
                trace.node(i)
            if not node.registered:
                node_reasons[node.name] = [NODE_UNREGISTERED]
                if trace is not None:
                    trace.node_done(i, NodeFit(False, f32(0), [], NODE_UNREGISTERED))
                continue
            res = score_node(usage[i], requests, n_init, pod.annotations, policy, weights,
                             node.pair_scores, trace=trace, quota=gate,
                             aligned=self._aligned[i],
                             corrected=cfg.init_container_usage == "corrected",
                             card_order=self.card_order
                             if policy_text == cfg.gpu_scheduler_policy else None,
                             vnpu_core=node_supports_hami_core(node.hami_vnpu_core,
                                                               cfg.hami_vnpu_core))
            if trace is not None:
                trace.node_done(i, res)
            if res.fit:
                fits.append((i, res))
            else:
                node_reasons[node.name] = [res.reason]
        if not fits:
            return _failed(len(nodes), node_reasons, pod.name, rejected, window)
        if self.node_score is not None and node_policy == cfg.node_scheduler_policy:
            if is_vectorised(self.node_score):
                rows = reference_rows(fits, usage, nodes, placed)
                draw = tie_draw if cfg.node_tie_break == "random" else None
                best = fits[choose_row(self.node_score(rows), len(fits), draw,
                                       cfg.node_scheduler_policy,
                                       lambda r: nodes[fits[r][0]].name)]
            else:
                best = self._user_choice(fits, usage, pod, cfg.node_tie_break, tie_draw)
        else:
            best = _choose_node(fits, node_policy, cfg.node_tie_break, tie_draw, trace)
        i, res = best
        self.pods[pod.name] = _Cached(i, res.containers, n_init, pod.cpu_milli,
                                      pod.memory_mib, pod.namespace, policy.reserve)
        return Decision(pod.name, nodes[i].name, res.containers, node_index=i,
                        pad_empty=pads_empty_segments(c.type for c in nodes[i].cards),
                        pad_words=padded_words(c.type for c in nodes[i].cards))


    def _user_choice(self, fits: list, usage: list, pod: Pod, tie_break: str,
                     tie_draw: float | None):
        """The fitting node the user's node policy scores highest."""
        scored = []
        for i, res in fits:
            cand = NodeCandidate(i, self.cluster.nodes[i], tuple(usage[i]),
                                 tuple(tuple(c) for c in res.containers), float(res.score), pod)
            score = float(self.node_score(cand))
            if score != score:
                raise HamisimError(f"the node policy {self.config.node_scheduler_policy} "
                                   f"scored node {cand.node.name} NaN for pod {pod.name}")
            scored.append((score, i, res))
        top = max(s for s, _, _ in scored)
        tied = [(i, res) for s, i, res in scored if s == top]
        if tie_break == "random" and tie_draw is not None:
            return tied[min(int(tie_draw * len(tied)), len(tied) - 1)]
        return tied[-1]


def _failed(n_nodes: int, node_reasons: dict[str, list[str]], pod: str,
            rejected: Mapping[int, list[str]], window: Sequence[int]) -> Decision:
    """The attempt no node took: kube-scheduler's message over the rejected
    nodes, and which plugins rejected it (``rejected``: kube-scheduler's
    filters per node; HAMi removed the ``window`` nodes that passed them)."""
    potential = sum(1 for r in node_reasons.values() if not is_unresolvable(r[0]))
    rejectors = REJ_EXTENDER if window else 0
    for reasons in rejected.values():
        rejectors |= REJ_STATIC if is_unresolvable(reasons[0]) else REJ_FIT
    return Decision(pod, message=failed_scheduling_message(n_nodes, node_reasons),
                    _node_reasons=node_reasons, n_potential=potential, rejectors=rejectors)


def _choose_node(fits: list, node_policy: str, tie_break: str, tie_draw: float | None,
                 trace: Tracer | None = None):
    """§5.4 with hamisim's convention: a stable sort in cluster order, last wins.

    Under ``random`` tie-break, one of the nodes tied with the winner is drawn.
    """
    # A stable insertion sort by the node comparator, in cluster order.
    result: list = []
    for item in fits:
        pos = len(result)
        while pos > 0 and node_less(node_policy, item[1].score, result[pos - 1][1].score):
            pos -= 1
        result.insert(pos, item)
    chosen = result[-1]
    if tie_break == "random" and tie_draw is not None:
        tied = [it for it in result if it[1].score == chosen[1].score]
        chosen = tied[min(int(tie_draw * len(tied)), len(tied) - 1)]
    if trace is not None:
        trace.ranked([it[0] for it in result], chosen[0])
    return chosen
