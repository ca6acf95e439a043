"""The ``hamisim`` command.

Every subcommand reports bad input as ``file:line: problem`` on stderr and
exits with status 2, never with a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import warnings
from time import perf_counter
from typing import Sequence

from hamisim._version import __version__
from hamisim.errors import HamisimError, InputError
from hamisim.sim.backend import BACKENDS
from hamisim.cluster import INIT_CONTAINER_USAGES

EXIT_OK, EXIT_EXPECTATION_FAILED, EXIT_BAD_INPUT = 0, 1, 2
#: --check found a broken invariant (hamisim.sim.checker); 130 = interrupted (Ctrl-C)
EXIT_INVARIANT, EXIT_INTERRUPTED = 3, 130
#: stopped by SIGTERM (``timeout``, a batch system): 128 + 15, as a shell reports it
EXIT_TERMINATED = 143
#: the console's reader closed the pipe (``| head``): 128 + SIGPIPE, as a shell reports it
EXIT_BROKEN_PIPE = 141


def _add_backend(p: argparse.ArgumentParser, python_policies: bool = False) -> None:
    if python_policies:
        p.add_argument("--backend", choices=BACKENDS, default=None,
                       help="placement engine: the compiled kernel (default) or the readable "
                            "pure-Python reference; both take identical decisions (default "
                            "with a python: policy: reference, the only one that runs it)")
        return
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
    sc.add_argument("--state", metavar="STATE",
                    help="initial state: pods running before the first step (DESIGN §4.4)")
    _add_backend(sc, python_policies=True)
    _add_check(sc)
    sc.set_defaults(func=cmd_scenario)

    rn = sub.add_parser(
        "run", help="replay a trace against a cluster (default: the bundled openb workload)",
        description="Simulate a pod trace on a cluster and write events, a per-pod table, "
                    "time series, a summary and figures. A native trace (.csv/.parquet/.jsonl) "
                    "is replayed as traced: its own pods, arrival times, durations and "
                    "deletions; --load re-times it. An openb pod list, whose timestamps load a "
                    "cluster to about 1%, is re-timed by default (--as-traced replays it). "
                    "With no CLUSTER and TRACE: the bundled Alibaba openb GPU cluster (1,213 "
                    "nodes, 6,212 GPUs) and its default pod list, re-timed to an 80% offered "
                    "GPU load, under HAMi's default policies.")
    rn.add_argument("cluster", metavar="CLUSTER", nargs="?",
                    help="cluster file (.yaml/.json) or openb node list (.csv)")
    rn.add_argument("trace", metavar="TRACE", nargs="?",
                    help="trace file (.csv/.parquet/.jsonl) or openb pod list (.csv)")
    _add_run_options(rn)
    rn.add_argument("--out", default="hamisim-out", metavar="DIR",
                    help="results folder, replaced atomically (default: %(default)s)")
    om = rn.add_argument_group(
        "Prometheus", "the run as OpenMetrics text with HAMi's and kube-scheduler's metric "
        "names, for 'promtool tsdb create-blocks-from openmetrics FILE DIR'")
    om.add_argument("--metrics-out", metavar="FILE",
                    help="write the time series as OpenMetrics text to FILE")
    om.add_argument("--metrics-start", type=_wall_clock, metavar="TIME",
                    help="wall-clock time of the simulation's time 0: ISO 8601 with a time "
                         "zone (2026-11-30T00:00:00Z) or Unix seconds (default: the time that "
                         "puts the last sample at the moment of the run, down to the minute; "
                         "printed and kept in summary.json)")
    om.add_argument("--metrics-interval", type=_positive_seconds, default=60.0, metavar="S",
                    help="seconds between samples, Prometheus's scrape interval "
                         "(default: %(default)g)")
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
    cp.add_argument("--workers", type=_positive_int, default=1, metavar="N",
                    help="run the runs on N processes at once (default: 1); the results "
                         "are the same")
    cp.add_argument("--keep-runs", action="store_true",
                    help="keep each run's whole results folder in DIR/runs/ (events, pods, "
                         "figures), so that 'hamisim explain --run' works on it")
    cp.add_argument("--out", default="hamisim-compare", metavar="DIR",
                    help="results folder, replaced atomically (default: %(default)s)")
    cp.set_defaults(func=cmd_compare)

    pl = sub.add_parser("plot", help="redraw the figures of a results folder",
                        description="Redraw DIR/figures from DIR/timeseries of a 'run'.")
    pl.add_argument("dir", metavar="DIR")
    pl.set_defaults(func=cmd_plot)

    rp = sub.add_parser(
        "report", help="rebuild the report.html of a results folder",
        description="Rebuild DIR/report.html from a results folder of 'run', 'compare', "
                    "'sweep' or 'plan': one self-contained page (figures embedded, no network) "
                    "with what was simulated, the headline table, every figure with a sentence "
                    "on how to read it, and the per-class and per-group tables.")
    rp.add_argument("dir", metavar="DIR")
    rp.set_defaults(func=cmd_report)

    im = sub.add_parser(
        "import", help="a cluster file, initial state and pending pods from kubectl dumps",
        description="Read 'kubectl get nodes -o json' (and 'kubectl get pods -A -o json') and "
                    "write DIR/cluster.yaml (cards from hami.io/node-nvidia-register, pair "
                    "scores, cordons, allocatable CPU and memory), DIR/state.yaml (the pods "
                    "holding resources now) and DIR/pending.jsonl (the pending pods as a "
                    "trace). DESIGN §4.4 describes the files.",
        epilog="Then: hamisim run DIR/cluster.yaml DIR/pending.jsonl --state DIR/state.yaml; "
               "hamisim explain DIR/cluster.yaml DIR/pending.jsonl --pod NAME --state "
               "DIR/state.yaml")
    im.add_argument("nodes", metavar="NODES", help="kubectl get nodes -o json output")
    im.add_argument("pods", metavar="PODS", nargs="?",
                    help="kubectl get pods -A -o json output (optional)")
    im.add_argument("--out", default="hamisim-import", metavar="DIR",
                    help="folder for the three files, replaced atomically "
                         "(default: %(default)s)")
    im.add_argument("--gpu-policy", default="spread", metavar="P",
                    help="card policy to write into the cluster file (a dump does not hold "
                         "hami-scheduler's; default: %(default)s)")
    im.add_argument("--node-policy", default="binpack", metavar="P",
                    help="node policy to write into the cluster file (default: %(default)s)")
    im.add_argument("--quotas", metavar="FILE",
                    help="kubectl get resourcequota -A -o json output: the limits HAMi "
                         "enforces (limits.nvidia.com/gpumem, limits.nvidia.com/gpucores) "
                         "go into the cluster file's quotas")
    im.set_defaults(func=cmd_import)

    ex = sub.add_parser(
        "explain", help="why a pod lands where it does, or stays pending, card by card",
        description="Explain one scheduling attempt with the reference implementation: per "
                    "node the node score, per card its score, its place in the sorted list, "
                    "the order Fit visited it and the first check that rejected it, then "
                    "the node sort and the result as 'kubectl describe pod' shows it "
                    "(FailedScheduling and HAMi's FilteringFailed events). Either a pod "
                    "against a cluster (and an initial state), or an attempt of a finished "
                    "run (--run DIR --pod NAME), replayed from its events table.",
        epilog="POD: a Kubernetes Pod or pod list (.yaml/.json, e.g. kubectl get pod -o "
               "json), a pod in the scenario 'create' form (.yaml/.json), or a trace "
               "(.csv/.jsonl/.parquet); --pod picks one by name or by name without its "
               "namespace.")
    ex.add_argument("cluster", metavar="CLUSTER", nargs="?",
                    help="cluster file (.yaml/.json) or openb node list (.csv)")
    ex.add_argument("podfile", metavar="POD", nargs="?", help="file holding the pod")
    ex.add_argument("--pod", metavar="NAME", help="the pod to explain")
    ex.add_argument("--state", metavar="STATE",
                    help="initial state: pods running on the cluster (DESIGN §4.4)")
    ex.add_argument("--run", metavar="DIR",
                    help="results folder of 'hamisim run': explain an attempt of --pod there")
    ex.add_argument("--attempt", type=_attempt_number, metavar="N",
                    help="with --run: the pod's N-th scheduling attempt (1 = first, -1 = "
                         "last; default: its last unschedulable one)")
    ex.add_argument("--gpu-policy", metavar="P", help="card policy (overrides the cluster file)")
    ex.add_argument("--node-policy", metavar="P", help="node policy (overrides the cluster file)")
    ex.add_argument("--percentage-of-nodes-to-score", type=_percentage, metavar="N",
                    help="kube-scheduler's percentageOfNodesToScore (0 = adaptive default)")
    ex.add_argument("--node", action="append", default=[], metavar="NAME",
                    help="print this node's cards even in a large cluster (repeatable)")
    ex.add_argument("--max-nodes", type=_nonnegative_int, default=20, metavar="N",
                    help="print every node's cards when HAMi evaluated at most N nodes "
                         "(default: %(default)s)")
    ex.add_argument("--json", action="store_true", help="print the explanation as JSON")
    ex.set_defaults(func=cmd_explain)

    df = sub.add_parser(
        "defrag", help="what-if: the fewest pod moves that free cards or make room for a pod",
        description="A what-if, not HAMi behaviour (HAMi never moves a running pod): the "
                    "shortest sequence of moves - evict a running pod of STATE and let HAMi "
                    "v2.10 place it again under the cluster's policies - that frees N more "
                    "cards (--free-cards), lets a pending pod fit (--fit), or frees as many "
                    "cards as --budget moves can. Every sequence of 1, 2, ... moves is tried up "
                    "to --max-moves (the first found is the shortest), then greedy; the plan "
                    "is replayed on a fresh scheduler before it is printed.")
    df.add_argument("cluster", metavar="CLUSTER", nargs="?", help="cluster file (.yaml/.json)")
    df.add_argument("state", metavar="STATE", nargs="?",
                    help="the running pods (DESIGN §4.4, e.g. from 'hamisim import')")
    df.add_argument("--run", metavar="DIR",
                    help="instead of CLUSTER STATE: the cluster of this 'hamisim run' results "
                         "folder and the pods running there at --at")
    df.add_argument("--at", type=_nonnegative, metavar="T",
                    help="with --run: the simulated time (s)")
    goal = df.add_mutually_exclusive_group()
    goal.add_argument("--free-cards", type=_positive_int, metavar="N",
                      help="free N more cards (no tenant)")
    goal.add_argument("--fit", metavar="PODS",
                      help="make room for a pending pod of this trace (.csv/.jsonl/.parquet; "
                           "--pod picks it, default the first)")
    df.add_argument("--pod", metavar="NAME", help="with --fit: the pod")
    df.add_argument("--budget", type=_positive_int, metavar="K",
                    help="at most K moves (alone: free as many cards as K moves can)")
    df.add_argument("--max-moves", type=_positive_int, default=3, metavar="D",
                    help="longest plan searched (default: %(default)s)")
    df.add_argument("--max-evaluations", type=_positive_int, default=20000, metavar="K",
                    help="placements tried before the search goes greedy "
                         "(default: %(default)s)")
    df.add_argument("--json", action="store_true", help="print the plan as JSON")
    df.set_defaults(func=cmd_defrag)

    su = sub.add_parser(
        "scaleup", help="what-if: the fewest new nodes per group that place the pending pods",
        description="A what-if, not HAMi behaviour: the cheapest nodes to add, per node group "
                    "of --groups (a cluster file whose groups are the kinds of node the "
                    "autoscaler can add, 'replicas' the most of each), so that every pod of "
                    "PENDING binds when the pods are placed together (one pass in "
                    "kube-scheduler's queue order, HAMi v2.10's decisions on the kernel, each "
                    "pod seeing the ones before), beside what HAMi's dry-run filter concludes "
                    "pod by pod. Exact search up to --max-evaluations additions, then greedy "
                    "with a lower bound.")
    su.add_argument("cluster", metavar="CLUSTER", nargs="?", help="cluster file (.yaml/.json)")
    su.add_argument("pending", metavar="PENDING", nargs="?",
                    help="the pending pods: a trace (.csv/.jsonl/.parquet), e.g. the "
                         "pending.jsonl of 'hamisim import'")
    su.add_argument("--run", metavar="DIR",
                    help="instead of CLUSTER PENDING --state: the cluster of this 'hamisim "
                         "run' results folder, the pods running there at --at (where the run "
                         "placed them) and the pods pending there then (their own requests, "
                         "in queue order); nothing departs during the plan")
    su.add_argument("--at", type=_nonnegative, metavar="T",
                    help="with --run: the simulated time (s)")
    su.add_argument("--groups", metavar="FILE", required=True,
                    help="node-group templates: a cluster file; each entry is a group, named "
                         "by its 'group' key, else its name_prefix (a single node: its name); "
                         "replicas is the most nodes it may add")
    su.add_argument("--state", metavar="STATE",
                    help="pods running on the cluster (DESIGN §4.4, e.g. from 'hamisim import')")
    su.add_argument("--cost", action="append", default=[], metavar="GROUP=X",
                    help="cost of one node of GROUP, by its group name or its entry's "
                         "name_prefix/name (default 1: the fewest nodes; repeatable)")
    su.add_argument("--max-evaluations", type=_positive_int, default=2000, metavar="K",
                    help="additions tried exhaustively before going greedy "
                         "(default: %(default)s)")
    su.add_argument("--json", action="store_true", help="print the plan as JSON")
    su.set_defaults(func=cmd_scaleup)

    sw = sub.add_parser(
        "sweep", help="run every cell of a sweep file (clusters x workloads x policies x seeds)",
        description="Run every combination of a sweep file's clusters (or node-group sizes), "
                    "workloads, policies and seeds (DESIGN §4.5), on a local process pool or a "
                    "Dask cluster; write one results table (a row per cell), each cell's "
                    "outputs and comparison plots. Exits 1 when a cell failed (the others "
                    "still run), 2 on bad input.")
    sw.add_argument("file", metavar="SWEEP", help="sweep file (.yaml/.yml/.json)")
    _add_sweep_options(sw, "hamisim-sweep")
    sw.set_defaults(func=cmd_sweep)

    pn = sub.add_parser(
        "plan", help="the fewest nodes of a node group that meet a target",
        description="Search the replicas of a node group for the smallest one at which a "
                    "workload meets a target such as 'pending_p99_s <= 60' (DESIGN §4.6); "
                    "write the explored curve as a table and a plot. Exits 1 when the "
                    "target is not met in the range or a cell failed, 2 on bad input.")
    pn.add_argument("file", metavar="PLAN", help="plan file (.yaml/.yml/.json)")
    pn.add_argument("--target", metavar="EXPR", action="append",
                    help="override the plan's target, e.g. 'abandoned_pct <= 1' or "
                         "'pending_p95_s of class train-8gpu <= 30min'; repeat for several "
                         "(every one must be met)")
    pn.add_argument("--vary", metavar="GROUP:min=A,max=B,cost=C", action="append", default=[],
                    help="size this node group too, within A..B nodes at cost C each "
                         "(repeat per group; replaces the plan file's 'vary')")
    pn.add_argument("--min", type=_positive_int, dest="min_nodes", metavar="N",
                    help="override the smallest node count searched")
    pn.add_argument("--max", type=_positive_int, dest="max_nodes", metavar="N",
                    help="override the largest node count searched")
    pn.add_argument("--max-evaluations", type=_positive_int, metavar="K",
                    help="override how many node counts the search may try (default 10)")
    _add_sweep_options(pn, "hamisim-plan")
    pn.set_defaults(func=cmd_plan)
    _add_validate(sub)
    return parser


def _add_sweep_options(p: argparse.ArgumentParser, out: str) -> None:
    p.add_argument("--out", default=out, metavar="DIR",
                   help="results folder; each cell is filed in DIR/cells/<id>/ as it "
                        "completes (default: %(default)s)")
    p.add_argument("--workers", type=_positive_int, metavar="N",
                   help="local worker processes (default: the CPUs available)")
    p.add_argument("--dask-scheduler", metavar="ADDR",
                   help="run the cells on a Dask cluster instead, e.g. tcp://host:8786 "
                        "(needs pip install 'hamisim[dask]')")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted run in DIR: finished cells are kept")
    p.add_argument("--overwrite", action="store_true",
                   help="start afresh in a DIR that holds an earlier run")
    p.add_argument("--retries", type=_nonnegative_int, default=2, metavar="N",
                   help="run a cell again when its worker dies, at most N times (default: 2)")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet",
                   help="table format of the results (default: parquet)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: only on a terminal)")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _attempt_number(text: str) -> int:
    value = int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("attempts count from 1 (-1 = the last), got 0")
    return value


def _wall_clock(text: str) -> float:
    from hamisim.studies.openmetrics import parse_start
    try:
        return parse_start(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _nonnegative(text: str) -> float:
    value = float(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _seed(text: str) -> int:
    value = int(text)
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must be an integer in 0..2**63-1, got {value}")
    return value


def _percentage(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be 0..100, got {value}")
    return value


def _lifetime(text: str) -> float:
    if text.strip().lower() in ("none", "inf"):
        return float("inf")
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds or 'none', "
                                         f"got {text}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 10:
        raise argparse.ArgumentTypeError(f"must be a positive fraction of capacity, got {value}")
    return value


def _scale_factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive factor (0.5 halves the trace, "
                                         f"1.3 adds 30 %), got {text}")
    return value


#: units --window accepts after a number (none: seconds)
_TIME_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _time_of_run(text: str) -> float:
    """Simulated time: seconds, or a number with a unit (90s, 30min, 2h, 7d)."""
    t = text.strip().lower()
    unit = next((u for u in sorted(_TIME_UNITS, key=len, reverse=True) if t.endswith(u)), "")
    try:
        value = float(t[:len(t) - len(unit)]) * _TIME_UNITS.get(unit, 1.0)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a time >= 0: seconds or a number with a "
                                         f"unit s, min, h, d (90s, 30min, 2h, 7d), got {text}")
    return value


class _Window(argparse.Action):
    """``--window START END``: two times of :func:`_time_of_run`, kept with the
    text as given (for the messages) in ``window_text``."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            times = tuple(_time_of_run(v) for v in values)
        except argparse.ArgumentTypeError as err:
            raise argparse.ArgumentError(self, str(err)) from None
        setattr(namespace, self.dest, times)
        setattr(namespace, "window_text", " ".join(values))


