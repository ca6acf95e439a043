"""MIG cards as HAMi v2.10.0 places them, on both backends.

The facts are HAMi's own: its unit tests of the MIG rules
(``pkg/device/nvidia/mig_capability_test.go``, ``mig_topology_test.go``,
``pkg/scheduler/mig_allocation_test.go``) and the scenarios of its hardware
end-to-end script (``hack/hami-mig-e2e.sh``, A100 40GB preset), translated;
then HAMi's surprises as a user meets them (HAMI-SEMANTICS §11).
"""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from hamisim import Container, Pod
from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.hami.decision import parse_reason
from hamisim.hami.mig import select_candidate, select_placement
from hamisim.io.clusterfile import load_cluster
from hamisim.mig import (
    DEFAULT_ALLOWLIST,
    NVML_TABLES,
    MigPlacement,
    MigProfile,
    card_count,
    nvml_table_for,
    register_profiles,
)
from hamisim.sim.backend import make_scheduler

BACKENDS = ("reference", "kernel")

#: HAMi's fixture a100MigProfiles() (mig_capability_test.go)
A100 = (
    MigProfile("1g.5gb", 5120, 14, 1, tuple(MigPlacement(i, 1) for i in range(7)), 7),
    MigProfile("2g.10gb", 10240, 28, 2, tuple(MigPlacement(i, 2) for i in (0, 2, 4)), 3),
    MigProfile("3g.20gb", 20480, 42, 3, (MigPlacement(0, 4), MigPlacement(4, 4)), 2))
MIG = {"nvidia.com/vgpu-mode": "mig"}


def mig_card(cid="GPU-a", profiles=A100, **kw) -> Card:
    return Card(cid, kw.pop("index", 0), kw.pop("count", 7), kw.pop("devmem", 40960), 100,
                kw.pop("type", "NVIDIA"), mode="mig", mig_profiles=profiles, **kw)


def cluster(*cards: Card, policy="binpack") -> Cluster:
    return Cluster((Node("node1", cards),), SchedulerConfig(gpu_scheduler_policy=policy))


def pod(name, gpu=1, mem=None, pct=None, cores=None, **ann) -> Pod:
    limits = {"nvidia.com/gpu": gpu}
    if mem is not None:
        limits["nvidia.com/gpumem"] = mem
    if pct is not None:
        limits["nvidia.com/gpumem-percentage"] = pct
    if cores is not None:
        limits["nvidia.com/gpucores"] = cores
    return Pod(name, (Container(limits),), annotations={**MIG, **ann})


def instances(decision) -> list[tuple[str, str, int, int]]:
    return [(p.uuid, *p.mig) for c in decision.containers for p in c]


# ---------------------------------------------------------------------------
# HAMi's unit tests of the rules


def test_add_resource_usage_uses_reported_profile_and_placement():
    # TestAddResourceUsageUsesReportedProfileAndPlacement: 10000 MiB -> 2g.10gb at {0,2},
    # the usage rewritten to the profile's 10240 MiB and 28 cores
    for backend in BACKENDS:
        s = make_scheduler(cluster(mig_card()), backend)
        d = s.schedule(pod("p", mem=10000))
        assert instances(d) == [("GPU-a", "2g.10gb", 0, 2)], backend
        assert d.devices == "GPU-a,NVIDIA,10240,28:;"
        assert s.usage_by_card() == {"GPU-a": (1, 10240, 28)}


def test_custom_filter_uses_reported_placement_capacity():
    # TestCustomFilterUsesReportedPlacementCapacity: 2g at 0, 2, 4 taken -> a 10000 MiB
    # request finds neither 2g nor 3g; 5000 MiB takes 1g at 6
    occupied = [MigPlacement(s, 2) for s in (0, 2, 4)]
    assert select_candidate(A100, occupied, 10000) is None
    assert select_candidate(A100, occupied, 5000) == (A100[0], MigPlacement(6, 1))
    for backend in BACKENDS:
        s = make_scheduler(cluster(mig_card()), backend)
        for i in range(3):
            assert s.schedule(pod(f"2g-{i}", mem=10000)).bound
        d = s.schedule(pod("big", mem=10000))
        assert not d.bound and parse_reason(d.node_reasons["node1"][0]) == \
            {"CardMigTopologyInfeasible": 1}, backend
        assert instances(s.schedule(pod("small", mem=5000))) == [("GPU-a", "1g.5gb", 6, 1)]


