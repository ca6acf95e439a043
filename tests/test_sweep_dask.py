"""`hamisim sweep --dask-scheduler`: the same cells on Dask give the same bytes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from test_sweep import N_CELLS, make_inputs

from hamisim.cli import main
from hamisim.studies.sweep import load_sweep, run_sweep


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    return make_inputs(tmp_path_factory.mktemp("dask-inputs"))


@pytest.fixture(scope="module")
def local_csv(inputs, tmp_path_factory) -> bytes:
    """The results table of the sweep on the local pool, as CSV bytes."""
    out = tmp_path_factory.mktemp("dask-local") / "out"
    run_sweep(load_sweep(inputs), out, workers=2, fmt="csv", progress=False)
    return (out / "results.csv").read_bytes()


def test_in_process_local_cluster_gives_identical_results(inputs, local_csv, tmp_path):
    # two threads in one worker: cells also run side by side in one process
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        outcome = run_sweep(load_sweep(inputs), tmp_path / "out", fmt="csv", progress=False,
                            dask_scheduler=cluster.scheduler_address)
    assert outcome.stats.ran == N_CELLS
    assert (tmp_path / "out" / "results.csv").read_bytes() == local_csv


def _stop(proc: subprocess.Popen) -> None:
    """Stop a process we started in its own session, children included."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    else:  # the leader is gone; its children (a worker's nanny) may not be
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def dask_cluster(tmp_path):
    """A real `dask scheduler` and `dask worker` on 127.0.0.1, as subprocesses."""
    scheduler_file = tmp_path / "scheduler.json"
    procs: list[subprocess.Popen] = []
    log = open(tmp_path / "dask.log", "wb")  # noqa: SIM115 - open for the fixture's life
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(scheduler_file)],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True))
        deadline = time.monotonic() + 60
        address = None
        while address is None:
            assert procs[0].poll() is None, (tmp_path / "dask.log").read_text()
            assert time.monotonic() < deadline, "the Dask scheduler did not start"
            try:
                address = json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):     # not (completely) written yet
                time.sleep(0.1)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", address, "--nworkers", "1",
             "--nthreads", "1", "--no-dashboard", "--local-directory", str(tmp_path / "worker")],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True))
        with distributed.Client(address, timeout="30s") as client:
            client.wait_for_workers(1, timeout=60)
        yield address
    finally:
        for proc in reversed(procs):
            _stop(proc)
        log.close()


def test_real_scheduler_and_worker_give_identical_results(inputs, local_csv, dask_cluster,
                                                          tmp_path, capsys):
    out = tmp_path / "out"
    assert dask_cluster.startswith("tcp://127.0.0.1:")
    status = main(["sweep", str(inputs), "--out", str(out), "--format", "csv",
                   "--dask-scheduler", dask_cluster])
    assert status == 0, capsys.readouterr().err
    assert f"{N_CELLS} cells, {N_CELLS} ok" in capsys.readouterr().out
    assert (out / "results.csv").read_bytes() == local_csv


def test_unreachable_scheduler_is_a_clear_error(inputs, tmp_path, capsys):
    import socket
    with socket.socket() as s:         # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import dask
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        status = main(["sweep", str(inputs), "--out", str(tmp_path / "out"),
                       "--dask-scheduler", f"tcp://127.0.0.1:{port}"])
    assert status == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err


def test_a_lost_dask_worker_is_replaced_and_its_cell_resubmitted(inputs, local_csv, tmp_path):
    import functools

    import dask
    from test_sweep import crash_once

    from hamisim.studies.sweep import CellRunner

    markers = tmp_path / "markers"
    markers.mkdir()
    sweep = load_sweep(inputs)
    victim = sweep.cells[-1].id
    logs: list[str] = []
    # allowed-failures 0: the first death of a worker already gives KilledWorker,
    # so the resubmission is hamisim's (with Dask's default, the scheduler
    # reschedules the task by itself first)
    task = functools.partial(crash_once, str(markers), victim)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            CellRunner(tmp_path / "out", dask_scheduler=cluster.scheduler_address, fmt="csv",
                       task=task, log=logs.append) as runner:
        stats = runner.run(sweep.cells)
    assert [p.name for p in markers.iterdir()] == [victim]
    assert stats.failed == 0 and stats.ran == N_CELLS
    # Dask also fails the tasks waiting on the dead worker: they are resubmitted too
    assert stats.retried >= 1
    assert any("KilledWorker" in m for m in logs)
    from hamisim.studies.sweep import results_table, write_results
    write_results(results_table(stats.rows.values()), tmp_path / "out", "results", "csv")
    assert (tmp_path / "out" / "results.csv").read_bytes() == local_csv