def _usage(text: str) -> str:
    if text not in INIT_CONTAINER_USAGES:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not one of {', '.join(INIT_CONTAINER_USAGES)}")
    return text


def _usages(text: str) -> list[str]:
    return [_usage(t.strip()) for t in text.split(",")]


def _add_run_options(p: argparse.ArgumentParser, multi: bool = False) -> None:
    many = {"action": "append"} if multi else {}
    p.add_argument("--gpu-policy", metavar="P", **many,
                   help="card policy, e.g. spread, binpack, mutex,binpack,numa, or your own "
                        "python:PATH.py:FUNCTION ordering the cards HAMi's Fit tries (readable "
                        "backend) (overrides the cluster file; default: HAMi's spread)"
                        + ("; repeat to compare" if multi else ""))
    p.add_argument("--node-policy", metavar="P", **many,
                   help="node policy: HAMi's binpack (default) or spread, or one of the FGD "
                        "paper's research policies random, dotprod, gpuclustering, gpupacking, "
                        "bestfit, fgd, or your own python:PATH.py:NAME (a function ranking "
                        "HAMi's fitting nodes, or a ModelPolicy class on the paper's model; "
                        "readable backend) (the last two: not HAMi behaviour)"
                        + ("; repeat to compare" if multi else ""))
    p.add_argument("--init-container-usage", default=None, metavar="U",
                   type=_usages if multi else _usage,
                   help="how a pod with GPU-less init containers is held on its cards: "
                        "hami-v2.10 (HAMi's own accounting, HAMi issue #2965) or corrected "
                        "(not HAMi: every container counted as what it is) (overrides the "
                        "cluster file's scheduler.init_container_usage)"
                        + ("; a comma list (hami-v2.10,corrected) gives a run of each" if multi
                           else ""))
    p.add_argument("--mode", choices=("replay", "fill"), default="replay",
                   help="replay: arrivals and departures in time; fill: the FGD paper's "
                        "protocol (one attempt per pod, no departures) (default: replay)")
    p.add_argument("--fill-to", type=_nonnegative, default=130.0, metavar="PCT",
                   help="fill mode: submit pods until their GPU request reaches PCT%% of "
                        "capacity (default: 130)")
    p.add_argument("--load", type=_fraction, default=None, metavar="X",
                   help="replay: re-time arrivals (Poisson) to offered GPU load X, a fraction "
                        "of the GPUs (default: a native trace as traced; an openb pod list "
                        "re-timed to 0.8)")
    p.add_argument("--scale", type=_scale_factor, default=None, metavar="F",
                   help="replay: the trace's own pods F times over, keeping their arrival "
                        "times and so the daily and weekly cycle (F < 1 keeps a seeded "
                        "share of the pods, F > 1 adds copies named POD-x1, ... arriving "
                        "within 5 min of their pod); replays as traced, not with --load")
    p.add_argument("--window", action=_Window, nargs=2, default=None,
                   metavar=("START", "END"),
                   help="replay: the span of simulated time the headline figures cover, "
                        "seconds or with a unit (0 7d); the means integrate over it, the "
                        "waits count the pods arriving in it (default: the trace's own "
                        "span, first to last arrival; the drain after it is reported apart)")
    p.add_argument("--pods", type=_positive_int, default=None, metavar="N",
                   help="re-timing: draw N pods from the trace, with replacement (default: "
                        "each pod once; openb: 40000)")
    p.add_argument("--max-lifetime", type=_lifetime, default=None, metavar="S",
                   help="re-timing: cap every pod's lifetime at S seconds, or 'none' "
                        "(default: no cap; openb: 3600)")
    p.add_argument("--as-traced", action="store_true",
                   help="replay the trace's own pods and timestamps (the default for native "
                        "traces; for openb pod lists instead of re-timing)")
    p.add_argument("--state", metavar="STATE",
                   help="initial state: pods already running at time 0 (DESIGN §4.4, e.g. "
                        "from 'hamisim import'); replays the trace as traced unless --load "
                        "is given")
    p.add_argument("--seed", type=_seed, default=0, help="random seed (default: 0)")
    p.add_argument("--retry", choices=("backoff", "none"), default="backoff",
                   help="replay: retry unschedulable pods with kube-scheduler's backoff, or "
                        "give each pod one attempt (default: backoff)")
    p.add_argument("--events", choices=("aggregated", "all"), default="aggregated",
                   help="the events table's failed attempts: one unschedulable row per pod "
                        "and distinct FailedScheduling message, with its count and first "
                        "and last time (default: aggregated), or a row per attempt (all)")
    p.add_argument("--percentage-of-nodes-to-score", type=_percentage, metavar="N",
                   help="kube-scheduler's percentageOfNodesToScore (0 = adaptive default)")
    p.add_argument("--node-tie-break", choices=("last", "random"),
                   help="equal node scores: last in cluster order, or a seeded random pick")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet",
                   help="table format of the results (default: parquet)")
    p.add_argument("--sample-interval", type=_nonnegative, default=None, metavar="S",
                   help="time series: one row per S simulated seconds (0 = a row per event "
                        "time; default: a row per event time up to 500,000 rows, then an "
                        "interval the run chooses and reports)")
    p.add_argument("--defrag-every", type=_positive_seconds, metavar="S",
                   help="what-if, not HAMi: a defragmenter every S simulated seconds moves "
                        "running pods (evict; HAMi places them again), each move the one "
                        "that empties the most cards")
    p.add_argument("--defrag-moves", type=_positive_int, default=1, metavar="K",
                   help="with --defrag-every: at most K moves per round (default: 1)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: only on a terminal)")
    _add_backend(p, python_policies=True)
    _add_check(p)


