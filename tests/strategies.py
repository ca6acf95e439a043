"""Hypothesis strategies shared by the tests: random clusters and pods that reach
every corner of HAMi's rules (card types, modes, policies, filters, weights,
init containers, admission errors), for the kernel-versus-reference and the
compiled-versus-Python engine tests."""
from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck
from hypothesis import strategies as st

from hamisim.cluster import Card, Cluster, Node, Quota, SchedulerConfig, Taint
from hamisim.hami.gpuscore import gpu_scores
from hamisim.mig import NVML_TABLES, MigPlacement, MigProfile, register_profiles
from hamisim.topology import TEMPLATES, GpuPlace, NicPlace, ServerTopology
from hamisim.pods import (
    GPU,
    GPUCORES,
    GPUMEM,
    GPUMEM_PERCENTAGE,
    Container,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Toleration,
)

CARD_TYPES = ["NVIDIA-Tesla T4", "NVIDIA A100-SXM4-40GB", "NVIDIA", "nvidia-a10",
              "AMD-MI100", "DCU", "Hygon-dcu-Z100", "MR-V100", "Iluvatar BI-V150", "AMD",
              "AMD_Instinct_MI300X", "Ascend910B", "MLU", "Biren", "Biren-BR104",
              "Mthreads", "mthreads-s4000", "MTT-Mthreads-S80", "Ascend910B3", "Ascend910C",
              "Ascend310P", "Ascend910B4-1", "Ascend910B4", "kunlun", "XPU", "Kunlun-XPU"]
MODES = ["hami-core", "hami-core", "mps", "mig"]
GPU_POLICIES = ["spread", "binpack", "mutex", "numa", "topology-aware", " binpack", "pack", "",
                "mutex,binpack,numa", "binpack,numa", "numa,spread", "spread, mutex",
                "topology-aware,binpack", "mutex,topology-aware", "numa,numa,binpack"]
NODE_POLICIES = ["binpack", "spread", "other"]
SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


@st.composite
def cards_of(draw, node: str, max_cards: int, modes=MODES):
    n = draw(st.integers(0, max_cards) if draw(st.integers(0, 9)) else st.just(0))
    # Many identical cards make exact score ties, which is where the card
    # order (insertion sort up to 12, pdqsort above) decides.
    uniform = draw(st.booleans())
    proto = None
    cards = []
    indexes = draw(st.permutations(range(n))) if draw(st.booleans()) else list(range(n))
    for i in range(n):
        if proto is None or not uniform or draw(st.integers(0, 7)) == 0:
            proto = {
                "count": draw(st.sampled_from([10, 10, 4, 2, 1, 0])),
                "devmem": draw(st.sampled_from([15360, 15360, 40960, 8192, 1000, 0, 65536])),
                "devcore": draw(st.sampled_from([100, 100, 100, 50, 200, 0, 304])),
                "type": draw(st.sampled_from(CARD_TYPES[:3] if draw(st.integers(0, 5))
                                          else CARD_TYPES)),
                "mode": draw(st.sampled_from(modes))}
            if proto["mode"] == "mig":
                proto["mig_profiles"] = draw(mig_profile_lists())
            else:
                proto.pop("mig_profiles", None)
        # Ascend 910's networks: most cards of a node in one, some without
        network = draw(st.sampled_from([None, 0, 0, 1, 2])) \
            if proto["type"].startswith("Ascend") else None
        cards.append(Card(id=f"GPU-{node}-{i}", index=indexes[i],
                          numa=draw(st.sampled_from([0, 0, 1])) if n > 1 else 0,
                          health=draw(st.integers(0, 12)) != 0, network_id=network, **proto))
    return cards


#: HAMi's own MIG test fixture (pkg/device/nvidia/mig_capability_test.go)
A100_FIXTURE = (
    MigProfile("1g.5gb", 5120, 14, 1, tuple(MigPlacement(i, 1) for i in range(7)), 7),
    MigProfile("2g.10gb", 10240, 28, 2, tuple(MigPlacement(i, 2) for i in (0, 2, 4)), 3),
    MigProfile("3g.20gb", 20480, 42, 3, (MigPlacement(0, 4), MigPlacement(4, 4)), 2))


