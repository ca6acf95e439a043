"""Ctrl-C and SIGTERM during ``run`` and ``compare``: exit 130 (143 for SIGTERM),
one message, nothing half-written, no worker left behind.

Real processes get a real SIGINT or SIGTERM once they are visibly simulating
(their progress bar has started, their temporary folder exists); an in-process
test interrupts the writing of the results itself, where the temporary folder
already holds files.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hamisim.cli import main
from hamisim.io import outputs
from hamisim.studies import runs as study

MESSAGE = "hamisim: interrupted: no results written"
#: what each signal makes the CLI say, and its exit status
SIGNALS = {signal.SIGINT: (130, MESSAGE),
           signal.SIGTERM: (143, "hamisim: terminated: no results written")}
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _default_sigint() -> None:
    # A child of a shell that ignores SIGINT (a background job) would inherit
    # the ignore; the CLI itself must see Ctrl-C as a user at a terminal does.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture(autouse=True)
def python_sigint_handler():
    """Python's own Ctrl-C handler in this process for the test's length: the
    in-process tests send SIGINT to themselves and expect a KeyboardInterrupt,
    which a suite started with SIGINT ignored (from a background shell, where
    every child inherits the ignore) would never see."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def start(args: list[str], cwd: Path, preexec=_default_sigint) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hamisim.cli", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=preexec)


def wait_for(proc: subprocess.Popen, text: bytes, times: int = 1, timeout: float = 120) -> bytes:
    """Read the child's stderr until ``text`` has appeared ``times`` times."""
    seen = b""
    deadline = time.monotonic() + timeout
    while seen.count(text) < times:
        left = deadline - time.monotonic()
        assert left > 0, f"the run never got going: {seen[-500:]!r}"
        ready, _, _ = select.select([proc.stderr], [], [], left)
        chunk = os.read(proc.stderr.fileno(), 65536) if ready else b""
        assert chunk or proc.poll() is None, f"the run ended early: {seen[-2000:]!r}"
        seen += chunk
    return seen


def interrupt(proc: subprocess.Popen, seen: bytes,
              sig: int = signal.SIGINT) -> tuple[int, str]:
    proc.send_signal(sig)
    _, rest = proc.communicate(timeout=120)
    return proc.returncode, (seen + rest).decode("utf-8", "replace")


def assert_clean_interrupt(status: int, err: str, sig: int = signal.SIGINT) -> None:
    code, message = SIGNALS[sig]
    assert status == code, err[-2000:]
    lines = [line.strip("\r ") for line in err.replace("\r", "\n").splitlines()]
    assert [line for line in lines if line.startswith("hamisim:")] == [message]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def wait_for_path(folder: Path, pattern: str, proc: subprocess.Popen,
                  timeout: float = 120) -> Path:
    """Poll until a path matching ``pattern`` exists below ``folder``."""
    deadline = time.monotonic() + timeout
    while True:
        found = sorted(folder.glob(pattern))
        if found:
            return found[0]
        assert proc.poll() is None, "the run ended before it was interrupted"
        assert time.monotonic() < deadline, f"{pattern} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", list(SIGNALS), ids=["SIGINT", "SIGTERM"])
def test_interrupt_while_run_simulates(tmp_path, sig):
    """The bundled replay: nothing is written, and no hidden temporary folder stays
    (SIGTERM, as ``timeout`` or a batch system sends it, unwinds as Ctrl-C does)."""
    proc = start(["run", "--progress", "--out", "results"], tmp_path)
    seen = wait_for(proc, b"simulating")
    wait_for_path(tmp_path, ".results.partial-*", proc)  # the half-written folder is there
    time.sleep(0.3)                                     # well inside the event loop
    status, err = interrupt(proc, seen, sig)
    assert_clean_interrupt(status, err, sig)
    assert list(tmp_path.iterdir()) == []


