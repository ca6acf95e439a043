"""Initial states: pods already running when a run starts (DESIGN §4.4).

A state file (``.yaml``, ``.yml`` or ``.json``) lists the pods that hold
resources at time 0, as HAMi's pod cache would hold them::

    source: kubectl dump (hamisim import)    # optional, informational
    pods:
      - name: default/jupyter-alice          # required, unique
        node: gpu-node-1                     # required, a node of the cluster
        namespace: team-a                    # optional (default "default"): for ResourceQuota
        devices: "GPU-0b1c...,NVIDIA,4000,30:;"   # hami.io/vgpu-devices-allocated
        mig_allocations: '[{"containerIndex":0,...}]'  # hami.io/vgpu-mig-allocations (MIG cards)
        init_containers: 0                   # optional: leading segments that are init containers
        init_finished: false                 # optional: HAMi shrank the pod to its app containers
        cpu_milli: 2000                      # optional kube-scheduler requests
        memory_mib: 8192
        departure: 600                       # optional: seconds after the start; absent = runs on

``devices`` is the pod's ``hami.io/vgpu-devices-allocated`` annotation,
decoded as HAMi's informer decodes it (``DecodePodDevices``): segments
separated by ``;`` are containers in order, init containers first (segment
``k`` is container ``k``); entries ``UUID,TYPE,MEM,CORES`` separated by ``:``
are cards; entries without a comma are skipped. Absent, null or empty means
the pod holds no card (a CPU-only pod: it still counts for CPU and memory).
The first ``init_containers`` segments are init containers, whose usage is
the peak over them rather than the sum (HAMi v2.10.0's collapsed usage);
``init_finished: true`` drops them, as HAMi does once every init container
has succeeded.

A card in ``mig`` mode holds the MIG instance ``mig_allocations`` (the pod's
``hami.io/vgpu-mig-allocations``) gives it: HAMi pairs the entries with the
pod's cards by GPU UUID, in order. A pod on a MIG card without one is an
error: HAMi would mark the card unhealthy (it fails closed), which hamisim does
not model.

Every card must be a card of the pod's node, every node a node of the
cluster; problems are :class:`~hamisim.errors.InputError` at the offending
line. Cards the state fills beyond their registration (slots, memory or
cores) are reported in :attr:`InitialState.warnings`, not rejected: a real
cluster can be in that state after a registration change, and HAMi only
refuses new pods there.
"""
from __future__ import annotations

import math
import os
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from hamisim.cluster import Cluster
from hamisim.errors import InputError, InputWarning
from hamisim.hami.decision import Pick
from hamisim.hami.reference import collapsed_usage
from hamisim.io.documents import INT32_MAX, Doc, Value, from_plain, load_mapping, parse_json
from hamisim.io.podspec import namespace_from_value

__all__ = ["InitialPod", "InitialState", "load_state", "state_from_document",
           "decode_devices", "with_mig_allocations", "STATE_KEYS", "STATE_POD_KEYS"]

STATE_KEYS = frozenset({"source", "pods"})
STATE_POD_KEYS = frozenset({"name", "node", "namespace", "devices", "init_containers",
                            "init_finished", "cpu_milli", "memory_mib", "departure",
                            "mig_allocations"})


@dataclass(frozen=True)
class InitialPod:
    """One pod running at time 0.

    ``containers`` holds one list of :class:`~hamisim.hami.decision.Pick` per
    annotation segment (init containers first), as the schedulers'
    ``adopt`` takes them; ``n_init`` of them are init containers.
    """

    name: str
    node: str
    containers: list[list[Pick]]
    n_init: int = 0
    cpu_milli: int = 0
    memory_mib: int = 0
    departure: float | None = None
    devices: str | None = None
    line: int = 0
    namespace: str = "default"


@dataclass
class InitialState:
    """A loaded state file: its pods in file order, checked against a cluster."""

    pods: list[InitialPod]
    path: str | None = None
    source: str | None = None
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.pods)

    def names(self) -> set[str]:
        return {p.name for p in self.pods}

    def where(self, pod: InitialPod) -> str:
        return f"{self.path}:{pod.line}" if self.path else f"pod {pod.name}"

    def check_disjoint(self, names: Iterable[str], what: str) -> None:
        """Raise ``InputError`` (at the state line) for a pod that is both running
        initially and in ``what`` (e.g. the trace): HAMi would re-schedule it."""
        mine = {p.name: p for p in self.pods}
        for name in names:
            if name in mine:
                raise InputError(self.path, mine[name].line,
                                 f"pod '{name}' is running in the initial state and also "
                                 f"appears in {what}; pod names must be distinct")

    def adopt_into(self, scheduler, cluster: Cluster) -> None:
        """Adopt every pod into ``scheduler`` (``adopt(name, node_index, ...)``)."""
        index = {n.name: i for i, n in enumerate(cluster.nodes)}
        for p in self.pods:
            scheduler.adopt(p.name, index[p.node], p.containers, p.n_init, p.cpu_milli,
                            p.memory_mib, namespace=p.namespace)


