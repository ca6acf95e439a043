"""MIG (Multi-Instance GPU) profiles as HAMi v2.10.0's device plugin registers them.

In ``mig`` mode HAMi's device plugin registers each GPU with the MIG profiles
the node may create on it (``migProfiles`` in ``hami.io/node-nvidia-register``):
per profile its name, memory in MiB, a core share in percent of the card, its
slice count and the *placements* NVML allows, ``{start, size}`` in NVML's
placement index space (two instances conflict when their intervals overlap).
The scheduler then picks a profile and a placement for every card a pod asks
for (:mod:`hamisim.hami.mig`).

The numbers come from NVML on the node; HAMi itself has none. Which profiles
are registered is decided by ``migProfileAllowlist`` (HAMi's scheduler
device-config, the chart's default in :data:`DEFAULT_ALLOWLIST`): the first
entry whose ``models`` is a substring of the GPU's NVML name applies; each of
its profile names is looked up in NVML **by its slice prefix only** (``1g``,
``2g``, ...), so ``1g.10gb`` on an A100 40GB registers NVML's one-slice
profile (4864 MiB) under that name. A GPU without any allowlisted profile is
not registered at all.

To let a cluster file say ``mode: mig`` without pasting NVML output,
:data:`NVML_TABLES` holds what NVML reports for common GPUs (see
:class:`NvmlGpu` for the source of each table). These are hamisim's data, not
HAMi's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

__all__ = ["MigPlacement", "MigProfile", "NvmlProfile", "NvmlGpu", "AllowedMigProfiles",
           "NVML_TABLES", "DEFAULT_ALLOWLIST", "SLICE_KEYS", "MAX_PLACEMENT_END",
           "allowlist_problem", "nvml_table_for", "register_profiles", "card_count"]

#: the slice prefixes HAMi's device plugin maps to NVML GPU-instance profiles
#: (``profileNameToGIProfileID``); a name with any other prefix is skipped
SLICE_KEYS = ("1g", "2g", "3g", "4g", "6g", "7g", "8g")
#: placements must end at or before this index (hamisim keeps a card's
#: occupied placements as a 64-bit mask; NVIDIA's GPUs use 0..7)
MAX_PLACEMENT_END = 64


@dataclass(frozen=True)
class MigPlacement:
    """``{start, size}``: the half-open interval ``[start, start + size)``."""

    start: int
    size: int

    def __post_init__(self) -> None:
        # a size-0 placement overlaps nothing, and HAMi's Fit would take it forever
        if self.size < 1 or self.start < 0 or self.start + self.size > MAX_PLACEMENT_END:
            raise ValueError(f"MIG placement {{start: {self.start}, size: {self.size}}}: "
                             f"needs size >= 1 within slots 0..{MAX_PLACEMENT_END - 1}")

    def overlaps(self, other: "MigPlacement") -> bool:
        """HAMi's ``migPlacementsOverlap``: the intervals intersect."""
        return self.start < other.start + other.size and other.start < self.start + self.size

    @property
    def mask(self) -> int:
        """The slots it covers as bits (``size 0`` covers none)."""
        return ((1 << self.size) - 1) << self.start


@dataclass(frozen=True)
class MigProfile:
    """One registered MIG profile (HAMi's ``MigProfile``; JSON keys in brackets).

    ``memory_mb`` [``memoryMB``], ``core`` [``core``: NVML's SM count in percent of
    the full GPU's, rounded up], ``slice_count`` [``sliceCount``], ``placements``
    [``placements``], ``instance_count`` (NVML's; not on the wire, HAMi uses it
    only for the card's ``count``).
    """

    name: str
    memory_mb: int
    core: int
    slice_count: int
    placements: tuple[MigPlacement, ...]
    instance_count: int = 0

    def to_wire(self) -> dict:
        """The profile as HAMi marshals it (``instanceCount`` is not on the wire)."""
        return {"name": self.name, "memoryMB": self.memory_mb, "core": self.core,
                "sliceCount": self.slice_count,
                "placements": [{"start": p.start, "size": p.size} for p in self.placements]}


