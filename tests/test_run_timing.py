"""What a replay simulates: a user's trace as traced, openb pod lists re-timed (issue 12).

A native trace (CSV, Parquet, JSON Lines) is replayed with its own pods, arrival
times, durations and deletions unless a load is asked for; the openb pod lists,
whose timestamps load a cluster to about 1 %, are re-timed by default and the
console says so before the run.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.studies.runs import RunSpec, resolve_timing, run
from hamisim.studies.sweepfile import load_sweep

OPENB = Path(__file__).resolve().parent.parent / "workloads" / "openb"

CLUSTER = """\
nodes:
  - name_prefix: gpu
    replicas: 2
    cpu_milli: 32000
    gpus: 2
    card: {devmem: 16000, type: NVIDIA-Tesla T4}
"""
#: more work than the cluster holds at once: some pods must wait
TRACE = """\
name,arrival,duration,deletion,gpu,gpucores
a,0,100,,1,100
b,5.5,40,,2,100
c,7,,30,1,100
d,12.25,60,,2,100
e,12.25,10,,1,50
f,3600,5,,1,100
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.csv").write_text(TRACE)
    return tmp_path


def read(folder: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(folder / f"{name}.csv", keep_default_na=True)


def test_a_native_trace_is_replayed_as_traced(files, capsys):
    out = files / "out"
    assert main(["run", str(files / "cluster.yaml"), str(files / "trace.csv"), "--format",
                 "csv", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "trace.csv: 6 pods arriving over 1 h, as traced" in text
    assert "openb" not in text                           # no re-timing notice
    ev = read(out, "events")
    arrivals = ev[ev["event"] == "arrive"].set_index("pod")["time"]
    assert arrivals.to_dict() == {"a": 0.0, "b": 5.5, "c": 7.0, "d": 12.25, "e": 12.25,
                                  "f": 3600.0}
    binds = ev[ev["event"] == "bind"].set_index("pod")["time"]
    departs = ev[ev["event"] == "depart"].set_index("pod")["time"]
    # durations run from the bind; c is deleted at its absolute time
    for pod, duration in {"a": 100, "b": 40, "d": 60, "e": 10, "f": 5}.items():
        assert departs[pod] == pytest.approx(binds[pod] + duration)
    assert departs["c"] == 30.0
    # d asks for a whole node and waits until b has left
    assert binds["d"] > 12.25
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"]["timing"] == "as traced"
    assert summary["inputs"]["load"] is None and summary["inputs"]["n_pods"] is None
    load = {k: summary["workload"].pop(k) for k in ("offered_gpu_load_as_given",
                                                     "offered_gpu_load")}
    assert summary["workload"] == {"pods": 6, "arrival_span_s": 3600.0, "description":
                                   "trace.csv: 6 pods arriving over 1 h, as traced"}
    # replayed as given: the offered load is the trace's own, unscaled
    assert load["offered_gpu_load"] == load["offered_gpu_load_as_given"] > 0


def test_load_re_times_a_native_trace_each_pod_once(files, capsys):
    out = files / "out"
    assert main(["run", str(files / "cluster.yaml"), str(files / "trace.csv"), "--load", "0.5",
                 "--format", "csv", "--out", str(out)]) == 0
    assert "re-timed to 50 % offered GPU load" in capsys.readouterr().out
    ev = read(out, "events")
    arrivals = ev[ev["event"] == "arrive"]
    assert sorted(arrivals["pod"]) == list("abcdef")        # its own pods, not draws
    assert list(arrivals["time"]) != [0.0, 5.5, 7.0, 12.25, 12.25, 3600.0]   # Poisson times
    summary = json.loads((out / "summary.json").read_text())["inputs"]
    assert (summary["timing"], summary["load"], summary["n_pods"],
            summary["max_lifetime_s"]) == ("re-timed", 0.5, None, None)


@pytest.mark.parametrize("extra,message", [
    (["--pods", "100"], "n_pods (--pods) re-times a trace, but this one is replayed as "
                        "traced (a native trace's default): give a load (--load X) too"),
    (["--as-traced", "--load", "0.5"], "--as-traced replays the trace's own times; --load "
                                       "re-times it: give one or the other"),
    (["--mode", "fill", "--load", "0.5"], "--load applies to replay mode"),
])
def test_contradicting_timing_options_are_bad_input(files, capsys, extra, message):
    status = main(["run", str(files / "cluster.yaml"), str(files / "trace.csv"), *extra,
                   "--out", str(files / "out")])
    err = capsys.readouterr().err
    assert status == 2 and message in err and not (files / "out").exists()


def test_an_openb_pod_list_is_re_timed_and_the_console_says_so(files, capsys):
    out = files / "out"
    assert main(["run", str(OPENB / "openb_node_list_gpu_node.csv"),
                 str(OPENB / "openb_pod_list_gpushare40.csv"), "--pods", "600",
                 "--format", "csv", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    notice = lines[0]
    assert notice.startswith("hamisim run: openb_pod_list_gpushare40.csv is an openb pod list")
    assert "simulating 600 pods drawn from its 8,152, arriving over" in notice
    assert "re-timed to 80 % offered GPU load" in notice
    assert "lifetimes capped at 1 h" in notice and "--as-traced replays it" in notice
    assert any("600 pods drawn from its 8,152" in line and "workload" in line for line in lines)
    ev = read(out, "events")
    drawn = ev["pod"][ev["event"] == "arrive"]
    assert list(drawn.str.extract(r"-r(\d+)$")[0].astype(int)) == list(range(600))


def test_as_traced_replays_an_openb_pod_list_by_its_timestamps(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    rows = (OPENB / "openb_pod_list_default.csv").read_text().splitlines()[:41]
    trace.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    assert main(["run", str(OPENB / "openb_node_list_gpu_node.csv"), str(trace),
                 "--as-traced", "--format", "csv", "--out", str(out)]) == 0
    assert "is an openb pod list" not in capsys.readouterr().out
    ev = read(out, "events")
    first = pd.read_csv(trace).set_index("name")["creation_time"]
    arrivals = ev[ev["event"] == "arrive"].set_index("pod")["time"]
    assert arrivals.sort_index().to_dict() == first.astype(float).sort_index().to_dict()


def test_resolve_timing():
    assert not resolve_timing("csv").retimed
    assert not resolve_timing("parquet", state=True).retimed
    t = resolve_timing("csv", load=0.6)
    assert (t.retimed, t.load, t.n_pods, t.max_lifetime, t.by_default) == \
        (True, 0.6, None, None, False)
    t = resolve_timing("openb")
    assert (t.retimed, t.load, t.n_pods, t.max_lifetime, t.by_default) == \
        (True, 0.8, 40_000, 3600.0, True)
    t = resolve_timing("openb", load=0.5, max_lifetime=math.inf)
    assert (t.load, t.n_pods, t.max_lifetime, t.by_default) == (0.5, 40_000, None, False)
    assert not resolve_timing("openb", as_traced=True).retimed
    assert not resolve_timing("openb", state=True).retimed   # a state is one moment
    assert resolve_timing("jsonl", as_traced=False).load == 0.8
    with pytest.raises(ValueError, match="give a load"):
        resolve_timing("csv", max_lifetime=60)
    with pytest.raises(ValueError, match="does not go with"):
        resolve_timing("openb", as_traced=True, n_pods=5)


def test_the_api_takes_the_same_switch(files):
    spec = RunSpec(cluster=str(files / "cluster.yaml"), trace=str(files / "trace.csv"),
                   progress=False)
    as_traced = run(spec)
    assert as_traced.summary["inputs"]["timing"] == "as traced"
    retimed = run(RunSpec(**{**spec.__dict__, "as_traced": False}))
    assert retimed.summary["inputs"]["timing"] == "re-timed"
    assert retimed.summary["inputs"]["load"] == 0.8


def test_sweep_cells_follow_the_same_defaults(files):
    (files / "sweep.yaml").write_text(
        "cluster: cluster.yaml\n"
        "workload: {trace: [trace.csv, openb:gpushare40]}\n")
    cells = {c.trace.label: c for c in load_sweep(files / "sweep.yaml").cells}
    native, openb = cells["trace.csv"], cells["openb:gpushare40"]
    assert (native.load, native.n_pods, native.max_lifetime) == (None, None, None)
    assert (openb.load, openb.n_pods, openb.max_lifetime) == (0.8, 40_000, 3600.0)
    (files / "sweep.yaml").write_text(
        "cluster: cluster.yaml\n"
        "workload: {trace: trace.csv, load: 0.5, max_lifetime: null}\n")
    (cell,) = load_sweep(files / "sweep.yaml").cells
    assert (cell.load, cell.n_pods, cell.max_lifetime) == (0.5, None, None)


def test_sweep_knobs_that_do_not_apply_are_located(files):
    from hamisim.errors import InputError
    (files / "sweep.yaml").write_text(
        "cluster: cluster.yaml\n"
        "workload:\n  trace: trace.csv\n  n_pods: 50\n")
    with pytest.raises(InputError) as info:
        load_sweep(files / "sweep.yaml")
    assert info.value.line == 4
    assert "replayed as traced" in str(info.value) and "trace.csv" in str(info.value)
