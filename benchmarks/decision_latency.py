"""Per-decision latency of schedule() on the openb GPU cluster, kernel against reference.

The openb GPU cluster (1,213 nodes, 6,212 GPUs) is first filled to half of its
GPUs with a seeded shuffle of the openb default pod list, scheduled under the
policy chain being measured (so each chain sees its own realistic state). Then
single-GPU probe pods drawn from the same pod list (fractional and whole cards,
some with a GPU-model constraint) are scheduled one at a time; each call of
``schedule()`` is timed with ``perf_counter_ns`` and the probe is deleted again
(untimed), so every attempt sees the same state while kube-scheduler's sampling
window keeps rotating. Both backends run in the same process on the same state.

    python benchmarks/decision_latency.py [--kernel-decisions 4000] [--ref-decisions 8]
        [--percentage 0 100] [--chains all|default]
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import time
from dataclasses import replace

import numpy as np

from hamisim import make_scheduler
from hamisim.cluster import SchedulerConfig
from hamisim.io.openb import read_openb_nodes, read_openb_pods
from hamisim.shapes import gpu_request

HERE = os.path.dirname(os.path.abspath(__file__))
OPENB = os.path.join(HERE, "..", "workloads", "openb")
NODES = os.path.join(OPENB, "openb_node_list_gpu_node.csv")
PODS = os.path.join(OPENB, "openb_pod_list_default.csv")

NODE_POLICIES = ("binpack", "spread")
CARD_POLICIES = ("spread", "binpack", "mutex,binpack", "mutex,binpack,numa")


def fill(sched, pods, capacity: float, target: float = 0.5, seed: int = 7):
    """Schedule a seeded shuffle of ``pods`` until ``target`` of the GPUs are asked for.

    Returns the placements ``(name, node, containers, n_init, cpu, mem)``.
    """
    order = list(pods)
    random.Random(seed).shuffle(order)
    placed, asked = [], 0.0
    for pod in order:
        if asked >= target * capacity:
            break
        d = sched.schedule(pod)
        if d.bound:
            asked += gpu_request(pod)
            placed.append((pod.name, d.node_index, d.containers, len(pod.init_containers),
                           pod.cpu_milli, pod.memory_mib))
    return placed


def probes(pods, n: int = 64, seed: int = 11):
    single = [p for p in pods if p.containers and
              p.containers[0].limits.get("nvidia.com/gpu") == 1]
    rng = random.Random(seed)
    return [replace(p, name=f"probe-{i}") for i, p in enumerate(rng.sample(single, n))]


def latencies(sched, probe_pods, n: int) -> np.ndarray:
    out = np.empty(n, dtype=np.int64)
    clock = time.perf_counter_ns
    for k in range(n):
        pod = probe_pods[k % len(probe_pods)]
        t0 = clock()
        sched.schedule(pod)
        out[k] = clock() - t0
        sched.delete(pod.name)
    return out


def measure(cluster, pods, capacity, node_policy, card_policy, percentage, args):
    cfg = replace(cluster.scheduler, node_scheduler_policy=node_policy,
                  gpu_scheduler_policy=card_policy, percentage_of_nodes_to_score=percentage)
    cl = replace(cluster, scheduler=cfg)
    filler = make_scheduler(cl, backend="kernel")
    placed = fill(filler, pods, capacity)
    probe_pods = probes(pods)
    row = {}
    for backend, n in (("kernel", args.kernel_decisions), ("reference", args.ref_decisions)):
        if n <= 0:
            continue
        sched = make_scheduler(cl, backend=backend)
        for name, node, containers, n_init, cpu, mem in placed:
            sched.adopt(name, node, containers, n_init, cpu, mem)
        latencies(sched, probe_pods, min(n, 500) if backend == "kernel" else 1)   # warm up
        ns = latencies(sched, probe_pods, n)
        row[backend] = (np.percentile(ns, 50) / 1e3, np.percentile(ns, 99) / 1e3)
    return len(placed), row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel-decisions", type=int, default=4000)
    ap.add_argument("--ref-decisions", type=int, default=8,
                    help="reference decisions per configuration (0 = skip the reference)")
    ap.add_argument("--percentage", type=int, nargs="+", default=[0, 100],
                    help="percentage_of_nodes_to_score values (0 = adaptive default)")
    ap.add_argument("--chains", choices=("all", "default"), default="all")
    args = ap.parse_args()
    cluster = read_openb_nodes(NODES, scheduler=SchedulerConfig())
    pods = [tp.pod for tp in read_openb_pods(PODS)]
    capacity = float(sum(len(n.cards) for n in cluster.nodes))
    print(f"cluster: openb GPU nodes, {len(cluster.nodes)} nodes, {int(capacity)} GPUs, "
          f"filled to 50 % of the GPUs; probes: single-GPU openb pods")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    chains = [(n, c) for n in NODE_POLICIES for c in CARD_POLICIES]
    if args.chains == "default":
        chains = [("binpack", "spread"), ("spread", "spread")]
    print(f"{'node':8s} {'card':19s} {'pct':>4s} {'pods':>5s} | {'kernel p50':>10s} "
          f"{'p99':>8s} | {'ref p50':>10s} {'p99':>10s} | {'ratio p50':>9s}")
    for pct in args.percentage:
        for node_policy, card_policy in chains:
            n_placed, row = measure(cluster, pods, capacity, node_policy, card_policy, pct, args)
            k50, k99 = row.get("kernel", (float("nan"),) * 2)
            r50, r99 = row.get("reference", (float("nan"),) * 2)
            ratio = r50 / k50 if "reference" in row else float("nan")
            print(f"{node_policy:8s} {card_policy:19s} {pct:4d} {n_placed:5d} | "
                  f"{k50:8.1f}µs {k99:6.1f}µs | {r50 / 1e3:8.1f}ms {r99 / 1e3:8.1f}ms | "
                  f"{ratio:8.0f}x", flush=True)


if __name__ == "__main__":
    main()