@dataclass(frozen=True)
class NvmlProfile:
    """What NVML reports for one GPU-instance profile (``nvidia-smi mig -lgip/-lgipp``)."""

    slices: str                 # the slice key HAMi maps to it: "1g", "2g", ...
    name: str                   # NVIDIA's name, e.g. "1g.5gb"
    memory_mb: int
    sms: int
    instances: int
    slice_count: int
    placements: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class NvmlGpu:
    """One GPU model's NVML MIG table: the base profile of every slice count."""

    model: str                  # matched as a substring of the card type
    nvml_name: str              # NVML's device name (HAMi's card type without prefix)
    devmem: int                 # NVML total memory, MiB (HAMi's devmem in mig mode)
    profiles: tuple[NvmlProfile, ...]
    source: str

    @property
    def full_sms(self) -> int:
        return max(p.sms for p in self.profiles)


@dataclass(frozen=True)
class AllowedMigProfiles:
    """One ``migProfileAllowlist`` entry: ``models`` (substrings of the NVML name)
    and the ``profiles`` names registered for them."""

    models: tuple[str, ...]
    profiles: tuple[str, ...]


def _row(slices, name, memory_mb, sms, instances, slice_count, starts, size):
    return NvmlProfile(slices, name, memory_mb, sms, instances, slice_count,
                       tuple((s, size) for s in starts))


_GUIDE = "NVIDIA MIG User Guide, 'Supported MIG Profiles' (names, instances, placements)"


def _gpu8(model, nvml_name, devmem, mem, sms, source):
    """A GPU with NVIDIA's 8-slot geometry (A100, H100, H200): 1g, 2g, 3g, 4g, 7g."""
    return NvmlGpu(model, nvml_name, devmem, (
        _row("1g", f"1g.{mem[0]}", mem[1], sms[0], 7, 1, range(7), 1),
        _row("2g", f"2g.{mem[2]}", mem[3], sms[1], 3, 2, (0, 2, 4), 2),
        _row("3g", f"3g.{mem[4]}", mem[5], sms[2], 2, 3, (0, 4), 4),
        _row("4g", f"4g.{mem[6]}", mem[7], sms[3], 1, 4, (0,), 4),
        _row("7g", f"7g.{mem[8]}", mem[9], sms[4], 1, 7, (0,), 8),
    ), source)


_A100_40 = ("5gb", 4864, "10gb", 9984, "20gb", 20096, "20gb", 20096, "40gb", 40320)
_A100_80 = ("10gb", 9728, "20gb", 19968, "40gb", 40192, "40gb", 40192, "80gb", 80640)
_H100 = ("10gb", 9984, "20gb", 20096, "40gb", 40448, "40gb", 40448, "80gb", 81152)
_H200 = ("18gb", 16384, "35gb", 33024, "71gb", 71168, "71gb", 71168, "141gb", 143104)
_A100_SMS = (14, 28, 42, 56, 98)
_H100_SXM_SMS = (16, 32, 60, 64, 132)
_H100_PCIE_SMS = (14, 30, 46, 62, 114)

#: NVML's MIG tables for common GPUs: memory in MiB as ``nvidia-smi mig -lgip``
#: shows it on recent drivers (it changes a little between driver versions),
#: SMs, instances and ``-lgipp`` placements. ``model`` is matched against the
#: card type. Values marked "(assumed)" in the source were not seen on that
#: exact model and are taken from its sibling.
NVML_TABLES: tuple[NvmlGpu, ...] = (
    _gpu8("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", 40960, _A100_40, _A100_SMS,
          f"{_GUIDE}; -lgip on driver 580.126.09; 1g 4864 MiB also in HAMi's own tests"),
    _gpu8("A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB", 40960, _A100_40, _A100_SMS,
          f"{_GUIDE}; as A100-SXM4-40GB (same NVML profiles, driver 510.47.03 lgip)"),
    _gpu8("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 81920, _A100_80, _A100_SMS,
          f"{_GUIDE}; -lgip on driver 550.54.14; placements as A100 40GB (assumed)"),
    _gpu8("A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 81920, _A100_80, _A100_SMS,
          f"{_GUIDE}; as A100-SXM4-80GB (assumed)"),
    NvmlGpu("A30", "NVIDIA A30", 24576, (
        _row("1g", "1g.6gb", 5952, 14, 4, 1, range(4), 1),
        _row("2g", "2g.12gb", 11968, 28, 2, 2, (0, 2), 2),
        _row("4g", "4g.24gb", 24000, 56, 1, 4, (0,), 4),
    ), f"{_GUIDE}; -lgip and -lgipp on driver 535.183.01"),
    _gpu8("H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 81559, _H100, _H100_SXM_SMS,
          f"{_GUIDE}; -lgip and -lgipp of H100 SXM5 80GB"),
    _gpu8("H100 PCIe", "NVIDIA H100 PCIe", 81559, _H100, _H100_PCIE_SMS,
          f"{_GUIDE}; -lgip on driver 570.169; placements as H100 SXM5 (assumed)"),
    _gpu8("H200", "NVIDIA H200", 143771, _H200, _H100_SXM_SMS,
          f"{_GUIDE}; -lgip of H200 SXM (NVIDIA/mig-parted issue 120); placements as "
          "H100 (assumed)"),
    _gpu8("H200 NVL", "NVIDIA H200 NVL", 143771, _H200, _H100_SXM_SMS,
          f"{_GUIDE}; as H200 SXM (assumed)"),
)


