"""Results folders: every file written, byte-identical on rerun, never half-written."""
from __future__ import annotations

import json

import pytest

from hamisim.cli import main
from hamisim.studies.runs import RunSpec, run, write_run

CLUSTER = """\
nodes:
  - name_prefix: gpu
    replicas: 4
    cpu_milli: 32000
    gpus: 4
    card: {count: 4, devmem: 16000, devcore: 100, type: NVIDIA-Tesla T4}
"""


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    rows = ["name,arrival,duration,gpu,gpumem_percentage,gpucores,cpu_milli,gpu_policy"]
    for i in range(60):
        share = [25, 50, 100][i % 3]
        policy = "mutex" if i % 7 == 0 else ""
        rows.append(f"p{i},{i * 0.7:.1f},{5 + (i * 13) % 17},1,{share},{share},2000,{policy}")
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


def spec(inputs, **kw) -> RunSpec:
    return RunSpec(cluster=str(inputs / "cluster.yaml"), trace=str(inputs / "trace.csv"),
                   load=None, progress=False, **kw)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_rerun_is_byte_identical(inputs, fmt):
    a = write_run(run(spec(inputs, seed=3)), inputs / "a", fmt)
    b = write_run(run(spec(inputs, seed=3)), inputs / "b", fmt)
    names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert {f"events.{fmt}", f"timeseries.{fmt}", "summary.json"} <= {str(n) for n in names}
    assert any(str(n).startswith("figures/") for n in names)
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_figures_drawn_on_worker_processes_are_the_same_files(inputs):
    """hamisim run draws its figures on a pool while it writes the tables: the
    folder holds the same bytes as one drawn in this process."""
    result = run(spec(inputs, seed=3))
    a = write_run(result, inputs / "a", "parquet")
    b = write_run(result, inputs / "b", "parquet", figure_workers=2)
    names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert len([n for n in names if str(n).startswith("figures/")]) >= 3
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_summary_records_inputs(inputs):
    res = run(spec(inputs, gpu_policy="binpack", seed=5))
    s = json.loads(json.dumps(res.summary))
    assert s["inputs"]["seed"] == 5 and s["scheduler"]["gpu_scheduler_policy"] == "binpack"
    assert len(s["inputs"]["trace_sha256"]) == 64
    assert s["results"]["pods"] == 60
    table = res.summary_table()
    assert list(table.index) == [0] and table.loc[0, "pods"] == 60


