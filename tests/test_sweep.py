"""`hamisim sweep`: sweep files, cells, the local pool, failures, lost workers, resume."""
from __future__ import annotations

import functools
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.errors import InputError
from hamisim.studies.sweep import (
    CellRunner,
    load_sweep,
    read_cell_row,
    results_table,
    run_cell_task,
    run_sweep,
)

CLUSTER = """\
scheduler: {gpu_scheduler_policy: spread, node_scheduler_policy: binpack}
nodes:
  - name_prefix: gpu
    replicas: 2
    cpu_milli: 32000
    memory_mib: 131072
    gpus: 4
    card: {count: 10, devmem: 16384, devcore: 100, type: NVIDIA-T4}
"""

SWEEP = """\
cluster: {file: cluster.yaml, vary: gpu, replicas: [2, 3, 4]}
workload: {trace: trace.csv, offered_gpus: 10, n_pods: 300, max_lifetime: 600}
policies:
  node_scheduler_policy: [binpack, spread]
  gpu_scheduler_policy: spread
seeds: 2
"""
N_CELLS = 3 * 2 * 2


def write_trace(path: Path, n: int = 60, seed: int = 7) -> Path:
    """A small native trace: whole and shared GPUs, CPU and memory requests."""
    rng = random.Random(seed)
    rows = ["name,arrival,duration,gpu,gpumem,gpucores,cpu_milli,memory_mib"]
    for i in range(n):
        g = rng.choice([1, 1, 1, 2, 4])
        mem = rng.choice([2048, 4096, 8192, 16384]) if g == 1 else 16384
        cores = rng.choice([10, 25, 50, 100]) if g == 1 else 100
        rows.append(f"p{i:03d},{i * 10},{rng.randint(100, 900)},{g},{mem},{cores},"
                    f"{rng.choice([1000, 2000, 4000])},{rng.choice([2048, 8192])}")
    path.write_text("\n".join(rows) + "\n")
    return path