def load_state(path: str | os.PathLike[str], cluster: Cluster) -> InitialState:
    """Load a state file and check it against ``cluster``; raises ``InputError``."""
    name = os.fspath(path)
    return state_from_document(load_mapping(name), cluster, name)


def state_from_document(doc: Doc, cluster: Cluster, path: str | None = None) -> InitialState:
    """Build an :class:`InitialState` from a loaded top-level mapping."""
    doc.check_keys(STATE_KEYS, "a state file")
    source = doc.optional_str("source")
    items = doc.require_list("pods")
    nodes = {n.name: n for n in cluster.nodes}
    seen: dict[str, int] = {}
    pods: list[InitialPod] = []
    for pos, item in enumerate(items):
        entry = item.as_doc(f"pod {pos}").with_context(f"pod {pos}")
        entry.check_keys(STATE_POD_KEYS, "a state pod")
        name = entry.require_str("name")
        entry = entry.with_context(f"pod '{name}'")
        if name in seen:
            raise entry.error(f"duplicate pod name (first given on line {seen[name]})")
        seen[name] = entry.line
        node_name = entry.require_str("node")
        node = nodes.get(node_name)
        if node is None:
            raise entry.get("node").error(
                f"node '{node_name}' is not in the cluster ({_some(nodes)})")
        n_init = entry.optional_int("init_containers", 0, min=0, max=INT32_MAX)
        finished = entry.optional_bool("init_finished", False)
        dev_v = entry.get("devices")
        devices = None if dev_v is None or dev_v.is_null else dev_v.as_str("'devices'")
        cards = {c.id: c for c in node.cards}
        containers = decode_devices(devices, dev_v, cards, node_name) if devices else []
        containers = _with_mig(entry, containers, cards)
        if devices and n_init > len(containers):
            v = entry.get("init_containers")
            warnings.warn(InputWarning(f"{v.path}:{v.line}", (
                f"{entry.context}: 'init_containers: {n_init}' is more than the "
                f"{len(containers)} containers 'devices' gives: all of them count as init "
                "containers (the pod's usage is their peak, not their sum)")), stacklevel=2)
        if finished:
            containers = [[] if k < n_init else picks for k, picks in enumerate(containers)]
        departure = _departure(entry)
        pods.append(InitialPod(
            name=name, node=node_name, containers=containers, n_init=n_init,
            cpu_milli=entry.optional_int("cpu_milli", 0, min=0),
            memory_mib=entry.optional_int("memory_mib", 0, min=0),
            departure=departure, devices=devices or None, line=entry.line,
            namespace=namespace_from_value(entry.get("namespace"))))
    return InitialState(pods, path, source, _overcommitted(pods, cluster))


def with_mig_allocations(text: str | None, containers: list[list[Pick]], cards: dict,
                         path: str | None = None, context: str = "") -> list[list[Pick]]:
    """``containers`` (from :func:`decode_devices`) with the picks on MIG cards
    given their instances from ``text``, a ``hami.io/vgpu-mig-allocations`` value
    (e.g. a pods table's ``mig_allocations``), by the rules of a state file's
    ``mig_allocations``; problems are :class:`InputError` at ``path``."""
    entry = from_plain({} if text is None else {"mig_allocations": text}, path, 0, context)
    return _with_mig(entry, containers, cards)


