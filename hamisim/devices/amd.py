"""AMD Instinct (``pkg/device/amd``), as HAMi v2.10.0 schedules it: cores are Compute Units.

Identity: common word and request type ``AMD``; cards registered in
``hami.io/node-amd-register`` as a JSON list (HAMi's ``DeviceInfo`` keys, as
NVIDIA's annotation; a key left out is Go's zero value, so a card without
``"health": true`` is unhealthy); resources ``amd.com/gpu`` (count),
``amd.com/gpumem`` (MiB) and ``amd.com/gpucores`` (a *percentage* of the
card), the chart's names; filters ``amd.com/use-gputype`` /
``amd.com/nouse-gputype`` (substrings of the card type, case-insensitive) and
``amd.com/use-gpu-uuid`` / ``amd.com/nouse-gpu-uuid`` (a hyphen before
``uuid``, unlike every other family); the allocation in
``hami.io/amd-devices-to-allocate`` and ``hami.io/amd-devices-allocated``.

A card's ``devcore`` is its number of Compute Units (CUs), and Fit charges
CUs, not percent: a request of ``p`` % takes ``devcore x p / 100`` CUs
(integer), at least 1 and at most ``devcore``. Fit (:func:`hamisim.hami.
reference.fit` with :attr:`~hamisim.devices.family.Family.cores_as_cus`):
health, type (request ``AMD``; the type filters), UUID, slots, ``mutex``;
then memory (a request without memory takes the whole card), then CUs. It
has none of the other families' core steps: no clamp of cores above 100, no
"exclusive at 100 %" rule, no ``CardComputeUnitsExhausted``, no NUMA, no quota
re-check. ``ScoreNode`` adds nothing.

Quirks of v2.10.0 kept here:

* request generation reads **limits only**: a count in ``requests`` alone
  asks for nothing (so does a memory- or core-only container);
* the webhook refuses (HTTP 500, :func:`admission_error`) a container whose
  limits hold the count and a core percentage outside 1..100;
  request generation drops a count at or below 0 or above int32 and a memory
  beyond int32;
* cores default to 100 % = every CU of the card, so a pod that leaves the
  core limit out cannot share its card with anyone (the next request needs
  at least one CU: ``CardInsufficientCore``);
* the allocation names the card's registered type (``AMD_Instinct_MI300X``),
  not ``AMD``; a card's score counts AMD requests only when its type is
  exactly ``AMD``;
* the card score (``ComputeScore``, shared by all families) adds the
  request's percentage to the card's used *CUs* and divides by its CUs:
  units HAMi mixes, kept.
"""
from __future__ import annotations

from hamisim.devices.family import Family, RequestFields, Resources

__all__ = ["AMD", "request_fields", "admission_error", "cus"]

_INT32_MAX = 2**31 - 1


def request_fields(c: Resources) -> RequestFields | None:
    """``GenerateResourceRequests`` for one container: ``(nums, memreq,
    mempercentagereq (always 0), core percentage)`` or ``None``."""
    n = c.limits.get(AMD.count_name)
    if n is None or n <= 0 or n > _INT32_MAX:
        return None
    mem = c.limits.get(AMD.memory_name, 0)
    if mem < 0 or mem > _INT32_MAX:
        return None
    pct = c.limits.get(AMD.cores_name, 100)
    if not 1 <= pct <= 100:
        return None
    return n, mem, 0, pct


def admission_error(limits: dict[str, int]) -> str | None:
    """``MutateAdmission``'s refusal (the error text the webhook returns), or ``None``."""
    if AMD.count_name in limits and AMD.cores_name in limits:
        if not 1 <= limits[AMD.cores_name] <= 100:
            return f"{AMD.cores_name} must be an integer percentage between 1 and 100"
    return None


def cus(devcore: int, devmem: int, memreq: int, pct: int) -> int | None:
    """The CUs Fit charges a card of ``devcore`` CUs and ``devmem`` MiB for a
    request of ``memreq`` MiB (already the whole card when 0) and ``pct`` %;
    ``None`` = the card has no CUs for a request that asks some
    (``CardInsufficientCore``)."""
    if pct > 0:
        if devcore <= 0:
            return None
        return min(max(devcore * pct // 100, 1), devcore)
    if devmem > 0 and memreq >= devmem:
        return devcore
    return 0


#: ``amd.AMDDevices`` (``pkg/device/amd/device.go``)
AMD = Family(
    word="AMD", vendor="AMD", package="amd", fid=6,
    count_name="amd.com/gpu", memory_name="amd.com/gpumem", cores_name="amd.com/gpucores",
    use_type="amd.com/use-gputype", nouse_type="amd.com/nouse-gputype",
    use_uuid="amd.com/use-gpu-uuid", nouse_uuid="amd.com/nouse-gpu-uuid",
    register_annotation="hami.io/node-amd-register",
    to_allocate_annotation="hami.io/amd-devices-to-allocate",
    allocated_annotation="hami.io/amd-devices-allocated",
    generate=request_fields,
    refuse=lambda limits, _requests, _annotations: admission_error(limits),
    register_format="json", cores_as_cus=True)
