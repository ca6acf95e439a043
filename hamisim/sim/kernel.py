"""The compiled backend: :class:`KernelScheduler`, glue around :mod:`hamisim._core`.

Same interface and same decisions as :class:`hamisim.hami.reference.ReferenceScheduler`
(the oracle). The difference is where the work happens: the cluster is
turned into arrays once (:mod:`hamisim.sim.arrays`), usage is kept incrementally
(a bind adds the pod's collapsed contribution, a delete subtracts it, which
equals HAMi's rebuild from the pod cache), and each attempt is one call into
the kernel. Python only encodes the pod before the call (once per distinct
pod shape: the encoding is cached under a key of the pod's containers,
annotations and CPU/memory) and builds the :class:`~hamisim.hami.decision.Decision`
after it.

The kernel keeps per-node aggregates (node score, largest free memory,
percentage and cores, eligible and idle cards) refreshed on every bind and
delete, skips window nodes that cannot fit and evaluates the rest best score
first, stopping at the first that fits; only an unschedulable pod gets every
window node's full evaluation (for the reason histogram).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from hamisim import _core
from hamisim.cluster import Cluster
from hamisim.devices import FAMILIES
from hamisim.devices.ascend import NETWORK_WEIGHT
from hamisim.errors import HamisimError
from hamisim.hami import policy as _policy
from hamisim.hami.decision import (
    DEVICE_TYPE_NOT_FOUND,
    INSUFFICIENT_CPU,
    INSUFFICIENT_MEMORY,
    LISTED_ZERO,
    NODE_INSUFFICIENT_DEVICE,
    NODE_UNREGISTERED,
    REASONS,
    Decision,
    Pick,
    fit_reason,
    histogram_message,
    padded_words,
    pads_empty_segments,
)
from hamisim.hami.policy import (
    node_policy_spread,
    numa_bind,
    parse_card_policy,
    pod_gpu_policy,
    pod_node_policy,
    filter_error,
    pod_weights,
)
from hamisim.hami.noderows import FLOAT_COLUMNS, INT_COLUMNS, RowRanker
from hamisim.hami.quota import QuotaGate, quota_denial, quota_gate
from hamisim.hami.reference import aligned_usage, cached_usage
from hamisim.kube.filters import hides_taints
from hamisim.kube.fit import resource_fit_reasons
from hamisim.kube.queue import REJ_EXTENDER, REJ_FIT, REJ_STATIC
from hamisim.kube.sampling import num_feasible_nodes_to_find
from hamisim.pods import NO_PERCENTAGE, Pod, admit, pod_requests
from hamisim.registry import is_plugin_policy
from hamisim.shapes import ShapeCache
from hamisim.sim.arrays import (
    REQ_FIELDS,
    REQ_REGISTERED,
    REQ_WORD,
    ClusterState,
    FilterTable,
    encode_pod,
)

__all__ = ["KernelScheduler", "card_table", "pod_spec"]

# The kernel hard-codes these; fail loudly at import if Python's ever move.
assert _core.REASON_ORDER == REASONS, "hamisim._core reason codes out of date"
assert all(_core.CODES[k] == getattr(_policy, k) for k in (
    "MODE_CHAIN", "SINGLE_MUTEX", "SINGLE_BINPACK", "SINGLE_SPREAD", "KEY_BINPACK",
    "KEY_SPREAD", "KEY_NUMA")), "hamisim._core policy codes out of date"
assert _core.CODES["NO_PERCENTAGE"] == NO_PERCENTAGE
assert _core.CODES["Q_WIDTH"] == len(REQ_FIELDS)
assert (_core.CODES["QF_REGISTERED"], _core.CODES["QF_WORD"]) == (REQ_REGISTERED, REQ_WORD)
assert _core.CODES["FAM_NVIDIA"] == FAMILIES[0].fid == 0 and FAMILIES[0].word == "NVIDIA"
# the one family whose Fit charges Compute Units (the kernel's FAM_AMD branch)
assert [f.fid for f in FAMILIES if f.cores_as_cus] == [_core.CODES["FAM_AMD"]]
# the one family whose Fit charges no memory and no cores (FAM_BIREN)
assert [f.fid for f in FAMILIES if f.slots_only] == [_core.CODES["FAM_BIREN"]]
# the one family with a case-sensitive type test and the one-card-a-pod rule
# (FAM_MTHREADS; Cards.type_exact's TYPE_CASE_MISMATCH flag assumes one)
assert ([f.fid for f in FAMILIES if f.type_case_sensitive]
        == [f.fid for f in FAMILIES if f.one_card_per_pod] == [_core.CODES["FAM_MTHREADS"]])
# Ascend (the kernel's FAM_ASCEND .. FAM_ASCEND_LAST): the vNPU families; the
# 910 chips (NetworkID, ScoreNode) first, 910C (module pairs) the last of them
_vnpu = [f.fid for f in FAMILIES if f.vnpu]
assert _vnpu == list(range(_core.CODES["FAM_ASCEND"], _core.CODES["FAM_ASCEND_LAST"] + 1))
assert [f.fid for f in FAMILIES if f.network_topology] == list(
    range(_core.CODES["FAM_ASCEND"], _core.CODES["FAM_910C"] + 1))
assert [f.fid for f in FAMILIES if f.module_pairs] == [_core.CODES["FAM_910C"]]
assert _core.CODES["LISTED_ZERO"] == LISTED_ZERO
assert _core.CODES["NETWORK_WEIGHT"] == NETWORK_WEIGHT
# Kunlunxin (FAM_KUNLUN whole cards, FAM_XPU slices: graghSelect)
assert [(f.fid, f.wings) for f in FAMILIES if f.wings] == [
    (_core.CODES["FAM_KUNLUN"], "whole"), (_core.CODES["FAM_XPU"], "slices")]
#: the families whose allocation names the card's own type (Pick.label)
_LABELLED = frozenset(f.word for f in FAMILIES if f.cores_as_cus)
assert _core.ROW_COLUMNS == (INT_COLUMNS, FLOAT_COLUMNS), "hamisim._core row columns out of date"

ST = _core.ST_NAMES
_ST_FIT, _ST_FAILED = ST["FIT"], ST["FIT_FAILED"]
_STATUS_REASON = {ST["INSUFFICIENT"]: NODE_INSUFFICIENT_DEVICE,
                  ST["TYPE_NOT_FOUND"]: DEVICE_TYPE_NOT_FOUND,
                  ST["UNREGISTERED"]: NODE_UNREGISTERED}
_CPU_MEM = {1: [INSUFFICIENT_CPU], 2: [INSUFFICIENT_MEMORY],
            3: [INSUFFICIENT_CPU, INSUFFICIENT_MEMORY]}


def card_table(state: ClusterState, aligned: np.ndarray | None = None) -> _core.CardTable:
    """The kernel's view of ``state`` (it reads the usage arrays live);
    ``aligned``: per node, 0 = HAMi's list drops GPU-less containers, 1 = it
    keeps them, 2 = the corrected accounting (see ``_core.CardTable``)."""
    return _core.CardTable(
        node_start=state.node_start, pair_start=state.pair_start,
        count=state.count, devmem=state.devmem, devcore=state.devcore, numa=state.numa,
        index=state.index, health=state.health, cordoned=state.cordoned,
        offer=state.offer, type_exact=state.type_exact, type_id=state.type_id,
        mode_id=state.mode_id, used=state.used, usedmem=state.usedmem,
        usedcores=state.usedcores, pair=state.pair, alloc_cpu=state.alloc_cpu,
        alloc_mem=state.alloc_mem, req_cpu=state.req_cpu, req_mem=state.req_mem,
        aligned=aligned, mig=state.mig_arrays, network=state.network,
        vnpu_core=state.vnpu_core, kunlun_only=state.kunlun_only)


def pod_spec(enc, gate: np.ndarray | None = None) -> _core.PodSpec:
    """A :class:`hamisim._core.PodSpec` from a :class:`hamisim.sim.arrays.PodEncoding`
    and the pod's kube-scheduler filter codes per node (``None``: all pass)."""
    return _core.PodSpec(enc.req, enc.n_init, enc.mode, enc.chain, enc.n_chain,
                         enc.sort_numa_bind, enc.fit_numa_bind, enc.mutex, enc.topology,
                         enc.weights, enc.type_ok, enc.mode_ok, enc.uuid_ok,
                         enc.cpu_milli, enc.memory_mib, gate, enc.mig_request,
                         enc.hami_core)


