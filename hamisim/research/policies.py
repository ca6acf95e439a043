"""Node policies on the Open-Gpu-Share model: the interface and the FGD paper's six.

A :class:`ModelPolicy` scores the nodes that fit a pod on the paper's resource
model (:mod:`hamisim.research`: 1000 milli per card, free CPU and memory) and
chooses the pod's cards on the node it wins. The six research policies
(``random``, ``dotprod``, ``gpuclustering``, ``gpupacking``, ``bestfit``,
``fgd``) are the subclasses below; the readable backend
(:class:`hamisim.research.reference.ResearchReferenceCore`) runs every policy
through this interface, so the built-in six and a user's own one are driven by
the same code, and ``tests/test_research_policies.py`` holds the six against
their compiled twins in ``_research.pyx``.

A user's policy is a subclass (or an instance of one) in a file of their own,
named ``python:PATH.py:NAME`` as the node policy (``--node-policy`` or the
cluster file's ``node_scheduler_policy``); it runs on the readable backend
(``--backend reference``). Subclass one of the six to change one thing, e.g.
``class Mine(BestFit)`` overriding :meth:`ModelPolicy.score`. Not HAMi
behaviour: HAMi's own Filter, Fit and card policies play no part.

What the scheduler does around a policy (not overridable): the model's filter
(CPU, memory, k fitting cards of an allowed type), kube-scheduler's node
sampling, and the choice among the top-scored nodes: the last one in cluster
order, or a seeded draw when the cluster's ``node_tie_break`` is ``random`` or
the policy sets ``random_ties``. Scores are compared with ``==`` and ``>``
(ints or floats; an ``int`` keeps the paper's rounding).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from hamisim.research.model import MAX_SPEC_CPU, MAX_SPEC_GPU, MILLI, SCORE_NONE

__all__ = ["ModelNode", "ModelPod", "ModelPolicy", "RandomPolicy", "DotProduct",
           "GpuClustering", "GpuPacking", "BestFit", "FGD", "BUILTIN", "fgd_score"]


@dataclass(frozen=True)
class ModelPod:
    """A pod on the Open-Gpu-Share model, as a policy sees it."""

    cpu_milli: int      # the request, as the filter reads it
    score_cpu: int      # kube-scheduler's non-zero request (100 milli when none): scores use it
    memory_mib: int
    k: int              # cards
    milli: int          # per card; 0 for a CPU-only pod
    cls: int            # GpuClustering's class (:func:`hamisim.research.model.pod_class`)
    no_requests: bool   # asks for no CPU, memory or card

    @property
    def share(self) -> bool:
        """One card, part of it."""
        return self.k == 1 and self.milli < MILLI


class ModelNode:
    """One node that passed the model's filter, before the pod, as a policy
    sees it. Positions are node-local card indices (0 .. ``len(cards) - 1``);
    read it, do not change it."""

    __slots__ = ("index", "_core", "_tok", "_a", "_b")

    def __init__(self, core, index: int, type_ok: Sequence[bool]) -> None:
        self.index = index
        self._core = core
        self._tok = type_ok
        self._a, self._b = core.node_start[index], core.node_start[index + 1]

    @property
    def name(self) -> str:
        return self._core.node_names[self.index]

    @property
    def cards(self) -> list[int]:
        """Free milli of each card (0 for a card the model cannot use)."""
        return self._core.left[self._a:self._b]

    @property
    def card_types(self) -> list[str]:
        names = self._core.type_names
        return [names[t] for t in self._core.card_type[self._a:self._b]]

    @property
    def allowed(self) -> list[bool]:
        """Whether the pod's card-type filter allows each card."""
        tok = self._tok
        return [bool(tok[t]) for t in self._core.card_type[self._a:self._b]]

    @property
    def free_cpu(self) -> int:
        return self._core.free_cpu(self.index)

    @property
    def free_memory(self) -> int | None:
        """Free memory in MiB; ``None`` when the node declares none (no limit)."""
        cap = self._core.mem_cap[self.index]
        return None if cap < 0 else cap - self._core.mem_req[self.index]

    @property
    def gpu_left(self) -> int:
        """Free milli over all cards."""
        return sum(self.cards)

    @property
    def classes(self) -> dict[int, int]:
        """GpuClustering class -> pods of it on the node (classes with pods only)."""
        return {c: n for c, n in self._core.classes[self.index].items() if n > 0}

    def fitting(self, milli: int) -> list[int]:
        """Positions of the allowed cards with at least ``milli`` free, in order."""
        return [p for p, (free, ok) in enumerate(zip(self.cards, self.allowed))
                if ok and free >= milli]

    def tightest(self, k: int, milli: int) -> list[int]:
        """The ``k`` fitting cards with the least free milli, ties to the lower
        position (the authors' "best" card choice); fewer if there are not k."""
        left = self.cards
        return sorted(self.fitting(milli), key=lambda p: left[p])[:k]

    def fragmentation(self, cards: Sequence[int] | None = None,
                      free_cpu: int | None = None) -> float:
        """FGD's node fragmentation F_n over the typical shapes (FGD-OPENB.md
        §4.1) with the given free milli per card and free CPU (default: now)."""
        left = self.cards if cards is None else list(cards)
        cpu_left = self.free_cpu if free_cpu is None else free_cpu
        types = self._core.card_type[self._a:self._b]
        total = sum(left)
        f = 0.0
        for cpu_m, milli_m, k_m, w_m, tok_m in self._core.shapes:
            frag = total
            if milli_m > 0:
                hosts = [p for p in range(len(left)) if tok_m[types[p]] and left[p] >= milli_m]
                if len(hosts) >= k_m and cpu_left >= cpu_m:
                    frag = total - sum(left[p] for p in hosts)
            f = f + w_m * float(frag)       # in shape order, as the kernel sums
        return f


