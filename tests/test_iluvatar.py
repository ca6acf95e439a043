"""Iluvatar (hamisim.devices.iluvatar): HAMi v2.10.0's unit-test facts on both
backends, and the four chips of the chart beside NVIDIA through the CLI.

The vectors (tests/data/hami_vectors/iluvatar_*.json) are the cases of
``pkg/device/iluvatar/device_test.go`` at v2.10.0: ``Test_Fit`` and
``TestFit_MutexRejectsUsedDevice`` on the reference and on the compiled
kernel; request generation, the webhook's mutation and register decoding on
the model.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from family_cases import (VECTORS, assert_engines_agree, assert_fit_case, assert_generated,
                          assert_type_check, run_in as _run, vector_cases as _cases)
from vector_ops import BACKENDS

from hamisim.cli import main
from hamisim.cluster import SchedulerConfig
from hamisim.devices import iluvatar
from hamisim.hami import reference as ref
from hamisim.io.clusterfile import load_cluster
from hamisim.kube.quantity import parse_quantity
from hamisim.pods import Container, Pod, Request, admit, container_request

MR = iluvatar.chip_family("MR-V100")


def _amount(v):
    # Go's Quantity of the test's value: a plain integer, or a quantity string
    # (16Gi: its integer value; AsInt64 of 16.0Gi fails in Go, and its value
    # is above the vMem range here, so both drop the request)
    if isinstance(v, str):
        q = parse_quantity(v)
        assert q.denominator == 1
        return int(q)
    return v


def _container(case) -> Container:
    return Container(limits={k: _amount(v) for k, v in case["limits"].items()},
                     requests={k: _amount(v) for k, v in case.get("requests", {}).items()})


@pytest.mark.parametrize("ops", list(BACKENDS.values()), ids=list(BACKENDS))
@pytest.mark.parametrize("case", _cases("iluvatar_fit.json"))
def test_iluvatar_fit(ops, case):
    assert_fit_case(ops, case, "MR-V100")


@pytest.mark.parametrize("case", _cases("iluvatar_requests.json", "generate"))
def test_iluvatar_request_generation(case):
    assert_generated(MR, _container(case), case["expect"])


@pytest.mark.parametrize("case", _cases("iluvatar_requests.json", "check_type"))
def test_a_request_of_another_type_fits_no_iluvatar_card(case):
    # checkType: the request's type must be the chip's word
    assert_type_check(MR, case, ref.CardUsage("dev-0", 0, "MR-V100", 10, 8192, 100))


@pytest.mark.parametrize("case", _cases("iluvatar_requests.json", "mutate"))
def test_the_webhook_sets_cores_to_count_times_100(case):
    pod = Pod(name="p", containers=(_container(case),))
    admitted = admit(pod, SchedulerConfig())
    assert dict(admitted.containers[0].limits) == case["expect_limits"]


def test_the_mutation_makes_multi_card_requests_exclusive():
    # count 2: cores 200 -> charged 100 per card; a card already shared refuses it
    pod = Pod(name="p", containers=(Container(limits={
        MR.count_name: 2, MR.cores_name: 10}),))
    req = container_request(admit(pod, SchedulerConfig()).containers[0], SchedulerConfig())
    assert req == Request(2, 0, 100, 200, "MR-V100")
    cards = [ref.CardUsage("a", 0, "MR-V100", 10, 8192, 100, used=1, usedmem=1, usedcores=5),
             ref.CardUsage("b", 1, "MR-V100", 10, 8192, 100),
             ref.CardUsage("c", 2, "MR-V100", 10, 8192, 100)]
    res = ref.fit(cards, req, {}, "spread")
    assert res.fit and [(p.uuid, p.usedcores) for p in res.picks] == [("c", 100), ("b", 100)]
    res = ref.fit(cards[:2], req, {}, "spread")
    assert not res.fit and "CardInsufficientMemory" in res.reason


def _node(name: str, annotations: dict) -> dict:
    return {"metadata": {"name": name, "annotations": annotations},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi"}}}


@pytest.mark.parametrize("case", _cases("iluvatar_requests.json", "node_devices"))
def test_register_annotations_import_as_hami_decodes_them(case, tmp_path, capsys):
    ann = {} if case["annotation"] is None else {MR.register_annotation: case["annotation"]}
    # a second node with an NVIDIA card keeps the import non-empty
    nvidia = _node("gpu", {"hami.io/node-nvidia-register": json.dumps([{
        "id": "GPU-0", "index": 0, "count": 10, "devmem": 15360, "devcore": 100,
        "type": "NVIDIA-Tesla T4", "numa": 0, "mode": "hami-core", "health": True}])})
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"kind": "List", "items": [_node("ilu", ann), nvidia]}))
    assert main(["import", str(path), "--out", str(tmp_path / "imp")]) == 0
    err = capsys.readouterr().err
    cluster = load_cluster(tmp_path / "imp" / "cluster.yaml")
    cards = [c for n in cluster.nodes if n.name == "ilu" for c in n.cards]
    assert [{"id": c.id, "count": c.count, "devmem": c.devmem, "devcore": c.devcore,
             "type": c.type, "numa": c.numa, "health": c.health, "index": c.index,
             "mode": c.mode} for c in cards] == case["expect"]
    if case["annotation"] is not None and not case["expect"]:
        assert f"node ilu: {MR.register_annotation}" in err


def test_the_vectors_cover_hamis_tests():
    fit = json.loads((VECTORS / "iluvatar_fit.json").read_text())["cases"]
    reqs = json.loads((VECTORS / "iluvatar_requests.json").read_text())["cases"]
    assert len(fit) >= 7
    assert {c["op"] for c in reqs} == {"generate", "check_type", "mutate", "node_devices"}


def test_the_families_are_the_charts_chips():
    assert iluvatar.CHIPS == ("MR-V100", "MR-V50", "BI-V150", "BI-V100")
    bi = iluvatar.chip_family("BI-V150")
    assert (bi.count_name, bi.memory_name, bi.cores_name) == (
        "iluvatar.ai/BI-V150-vgpu", "iluvatar.ai/BI-V150.vMem", "iluvatar.ai/BI-V150.vCore")
    assert (bi.use_uuid, bi.nouse_uuid) == ("hami.io/use-BI-V150-uuid",
                                            "hami.io/no-use-BI-V150-uuid")
    # the no-use UUID filter is Iluvatar's spelling, and binds only its own chip
    cards = [ref.CardUsage("x", 0, "BI-V150", 10, 65536, 100),
             ref.CardUsage("y", 1, "BI-V150", 10, 65536, 100)]
    res = ref.fit(cards, Request(1, 1024, 0, 0, "BI-V150"),
                  {"hami.io/no-use-BI-V150-uuid": "y", "hami.io/no-use-MR-V100-uuid": "x"},
                  "spread")
    assert [p.uuid for p in res.picks] == ["x"]


# -- Iluvatar nodes beside NVIDIA nodes ----------------------------------------------
CLUSTER = """\
nodes:
  - name_prefix: t4
    replicas: 2
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name_prefix: mr
    replicas: 2
    gpus: 8
    card: {type: MR-V100, devmem: 32768}
  - name_prefix: bi
    replicas: 1
    gpus: 8
    card: {type: Iluvatar BI-V150, devmem: 65536}
