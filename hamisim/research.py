"""The research node policies of the FGD paper, as node policies of hamisim.

Weng et al., *Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent*, USENIX ATC '23, compare six node policies on
the openb trace: ``random``, ``dotprod``, ``gpuclustering``, ``gpupacking``,
``bestfit`` and ``fgd`` (FGD-OPENB.md §4.3). They are **not HAMi behaviour**:
select one with ``node_scheduler_policy`` (``--node-policy fgd``) and the pod is
placed by that policy on the paper's *Open-Gpu-Share* resource model instead
of by HAMi's Filter/Score. Everything here was written from FGD-OPENB.md and
from reading the authors' simulator (``hkust-adsl/kubernetes-scheduler-simulator``
at 8f3d641); no code was taken from it.

Resource model
--------------
* Every usable card holds 1000 milli. A card is usable when it is healthy, not
  cordoned and NVIDIA-typed (HAMi offers no other card); an unusable card has
  0 milli free for ever.
* A pod asks for ``k`` cards with ``milli`` each, ``cpu_milli`` CPU and
  ``memory_mib`` memory, and may restrict the card model.
* A node fits when its free CPU and memory cover the pod (kube-scheduler's
  NodeResourcesFit: a node without ``memory_mib`` does not constrain memory; a
  node without ``cpu_milli`` is given the paper's largest node,
  128,000 milli) and, for a GPU pod, when it has ``k`` distinct cards whose
  type the pod allows and whose free milli is at least ``milli``. For
  whole-card pods this is "k fully free cards", the paper's rule; the paper's
  simulator refuses fractional multi-card pods (openb has none), hamisim gives
  each of the k cards ``milli``. There is no slot limit.
* The type filter is HAMi's ``nvidia.com/use-gputype`` / ``nouse-gputype``
  (case-insensitive substrings of the card type). On openb, where a
  ``gpu_spec`` ``A|B`` becomes ``use-gputype: A,B`` and card types are
  ``NVIDIA-<model>`` with no model a substring of another, this is exactly the
  paper's model match. It is applied per card, so a node whose cards are all of
  other models fails with "GPU model mismatch".

From a HAMi pod (:func:`research_request`): the pod is admitted (HAMi's
webhook, which makes a plain ``nvidia.com/gpu: k`` exclusive with cores 100)
and its per-container requests generated as HAMi does; then

* ``k`` = the sum of ``nums`` over the app containers asking for cards
  (init containers are ignored: they run before the app containers);
* ``milli`` per card = ``min(coresreq, 100) * 10`` when ``coresreq > 0``,
  else ``mempercentagereq * 10`` when that is at most 100, else 1000 (so a
  request given only in MiB of memory takes a whole card); with several GPU
  containers the largest;
* so an openb pod maps back to its own ``gpu_milli``: fractional pods carry
  ``gpucores`` = ``gpumem-percentage`` = ``gpu_milli/10``, whole-card pods
  cores 100.

Policies (integer node scores, the highest wins)
------------------------------------------------
``free CPU`` is the node's CPU capacity minus requests, ``free GPU`` the sum
of its cards' free milli. In scores the pod's CPU is kube-scheduler's
non-zero request (100 milli when the pod asks for none), as the authors'
``GetPodResource`` reads it; the fit uses the real request.

``random`` (random_score.go, GPU selection "random"): one feasible node
uniformly at random (whatever ``node_tie_break`` says); a share pod (1 card,
< 1000 milli) takes a uniformly random fitting card.

``dotprod`` (dot_product_score.go, "merge"/"max"): node vector (free CPU /
128,000, free GPU / 8,000), pod vector (CPU / 128,000, k*milli / 8,000);
score = trunc(100 * (1 - dot/2)) (0 if the free CPU is below the pod's).

``gpuclustering`` (gpu_clustering_score.go): pods have a class -- share, or
"k whole cards"; score = band + trunc(25 * (8000 - free GPU) / 8000), band 75
when the node hosts only pods of the pod's class, 50 when it hosts that class
among others, 25 when it hosts no GPU pod, 0 otherwise. CPU-only pods
score 0 everywhere.

``gpupacking`` (gpu_packing_score.go): if every card of the node is fully
free, max(33 - G, G) for G cards; else take the k fitting cards with the least
free milli (stable order): when some of them is fully free,
max(50 - (fully free ones taken), 33), otherwise
max(100 - (sum of trunc(free*100/1000) over them) / 10, 50). CPU-only pods
score 0 everywhere.

``bestfit`` (best_fit_score.go): trunc(100 * (1 - [0.5 (free CPU - CPU) /
128,000 + 0.5 (free GPU - k*milli) / 8,000])). The authors then min-max
rescale the scores to 0..100 with integer division (plugin_utils.go
NormalizeScore); that map keeps the set of top-scored nodes exactly (only the
raw maximum maps to 100; all 0 when all are equal), so hamisim ranks the raw
integer scores.

``fgd`` (fgd_score.go, frag.go): node fragmentation F_n = sum over the
typical shapes m of weight_m * frag_m(n), in shape order, in double precision,
with frag_m (FGD-OPENB.md §4.1) = all free milli of the node when m is
CPU-only, or when fewer than k_m cards of a type m allows have free >=
milli_m, or when the free CPU is below m's; otherwise the free milli of the
cards that cannot host m. Score = trunc(100 * sigmoid((F_n - F_n') / 1000))
with F_n' after the hypothetical placement. A share pod tries every fitting
card and keeps the first with the highest score -- that card is also where
it is placed; every other pod (CPU-only, whole and multi-card) is placed
hypothetically on the k fitting cards with the least free milli (resource.go
``Sub``; for whole cards the lowest-indexed fully free ones), which is also
where it goes. CPU-only pods change only the free CPU. When the pod's
non-zero CPU exceeds the node's free CPU, the authors' ``Sub`` leaves the node
unchanged (score 50). A pod without any request (no CPU, memory or card)
scores 100 everywhere.

Card choice ("best" in the authors' Open-Gpu-Share Reserve, used by dotprod,
gpuclustering, gpupacking, bestfit): the k fitting cards with the least free
milli, ties to the lower index; for whole cards that is the lowest-indexed
fully free ones (resource.go ``AllocateExclusiveGpuId``).

Ties between top-scored nodes follow the cluster's ``node_tie_break``:

* ``last`` (the default): the last top-scored node in cluster order. This is
  the authors' rule, not upstream kube-scheduler's: their fork of
  kube-scheduler v1.20.5 (``vendor/k8s.io/kubernetes/pkg/scheduler/core/
  generic_scheduler.go``, ``selectHost``) keeps the lexicographically
  smallest node name among the top scores "for reproducibility", and the
  simulator renames every node with a ``%04d-`` prefix from a per-seed random
  permutation (``pkg/simulator/simulator.go`` ``syncClusterResourceList``).
  Ties therefore always go to the same node of a fixed random ranking, which
  packs pods (FGD-OPENB.md §3 says "at random"; the code says otherwise, and
  it matters: uniform ties cost GpuPacking, GpuClustering and FGD 3-6 pp of
  unallocated GPU on openb). hamisim's fill runs permute the node order per
  seed, so "last in cluster order" is the same rule.
* ``random``: uniformly among the top-scored nodes (upstream kube-scheduler).

Randomness: the scheduler owns ``numpy.random.default_rng(seed)``. With
``node_tie_break: random`` a decision draws ``integers(n)`` among its n
top-scored nodes (cluster order) when n > 1; ``random`` always draws its node
that way (every feasible node is tied), and draws ``integers(n)`` among the
fitting cards of a share pod when n > 1. ``tie_draw`` from the engine is
ignored. Both backends consume the generator identically.

kube-scheduler's node sampling is kept: nodes are examined from a rotating
start until ``percentage_of_nodes_to_score`` worth of feasible nodes are
found (the paper uses 100: every node); the research filter (CPU, memory,
cards) is part of that search, as the authors' Open-Gpu-Share filter is a
kube-scheduler filter.

Failures: ``0/N nodes are available: ...`` (:func:`~hamisim.outcome.histogram_message`)
over the examined nodes' reasons: ``Insufficient cpu`` and/or ``Insufficient
memory`` (NodeResourcesFit, checked first), else ``GPU model mismatch`` (the
node has cards but none of an allowed type) or ``Insufficient GPU`` (no cards,
or fewer than k fitting cards).

Typical shapes (FGD's target workload) come from
:func:`hamisim.metrics.typical_shapes` and are converted once with the same
milli rule (:func:`shape_arrays`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .cluster import Cluster
from .errors import HamisimError
from .kubesched import num_feasible_nodes_to_find
from .metrics import Shape
from .outcome import (
    INSUFFICIENT_CPU, INSUFFICIENT_MEMORY, Decision, Pick, histogram_message,
    pads_empty_segments,
)
from .pods import Pod, admit, pod_requests
from .reference import NOUSE_TYPE, USE_TYPE, collapsed_usage, type_allowed

__all__ = [
    "RESEARCH_POLICIES", "POLICY_CODES", "MILLI", "MAX_SPEC_CPU", "MAX_SPEC_GPU",
    "NONZERO_CPU_MILLI", "GPU_MODEL_MISMATCH", "INSUFFICIENT_GPU", "ResearchRequest",
    "card_milli", "research_request", "shape_arrays", "pod_class", "is_research_policy",
    "ResearchReferenceCore", "ResearchScheduler",
]

#: The FGD paper's six node policies, as ``node_scheduler_policy`` values.
RESEARCH_POLICIES: tuple[str, ...] = (
    "random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd")
POLICY_CODES = {name: code for code, name in enumerate(RESEARCH_POLICIES)}
P_RANDOM, P_DOTPROD, P_CLUSTERING, P_PACKING, P_BESTFIT, P_FGD = range(6)

MILLI = 1000
#: the authors' normalisation constants (open-gpu-share utils/const.go)
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
#: kube-scheduler's non-zero CPU request for scoring (schedutil.DefaultMilliCPURequest)
NONZERO_CPU_MILLI = 100

RB_CPU, RB_MEM, RB_MODEL, RB_GPU = 1, 2, 4, 8
GPU_MODEL_MISMATCH = "GPU model mismatch"
INSUFFICIENT_GPU = "Insufficient GPU"
_SCORE_NONE = -(1 << 62)


def is_research_policy(policy: str | None) -> bool:
    """Whether ``policy`` (a ``node_scheduler_policy``) names a research policy."""
    return policy is not None and policy.strip().lower() in POLICY_CODES


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------
def card_milli(coresreq: int, mempercentagereq: int) -> int:
    """Milli per card of a HAMi request: cores when asked, else the memory
    percentage, else a whole card."""
    if coresreq > 0:
        return min(coresreq, 100) * 10
    if mempercentagereq <= 100:
        return mempercentagereq * 10
    return MILLI


@dataclass(frozen=True)
class ResearchRequest:
    """A pod on the Open-Gpu-Share model."""

    cpu_milli: int                     # kube-scheduler fit
    memory_mib: int
    k: int                             # cards
    milli: int                         # per card, 0 for CPU-only pods
    use_gputype: str | None = None     # the type filter (HAMi annotations)
    nouse_gputype: str | None = None
    container_cards: tuple[int, ...] = ()   # cards per container, init containers first

    @property
    def score_cpu(self) -> int:
        """The CPU the scores see: kube-scheduler's non-zero request."""
        return self.cpu_milli if self.cpu_milli > 0 else NONZERO_CPU_MILLI

    @property
    def no_requests(self) -> bool:
        return self.cpu_milli == 0 and self.memory_mib == 0 and self.k == 0


