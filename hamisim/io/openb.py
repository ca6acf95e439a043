"""The Alibaba openb trace (``cluster-trace-gpu-v2023``) as HAMi pods and nodes.

Pod lists (:func:`read_openb_pods`; :func:`hamisim.io.traces.read_trace` routes
a ``.csv`` here when its header starts with
``name,cpu_milli,memory_mib,num_gpu,gpu_milli``). The 11-column files add
``gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time``;
the ``multigpu*`` files have the first 5 columns only. Each row becomes one
single-container pod (FGD-OPENB.md §2.2, §6.5):

* ``num_gpu == 0``: no GPU (``gpu_milli`` must then be 0);
* ``gpu_milli == 1000``: ``nvidia.com/gpu: num_gpu`` only — HAMi's webhook
  then makes every card exclusive (gpucores 100, whole memory);
* ``gpu_milli < 1000`` (fractional, per card): ``nvidia.com/gpu: num_gpu``,
  ``nvidia.com/gpucores`` and ``nvidia.com/gpumem-percentage`` both
  ``gpu_milli // 10`` (openb values are multiples of 10; any other value is
  rounded down, to at least 1, so 815 → 81 and 5 → 1);
* ``gpu_spec`` ``A|B`` → annotation ``nvidia.com/use-gputype: "A,B"``
  (repeated models listed once), matched by HAMi as a case-insensitive
  substring of the card type ``NVIDIA-<model>``;
* ``cpu_milli`` / ``memory_mib`` → the pod's kube-scheduler requests;
* ``creation_time`` → ``arrival``, ``deletion_time`` → ``deletion`` (an
  empty deletion = none), ``duration`` stays ``None``. Files without
  timestamps put every pod at arrival 0, in file order.

``qos``, ``pod_phase`` and ``scheduled_time`` are read past but not kept:
HAMi does not schedule by them and FGD's experiments ignore them.

Node lists (:func:`read_openb_nodes`, header ``sn,cpu_milli,memory_mib,gpu,model``):
one node per row named ``sn`` with allocatable ``cpu_milli``/``memory_mib``
and ``gpu`` cards ``GPU-<sn>-<i>`` (index i, count 10 = HAMi chart
``deviceSplitCount``, devcore 100, numa 0, type ``NVIDIA-<model>``, devmem
from :data:`OPENB_CARD_MEMORY_MIB`, the FGD simulator's table, since openb
gives no card memory). ``gpu == 0`` rows (the CPU-only nodes of the all-node
list) become nodes without cards. No model name is a substring of another
model's card type (checked by the tests), so ``use-gputype`` selects
exactly the listed models, as openb's ``gpu_spec`` does.

(:func:`hamisim.io.clusterfile.cluster_from_path` loads either a cluster file or an openb
node list.)
"""
from __future__ import annotations

import os
from typing import Mapping

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.errors import InputError
from hamisim.io.tables import csv_header, csv_records, parse_int_cell, read_text
from hamisim.pods import GPU, GPUCORES, GPUMEM_PERCENTAGE, Container, Pod
from hamisim.workload import Trace, TracePod

__all__ = ["OPENB_CARD_MEMORY_MIB", "OPENB_POD_COLUMNS", "OPENB_NODE_COLUMNS",
           "read_openb_pods", "openb_pods_from_text", "read_openb_nodes", "openb_nodes_from_text",
           "openb_card_type"]

#: Card memory (MiB) per openb GPU model, from the FGD simulator
#: (``pkg/type/open-gpu-share/utils/const.go``; FGD-OPENB.md §2.1).
OPENB_CARD_MEMORY_MIB: dict[str, int] = {
    "T4": 15109, "V100M16": 16160, "P100": 16280, "A10": 22731, "V100M32": 32510,
    "G2": 20000, "G3": 30000,
}
OPENB_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
                     "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
OPENB_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
_BASE = OPENB_POD_COLUMNS[:5]
_USE_GPUTYPE = "nvidia.com/use-gputype"
#: HAMi chart default ``deviceSplitCount``.
_SPLIT_COUNT = 10


def openb_card_type(model: str) -> str:
    """The HAMi card type registered for an openb model: ``NVIDIA-<model>``."""
    return f"NVIDIA-{model}"


def read_openb_pods(path: str | os.PathLike[str]) -> Trace:
    """Read an openb pod list (11- or 5-column CSV) into a :class:`Trace`
    (``format="openb"``); raises :class:`InputError` with the row's line."""
    name = os.fspath(path)
    return openb_pods_from_text(read_text(name), name)


def _int(cell: str, what: str, path: str, line: int, *, min: int = 0,
         max: int | None = None) -> int:
    try:
        value = parse_int_cell(cell, what)
    except ValueError as exc:
        raise InputError(path, line, str(exc)) from None
    if value < min:
        raise InputError(path, line, f"{what} must be >= {min}, got {value}")
    if max is not None and value > max:
        raise InputError(path, line, f"{what} must be <= {max}, got {value}")
    return value


