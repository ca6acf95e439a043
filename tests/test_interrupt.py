"""Ctrl-C during ``run`` and ``compare``: exit 130, one message, nothing half-written.

Real processes get a real SIGINT once they are visibly simulating (their
progress bar has started); an in-process test interrupts the writing of the
results itself, where the temporary folder already holds files.
"""
from __future__ import annotations

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
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _default_sigint() -> None:
    # A child of a shell that ignores SIGINT (a background job) would inherit
    # the ignore; the CLI itself must see Ctrl-C as a user at a terminal does.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hamisim.cli", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_default_sigint)


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


def interrupt(proc: subprocess.Popen, seen: bytes) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    return proc.returncode, (seen + rest).decode("utf-8", "replace")


def assert_clean_interrupt(status: int, err: str) -> None:
    assert status == 130, err[-2000:]
    lines = [line.strip("\r ") for line in err.replace("\r", "\n").splitlines()]
    assert [line for line in lines if line.startswith("hamisim:")] == [MESSAGE]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_ctrl_c_while_run_simulates(tmp_path):
    """The bundled replay: nothing is written, and no hidden temporary folder stays."""
    proc = start(["run", "--progress", "--out", "results"], tmp_path)
    seen = wait_for(proc, b"simulating")
    time.sleep(0.3)                                     # well inside the event loop
    status, err = interrupt(proc, seen)
    assert_clean_interrupt(status, err)
    assert list(tmp_path.iterdir()) == []


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


@pytest.mark.parametrize("command", ["run", "compare"])
def test_ctrl_c_while_the_results_are_written(tmp_path, monkeypatch, capsys, command):
    """Interrupted half-way through writing: the half-written folder is removed
    and the previous one of the same name stays as it was."""
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
        raise KeyboardInterrupt
    monkeypatch.setattr(study, "write_table", write_then_interrupt)

    status = main([command, str(cpath), str(tpath), "--as-traced", "--format", "csv",
                   "--out", str(out)])
    assert status == 130 and capsys.readouterr().err == MESSAGE + "\n"
    assert written and not written[0].exists()         # a file was written, then removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "out", "t.csv"]
    assert [p.name for p in out.iterdir()] == ["summary.json"]


def test_ctrl_c_during_the_swap_is_ignored(tmp_path, monkeypatch):
    """The final swap cannot be interrupted half-way: a SIGINT sent while it runs
    neither leaves the target missing nor raises."""
    target = tmp_path / "out"
    target.mkdir()
    (target / "old.txt").write_text("old")
    original = os.replace

    def replace_with_a_signal(src, dst):
        os.kill(os.getpid(), signal.SIGINT)             # Ctrl-C right inside the swap
        original(src, dst)
    monkeypatch.setattr(outputs.os, "replace", replace_with_a_signal)
    with outputs.atomic_folder(target) as tmp:
        (tmp / "new.txt").write_text("new")
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [p.name for p in target.iterdir()] == ["new.txt"]


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