def research_request(pod: Pod, config) -> ResearchRequest:
    """Map a HAMi pod onto the research resource model (module docstring).

    Raises ``ValueError`` when HAMi's webhook would reject the pod.
    """
    admitted = admit(pod, config)
    requests, n_init = pod_requests(admitted, config)
    k, milli = 0, 0
    cards = []
    for j, r in enumerate(requests):
        if j < n_init or r is None:
            cards.append(0)
            continue
        cards.append(r.nums)
        k += r.nums
        milli = max(milli, card_milli(r.coresreq, r.mempercentagereq))
    ann = pod.annotations or {}
    return ResearchRequest(pod.cpu_milli, pod.memory_mib, k, milli if k else 0,
                           ann.get(USE_TYPE), ann.get(NOUSE_TYPE), tuple(cards))


def pod_class(k: int, milli: int, max_cards: int) -> int:
    """GpuClustering class: 0 share, k whole k-card pods, M+k fractional
    k-card pods (M = ``max_cards``); -1 for CPU-only pods and for pods no node
    can hold."""
    if k <= 0 or k > max_cards:
        return -1
    if milli >= MILLI:
        return k
    if k == 1:
        return 0
    return max_cards + k


def shape_arrays(shapes: Sequence[Shape], type_names: Sequence[str]) -> dict[str, np.ndarray]:
    """Typical shapes as the kernel's arrays: CPU (non-zero), milli, k,
    weight and the per-type filter."""
    cpu, milli, k, w, tok = [], [], [], [], []
    for s in shapes:
        cpu.append(s.cpu_milli if s.cpu_milli > 0 else NONZERO_CPU_MILLI)
        k.append(s.nums)
        milli.append(card_milli(s.cores, s.pct) if s.nums > 0 else 0)
        w.append(float(s.weight))
        ann = {USE_TYPE: s.use_gputype, NOUSE_TYPE: s.nouse_gputype}
        tok.append([1 if type_allowed(ann, t) else 0 for t in type_names])
    n_types = max(len(type_names), 1)
    return {
        "sh_cpu": np.array(cpu, dtype=np.int64),
        "sh_milli": np.array(milli, dtype=np.int64),
        "sh_k": np.array(k, dtype=np.int64),
        "sh_w": np.array(w, dtype=np.float64),
        "sh_type_ok": (np.array(tok, dtype=np.uint8).reshape(len(tok), len(type_names))
                       if type_names else np.ones((len(tok), n_types), dtype=np.uint8)),
    }


