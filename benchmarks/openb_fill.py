"""The openb fill run end to end: read, fill to 130 %, schedule, measure, bin.

One run of the FGD paper's protocol on the bundled openb GPU cluster and
default trace (about 10.8k pods), metrics and fragmentation included, per
node policy. Prints wall time per run and pods per second.

    python benchmarks/openb_fill.py [--policies binpack spread fgd] [--repeat 3]
"""
from __future__ import annotations

import argparse
import platform
import time

from hamisim.studies.runs import RunSpec, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", nargs="+", default=["binpack", "spread", "fgd", "bestfit"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"openb default, fill to 130 %, percentage_of_nodes_to_score 100; "
          f"{platform.machine()}, Python {platform.python_version()}")
    for policy in args.policies:
        times = []
        for k in range(args.repeat):
            t0 = time.perf_counter()
            res = run(RunSpec(mode="fill", node_policy=policy, seed=42 + k,
                              percentage_of_nodes_to_score=100, progress=False))
            times.append(time.perf_counter() - t0)
        pods = res.summary["results"]["pods"]
        best = min(times)
        print(f"{policy:10s} best {best:.2f} s of {args.repeat} ({pods:,} pods, "
              f"{pods / best:,.0f} pods/s)")


if __name__ == "__main__":
    main()
