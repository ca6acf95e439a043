"""Decisions on a cluster of every simulated device family against an NVIDIA-only one.

Writes two clusters of the same size (``--nodes`` nodes of 8 cards, 16 GiB
each): NVIDIA only, and the nodes split evenly over NVIDIA (T4), Hygon DCU,
Iluvatar MR-V100, AMD (Instinct MI210, 104 CUs), Cambricon MLU, Biren (slots
only: a card takes 10 pods), Moore Threads (16 cores a card) and Ascend 910B3
(soft split on hami-vnpu-core nodes, every card in one network: Fit gathers
every acceptable card and the node score gains ScoreNode's bonus, the
slowest path, ``_bounded_choose``); ``--families kunlun`` adds Kunlunxin
whole cards (graghSelect's wings, the bubble score's bound of 3000); and two
traces of the same pods (``--pods``, one card each, 2-8 GiB and 20-50 % cores,
a daily arrival pattern, two hours' lifetime): on the mixed cluster the pods
take turns over the families, each asking with its vendor's resource names
and units (Iluvatar's and Cambricon's memory in 256 MiB units, Moore Threads'
in 512 MiB units and its cores of 16; Biren's count alone; Ascend's pods
annotated ``huawei.com/vnpu-mode: hami-core``; Kunlunxin's a whole card by
count). Runs ``hamisim
run`` as a separate process on each, as a user runs it (files in, every
output written), REPEAT times, and prints per run the wall time, peak RSS,
attempts, the console's simulate and decision times, and the simulated time
per pod; then the mixed/NVIDIA ratio of the medians (issue 37's target: at
most 1.5x). ``--families dcu`` is the earlier two-family run (NVIDIA + DCU).

    python benchmarks/mixed_families.py [--nodes 1000] [--pods 100000] [--repeat 1]
                                        [--families all|dcu]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIMULATE = re.compile(r"simulate (\d+(?:\.\d+)?) s \(scheduler decisions (\d+(?:\.\d+)?) s")


#: (node prefix, card mapping, container of one pod asking mem MiB and cores %,
#: optionally the pod's annotations and the node group's extra lines)
FAMILIES = {
    "NVIDIA": ("gpu", "{type: NVIDIA-Tesla T4, devmem: 16384}",
               lambda mem, cores: {"gpu": 1, "gpumem": mem, "gpucores": cores}),
    "DCU": ("dcu", "{type: DCU, devmem: 16384}",
            lambda mem, cores: {"limits": {"hygon.com/dcunum": 1, "hygon.com/dcumem": mem,
                                           "hygon.com/dcucores": cores}}),
    "MR-V100": ("mr", "{type: MR-V100, devmem: 16384}",
                lambda mem, cores: {"limits": {"iluvatar.ai/MR-V100-vgpu": 1,
                                               "iluvatar.ai/MR-V100.vMem": mem // 256,
                                               "iluvatar.ai/MR-V100.vCore": cores}}),
    "AMD": ("amd", "{type: AMD_Instinct_MI210, devmem: 16384, devcore: 104}",
            lambda mem, cores: {"limits": {"amd.com/gpu": 1, "amd.com/gpumem": mem,
                                           "amd.com/gpucores": cores}}),
    "MLU": ("mlu", "{type: MLU, devmem: 16384}",
            lambda mem, cores: {"limits": {"cambricon.com/vmlu": 1,
                                           "cambricon.com/mlu.smlu.vmemory": mem // 256,
                                           "cambricon.com/mlu.smlu.vcore": cores}}),
    "Biren": ("br", "{type: Biren, devmem: 16384}",
              lambda mem, cores: {"limits": {"birentech.com/gpu": 1}}),
    "Mthreads": ("mt", "{type: Mthreads, devmem: 16384}",
                 lambda mem, cores: {"limits": {"mthreads.com/vgpu": 1,
                                                "mthreads.com/sgpu-memory": mem // 512,
                                                "mthreads.com/sgpu-core": cores * 16 // 100}}),
    "Ascend910B3": ("npu", "{type: Ascend910B3, devmem: 16384, customInfo: {NetworkID: 0}}",
                    lambda mem, cores: {"limits": {"huawei.com/Ascend910B3": 1,
                                                   "huawei.com/Ascend910B3-memory": mem,
                                                   "huawei.com/Ascend910B3-core": cores}},
                    {"huawei.com/vnpu-mode": "hami-core"},
                    '    annotations: {hami-vnpu-core: "true"}\n'),
    "kunlun": ("kl", "{type: kunlun, devmem: 16384}",
               lambda mem, cores: {"limits": {"kunlunxin.com/xpu": 1}}),
}


def cluster(nodes: int, families: tuple[str, ...]) -> str:
    text = "nodes:\n"
    for k, fam in enumerate(families):
        prefix, card = FAMILIES[fam][:2]
        extra = FAMILIES[fam][4] if len(FAMILIES[fam]) > 4 else ""
        n = nodes // len(families) + (k < nodes % len(families))
        text += (f"  - name_prefix: {prefix}\n    replicas: {n}\n    gpus: 8\n"
                 f"    card: {card}\n{extra}")
    return text


def trace(pods: int, families: tuple[str, ...], seed: int = 7) -> str:
    """Pods over a day-shaped arrival curve: the same shapes on both clusters."""
    rng = random.Random(seed)
    span = 86400.0
    rows, t = [], 0.0
    mean_gap = span / pods
    for i in range(pods):
        # twice as many arrivals at the day's peak as at its trough
        hour = (t % 86400) / 3600
        t += rng.expovariate(1 / mean_gap) / (1 + 0.5 * math.sin(math.pi * (hour - 6) / 12))
        mem, cores = rng.choice([2048, 4096, 4096, 8192]), rng.choice([20, 25, 50])
        fam = FAMILIES[families[i % len(families)]]
        ann = fam[3] if len(fam) > 3 else None
        rows.append(json.dumps({"name": f"p{i}", "arrival": round(t, 3), "duration": 7200,
                                "containers": [fam[2](mem, cores)],
                                **({"annotations": ann} if ann else {})}))
    return "\n".join(rows) + "\n"


def run(cluster_file: Path, trace_file: Path, out: Path) -> dict:
    argv = [sys.executable, "-m", "hamisim.cli", "run", str(cluster_file), str(trace_file),
            "--out", str(out), "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"hamisim run {cluster_file.name} failed:\n{text}")
    simulate, decisions = (float(x) for x in SIMULATE.findall(text)[-1])
    summary = json.loads((out / "summary.json").read_text())
    return {"wall": wall, "rss": usage.ru_maxrss / 1024, "simulate": simulate,
            "decisions": decisions, "attempts": int(summary["results"]["attempts"]),
            "engine": "compiled" if "compiled (hamisim._replay)" in text else "python"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--families", choices=("all", "dcu", "kunlun"), default="all",
                    help="the mixed cluster's families: eight simulated vendors, those and "
                         "Kunlunxin whole cards (a pod takes a card alone, so that group "
                         "saturates: another problem), or "
                         "NVIDIA + DCU (the earlier run)")
    args = ap.parse_args()
    mixed = (tuple(f for f in FAMILIES if f != "kunlun") if args.families == "all"
             else tuple(FAMILIES) if args.families == "kunlun" else ("NVIDIA", "DCU"))
    label = "NVIDIA + " + " + ".join(mixed[1:])
    runs = (("NVIDIA only", ("NVIDIA",)), (label, mixed))
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.2f}; {args.nodes} nodes x 8 cards, {args.pods:,} pods")
    medians = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for k, (name, fams) in enumerate(runs):
            (d / f"{k}.yaml").write_text(cluster(args.nodes, fams))
            (d / f"{k}.jsonl").write_text(trace(args.pods, fams))
        walls: dict[str, list[float]] = {name: [] for name, _ in runs}
        for r in range(args.repeat):
            # alternate the two, so the machine's drift spreads over both
            for k, (name, _) in enumerate(runs):
                m = run(d / f"{k}.yaml", d / f"{k}.jsonl", d / f"out-{k}-{r}")
                walls[name].append(m["wall"])
                print(f"{name} run {r + 1}: wall {m['wall']:.1f} s, simulate "
                      f"{m['simulate']:.2f} s ({m['simulate'] / args.pods * 1e6:.1f} µs per pod; "
                      f"decisions {m['decisions']:.2f} s), {m['attempts']:,} attempts, "
                      f"peak RSS {m['rss']:.0f} MiB, {m['engine']} engine")
        for name, w in walls.items():
            medians[name] = statistics.median(w)
    ratio = medians[label] / medians["NVIDIA only"]
    print(f"median wall: NVIDIA only {medians['NVIDIA only']:.1f} s, {label} "
          f"{medians[label]:.1f} s: {ratio:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