def _add_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true",
                   help="verify the simulation's invariants after every event (card "
                        "capacity, usage = bound pods' allocations, pod accounting); a "
                        "violation stops the run with exit status 3")


def _warn_option_policies(args: argparse.Namespace) -> None:
    from hamisim.hami.policy import warn_policy
    from hamisim.research.plugins import check_policy
    for option, kind in (("gpu_policy", "gpu"), ("node_policy", "node")):
        values = getattr(args, option, None)
        for value in [values] if isinstance(values, str) else values or []:
            warn_policy(f"--{option.replace('_', '-')}", value, kind, research_ok=True)
            check_policy(f"--{option.replace('_', '-')}", None, value, kind)


def _spec(args: argparse.Namespace, **overrides):
    from hamisim.studies.runs import RunSpec
    if (args.cluster is None) != (args.trace is None):
        raise InputError(None, None, "give both CLUSTER and TRACE, or neither (bundled openb)")
    knobs = [o for o, v in (("--load", args.load), ("--pods", args.pods),
                            ("--max-lifetime", args.max_lifetime)) if v is not None]
    if args.as_traced and knobs:
        raise InputError(None, None, f"--as-traced replays the trace's own times; "
                                     f"{' and '.join(knobs)} "
                                     f"{'re-times' if len(knobs) == 1 else 're-time'} it: "
                                     "give one or the other")
    if args.mode == "fill" and args.defrag_every is not None:
        raise InputError(None, None, "--defrag-every applies to replay mode (fill mode has "
                                     "no time for pods to move in)")
    if args.mode == "fill" and (knobs or args.as_traced):
        raise InputError(None, None, f"{(knobs or ['--as-traced'])[0]} applies to replay "
                                     "mode; fill mode submits pods one per second")
    if args.scale is not None and knobs:
        raise InputError(None, None, f"--scale multiplies the trace keeping its own times; "
                                     f"{' and '.join(knobs)} "
                                     f"{'re-times' if len(knobs) == 1 else 're-time'} it "
                                     "into Poisson arrivals: give one or the other")
    window = tuple(args.window) if args.window is not None else None
    if window is not None and not window[1] > window[0]:
        raise InputError(f"--window {args.window_text}", None,
                         "END must be after START")
    fields = dict(cluster=args.cluster, trace=args.trace, mode=args.mode,
                  as_traced=True if args.as_traced else None, load=args.load,
                  scale=args.scale, window=window,
                  n_pods=args.pods, max_lifetime=args.max_lifetime,
                  fill_to=args.fill_to, state=getattr(args, "state", None),
                  seed=args.seed, backend=args.backend, retry=args.retry,
                  percentage_of_nodes_to_score=args.percentage_of_nodes_to_score,
                  node_tie_break=args.node_tie_break, progress=args.progress,
                  check=getattr(args, "check", False), sample_interval=args.sample_interval,
                  defrag_interval=args.defrag_every, defrag_moves=args.defrag_moves,
                  init_container_usage=getattr(args, "init_container_usage", None),
                  events=getattr(args, "events", "aggregated"))
    fields.update(overrides)
    _warn_option_policies(args)
    return RunSpec(**fields)


def cmd_run(args: argparse.Namespace) -> int:
    from hamisim.studies.workers import FIGURE_MODULES, idle_cpus, start_fork_server
    # the figures are drawn on worker processes at the end, where CPUs are idle;
    # their fork server loads matplotlib now, on another core, while this one
    # reads and simulates (without a fork server, workers would each start Python
    # afresh; on busy CPUs they gain nothing: then they are drawn here)
    figure_workers = idle_cpus()
    if figure_workers < 2 or not start_fork_server(FIGURE_MODULES):
        figure_workers = 1
    from hamisim.studies.runs import default_timing_notice, prepare, run_backend, run_to_folder
    spec = _spec(args, gpu_policy=args.gpu_policy, node_policy=args.node_policy)
    metrics = _metrics_target(args)
    prep = prepare(spec)
    notice = default_timing_notice(prep)
    if notice:
        print(f"hamisim run: {notice}", flush=True)
    if spec.backend is None and run_backend(spec, prep) == "reference":
        print("hamisim run: the Python policy runs on the readable backend (--backend "
              "reference; the kernel cannot call Python)", flush=True)
    label = _label(spec, prep)
    result = None
    try:
        result = run_to_folder(spec, prep, args.out, args.format, title=label,
                               figure_workers=figure_workers)
        return _ran(args, spec, prep, label, result, metrics, figure_workers)
    except KeyboardInterrupt as err:
        # the folder is complete once run_to_folder returned, or when the interrupt
        # came during its final swap (atomic_folder): main() then says so
        if result is not None:
            err.results_written = args.out
        if getattr(err, "results_written", None) is not None and metrics is not None \
                and not hasattr(err, "unwritten"):      # before _write_metrics
            err.unwritten = f"the metrics file {metrics} was not written"
        raise


