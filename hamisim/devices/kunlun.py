"""Kunlunxin XPUs (``pkg/device/kunlun``), as HAMi v2.10.0 schedules them.

Two backends share the package and its topology picker:

* **whole cards** (:data:`KUNLUN`): common word and request type ``kunlun``,
  resource ``kunlunxin.com/xpu`` (count only); the cards come from the
  node's capacity (:func:`cards_from_capacity`: ``<node>-kunlun-<i>``, 100
  slots, 98,304 MiB, 100 cores, NUMA 1 from ``i >= n // 2`` on, typed
  ``kunlun``); a card fits when it is healthy and has no tenant; a pick is
  charged the card's memory and cores in the pod's annotation
  (``hami.io/kunlun-allocated``), but ``AddResourceUsage`` adds only its slot
  within a Filter pass;
* **vXPU** (:data:`XPU`): request type ``XPU``, resources ``kunlunxin.com/vxpu``
  (count: cards, one slice on each) and ``kunlunxin.com/vxpu-memory``; cards
  registered as JSON in ``hami.io/node-register-xpu``; the memory is rounded
  up to a quarter, half or whole card of 98,304 MiB (:func:`trim_memory`),
  with cores of 25, 50 or 100; a card fits when healthy, with room for the
  slice, and holding only slices of the same size (the integer average
  ``usedmem / used`` equals it: "one slice size per card"); under ``mutex``
  only an idle card fits. Allocation in ``hami.io/xpu-devices-to-allocate`` and
  ``hami.io/xpu-devices-allocated``.

Both read two pairs of UUID annotations (``hami.io/use-xpu-uuid`` /
``hami.io/no-use-xpu-uuid`` and the legacy ``baidu.com/use-gpuuuid`` /
``baidu.com/nouse-gpuuuid``; a card must pass both) and choose cards with
``graghSelect`` (:func:`graph_select`): the card list as the card policy
sorted it is split by **position** into a left wing (positions 0-3) and a right
wing (4 and up); a request of 1, 2 or 4 cards takes the wing whose number of
fitting cards is the smallest that still holds it (for 1 card: 1, then 3, 2,
4 free), the left wing first, else the cross-wing pairs (0-4, 1-5, 2-6, 3-7,
by card index) or the six quads of 4; 8 cards only when exactly 8 fit (card
indices 0-7). Any other count never fits. Fit's reason is
``<k>/<n> CardUuidMismatch`` when ``k`` cards failed a UUID filter, else
``1/<n> NumaNotFit`` (vXPU under ``mutex``: ``ExclusiveDeviceAllocateConflict``
per used card that would otherwise fit).

``ScoreNode`` (whole cards only; :func:`bubble_score`): on a node whose every
card's type contains ``kunlun`` (case-sensitive), 0, 1000, 2000 or 3000 from
how the pod's cards split over the wings against the cards in use before it.

Quirks of v2.10.0 kept here:

* the wings are positions in the *sorted* list, so under real card policies a
  pod can get cards of both wings that are no pair (a busy card 5 under
  ``spread``: 4 cards ``3, 4, 6, 7``);
* a count of 3, 5, 6, 7 or above 8 passes the webhook and never fits
  (``1/<n> NumaNotFit``); hamisim warns at the trace line;
* on a node of more than 8 cards, the right wing counts every position from
  4 on but the pick stops at position 7: a request can be given fewer cards
  than it asked (hamisim books what HAMi books);
* the bubble score compares the pod's own cards with the cards in use before
  it (not the node after it), is not policy-neutral (it counts against a node
  under ``spread``), and is 0 on a node with any card of another type;
* the whole-card count has no range check (Go's ``int32`` of it; at or below 0
  it asks nothing); a vXPU memory of 0 or below is a quarter card;
* the backends exist whatever the chart's ``devices.kunlun.enabled`` says
  (it only lists the resources for the scheduler extender).

Not modelled (said in DESIGN §3): the ``BAIDU_COM_DEVICE_IDX`` annotation,
the vXPU node lock and handshake, the webhook's ResourceQuota on
``limits.kunlunxin.com/vxpu-memory``, and stale whole cards HAMi keeps when a
node's capacity drops.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hamisim.devices.family import Family, RequestFields, Resources, int32

__all__ = ["KUNLUN", "XPU", "CARD_MEMORY", "SLICES", "trim_memory", "graph_select",
           "bubble_score", "cards_from_capacity", "PLACEABLE_COUNTS", "LEGACY_UUID"]

#: ``KunlunMaxMemory``: a whole card's memory (MiB)
CARD_MEMORY = 98304
#: the vXPU slice sizes below a whole card
SLICES = (24576, 49152)
#: the counts ``graghSelect`` can place
PLACEABLE_COUNTS = (1, 2, 4, 8)
#: the legacy UUID annotations both backends also read
LEGACY_UUID = ("baidu.com/use-gpuuuid", "baidu.com/nouse-gpuuuid")
#: ``InterGroupConnection``: the cross-wing pairs (card indices)
CROSS_PAIRS = ((0, 4), (1, 5), (2, 6), (3, 7))
#: ``GroupConnection``: the pairs within a wing
WING_PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3),
              (4, 5), (4, 6), (4, 7), (5, 6), (5, 7), (6, 7))
#: ``InterGroupConnection2``: the quads of 4 cards, in HAMi's order
QUADS = ((0, 1, 4, 5), (2, 3, 6, 7), (0, 2, 4, 6), (1, 3, 5, 7), (0, 3, 4, 7), (1, 2, 5, 6))
_ODD_ORDER = (1, 3, 2, 4)
#: ScoreNode's value per change of the bubble count (else 1000)
_BUBBLE_SCORE = {-1: 3000.0, 0: 2000.0, 1: 1000.0, 2: 0.0}


def trim_memory(memory: int) -> int:
    """``trimMemory``: the slice a vXPU memory asks (MiB): 24,576, 49,152 or a whole card."""
    for size in SLICES:
        if memory <= size:
            return size
    return CARD_MEMORY


def _first(c: Resources, name: str) -> int | None:
    v = c.limits.get(name)
    return c.requests.get(name) if v is None else v


def whole_request(c: Resources) -> RequestFields | None:
    """``KunlunDevices.GenerateResourceRequests``: ``(nums, 0, 100, 0)`` or ``None``."""
    n = _first(c, KUNLUN.count_name)
    if n is None or int32(n) <= 0:
        return None
    return int32(n), 0, 100, 0


def slice_request(c: Resources) -> RequestFields | None:
    """``KunlunVDevices.GenerateResourceRequests``: one slice on each of ``nums`` cards."""
    n = _first(c, XPU.count_name)
    if n is None or int32(n) <= 0:
        return None
    mem = _first(c, XPU.memory_name)
    if mem is None:
        return int32(n), CARD_MEMORY, 100, 100
    memnum = trim_memory(mem)
    return int32(n), memnum, 0, memnum * 100 // CARD_MEMORY


def mutate(limits: dict[str, int], requests: dict[str, int],
           annotations: Mapping[str, str]) -> None:
    """vXPU's ``MutateAdmission``: a memory *limit* becomes its slice, in limits and requests."""
    if XPU.count_name in limits and XPU.memory_name in limits:
        limits[XPU.memory_name] = requests[XPU.memory_name] = trim_memory(
            limits[XPU.memory_name])


