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
    # the headline covers the trace's span, 0 to 40 (the last arrival), when a and
    # b hold both H100s; over the whole run both are taken until c leaves at 120,
    # one (b) until 300, the end: (100 % x 120 s + 50 % x 180 s) / 300 s
    assert (r["window"]["start_s"], r["window"]["end_s"]) == (0.0, 40.0)
    assert groups["big"]["mean_gpu_allocated_pct"] == pytest.approx(100.0)
    whole = {g["group"]: g for g in r["whole_run"]["groups"]}
    assert whole["big"]["mean_gpu_allocated_pct"] == pytest.approx(70.0)


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


# ---------------------------------------------------------------------------
# the headline window: the trace's span by default, the drain apart

#: two H100s; a and b arrive in the first 100 s, c and late at 100; b then runs for
#: a day, long after the last arrival (late, asking both cards, waits for it): a
#: drain of 86,370 s with one card of two taken, then both for 20 s
DRAIN_TRACE = """\
name,arrival,duration,gpu,gpucores,use_gputype
a,0,100,1,100,H100
b,50,86400,1,100,H100
c,100,50,1,100,H100
late,100,20,2,100,H100
"""
DRAIN_CLUSTER = """\
nodes:
  - name: big
    gpus: 2
    card: {devmem: 80000, type: NVIDIA-H100}
"""


def step_integral(ts: pd.DataFrame, column: str, start: float, end: float) -> float:
    """The mean of a time-series column over [start, end], row by row: each row's
    value holds until the next row's time (the hand computation)."""
    t, v = ts["time"].tolist(), ts[column].tolist()
    area = 0.0
    for k in range(len(t) - 1):
        lo, hi = max(t[k], start), min(t[k + 1], end)
        if hi > lo:
            area += v[k] * (hi - lo)
    return area / (end - start)


@pytest.fixture(scope="module")
def drain_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("drain")
    (folder / "cluster.yaml").write_text(DRAIN_CLUSTER)
    (folder / "trace.csv").write_text(DRAIN_TRACE)
    return folder


def run_window(folder, name: str, *extra: str) -> tuple[dict, pd.DataFrame, str]:
    out = folder / name
    assert main(["run", str(folder / "cluster.yaml"), str(folder / "trace.csv"), "--out",
                 str(out), "--format", "csv", "--no-progress", *extra]) == 0
    summary = json.loads((out / "summary.json").read_text())
    ts = pd.read_csv(out / "timeseries.csv")
    ts["pct"] = 100.0 * ts["hami_gpu_allocated"] / ts["hami_gpu_total"]
    return summary, ts, out


def test_headline_means_cover_the_trace_span_not_the_drain(drain_files, capsys):
    summary, ts, _ = run_window(drain_files, "default")
    text = capsys.readouterr().out
    r = summary["results"]
    end = r["end_time_s"]
    assert end == 86470.0                       # b leaves a day later, then late
    w = r["window"]
    assert (w["start_s"], w["end_s"], w["length_s"], w["from"], w["pods"]) == \
        (0.0, 100.0, 100.0, "trace", 4)
    # 0-50 a alone (50 %), 50-100 a and b (100 %)
    assert r["mean_gpu_allocated_pct"] == pytest.approx(75.0)
    assert r["mean_gpu_allocated_pct"] == pytest.approx(step_integral(ts, "pct", 0, 100))
    # the whole run, as summaries before windows gave it, is kept apart
    whole = r["whole_run"]["mean_gpu_allocated_pct"]
    assert whole == pytest.approx(step_integral(ts, "pct", 0, end))
    assert whole == pytest.approx(time_weighted_mean(ts["time"].to_numpy(), ts["pct"].to_numpy()))
    assert whole < 51 < r["mean_gpu_allocated_pct"]
    d = r["drain"]
    assert (d["start_s"], d["end_s"], d["length_s"], d["pods_arrived"]) == \
        (100.0, end, end - 100.0, 0)
    assert d["mean_gpu_allocated_pct"] == pytest.approx(step_integral(ts, "pct", 100, end))
    for key in ("mean_stranded_pct_of_capacity", "mean_frag_pct_of_capacity"):
        assert r[key] == pytest.approx(step_integral(ts, key.replace("mean_", ""), 0, 100))
    # the groups' means cover the window too; their whole-run ones are kept
    (group,), (group_whole,) = r["groups"], r["whole_run"]["groups"]
    assert group["mean_gpu_allocated_pct"] == pytest.approx(75.0)
    assert group_whole["mean_gpu_allocated_pct"] == pytest.approx(whole)
    # the console says which span the figures cover and what the drain was
    assert re.search(r"headline figures cover +0 s - 100 s \(the trace's span, first to "
                     r"last arrival; 4 pods arriving in it\)", text)
    assert re.search(r"the rest of the run \(drain\) +24 h \(to 24 h\), mean GPUs with a tenant "
                     r"50\.0 %", text)
    assert re.search(r"mean GPUs with a tenant \(%\) +75\.0 \(whole run 50\.\d\)", text)
    page = (drain_files / "default" / "report.html").read_text(encoding="utf-8")
    assert "Headline figures cover</strong>: 0 s to 1 min 40 s (the trace&#x27;s span" in page