def _ran(args: argparse.Namespace, spec, prep, label: str, result, metrics: str | None,
         figure_workers: int) -> int:
    """The console lines of a run whose results folder is written, then
    ``--metrics-out``."""
    from hamisim.kube.queue import queue_label
    from hamisim.studies.report import engine_label
    from hamisim.studies.runs import default_cluster_path, describe_cluster, describe_workload
    out = args.out
    _print_warnings(spec.state, result.summary["inputs"].get("state_warnings", []))
    r = result.summary["results"]
    _warn_cut_window(args, r)
    rows = [("cluster", describe_cluster(prep, spec.cluster or str(default_cluster_path()))),
            *_family_rows(r),
            ("workload", describe_workload(prep)),
            *_offered_rows(prep),
            ("pods", r["pods"])]
    if r.get("initial_pods"):
        rows.append(("  running from the initial state", r["initial_pods"]))
    rows += [("bound", r["bound"]), ("departed", r["departed"])]
    if r.get("preempted"):
        by_stuck = r.get("unplaceable_preemptions", 0)
        rows.append(("  preempted (kube-scheduler)", r["preempted"] if not by_stuck else
                     f"{r['preempted']} ({by_stuck} by unplaceable pods)"))
    rows.append(("abandoned", r["abandoned"]))
    if r.get("rejected"):
        rows.append(("  refused by HAMi's admission webhook", r["rejected"]))
    rows += [("pending at end", r["pending_at_end"]),
             ("scheduling attempts", _attempts_text(r["attempts"], result.reused_attempts)),
             *_window_rows(r),
             ("pending time p50 / p99 / max (s)", _triple(r, "pending")
              + (" (without the unplaceable)" if r.get("unplaceable") else "")),
             *_unplaceable_rows(r),
             ("queueing delay p99 (s)", "none" if r.get("queueing_delay_p99_s") is None
              else f"{r['queueing_delay_p99_s']:.1f}"),
             ("peak GPUs with a tenant", r.get("peak_gpu_allocated", 0)),
             ("mean GPUs with a tenant (%)", f"{r.get('mean_gpu_allocated_pct', 0):.1f}"
              + _whole_run_note(r, "mean_gpu_allocated_pct")),
             ("mean fragmentation (% of GPUs)", f"{r.get('mean_frag_pct_of_capacity', 0):.2f}"
              f" (stranded {r.get('mean_stranded_pct_of_capacity', 0):.2f}, "
              f"unfit {r.get('mean_unfit_pct_of_capacity', 0):.2f})")]
    if r.get("multi_gpu_pods"):
        rows.append(("multi-GPU pods placed", _placement_line(r)))
    if r.get("mig_slots_total"):
        rows.append(("MIG slices in use (mean %)",
                     f"{r['mig_slots_used_mean_pct']:.1f} of {r['mig_slots_total']:,} "
                     f"(peak {r['mig_slots_used_peak']:,}), stranded by geometry "
                     f"{r['mig_slots_stranded_mean_pct']:.1f}"))
    if spec.defrag_interval is not None:
        rows.append(("defragmenter (what-if, not HAMi)",
                     f"{r.get('defrag_moves', 0):,} moves, every {spec.defrag_interval:g} s, "
                     f"at most {spec.defrag_moves} per round"))
    queue = ""
    if spec.mode == "replay":
        queue = (", one attempt per pod (--retry none)" if spec.retry == "none" else
                 f", {queue_label(prep.cluster.scheduler.kube_scheduler_version)}")
    print(f"hamisim run: {label}{_not_hamis(prep.cluster)}, mode {spec.mode}{queue}, "
          f"seed {spec.seed}")
    print(f"  {'engine':34s} {engine_label(result.summary['inputs'])}")
    for k, v in rows:
        print(f"  {k:34s} {v}")
    _print_breakdowns(r)
    _print_refusals(r)
    _print_unplaceable(r)
    _print_quirks(r)
    interval = r.get("timeseries_interval_s")
    if interval is not None:
        print(f"  the time series is sampled every {interval:.4g} s "
              f"({len(result.timeseries):,} rows; --sample-interval sets it, 0 = every event)")
    print(f"results written to {out}/ (report.html, events, pods, timeseries, summary.json, "
          "figures/)")
    print("  " + _timing_line(result.timings, r["pods"])
          + (" (figures drawn on worker processes)" if figure_workers > 1 else ""))
    if metrics is not None:
        _write_metrics(args, metrics, prep, result)
    return EXIT_OK


def _write_metrics(args: argparse.Namespace, target: str, prep, result) -> None:
    """``--metrics-out``: the file, its start on the console and in summary.json
    (the default start is the moment of the run, so that a rerun with
    ``--metrics-start`` can reproduce the bytes), and a warning where samples
    fall beyond Prometheus's default retention."""
    import time
    from pathlib import Path

    from hamisim.io.outputs import atomic_file, write_json
    from hamisim.studies.openmetrics import (
        default_start,
        retention_warning,
        series_end,
        utc,
        write_run_metrics,
    )
    now = time.time()
    start = args.metrics_start
    if start is None:
        start = default_start(now, series_end(result.timeseries, args.metrics_interval))
        print(f"hamisim run: --metrics-start {utc(start)} (default: the last sample at the "
              "moment of the run; give it to write this file again byte for byte)", flush=True)
    started = perf_counter()
    # an interrupt says what of this is missing (the results folder is complete)
    missing = f"the metrics file {target} was not written"      # atomic_file: none at all
    try:
        written = write_run_metrics(target, prep, result.timeseries, args.out, args.format,
                                    start, args.metrics_interval)
        missing = f"summary.json does not record the start of {target}"
        print(f"metrics written to {written.describe()} in {perf_counter() - started:.1f} s")
        warning = retention_warning(written.first, written.last, now)
        if warning:
            _print_warnings(f"--metrics-out {target}", [warning])
        result.summary["metrics"] = {"start": utc(start), "start_unix": start,
                                     "start_given": args.metrics_start is not None,
                                     "interval_s": args.metrics_interval,
                                     "series": written.series, "samples": written.samples}
        with atomic_file(Path(args.out) / "summary.json") as tmp:     # replaced whole
            write_json(result.summary, Path(tmp))
    except KeyboardInterrupt as err:
        err.unwritten = missing
        raise


def _metrics_target(args: argparse.Namespace) -> str | None:
    """``--metrics-out``, checked before the run: a file in a folder that exists
    (``--metrics-start`` only with it)."""
    target = getattr(args, "metrics_out", None)
    if target is None:
        if getattr(args, "metrics_start", None) is not None:
            raise HamisimError("--metrics-start needs --metrics-out FILE")
        return None
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise HamisimError(f"--metrics-out {target}: folder {folder} does not exist")
    if os.path.isdir(target):
        raise HamisimError(f"--metrics-out {target} is a folder; give a file name "
                         "(e.g. {target}/metrics.om)")
    return target


def _warn_cut_window(args: argparse.Namespace, r: dict) -> None:
    """A located warning where ``--window`` ends after the run did (its figures
    cover less than was asked)."""
    from hamisim.studies.runs import format_duration
    w = r.get("window") or {}
    if "requested_end_s" in w:
        _print_warnings(f"--window {getattr(args, 'window_text', '')}".rstrip(), [
            f"the run ended at {format_duration(w['end_s'])}, before END "
            f"({format_duration(w['requested_end_s'])}): the figures cover "
            f"{format_duration(w['start_s'])} - {format_duration(w['end_s'])}"])


def _offered_rows(prep) -> list[tuple[str, str]]:
    """The offered GPU load of the trace as given and as simulated (not in fill mode)."""
    from hamisim.studies.runs import describe_offered_load
    line = describe_offered_load(prep)
    return [("offered GPU load", line)] if line else []


def _window_rows(r: dict) -> list[tuple[str, str]]:
    """Which span the headline figures below cover, and the drain after it."""
    from hamisim.studies.runs import describe_window, format_duration
    rows = [("headline figures cover", describe_window(r))]
    drain = r.get("drain")
    if drain and drain["length_s"] > 0:
        mean = drain.get("mean_gpu_allocated_pct")
        rows.append(("  the rest of the run (drain)",
                     f"{format_duration(drain['length_s'])} (to "
                     f"{format_duration(drain['end_s'])})"
                     + (f", {drain['pods_arrived']:,} pods arriving" if drain["pods_arrived"]
                        else "")
                     + (f", mean GPUs with a tenant {mean:.1f} %" if mean is not None else "")
                     + "; apart from the figures below"))
    return rows


def _whole_run_note(r: dict, key: str) -> str:
    """`` (whole run X)`` where the headline covers a window and the whole run differs."""
    whole = (r.get("whole_run") or {}).get(key)
    return "" if whole is None or f"{whole:.1f}" == f"{r.get(key, 0):.1f}" else \
        f" (whole run {whole:.1f})"


def _label(spec, prep) -> str:
    """The run's policy label, as its summary will give it."""
    from hamisim.research.plugins import on_research_model
    s = prep.cluster.scheduler
    return (s.node_scheduler_policy if on_research_model(s.node_scheduler_policy)
            else f"node={s.node_scheduler_policy} card={s.gpu_scheduler_policy}")


def _not_hamis(cluster) -> str:
    """What the console says of a node or card policy that is not HAMi's."""
    from hamisim.registry import is_plugin_policy
    from hamisim.research.plugins import on_research_model
    s = cluster.scheduler
    if on_research_model(s.node_scheduler_policy):
        return " (a research policy on the FGD paper's model, not HAMi behaviour)"
    if is_plugin_policy(s.node_scheduler_policy) or is_plugin_policy(s.gpu_scheduler_policy):
        return " (your Python policy on HAMi's Filter and Fit, not HAMi behaviour)"
    return ""


