"""A realistic cluster beside a plain one: what quotas, priorities and lifecycles cost.

The user's path (files in, `hamisim run` as a separate process, every output
written), twice over the same pods:

* **realistic**: four team namespaces, two of them under a ResourceQuota on GPU
  memory that binds at busy times; four priority classes (-100 batch, 0, 1000,
  100000 system) with DefaultPreemption on, so high-priority pods short of CPU
  evict lower ones; 30 % of pods with a 30 s termination grace period; 10 % with
  an init container (same GPU request) that finishes 60 s after binding; 10 %
  deleted half-way through their lifetime.
* **plain**: the same pods (names, times, GPU, CPU and memory requests,
  deletions) in the default namespace at one priority, no grace period, no
  init container, and the cluster without quotas.

Both run on NODES nodes of 8 H100s (144 CPUs each, so CPU binds when small GPU
shares pile up), Poisson arrivals at LOAD offered GPU load. The script prints
each run's wall time, the child's peak RSS, the engine it ran on (the
console's ``engine`` line), preemptions, and the CLI's time split, then the
ratio realistic / plain of the median wall times (issue 30's target: <= 1.5).

``--research POLICY`` instead replays the plain files under one of the FGD
paper's research node policies (``--node-policy POLICY``), on the compiled
engine and on the readable Python engine (the CLI through
``user_path.PYTHON_ENGINE``), and prints python / compiled.

    python benchmarks/realistic_path.py [--pods 200000] [--nodes 1500] [--load 0.8]
                                        [--repeat 3] [--workdir DIR] [--keep]
                                        [--research fgd]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hamisim.io.synthetic import synthetic_trace
from hamisim.io.traces import write_trace
from hamisim.pods import Container
from hamisim.workload import Trace

sys.path.insert(0, str(Path(__file__).parent))
from user_path import console_line, time_cli, write_cluster  # noqa: E402

TEAMS = ("team-a", "team-b", "team-c", "team-d")
#: (share of pods, priority)
PRIORITIES = ((0.2, -100), (0.4, 0), (0.3, 1000), (0.1, 100000))
NODE_CPU_MILLI = 144_000


def make_traces(n_pods: int, n_nodes: int, load: float, seed: int = 1) -> tuple[Trace, Trace]:
    """(realistic, plain): the same pods, with and without the realistic features."""
    rng = np.random.default_rng(seed)
    prio_p = np.array([p for p, _ in PRIORITIES])
    realistic, plain = [], []
    for tp in synthetic_trace(n_pods, 8 * n_nodes, load, seed=seed):
        pod = tp.pod
        gpus = pod.containers[0].limits.get("nvidia.com/gpu", 1)
        whole = "nvidia.com/gpumem" not in pod.containers[0].limits and \
            "nvidia.com/gpumem-percentage" not in pod.containers[0].limits
        # whole cards bring 8 CPUs each, shares 2: CPU binds where shares pile up
        pod = dataclasses.replace(pod, cpu_milli=8000 * gpus if whole else 2000)
        deletion = tp.arrival + 0.5 * tp.duration if rng.random() < 0.1 else None
        base = tp._replace(pod=pod, deletion=deletion)
        plain.append(base)
        extra = {"namespace": TEAMS[int(rng.integers(len(TEAMS)))],
                 "priority": PRIORITIES[int(rng.choice(len(PRIORITIES), p=prio_p))][1]}
        if rng.random() < 0.3:
            extra["termination_grace_period"] = 30
        if rng.random() < 0.1:
            extra["init_containers"] = (Container(dict(pod.containers[0].limits)),)
            extra["init_duration"] = 60.0
        realistic.append(base._replace(pod=dataclasses.replace(pod, **extra)))
    return Trace.from_pods("realistic", realistic), Trace.from_pods("plain", plain)


def quotas_for(n_nodes: int) -> dict:
    """team-a and team-b may each hold a fifth of the cluster's GPU memory: about
    what a quarter of an 80 %-loaded cluster asks, so the quota binds at peaks."""
    mem = 8 * 81920 * n_nodes // 5
    return {"team-a": {"limits.nvidia.com/gpumem": mem},
            "team-b": {"limits.nvidia.com/gpumem": mem}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=200_000)
    ap.add_argument("--nodes", type=int, default=1_500)
    ap.add_argument("--load", type=float, default=0.8, help="offered GPU load (default 0.8)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, help="where the files go (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the files and the results")
    ap.add_argument("--research", metavar="POLICY",
                    help="replay the plain files under this research node policy, compiled "
                         "against the Python engine")
    ap.add_argument("--make-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hamisim-realistic-"))
    workdir.mkdir(parents=True, exist_ok=True)
    marker = workdir / f".made-{args.nodes}-{args.pods}-{args.load:g}"
    if args.make_only:
        write_cluster(workdir / "realistic.json", args.nodes, NODE_CPU_MILLI,
                      quotas_for(args.nodes))
        write_cluster(workdir / "plain.json", args.nodes, NODE_CPU_MILLI)
        realistic, plain = make_traces(args.pods, args.nodes, args.load)
        write_trace(realistic, workdir / "realistic.parquet")
        write_trace(plain, workdir / "plain.parquet")
        marker.write_text("")
        return
    if not marker.exists():
        # the files are made by a process of their own: Linux keeps a process's
        # peak RSS across fork and exec, so runs started from a process that held
        # a million trace pods would report that process's peak as their own
        t0 = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--make-only", "--pods", str(args.pods),
                        "--nodes", str(args.nodes), "--load", str(args.load),
                        "--workdir", str(workdir)], check=True)
        print(f"wrote the clusters and traces in {time.perf_counter() - t0:.0f} s")
    print(f"{args.pods:,} pods on {args.nodes:,} nodes x 8 H100 at load {args.load:g}; "
          f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} CPUs")
    if args.research:
        research(args, workdir)
        return
    medians = {}
    for kind in ("plain", "realistic"):
        walls, rsss = [], []
        for k in range(args.repeat):
            out = workdir / f"results-{kind}-{k}"
            wall, rss, stdout = time_cli(["run", f"{kind}.json", f"{kind}.parquet", "--out",
                                          str(out), "--no-progress"], workdir)
            walls.append(wall)
            rsss.append(rss)
            engine = " ".join(console_line(stdout, "engine").split())
            preempted = " ".join(console_line(stdout, "preempted").split()) or "none preempted"
            print(f"  {kind} run {k + 1}: {wall:.1f} s, peak RSS {rss:,.0f} MiB; {engine}; "
                  f"{preempted}")
            print(f"    {console_line(stdout, 'time ')}")
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
        medians[kind] = statistics.median(walls)
        print(f"  {kind}: median wall {medians[kind]:.1f} s, peak RSS {max(rsss):,.0f} MiB")
    print(f"realistic / plain: {medians['realistic'] / medians['plain']:.2f}x (target <= 1.5x)")
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


def research(args, workdir: Path) -> None:
    """The plain files under a research node policy: compiled, then Python engine."""
    medians = {}
    for kind in ("compiled", "python"):
        walls = []
        for k in range(args.repeat):
            out = workdir / f"results-research-{kind}-{k}"
            wall, rss, stdout = time_cli(["run", "plain.json", "plain.parquet", "--node-policy",
                                          args.research, "--out", str(out), "--no-progress"],
                                         workdir, python_engine=kind == "python")
            walls.append(wall)
            engine = " ".join(console_line(stdout, "engine").split())
            print(f"  {args.research} {kind} run {k + 1}: {wall:.1f} s, peak RSS {rss:,.0f} MiB; "
                  f"{engine}")
            print(f"    {console_line(stdout, 'time ')}")
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
        medians[kind] = statistics.median(walls)
    print(f"{args.research}: python / compiled {medians['python'] / medians['compiled']:.2f}x "
          f"({medians['python']:.1f} s against {medians['compiled']:.1f} s)")
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
