"""What a pod asks for, reduced to the numbers that compare pods.

* :func:`gpu_request`: a pod's GPU request in whole-card units (a plain
  ``nvidia.com/gpu: 2`` is 2, a 25 % share 0.25): the unit of offered load,
  re-timing and the "GPUs arrived" curve.
* :class:`Shape` and :func:`typical_shapes`: a pod's GPU request shape (CPU,
  cards, memory and cores per card, type filter) and a workload's most popular
  shapes, FGD's *target workload* over which fragmentation is measured.

Part of the model: knows HAMi's admission and request generation
(:mod:`hamisim.pods`), no files and no time.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from hamisim.devices import family
from hamisim.cluster import SchedulerConfig
from hamisim.pods import (
    GPU,
    GPUCORES,
    GPUMEM,
    GPUMEM_PERCENTAGE,
    NO_PERCENTAGE,
    Container,
    Pod,
    admit,
    other_family_request,
    pod_requests,
)

__all__ = ["gpu_request", "Shape", "typical_shapes", "request_class", "CPU_ONLY_CLASS",
           "USE_GPUTYPE", "NOUSE_GPUTYPE", "ShapeCache"]

USE_GPUTYPE = "nvidia.com/use-gputype"
NOUSE_GPUTYPE = "nvidia.com/nouse-gputype"


def _container_gpus(c: Container, card_memory_mib: int | None) -> float:
    n = c.value(GPU) or 0
    if n <= 0:
        return _other_family_cards(c, card_memory_mib)
    pct, mem, cores = c.value(GPUMEM_PERCENTAGE), c.value(GPUMEM), c.value(GPUCORES)
    if pct is not None and pct > 0:
        mem_share = min(pct, 100) / 100
    elif mem and card_memory_mib:
        mem_share = min(mem / card_memory_mib, 1.0)
    else:
        # No memory asked: HAMi (default_memory 0) grants the whole card memory.
        # gpumem in MiB without a card size: counted as a whole card.
        mem_share = 1.0
    core_share = min(max(cores, 0), 100) / 100 if cores is not None else 0.0
    return n * max(mem_share, core_share)


def _other_family_cards(c: Container, card_memory_mib: int | None) -> float:
    # a container of another family (hamisim.devices): its request as HAMi
    # generates it, a share of memory or cores per card as for NVIDIA
    r = other_family_request(c)
    if r is None:
        return 0.0
    if r.memreq and card_memory_mib:
        mem_share = min(r.memreq / card_memory_mib, 1.0)
    elif r.memreq == 0 and r.mempercentagereq not in (0, NO_PERCENTAGE):
        mem_share = min(r.mempercentagereq, 100) / 100
    else:
        mem_share = 1.0
    return r.nums * max(mem_share, min(max(r.coresreq, 0), 100) / 100)


def gpu_request(pod: Pod, *, card_memory_mib: int | None = None) -> float:
    """The pod's GPU request in cards: Σ over containers of ``count × share``.

    ``share`` is the dominant fraction of one card the container holds: the
    larger of its memory share (``gpumem-percentage``/100; ``gpumem`` /
    ``card_memory_mib`` when a card size is given; 1 when no memory is asked,
    because HAMi then grants the whole card memory, and 1 for ``gpumem``
    without a card size) and its core share (``gpucores``/100). So a plain
    ``nvidia.com/gpu: 2`` is 2 cards, an openb pod with ``gpu_milli`` 810
    (percentage 81, cores 81) is 0.81. Init containers count as Kubernetes
    counts them: the pod holds max(Σ app containers, max init container).
    """
    app = sum(_container_gpus(c, card_memory_mib) for c in pod.containers)
    init = max((_container_gpus(c, card_memory_mib) for c in pod.init_containers), default=0.0)
    return max(app, init)


@dataclass(frozen=True)
class Shape:
    """A typical pod shape: CPU, cards per pod and what each card must give."""

    cpu_milli: int
    nums: int                      # cards; 0 = CPU-only
    memreq: int = 0                # MiB per card (0 = use pct)
    pct: int = NO_PERCENTAGE       # share of the card's memory, 101 = none
    cores: int = 0
    use_gputype: str = ""
    nouse_gputype: str = ""
    weight: float = 1.0


def _shape_key(pod: Pod, config: SchedulerConfig) -> tuple:
    try:
        reqs, _ = pod_requests(admit(pod, config), config)
    except ValueError:
        reqs = []
    req = next((r for r in reqs if r is not None), None)
    ann = pod.annotations
    if req is None:
        return (pod.cpu_milli, 0, 0, NO_PERCENTAGE, 0, "", "")
    return (pod.cpu_milli, req.nums, req.memreq, req.mempercentagereq, min(req.coresreq, 100),
            ann.get(USE_GPUTYPE, ""), ann.get(NOUSE_GPUTYPE, ""))


def typical_shapes(pods: Iterable[Pod], config: SchedulerConfig,
                   coverage: float = 0.95, counts: Sequence[int] | None = None) -> list[Shape]:
    """The most popular shapes covering ``coverage`` of the pods, weights summing to 1.

    ``counts``, when given, says how many pods each of ``pods`` stands for (a
    trace's templates and their counts). Ties in popularity are broken by the
    shape itself, so the result does not depend on the order of ``pods``.
    """
    memo: dict[tuple, tuple] = {}

    def key_of(pod: Pod) -> tuple:
        # admission once per distinct pod shape, not once per pod
        k = pod.shape_key
        if k is None:
            return _shape_key(pod, config)
        v = memo.get(k)
        if v is None:
            v = memo[k] = _shape_key(pod, config)
        return v

    tally: Counter[tuple] = Counter()
    if counts is None:
        tally.update(map(key_of, pods))
    else:
        for pod, n in zip(pods, counts):
            if n:
                tally[key_of(pod)] += int(n)
    total = sum(tally.values())
    if total == 0:
        return []
    ranked = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
    kept, covered = [], 0
    for key, n in ranked:
        kept.append((key, n))
        covered += n
        if covered >= coverage * total:
            break
    norm = sum(n for _, n in kept)
    return [Shape(*key, weight=n / norm) for key, n in kept]


#: the class of pods that ask for no card
CPU_ONLY_CLASS = "cpu-only"


def request_class(pod: Pod) -> str:
    """A readable label of the pod's GPU request, for per-class reports.

    Per container asking for cards: ``N GPU(s)`` and what each card gives it
    (``4000 MiB``, ``25% memory``, ``30% cores``; nothing more for whole cards),
    containers joined with ``+``; then the type filter (``on H100``) and the card
    policy (``[mutex]``) when the pod has them. Pods that ask for no card are
    :data:`CPU_ONLY_CLASS`. A trace's ``class`` column overrides this.
    """
    parts = []
    for c in (*pod.init_containers, *pod.containers):
        n = c.value(GPU) or 0
        if n <= 0:
            other = other_family_request(c)
            if other is not None:
                parts.append(_other_family_label(other))
            continue
        text = f"{n} GPU" + ("s" if n > 1 else "")
        gives = []
        mem, pct, cores = c.value(GPUMEM), c.value(GPUMEM_PERCENTAGE), c.value(GPUCORES)
        if mem:
            gives.append(f"{mem} MiB")
        elif pct is not None and 0 < pct < 100:
            gives.append(f"{pct}% memory")
        if cores is not None and 0 < cores < 100:
            gives.append(f"{cores}% cores")
        parts.append(text + (": " + ", ".join(gives) if gives else ""))
    if not parts:
        return CPU_ONLY_CLASS
    label = " + ".join(parts)
    ann = pod.annotations or {}
    if ann.get(USE_GPUTYPE):
        label += f" on {ann[USE_GPUTYPE]}"
    if ann.get(NOUSE_GPUTYPE):
        label += f" not on {ann[NOUSE_GPUTYPE]}"
    policy = ann.get("hami.io/gpu-scheduler-policy")
    if policy:
        label += f" [{policy}]"
    return label


def _other_family_label(r) -> str:
    """``2 DCUs: 4000 MiB, 30% cores`` (whole cards: the count alone); a family
    whose cards register a fixed core count gives the cores as a share of it
    (Moore Threads: ``1 Mthreads: 8192 MiB, 4/16 cores``)."""
    plural = r.nums > 1 and not r.type.endswith("s")
    text = f"{r.nums} {r.type}" + ("s" if plural else "")
    gives = []
    if r.memreq:
        gives.append(f"{r.memreq} MiB")
    elif 0 < r.mempercentagereq < 100:
        gives.append(f"{r.mempercentagereq}% memory")
    fam = family(r.type)
    card_cores = None if fam is None or fam.slots_only else fam.registered_devcore
    if card_cores is not None:
        if 0 < r.coresreq < card_cores:
            gives.append(f"{r.coresreq}/{card_cores} cores")
    elif 0 < r.coresreq < 100:
        gives.append(f"{r.coresreq}% cores")
    return text + (": " + ", ".join(gives) if gives else "")


class ShapeCache:
    """Something computed once per pod shape (``Pod.shape_key``), for hot paths.

    Pods copied from one trace template share the very same key object, so the
    first lookup is by its identity (the cache holds the key, so an identity is
    never reused while cached); other pods fall back to the key's value. At most
    ``size`` shapes are kept (the cache starts afresh beyond), so memory stays
    bounded whatever the trace; pods without a hashable key are computed anew.
    """

    __slots__ = ("compute", "size", "by_id", "by_key")

    def __init__(self, compute, size: int = 4096) -> None:
        self.compute = compute
        self.size = size
        self.by_id: dict[int, tuple] = {}
        self.by_key: dict[tuple, object] = {}

    def get(self, pod: Pod):
        key = pod.shape_key
        if key is None:
            return self.compute(pod)
        hit = self.by_id.get(id(key))
        if hit is not None and hit[0] is key:
            return hit[1]
        value = self.by_key.get(key, _MISSING)
        if value is _MISSING:
            if len(self.by_key) >= self.size:
                self.by_key.clear()
            value = self.by_key[key] = self.compute(pod)
        if len(self.by_id) >= self.size:
            self.by_id.clear()
        self.by_id[id(key)] = (key, value)
        return value

    def put(self, pod: Pod, value) -> None:
        """Remember ``value`` for ``pod``'s shape (computed elsewhere)."""
        key = pod.shape_key
        if key is None:
            return
        if len(self.by_key) >= self.size:
            self.by_key.clear()
        if len(self.by_id) >= self.size:
            self.by_id.clear()
        self.by_key[key] = value
        self.by_id[id(key)] = (key, value)

    def peek(self, pod: Pod):
        """The cached value of ``pod``'s shape, or ``None`` (nothing computed)."""
        key = pod.shape_key
        if key is None:
            return None
        hit = self.by_id.get(id(key))
        if hit is not None and hit[0] is key:
            return hit[1]
        value = self.by_key.get(key)
        if value is not None:
            self.by_id[id(key)] = (key, value)
        return value


_MISSING = object()