def _pick(fits: Sequence[bool], indices: Sequence[int], start: int, count: int) -> list[int]:
    # devicepick: the fitting cards from position start to 7, up to count
    out = []
    for t in range(start, min(8, len(fits))):
        if fits[t]:
            out.append(indices[t])
            if len(out) == count:
                break
    return out


def _interconnect(fits: Sequence[bool], indices: Sequence[int], count: int) -> list[int]:
    if count == 2:
        for a, fa in zip(indices, fits):
            if not fa:
                continue
            for b, fb in zip(indices, fits):
                if fb and b != a and ((a, b) in CROSS_PAIRS or (b, a) in CROSS_PAIRS):
                    return [a, b]
    if count == 4:
        free = [i for i, f in zip(indices, fits) if f]
        have = set(free)
        if len(free) in (4, 5):
            for q in QUADS:
                if have.issuperset(q):
                    return list(q)
        if len(free) == 6:
            ret: list[int] = []
            for q in QUADS:
                if have.issuperset(q):
                    ret = list(q)
                    rest = {i for i in free if i not in q}
                    if any(rest.issuperset(p) for p in (*CROSS_PAIRS, *WING_PAIRS)):
                        return ret
            return ret
    return []


def graph_select(fits: Sequence[bool], indices: Sequence[int], count: int) -> list[int]:
    """``graghSelect``: the card indices chosen for ``count`` cards, given per
    position of the sorted list whether the card fits and its index; ``[]``
    when none is chosen."""
    left = sum(1 for f in fits[:4] if f)
    right = sum(1 for f in fits[4:] if f)
    if count == 8:
        return list(range(8)) if left + right == 8 else []
    if count not in (1, 2, 4):
        return []
    if left >= count or right >= count:
        for slots in range(count, 5):
            num = _ODD_ORDER[slots - 1] if count % 2 == 1 else slots
            if left == num:
                return _pick(fits, indices, 0, count)
            if right == num:
                return _pick(fits, indices, 4, count)
    return _interconnect(fits, indices, count)


