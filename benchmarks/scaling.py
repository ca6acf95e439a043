"""Per-decision cost of the kernel against cluster size (1,000 to 100,000 GPUs).

Clusters of 8-card nodes (V100 32 GB, 10 slots per card) with half of all
slots in use (tenants drawn per card, mean 5, 1-3 GiB and 0-10 cores each, so
node and card scores differ). Each timed call of ``schedule()`` places one
single-GPU probe (2 GiB, 10 cores; cores and memory vary over a few probes)
under HAMi's defaults (node binpack, card spread); the probe is deleted again
untimed. Prints p50/p99 per size for kube-scheduler's adaptive sampling and for
``percentage_of_nodes_to_score: 100`` and writes a log-log plot.

    python benchmarks/scaling.py [--decisions 3000] [--out benchmarks/scaling.png]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
from decisions_per_second import build as half_full_cluster  # same folder

from hamisim import Container, Pod, make_scheduler
from hamisim.kube.sampling import num_feasible_nodes_to_find

SIZES = (1_000, 3_000, 10_000, 30_000, 100_000)


def build(n_gpus: int, percentage: int, seed: int = 1):
    """decisions_per_second.py's half-full V100 cluster with n_gpus / 8 nodes, loaded
    into a kernel scheduler."""
    n_nodes = n_gpus // 8
    cluster, placements = half_full_cluster(n_nodes, percentage, seed)
    sched = make_scheduler(cluster, backend="kernel")
    for name, node, containers in placements:
        sched.adopt(name, node, containers)
    return sched, n_nodes


def timings(sched, n: int) -> np.ndarray:
    probes = [Pod(f"probe-{m}-{c}", (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": m,
                                                "nvidia.com/gpucores": c}),))
              for m in (1024, 2048, 4096) for c in (5, 10, 20)]
    out = np.empty(n, dtype=np.int64)
    clock = time.perf_counter_ns
    for k in range(n + 100):
        pod = probes[k % len(probes)]
        t0 = clock()
        d = sched.schedule(pod)
        t1 = clock()
        assert d.bound
        sched.delete(pod.name)
        if k >= 100:                  # the first hundred warm up
            out[k - 100] = t1 - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decisions", type=int, default=3000)
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="GPUs")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "scaling.png"))
    args = ap.parse_args()
    rows = []
    print(f"{'GPUs':>7s} {'nodes':>6s} {'pct':>4s} {'window':>6s} | {'p50':>8s} {'p99':>8s}")
    for pct in (0, 100):
        for gpus in args.sizes:
            sched, n_nodes = build(gpus, pct)
            ns = timings(sched, args.decisions)
            p50, p99 = np.percentile(ns, 50) / 1e3, np.percentile(ns, 99) / 1e3
            window = num_feasible_nodes_to_find(pct, n_nodes)
            rows.append((pct, gpus, n_nodes, window, p50, p99))
            print(f"{gpus:7d} {n_nodes:6d} {pct:4d} {window:6d} | {p50:6.1f}µs {p99:6.1f}µs",
                  flush=True)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(5, 3.4), dpi=90)
    for pct, label in ((0, "adaptive sampling"), (100, "percentage 100")):
        sel = [r for r in rows if r[0] == pct]
        ax.plot([r[1] for r in sel], [r[4] for r in sel], "o-", label=f"{label}, p50")
        ax.plot([r[1] for r in sel], [r[5] for r in sel], "x--", alpha=0.6,
                label=f"{label}, p99")
    # what linear growth from the smallest cluster would look like
    first = min(r[1] for r in rows)
    base = min(r[4] for r in rows if r[1] == first)
    xs = sorted({r[1] for r in rows})
    ax.plot(xs, [base * x / first for x in xs], ":", color="grey", label="linear growth")
    ax.set_xscale("log")
    ax.set_yscale("log")
    top = max(r[5] for r in rows)
    ax.set_ylim(base / 1.5, top * 3)
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    ax.yaxis.set_major_locator(FixedLocator([1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 500]))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("GPUs in the cluster (8 per node, half full)")
    ax.set_ylabel("schedule() latency, µs")
    ax.set_title("hamisim kernel: per-decision cost", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
