"""The research policies' executable specification: the kernel's twin in plain Python.

:class:`ResearchReferenceCore` has the methods and results of the compiled
:class:`hamisim._research.ResearchCore` (``_research.pyx``) with no caches: the
Open-Gpu-Share state and filter, and every attempt scored and placed through
the policy interface of :mod:`hamisim.research.policies` (the six research
policies are its subclasses; a user's own policy runs the same way).
``backend="reference"`` runs it.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from hamisim.research.model import MILLI, RB_CPU, RB_GPU, RB_MEM, RB_MODEL, RESEARCH_POLICIES
from hamisim.research.policies import BUILTIN, ModelNode, ModelPod, ModelPolicy

__all__ = ["ResearchReferenceCore"]


class ResearchReferenceCore:
    """Plain-Python twin of :class:`hamisim._research.ResearchCore` (its state,
    filter, ``attempt`` and ``choose``, same results, no caches): the readable
    statement of every rule. ``attempt`` and ``choose`` take a policy code or a
    :class:`ModelPolicy`; ``choose`` takes the draw as a callable ``draw(n)``
    where the compiled core takes the one draw."""

    def __init__(self, node_start, card_type, card_usable, cpu_cap, mem_cap, n_types,
                 sh_cpu, sh_milli, sh_k, sh_w, sh_type_ok, spec_cap: int = 16) -> None:
        self.node_start = [int(x) for x in node_start]
        self.n_nodes = len(self.node_start) - 1
        self.card_type = [int(x) for x in card_type]
        self.usable = [bool(x) for x in card_usable]
        self.cpu_cap = [int(x) for x in cpu_cap]
        self.mem_cap = [int(x) for x in mem_cap]
        self.n_types = max(int(n_types), 1)
        self.shapes = [(int(c), int(m), int(kk), float(ww), [bool(x) for x in row])
                       for c, m, kk, ww, row in zip(sh_cpu, sh_milli, sh_k, sh_w,
                                                    np.asarray(sh_type_ok).reshape(
                                                        len(sh_cpu), self.n_types))]
        sizes = [self.node_start[i + 1] - self.node_start[i] for i in range(self.n_nodes)]
        self.max_cards = max(sizes, default=0)
        self.left = [MILLI if u else 0 for u in self.usable]
        self.cpu_req = [0] * self.n_nodes
        self.mem_req = [0] * self.n_nodes
        self.classes = [Counter() for _ in range(self.n_nodes)]
        w = max(self.n_nodes, 1)
        self.np_tied = np.zeros(w, dtype=np.int64)
        self.np_rej_node = np.zeros(w, dtype=np.int64)
        self.np_rej_bits = np.zeros(w, dtype=np.int32)
        self.np_pick = np.zeros(max(self.max_cards, 1), dtype=np.int32)
        self.n_tied = self.n_rejected = self.n_feasible = self.next_start = self.n_pick = 0
        self.best_score = 0
        self.spec_cap = 1 << 62
        #: names the policies' views give (the scheduler sets the real ones)
        self.node_names = [str(i) for i in range(self.n_nodes)]
        self.type_names = [str(t) for t in range(self.n_types)]
        self.last_pod: ModelPod | None = None

    def grow_specs(self, cap: int) -> None:
        """No cache here."""

    # -- state -------------------------------------------------------------
    def cards(self, i: int) -> range:
        return range(self.node_start[i], self.node_start[i + 1])

    def bind(self, node, pos, milli, cpu, mem, cls, sign=1) -> None:
        a = self.node_start[node]
        for p in pos:
            if self.usable[a + p]:
                self.left[a + p] -= sign * milli
        self.cpu_req[node] += sign * cpu
        self.mem_req[node] += sign * mem
        if cls >= 0:
            self.classes[node][cls] += sign

    def free_cpu(self, i: int) -> int:
        return self.cpu_cap[i] - self.cpu_req[i]

    # -- filter ------------------------------------------------------------
    def fit_bits(self, i, cpu, mem, k, milli, tok) -> int:
        bits = 0
        if cpu > self.free_cpu(i):
            bits |= RB_CPU
        if self.mem_cap[i] >= 0 and mem > self.mem_cap[i] - self.mem_req[i]:
            bits |= RB_MEM
        if bits or k <= 0:
            return bits
        cards = self.cards(i)
        if not cards:
            return RB_GPU
        allowed = [r for r in cards if tok[self.card_type[r]]]
        if not allowed:
            return RB_MODEL
        if sum(self.left[r] >= milli for r in allowed) < k:
            return RB_GPU
        return 0

    # -- one attempt ---------------------------------------------------------
    def attempt(self, policy, cpu, cpu_s, mem, k, milli, type_ok, spec, cls, no_req, start,
                wanted) -> int:
        """Filter from ``start`` until ``wanted`` nodes fit, score them with
        ``policy`` (a code or a :class:`ModelPolicy`), keep the top-scored in
        ``np_tied``; returns how many tie. ``spec`` is the compiled core's cache
        key, unused here."""
        tok = [bool(x) for x in type_ok]
        n = self.n_nodes
        self.n_tied = self.n_rejected = self.n_feasible = 0
        self.best_score = 0
        self.last_pod = ModelPod(int(cpu), int(cpu_s), int(mem), int(k), int(milli), int(cls),
                                 bool(no_req))
        if n == 0:
            self.next_start = 0
            return 0
        start = start if 0 <= start < n else 0
        wanted = wanted if wanted > 0 else n
        feasible, rejected, examined = [], [], 0
        for step in range(n):
            i = (start + step) % n
            examined += 1
            bits = self.fit_bits(i, cpu, mem, k, milli, tok)
            if bits:
                rejected.append((i, bits))
            else:
                feasible.append(i)
                if len(feasible) >= wanted:
                    break
        self.next_start = (start + examined) % n
        self.n_rejected = len(rejected)
        for j, (i, bits) in enumerate(rejected):
            self.np_rej_node[j], self.np_rej_bits[j] = i, bits
        self.n_feasible = len(feasible)
        if not feasible:
            return 0
        feasible.sort()
        pol, pod = self.policy_of(policy), self.last_pod
        scores = [pol.score(ModelNode(self, i, tok), pod) for i in feasible]
        for i, s in zip(feasible, scores):
            if s != s:          # NaN: neither above nor below any score
                raise ValueError(f"{pol!r} scored node {self.node_names[i]} NaN")
        self.best_score = max(scores)
        tied = [i for i, s in zip(feasible, scores) if s == self.best_score]
        self.n_tied = len(tied)
        self.np_tied[:len(tied)] = tied
        return self.n_tied

    def choose(self, policy, node, k, milli, type_ok, draw) -> int:
        """Cards for the last attempted pod on ``node``, by the policy's card
        choice; ``draw(n)`` is the scheduler's seeded draw in ``range(n)``."""
        tok = [bool(x) for x in type_ok]
        self.n_pick = 0
        if k <= 0:
            return 0
        pod = self.last_pod
        assert pod is not None and (pod.k, pod.milli) == (k, milli), "choose without attempt"
        view = ModelNode(self, node, tok)
        chosen = list(self.policy_of(policy).cards(view, pod, draw))
        fitting = set(view.fitting(milli))
        if len(chosen) != k or len(set(chosen)) != k or not fitting.issuperset(chosen):
            return -1
        self.np_pick[:k] = chosen
        self.n_pick = k
        return k

    @staticmethod
    def policy_of(policy) -> ModelPolicy:
        """A policy code (the compiled core's argument) or a policy object."""
        return policy if isinstance(policy, ModelPolicy) else _BY_CODE[int(policy)]


_BY_CODE = dict(enumerate(BUILTIN[name] for name in RESEARCH_POLICIES))