def test_balanced_packing_order():
    # TestSelectMigPlacementUsesBalancedPacking: 3g -> 4, 2g -> 0, 1g -> 3, 1g -> 2
    occupied: list[MigPlacement] = []
    starts = []
    for name in ("3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"):
        place = select_placement(A100, occupied, name)
        occupied.append(place)
        starts.append(place.start)
    assert starts == [4, 0, 3, 2]


def test_percentage_resolves_against_the_whole_card():
    # TestFitUsesEffectivePercentageMemoryForMigPlacement: 25% of 40960 = 10240 MiB needs
    # a 2g; with 2g at 0, 2, 4 taken the card refuses it for its geometry, although its
    # memory (30720 of 40960 used) would hold it
    for backend in BACKENDS:
        s = make_scheduler(cluster(mig_card()), backend)
        assert instances(s.schedule(pod("a", pct=25))) == [("GPU-a", "2g.10gb", 0, 2)]
        s.schedule(pod("b", pct=25))
        s.schedule(pod("c", pct=25))
        d = s.schedule(pod("d", pct=25))
        assert d.node_reasons["node1"] == ["1/1 CardMigTopologyInfeasible"], backend


def test_two_instances_on_one_card():
    # TestFitInDevicesAllowsMultipleMigPlacementsOnSingleGPU: gpu 2, gpumem 4000 on one
    # card with seven 1g placements: both instances on the card, 6 then 5
    one_g = (MigProfile("1g.5gb", 5120, 14, 1, tuple(MigPlacement(i, 1) for i in range(7)), 7),)
    for backend in BACKENDS:
        s = make_scheduler(cluster(mig_card(profiles=one_g)), backend)
        d = s.schedule(pod("p", gpu=2, mem=4000))
        assert instances(d) == [("GPU-a", "1g.5gb", 6, 1), ("GPU-a", "1g.5gb", 5, 1)], backend
        assert d.devices == "GPU-a,NVIDIA,5120,14:GPU-a,NVIDIA,5120,14:;"
        assert json.loads(d.mig_allocations) == [
            {"containerIndex": 0, "deviceIndex": 0, "gpuUUID": "GPU-a", "profile": "1g.5gb",
             "placement": {"start": 6, "size": 1}},
            {"containerIndex": 0, "deviceIndex": 1, "gpuUUID": "GPU-a", "profile": "1g.5gb",
             "placement": {"start": 5, "size": 1}}]
        # two slots of the card held, the profile's memory and cores twice
        assert s.usage_by_card() == {"GPU-a": (2, 10240, 28)}


def test_too_few_placements_on_one_card():
    # TestFitInDevicesRejectsInsufficientMigPlacementsOnSingleGPU: one placement, two asked
    only_six = (MigProfile("1g.5gb", 5120, 14, 1, (MigPlacement(6, 1),), 7),)
    for backend in BACKENDS:
        d = make_scheduler(cluster(mig_card(profiles=only_six)), backend).schedule(
            pod("p", gpu=2, mem=4000))
        assert d.node_reasons["node1"] == [
            "1/1 AllocatedCardsInsufficientRequest, 1/1 CardMigTopologyInfeasible"], backend


@pytest.mark.parametrize("mode,fits", [(None, True), ("mig", True), ("hami-core", False)])
def test_mig_request_may_ask_for_more_cards_than_the_node_has(mode, fits):
    # TestIsMIGRequest / ...RetainsPhysicalCountCheckForNonMigGPU: a vgpu-mode that names
    # another mode keeps kube's count check (NodeInsufficientDevice)
    ann = {} if mode is None else {"nvidia.com/vgpu-mode": mode}
    for backend in BACKENDS:
        p = Pod("p", (Container({"nvidia.com/gpu": 2, "nvidia.com/gpumem": 4000}),),
                annotations=ann)
        d = make_scheduler(cluster(mig_card()), backend).schedule(p)
        assert d.bound == fits, backend
        if not fits:
            assert d.node_reasons["node1"] == ["NodeInsufficientDevice"]


