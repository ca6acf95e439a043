"""Synthetic clusters and traces for benchmarks and capacity studies.

:func:`synthetic_cluster` builds ``n_nodes`` identical 8-card nodes;
:func:`synthetic_trace` yields trace pods *lazily* (one at a time, never the
whole trace in memory) with Poisson arrivals at the rate that offers a target
GPU load, exponential lifetimes and a mix of HAMi requests and card
policies (fractional shares, memory-only shares, whole and multi-card pods;
``mutex`` and ``mutex,binpack,numa`` pods among them).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.pods import Container, Pod
from hamisim.workload import TracePod

__all__ = ["synthetic_cluster", "synthetic_trace", "MIX"]

# (weight, kind, value) — kind: share (pct and cores), mem (MiB, cores 20),
# whole (cards)
MIX = (
    (0.20, "share", 25), (0.10, "share", 50), (0.10, "share", 10),
    (0.15, "mem", 4000), (0.10, "mem", 8000),
    (0.20, "whole", 1), (0.07, "whole", 2), (0.05, "whole", 4), (0.03, "whole", 8),
)
POLICIES = ((0.70, None), (0.10, "mutex"), (0.10, "mutex,binpack,numa"), (0.10, "binpack"))


def synthetic_cluster(n_nodes: int, cards_per_node: int = 8, **scheduler) -> Cluster:
    """``n_nodes`` nodes of A100-40GB cards (10 slots, two NUMA nodes each)."""
    width = len(str(max(n_nodes - 1, 0)))
    nodes = tuple(
        Node(f"node-{i:0{width}d}", tuple(
            Card(f"GPU-{i:0{width}d}-{k}", k, count=10, devmem=40960, devcore=100,
                 type="NVIDIA A100-SXM4-40GB", numa=k * 2 // cards_per_node)
            for k in range(cards_per_node)), cpu_milli=128_000, memory_mib=1_048_576)
        for i in range(n_nodes))
    return Cluster(nodes, SchedulerConfig(**scheduler))


def _gpus(kind: str, value: int) -> float:
    return value / 100 if kind == "share" else (0.2 if kind == "mem" else float(value))


def synthetic_trace(n_pods: int, capacity_gpus: float, load: float = 0.8,
                    mean_lifetime: float = 1800.0, seed: int = 0) -> Iterator[TracePod]:
    """Yield ``n_pods`` trace pods in arrival order, offering ``load`` of the GPUs.

    Rate λ = load × capacity / (E[GPUs per pod] × mean lifetime); a memory-only
    share counts 0.2 GPU in that average.
    """
    rng = np.random.default_rng(seed)
    w = np.array([m[0] for m in MIX])
    w = w / w.sum()
    mean_gpus = float(sum(wi * _gpus(k, v) for wi, (_, k, v) in zip(w, MIX)))
    rate = load * capacity_gpus / (mean_gpus * mean_lifetime)
    pw = np.array([p[0] for p in POLICIES])
    t = 0.0
    block = 4096
    for start in range(0, n_pods, block):
        n = min(block, n_pods - start)
        gaps = rng.exponential(1.0 / rate, n)
        lives = rng.exponential(mean_lifetime, n)
        kinds = rng.choice(len(MIX), n, p=w)
        pols = rng.choice(len(POLICIES), n, p=pw)
        for j in range(n):
            t += float(gaps[j])
            _, kind, value = MIX[kinds[j]]
            if kind == "share":
                limits = {"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": value,
                          "nvidia.com/gpucores": value}
            elif kind == "mem":
                limits = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": value,
                          "nvidia.com/gpucores": 20}
            else:
                limits = {"nvidia.com/gpu": value}
            policy = POLICIES[pols[j]][1]
            ann = {"hami.io/gpu-scheduler-policy": policy} if policy else {}
            pod = Pod(f"syn-{start + j}", (Container(limits),), annotations=ann,
                      cpu_milli=2000, memory_mib=8192)
            yield TracePod(pod, t, float(lives[j]))