def _attempts_text(attempts: int, reused: int) -> str:
    """The run's scheduling attempts, and how many of them the compiled engine
    answered from a failure it remembered (DESIGN §4: the same request failing
    again on nodes none of which changed)."""
    if not reused:
        return f"{attempts:,}"
    return (f"{attempts:,} ({reused:,} failures repeated on unchanged nodes, answered "
            "by the compiled engine's shortcut)")


def _timing_line(t: dict[str, float], pods: int) -> str:
    """Where the time went: reading, simulating (the scheduler's decisions and the
    engine's own work) and writing."""
    own = t.get("simulate", 0.0) - t.get("decisions", 0.0)
    per_pod = f" = {1e6 * own / pods:.1f} µs per pod" if pods else ""
    return (f"time {sum(v for k, v in t.items() if k != 'decisions'):.1f} s: read cluster "
            f"{t.get('read_cluster', 0):.2f} s, read trace {t.get('read_trace', 0):.2f} s, "
            f"prepare workload {t.get('prepare_workload', 0):.2f} s, find unplaceable pods "
            f"{t.get('unplaceable_check', 0):.2f} s, simulate "
            f"{t.get('simulate', 0):.2f} s (scheduler decisions {t.get('decisions', 0):.2f} s, "
            f"engine {own:.2f} s{per_pod}), write {t.get('write', 0):.2f} s")


def _family_rows(r: dict) -> list[tuple[str, str]]:
    """A mixed cluster's device families, and what hamisim assumed of their deployment."""
    families = r.get("families", [])
    if not families:
        return []
    rows = [("device families", ", ".join(f"{f['family']} ({f['cards']:,} cards)"
                                          for f in families))]
    notes = {f["vendor"].split()[0]: f["assumed"] for f in families if f.get("assumed")}
    rows += [(f"  {vendor}", note) for vendor, note in notes.items()]
    return rows


def _triple(r: dict, prefix: str) -> str:
    values = [r.get(f"{prefix}_{q}_s") for q in ("p50", "p99", "max")]
    return " / ".join("-" if v is None else f"{v:.1f}" for v in values)


def _print_breakdowns(r: dict, max_rows: int = 12) -> None:
    """Per pod class and per node group, the waits a person acts on."""
    classes = r.get("classes", [])
    if len(classes) > 1:
        rows = [(c["class"][:60], f"{c['pods']:,}", f"{c['bound']:,}", _triple(c, "pending"))
                for c in classes[:max_rows]]
        _print_table(("by pod class", "pods", "bound", "pending p50 / p99 / max (s)"), rows)
        if len(classes) > max_rows:
            print(f"    ... {len(classes) - max_rows} more classes in summary.json")
    groups = r.get("groups", [])
    if len(groups) > 1:
        rows = []
        for g in groups[:max_rows]:
            p99 = g.get("queueing_delay_p99_s")
            # a group of no GPUs (CPU nodes, cards hamisim does not count) has no shares
            share = (lambda key: f"{g.get(key, 0):.1f}") if g["gpus"] else (lambda key: "-")
            rows.append((g["group"][:40], f"{g['gpus']:,}",
                         share("mean_gpu_allocated_pct"),
                         share("mean_stranded_pct_of_gpus"),
                         share("mean_unfit_pct_of_gpus"),
                         "-" if p99 is None else f"{p99:.1f}"))
        _print_table(("by node group", "GPUs", "% with a tenant", "% stranded", "% unfit",
                      "queueing delay p99 (s)"), rows)
        if len(groups) > max_rows:
            print(f"    ... {len(groups) - max_rows} more groups in summary.json")
    families = r.get("families", [])
    if families:
        # a mixed cluster: each family in its own units (memory of one family's
        # cards is never added to another's)
        pct = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
        rows = [(f["family"], f"{f['cards']:,}", pct(f.get("mean_gpu_allocated_pct")),
                 pct(f.get("mean_memory_allocated_pct")), pct(f.get("mean_cores_allocated_pct"))
                 + (" CU" if f["cores_unit"] == "compute units" else ""),
                 f"{f['pods']:,}", _triple(f, "pending")) for f in families]
        _print_table(("by device family", "cards", "% with a tenant", "% memory", "% cores",
                      "pods", "pending p50 / p99 / max (s)"), rows)


def _print_refusals(r: dict, max_rows: int = 12) -> None:
    """Per namespace, the creations HAMi's webhook refused for the quota and
    what became of the pods (results.quota_refusals)."""
    spaces = r.get("quota_refusals", [])
    if not spaces:
        return
    rows = [(x["namespace"][:40], f"{x['refused_creations']:,}", f"{x['pods_refused']:,}",
             f"{x['never_created']:,}", f"{x['created_later']:,}",
             f"{x['deleted_before_created']:,}", f"{x['waiting_at_end']:,}")
            for x in spaces[:max_rows]]
    _print_table(("refused by the quota webhook", "creations", "pods", "bare: never",
                  "owned: created later", "deleted first", "still waiting"), rows)
    if len(spaces) > max_rows:
        print(f"    ... {len(spaces) - max_rows} more namespaces in summary.json")


def _unplaceable_rows(r: dict) -> list[tuple[str, str]]:
    """The console's line for the pods no node could hold even empty."""
    n = r.get("unplaceable", 0)
    if not n:
        return []
    return [("unplaceable (no node, even empty)",
             f"{n:,} pods, pending p50 / p99 / max (s) {_triple(r, 'unplaceable_pending')}, "
             f"caused {r.get('unplaceable_preemptions', 0):,} of "
             f"{r.get('preempted', 0):,} preemptions")]


def _print_compare_quirks(table) -> None:
    """The runs HAMi's init-container accounting double-booked (compare's columns
    of hamisim.hami.quirks.QUIRK_COLUMNS), one line each."""
    from hamisim.hami.quirks import CORRECTED_FLAG
    if "init_pods_underbooked" not in table.columns:
        return
    hit = table[table["init_pods_underbooked"] > 0]
    if not len(hit):
        return
    print("\nHAMi's init-container accounting (HAMi #2965, reproduced) moved these runs:")
    for _, row in hit.iterrows():
        print(f"  {row['policy']} seed {row['seed']}: {row['init_pods_underbooked']:,} pods "
              f"booked below what they use, {row['cards_overcommitted']:,} cards over their "
              f"limits ({row['overcommitted_card_hours']:,.1f} card-hours)")
    if not (table["init_container_usage"] == "corrected").any():
        print(f"  the corrected runs: {CORRECTED_FLAG} (or hami-v2.10,corrected: both)")


def _print_quirks(r: dict) -> None:
    """HAMi v2.10's quirks that moved this run, in numbers (results.hami_quirks)."""
    from hamisim.hami.quirks import quirk_lines
    lines = quirk_lines(r.get("hami_quirks"))
    if not lines:
        return
    print("  HAMi quirks that moved this run (HAMi v2.10 behaviour, reproduced; "
          "summary.json results.hami_quirks):")
    for line in lines:
        print(f"    {line}")


def _print_unplaceable(r: dict, max_rows: int = 12) -> None:
    """The unplaceable pods by reason, with a few of their names."""
    reasons = r.get("unplaceable_reasons", [])
    if not reasons:
        return
    rows = [(f"{x['pods']:,}", x["reason"], ", ".join(x["examples"])
             + (", ..." if x["pods"] > len(x["examples"]) else ""))
            for x in reasons[:max_rows]]
    print("  unplaceable pods (no node of the cluster holds them even empty; they queue,")
    print("  fail and preempt as in the cluster, apart from the percentiles above):")
    width = max(len(a) for a, _, _ in rows)
    for count, reason, names in rows:
        print(f"    {count.rjust(width)}  {reason}: {names}")
    if len(reasons) > max_rows:
        print(f"    ... {len(reasons) - max_rows} more reasons in summary.json")


def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Rows under a header, the first column left-aligned, the others right."""
    widths = [max(len(str(x[c])) for x in (header, *rows)) for c in range(len(header))]
    for k, row in enumerate((header, *rows)):
        cells = [str(v).ljust(widths[0]) if c == 0 else str(v).rjust(widths[c])
                 for c, v in enumerate(row)]
        print("  " + "  ".join(cells).rstrip())


def cmd_compare(args: argparse.Namespace) -> int:
    from hamisim.studies.runs import COMPARE_COLUMNS, compare, policy_grid
    usages = args.init_container_usage or [None]
    base = _spec(args, init_container_usage=usages[0])
    specs = policy_grid(args.node_policy or [None], args.gpu_policy or [None], args.seeds, base,
                        usages)
    table = compare(specs, args.out, args.format, announce=_announce, workers=args.workers,
                    keep_runs=args.keep_runs)
    view = table[[c for c in COMPARE_COLUMNS[base.mode] if c in table.columns]]
    with_pd_options(lambda: print(view.to_string(index=False, float_format=lambda v: f"{v:.2f}")))
    _print_compare_engines(table)
    _print_compare_window(table, base)
    _print_compare_unplaceable(table)
    _print_compare_quirks(table)
    if base.mode == "replay":
        _print_class_waits(args.out, args.format)
    print(f"results written to {args.out}/ (report.html, compare, compare_classes, "
          f"compare_groups, figures/compare.png, runs/)")
    return EXIT_OK


def _print_compare_engines(table) -> None:
    """Which engine ran the comparison's runs: one line when all ran on one."""
    from hamisim.studies.report import engine_label
    labels = {p: engine_label({"engine": e, "engine_reason": r if isinstance(r, str) else None})
              for p, e, r in zip(table["policy"], table["engine"], table["engine_reason"])}
    if len(set(labels.values())) == 1:
        print(f"\nengine: {next(iter(labels.values()))}, every run")
    else:
        print("\nengine: " + "; ".join(f"{p} {label}" for p, label in labels.items()))