_INT64_MAX = 2**63 - 1


def attempt_rejectors(rejected_bits: int, n_passed: int) -> int:
    """The plugins that rejected a failed kernel attempt, as
    :mod:`hamisim.kube.queue`'s bits, from the kernel's union of the rejected
    nodes' bits (1 CPU, 2 memory, 4 and up a static filter) and the number of
    nodes that passed kube-scheduler's filters (HAMi removed them all)."""
    rejectors = REJ_EXTENDER if n_passed else 0
    if rejected_bits & 3:
        rejectors |= REJ_FIT
    if rejected_bits >> 2:
        rejectors |= REJ_STATIC
    return rejectors


def _limit(value: int | None) -> int:
    """A quota limit for the kernel: -1 = not set; beyond int64 = never reached."""
    return -1 if value is None else min(value, _INT64_MAX)


class _Bound(NamedTuple):
    node: int
    rows: list[int]         # card rows the pod holds
    used: list[int]         # per row: slots, memory, cores it holds there
    mem: list[int]
    cores: list[int]
    cpu_milli: int
    memory_mib: int
    mig_rows: tuple[int, ...] = ()      # MIG instances: card row, placement bits
    mig_masks: tuple[int, ...] = ()
    reserve: bool = False               # what-if mutex-reserve: its rows are reserved