"""


def _trace(n: int = 90) -> str:
    rows = []
    for i in range(n):
        c = ([{"limits": {MR.count_name: 1, MR.memory_name: 16, MR.cores_name: 25}}],
             [{"limits": {"iluvatar.ai/BI-V150-vgpu": 2}}],
             [{"gpu": 1, "gpumem": 2048}])[i % 3]
        rows.append(json.dumps({"name": f"p{i}", "arrival": 10.0 * i, "duration": 400,
                                "containers": c}))
    return "\n".join(rows) + "\n"


@pytest.fixture
def mixed(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.jsonl").write_text(_trace())
    return tmp_path


def test_iluvatar_pods_land_on_their_chip_on_both_engines(mixed, capsys):
    _run(mixed, "compiled")
    console = capsys.readouterr().out
    assert "compiled (hamisim._replay)" in console
    _run(mixed, "python", "--backend", "reference")
    assert_engines_agree(mixed)
    pods = pd.read_parquet(mixed / "compiled" / "pods.parquet").set_index("pod")
    for i in range(0, 90, 3):
        dev = pods.loc[f"p{i}", "devices"]
        # vMem 16 = 16 x 256 MiB; the card's type in the list is the chip's word
        assert dev.endswith(",MR-V100,4096,25:;") and pods.loc[f"p{i}", "node"].startswith("mr")
    for i in range(1, 90, 3):
        if pd.isna(pods.loc[f"p{i}", "bind"]):
            continue
        entries = [e for e in pods.loc[f"p{i}", "devices"].rstrip(";").split(":") if e]
        # count 2: the webhook's cores 200, charged 100 on each whole card
        assert len(entries) == 2 and all(e.endswith(",BI-V150,65536,100") for e in entries)


# -- a vCore whose int32 is negative (unchecked) ------------------------------------
ONE_CARD = """\
nodes:
  - name: mr-0
    gpus: 1
    card: {type: MR-V100, devmem: 32768}
"""


def _negative_core_trace() -> str:
    # 2**32 - 1: Kubernetes takes it, HAMi's int32 of it is -1
    minus = {"limits": {MR.count_name: 1, MR.cores_name: 2**32 - 1}}
    fifty = {"limits": {MR.count_name: 1, MR.memory_name: 4, MR.cores_name: 50}}
    rows = [{"name": "alone", "arrival": 0, "duration": 100, "containers": [minus]},
            # an init container on the same (only) card, then the app container
            {"name": "with-init", "arrival": 200, "duration": 300, "init_duration": 100,
             "containers": [minus], "init_containers": [fifty]}]
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.mark.parametrize("engine", [(), ("--check",), ("--backend", "reference", "--check")],
                         ids=["compiled", "python-checked", "reference-checked"])
def test_a_negative_core_request_books_zero_until_hamis_shrink_sums_it(engine, tmp_path):
    # HAMi's CollapseInitContainerUsage takes the larger of the init peak (zero
    # without one) and the app sum on every bind, so vCore -1 books 0 cores;
    # its AppContainersOnlyDeviceUsage sums the app entries without that
    # floor, so once the init containers succeed the card holds -1 cores.
    (tmp_path / "cluster.yaml").write_text(ONE_CARD)
    (tmp_path / "trace.jsonl").write_text(_negative_core_trace())
    _run(tmp_path, "out", *engine)
    ts = pd.read_parquet(tmp_path / "out" / "timeseries.parquet").set_index("time")
    cores = ts["hami_gpu_core_allocated"]
    assert ts["pods_running"].loc[0.0] == 1 and cores.loc[0.0] == 0   # alone: booked as 0
    assert cores.loc[200.0] == 50                   # the init container's peak
    assert cores.loc[300.0] == -1                   # the app entry alone, summed
    assert ts["pods_running"].iloc[-1] == 0 and cores.iloc[-1] == 0
    memory = ts["hami_gpu_memory_allocated_bytes"] // 2**20
    # the larger of the init container's vMem 4 (x 256 MiB) and the app entry's
    # whole card, then the app entry's whole card
    assert memory.loc[200.0] == 32768 and memory.loc[300.0] == 32768
    assert memory.loc[0.0] == 32768
