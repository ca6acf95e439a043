"""HAMi's GPU pair scores: ``hami.io/node-nvidia-score`` from a server's topology.

HAMi v2.10.0's device plugin, when ``ENABLE_TOPOLOGY_SCORE`` is true (its chart
sets it only when the default card policy is ``topology-aware``), writes per
GPU a score towards every other GPU of the node (``CalculateGPUScore`` in
``pkg/device/nvidia/calculate_score.go``, links from ``links.go``):

* each ordered pair has a list of links: one PCIe entry from NVML's common
  ancestor (same board 60, one PCIe switch 50, several switches 40, one host
  bridge 30, one NUMA node 20, across CPUs 10), and one NVLink entry when the
  GPUs are joined by 1..18 NVLinks (100 per link; through an NVSwitch fabric
  the smaller of the two GPUs' link counts);
* the pair's score is the sum over the list;
* a pair whose two directions have lists of different lengths (NVLink seen
  from one side only) scores 0 both ways, and the node gets an
  ``AsymmetricGPUP2PLink`` warning event.

hamisim's topologies (:mod:`hamisim.topology`) give GPUs a board, a switch and
a NUMA node, so the PCIe entry is 60, 50, 20 or 10 (``MULTIPLE`` and
``HOSTBRIDGE`` layouts are not described).
"""
from __future__ import annotations

from hamisim.topology import MAX_NVLINKS, ServerTopology

__all__ = ["P2P_SAME_BOARD", "P2P_SINGLE_SWITCH", "P2P_SAME_CPU", "P2P_CROSS_CPU",
           "NVLINK_SCORE", "LINK_SCORES", "links_score", "link_entries", "pair_score",
           "gpu_scores", "topology_scored"]

#: scores of the PCIe link types (``calculateGPUPairScore``)
P2P_SAME_BOARD = 60        # TOPOLOGY_INTERNAL
P2P_SINGLE_SWITCH = 50     # TOPOLOGY_SINGLE
P2P_SAME_CPU = 20          # TOPOLOGY_NODE
P2P_CROSS_CPU = 10         # TOPOLOGY_SYSTEM
#: score of each NVLink (SingleNVLINKLink = 100 ... EighteenNVLINKLinks = 1800)
NVLINK_SCORE = 100
_COUNTS = ("Single", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten",
           "Eleven", "Twelve", "Thirteen", "Fourteen", "Fifteen", "Sixteen", "Seventeen",
           "Eighteen")
#: HAMi's link types (``P2PLinkType`` in links.go) and their scores; a type not
#: listed (``P2PLinkUnknown``) adds nothing
LINK_SCORES: dict[str, int] = {
    "P2PLinkCrossCPU": P2P_CROSS_CPU, "P2PLinkSameCPU": P2P_SAME_CPU,
    "P2PLinkHostBridge": 30, "P2PLinkMultiSwitch": 40,
    "P2PLinkSingleSwitch": P2P_SINGLE_SWITCH, "P2PLinkSameBoard": P2P_SAME_BOARD,
    **{f"{word}NVLINKLink{'' if i == 0 else 's'}": NVLINK_SCORE * (i + 1)
       for i, word in enumerate(_COUNTS)},
}


def links_score(ab: list[str], ba: list[str]) -> tuple[int, bool]:
    """``calculateGPUPairScore`` on two GPUs' link lists towards each other
    (HAMi's link type names): 0 and asymmetric when the lists' lengths
    differ, else the sum of ``ab``'s scores."""
    if len(ab) != len(ba):
        return 0, True
    return sum(LINK_SCORES.get(t, 0) for t in ab), False


def link_entries(topo: ServerTopology, a: int, b: int) -> list[str]:
    """GPU ``a``'s link entries towards GPU ``b`` (HAMi's link type names): its
    PCIe link type, then its NVLink type when 1..18 NVLinks join them."""
    pa, pb = topo.gpus[a], topo.gpus[b]
    if pa.board is not None and pa.board == pb.board:
        p2p = "P2PLinkSameBoard"
    elif pa.switch == pb.switch:
        p2p = "P2PLinkSingleSwitch"
    elif pa.numa == pb.numa:
        p2p = "P2PLinkSameCPU"
    else:
        p2p = "P2PLinkCrossCPU"
    entries = [p2p]
    n = topo.links(a, b)
    if 1 <= n <= MAX_NVLINKS:
        entries.append(f"{_COUNTS[n - 1]}NVLINKLink{'' if n == 1 else 's'}")
    return entries


def pair_score(topo: ServerTopology, a: int, b: int) -> tuple[int, bool]:
    """GPU ``a``'s score towards GPU ``b``, and whether the pair is asymmetric
    (then the score is 0)."""
    if a == b:
        return 0, False
    return links_score(link_entries(topo, a, b), link_entries(topo, b, a))


def gpu_scores(topo: ServerTopology) -> tuple[dict[int, dict[int, int]], bool]:
    """Every GPU's scores towards the others, by card index, and whether any
    pair is asymmetric (HAMi's ``AsymmetricGPUP2PLink`` node warning)."""
    n = len(topo.gpus)
    scores: dict[int, dict[int, int]] = {}
    asymmetric = False
    for a in range(n):
        row = {}
        for b in range(n):
            if a != b:
                row[b], odd = pair_score(topo, a, b)
                asymmetric = asymmetric or odd
        scores[a] = row
    return scores, asymmetric


def topology_scored(topo: ServerTopology, gpu_policy: str) -> bool:
    """Whether the device plugin writes pair scores for this node: as the
    topology says, else as HAMi v2.10.0's chart deploys it (``ENABLE_TOPOLOGY_SCORE``
    only when the default card policy is ``topology-aware``)."""
    if topo.score is not None:
        return topo.score
    return gpu_policy == "topology-aware"
