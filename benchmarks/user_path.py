"""The user's path at scale: files in, `hamisim run` as a separate process, every output written.

Generates a JSON cluster file (NODES nodes of 8 H100s on two NUMA nodes, written
out node by node as `hamisim import` writes them) and a trace of PODS pods, CSV
or Parquet (Poisson arrivals at 80 % offered load, mixed shares, memory-only
shares, whole and multi-card pods, 10 % mutex and 10 % mutex,binpack,numa), then
times

    hamisim run cluster.json trace.csv --out DIR      (replayed as traced)

in a separate process, REPEAT times, and prints each run's wall time, the
child's peak RSS and the split the CLI reports (read cluster, read trace,
prepare, simulate - scheduler decisions and the engine's own work - and write),
then the median wall time and the largest peak RSS. The files are made once
per size in WORKDIR (reused by later calls with the same WORKDIR).

With ``--metrics-interval S`` each run also writes ``--metrics-out`` (OpenMetrics,
a sample every S simulated seconds) and the file's size and sample count are printed.

    python benchmarks/user_path.py [--pods 1000000] [--nodes 12500] [--repeat 3]
                                   [--trace-format csv|parquet] [--metrics-interval S]
                                   [--workdir DIR] [--keep]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hamisim.io.synthetic import synthetic_trace


def write_cluster(path: Path, n_nodes: int, cpu_milli: int = 192000,
                  quotas: dict | None = None) -> None:
    """``n_nodes`` nodes of 8 H100s (two NUMA nodes), as `hamisim import` writes them;
    ``quotas``: the file's ``quotas:`` block, if any."""
    width = len(str(n_nodes - 1))
    nodes = []
    for i in range(n_nodes):
        name = f"h100-{i:0{width}d}"
        nodes.append({"name": name, "cpu_milli": cpu_milli, "memory_mib": 2097152, "devices": [
            {"id": f"GPU-{name}-{k}", "index": k, "count": 10, "devmem": 81920,
             "devcore": 100, "type": "NVIDIA-H100", "numa": k // 4} for k in range(8)]})
    doc: dict = {"scheduler": {"gpu_scheduler_policy": "spread",
                               "node_scheduler_policy": "binpack"}}
    if quotas:
        doc["quotas"] = quotas
    doc["nodes"] = nodes
    path.write_text(json.dumps(doc, indent=1) + "\n")


def write_trace(path: Path, n_pods: int, gpus: int) -> None:
    """A CSV trace (a Parquet one is the same table re-written, :func:`to_parquet`)."""
    columns = ["name", "arrival", "duration", "gpu", "gpumem", "gpumem_percentage", "gpucores",
               "cpu_milli", "memory_mib", "gpu_policy"]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for tp in synthetic_trace(n_pods, gpus, 0.8, seed=1):
            c = tp.pod.containers[0].limits
            w.writerow([tp.name, f"{tp.arrival:.3f}", f"{tp.duration:.3f}",
                        c.get("nvidia.com/gpu", ""), c.get("nvidia.com/gpumem", ""),
                        c.get("nvidia.com/gpumem-percentage", ""),
                        c.get("nvidia.com/gpucores", ""), tp.pod.cpu_milli, tp.pod.memory_mib,
                        tp.pod.annotations.get("hami.io/gpu-scheduler-policy", "")])


def to_parquet(csv_path: Path, path: Path) -> None:
    import pandas as pd
    pd.read_csv(csv_path, dtype={"gpu_policy": str}).to_parquet(path, index=False)


#: ``python -c`` source of the CLI on the readable (Python) engine: the CLI has no engine
#: option (it runs the compiled twin wherever it applies), so this launcher makes the
#: compiled engine decline every run, as it declines what it does not cover
PYTHON_ENGINE = ("import sys; from hamisim.sim import compiled; "
                 "compiled.unsupported = lambda *args: 'this benchmark run (Python engine)'; "
                 "from hamisim.cli import main; sys.exit(main(sys.argv[1:]))")


def time_cli(argv: list[str], cwd: Path, env: dict | None = None,
             python_engine: bool = False) -> tuple[float, float, str]:
    """``python -m hamisim.cli ARGV`` as a separate process in ``cwd``: (wall s, the
    child's own peak RSS in MiB, its stdout); exits with its stderr when it fails.
    ``python_engine``: the same CLI on the readable engine (:data:`PYTHON_ENGINE`)."""
    cli = ["-c", PYTHON_ENGINE] if python_engine else ["-m", "hamisim.cli"]
    with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *cli, *argv], cwd=cwd,
                                stdout=so, stderr=se, text=True, env=env)
        # wait4 gives this child's own peak RSS (getrusage's children figure is
        # the largest child so far)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read(), se.read()
    if code != 0:
        sys.exit(f"hamisim {' '.join(argv)} failed ({code}):\n{stderr}")
    return wall, usage.ru_maxrss / 1024, stdout


def console_line(stdout: str, start: str) -> str:
    """The first line of the CLI's output that starts with ``start`` (stripped)."""
    return next((ln.strip() for ln in stdout.splitlines() if ln.strip().startswith(start)), "")


def run_once(workdir: Path, trace: str, out: Path,
             metrics_interval: float | None = None) -> tuple[float, float, str]:
    """(wall s, peak RSS MiB of the child, its stdout)."""
    metrics = [] if metrics_interval is None else [
        "--metrics-out", str(out) + ".om", "--metrics-start", "2026-11-30T00:00:00Z",
        "--metrics-interval", str(metrics_interval)]
    return time_cli(["run", "cluster.json", trace, "--out", str(out), "--no-progress", *metrics],
                    workdir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=1_000_000)
    ap.add_argument("--nodes", type=int, default=12_500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trace-format", choices=("csv", "parquet"), default="csv")
    ap.add_argument("--metrics-interval", type=float, metavar="S",
                    help="also write --metrics-out, a sample every S simulated seconds")
    ap.add_argument("--workdir", type=Path, help="where the files go (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the files and the results")
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hamisim-user-path-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cluster, trace = workdir / "cluster.json", workdir / "trace.csv"
    marker = workdir / f".made-{args.nodes}-{args.pods}"
    if not marker.exists():
        t0 = time.perf_counter()
        write_cluster(cluster, args.nodes)
        write_trace(trace, args.pods, 8 * args.nodes)
        (workdir / "trace.parquet").unlink(missing_ok=True)
        marker.write_text("")
        print(f"wrote {cluster} ({cluster.stat().st_size / 2**20:,.1f} MiB) and {trace} "
              f"({trace.stat().st_size / 2**20:,.1f} MiB) in {time.perf_counter() - t0:.0f} s")
    if args.trace_format == "parquet":
        trace = workdir / "trace.parquet"
        if not trace.exists():
            to_parquet(workdir / "trace.csv", trace)
    print(f"hamisim run cluster.json {trace.name}: {args.pods:,} pods on {args.nodes:,} nodes "
          f"x 8 = {8 * args.nodes:,} GPUs; {platform.machine()}, Python "
          f"{platform.python_version()}, {os.cpu_count()} CPUs")
    walls, rsss, splits = [], [], []
    for k in range(args.repeat):
        out = workdir / f"results-{k}"
        wall, rss, stdout = run_once(workdir, trace.name, out, args.metrics_interval)
        walls.append(wall)
        rsss.append(rss)
        line = next((ln for ln in stdout.splitlines() if ln.strip().startswith("time ")), "")
        splits.append(line.strip())
        print(f"  run {k + 1}: {wall:.1f} s, peak RSS {rss:,.0f} MiB; {line.strip()}")
        metrics = next((ln for ln in stdout.splitlines() if ln.startswith("metrics written")),
                       None)
        if metrics:
            print(f"    {metrics}")
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
            Path(str(out) + ".om").unlink(missing_ok=True)
    print(f"median wall {statistics.median(walls):.1f} s, peak RSS {max(rsss):,.0f} MiB")
    costs = [float(m.group(1)) for m in (re.search(r"(\d+(?:\.\d+)?) µs per pod", x)
                                         for x in splits) if m]
    if costs:
        print(f"engine's own cost: median {statistics.median(costs):.1f} µs per pod beyond "
              f"the scheduler's decisions")
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