@st.composite
def mig_profile_lists(draw):
    """What a MIG card registers: a built-in NVML table through the default
    allowlist, HAMi's test fixture, none, or random profiles whose names,
    memory and placements tie and overlap in every way HAMi's rules order."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        gpu = draw(st.sampled_from(NVML_TABLES))
        return register_profiles(gpu, gpu.nvml_name)
    if kind == 1:
        return A100_FIXTURE
    if kind == 2:
        return ()
    profiles = []
    for _ in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from(["1g.a", "2g.b", "3g.c", "4g.d", "7g.e", "1g.f"]))
        size = draw(st.sampled_from([1, 1, 2, 4, 8]))
        starts = draw(st.lists(st.integers(0, 8 - size), min_size=1, max_size=4))
        profiles.append(MigProfile(
            name, draw(st.sampled_from([0, 2000, 4864, 5120, 10240, 20480, 40960])),
            draw(st.sampled_from([0, 14, 15, 50, 100, 120])), draw(st.integers(1, 4)),
            tuple(MigPlacement(s, size) for s in starts)))
    return tuple(profiles)


@st.composite
def topologies(draw, n: int) -> ServerTopology:
    """A server layout for n GPUs: a built-in template of that size, or NUMA
    nodes, switches, boards, NVLink pairs (one-sided ones too) or an NVSwitch
    fabric, and NICs drawn at random."""
    fitting = [t for t in TEMPLATES.values() if len(t.gpus) == n]
    if fitting and draw(st.booleans()):
        return draw(st.sampled_from(fitting))
    gpus = []
    for _ in range(n):
        numa = draw(st.sampled_from([0, 0, 1]))
        gpus.append(GpuPlace(numa=numa, switch=2 * numa + draw(st.integers(0, 1)),
                             board=draw(st.sampled_from([None, None, None, 0, 1]))))
    nvlink, nvswitch = {}, ()
    if n > 1 and draw(st.integers(0, 2)) == 0:
        nvswitch = tuple(draw(st.sampled_from([0, 12, 18, 18])) for _ in range(n))
    elif n > 1:
        for _ in range(draw(st.integers(0, 4))):
            a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
            if a != b:
                nvlink[(a, b)] = draw(st.sampled_from([0, 1, 2, 4, 12, 18]))
    nics = tuple(NicPlace(numa=nm, switch=2 * nm + draw(st.integers(0, 1)))
                 for nm in draw(st.lists(st.sampled_from([0, 1]), max_size=2)))
    return ServerTopology(tuple(gpus), nvlink, nvswitch, nics)


def with_topology(draw, cards: list[Card]) -> tuple[list[Card], ServerTopology | None,
                                                     dict[str, dict[str, int]]]:
    """Sometimes give a node with cards indexed 0..n-1 a topology: its cards then
    take their NUMA node from it, and its pair scores are HAMi's for it."""
    n = len(cards)
    if not n or sorted(c.index for c in cards) != list(range(n)) or \
            draw(st.integers(0, 3)) != 0:
        return cards, None, {}
    topo = draw(topologies(n))
    cards = [dataclasses.replace(c, numa=topo.gpus[c.index].numa) for c in cards]
    derived, _ = gpu_scores(topo)
    by_index = {c.index: c.id for c in cards}
    scores = {by_index[a]: {by_index[b]: v for b, v in row.items()}
              for a, row in derived.items()} if draw(st.booleans()) else {}
    return cards, topo, scores


LABEL_KEYS = ["pool", "zone", "gpus"]
LABEL_VALUES = ["a", "b", "4", "8", "x1"]
TAINTS = [Taint("nvidia.com/gpu", "", "NoSchedule"), Taint("nvidia.com/gpu", "present",
          "NoSchedule"), Taint("dedicated", "ml", "NoExecute"),
          Taint("soft", "", "PreferNoSchedule"),
          Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")]


@st.composite
def kube_node_fields(draw):
    """A node's labels, taints and cordon (a third of the nodes have none)."""
    if draw(st.integers(0, 2)) == 0:
        return {}, (), False
    labels = draw(st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES),
                                  max_size=3))
    taints = tuple(draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique=True)))
    return labels, taints, draw(st.integers(0, 4)) == 0


