"""Where the cards sit inside a machine: NUMA nodes, PCIe switches, NVLink, NICs.

A :class:`ServerTopology` describes one server: per GPU (in card index order)
its NUMA node, its PCIe switch and optionally its board (two GPUs on one
board, as on a dual-GPU card); NVLink links between GPU pairs, or each GPU's
links into an NVSwitch fabric; and NICs with their NUMA node and switch. From
it, :mod:`hamisim.hami.gpuscore` derives the pair scores HAMi's device plugin
writes to ``hami.io/node-nvidia-score``, and the topology metrics say how well
multi-GPU pods were placed.

:data:`TEMPLATES` are typical layouts of common servers. They are
*approximations* of those machines' PCIe layouts (which differ between vendors
and even boards), written from the vendors' public descriptions: what matters
for HAMi is which GPUs share a PCIe switch or a NUMA node and how many NVLinks
join them. Each template also names the card HAMi registers for that GPU (its
type as NVML names it, and its memory in MiB), used when a node gives no cards
of its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["GpuPlace", "NicPlace", "TemplateCard", "ServerTopology", "TEMPLATES",
           "MAX_NVLINKS"]

#: NVLinks per GPU pair HAMi scores (``nvlinkCountToType`` covers 1..18)
MAX_NVLINKS = 18


@dataclass(frozen=True)
class GpuPlace:
    """Where one GPU sits: its NUMA node, PCIe switch and (optional) board."""

    numa: int = 0
    switch: int = 0
    board: int | None = None


@dataclass(frozen=True)
class NicPlace:
    """A network card (RDMA NIC): its NUMA node and PCIe switch."""

    numa: int = 0
    switch: int = 0


@dataclass(frozen=True)
class TemplateCard:
    """The card a template's GPUs register as (``hami.io/node-nvidia-register``)."""

    type: str
    devmem: int
    devcore: int = 100
    count: int = 10


@dataclass(frozen=True)
class ServerTopology:
    """One server's GPU layout.

    ``nvlink`` maps an ordered GPU pair ``(a, b)`` (card indexes) to the NVLinks
    GPU ``a`` sees towards ``b``; a pair given one way only is the same both
    ways. ``nvswitch`` gives, per GPU, its NVLinks into an NVSwitch fabric (0 =
    not connected); two GPUs on the fabric are joined by the smaller count.
    """

    gpus: tuple[GpuPlace, ...]
    nvlink: Mapping[tuple[int, int], int] = field(default_factory=dict)
    nvswitch: tuple[int, ...] = ()
    nics: tuple[NicPlace, ...] = ()
    #: the template this came from (``None``: described in full)
    template: str | None = None
    card: TemplateCard | None = None
    #: whether the device plugin writes pair scores (``ENABLE_TOPOLOGY_SCORE``);
    #: ``None``: as HAMi's chart sets it (on when the card policy is topology-aware)
    score: bool | None = None

    def links(self, a: int, b: int) -> int:
        """The NVLinks GPU ``a`` sees towards GPU ``b`` (direct, else via NVSwitch)."""
        direct = self.nvlink.get((a, b))
        if direct is None:
            direct = self.nvlink.get((b, a), 0)
        if direct:
            return direct
        if self.nvswitch and (a, b) not in self.nvlink and (b, a) not in self.nvlink:
            la, lb = self.nvswitch[a], self.nvswitch[b]
            if la and lb:
                return min(la, lb)
        return 0

    def nearest_nic(self, gpu: int) -> NicPlace | None:
        """The NIC closest to ``gpu``: on its switch, else on its NUMA node, else
        the first (``None`` without NICs)."""
        place = self.gpus[gpu]
        for nic in self.nics:
            if nic.switch == place.switch and nic.numa == place.numa:
                return nic
        for nic in self.nics:
            if nic.numa == place.numa:
                return nic
        return self.nics[0] if self.nics else None


def _pcie(numa_of_switch: list[int], gpus_per_switch: int, nics: tuple[NicPlace, ...] = ()
          ) -> tuple[tuple[GpuPlace, ...], tuple[NicPlace, ...]]:
    gpus = tuple(GpuPlace(numa=numa, switch=s) for s, numa in enumerate(numa_of_switch)
                 for _ in range(gpus_per_switch))
    return gpus, nics


def _templates() -> dict[str, ServerTopology]:
    h100 = TemplateCard("NVIDIA H100 80GB HBM3", 81559)
    a100 = TemplateCard("NVIDIA A100-SXM4-80GB", 81920)
    l40s = TemplateCard("NVIDIA L40S", 46068)
    t4 = TemplateCard("NVIDIA-Tesla T4", 15360)
    out: dict[str, ServerTopology] = {}
    # DGX/HGX H100: 8 GPUs on 4 NVSwitches, 18 NVLinks each; 2 CPU sockets, GPUs
    # 0-3 on the first; one PCIe switch per GPU with its ConnectX-7 NIC
    gpus = tuple(GpuPlace(numa=i // 4, switch=i) for i in range(8))
    nics = tuple(NicPlace(numa=i // 4, switch=i) for i in range(8))
    out["dgx-h100"] = ServerTopology(gpus, nvswitch=(18,) * 8, nics=nics, card=h100)
    # DGX/HGX A100: 8 GPUs on 6 NVSwitches, 12 NVLinks each; 2 sockets; two GPUs
    # and two NICs per PCIe switch, switches 0-1 on the first socket
    gpus, _ = _pcie([0, 0, 1, 1], 2)
    nics = tuple(NicPlace(numa=s // 2, switch=s) for s in range(4) for _ in range(2))
    out["dgx-a100"] = ServerTopology(gpus, nvswitch=(12,) * 8, nics=nics, card=a100)
    # 8 PCIe GPUs, 2 sockets, 4 switches of two GPUs; a NIC on each socket's first switch
    gpus, nics = _pcie([0, 0, 1, 1], 2, (NicPlace(0, 0), NicPlace(1, 2)))
    out["pcie-8gpu"] = ServerTopology(gpus, nics=nics, card=l40s)
    # the mutex article's 4-GPU box: GPUs 0/1 and 2/3 share a switch, one switch
    # per socket, the RDMA NIC beside GPUs 0/1
    gpus, nics = _pcie([0, 1], 2, (NicPlace(0, 0),))
    out["pcie-4gpu"] = ServerTopology(gpus, nics=nics, card=l40s)
    # L40S servers: as pcie-8gpu
    out["l40s-8gpu"] = ServerTopology(out["pcie-8gpu"].gpus, nics=out["pcie-8gpu"].nics,
                                      card=l40s)
    # T4 inference box: 4 cards on CPU root ports, two per socket, one NIC
    gpus = tuple(GpuPlace(numa=i // 2, switch=i) for i in range(4))
    out["t4-4gpu"] = ServerTopology(gpus, nics=(NicPlace(0, 0),), card=t4)
    return {name: ServerTopology(t.gpus, t.nvlink, t.nvswitch, t.nics, name, t.card)
            for name, t in out.items()}


#: built-in server layouts by name (cluster files: ``topology: dgx-h100``)
TEMPLATES: dict[str, ServerTopology] = _templates()
