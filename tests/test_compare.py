"""`hamisim compare` in replay mode: what it reports, its processes, kept runs, redraws."""
from __future__ import annotations

import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.explain import explain_run

CLUSTER = """\
nodes:
  - name_prefix: gpu
    replicas: 2
    gpus: 2
    card: {devmem: 16000, type: NVIDIA-T4}
"""


def trace(n: int = 40) -> str:
    rows = ["name,arrival,duration,gpu,gpumem,gpucores"]
    for i in range(n):
        rows.append(f"p{i},{i * 3},{60 + 7 * (i % 5)},1,{4000 * (1 + i % 3)},{20 + 10 * (i % 4)}")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    (folder / "cluster.yaml").write_text(CLUSTER)
    (folder / "trace.csv").write_text(trace())
    return folder


def compare(inputs, out, *extra) -> int:
    return main(["compare", str(inputs / "cluster.yaml"), str(inputs / "trace.csv"),
                 "--gpu-policy", "binpack", "--gpu-policy", "mutex", "--seeds", "2",
                 "--format", "csv", "--out", str(out), *extra])


def test_replay_comparison_reports_what_matters_in_replay(inputs, tmp_path, capsys):
    assert compare(inputs, tmp_path / "one") == 0
    text = capsys.readouterr().out
    header = text.splitlines()[0]
    for column in ("bound", "abandoned", "pending_p50_s", "pending_p99_s", "pending_max_s",
                   "mean_gpu_allocated_pct", "mean_frag_pct_of_capacity"):
        assert column in header
    assert "final_unallocated_gpu_pct" not in header        # 100 % for every replay
    assert "pending time p99 (s) by pod class" in text
    table = pd.read_csv(tmp_path / "one" / "compare.csv")
    assert len(table) == 4 and set(table["policy"]) == {"node=binpack card=binpack",
                                                        "node=binpack card=mutex"}
    classes = pd.read_csv(tmp_path / "one" / "compare_classes.csv")
    assert {"policy", "seed", "class", "pods", "pending_p99_s"} <= set(classes.columns)
    assert classes.groupby(["policy", "seed"])["pods"].sum().eq(40).all()
    groups = pd.read_csv(tmp_path / "one" / "compare_groups.csv")
    assert set(groups["group"]) == {"gpu"}
    # which engine ran the runs: a column per run and one console line
    assert set(table["engine"]) == {"compiled"}
    assert "engine: compiled (hamisim._replay), every run" in text


def test_workers_change_nothing_but_the_time(inputs, tmp_path):
    assert compare(inputs, tmp_path / "one") == 0
    assert compare(inputs, tmp_path / "two", "--workers", "2") == 0
    for name in ("compare.csv", "compare_classes.csv", "compare_groups.csv"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    runs = sorted(p.name for p in (tmp_path / "two" / "runs").iterdir())
    assert runs == sorted(p.name for p in (tmp_path / "one" / "runs").iterdir())
    for run in runs:
        assert (tmp_path / "one" / "runs" / run / "timeseries.csv").read_bytes() == \
            (tmp_path / "two" / "runs" / run / "timeseries.csv").read_bytes()


def test_kept_runs_are_whole_results_folders(inputs, tmp_path, capsys):
    out = tmp_path / "kept"
    assert compare(inputs, out, "--keep-runs", "--workers", "2") == 0
    run = out / "runs" / "node_binpack_card_mutex-seed1"
    assert {"events.csv", "pods.csv", "timeseries.csv", "summary.json", "figures"} <= \
        {p.name for p in run.iterdir()}
    events = pd.read_csv(run / "events.csv")
    waited = events.loc[events["event"] == "unschedulable", "pod"].iloc[0]
    exp = explain_run(run, waited, attempt=1)
    assert exp.decision is not None and not exp.decision.bound
    # and `hamisim plot` redraws a comparison folder
    (out / "figures" / "compare.png").unlink()
    capsys.readouterr()
    assert main(["plot", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out / "figures" / "compare.png")
    assert (out / "figures" / "compare.png").stat().st_size > 20_000


def test_the_table_covers_each_runs_window_and_says_so(inputs, tmp_path, capsys):
    import json
    assert compare(inputs, tmp_path / "w", "--window", "30", "90", "--scale", "1.5") == 0
    text = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "w" / "compare.csv")
    assert table["window_start_s"].eq(30.0).all() and table["window_end_s"].eq(90.0).all()
    for run in sorted((tmp_path / "w" / "runs").iterdir()):
        r = json.loads((run / "summary.json").read_text())["results"]
        row = table[(table["policy"] == json.loads((run / "summary.json").read_text())["label"])
                    & (table["seed"] == int(run.name.rsplit("seed", 1)[1]))].iloc[0]
        # the table's figures are the run's windowed ones, not its whole-run ones
        assert row["mean_gpu_allocated_pct"] == pytest.approx(r["mean_gpu_allocated_pct"])
        assert r["mean_gpu_allocated_pct"] != r["whole_run"]["mean_gpu_allocated_pct"]
        assert r["pods"] == 60                                  # 40 pods x 1.5
    assert "headline figures cover: 30 s - 90 s (--window;" in text
    given = table["offered_gpu_load_as_given"].iloc[0]
    assert f"offered GPU load: {100 * given:.1f} % as traced; " in text
    assert "scaled x1.5 (--scale)" in text
