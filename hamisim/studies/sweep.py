"""Sweeps: running the cells of a sweep file, resuming, Dask, the results table.

The sweep file itself -- its format, its validation and the :class:`Cell` it
expands to -- is :mod:`hamisim.studies.sweepfile`; its public names are re-exported here.
A cell's id (a hash of its inputs) names its folder ``OUT/cells/<id>/``;
``cell.json`` is written last inside that folder and the folder is moved into
place atomically, so a cell is either finished or absent. ``--resume`` skips
finished cells.

Cells run in a local process pool (:class:`concurrent.futures.ProcessPoolExecutor`)
or on a Dask cluster through ``distributed.Client(...).get_executor()``. The
cluster and trace files travel with each cell as bytes, so workers need no
shared filesystem, only hamisim itself. Results come back to the submitting
process, which files each cell as it completes and finally writes
``OUT/results.<fmt>``: one row per cell, sorted by cell id, built from the
cells' ``cell.json`` files -- hence byte-identical whatever ran the cells and
in whatever order they finished.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import json
import math
import multiprocessing
import multiprocessing.util
import os
import re
import shutil
import sys
import tempfile
import threading
from collections import deque
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from hamisim._version import __version__
from hamisim.errors import HamisimError, InputError
from hamisim.io.outputs import FORMATS, atomic_folder, write_json, write_table
from hamisim.studies.sweepfile import (
    CELL_OUTPUTS,
    CLUSTER_ENTRY_KEYS,
    OPENB_CLUSTERS,
    OPENB_TRACES,
    POLICY_KEYS,
    RANGE_KEYS,
    SWEEP_KEYS,
    WORKLOAD_KEYS,
    Cell,
    ClusterAxis,
    InputFile,
    Sweep,
    _sha256,
    load_sweep,
    make_cell,
    parse_grid,
    sweep_from_document,
)
from hamisim.studies.report import notebook_html, write_report
from hamisim.studies.workers import cpu_count, process_pool

__all__ = [
    "InputFile", "Cell", "make_cell", "Sweep", "load_sweep", "sweep_from_document", "parse_grid",
    "run_sweep", "SweepOutcome", "CellRunner", "CellTask", "RunStats", "run_cell_task",
    "results_table", "write_results", "write_sweep_manifest", "read_cell_row", "plot_sweep",
    "prepare_out", "format_report", "INPUT_COLUMNS", "METRICS", "OPENB_TRACES",
    "OPENB_CLUSTERS",
    # the rest of the sweep-file model, re-exported from sweepfile
    "ClusterAxis", "SWEEP_KEYS", "CLUSTER_ENTRY_KEYS", "WORKLOAD_KEYS", "POLICY_KEYS",
    "RANGE_KEYS", "CELL_OUTPUTS",
]

#: the input columns of the results table, in order
INPUT_COLUMNS = ("cell", "cluster", "group", "replicas", "trace", "mode", "load", "scale",
                 "offered_gpus", "n_pods", "max_lifetime_s", "fill_to_pct", "retry",
                 "node_policy", "gpu_policy", "percentage_of_nodes_to_score", "node_tie_break",
                 "policy", "seed", "backend")
#: the headline figures of a cell, in table order (further figures the engine
#: reports follow, sorted by name)
METRICS = ("nodes", "gpus", "pods", "bound", "departed", "abandoned", "pending_at_end",
           "running_at_end", "attempts", "pending_p50_s", "pending_p99_s", "pending_max_s",
           "queueing_delay_p50_s", "queueing_delay_p99_s", "queueing_delay_max_s",
           "abandoned_pct", "unplaced_pct", "peak_gpu_allocated", "peak_gpu_allocated_pct",
           "mean_frag_pct_of_capacity", "final_unallocated_gpu_pct", "end_time_s",
           # multi-GPU placements (hamisim.sim.placement): null where nothing describes them
           "multi_gpu_pods", "cross_numa_pct", "cross_switch_pct", "pairs_without_nvlink_pct",
           "mean_pair_score", "mean_min_pair_score", "gpus_nic_other_numa_pct",
           "gpus_nic_other_switch_pct",
           # MIG cards (hamisim.sim.placement.MigMeter): null without them
           "mig_slots_used_mean_pct", "mig_slots_stranded_mean_pct")
STATUS_OK, STATUS_FAILED = "ok", "failed"
#: a worker that dies is replaced and its cell run again, at most this many times
DEFAULT_RETRIES = 2


# ---------------------------------------------------------------------------
# running one cell (in a worker process or a Dask worker thread)

@dataclass(frozen=True)
class CellTask:
    """What a worker needs: the cell and the bytes of its cluster and trace files."""

    cell: Cell
    cluster_bytes: bytes
    trace_bytes: bytes
    cell_outputs: frozenset[str]
    version: str = __version__
    #: the ``metrics`` output's (start, interval)
    metrics: tuple[float, float] | None = None


_WORKDIR: Path | None = None
_WORKDIR_LOCK = threading.Lock()


def _workdir() -> Path:
    """A private folder of this worker process for the cells' input files."""
    global _WORKDIR
    with _WORKDIR_LOCK:
        if _WORKDIR is None or not _WORKDIR.is_dir():
            _WORKDIR = Path(tempfile.mkdtemp(prefix="hamisim-cells-"))
            # multiprocessing's finalizers also run in pool workers, where
            # atexit does not (they leave through os._exit)
            multiprocessing.util.Finalize(None, shutil.rmtree, args=(str(_WORKDIR), True),
                                          exitpriority=0)
        return _WORKDIR


