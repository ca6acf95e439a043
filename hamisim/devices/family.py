"""What every device family of HAMi shares: its identity and the rules its Fit applies.

HAMi v2.10.0 gives each backend (``pkg/device/<vendor>``) the same interface
(``pkg/device/devices.go``): a *common word* that is both its registry key and
the ``Type`` of the requests it generates, resource names, annotations for
card type and UUID filters, and a ``Fit`` that walks the node's cards from the
last one. The backends differ in which of the steps NVIDIA's Fit has they
take at all; :class:`Family` records that as flags, so one readable Fit
(:func:`hamisim.hami.reference.fit`) and one compiled Fit (``_core._fit``)
serve every family.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Family"]


@dataclass(frozen=True)
class Family:
    """One HAMi device backend as its v2.10.0 source defines it.

    ``fid`` is the family's number in hamisim (the bit of the kernel's
    per-card offer mask, ``_core._fit``); the rest is HAMi's.
    """

    #: ``CommonWord()``: the registry key and every request's ``Type``
    word: str
    #: the vendor, in words (console and warnings)
    vendor: str
    #: the package under HAMi's ``pkg/device``
    package: str
    fid: int
    #: resource names (``GetResourceNames``; the chart's device-config defaults)
    count_name: str
    memory_name: str
    cores_name: str
    #: pod annotations of ``CheckType`` (``None``: the family has none)
    use_type: str | None
    nouse_type: str | None
    #: pod annotations of ``CheckUUID``
    use_uuid: str
    nouse_uuid: str
    #: the node annotation the device plugin registers its cards in
    register_annotation: str
    #: the pod annotations ``PatchAnnotations`` writes (to-allocate, allocated)
    to_allocate_annotation: str
    allocated_annotation: str
    # -- which of NVIDIA's Fit steps the family's Fit takes ---------------
    #: ``nvidia.com/vgpu-mode`` against the card's mode
    checks_mode: bool = False
    #: ``hami.io/device-cordon`` (``CardCordoned``)
    checks_cordon: bool = False
    #: ``nvidia.com/numa-bind``'s regrouping by NUMA node
    numa_bind: bool = False
    #: the ResourceQuota re-check per candidate card (``ResourceQuotaNotFit``)
    fit_quota: bool = False
    #: MIG cards (``mode: mig``)
    mig: bool = False
    #: the ``topology-aware`` card policy's pair scores
    topology: bool = False
