"""The research policies as a scheduler backend (not HAMi behaviour).

:class:`ResearchScheduler` places one pod at a time under one of the FGD
paper's node policies on the Open-Gpu-Share model, with the compiled
``ResearchCore`` or its plain-Python twin
(:class:`hamisim.research.reference.ResearchReferenceCore`); both decide
identically and consume the seeded generator identically. It offers the same
methods as HAMi's schedulers (``schedule``, ``delete``, ``adopt``,
``usage_by_card``), so the engine does not know which one it drives.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hamisim.cluster import Cluster
from hamisim.devices import nvidia_flags
from hamisim.errors import HamisimError
from hamisim.hami.decision import Decision, Pick, histogram_message, pads_empty_segments
from hamisim.hami.reference import NOUSE_TYPE, USE_TYPE, collapsed_usage, type_allowed
from hamisim.kube.queue import REJ_FIT
from hamisim.kube.sampling import num_feasible_nodes_to_find
from hamisim.pods import Pod
from hamisim.research.model import (
    MAX_SPEC_CPU,
    MILLI,
    P_FGD,
    P_RANDOM,
    POLICY_CODES,
    RB_CPU,
    RB_GPU,
    RB_MEM,
    RB_MODEL,
    RESEARCH_POLICIES,
    ResearchRequest,
    bits_histogram,
    pod_class,
    reasons_of,
    research_request,
    shape_arrays,
)
from hamisim.research.policies import BUILTIN, ModelPolicy
from hamisim.research.reference import ResearchReferenceCore
from hamisim.shapes import Shape

__all__ = ["ResearchScheduler"]


@dataclass
class _Bound:
    node: int
    pos: tuple[int, ...]        # node-local card positions
    milli: tuple[int, ...]      # per position
    cpu_milli: int
    memory_mib: int
    cls: int
    containers: list[list[Pick]]
    n_init: int


class ResearchScheduler:
    """One of the FGD paper's node policies on a cluster, one attempt at a time.

    ``backend="kernel"`` runs :class:`hamisim._research.ResearchCore`,
    ``"reference"`` its plain-Python twin; both decide identically and consume
    the seeded generator identically.
    """

    def __init__(self, cluster: Cluster, policy: str | ModelPolicy, shapes: Sequence[Shape] = (),
                 seed: int = 0, backend: str = "kernel") -> None:
        if backend not in ("kernel", "reference"):
            raise HamisimError(f"unknown backend {backend!r} (expected kernel or reference)")
        if isinstance(policy, ModelPolicy):
            # a user's policy object: the readable core runs it through the interface
            if backend != "reference":
                raise HamisimError(f"the Python node policy {policy!r} runs on the readable "
                                   "backend: add --backend reference")
            self.model_policy, name, self.code = policy, repr(policy), -1
        else:
            name = policy.strip().lower()
            if name not in POLICY_CODES:
                raise HamisimError(f"unknown research policy {policy!r} (expected one of "
                                   f"{', '.join(RESEARCH_POLICIES)})")
            self.model_policy, self.code = BUILTIN[name], POLICY_CODES[name]
        self.cluster = cluster
        self.config = cluster.scheduler
        self.policy = name
        self.backend = backend
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.tie_random = cluster.scheduler.node_tie_break == "random"
        nodes = cluster.nodes
        self.node_names = [n.name for n in nodes]
        self.n_nodes = len(nodes)
        cards = [c for n in nodes for c in n.cards]
        self.card_ids = [c.id for c in cards]
        self.card_index = [c.index for c in cards]
        self.card_devmem = [c.devmem for c in cards]
        sizes = [len(n.cards) for n in nodes]
        self.node_start = np.zeros(self.n_nodes + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.node_start[1:])
        self.max_cards = max(sizes, default=0)
        self.type_names = list(dict.fromkeys(c.type for c in cards))
        tid = {t: i for i, t in enumerate(self.type_names)}
        card_type = np.array([tid[c.type] for c in cards], dtype=np.int32)
        usable = np.array([c.health and c.id not in n.cordon for n in nodes for c in n.cards],
                          dtype=bool) & np.array(nvidia_flags(cards), dtype=bool)
        usable = usable.astype(np.uint8)
        cpu_cap = np.array([MAX_SPEC_CPU if n.cpu_milli is None else n.cpu_milli
                            for n in nodes], dtype=np.int64)
        mem_cap = np.array([-1 if n.memory_mib is None else n.memory_mib for n in nodes],
                           dtype=np.int64)
        self.shapes = list(shapes)
        sh = shape_arrays(self.shapes, self.type_names)
        args = (self.node_start, card_type, usable, cpu_cap, mem_cap,
                max(len(self.type_names), 1), sh["sh_cpu"], sh["sh_milli"], sh["sh_k"],
                sh["sh_w"], sh["sh_type_ok"])
        if backend == "kernel":
            from hamisim import _research
            codes = _research.RESEARCH_CODES
            assert all(codes[p] == c for p, c in POLICY_CODES.items()) and (
                codes["RB_CPU"], codes["RB_MEM"], codes["RB_MODEL"], codes["RB_GPU"]) == (
                RB_CPU, RB_MEM, RB_MODEL, RB_GPU), "hamisim._research codes out of date"
            self.core = _research.ResearchCore(*args)
        else:
            self.core = ResearchReferenceCore(*args)
            self.core.node_names, self.core.type_names = self.node_names, self.type_names
        self.next_start = 0
        self._wanted = num_feasible_nodes_to_find(self.config.percentage_of_nodes_to_score,
                                                  self.n_nodes)
        self._pods: dict[str, _Bound] = {}
        self._specs: dict[tuple, int] = {}
        self._type_ok: dict[tuple, np.ndarray] = {}
        self._pad_empty = [pads_empty_segments(c.type for c in n.cards) for n in nodes]
        self._row_of = {cid: r for r, cid in enumerate(self.card_ids)}

    # -- helpers -------------------------------------------------------------
    def type_filter(self, use: str | None, nouse: str | None) -> np.ndarray:
        """uint8 per type id: whether the pod's type filter allows it."""
        key = (use, nouse)
        tok = self._type_ok.get(key)
        if tok is None:
            ann = {k: v for k, v in ((USE_TYPE, use), (NOUSE_TYPE, nouse)) if v is not None}
            tok = np.array([1 if type_allowed(ann, t) else 0 for t in self.type_names] or [1],
                           dtype=np.uint8)
            self._type_ok[key] = tok
        return tok

    def _spec_id(self, req: ResearchRequest, tok: np.ndarray) -> int:
        key = (req.score_cpu, req.milli, req.k, tok.tobytes())
        sid = self._specs.get(key)
        if sid is None:
            sid = self._specs[key] = len(self._specs)
            if sid >= self.core.spec_cap:
                self.core.grow_specs(max(2 * self.core.spec_cap, sid + 1))
        return sid

    # -- state ---------------------------------------------------------------
    def delete(self, name: str) -> None:
        """Drop a pod (deleted, Succeeded or Failed): its cards, CPU and memory
        are free again."""
        b = self._pods.pop(name, None)
        if b is None:
            return
        self._apply(b, -1)

    def _apply(self, b: _Bound, sign: int) -> None:
        core = self.core
        if len(set(b.milli)) <= 1:
            core.bind(b.node, b.pos, b.milli[0] if b.milli else 0, b.cpu_milli, b.memory_mib,
                      b.cls, sign)
            return
        for p, m in zip(b.pos, b.milli):
            core.bind(b.node, (p,), m, 0, 0, -1, sign)
        core.bind(b.node, (), 0, b.cpu_milli, b.memory_mib, b.cls, sign)

    def adopt(self, name: str, node_index: int, containers: list[list[Pick]],
              n_init: int = 0, cpu_milli: int = 0, memory_mib: int = 0,
              namespace: str = "default", app_only: bool = False) -> None:
        """Record a placement made elsewhere (an initial state). Each card's
        milli is read back from the pick: ``usedcores * 10``, else its memory
        share of the card. ``namespace`` is not read: research policies model
        no ResourceQuota (:func:`hamisim.sim.backend.make_scheduler` refuses
        a cluster with quotas for them). ``app_only`` (the app entries kept
        after the init containers) changes nothing: milli come from the picks."""
        self.delete(name)
        b = self.bound_of(node_index, containers, n_init, cpu_milli, memory_mib)
        self._apply(b, 1)
        self._pods[name] = b

    def bound_of(self, node_index: int, containers: list[list[Pick]], n_init: int = 0,
                 cpu_milli: int = 0, memory_mib: int = 0) -> _Bound:
        """What :meth:`adopt` records for a placement made elsewhere (its node,
        card positions, milli per card, CPU, memory and class), applying nothing."""
        a = int(self.node_start[node_index])
        pos, milli = [], []
        for picks in containers[n_init:]:
            for p in picks:
                r = self._row_of[p.uuid]
                pos.append(r - a)
                if p.usedcores > 0:
                    m = min(p.usedcores, 100) * 10
                elif self.card_devmem[r] > 0:
                    m = min(p.usedmem * MILLI // self.card_devmem[r], MILLI)
                else:
                    m = MILLI
                milli.append(m)
        cls = pod_class(len(pos), max(milli, default=0), self.max_cards)
        return _Bound(node_index, tuple(pos), tuple(milli), cpu_milli, memory_mib, cls,
                      containers, n_init)

    def usage_by_card(self) -> dict[str, tuple[int, int, int]]:
        """``{card id: (tenants, usedmem, usedcores)}`` in HAMi's terms."""
        out = {cid: (0, 0, 0) for cid in self.card_ids}
        for b in self._pods.values():
            for uuid, (u, m, c) in collapsed_usage(b.containers, b.n_init).items():
                t = out[uuid]
                out[uuid] = (t[0] + u, t[1] + m, t[2] + c)
        return out

    def free_milli(self) -> dict[str, int]:
        """``{card id: free milli}`` on the research model."""
        left = self.core.np_left if hasattr(self.core, "np_left") else self.core.left
        return dict(zip(self.card_ids, [int(x) for x in left]))

    # -- one attempt ---------------------------------------------------------
    def schedule(self, pod: Pod, tie_draw: float | None = None) -> Decision:
        """One attempt of ``pod`` under the research policy; a bound pod holds
        its cards, CPU and memory until :meth:`delete`. ``tie_draw`` is
        ignored (the scheduler's own seeded generator breaks ties)."""
        self.delete(pod.name)
        req = research_request(pod, self.config)
        tok = self.type_filter(req.use_gputype, req.nouse_gputype)
        code, core = self.code, self.core
        spec = self._spec_id(req, tok) if code == P_FGD else -1
        policy = code if self.backend == "kernel" else self.model_policy
        cls = pod_class(req.k, req.milli, self.max_cards)
        try:
            n_tied = core.attempt(policy, req.cpu_milli, req.score_cpu, req.memory_mib, req.k,
                                  req.milli, tok, spec, cls, req.no_requests, self.next_start,
                                  self._wanted)
        except Exception as exc:
            if self.code >= 0:
                raise
            # a user's policy failed: say which and on which pod, not where in hamisim
            raise HamisimError(f"node policy {self.policy} failed scoring pod {pod.name}: "
                               f"{type(exc).__name__}: {exc}") from None
        self.next_start = core.next_start
        if n_tied == 0:
            nodes = np.array(core.np_rej_node[:core.n_rejected], dtype=np.int64)
            bits = np.array(core.np_rej_bits[:core.n_rejected], dtype=np.int64)
            # a resource filter's verdict: the queue moves the pod when a
            # running pod leaves, as it does for NodeResourcesFit's
            return Decision(pod.name, message=histogram_message(self.n_nodes,
                                                                bits_histogram(bits)),
                            reasons_factory=lambda: self._node_reasons(nodes, bits),
                            rejectors=REJ_FIT)
        if n_tied > 1 and (self.tie_random or self.model_policy.random_ties):
            j = int(self.rng.integers(n_tied))
        else:
            j = n_tied - 1      # hamisim's node_tie_break "last"
        node = int(core.np_tied[j])
        if self.backend == "kernel":
            draw = 0
            if code == P_RANDOM and req.k == 1 and req.milli < MILLI:
                n_fit = core.count_fit(node, req.milli, tok)
                draw = int(self.rng.integers(n_fit)) if n_fit > 1 else 0
            got = core.choose(code, node, req.k, req.milli, tok, draw)
        else:
            try:
                got = core.choose(self.model_policy, node, req.k, req.milli, tok, self._draw)
            except Exception as exc:
                if self.code >= 0:
                    raise
                raise HamisimError(f"node policy {self.policy} failed choosing cards for pod "
                                   f"{pod.name}: {type(exc).__name__}: {exc}") from None
        if got != req.k:
            if self.code >= 0:   # pragma: no cover - the filter guarantees the cards
                raise AssertionError("research kernel: chosen node no longer fits")
            raise HamisimError(
                f"node policy {self.policy}: cards() placed pod {pod.name} on positions that "
                f"are not {req.k} distinct fitting cards of node {self.node_names[node]}")
        pos = tuple(core.np_pick[:got].tolist())
        containers = self._containers(node, pos, req)
        b = _Bound(node, pos, (req.milli,) * got, req.cpu_milli, req.memory_mib, cls,
                   containers, len(pod.init_containers))
        self._apply(b, 1)
        self._pods[pod.name] = b
        return Decision(pod.name, self.node_names[node], containers, node_index=node,
                        pad_empty=self._pad_empty[node] if got else True)

    def _draw(self, n: int) -> int:
        """A seeded uniform draw in ``range(n)``; none for ``n <= 1``."""
        return int(self.rng.integers(n)) if n > 1 else 0

    def _containers(self, node: int, pos: tuple[int, ...], req: ResearchRequest
                    ) -> list[list[Pick]]:
        a = int(self.node_start[node])
        out: list[list[Pick]] = []
        it = iter(pos)
        milli = req.milli
        for n in req.container_cards:
            picks = []
            for _ in range(n):
                r = a + next(it)
                picks.append(Pick(self.card_ids[r], self.card_devmem[r] * milli // MILLI,
                                  milli // 10, self.card_index[r]))
            out.append(picks)
        return out

    def _node_reasons(self, nodes: np.ndarray, bits: np.ndarray) -> dict[str, list[str]]:
        """Every examined and rejected node's reasons, in visiting order."""
        names = self.node_names
        return {names[i]: reasons_of(b) for i, b in zip(nodes.tolist(), bits.tolist())}
