"""Moore Threads (``pkg/device/mthreads``), as HAMi v2.10.0 schedules it.

Identity: common word and request type ``Mthreads``; resources
``mthreads.com/vgpu`` (count), ``mthreads.com/sgpu-memory`` (memory in units
of 512 MiB, the backend's ``MemoryFactor``) and ``mthreads.com/sgpu-core``
(cores, 16 to a card), the chart's ``device-configmap.yaml`` names; UUID
filters ``mthreads.ai/use-gpuuuid`` / ``mthreads.ai/nouse-gpuuuid``; the
allocation in ``hami.io/mthreads-vgpu-devices-to-allocate`` and
``hami.io/mthreads-vgpu-devices-allocated``.

**Cards come from the node's capacity, not from a register annotation**
(:func:`cards_from_capacity`, ``GetNodeDevices``): ``ceil(sgpu-core / 16)``
cards named ``<node>-mthreads-<i>``, each of type ``Mthreads``, 100 slots, 16
cores and ``sgpu-memory x 512 x 16 / sgpu-core`` MiB (integer arithmetic,
int32). A cluster file's Moore Threads card is therefore typed ``Mthreads``
with 100 slots and devcore 16 unless it says otherwise (a warning then says
HAMi never registers it so).

The webhook (:func:`mutate`, :func:`admission_error`, ``MutateAdmission``),
with the count read from limits, else requests:

* a count at or below 0 is refused (HTTP 500, "... must be greater than 0");
* a count above 1 takes whole cards: the core limit becomes ``count x 16``
  and the memory limit ``count x 96`` (48 GiB a card), replacing the user's;
* a count of 1 without a memory *limit* gets the same whole card (cores 16,
  memory 96), even when memory or cores are written as requests; with one,
  the memory must be one of 2, 4, 8, 16, 32, 64, 96 (units), else refused.

Request generation (:func:`request_fields`): count, memory and cores from
limits, else requests; memory and cores are divided by the count (Go's
integer division) to give each card's share; no memory means 100 % of the
card. Fit is NVIDIA's walk without NUMA binding, quota or MIG, with two steps
of its own: the card's type must contain ``Mthreads`` *case-sensitively*
(the scheduler offered it by a case-insensitive test, so an ``mthreads-s4000``
card is offered and then refused as ``CardTypeMismatch``), and the
backend's ``customFilterRule``: on a card typed exactly ``Mthreads`` every
earlier container of the pod (in the same pass: init containers among
themselves, app containers among themselves) must hold only that card
(``CardNotFoundCustomFilterRule``), so all of a pod's Moore Threads
containers share one card, and a second container after a multi-card one
never fits. ``ScoreNode`` adds nothing.

Quirks of v2.10.0 kept here:

* the whole-card memory is 96 units (49,152 MiB) whatever the card holds: a
  multi-card request on cards of less memory never fits
  (``CardInsufficientMemory``);
* a memory value that is not an integer, negative or above 4,194,303 (x512
  within int32) drops the whole request; cores are ``int32`` of the value,
  unchecked;
* the cards' memory is the node's ``sgpu-memory`` spread per 16 ``sgpu-core``:
  a capacity not a multiple of 16 misstates it per card.

Not modelled (said in DESIGN §3): the ``mthreads.com/gpu-index``,
``predicate-node`` and ``predicate-time`` annotations ``PatchAnnotations``
writes beside the allocation (the device plugin's, not the scheduler's), and
kube-scheduler's extended-resource check of ``sgpu-memory`` and ``sgpu-core``
against the node's allocatable (the chart lists only ``mthreads.com/vgpu`` as
managed by the extender).
"""
from __future__ import annotations

from collections.abc import Mapping

from hamisim.devices.family import (INT32_MAX, Family, RequestFields, Resources, int32,
                                    memory_in_units)

__all__ = ["MTHREADS", "MEMORY_FACTOR", "CARD_CORES", "WHOLE_CARD_MEMORY", "LEGAL_MEMORY",
           "request_fields", "mutate", "admission_error", "cards_from_capacity"]

