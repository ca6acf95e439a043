"""Iluvatar CoreX (``pkg/device/iluvatar``), as HAMi v2.10.0 schedules it.

Iluvatar is one backend *per chip*: the device config's ``iluvatars`` list
names each chip's common word, and everything else derives from it. The
chart's list (``device-configmap.yaml``) has four chips, ``MR-V100``,
``MR-V50``, ``BI-V150`` and ``BI-V100``; for chip ``<CW>``:

* request type and registry key ``<CW>``; cards registered in
  ``hami.io/node-<CW>-register`` (HAMi's colon/comma format, as DCU's); a card
  is offered to the chip's requests when its type contains ``<CW>``;
* resources ``iluvatar.ai/<CW>-vgpu`` (count), ``iluvatar.ai/<CW>.vMem``
  (memory in units of 256 MiB, the backend's ``MemoryFactor``) and
  ``iluvatar.ai/<CW>.vCore`` (percent of a card);
* UUID filters ``hami.io/use-<CW>-uuid`` and ``hami.io/no-use-<CW>-uuid``
  (``no-use``, not ``nouse`` as every other family spells it); no card-type
  filter;
* the allocation in ``hami.io/<CW>-devices-to-allocate`` and
  ``hami.io/<CW>-devices-allocated``.

The webhook (:func:`mutate`, ``MutateAdmission``): a container whose *limits*
ask more than one card gets its core limit overwritten with ``count x 100``,
whatever it asked; Fit then charges 100 per card (the clamp), so every
multi-card Iluvatar request takes whole, unshared cards.

Request generation (:func:`request_fields`): count, memory and cores from
limits, else requests; cores default to **0** (not 100 as DCU's and MLU's);
no memory means the whole card. Fit is DCU's walk without its type filter: no
``vgpu-mode``, cordon, NUMA binding, quota re-check, MIG or topology;
``ScoreNode`` adds nothing.

Quirks of v2.10.0 kept here:

* the backend exists only when the scheduler runs with ``--enable-iluvatar``
  (the chart's ``devices.iluvatar.enabled``, default ``false``). hamisim
  simulates it as enabled: a cluster with Iluvatar cards and a trace that asks
  for them is one whose operator turned it on (with it off, HAMi ignores both,
  and no Iluvatar pod is ever placed by it); the console says so;
* the count has no range check: it is taken as Go's ``int32`` of the value,
  and a result at or below 0 asks nothing (Filter drops it);
* a memory value that is not an integer, or above 8,388,607 (so that x256
  stays in int32), drops the whole request;
* cores are ``int32`` of the value, unchecked; above 100 they are charged 100;
  a negative one (``2**32 - 1`` reads as -1) fits any card and is booked as 0
  (``CollapseInitContainerUsage`` takes the larger of it and an absent init
  peak), but the shrink after the init containers sums it as it is;
* a card is offered by substring (``MR-V100`` in ``Iluvatar MR-V100 32G``),
  but the request counts in the card's score only when its type is exactly
  ``<CW>`` (the quirk NVIDIA's and DCU's scores share).
"""
from __future__ import annotations

from hamisim.devices.family import Family, RequestFields, Resources, int32, memory_in_units

__all__ = ["CHIPS", "MEMORY_FACTOR", "FAMILIES", "chip_family", "request_fields", "mutate"]

#: the chart's ``iluvatars`` list: the chips' common words, in its order
CHIPS: tuple[str, ...] = ("MR-V100", "MR-V50", "BI-V150", "BI-V100")

#: ``iluvatar.MemoryFactor``: one ``vMem`` unit is 256 MiB
MEMORY_FACTOR = 256

_PCT_WHOLE = 100


def request_fields(c: Resources, fam: Family) -> RequestFields | None:
    """``GenerateResourceRequests`` of chip ``fam`` for one container:
    ``(nums, memreq MiB, mempercentagereq, coresreq)`` or ``None``."""
    n = c.value(fam.count_name)
    if n is None:
        return None
    nums = int32(n)
    if nums <= 0:
        return None         # kept by the webhook, dropped by Filter (Nums > 0 only)
    memreq = memory_in_units(c, fam.memory_name, MEMORY_FACTOR)
    if memreq is None:
        return None
    cores = c.value(fam.cores_name)
    coresreq = 0 if cores is None else int32(cores)
    return nums, memreq, _PCT_WHOLE if memreq == 0 else 0, coresreq


def mutate(limits: dict[str, int], fam: Family) -> None:
    """``MutateAdmission`` of chip ``fam``: a count limit above 1 sets the core
    limit to ``count x 100`` (the user's value is replaced)."""
    count = limits.get(fam.count_name)
    if count is not None and count > 1:
        limits[fam.cores_name] = count * 100


def _chip(word: str, fid: int) -> Family:
    fam = Family(
        word=word, vendor=f"Iluvatar {word}", package="iluvatar", fid=fid,
        count_name=f"iluvatar.ai/{word}-vgpu", memory_name=f"iluvatar.ai/{word}.vMem",
        cores_name=f"iluvatar.ai/{word}.vCore",
        use_type=None, nouse_type=None,
        use_uuid=f"hami.io/use-{word}-uuid", nouse_uuid=f"hami.io/no-use-{word}-uuid",
        register_annotation=f"hami.io/node-{word}-register",
        to_allocate_annotation=f"hami.io/{word}-devices-to-allocate",
        allocated_annotation=f"hami.io/{word}-devices-allocated",
        memory_unit_mib=MEMORY_FACTOR,
        assumed="scheduled as with HAMi's --enable-iluvatar (the chart's "
                "devices.iluvatar.enabled, false by default)")
    # the family's own functions, bound to it (Family is frozen: set once here)
    object.__setattr__(fam, "generate", lambda c: request_fields(c, fam))
    object.__setattr__(fam, "mutate", lambda limits, _requests, _annotations: mutate(limits, fam))
    return fam


#: one family per chip of the chart's list; fids follow NVIDIA's and DCU's
FAMILIES: tuple[Family, ...] = tuple(_chip(w, 2 + i) for i, w in enumerate(CHIPS))


def chip_family(word: str) -> Family:
    """The family of chip ``word`` (one of :data:`CHIPS`)."""
    return FAMILIES[CHIPS.index(word)]
