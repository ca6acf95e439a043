"""The MIG study: the same inference-heavy workload as hami-core slices and as MIG.

Runs ``hamisim run`` as a separate process, once per setup, on the nodes of
``workloads/mig/`` (4 x 8 A100 40GB, 2 x 8 H100 80GB): HAMi's vGPU slicing
(``cluster-hami-core.yaml``), dynamic MIG with the full allowlist
(``cluster-mig.yaml``) and MIG cut into small profiles only
(``cluster-mig-small.yaml``), replaying ``trace.csv`` as traced. Prints per
setup the wall time and peak RSS, cards with a tenant, memory allocated, GPU
stranded by placement, MIG slices in use and stranded by geometry, how many
pods ran with their card to themselves or in a MIG instance (isolated from
their neighbours), and the p99 pending time per pod class.
``--figure PATH`` draws the comparison there (the README's figure).

    python benchmarks/mig_study.py [--figure docs/mig-study.png]
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

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "workloads" / "mig"
SETUPS = (("hami-core slices", "cluster-hami-core.yaml"),
          ("MIG, full allowlist", "cluster-mig.yaml"),
          ("MIG, small profiles only", "cluster-mig-small.yaml"))


def run(cluster: Path, out: Path) -> tuple[float, float]:
    """``hamisim run`` in its own process: (wall seconds, peak RSS MiB)."""
    argv = [sys.executable, "-m", "hamisim.cli", "run", str(cluster),
            str(STUDY / "trace.csv"), "--out", str(out), "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"hamisim run {cluster.name} failed:\n{proc.stderr.read()}")
    return wall, usage.ru_maxrss / 1024


def requested(pods: pd.DataFrame, end: float) -> float:
    """Byte-seconds of card memory the bound pods asked for (the trace's gpumem)."""
    trace = pd.read_csv(STUDY / "trace.csv").set_index("name")
    bound = pods[pods["bind"].notna()]
    stop = bound["departure"].fillna(end)
    mib = trace.loc[bound["pod"], "gpumem"].to_numpy() * trace.loc[bound["pod"], "gpu"].to_numpy()
    return float(np.sum(mib * 2**20 * (stop - bound["bind"]).to_numpy()))


def isolation(pods: pd.DataFrame, end: float) -> tuple[float, float]:
    """Of the bound pods: % that never shared a card with another pod, and % that
    were isolated from their neighbours (alone, or in a MIG instance)."""
    bound = pods[pods["bind"].notna()].copy()
    bound["stop"] = bound["departure"].fillna(end)
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for name, devices, start, stop in zip(bound["pod"], bound["devices"], bound["bind"],
                                          bound["stop"]):
        for card in {e.split(",")[0] for e in str(devices).replace(";", ":").split(":") if e}:
            spans.setdefault(card, []).append((start, stop, name))
    shared: set[str] = set()
    for items in spans.values():
        items.sort()
        for i, (a0, a1, an) in enumerate(items):
            for b0, b1, bn in items[i + 1:]:
                if b0 >= a1:
                    break
                shared.update((an, bn))
    alone = 100.0 * (1 - len(shared) / max(len(bound), 1))
    mig = bound["mig_allocations"].notna() if "mig_allocations" in bound else False
    isolated = 100.0 * float(np.mean(~bound["pod"].isin(shared) | mig)) if len(bound) else 0.0
    return alone, isolated


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figure", type=Path, help="draw the comparison here (PNG)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hamisim-mig-") as tmp:
        for label, name in SETUPS:
            out = Path(tmp) / name.removesuffix(".yaml")
            wall, rss = run(STUDY / name, out)
            r = json.loads((out / "summary.json").read_text())["results"]
            pods = pd.read_parquet(out / "pods.parquet")
            ts = pd.read_parquet(out / "timeseries.parquet")
            alone, isolated = isolation(pods, r["end_time_s"])
            dt = np.diff(np.append(ts["time"].to_numpy(), r["end_time_s"]))
            mem = float(np.sum(dt * ts["hami_gpu_memory_allocated_bytes"]
                               / ts["hami_gpu_memory_total_bytes"]) / max(dt.sum(), 1e-9))
            asked = requested(pods, r["end_time_s"]) / (
                float(ts["hami_gpu_memory_total_bytes"].iloc[0]) * r["end_time_s"])
            rows.append({
                "setup": label, "wall_s": wall, "rss_mib": rss,
                "cards_with_tenant_pct": r["mean_gpu_allocated_pct"],
                "memory_requested_pct": 100 * asked,
                "memory_allocated_pct": 100 * mem,
                "memory_stranded_in_slices_pct": 100 * (mem - asked),
                "stranded_gpu_pct": r["mean_stranded_pct_of_capacity"],
                "mig_slices_used_pct": r.get("mig_slots_used_mean_pct"),
                "mig_slices_stranded_pct": r.get("mig_slots_stranded_mean_pct"),
                "alone_pct": alone, "isolated_pct": isolated,
                **{f"p99 {c['class']}": c["pending_p99_s"] for c in r["classes"]}})
    table = pd.DataFrame(rows)
    for row in rows:
        print(f"{row['setup']}: {row['wall_s']:.1f} s, peak RSS {row['rss_mib']:.0f} MiB")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.drop(columns=["wall_s", "rss_mib"]).set_index("setup").T.to_string(
            float_format=lambda v: f"{v:.1f}"))
    if args.figure is not None:
        figure(table, args.figure)
        print(f"figure written to {args.figure}")


