"""A workload: pods with arrival times and lifetimes, and its transforms.

A :class:`Trace` holds its pods column by column: names, arrival times,
durations, deletions, priorities, source lines, class labels, and per pod the
index of its *template*, the :class:`hamisim.pods.Pod` it is a copy of (a
trace of a million pods has a few hundred distinct requests). Pods are made
from their template when they are needed (:meth:`Trace.iter_arrivals`, which
the engine consumes lazily), so a long trace costs a few dozen bytes per pod,
not a Python object graph. :meth:`Trace.from_pods` and the ``pods`` argument
build one from :class:`TracePod` objects; :attr:`Trace.pods` gives them back.
The readers that build traces from files are in :mod:`hamisim.io.traces` and
:mod:`hamisim.io.openb`.

Transforms (all return new objects and never touch the input):

* :func:`retime`: Poisson arrivals at the rate that offers a target GPU
  load, each pod keeping its lifetime (:func:`poisson_rate`,
  :func:`offered_load`);
* :func:`fill_workload`: the FGD paper's "fill the cluster to X %" workload;
* :func:`scale`: the trace's own pods F times over (thinned or replicated,
  copies jittered by minutes), keeping its daily and weekly cycle.

GPU amounts are :func:`hamisim.shapes.gpu_request`, in whole-card units.
Part of the model: no files.
"""
from __future__ import annotations

import math
from typing import Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from hamisim.pods import GPU, Pod
from hamisim.shapes import gpu_request

__all__ = ["TracePod", "Trace", "lifetime", "poisson_rate", "offered_load", "retime",
           "fill_workload", "pod_like", "scale", "SCALE_JITTER_S", "SCALE_SUFFIX"]


class TracePod(NamedTuple):
    """One pod of a trace with its timing.

    ``arrival``: creation time (s). ``duration``: seconds the pod runs once
    bound (``None`` = to the end of the run). ``deletion``: absolute deletion
    time (s); when set it wins over ``duration`` and a pod still pending then
    is abandoned. ``line``: where the pod came from in its source file (the
    physical line; the 1-based data row for Parquet). ``pod_class``: the
    trace's own class label for per-class reports (``None``: derived from the
    request, :func:`hamisim.shapes.request_class`). ``controller``: the
    controller that owns the pod, ``Kind/name`` (``ReplicaSet/web``,
    ``Job/train-7``; ``None``: a bare pod), which creates it again when HAMi's
    webhook refuses it (:mod:`hamisim.kube.controllers`).
    """

    pod: Pod
    arrival: float
    duration: float | None = None
    deletion: float | None = None
    line: int = 0
    pod_class: str | None = None
    controller: str | None = None

    @property
    def name(self) -> str:
        return self.pod.name


def pod_like(template: Pod, name: str, priority: int = 0) -> Pod:
    """A copy of ``template`` named ``name`` with ``priority``, made without
    :func:`dataclasses.replace` (a million of them are made per long run); it
    shares the template's containers, annotations and computed ``shape_key``."""
    pod = object.__new__(Pod)
    state = pod.__dict__
    state.update(template.__dict__)
    state["name"] = name
    state["priority"] = priority
    return pod


_NAN = float("nan")


def _opt(x: float) -> float | None:
    return None if x != x else x           # NaN means absent