@st.composite
def kube_pod_fields(draw):
    """A pod's node selector, tolerations, required node affinity, priority and
    preemption policy (mostly none)."""
    out = {}
    if draw(st.integers(0, 2)) == 0:
        out["node_selector"] = draw(st.dictionaries(st.sampled_from(LABEL_KEYS),
                                                    st.sampled_from(LABEL_VALUES), max_size=2))
    if draw(st.integers(0, 2)) == 0:
        out["tolerations"] = tuple(draw(st.lists(st.sampled_from([
            Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
            Toleration("nvidia.com/gpu", "Equal", "present", ""),
            Toleration("dedicated", "Equal", "ml", "NoExecute"),
            Toleration("", "Exists", "", ""),
            Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule")]),
            max_size=2)))
    if draw(st.integers(0, 3)) == 0:
        def req(draw_):
            op = draw_(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
            key = draw_(st.sampled_from(LABEL_KEYS))
            if op in ("In", "NotIn"):
                values = tuple(draw_(st.lists(st.sampled_from(LABEL_VALUES), min_size=1,
                                              max_size=2)))
            elif op in ("Gt", "Lt"):
                values = (draw_(st.sampled_from(["3", "4", "7"])),)
            else:
                values = ()
            return NodeSelectorRequirement(key, op, values)
        terms = []
        for _ in range(draw(st.integers(1, 2))):
            exprs = tuple(req(draw) for _ in range(draw(st.integers(0, 2))))
            fields = (NodeSelectorRequirement("metadata.name", "In", ("node0",)),) \
                if draw(st.integers(0, 5)) == 0 else ()
            terms.append(NodeSelectorTerm(exprs, fields))
        out["affinity"] = tuple(terms)
    if draw(st.integers(0, 3)) == 0:
        out["priority"] = draw(st.sampled_from([-5, 0, 10, 100]))
    if draw(st.integers(0, 5)) == 0:
        out["preemption_policy"] = "Never"
    return out


@st.composite
def clusters(draw, min_nodes=1, max_nodes=6, max_cards=16, with_quotas=True, modes=MODES):
    n_nodes = draw(st.integers(min_nodes, max_nodes))
    # one cluster in three has kube-scheduler's labels, taints and cordons
    kube = draw(st.integers(0, 2)) == 0
    nodes = []
    for i in range(n_nodes):
        name = f"node{i}"
        cards, topology, topology_scores = with_topology(
            draw, draw(cards_of(name, max_cards, modes)))
        ids = [c.id for c in cards]
        cordon = frozenset(draw(st.lists(st.sampled_from(ids), max_size=2))) \
            if ids and draw(st.integers(0, 5)) == 0 else frozenset()
        pairs = topology_scores
        if not pairs and len(ids) > 1 and draw(st.integers(0, 2)) == 0:
            # Few distinct values: ties between pair sums are the hard case.
            for a in ids:
                row = {b: draw(st.sampled_from([0, 1, 1, 2, 2, 10, 50, -5])) for b in ids
                       if b != a and draw(st.integers(0, 3))}
                if row:
                    pairs[a] = row
        cpu = draw(st.none() | st.sampled_from([0, 2000, 8000, 64000]))
        mem = draw(st.none() | st.sampled_from([0, 4096, 65536]))
        labels, taints, unschedulable = draw(kube_node_fields()) if kube else ({}, (), False)
        vnpu = draw(st.sampled_from([None, None, "true", "false", "yes"]))
        nodes.append(Node(name, tuple(cards), cpu, mem, pairs, cordon, labels=labels,
                          taints=taints, unschedulable=unschedulable, topology=topology,
                          hami_vnpu_core=vnpu))
    cfg = SchedulerConfig(
        gpu_scheduler_policy=draw(st.sampled_from(GPU_POLICIES)),
        node_scheduler_policy=draw(st.sampled_from(NODE_POLICIES)),
        default_memory=draw(st.sampled_from([0, 0, 1000])),
        default_cores=draw(st.sampled_from([0, 0, 10])),
        default_gpu_num=draw(st.sampled_from([1, 1, 2])),
        memory_factor=draw(st.sampled_from([1, 1, 2])),
        percentage_of_nodes_to_score=draw(st.sampled_from([0, 10, 50, 100])),
        node_tie_break=draw(st.sampled_from(["last", "random"])),
        preemption=draw(st.integers(0, 4)) != 0,
        kube_scheduler_version=draw(st.sampled_from(["1.32", "1.32", "1.31", "1.34", "1.35"])),
        hami_vnpu_core=draw(st.booleans()))
    return Cluster(tuple(nodes), cfg, quotas=draw(quotas()) if with_quotas else {})


#: the namespaces pods are drawn in; clusters put quotas on the last two
NAMESPACES = ("default", "team-a", "team-b")


@st.composite
def quotas(draw):
    """HAMi ResourceQuotas on some namespaces (one cluster in three)."""
    if draw(st.integers(0, 2)):
        return {}
    out = {}
    for ns in draw(st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2, unique=True)):
        out[ns] = Quota(memory=draw(st.sampled_from([None, 0, 1000, 4000, 20000, 60000])),
                        cores=draw(st.sampled_from([None, None, 0, 50, 100, 250])))
    return out


#: Hygon DCU's resources (hamisim.devices.hygon)
DCU_KEYS = ("hygon.com/dcunum", "hygon.com/dcumem", "hygon.com/dcucores")
#: the other families' resources: two Iluvatar chips (memory in 256 MiB units), AMD,
#: Cambricon, Biren, Moore Threads, three Ascend chips, Kunlunxin whole cards and vXPU
OTHER_KEYS = (DCU_KEYS,
              ("iluvatar.ai/MR-V100-vgpu", "iluvatar.ai/MR-V100.vMem", "iluvatar.ai/MR-V100.vCore"),
              ("iluvatar.ai/BI-V150-vgpu", "iluvatar.ai/BI-V150.vMem", "iluvatar.ai/BI-V150.vCore"),
              ("amd.com/gpu", "amd.com/gpumem", "amd.com/gpucores"),
              ("cambricon.com/vmlu", "cambricon.com/mlu.smlu.vmemory",
               "cambricon.com/mlu.smlu.vcore"),
              ("birentech.com/gpu", None, None),
              ("mthreads.com/vgpu", "mthreads.com/sgpu-memory", "mthreads.com/sgpu-core"),
              *((f"huawei.com/{w}", f"huawei.com/{w}-memory", f"huawei.com/{w}-core")
                for w in ("Ascend910B3", "Ascend910C", "Ascend310P", "Ascend910B4")),
              ("kunlunxin.com/xpu", None, None),
              ("kunlunxin.com/vxpu", "kunlunxin.com/vxpu-memory", None))


@st.composite
def containers(draw, gpu_likely: bool):
    limits = {}
    if not gpu_likely and draw(st.booleans()):
        return Container()
    if draw(st.integers(0, 4)) == 0:
        # a container of another family: Hygon DCU, Iluvatar, AMD (counts at
        # or below 0 and values out of a family's range drop the request or
        # make the webhook refuse the pod, as in HAMi)
        keys = draw(st.sampled_from(OTHER_KEYS))
        limits[keys[0]] = draw(st.sampled_from([1, 1, 1, 2, 3, 0, -1]))
        if keys[1] is not None and draw(st.booleans()):
            limits[keys[1]] = draw(st.sampled_from([1000, 4000, 16000, 0, 2**31, 16, 64]))
        if keys[2] is not None and draw(st.booleans()):
            limits[keys[2]] = draw(st.sampled_from([0, 4, 25, 50, 100, 150, -1]))
        if draw(st.integers(0, 6)) == 0:
            return Container(requests=limits)
        return Container(limits=limits)
    if draw(st.integers(0, 5)):
        limits[GPU] = draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["mem", "mem", "pct", "none", "both"]))
    if kind in ("mem", "both"):
        limits[GPUMEM] = draw(st.sampled_from([500, 1000, 1000, 4000, 16000, 50000]))
    if kind in ("pct", "both"):
        # 150 makes the admission webhook reject the pod (same error on both).
        limits[GPUMEM_PERCENTAGE] = draw(st.sampled_from([0, 10, 25, 50, 100, 100] * 3 + [150]))
    if draw(st.integers(0, 2)) == 0:
        limits[GPUCORES] = draw(st.sampled_from([0, 10, 30, 50, 100, 150]))
    if draw(st.integers(0, 6)) == 0:   # some values as requests instead of limits
        return Container(requests=limits)
    return Container(limits=limits)


