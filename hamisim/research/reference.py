"""The research policies' executable specification: the kernel's twin in plain Python.

:class:`ResearchReferenceCore` has the methods and results of the compiled
:class:`hamisim._core.ResearchCore` (``_research.pxi``) with no caches: the
readable statement of every score and card choice documented in
:mod:`hamisim.research`. ``backend="reference"`` runs it.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from hamisim.research.model import (
    MAX_SPEC_CPU,
    MAX_SPEC_GPU,
    MILLI,
    P_BESTFIT,
    P_CLUSTERING,
    P_DOTPROD,
    P_FGD,
    P_PACKING,
    P_RANDOM,
    RB_CPU,
    RB_GPU,
    RB_MEM,
    RB_MODEL,
    SCORE_NONE,
)

__all__ = ["ResearchReferenceCore"]


class ResearchReferenceCore:
    """Plain-Python twin of :class:`hamisim._core.ResearchCore` (same methods,
    same results, no caches): the readable statement of every rule."""

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
        self.np_node_gpu = np.full(w, -1, dtype=np.int32)
        self.n_tied = self.n_rejected = self.n_feasible = self.next_start = self.n_pick = 0
        self.best_score = 0
        self.spec_cap = 1 << 62

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

    def gpu_left(self, i: int) -> int:
        return sum(self.left[r] for r in self.cards(i))

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

    def tightest(self, i, k, milli, tok) -> list[int]:
        """Node-local positions of the k fitting cards with the least free
        milli (stable ascending order); fewer if there are not k."""
        a = self.node_start[i]
        fitting = [r for r in self.cards(i) if tok[self.card_type[r]] and self.left[r] >= milli]
        fitting.sort(key=lambda r: self.left[r])      # stable: ties keep index order
        return [r - a for r in fitting[:k]]

    # -- scores --------------------------------------------------------------
    def score_dotprod(self, i, cpu_s, k, milli) -> int:
        if self.free_cpu(i) < cpu_s:
            return 0
        node = (self.free_cpu(i) / MAX_SPEC_CPU, self.gpu_left(i) / MAX_SPEC_GPU)
        pod = (cpu_s / MAX_SPEC_CPU, (milli * k) / MAX_SPEC_GPU)
        dot = 0.0
        dot = dot + node[0] * pod[0]
        dot = dot + node[1] * pod[1]
        return int(100.0 * (1.0 - dot / 2.0))

    def score_clustering(self, i, cls) -> int:
        if cls < 0:
            return 0
        base = _trunc_div(25 * (MAX_SPEC_GPU - self.gpu_left(i)), MAX_SPEC_GPU)
        present = sum(1 for n in self.classes[i].values() if n > 0)
        if self.classes[i][cls] > 0:
            band = 75 if present == 1 else 50
        else:
            band = 25 if present == 0 else 0
        return base + band

    def score_packing(self, i, k, milli, tok) -> int:
        if milli <= 0 or k <= 0:
            return 0
        cards = self.cards(i)
        g = len(cards)
        if sum(self.left[r] == MILLI for r in cards) == g:
            return max(33 - g, g)
        a = self.node_start[i]
        chosen = self.tightest(i, k, milli, tok)
        if len(chosen) < k:
            return 0
        fully_free = sum(self.left[a + p] == MILLI for p in chosen)
        if fully_free:
            return max(50 - fully_free, 33)
        pct = sum(self.left[a + p] * 100 // MILLI for p in chosen)
        return max(100 - pct // 10, 50)

    def score_bestfit(self, i, cpu_s, k, milli) -> int:
        free = (float(self.free_cpu(i)), float(self.gpu_left(i)))
        req = (float(cpu_s), float(milli * k))
        if free[0] < req[0] or free[1] < req[1]:
            return SCORE_NONE
        s = 0.0
        s = s + (free[0] - req[0]) / MAX_SPEC_CPU * 0.5
        s = s + (free[1] - req[1]) / MAX_SPEC_GPU * 0.5
        return int((1.0 - s) * 100.0)

    def fragmentation(self, i, left: dict[int, int], cpu_left: int) -> float:
        """F_n for node i with card free milli ``left`` (row -> milli)."""
        total = sum(left.values())
        F = 0.0
        for cpu_m, milli_m, k_m, w_m, tok_m in self.shapes:
            if milli_m <= 0:
                frag = total
            else:
                hosts = [r for r in left if tok_m[self.card_type[r]] and left[r] >= milli_m]
                if len(hosts) >= k_m and cpu_left >= cpu_m:
                    frag = sum(v for r, v in left.items() if r not in hosts)
                else:
                    frag = total
            F = F + w_m * float(frag)
        return F

    def score_fgd(self, i, cpu_s, k, milli, tok) -> tuple[int, int]:
        """(score, card) -- card = the share pod's node-local position, else -1."""
        now = {r: self.left[r] for r in self.cards(i)}
        F = self.fragmentation(i, now, self.free_cpu(i))
        a = self.node_start[i]
        if k == 1 and milli < MILLI:
            best, best_s = -1, 0
            for r in self.cards(i):
                if tok[self.card_type[r]] and self.left[r] >= milli:
                    after = dict(now)
                    after[r] -= milli
                    s = _fgd_score(F, self.fragmentation(i, after, self.free_cpu(i) - cpu_s))
                    if best < 0 or s > best_s:
                        best, best_s = r - a, s
            return best_s, best
        if self.free_cpu(i) < cpu_s:
            return _fgd_score(F, F), -1
        after = dict(now)
        for p in (self.tightest(i, k, milli, tok) if k > 0 else []):
            after[a + p] -= milli
        return _fgd_score(F, self.fragmentation(i, after, self.free_cpu(i) - cpu_s)), -1

    # -- one attempt ---------------------------------------------------------
    def attempt(self, policy, cpu, cpu_s, mem, k, milli, type_ok, spec, cls, no_req, start,
                wanted) -> int:
        tok = [bool(x) for x in type_ok]
        n = self.n_nodes
        self.n_tied = self.n_rejected = self.n_feasible = 0
        self.best_score = 0
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
        scores = []
        for i in feasible:
            self.np_node_gpu[i] = -1
            if policy == P_RANDOM:
                s = 0
            elif policy == P_DOTPROD:
                s = self.score_dotprod(i, cpu_s, k, milli)
            elif policy == P_CLUSTERING:
                s = self.score_clustering(i, cls) if k > 0 else 0
            elif policy == P_PACKING:
                s = self.score_packing(i, k, milli, tok)
            elif policy == P_BESTFIT:
                s = self.score_bestfit(i, cpu_s, k, milli)
            elif no_req:
                s = 100
            else:
                s, self.np_node_gpu[i] = self.score_fgd(i, cpu_s, k, milli, tok)
            scores.append(s)
        self.best_score = max(scores)
        tied = [i for i, s in zip(feasible, scores) if s == self.best_score]
        self.n_tied = len(tied)
        self.np_tied[:len(tied)] = tied
        return self.n_tied

    def count_fit(self, node, milli, type_ok) -> int:
        return sum(1 for r in self.cards(node)
                   if type_ok[self.card_type[r]] and self.left[r] >= milli)

    def choose(self, policy, node, k, milli, type_ok, draw=0) -> int:
        tok = [bool(x) for x in type_ok]
        self.n_pick = 0
        if k <= 0:
            return 0
        a = self.node_start[node]
        if k == 1 and milli < MILLI and policy == P_FGD:
            chosen = [int(self.np_node_gpu[node])] if self.np_node_gpu[node] >= 0 else []
        elif k == 1 and milli < MILLI and policy == P_RANDOM:
            fitting = [r - a for r in self.cards(node)
                       if tok[self.card_type[r]] and self.left[r] >= milli]
            chosen = fitting[draw:draw + 1]
        else:
            chosen = self.tightest(node, k, milli, tok)
        if len(chosen) < k:
            return -1
        self.np_pick[:k] = chosen
        self.n_pick = k
        return k


def _trunc_div(a: int, b: int) -> int:
    """Integer division truncating toward zero (Go's and C's ``/``)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _fgd_score(f_before: float, f_after: float) -> int:
    x = (f_before - f_after) / 1000.0
    return int(1.0 / (1.0 + math.exp(-x)) * 100.0)