class Trace:
    """A named workload in file order, stored column-wise (module docstring).

    ``format`` is ``csv``, ``parquet``, ``jsonl``, ``openb`` (an openb pod list)
    or ``derived`` (built by a transform); ``path`` is the source file (kept by
    transforms, whose pods keep their source lines).

    Columns (numpy arrays, one entry per pod): ``arrival``, ``duration`` and
    ``deletion`` (float64, NaN = none), ``template`` (int32 into
    :attr:`templates`), ``priority`` (int32), ``line`` (int64), ``pod_class``
    (int32 into :attr:`class_labels`, -1 = none), ``controller`` (int32 into
    :attr:`controller_names`, ``Kind/name``, -1 = a bare pod); ``names`` is a
    list.
    """

    def __init__(self, name: str, pods: Iterable[TracePod] | None = None,
                 path: str | None = None, format: str = "derived", description: str = "",
                 *, columns: dict | None = None) -> None:
        self.name = name
        self.path = path
        self.format = format
        self.description = description
        if columns is None:
            columns = _columns_of(list(pods or ()))
        self.names: list[str] = columns["names"]
        self.arrival: np.ndarray = columns["arrival"]
        self.duration: np.ndarray = columns["duration"]
        self.deletion: np.ndarray = columns["deletion"]
        self.template: np.ndarray = columns["template"]
        self.priority: np.ndarray = columns["priority"]
        self.line: np.ndarray = columns["line"]
        self.pod_class: np.ndarray = columns["pod_class"]
        self.templates: list[Pod] = columns["templates"]
        self.class_labels: list[str] = columns["class_labels"]
        # optional in ``columns`` (a trace without owners): every pod is bare
        self.controller: np.ndarray = columns.get("controller")
        if self.controller is None:
            self.controller = np.full(len(self.names), -1, dtype=np.int32)
        self.controller_names: list[str] = columns.get("controller_names") or []
        for t in self.templates:
            _ = t.shape_key             # computed once, shared by every copy
        self._pods: list[TracePod] | None = None

    @classmethod
    def from_pods(cls, name: str, pods: Iterable[TracePod], **kw) -> Trace:
        return cls(name, pods, **kw)

    def columns(self) -> dict:
        """The columns (the arrays themselves, not copies)."""
        return {"names": self.names, "arrival": self.arrival, "duration": self.duration,
                "deletion": self.deletion, "template": self.template,
                "priority": self.priority, "line": self.line, "pod_class": self.pod_class,
                "templates": self.templates, "class_labels": self.class_labels,
                "controller": self.controller, "controller_names": self.controller_names}

    def with_columns(self, description: str = "", **changes) -> Trace:
        """A trace of the same templates and labels with some columns replaced."""
        cols = {**self.columns(), **changes}
        return Trace(self.name, path=self.path, format=self.format, description=description,
                     columns=cols)

    # -- pods ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.names)

    def pod(self, i: int) -> Pod:
        """The pod of row ``i``."""
        return pod_like(self.templates[self.template[i]], self.names[i], int(self.priority[i]))

    def trace_pod(self, i: int) -> TracePod:
        """The :class:`TracePod` of row ``i``."""
        label = self.pod_class[i]
        owner = self.controller[i]
        return TracePod(self.pod(i), float(self.arrival[i]), _opt(float(self.duration[i])),
                        _opt(float(self.deletion[i])), int(self.line[i]),
                        self.class_labels[label] if label >= 0 else None,
                        self.controller_names[owner] if owner >= 0 else None)

    @property
    def pods(self) -> list[TracePod]:
        """Every pod as a :class:`TracePod`, in file order (made once, then kept:
        prefer :meth:`iter_arrivals` for long traces)."""
        if self._pods is None:
            self._pods = [self.trace_pod(i) for i in range(len(self))]
        return self._pods

    def __iter__(self) -> Iterator[TracePod]:
        """The pods in file order (for :func:`fill_workload` that is submission
        order); use :meth:`iter_arrivals` for arrival order."""
        return (self.trace_pod(i) for i in range(len(self)))

    def arrival_order(self) -> np.ndarray:
        """Row numbers in ``(arrival, file order)`` order (a stable sort)."""
        if len(self.arrival) < 2 or bool(np.all(self.arrival[1:] >= self.arrival[:-1])):
            return np.arange(len(self.arrival))
        return np.argsort(self.arrival, kind="stable")

    def iter_arrivals(self) -> Iterator[TracePod]:
        """The pods in ``(arrival, file order)`` order, made one at a time."""
        return (self.trace_pod(i) for i in self.arrival_order().tolist())

    def where(self, tp: TracePod) -> str:
        """``file:line`` (``file: row N`` for Parquet) of a pod, for messages."""
        return self.where_line(tp.line, tp.name)

    def where_line(self, line: int, name: str = "") -> str:
        if self.path is None:
            return f"{self.name}: pod {name}"
        if self.format == "parquet":
            return f"{self.path}: row {line}"
        return f"{self.path}:{line}"

    # -- aggregates ------------------------------------------------------
    def template_counts(self) -> np.ndarray:
        """How many pods copy each template."""
        return np.bincount(self.template, minlength=len(self.templates))

    def first_rows(self) -> np.ndarray:
        """Per template, the first row that copies it (-1 when none does)."""
        first = np.full(len(self.templates), -1, dtype=np.int64)
        rows = np.arange(len(self.template))[::-1]
        first[self.template[::-1]] = rows
        return first

    def gpu_requests(self, card_memory_mib: int | None = None) -> np.ndarray:
        """Per pod, :func:`gpu_request` (computed once per template)."""
        per = np.array([gpu_request(t, card_memory_mib=card_memory_mib)
                        for t in self.templates], dtype=float)
        return per[self.template] if len(self.template) else np.zeros(0)

    def total_gpu_request(self, *, card_memory_mib: int | None = None) -> float:
        """Sum of :func:`gpu_request` over the pods, in cards."""
        return math.fsum(self.gpu_requests(card_memory_mib).tolist())

    def lifetimes(self) -> np.ndarray:
        """Per pod, :func:`lifetime` (NaN when it runs to the end)."""
        return np.where(np.isnan(self.deletion), self.duration, self.deletion - self.arrival)

    @property
    def has_timestamps(self) -> bool:
        """Whether any pod has a lifetime (``duration`` or ``deletion``)."""
        return bool(np.any(~np.isnan(self.duration) | ~np.isnan(self.deletion)))


