"""Runs and comparisons: inputs -> engine -> results folders.

This is the layer behind ``hamisim run``, ``hamisim compare`` and
``hamisim plot``, and the Python API for notebooks::

    from hamisim.studies.runs import RunSpec, run
    res = run(RunSpec())                 # the bundled openb workload, HAMi defaults
    res.events, res.timeseries, res.summary
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from hamisim import __version__
from hamisim.cluster import Cluster
from hamisim.errors import InputError
from hamisim.io.bundled import workloads_dir
from hamisim.io.clusterfile import cluster_from_path
from hamisim.io.initialstate import InitialState, load_state
from hamisim.io.outputs import atomic_folder, read_table, write_json, write_table
from hamisim.io.traces import read_trace
from hamisim.plots import plot_compare, plot_fill_curves, plot_run
from hamisim.registry import is_research_policy
from hamisim.shapes import typical_shapes
from hamisim.sim.engine import EngineConfig, SimResult, quiet_gc, simulate
from hamisim.studies.fillcurves import curves
from hamisim.workload import fill_workload, retime

__all__ = ["RunSpec", "run", "write_run", "compare", "plot_folder", "DEFAULT_LOAD",
           "default_cluster_path", "default_trace_path", "prepare", "Prepared",
           "spec_from_summary"]

#: offered GPU load of the bundled workload's re-timed replay (fraction of the
#: cluster's GPUs): busy enough that policies differ, not a permanent backlog.
DEFAULT_LOAD = 0.8
#: openb's lifetimes are heavy-tailed (41 pods living over a week carry 84 % of
#: the GPU-seconds) and its 8,152 pods are fewer than the ~6,600 that run at
#: once at 80 % load; a re-timed replay therefore caps lifetimes at one hour
#: and draws a longer stream of pods from the trace (hamisim.workload.retime).
DEFAULT_MAX_LIFETIME = 3600.0
DEFAULT_N_PODS = 40_000


def default_cluster_path() -> Path:
    return workloads_dir() / "openb" / "openb_node_list_gpu_node.csv"


def default_trace_path() -> Path:
    return workloads_dir() / "openb" / "openb_pod_list_default.csv"


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines one run; equal specs give identical results."""

    cluster: str | None = None            # None = bundled openb GPU nodes
    trace: str | None = None              # None = bundled openb default pods
    gpu_policy: str | None = None         # None = the cluster file's (HAMi default spread)
    node_policy: str | None = None
    mode: str = "replay"
    load: float | None = DEFAULT_LOAD     # re-time arrivals to this offered load; None = as traced
    max_lifetime: float | None = DEFAULT_MAX_LIFETIME   # re-timing: cap lifetimes (s)
    n_pods: int | None = DEFAULT_N_PODS   # re-timing: pods drawn (with replacement)
    fill_to: float = 130.0
    seed: int = 0
    backend: str = "kernel"
    percentage_of_nodes_to_score: int | None = None
    node_tie_break: str | None = None
    retry: str = "backoff"
    progress: bool | None = None
    state: str | None = None              # initial state file (DESIGN §4.4); None = empty cluster
    check: bool = False                   # verify invariants after every event (sim.checker)

    @property
    def label(self) -> str:
        """``node=<policy> card=<policy>``; ``default`` where the cluster file decides."""
        return f"node={self.node_policy or 'default'} card={self.gpu_policy or 'default'}"


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _cluster(spec: RunSpec) -> Cluster:
    cluster = cluster_from_path(spec.cluster or str(default_cluster_path()))
    changes = {}
    if spec.gpu_policy is not None:
        changes["gpu_scheduler_policy"] = spec.gpu_policy
    if spec.node_policy is not None:
        changes["node_scheduler_policy"] = spec.node_policy
    if spec.percentage_of_nodes_to_score is not None:
        changes["percentage_of_nodes_to_score"] = spec.percentage_of_nodes_to_score
    if spec.node_tie_break is not None:
        changes["node_tie_break"] = spec.node_tie_break
    if changes:
        cluster = dataclasses.replace(
            cluster, scheduler=dataclasses.replace(cluster.scheduler, **changes))
    return cluster


@dataclass
class Prepared:
    """What :func:`run` hands the engine: the cluster (in simulated node order),
    the workload (arrivals in replay mode, submissions in fill mode), the
    typical shapes and the initial state (``None`` without one)."""

    cluster: Cluster
    workload: list
    shapes: list
    state: InitialState | None
    trace_path: str