def make_inputs(folder: Path, sweep: str = SWEEP, cluster: str = CLUSTER) -> Path:
    """cluster.yaml, trace.csv and sweep.yaml in ``folder``; returns the sweep file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cluster.yaml").write_text(cluster)
    write_trace(folder / "trace.csv")
    path = folder / "sweep.yaml"
    path.write_text(sweep)
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    return make_inputs(tmp_path_factory.mktemp("sweep-inputs"))


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory):
    """The sweep run once on one local worker: the table every other run must equal."""
    out = tmp_path_factory.mktemp("sweep-ref") / "out"
    outcome = run_sweep(load_sweep(inputs), out, workers=1, progress=False)
    return outcome


def cell_dirs(out: Path) -> list[str]:
    """Every entry of ``out/cells``, half-written (hidden) folders included."""
    return sorted(p.name for p in (out / "cells").iterdir())


def finished_cells(out: Path) -> set[str]:
    """Filed cells (a hidden folder being written may already hold its cell.json)."""
    return {p.parent.name for p in out.glob("cells/*/cell.json")
            if not p.parent.name.startswith(".")}


# ---------------------------------------------------------------------------
# the local pool

def test_sweep_writes_one_row_and_one_folder_per_cell(reference, inputs):
    sweep = load_sweep(inputs)
    assert len(sweep.cells) == N_CELLS
    t = reference.table
    assert list(t["cell"]) == sorted(c.id for c in sweep.cells)   # sorted by cell id
    assert (t["status"] == "ok").all() and t["error"].isna().all()
    assert sorted(zip(t["replicas"], t["policy"], t["seed"])) == sorted(
        (r, f"node={n} card=spread", s) for r in (2, 3, 4) for n in ("binpack", "spread")
        for s in (0, 1))
    assert (t["gpus"] == 4 * t["replicas"]).all()
    assert (t["pods"] == 300).all()
    # more nodes for the same stream of pods: shorter waits (median over policies and seeds)
    p99 = t.groupby("replicas")["pending_p99_s"].median()
    assert p99[2] > p99[3] > p99[4]
    assert cell_dirs(reference.out) == sorted(t["cell"])
    for cid in t["cell"]:
        folder = reference.out / "cells" / cid
        assert {p.name for p in folder.iterdir()} == {"cell.json", "summary.json",
                                                      "timeseries.parquet"}
        assert read_cell_row(folder)["cell"] == cid
    assert (reference.out / "figures" / "sweep.png").stat().st_size > 10_000
    manifest = json.loads((reference.out / "sweep.json").read_text())
    assert set(manifest["cell_inputs"]) == set(t["cell"])


def test_two_workers_give_byte_identical_results(reference, inputs, tmp_path):
    out = tmp_path / "out"
    outcome = run_sweep(load_sweep(inputs), out, workers=2, progress=False)
    assert outcome.stats.ran == N_CELLS
    assert (out / "results.parquet").read_bytes() == \
        (reference.out / "results.parquet").read_bytes()
    # every cell's files too: no worker-local path (its private temporary folder) leaks
    for cell in reference.table["cell"]:
        for name in ("cell.json", "summary.json", "timeseries.parquet"):
            assert (out / "cells" / cell / name).read_bytes() == \
                (reference.out / "cells" / cell / name).read_bytes(), (cell, name)


def test_cli_sweep_csv_and_resume_reuses_every_cell(inputs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", str(inputs), "--out", str(out), "--workers", "2",
                 "--format", "csv"]) == 0
    first = (out / "results.csv").read_bytes()
    assert f"{N_CELLS} cells, {N_CELLS} ok, 0 failed (ran {N_CELLS}, reused 0)" in \
        capsys.readouterr().out
    # an existing sweep folder is never overwritten silently
    assert main(["sweep", str(inputs), "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["sweep", str(inputs), "--out", str(out), "--resume", "--format", "csv"]) == 0
    assert f"(ran 0, reused {N_CELLS})" in capsys.readouterr().out
    assert (out / "results.csv").read_bytes() == first
    table = pd.read_csv(out / "results.csv")
    assert len(table) == N_CELLS and table["cell"].is_unique


SMALL = SWEEP.replace("replicas: [2, 3, 4]", "replicas: [2, 3]").replace(
    "node_scheduler_policy: [binpack, spread]", "node_scheduler_policy: binpack").replace(
    "seeds: 2", "seeds: 1")


def test_cli_overwrite_starts_afresh_and_keeps_other_files(tmp_path, capsys):
    inputs = make_inputs(tmp_path / "in", SMALL)
    out = tmp_path / "out"
    assert main(["sweep", str(inputs), "--out", str(out), "--workers", "1"]) == 0
    old = set(cell_dirs(out))
    (out / "notes.txt").write_text("mine")
    inputs.write_text(SMALL.replace("seeds: 1", "seeds: [7]"))        # other cells
    capsys.readouterr()
    assert main(["sweep", str(inputs), "--out", str(out), "--resume", "--overwrite"]) == 2
    assert "give --resume or --overwrite, not both" in capsys.readouterr().err
    assert main(["sweep", str(inputs), "--out", str(out), "--workers", "1",
                 "--overwrite"]) == 0
    assert "(ran 2, reused 0)" in capsys.readouterr().out
    new = set(cell_dirs(out))
    assert len(new) == 2 and not new & old          # the earlier cells are gone
    assert set(pd.read_parquet(out / "results.parquet")["cell"]) == new
    assert (out / "notes.txt").read_text() == "mine"    # only hamisim's files are removed


class _CrashingRunner(CellRunner):
    """The CLI's runner, with a task whose worker dies on every 3-node cell."""

    def __init__(self, *args, **kwargs):
        kwargs["task"] = functools.partial(crash_always, 3)
        super().__init__(*args, **kwargs)


