"""A workload: pods with arrival times and lifetimes, and its transforms.

A :class:`Trace` is a named list of :class:`TracePod` (a
:class:`hamisim.pods.Pod` plus its timing and the line it came from). The
engine consumes it through :meth:`Trace.iter_arrivals`: pods sorted once by
``(arrival, file order)``. The readers that build one from a file are in
:mod:`hamisim.io.traces` and :mod:`hamisim.io.openb`.

Transforms (all return new objects and never touch the input):

* :func:`retime`: Poisson arrivals at the rate that offers a target GPU
  load, each pod keeping its lifetime (:func:`poisson_rate`,
  :func:`offered_load`);
* :func:`fill_workload`: the FGD paper's "fill the cluster to X %" workload.

GPU amounts are :func:`hamisim.shapes.gpu_request`, in whole-card units.
Part of the model: no files.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterator

import numpy as np

from hamisim.pods import GPU, Pod
from hamisim.shapes import gpu_request

__all__ = ["TracePod", "Trace", "lifetime", "poisson_rate", "offered_load", "retime",
           "fill_workload"]


@dataclass(frozen=True)
class TracePod:
    """One pod of a trace with its timing.

    ``arrival``: creation time (s). ``duration``: seconds the pod runs once
    bound (``None`` = to the end of the run). ``deletion``: absolute deletion
    time (s); when set it wins over ``duration`` and a pod still pending then
    is abandoned. ``line``: where the pod came from in its source file (the
    physical line; the 1-based data row for Parquet). ``pod_class``: the
    trace's own class label for per-class reports (``None``: derived from the
    request, :func:`hamisim.shapes.request_class`).
    """

    pod: Pod
    arrival: float
    duration: float | None = None
    deletion: float | None = None
    line: int = 0
    pod_class: str | None = None

    @property
    def name(self) -> str:
        return self.pod.name


@dataclass
class Trace:
    """A named list of pods in file order.

    ``format`` is ``csv``, ``parquet``, ``jsonl``, ``openb`` (an openb pod
    list) or ``derived`` (built by a transform); ``path`` is the source file
    (kept by transforms, whose pods keep their source lines).
    """

    name: str
    pods: list[TracePod]
    path: str | None = None
    format: str = "derived"
    description: str = ""

    def __len__(self) -> int:
        return len(self.pods)

    def __iter__(self) -> Iterator[TracePod]:
        """The pods in file order (for :func:`fill_workload` that is submission
        order); use :meth:`iter_arrivals` for arrival order."""
        return iter(self.pods)

    def iter_arrivals(self) -> Iterator[TracePod]:
        """The pods in ``(arrival, file order)`` order (one stable sort, O(n) when
        already sorted)."""
        return iter(sorted(self.pods, key=_arrival_key))

    def where(self, tp: TracePod) -> str:
        """``file:line`` (``file: row N`` for Parquet) of a pod, for messages."""
        if self.path is None:
            return f"{self.name}: pod {tp.name}"
        if self.format == "parquet":
            return f"{self.path}: row {tp.line}"
        return f"{self.path}:{tp.line}"

    def total_gpu_request(self, *, card_memory_mib: int | None = None) -> float:
        """Sum of :func:`gpu_request` over the pods, in cards."""
        return math.fsum(gpu_request(tp.pod, card_memory_mib=card_memory_mib)
                         for tp in self.pods)

    @property
    def has_timestamps(self) -> bool:
        """Whether any pod has a lifetime (``duration`` or ``deletion``)."""
        return any(tp.duration is not None or tp.deletion is not None for tp in self.pods)


def _arrival_key(tp: TracePod) -> float:
    return tp.arrival


def lifetime(tp: TracePod) -> float | None:
    """How long the pod lives: ``deletion - arrival`` when a deletion is given
    (it wins), else ``duration``; ``None`` when it runs to the end."""
    if tp.deletion is not None:
        return tp.deletion - tp.arrival
    return tp.duration


def _capped(tp: TracePod, max_lifetime: float | None) -> float | None:
    life = lifetime(tp)
    if life is not None and max_lifetime is not None:
        life = min(life, max_lifetime)
    return life


def _finite_gl(trace: Trace, card_memory_mib: int | None,
               max_lifetime: float | None) -> tuple[list[TracePod], list[float]]:
    if max_lifetime is not None and not max_lifetime > 0:
        raise ValueError(f"max_lifetime must be a positive number, got {max_lifetime!r}")
    pods = list(trace.iter_arrivals())
    gl = []
    for tp in pods:
        life = _capped(tp, max_lifetime)
        gl.append(0.0 if life is None else
                  gpu_request(tp.pod, card_memory_mib=card_memory_mib) * life)
    return pods, gl


def poisson_rate(trace: Trace, target_load: float, capacity_gpus: float, *,
                 card_memory_mib: int | None = None, max_lifetime: float | None = None) -> float:
    """Arrival rate (pods/s) at which ``trace``'s pods offer ``target_load`` of
    ``capacity_gpus``: λ = target_load × capacity_gpus / E[g × L].

    ``g`` is :func:`gpu_request` (cards), ``L`` is :func:`lifetime` (s) and
    the mean runs over all pods, pods without a lifetime counting 0 (they
    never leave, so they add load on top that grows with the run).
    ``max_lifetime`` caps every lifetime first (see :func:`retime`).
    """
    if not target_load > 0 or not math.isfinite(target_load):
        raise ValueError(f"target_load must be a positive number, got {target_load!r}")
    if not capacity_gpus > 0 or not math.isfinite(capacity_gpus):
        raise ValueError(f"capacity_gpus must be a positive number, got {capacity_gpus!r}")
    if not trace.pods:
        raise ValueError(f"trace {trace.name} has no pods")
    _, gl = _finite_gl(trace, card_memory_mib, max_lifetime)
    mean = math.fsum(gl) / len(gl)
    if mean <= 0:
        raise ValueError(f"trace {trace.name}: no pod has both a GPU request and a positive "
                         "lifetime, so no arrival rate gives a GPU load")
    return target_load * capacity_gpus / mean


def offered_load(trace: Trace, capacity_gpus: float, *,
                 card_memory_mib: int | None = None, max_lifetime: float | None = None) -> float:
    """Offered GPU load of ``trace`` as a fraction of ``capacity_gpus``:
    Σ g × L / (capacity × T), with T the last arrival time (arrivals counted
    from 0) and pods without a lifetime left out. For a :func:`retime` d
    trace this estimates its ``target_load`` (relative error ~ 1/√n)."""
    pods, gl = _finite_gl(trace, card_memory_mib, max_lifetime)
    span = pods[-1].arrival if pods else 0.0
    if span <= 0:
        raise ValueError(f"trace {trace.name}: all pods arrive at 0; the load is undefined")
    return math.fsum(gl) / (capacity_gpus * span)


def retime(trace: Trace, target_load: float, seed: int, capacity_gpus: float, *,
           card_memory_mib: int | None = None, max_lifetime: float | None = None,
           n_pods: int | None = None) -> Trace:
    """The same pods with Poisson arrivals offering ``target_load`` of the cluster.

    Pods keep their order (:meth:`Trace.iter_arrivals`) and their lifetime,
    which becomes ``duration`` (run time once bound, so a pod that waits
    still runs its full lifetime; ``deletion`` is cleared): ``L = deletion −
    arrival`` when the pod has a deletion time, else its ``duration``; pods
    without either keep ``duration=None`` (run to the end).

    Arrivals are the partial sums of exponential gaps with mean 1/λ drawn
    from ``numpy.random.default_rng(seed)``, starting at 0, with

        λ = target_load × capacity_gpus / E[g × L]      (:func:`poisson_rate`)

    so by Little's law the mean concurrently requested GPUs are
    λ·E[g×L] = target_load × capacity_gpus. ``g`` is :func:`gpu_request` in
    cards (``count × share``). Zero-lifetime pods are kept (they arrive and
    leave at once, adding nothing to the load); pods without a lifetime count
    0 in E[g × L] and stay forever, so their load comes on top. Right-censored
    pods (openb: 34 pods deleted at the trace's end) keep their observed,
    truncated lifetime — a lower bound, at most a small bias.

    The load is a long-run (steady-state) figure, reached only after the run
    lasts longer than the longest lifetimes. Heavy tails matter: in openb's
    ``default`` list 41 pods living over a week carry 84 % of Σ g × L, so a
    retimed copy (arrivals over ~10 h at load 0.8) averages only ~6 % GPU
    load over its arrival window. ``max_lifetime`` (s) caps every lifetime
    (before λ is computed, and in the returned durations) to make a
    finite-horizon replay reach the target; e.g. 3600 caps 17 % of openb's
    pods.

    A trace may also be too short to reach steady state at all: the system
    holds λ·E[L] pods at once (≈ 6,600 openb pods at load 0.8 of 6,212
    GPUs, more than half of the 8,152-pod list). ``n_pods`` then draws that
    many pods uniformly with replacement (from the same generator, before
    the gaps) in place of the trace's own sequence, renamed ``<name>-r<k>``
    with ``k`` the arrival index; the rate is unchanged (the draw has the
    same E[g × L]), so the run lasts ≈ ``n_pods``/λ.
    """
    rate = poisson_rate(trace, target_load, capacity_gpus, card_memory_mib=card_memory_mib,
                        max_lifetime=max_lifetime)
    pods = list(trace.iter_arrivals())
    rng = np.random.default_rng(seed)
    if n_pods is not None:
        if isinstance(n_pods, bool) or not isinstance(n_pods, int) or n_pods < 1:
            raise ValueError(f"n_pods must be a positive integer, got {n_pods!r}")
        picks = rng.integers(len(pods), size=n_pods)
        pods = [replace(pods[i], pod=pods[i].pod.renamed(f"{pods[i].name}-r{k}"))
                for k, i in enumerate(picks)]
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=len(pods)))
    out = [TracePod(pod=tp.pod, arrival=float(t), duration=_capped(tp, max_lifetime),
                    deletion=None, line=tp.line, pod_class=tp.pod_class)
           for tp, t in zip(pods, arrivals)]
    desc = (f"{trace.name} retimed: Poisson arrivals at {rate:.6g} pods/s for GPU load "
            f"{target_load:g} of {capacity_gpus:g} GPUs, seed {seed}"
            + (f", lifetimes capped at {max_lifetime:g} s" if max_lifetime is not None else ""))
    return Trace(name=trace.name, pods=out, path=trace.path, format=trace.format,
                 description=desc)


def fill_workload(trace: Trace, capacity_gpus: float, fill_to_pct: float, seed: int, *,
                  card_memory_mib: int | None = None, fgd_stop_quirk: bool = False) -> Trace:
    """The FGD paper's workload (FGD-OPENB.md §3 steps 2-3): pods in submission order.

    1. Sort the pods by name, shuffle them with ``numpy.random.default_rng(seed)``.
    2. Target T = ``fill_to_pct``/100 × ``capacity_gpus`` (cards). While the
       total :func:`gpu_request` is below T, draw a pod uniformly with
       replacement from the name-sorted original list; stop when adding it
       would pass T, else append it renamed ``<name>-tuned-<i>`` (i = 0, 1, …)
       and go on. CPU-only draws are appended and never stop the loop.
    3. If the total is above T, remove uniformly random pods (any pod,
       CPU-only included, as FGD does) until it is at most T.

    FGD's stop check adds the drawn pod's *per-GPU* share instead of its
    total (a quirk that lets multi-GPU draws overshoot T); pass
    ``fgd_stop_quirk=True`` to reproduce it. The RNG differs from Go's, so
    the exact pods differ from FGD's run of the same seed.

    Returns a :class:`Trace` whose pods are in submission order with
    ``arrival`` = submission index (0, 1, 2, …; so :meth:`Trace.iter_arrivals`
    keeps the order under any sort), no lifetime (no departures), and the
    line of their source row.
    """
    if not capacity_gpus > 0 or not math.isfinite(capacity_gpus):
        raise ValueError(f"capacity_gpus must be a positive number, got {capacity_gpus!r}")
    if not fill_to_pct >= 0 or not math.isfinite(fill_to_pct):
        raise ValueError(f"fill_to_pct must be a number >= 0, got {fill_to_pct!r}")
    if not trace.pods:
        raise ValueError(f"trace {trace.name} has no pods")
    source = sorted(trace.pods, key=lambda tp: tp.name)
    req = [gpu_request(tp.pod, card_memory_mib=card_memory_mib) for tp in source]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(source))
    chosen: list[tuple[TracePod, float]] = [(source[i], req[i]) for i in order]
    target = fill_to_pct / 100.0 * capacity_gpus
    eps = 1e-9 * max(target, 1.0)
    total = math.fsum(req)
    if total < target:
        if max(req) <= 0:
            raise ValueError(f"trace {trace.name} requests no GPU; it cannot fill a cluster")
        names = {tp.name for tp in source}
        i = 0
        while True:
            k = int(rng.integers(len(source)))
            tp, g = source[k], req[k]
            step = g / max(tp.pod.containers[0].value(GPU) or 1, 1) \
                if fgd_stop_quirk and tp.pod.containers else g
            if total + step > target + eps:
                break
            new_name = f"{tp.name}-tuned-{i}"
            if new_name in names:
                raise ValueError(f"trace {trace.name}: pod name {new_name} already exists")
            # only the pod and its source line are kept below
            chosen.append((TracePod(tp.pod.renamed(new_name), 0.0, line=tp.line,
                                    pod_class=tp.pod_class), g))
            total += g
            i += 1
    else:
        while total > target + eps:
            k = int(rng.integers(len(chosen)))
            total -= chosen.pop(k)[1]
    pods = [TracePod(pod=tp.pod, arrival=float(n), duration=None, deletion=None, line=tp.line,
                     pod_class=tp.pod_class) for n, (tp, _) in enumerate(chosen)]
    desc = (f"{trace.name} filled to {fill_to_pct:g} % of {capacity_gpus:g} GPUs "
            f"(FGD method), seed {seed}: {len(pods)} pods, {total:.1f} GPUs requested")
    return Trace(name=trace.name, pods=pods, path=trace.path, format=trace.format,
                 description=desc)