#: HAMi v2.10.0 chart's default ``migProfileAllowlist``
#: (charts/hami/templates/scheduler/device-configmap.yaml)
DEFAULT_ALLOWLIST: tuple[AllowedMigProfiles, ...] = (
    AllowedMigProfiles(("A30",), ("1g.6gb", "2g.12gb", "4g.24gb")),
    AllowedMigProfiles(("A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB"),
                       ("1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb")),
    AllowedMigProfiles(("A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"),
                       ("1g.10gb", "2g.20gb", "3g.40gb", "7g.79gb")),
    AllowedMigProfiles(("H100-PCIE-80GB", "H100-SXM5-80GB"),
                       ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")),
    AllowedMigProfiles(("H100-PCIE-94GB", "H100-SXM5-94GB"),
                       ("1g.12gb", "2g.24gb", "3g.47gb", "7g.94gb")),
    AllowedMigProfiles(("H20", "H100 on GH200"), ("1g.12gb", "2g.24gb", "3g.48gb", "7g.96gb")),
    AllowedMigProfiles(("H200 NVL", "H200-SXM5"), ("1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb")),
    AllowedMigProfiles(("B200",), ("1g.23gb", "2g.45gb", "3g.90gb", "7g.180gb")),
    AllowedMigProfiles(("RTX PRO 6000 Blackwell Server Edition",),
                       ("1g.24gb", "2g.48gb", "4g.96gb")),
)


def allowlist_problem(entries: Sequence[AllowedMigProfiles]) -> str | None:
    """HAMi's ``ValidateMigProfileAllowlist``: what is wrong, or ``None``."""
    for e in entries:
        if not e.models or not e.profiles:
            return "MIG profile allowlist must define models and profiles"
        for name in e.profiles:
            head, dot, _ = name.partition(".")
            if not dot or len(head) < 2 or not head.endswith("g"):
                return f"invalid MIG profile {name!r}"
    return None


def nvml_table_for(card_type: str) -> NvmlGpu | None:
    """The built-in NVML table whose model is in ``card_type`` (the longest match)."""
    hits = [g for g in NVML_TABLES if g.model in card_type]
    return max(hits, key=lambda g: len(g.model)) if hits else None


def register_profiles(gpu: NvmlGpu, card_type: str,
                      allowlist: Sequence[AllowedMigProfiles] = DEFAULT_ALLOWLIST
                      ) -> tuple[MigProfile, ...]:
    """``discoverMigProfiles``: the profiles HAMi's device plugin registers.

    The first allowlist entry with a model contained in ``card_type`` applies
    (HAMi matches the NVML name; the card type is that name, prefixed with
    ``NVIDIA-`` when it does not start with ``NVIDIA``); each name maps to
    NVML's profile by its slice prefix; names without an NVML profile are
    skipped; ``core`` is ``ceil(sms * 100 / full GPU's sms)``.
    """
    by_slices = {p.slices: p for p in gpu.profiles}
    full = gpu.full_sms
    for entry in allowlist:
        if not any(m in card_type for m in entry.models):
            continue
        out = []
        for name in entry.profiles:
            nv = by_slices.get(name.partition(".")[0])
            if nv is None:
                continue
            core = (nv.sms * 100 + full - 1) // full if full > 0 else 0
            out.append(MigProfile(name, nv.memory_mb, core, nv.slice_count,
                                  tuple(MigPlacement(s, z) for s, z in nv.placements),
                                  nv.instances))
        return tuple(out)
    return ()


def card_count(profiles: Sequence[MigProfile]) -> int:
    """A MIG card's ``count``: the largest instance count among its profiles
    (HAMi overwrites ``deviceSplitCount`` with it); without instance counts,
    the largest number of placements."""
    return max((p.instance_count or len(p.placements) for p in profiles), default=0)