#: ``mthreads.MemoryFactor``: one ``sgpu-memory`` unit is 512 MiB
MEMORY_FACTOR = 512
#: ``coresPerMthreadsGPU``: the cores of every card the backend registers
CARD_CORES = 16
#: ``memoryPerMthreadsGPU``: the memory units the webhook gives a whole card
WHOLE_CARD_MEMORY = 96
#: ``legalMemoryslices``: the memory limits (units) a one-card request may write
LEGAL_MEMORY = (2, 4, 8, 16, 32, 64, 96)
#: the slots of every card the backend registers
CARD_SLOTS = 100



def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _count(limits: Mapping[str, int], requests: Mapping[str, int]) -> int | None:
    v = limits.get(MTHREADS.count_name)
    return requests.get(MTHREADS.count_name) if v is None else v


def admission_error(limits: Mapping[str, int], requests: Mapping[str, int]) -> str | None:
    """``MutateAdmission``'s refusal of one container, or ``None``."""
    count = _count(limits, requests)
    if count is None:
        return None
    if count <= 0:
        return f"{MTHREADS.count_name} must be greater than 0"
    if count == 1 and MTHREADS.memory_name in limits \
            and limits[MTHREADS.memory_name] not in LEGAL_MEMORY:
        return ("sGPU memory request value is invalid, valid values are "
                f"[{', '.join(map(str, LEGAL_MEMORY))}]")
    return None


def mutate(limits: dict[str, int], requests: Mapping[str, int]) -> None:
    """``MutateAdmission``'s rewrite of one container's limits, in place: whole
    cards for a count above 1, or for a count of 1 without a memory limit."""
    count = _count(limits, requests)
    if count is None or count <= 0:
        return
    if count > 1 or MTHREADS.memory_name not in limits:
        limits[MTHREADS.cores_name] = count * CARD_CORES
        limits[MTHREADS.memory_name] = count * WHOLE_CARD_MEMORY


def request_fields(c: Resources) -> RequestFields | None:
    """``GenerateResourceRequests`` for one container: ``(nums, memreq MiB per
    card, mempercentagereq, coresreq per card)`` or ``None``."""
    n = c.value(MTHREADS.count_name)
    if n is None or n <= 0 or n > INT32_MAX:
        return None
    memnum = memory_in_units(c, MTHREADS.memory_name, MEMORY_FACTOR)
    if memnum is None:
        return None
    cores = c.value(MTHREADS.cores_name)
    corenum = 0 if cores is None else int32(cores)
    return n, _go_div(memnum, n), 100 if memnum == 0 else 0, _go_div(corenum, n)


def cards_from_capacity(node: str, cores: int, memory: int) -> list[dict]:
    """The cards ``GetNodeDevices`` builds from a node's capacity of
    ``mthreads.com/sgpu-core`` and ``mthreads.com/sgpu-memory``, as card
    mappings of a cluster file; ``[]`` when ``cores`` is 0 (HAMi: "device not
    found")."""
    if cores <= 0:
        return []
    devmem = int32(memory * MEMORY_FACTOR * CARD_CORES // cores)
    return [{"id": f"{node}-mthreads-{i}", "index": i, "count": CARD_SLOTS,
             "devmem": devmem, "devcore": CARD_CORES, "type": MTHREADS.word, "numa": 0,
             "health": True, "mode": "hami-core"}
            for i in range(-(-cores // CARD_CORES))]


#: ``mthreads.MthreadsDevices`` (``pkg/device/mthreads/device.go``)
MTHREADS = Family(
    word="Mthreads", vendor="Moore Threads", package="mthreads", fid=9,
    count_name="mthreads.com/vgpu", memory_name="mthreads.com/sgpu-memory",
    cores_name="mthreads.com/sgpu-core",
    use_type=None, nouse_type=None,
    use_uuid="mthreads.ai/use-gpuuuid", nouse_uuid="mthreads.ai/nouse-gpuuuid",
    register_annotation="", register_format="capacity",
    to_allocate_annotation="hami.io/mthreads-vgpu-devices-to-allocate",
    allocated_annotation="hami.io/mthreads-vgpu-devices-allocated",
    generate=request_fields,
    mutate=lambda limits, requests, _annotations: mutate(limits, requests),
    refuse=lambda limits, requests, _annotations: admission_error(limits, requests),
    memory_unit_mib=MEMORY_FACTOR, default_count=CARD_SLOTS, registered_type="Mthreads",
    registered_devcore=CARD_CORES, type_case_sensitive=True, one_card_per_pod=True,
    capacity_cards=cards_from_capacity)