# ---------------------------------------------------------------------------
# hack/hami-mig-e2e.sh, A100 40GB preset: 4500 MiB -> 1g, 9500 -> 2g, 19000 -> 3g


E2E_MEM = {"1g": 4500, "2g": 9500, "3g": 19000}


class E2E:
    """One card, pods pinned to it with binpack, as the script deploys them."""

    def __init__(self, backend: str):
        gpu = nvml_table_for("NVIDIA A100-SXM4-40GB")
        profiles = register_profiles(gpu, gpu.nvml_name)
        self.s = make_scheduler(cluster(mig_card(profiles=profiles, type=gpu.nvml_name,
                                                 devmem=gpu.devmem)), backend)
        self.n = 0

    def add(self, kind: str) -> str | None:
        self.n += 1
        d = self.s.schedule(pod(f"{kind}-{self.n}", mem=E2E_MEM[kind],
                                **{"hami.io/gpu-scheduler-policy": "binpack",
                                   "nvidia.com/use-gpuuuid": "GPU-a"}))
        return d.pod if d.bound else None

    def delete(self, name: str) -> None:
        self.s.delete(name)


@pytest.mark.parametrize("backend", BACKENDS)
def test_e2e_deletes_free_placements(backend):
    e = E2E(backend)
    ones = [e.add("1g"), e.add("1g")]          # case 1: 2 x 1g + 1 x 2g coexist
    twos = [e.add("2g")]
    assert None not in ones + twos
    e.delete(ones[1])                            # case 2: one 1g gone, two more 2g fit
    twos += [e.add("2g"), e.add("2g")]
    assert None not in twos
    assert e.add("1g") is None                   # ... and another 1g stays pending
    e.delete(twos[0])                            # case 4: a 2g gone lets a 1g in
    assert e.add("1g") is not None


@pytest.mark.parametrize("backend", BACKENDS)
def test_e2e_geometry_blocks_small_requests(backend):
    e = E2E(backend)
    assert e.add("3g") and e.add("3g")          # case 5: 2 x 3g, then no 1g
    assert e.add("1g") is None
    e = E2E(backend)                             # case 6: 3g + 2g + 2 x 1g fill the card
    assert all(e.add(k) for k in ("3g", "2g", "1g", "1g"))
    assert e.add("1g") is None
    e = E2E(backend)                             # case 7: seven 1g fill it
    ones = [e.add("1g") for _ in range(7)]
    assert all(ones) and e.add("1g") is None
    e.delete(ones[3])
    assert e.add("1g") is not None


# ---------------------------------------------------------------------------
# HAMi's surprises (HAMI-SEMANTICS §11.7)


def test_a_whole_card_request_never_fits_a_mig_card():
    # nvidia.com/gpu: 1 becomes 100% memory and 100 cores: 40960 MiB > 7g.40gb's 40320
    gpu = NVML_TABLES[0]
    profiles = register_profiles(gpu, gpu.nvml_name)
    assert max(p.memory_mb for p in profiles) < gpu.devmem
    for backend in BACKENDS:
        s = make_scheduler(cluster(mig_card(profiles=profiles, devmem=gpu.devmem)), backend)
        d = s.schedule(Pod("whole", (Container({"nvidia.com/gpu": 1}),)))
        assert d.node_reasons["node1"] == ["1/1 CardMigTopologyInfeasible"], backend


def test_smallest_profile_at_least_the_request_and_fallback_to_larger():
    # 5120 MiB on an A100 40GB takes 2g.10gb (1g.5gb has 4864); when the smallest
    # profile's placements are taken, a request falls back to a larger profile and is
    # charged all of its memory
    gpu = NVML_TABLES[0]
    profiles = register_profiles(gpu, gpu.nvml_name)
    few = (MigProfile("1g.5gb", 5120, 14, 1, (MigPlacement(6, 1),), 7),
           MigProfile("2g.10gb", 10240, 28, 2, (MigPlacement(0, 2),), 3))
    for backend in BACKENDS:
        s = make_scheduler(cluster(mig_card(profiles=profiles, devmem=gpu.devmem)), backend)
        assert instances(s.schedule(pod("a", mem=5120)))[0][1] == "2g.10gb"
        s = make_scheduler(cluster(mig_card(profiles=few)), backend)
        assert instances(s.schedule(pod("x", mem=4000))) == [("GPU-a", "1g.5gb", 6, 1)]
        assert instances(s.schedule(pod("y", mem=4000))) == [("GPU-a", "2g.10gb", 0, 2)]
        assert s.usage_by_card() == {"GPU-a": (2, 15360, 42)}, backend
        assert not s.schedule(pod("z", mem=4000)).bound