def test_a_run_started_with_sigint_ignored_keeps_ignoring_it(tmp_path):
    """POSIX's convention for background jobs (``nohup hamisim run ... &``, a
    shell's ``&`` without job control): a CLI that inherits SIGINT ignored keeps
    ignoring it, so a Ctrl-C meant for the terminal's foreground job does not end
    the run; it finishes and writes its results."""
    proc = start(["run", "--progress", "--out", "results"], tmp_path, preexec=_ignore_sigint)
    seen = wait_for(proc, b"simulating")
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=300)
    err = (seen + rest).decode("utf-8", "replace")
    assert proc.returncode == 0, err[-2000:]
    assert "interrupted" not in err
    assert (tmp_path / "results" / "summary.json").is_file()


def test_sigterm_stops_a_run_started_with_sigint_ignored(tmp_path):
    """What README tells a user whose background run ignores Ctrl-C: SIGTERM (``kill``,
    ``timeout``) still unwinds it cleanly, nothing written."""
    proc = start(["run", "--progress", "--out", "results"], tmp_path, preexec=_ignore_sigint)
    seen = wait_for(proc, b"simulating")
    wait_for_path(tmp_path, ".results.partial-*", proc)
    time.sleep(0.3)
    status, err = interrupt(proc, seen, signal.SIGTERM)
    assert_clean_interrupt(status, err, signal.SIGTERM)
    assert list(tmp_path.iterdir()) == []