def _print_compare_window(table, spec) -> None:
    """The span the table's headline figures cover, and the offered GPU load of
    the trace as given and as simulated (replay mode)."""
    from hamisim.studies.runs import format_duration
    if "window_start_s" not in table.columns:
        return
    spans = {(a, b) for a, b in zip(table["window_start_s"], table["window_end_s"])
             if a == a and a is not None}
    what = "--window" if spec.window is not None else "the trace's span, first to last arrival"
    if not spans:
        print("headline figures cover: the whole run of each")
    else:
        text = "; ".join(f"{format_duration(a)} - {format_duration(b)}" for a, b in sorted(spans))
        print(f"headline figures cover: {text} ({what}; the drain after it apart, in "
              "each run's summary.json)")
    given, simulated = table.get("offered_gpu_load_as_given"), table.get("offered_gpu_load")
    if given is None or given.isna().all():
        return
    line = f"offered GPU load: {100 * given.iloc[0]:.1f} % as traced"
    if spec.scale is not None or not simulated.equals(given):
        lo, hi = 100 * simulated.min(), 100 * simulated.max()
        how = (f"scaled x{spec.scale:g} (--scale)" if spec.scale is not None
               else "re-timed (Poisson arrivals, --load)")
        line += f"; {lo:.1f} %" + (f" - {hi:.1f} %" if f"{hi:.1f}" != f"{lo:.1f}" else "") \
            + f" {how}"
    print(line)


def _print_compare_unplaceable(table) -> None:
    """The comparison's own line for the pods no node could hold even empty (the
    same pods under every policy: their waits are left out of the table above)."""
    if "unplaceable" not in table.columns or not table["unplaceable"].max():
        return
    n = int(table["unplaceable"].max())
    line = (f"\nunplaceable: {n:,} pods no node holds even empty, left out of the pending "
            "percentiles above")
    if "unplaceable_preemptions" in table.columns:
        by = table.groupby("policy", sort=False)["unplaceable_preemptions"].median()
        line += "; preemptions they caused (median over seeds): " + ", ".join(
            f"{p} {v:g}" for p, v in by.items())
    print(line)


def _print_class_waits(out: str, fmt: str) -> None:
    """Queueing delay p99 per pod class and policy (median over seeds)."""
    import pandas as pd

    from hamisim.io.outputs import read_table
    classes = read_table(f"{out}/compare_classes.{fmt}")
    if classes.empty:
        return
    pivot = classes.pivot_table(index="class", columns="policy", values="pending_p99_s",
                                aggfunc="median", sort=False)
    print("\npending time p99 (s) by pod class (median over seeds):")
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.max_colwidth", 60):
        print(pivot.to_string(float_format=lambda v: f"{v:.1f}"))


def _placement_line(r: dict) -> str:
    """The summary's multi-GPU placement figures, those the cluster describes."""
    from hamisim.studies.report import placement_words
    return ", ".join([f"{r['multi_gpu_pods']:,}", *placement_words(r)])


def _announce(line: str) -> None:
    print(f"hamisim compare: {line}", flush=True)


def with_pd_options(fn):
    import pandas as pd
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        fn()


def cmd_report(args: argparse.Namespace) -> int:
    from hamisim.studies.report import write_report
    try:
        path = write_report(args.dir)
    except (ValueError, KeyError, OSError) as err:     # not (or a damaged) results folder
        raise InputError(args.dir, None, f"cannot build a report: {err}") from None
    print(path)
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    from hamisim.studies.runs import plot_folder
    try:
        paths = plot_folder(args.dir)
    except FileNotFoundError as err:
        raise InputError(None, None, str(err)) from None
    except (ValueError, KeyError, OSError) as err:     # a damaged results folder
        raise InputError(args.dir, None, "not a readable results folder of 'hamisim run' "
                                         f"({type(err).__name__}: {err})") from None
    for p in paths:
        print(p)
    return EXIT_OK


@contextlib.contextmanager
def _cells_kept_note(out: str):
    """On Ctrl-C, say that a sweep's finished cells are kept (each is filed as it completes)."""
    try:
        yield
    except KeyboardInterrupt:
        print(f"hamisim: finished cells are kept in {out}/cells; --resume continues",
              file=sys.stderr)
        raise


def _sweep_kwargs(args: argparse.Namespace) -> dict:
    if args.resume and args.overwrite:
        raise InputError(None, None, "give --resume or --overwrite, not both")
    if args.workers is not None and args.dask_scheduler:
        raise InputError(None, None, "give --workers or --dask-scheduler, not both")
    return dict(workers=args.workers, dask_scheduler=args.dask_scheduler, resume=args.resume,
                overwrite=args.overwrite, fmt=args.format, retries=max(args.retries, 0),
                progress=args.progress)


def cmd_sweep(args: argparse.Namespace) -> int:
    from hamisim.studies.sweep import format_report, load_sweep, run_sweep
    sweep = load_sweep(args.file)
    with _cells_kept_note(args.out):
        outcome = run_sweep(sweep, args.out, **_sweep_kwargs(args))
    sys.stdout.write(format_report(outcome))
    return EXIT_OK if outcome.failed.empty else EXIT_EXPECTATION_FAILED


def cmd_plan(args: argparse.Namespace) -> int:
    from hamisim.studies.plan import (
        MultiPlanOutcome, format_multi_plan_report, format_plan_report, load_plan, run_plan)
    plan = load_plan(args.file, target=args.target, min_nodes=args.min_nodes,
                     max_nodes=args.max_nodes, max_evaluations=args.max_evaluations,
                     vary=args.vary)
    with _cells_kept_note(args.out):
        outcome = run_plan(plan, args.out, **_sweep_kwargs(args))
    sys.stdout.write(format_multi_plan_report(outcome) if isinstance(outcome, MultiPlanOutcome)
                     else format_plan_report(outcome))
    return EXIT_OK if outcome.answer is not None and not outcome.failed \
        else EXIT_EXPECTATION_FAILED


def cmd_scenario(args: argparse.Namespace) -> int:
    from hamisim.io.bundled import bundled_scenarios, resolve_scenario
    from hamisim.io.scenariofile import load_scenario
    from hamisim.studies.scenario import format_table, run_scenario

    if args.list:
        for name, path in bundled_scenarios().items():
            print(f"{name:28s} {path}")
        return EXIT_OK
    if not args.file:
        raise InputError(None, None, "hamisim scenario: FILE is required (or --list)")
    scenario = load_scenario(str(resolve_scenario(args.file)), state=args.state)
    if scenario.state is not None:
        _print_warnings(args.state, scenario.state.warnings)
    result = run_scenario(scenario, backend=args.backend, check=args.check)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_table(result))
    return EXIT_OK if result.ok else EXIT_EXPECTATION_FAILED


def _print_warnings(where: str | None, messages: Sequence[str]) -> None:
    for m in messages:
        print(f"hamisim: {where}: warning: {m}" if where else f"hamisim: warning: {m}",
              file=sys.stderr)


def cmd_import(args: argparse.Namespace) -> int:
    from hamisim.cluster import SchedulerConfig
    from hamisim.io.kubeimport import import_kubectl, write_import
    result = import_kubectl(args.nodes, args.pods, SchedulerConfig(
        gpu_scheduler_policy=args.gpu_policy, node_scheduler_policy=args.node_policy),
        quotas_path=args.quotas)
    files = write_import(result, args.out)
    _print_warnings(None, result.warnings)
    c = result.cluster
    cards = c.n_cards
    other = len(c.unsimulated_cards())
    cordoned = sum(len(n.cordon) for n in c.nodes)
    registered = sum(1 for n in c.nodes if n.registered)
    holding = sum(1 for p in result.state.pods if any(p.containers))
    print(f"hamisim import: {len(c.nodes)} nodes ({registered} with HAMi cards, {cards} cards"
          + (f", {other} more not counted as GPUs (type not NVIDIA)" if other else "")
          + (f", {cordoned} cordoned" if cordoned else "") + ")")
    if result.pods_path is not None:
        print(f"  {len(result.state.pods)} running pods ({holding} holding cards), "
              f"{len(result.pending)} pending pods"
              + (f", {result.skipped_finished} finished pods skipped"
                 if result.skipped_finished else "")
              + (f", {result.skipped_elsewhere} pods on nodes not in {args.nodes} skipped"
                 if result.skipped_elsewhere else ""))
    if c.quotas:
        print(f"  HAMi ResourceQuota limits for {len(c.quotas)} namespace"
              f"{'s' if len(c.quotas) != 1 else ''}: {', '.join(sorted(c.quotas))}")
    print(f"  wrote {', '.join(str(p) for p in files.values())}")
    if "pending" in files:
        first = result.pending[0].pod.name
        print("next:")
        print(f"  hamisim run {files['cluster']} {files['pending']} --state {files['state']} "
              f"--out {args.out}-run")
        print(f"  hamisim explain {files['cluster']} {files['pending']} --pod {first} "
              f"--state {files['state']}")
    return EXIT_OK


