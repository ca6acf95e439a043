"""Huawei Ascend NPUs (``pkg/device/ascend``), as HAMi v2.10.0 schedules them.

Ascend is one backend *per chip*, configured by the device config's ``vnpus``
list (:class:`VNPUConfig`); the chart's ``device-configmap.yaml`` has seven,
bundled here as :data:`CHIPS`: ``Ascend910A``, ``Ascend910B2``,
``Ascend910B3``, ``Ascend910B4-1``, ``Ascend910B4``, ``Ascend310P`` and
``Ascend910C``. For chip ``<CW>``:

* request type and registry key ``<CW>``; cards registered as a JSON list in
  ``hami.io/node-register-<CW>`` (handshake ``hami.io/node-handshake-<CW>``),
  a card's ``customInfo.NetworkID`` kept; a card is offered to the chip's
  requests when its type contains ``<CW>`` (any case);
* resources ``huawei.com/<CW>`` (count), ``huawei.com/<CW>-memory`` (MiB,
  times the chip's ``memoryFactor`` when above 1) and ``huawei.com/<CW>-core``;
* UUID filters ``hami.io/use-<CW>-uuid`` and ``hami.io/no-use-<CW>-uuid``; no
  card-type filter;
* the allocation in ``hami.io/<CW>-devices-to-allocate`` and
  ``hami.io/<CW>-devices-allocated``, and the runtime's ``huawei.com/<CW>``
  (per card its UUID, memory, cores and, on a hard split, the template:
  :func:`runtime_info`).

**vNPU templates.** Without the pod annotation ``huawei.com/vnpu-mode:
hami-core`` an NPU is *hard-split*: the webhook (:func:`mutate`) rounds a
memory limit up to the smallest template that holds it (:func:`trim_memory`),
a memory above every template but within ``memoryCapacity`` takes the whole
card (``memoryAllocatable``), and a larger one is refused (``huawei.com/<CW>-memory
<m> is invalid``); no memory limit is the whole card. A multi-NPU container
must take whole cards ("vNPU not supported for multiple devices"), and the
core resource is refused ("only supported in hami-core (soft split) mode").
With ``hami-core`` (*soft split*, HAMi's ``hami-vnpu-core``) the memory is
kept as written and cores may be asked; Fit then refuses a node without
``hami-vnpu-core`` support (``ModeNotFit``): the node annotation
``hami-vnpu-core: "true"`` gives it, any other value takes it away, and without
the annotation the global ``hamiVnpuCore`` (the chart's
``devices.ascend.hamiVnpuCore``, default false) decides. Under ``hami-core`` a
card's cores are taken as 100 whatever it registered.

**910C module pairs.** ``Ascend910C`` has ``superPod: true``: the webhook makes
a count of 1 a count of 2 and refuses an odd one ("Ascend910C device request
must be 1 or 2*n, got <n>"), and Fit takes whole modules (two NPUs whose
``index // 2`` agree: :func:`module_pairs`); a request of more than one NPU
fails with ``AllocatedCardsInsufficientRequest`` unless as many NPUs come from
complete pairs, and that reason counts out of the *request* (``n/2``), not out
of the cards.

**910 networks.** On a node where every ``Ascend910*`` card of the chip has a
``NetworkID``, Fit gathers every card that fits and then takes them network by
network, the largest group first (:func:`network_choice`); ``ScoreNode`` adds
``10 x`` the sum over the pod's containers of (NPUs in the container's largest
network / its NPUs) to the node score (:func:`network_score`).

Request generation (:func:`request_fields`): count, memory and cores from
limits, else requests; no memory means 100 % of the card. Fit is NVIDIA's walk
without ``vgpu-mode``, cordon, NUMA binding, quota re-check or MIG.

Quirks of v2.10.0 kept here:

* the backend exists only when the scheduler runs with ``--enable-ascend``
  (the chart's ``devices.ascend.enabled``, default ``false``); hamisim
  simulates it as enabled, and the console says so;
* a cluster's card list is offered by substring: an ``Ascend910B4-1`` card is
  also offered to ``Ascend910B4`` requests;
* the webhook mutates only a container whose *limits* name the count, and then
  writes the memory into limits and requests (the whole card when it had none,
  replacing a memory request); a memory limit of 0 (or below) becomes the
  smallest template;
* ``ScoreNode`` is not policy-neutral: the network bonus is added under
  ``spread`` too, where the lowest score wins, so ``spread`` avoids the node
  whose networks fit the pod best; it counts the init containers' NPUs, and a
  card without ``customInfo`` makes the chip's whole bonus 0;
* HAMi groups networks and modules in Go's map order, which is random:
  among groups of equal size it takes an arbitrary one. hamisim takes them in
  the order Fit found them (the card policy's preference), one of the
  outcomes HAMi can give.

Not modelled (said in DESIGN §3): the ``ASCEND_VISIBLE_DEVICES`` environment
(``overwriteEnv``), the runtime class, the 5-minute node lock and the
``predicate-time`` annotation; kube-scheduler's extended-resource check of
``huawei.com/<CW>-memory`` against the node's allocatable.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hamisim.devices.family import INT32_MAX, Family, RequestFields, Resources

__all__ = ["Template", "VNPUConfig", "CHIPS", "FAMILIES", "VNPU_MODE", "HAMI_CORE",
           "NODE_ANNOTATION", "NETWORK_WEIGHT", "chip_config", "trim_memory",
           "request_fields", "admission_error", "mutate", "network_choice", "module_pairs",
           "network_score", "runtime_info", "node_supports_hami_core", "is_hami_core"]

#: the pod annotation that asks for HAMi's soft split
VNPU_MODE = "huawei.com/vnpu-mode"
HAMI_CORE = "hami-core"
#: the node annotation that says whether the node runs hami-vnpu-core
NODE_ANNOTATION = "hami-vnpu-core"
#: ``Ascend910NetworkWeight``: ScoreNode's factor
NETWORK_WEIGHT = 10
#: NPUs per 910C module (``computeBestCombination910C``'s ``MaxCardNPUNum``)
MODULE_NPUS = 2
_PREFIX_910 = "Ascend910"
_910C = "Ascend910C"


@dataclass(frozen=True)
class Template:
    """One vNPU template of a chip (device config ``templates[]``)."""

    name: str
    memory: int
    ai_core: int = 0
    ai_cpu: int = 0


@dataclass(frozen=True)
class VNPUConfig:
    """One chip of the device config's ``vnpus`` list (HAMi's ``VNPUConfig``).

    ``templates`` are kept sorted by memory (HAMi sorts them at start)."""

    common_word: str
    chip_name: str
    resource_name: str
    resource_memory_name: str
    resource_core_name: str
    memory_allocatable: int
    memory_capacity: int
    memory_factor: int
    ai_core: int
    ai_cpu: int
    templates: tuple[Template, ...]
    super_pod: bool = False

    @classmethod
    def from_device_config(cls, d: Mapping) -> "VNPUConfig":
        """A ``vnpus.configs`` entry in HAMi's field names (absent: Go's zero values)."""
        ts = sorted((Template(t.get("name", ""), int(t.get("memory", 0)),
                              int(t.get("aiCore", 0)), int(t.get("aiCPU", 0)))
                     for t in d.get("templates") or ()), key=lambda t: t.memory)
        return cls(d.get("commonWord", ""), d.get("chipName", ""), d.get("resourceName", ""),
                   d.get("resourceMemoryName", ""), d.get("resourceCoreName", ""),
                   int(d.get("memoryAllocatable", 0)), int(d.get("memoryCapacity", 0)),
                   int(d.get("memoryFactor", 0)), int(d.get("aiCore", 0)),
                   int(d.get("aiCPU", 0)), tuple(ts), bool(d.get("superPod", False)))


def _chip(word: str, chip: str, allocatable: int, capacity: int, factor: int, ai_core: int,
          ai_cpu: int, templates: Sequence[tuple], super_pod: bool = False) -> VNPUConfig:
    ts = tuple(sorted((Template(*t) for t in templates), key=lambda t: t.memory))
    return VNPUConfig(word, chip, f"huawei.com/{word}", f"huawei.com/{word}-memory",
                      f"huawei.com/{word}-core", allocatable, capacity, factor, ai_core, ai_cpu,
                      ts, super_pod)


#: the chart's ``vnpus.configs`` (``device-configmap.yaml`` at v2.10.0), in its order
CHIPS: tuple[VNPUConfig, ...] = (
    _chip("Ascend910A", "910A", 32768, 32768, 1, 30, 0,
          [("vir02", 2184, 2), ("vir04", 4369, 4), ("vir08", 8738, 8), ("vir16", 17476, 16)]),
    _chip("Ascend910B2", "910B2", 65536, 65536, 1, 24, 6,
          [("vir03_1c_8g", 8192, 3, 1), ("vir06_1c_16g", 16384, 6, 1),
           ("vir12_3c_32g", 32768, 12, 3)]),
    _chip("Ascend910B3", "910B3", 65536, 65536, 1, 20, 7,
          [("vir05_1c_16g", 16384, 5, 1), ("vir10_3c_32g", 32768, 10, 3)]),
    _chip("Ascend910B4-1", "910B4-1", 65536, 65536, 1, 20, 7,
          [("vir05_1c_16g", 16384, 5, 1), ("vir10_3c_32g", 32768, 10, 3)]),
    _chip("Ascend910B4", "910B4", 32768, 32768, 1, 20, 7,
          [("vir05_1c_8g", 8192, 5, 1), ("vir10_3c_16g", 16384, 10, 3)]),
    _chip("Ascend310P", "310P3", 21527, 24576, 1, 8, 7,
          [("vir01", 3072, 1, 1), ("vir02", 6144, 2, 2), ("vir04", 12288, 4, 4)]),
    # no memoryFactor in the chart: Go's zero, i.e. no scaling
    _chip("Ascend910C", "Ascend910", 65536, 65536, 0, 20, 7,
          [("vir05_1c_16g", 16384, 5, 1), ("vir10_3c_32g", 32768, 10, 3)], super_pod=True),
)
_CONFIG = {c.common_word: c for c in CHIPS}


def chip_config(word: str) -> VNPUConfig:
    """The bundled configuration of chip ``word``."""
    return _CONFIG[word]


def trim_memory(cfg: VNPUConfig, memory: int) -> tuple[int, str]:
    """``trimMemory``: the memory (MiB) a hard-split request of ``memory`` gets
    and the template's name (``""``: the whole card, or 0 when nothing holds it)."""
    for t in cfg.templates:
        if memory <= t.memory:
            return t.memory, t.name
    if memory <= cfg.memory_capacity:
        return cfg.memory_allocatable, ""
    return 0, ""