def _uuid_list(draw, ids):
    picked = draw(st.lists(st.sampled_from(ids + ["GPU-nowhere"]), max_size=3)) \
        if ids else ["GPU-nowhere"]
    sep = draw(st.sampled_from([",", ", ", " , "]))
    extra = draw(st.sampled_from(["", ",", " ", ", ,"]))
    return sep.join(picked) + extra


@st.composite
def pods(draw, name: str, card_ids: list[str], what_ifs: bool = False):
    """A random pod; ``what_ifs`` also draws the what-if card policy mutex-reserve
    (a what-if, not HAMi)."""
    n_app = draw(st.integers(1, 3))
    app = tuple(draw(containers(gpu_likely=j == 0)) for j in range(n_app))
    init = tuple(draw(containers(gpu_likely=False))
                 for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 3)) == 0 else 0))
    ann = {}
    if draw(st.integers(0, 2)) == 0:
        ann["hami.io/gpu-scheduler-policy"] = draw(st.sampled_from(
            GPU_POLICIES + ["topology-aware"] * 3 + ["mutex,topology-aware,numa"]
            + (["mutex-reserve", "mutex-reserve,binpack", "numa, mutex-reserve"] * 2
               if what_ifs else [])))
    if draw(st.integers(0, 4)) == 0:
        ann["hami.io/node-scheduler-policy"] = draw(st.sampled_from(NODE_POLICIES))
    if draw(st.integers(0, 2)) == 0:
        ann["nvidia.com/numa-bind"] = draw(st.sampled_from(["true", "true", "1", "false",
                                                            "yes"]))
    if draw(st.integers(0, 6)) == 0:
        ann["nvidia.com/use-gputype"] = draw(st.sampled_from(["A100", "t4", "NVIDIA", "a10,foo",
                                                              " ", "Tesla, ,MI100"]))
    if draw(st.integers(0, 6)) == 0:
        ann["nvidia.com/nouse-gputype"] = draw(st.sampled_from(["A100", "T4", "a10", ""]))
    if draw(st.integers(0, 6)) == 0:
        ann["nvidia.com/use-gpuuuid"] = _uuid_list(draw, card_ids)
    if draw(st.integers(0, 6)) == 0:
        ann["nvidia.com/nouse-gpuuuid"] = _uuid_list(draw, card_ids)
    if draw(st.integers(0, 6)) == 0:
        ann["hygon.com/use-dcutype"] = draw(st.sampled_from(["dcu", "Z100", "nvidia", " "]))
    if draw(st.integers(0, 6)) == 0:
        ann["hygon.com/nouse-dcutype"] = draw(st.sampled_from(["Z100", "dcu", ""]))
    if draw(st.integers(0, 8)) == 0:
        ann["hygon.com/use-gpuuuid"] = _uuid_list(draw, card_ids)
    if draw(st.integers(0, 8)) == 0:
        ann["hygon.com/nouse-gpuuuid"] = _uuid_list(draw, card_ids)
    for key in ("hami.io/use-MR-V100-uuid", "hami.io/no-use-BI-V150-uuid",
                "amd.com/use-gpu-uuid", "amd.com/nouse-gpu-uuid", "cambricon.com/use-gpuuuid",
                "birentech.com/use-gpuuuid", "birentech.com/nouse-gpuuuid",
                "mthreads.ai/use-gpuuuid", "mthreads.ai/nouse-gpuuuid",
                "hami.io/use-Ascend910B3-uuid", "hami.io/no-use-Ascend910C-uuid",
                "hami.io/use-xpu-uuid", "baidu.com/nouse-gpuuuid"):
        if draw(st.integers(0, 10)) == 0:
            ann[key] = _uuid_list(draw, card_ids)
    if draw(st.integers(0, 8)) == 0:
        ann[draw(st.sampled_from(["amd.com/use-gputype", "amd.com/nouse-gputype"]))] = \
            draw(st.sampled_from(["MI300", "mi100", "amd", " ", ", "]))
    if draw(st.integers(0, 4)) == 0:
        ann["huawei.com/vnpu-mode"] = draw(st.sampled_from(["hami-core", "hami-core", "other"]))
    if draw(st.integers(0, 8)) == 0:
        ann["nvidia.com/vgpu-mode"] = draw(st.sampled_from(["hami-core", "mps", "mig", "",
                                                            "hami-core,mps"]))
    if draw(st.integers(0, 6)) == 0:
        ann["hami.io/device-scoring-weights"] = draw(st.sampled_from([
            "slot=1,core=1,memory=1", "slot=1,core=2,memory=3", "slot=0,core=0,memory=1",
            "slot=5, core=0 ,memory=2", "slot=1", "slot=a,core=1,memory=1",
            "slot=0,core=0,memory=0", "slot=1,core=1,memory=1,slot=2"]))
    cpu = draw(st.sampled_from([0, 0, 500, 4000, 10000]))
    mem = draw(st.sampled_from([0, 0, 1024, 32768]))
    namespace = draw(st.sampled_from(NAMESPACES))
    return Pod(name, app, init, ann, cpu, mem, **draw(kube_pod_fields()), namespace=namespace)