def prepare(spec: RunSpec) -> Prepared:
    """Read and transform the inputs of ``spec`` exactly as :func:`run` does."""
    cluster = _cluster(spec)
    trace_path = spec.trace or str(default_trace_path())
    trace = read_trace(trace_path)
    pods = [tp.pod for tp in trace.pods]
    shapes = typical_shapes(pods, cluster.scheduler)
    state = load_state(spec.state, cluster) if spec.state is not None else None
    if spec.mode == "fill":
        # the paper's protocol also randomises the node order per seed
        order = np.random.default_rng(spec.seed).permutation(len(cluster.nodes))
        cluster = dataclasses.replace(cluster, nodes=tuple(cluster.nodes[i] for i in order))
        with _workload_error(spec, trace_path, "cannot fill the cluster (--mode fill)"):
            workload = list(fill_workload(trace, cluster.n_cards, spec.fill_to, spec.seed))
    else:
        if spec.load is not None:
            with _workload_error(spec, trace_path, "cannot re-time the trace to a GPU "
                                 "load (--load)", "; --as-traced replays its own times"):
                trace = retime(trace, spec.load, spec.seed, cluster.n_cards,
                               max_lifetime=spec.max_lifetime, n_pods=spec.n_pods)
        workload = list(trace.iter_arrivals())
    if state is not None:
        state.check_disjoint((getattr(w, "pod", w).name for w in workload),
                             f"the workload ({os.path.basename(trace_path)})")
    return Prepared(cluster, workload, shapes, state, trace_path)


@contextlib.contextmanager
def _workload_error(spec: RunSpec, trace_path: str, what: str, hint: str = ""):
    """A workload transform's ``ValueError`` (a trace without GPU requests or
    lifetimes, a cluster without GPUs) as an ``InputError`` naming the file."""
    try:
        yield
    except ValueError as exc:
        text = str(exc)
        if "capacity_gpus" in text:
            raise InputError(spec.cluster or str(default_cluster_path()), None,
                             f"{what}: the cluster has no GPUs{hint}") from None
        if "requests no GPU" in text:
            text = "no pod requests a GPU"
        name = os.path.splitext(os.path.basename(trace_path))[0]
        text = text.removeprefix(f"trace {name}: ")
        raise InputError(trace_path, None, f"{what}: {text}{hint}") from None


def run(spec: RunSpec = RunSpec()) -> SimResult:
    """One simulation; ``result.summary`` also records the inputs."""
    with quiet_gc():        # reading builds many objects; see engine.quiet_gc
        prep = prepare(spec)
    cluster, trace_path = prep.cluster, prep.trace_path
    cfg = EngineConfig(mode=spec.mode, seed=spec.seed, backend=spec.backend,
                       retry="none" if spec.mode == "fill" else spec.retry,
                       progress=spec.progress, check=spec.check)
    result = simulate(cluster, prep.workload, cfg, prep.shapes, total=len(prep.workload),
                      initial=prep.state.pods if prep.state is not None else ())
    s = cluster.scheduler
    result.summary = {
        "hamisim_version": __version__,
        "inputs": {
            "cluster": os.path.basename(spec.cluster or str(default_cluster_path())),
            "cluster_sha256": _sha256(spec.cluster or str(default_cluster_path())),
            "trace": os.path.basename(trace_path),
            "trace_sha256": _sha256(trace_path),
            "mode": spec.mode, "load": spec.load if spec.mode == "replay" else None,
            "max_lifetime_s": spec.max_lifetime if spec.mode == "replay" and spec.load else None,
            "n_pods": spec.n_pods if spec.mode == "replay" and spec.load else None,
            "fill_to_pct": spec.fill_to if spec.mode == "fill" else None,
            "seed": spec.seed, "backend": spec.backend, "retry": cfg.retry,
            # where the inputs were read from, for `hamisim explain --run`
            "cluster_path": os.path.abspath(spec.cluster or str(default_cluster_path())),
            "trace_path": os.path.abspath(trace_path),
        },
        "scheduler": dataclasses.asdict(s),
        "cluster": {"nodes": len(cluster.nodes), "gpus": cluster.n_cards},
        "typical_shapes": len(prep.shapes),
        "label": (s.node_scheduler_policy if is_research_policy(s.node_scheduler_policy)
                  else f"node={s.node_scheduler_policy} card={s.gpu_scheduler_policy}"),
        "results": result.summary,
    }
    if spec.state is not None:
        result.summary["inputs"].update({
            "state": os.path.basename(spec.state), "state_sha256": _sha256(spec.state),
            "state_path": os.path.abspath(spec.state)})
        if prep.state.warnings:
            result.summary["inputs"]["state_warnings"] = list(prep.state.warnings)
    return result


