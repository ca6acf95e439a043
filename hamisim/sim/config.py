"""How a run is driven: :class:`EngineConfig` (mode, kube-scheduler's queue
settings, time-series resolution, which engine). Shared by the Python engine
(:mod:`hamisim.sim.engine`) and its compiled twin (:mod:`hamisim.sim.compiled`)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EngineConfig", "ENGINES"]

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