def is_hami_core(annotations: Mapping[str, str]) -> bool:
    """Does the pod ask for the soft split (``huawei.com/vnpu-mode: hami-core``)?"""
    return annotations.get(VNPU_MODE) == HAMI_CORE


def node_supports_hami_core(node_annotation: str | None, global_default: bool) -> bool:
    """Fit's node test: the node's ``hami-vnpu-core`` annotation when it has one
    (only ``"true"`` means yes), else the global ``hamiVnpuCore``."""
    return global_default if node_annotation is None else node_annotation == "true"


def _first(limits: Mapping[str, int], requests: Mapping[str, int], name: str) -> int | None:
    v = limits.get(name)
    return requests.get(name) if v is None else v


def request_fields(c: Resources, cfg: VNPUConfig) -> RequestFields | None:
    """``GenerateResourceRequests`` of chip ``cfg`` for one container:
    ``(nums, memreq MiB, mempercentagereq, coresreq)`` or ``None``."""
    n = _first(c.limits, c.requests, cfg.resource_name)
    if n is None or n <= 0 or n > INT32_MAX:
        return None
    memnum = 0
    mem = _first(c.limits, c.requests, cfg.resource_memory_name)
    if mem is not None:
        if mem < 0 or mem > INT32_MAX:
            return None     # > int32: "memory unit is treated as MB not Byte"
        if cfg.memory_factor > 1:
            mem *= cfg.memory_factor
            if mem > INT32_MAX:
                return None
        memnum = mem
    cores = _first(c.limits, c.requests, cfg.resource_core_name) \
        if cfg.resource_core_name else None
    corenum = 0
    if cores is not None:
        if cores < 0 or cores > INT32_MAX:
            return None
        corenum = cores
    return n, memnum, 100 if memnum == 0 else 0, corenum


