"""``hamisim validate`` on a week of a 1,000-node cluster's audit log (~1M events).

Builds the log from a hamisim run (the cluster of ``user_path.write_cluster``:
8 H100s a node, HAMi's default spread / binpack; a week of pods arriving
evenly, each living 1 to 11 hours, keeping the cluster about 60 % busy), written
by :func:`hamisim.io.auditlog.audit_lines` in the API server's shapes
(``RequestResponse``: each pod's create with its ``RequestReceived`` stage,
HAMi's annotation patch, the binding, the kubelet's ``Running`` and
``Succeeded`` status patches, the final delete) plus unrelated events (node
leases, gets, failed creates), gzip'd. Then times ``hamisim validate`` as a
separate process (wall time and its own peak RSS). ``--percentage 100`` runs
the cluster without kube-scheduler's sampling (every recorded choice is then
HAMi's global best).

    PYTHONPATH=. python benchmarks/validate.py [--pods 130000] [--nodes 1000]
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from user_path import console_line, time_cli, write_cluster  # noqa: E402

from hamisim.io.auditlog import run_audit_lines, write_lines  # noqa: E402


def write_week(path: Path, n_pods: int, seed: int = 1) -> None:
    rnd = random.Random(seed)
    week = 7 * 24 * 3600.0
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["name", "arrival", "duration", "gpu", "gpumem", "gpucores", "cpu_milli",
                    "memory_mib"])
        for i in range(n_pods):
            gpu = rnd.choice((1, 1, 1, 1, 2, 2, 4, 8))
            mem = rnd.choice((8192, 16384, 20480, 40960, 81920))
            cores = rnd.choice((10, 25, 50, 100))
            w.writerow([f"job-{i}", round(i * week / n_pods, 3),
                        rnd.randint(3600, 39600), gpu, mem, cores, 4000, 16384])


def write_log(run: Path, trace: Path, noise: int, log: Path) -> int:
    return write_lines(run_audit_lines(run, trace, noise=noise), log)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=130_000)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--noise", type=int, default=8,
                    help="unrelated events after every N-th pod event")
    ap.add_argument("--percentage", type=int, default=0,
                    help="percentageOfNodesToScore of the run (0 = adaptive default)")
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="hamisim-validate-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    cluster = work / "cluster.json"
    write_cluster(cluster, args.nodes)
    if args.percentage:
        doc = json.loads(cluster.read_text())
        doc["scheduler"]["percentage_of_nodes_to_score"] = args.percentage
        cluster.write_text(json.dumps(doc, indent=1) + "\n")
    trace = work / "week.csv"
    write_week(trace, args.pods)
    t0 = time.perf_counter()
    # run_audit_lines needs every attempt (its nominations follow their order)
    time_cli(["run", str(cluster), str(trace), "--out", str(work / "run"), "--no-progress",
              "--events", "all"], work)
    t_run = time.perf_counter() - t0
    t0 = time.perf_counter()
    log = work / "audit.log.gz"
    # in a child process: this one stays small, so the validate child forked from
    # it starts small and its peak RSS (wait4) is its own
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        n = pool.submit(write_log, work / "run", trace, args.noise, log).result()
    t_write = time.perf_counter() - t0
    print(f"log: {n:,} audit events ({log.stat().st_size / 2**20:.0f} MiB gzip'd) from "
          f"{args.pods:,} pods on {args.nodes:,} nodes (run {t_run:.0f} s, writing "
          f"{t_write:.0f} s)")
    wall, rss, out = time_cli(["validate", str(cluster), str(log), "--out",
                               str(work / "validate")], work)
    print(console_line(out, "hamisim validate:"))
    print(console_line(out, "node agreement"))
    print(console_line(out, "outcomes:"))
    print(f"validate: {wall:.1f} s wall, peak RSS {rss:.0f} MiB "
          f"({n / wall / 1000:.0f}k events/s)")


if __name__ == "__main__":
    main()
