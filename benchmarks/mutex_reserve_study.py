"""The mutex-reserve what-if against HAMi's mutex, on the bundled workload, as a user runs it.

Runs ``hamisim run workloads/mutex-reserve/cluster.yaml trace-P.csv`` for
P = mutex (HAMi v2.10) and mutex-reserve (the what-if, HAMi issue #3038), each
as a separate process with every output written, then prints per policy: the
wall time and peak RSS, the mean share of GPUs with a tenant, the pending time
(p50 / p99) of the exclusive and the shared pods, and how many exclusive pods
had another tenant on their card at some time, with the card-hours so shared.

    python benchmarks/mutex_reserve_study.py [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "mutex-reserve"
POLICIES = ("mutex", "mutex-reserve")


def run(policy: str, out: Path) -> tuple[float, float]:
    """(wall s, peak RSS MiB) of one ``hamisim run``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "hamisim.cli", "run",
                             str(WORKLOAD / "cluster.yaml"), str(WORKLOAD / f"trace-{policy}.csv"),
                             "--out", str(out), "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"hamisim run failed:\n{proc.stderr.read()}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024


def sharing(folder: Path) -> tuple[int, float]:
    """Exclusive pods that had another tenant on their card at some time, and the
    card-hours an exclusive pod shared its card."""
    pods = pd.read_parquet(folder / "pods.parquet")
    pods = pods[pods["bind"].notna()].copy()
    pods["card"] = pods["devices"].str.split(",").str[0]
    pods["end"] = pods["departure"].fillna(pods["departure"].max())
    both = pods.merge(pods, on="card", suffixes=("", "_o"))
    both = both[(both["pod"] != both["pod_o"]) & both["pod"].str.startswith("exclusive")]
    start = np.maximum(both["bind"], both["bind_o"])
    end = np.minimum(both["end"], both["end_o"])
    both = both[end > start]
    # a shared interval per (exclusive pod, other pod); overlaps between several
    # others are counted once by merging them per exclusive pod
    seconds = 0.0
    for _, g in both.assign(s=start[end > start], e=end[end > start]).groupby("pod"):
        last = -np.inf
        for s, e in sorted(zip(g["s"], g["e"])):
            s = max(s, last)
            if e > s:
                seconds += e - s
                last = e
    return both["pod"].nunique(), seconds / 3600


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="keep the results folders here")
    args = ap.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="hamisim-mutex-reserve-"))
    print(f"{'policy':14s} {'wall s':>6s} {'RSS MiB':>7s} {'GPUs busy %':>11s} "
          f"{'exclusive pending p50/p99 s':>27s} {'shared pending p50/p99 s':>24s} "
          f"{'exclusive pods sharing':>22s} {'card-h shared':>13s}")
    for policy in POLICIES:
        folder = base / policy
        wall, rss = run(policy, folder)
        r = json.loads((folder / "summary.json").read_text())["results"]
        classes = {c["class"]: c for c in r["classes"]}
        n_shared, hours = sharing(folder)
        n_excl = classes["exclusive"]["pods"]

        def waits(name: str) -> str:
            c = classes[name]
            return f"{c['pending_p50_s']:.0f} / {c['pending_p99_s']:.0f}"

        print(f"{policy:14s} {wall:6.1f} {rss:7.0f} {r['mean_gpu_allocated_pct']:11.1f} "
              f"{waits('exclusive'):>27s} {waits('shared'):>24s} "
              f"{f'{n_shared} of {n_excl}':>22s} {hours:13.1f}")


if __name__ == "__main__":
    main()