def test_a_window_given_counts_the_pods_arriving_in_it(drain_files, capsys):
    summary, ts, _ = run_window(drain_files, "mid", "--window", "60", "100")
    r = summary["results"]
    assert (r["window"]["start_s"], r["window"]["end_s"], r["window"]["from"]) == \
        (60.0, 100.0, "--window")
    assert summary["inputs"]["window"] == [60.0, 100.0]
    assert r["mean_gpu_allocated_pct"] == pytest.approx(step_integral(ts, "pct", 60, 100))
    # c and late arrived in it (at 100): late waits for b to leave, c for a (at 100:
    # no wait); a and b arrived before the window
    pods = pd.read_csv(drain_files / "mid" / "pods.csv").set_index("pod")
    waits = pods.loc[["c", "late"], "wait_s"].to_numpy()
    assert r["window"]["pods"] == 2
    assert r["pending_max_s"] == pytest.approx(waits.max())
    assert r["pending_p50_s"] == pytest.approx(np.percentile(waits, 50))
    assert r["whole_run"]["pending_p50_s"] == pytest.approx(
        np.percentile(pods["wait_s"].to_numpy(), 50))
    assert {c["class"]: c["pods"] for c in r["classes"]} == {"1 GPU on H100": 1,
                                                             "2 GPUs on H100": 1}
    # units: the same window written in minutes and hours
    same, _, _ = run_window(drain_files, "units", "--window", "1min", "100s")
    assert same["results"]["window"]["start_s"] == 60.0
    capsys.readouterr()


def test_a_window_past_the_runs_end_is_cut_with_a_warning(drain_files, capsys):
    summary, ts, _ = run_window(drain_files, "long", "--window", "0", "2d")
    w = summary["results"]["window"]
    assert (w["end_s"], w["requested_end_s"]) == (86470.0, 172800.0)
    assert summary["results"]["drain"]["length_s"] == 0.0
    err = capsys.readouterr().err
    assert "--window 0 2d: warning: the run ended at 24 h, before END (48 h)" in err


@pytest.mark.parametrize("window,message", [
    (["2h", "1h"], "hamisim: --window 2h 1h: END must be after START"),
    (["5", "5"], "hamisim: --window 5 5: END must be after START"),
    (["1x", "2h"], "argument --window: must be a time >= 0: seconds or a number with a "
                   "unit s, min, h, d (90s, 30min, 2h, 7d), got 1x"),
    (["-5", "10"], "argument --window: must be a time >= 0"),
    (["1d", "2d"], "hamisim: --window 86400 172800: the window starts at 24 h, after the "
                   "last arrival of trace.csv (at 100 s): no pod would count"),
])
def test_bad_windows_are_refused_before_the_run(drain_files, window, message, capsys):
    argv = ["run", str(drain_files / "cluster.yaml"), str(drain_files / "trace.csv"),
            "--out", str(drain_files / "never"), "--window", *window]
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (drain_files / "never").exists()


def test_both_engines_give_the_same_windowed_figures(drain_files, capsys):
    compiled, _, _ = run_window(drain_files, "compiled", "--window", "10", "5000")
    python, _, _ = run_window(drain_files, "python", "--window", "10", "5000", "--check")
    assert (compiled["inputs"]["engine"], python["inputs"]["engine"]) == ("compiled", "python")
    for key in ("window", "drain", "whole_run", "mean_gpu_allocated_pct", "pending_p99_s",
                "groups", "classes"):
        assert compiled["results"][key] == python["results"][key]
    capsys.readouterr()


def test_a_trace_arriving_at_one_instant_has_no_window(tmp_path):
    # no span to cover: the headline is the whole run, as before windows
    (tmp_path / "cluster.yaml").write_text(DRAIN_CLUSTER)
    (tmp_path / "trace.csv").write_text("name,arrival,duration,gpu\na,0,100,1\nb,0,300,1\n")
    summary, ts, _ = run_window(tmp_path, "out")
    r = summary["results"]
    assert "window" not in r and "whole_run" not in r
    assert r["mean_gpu_allocated_pct"] == pytest.approx(step_integral(ts, "pct", 0, 300))


def test_summary_breaks_waits_down_by_namespace_with_p95(tmp_path, capsys):
    """``results.namespaces``: each namespace's waits as its pods' rows give them
    (p95 beside p50/p99, as in the classes and groups), the same in both engines."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    rows = ["name,arrival,duration,gpu,gpucores,use_gputype,namespace"]
    rows += [f"p{k},{k},{30 + 7 * k},1,100,H100,{'team-a' if k % 3 else 'team-b'}"
             for k in range(24)]
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    got = {}
    for name, extra in (("compiled", []), ("python", ["--check"])):
        out = tmp_path / name
        assert main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.csv"),
                     "--out", str(out), "--format", "csv", "--no-progress", *extra]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["inputs"]["engine"] == name
        got[name] = summary["results"]["namespaces"]
        pods = pd.read_csv(out / "pods.csv")
        space = pods["pod"].map(lambda p: "team-a" if int(p[1:]) % 3 else "team-b")
        spaces = {ns["namespace"]: ns for ns in got[name]}
        assert sorted(spaces) == ["team-a", "team-b"]
        for ns, part in pods.groupby(space):
            waits = part["wait_s"].to_numpy()
            assert spaces[ns]["pods"] == len(part)
            assert spaces[ns]["pending_p95_s"] == pytest.approx(np.percentile(waits, 95))
            assert spaces[ns]["pending_p99_s"] == pytest.approx(np.percentile(waits, 99))
            assert spaces[ns]["pending_max_s"] == waits.max() > 0
    assert got["compiled"] == got["python"]
    capsys.readouterr()
