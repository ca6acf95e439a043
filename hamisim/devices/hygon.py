"""Hygon DCU (``pkg/device/hygon``), as HAMi v2.10.0 schedules it.

Identity: common word and request type ``DCU``; cards registered in the node
annotation ``hami.io/node-dcu-register`` (HAMi's colon/comma format, 7 or 9
fields per card); resources ``hygon.com/dcunum`` (count), ``hygon.com/dcumem``
(MiB) and ``hygon.com/dcucores`` (percent of a card), the chart's
device-config names; filters ``hygon.com/use-dcutype`` /
``hygon.com/nouse-dcutype`` (case-insensitive substrings of the card type) and
``hygon.com/use-gpuuuid`` / ``hygon.com/nouse-gpuuuid`` (card ids); the
allocation written to ``hami.io/dcu-devices-to-allocate`` and
``hami.io/dcu-devices-allocated``.

Request generation (:func:`request_fields`, ``GenerateResourceRequests``): the count
from limits, else requests; memory and cores likewise; cores default to 100
(an exclusive card); no memory means the whole card (percentage 100).

Fit is NVIDIA's walk from the last card with NVIDIA's reason strings, minus
the steps NVIDIA alone has: no ``vgpu-mode``, no device cordon, no NUMA
binding, no ResourceQuota re-check (quota is the webhook's alone), no MIG and
no ``topology-aware`` pair scores. ``ScoreNode`` adds nothing, so the node
policy ranks DCU nodes by HAMi's usage score alone.

Quirks of v2.10.0 kept here (each one an observable difference):

* a count at or below 0, or above int32, gives *no* request: the container
  then asks for no DCU at all and the pod may pass Filter untouched;
* a memory or core value below 0 or above int32 also drops the whole request;
  so does a memory above int32 once multiplied by ``memoryFactor`` (applied
  only when above 1; the chart sets 1);
* a memory value that is not an integer quantity is ignored (the whole card);
* cores above 100 pass the webhook and are charged as 100 in Fit;
* a card is offered to a DCU request when its type *contains* ``dcu`` (any
  case), but the request counts in the card's score only when the type is
  exactly ``DCU`` (the same quirk as NVIDIA's).
"""
from __future__ import annotations

from hamisim.devices.family import Family, RequestFields, Resources

__all__ = ["DCU", "MEMORY_FACTOR", "request_fields"]


#: the chart's ``hygon.memoryFactor`` (``device-configmap.yaml``)
MEMORY_FACTOR = 1

_INT32_MAX = 2**31 - 1
#: HAMi's "no memory percentage" sentinel is not what DCU writes: it writes 0
#: when memory is given and 100 when not
_PCT_WHOLE = 100


def request_fields(c: Resources, memory_factor: int = MEMORY_FACTOR
                   ) -> RequestFields | None:
    """``GenerateResourceRequests`` for one container (a
    :class:`hamisim.pods.Container`): ``(nums, memreq, mempercentagereq,
    coresreq)``, or ``None`` = no DCU asked (or a value HAMi drops, see the
    module's quirks)."""
    n = c.value(DCU.count_name)
    if n is None or n <= 0 or n > _INT32_MAX:
        return None
    mem = c.value(DCU.memory_name)
    memreq = 0
    if mem is not None:
        if mem < 0 or mem > _INT32_MAX:
            return None
        if memory_factor > 1:
            mem *= memory_factor
            if mem > _INT32_MAX:
                return None
        memreq = mem
    cores = c.value(DCU.cores_name)
    coresreq = 100
    if cores is not None:
        if cores < 0 or cores > _INT32_MAX:
            return None
        coresreq = cores
    return n, memreq, _PCT_WHOLE if memreq == 0 else 0, coresreq


#: ``hygon.DCUDevices`` (``pkg/device/hygon/device.go``)
DCU = Family(
    word="DCU", vendor="Hygon DCU", package="hygon", fid=1,
    count_name="hygon.com/dcunum", memory_name="hygon.com/dcumem",
    cores_name="hygon.com/dcucores",
    use_type="hygon.com/use-dcutype", nouse_type="hygon.com/nouse-dcutype",
    use_uuid="hygon.com/use-gpuuuid", nouse_uuid="hygon.com/nouse-gpuuuid",
    register_annotation="hami.io/node-dcu-register",
    to_allocate_annotation="hami.io/dcu-devices-to-allocate",
    allocated_annotation="hami.io/dcu-devices-allocated",
    generate=request_fields)