def admission_error(limits: Mapping[str, int], requests: Mapping[str, int],
                    annotations: Mapping[str, str], cfg: VNPUConfig) -> str | None:
    """``MutateAdmission``'s refusal of one container for chip ``cfg``, or ``None``."""
    count = limits.get(cfg.resource_name)
    if count is None:
        return None
    if cfg.common_word == _910C and cfg.super_pod and count != 1 and count % 2 != 0:
        return f"Ascend910C device request must be 1 or 2*n, got {count}"
    soft = is_hami_core(annotations)
    if not soft and cfg.resource_core_name:
        cores = _first(limits, requests, cfg.resource_core_name)
        if cores is not None and cores > 0:
            return f"{cfg.resource_core_name} is only supported in hami-core (soft split) mode"
    trimmed = cfg.memory_allocatable
    memory = limits.get(cfg.resource_memory_name)
    if memory is not None:
        if soft:
            trimmed = memory
        else:
            trimmed = trim_memory(cfg, memory)[0]
            if trimmed <= 0:
                return f"{cfg.resource_memory_name} {memory} is invalid"
    if count > 1 and not soft and trimmed != cfg.memory_allocatable:
        return "vNPU not supported for multiple devices"
    return None


def mutate(limits: dict[str, int], requests: dict[str, int], annotations: Mapping[str, str],
           cfg: VNPUConfig) -> None:
    """``MutateAdmission``'s rewrite of one container for chip ``cfg``, in place
    (after :func:`admission_error` found nothing): 910C's count of 1 becomes 2,
    and the memory limit and request become the template's (hard split), the
    value written (soft split) or the whole card (none written)."""
    count = limits.get(cfg.resource_name)
    if count is None:
        return
    if cfg.common_word == _910C and cfg.super_pod and count == 1:
        limits[cfg.resource_name] = 2
        if cfg.resource_name in requests:
            requests[cfg.resource_name] = 2
    trimmed = cfg.memory_allocatable
    memory = limits.get(cfg.resource_memory_name)
    if memory is not None:
        trimmed = memory if is_hami_core(annotations) else trim_memory(cfg, memory)[0]
    limits[cfg.resource_memory_name] = trimmed
    requests[cfg.resource_memory_name] = trimmed


