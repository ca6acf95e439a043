"""A long replay: synthetic pods on a large cluster, wall time and peak memory.

Default: 1,000,000 pods on 12,500 nodes x 8 GPUs (100,000 GPUs) at 80 %
offered load, mixed requests and card policies (mutex and
``mutex,binpack,numa`` among them), kube-scheduler's adaptive node sampling.
Pods are generated lazily; the time series is sampled every --interval s.

    python benchmarks/replay_scale.py [--pods 1000000] [--nodes 12500] [--percentage 0]
"""
from __future__ import annotations

import argparse
import platform
import resource
import time

from hamisim.io.synthetic import synthetic_cluster, synthetic_trace
from hamisim.sim.engine import EngineConfig, simulate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=1_000_000)
    ap.add_argument("--nodes", type=int, default=12_500)
    ap.add_argument("--percentage", type=int, default=0,
                    help="percentage_of_nodes_to_score (0 = adaptive default)")
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument("--interval", type=float, default=60.0, help="time-series sampling (s)")
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args()
    cluster = synthetic_cluster(args.nodes, percentage_of_nodes_to_score=args.percentage)
    gpus = cluster.n_cards
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    res = simulate(cluster, synthetic_trace(args.pods, gpus, args.load, seed=1),
                   EngineConfig(sample_interval=args.interval, progress=args.progress),
                   total=args.pods)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n_events = len(res.events)
    s = res.summary
    print(f"{args.pods:,} pods on {args.nodes:,} nodes x 8 = {gpus:,} GPUs, load {args.load}, "
          f"percentage_of_nodes_to_score={args.percentage}; {platform.machine()}, "
          f"Python {platform.python_version()}")
    print(f"wall {wall:.1f} s, {n_events:,} events ({n_events / wall:,.0f} events/s), "
          f"{s['attempts']:,} scheduling attempts, peak RSS {rss:,.0f} MiB")
    tables = (res.events.memory_usage(deep=True).sum()
              + res.timeseries.memory_usage(deep=True).sum()) / 2**20
    print(f"RSS before the run {base:,.0f} MiB (Python, libraries, the cluster); growth "
          f"{rss - base:,.0f} MiB = {(rss - base) * 2**20 / n_events:,.0f} bytes per event; "
          f"output tables in memory {tables:,.0f} MiB")
    print(f"bound {s['bound']:,}, abandoned {s['abandoned']:,}, queueing delay p99 "
          f"{s['queueing_delay_p99_s']:.1f} s, peak GPUs with a tenant "
          f"{s.get('peak_gpu_allocated', 0):,}; time-series rows {len(res.timeseries):,}")


if __name__ == "__main__":
    main()
