"""HAMi's card filter annotations as v2.10.0's CheckType / CheckUUID read them.

``pkg/device/devices.go``: a value that is absent or blank after trimming sets
no constraint; any other value does, split on ``,`` with each member trimmed:
a value made only of separators is a ``use`` list no card is on (every card
reports ``CardTypeMismatch`` / ``CardUuidMismatch``), a ``nouse`` list that
excludes nothing. The type check comes before the UUID check.
"""
from __future__ import annotations

import pytest

from hamisim.cluster import Card, Cluster, Node
from hamisim.hami.reference import type_allowed, uuid_allowed
from hamisim.pods import Container, Pod
from hamisim.sim.backend import make_scheduler

BACKENDS = ["kernel", "reference"]
CARDS = (Card("GPU-A", 0, devmem=16000, type="NVIDIA-Tesla T4"),
         Card("GPU-B", 1, devmem=16000, type="NVIDIA-Tesla T4"))


@pytest.mark.parametrize("value, allowed", [
    (None, True), ("", True), ("   ", True),          # no constraint
    (",", False), (" , ", False), (",,", False),      # a constraint nothing matches
    ("t4", True), ("T4, ,", True), ("a100,", False),  # case-insensitive substrings
])
def test_use_gputype(value, allowed):
    ann = {} if value is None else {"nvidia.com/use-gputype": value}
    assert type_allowed(ann, "NVIDIA-Tesla T4") is allowed


@pytest.mark.parametrize("value, allowed", [
    (",", True), (" ", True), ("t4", False), (", T4 ,", False),
])
def test_nouse_gputype(value, allowed):
    assert type_allowed({"nvidia.com/nouse-gputype": value}, "NVIDIA-Tesla T4") is allowed


@pytest.mark.parametrize("use, nouse, allowed", [
    (",", None, False), (" , ", None, False), ("", None, True),
    ("GPU-A ,", None, True), ("gpu-a", None, False),    # exact, case-sensitive
    (None, ",", True), (None, "GPU-A,", False),
])
def test_uuid_filters(use, nouse, allowed):
    ann = {}
    if use is not None:
        ann["nvidia.com/use-gpuuuid"] = use
    if nouse is not None:
        ann["nvidia.com/nouse-gpuuuid"] = nouse
    assert uuid_allowed(ann, "GPU-A") is allowed


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("annotations, reason", [
    ({"nvidia.com/use-gputype": ","}, "2/2 CardTypeMismatch"),
    ({"nvidia.com/use-gpuuuid": ","}, "2/2 CardUuidMismatch"),
    # both: the type check rejects every card first
    ({"nvidia.com/use-gputype": ",", "nvidia.com/use-gpuuuid": ","}, "2/2 CardTypeMismatch"),
])
def test_separators_only_match_no_card(backend, annotations, reason):
    sched = make_scheduler(Cluster((Node("n", CARDS),)), backend)
    d = sched.schedule(Pod("p", (Container({"nvidia.com/gpu": 1}),), annotations=annotations))
    assert not d.bound and d.message == f"0/1 nodes are available: 1 {reason}."


@pytest.mark.parametrize("backend", BACKENDS)
def test_separators_only_in_nouse_exclude_nothing(backend):
    sched = make_scheduler(Cluster((Node("n", CARDS),)), backend)
    d = sched.schedule(Pod("p", (Container({"nvidia.com/gpu": 1}),),
                           annotations={"nvidia.com/nouse-gpuuuid": ",",
                                        "nvidia.com/nouse-gputype": " , "}))
    assert d.bound
