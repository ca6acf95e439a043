"""FGD's fragmentation measure on HAMi cards, written to be read (the meter's twin).

The compiled meter (:class:`hamisim.sim.metrics.ClusterMeter`, ``_meter.pyx``)
keeps fragmentation as running sums of per-node terms for speed. This module
computes the same quantities from scratch, card by card, one rule per line,
in plain Python: it is the specification the meter is tested against
(``tests/test_fragmentation.py``) and what ``--check`` recomputes.

The measure is the FGD paper's (Weng et al., ATC '23; README "Fragmentation"),
generalised from milli-GPU to HAMi cards:

* a card's **free amount** (in GPUs) is ``min(free cores / devcore, free
  memory / devmem)`` clipped to [0, 1], and 0 when its slots are all taken or
  it is unhealthy or cordoned;
* a card **hosts** a typical shape when HAMi's Fit would accept one of the
  shape's cards on it alone: a free slot, the shape's memory (MiB, or its
  percentage of this card), its cores, HAMi's two exclusive-card rules
  (cores 100 needs a card with no tenant; cores 0 cannot go on a card whose
  cores are all taken) and the shape's type filter;
* a **node** hosts the shape when at least ``nums`` of its cards do and its
  free CPU covers the shape's CPU; then the free amount of its cards that
  cannot host the shape is fragment, otherwise all of its free amount is; a
  CPU-only shape counts all of it;
* node fragmentation is the popularity-weighted sum over the shapes, cluster
  fragmentation the sum over nodes;
* **unfit**: per card, the summed weight of the shapes it could not serve even
  on an empty node (type, memory, cores, no slot, unhealthy or cordoned, or a
  node with too few such cards or too little CPU; every shape without cards),
  times its free amount. ``stranded = frag - unfit`` is what placement caused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from hamisim.cluster import Card, Cluster, Node, group_of
from hamisim.devices import is_simulated
from hamisim.hami.reference import type_allowed
from hamisim.pods import NO_PERCENTAGE
from hamisim.shapes import NOUSE_GPUTYPE, USE_GPUTYPE, Shape

__all__ = ["Fragmentation", "FragmentationTwin", "card_free", "card_hosts", "unfit_weights",
           "node_fragmentation", "fragmentation"]

#: (slots, memory MiB, cores) a card holds
Usage = tuple[int, int, int]
_IDLE: Usage = (0, 0, 0)


@dataclass
class Fragmentation:
    """Totals in GPUs: the free amount, the FGD fragment, its unfit part, per
    cluster and per node group (:func:`hamisim.cluster.group_of`)."""

    free: float = 0.0
    frag: float = 0.0
    unfit: float = 0.0
    groups: dict[str, "Fragmentation"] = field(default_factory=dict)

    @property
    def stranded(self) -> float:
        """Fragmentation caused by placement: ``frag - unfit``."""
        return self.frag - self.unfit


def _usable(card: Card, node: Node) -> bool:
    # a card HAMi's NVIDIA backend never offers is no GPU (hamisim.devices)
    return card.health and card.id not in node.cordon and is_simulated(card.type)


def card_free(card: Card, node: Node, usage: Usage) -> float:
    """The card's free amount in GPUs (0 when no slot is free or it is unusable)."""
    used, mem, cores = usage
    if used >= card.count or not _usable(card, node):
        return 0.0
    free_cores = (card.devcore - cores) / card.devcore if card.devcore > 0 else 0.0
    free_mem = (card.devmem - mem) / card.devmem if card.devmem > 0 else 0.0
    return min(max(min(free_cores, free_mem), 0.0), 1.0)


def _shape_memory(shape: Shape, card: Card) -> int:
    """MiB one of the shape's cards needs on ``card``."""
    if shape.memreq > 0:
        return shape.memreq
    if shape.pct != NO_PERCENTAGE:
        return card.devmem * shape.pct // 100
    return 0


def _type_ok(shape: Shape, card: Card) -> bool:
    return type_allowed({USE_GPUTYPE: shape.use_gputype, NOUSE_GPUTYPE: shape.nouse_gputype},
                        card.type)