def _code(label: str, index: dict[str, int], labels: list[str]) -> int:
    """``label``'s code in ``labels`` (appended, and indexed, when new)."""
    c = index.get(label)
    if c is None:
        c = index[label] = len(labels)
        labels.append(label)
    return c


def _columns_of(pods: Sequence[TracePod]) -> dict:
    """The columns of a list of trace pods; pods of equal ``shape_key`` share a template."""
    templates: list[Pod] = []
    index: dict = {}
    labels: list[str] = []
    label_index: dict[str, int] = {}
    tmpl = np.empty(len(pods), dtype=np.int32)
    cls = np.full(len(pods), -1, dtype=np.int32)
    owners: list[str] = []
    owner_index: dict[str, int] = {}
    owner = np.full(len(pods), -1, dtype=np.int32)
    for i, tp in enumerate(pods):
        if tp.controller is not None:
            owner[i] = _code(tp.controller, owner_index, owners)
        key = tp.pod.shape_key
        k = index.get(key) if key is not None else None
        if k is None:
            k = len(templates)
            templates.append(pod_like(tp.pod, "", 0))
            if key is not None:
                index[key] = k
        tmpl[i] = k
        if tp.pod_class is not None:
            cls[i] = _code(tp.pod_class, label_index, labels)
    return {
        "names": [tp.pod.name for tp in pods],
        "arrival": np.array([tp.arrival for tp in pods], dtype=np.float64),
        "duration": np.array([_NAN if tp.duration is None else tp.duration for tp in pods],
                             dtype=np.float64),
        "deletion": np.array([_NAN if tp.deletion is None else tp.deletion for tp in pods],
                             dtype=np.float64),
        "template": tmpl,
        "priority": np.array([tp.pod.priority for tp in pods], dtype=np.int32),
        "line": np.array([tp.line for tp in pods], dtype=np.int64),
        "pod_class": cls,
        "templates": templates,
        "class_labels": labels,
        "controller": owner,
        "controller_names": owners,
    }


def lifetime(tp: TracePod) -> float | None:
    """How long the pod lives: ``deletion - arrival`` when a deletion is given
    (it wins), else ``duration``; ``None`` when it runs to the end."""
    if tp.deletion is not None:
        return tp.deletion - tp.arrival
    return tp.duration


def _capped(life: np.ndarray, max_lifetime: float | None) -> np.ndarray:
    return life if max_lifetime is None else np.minimum(life, max_lifetime)