def cmd_defrag(args: argparse.Namespace) -> int:
    import dataclasses

    from hamisim.io.clusterfile import load_cluster
    from hamisim.io.initialstate import load_state
    from hamisim.io.traces import read_trace
    from hamisim.studies.defrag import plan_defrag
    if args.free_cards is None and args.fit is None and args.budget is None:
        raise HamisimError("defrag needs a goal: --free-cards N, --fit PODS or --budget K")
    if args.pod is not None and args.fit is None:
        raise HamisimError("--pod needs --fit PODS")
    requests = None
    if args.run is not None:
        if args.cluster is not None or args.at is None:
            raise HamisimError("--run DIR takes --at T and no CLUSTER STATE")
        from hamisim.studies.defrag import state_at
        cluster, state, requests = state_at(args.run, args.at)
        where = f"{args.run} at t={args.at:g} s"
    else:
        if args.cluster is None or args.state is None or args.at is not None:
            raise HamisimError("defrag needs CLUSTER STATE, or --run DIR --at T")
        cluster = load_cluster(args.cluster)
        state = load_state(args.state, cluster)
        where = args.cluster
    fit = None
    if args.fit is not None:
        trace = read_trace(args.fit)
        names = trace.names
        if not names:
            raise InputError(args.fit, None, "no pod in the file")
        if args.pod is not None and args.pod not in names:
            raise InputError(args.fit, None, f"no pod named '{args.pod}'")
        fit = trace.trace_pod(names.index(args.pod) if args.pod else 0).pod
    plan = plan_defrag(cluster, state, free_cards=args.free_cards, fit=fit, budget=args.budget,
                       requests=requests, max_moves=args.max_moves,
                       max_evaluations=args.max_evaluations)
    if args.json:
        out = dataclasses.asdict(plan)
        print(json.dumps(out, indent=2, sort_keys=True))
        return EXIT_OK
    print(f"hamisim defrag (a what-if, not HAMi behaviour): {where}, "
          f"{len(state)} running pods; goal: {plan.goal}")
    if plan.kept_on_mig:
        one = plan.kept_on_mig == 1
        print(f"  {plan.kept_on_mig} pod{'' if one else 's'} holding a MIG instance kept where "
              f"{'it is' if one else 'they are'} (moving MIG instances is not modelled)")
    if plan.reached and not plan.moves:
        print("  no move needed")
    if not plan.reached and plan.moves:
        print("  the best plan found does not reach the goal (shown for what it changes; "
              "carrying it out evicts pods for less than was asked):")
    for k, m in enumerate(plan.moves, 1):
        mig = f" (MIG {', '.join(m.to_mig)})" if m.to_mig else ""
        print(f"  {k}. move {m.pod}: {m.from_node} {', '.join(m.from_cards)} -> "
              f"{m.to_node} {', '.join(m.to_cards)}{mig}")
    tried = f"{plan.evaluations:,} placements tried"
    if args.free_cards is None and fit is None:         # --budget alone
        how = (f"the best of every plan of up to {args.budget} moves ({tried})"
               if plan.method == "exact" else
               f"greedy after every plan of up to {plan.shortest_possible - 1} moves ({tried})")
    else:
        how = (f"shortest possible ({tried})" if plan.method == "exact" else
               f"greedy; no plan of fewer than {plan.shortest_possible} moves exists ({tried})")
    if not plan.reached:
        # which limit stopped the exhaustive search
        how += (f"; --max-evaluations {args.max_evaluations:,} bounds the search"
                if plan.evaluations >= args.max_evaluations else
                f"; --max-moves {args.max_moves} bounds the search")
    print(f"  goal {'reached' if plan.reached else 'NOT reached'}: {how}")
    print(f"  cards with no tenant: {plan.zero_tenant_before} -> {plan.zero_tenant_after}; "
          f"free memory on cards with a tenant: {plan.scattered_mib_before:,} -> "
          f"{plan.scattered_mib_after:,} MiB")
    print(f"  fragmentation (FGD, over the typical shapes of the pods here"
          f"{' and the pending one' if fit is not None else ''}): "
          f"{plan.frag_before:.2f} -> {plan.frag_after:.2f} GPUs, of which stranded by "
          f"placement {plan.stranded_before:.2f} -> {plan.stranded_after:.2f}")
    print("  each move evicts the pod; HAMi places it again as it places a new pod "
          "(the plan was replayed on a fresh scheduler)")
    return EXIT_OK if plan.reached else EXIT_EXPECTATION_FAILED


def cmd_scaleup(args: argparse.Namespace) -> int:
    from hamisim.io.clusterfile import load_cluster
    from hamisim.io.initialstate import load_state
    from hamisim.io.traces import read_trace
    from collections import Counter

    from hamisim.studies.scaleup import (
        dry_run_verdicts,
        node_groups,
        plan_scaleup,
        queue_order,
        unplaceable_pending,
    )
    costs = {}
    for item in args.cost:
        group, sep, value = item.partition("=")
        try:
            costs[group.strip()] = float(value)
        except ValueError:
            raise HamisimError(f"--cost {item}: expected GROUP=NUMBER") from None
        if not sep:
            raise HamisimError(f"--cost {item}: expected GROUP=NUMBER")
    if args.run is not None:
        if args.cluster is not None or args.state is not None or args.at is None:
            raise HamisimError("scaleup --run DIR takes --at T and no CLUSTER PENDING or "
                               "--state (the run gives them)")
        from hamisim.studies.defrag import recorded_at
        at = recorded_at(args.run, args.at, "scaleup")
        cluster, state, pods = at.cluster, at.state, at.pending
        where = f"{args.run} at t={args.at:g} s"
    else:
        if args.cluster is None or args.pending is None or args.at is not None:
            raise HamisimError("scaleup needs CLUSTER PENDING, or --run DIR --at T")
        cluster = load_cluster(args.cluster)
        state = load_state(args.state, cluster) if args.state else None
        pods = queue_order(read_trace(args.pending))
        where = args.cluster
    templates = load_cluster(args.groups)
    try:
        groups = node_groups(templates, cluster, costs)
    except ValueError as err:
        raise HamisimError(str(err)) from None
    # pods no group can place are named, and the plan is for the others
    impossible = unplaceable_pending(cluster, groups, pods)
    plan = plan_scaleup(cluster, groups, [p for p in pods if p.name not in impossible],
                        state, args.max_evaluations)
    verdicts = dry_run_verdicts(cluster, groups, pods)
    if args.json:
        print(json.dumps({"plan": plan.__dict__, "groups": [
            {"group": g.name, "max_new": g.max_new, "cost": g.cost, "existing": g.existing}
            for g in groups], "dry_run": verdicts, "unplaceable": impossible},
            indent=2, sort_keys=True, default=str))
        return EXIT_OK
    print(f"hamisim scaleup (a what-if, not HAMi behaviour): {len(pods)} pending pods on "
          f"{where} ({len(cluster.nodes)} nodes, {cluster.n_cards} GPUs"
          f"{f', {len(state)} pods running' if state else ''})")
    for g in groups:
        cards = g.template.cards
        kind = f"{len(cards)} x {cards[0].type}" if cards else "no GPU"
        print(f"  group {g.name}: {g.existing} node{'s' if g.existing != 1 else ''} now, up "
              f"to {g.max_new} more at cost {g.cost:g} each ({kind})")
    if impossible:
        print(f"  {len(impossible)} pods no group can place (no node of the cluster or of "
              f"any group holds them even empty); the plan is for the other {plan.pending}:")
        for why, names in _by_reason(impossible).items():
            print(f"    {len(names)}  {why}: {', '.join(names[:5])}"
                  f"{', ...' if len(names) > 5 else ''}")
    print(f"  without new nodes: {plan.placed_now} of {plan.pending} placed")
    if plan.add is None:
        print(f"  no addition places every pod: with the most nodes of every group "
              f"{plan.placed} are placed; never placed: {', '.join(plan.unplaced[:10])}"
              f"{' ...' if len(plan.unplaced) > 10 else ''}")
    else:
        added = ", ".join(f"{name} +{n}" for name, n in plan.add.items())
        how = ("exact: the cheapest possible" if plan.method == "exact" else
               f"greedy: every addition cheaper than {plan.lower_bound:g} was tried and "
               f"fails, so the optimum costs at least that")
        print(f"  add {added} (cost {plan.cost:g}; {how}; {plan.evaluations} additions "
              f"scheduled)")
        _print_scaleup_ip(plan)
    print("  HAMi's dry-run filter, pod by pod (each pod alone on an empty template node):")
    for g in groups:
        fits = sum(1 for v in verdicts.values() if v[g.name] == "fits")
        print(f"    {g.name}: {fits} of {len(pods)} pods fit one new node")
        refusals = Counter(v[g.name] for v in verdicts.values() if v[g.name] != "fits")
        for why, n in refusals.most_common():
            print(f"      {n} refused: {why}")
    return EXIT_OK


def _print_scaleup_ip(plan) -> None:
    """The integer program's line of ``hamisim scaleup``: its proven bound, its
    own addition and what simulating it showed, the gap of a greedy answer."""
    if plan.ip_cost is None:
        return
    ip = ", ".join(f"{name} +{n}" for name, n in plan.ip_add.items())
    seen = ("simulated: places every pod, so it is the optimum" if plan.ip_confirmed
            else "simulated: HAMi's placement leaves pods unplaced, so the search went on "
                 "from that cost")
    print(f"  integer program (aggregate capacities, a proven lower bound): cost "
          f"{plan.ip_cost:g} with {ip}; {seen}"
          + (f"; {plan.ip_pruned} addition{'s' if plan.ip_pruned != 1 else ''} ruled out "
             "without simulating" if plan.ip_pruned else ""))
    if plan.method == "greedy":
        print(f"  gap of the greedy answer to the proven bound: {100 * plan.gap:.1f} %")


def _by_reason(reasons: dict[str, str]) -> dict[str, list[str]]:
    """``{reason: pod names}`` from ``{pod name: reason}``, most pods first."""
    out: dict[str, list[str]] = {}
    for name, why in reasons.items():
        out.setdefault(why, []).append(name)
    return dict(sorted(out.items(), key=lambda kv: -len(kv[1])))