def test_exclusive_requests_only_need_an_idle_card_at_placement():
    # gpucores 100 (or mutex) asks for a card without tenants; the instance then records
    # its profile's cores, so the next pod shares the card
    for backend in BACKENDS:
        s = make_scheduler(cluster(mig_card()), backend)
        d = s.schedule(pod("solo", mem=4000, cores=100))
        assert instances(d) == [("GPU-a", "1g.5gb", 6, 1)]
        assert s.usage_by_card()["GPU-a"] == (1, 5120, 14)
        assert s.schedule(pod("next", mem=4000)).bound, backend
        d = s.schedule(pod("mutex", mem=4000, **{"hami.io/gpu-scheduler-policy": "mutex"}))
        assert d.node_reasons["node1"] == ["1/1 ExclusiveDeviceAllocateConflict"]
        d = s.schedule(pod("mutex2", gpu=3, mem=4000,
                           **{"hami.io/gpu-scheduler-policy": "mutex"}))
        assert not d.bound


def test_mixed_node_hami_core_and_mig_cards():
    # a hami-core card and a MIG card side by side: vgpu-mode picks the kind
    core = Card("GPU-core", 1, 10, 40960, 100, "NVIDIA")
    for backend in BACKENDS:
        s = make_scheduler(cluster(mig_card(), core), backend)
        d = s.schedule(Pod("c", (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}),),
                           annotations={"nvidia.com/vgpu-mode": "hami-core"}))
        assert [p.uuid for p in d.containers[0]] == ["GPU-core"] and d.mig_allocations is None
        d = s.schedule(pod("m", mem=4000))
        assert instances(d) == [("GPU-a", "1g.5gb", 6, 1)], backend


# ---------------------------------------------------------------------------
# what the device plugin registers


def test_registered_profiles_follow_the_allowlist_by_slice_prefix():
    a100 = nvml_table_for("NVIDIA A100-SXM4-40GB")
    got = register_profiles(a100, a100.nvml_name)
    assert [(p.name, p.memory_mb, p.core) for p in got] == [
        ("1g.5gb", 4864, 15), ("2g.10gb", 9984, 29), ("3g.20gb", 20096, 43),
        ("7g.40gb", 40320, 100)]
    assert card_count(got) == 7
    # HAMi's wire format (TestMigProfileUsesCompactWireFormat): no instanceCount
    assert MigProfile("1g.5gb", 4864, 15, 1, (MigPlacement(6, 1),), 7).to_wire() == json.loads(
        '{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,'
        '"placements":[{"start":6,"size":1}]}')


def test_the_charts_allowlist_is_matched_by_substring_in_order():
    # "H20" is a substring of "NVIDIA H200": the H20 entry comes first and names the
    # H200's profiles; the chart's H100 models are not substrings of NVML's names
    h200 = nvml_table_for("NVIDIA H200")
    assert [p.name for p in register_profiles(h200, "NVIDIA H200")] == [
        "1g.12gb", "2g.24gb", "3g.48gb", "7g.96gb"]
    h100 = nvml_table_for("NVIDIA H100 80GB HBM3")
    assert register_profiles(h100, h100.nvml_name, DEFAULT_ALLOWLIST) == ()


