"""`hamisim scenario`: the bundled experiments, the JSON contract, exit statuses."""
from __future__ import annotations

import json
import textwrap

import pytest

from hamisim.cli import main
from hamisim.io.bundled import bundled_scenarios

BACKENDS = ["kernel", "reference"]
#: the published experiment's message, word for word (kube-scheduler's
#: DefaultPreemption verdict included)
EXCLUSIVE = ("0/1 nodes are available: 1 2/2 ExclusiveDeviceAllocateConflict. preemption: "
             "0/1 nodes are available: 1 No preemption victims found for incoming pod.")


def run_json(capsys, *args) -> tuple[int, dict]:
    status = main(["scenario", *args, "--json"])
    return status, json.loads(capsys.readouterr().out)


def binds(doc: dict) -> list[tuple[str, str]]:
    return [(e["pod"], e["devices"]) for e in doc["events"] if e["event"] == "bind"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_mutex_experiment_1(capsys, backend):
    status, doc = run_json(capsys, "mutex-exp1", "--backend", backend)
    assert status == 0
    assert doc["events"] == [
        {"step": 0, "pod": "plain-1", "event": "bind", "node": "node1",
         "devices": "GPU-MOCK-B,NVIDIA,1000,0:;", "message": None},
        {"step": 1, "pod": "plain-2", "event": "bind", "node": "node1",
         "devices": "GPU-MOCK-A,NVIDIA,1000,0:;", "message": None},
        {"step": 3, "pod": "mutex-1", "event": "unschedulable", "node": None,
         "devices": None, "message": EXCLUSIVE},
        {"step": 5, "pod": "plain-1", "event": "delete", "node": None, "devices": None,
         "message": None},
        {"step": 5, "pod": "mutex-1", "event": "bind", "node": "node1",
         "devices": "GPU-MOCK-B,NVIDIA,1000,0:;", "message": None},
    ]
    assert all(x["ok"] for x in doc["expectations"]) and len(doc["expectations"]) == 6


@pytest.mark.parametrize("backend", BACKENDS)
def test_mutex_experiment_2(capsys, backend):
    status, doc = run_json(capsys, "mutex-exp2", "--backend", backend)
    assert status == 0
    assert binds(doc) == [("mutex-1", "GPU-MOCK-B,NVIDIA,1000,0:;"),
                          ("mutex-2", "GPU-MOCK-A,NVIDIA,1000,0:;")]
    last = doc["events"][-1]
    assert (last["pod"], last["event"], last["message"]) == ("mutex-3", "unschedulable",
                                                             EXCLUSIVE)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mutex_experiment_3_mutex_does_not_reserve(capsys, backend):
    status, doc = run_json(capsys, "mutex-exp3", "--backend", backend)
    assert status == 0
    assert binds(doc) == [("mutex-1", "GPU-MOCK-B,NVIDIA,1000,0:;"),
                          ("mutex-2", "GPU-MOCK-A,NVIDIA,1000,0:;"),
                          ("binpack-1", "GPU-MOCK-B,NVIDIA,1000,0:;")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_every_bundled_scenario_meets_its_expectations(capsys, name, backend):
    status, doc = run_json(capsys, name, "--backend", backend)
    failed = [x for x in doc["expectations"] if not x["ok"]]
    assert status == 0 and not failed
    assert doc["expectations"], "a bundled scenario must check something"


def test_table_output_reads_like_kubectl(capsys):
    assert main(["scenario", "mutex-exp1", "--backend", "reference"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["STEP", "POD", "EVENT", "NODE", "DEVICES", "/",
                                           "MESSAGE"]
    assert "mutex-1  unschedulable" in out and EXCLUSIVE in out
    assert "6/6 expectations met" in out


def write(tmp_path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    return path


NODE = """\
    nodes:
      - name: n
        devices:
          - {id: G0, index: 0, count: 10, devmem: 1000, devcore: 100, type: NVIDIA-T4}
"""


def test_failed_expectation_exits_1(tmp_path, capsys):
    path = write(tmp_path, NODE + """\
    steps:
      - create: {name: p, gpu: 1, gpumem: 2000}
      - expect: {p: G0}
    """)
    assert main(["scenario", str(path), "--backend", "reference"]) == 1
    out = capsys.readouterr().out
    assert "FAIL step 1: p -> G0 (got pending)" in out
    assert "1/1 CardInsufficientMemory" in out


def test_bad_input_exits_2_with_location(tmp_path, capsys):
    path = write(tmp_path, NODE + """\
    steps:
      - create: {name: p, gpu: 1, gpumemory: 2000}
    """)
    assert main(["scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:6:" in err and "gpumemory" in err
    assert "Traceback" not in err


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["scenario", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err