def _with_mig(entry: Doc, containers: list[list[Pick]], cards: dict) -> list[list[Pick]]:
    """The pod's picks on MIG cards with their instances from ``mig_allocations``."""
    value = entry.get("mig_allocations")
    on_mig = [p.uuid for picks in containers for p in picks if cards[p.uuid].mode == "mig"]
    if value is None or value.is_null:
        if on_mig:
            raise entry.error(
                f"the pod holds MIG card '{on_mig[0]}' but gives no 'mig_allocations' (its "
                "hami.io/vgpu-mig-allocations); without it HAMi marks the card unhealthy")
        return containers
    root = parse_json(value.as_str("'mig_allocations'"), value.path, line=value.line,
                      context=f"{entry.context}: 'mig_allocations'")
    queued: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for pos, item in enumerate(root.as_list("the annotation") if not root.is_null else []):
        doc = item.as_doc(f"allocation {pos}").with_context(
            f"{entry.context}: mig_allocations entry {pos}")
        uuid = doc.require_str("gpuUUID")
        profile = doc.require_str("profile")
        place = doc.require("placement").as_doc("'placement'")
        start = place.optional_int("start", 0, min=0, max=63)
        size = place.optional_int("size", 0, min=0, max=64)
        if size == 0:
            raise doc.error("a MIG allocation needs a placement size (HAMi refuses size 0)")
        if start + size > 64:
            raise doc.error(f"placement {{start: {start}, size: {size}}} ends beyond slot 64 "
                            "(hamisim models placements in 0..63)")
        if uuid not in cards or cards[uuid].mode != "mig":
            raise doc.error(f"gpuUUID '{uuid}' is not a MIG card of the pod's node")
        queued[uuid].append((profile, start, size))
    out = []
    for picks in containers:
        row = []
        for p in picks:
            if cards[p.uuid].mode == "mig":
                if not queued[p.uuid]:
                    raise entry.error(f"'mig_allocations' has no instance left for the pod's "
                                      f"card '{p.uuid}' (one entry per card it holds)")
                p = Pick(p.uuid, p.usedmem, p.usedcores, p.idx, queued[p.uuid].pop(0))
            row.append(p)
        out.append(row)
    extra = [u for u, q in queued.items() if q]
    if extra:
        raise entry.error(f"'mig_allocations' holds more instances on '{extra[0]}' than the "
                          "pod's devices name")
    return out


def decode_devices(text: str, where: Value | None, cards: dict, node: str) -> list[list[Pick]]:
    """``hami.io/vgpu-devices-allocated`` -> one list of picks per segment.

    ``where`` locates errors (the annotation's value); ``cards`` maps the
    node's card ids to :class:`~hamisim.cluster.Card`. A final ``;`` closes
    the last container (no empty container after it).
    """
    def error(problem: str) -> InputError:
        if where is not None:
            return where.error(problem)
        return InputError(None, None, problem)

    segments = text.split(";")
    if segments and segments[-1] == "":
        segments.pop()
    out: list[list[Pick]] = []
    for seg_no, seg in enumerate(segments):
        picks = []
        for entry in seg.split(":"):
            if "," not in entry:
                continue            # HAMi skips entries without a comma
            fields = entry.split(",")
            if len(fields) < 4:
                raise error(f"devices entry {entry!r} (container {seg_no}) has "
                            f"{len(fields)} fields; expected UUID,TYPE,MEM,CORES")
            uuid = fields[0].strip()
            mem = _int_field(fields[2], "memory", entry, error)
            cores = _int_field(fields[3], "cores", entry, error)
            card = cards.get(uuid)
            if card is None:
                known = ", ".join(sorted(cards)) or "none"
                raise error(f"devices names card '{uuid}', which is not a card of node "
                            f"'{node}' (cards: {known})")
            picks.append(Pick(uuid, mem, cores, card.index))
        out.append(picks)
    return out


def _int_field(text: str, what: str, entry: str, error) -> int:
    t = text.strip()
    if not t.lstrip("+").isdigit():
        raise error(f"devices entry {entry!r}: {what} {text!r} is not a non-negative integer")
    value = int(t)
    if value > INT32_MAX:
        raise error(f"devices entry {entry!r}: {what} {value} is out of int32 range")
    return value


def _departure(entry: Doc) -> float | None:
    v = entry.get("departure")
    if v is None or v.is_null:
        return None
    data = v.scalar
    if isinstance(data, bool) or not isinstance(data, (int, float)) or v.is_mapping or v.is_list:
        raise v.error(f"'departure' must be a number of seconds, got {v.describe()}")
    if not math.isfinite(data) or data < 0:
        raise v.error(f"'departure' must be a finite number >= 0, got {data!r}")
    return float(data)


def _some(names: dict) -> str:
    listed = sorted(names)
    text = ", ".join(listed[:8]) + (", ..." if len(listed) > 8 else "")
    return f"nodes: {text}" if listed else "the cluster has no nodes"


def _overcommitted(pods: list[InitialPod], cluster: Cluster) -> list[str]:
    usage: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for p in pods:
        for uuid, (used, mem, cores) in collapsed_usage(p.containers, p.n_init).items():
            u = usage[uuid]
            u[0] += used
            u[1] += mem
            u[2] += cores
    out = []
    for node in cluster.nodes:
        for c in node.cards:
            if c.id not in usage:
                continue
            used, mem, cores = usage[c.id]
            over = [f"{what} {u}/{cap}" for what, u, cap in (
                ("slots", used, c.count), ("memory MiB", mem, c.devmem),
                ("cores", cores, c.devcore)) if u > cap]
            if over:
                out.append(f"card {c.id} on node {node.name} is over its registration in the "
                           f"initial state ({', '.join(over)})")
    return out
