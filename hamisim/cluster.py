"""Nodes and cards as HAMi registers them, and the cluster they form.

A :class:`Card` carries the fields of one entry of the node annotation
``hami.io/node-nvidia-register`` (same names). A :class:`Node` adds the
kube-scheduler view (allocatable CPU and memory), the pair scores of
``hami.io/node-nvidia-score`` used by ``topology-aware`` and the per-GPU cordon
list of HAMi v2.10.0 (``hami.io/device-cordon``), and what kube-scheduler's
own filters read: labels, taints and ``spec.unschedulable``. Usage is *not* part of these
objects: it is state of a simulation (see :mod:`hamisim.sim.arrays`).

File loading lives in :mod:`hamisim.io.clusterfile`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hamisim.devices import is_simulated, simulated_cards
from hamisim.mig import DEFAULT_ALLOWLIST, AllowedMigProfiles, MigProfile
from hamisim.topology import ServerTopology

__all__ = ["Card", "Taint", "TAINT_EFFECTS", "Node", "SchedulerConfig", "Quota", "Cluster",
           "group_of", "NO_GPU_GROUP", "KUBE_SCHEDULER_VERSIONS", "INIT_CONTAINER_USAGES",
           "QUOTA_MEMORY", "QUOTA_CORES"]

#: the group of nodes without cards (and without a group of their own)
NO_GPU_GROUP = "no GPU"


@dataclass(frozen=True)
class Card:
    """One physical GPU as HAMi's scheduler sees it.

    ``type`` must contain ``NVIDIA`` (any case) for HAMi's NVIDIA backend to
    offer the card at all (:mod:`hamisim.devices`); other cards are not counted
    as GPUs. Real registrations look like ``NVIDIA-Tesla T4``;
    the exact string ``NVIDIA`` (used by HAMi's unit tests) makes the card
    score count the pod's own request (HAMI-SEMANTICS §3.1).
    """

    id: str
    index: int = 0
    count: int = 10
    devmem: int = 0
    devcore: int = 100
    type: str = "NVIDIA"
    numa: int = 0
    health: bool = True
    mode: str = "hami-core"
    #: ``migProfiles``: what a card in ``mig`` mode may be cut into (:mod:`hamisim.mig`)
    mig_profiles: tuple[MigProfile, ...] = ()
    #: ``customInfo.NetworkID`` of an Ascend 910 card's registration (its HCCS
    #: network; :mod:`hamisim.devices.ascend`), ``None``: none
    network_id: int | None = None


#: Kubernetes' taint effects; kube-scheduler's TaintToleration filter reads the
#: first two, ``PreferNoSchedule`` only affects its scoring.
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")


@dataclass(frozen=True)
class Taint:
    """A node taint (``spec.taints[]``): ``key``, ``value`` (may be empty), ``effect``."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Node:
    """A Kubernetes node with its registered cards in registration order."""

    name: str
    cards: tuple[Card, ...] = ()
    cpu_milli: int | None = None
    memory_mib: int | None = None
    #: ``hami.io/node-nvidia-score``: pair scores uuid -> uuid -> int.
    pair_scores: dict[str, dict[str, int]] = field(default_factory=dict)
    #: card ids cordoned with ``hami.io/device-cordon`` (HAMi v2.10.0).
    cordon: frozenset[str] = frozenset()
    #: the node group it belongs to (a cluster file's ``replicas`` entry or
    #: ``group`` key), for per-group reports; ``None`` = grouped by card type
    group: str | None = None
    #: ``metadata.labels`` (nodeSelector and node affinity match them)
    labels: dict[str, str] = field(default_factory=dict)
    #: ``spec.taints`` in the node's order (the first untolerated one is reported)
    taints: tuple[Taint, ...] = ()
    #: ``spec.unschedulable`` (``kubectl cordon``): kube-scheduler's
    #: NodeUnschedulable filter rejects the node before HAMi sees it
    unschedulable: bool = False
    #: where its cards sit (NUMA, PCIe switches, NVLink, NICs); ``None`` = not described
    topology: ServerTopology | None = None
    #: the node annotation ``hami-vnpu-core`` (Ascend's soft split: only
    #: ``"true"`` enables it); ``None`` = absent, the scheduler's ``hami_vnpu_core`` decides
    hami_vnpu_core: str | None = None

    @property
    def registered(self) -> bool:
        """HAMi knows the node only when its device plugin registered cards."""
        return len(self.cards) > 0


#: ``init_container_usage`` values (HAMi v2.10.0's accounting, or corrected)
INIT_CONTAINER_USAGES = ("hami-v2.10", "corrected")
#: the kube-scheduler releases whose FailedScheduling texts hamisim writes
KUBE_SCHEDULER_VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36")


@dataclass(frozen=True)
class SchedulerConfig:
    """HAMi and kube-scheduler settings (cluster file ``scheduler:``).

    Defaults are HAMi's chart defaults and kube-scheduler's.
    """

    gpu_scheduler_policy: str = "spread"
    node_scheduler_policy: str = "binpack"
    default_memory: int = 0
    default_cores: int = 0
    default_gpu_num: int = 1
    memory_factor: int = 1
    #: 0 = kube-scheduler's adaptive default, 100 = every node.
    percentage_of_nodes_to_score: int = 0
    #: hamisim convention for equal node scores: ``last`` (stable, cluster
    #: order, last wins) or ``random`` (seeded).
    node_tie_break: str = "last"
    #: kube-scheduler's DefaultPreemption plugin (on in its default profile,
    #: which HAMi's chart uses): pods preempt lower-priority pods, and every
    #: FailedScheduling message ends with its verdict (``preemption: ...``).
    #: ``False`` = a profile without it: no preemption, the short message.
    preemption: bool = True
    #: the kube-scheduler release whose texts FailedScheduling messages use
    #: (HAMi's chart runs the cluster's own version): ``1.31``-``1.33`` name an
    #: untolerated taint ``{key: value}``; ``1.34`` adds DynamicResources'
    #: PostFilter text ``no new claims to deallocate``; ``1.35`` and later
    #: also hide the taint (``node(s) had untolerated taint(s)``, backported
    #: to late 1.34 patches).
    kube_scheduler_version: str = "1.32"
    #: how a pod with GPU-less init containers is held on a card: ``hami-v2.10``
    #: as HAMi v2.10.0 caches it on real nodes (the first app containers with
    #: GPUs taken for init containers, see hamisim.hami.reference.collapsed_usage)
    #: or ``corrected`` (every container counted as what it is)
    init_container_usage: str = "hami-v2.10"
    #: HAMi's ``migProfileAllowlist`` (device-config): which MIG profiles the
    #: device plugin registers for which GPU models (the chart's list by default);
    #: the scheduler itself places on whatever the node registered
    mig_profile_allowlist: tuple[AllowedMigProfiles, ...] = DEFAULT_ALLOWLIST
    #: Ascend's ``vnpus.hamiVnpuCore`` (the chart's ``devices.ascend.hamiVnpuCore``):
    #: every node without a ``hami-vnpu-core`` annotation runs the soft split
    hami_vnpu_core: bool = False


#: the ResourceQuota ``spec.hard`` keys HAMi v2.10.0 enforces for NVIDIA cards
#: (``limits.`` + its memory and core resource names; nothing else is read)
QUOTA_MEMORY = "limits.nvidia.com/gpumem"
QUOTA_CORES = "limits.nvidia.com/gpucores"


@dataclass(frozen=True)
class Quota:
    """One namespace's ResourceQuota as HAMi's scheduler enforces it.

    ``memory`` is ``limits.nvidia.com/gpumem`` in MiB (multiplied by
    ``memory_factor`` when compared, so it is written in the user's units),
    ``cores`` is ``limits.nvidia.com/gpucores`` in percent of a card;
    ``None`` = that key is not set (no limit). ``0`` blocks every request.
    """

    memory: int | None = None
    cores: int | None = None

    @property
    def limits(self) -> bool:
        """Whether the quota limits anything."""
        return self.memory is not None or self.cores is not None


@dataclass(frozen=True)
class Cluster:
    """An ordered list of nodes plus the scheduler settings.

    ``quotas`` maps a namespace to its :class:`Quota` (HAMi's ResourceQuota
    accounting; pods carry their ``namespace``). ``group_aliases``: the other
    name of a group in the cluster file it was read from, the entry's
    ``name_prefix`` (a single node: its ``name``) -> its ``group``, where they
    differ (informational: not compared, no effect on scheduling).
    """

    nodes: tuple[Node, ...]
    scheduler: SchedulerConfig = SchedulerConfig()
    quotas: dict[str, Quota] = field(default_factory=dict)
    group_aliases: dict[str, str] = field(default_factory=dict, compare=False)

    def quota_of(self, namespace: str) -> Quota | None:
        """The namespace's quota when it limits something, else ``None``."""
        q = self.quotas.get(namespace)
        return q if q is not None and q.limits else None

    @property
    def n_cards(self) -> int:
        """The GPUs: cards of a family hamisim simulates (:mod:`hamisim.devices`),
        the denominator of every GPU total. Cards of other types never count."""
        return simulated_cards(c for n in self.nodes for c in n.cards)

    def unsimulated_cards(self) -> list[tuple[Node, Card]]:
        """The cards HAMi's NVIDIA backend never offers (their type does not
        contain ``NVIDIA``), with their nodes, in file order."""
        return [(n, c) for n in self.nodes for c in n.cards if not is_simulated(c.type)]


def group_of(node: Node) -> str:
    """The node's group in per-group reports: its node group when it has one,
    else the type of its cards (types ``+``-joined in first-seen order on a
    mixed node), else :data:`NO_GPU_GROUP`."""
    if node.group:
        return node.group
    types = list(dict.fromkeys(c.type for c in node.cards))
    return "+".join(types) if types else NO_GPU_GROUP