@dataclass
class _Shape:
    """Everything an attempt needs that depends only on the pod's shape."""

    spec: _core.PodSpec
    n_req: int
    n_init: int
    wants_gpu: bool
    node_spread: bool
    #: HAMi's Filter error for this shape (an invalid ``device-scoring-weights``):
    #: every attempt samples the nodes, then fails with this message
    filter_error: str | None = None
    #: kube-scheduler's static filter codes per node (see FilterTable), or None
    gate: np.ndarray | None = None
    #: the what-if mutex-reserve: a bound pod of this shape reserves its cards
    reserve: bool = False
    #: per container, its request's type (the family word its picks carry)
    words: tuple[str, ...] = ()


#: Distinct pod shapes remembered per scheduler (a trace has a few hundred).
_SHAPE_CACHE_SIZE = 4096
_PICK_CACHE_SIZE = 1 << 16


class KernelScheduler:
    """HAMi's scheduler on a cluster, one attempt at a time, compiled.

    Decision for decision identical to :class:`~hamisim.hami.reference.ReferenceScheduler`.

    A cluster whose node policy is a vectorised Python policy
    (``python:PATH.py:NAME`` marked with :func:`hamisim.hami.noderows.vectorised`)
    is ranked by it: the kernel filters and fits, the policy scores the fitting
    nodes' rows once per attempt (``ranker``). Any other Python policy raises
    :class:`HamisimError` (it runs on the reference backend).
    """

    backend = "kernel"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.config = cluster.scheduler
        self.state = ClusterState(cluster)
        self._aligned = [aligned_usage(n, self.config) for n in cluster.nodes]
        corrected = self.config.init_container_usage == "corrected"
        self._table = card_table(self.state, np.array(
            [2 if corrected else int(a) for a in self._aligned], dtype=np.uint8))
        self._core = _core.Core(self._table)
        self._pods: dict[str, _Bound] = {}
        self.next_start = 0
        self._wanted = num_feasible_nodes_to_find(self.config.percentage_of_nodes_to_score,
                                                  self.state.n_nodes)
        self._reason_cache: dict[tuple, str] = {}
        self._pad_empty = [pads_empty_segments(c.type for c in n.cards) for n in cluster.nodes]
        self._pad_words = [padded_words(c.type for c in n.cards) for n in cluster.nodes]
        #: ResourceQuota: namespaces with a limit -> (MiB, cores) their pods hold,
        #: and each such pod's namespace and share
        self._quota_ns = {ns for ns in cluster.quotas if cluster.quota_of(ns) is not None}
        self._ns_used: dict[str, list[int]] = {ns: [0, 0] for ns in self._quota_ns}
        self._pod_quota: dict[str, tuple[str, int, int]] = {}
        self._shapes = ShapeCache(None, _SHAPE_CACHE_SIZE)
        self._random_ties = self.config.node_tie_break == "random"
        self._index = self.state.index.tolist()
        self._picks: dict[tuple[int, int, int, str], Pick] = {}
        self.filters = FilterTable(cluster.nodes, hides_taints(self.config.kube_scheduler_version))
        #: the vectorised Python node policy bound to the kernel's row buffers, or None
        self.ranker: RowRanker | None = None
        policy = self.config.node_scheduler_policy
        if is_plugin_policy(policy):
            from hamisim.research.plugins import load_vectorised
            self.ranker = RowRanker(load_vectorised(policy), policy, self._core.np_rows_i,
                                    self._core.np_rows_f, self.state.node_names)

    # -- state ---------------------------------------------------------
    def delete(self, name: str) -> None:
        """Drop a pod from the cache (pod deleted, Succeeded or Failed)."""
        b = self._pods.pop(name, None)
        if b is not None:
            self._core.apply(*b[:7], -1)
            if b.reserve:
                self._core.reserve(b.rows, -1)
            if b.mig_rows:
                self._core.apply_mig(b.mig_rows, b.mig_masks, -1)
            held = self._pod_quota.pop(name, None)
            if held is not None:
                used = self._ns_used[held[0]]
                used[0] -= held[1]
                used[1] -= held[2]

    def adopt(self, name: str, node_index: int, containers: list[list[Pick]],
              n_init: int = 0, cpu_milli: int = 0, memory_mib: int = 0,
              namespace: str = "default", reserve: bool = False,
              app_only: bool = False) -> None:
        """As :meth:`hamisim.hami.reference.ReferenceScheduler.adopt`."""
        previous = self._pods.get(name)
        reserve = reserve or (previous is not None and previous.reserve)
        self.delete(name)
        self._bind(name, node_index, containers, n_init, cpu_milli, memory_mib, namespace,
                   reserve, app_only)

    def namespace_usage(self, namespace: str) -> tuple[int, int]:
        """``(MiB, cores)`` the cached pods of ``namespace`` count against its
        quota (tracked for namespaces with a limit only; others give zeros)."""
        used = self._ns_used.get(namespace, (0, 0))
        return used[0], used[1]

    def quota_gate(self, namespace: str) -> QuotaGate | None:
        """The namespace's quota with its current usage, ``None`` without a limit."""
        if namespace not in self._quota_ns:
            return None
        return quota_gate(self.cluster.quota_of(namespace), self.config.memory_factor,
                          self.namespace_usage(namespace))

    def admission_denial(self, pod: Pod) -> str | None:
        """As :meth:`hamisim.hami.reference.ReferenceScheduler.admission_denial`."""
        return quota_denial(self.quota_gate(pod.namespace), pod, self.config)

    def usage_by_card(self) -> dict[str, tuple[int, int, int]]:
        """``{card id: (used, usedmem, usedcores)}`` as HAMi's cache holds it now."""
        s = self.state
        return {cid: (u, m, c) for cid, u, m, c in zip(
            s.card_ids, s.used.tolist(), s.usedmem.tolist(), s.usedcores.tolist())}

    def card_usage(self, node: int, containers: list[list[Pick]], n_init: int,
                   app_only: bool = False
                   ) -> tuple[list[int], list[int], list[int], list[int],
                              tuple[int, ...], tuple[int, ...]]:
        """A placement on ``node`` as the kernel books it: HAMi's collapsed usage
        per card row (rows, tenants, memory, cores) and the MIG instances it holds
        (rows, slot masks). Used for binds and for initial-state pods alike;
        ``app_only``: the app entries kept after the init containers succeeded
        (:func:`hamisim.hami.reference.app_only_usage`)."""
        contrib = cached_usage(containers, n_init, self._aligned[node], app_only)
        # The reference looks a pod's cards up among its node's cards.
        r0, r1 = int(self.state.node_start[node]), int(self.state.node_start[node + 1])
        row_of = {cid: r0 + p for p, cid in enumerate(self.state.card_ids[r0:r1])}
        rows = [row_of[u] for u in contrib]
        used, mem, cores = ([v[k] for v in contrib.values()] for k in range(3))
        mig = [(row_of[p.uuid], ((1 << p.mig[2]) - 1) << p.mig[1])
               for picks in containers for p in picks if p.mig is not None]
        return rows, used, mem, cores, tuple(r for r, _ in mig), tuple(m for _, m in mig)

    def _bind(self, name: str, node: int, containers: list[list[Pick]], n_init: int,
              cpu_milli: int, memory_mib: int, namespace: str, reserve: bool = False,
              app_only: bool = False) -> _Bound:
        rows, used, mem, cores, mig_rows, mig_masks = self.card_usage(node, containers, n_init,
                                                                      app_only)
        b = _Bound(node, rows, used, mem, cores, cpu_milli, memory_mib, mig_rows, mig_masks,
                   reserve)
        self._add(name, b, namespace)
        return b

    def _add(self, name: str, b: _Bound, namespace: str) -> None:
        self._core.apply(*b[:7])
        if b.reserve:
            self._core.reserve(b.rows, 1)
        if b.mig_rows:
            self._core.apply_mig(b.mig_rows, b.mig_masks, 1)
        self._pods[name] = b
        if namespace in self._quota_ns:
            # NVIDIA's quota counts NVIDIA's cards alone
            nv = self.state.offer
            mem = sum(m for r, m in zip(b.rows, b.mem) if nv[r] & 1)
            cores = sum(c for r, c in zip(b.rows, b.cores) if nv[r] & 1)
            self._pod_quota[name] = (namespace, mem, cores)
            used = self._ns_used[namespace]
            used[0] += mem
            used[1] += cores

    def encode(self, pod: Pod) -> _Shape:
        """Admit and encode ``pod`` (one shape), without touching the cluster.

        Raises ``ValueError`` when admission refuses the pod (as the reference
        does, before any node is looked at); a Filter error is kept in the
        shape's ``filter_error``.
        """
        cfg = self.config
        pod = admit(pod, cfg)
        requests, n_init = pod_requests(pod, cfg)
        wants_gpu = any(r is not None for r in requests)
        gate = self.filters.codes(pod)
        policy = None
        weights = (1, 1, 1)
        node_spread = False
        if wants_gpu:
            text = pod_gpu_policy(cfg.gpu_scheduler_policy, pod.annotations)
            if is_plugin_policy(text):
                raise HamisimError(f"pod {pod.name}: the Python card policy {text} runs on "
                                   "the readable backend: add --backend reference")
            policy = parse_card_policy(text, numa_bind(pod.annotations))
            try:
                weights = pod_weights(pod.annotations)
            except ValueError as err:
                # HAMi's Filter errors out after kube-scheduler sampled the nodes.
                spec = pod_spec(encode_pod(self.state, pod, requests, n_init, None, weights),
                                gate)
                return _Shape(spec, len(requests), n_init, wants_gpu, False, str(err), gate)
            node_spread = node_policy_spread(pod_node_policy(cfg.node_scheduler_policy,
                                                             pod.annotations))
        spec = pod_spec(encode_pod(self.state, pod, requests, n_init, policy, weights), gate)
        # a pod naming a node policy of its own keeps HAMi's ranking (as the reference)
        spec.user_rank = wants_gpu and self.ranker is not None and pod_node_policy(
            cfg.node_scheduler_policy, pod.annotations) == cfg.node_scheduler_policy
        return _Shape(spec, len(requests), n_init, wants_gpu, node_spread, None, gate,
                      policy is not None and policy.reserve,
                      tuple("NVIDIA" if r is None else r.type for r in requests))

    def potential_nodes(self) -> int:
        """Nodes the failed attempt just made rejected with kube-scheduler's
        ``Unschedulable`` code (resource fit or HAMi), where preemption may help."""
        core = self._core
        bits = core.np_rej_bits[:core.n_rejected]
        return int(np.count_nonzero((bits & 3) != 0)) + core.n_window

    def failure_message(self, wants_gpu: bool) -> str:
        """kube-scheduler's FailedScheduling text of the attempt that just failed
        (read from the kernel's buffers)."""
        return histogram_message(self.state.n_nodes, self._histogram(wants_gpu))

    # -- one attempt -----------------------------------------------------
    def schedule(self, pod: Pod, tie_draw: float | None = None, *,
                 nominated: dict[int, tuple[int, int]] | None = None,
                 only: int | None = None) -> Decision:
        """One scheduling attempt of ``pod``; a bound pod enters the cache.

        ``tie_draw`` in [0, 1) picks among equally scored nodes when the
        cluster's ``node_tie_break`` is ``random``; the last node otherwise.
        ``nominated`` and ``only`` as for
        :meth:`hamisim.hami.reference.ReferenceScheduler.schedule`.
        """
        self.delete(pod.name)             # re-scheduling never double-counts
        shape = self.prepared_shape(pod)
        if nominated:
            # nominated pods' CPU and memory count for kube-scheduler's filter
            # during this attempt only (HAMi does not see them)
            for i, (cpu, mem) in nominated.items():
                self._core.nominate(i, cpu, mem, 1)
            try:
                return self._schedule(pod, shape, tie_draw, only)
            finally:
                for i, (cpu, mem) in nominated.items():
                    self._core.nominate(i, cpu, mem, -1)
        return self._schedule(pod, shape, tie_draw, only)

    def prepared_shape(self, pod: Pod) -> _Shape:
        """``pod``'s encoded request (cached per shape; admission refusals raise
        ``ValueError``, uncached) with its namespace's ResourceQuota gate set for
        an attempt against the cluster as it is now."""
        shape = self._shapes.peek(pod)
        if shape is None:
            shape = self.encode(pod)
            self._shapes.put(pod, shape)
        if self._quota_ns:
            gate = self.quota_gate(pod.namespace)
            if gate is None:
                shape.spec.set_quota(False)
            else:
                shape.spec.set_quota(True, gate.used_mem, gate.used_cores,
                                     _limit(gate.limit_mem), _limit(gate.limit_cores))
        return shape

    def _only(self, pod: Pod, shape: _Shape, node: int) -> bool:
        """Whether kube-scheduler's filters and HAMi take ``pod`` on ``node``
        (its nominated node); leaves the picks in the kernel's buffers."""
        if shape.gate is not None and shape.gate[node]:
            return False
        s = self.state
        requested = (int(s.req_cpu[node]), int(s.req_mem[node]))
        if resource_fit_reasons(self.cluster.nodes[node], requested, pod):
            return False
        if not shape.wants_gpu:
            return True
        return self._core.place(shape.spec, node) == _ST_FIT

    def _schedule(self, pod: Pod, shape: _Shape, tie_draw: float | None,
                  only: int | None) -> Decision:
        state, core = self.state, self._core
        if only is not None:
            if shape.filter_error is not None:
                raise ValueError(filter_error(shape.filter_error, pod.name))
            if not self._only(pod, shape, only):
                return Decision(pod.name, message="")
            node = only
        else:
            node = self._choose(pod, shape, tie_draw)
            if node < 0:
                wants_gpu = shape.wants_gpu
                msg = self.failure_message(wants_gpu)
                snap = self._failure_snapshot(wants_gpu)
                return Decision(pod.name, message=msg,
                                reasons_factory=lambda: self._node_reasons(snap),
                                n_potential=self.potential_nodes(),
                                rejectors=attempt_rejectors(core.rej_union, core.n_window))
        spec, wants_gpu = shape.spec, shape.wants_gpu
        names = state.node_names
        n_req, n_init = shape.n_req, shape.n_init
        if not wants_gpu:
            containers: list[list[Pick]] = [[] for _ in range(n_req)]
            b = _Bound(node, [], [], [], [], pod.cpu_milli, pod.memory_mib)
            self._add(pod.name, b, pod.namespace)
            return Decision(pod.name, names[node], containers, node_index=node,
                            usage=(b.rows, b.used, b.mem, b.cores))
        if core.placed != node:
            st = core.place(spec, node)
            assert st == _ST_FIT, "kernel: chosen node no longer fits"
        ids, index = state.card_ids, self._index
        r0 = int(state.node_start[node])
        picks = core.picks(n_req)
        pick_of = self._picks
        if len(pick_of) > _PICK_CACHE_SIZE:
            pick_of.clear()
        containers = []
        if state.has_mig:
            containers = self._mig_containers(r0, picks, core.mig_picks(n_req), shape.words)
            picks = []          # the general path below counts the instances
        words = shape.words
        for ci, cp in enumerate(picks):
            row = []
            word = words[ci] if words else "NVIDIA"
            labelled = word in _LABELLED
            for p, m, c in cp:
                # Picks are immutable: one object per (card, memory, cores, type).
                pk = pick_of.get((r0 + p, m, c, word))
                if pk is None:
                    label = state.type_names[state.type_id[r0 + p]] if labelled else None
                    pk = pick_of[r0 + p, m, c, word] = Pick(ids[r0 + p], m, c, index[r0 + p],
                                                            type=word, label=label)
                row.append(pk)
            containers.append(row)
        if n_init == 0 and n_req == 1 and not state.has_mig:
            # One container: distinct cards, one slot each, negative requests
            # booked as zero (collapsed_usage).
            cp = picks[0]
            b = _Bound(node, [r0 + p for p, _, _ in cp], [1] * len(cp),
                       [max(m, 0) for _, m, _ in cp], [max(c, 0) for _, _, c in cp],
                       pod.cpu_milli, pod.memory_mib,
                       reserve=shape.reserve)
            self._add(pod.name, b, pod.namespace)
        else:
            b = self._bind(pod.name, node, containers, n_init, pod.cpu_milli, pod.memory_mib,
                           pod.namespace, shape.reserve)
        return Decision(pod.name, names[node], containers, node_index=node,
                        pad_empty=self._pad_empty[node], pad_words=self._pad_words[node],
                        usage=(b.rows, b.used, b.mem, b.cores))

    def _mig_containers(self, r0: int, picks: list, mig: list,
                        words: tuple[str, ...] = ()) -> list[list[Pick]]:
        """The picks of a cluster with MIG cards, each with its MIG instance."""
        state = self.state
        ids, index = state.card_ids, self._index
        out = []
        for ci, (cp, cm) in enumerate(zip(picks, mig)):
            row = []
            word = words[ci] if words else "NVIDIA"
            labelled = word in _LABELLED
            for (p, m, c), (prof, pl) in zip(cp, cm):
                inst = None if prof < 0 else (state.mp_name[prof], *state.pl_place[pl])
                label = state.type_names[state.type_id[r0 + p]] if labelled else None
                row.append(Pick(ids[r0 + p], m, c, index[r0 + p], inst, word, label))
            out.append(row)
        return out

    def _choose(self, pod: Pod, shape: _Shape, tie_draw: float | None) -> int:
        """kube-scheduler's sampling and HAMi's choice: the node, or -1."""
        core = self._core
        if shape.filter_error is not None:
            core.attempt(shape.spec, self.next_start, self._wanted, False, False, True)
            self.next_start = core.next_start
            raise ValueError(filter_error(shape.filter_error, pod.name))
        random_ties = self._random_ties and tie_draw is not None
        if shape.spec.user_rank:
            best = core.rank_attempt(shape.spec, self.next_start, self._wanted, self.ranker,
                                     tie_draw if random_ties else -1.0)
        else:
            best = core.attempt(shape.spec, self.next_start, self._wanted, shape.wants_gpu,
                                shape.node_spread, False, random_ties)
        self.next_start = core.next_start
        if best < 0:
            return -1
        if random_ties:
            tied = core.np_tied[:core.n_tied].tolist()
            best = tied[min(int(tie_draw * len(tied)), len(tied) - 1)]
        return int(core.np_window[best])

    def _failure_snapshot(self, wants_gpu: bool) -> tuple:
        """Copies of the kernel's failure buffers (the next attempt reuses them)."""
        core = self._core
        rej = (core.np_rej_node[:core.n_rejected].copy(),
               core.np_rej_bits[:core.n_rejected].copy())
        if not wants_gpu:
            return rej, None
        nw = core.n_window
        return rej, (core.np_window[:nw].copy(), core.np_status[:nw].copy(),
                     core.np_counts[:nw].copy(), core.np_ncards[:nw].copy())

    def _reason(self, row: np.ndarray, n_cards: int) -> str:
        key = (row.tobytes(), n_cards)
        reason = self._reason_cache.get(key)
        if reason is None:
            counts = {name: int(n) for name, n in zip(REASONS, row.tolist()) if n}
            reason = self._reason_cache[key] = fit_reason(counts, n_cards)
        return reason

    def reason_text(self, kind: int, value) -> str | None:
        """One entry's reason in :meth:`_histogram`, for the compiled failure
        text (:class:`hamisim._failtext.FailText`): ``kind`` 0 a gate code, 1 a
        window status code, 2 ``(n_cards, counts)`` of a Fit failure, 3 the
        CPU (1) / memory (2) bit of kube-scheduler's NodeResourcesFit.
        ``None`` for a status :meth:`_histogram` does not report."""
        if kind == 0:
            return self.filters.reasons[value]
        if kind == 1:
            return _STATUS_REASON.get(value)
        if kind == 2:
            n_cards, counts = value
            return self._reason(np.array(counts, dtype=np.int32), n_cards)
        return _CPU_MEM[value][0]

    def _histogram(self, wants_gpu: bool) -> dict[str, int]:
        """Reason string -> number of nodes for the failed attempt just made,
        from the kernel's buffers (grouped in the kernel, no per-node Python)."""
        core = self._core
        bits = core.np_rej_bits[:core.n_rejected]
        hist: dict[str, int] = {}
        gated = bits >> 2
        if gated.any():
            codes, counts = np.unique(gated[gated > 0], return_counts=True)
            reasons = self.filters.reasons
            for code, n in zip(codes.tolist(), counts.tolist()):
                hist[reasons[code]] = n
        n_cpu, n_mem = int(np.count_nonzero(bits & 1)), int(np.count_nonzero(bits & 2))
        if n_cpu:
            hist[INSUFFICIENT_CPU] = n_cpu
        if n_mem:
            hist[INSUFFICIENT_MEMORY] = n_mem
        if not wants_gpu:
            return hist
        by_status, groups = core.failure_groups()
        for st, reason in _STATUS_REASON.items():
            if by_status[st]:
                hist[reason] = hist.get(reason, 0) + by_status[st]
        for j, n in groups:
            reason = self._reason(core.np_counts[j], int(core.np_ncards[j]))
            hist[reason] = hist.get(reason, 0) + n
        return hist

    def _node_reasons(self, snap: tuple) -> dict[str, list[str]]:
        """Every examined and rejected node's reasons, in the reference's order."""
        names = self.state.node_names
        (rej_node, rej_bits), window = snap
        reasons = self.filters.reasons
        out = {names[i]: [reasons[b >> 2]] if b >> 2 else list(_CPU_MEM[b])
               for i, b in zip(rej_node.tolist(), rej_bits.tolist())}
        if window is None:
            return out
        nodes, status, counts, ncards = window
        for j, (i, st) in enumerate(zip(nodes.tolist(), status.tolist())):
            if st == _ST_FIT:
                continue
            if st == _ST_FAILED:
                out[names[i]] = [self._reason(counts[j], int(ncards[j]))]
            else:
                out[names[i]] = [_STATUS_REASON[st]]
        return out