def cmd_explain(args: argparse.Namespace) -> int:
    import dataclasses

    from hamisim.explain import explain_pod, explain_run, format_text, load_pod
    if args.run is not None:
        if args.cluster is not None or args.podfile is not None or args.state is not None:
            raise InputError(None, None, "with --run, give only --pod NAME (the run's own "
                                         "cluster, trace and state are used)")
        if args.pod is None:
            raise InputError(None, None, "--run needs --pod NAME")
        exp = explain_run(args.run, args.pod, args.attempt)
    else:
        if args.cluster is None or args.podfile is None:
            raise InputError(None, None, "give CLUSTER and POD, or --run DIR --pod NAME")
        if args.attempt is not None:
            raise InputError(None, None, "--attempt goes with --run")
        from hamisim.io.clusterfile import cluster_from_path
        from hamisim.io.initialstate import load_state
        cluster = cluster_from_path(args.cluster, gpu_policy=args.gpu_policy)
        changes = {k: v for k, v in (
            ("gpu_scheduler_policy", args.gpu_policy), ("node_scheduler_policy", args.node_policy),
            ("percentage_of_nodes_to_score", args.percentage_of_nodes_to_score)) if v is not None}
        if changes:
            cluster = dataclasses.replace(
                cluster, scheduler=dataclasses.replace(cluster.scheduler, **changes))
        state = load_state(args.state, cluster) if args.state else None
        if state is not None:
            _print_warnings(args.state, state.warnings)
        pod = load_pod(args.podfile, args.pod)
        if state is not None:
            state.check_disjoint([pod.name], args.podfile)
        exp = explain_pod(cluster, pod, state, context={
            "cluster": args.cluster, "pod_file": args.podfile, "state": args.state})
    if args.json:
        json.dump(exp.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text(exp, args.node, args.max_nodes))
    return EXIT_OK


def _add_validate(sub) -> None:
    va = sub.add_parser(
        "validate", help="compare HAMi's decisions with a cluster's audit log, pod by pod",
        description="Walk a Kubernetes audit log (audit.k8s.io/v1 events, one JSON object a "
                    "line, plain or gzip'd, several files oldest first) keeping the cluster's "
                    "recorded state; at each recorded binding ask what HAMi v2.10 would "
                    "decide for that pod in exactly that state (every node examined), "
                    "compare node and cards, then apply the recorded decision. Writes "
                    "DIR/validation.json, DIR/disagreements.csv, DIR/report.html and per "
                    "disagreement DIR/explain/<k>/ for 'hamisim explain'.",
        epilog="The audit policy the log needs is in README ('Validate against a cluster').")
    va.add_argument("cluster", metavar="CLUSTER",
                    help="cluster file (.yaml/.json), or the folder of 'hamisim import' "
                         "(its cluster.yaml)")
    va.add_argument("logs", metavar="AUDITLOG", nargs="+",
                    help="audit log file(s), oldest first (.gz read as gzip)")
    va.add_argument("--state", metavar="STATE",
                    help="the pods already running when the log starts (DESIGN §4.4)")
    va.add_argument("--out", default="hamisim-validate", metavar="DIR",
                    help="results folder, replaced atomically (default: %(default)s)")
    va.add_argument("--gpu-policy", metavar="P", help="card policy (overrides the cluster file)")
    va.add_argument("--node-policy", metavar="P",
                    help="node policy (overrides the cluster file)")
    va.add_argument("--pending-grace", type=_nonnegative, default=11.0, metavar="S",
                    help="a pod the log keeps pending this long while hamisim could bind it "
                         "counts as pending_but_schedulable (default: %(default)s s)")
    va.add_argument("--explain-limit", type=_nonnegative_int, default=100, metavar="N",
                    help="write explain bundles for the first N disagreements "
                         "(default: %(default)s)")
    va.set_defaults(func=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    import dataclasses

    from hamisim.io.clusterfile import cluster_from_path
    from hamisim.io.initialstate import load_state
    from hamisim.studies.validate import validate_files, write_validation
    t0 = perf_counter()
    _warn_option_policies(args)
    path = args.cluster
    if os.path.isdir(path):
        path = os.path.join(path, "cluster.yaml")
        if not os.path.exists(path):
            raise InputError(args.cluster, None, "a folder CLUSTER must hold the cluster.yaml "
                                                 "of 'hamisim import'")
    cluster = cluster_from_path(path, gpu_policy=args.gpu_policy)
    if args.node_policy:
        cluster = dataclasses.replace(cluster, scheduler=dataclasses.replace(
            cluster.scheduler, node_scheduler_policy=args.node_policy))
    state = load_state(args.state, cluster) if args.state else None
    if state is not None:
        _print_warnings(args.state, state.warnings)
    v = validate_files(cluster, args.logs, state, pending_grace=args.pending_grace,
                       explain_limit=args.explain_limit)
    reader = v.summary["reader"]
    for w in reader["warnings"]:            # located: file:line: warning: problem
        print(f"hamisim: {w}", file=sys.stderr)
    if reader["n_warnings"] > len(reader["warnings"]):
        print(f"hamisim: warning: {reader['n_warnings'] - len(reader['warnings'])} more "
              "audit log warnings not shown", file=sys.stderr)
    # the explain commands replay under the same policies as the comparison
    overrides = [(f"--{o.replace('_', '-')}", getattr(args, o))
                 for o in ("gpu_policy", "node_policy") if getattr(args, o)]
    out = write_validation(v, args.out, path, inputs={
        "cluster": path, "logs": list(args.logs), "state": args.state},
        explain_options=overrides)
    s = v.summary
    r = s["reader"]
    print(f"hamisim validate: {s['pods_compared']} pods compared "
          f"({r['lines']} audit events, {r['pod_records']} pod records)")
    print(f"  node agreement {_pct(s['node_agreement_pct'])} "
          f"(every node examined: {_pct(s['node_agreement_all_nodes_pct'])}), "
          f"card agreement {_pct(s['card_agreement_pct'])}"
          + (f", MIG instance agreement {_pct(s['mig_agreement_pct'])} "
             f"({s['mig_compared']} pods)" if s.get("mig_compared") else ""))
    print("  outcomes: " + ", ".join(f"{k} {n}" for k, n in s["node_outcomes"].items()))
    print(f"  bound in the log but unschedulable for hamisim: {s['bound_but_unschedulable']}; "
          f"kept pending while hamisim would bind: {s['pending_but_schedulable']}")
    if s.get("decided_on_nominated_node"):
        print(f"  decided on the pod's nominated node (after a preemption): "
              f"{s['decided_on_nominated_node']}")
    if s["skipped"]:
        print("  pods skipped: " + "; ".join(f"{k} {n}" for k, n in s["skipped"].items()))
    for row in v.rows[:5]:
        print(f"  disagrees: {row['pod']} at {row['time']}: {row['reason']}")
    if len(v.rows) > 5:
        print(f"  ... {len(v.rows) - 5} more in {out / 'disagreements.csv'}")
    print(f"results written to {out}/ (validation.json, disagreements.csv, report.html)")
    print(f"  time {perf_counter() - t0:.1f} s")
    return EXIT_OK


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f} %"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    from hamisim.sim.checker import InvariantError
    parser = build_parser()
    args = parser.parse_args(argv)
    from hamisim.errors import Terminated
    from hamisim.io.outputs import sigterm_as_interrupt
    try:
        with sigterm_as_interrupt(), _policy_warnings():
            return args.func(args)
    except InputError as err:
        print(f"hamisim: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except InvariantError as err:
        print(f"hamisim: {err}", file=sys.stderr)
        return EXIT_INVARIANT
    except HamisimError as err:
        print(f"hamisim: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # the reader of the console went away (`hamisim ... | head`): nothing more
        # to say; point stdout at /dev/null so the interpreter's final flush is quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as err:      # e.g. a results folder that cannot be written
        where = f"{err.filename}: " if getattr(err, "filename", None) else ""
        print(f"hamisim: error: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as err:
        # results folders are swapped in whole (hamisim.io.outputs.atomic_folder),
        # so an interrupted run or compare has written nothing, unless the folder
        # was complete when the interrupt came (it then says so); SIGTERM unwinds
        # the same way (Terminated is a KeyboardInterrupt)
        done = " no results written" if args.command in _WRITES_ATOMICALLY else ""
        written = getattr(err, "results_written", None)
        if written is not None:
            done = f" results written to {written}/"
            unwritten = getattr(err, "unwritten", None)
            done += f"; {unwritten}" if unwritten else ""
        how = "terminated" if isinstance(err, Terminated) else "interrupted"
        _close_progress_bars(getattr(args, "progress", None))
        print(f"hamisim: {how}:{done}" if done else f"hamisim: {how}", file=sys.stderr)
        return EXIT_TERMINATED if isinstance(err, Terminated) else EXIT_INTERRUPTED


def _close_progress_bars(progress: bool | None) -> None:
    """Clear an interrupted progress bar's line, so the message starts a line.

    A Ctrl-C inside tqdm's constructor (which draws the bar before it returns)
    leaves a drawn bar nobody holds: where bars may be shown, the line is
    blanked as tqdm blanks it.
    """
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", ()) or ()):
        try:
            bar.close()
        except Exception:   # noqa: BLE001 - cosmetic; never mask the interrupt
            pass
    if tqdm is not None and (progress or (progress is None and sys.stderr.isatty())):
        width = shutil.get_terminal_size((80, 24)).columns
        sys.stderr.write("\r" + " " * max(width - 1, 1) + "\r")


#: commands whose every output is written at the end, at once
_WRITES_ATOMICALLY = frozenset({"run", "compare", "scenario"})


@contextlib.contextmanager
def _policy_warnings():
    """Print each :class:`hamisim.errors.InputWarning` (policy warnings among them)
    once, as ``hamisim: file:line: warning: ...`` on stderr (a trace read once per
    compared policy warns once)."""
    from hamisim.errors import InputWarning
    shown: set[str] = set()
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if not issubclass(category, InputWarning):
            return previous(message, category, filename, lineno, file, line)
        text = str(message)
        if text not in shown:
            shown.add(text)
            print(f"hamisim: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        warnings.showwarning = show
        yield


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