def group_gone(pgid: int, timeout: float = 30) -> bool:
    """Whether every process of group ``pgid`` has ended within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


COMPARE_ON_WORKERS = ["compare", "--mode", "fill", "--fill-to", "60", "--node-policy", "bestfit",
                      "--node-policy", "fgd", "--node-policy", "gpupacking", "--workers", "2",
                      "--format", "csv", "--out", "cmp"]


@pytest.mark.slow
@pytest.mark.parametrize("whole_group", [False, True], ids=["timeout", "batch-system"])
def test_sigterm_during_compare_on_workers(tmp_path, whole_group):
    """compare on two worker processes, its runs filed into the temporary folder
    as they finish: SIGTERM to the CLI alone (``timeout``) or to its whole process
    group (a batch system) ends it with 143, no folder at all, and no worker or
    fork server left running. The CLI stops its workers itself instead of letting
    them run the remaining simulations first."""
    proc = subprocess.Popen([sys.executable, "-m", "hamisim.cli", *COMPARE_ON_WORKERS],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_default_sigint, start_new_session=True)
    wait_for_path(tmp_path, ".cmp.partial-*/runs", proc)
    time.sleep(1.0)                                     # the workers are simulating
    started = time.monotonic()
    if whole_group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    took = time.monotonic() - started
    assert_clean_interrupt(proc.returncode, err.decode("utf-8", "replace"), signal.SIGTERM)
    assert list(tmp_path.iterdir()) == []
    assert group_gone(proc.pid), "a worker or the fork server outlived the CLI"
    # stopped at once: well under a second here; letting the workers finish their
    # runs first takes over ten
    assert took < 5, f"{took:.1f} s: the workers were not stopped at once"


def test_ctrl_c_during_compare_keeps_the_earlier_results(tmp_path):
    """compare builds its folder while it runs: after Ctrl-C in its second run the
    temporary folder (holding the first run's tables) is gone and the previous
    results folder of the same name is untouched."""
    earlier = tmp_path / "cmp"
    earlier.mkdir()
    (earlier / "compare.csv").write_text("policy,seed\nearlier,0\n")
    # each fill of the bundled openb trace lasts long enough (its simulation
    # about 0.7 s on the compiled engine, then its writing) for its bar to show
    proc = start(["compare", "--mode", "fill", "--fill-to", "60", "--node-policy", "bestfit",
                  "--node-policy", "fgd", "--node-policy", "gpupacking", "--progress",
                  "--format", "csv", "--out", "cmp"], tmp_path)
    seen = wait_for(proc, b"simulating", times=2)       # the first run is already filed
    status, err = interrupt(proc, seen)
    assert_clean_interrupt(status, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp"]
    assert [p.name for p in earlier.iterdir()] == ["compare.csv"]
    assert (earlier / "compare.csv").read_text() == "policy,seed\nearlier,0\n"


CLUSTER = """\
nodes:
  - name: n1
    devices:
      - {id: GPU-A, devmem: 16000, type: NVIDIA}
"""
TRACE = "name,arrival,duration,gpu,gpumem\na,0,2,1,9000\nb,1,2,1,9000\n"


@pytest.mark.parametrize("sig", list(SIGNALS), ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", ["run", "compare"])
def test_interrupt_while_the_results_are_written(tmp_path, monkeypatch, capsys, command, sig):
    """Interrupted half-way through writing (Ctrl-C, or SIGTERM as the CLI turns it
    into an interrupt): the half-written folder is removed and the previous one of
    the same name stays as it was."""
    cpath, tpath = tmp_path / "c.yaml", tmp_path / "t.csv"
    cpath.write_text(CLUSTER)
    tpath.write_text(TRACE)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("{}\n")
    written = []
    original = outputs.write_table

    def write_then_interrupt(df, folder, name, fmt):
        written.append(original(df, folder, name, fmt))
        os.kill(os.getpid(), sig)
        time.sleep(5)                   # the CLI's handler raises before this ends
    monkeypatch.setattr(study, "write_table", write_then_interrupt)

    status = main([command, str(cpath), str(tpath), "--as-traced", "--format", "csv",
                   "--out", str(out)])
    code, message = SIGNALS[sig]
    assert status == code and capsys.readouterr().err == message + "\n"
    assert written and not written[0].exists()         # a file was written, then removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "out", "t.csv"]
    assert [p.name for p in out.iterdir()] == ["summary.json"]


@pytest.mark.parametrize("sig", list(SIGNALS), ids=["SIGINT", "SIGTERM"])
def test_interrupt_during_the_swap_comes_after_it(tmp_path, monkeypatch, sig):
    """The final swap cannot be interrupted half-way: a SIGINT or SIGTERM (as the
    CLI turns it into an interrupt) sent while it runs neither leaves the target
    missing nor is lost: it is raised once the new folder is in place, and says
    that folder is complete."""
    target = tmp_path / "out"
    target.mkdir()
    (target / "old.txt").write_text("old")
    original = os.replace

    def replace_with_a_signal(src, dst):
        os.kill(os.getpid(), sig)                       # the signal right inside the swap
        original(src, dst)
    monkeypatch.setattr(outputs.os, "replace", replace_with_a_signal)
    with pytest.raises(KeyboardInterrupt) as caught:
        with outputs.sigterm_as_interrupt(), outputs.atomic_folder(target) as tmp:
            (tmp / "new.txt").write_text("new")
    monkeypatch.undo()
    assert caught.value.results_written == target
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [p.name for p in target.iterdir()] == ["new.txt"]


def _inputs(tmp_path: Path) -> list[str]:
    cpath, tpath = tmp_path / "c.yaml", tmp_path / "t.csv"
    cpath.write_text(CLUSTER)
    tpath.write_text(TRACE)
    return [str(cpath), str(tpath), "--as-traced", "--format", "csv", "--no-progress"]


def _done(sig: int, tail: str) -> str:
    return SIGNALS[sig][1].replace("no results written", tail) + "\n"


@pytest.mark.parametrize("metrics", [False, True], ids=["", "metrics-out"])
@pytest.mark.parametrize("sig", list(SIGNALS), ids=["SIGINT", "SIGTERM"])
def test_run_interrupted_during_the_swap_says_its_results_were_written(tmp_path, monkeypatch,
                                                                      capsys, sig, metrics):
    out, om = tmp_path / "out", tmp_path / "m.om"
    original = outputs._swap_in

    def swap_with_a_signal(tmp, target):
        os.kill(os.getpid(), sig)
        original(tmp, target)
    monkeypatch.setattr(outputs, "_swap_in", swap_with_a_signal)
    status = main(["run", *_inputs(tmp_path), "--out", str(out)]
                  + (["--metrics-out", str(om)] if metrics else []))
    assert status == SIGNALS[sig][0]
    tail = f"; the metrics file {om} was not written" if metrics else ""
    assert capsys.readouterr().err == _done(sig, f"results written to {out}/{tail}")
    assert not om.exists()
    assert {"summary.json", "report.html", "pods.csv"} <= {p.name for p in out.iterdir()}


@pytest.mark.parametrize("sig", list(SIGNALS), ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("phase", ["metrics file", "summary"])
def test_run_interrupted_while_its_metrics_are_written(tmp_path, monkeypatch, capsys, sig,
                                                       phase):
    """The results folder is complete before --metrics-out's file is written: an
    interrupt then says so, and what is missing: the metrics file (written whole
    or not at all), or, once it is written, its start in summary.json."""
    from hamisim.studies import openmetrics
    out, metrics = tmp_path / "out", tmp_path / "m.om"

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), sig)
        time.sleep(5)                   # the CLI's handler raises before this ends
    if phase == "metrics file":
        monkeypatch.setattr(openmetrics, "write_run_metrics", interrupted)
        tail = f"the metrics file {metrics} was not written"
    else:
        monkeypatch.setattr(outputs, "write_json", interrupted)     # the summary's rewrite
        tail = f"summary.json does not record the start of {metrics}"
    status = main(["run", *_inputs(tmp_path), "--out", str(out), "--metrics-out", str(metrics),
                   "--metrics-start", "2026-11-30T00:00:00Z"])
    assert status == SIGNALS[sig][0]
    assert capsys.readouterr().err == _done(sig, f"results written to {out}/; {tail}")
    assert {"summary.json", "report.html", "pods.csv"} <= {p.name for p in out.iterdir()}
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert "metrics" not in json.loads((out / "summary.json").read_text())
    kept = ["c.yaml", "out", "t.csv"] if phase == "metrics file" else \
        ["c.yaml", "m.om", "out", "t.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == kept


def test_sigterm_is_an_interrupt_only_inside_the_block():
    """sigterm_as_interrupt raises Terminated (a KeyboardInterrupt, so every Ctrl-C
    cleanup runs for it) and gives SIGTERM its previous handler back."""
    from hamisim.errors import Terminated
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as caught:
        with outputs.sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)                               # the handler raises before this ends
    assert isinstance(caught.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_stopped_pool_leaves_no_manager_thread_for_exit_to_race():
    """stop_pool returns only when the pool's manager thread is gone: on Python 3.11
    a manager thread still closing its wake-up pipe at interpreter exit made the
    exit handler print "Bad file descriptor" after an interrupted compare."""
    from hamisim.studies.workers import process_pool, stop_pool
    pool = process_pool(2)
    running = [pool.submit(time.sleep, 30) for _ in range(2)]
    queued = [pool.submit(time.sleep, 30) for _ in range(3)]
    deadline = time.monotonic() + 60
    while not any(f.running() for f in running):
        assert time.monotonic() < deadline, "the pool never started a task"
        time.sleep(0.01)
    manager = pool._executor_manager_thread
    assert manager is not None and manager.is_alive()
    stop_pool(pool)
    assert not manager.is_alive()
    assert all(f.cancelled() for f in queued[1:])


def test_ctrl_c_while_the_figure_fork_server_loads(tmp_path):
    """hamisim run starts the figure workers' fork server first thing, and it loads
    matplotlib for a second or more: Ctrl-C to the whole process group then (as a
    terminal sends it) leaves the caller to handle it, with no traceback from the
    server's imports."""
    script = ("import sys, time\n"
              "from hamisim.studies.workers import FIGURE_MODULES, start_fork_server\n"
              "start_fork_server(FIGURE_MODULES)\n"
              "print('started', file=sys.stderr, flush=True)\n"
              "try:\n    time.sleep(60)\n"
              "except KeyboardInterrupt:\n    print('interrupted', file=sys.stderr)\n"
              "    sys.exit(130)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_default_sigint, start_new_session=True)
    seen = wait_for(proc, b"started")
    time.sleep(0.3)                     # past the server's Python start, inside its imports
    os.killpg(proc.pid, signal.SIGINT)                  # the whole group, server included
    _, rest = proc.communicate(timeout=120)
    err = (seen + rest).decode("utf-8", "replace")
    assert proc.returncode == 130 and "interrupted" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-2000:]


def test_a_console_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    # `hamisim run ... | head -1`: the pipe closes after the first line; the run
    # ends with 128 + SIGPIPE and says nothing more (no traceback, no "Broken pipe")
    proc = start(["run", "--pods", "300", "--no-progress", "--out", "r"], tmp_path)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert b"Traceback" not in err and b"Broken pipe" not in err, err
