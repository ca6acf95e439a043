"""Cambricon MLU (``pkg/device/cambricon``), as HAMi v2.10.0 schedules it.

Identity: common word and request type ``MLU``; resources
``cambricon.com/vmlu`` (count), ``cambricon.com/mlu.smlu.vmemory`` (memory in
units of 256 MiB, the backend's ``MemoryFactor``) and
``cambricon.com/mlu.smlu.vcore`` (percent of a card), the chart's names; UUID
filters ``cambricon.com/use-gpuuuid`` / ``cambricon.com/nouse-gpuuuid``; the
allocation in ``hami.io/cambricon-mlu-devices-to-allocate`` and
``hami.io/cambricon-mlu-devices-allocated``.

**Cards come from the node's capacity, not from a register annotation**
(:func:`cards_from_capacity`, ``GetNodeDevices``): ``ceil(vcore / 100)``
cards named ``<node>-cambricon-mlu-<i>``, each of type ``MLU``, 100 slots, 100
cores and ``vmemory x 256 x 100 / vcore`` MiB (integer arithmetic, int32).
A cluster file's MLU card is therefore typed ``MLU`` and has 100 slots
unless it says otherwise (a warning then says HAMi never registers it so).

Request generation (:func:`request_fields`): count, memory and cores from
limits, else requests; cores default to 100 (a whole card's, so a card
shared with anyone refuses it: ``ExclusiveDeviceAllocateConflict``); no
memory means the whole card. Fit is DCU's walk with no card-type filter (the
``cambricon.com/use-mlutype`` annotations are defined and never read) and
with a ResourceQuota re-check per card.

Quirks of v2.10.0 kept here:

* the count has no range check (Go's ``int32`` of it; at or below 0 it asks
  nothing); cores are ``int32`` of the value, unchecked;
* a memory value that is not an integer, or above 8,388,607 (x256 within
  int32), drops the whole request;
* the cards' memory is the node's ``vmemory`` spread per 100 ``vcore``: a
  capacity not a multiple of 100 misstates it per card.

Not modelled (said in DESIGN §3): the Fit-time ResourceQuota re-check on
``limits.cambricon.com/mlu.smlu.vmemory`` / ``vcore`` (hamisim's quotas are
NVIDIA's resource names), the ``CAMBRICON_DSMLU_PROFILE`` /
``CAMBRICON_DSMLU_ASSIGNED`` annotations, the backend's own 2-minute node
lock, and kube-scheduler's extended-resource check of ``vmemory`` and
``vcore`` against the node's allocatable (the chart lists only ``vmlu`` as
managed by the extender): a container's request counts once there whatever
its card count, so HAMi's per-card Fit binds first.
"""
from __future__ import annotations

from hamisim.devices.family import Family, RequestFields, Resources, int32, memory_in_units

__all__ = ["MLU", "MEMORY_FACTOR", "request_fields", "cards_from_capacity"]

#: ``cambricon.MemoryFactor``: one ``vmemory`` unit is 256 MiB
MEMORY_FACTOR = 256
#: the slots and cores of every card the backend registers
CARD_SLOTS = 100
CARD_CORES = 100


def request_fields(c: Resources) -> RequestFields | None:
    """``GenerateResourceRequests`` for one container: ``(nums, memreq MiB,
    mempercentagereq, coresreq)`` or ``None``."""
    n = c.value(MLU.count_name)
    if n is None:
        return None
    nums = int32(n)
    if nums <= 0:
        return None         # kept by the webhook, dropped by Filter (Nums > 0 only)
    memreq = memory_in_units(c, MLU.memory_name, MEMORY_FACTOR)
    if memreq is None:
        return None
    cores = c.value(MLU.cores_name)
    coresreq = 100 if cores is None else int32(cores)
    return nums, memreq, 100 if memreq == 0 else 0, coresreq


def cards_from_capacity(node: str, vcore: int, vmemory: int) -> list[dict]:
    """The cards ``GetNodeDevices`` builds from a node's capacity of
    ``cambricon.com/mlu.smlu.vcore`` and ``...vmemory``, as card mappings of a
    cluster file; ``[]`` when ``vcore`` is 0 (HAMi: "device not found")."""
    if vcore <= 0:
        return []
    devmem = int32(vmemory * MEMORY_FACTOR * 100 // vcore)
    return [{"id": f"{node}-cambricon-mlu-{i}", "index": i, "count": CARD_SLOTS,
             "devmem": devmem, "devcore": CARD_CORES, "type": MLU.word, "numa": 0,
             "health": True, "mode": "hami-core"}
            for i in range(-(-vcore // 100))]


#: ``cambricon.CambriconDevices`` (``pkg/device/cambricon/device.go``)
MLU = Family(
    word="MLU", vendor="Cambricon MLU", package="cambricon", fid=7,
    count_name="cambricon.com/vmlu", memory_name="cambricon.com/mlu.smlu.vmemory",
    cores_name="cambricon.com/mlu.smlu.vcore",
    use_type=None, nouse_type=None,
    use_uuid="cambricon.com/use-gpuuuid", nouse_uuid="cambricon.com/nouse-gpuuuid",
    register_annotation="", register_format="capacity",
    to_allocate_annotation="hami.io/cambricon-mlu-devices-to-allocate",
    allocated_annotation="hami.io/cambricon-mlu-devices-allocated",
    generate=request_fields, memory_unit_mib=MEMORY_FACTOR,
    default_count=CARD_SLOTS, registered_type="MLU", capacity_cards=cards_from_capacity)