def _finite_gl(trace: Trace, card_memory_mib: int | None,
               max_lifetime: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Rows in arrival order and per row g × L (0 for pods without a lifetime)."""
    if max_lifetime is not None and not max_lifetime > 0:
        raise ValueError(f"max_lifetime must be a positive number, got {max_lifetime!r}")
    order = trace.arrival_order()
    life = _capped(trace.lifetimes()[order], max_lifetime)
    g = trace.gpu_requests(card_memory_mib)[order]
    return order, np.where(np.isnan(life), 0.0, g * life)


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
    if not len(trace):
        raise ValueError(f"trace {trace.name} has no pods")
    _, gl = _finite_gl(trace, card_memory_mib, max_lifetime)
    mean = math.fsum(gl.tolist()) / len(gl)
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
    order, gl = _finite_gl(trace, card_memory_mib, max_lifetime)
    span = float(trace.arrival[order[-1]]) if len(order) else 0.0
    if span <= 0:
        raise ValueError(f"trace {trace.name}: all pods arrive at 0; the load is undefined")
    return math.fsum(gl.tolist()) / (capacity_gpus * span)


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
    rows = trace.arrival_order()
    rng = np.random.default_rng(seed)
    names = [trace.names[i] for i in rows.tolist()]
    if n_pods is not None:
        if isinstance(n_pods, bool) or not isinstance(n_pods, int) or n_pods < 1:
            raise ValueError(f"n_pods must be a positive integer, got {n_pods!r}")
        picks = rng.integers(len(rows), size=n_pods)
        names = [f"{names[i]}-r{k}" for k, i in enumerate(picks.tolist())]
        rows = rows[picks]
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=len(rows)))
    desc = (f"{trace.name} retimed: Poisson arrivals at {rate:.6g} pods/s for GPU load "
            f"{target_load:g} of {capacity_gpus:g} GPUs, seed {seed}"
            + (f", lifetimes capped at {max_lifetime:g} s" if max_lifetime is not None else ""))
    return trace.with_columns(
        desc, names=names, arrival=arrivals.astype(np.float64),
        duration=_capped(trace.lifetimes()[rows], max_lifetime),
        deletion=np.full(len(rows), _NAN), template=trace.template[rows],
        priority=trace.priority[rows], line=trace.line[rows],
        pod_class=trace.pod_class[rows], controller=trace.controller[rows])


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
    if not len(trace):
        raise ValueError(f"trace {trace.name} has no pods")
    source = sorted(range(len(trace)), key=trace.names.__getitem__)
    per_pod = trace.gpu_requests(card_memory_mib)
    req = per_pod[source].tolist()
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(source))
    # (row, name, GPU request) of every pod submitted
    chosen = [(source[i], trace.names[source[i]], req[i]) for i in order.tolist()]
    target = fill_to_pct / 100.0 * capacity_gpus
    eps = 1e-9 * max(target, 1.0)
    total = math.fsum(req)
    if total < target:
        if max(req) <= 0:
            raise ValueError(f"trace {trace.name} requests no GPU; it cannot fill a cluster")
        names = set(trace.names)
        cards = [(t.containers[0].value(GPU) or 1) if t.containers else 1
                 for t in trace.templates]
        i = 0
        while True:
            k = int(rng.integers(len(source)))
            row, g = source[k], req[k]
            step = g / max(cards[trace.template[row]], 1) \
                if fgd_stop_quirk and trace.templates[trace.template[row]].containers else g
            if total + step > target + eps:
                break
            new_name = f"{trace.names[row]}-tuned-{i}"
            if new_name in names:
                raise ValueError(f"trace {trace.name}: pod name {new_name} already exists")
            chosen.append((row, new_name, g))
            total += g
            i += 1
    else:
        while total > target + eps:
            k = int(rng.integers(len(chosen)))
            total -= chosen.pop(k)[2]
    rows = np.array([r for r, _, _ in chosen], dtype=np.int64)
    desc = (f"{trace.name} filled to {fill_to_pct:g} % of {capacity_gpus:g} GPUs "
            f"(FGD method), seed {seed}: {len(rows)} pods, {total:.1f} GPUs requested")
    return trace.with_columns(
        desc, names=[n for _, n, _ in chosen], arrival=np.arange(len(rows), dtype=np.float64),
        duration=np.full(len(rows), _NAN), deletion=np.full(len(rows), _NAN),
        template=trace.template[rows], priority=trace.priority[rows], line=trace.line[rows],
        pod_class=trace.pod_class[rows], controller=trace.controller[rows])


#: :func:`scale`: a copy arrives up to this many seconds before or after its pod
SCALE_JITTER_S = 300.0
#: :func:`scale`: copy ``k`` (1, 2, ...) of pod ``p`` is named ``p`` + this + ``k``
SCALE_SUFFIX = "-x"


def scale(trace: Trace, factor: float, seed: int, *,
          jitter_s: float = SCALE_JITTER_S) -> Trace:
    """The trace's own pods ``factor`` times over, keeping when they arrive.

    With ``k = floor(factor)`` and ``m = round((factor - k) × n)`` for a trace of
    ``n`` pods: every pod is kept, with ``k - 1`` copies, and ``m`` pods drawn
    without replacement (``numpy.random.default_rng(seed)``) get one copy more;
    for ``factor < 1`` (``k = 0``) only those ``m`` pods are kept. So the result
    has ``k × n + m`` pods, ``round(factor × n)``. A kept pod is unchanged (its
    name, arrival and deletion). Copy ``c`` (1, 2, ...) of pod ``p`` is named
    ``p-xc`` (:data:`SCALE_SUFFIX`) and arrives ``u`` seconds from ``p``, ``u``
    uniform in ``±jitter_s`` (default :data:`SCALE_JITTER_S`, five minutes: far
    below an hour, so every hour of the day keeps its share of the arrivals),
    reflected at the trace's first and last arrival (its span is kept); a deletion
    time moves with it (its lifetime is kept). Copies keep the pod's request,
    namespace, priority, class and source line; every per-pod column is
    copied, so columns added to :class:`Trace` later follow. Rows come out in
    arrival order (ties: the source pod's order, then the copy).

    Raises ``ValueError`` for a factor that is not a positive finite number, or
    when a copy's name is already a pod's.
    """
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) \
            or not math.isfinite(factor) or not factor > 0:
        raise ValueError(f"the scale factor must be a positive number, got {factor!r}")
    n = len(trace)
    rng = np.random.default_rng(seed)
    whole = int(math.floor(factor))
    extra = int(round((factor - whole) * n))
    order = trace.arrival_order()
    # per source row (in arrival order), how many pods it becomes: the first is
    # the pod itself, the rest copies
    copies = np.full(n, whole, dtype=np.int64)
    if extra:
        copies[np.sort(rng.choice(n, size=extra, replace=False))] += 1
    rows = np.repeat(order, copies)
    copy = np.arange(len(rows)) - np.repeat(np.cumsum(copies) - copies, copies)
    arrival = trace.arrival[rows].astype(np.float64)
    deletion = trace.deletion[rows].astype(np.float64)
    is_copy = copy > 0
    if is_copy.any():
        lo, hi = float(trace.arrival.min()), float(trace.arrival.max())
        shift = rng.uniform(-jitter_s, jitter_s, size=int(is_copy.sum()))
        moved = arrival[is_copy] + shift
        # reflected at the span's ends (a uniform density, no pile-up at them)
        moved = np.where(moved < lo, 2 * lo - moved, moved)
        moved = np.clip(np.where(moved > hi, 2 * hi - moved, moved), lo, hi)
        deletion[is_copy] += moved - arrival[is_copy]
        arrival[is_copy] = moved
    names = [trace.names[r] if c == 0 else f"{trace.names[r]}{SCALE_SUFFIX}{c}"
             for r, c in zip(rows.tolist(), copy.tolist())]
    if is_copy.any():
        taken = set(trace.names)
        clash = next((x for x, c in zip(names, is_copy.tolist()) if c and x in taken), None)
        if clash is not None:
            raise ValueError(f"trace {trace.name}: pod name {clash} already exists; a "
                             f"copy made by scaling would take it")
    final = np.argsort(arrival, kind="stable")
    cols = {k: v for k, v in trace.columns().items()
            if k not in ("templates", "class_labels", "controller_names")}
    taken_cols = {k: (v[rows][final] if isinstance(v, np.ndarray) else
                      [v[r] for r in rows[final].tolist()]) for k, v in cols.items()}
    taken_cols.update(names=[names[i] for i in final.tolist()], arrival=arrival[final],
                      deletion=deletion[final])
    how = "thinned" if factor < 1 else f"copies jittered by up to {jitter_s:g} s"
    desc = f"{trace.name} scaled x{factor:g}: {len(rows)} pods from its {n} ({how}), seed {seed}"
    return trace.with_columns(desc, **taken_cols)