@pytest.mark.parametrize("command", ["sweep", "plan"])
@pytest.mark.parametrize("retries", [0, 1])
def test_cli_retries_is_how_often_a_lost_cell_runs_again(tmp_path, capsys, monkeypatch,
                                                         command, retries):
    import hamisim.studies.plan as plan_module
    import hamisim.studies.sweep as sweep_module
    monkeypatch.setattr(sweep_module, "CellRunner", _CrashingRunner)
    monkeypatch.setattr(plan_module, "CellRunner", _CrashingRunner)
    inputs = make_inputs(tmp_path / "in", SMALL)
    if command == "plan":
        inputs.write_text("cluster: {file: cluster.yaml, vary: gpu}\n"
                          "workload: {trace: trace.csv, offered_gpus: 10, n_pods: 300, "
                          "max_lifetime: 600}\ntarget: pending_p99_s <= 100000\n"
                          "search: {min: 2, max: 3}\n")
    out = tmp_path / "out"
    assert main([command, str(inputs), "--out", str(out), "--workers", "1",
                 "--retries", str(retries)]) == 1
    assert f"lost {retries + 1} times" in capsys.readouterr().out


#: the summary.json input of each sweep axis
INPUT_KEY = {"load": "load", "fill_to": "fill_to_pct", "scale": "scale"}


@pytest.mark.parametrize("workload, axis, flags", [
    ("{trace: trace.csv, load: [0.5, 0.9], n_pods: 120, max_lifetime: 600}", "load",
     ["--load", "{}", "--pods", "120", "--max-lifetime", "600"]),
    ("{trace: trace.csv, mode: fill, fill_to: [50, 90]}", "fill_to",
     ["--mode", "fill", "--fill-to", "{}"]),
    ("{trace: trace.csv, scale: [0.5, 1.5]}", "scale", ["--scale", "{}"]),
])
def test_a_cell_is_the_run_it_names(tmp_path, capsys, workload, axis, flags):
    # each cell of a load or fill axis gives what `hamisim run` gives with those options
    inputs = make_inputs(tmp_path / "in", f"cluster: cluster.yaml\nworkload: {workload}\n"
                         "seeds: [3]\n")
    out = tmp_path / "out"
    outcome = run_sweep(load_sweep(inputs), out, workers=1, progress=False)
    assert len(outcome.table) == 2
    for cell in outcome.table["cell"]:
        cell_summary = json.loads((out / "cells" / cell / "summary.json").read_text())
        value = cell_summary["inputs"][INPUT_KEY[axis]]
        run_out = tmp_path / f"run-{value}"
        args = [a.format(value) for a in flags]
        assert main(["run", str(tmp_path / "in" / "cluster.yaml"), str(tmp_path / "in" /
                     "trace.csv"), *args, "--seed", "3", "--out", str(run_out),
                     "--no-progress"]) == 0
        run_summary = json.loads((run_out / "summary.json").read_text())
        keep = ("pods", "bound", "attempts", "abandoned", "queueing_delay_p99_s",
                "mean_gpu_allocated_pct", "mean_frag_pct_of_capacity", "end_time_s")
        assert {k: cell_summary["results"][k] for k in keep} == \
            {k: run_summary["results"][k] for k in keep}
        assert cell_summary["inputs"]["mode"] == ("fill" if axis == "fill_to" else "replay")
    capsys.readouterr()
    values = sorted(json.loads((out / "cells" / c / "summary.json").read_text())["inputs"][
        INPUT_KEY[axis]] for c in outcome.table["cell"])
    assert values == {"load": [0.5, 0.9], "fill_to": [50, 90], "scale": [0.5, 1.5]}[axis]
    if axis == "scale":             # the results table says which scale and which window
        assert sorted(outcome.table["scale"]) == [0.5, 1.5]
        assert outcome.table["window_end_s"].notna().all()
    # and the two cells are different runs
    first, second = (json.loads((out / "cells" / c / "summary.json").read_text())["results"]
                     for c in outcome.table["cell"])
    assert (first["pods"], first["end_time_s"]) != (second["pods"], second["end_time_s"])


