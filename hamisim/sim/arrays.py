"""Cluster and pod state as flat numpy arrays, the compiled kernel's input.

:class:`ClusterState` turns a :class:`~hamisim.cluster.Cluster` into a
struct-of-arrays once: one array per card field, card rows grouped by node in
cluster order (``node_start[i]:node_start[i+1]`` are node ``i``'s cards in
registration order), per-node CPU/memory, and each node's pair scores as a
dense ``k x k`` block. The usage arrays (``used``, ``usedmem``,
``usedcores``, ``req_cpu``, ``req_mem``) are updated in place as pods bind and
leave; every other array is fixed. Strings (card ids, type and mode names,
node names) stay in Python.

:func:`encode_pod` turns one scheduling attempt's Python objects (requests,
resolved policy, annotations) into the small arrays the kernel reads. It runs
once per attempt, outside the hot path.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from hamisim.cluster import Cluster, Node
from hamisim.devices import (
    FAMILIES,
    SIMULATED_FAMILIES,
    device_family,
    case_mismatch,
    exact_family,
    family,
    offer_mask,
)
from hamisim.devices.ascend import is_hami_core, node_supports_hami_core
from hamisim.hami.mig import MIG_MODE, candidate_order, ordered_placements
from hamisim.hami.policy import CardPolicy
from hamisim.hami.reference import (
    NOUSE_TYPE,
    USE_TYPE,
    VGPU_MODE,
    mode_allowed,
    type_allowed,
    uuid_allowed,
)
from hamisim.kube.filters import static_reason
from hamisim.pods import Pod, Request

__all__ = ["ClusterState", "PodEncoding", "encode_pod", "mig_arrays", "FilterTable", "REQ_FIELDS",
           "REQ_REGISTERED", "REQ_WORD", "UNCONSTRAINED", "ANY_MODE"]

#: Columns of a request row: ``nums`` (0 = the container asks for no card),
#: ``memreq``, ``mempercentagereq``, ``coresreq``, type flags, and the device
#: family (:attr:`hamisim.devices.Family.fid`; a type no family has: NVIDIA's).
REQ_FIELDS = ("nums", "memreq", "pct", "coresreq", "flags", "family")
#: ``flags`` bit: the request type is a registered device type (else Fit is
#: never reached: "Device type not found").
REQ_REGISTERED = 1
#: ``flags`` bit: the request type is exactly its family's common word
#: (``"NVIDIA"``, ``"DCU"``; else every card is a ``CardTypeMismatch``).
#: Requests generated from pods always carry both.
REQ_WORD = 2
#: the mode name of cards whose family's Fit reads no mode (every pod accepts it)
ANY_MODE = "\x00any mode"
#: ``alloc_cpu`` / ``alloc_mem`` value of a node that does not constrain it.
UNCONSTRAINED = -1

_I64 = np.int64


class ClusterState:
    """Struct-of-arrays view of a cluster plus its live usage.

    Integer card and node fields are ``int64`` (so the kernel computes with
    Python's exact integers for every realistic value); flags are ``uint8``;
    ``type_id`` / ``mode_id`` are ``int32`` indexes into :attr:`type_names` /
    :attr:`mode_names`.
    """

    def __init__(self, cluster: Cluster) -> None:
        nodes = cluster.nodes
        n_nodes = len(nodes)
        cards = [c for n in nodes for c in n.cards]
        n = len(cards)
        self.n_nodes = n_nodes
        self.n_cards = n
        self.node_names: list[str] = [nd.name for nd in nodes]
        self.card_ids: list[str] = [c.id for c in cards]
        self.row_of: dict[str, int] = {cid: r for r, cid in enumerate(self.card_ids)}

        sizes = np.array([len(nd.cards) for nd in nodes], dtype=_I64)
        self.node_start = np.zeros(n_nodes + 1, dtype=_I64)
        np.cumsum(sizes, out=self.node_start[1:])
        self.max_cards = int(sizes.max()) if n_nodes else 0
        self.node_of_row = np.repeat(np.arange(n_nodes, dtype=_I64), sizes)

        self.count = np.array([c.count for c in cards], dtype=_I64)
        self.devmem = np.array([c.devmem for c in cards], dtype=_I64)
        self.devcore = np.array([c.devcore for c in cards], dtype=_I64)
        self.numa = np.array([c.numa for c in cards], dtype=_I64)
        self.index = np.array([c.index for c in cards], dtype=_I64)
        self.health = np.array([bool(c.health) for c in cards], dtype=np.uint8)
        # Ascend: a card's NetworkID (-1: none), a node's hami-vnpu-core
        self.network = np.array([-1 if c.network_id is None else c.network_id
                                 for c in cards], dtype=_I64)
        self.vnpu_core = np.array([node_supports_hami_core(nd.hami_vnpu_core,
                                                           cluster.scheduler.hami_vnpu_core)
                                   for nd in nodes], dtype=np.uint8)
        # Kunlunxin's ScoreNode acts only where every card's type contains "kunlun"
        self.kunlun_only = np.array([all("kunlun" in c.type for c in nd.cards)
                                     for nd in nodes], dtype=np.uint8)
        # HAMi's vendor filter: a request's type (its family's word) is a
        # case-insensitive substring of the card type (HAMI-SEMANTICS §5.1;
        # hamisim.devices decides), as bits per family
        masks = {t: offer_mask(t) for t in dict.fromkeys(c.type for c in cards)}
        self.offer = np.array([masks[c.type] for c in cards], dtype=np.uint32)
        nv_bit = 1 << FAMILIES[0].fid
        # hami.io/device-cordon binds NVIDIA's Fit alone
        self.cordoned = np.array([c.id in nd.cordon and bool(masks[c.type] & nv_bit)
                                  for nd in nodes for c in nd.cards], dtype=np.uint8)
        # The card-score quirk (§3.1): a request counts only when the card type
        # equals the request type (its family's word) exactly: that family + 1;
        # flagged TYPE_CASE_MISMATCH (0x80) when the card is offered to the
        # case-sensitive family (Moore Threads) whose Fit then refuses its type
        exact = {t: exact_family(t) | (0x80 if case_mismatch(t) else 0) for t in masks}
        self.type_exact = np.array([exact[c.type] for c in cards], dtype=np.uint8)
        self.type_names: list[str] = list(masks)
        # only NVIDIA's Fit reads a card's mode (nvidia.com/vgpu-mode): the
        # other families' cards share a mode every pod accepts
        modes = [c.mode if masks[c.type] & nv_bit else ANY_MODE for c in cards]
        self.mode_names: list[str] = list(dict.fromkeys(modes))
        tid = {t: i for i, t in enumerate(self.type_names)}
        mid = {m: i for i, m in enumerate(self.mode_names)}
        self.type_id = np.array([tid[c.type] for c in cards], dtype=np.int32)
        self.mode_id = np.array([mid[m] for m in modes], dtype=np.int32)
        #: whether any card belongs to a family other than NVIDIA (type and
        #: UUID filters then read each family's own annotations)
        self.mixed = bool((self.offer & ~np.uint32(nv_bit)).any())
        # the family whose filters a card answers to (the first it is offered
        # to; NVIDIA's when none)
        self._type_family = [family(device_family(t) or "") or FAMILIES[0]
                             for t in self.type_names]
        self._card_fid = np.array([self._type_family[i].fid for i in self.type_id.tolist()],
                                  dtype=np.intp)
        # per family its pairs of UUID annotations (Kunlunxin's cards pass two)
        self._uuid_keys = [((f.use_uuid, f.nouse_uuid),) + ((f.legacy_uuid,) if f.legacy_uuid
                                                            else ()) for f in FAMILIES]

        # Pair scores (hami.io/node-nvidia-score): per node a dense k x k block,
        # row a / column b = score of (card a, card b) in registration order,
        # 0 where the annotation gives none (as HAMi's lookup does).
        self.pair_start = np.zeros(n_nodes + 1, dtype=_I64)
        np.cumsum(sizes * sizes, out=self.pair_start[1:])
        self.pair = np.zeros(int(self.pair_start[-1]), dtype=_I64)
        for i, nd in enumerate(nodes):
            if not nd.pair_scores:
                continue
            k = len(nd.cards)
            block = self.pair[self.pair_start[i]:self.pair_start[i + 1]].reshape(k, k)
            for a, ca in enumerate(nd.cards):
                row = nd.pair_scores.get(ca.id, {})
                for b, cb in enumerate(nd.cards):
                    block[a, b] = row.get(cb.id, 0)

        def alloc(v: int | None, what: str, name: str) -> int:
            if v is None:
                return UNCONSTRAINED
            if v < 0:
                raise ValueError(f"node {name}: {what} must not be negative, got {v}")
            return v

        self.alloc_cpu = np.array([alloc(nd.cpu_milli, "cpu_milli", nd.name) for nd in nodes],
                                  dtype=_I64)
        self.alloc_mem = np.array([alloc(nd.memory_mib, "memory_mib", nd.name)
                                   for nd in nodes], dtype=_I64)

        # Live state, updated in place.
        self.used = np.zeros(n, dtype=_I64)
        self.usedmem = np.zeros(n, dtype=_I64)
        self.usedcores = np.zeros(n, dtype=_I64)
        self.req_cpu = np.zeros(n_nodes, dtype=_I64)
        self.req_mem = np.zeros(n_nodes, dtype=_I64)

        # MIG: the kernel's profile and placement tables (mig_arrays)
        self.mig_arrays, self.mp_name, self.pl_place = mig_arrays(
            cards, [bool(m & nv_bit) for m in self.offer.tolist()])
        #: whether any card is in mig mode
        self.has_mig = bool(self.mig_arrays["is_mig"].any())

        self._ones_types = np.ones(max(len(self.type_names), 1), dtype=np.uint8)
        self._ones_modes = np.ones(max(len(self.mode_names), 1), dtype=np.uint8)
        self._ones_cards = np.ones(max(n, 1), dtype=np.uint8)

    # -- per-attempt filters ---------------------------------------------
    def type_filter(self, annotations: Mapping[str, str]) -> np.ndarray:
        """``use/nouse-gputype`` per type id (shared all-ones without them);
        a type of another family: that family's type annotations."""
        if not self.mixed:
            if USE_TYPE not in annotations and NOUSE_TYPE not in annotations:
                return self._ones_types
            return np.array([type_allowed(annotations, t) for t in self.type_names] or [1],
                            dtype=np.uint8)
        return np.array([_type_ok(annotations, t, f)
                         for t, f in zip(self.type_names, self._type_family)] or [1],
                        dtype=np.uint8)

    def mode_filter(self, annotations: Mapping[str, str]) -> np.ndarray:
        """``nvidia.com/vgpu-mode`` per mode id (shared all-ones without it)."""
        if VGPU_MODE not in annotations:
            return self._ones_modes
        value = annotations[VGPU_MODE]
        return np.array([m == ANY_MODE or mode_allowed(value, m) for m in self.mode_names]
                        or [1], dtype=np.uint8)

    def uuid_filter(self, annotations: Mapping[str, str]) -> np.ndarray:
        """``use/nouse-gpuuuid`` per card row (shared all-ones without them);
        a card of another family: that family's UUID annotations."""
        if not any(k in annotations for pairs in self._uuid_keys for keys in pairs
                   for k in keys):
            return self._ones_cards
        # Every card not named in its family's lists gets its family's answer;
        # ask the reference's filter for those answers and for each named card.
        def allowed(cid: str, pairs) -> bool:
            return all(uuid_allowed(annotations, cid, *keys) for keys in pairs)
        defaults = np.array([allowed(_NOT_A_CARD_ID, pairs) for pairs in self._uuid_keys],
                            dtype=np.uint8)
        mask = np.ones(max(self.n_cards, 1), dtype=np.uint8)
        mask[:self.n_cards] = defaults[self._card_fid]
        named = {m.strip() for pairs in self._uuid_keys for keys in pairs for key in keys
                 for m in (annotations.get(key) or "").split(",")}
        for cid in named:
            row = self.row_of.get(cid)
            if row is not None:
                mask[row] = allowed(cid, self._uuid_keys[self._card_fid[row]])
        return mask


def _type_ok(annotations: Mapping[str, str], card_type: str, fam) -> bool:
    if fam.use_type is None:
        return True
    return type_allowed(annotations, card_type, fam.use_type, fam.nouse_type)


def mig_arrays(cards: Sequence, nvidia: Sequence[bool] | None = None,
               ) -> tuple[dict[str, np.ndarray], list[str], list[tuple[int, int]]]:
    """The MIG arrays of the kernel (``_core.CardTable``'s ``mig``) for ``cards``
    (card rows in order): per row its profiles in selectMigCandidate's order,
    per profile its placements in HAMi's try order (those of the first profile
    registered under that name, as HAMi looks them up) as bit masks; cards with
    equal profile lists share one table. Also per profile row its name and per
    placement row ``(start, size)`` (a pick's :attr:`~hamisim.hami.decision.Pick.mig`)."""
    n = len(cards)
    # MIG is NVIDIA's alone: a card of another family in mode "mig" is not one
    is_mig = np.array([c.mode == MIG_MODE and (nvidia is None or nvidia[r])
                       for r, c in enumerate(cards)], dtype=np.uint8)
    p0 = np.zeros(n, dtype=_I64)
    p1 = np.zeros(n, dtype=_I64)
    max_end = np.zeros(n, dtype=_I64)
    mp_mem: list[int] = []
    mp_core: list[int] = []
    mp_pl0: list[int] = []
    mp_pl1: list[int] = []
    pl_mask: list[int] = []
    names: list[str] = []
    places: list[tuple[int, int]] = []
    tables: dict[tuple, tuple[int, int, int]] = {}
    for r, c in enumerate(cards):
        if not is_mig[r]:
            continue
        t = tables.get(c.mig_profiles)
        if t is None:
            first = len(mp_mem)
            for prof in candidate_order(c.mig_profiles):
                named = next(q for q in c.mig_profiles if q.name == prof.name)
                mp_mem.append(prof.memory_mb)
                mp_core.append(prof.core)
                names.append(prof.name)
                mp_pl0.append(len(pl_mask))
                for pl in ordered_placements(named):
                    pl_mask.append(pl.mask)
                    places.append((pl.start, pl.size))
                mp_pl1.append(len(pl_mask))
            end = max((pl.start + pl.size for q in c.mig_profiles for pl in q.placements),
                      default=0)
            t = tables[c.mig_profiles] = (first, len(mp_mem), end)
        p0[r], p1[r], max_end[r] = t
    arrays = dict(
        is_mig=is_mig, mig_p0=p0, mig_p1=p1, max_end=max_end,
        mig_occ=np.zeros(n, dtype=np.uint64),
        mig_cnt=np.zeros(64 * n if is_mig.any() else 0, dtype=np.int32),
        mp_mem=np.array(mp_mem, dtype=_I64), mp_core=np.array(mp_core, dtype=_I64),
        mp_pl0=np.array(mp_pl0, dtype=_I64), mp_pl1=np.array(mp_pl1, dtype=_I64),
        pl_mask=np.array(pl_mask, dtype=np.uint64))
    return arrays, names, places


# An id no annotation member can equal: members are stripped, this is not.
_NOT_A_CARD_ID = " \x00 hamisim: no card \x00 "


@dataclass
class PodEncoding:
    """One attempt's request, encoded for :class:`hamisim._core.PodSpec`."""

    req: np.ndarray            # (n_containers, 5) int64, REQ_FIELDS
    n_init: int
    mode: int
    chain: np.ndarray          # (3,) int32, first n_chain used
    n_chain: int
    sort_numa_bind: bool       # the comparator's numa-bind flag
    fit_numa_bind: bool        # Fit's NUMA regrouping (the pod annotation)
    mutex: bool
    topology: bool
    weights: np.ndarray        # (3,) float32: slot, core, memory
    type_ok: np.ndarray        # uint8 per type id
    mode_ok: np.ndarray        # uint8 per mode id
    uuid_ok: np.ndarray        # uint8 per card row
    cpu_milli: int
    memory_mib: int
    wants_gpu: bool
    #: isMIGRequest's pod part: no ``nvidia.com/vgpu-mode``, or one containing ``mig``
    mig_request: bool = True
    #: Ascend's soft split (``huawei.com/vnpu-mode: hami-core``)
    hami_core: bool = False


def request_rows(requests: Sequence[Request | None],
                 registered_types: Sequence[str] | None = None) -> np.ndarray:
    """Per-container request rows; ``None`` (no card asked) gives ``nums == 0``.
    ``registered_types``: HAMi's registered device types (default: every
    simulated family's word)."""
    if registered_types is None:
        registered_types = SIMULATED_FAMILIES
    req = np.zeros((len(requests), len(REQ_FIELDS)), dtype=_I64)
    for j, r in enumerate(requests):
        if r is None:
            continue
        fam = family(r.type)
        flags = (REQ_REGISTERED if r.type in registered_types else 0) | \
            (REQ_WORD if fam is not None else 0)
        req[j] = (r.nums, r.memreq, r.mempercentagereq, r.coresreq, flags,
                  fam.fid if fam is not None else FAMILIES[0].fid)
    return req



def encode_policy(policy: CardPolicy) -> tuple[int, np.ndarray, int]:
    """``(mode, chain[3], n_chain)`` of a resolved card policy."""
    chain = np.zeros(3, dtype=np.int32)
    chain[:len(policy.chain)] = policy.chain
    return policy.mode, chain, len(policy.chain)


def encode_pod(state: ClusterState, pod: Pod, requests: Sequence[Request | None], n_init: int,
               policy: CardPolicy | None, weights: tuple[int, int, int]) -> PodEncoding:
    """Encode an admitted pod's attempt. ``policy`` is ``None`` for GPU-less pods."""
    ann = pod.annotations or {}
    wants_gpu = policy is not None
    req = request_rows(requests)
    if wants_gpu:
        mode, chain, n_chain = encode_policy(policy)
        type_ok, mode_ok, uuid_ok = (state.type_filter(ann), state.mode_filter(ann),
                                     state.uuid_filter(ann))
        bind, mutex, topo = policy.numa_bind, policy.mutex, policy.topology
    else:
        mode, chain, n_chain = 0, np.zeros(3, dtype=np.int32), 0
        type_ok, mode_ok, uuid_ok = state._ones_types, state._ones_modes, state._ones_cards
        bind = mutex = topo = False
    return PodEncoding(
        req=req, n_init=n_init, mode=mode, chain=chain, n_chain=n_chain,
        sort_numa_bind=bind, fit_numa_bind=bind, mutex=mutex, topology=topo,
        weights=np.array([np.float32(w) for w in weights], dtype=np.float32),
        type_ok=type_ok, mode_ok=mode_ok, uuid_ok=uuid_ok,
        cpu_milli=pod.cpu_milli, memory_mib=pod.memory_mib, wants_gpu=wants_gpu,
        mig_request=VGPU_MODE not in ann or MIG_MODE in ann[VGPU_MODE],
        hami_core=is_hami_core(ann))


class FilterTable:
    """:func:`static_reasons` for a fixed list of nodes, as codes, cached.

    ``codes(pod)`` is an ``int32`` array over the nodes (0 = passes, ``k`` =
    rejected with ``reasons[k]``) or ``None`` when every node passes. Nodes
    with equal labels, taints and cordon share one evaluation, and pods with
    equal selector, tolerations and affinity share one result, so a cluster
    of node groups costs a few evaluations per distinct constraint.
    """

    def __init__(self, nodes: Sequence[Node], hide_taints: bool = False) -> None:
        self.nodes = nodes
        self.hide_taints = hide_taints
        self.reasons: list[str] = [""]
        self._code: dict[str, int] = {}
        profiles: dict[tuple, int] = {}
        self._profile = np.zeros(len(nodes), dtype=np.int64)
        self._rep: list[int] = []
        for i, n in enumerate(nodes):
            key = (tuple(sorted(n.labels.items())), n.taints, n.unschedulable)
            p = profiles.get(key)
            if p is None:
                p = profiles[key] = len(self._rep)
                self._rep.append(i)
            self._profile[i] = p
        self._any_taint = any(n.unschedulable or n.taints for n in nodes)
        self._cache: dict[tuple, np.ndarray | None] = {}

    def code_of(self, reason: str) -> int:
        code = self._code.get(reason)
        if code is None:
            code = self._code[reason] = len(self.reasons)
            self.reasons.append(reason)
        return code

    def codes(self, pod: Pod) -> np.ndarray | None:
        if not pod.constrained and not self._any_taint:
            return None
        key = (tuple(sorted(pod.node_selector.items())), pod.tolerations, pod.affinity)
        if key in self._cache:
            return self._cache[key]
        by_name = pod.affinity is not None and any(t.match_fields for t in pod.affinity)
        if by_name:
            out = np.array([self.code_of(r) if (r := static_reason(n, pod, self.hide_taints)) else 0
                            for n in self.nodes], dtype=np.int32)
        else:
            hide = self.hide_taints
            per_profile = np.array(
                [self.code_of(r) if (r := static_reason(self.nodes[i], pod, hide)) else 0
                 for i in self._rep], dtype=np.int32)
            out = per_profile[self._profile] if len(self.nodes) else \
                np.zeros(0, dtype=np.int32)
        out = np.ascontiguousarray(out, dtype=np.int32)
        if not out.any():
            out = None
        if len(self._cache) < 4096:
            self._cache[key] = out
        return out
