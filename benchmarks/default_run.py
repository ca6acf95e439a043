"""The README's commands on the bundled workload, as a user runs them: wall time and CPU.

Times, as separate processes with every output written (tables, summary.json,
figures, report.html),

    hamisim run                                   (the README's first command: 40,000
                                                   pods re-timed to 80 % load)
    hamisim run --mode fill --fill-to 130         (the FGD paper's fill protocol)

REPEAT times each, and prints per run the wall time until the command returns,
the CPU time (user + system) of the command and every process it started (the
figure workers and their fork server included: this script adopts them as a
child subreaper and waits for them), the command's own peak RSS and the largest
helper's, and the split the command prints (read, simulate, write); then the
medians. Linux only (``prctl``, ``wait4``).

    python benchmarks/default_run.py [--repeat 3] [--only run|fill] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {"run": [], "fill": ["--mode", "fill", "--fill-to", "130"]}
PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Become the child subreaper: processes our command leaves behind (the fork
    server, which outlives it by a moment) are re-parented here, so their CPU time
    is ours to collect."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}")


def run_once(args: list[str], out: Path) -> dict:
    with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "hamisim.cli", "run", *args,
                                 "--out", str(out), "--no-progress"],
                                stdout=so, stderr=se, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu, helpers, helper_rss = usage.ru_utime + usage.ru_stime, 0.0, 0.0
        while True:                     # the helpers it left: the fork server (and
            try:                        # its workers, which it waited for)
                _, _, rest = os.wait4(-1, 0)
            except ChildProcessError:
                break
            helpers += rest.ru_utime + rest.ru_stime
            helper_rss = max(helper_rss, rest.ru_maxrss / 1024)
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read(), se.read()
    if proc.returncode != 0:
        sys.exit(f"hamisim run failed ({proc.returncode}):\n{stderr}")
    split = next((ln.strip() for ln in stdout.splitlines() if ln.strip().startswith("time ")),
                 "")
    return {"wall": wall, "cpu": cpu + helpers, "cpu_main": cpu, "rss": usage.ru_maxrss / 1024,
            "helper_rss": helper_rss, "split": split, "stdout": stdout}


def machine_line() -> str:
    """The machine and its load when the figures were taken (a script's first line)."""
    return (f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=sorted(COMMANDS), action="append")
    ap.add_argument("--workdir", type=Path, help="where the results go (default: a temp dir)")
    args = ap.parse_args()
    adopt_orphans()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hamisim-default-run-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(machine_line())
    for name in args.only or list(COMMANDS):
        runs = []
        for k in range(args.repeat):
            r = run_once(COMMANDS[name], workdir / f"{name}-{k}")
            runs.append(r)
            print(f"  {name} run {k + 1}: wall {r['wall']:.2f} s, CPU {r['cpu']:.2f} s "
                  f"(the command itself {r['cpu_main']:.2f} s), "
                  f"peak RSS {r['rss']:,.0f} MiB (largest helper {r['helper_rss']:,.0f} MiB); "
                  f"{r['split']}")
            shutil.rmtree(workdir / f"{name}-{k}", ignore_errors=True)
        print(f"hamisim run {' '.join(COMMANDS[name])}".rstrip()
              + f": median wall {statistics.median(r['wall'] for r in runs):.2f} s, "
              f"median CPU {statistics.median(r['cpu'] for r in runs):.2f} s, "
              f"peak RSS {max(r['rss'] for r in runs):,.0f} MiB")
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