# ---------------------------------------------------------------------------
# The executable specification: the kernel's twin in plain Python
# ---------------------------------------------------------------------------
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
            return _SCORE_NONE
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
    import math
    x = (f_before - f_after) / 1000.0
    return int(1.0 / (1.0 + math.exp(-x)) * 100.0)


# ---------------------------------------------------------------------------
# The scheduler (Backend protocol of hamisim.scheduler)
# ---------------------------------------------------------------------------
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

    ``backend="kernel"`` runs :class:`hamisim._core.ResearchCore`,
    ``"reference"`` its plain-Python twin; both decide identically and consume
    the seeded generator identically.
    """

    def __init__(self, cluster: Cluster, policy: str, shapes: Sequence[Shape] = (),
                 seed: int = 0, backend: str = "kernel") -> None:
        name = policy.strip().lower()
        if name not in POLICY_CODES:
            raise HamisimError(f"unknown research policy {policy!r} (expected one of "
                               f"{', '.join(RESEARCH_POLICIES)})")
        if backend not in ("kernel", "reference"):
            raise HamisimError(f"unknown backend {backend!r} (expected kernel or reference)")
        self.cluster = cluster
        self.config = cluster.scheduler
        self.policy = name
        self.code = POLICY_CODES[name]
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
        usable = np.array([c.health and c.id not in n.cordon and "NVIDIA" in c.type.upper()
                           for n in nodes for c in n.cards], dtype=np.uint8)
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
            from . import _core
            codes = _core.RESEARCH_CODES
            assert all(codes[p] == c for p, c in POLICY_CODES.items()) and (
                codes["RB_CPU"], codes["RB_MEM"], codes["RB_MODEL"], codes["RB_GPU"]) == (
                RB_CPU, RB_MEM, RB_MODEL, RB_GPU), "hamisim._core research codes out of date"
            self.core = _core.ResearchCore(*args)
        else:
            self.core = ResearchReferenceCore(*args)
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
              n_init: int = 0, cpu_milli: int = 0, memory_mib: int = 0) -> None:
        """Record a placement made elsewhere (an initial state). Each card's
        milli is read back from the pick: ``usedcores * 10``, else its memory
        share of the card."""
        self.delete(name)
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
        b = _Bound(node_index, tuple(pos), tuple(milli), cpu_milli, memory_mib, cls,
                   containers, n_init)
        self._apply(b, 1)
        self._pods[name] = b

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
        cls = pod_class(req.k, req.milli, self.max_cards)
        n_tied = core.attempt(code, req.cpu_milli, req.score_cpu, req.memory_mib, req.k,
                              req.milli, tok, spec, cls, req.no_requests, self.next_start,
                              self._wanted)
        self.next_start = core.next_start
        if n_tied == 0:
            nodes = np.array(core.np_rej_node[:core.n_rejected], dtype=np.int64)
            bits = np.array(core.np_rej_bits[:core.n_rejected], dtype=np.int64)
            return Decision(pod.name, message=histogram_message(self.n_nodes,
                                                                _bits_histogram(bits)),
                            reasons_factory=lambda: self._node_reasons(nodes, bits))
        if n_tied > 1 and (self.tie_random or code == P_RANDOM):
            j = int(self.rng.integers(n_tied))
        else:
            j = n_tied - 1      # hamisim's node_tie_break "last"
        node = int(core.np_tied[j])
        draw = 0
        if code == P_RANDOM and req.k == 1 and req.milli < MILLI:
            n_fit = core.count_fit(node, req.milli, tok)
            draw = int(self.rng.integers(n_fit)) if n_fit > 1 else 0
        got = core.choose(code, node, req.k, req.milli, tok, draw)
        if got != req.k:   # pragma: no cover - the filter guarantees the cards
            raise AssertionError("research kernel: chosen node no longer fits")
        pos = tuple(core.np_pick[:got].tolist())
        containers = self._containers(node, pos, req)
        b = _Bound(node, pos, (req.milli,) * got, req.cpu_milli, req.memory_mib, cls,
                   containers, len(pod.init_containers))
        self._apply(b, 1)
        self._pods[pod.name] = b
        return Decision(pod.name, self.node_names[node], containers, node_index=node,
                        pad_empty=self._pad_empty[node] if got else True)

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
        return {names[i]: _reasons_of(b) for i, b in zip(nodes.tolist(), bits.tolist())}


def _reasons_of(bits: int) -> list[str]:
    """Reason strings of a rejection bit set (kube-scheduler's fit first)."""
    return [reason for bit, reason in ((RB_CPU, INSUFFICIENT_CPU), (RB_MEM, INSUFFICIENT_MEMORY),
                                       (RB_MODEL, GPU_MODEL_MISMATCH), (RB_GPU, INSUFFICIENT_GPU))
            if bits & bit]


def _bits_histogram(bits: np.ndarray) -> dict[str, int]:
    """Reason string -> number of nodes, from the rejection bits."""
    hist: dict[str, int] = {}
    for b, n in enumerate(np.bincount(bits, minlength=16).tolist()):
        if n:
            for reason in _reasons_of(b):
                hist[reason] = hist.get(reason, 0) + n
    return hist
