"""The bundled heterogeneous cluster and its day (workloads/heterogeneous, issue 37):
the trace is what make_trace.py writes, every family runs on the compiled engine
as on the Python one, and the figures the README quotes are the run's."""
from __future__ import annotations

import json
import runpy
import shutil
from pathlib import Path

import pandas as pd

from family_cases import assert_engines_agree, run_in
from hamisim.devices import FAMILIES

FOLDER = Path(__file__).resolve().parent.parent / "workloads" / "heterogeneous"


def test_the_trace_is_what_make_trace_writes(tmp_path):
    shutil.copy(FOLDER / "make_trace.py", tmp_path)
    runpy.run_path(str(tmp_path / "make_trace.py"), run_name="__main__")
    assert (tmp_path / "trace.jsonl").read_bytes() == (FOLDER / "trace.jsonl").read_bytes()


def test_every_family_runs_and_the_readme_figures_are_the_runs(tmp_path, capsys):
    shutil.copy(FOLDER / "cluster.yaml", tmp_path)
    shutil.copy(FOLDER / "trace.jsonl", tmp_path)
    run_in(tmp_path, "compiled")
    console = capsys.readouterr().out
    assert "compiled (hamisim._replay)" in console
    run_in(tmp_path, "python", "--backend", "reference")
    assert_engines_agree(tmp_path)
    results = json.loads((tmp_path / "compiled" / "summary.json").read_text())["results"]
    fams = {f["family"]: f for f in results["families"]}
    # every vendor, in fid order (one Iluvatar chip of the four, two Ascend chips)
    assert list(fams) == [f.word for f in FAMILIES
                          if (f.package != "iluvatar" or f.word == "MR-V100")
                          and (f.package != "ascend" or f.word in ("Ascend910B3", "Ascend910C"))]
    assert len({FAMILIES[[g.word for g in FAMILIES].index(w)].package for w in fams}) == 9
    assert all(f["pods"] > 0 and f["pods_bound"] == f["pods"] for f in fams.values())
    readme = (FOLDER / "README.md").read_text()
    for word, quoted in (("NVIDIA", "49.4"), ("DCU", "5.3"), ("AMD", "19.5"),
                         ("Mthreads", "13.6"), ("Ascend910B3", "9.3"), ("Ascend910C", "28.2"),
                         ("kunlun", "31.2"), ("XPU", "18.4")):
        assert f"{fams[word]['mean_gpu_allocated_pct']:.1f}" == quoted
        assert quoted in readme
    classes = {c["class"]: c for c in results["classes"]}
    assert f"{classes['h100-train-8']['pending_p99_s']:,.1f}" == "6,850.2"
    assert f"{classes['kunlun-4']['pending_p99_s']:,.1f}" == "6,525.2"
    # Ascend: 4-NPU training within one HCCS network (cards 0-3 or 4-7), each 910C
    # job on both NPUs of one module
    pods = pd.read_parquet(tmp_path / "compiled" / "pods.parquet")
    for cls, group in (("npu-train-4", 4), ("910c-module", 2)):
        chosen = pods[pods["class"] == cls]
        assert len(chosen)
        for devices in chosen["devices"]:
            idx = [int(e.split(",")[0].rsplit("-", 1)[1]) for e in devices.rstrip(":;").split(":")]
            assert len(idx) == group and len({i // group for i in idx}) == 1, devices
    ts = pd.read_parquet(tmp_path / "compiled" / "timeseries_families.parquet")
    assert set(ts["family"]) == set(fams)
    assert (tmp_path / "compiled" / "figures" / "families.png").exists()


def test_no_row_of_the_time_series_repeats_the_one_before(tmp_path):
    """A pass asked for while a pass runs is served by it: no empty pass is left
    for a later timer, whose row would repeat the state (and differ between the
    engines, which settle their timers apart; found on this workload)."""
    shutil.copy(FOLDER / "cluster.yaml", tmp_path)
    shutil.copy(FOLDER / "trace.jsonl", tmp_path)
    run_in(tmp_path, "out")
    ts = pd.read_parquet(tmp_path / "out" / "timeseries.parquet")
    state = ts.drop(columns=["time", "queueing_delay_s"])
    repeated = state.eq(state.shift()).all(axis=1) & ts["queueing_delay_s"].isna()
    assert not repeated.any(), ts.loc[repeated, "time"].tolist()[:5]