def test_cluster_file_mig_cards(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent("""
        scheduler:
          migProfileAllowlist:
            - models: [H100 80GB HBM3]
              profiles: [1g.10gb, 3g.40gb]
        nodes:
          - name: h100
            gpus: 2
            card: {type: NVIDIA H100 80GB HBM3, mode: mig}
          - name: own
            devices:
              - id: G
                type: NVIDIA-custom
                devmem: 1000
                mode: mig
                migProfiles:
                  - {name: 1g.x, memoryMB: 500, core: 50, sliceCount: 1,
                     placements: [{start: 0, size: 1}, {start: 1, size: 1}]}
          - name: pasted
            devices: '[{"id":"GPU-0","count":7,"devmem":40960,"devcore":100,"type":"NVIDIA","health":true,"mode":"mig","migProfiles":[{"name":"1g.5gb","memoryMB":5120,"core":14,"sliceCount":1,"instanceCount":7,"multiprocessorCount":14,"placements":[{"start":6,"size":1}]}]}]'
        """))
    c = load_cluster(path)
    h100 = c.nodes[0].cards[0]
    assert (h100.mode, h100.devmem, h100.count, h100.devcore) == ("mig", 81559, 7, 100)
    assert [(p.name, p.memory_mb, p.core) for p in h100.mig_profiles] == [
        ("1g.10gb", 9984, 13), ("3g.40gb", 40448, 46)]
    own = c.nodes[1].cards[0]
    assert own.count == 2 and own.mig_profiles[0].placements[1] == MigPlacement(1, 1)
    # TestGetNodeDevices_MigProfilesFromNode: the annotation's profile, extra keys ignored
    pasted = c.nodes[2].cards[0]
    assert pasted.mig_profiles == (MigProfile("1g.5gb", 5120, 14, 1, (MigPlacement(6, 1),), 7),)


# ---------------------------------------------------------------------------
# what MIG costs: slices in use and slices stranded by geometry


def _allocations(card: str, *placements: tuple[str, int, int]) -> str:
    return json.dumps([{"containerIndex": 0, "deviceIndex": i, "gpuUUID": card,
                        "profile": p, "placement": {"start": s, "size": z}}
                       for i, (p, s, z) in enumerate(placements)])


def test_mig_meter_slices_in_use_and_stranded():
    from hamisim.shapes import Shape
    from hamisim.sim.placement import MigMeter

    gpu = nvml_table_for("NVIDIA A100-SXM4-40GB")
    card = mig_card(profiles=register_profiles(gpu, gpu.nvml_name), type=gpu.nvml_name,
                    devmem=gpu.devmem)
    # the workload's typical pod wants 19000 MiB: only 3g.20gb and 7g.40gb serve it
    meter = MigMeter(cluster(card), [Shape(0, 1, 19000)])
    # a 3g at {4,4} from 0 to 100, a 1g at {3,1} from 10 to 110
    meter.collect(np.array([0.0, 10.0]), np.array([100.0, 110.0]),
                  [_allocations("GPU-a", ("3g.20gb", 4, 4)),
                   _allocations("GPU-a", ("1g.5gb", 3, 1))])
    frame = meter.frame()
    assert frame[["time", "mig_slots_used", "mig_slots_stranded", "mig_instances"]].values.tolist() \
        == [[0, 4, 0, 1], [10, 5, 3, 2], [100, 1, 3, 1], [110, 0, 0, 0]]
    assert set(frame.mig_slots_total) == {8}
    s = meter.summary(200.0)
    # used: 4 x 10 + 5 x 90 + 1 x 10 slot-seconds over 8 slots x 200 s
    assert s["mig_slots_used_mean_pct"] == pytest.approx(100 * 500 / 1600)
    assert s["mig_slots_stranded_mean_pct"] == pytest.approx(100 * 3 * 100 / 1600)
    assert s["mig_slots_used_peak"] == 5 and s["mig_slots_total"] == 8
    assert s["mig_by_card_type"][gpu.nvml_name]["mig_slots_total"] == 8


def test_a_run_reports_mig_slices(tmp_path):
    from hamisim.cli import main

    (tmp_path / "c.yaml").write_text(textwrap.dedent("""
        nodes:
          - name_prefix: a100
            replicas: 2
            gpus: 2
            card: {type: NVIDIA A100-SXM4-40GB, mode: mig}
        """))
    (tmp_path / "t.csv").write_text("name,arrival,duration,gpu,gpumem\n"
                                    + "".join(f"p{i},{i},50,1,{4500 if i % 3 else 19000}\n"
                                              for i in range(30)))
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--out", str(out),
                 "--no-progress"]) == 0
    import pandas as pd

    summary = json.loads((out / "summary.json").read_text())["results"]
    assert summary["mig_slots_total"] == 32 and summary["mig_slots_used_peak"] > 0
    pods = pd.read_parquet(out / "pods.parquet")
    held = pods.dropna(subset=["bind"])
    assert held.mig_allocations.notna().all()
    profiles = {json.loads(a)[0]["profile"] for a in held.mig_allocations}
    assert profiles == {"1g.5gb", "3g.20gb"}
    ts = pd.read_parquet(out / "timeseries_mig.parquet")
    assert ts.mig_slots_used.max() == summary["mig_slots_used_peak"]
    assert (out / "figures" / "mig.png").exists()