def openb_pods_from_text(text: str, path: str) -> Trace:
    """:func:`read_openb_pods` on text already read from ``path``."""
    columns = csv_header(text, path)
    if tuple(columns[:5]) != _BASE:
        raise InputError(path, 1, f"not an openb pod list: the header must start with "
                                  f"{','.join(_BASE)}")
    for c in columns[5:]:
        if c not in OPENB_POD_COLUMNS:
            raise InputError(path, 1, f"unknown openb pod-list column '{c}' (expected "
                                      f"{', '.join(OPENB_POD_COLUMNS)})")
    col = {c: i for i, c in enumerate(columns)}
    timed = "creation_time" in col
    pods: list[TracePod] = []
    first_seen: dict[str, int] = {}
    for line, f in csv_records(text, path, len(columns)):
        name = _unique_name(f[0], first_seen, path, line, "missing pod name",
                            "duplicate pod name")
        what = f"pod '{name}':"
        cpu = _int(f[1], f"{what} 'cpu_milli'", path, line)
        mem = _int(f[2], f"{what} 'memory_mib'", path, line)
        num_gpu = _int(f[3], f"{what} 'num_gpu'", path, line, max=2**31 - 1)
        milli = _int(f[4], f"{what} 'gpu_milli'", path, line, max=1000)
        limits: dict[str, int] = {}
        if num_gpu == 0:
            if milli != 0:
                raise InputError(path, line, f"{what} 'gpu_milli' is {milli} but 'num_gpu' is 0")
        elif milli == 0:
            raise InputError(path, line, f"{what} 'gpu_milli' is 0 but 'num_gpu' is {num_gpu} "
                                         "(a GPU pod needs 1..1000 milli per card)")
        else:
            limits[GPU] = num_gpu
            if milli < 1000:
                pct = max(milli // 10, 1)
                limits[GPUCORES] = pct
                limits[GPUMEM_PERCENTAGE] = pct
        annotations: dict[str, str] = {}
        if "gpu_spec" in col:
            spec = [m.strip() for m in f[col["gpu_spec"]].split("|") if m.strip()]
            if spec:
                annotations[_USE_GPUTYPE] = ",".join(dict.fromkeys(spec))
        arrival, deletion = 0.0, None
        if timed:
            cell = f[col["creation_time"]]
            if not cell.strip():
                raise InputError(path, line, f"{what} 'creation_time' is empty")
            arrival = float(_int(cell, f"{what} 'creation_time'", path, line))
            if "deletion_time" in col and f[col["deletion_time"]].strip():
                deletion = float(_int(f[col["deletion_time"]], f"{what} 'deletion_time'",
                                      path, line))
                if deletion < arrival:
                    raise InputError(path, line, f"{what} 'deletion_time' {int(deletion)} is "
                                                 f"before 'creation_time' {int(arrival)}")
        pod = Pod(name=name, containers=(Container(limits=limits),), annotations=annotations,
                  cpu_milli=cpu, memory_mib=mem)
        pods.append(TracePod(pod=pod, arrival=arrival, duration=None, deletion=deletion,
                             line=line))
    if not pods:
        raise InputError(path, 1, "the trace has no pods")
    return Trace(name=os.path.splitext(os.path.basename(path))[0], pods=pods, path=path,
                 format="openb")


def read_openb_nodes(path: str | os.PathLike[str], *,
                     card_memory_mib: Mapping[str, int] = OPENB_CARD_MEMORY_MIB,
                     scheduler: SchedulerConfig = SchedulerConfig()) -> Cluster:
    """Read an openb node list into a :class:`Cluster` (cards as in the module
    docstring); ``card_memory_mib`` maps model -> card memory, ``scheduler``
    is the cluster's scheduler settings (HAMi defaults)."""
    name = os.fspath(path)
    return openb_nodes_from_text(read_text(name), name, card_memory_mib, scheduler)


def _unique_name(cell: str, first_seen: dict[str, int], path: str, line: int,
                 missing: str, duplicate: str) -> str:
    """A row's name column: present and not seen before (``first_seen`` records it)."""
    name = cell.strip()
    if not name:
        raise InputError(path, line, missing)
    if name in first_seen:
        raise InputError(path, line, f"{duplicate} '{name}' (first on line "
                                     f"{first_seen[name]}, again on line {line})")
    first_seen[name] = line
    return name


def openb_nodes_from_text(text: str, name: str,
                          card_memory_mib: Mapping[str, int] = OPENB_CARD_MEMORY_MIB,
                          scheduler: SchedulerConfig = SchedulerConfig()) -> Cluster:
    """An openb node list already read as ``text`` from file ``name``."""
    columns = csv_header(text, name)
    if tuple(columns) != OPENB_NODE_COLUMNS:
        raise InputError(name, 1, f"not an openb node list: the header must be "
                                  f"{','.join(OPENB_NODE_COLUMNS)}")
    nodes: list[Node] = []
    first_seen: dict[str, int] = {}
    for line, f in csv_records(text, name, len(columns)):
        sn = _unique_name(f[0], first_seen, name, line, "missing node name 'sn'",
                          "duplicate node")
        what = f"node '{sn}':"
        cpu = _int(f[1], f"{what} 'cpu_milli'", name, line)
        mem = _int(f[2], f"{what} 'memory_mib'", name, line)
        gpus = _int(f[3], f"{what} 'gpu'", name, line, max=64)   # clusterfile.MAX_CARDS_PER_NODE
        model = f[4].strip()
        cards: tuple[Card, ...] = ()
        if gpus:
            if not model:
                raise InputError(name, line, f"{what} {gpus} GPUs but no 'model'")
            if model not in card_memory_mib:
                raise InputError(name, line, f"{what} unknown GPU model '{model}' (card memory "
                                             f"known for {', '.join(card_memory_mib)})")
            cards = tuple(Card(id=f"GPU-{sn}-{i}", index=i, count=_SPLIT_COUNT,
                               devmem=card_memory_mib[model], devcore=100,
                               type=openb_card_type(model), numa=0)
                          for i in range(gpus))
        nodes.append(Node(name=sn, cards=cards, cpu_milli=cpu, memory_mib=mem))
    if not nodes:
        raise InputError(name, 1, "the node list has no nodes")
    return Cluster(nodes=tuple(nodes), scheduler=scheduler)
