"""An overloaded company cluster, run as a user runs it: wall time, attempts, outputs, memory.

``hamisim run`` as a separate process, every default output written (tables,
summary.json, report.html, figures), on ``workloads/company``: the bundled day
(14,961 pods) and the week (~100,000 pods, made by ``make_trace.py --days 7``
from its seed into a temporary folder). Prints per run the wall time, the
scheduling attempts and successful binds (summary.json), the events table's
rows and size, the whole output folder's size and the child's peak RSS.

Targets (issue 36 item 1): the day <= 20 s, the week <= 2 min and <= 4 GB peak
RSS, the default outputs <= 200 MB.

    python benchmarks/overload.py [--runs day week] [--events aggregated|all] [--repeat 1]
    timeout 600 python benchmarks/overload.py --runs week     # a run that may not end
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from user_path import time_cli

ROOT = Path(__file__).resolve().parent.parent
COMPANY = ROOT / "workloads" / "company"
#: (wall s, peak RSS MiB, default outputs MB) targets by run
TARGETS = {"day": (20.0, None, 200.0), "week": (120.0, 4096.0, 200.0)}


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def event_rows(folder: Path) -> int:
    """Rows of the run's events table (its Parquet footer, or the CSV's lines)."""
    path = folder / "events.parquet"
    if path.exists():
        import pyarrow.parquet as pq
        return pq.ParquetFile(path).metadata.num_rows
    with open(folder / "events.csv") as fh:
        return sum(1 for _ in fh) - 1


def week_trace(tmp: Path) -> Path:
    """The week, written from its seed (the same file every time)."""
    path = tmp / "trace-week.parquet"
    subprocess.run([sys.executable, str(COMPANY / "make_trace.py"), str(path), "--days", "7"],
                   check=True, capture_output=True)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="+", choices=("day", "week"), default=["day", "week"])
    ap.add_argument("--events", choices=("aggregated", "all"), default="aggregated")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, load {load:.2f}; workloads/company, --events {args.events}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for which in args.runs:
            trace = COMPANY / "trace-day.parquet" if which == "day" else week_trace(tmp)
            walls, rsss = [], []
            for r in range(args.repeat):
                out = tmp / f"{which}-{r}"
                argv = ["run", str(COMPANY / "cluster.yaml"), str(trace), "--out", str(out),
                        "--no-progress", "--events", args.events]
                wall, rss, _ = time_cli(argv, ROOT)
                walls.append(wall)
                rsss.append(rss)
                with open(out / "summary.json") as fh:
                    res = json.load(fh)["results"]
                events = out / "events.parquet"
                print(f"{which} run {r + 1}: wall {wall:.1f} s, {res['attempts']:,} attempts, "
                      f"{res['bound']:,} bound, events {event_rows(out):,} rows "
                      f"{events.stat().st_size / 1e6:.1f} MB, outputs "
                      f"{folder_bytes(out) / 1e6:.1f} MB, peak RSS {rss:,.0f} MiB; "
                      f"{wall / max(res['attempts'], 1) * 1e6:.2f} µs of wall per attempt, "
                      f"{wall / max(res['bound'], 1) * 1e3:.2f} ms per bind (the target: "
                      "time that follows the binds and cluster events, not the attempts)")
                refusals = res.get("quota_refusals", [])
                if refusals:
                    total = {k: sum(x[k] for x in refusals) for k in refusals[0]
                             if k != "namespace"}
                    print(f"  quota webhook: {total['refused_creations']:,} creations refused, "
                          f"{total['pods_refused']:,} pods refused; bare pods never created "
                          f"{total['never_created']:,}; controllers' pods created later "
                          f"{total['created_later']:,}, deleted first "
                          f"{total['deleted_before_created']:,}, waiting at the end "
                          f"{total['waiting_at_end']:,}")
            wall_t, rss_t, out_t = TARGETS[which]
            print(f"{which}: median wall {statistics.median(walls):.1f} s (target <= "
                  f"{wall_t:g} s), peak RSS {max(rsss):,.0f} MiB"
                  + (f" (target <= {rss_t:,.0f} MiB)" if rss_t else "")
                  + f", outputs target <= {out_t:g} MB")



if __name__ == "__main__":
    main()
