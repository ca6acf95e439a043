"""Local worker processes for studies that run many simulations at once.

:func:`process_pool` is a :class:`concurrent.futures.ProcessPoolExecutor`
whose workers come from a fork server (clean, single-threaded: safe when the
caller has threads), ignore Ctrl-C (the submitting process alone handles it
and stops them), stay quiet about input warnings the submitting process
already showed, and leave when the submitting process dies. A ``with`` block
left by an exception (Ctrl-C, SIGTERM) stops them at once.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import tempfile
import threading
import time
import warnings
from typing import Any, Sequence

from hamisim.errors import InputWarning

__all__ = ["process_pool", "stop_pool", "cpu_count", "idle_cpus", "start_fork_server",
           "FIGURE_MODULES"]

#: what drawing a figure needs (:class:`hamisim.plots.FigureJob` s carry numpy
#: arrays, not pandas), for :func:`start_fork_server`
FIGURE_MODULES = ("numpy", "matplotlib.pyplot", "matplotlib.backends.backend_agg",
                  "hamisim.plots")


def process_pool(workers: int, tmp_root: str | None = None) -> cf.ProcessPoolExecutor:
    """A pool of ``workers`` processes set up as the module docstring says.
    With ``tmp_root`` the workers make their temporary files under that folder,
    which the caller removes when it is done: a worker that is killed cannot
    remove its own."""
    methods = multiprocessing.get_all_start_methods()
    # This preloads nothing in the fork server: Python 3.11's fork server starts
    # with the working directory first on sys.path, so from a source checkout it
    # would import the uncompiled hamisim/ folder instead of the installed
    # package; the workers import hamisim on the caller's path. (A server that
    # start_fork_server started may hold modules: hamisim's only where that
    # path finds this hamisim.)
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
    else:                                       # pragma: no cover - Windows
        ctx = multiprocessing.get_context("spawn")
    return _Pool(max_workers=workers, mp_context=ctx,
                 initializer=_init_worker, initargs=(tmp_root,))


class _Pool(cf.ProcessPoolExecutor):
    """A process pool whose ``with`` block, left by an exception (Ctrl-C, SIGTERM
    turned into one by :func:`hamisim.io.outputs.sigterm_as_interrupt`), drops the
    jobs not started and ends the running ones at once, and returns only when every
    worker is gone: an interrupted ``compare`` does not run its remaining
    simulations first, and no worker writes into a results folder being removed
    (the caller removes its temporary folder after the block)."""

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            return super().__exit__(exc_type, exc, tb)
        stop_pool(self)
        return False


def stop_pool(pool: cf.ProcessPoolExecutor) -> None:
    """End ``pool`` now: queued jobs dropped, workers terminated (SIGTERM, whose
    default ends them silently) and waited for, and the pool's manager thread
    gone when this returns."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)   # shutdown forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
    # The pool's manager thread closes its wake-up pipe as it leaves; Python 3.11's
    # exit handler writes to that pipe without a lock, so a manager thread still
    # leaving at interpreter exit makes it print "Bad file descriptor" (fixed in
    # 3.12). Waiting for the thread here ends the race before exit can begin.
    if manager is not None and manager is not threading.current_thread():
        manager.join(timeout=5)


def start_fork_server(preload: Sequence[str] = ()) -> bool:
    """Start the fork server that :func:`process_pool` forks its workers from, now,
    importing ``preload`` in it: the server imports them on another core while the
    caller goes on, and every worker forked from it later starts with them loaded.
    hamisim's own modules are left out where the server would find another hamisim
    than this one (see :func:`process_pool`). Returns False where there is no fork
    server. A server already running is kept as it is (its workers import what they
    need)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False                            # pragma: no cover - Windows
    from multiprocessing import forkserver
    if not _server_imports_this_hamisim():
        preload = [m for m in preload if m.split(".")[0] != "hamisim"]
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(preload))
    # Ctrl-C reaches the whole process group, and the server installs its own
    # "ignore" only after its imports: started with SIGINT ignored (which exec
    # keeps, and Python then leaves alone) it never prints a traceback from them
    previous = (signal.getsignal(signal.SIGINT)
                if threading.current_thread() is threading.main_thread() else None)
    if previous is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return True


def _server_imports_this_hamisim() -> bool:
    """Whether ``import hamisim`` in the fork server finds this hamisim: its path is
    this process's but starts with the working directory, so it differs only where
    the working directory holds a hamisim/ of its own (a source checkout)."""
    local = os.path.join(os.getcwd(), "hamisim")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return not os.path.exists(local) or os.path.realpath(local) == os.path.realpath(here)


def idle_cpus() -> int:
    """The CPUs this process may use less those other work keeps busy right now, at
    least 1: where the CPUs are busy, worker processes cost their start and gain
    no time."""
    return max(1, cpu_count() - _running_elsewhere())


#: the kernel's load figures; the fourth field is "running/total" threads right now
_LOADAVG = "/proc/loadavg"


def _running_elsewhere() -> int:
    """Threads other than this one running or waiting for a CPU now: the least of a
    few looks a millisecond apart, so that a passing one does not count (not the
    one-minute load average, which this program's own previous runs raise);
    the one-minute load average where the kernel gives no such count."""
    try:
        counts = []
        for k in range(3):
            if k:
                time.sleep(0.001)
            with open(_LOADAVG) as fh:
                counts.append(int(fh.read().split()[3].split("/")[0]) - 1)
        return max(0, min(counts))
    except (OSError, ValueError, IndexError):
        try:
            return int(os.getloadavg()[0])
        except (AttributeError, OSError):       # pragma: no cover - Windows
            return 0


def cpu_count() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                      # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def _init_worker(tmp_root: str | None = None) -> None:
    """Set up a pool worker (see the module docstring)."""
    if tmp_root is not None:
        tempfile.tempdir = tmp_root
    # Ctrl-C reaches the whole process group: the submitting process alone
    # handles it (and stops the workers), so workers print no tracebacks.
    # SIGTERM keeps its default (the worker ends without a word): it is how the
    # submitting process stops them, and what a batch system sends them all
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # the submitting process showed the inputs' policy warnings once already
    warnings.simplefilter("ignore", InputWarning)
    # a pool worker outlives a killed submitting process (it waits on a queue
    # it holds both ends of): leave with it instead of lingering
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True,
                         name="hamisim-exit-with-parent").start()


def _exit_with(parent: Any) -> None:
    parent.join()                   # returns when the parent process is gone
    os._exit(1)


