"""Biren (``pkg/device/biren``), as HAMi v2.10.0 schedules it: whole cards, slots only.

Identity: common word and request type ``Biren``; one resource, the count
``birentech.com/gpu`` (the chart's ``birenResourceName``; the backend has no
memory or core resource at all); UUID filters ``birentech.com/use-gpuuuid`` /
``birentech.com/nouse-gpuuuid``; cards registered in
``hami.io/node-biren-register`` as a JSON list (HAMi's ``DeviceInfo`` keys; a
key left out is Go's zero value, so a card without ``"health": true`` is
unhealthy); the allocation in ``hami.io/Biren-devices-to-allocate`` and
``hami.io/Biren-devices-allocated`` (capital B, the common word).

Request generation (:func:`request_fields`): the count from limits, else
requests; every request is ``Nums`` cards with no memory, 100 as its memory
percentage and no cores. Fit (:func:`hamisim.hami.reference.fit` with
:attr:`~hamisim.devices.family.Family.slots_only`) walks the cards from the
last: health, type (the *request's* type against ``Biren``; the card's type
only matters to the scheduler's offer test), UUID, slots, ``mutex``; then it
takes the card. There is no memory or core step, and a pick charges no
memory and no cores: a Biren card is shared by as many pods as its ``count``
(the slots its device plugin registers), whatever they run. ``ScoreNode``
adds nothing; the node score is the shared one, so with memory and cores
never charged it is ``10 x used slots / slots`` of the node's cards.

Quirks of v2.10.0 kept here:

* ``GetNodeDevices`` overwrites every card's ``devcore`` with 100 whatever
  the annotation says (:data:`REGISTERED_DEVCORE`; the import does the same, and
  a cluster file's other value warns at its line);
* the type annotations ``birentech.com/use-biren`` / ``nouse-biren`` are
  defined and never read;
* the count is Go's ``int32`` of the quantity, unchecked: at or below 0 the
  request is dropped by Filter (``Nums > 0`` only);
* the card score gives the request's 100 % memory as a whole card's memory
  (``ComputeScore``, shared by all families) although Fit charges none.

Not modelled (said in DESIGN §3): the webhook claims a pod for HAMi only when
a container's *limits* hold the count, while request generation also reads
requests; hamisim schedules every pod with HAMi, so a pod that names the
count only in requests, and nothing else HAMi's webhook claims, is placed by
HAMi here where kube-scheduler alone would place it in a real cluster. The
handshake health (``hami.io/node-handshake-biren``) and the node lock are not
modelled either.
"""
from __future__ import annotations

from hamisim.devices.family import Family, RequestFields, Resources, int32

__all__ = ["BIREN", "REGISTERED_DEVCORE", "request_fields"]

#: the ``devcore`` ``GetNodeDevices`` gives every Biren card ("only for calscore use")
REGISTERED_DEVCORE = 100


def request_fields(c: Resources) -> RequestFields | None:
    """``GenerateResourceRequests`` for one container: ``(nums, 0, 100, 0)``
    or ``None``."""
    n = c.value(BIREN.count_name)
    if n is None:
        return None
    nums = int32(n)
    if nums <= 0:
        return None         # generated, then dropped by Filter (Nums > 0 only)
    return nums, 0, 100, 0


#: ``biren.BirenDevices`` (``pkg/device/biren/device.go``)
BIREN = Family(
    word="Biren", vendor="Biren", package="biren", fid=8,
    count_name="birentech.com/gpu", memory_name="", cores_name="",
    use_type=None, nouse_type=None,
    use_uuid="birentech.com/use-gpuuuid", nouse_uuid="birentech.com/nouse-gpuuuid",
    register_annotation="hami.io/node-biren-register", register_format="json",
    to_allocate_annotation="hami.io/Biren-devices-to-allocate",
    allocated_annotation="hami.io/Biren-devices-allocated",
    generate=request_fields, slots_only=True, registered_devcore=REGISTERED_DEVCORE)
