"""Decisions per second of each backend on a 1,000-node, 8-card cluster.

Half of all card slots are in use (tenants drawn per card, mean 5 of 10, with
varied memory and cores so card scores differ). Each timed decision
schedules one single-GPU pod and deletes it again, so every attempt sees the
same state. Prints the rate of each backend and their ratio.

    python benchmarks/decisions_per_second.py [--nodes 1000] [--percentage 0]
"""
from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from hamisim import Card, Cluster, Container, Node, Pick, Pod, SchedulerConfig, make_scheduler


def build(n_nodes: int, percentage: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    nodes = tuple(
        Node(f"node-{i:04d}", tuple(
            Card(f"GPU-{i:04d}-{k}", index=k, count=10, devmem=32768, devcore=100,
                 type="NVIDIA-Tesla V100-SXM2-32GB", numa=k // 4)
            for k in range(8)))
        for i in range(n_nodes))
    cluster = Cluster(nodes, SchedulerConfig(percentage_of_nodes_to_score=percentage))
    # Half of the slots: 0..10 tenants per card, mean 5, each 1-3 GiB and 0-10 cores.
    placements = []
    for i, node in enumerate(nodes):
        for card in node.cards:
            for t in range(int(rng.integers(0, 11))):
                placements.append((f"bg-{card.id}-{t}", i, [[Pick(
                    card.id, int(rng.integers(1, 4)) * 1024, int(rng.integers(0, 11)), card.index)]]))
    return cluster, placements


def rate(backend: str, cluster, placements, seconds: float) -> tuple[float, int]:
    sched = make_scheduler(cluster, backend=backend)
    for name, node, containers in placements:
        sched.adopt(name, node, containers)
    probe = Pod("probe", (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 2048,
                                      "nvidia.com/gpucores": 10}),))
    n = 0
    start = time.perf_counter()
    while True:
        d = sched.schedule(probe)
        assert d.bound
        sched.delete("probe")
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and n >= 3:
            return n / elapsed, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--percentage", type=int, default=0,
                    help="percentage_of_nodes_to_score (0 = kube-scheduler's adaptive default)")
    ap.add_argument("--seconds", type=float, default=5.0, help="time per backend")
    args = ap.parse_args()
    cluster, placements = build(args.nodes, args.percentage)
    used = sum(1 for _ in placements)
    print(f"cluster: {args.nodes} nodes x 8 cards, {used} of {args.nodes * 80} slots in use "
          f"({100 * used / (args.nodes * 80):.1f}%), percentage_of_nodes_to_score="
          f"{args.percentage}")
    print(f"machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}")
    results = {}
    for backend in ("reference", "kernel"):
        results[backend], n = rate(backend, cluster, placements, args.seconds)
        print(f"{backend:9s}: {results[backend]:12.1f} decisions/s  ({n} decisions)")
    print(f"ratio kernel/reference: {results['kernel'] / results['reference']:.0f}x")


if __name__ == "__main__":
    main()
