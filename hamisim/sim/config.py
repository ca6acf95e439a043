"""How a run is driven: :class:`EngineConfig` (mode, kube-scheduler's queue
settings, time-series resolution, which engine), and what every run needs
around its event loop: a progress bar on a terminal, and the garbage collector
paused while millions of long-lived objects are made. Shared by the Python
engine (:mod:`hamisim.sim.engine`) and its compiled twin
(:mod:`hamisim.sim.compiled`)."""
from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["EngineConfig", "ENGINES", "progress_bar", "quiet_gc"]

#: values of EngineConfig.engine
ENGINES = ("auto", "compiled", "python")


@dataclass(frozen=True)
class EngineConfig:
    """How the engine drives the scheduler (kube-scheduler's queue settings)."""

    mode: str = "replay"             # replay | fill
    retry: str = "backoff"           # backoff | none
    # kube-scheduler's queue (hamisim.kube.queue): podInitialBackoffSeconds,
    # podMaxBackoffSeconds, podMaxInUnschedulablePodsDuration, and the periods of
    # its two flushes (flushBackoffQCompleted, flushUnschedulablePodsLeftover)
    backoff_initial: float = 1.0
    backoff_max: float = 10.0
    flush_after: float = 300.0
    backoff_flush_period: float = 1.0
    leftover_flush_period: float = 30.0
    seed: int = 0
    backend: str = "kernel"
    progress: bool | None = None     # None = only on a terminal
    #: time-series resolution: ``None`` = one row per event time; else at most
    #: one row per this many seconds (the state after the first event at or past
    #: each sampling time), which keeps long replays' tables small
    sample_interval: float | None = None
    #: assert the simulation's invariants after every event (hamisim.sim.checker);
    #: a violation raises hamisim.sim.checker.InvariantError
    check: bool = False
    #: which implementation runs a replay: ``compiled`` (hamisim.sim.compiled, the
    #: fast twin), ``python`` (hamisim.sim.engine, the readable one), or ``auto``:
    #: compiled where it applies (replay mode, HAMi's policies on the kernel
    #: backend, no ``check``, no initial state), python otherwise. Both give the
    #: identical run (tests/test_compiled_engine.py).
    engine: str = "auto"
    #: what-if (not HAMi): every this many seconds a defragmenter moves up to
    #: ``defrag_moves`` running pods, each the move that empties the most cards
    #: (evict, and HAMi places the pod again); ``None`` = none (HAMi's behaviour)
    defrag_interval: float | None = None
    defrag_moves: int = 1
    #: the span ``(start, end)`` (s) a replay's headline figures cover
    #: (``--window``); ``None`` = the trace's own, first to last arrival
    #: (hamisim.sim.stats.headline_window). Changes the summary, not the run.
    window: tuple[float, float] | None = None
    #: the events table's failed attempts: ``all``, one row per attempt (the
    #: engine's own default, a log that replays attempt by attempt), or
    #: ``aggregated``, one ``unschedulable`` row per pod and distinct message with
    #: its ``count`` and first and last time (hamisim.sim.recorder; the default of
    #: RunSpec and the CLI's ``--events``)
    events: str = "all"


def progress_bar(total: int | None, enabled: bool | None):
    """A tqdm bar counting pods (``enabled`` None: only when stderr is a terminal),
    or None."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="pod", desc="simulating", leave=False)


@contextmanager
def quiet_gc():
    """No automatic garbage collection inside the block (the event loop; also
    the reading of inputs, which builds many long-lived objects).

    A long run keeps a few hundred thousand long-lived objects (the cluster,
    the event columns), and CPython's automatic full collections walk all of
    them every few ten thousand pods: they cost more than the simulation
    itself in a million-pod replay (and even a young collection walks
    every running pod's objects). The engine creates almost no reference
    cycles (8 cyclic objects left by a 100,000-pod replay, freed at the
    next collection after the block), so automatic collection is paused;
    the previous state is restored on exit, also on error.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