def spec_from_summary(summary: dict) -> RunSpec:
    """The :class:`RunSpec` of a finished run, from its ``summary.json``: the
    recorded input paths and the scheduler settings as simulated."""
    inputs, sched = summary["inputs"], summary["scheduler"]
    replay = inputs["mode"] == "replay"
    return RunSpec(
        cluster=inputs["cluster_path"], trace=inputs["trace_path"],
        gpu_policy=sched["gpu_scheduler_policy"], node_policy=sched["node_scheduler_policy"],
        mode=inputs["mode"], load=inputs["load"] if replay else None,
        max_lifetime=inputs.get("max_lifetime_s"), n_pods=inputs.get("n_pods"),
        fill_to=inputs["fill_to_pct"] if not replay else 130.0, seed=inputs["seed"],
        backend=inputs["backend"], retry=inputs["retry"],
        percentage_of_nodes_to_score=sched["percentage_of_nodes_to_score"],
        node_tie_break=sched["node_tie_break"], progress=False,
        state=inputs.get("state_path"))


def write_run(result: SimResult, out: str | os.PathLike[str], fmt: str = "parquet",
              title: str = "") -> Path:
    """Write events, timeseries, summary.json and figures/ atomically."""
    fill = result.summary.get("inputs", {}).get("mode") == "fill"
    with atomic_folder(out) as tmp:
        write_table(result.events, tmp, "events", fmt)
        write_table(result.timeseries, tmp, "timeseries", fmt)
        if result.occupancy is not None:
            np.save(tmp / "occupancy.npy", result.occupancy)
        write_json(result.summary, tmp / "summary.json")
        plot_run(result.timeseries, result.occupancy, tmp / "figures", fill, title)
    return Path(out)


def compare(specs: Sequence[RunSpec], out: str | os.PathLike[str], fmt: str = "parquet"
            ) -> pd.DataFrame:
    """Run every spec; write one table, one overlay plot and, in fill mode, the
    ``curves`` table (FGD's binning, :mod:`hamisim.studies.fillcurves`); return the table."""
    rows, series, curve_parts = [], {}, []
    fill = specs[0].mode == "fill"
    with atomic_folder(out) as tmp:
        for spec in specs:
            res = run(spec)
            r = res.summary["results"]
            label = res.summary["label"]
            rows.append({"policy": label, "node_policy": res.summary["scheduler"][
                "node_scheduler_policy"], "gpu_policy": res.summary["scheduler"][
                "gpu_scheduler_policy"], "seed": spec.seed, **{
                k: v for k, v in r.items() if not isinstance(v, dict)}})
            series.setdefault(label, []).append(res.timeseries)
            if fill:
                curve_parts.append(curves(res.timeseries, label, spec.seed))
            sub = tmp / "runs" / f"{_slug(label)}-seed{spec.seed}"
            # a research node policy labels every card policy alike: number the repeats
            sub = next(p for k in itertools.count(1)
                       if not (p := sub.with_name(sub.name + (f"-{k}" if k > 1 else ""))).exists())
            sub.mkdir(parents=True)
            write_table(res.timeseries, sub, "timeseries", fmt)
            write_json(res.summary, sub / "summary.json")
        table = pd.DataFrame(rows)
        write_table(table, tmp, "compare", fmt)
        (tmp / "figures").mkdir()
        if fill:
            table_c = pd.concat(curve_parts, ignore_index=True)
            write_table(table_c, tmp, "curves", fmt)
            plot_fill_curves(table_c, tmp / "figures" / "compare.png")
        else:
            plot_compare(series, tmp / "figures" / "compare.png", fill)
    return table


def _slug(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in label).strip("_")


def plot_folder(folder: str | os.PathLike[str]) -> list[Path]:
    """Redraw the figures of a results folder written by :func:`write_run`."""
    folder = Path(folder)
    ts_path = next((p for p in (folder / "timeseries.parquet", folder / "timeseries.csv")
                    if p.exists()), None)
    if ts_path is None:
        raise FileNotFoundError(f"{folder}: no timeseries.parquet or timeseries.csv")
    summary = json.loads((folder / "summary.json").read_text())
    occ_path = folder / "occupancy.npy"
    occ = np.load(occ_path) if occ_path.exists() else None
    return plot_run(read_table(ts_path), occ, folder / "figures",
                    summary.get("inputs", {}).get("mode") == "fill")


def policy_grid(node_policies: Sequence[str], gpu_policies: Sequence[str], seeds: int,
                base: RunSpec) -> list[RunSpec]:
    """Every node policy x card policy x seed, on top of ``base``."""
    return [dataclasses.replace(base, node_policy=n, gpu_policy=g, seed=base.seed + k)
            for n, g, k in itertools.product(node_policies, gpu_policies, range(seeds))]