Draw = Callable[[int], int]


class ModelPolicy:
    """A node policy on the Open-Gpu-Share model (module docstring).

    Override :meth:`score`; override :meth:`cards` to place the pod's cards
    otherwise than on the tightest fitting ones. A subclass must be
    deterministic but for ``draw``, and keep no state between calls: one
    instance serves every run of a process.
    """

    #: the name summaries and plots give the policy (default: the class name)
    name: str = ""
    #: draw among the top-scored nodes whatever the cluster's node_tie_break says
    random_ties: bool = False

    def score(self, node: ModelNode, pod: ModelPod) -> float:
        """The node's score for the pod; the highest wins."""
        raise NotImplementedError(f"{type(self).__name__} defines no score(node, pod)")

    def cards(self, node: ModelNode, pod: ModelPod, draw: Draw) -> list[int]:
        """The ``pod.k`` card positions the pod takes on the node it won.
        ``draw(n)`` is a seeded uniform draw in ``range(n)`` (no draw for n <= 1)."""
        return node.tightest(pod.k, pod.milli)

    def __repr__(self) -> str:
        return self.name or type(self).__name__


def fgd_score(f_before: float, f_after: float) -> int:
    """FGD's score of a fragmentation change: trunc(100 * sigmoid(dF / 1000))."""
    x = (f_before - f_after) / 1000.0
    return int(1.0 / (1.0 + math.exp(-x)) * 100.0)