def card_hosts(shape: Shape, card: Card, node: Node, usage: Usage) -> bool:
    """Whether HAMi's Fit would give one of the shape's cards this card, as used now."""
    used, mem, cores = usage
    if used >= card.count or not _usable(card, node) or not _type_ok(shape, card):
        return False
    if card.devmem - mem < _shape_memory(shape, card) or card.devcore - cores < shape.cores:
        return False
    if shape.cores == 100 and card.devcore == 100 and used > 0:
        return False                     # an exclusive request needs a card with no tenant
    if shape.cores == 0 and card.devcore != 0 and cores == card.devcore:
        return False                     # no 0-core request on a card whose cores are all taken
    return True


def unfit_weights(node: Node, shapes: Sequence[Shape]) -> dict[str, float]:
    """Per card of ``node``, the summed weight of the shapes it could not serve
    even with the node empty (its free amount times this is its unfit part)."""
    weights = {c.id: 0.0 for c in node.cards}
    for shape in shapes:
        if shape.nums == 0:
            serve: list[str] = []
        else:
            fits = [c.id for c in node.cards if c.count >= 1
                    and card_hosts(shape, c, node, _IDLE)]
            node_ok = len(fits) >= shape.nums and (node.cpu_milli is None
                                                   or node.cpu_milli >= shape.cpu_milli)
            serve = fits if node_ok else []
        for cid in weights:
            if cid not in serve:
                weights[cid] += shape.weight
    return weights


def node_fragmentation(node: Node, usage: Mapping[str, Usage], cpu_used: int,
                       shapes: Sequence[Shape], unfit: Mapping[str, float]
                       ) -> tuple[float, float, float]:
    """One node's free amount, fragment and unfit part, in GPUs; ``unfit`` as
    :func:`unfit_weights` gives it for this node."""
    free = {c.id: card_free(c, node, usage.get(c.id, _IDLE)) for c in node.cards}
    total = sum(free.values())
    if not node.cards or not shapes:
        return total, 0.0, 0.0
    cpu_free = None if node.cpu_milli is None else node.cpu_milli - cpu_used
    frag = 0.0
    for shape in shapes:
        if shape.nums == 0:
            frag += shape.weight * total
            continue
        hosts = [c.id for c in node.cards
                 if card_hosts(shape, c, node, usage.get(c.id, _IDLE))]
        can = len(hosts) >= shape.nums and (cpu_free is None or cpu_free >= shape.cpu_milli)
        stranded = sum(f for cid, f in free.items() if cid not in hosts)
        frag += shape.weight * (stranded if can else total)
    return total, frag, sum(unfit[cid] * f for cid, f in free.items())


class FragmentationTwin:
    """The measure for one cluster and set of typical shapes (the unfit weights,
    which depend on neither usage nor time, are computed once)."""

    def __init__(self, cluster: Cluster, shapes: Sequence[Shape]) -> None:
        self.cluster = cluster
        self.shapes = list(shapes)
        self.unfit = [unfit_weights(n, self.shapes) for n in cluster.nodes]

    def node(self, i: int, usage: Mapping[str, Usage], cpu_used: int = 0
             ) -> tuple[float, float, float]:
        """Node ``i``'s (free, frag, unfit) in GPUs."""
        return node_fragmentation(self.cluster.nodes[i], usage, cpu_used, self.shapes,
                                  self.unfit[i])

    def reading(self, usage: Mapping[str, Usage], cpu_used: Sequence[int] = ()
                ) -> Fragmentation:
        """The cluster's totals with ``usage`` per card id (HAMi's collapsed
        usage; absent = idle) and ``cpu_used`` milli-CPU per node (cluster
        order; absent = 0)."""
        out = Fragmentation()
        for i, node in enumerate(self.cluster.nodes):
            free, frag, unfit = self.node(i, usage, cpu_used[i] if i < len(cpu_used) else 0)
            group = out.groups.setdefault(group_of(node), Fragmentation())
            for part in (out, group):
                part.free += free
                part.frag += frag
                part.unfit += unfit
        return out


def fragmentation(cluster: Cluster, shapes: Sequence[Shape], usage: Mapping[str, Usage],
                  cpu_used: Sequence[int] = ()) -> Fragmentation:
    """:meth:`FragmentationTwin.reading` in one call."""
    return FragmentationTwin(cluster, shapes).reading(usage, cpu_used)