def test_the_run_says_which_engine_ran(inputs, capsys):
    """summary.json, the console and report.html name the engine, and for the
    Python engine what kept the compiled one from running the inputs."""
    fast = run(spec(inputs, seed=1))
    assert fast.summary["inputs"]["engine"] == "compiled"
    assert "engine_reason" not in fast.summary["inputs"]
    slow = run(spec(inputs, seed=1, check=True))        # --check runs on the Python engine
    assert slow.summary["inputs"]["engine"] == "python"
    assert "--check" in slow.summary["inputs"]["engine_reason"]
    # the same run either way
    assert fast.summary["results"] == slow.summary["results"]
    out = inputs / "out"
    assert main(["run", str(inputs / "cluster.yaml"), str(inputs / "trace.csv"), "--check",
                 "--out", str(out)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("engine"))
    assert "python" in line and "--check" in line
    assert json.loads((out / "summary.json").read_text())["inputs"]["engine"] == "python"
    assert "compiled engine does not run --check" in (out / "report.html").read_text()


def test_failed_write_leaves_no_folder(inputs, monkeypatch):
    from hamisim import plots

    def broken(*a, **k):
        raise RuntimeError("disk full")
    monkeypatch.setattr(plots, "draw", broken)
    with pytest.raises(RuntimeError):
        write_run(run(spec(inputs)), inputs / "out", "csv")
    assert not (inputs / "out").exists()
    assert not [p for p in inputs.iterdir() if p.name.startswith(".out")]


def test_a_figure_failing_on_a_worker_leaves_no_folder(inputs, monkeypatch):
    """The worker's error reaches the caller, after the other figures stopped."""
    import os

    import hamisim.studies.runs as study
    from hamisim.plots import FigureJob
    real = study._figures

    def with_a_broken_one(*args, **kwargs):     # os.remove pickles: it runs on a worker
        return real(*args, **kwargs) + [FigureJob("broken.png", 9, os.remove,
                                                  (str(inputs / "no-such-file"),))]
    monkeypatch.setattr(study, "_figures", with_a_broken_one)
    with pytest.raises(FileNotFoundError, match="no-such-file"):
        write_run(run(spec(inputs)), inputs / "out", "csv", figure_workers=2)
    assert not (inputs / "out").exists()
    assert not [p for p in inputs.iterdir() if p.name.startswith(".out")]


class _DiedPool:
    """A figure pool whose worker died while drawing: every figure it was given
    fails with BrokenProcessPool, as concurrent.futures reports it."""

    def submit(self, fn, *args):
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool
        future = Future()
        future.set_exception(BrokenProcessPool("A process in the process pool was "
                                               "terminated abruptly"))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def _dead_pool():
    """A real pool whose only worker has died: its submit raises BrokenProcessPool."""
    import os

    from hamisim.studies.workers import process_pool
    pool = process_pool(1)
    with pytest.raises(Exception):
        pool.submit(os._exit, 1).result()
    return pool


@pytest.mark.parametrize("when", ["while drawing", "before submitting"])
def test_a_figure_worker_that_dies_costs_only_time(inputs, monkeypatch, when):
    """A figure worker killed (out of memory, a signal) does not fail the run: the
    figures not drawn are drawn in this process, the same files."""
    import contextlib

    import hamisim.studies.runs as study
    result = run(spec(inputs, seed=3))
    a = write_run(result, inputs / "a", "parquet")

    @contextlib.contextmanager
    def died(workers, jobs):
        pool = _DiedPool() if when == "while drawing" else _dead_pool()
        try:
            yield pool
        finally:
            pool.shutdown(wait=True)
    monkeypatch.setattr(study, "_figure_pool", died)
    b = write_run(result, inputs / "b", "parquet", figure_workers=2)
    names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert len([n for n in names if str(n).startswith("figures/")]) >= 3
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_rewrite_replaces_previous_results(inputs):
    out = inputs / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    write_run(run(spec(inputs)), out, "csv")
    assert not (out / "stale.txt").exists() and (out / "events.csv").exists()


def test_cli_run_and_plot(inputs, capsys):
    out = inputs / "res"
    assert main(["run", str(inputs / "cluster.yaml"), str(inputs / "trace.csv"), "--as-traced",
                 "--out", str(out), "--format", "csv", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "node=binpack card=spread" in text and str(out) in text
    (out / "figures" / "utilisation.png").unlink()
    assert main(["plot", str(out)]) == 0
    assert (out / "figures" / "utilisation.png").exists()


def test_cli_run_needs_both_inputs(inputs, capsys):
    assert main(["run", str(inputs / "cluster.yaml")]) == 2
    assert "CLUSTER and TRACE" in capsys.readouterr().err


@pytest.mark.slow
def test_run_without_arguments_uses_the_bundled_workload(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--no-progress"]) == 0
    out = tmp_path / "hamisim-out"
    for name in ("events.parquet", "timeseries.parquet", "summary.json",
                 "figures/utilisation.png", "figures/pending.png", "figures/occupancy.png"):
        assert (out / name).exists(), name
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["cluster"]["nodes"], summary["cluster"]["gpus"]) == (1213, 6212)
    # the occupancy figure's blocks: one per GPU model, as many rows as nodes
    runs = summary["cluster"]["group_runs"]
    assert [g for _, g in runs] == ["NVIDIA-P100", "NVIDIA-G3", "NVIDIA-V100M32",
                                    "NVIDIA-V100M16", "NVIDIA-G2", "NVIDIA-T4", "NVIDIA-A10"]
    assert [s for s, _ in runs] == sorted(s for s, _ in runs) and runs[0][0] == 0
    assert "openb_pod_list_default.csv is an openb pod list" in capsys.readouterr().out
    assert summary["results"]["bound"] > 0


@pytest.mark.slow
def test_compare_fill_on_openb_writes_table_and_overlay(tmp_path):
    out = tmp_path / "cmp"
    assert main(["compare", "--mode", "fill", "--fill-to", "60", "--node-policy", "binpack",
                 "--node-policy", "spread", "--gpu-policy", "spread", "--gpu-policy",
                 "mutex,binpack", "--out", str(out), "--format", "csv", "--no-progress"]) == 0
    table = (out / "compare.csv").read_text().splitlines()
    assert len(table) == 1 + 4
    assert (out / "figures" / "compare.png").stat().st_size > 10_000


def test_the_figure_fork_server_preloads_hamisim_only_where_it_finds_this_one(tmp_path,
                                                                              monkeypatch):
    """The fork server's path starts with the working directory: a hamisim/ there
    that is not this one (a checkout) must not be preloaded into the workers."""
    from pathlib import Path

    import hamisim
    from hamisim.studies import workers
    monkeypatch.chdir(tmp_path)
    assert workers._server_imports_this_hamisim()
    (tmp_path / "hamisim").mkdir()
    assert not workers._server_imports_this_hamisim()
    monkeypatch.chdir(Path(hamisim.__file__).parent.parent)
    assert workers._server_imports_this_hamisim()


@pytest.mark.parametrize("running,idle", [(1, 2), (2, 1), (8, 1)])
def test_figure_workers_only_on_idle_cpus(tmp_path, monkeypatch, running, idle):
    """hamisim run draws on worker processes only where CPUs are idle now (the
    kernel's count of running threads, this one included): on busy ones they
    would cost their start and gain nothing."""
    from hamisim.studies import workers
    loadavg = tmp_path / "loadavg"
    loadavg.write_text(f"3.61 4.61 5.10 {running}/134 26781\n")
    monkeypatch.setattr(workers, "_LOADAVG", str(loadavg))
    monkeypatch.setattr(workers, "cpu_count", lambda: 2)
    assert workers.idle_cpus() == idle
    loadavg.write_text("no such fields\n")             # elsewhere: the load average
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (running - 0.5, 0.0, 0.0))
    assert workers.idle_cpus() == idle
