"""A failed attempt on an overloaded cluster with quotas and priorities: what it costs.

Writes a 400-node cluster (40 DGX H100 with topology, 100 A100, 160 L40S, 100
tainted T4 no pod tolerates; four namespaces with a ResourceQuota, one without)
and a trace of inference, notebook and 1-8 GPU training pods with four
priorities, far more than the cluster holds, then runs ``hamisim run`` on them
as a separate process and prints the scheduling attempts (summary.json), the
wall time, the decision time the CLI reports and the peak RSS. Most attempts
fail: the pending pods are retried after every bind and departure, under
their namespace's quota, with DefaultPreemption's dry run finding no victim.

    python benchmarks/saturated_quota.py [--pods 600] [--hours 1] [--repeat 1]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

DECISIONS = re.compile(r"scheduler decisions (\d+(?:\.\d+)?) s")

CLUSTER = """scheduler: {gpu_scheduler_policy: binpack, node_scheduler_policy: binpack}
quotas:
  team-a: {limits.nvidia.com/gpumem: 2000000}
  team-b: {limits.nvidia.com/gpumem: 1500000, limits.nvidia.com/gpucores: 20000}
  team-c: {limits.nvidia.com/gpumem: 800000}
  team-d: {limits.nvidia.com/gpumem: 600000}
nodes:
  - {name_prefix: dgx, replicas: 40, topology: dgx-h100, cpu_milli: 224000, memory_mib: 2000000}
  - {name_prefix: a100, replicas: 100, gpus: 8, cpu_milli: 128000, memory_mib: 1000000,
     card: {devmem: 40960, type: NVIDIA A100-SXM4-40GB}}
  - {name_prefix: l40s, replicas: 160, gpus: 4, cpu_milli: 64000, memory_mib: 512000,
     card: {devmem: 46068, type: NVIDIA L40S}}
  - {name_prefix: t4, replicas: 100, gpus: 2, cpu_milli: 32000, memory_mib: 128000,
     card: {devmem: 15360, type: NVIDIA-Tesla T4},
     taints: [{key: legacy, value: "t4", effect: NoSchedule}]}
"""


def write_trace(path: str, pods: int, hours: float, seed: int = 1) -> None:
    """``pods`` pods arriving uniformly over ``hours``: half 1-GPU inference, a
    quarter notebooks, a quarter 1-8 GPU training at 100 % of the cores."""
    rng = random.Random(seed)
    with open(path, "w") as fh:
        fh.write("name,arrival,duration,gpu,gpumem,gpucores,cpu_milli,memory_mib,priority,"
                 "namespace,class\n")
        for i in range(pods):
            t = rng.uniform(0, hours * 3600)
            r = rng.random()
            ns = rng.choice(["team-a", "team-b", "team-c", "team-d", "default"])
            prio = rng.choice([0, 0, 100, 1000])
            if r < 0.5:
                fh.write(f"inf-{i},{t:.1f},{rng.randint(600, 7200)},1,"
                         f"{rng.choice([4096, 8192, 16384])},{rng.choice([10, 20, 30])},"
                         f"2000,8192,{prio},{ns},inference\n")
            elif r < 0.75:
                fh.write(f"nb-{i},{t:.1f},{rng.randint(1800, 14400)},1,"
                         f"{rng.choice([10240, 20480])},{rng.choice([25, 50])},4000,16384,"
                         f"{prio},{ns},notebook\n")
            else:
                g = rng.choice([1, 2, 4, 8])
                fh.write(f"train-{i},{t:.1f},{rng.randint(3600, 36000)},{g},,100,{g * 8000},"
                         f"{g * 32000},{prio},{ns},train-{g}gpu\n")


def run(cluster: str, trace: str, out: str) -> tuple[int, float, float, float]:
    """(attempts, wall s, decision s, peak RSS MiB) of one ``hamisim run``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "hamisim.cli", "run", cluster, trace,
                           "--no-progress", "--out", out],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    rss = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    seconds = float(DECISIONS.findall(proc.stdout + proc.stderr)[-1])
    with open(os.path.join(out, "summary.json")) as fh:
        attempts = int(json.load(fh)["results"]["attempts"])
    return attempts, wall, seconds, rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=600)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.pods} pods over {args.hours} h "
          "on 400 nodes with quotas and priorities")
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        cluster, trace = os.path.join(tmp, "cluster.yaml"), os.path.join(tmp, "trace.csv")
        with open(cluster, "w") as fh:
            fh.write(CLUSTER)
        write_trace(trace, args.pods, args.hours)
        for r in range(args.repeat):
            attempts, wall, seconds, rss = run(cluster, trace, os.path.join(tmp, f"out{r}"))
            walls.append(wall)
            print(f"{attempts:,} attempts, wall {wall:.1f} s, decisions {seconds:.2f} s "
                  f"({seconds / attempts * 1e6:.1f} µs per attempt), peak RSS {rss:.0f} MiB")
    print(f"median wall {statistics.median(walls):.1f} s")


if __name__ == "__main__":
    main()