def test_explain_says_which_mig_rule_blocked_a_pod():
    from hamisim.explain import explain_pod, format_text

    gpu = nvml_table_for("NVIDIA A100-SXM4-40GB")
    c = cluster(mig_card(profiles=register_profiles(gpu, gpu.nvml_name), type=gpu.nvml_name,
                         devmem=gpu.devmem))
    whole = format_text(explain_pod(c, Pod("whole", (Container({"nvidia.com/gpu": 1}),))))
    assert "more than its largest profile 7g.40gb (40320 MiB)" in whole
    assert "asks 100 % of the card's 40960 MiB and never fits a MIG card" in whole
    two = format_text(explain_pod(c, pod("two", gpu=2, mem=5000)))
    assert "MIG 2g.10gb at slots 0-1, 2g.10gb at slots 2-3" in two
    assert "charges the profiles' 19968 MiB and 58 cores" in two
    assert '"profile":"2g.10gb","placement":{"start":2,"size":2}' in two
    from hamisim.explain import explain_with
    from hamisim.hami.reference import ReferenceScheduler

    # with NVML's A100 table, 3 x 2g + 1g charge 3 x 29 + 15 = 102 cores: the card then
    # refuses every request for its cores before its geometry is looked at
    sched = ReferenceScheduler(c)
    for i, mem in enumerate((9500, 9500, 9500, 4000)):
        assert sched.schedule(pod(f"p{i}", mem=mem)).bound
    assert sched.usage_by_card()["GPU-a"] == (4, 3 * 9984 + 4864, 102)
    assert "CardInsufficientCore (free -2 cores < 0 needed; the MIG instances in use are " \
        "charged their profiles' cores, rounded up" in format_text(
        explain_with(sched, pod("one", mem=4000)))
    # HAMi's test fixture (14/28 cores) stays below 100: geometry decides
    sched = ReferenceScheduler(cluster(mig_card()))
    for i, mem in enumerate((9500, 9500, 9500, 4000)):
        assert sched.schedule(pod(f"p{i}", mem=mem)).bound
    text = format_text(explain_with(sched, pod("one", mem=4000)))
    assert ("no free placement for 4000 MiB: every profile that large (1g.5gb, 2g.10gb, "
            "3g.20gb) overlaps instances in use (slots 0-1, slots 2-3, slots 4-5, "
            "slot 6)") in text


def test_research_policies_refuse_mig_cards():
    # the FGD paper's policies know nothing of MIG geometry: refused, not approximated
    from hamisim.errors import HamisimError

    c = Cluster((Node("n", (mig_card(),)),), SchedulerConfig(node_scheduler_policy="fgd"))
    with pytest.raises(HamisimError, match="models no MIG placement"):
        make_scheduler(c, "kernel")


def test_a_vgpu_mode_naming_no_mode_is_warned(tmp_path):
    # HAMi compares the annotation case-sensitively: "MIG" keeps the pod off every card
    import warnings as w

    from hamisim.hami.policy import vgpu_mode_problem
    from hamisim.io.traces import read_trace

    assert vgpu_mode_problem("mig") is None and vgpu_mode_problem("hami-core,mig") is None
    (tmp_path / "t.csv").write_text("name,arrival,gpu,gpumem,vgpu_mode\np,0,1,4000,MIG\n")
    with w.catch_warnings(record=True) as caught:
        w.simplefilter("always")
        read_trace(tmp_path / "t.csv")
    text = " ".join(str(c.message) for c in caught)
    assert "t.csv:2" in text and "HAMi compares case-sensitively: write 'mig'" in text


def test_placements_outside_the_modelled_slots_are_refused():
    # a size-0 placement overlaps nothing: HAMi's Fit would place instances on it forever
    with pytest.raises(ValueError, match="needs size >= 1"):
        MigPlacement(3, 0)
    with pytest.raises(ValueError, match="within slots 0..63"):
        MigPlacement(60, 8)