def network_choice(picks: Sequence, network_ids: Sequence[int], origin: int) -> list:
    """``computeBestCombination``: ``origin`` of Fit's acceptable cards
    (``picks``, in the order Fit found them; ``network_ids`` theirs), taken
    network by network, the network with the most acceptable cards first
    (equal ones in the order their first card was found)."""
    first: dict[int, int] = {}
    size: dict[int, int] = {}
    for pos, nid in enumerate(network_ids):
        first.setdefault(nid, pos)
        size[nid] = size.get(nid, 0) + 1
    order = sorted(range(len(picks)),
                   key=lambda k: (-size[network_ids[k]], first[network_ids[k]], k))
    return [picks[k] for k in order[:origin]]


def module_pairs(picks: Sequence, indices: Sequence[int], origin: int) -> list:
    """``computeBestCombination910C``: the acceptable NPUs (``picks`` in Fit's
    order, ``indices`` their card indices) of complete modules (both NPUs of
    ``index // 2`` acceptable), module by module in the order their first NPU
    was found, until ``origin`` NPUs are covered. Fit takes them when exactly
    ``origin`` came out."""
    modules: dict[int, list[int]] = {}
    for pos, idx in enumerate(indices):
        modules.setdefault(idx // MODULE_NPUS, []).append(pos)
    chosen: list = []
    left = origin
    for members in modules.values():
        if left <= 0:
            break
        if len(members) == MODULE_NPUS:
            chosen.extend(picks[k] for k in members)
            left -= MODULE_NPUS
    return chosen


def network_score(containers: Sequence[Sequence[int | None]]) -> np.float32:
    """``ScoreNode`` of a 910 chip: per container the NetworkIDs of its NPUs
    (``None``: a card without one), in the pod's order (init containers first).
    0 as soon as one NPU has no NetworkID; else ``10 x`` the float32 sum of
    (largest network's NPUs / NPUs) over the containers with NPUs."""
    score = np.float32(0)
    for ids in containers:
        if not ids:
            continue
        counts: dict[int, int] = {}
        for nid in ids:
            if nid is None:
                return np.float32(0)
            counts[nid] = counts.get(nid, 0) + 1
        score = np.float32(score + np.float32(max(counts.values())) / np.float32(len(ids)))
    return np.float32(score * np.float32(NETWORK_WEIGHT))


def runtime_info(picks: Sequence, annotations: Mapping[str, str], cfg: VNPUConfig) -> list[dict]:
    """The ``huawei.com/<CW>`` annotation's entries for a container's picks
    (objects with ``uuid``, ``usedmem``, ``usedcores``): the template a hard
    split gets (``temp``; Go's ``omitempty`` leaves out empty and zero fields)."""
    out = []
    soft = is_hami_core(annotations)
    for p in picks:
        info: dict = {"UUID": p.uuid} if p.uuid else {}
        if not soft:
            temp = trim_memory(cfg, p.usedmem)[1]
            if temp:
                info["temp"] = temp
        if p.usedmem:
            info["memory"] = p.usedmem
        if p.usedcores:
            info["core"] = p.usedcores
        out.append(info)
    return out


def _family(cfg: VNPUConfig, fid: int) -> Family:
    word = cfg.common_word
    fam = Family(
        word=word, vendor=f"Ascend {word}", package="ascend", fid=fid,
        count_name=cfg.resource_name, memory_name=cfg.resource_memory_name,
        cores_name=cfg.resource_core_name,
        use_type=None, nouse_type=None,
        use_uuid=f"hami.io/use-{word}-uuid", nouse_uuid=f"hami.io/no-use-{word}-uuid",
        register_annotation=f"hami.io/node-register-{word}", register_format="json",
        to_allocate_annotation=f"hami.io/{word}-devices-to-allocate",
        allocated_annotation=f"hami.io/{word}-devices-allocated",
        memory_unit_mib=max(cfg.memory_factor, 1),
        vnpu=True, network_topology=word.startswith(_PREFIX_910),
        module_pairs=word == _910C,
        assumed="scheduled as with HAMi's --enable-ascend (the chart's "
                "devices.ascend.enabled, false by default)",
        generate=lambda c: request_fields(c, cfg),
        mutate=lambda limits, requests, annotations: mutate(limits, requests, annotations, cfg),
        refuse=lambda limits, requests, annotations: admission_error(limits, requests,
                                                                     annotations, cfg))
    return fam


#: fids of the chips, after Moore Threads': 910 chips first, 910C last of them
_FID_ORDER = ("Ascend910A", "Ascend910B2", "Ascend910B3", "Ascend910B4-1", "Ascend910B4",
              "Ascend910C", "Ascend310P")
#: one family per chip
FAMILIES: tuple[Family, ...] = tuple(_family(_CONFIG[w], 10 + i)
                                     for i, w in enumerate(_FID_ORDER))