def _bubbles(indices: set[int]) -> int:
    # countbubble: 1 when empty, else per wing 0 for 4 cards, 2 for 1, 1 otherwise
    if not indices:
        return 1
    left = sum(1 for i in indices if i < 4)
    right = len(indices) - left

    def g(n: int) -> int:
        return 0 if n == 4 else 2 if n == 1 else 1
    return g(left) + g(right)


def bubble_score(previous: Sequence[tuple[str, int, int]],
                 picked: Sequence[tuple[str, int]]) -> np.float32:
    """``KunlunDevices.ScoreNode``: ``previous`` is every card of the node as
    ``(type, index, used)`` before the pod, ``picked`` the pod's Kunlun cards
    as ``(type, index)`` (init containers too). 0 when a card or a pick is of a
    type without ``kunlun`` (case-sensitive)."""
    if any("kunlun" not in t for t, _, _ in previous) or any("kunlun" not in t
                                                            for t, _ in picked):
        return np.float32(0)
    prev = {i for _, i, used in previous if used > 0}
    d = _bubbles({i for _, i in picked}) - _bubbles(prev)
    return np.float32(_BUBBLE_SCORE.get(d, 1000.0))


def cards_from_capacity(node: str, count: int, _memory: int = 0) -> list[dict]:
    """The whole cards ``GetNodeDevices`` builds from a node's capacity of
    ``kunlunxin.com/xpu``, as card mappings of a cluster file (``[]``: none)."""
    if count <= 0:
        return []
    return [{"id": f"{node}-kunlun-{i}", "index": i, "count": 100, "devmem": CARD_MEMORY,
             "devcore": 100, "type": "kunlun", "numa": 1 if i >= count // 2 else 0,
             "health": True, "mode": ""} for i in range(count)]


#: ``kunlun.KunlunDevices`` (``pkg/device/kunlun/device.go``)
KUNLUN = Family(
    word="kunlun", vendor="Kunlunxin XPU", package="kunlun", fid=17,
    count_name="kunlunxin.com/xpu", memory_name="", cores_name="",
    use_type=None, nouse_type=None,
    use_uuid="hami.io/use-xpu-uuid", nouse_uuid="hami.io/no-use-xpu-uuid",
    register_annotation="", register_format="capacity",
    to_allocate_annotation="", allocated_annotation="hami.io/kunlun-allocated",
    generate=whole_request, default_count=100, registered_type="kunlun",
    registered_devcore=100, wings="whole", capacity_cards=cards_from_capacity,
    capacity_resource="kunlunxin.com/xpu", legacy_uuid=LEGACY_UUID)

#: ``kunlun.KunlunVDevices`` (``pkg/device/kunlun/vdevice.go``)
XPU = Family(
    word="XPU", vendor="Kunlunxin vXPU", package="kunlun", fid=18,
    count_name="kunlunxin.com/vxpu", memory_name="kunlunxin.com/vxpu-memory", cores_name="",
    use_type=None, nouse_type=None,
    use_uuid="hami.io/use-xpu-uuid", nouse_uuid="hami.io/no-use-xpu-uuid",
    register_annotation="hami.io/node-register-xpu", register_format="json",
    to_allocate_annotation="hami.io/xpu-devices-to-allocate",
    allocated_annotation="hami.io/xpu-devices-allocated",
    generate=slice_request, mutate=mutate, wings="slices", legacy_uuid=LEGACY_UUID)
