"""Type stub of hamisim/_replay.pyx (the replay engine, compiled); C types in
trailing comments."""
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from hamisim._core import Core, PodSpec
from hamisim._failtext import FailText
from hamisim._meter import MeterCore
from hamisim._research import ResearchCore

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
F64 = npt.NDArray[np.float64]


class ReplayCore:
    """The replay engine's event loop and bookkeeping for one run (hamisim.sim.compiled
    builds it; hamisim.sim.engine is its readable twin). Pods are numbered in arrival
    order; every per-pod input is in that order."""

    n_pods: int
    next_start: int                   # kube-scheduler's rotating start index
    now: float                        # the clock: the last event's time
    feeder_done: bool                 # every pod has arrived
    n_arrived: int
    n_pending: int
    n_running: int
    n_departed: int
    n_abandoned: int
    n_attempts: int
    live: int                         # pending timers that can change the cluster
    gpu_arrived: float
    peak_alloc: int
    peak_time: float
    decision_time: float              # seconds in HAMi's decisions (kernel calls)
    last_time: float                  # time of the last recorded event
    # the current batch of events (first ev_n rows) and of pods (first pd_n rows)
    np_ev_time: F64
    np_ev_kind: Any                   # int8, codes of hamisim.sim.recorder.EVENT_KINDS
    np_ev_node: I64                   # -1 = none
    np_ev_pod: I64                    # pod number (arrival order)
    np_ev_count: I64                  # occurrences the row stands for (aggregated failures)
    np_ev_last: F64                   # the last of them
    aggregate: bool                   # failed attempts as a row per pod and message
    ev_n: int
    ev_dev_rows: list[int]
    ev_devs: list[str]
    ev_msg_rows: list[int]
    ev_msgs: list[str]
    np_pd_pod: I64
    np_pd_class: Any                  # int32
    np_pd_arrival: F64
    np_pd_first: F64
    np_pd_bind: F64
    np_pd_node: I64
    np_pd_attempts: I64
    np_pd_end: F64
    pd_devs: list[str | None]
    pd_n: int
    # per pod in pods-table order (first s_n), queueing delays (first n_delays)
    np_s_class: Any
    np_s_node: Any
    np_s_arrival: F64
    np_s_bind: F64
    np_s_end: F64
    np_delays: F64
    s_n: int
    n_delays: int
    g_times: Any                      # array('d'): per-group series times
    g_rows: Any                       # array('q'): 7 raw sums per row
    def __init__(
        self, core: Core, meter: MeterCore, *, arrival: F64, duration: F64, deletion: F64,
        template: Any, priority: Any, pod_class: Any, t_spec: list[PodSpec | None],
        t_kind: U8, t_wants_gpu: U8, t_node_spread: U8, t_n_init: Any, t_cpu: I64,
        t_mem: I64, t_gpu: F64, node_start: I64, pad_empty: U8, card_ids: list[str],
        retry: bool, flush_after: float, backoff_initial: float, backoff_max: float,
        sample_interval: float | None, random_ties: bool, wanted: int, next_start: int,
        many_groups: bool, n_groups: int,
        fail_message: Callable[[int], str],           # template -> FailedScheduling text
        pod_error: Callable[[int], str],              # pod number -> admission/Filter error
        draw_block: Callable[[int], F64],             # n -> n tie-break draws in [0, 1)
        progress: Callable[[int], object] | None,     # pods arrived since the last call
        on_events: Callable[[int], None],             # a batch of n events is ready
        on_pods: Callable[[int], None],               # a batch of n pods' rows is ready
        aligned: U8 | None = ...,                     # per node: HAMi lists GPU-less containers
        fail_text: FailText | None = ...,             # the failure text in C (else fail_message)
        preemption: bool = ...,                       # DefaultPreemption on
        t_never: U8 | None = ...,                     # per template: preemptionPolicy Never
        draw_offset: Callable[[int], int] | None = ...,  # n -> the dry run's start in [0, n)
        preempt_message: Callable[..., str] | None = ...,  # a dry run's whole text
        victim_message: Callable[[int, int], str] | None = ...,  # (preemptor, node) -> text
        preempt_postfix: Callable[..., str | None] | None = ...,  # a dry run's PostFilter text
        # ResourceQuota (hamisim.sim.compiled._quotas); None: no namespace has a limit
        t_qns: Any = ...,                             # int32 per template: namespace code, -1
        t_qmem: I64 | None = ...,                     # webhook request MiB (-1: not checked)
        t_qcores: I64 | None = ...,                   # webhook request cores
        q_lim_mem: I64 | None = ...,                  # per namespace code, -1 = not set
        q_lim_cores: I64 | None = ...,
        quota_denied: str | None = ...,               # the webhook's refusal text
        t_grace: F64 | None = ...,                    # per template: termination grace period
        t_init_after: F64 | None = ...,               # init containers end after bind (NaN none)
        t_reserve: U8 | None = ...,                   # what-if mutex-reserve
        n_initial: int = ...,                         # pods 0..n_initial-1: the initial state
        recalls_deleting: bool = ...,                 # kube-scheduler <= 1.34: preempts a
                                                      # terminating victim again
        defrag_interval: float = ...,                 # what-if defragmenter: every S s (0 none)
        defrag_moves: int = ...,                      # ... at most this many moves a round
        by_name: I64 | None = ...,                    # pods in name order (its trial order)
        node_names: list[str] | None = ...,           # for the move rows' text
        research: ResearchCore | None = ...,          # a research policy decides (after
                                                      # ResearchCore.replay_setup)
        aggregate: bool = ...,                        # failed attempts: a row per pod and
                                                      # message (Recorder(events=...))
    ) -> None: ...
    # an initial pod at time 0 (before run, in order), then the time-0 sample
    def adopt(self, k: int, node: int, rows: list[int], used: list[int], mem: list[int],
              cores: list[int], devices: str | None, mig: tuple | None, departure: float,
              message: str) -> None: ...
    def adopted(self) -> None: ...
    n_initial: int
    n_preempted: int                  # pods counted preempted (once each)
    @property
    def next_time(self) -> float: ...   # the next event's time, inf when none is left
    def run(self, horizon: float = ...) -> None: ...   # every event before horizon
    def finish(self, final_sample: bool = ...) -> None: ...
    def close_failed_attempts(self) -> None: ...   # the open aggregated rows, at the end
    def flush_events(self) -> None: ...
    def flush_pods(self) -> None: ...
    def flush_groups(self) -> None: ...