def figure(table: pd.DataFrame, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.6))
    measures = [("cards_with_tenant_pct", "cards with a tenant"),
                ("memory_requested_pct", "card memory the pods asked for"),
                ("memory_allocated_pct", "card memory HAMi charged"),
                ("mig_slices_used_pct", "MIG slices in use"),
                ("mig_slices_stranded_pct", "MIG slices stranded by geometry"),
                ("isolated_pct", "pods isolated (alone or MIG)")]
    x = np.arange(len(measures))
    width = 0.8 / len(table)
    for k, row in table.reset_index(drop=True).iterrows():
        vals = [np.nan if row[m] is None else row[m] for m, _ in measures]
        left.bar(x + k * width, vals, width, label=row["setup"])
    left.set_xticks(x + width * (len(table) - 1) / 2, [t for _, t in measures], rotation=20,
                    ha="right", fontsize=8)
    left.set(ylabel="% (time-weighted mean over the run)", ylim=(0, 100),
             title="Utilisation, geometry and isolation")
    left.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.32), ncol=3)
    left.grid(axis="y", alpha=0.3)
    classes = [c for c in table.columns if c.startswith("p99 ")]
    xc = np.arange(len(classes))
    for k, row in table.reset_index(drop=True).iterrows():
        right.bar(xc + k * width, [max(row[c], 1.0) for c in classes], width,
                  label=row["setup"])
    right.set_xticks(xc + width * (len(table) - 1) / 2, [c[4:] for c in classes], rotation=20,
                     ha="right", fontsize=8)
    right.set_yscale("log")
    right.set(ylabel="p99 pending time (s, log; 1 = no wait)",
              title="Waiting, per pod class")
    right.grid(axis="y", alpha=0.3)
    fig.suptitle("The same inference-heavy workload on 4 x 8 A100 40GB + 2 x 8 H100 80GB: "
                 "hami-core slices vs MIG (HAMi v2.10.0, binpack)", fontsize=10)
    fig.text(0.01, 0.01, "Trace: workloads/mig/trace.csv, 2,400 pods over 8 h, replayed as "
             "traced. Charged: what HAMi accounts (on MIG, the whole profile's memory; the gap "
             "to what the pods asked for is memory stranded inside instances). Isolated: the "
             "pod had its card to itself, or a MIG instance (memory and SMs partitioned in "
             "hardware).", fontsize=7.5, color="0.25", wrap=True)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    fig.savefig(path, dpi=130, metadata={"Software": None})
    plt.close(fig)


if __name__ == "__main__":
    main()
