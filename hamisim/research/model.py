"""The FGD paper's Open-Gpu-Share resource model, applied to HAMi pods.

Everything a research policy needs to know about a pod or a typical shape
before scoring: :func:`research_request` maps a HAMi pod to ``k`` cards of
``milli`` each, :func:`pod_class` gives GpuClustering's class,
:func:`shape_arrays` the typical shapes as the kernel's arrays. The rules are
stated in :mod:`hamisim.research`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hamisim.hami.decision import INSUFFICIENT_CPU, INSUFFICIENT_MEMORY
from hamisim.hami.reference import NOUSE_TYPE, USE_TYPE, type_allowed
from hamisim.pods import Pod, admit, pod_requests
from hamisim.registry import RESEARCH_NODE_POLICIES, is_research_policy
from hamisim.shapes import Shape

__all__ = [
    "RESEARCH_POLICIES", "POLICY_CODES", "MILLI", "MAX_SPEC_CPU", "MAX_SPEC_GPU",
    "NONZERO_CPU_MILLI", "GPU_MODEL_MISMATCH", "INSUFFICIENT_GPU", "ResearchRequest",
    "card_milli", "research_request", "shape_arrays", "pod_class", "is_research_policy",
    "RB_CPU", "RB_MEM", "RB_MODEL", "RB_GPU", "reasons_of", "bits_histogram",
]

#: The FGD paper's six node policies, as ``node_scheduler_policy`` values.
RESEARCH_POLICIES: tuple[str, ...] = RESEARCH_NODE_POLICIES
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
#: a score below every real one (a node that cannot be scored)
SCORE_NONE = -(1 << 62)


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


def reasons_of(bits: int) -> list[str]:
    """Reason strings of a rejection bit set (kube-scheduler's fit first)."""
    return [reason for bit, reason in ((RB_CPU, INSUFFICIENT_CPU), (RB_MEM, INSUFFICIENT_MEMORY),
                                       (RB_MODEL, GPU_MODEL_MISMATCH), (RB_GPU, INSUFFICIENT_GPU))
            if bits & bit]


def bits_histogram(bits: np.ndarray) -> dict[str, int]:
    """Reason string -> number of nodes, from the rejection bits."""
    hist: dict[str, int] = {}
    for b, n in enumerate(np.bincount(bits, minlength=16).tolist()):
        if n:
            for reason in reasons_of(b):
                hist[reason] = hist.get(reason, 0) + n
    return hist
