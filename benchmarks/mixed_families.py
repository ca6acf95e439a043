"""Decisions on a cluster of several device families against an NVIDIA-only one.

Writes two clusters of the same size (``--nodes`` nodes of 8 cards, 16 GiB
each): NVIDIA only, and half NVIDIA, half Hygon DCU (``type: DCU``); and two
traces of the same pods (``--pods``, one card each, 2-8 GiB and 20-50 % cores,
a daily arrival pattern, two hours' lifetime): on the mixed cluster every
other pod asks a DCU with Hygon's resource names instead. Runs ``hamisim run``
as a separate process on each, as a user runs it (files in, every output
written), REPEAT times, and prints per run the wall time, peak RSS,
attempts, the console's simulate and decision times, and the simulated time
per pod; then the mixed/NVIDIA ratio of the medians (issue 37's target: at
most 1.5x).

    python benchmarks/mixed_families.py [--nodes 1000] [--pods 100000] [--repeat 1]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIMULATE = re.compile(r"simulate (\d+(?:\.\d+)?) s \(scheduler decisions (\d+(?:\.\d+)?) s")


def cluster(nodes: int, mixed: bool) -> str:
    half = nodes // 2 if mixed else nodes
    text = ("nodes:\n  - name_prefix: gpu\n    replicas: %d\n    gpus: 8\n"
            "    card: {type: NVIDIA-Tesla T4, devmem: 16384}\n" % half)
    if mixed:
        text += ("  - name_prefix: dcu\n    replicas: %d\n    gpus: 8\n"
                 "    card: {type: DCU, devmem: 16384}\n" % (nodes - half))
    return text


def trace(pods: int, mixed: bool, seed: int = 7) -> str:
    """Pods over a day-shaped arrival curve: the same shapes on both clusters."""
    rng = random.Random(seed)
    span = 86400.0
    rows, t = [], 0.0
    mean_gap = span / pods
    for i in range(pods):
        # twice as many arrivals at the day's peak as at its trough
        hour = (t % 86400) / 3600
        t += rng.expovariate(1 / mean_gap) / (1 + 0.5 * math.sin(math.pi * (hour - 6) / 12))
        mem, cores = rng.choice([2048, 4096, 4096, 8192]), rng.choice([20, 25, 50])
        if mixed and i % 2:
            c = {"limits": {"hygon.com/dcunum": 1, "hygon.com/dcumem": mem,
                            "hygon.com/dcucores": cores}}
        else:
            c = {"gpu": 1, "gpumem": mem, "gpucores": cores}
        rows.append(json.dumps({"name": f"p{i}", "arrival": round(t, 3), "duration": 7200,
                                "containers": [c]}))
    return "\n".join(rows) + "\n"


def run(cluster_file: Path, trace_file: Path, out: Path) -> dict:
    argv = [sys.executable, "-m", "hamisim.cli", "run", str(cluster_file), str(trace_file),
            "--out", str(out), "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"hamisim run {cluster_file.name} failed:\n{text}")
    simulate, decisions = (float(x) for x in SIMULATE.findall(text)[-1])
    summary = json.loads((out / "summary.json").read_text())
    return {"wall": wall, "rss": usage.ru_maxrss / 1024, "simulate": simulate,
            "decisions": decisions, "attempts": int(summary["results"]["attempts"]),
            "engine": "compiled" if "compiled (hamisim._replay)" in text else "python"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.2f}; {args.nodes} nodes x 8 cards, {args.pods:,} pods")
    medians = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name, mixed in (("NVIDIA only", False), ("NVIDIA + DCU", True)):
            (d / f"{mixed}.yaml").write_text(cluster(args.nodes, mixed))
            (d / f"{mixed}.jsonl").write_text(trace(args.pods, mixed))
        walls: dict[str, list[float]] = {"NVIDIA only": [], "NVIDIA + DCU": []}
        for r in range(args.repeat):
            # alternate the two, so the machine's drift spreads over both
            for name, mixed in (("NVIDIA only", False), ("NVIDIA + DCU", True)):
                m = run(d / f"{mixed}.yaml", d / f"{mixed}.jsonl", d / f"out-{mixed}-{r}")
                walls[name].append(m["wall"])
                print(f"{name:13s} run {r + 1}: wall {m['wall']:.1f} s, simulate "
                      f"{m['simulate']:.2f} s ({m['simulate'] / args.pods * 1e6:.1f} µs per pod; "
                      f"decisions {m['decisions']:.2f} s), {m['attempts']:,} attempts, "
                      f"peak RSS {m['rss']:.0f} MiB, {m['engine']} engine")
        for name, w in walls.items():
            medians[name] = statistics.median(w)
    ratio = medians["NVIDIA + DCU"] / medians["NVIDIA only"]
    print(f"median wall: NVIDIA only {medians['NVIDIA only']:.1f} s, NVIDIA + DCU "
          f"{medians['NVIDIA + DCU']:.1f} s: {ratio:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
