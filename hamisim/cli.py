"""The ``hamisim`` command.

Every subcommand reports bad input as ``file:line: problem`` on stderr and
exits with status 2, never with a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from . import __version__
from .errors import HamisimError, InputError
from .scheduler import BACKENDS

EXIT_OK, EXIT_EXPECTATION_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _add_backend(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=BACKENDS, default="kernel",
                   help="placement engine: the compiled kernel (default) or the readable "
                        "pure-Python reference; both take identical decisions")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hamisim",
        description="Simulate HAMi GPU scheduling (v2.10 semantics) on Kubernetes clusters.",
        epilog="Bad input exits with status 2 and a 'file:line: problem' message.",
    )
    parser.add_argument("--version", action="version", version=f"hamisim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    sc = sub.add_parser(
        "scenario", help="run a step-by-step scenario file (create / delete / expect)",
        description="Run a scenario file (DESIGN §4.3): create pods, delete pods, check "
                    "where they landed. Prints one row per scheduling event; exits 1 when "
                    "an expectation fails, 2 on bad input.",
        epilog="FILE may also name a bundled scenario, e.g. 'mutex-exp1' "
               "(see 'hamisim scenario --list').")
    sc.add_argument("file", metavar="FILE", nargs="?",
                    help="scenario file (.yaml/.yml/.json) or a bundled scenario name")
    sc.add_argument("--json", action="store_true",
                    help="print the events and expectations as one JSON object")
    sc.add_argument("--list", action="store_true", help="list the bundled scenarios and exit")
    _add_backend(sc)
    sc.set_defaults(func=cmd_scenario)

    rn = sub.add_parser(
        "run", help="replay a trace against a cluster (default: the bundled openb workload)",
        description="Simulate a pod trace on a cluster and write events, time series, a "
                    "summary and figures. With no CLUSTER and TRACE: the bundled Alibaba openb "
                    "GPU cluster (1,213 nodes, 6,212 GPUs) and its default pod list, re-timed "
                    "to an 80% offered GPU load, under HAMi's default policies.")
    rn.add_argument("cluster", metavar="CLUSTER", nargs="?",
                    help="cluster file (.yaml/.json) or openb node list (.csv)")
    rn.add_argument("trace", metavar="TRACE", nargs="?",
                    help="trace file (.csv/.parquet/.jsonl) or openb pod list (.csv)")
    _add_run_options(rn)
    rn.add_argument("--out", default="hamisim-out", metavar="DIR",
                    help="results folder, replaced atomically (default: %(default)s)")
    rn.set_defaults(func=cmd_run)

    cp = sub.add_parser(
        "compare", help="the same workload under several node and card policies",
        description="Run every combination of --node-policy and --gpu-policy values, each "
                    "with --seeds seeds, on the same workload; write one table and one "
                    "overlay plot.")
    cp.add_argument("cluster", metavar="CLUSTER", nargs="?")
    cp.add_argument("trace", metavar="TRACE", nargs="?")
    _add_run_options(cp, multi=True)
    cp.add_argument("--seeds", type=_positive_int, default=1, metavar="K",
                    help="seeds per policy: --seed, --seed+1, ... (default: 1)")
    cp.add_argument("--out", default="hamisim-compare", metavar="DIR",
                    help="results folder, replaced atomically (default: %(default)s)")
    cp.set_defaults(func=cmd_compare)

    pl = sub.add_parser("plot", help="redraw the figures of a results folder",
                        description="Redraw DIR/figures from DIR/timeseries of a 'run'.")
    pl.add_argument("dir", metavar="DIR")
    pl.set_defaults(func=cmd_plot)
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _percentage(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be 0..100, got {value}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 10:
        raise argparse.ArgumentTypeError(f"must be a positive fraction of capacity, got {value}")
    return value


def _add_run_options(p: argparse.ArgumentParser, multi: bool = False) -> None:
    many = {"action": "append"} if multi else {}
    p.add_argument("--gpu-policy", metavar="P", **many,
                   help="card policy, e.g. spread, binpack, mutex,binpack,numa "
                        "(overrides the cluster file; default: HAMi's spread)"
                        + ("; repeat to compare" if multi else ""))
    p.add_argument("--node-policy", metavar="P", **many,
                   help="node policy: HAMi's binpack (default) or spread, or one of the FGD "
                        "paper's research policies random, dotprod, gpuclustering, gpupacking, "
                        "bestfit, fgd (not HAMi behaviour)"
                        + ("; repeat to compare" if multi else ""))
    p.add_argument("--mode", choices=("replay", "fill"), default="replay",
                   help="replay: arrivals and departures in time; fill: the FGD paper's "
                        "protocol (one attempt per pod, no departures) (default: replay)")
    p.add_argument("--fill-to", type=float, default=130.0, metavar="PCT",
                   help="fill mode: submit pods until their GPU request reaches PCT%% of "
                        "capacity (default: 130)")
    p.add_argument("--load", type=_fraction, default=0.8, metavar="X",
                   help="replay: re-time arrivals (Poisson) to offered GPU load X, a fraction "
                        "of capacity (default: 0.8)")
    p.add_argument("--as-traced", action="store_true",
                   help="replay the trace's own timestamps instead of re-timing")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--retry", choices=("backoff", "none"), default="backoff",
                   help="replay: retry unschedulable pods with kube-scheduler's backoff, or "
                        "give each pod one attempt (default: backoff)")
    p.add_argument("--percentage-of-nodes-to-score", type=_percentage, metavar="N",
                   help="kube-scheduler's percentageOfNodesToScore (0 = adaptive default)")
    p.add_argument("--node-tie-break", choices=("last", "random"),
                   help="equal node scores: last in cluster order, or a seeded random pick")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet",
                   help="table format of the results (default: parquet)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: only on a terminal)")
    _add_backend(p)


def _spec(args: argparse.Namespace, **overrides):
    from .study import RunSpec
    if (args.cluster is None) != (args.trace is None):
        raise InputError(None, None, "give both CLUSTER and TRACE, or neither (bundled openb)")
    fields = dict(cluster=args.cluster, trace=args.trace, mode=args.mode,
                  load=None if args.as_traced else args.load, fill_to=args.fill_to,
                  seed=args.seed, backend=args.backend, retry=args.retry,
                  percentage_of_nodes_to_score=args.percentage_of_nodes_to_score,
                  node_tie_break=args.node_tie_break, progress=args.progress)
    fields.update(overrides)
    return RunSpec(**fields)


def cmd_run(args: argparse.Namespace) -> int:
    from .study import run, write_run
    spec = _spec(args, gpu_policy=args.gpu_policy, node_policy=args.node_policy)
    result = run(spec)
    label = result.summary["label"]
    out = write_run(result, args.out, args.format, title=label)
    r = result.summary["results"]
    rows = [("pods", r["pods"]), ("bound", r["bound"]), ("departed", r["departed"]),
            ("abandoned", r["abandoned"]), ("pending at end", r["pending_at_end"]),
            ("scheduling attempts", r["attempts"]),
            ("queueing delay p99 (s)", f"{r['queueing_delay_p99_s']:.1f}"),
            ("peak GPUs with a tenant", r.get("peak_gpu_allocated", 0)),
            ("mean fragmentation (% of GPUs)", f"{r.get('mean_frag_pct_of_capacity', 0):.2f}")]
    print(f"hamisim run: {label}, mode {spec.mode}, seed {spec.seed}")
    for k, v in rows:
        print(f"  {k:32s} {v}")
    print(f"results written to {out}/ (events, timeseries, summary.json, figures/)")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from .study import compare, policy_grid
    base = _spec(args)
    specs = policy_grid(args.node_policy or [None], args.gpu_policy or [None], args.seeds, base)
    table = compare(specs, args.out, args.format)
    cols = ["policy", "seed", "bound", "abandoned", "queueing_delay_p99_s",
            "peak_gpu_allocated", "mean_frag_pct_of_capacity", "final_unallocated_gpu_pct"]
    view = table[[c for c in cols if c in table.columns]]
    with_pd_options(lambda: print(view.to_string(index=False, float_format=lambda v: f"{v:.2f}")))
    print(f"results written to {args.out}/ (compare table, figures/compare.png, runs/)")
    return EXIT_OK


def with_pd_options(fn):
    import pandas as pd
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        fn()


def cmd_plot(args: argparse.Namespace) -> int:
    from .study import plot_folder
    try:
        paths = plot_folder(args.dir)
    except FileNotFoundError as err:
        raise InputError(None, None, str(err)) from None
    for p in paths:
        print(p)
    return EXIT_OK


def cmd_scenario(args: argparse.Namespace) -> int:
    from .bundled import bundled_scenarios, resolve_scenario
    from .scenario import format_table, load_scenario, run_scenario

    if args.list:
        for name, path in bundled_scenarios().items():
            print(f"{name:28s} {path}")
        return EXIT_OK
    if not args.file:
        raise InputError(None, None, "hamisim scenario: FILE is required (or --list)")
    scenario = load_scenario(str(resolve_scenario(args.file)))
    result = run_scenario(scenario, backend=args.backend)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_table(result))
    return EXIT_OK if result.ok else EXIT_EXPECTATION_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as err:
        print(f"hamisim: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except HamisimError as err:
        print(f"hamisim: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("hamisim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
