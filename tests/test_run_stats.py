"""Per-pod results and the breakdowns users act on (hamisim.sim.recorder, hamisim.sim.stats).

The pods table and the per-class and per-group figures are checked against a
small replay whose every wait is worked out by hand.
"""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.shapes import request_class
from hamisim.sim.stats import time_weighted_mean
from hamisim.pods import GPU, GPUCORES, GPUMEM, GPUMEM_PERCENTAGE, Container, Pod

CLUSTER = """\
nodes:
  - name_prefix: big
    replicas: 1
    gpus: 2
    card: {devmem: 80000, type: NVIDIA-H100}
  - name: small
    gpus: 1
    card: {devmem: 16000, type: NVIDIA-T4}
"""
#: a and b fill the H100 node (whole cards); c waits for a to leave at 100;
#: d is a share that fits the T4 at once; e is deleted while pending at 50;
#: f is labelled by the trace itself
TRACE = """\
name,arrival,duration,deletion,gpu,gpucores,gpumem,use_gputype,class
a,0,100,,1,100,,H100,
b,0,300,,1,100,,H100,
c,10,20,,1,100,,H100,
d,20,30,,1,30,4000,,
e,30,,50,2,100,,H100,
f,40,5,,1,20,2000,,inference
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stats")
    (folder / "cluster.yaml").write_text(CLUSTER)
    (folder / "trace.csv").write_text(TRACE)
    out = folder / "out"
    assert main(["run", str(folder / "cluster.yaml"), str(folder / "trace.csv"),
                 "--format", "csv", "--out", str(out)]) == 0
    return out


def test_the_pods_table_tells_each_pods_story(run_dir):
    pods = pd.read_csv(run_dir / "pods.csv").set_index("pod")
    # in the order their stories ended: f leaves at 45, d at 50 (its departure was
    # set before e's deletion), e is deleted at 50, a leaves at 100, c at 120, b at 300
    assert list(pods.index) == list("fdeacb")
    assert pods.loc["a", "class"] == "1 GPU on H100"
    assert pods.loc["d", "class"] == "1 GPU: 4000 MiB, 30% cores"
    assert pods.loc["f", "class"] == "inference"                # the trace's own label
    c = pods.loc["c"]
    assert (c["arrival"], c["first_attempt"], c["bind"]) == (10.0, 10.0, 100.0)
    assert c["wait_s"] == 90.0 and c["departure"] == 120.0 and c["attempts"] >= 2
    assert c["node"] == "big-0" and c["group"] == "big"
    assert c["devices"].startswith("GPU-big-0-")
    e = pods.loc["e"]
    assert math.isnan(e["bind"]) and e["abandon"] == 50.0 and e["wait_s"] == 20.0
    assert pd.isna(e["node"]) and pd.isna(e["group"])
    d = pods.loc["d"]
    assert (d["bind"], d["node"], d["group"], d["departure"]) == (20.0, "small", "NVIDIA-T4",
                                                                  50.0)


def test_summary_breaks_waits_down_by_class_and_group(run_dir):
    r = json.loads((run_dir / "summary.json").read_text())["results"]
    waits = np.array([0, 0, 90, 0, 20, 0])                      # pending time of a..f
    assert r["pending_max_s"] == 90.0
    assert r["pending_p99_s"] == pytest.approx(np.percentile(waits, 99))
    classes = {c["class"]: c for c in r["classes"]}
    h100 = classes["1 GPU on H100"]
    assert (h100["pods"], h100["bound"], h100["queueing_delay_max_s"]) == (3, 3, 90.0)
    gone = classes["2 GPUs on H100"]
    assert (gone["pods"], gone["bound"], gone["abandoned"], gone["pending_max_s"]) == \
        (1, 0, 1, 20.0)
    assert gone["queueing_delay_p99_s"] is None                 # nobody bound
    groups = {g["group"]: g for g in r["groups"]}
    assert groups["big"]["pods_bound"] == 3 and groups["big"]["gpus"] == 2
    assert groups["NVIDIA-T4"]["pods_bound"] == 2
    assert groups["big"]["queueing_delay_max_s"] == 90.0
    # both H100s are taken until c leaves at 120, one (b) until 300, the end:
    # (100 % x 120 s + 50 % x 180 s) / 300 s
    assert groups["big"]["mean_gpu_allocated_pct"] == pytest.approx(70.0)


def test_the_group_time_series(run_dir):
    g = pd.read_csv(run_dir / "timeseries_groups.csv")
    assert list(g.columns[:3]) == ["time", "group", "hami_gpu_total"]
    t4 = g[g["group"] == "NVIDIA-T4"].set_index("time")
    # a row only when the group changed: d binds at 20, f shares the T4 from 40 to 45,
    # d leaves at 50 (and every group's first state at the first event)
    assert list(t4.index) == [0.0, 20.0, 40.0, 45.0, 50.0]
    assert list(t4["hami_gpu_allocated"]) == [0, 1, 1, 1, 0]
    assert list(t4["hami_gpu_memory_allocated_bytes"] / 2**20) == [0, 4000, 6000, 4000, 0]
    assert t4["hami_gpu_total"].eq(1).all()


def test_time_weighted_mean():
    assert time_weighted_mean(np.array([0.0, 10.0, 40.0]), np.array([0.0, 100.0, 0.0])) == \
        pytest.approx(75.0)
    assert time_weighted_mean(np.array([5.0, 5.0]), np.array([1.0, 3.0])) == 2.0
    assert time_weighted_mean(np.array([0.0]), np.array([7.0]), end=10.0) == 7.0


@pytest.mark.parametrize("pod,label", [
    (Pod("p", (Container({GPU: 2}),)), "2 GPUs"),
    (Pod("p", (Container({GPU: 1, GPUMEM_PERCENTAGE: 25, GPUCORES: 25}),)),
     "1 GPU: 25% memory, 25% cores"),
    (Pod("p", (Container({GPU: 1, GPUMEM: 4000}), Container({GPU: 1})),
         annotations={"hami.io/gpu-scheduler-policy": "mutex,binpack",
                      "nvidia.com/nouse-gputype": "T4"}),
     "1 GPU: 4000 MiB + 1 GPU not on T4 [mutex,binpack]"),
    (Pod("p", (Container(),), cpu_milli=500), "cpu-only"),
])
def test_request_classes(pod, label):
    assert request_class(pod) == label


def test_no_bound_pod_has_no_queueing_delay(tmp_path, capsys):
    # the only pod asks more cards than the node has: nothing binds, so the delays'
    # percentiles are null (not 0 s), and the console and the report say "none"
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.csv").write_text("name,arrival,gpu\nhuge,0,4\n")
    assert main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.csv"),
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    r = json.loads((tmp_path / "out" / "summary.json").read_text())["results"]
    assert r["bound"] == 0
    assert [r[f"queueing_delay_{q}_s"] for q in ("p50", "p99", "max")] == [None] * 3
    assert re.search(r"queueing delay p99 \(s\) +none\n", out)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "99th percentile none, longest none" in page
