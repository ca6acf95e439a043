"""The topology study: HAMi's card policy chains on the bundled mixed GPU pool.

Runs ``hamisim compare`` as a separate process on ``workloads/topology/`` (8-GPU
NVSwitch boxes, 8-GPU PCIe boxes, the mutex article's 4-GPU boxes; inference,
mutex and 2/4/8-GPU training pods, replayed as traced) for spread, binpack,
numa, binpack,numa, topology-aware and mutex,binpack,numa, then prints, per chain
and pod size, the share of multi-GPU pods across NUMA nodes and across PCIe
switches, the share of their card pairs without NVLink, their mean pair score,
and the p99 pending time, with the
run's wall time and peak RSS. ``--figure PATH`` copies the comparison's
``figures/placement.png`` there (the README's figure).

    python benchmarks/topology_study.py [--figure docs/topology-study.png]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "workloads" / "topology"
CHAINS = ("spread", "binpack", "numa", "binpack,numa", "topology-aware", "mutex,binpack,numa")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figure", type=Path, help="copy the placement figure here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hamisim-topology-") as tmp:
        out = Path(tmp) / "study"
        argv = [sys.executable, "-m", "hamisim.cli", "compare", str(STUDY / "cluster.yaml"),
                str(STUDY / "trace.csv"), "--out", str(out), "--format", "csv",
                "--no-progress"]
        for chain in CHAINS:
            argv += ["--gpu-policy", chain]
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"hamisim compare failed:\n{proc.stderr.read()}")
        print(f"hamisim compare on {STUDY.relative_to(ROOT)}: {len(CHAINS)} chains in "
              f"{wall:.1f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MiB")
        print(f"{'card policy':22s} {'GPUs':>4s} {'pods':>5s} {'across NUMA %':>13s} "
              f"{'across switches %':>17s} {'pairs w/o NVLink %':>18s} {'mean pair score':>15s} "
              f"{'pending p99 s':>13s}")
        for folder in sorted((out / "runs").iterdir(),
                             key=lambda p: CHAINS.index(_chain(p))):
            summary = json.loads((folder / "summary.json").read_text())
            r = summary["results"]
            chain = summary["scheduler"]["gpu_scheduler_policy"]
            for size, f in r["placement_by_gpus"].items():
                print(f"{chain:22s} {size:>4s} {f['multi_gpu_pods']:5d} "
                      f"{f['cross_numa_pct']:13.1f} {f['cross_switch_pct']:17.1f} "
                      f"{f['pairs_without_nvlink_pct']:18.1f} "
                      f"{f['mean_pair_score']:15.0f} {r['pending_p99_s']:13.0f}")
        if args.figure is not None:
            shutil.copyfile(out / "figures" / "placement.png", args.figure)
            print(f"figure copied to {args.figure}")


def _chain(folder: Path) -> str:
    return json.loads((folder / "summary.json").read_text())["scheduler"]["gpu_scheduler_policy"]


if __name__ == "__main__":
    main()