def _materialise(name: str, data: bytes, key: str) -> Path:
    """``data`` as a file called ``name`` (the extension picks the reader)."""
    folder = _workdir() / key
    path = folder / name
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.{os.getpid()}-{threading.get_ident()}"
        tmp.write_bytes(data)
        os.replace(tmp, path)       # concurrent threads write the same bytes
    return path


def _headline(result) -> dict[str, Any]:
    """The cell's row figures: the run's headline figures plus capacity figures.

    ``pending_*`` (every pod: arrival to bind, else to abandonment, else to
    the end of the run) come from the run (:mod:`hamisim.sim.stats`); the
    per-class and per-group breakdowns stay in the cell's summary.json.
    """
    from hamisim.studies.runs import window_columns
    summary = result.summary
    r = {k: v for k, v in summary["results"].items() if not isinstance(v, (dict, list))}
    r = {k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
    r["engine"] = summary["inputs"].get("engine")     # which engine ran the cell
    r.update(window_columns(summary["results"]))     # the span the figures cover
    r["nodes"] = int(summary["cluster"]["nodes"])
    r["gpus"] = int(summary["cluster"]["gpus"])
    for name in ("pending_p50_s", "pending_p99_s", "pending_max_s"):
        if r.get(name) is None:             # no pod arrived
            r[name] = 0.0
    pods = int(r.get("pods", 0))
    r["abandoned_pct"] = 100.0 * r.get("abandoned", 0) / pods if pods else 0.0
    r["unplaced_pct"] = 100.0 * (pods - r.get("bound", 0)) / pods if pods else 0.0
    if "peak_gpu_allocated" in r:
        r["peak_gpu_allocated_pct"] = 100.0 * r["peak_gpu_allocated"] / max(r["gpus"], 1)
    return r


def run_cell_task(task: CellTask) -> dict[str, Any]:
    """Run one cell; a cell that fails on its inputs is returned as ``failed``.

    Only infrastructure failures (a dying worker) escape as exceptions: the
    caller retries those, while a bad cell would fail again.
    """
    cell = task.cell
    paths: dict[str, str] = {}
    try:
        if task.version != __version__:
            raise HamisimError(f"the worker runs hamisim {__version__}, the sweep "
                               f"{task.version}; results would not be comparable")
        from hamisim.io.clusterfile import cluster_from_path
        from hamisim.studies.runs import DISCARD, RunSpec, prepare, run_prepared
        cluster_path = _materialise(cell.cluster.name, task.cluster_bytes, cell.cluster.sha256)
        paths[str(cluster_path)] = cell.cluster.label
        trace_path = _materialise(cell.trace.name, task.trace_bytes, cell.trace.sha256)
        paths[str(trace_path)] = cell.trace.label
        resize = cell.resize
        load = cell.load
        if cell.offered_gpus is not None:
            n_cards = cluster_from_path(cluster_path, resize=resize).n_cards
            if n_cards == 0:
                raise InputError(str(cluster_path), None, "the cluster has no GPUs to load")
            load = cell.offered_gpus / n_cards
        # the cell's workload is resolved (sweepfile.resolve_workload): a replay
        # without a load is as traced, a re-timing without a cap has none
        retimed = cell.mode == "replay" and load is not None
        spec = RunSpec(cluster=str(cluster_path), trace=str(trace_path), resize=resize,
                       gpu_policy=cell.gpu_policy, node_policy=cell.node_policy, mode=cell.mode,
                       as_traced=not retimed if cell.mode == "replay" else None,
                       load=load if retimed else None,
                       max_lifetime=(cell.max_lifetime or math.inf) if retimed else None,
                       n_pods=cell.n_pods if retimed else None,
                       fill_to=cell.fill_to if cell.fill_to is not None else 130.0,
                       seed=cell.seed, backend=cell.backend,
                       percentage_of_nodes_to_score=cell.percentage_of_nodes_to_score,
                       node_tie_break=cell.node_tie_break, retry=cell.retry or "backoff",
                       progress=False, scale=cell.scale)
        # the events and pods tables are built only when the sweep needs them
        keep_tables = not {"events", "metrics"}.isdisjoint(task.cell_outputs)
        prep = prepare(spec)
        result = run_prepared(spec, prep, sink=None if keep_tables else DISCARD)
        # the summary names where the submitting machine reads the inputs, not
        # this worker's private copies (same bytes; gone once the worker exits):
        # `hamisim explain --run` works on the cell's folder
        inputs = result.summary.get("inputs", {})
        inputs["cluster_path"] = cell.cluster.path
        inputs["trace_path"] = cell.trace.path
        out: dict[str, Any] = {"status": STATUS_OK, "error": None,
                               "metrics": _headline(result), "summary": result.summary,
                               "tables": {}}
        if "timeseries" in task.cell_outputs:
            out["tables"]["timeseries"] = result.timeseries
        if "events" in task.cell_outputs:
            out["tables"]["events"] = result.events
        if "metrics" in task.cell_outputs and task.metrics is not None:
            out["files"] = {"metrics.om": _metrics_text(result, prep, cell.id, *task.metrics)}
        return out
    except Exception as exc:  # noqa: BLE001 - the cell fails, the sweep goes on
        text = str(exc) if isinstance(exc, HamisimError) else f"{type(exc).__name__}: {exc}"
        for tmp, label in sorted(paths.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(tmp, label)   # no worker-local paths in the table
        if cell.group is not None:
            text += " (" + ", ".join(f"node group '{g}' resized to {n}"
                                     for g, n in (cell.resize or {}).items()) + ")"
        return {"status": STATUS_FAILED, "error": text, "metrics": {}, "summary": None,
                "tables": {}}


def _metrics_text(result, prep, cell_id: str, start: float, interval: float) -> bytes:
    """The cell's run as OpenMetrics text (:mod:`hamisim.studies.openmetrics`), every
    series labelled ``hamisim_cell`` with the cell's id."""
    from hamisim.studies.openmetrics import namespaces_of, write_openmetrics
    path = _workdir() / f"metrics-{os.getpid()}-{threading.get_ident()}.om"
    try:
        write_openmetrics(path, prep.cluster, result.timeseries, result.pods, start, interval,
                          namespaces_of(prep.workload, prep.state), {"hamisim_cell": cell_id})
        return path.read_bytes()
    finally:
        path.unlink(missing_ok=True)


# ---------------------------------------------------------------------------
# executing cells

@dataclass
class RunStats:
    """What :meth:`CellRunner.run` did."""

    ran: int = 0
    reused: int = 0
    failed: int = 0
    retried: int = 0
    rows: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)


def _lost_worker_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning "the worker went away", not "the cell is bad"."""
    errors: list[type[BaseException]] = [BrokenProcessPool, cf.CancelledError]
    try:
        from distributed import KilledWorker
        from distributed.comm.core import CommClosedError
        errors += [KilledWorker, CommClosedError]
    except ImportError:
        pass
    return tuple(errors)


class CellRunner:
    """Runs cells and files each one in ``OUT/cells/<id>/`` as it completes.

    Local by default: a process pool of ``workers`` processes (default: the
    CPUs available). With ``dask_scheduler`` (``tcp://host:port``) the cells go
    to that Dask cluster through ``distributed.Client(...).get_executor()``.
    A cell whose worker dies (a broken pool, a lost Dask worker) is run again,
    at most ``retries`` times; a cell that fails on its inputs is filed with
    status ``failed`` and its error. Use as a context manager.
    """

    def __init__(self, out: str | os.PathLike[str], *, workers: int | None = None,
                 dask_scheduler: str | None = None, retries: int = DEFAULT_RETRIES,
                 fmt: str = "parquet", progress: bool | None = None,
                 cell_outputs: Iterable[str] = ("timeseries",),
                 metrics: tuple[float, float] | None = None,
                 task: Callable[[CellTask], dict] = run_cell_task,
                 log: Callable[[str], None] | None = None) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}")
        self.out = Path(out)
        self.cells_dir = self.out / "cells"
        self.workers = workers or cpu_count()
        self.dask_scheduler = dask_scheduler
        self.retries = retries
        self.fmt = fmt
        self.progress = progress
        self.cell_outputs = frozenset(cell_outputs)
        self.metrics = metrics
        self.task = task
        self.log = log or (lambda msg: print(f"hamisim: {msg}", file=sys.stderr))
        self._executor: cf.Executor | None = None
        self._client = None
        self._bytes: dict[str, bytes] = {}
        self._tmp_root: str | None = None

    # -- executors ----------------------------------------------------------
    def __enter__(self) -> CellRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(abort=exc[0] is not None)

    def _start(self) -> cf.Executor:
        if self._executor is None:
            self._executor = (self._dask_executor() if self.dask_scheduler
                              else self._local_pool())
        return self._executor

    def _local_pool(self) -> cf.Executor:
        if self._tmp_root is None:
            # the workers' input copies live here; close() removes it, also when
            # a worker was killed and could not remove its own
            self._tmp_root = tempfile.mkdtemp(prefix="hamisim-sweep-")
        return process_pool(self.workers, self._tmp_root)

    def _dask_executor(self) -> cf.Executor:
        try:
            from distributed import Client
        except ImportError:
            raise HamisimError("--dask-scheduler needs Dask: pip install 'hamisim[dask]'") \
                from None
        import dask
        try:
            # Dask's own connect timeout (30 s unless configured otherwise)
            self._client = Client(self.dask_scheduler,
                                  timeout=dask.config.get("distributed.comm.timeouts.connect"))
        except (OSError, TimeoutError, ValueError) as exc:
            raise HamisimError(f"cannot reach the Dask scheduler {self.dask_scheduler}: "
                               f"{exc}") from None
        # retries= covers exceptions escaping a task; a lost worker's task is
        # rescheduled by the Dask scheduler itself, and resubmitted here after
        # KilledWorker
        return self._client.get_executor(retries=self.retries)

    def _window(self) -> int:
        """Cells in flight at once (each carries its input files' bytes)."""
        if self._client is not None:
            try:
                threads = sum(self._client.nthreads().values())
            except Exception:  # noqa: BLE001 - only a sizing hint
                threads = 0
            return max(2, 2 * threads)
        return 2 * self.workers

    def _restart_pool(self) -> None:
        self._kill_pool()
        self._executor = self._local_pool()

    def _kill_pool(self) -> None:
        ex = self._executor
        self._executor = None
        if ex is None:
            return
        if isinstance(ex, cf.ProcessPoolExecutor):
            procs = list(getattr(ex, "_processes", {}).values())
            ex.shutdown(wait=False, cancel_futures=True)
            for p in procs:             # our own workers: do not wait for a long cell
                if p.is_alive():
                    p.terminate()
            for p in procs:
                p.join(timeout=5)
        else:
            ex.shutdown(wait=False)

    def close(self, abort: bool = False) -> None:
        """Stop the workers (at once when ``abort``) and disconnect from Dask."""
        if self._executor is not None:
            if abort or not isinstance(self._executor, cf.ProcessPoolExecutor):
                self._kill_pool()
            else:
                self._executor.shutdown(wait=True)
                self._executor = None
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._tmp_root is not None:
            shutil.rmtree(self._tmp_root, ignore_errors=True)
            self._tmp_root = None

    # -- cells ----------------------------------------------------------------
    def finished(self, cell: Cell) -> dict[str, Any] | None:
        """The filed row of a cell that finished successfully, else ``None``."""
        row = read_cell_row(self.cells_dir / cell.id)
        return row if row is not None and row.get("status") == STATUS_OK else None

    def _payload(self, cell: Cell) -> CellTask:
        return CellTask(cell, self._read(cell.cluster), self._read(cell.trace),
                        self.cell_outputs, metrics=self.metrics)

    def _read(self, f: InputFile) -> bytes:
        data = self._bytes.get(f.sha256)
        if data is None:
            data = Path(f.path).read_bytes()
            if hashlib.sha256(data).hexdigest() != f.sha256:
                raise InputError(f.path, None, "the file changed while the sweep was running")
            self._bytes[f.sha256] = data
        return data

    def run(self, cells: Sequence[Cell], *, resume: bool = True) -> RunStats:
        """Run every cell that is not finished yet; return the rows of all of them.

        With ``resume`` false, finished cells are run again (and replaced).
        """
        stats = RunStats()
        todo: deque[Cell] = deque()
        for cell in cells:
            row = self.finished(cell) if resume else None
            if row is not None:
                stats.rows[cell.id] = row
                stats.reused += 1
            else:
                todo.append(cell)
        if not todo:
            return stats
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        _clean_partials(self.cells_dir)
        bar = _progress_bar(len(todo), self.progress)
        attempts: dict[str, int] = {}
        in_flight: dict[cf.Future, Cell] = {}
        # cells that were in a process pool when it broke: which one killed its
        # worker is unknown, so each runs alone next, and only a cell that
        # breaks the pool alone is charged an attempt
        suspects: deque[Cell] = deque()
        lost = _lost_worker_errors()

        def file(cell: Cell, out: Mapping[str, Any]) -> None:
            stats.rows[cell.id] = self._file(cell, out)
            if out["status"] == STATUS_OK:
                stats.ran += 1
            else:
                stats.failed += 1
                self.log(f"cell {cell.id} failed: {out['error']}")
            if bar is not None:
                bar.update(1)

        def charge(cell: Cell, exc: BaseException, queue: deque[Cell]) -> None:
            n = attempts[cell.id] = attempts.get(cell.id, 0) + 1
            if n <= self.retries:
                stats.retried += 1
                self.log(f"cell {cell.id}: its worker was lost ({type(exc).__name__}); "
                         f"running it again ({n}/{self.retries})")
                queue.append(cell)
            else:
                file(cell, _failure(f"the worker running this cell was lost {n} times "
                                    f"({type(exc).__name__})"))

        def collect(fut: cf.Future, cell: Cell) -> BaseException | None:
            """File a completed cell; return the error if its process pool broke."""
            try:
                out = fut.result()
            except BrokenProcessPool as exc:
                return exc
            except lost as exc:             # Dask: the scheduler knows the culprit
                charge(cell, exc, todo)
                return None
            except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
                out = _failure(f"{type(exc).__name__}: {exc}")
            file(cell, out)
            return None

        def submit(cell: Cell, queue: deque[Cell]) -> bool:
            """Submit ``cell`` (taken from ``queue``); False if the pool is broken."""
            try:
                in_flight[self._submit(cell, attempts.get(cell.id, 0))] = cell
            except BrokenProcessPool:       # a worker died since the last wait
                queue.appendleft(cell)      # it never ran: no attempt is charged
                return False
            except InputError as err:       # an input file changed since it was loaded
                file(cell, _failure(str(err)))
            return True

        try:
            self._start()
            window = self._window()
            while todo or suspects or in_flight:
                usable = True
                if suspects:
                    if not in_flight:
                        usable = submit(suspects.popleft(), suspects)
                else:
                    while usable and todo and len(in_flight) < window:
                        usable = submit(todo.popleft(), todo)
                if not in_flight:
                    if not usable:
                        self._restart_pool()
                    continue
                done, _ = cf.wait(list(in_flight), return_when=cf.FIRST_COMPLETED)
                broken: list[tuple[Cell, BaseException]] = []
                for fut in done:
                    cell = in_flight.pop(fut)
                    exc = collect(fut, cell)
                    if exc is not None:
                        broken.append((cell, exc))
                if broken:
                    # a broken pool fails every cell it holds: collect them all
                    # (finished ones are kept), then start a fresh pool
                    cf.wait(list(in_flight))
                    for fut, cell in in_flight.items():
                        exc = collect(fut, cell)
                        if exc is not None:
                            broken.append((cell, exc))
                    in_flight.clear()
                    if len(broken) == 1:
                        charge(*broken[0], suspects)
                    else:
                        stats.retried += len(broken)
                        self.log(f"a worker process died ({type(broken[0][1]).__name__}); "
                                 f"the {len(broken)} cells in its pool run again, one at a "
                                 "time")
                        suspects.extend(cell for cell, _ in broken)
                    self._restart_pool()
        finally:
            if bar is not None:
                bar.close()
        return stats

    def _submit(self, cell: Cell, attempt: int) -> cf.Future:
        executor = self._start()
        payload = self._payload(cell)
        if self._client is not None:
            # a readable, unique task key in Dask's dashboard; a new key per
            # attempt so a resubmission is never mistaken for the lost task
            return executor.submit(self.task, payload, key=f"hamisim-cell-{cell.id}-{attempt}")
        return executor.submit(self.task, payload)

    def _file(self, cell: Cell, out: Mapping[str, Any]) -> dict[str, Any]:
        """Write the cell's folder atomically, ``cell.json`` last; return its row."""
        row = {**cell.params(), "status": out["status"], "error": out.get("error"),
               **out.get("metrics", {})}
        with atomic_folder(self.cells_dir / cell.id) as tmp:
            if out.get("summary") is not None:
                write_json(out["summary"], tmp / "summary.json")
            for name, table in sorted(out.get("tables", {}).items()):
                write_table(table, tmp, name, self.fmt)
            for name, data in sorted(out.get("files", {}).items()):
                (tmp / name).write_bytes(data)
            write_json({"row": row, "inputs": cell.identity(),
                        "files": {"cluster": cell.cluster.label, "trace": cell.trace.label}},
                       tmp / "cell.json")
        return row


def _failure(error: str) -> dict[str, Any]:
    return {"status": STATUS_FAILED, "error": error, "metrics": {}, "summary": None,
            "tables": {}}


_LEFTOVER = re.compile(r"\.(?:partial|old)-(\d+)$")


def _clean_partials(folder: Path) -> None:
    """Remove what a killed run left half-written (never a finished cell, nor the
    folder another live process is writing right now)."""
    for p in folder.glob(".*"):
        m = _LEFTOVER.search(p.name)
        if p.is_dir() and m and not _alive(int(m.group(1))):
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False                # ours, from an earlier run in this process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:                 # e.g. another user's process
        return True
    return True


def _progress_bar(total: int, enabled: bool | None):
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="cell", desc="sweep", leave=False)


def read_cell_row(folder: Path) -> dict[str, Any] | None:
    """The row in ``folder/cell.json``, or ``None`` if the cell is not filed."""
    try:
        doc = json.loads((folder / "cell.json").read_text())
    except (OSError, ValueError):
        return None
    row = doc.get("row") if isinstance(doc, dict) else None
    return row if isinstance(row, dict) else None


# ---------------------------------------------------------------------------
# the results folder

def results_table(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per cell, sorted by cell id; columns :data:`INPUT_COLUMNS`,
    ``status``, ``error``, :data:`METRICS`, then any further figures by name."""
    rows = sorted(rows, key=lambda r: r["cell"])
    known = set(INPUT_COLUMNS) | {"status", "error"} | set(METRICS)
    extra = sorted({k for r in rows for k in r} - known)
    columns = [*INPUT_COLUMNS, "status", "error", *METRICS, *extra]
    return pd.DataFrame([[r.get(c) for c in columns] for r in rows], columns=columns)


def write_results(table: pd.DataFrame, out: Path, name: str, fmt: str) -> Path:
    """``out/name.fmt``, replaced atomically."""
    with atomic_folder(out / f".{name}-table") as tmp:
        path = write_table(table, tmp, name, fmt)
        final = out / path.name
        os.replace(path, final)
    shutil.rmtree(out / f".{name}-table", ignore_errors=True)
    return final


_OUR_FILES = ("cells", "figures", "sweep.json", "plan.json", "results.parquet", "results.csv",
              "curve.parquet", "curve.csv", "report.html")


def prepare_out(out: str | os.PathLike[str], *, resume: bool, overwrite: bool) -> Path:
    """Check the results folder: new, resumed, or replaced on request.

    A folder holding earlier cells is never overwritten silently: ``resume``
    continues it, ``overwrite`` removes hamisim's files from it first.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(str(out), None, "--out names a file, not a folder")
    if out.is_dir() and any(out.iterdir()):
        ours = (out / "cells").is_dir() or (out / "sweep.json").exists() \
            or (out / "plan.json").exists()
        if not ours:
            raise InputError(str(out), None, "the folder exists and holds no hamisim sweep; "
                                             "choose another --out")
        if overwrite:
            for name in _OUR_FILES:
                p = out / name
                if p.is_dir():
                    shutil.rmtree(p)
                elif p.exists():
                    p.unlink()
        elif not resume:
            raise InputError(str(out), None, "the folder holds an earlier sweep: pass --resume "
                                             "to continue it (finished cells are kept) or "
                                             "--overwrite to start afresh")
    out.mkdir(parents=True, exist_ok=True)
    return out


@dataclass
class SweepOutcome:
    """A finished sweep: the results table and what was run or reused."""

    table: pd.DataFrame
    out: Path
    results_path: Path
    figure: Path | None
    stats: RunStats

    @property
    def failed(self) -> pd.DataFrame:
        return self.table[self.table["status"] != STATUS_OK]

    def _repr_html_(self) -> str:
        """Jupyter: the sweep's figure and results table."""
        return notebook_html(f"hamisim sweep: {len(self.table)} cells in {self.out}",
                             self.table, self.figure)


def run_sweep(sweep: Sweep, out: str | os.PathLike[str], *, workers: int | None = None,
              dask_scheduler: str | None = None, resume: bool = False,
              overwrite: bool = False, fmt: str = "parquet", retries: int = DEFAULT_RETRIES,
              progress: bool | None = None,
              log: Callable[[str], None] | None = None) -> SweepOutcome:
    """Run a sweep into ``out``: ``cells/<id>/``, ``results.<fmt>``, ``figures/sweep.png``."""
    out = prepare_out(out, resume=resume, overwrite=overwrite)
    write_sweep_manifest(out, sweep)
    with CellRunner(out, workers=workers, dask_scheduler=dask_scheduler, retries=retries,
                    fmt=fmt, progress=progress, cell_outputs=sweep.cell_outputs,
                    metrics=sweep.metrics,
                    log=log) as runner:
        stats = runner.run(sweep.cells, resume=True)
    table = results_table(stats.rows[c.id] for c in sweep.cells)
    path = write_results(table, out, "results", fmt)
    figure = plot_sweep(table, out / "figures" / "sweep.png")
    write_report(out)
    return SweepOutcome(table, out, path, figure, stats)


def write_sweep_manifest(out: Path, sweep: Sweep) -> Path:
    """``sweep.json``: the sweep file and every cell's inputs, by cell id."""
    doc = {"hamisim_version": __version__, "sweep_file": os.path.basename(sweep.path),
           "sweep_sha256": _sha256(sweep.path), "cells": len(sweep.cells),
           "cell_inputs": {c.id: c.params() for c in sweep.cells}}
    tmp = out / f".sweep.json.{os.getpid()}"
    write_json(doc, tmp)
    os.replace(tmp, out / "sweep.json")
    return out / "sweep.json"


# ---------------------------------------------------------------------------
# plots

#: candidates for the x axis of the sweep plot, first varying one wins
X_AXES = ("replicas", "offered_gpus", "load", "fill_to_pct", "n_pods", "max_lifetime_s")
_SERIES = ("cluster", "group", "trace", "retry", "policy", "percentage_of_nodes_to_score",
           "node_tie_break", "backend")
#: the swept axes in words, for the figure's x axis (the column name in brackets)
_X_LABELS = {"replicas": "nodes in the varied group", "offered_gpus": "GPUs requested at once",
             "load": "offered load (share of the GPUs)",
             "fill_to_pct": "fill target (% of GPU capacity)", "n_pods": "pods",
             "max_lifetime_s": "longest pod lifetime (s)"}
_PANELS = {
    "replay": (("pending_p99_s", "pending time p99 (s)"),
               ("unplaced_pct", "pods never placed (%)"),
               ("peak_gpu_allocated_pct", "peak GPUs with a tenant (%)"),
               ("mean_frag_pct_of_capacity", "mean fragmentation (% of GPUs)")),
    "fill": (("final_unallocated_gpu_pct", "unallocated GPU at the end (%)"),
             ("unplaced_pct", "pods not placed (%)"),
             ("peak_gpu_allocated_pct", "peak GPUs with a tenant (%)"),
             ("mean_frag_pct_of_capacity", "mean fragmentation (% of GPUs)")),
}


def _varying(table: pd.DataFrame, col: str) -> bool:
    return col in table and table[col].dropna().nunique() > 1


def plot_sweep(table: pd.DataFrame, path: Path) -> Path | None:
    """Headline figures against the first varying numeric axis (else one point per
    combination): the median over seeds with a min-max band. ``None`` when no
    cell succeeded."""
    from matplotlib.ticker import MaxNLocator

    from hamisim.plots import _save, plt
    ok = table[table["status"] == STATUS_OK]
    if ok.empty:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    x = next((c for c in X_AXES if _varying(ok, c)), None)
    series_cols = [c for c in (*_SERIES, *X_AXES) if c != x and _varying(ok, c)]
    mode = str(ok["mode"].iloc[0])
    panels = [(m, t) for m, t in _PANELS.get(mode, _PANELS["replay"]) if m in ok]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), squeeze=False)
    groups = list(ok.groupby(series_cols, sort=True, dropna=False)) if series_cols \
        else [((), ok)]
    labels = [_series_label(series_cols, key) for key, _ in groups]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = {lab: {"color": colours[i % len(colours)],
                    "ls": ("-", "--", ":", "-.")[i // len(colours) % 4]}
              for i, lab in enumerate(labels)}
    seeds = ok["seed"].nunique()
    for ax, (metric, title) in zip(axes.flat, panels):
        for (key, g), label in zip(groups, labels):
            if x is not None:
                agg = g.groupby(x)[metric].agg(["median", "min", "max"]).sort_index()
                ax.plot(agg.index, agg["median"], marker="o", ms=3, label=label, **styles[label])
                if seeds > 1:
                    ax.fill_between(agg.index, agg["min"], agg["max"], alpha=0.15, lw=0,
                                    color=styles[label]["color"])
            else:
                pos = labels.index(label)
                vals = g[metric].to_numpy(dtype=float)
                med = float(np.median(vals))
                ax.errorbar([pos], [med], yerr=[[med - vals.min()], [vals.max() - med]],
                            fmt="o", capsize=4, color=styles[label]["color"], label=label)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        if x is not None:
            ax.set_xlabel(f"{_X_LABELS[x]} ({x})" if x in _X_LABELS else x)
            if x in ("replicas", "n_pods"):
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles, names = axes.flat[0].get_legend_handles_labels()
    if x is not None and len(labels) > 1:
        fig.legend(handles, names, loc="lower center", ncol=min(3, len(labels)), fontsize=8)
    band = f"median over {seeds} seeds, band min–max" if seeds > 1 else "one seed"
    fig.suptitle(f"Sweep: {len(ok)} cells ({band})", fontsize=11)
    if x is not None and len(labels) > 1:
        fig.tight_layout(rect=(0, 0.06 + 0.025 * ((len(labels) - 1) // 3), 1, 1))
        fig.savefig(path, dpi=130, metadata={"Software": None})
        plt.close(fig)
        return path
    return _save(fig, path)


def _series_label(cols: Sequence[str], key: Any) -> str:
    if not cols:
        return "all cells"
    key = key if isinstance(key, tuple) else (key,)
    parts = []
    for c, v in zip(cols, key):
        parts.append(str(v) if c == "policy" else f"{c}={v}")
    return " ".join(parts)


# ---------------------------------------------------------------------------
# reporting (the CLI prints this)

def format_report(outcome: SweepOutcome, columns: Sequence[str] | None = None,
                  max_rows: int = 40) -> str:
    """A short text report: counts, a compact table, failures, where files went."""
    t = outcome.table
    s = outcome.stats
    lines = [f"hamisim sweep: {len(t)} cells, {int((t['status'] == STATUS_OK).sum())} ok, "
             f"{int((t['status'] != STATUS_OK).sum())} failed "
             f"(ran {s.ran + s.failed}, reused {s.reused}"
             + (f", {s.retried} rerun after a lost worker" if s.retried else "") + ")"]
    varying = [c for c in INPUT_COLUMNS[1:] if c not in ("policy", "seed") and _varying(t, c)]
    if _varying(t, "policy") or "node_policy" in varying or "gpu_policy" in varying:
        varying = [c for c in varying if c not in ("node_policy", "gpu_policy")] + ["policy"]
    fill = bool((t["mode"] == "fill").any())
    metrics = columns or [m for m in (("final_unallocated_gpu_pct",) if fill else
                                      ("pending_p99_s",))
                          + ("unplaced_pct", "peak_gpu_allocated_pct", "mean_frag_pct_of_capacity")
                          if m in t]
    if columns is None and "multi_gpu_pods" in t and (t["multi_gpu_pods"].fillna(0) > 0).any():
        # multi-GPU pods ran: where their cards landed, as the cluster describes it
        metrics += [m for m in ("cross_numa_pct", "mean_pair_score")
                    if m in t and t[m].notna().any()]
    # the file is sorted by cell id (stable across runs); people read it by inputs
    view = t[[*varying, "seed", "status", *metrics, "cell"]].sort_values(
        [*varying, "seed"], kind="stable")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        text = view.head(max_rows).to_string(index=False, float_format=lambda v: f"{v:.2f}")
    lines.append(text)
    if len(t) > max_rows:
        lines.append(f"... {len(t) - max_rows} more rows in {outcome.results_path}")
    for _, r in outcome.failed.iterrows():
        lines.append(f"failed {r['cell']}: {r['error']}")
    files = ["report.html", outcome.results_path.name, "cells/"]
    if outcome.figure is not None:
        files.append("figures/sweep.png")
    lines.append(f"results written to {outcome.out}/ ({', '.join(files)})")
    return "\n".join(lines) + "\n"