def _trunc_div(a: int, b: int) -> int:
    """Integer division truncating toward zero (Go's and C's ``/``)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class RandomPolicy(ModelPolicy):
    """``random``: every feasible node ties; a share pod takes a random fitting card."""

    name = "random"
    random_ties = True

    def score(self, node, pod):
        return 0

    def cards(self, node, pod, draw):
        if pod.share:
            fitting = node.fitting(pod.milli)
            return fitting[draw(len(fitting)):][:1]
        return node.tightest(pod.k, pod.milli)


class DotProduct(ModelPolicy):
    """``dotprod``: 100 * (1 - <node free, pod ask> / 2) on (CPU, GPU)."""

    name = "dotprod"

    def score(self, node, pod):
        free_cpu = node.free_cpu
        if free_cpu < pod.score_cpu:
            return 0
        dot = 0.0
        dot = dot + (free_cpu / MAX_SPEC_CPU) * (pod.score_cpu / MAX_SPEC_CPU)
        dot = dot + (node.gpu_left / MAX_SPEC_GPU) * ((pod.milli * pod.k) / MAX_SPEC_GPU)
        return int(100.0 * (1.0 - dot / 2.0))


class GpuClustering(ModelPolicy):
    """``gpuclustering``: a band by the classes already on the node, plus how full it is."""

    name = "gpuclustering"

    def score(self, node, pod):
        if pod.k <= 0 or pod.cls < 0:
            return 0
        base = _trunc_div(25 * (MAX_SPEC_GPU - node.gpu_left), MAX_SPEC_GPU)
        classes = node.classes
        if pod.cls in classes:
            band = 75 if len(classes) == 1 else 50
        else:
            band = 25 if not classes else 0
        return base + band


class GpuPacking(ModelPolicy):
    """``gpupacking``: partly used cards first, then used nodes, then empty ones."""

    name = "gpupacking"

    def score(self, node, pod):
        if pod.milli <= 0 or pod.k <= 0:
            return 0
        left = node.cards
        if all(free == MILLI for free in left):
            return max(33 - len(left), len(left))
        chosen = node.tightest(pod.k, pod.milli)
        if len(chosen) < pod.k:
            return 0
        fully_free = sum(left[p] == MILLI for p in chosen)
        if fully_free:
            return max(50 - fully_free, 33)
        pct = sum(left[p] * 100 // MILLI for p in chosen)
        return max(100 - pct // 10, 50)


class BestFit(ModelPolicy):
    """``bestfit``: the least CPU and GPU left over after the pod."""

    name = "bestfit"

    def score(self, node, pod):
        free_cpu, free_gpu = float(node.free_cpu), float(node.gpu_left)
        req_cpu, req_gpu = float(pod.score_cpu), float(pod.milli * pod.k)
        if free_cpu < req_cpu or free_gpu < req_gpu:
            return SCORE_NONE
        s = 0.0
        s = s + (free_cpu - req_cpu) / MAX_SPEC_CPU * 0.5
        s = s + (free_gpu - req_gpu) / MAX_SPEC_GPU * 0.5
        return int((1.0 - s) * 100.0)


class FGD(ModelPolicy):
    """``fgd``: the placement that grows the node's fragmentation least."""

    name = "fgd"

    def score(self, node, pod):
        if pod.no_requests:
            return 100
        if pod.share:
            return self._best_card(node, pod)[0]
        before = node.fragmentation()
        if node.free_cpu < pod.score_cpu:
            return fgd_score(before, before)     # the authors' Sub leaves the node as it is
        after = list(node.cards)
        for p in node.tightest(pod.k, pod.milli) if pod.k > 0 else ():
            after[p] -= pod.milli
        return fgd_score(before, node.fragmentation(after, node.free_cpu - pod.score_cpu))

    def cards(self, node, pod, draw):
        if pod.share:
            card = self._best_card(node, pod)[1]
            return [card] if card >= 0 else []
        return node.tightest(pod.k, pod.milli)

    @staticmethod
    def _best_card(node: ModelNode, pod: ModelPod) -> tuple[int, int]:
        """(score, position) of the first fitting card with the highest score."""
        before = node.fragmentation()
        best, best_score = -1, 0
        for p in node.fitting(pod.milli):
            after = list(node.cards)
            after[p] -= pod.milli
            s = fgd_score(before, node.fragmentation(after, node.free_cpu - pod.score_cpu))
            if best < 0 or s > best_score:
                best, best_score = p, s
        return best_score, best


#: The six research policies by name, in :data:`hamisim.research.model.RESEARCH_POLICIES` order.
BUILTIN: dict[str, ModelPolicy] = {p.name: p for p in (
    RandomPolicy(), DotProduct(), GpuClustering(), GpuPacking(), BestFit(), FGD())}
