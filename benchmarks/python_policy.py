"""What a Python node policy costs, through the CLI as a separate process.

Writes a JSON cluster of NODES nodes (8 H100s each, two NUMA nodes; as
``user_path.py`` writes it) and a trace of PODS pods, two policy files that
return HAMi's own node score (so every run takes HAMi's decisions), and times

    hamisim run cluster.json trace.csv                          (no policy, kernel)
    ... --node-policy python:vectorised.py:score                (kernel: one call per attempt)
    ... --node-policy python:each.py:score --backend reference  (one call per node)

each as a separate process, REPEAT times (wall time, the child's peak RSS).
The per-candidate policy runs on the first REF_PODS pods only (the readable
backend takes tens of milliseconds per attempt on 1,000 nodes); its figure is
per pod. ``--tree DIR`` runs the CLI from another checkout (e.g. an older
commit, with its kernel built) to compare before and after.

    python benchmarks/python_policy.py [--nodes 1000] [--pods 2000] [--ref-pods 200]
                                       [--repeat 3] [--tree DIR] [--skip-reference]
"""
from __future__ import annotations

import argparse
import csv
import os
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from user_path import console_line, time_cli, write_cluster, write_trace  # noqa: E402

VECTORISED = '''\
from hamisim.research.plugins import vectorised


@vectorised
def score(nodes):
    return nodes.hami_score
'''
EACH = '''\
def score(candidate):
    return candidate.hami_score
'''


def run_once(workdir: Path, tree: Path, trace: str, extra: list[str]
             ) -> tuple[float, float, str, list]:
    """(wall s, peak RSS MiB of the child, the CLI's time line, the pods' nodes)."""
    import pandas as pd

    out = workdir / "results"
    wall, rss, stdout = time_cli(["run", "cluster.json", trace, "--out", str(out),
                                  "--no-progress", *extra], workdir,
                                 env=dict(os.environ, PYTHONPATH=str(tree)))
    nodes = pd.read_parquet(out / "pods.parquet").node.tolist()
    shutil.rmtree(out, ignore_errors=True)
    return wall, rss, console_line(stdout, "time "), nodes


def head(src: Path, dst: Path, n: int) -> None:
    with open(src, newline="") as fh, open(dst, "w", newline="") as out:
        w = csv.writer(out)
        for k, row in enumerate(csv.reader(fh)):
            if k > n:
                break
            w.writerow(row)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--ref-pods", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                    help="the checkout whose hamisim runs (default: this one)")
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--skip-kernel", action="store_true")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="hamisim-python-policy-"))
    try:
        write_cluster(workdir / "cluster.json", args.nodes)
        write_trace(workdir / "trace.csv", args.pods, 8 * args.nodes)
        head(workdir / "trace.csv", workdir / "head.csv", args.ref_pods)
        (workdir / "vectorised.py").write_text(VECTORISED)
        (workdir / "each.py").write_text(EACH)     # loads in checkouts without @vectorised
        print(f"{args.pods:,} pods on {args.nodes:,} nodes x 8 H100 ({args.tree}); "
              f"{platform.machine()}, Python {platform.python_version()}, "
              f"{os.cpu_count()} CPUs; median of {args.repeat}, peak RSS the largest")
        runs = []
        if not args.skip_kernel:
            runs += [("no policy (kernel)", "trace.csv", args.pods, []),
                     ("vectorised trivial policy (kernel)", "trace.csv", args.pods,
                      ["--node-policy", "python:vectorised.py:score"])]
        if not args.skip_reference:
            runs.append(("per-candidate trivial policy (reference)", "head.csv", args.ref_pods,
                         ["--node-policy", "python:each.py:score", "--backend", "reference"]))
        medians, placed = {}, {}
        for label, trace, pods, extra in runs:
            walls, rsss, lines, nodes = zip(*(run_once(workdir, args.tree, trace, extra)
                                              for _ in range(args.repeat)))
            med = medians[label] = statistics.median(walls)
            placed[label] = nodes[0]
            print(f"  {label:42s} {pods:>6,} pods  wall {med:7.2f} s "
                  f"(runs {min(walls):.2f}-{max(walls):.2f}), {1000 * med / pods:8.2f} ms/pod, "
                  f"peak RSS {max(rsss):,.0f} MiB")
            print(f"    {lines[0]}")
        if len(medians) >= 2 and not args.skip_kernel:
            first, second = list(medians)[:2]
            base, vec = medians[first], medians[second]
            a, b = placed[first], placed[second]
            print(f"  vectorised policy / no policy: {vec / base:.2f}x (target <= 3x); "
                  f"same placements as HAMi's binpack: {a == b}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
