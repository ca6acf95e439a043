"""NVIDIA (``pkg/device/nvidia``): the family HAMi started with.

Its request generation is :func:`hamisim.pods.container_request` and its Fit
:func:`hamisim.hami.reference.fit` (HAMI-SEMANTICS, checked by the 548 vectors
of HAMi's NVIDIA unit tests); this module names the family in the registry.
NVIDIA's Fit is the one with every step: ``nvidia.com/vgpu-mode``,
``hami.io/device-cordon``, ``nvidia.com/numa-bind``, the ResourceQuota
re-check, MIG and ``topology-aware``.
"""
from __future__ import annotations

from hamisim.devices.family import Family

__all__ = ["NVIDIA"]

#: ``nvidia.NvidiaGPUDevice`` (``pkg/device/nvidia/device.go``)
NVIDIA = Family(
    word="NVIDIA", vendor="NVIDIA", package="nvidia", fid=0,
    count_name="nvidia.com/gpu", memory_name="nvidia.com/gpumem",
    cores_name="nvidia.com/gpucores",
    use_type="nvidia.com/use-gputype", nouse_type="nvidia.com/nouse-gputype",
    use_uuid="nvidia.com/use-gpuuuid", nouse_uuid="nvidia.com/nouse-gpuuuid",
    register_annotation="hami.io/node-nvidia-register",
    to_allocate_annotation="hami.io/vgpu-devices-to-allocate",
    allocated_annotation="hami.io/vgpu-devices-allocated",
    checks_mode=True, checks_cordon=True, numa_bind=True, fit_quota=True, mig=True,
    topology=True, register_format="json")
