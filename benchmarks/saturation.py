"""Per-attempt cost of HAMi's decisions on a saturated cluster against an unsaturated one.

Replays the bundled openb cluster and default pod list (``hamisim run``, a
separate process per run, as a user runs it) re-timed to a low and a high
offered GPU load, and prints per run the scheduling attempts (summary.json),
the time the CLI reports for the scheduler's decisions, and their quotient:
the cost of one attempt. At 3x offered load most attempts fail (the pending
pods are retried after every bind and departure), so the quotient measures
what a failed attempt costs; target: saturated <= 3x unsaturated.

    python benchmarks/saturation.py [--pods 20000] [--loads 0.5 3] [--repeat 1]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

DECISIONS = re.compile(r"scheduler decisions (\d+(?:\.\d+)?) s")


def run(pods: int, load: float, out: str) -> tuple[int, float]:
    """(attempts, decision seconds) of one ``hamisim run`` on the openb defaults."""
    proc = subprocess.run([sys.executable, "-m", "hamisim.cli", "run", "--pods", str(pods),
                           "--load", str(load), "--no-progress", "--out", out],
                          capture_output=True, text=True, check=True)
    seconds = float(DECISIONS.findall(proc.stdout + proc.stderr)[-1])
    with open(os.path.join(out, "summary.json")) as fh:
        attempts = int(json.load(fh)["results"]["attempts"])
    return attempts, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=20000)
    ap.add_argument("--loads", type=float, nargs="+", default=[0.5, 3.0])
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"openb default pod list, --pods {args.pods}")
    per_attempt: dict[float, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for load in args.loads:
            costs = []
            for r in range(args.repeat):
                attempts, seconds = run(args.pods, load, os.path.join(tmp, f"{load}-{r}"))
                costs.append(seconds / attempts * 1e6)
                print(f"--load {load}: {attempts:,} attempts, decisions {seconds:.2f} s, "
                      f"{costs[-1]:.1f} µs per attempt")
            per_attempt[load] = statistics.median(costs)
    low, high = min(per_attempt), max(per_attempt)
    print(f"per attempt: --load {high} {per_attempt[high]:.1f} µs, --load {low} "
          f"{per_attempt[low]:.1f} µs, ratio {per_attempt[high] / per_attempt[low]:.1f}x "
          f"(target <= 3x)")


if __name__ == "__main__":
    main()