def test_cell_ids_hash_contents_not_paths(inputs, tmp_path):
    ids = [c.id for c in load_sweep(inputs).cells]
    copy = make_inputs(tmp_path / "elsewhere")
    assert [c.id for c in load_sweep(copy).cells] == ids
    write_trace(tmp_path / "elsewhere" / "trace.csv", seed=8)      # other content
    changed = [c.id for c in load_sweep(copy).cells]
    assert not set(changed) & set(ids)


def test_a_python_policys_file_is_part_of_the_cell_id(inputs, tmp_path):
    # an edited policy file must not be answered from the cells of the old one
    policy = tmp_path / "mine.py"
    policy.write_text("def score(c):\n    return 0\n")
    path = make_inputs(tmp_path / "in", f"cluster: cluster.yaml\nworkload: {{trace: trace.csv}}\n"
                       f"policies: {{node_scheduler_policy: 'python:{policy}:score'}}\n")
    before = [c.id for c in load_sweep(path).cells]
    assert [c.id for c in load_sweep(path).cells] == before
    assert {c.backend for c in load_sweep(path).cells} == {"reference"}   # none asked for
    policy.write_text("def score(c):\n    return -c.index\n")
    assert not set(c.id for c in load_sweep(path).cells) & set(before)


def test_extending_a_sweep_runs_only_the_new_cells(reference, inputs, tmp_path):
    out = tmp_path / "out"
    import shutil
    shutil.copytree(reference.out, out)
    wider = make_inputs(tmp_path / "wider", SWEEP.replace("seeds: 2", "seeds: 3"))
    outcome = run_sweep(load_sweep(wider), out, workers=2, resume=True, progress=False)
    assert (outcome.stats.ran, outcome.stats.reused) == (N_CELLS // 2, N_CELLS)
    old = outcome.table[outcome.table["seed"] < 2].reset_index(drop=True)
    pd.testing.assert_frame_equal(old, reference.table)


# ---------------------------------------------------------------------------
# failures

FAILING_CLUSTER = CLUSTER + """\
  - name: gpu-3               # clashes with the group's fourth node
    gpus: 1
    card: {devmem: 16384, type: NVIDIA-T4}
"""


def test_a_failing_cell_is_reported_and_the_others_run(tmp_path, capsys):
    path = make_inputs(tmp_path / "in", SWEEP.replace("seeds: 2", "seeds: 1"), FAILING_CLUSTER)
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--workers", "2"]) == 1
    captured = capsys.readouterr()
    t = pd.read_parquet(out / "results.parquet")
    bad = t[t["status"] == "failed"]
    assert sorted(bad["replicas"]) == [4, 4]           # only gpu x 4 has a gpu-3 twice
    assert (t.loc[t["replicas"] < 4, "status"] == "ok").all()
    for error in bad["error"]:
        assert "duplicate node name 'gpu-3'" in error
        # the line of the user's own file, the size that broke it, no worker-local path
        assert error.startswith("cluster.yaml:9: ") and "hamisim-cells-" not in error
        assert error.endswith("(node group 'gpu' resized to 4)")
    assert "failed" in captured.out and "duplicate node name" in captured.err
    assert pd.isna(bad["pending_p99_s"]).all()
    # resume runs failed cells again (they fail again) and keeps the finished ones
    assert main(["sweep", str(path), "--out", str(out), "--resume"]) == 1
    assert "(ran 2, reused 4)" in capsys.readouterr().out


def crash_once(marker_dir: str, victim: int | str, task):
    """A cell task whose worker dies the first time it runs a victim cell: every
    cell of one cluster size (``victim`` an int) or the cell of that id."""
    marker = Path(marker_dir) / task.cell.id
    if victim in (task.cell.replicas, task.cell.id) and not marker.exists():
        marker.write_text("crashed")
        os._exit(13)
    return run_cell_task(task)


def crash_always(victim_replicas: int, task):
    """A cell task whose worker dies on every cell of one cluster size."""
    if task.cell.replicas == victim_replicas:
        os._exit(13)
    return run_cell_task(task)


def test_a_cell_whose_worker_dies_is_run_again(reference, inputs, tmp_path, monkeypatch):
    sweep = load_sweep(inputs)
    markers = tmp_path / "markers"
    markers.mkdir()
    logs: list[str] = []
    task = functools.partial(crash_once, str(markers), 2)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with CellRunner(tmp_path / "out", workers=2, task=task, log=logs.append) as runner:
        stats = runner.run(sweep.cells)
        assert [p.name[:14] for p in temp.iterdir()] == ["hamisim-sweep-"]
    assert not list(temp.iterdir())     # killed workers' input copies are gone too
    assert stats.ran == N_CELLS and stats.failed == 0
    victims = {c.id for c in sweep.cells if c.replicas == 2}
    assert {p.name for p in markers.iterdir()} == victims   # each lost a worker once
    assert stats.retried >= len(victims)
    assert any("worker was lost" in m or "worker process died" in m for m in logs)
    rows = results_table(stats.rows.values())
    pd.testing.assert_frame_equal(rows, reference.table, check_dtype=False)


def test_a_cell_that_always_kills_its_worker_fails_after_the_retries(inputs, tmp_path):
    sweep = load_sweep(inputs)
    with CellRunner(tmp_path / "out", workers=2, retries=1,
                    task=functools.partial(crash_always, 3), log=lambda m: None) as runner:
        stats = runner.run(sweep.cells)
    failed = {cid for cid, r in stats.rows.items() if r["status"] == "failed"}
    assert failed == {c.id for c in sweep.cells if c.replicas == 3}
    for cid in failed:
        assert "lost 2 times" in stats.rows[cid]["error"]
    assert stats.ran == N_CELLS - len(failed)


# ---------------------------------------------------------------------------
# killed mid-sweep, then resumed

def test_killed_sweep_resumes_with_every_cell_exactly_once(reference, inputs, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["sweep", str(inputs), "--out", str(out), "--workers", "1", "--no-progress"]
    # cwd: `python -m` puts it first on sys.path; a checkout's hamisim/ is uncompiled
    proc = subprocess.Popen([sys.executable, "-m", "hamisim.cli", *args], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(finished_cells(out)) < 3:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no cell finished within 60 s"
            time.sleep(0.01)
    finally:
        # SIGKILL the whole session we started: the CLI, its fork server and workers
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:      # it had already ended (the assertion says why)
            pass
        proc.wait()
    done_before = finished_cells(out)
    assert 3 <= len(done_before) < N_CELLS, "kill the sweep earlier: it had finished"
    assert main([*args, "--resume"]) == 0
    report = capsys.readouterr().out
    assert f"(ran {N_CELLS - len(done_before)}, reused {len(done_before)})" in report
    # every cell exactly once: one folder each, no half-written leftovers, one row each
    ids = sorted(c.id for c in load_sweep(inputs).cells)
    assert cell_dirs(out) == ids
    table = pd.read_parquet(out / "results.parquet")
    assert list(table["cell"]) == ids
    # and the same bytes as a sweep that was never interrupted
    assert (out / "results.parquet").read_bytes() == \
        (reference.out / "results.parquet").read_bytes()
    # every cell's files too: no worker-local path (its private temporary folder) leaks
    for cell in reference.table["cell"]:
        for name in ("cell.json", "summary.json", "timeseries.parquet"):
            assert (out / "cells" / cell / name).read_bytes() == \
                (reference.out / "cells" / cell / name).read_bytes(), (cell, name)


# ---------------------------------------------------------------------------
# the sweep file: located errors

def sweep_error(tmp_path: Path, text: str) -> InputError:
    path = make_inputs(tmp_path / "in", textwrap.dedent(text))
    with pytest.raises(InputError) as err:
        load_sweep(path)
    return err.value


@pytest.mark.parametrize("text, line, needle", [
    ("cluster: cluster.yaml\npolices: {node_scheduler_policy: spread}\n", 2,
     "unknown key 'polices'"),
    ("cluster: cluster.yaml\nseeds: two\n", 2, "'seeds' must be an integer"),
    ("cluster: {file: cluster.yaml, vary: gpus, replicas: [2]}\n", 1,
     "no node group 'gpus'"),
    ("cluster: {file: cluster.yaml, vary: gpu}\n", 1, "needs 'replicas'"),
    ("cluster: {file: cluster.yaml, replicas: [2]}\n", 1, "'replicas' needs 'vary'"),
    ("cluster: {file: cluster.yaml, vary: gpu, replicas: [2, 3, 2]}\n", 1, "listed twice"),
    ("cluster: nowhere.yaml\n", 1, "no such file: nowhere.yaml"),
    ("cluster: cluster.yaml\npolicies: {node_scheduler_policy: [binpack, 3]}\n", 2,
     "'node_scheduler_policy' must be a string"),
    ("cluster: cluster.yaml\nworkload:\n  trace: trace.csv\n  load: 0.5\n"
     "  offered_gpus: 4\n", 5, "not both"),
    ("cluster: cluster.yaml\nworkload:\n  trace: trace.csv\n  fill_to: 100\n", 4,
     "'fill_to' applies to fill mode"),
    ("cluster: cluster.yaml\nworkload:\n  mode: fill\n  trace: trace.csv\n  n_pods: 10\n", 5,
     "'n_pods' applies to replay mode"),
    ("cluster: cluster.yaml\nworkload: {trace: openb:defualt}\n", 2,
     "did you mean 'openb:default'"),
    ("cluster: cluster.yaml\nworkload: {trace: trace.csv, load: [0.5, -1]}\n", 2,
     "'load' must be > 0"),
    ("cluster: cluster.yaml\nworkload:\n  trace: trace.csv\n  scale: 1.3\n  load: 0.5\n", 5,
     "'load' re-times the trace into Poisson arrivals; it does not go with 'scale'"),
    ("cluster: cluster.yaml\nworkload: {trace: trace.csv, scale: [1.3, 0]}\n", 2,
     "'scale' must be > 0"),
    ("cluster: cluster.yaml\nworkload:\n  mode: fill\n  trace: trace.csv\n  scale: 2\n", 5,
     "'scale' applies to replay mode"),
    ("cluster: cluster.yaml\ncell_outputs: [metrics]\n", 2, "needs 'metrics_start'"),
    ("cluster: cluster.yaml\ncell_outputs: [metrics]\nmetrics_start: 2026-11-30T00:00:00\n",
     3, "has no time zone"),
    ("cluster: cluster.yaml\ncell_outputs: [metrics]\nmetrics_start: 0\n"
     "metrics_interval: 0\n", 4, "'metrics_interval' must be a positive number"),
    ("cluster: cluster.yaml\nmetrics_start: 2026-11-30T00:00:00Z\n", 2,
     "add metrics to 'cell_outputs'"),
    ("cluster: cluster.yaml\npolicies:\n  node_scheduler_policy: python:nowhere.py:f\n", 3,
     "no such file: nowhere.py"),
])
def test_sweep_file_errors_are_located(tmp_path, text, line, needle):
    err = sweep_error(tmp_path, text)
    assert err.path.endswith("sweep.yaml") and err.line == line, str(err)
    assert needle in err.problem, str(err)


def test_policies_hami_ignores_are_warnings_not_errors(tmp_path):
    from hamisim.hami.policy import PolicyWarning
    path = make_inputs(tmp_path / "in", textwrap.dedent("""\
        cluster: cluster.yaml
        workload: {trace: trace.csv}
        policies:
          node_scheduler_policy: binpak
          gpu_scheduler_policy:
            - spread
            - mutex,bnpack
        """))
    with pytest.warns(PolicyWarning) as record:
        sweep = load_sweep(path)
    messages = sorted(str(w.message) for w in record)
    assert messages[0].startswith(f"{path}:4: warning: node policy 'binpak'")
    assert messages[1].startswith(f"{path}:7: warning: card policy 'mutex,bnpack': HAMi "
                                  "ignores the unknown token 'bnpack'")
    assert {c.gpu_policy for c in sweep.cells} == {"spread", "mutex,bnpack"}


def test_cli_reports_bad_sweep_files_with_exit_2(tmp_path, capsys):
    path = make_inputs(tmp_path / "in", "cluster: cluster.yaml\npolices: {}\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: unknown key 'polices'" in err and "did you mean 'policies'" in err
    assert not (tmp_path / "out").exists()


def test_policy_combinations_and_bundled_openb_names(tmp_path):
    path = make_inputs(tmp_path / "in", textwrap.dedent("""\
        cluster: openb:gpu_node
        workload: {trace: openb:gpushare40, load: [0.5, 0.9], n_pods: 100}
        policies:
          - {node_scheduler_policy: binpack, gpu_scheduler_policy: "mutex,binpack,numa"}
          - {node_scheduler_policy: fgd}
        seeds: [3, 5]
        """))
    cells = load_sweep(path).cells
    assert len(cells) == 2 * 2 * 2
    assert {(c.node_policy, c.gpu_policy) for c in cells} == {
        ("binpack", "mutex,binpack,numa"), ("fgd", None)}
    assert {c.seed for c in cells} == {3, 5} and {c.load for c in cells} == {0.5, 0.9}
    assert {c.trace.label for c in cells} == {"openb:gpushare40"}
    assert {c.cluster.name for c in cells} == {"openb_node_list_gpu_node.csv"}


def test_explain_run_works_on_a_cell_with_its_events(tmp_path):
    """A cell's summary names the inputs where the submitting machine reads them,
    and the node group size it ran with, so a cell replays like a run."""
    from hamisim.explain import explain_run
    path = make_inputs(tmp_path / "in", SWEEP.replace("seeds: 2", "seeds: 1").replace(
        "replicas: [2, 3, 4]", "replicas: [3]").replace(
        "node_scheduler_policy: [binpack, spread]", "node_scheduler_policy: binpack")
        + "cell_outputs: [events]\n")
    out = tmp_path / "out"
    outcome = run_sweep(load_sweep(path), out, workers=1, progress=False)
    (cell,) = outcome.table["cell"]
    summary = json.loads((out / "cells" / cell / "summary.json").read_text())["inputs"]
    assert summary["cluster_path"] == str(tmp_path / "in" / "cluster.yaml")
    assert summary["trace_path"] == str(tmp_path / "in" / "trace.csv")
    assert summary["resize"] == {"gpu": 3}
    events = pd.read_parquet(out / "cells" / cell / "events.parquet")
    pod = events.loc[events["event"] == "bind", "pod"].iloc[5]
    exp = explain_run(out / "cells" / cell, pod)
    assert exp.decision.node == events.loc[(events["pod"] == pod)
                                           & (events["event"] == "bind"), "node"].iloc[-1]
    assert {n.name for n in exp.nodes} == {"gpu-0", "gpu-1", "gpu-2"}


def test_cell_outputs_choose_the_per_cell_tables(tmp_path):
    base = SWEEP.replace("seeds: 2", "seeds: 1").replace("replicas: [2, 3, 4]", "replicas: [3]")
    for outputs, files in (("[]", set()), ("[events, timeseries]",
                                           {"events.csv", "timeseries.csv"}),
                           ("[metrics]\nmetrics_start: 1795996800", {"metrics.om"})):
        path = make_inputs(tmp_path / outputs[:9], base + f"cell_outputs: {outputs}\n")
        out = tmp_path / outputs[:9] / "out"
        run_sweep(load_sweep(path), out, workers=1, fmt="csv", progress=False)
        for folder in (out / "cells").iterdir():
            assert {p.name for p in folder.iterdir()} == {"cell.json", "summary.json"} | files
            if files == {"metrics.om"}:       # every series names its cell
                first = (folder / "metrics.om").read_text().splitlines()[2]
                assert f'hamisim_cell="{folder.name}"' in first and first.endswith(" 1795996800")


def test_bundled_example_sweep_loads():
    from hamisim.io.bundled import workloads_dir
    sweep = load_sweep(workloads_dir() / "sweeps" / "openb-policies.yaml")
    assert len(sweep.cells) == 24
    assert {c.replicas for c in sweep.cells} == {48, 56, 64}
