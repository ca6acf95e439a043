"""Type stub of the compiled kernel (hamisim/_core.pyx); C types in trailing comments."""
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
U8 = npt.NDArray[np.uint8]
F32 = npt.NDArray[np.float32]

CODES: dict[str, int]           # policy codes, request columns and flags
REASON_ORDER: tuple[str, ...]   # reason code -> HAMi reason key (== outcome.REASONS)
ST_NAMES: dict[str, int]        # node status codes: FIT, FIT_FAILED, INSUFFICIENT, ...
ROW_COLUMNS: tuple[tuple[str, ...], tuple[str, ...]]   # Core.rank_attempt: int, float columns

Pick3 = tuple[int, int, int]    # (node-local card position: int, mem: int64_t, cores: int64_t)

class CardTable:
    """Cluster arrays (hamisim.sim.arrays.ClusterState); usage arrays are read live."""

    max_cards: int              # int
    max_picks: int              # int: most picks of one container on a node (MIG instances)
    n_nodes: int                # int
    reserved: I64               # int64_t[rows]: what-if mutex-reserve holders per card (live)
    def __init__(
        self,
        *,
        node_start: I64,        # int64_t[n_nodes + 1]
        pair_start: I64,        # int64_t[n_nodes + 1]
        n_vendor: I64,          # int64_t[n_nodes]
        count: I64,             # int64_t[n_cards]
        devmem: I64,            # int64_t[n_cards]
        devcore: I64,           # int64_t[n_cards]
        numa: I64,              # int64_t[n_cards]
        index: I64,             # int64_t[n_cards]
        health: U8,             # uint8_t[n_cards]
        cordoned: U8,           # uint8_t[n_cards]
        is_vendor: U8,          # uint8_t[n_cards]
        type_exact: U8,         # uint8_t[n_cards]
        type_id: I32,           # int32_t[n_cards]
        mode_id: I32,           # int32_t[n_cards]
        used: I64,              # int64_t[n_cards], live
        usedmem: I64,           # int64_t[n_cards], live
        usedcores: I64,         # int64_t[n_cards], live
        pair: I64,              # int64_t[sum k*k]
        alloc_cpu: I64,         # int64_t[n_nodes], -1 = unconstrained
        alloc_mem: I64,         # int64_t[n_nodes], -1 = unconstrained
        req_cpu: I64,           # int64_t[n_nodes], live
        req_mem: I64,           # int64_t[n_nodes], live
        aligned: U8 | None = ...,  # uint8_t[n_nodes]: 0 list drops GPU-less containers, 1 keeps, 2 corrected
        mig: dict[str, Any] | None = ...,  # hamisim.sim.arrays.mig_arrays; None = no MIG card
    ) -> None: ...

class PodSpec:
    """One attempt's encoded request (hamisim.sim.arrays.encode_pod)."""

    n_cont: int                 # int
    user_rank: bool             # bint: the cluster's vectorised Python node policy ranks it
    def __init__(
        self,
        req: I64,               # int64_t[n_cont, 5]: nums, memreq, pct, coresreq, flags
        n_init: int,            # int
        mode: int,              # int: policy.MODE_CHAIN / SINGLE_*
        chain: I32,             # int32_t[3]: policy.KEY_*
        n_chain: int,           # int
        sort_numa_bind: bool,   # bint
        fit_numa_bind: bool,    # bint
        mutex: bool,            # bint
        topology: bool,         # bint
        weights: F32,           # float[3]: slot, core, memory
        type_ok: U8,            # uint8_t[n_types]
        mode_ok: U8,            # uint8_t[n_modes]
        uuid_ok: U8,            # uint8_t[n_cards]
        cpu_milli: int = ...,   # int64_t
        memory_mib: int = ...,  # int64_t
        gate: I32 | None = ..., # int32_t[n_nodes]: kube-scheduler's filter code per node
        mig_request: bool = ..., # bint: no nvidia.com/vgpu-mode, or one containing "mig"
    ) -> None: ...
    def set_quota(
        self,
        active: bool,           # bint: HAMi's ResourceQuota check on/off
        used_mem: int = ...,    # int64_t: the namespace's usage without this pod, MiB
        used_cores: int = ...,  # int64_t
        limit_mem: int = ...,   # int64_t: x memory_factor, -1 = not set
        limit_cores: int = ..., # int64_t: -1 = not set
    ) -> None: ...

class Core:
    """Scratch buffers plus the attempt loop over one CardTable."""

    np_rej_node: I64            # int64_t[n_nodes]: rejected nodes, visiting order
    np_rej_bits: I32            # int32_t[n_nodes]: 1 = cpu, 2 = memory
    np_window: I64              # int64_t[n_nodes]: nodes handed to HAMi, cluster order
    np_status: I32              # int32_t[n_nodes]: per window position
    np_score: F32               # float[n_nodes]: node base score per window position
    np_counts: I32              # int32_t[n_nodes, 13]: Fit reason histogram per window position
    np_ncards: I64              # int64_t[n_nodes]: cards handed to Fit per window position
    np_tied: I64                # int64_t[n_nodes]: window positions tied with the winner
    np_out_n: Any               # int[cap_c]
    np_out_pos: Any             # int[cap_c, cap_p]
    np_out_mem: Any             # int64_t[cap_c, cap_p]
    np_out_cores: Any           # int64_t[cap_c, cap_p]
    n_rejected: int             # int
    rej_union: int              # int: OR of the rejected nodes' bits (1 CPU, 2 memory, 4+ static)
    n_window: int               # int
    n_fit: int                  # int
    n_tied: int                 # int
    best: int                   # int: window position, -1 = none
    next_start: int             # int
    node_score: float           # float
    placed: int                 # int: node whose picks are in the pick buffers, -1 = none
    n_evaluated: int            # int: nodes fully evaluated by the last attempt's fast choice
                                # (a failure the memo remembers is not evaluated again)
    use_index: bool             # bint: ordered node index when every node is examined
    use_memo: bool              # bint: reuse a failure on a node unchanged since (_memo.pxi)
    def __init__(self, table: CardTable, max_containers: int = ...) -> None: ...
    def refresh_node(self, node: int) -> None: ...   # int node: recompute its aggregates
    def refresh_all(self) -> None: ...
    def take_changed_groups(self) -> list[tuple[int, int, int, int, int, int, int]]: ...
    def apply_rows(self, node: int, rows: list[int], used: list[int], mem: list[int],
                   cores: list[int], cpu_milli: int, sign: int) -> None: ...
    def snapshot_peak(self) -> None: ...
    def peak_usage(self) -> Any: ...
    def sample(self, time: float, arrived: int, pending: int, running: int, departed: int,
               abandoned: int, gpu_arrived: float, delay: float, active: int, backoff: int,
               unschedulable: int, scheduled: int, failed: int, errors: int) -> None: ...
    def series(self) -> tuple[Any, Any, Any]: ...
    ts_rows: int
    def apply(
        self,
        node: int,              # int
        rows: Any,              # sequence of int64_t card rows of that node
        d_used: Any,            # sequence of int64_t, per row
        d_mem: Any,             # sequence of int64_t, per row
        d_cores: Any,           # sequence of int64_t, per row
        cpu: int,               # int64_t
        mem: int,               # int64_t
        sign: int = ...,        # int: 1 add, -1 remove
    ) -> None: ...
    def reserve(
        self,
        rows: Any,              # sequence of int64_t card rows
        sign: int = ...,        # int: 1 a mutex-reserve pod holds them, -1 it left
    ) -> None: ...
    def attempt(
        self,
        pod: PodSpec,
        start: int,             # int
        wanted: int,            # int
        wants_gpu: bool,        # bint
        node_spread: bool,      # bint
        sample_only: bool = ...,  # bint
        want_ties: bool = ...,  # bint: list every tied fitting node (random tie-break)
    ) -> int: ...               # int: window position of the chosen node, -1 = none
    np_rows_i: I64              # int64_t[9, n_nodes]: rank_attempt's integer columns
    np_rows_f: Any              # double[3, n_nodes]: its float columns (hamisim.hami.noderows)
    def rank_attempt(
        self,
        pod: PodSpec,
        start: int,             # int
        wanted: int,            # int
        ranker: Any,            # hamisim.hami.noderows.RowRanker: .choose(n_rows, draw) -> row
        draw: float = ...,      # double: random tie-break draw, < 0 = none
    ) -> int: ...               # int: window position of the chosen node, -1 = none
    def place(self, pod: PodSpec, node: int) -> int: ...   # int status
    def failure_groups(
        self,
    ) -> tuple[list[int], list[tuple[int, int]]]: ...   # (nodes per status, [(position, nodes)])
    def picks(self, n_cont: int) -> list[list[Pick3]]: ...
    def mig_picks(self, n_cont: int) -> list[list[tuple[int, int]]]: ...  # (profile, placement) rows
    def apply_mig(self, rows: Any, masks: Any, sign: int = ...) -> None: ...
    def fit_on_node(
        self, pod: PodSpec, node: int, ci: int, perm: Any
    ) -> tuple[bool, list[Pick3], list[int], int]: ...
    def fit_in_devices_on_node(
        self, pod: PodSpec, node: int, ci: int
    ) -> tuple[int, list[Pick3], list[int], int]: ...
    def score_node(
        self, pod: PodSpec, node: int
    ) -> tuple[int, float, list[list[Pick3]], list[int], int]: ...

def card_scores(
    count: I64, devmem: I64, devcore: I64, used: I64, usedmem: I64, usedcores: I64,
    req: I64,                   # int64_t[n_req, 5]
    match: U8,                  # uint8_t[n_cards, n_req]
    weights: F32,               # float[3]
) -> F32: ...                   # float[n_cards]
def card_less(
    mode: int, chain: Any, n_chain: int, numa_bind: bool,
    a: tuple[float, int, int, int],   # (float score, int64_t numa, int64_t used, int64_t index)
    b: tuple[float, int, int, int],
) -> bool: ...
def sort_order(
    mode: int, chain: Any, n_chain: int, numa_bind: bool,
    scores: F32, numa: I64, used: I64, index: I64,
) -> npt.NDArray[np.intc]: ...  # int[n]: Go sort.Sort permutation
def node_base_score(
    count: I64, devmem: I64, devcore: I64, used: I64, usedmem: I64, usedcores: I64
) -> float: ...                 # float (float32 value)
def node_less(spread: bool, a: float, b: float) -> bool: ...   # float a, float b

# --- research node policies of the FGD paper (hamisim/_research.pxi) ---------

RESEARCH_CODES: dict[str, int]  # policy codes (RESEARCH_POLICIES order), rejection bits, constants
RESEARCH_REASONS: tuple[str, str, str, str]     # reasons of the rejection bits, bit order
# [rng.integers(n) for n in n_values], drawn in C from rng's bit generator (n <= 2**32)
def bounded_draws(rng: np.random.Generator, n_values: Any) -> list[int]: ...
F64 = npt.NDArray[np.float64]

class ResearchCore:
    """Open-Gpu-Share state of a cluster and the six research policies' scores."""

    n_nodes: int                # int
    n_cards: int                # int
    max_cards: int              # int
    n_types: int                # int
    n_shapes: int               # int
    n_cls: int                  # int: GpuClustering classes (2 * max_cards + 1)
    spec_cap: int               # int: room in the (node, spec) score cache
    n_feasible: int             # int
    n_tied: int                 # int
    n_rejected: int             # int
    next_start: int             # int
    n_pick: int                 # int
    best_score: int             # int64_t
    np_left: I64                # int64_t[n_cards]: free milli per card, live
    np_cpu_req: I64             # int64_t[n_nodes], live
    np_mem_req: I64             # int64_t[n_nodes], live
    np_node_ver: I64            # int64_t[n_nodes]: bumped on every change of the node
    np_cls_cnt: I64             # int64_t[n_nodes, n_cls]
    np_cls_present: I32         # int32_t[n_nodes]
    np_feasible: I64            # int64_t[n_nodes]: feasible nodes, cluster order
    np_tied: I64                # int64_t[n_nodes]: top-scored nodes, cluster order
    np_rej_node: I64            # int64_t[n_nodes]: rejected nodes, visiting order
    np_rej_bits: I32            # int32_t[n_nodes]: 1 cpu, 2 memory, 4 model, 8 GPU
    np_score: I64               # int64_t[n_nodes]: score per feasible position
    np_node_gpu: I32            # int32_t[n_nodes]: FGD's card for a share pod, -1 = none
    np_pick: I32                # int32_t[max_cards]: node-local card positions
    def __init__(
        self,
        node_start: I64,        # int64_t[n_nodes + 1]
        card_type: I32,         # int32_t[n_cards]
        card_usable: U8,        # uint8_t[n_cards]
        cpu_cap: I64,           # int64_t[n_nodes]
        mem_cap: I64,           # int64_t[n_nodes], -1 = unconstrained
        n_types: int,           # int
        sh_cpu: I64,            # int64_t[n_shapes]
        sh_milli: I64,          # int64_t[n_shapes]
        sh_k: I64,              # int64_t[n_shapes]
        sh_w: F64,              # double[n_shapes]
        sh_type_ok: U8,         # uint8_t[n_shapes, n_types]
        spec_cap: int = ...,    # int
    ) -> None: ...
    def grow_specs(self, cap: int) -> None: ...
    def bind(
        self, node: int, pos: Any, milli: int, cpu: int, mem: int, cls: int, sign: int = ...
    ) -> None: ...
    def attempt(
        self,
        policy: int,            # int
        cpu: int,               # int64_t: fit
        cpu_s: int,             # int64_t: scores (non-zero)
        mem: int,               # int64_t
        k: int,                 # int
        milli: int,             # int64_t
        type_ok: U8,            # uint8_t[n_types]
        spec: int,              # int: FGD cache id, -1 = none
        cls: int,               # int: GpuClustering class, -1 = none
        no_req: bool,           # bint
        start: int,             # int
        wanted: int,            # int
    ) -> int: ...               # int: number of top-scored nodes, 0 = none fits
    def count_fit(self, node: int, milli: int, type_ok: U8) -> int: ...
    def choose(
        self, policy: int, node: int, k: int, milli: int, type_ok: U8, draw: int = ...
    ) -> int: ...               # int: cards chosen (np_pick), -1 = none
    # ReplayCore's research attempts (hamisim.sim.compiled): per template the
    # request, its type filter, FGD spec id, class and cards per container; the
    # scheduler's generator; card ids and memory
    replaying: bool
    def replay_setup(
        self, *, policy: int, draw_ties: bool, rng: np.random.Generator, t_cpu: I64,
        t_cpu_s: I64, t_mem: I64, t_k: I32, t_milli: I64, t_tok: U8, t_spec: I32, t_cls: I32,
        t_noreq: U8, t_n_init: I32, t_cc_off: I64, t_cc: I32, card_ids: list[str],
        card_devmem: Any, n_pods: int, n_initial: int,
    ) -> None: ...
    # initial pod k as ResearchScheduler.bound_of records it
    def replay_initial(self, k: int, node: int, pos: Any, milli: Any, cpu: int, mem: int,
                       cls: int) -> None: ...


class MeterCore:
    """The meter's arrays (shared with hamisim.sim.metrics.ClusterMeter) and running sums."""

    sum_alloc: int              # int64_t: cards with a tenant
    sum_idle: int               # int64_t: nodes whose cards are all idle
    sum_free: int               # int64_t: free GPU share, micro-GPUs
    sum_frag: int               # int64_t: fragmented share, micro-GPUs
    sum_unfit: int              # int64_t: share no typical shape can use, micro-GPUs
    sum_used: int               # int64_t: vGPU slots in use
    sum_usedmem: int            # int64_t: card memory in use, MiB
    sum_usedcores: int          # int64_t: card cores in use
    def __init__(
        self, used: I64, usedmem: I64, usedcores: I64, count: I64, devmem: I64, devcore: I64,
        usable: U8, node_start: I64, node_cpu: I64, node_cpu_used: I64, node_alloc: I64,
        node_free: I64, node_frag: I64, node_idle: U8, s_nums: I64, s_memreq: I64,
        s_pct: I64, s_has_pct: U8, s_cores: I64, s_cpu: I64, s_weight: Any, type_ok: Any,
        card_unfit: Any, node_unfit: I64, node_group: Any, g_alloc: I64, g_idle: I64,
        g_free: I64, g_frag: I64, g_unfit: I64, g_used: I64, g_usedmem: I64,
        g_usedcores: I64, g_dirty: U8,
    ) -> None: ...
    def refresh_all(self) -> None: ...
    def apply(
        self,
        node: int,
        rows: list[int],                        # card rows
        amounts: list[tuple[int, int, int]],    # per row: slots, memory, cores
        cpu_milli: int,
        sign: int,                              # 1 add, -1 remove
    ) -> None: ...


class FailText:
    """kube-scheduler's FailedScheduling text of the kernel's last failed attempt,
    built in C (_failtext.pxi); Python is asked only for new reason and PostFilter texts."""

    n_built: int                      # texts built
    n_declined: int                   # texts left to the caller's Python
    def __init__(
        self, core: Core,
        wants_gpu: U8,                                # per template
        postfix_class: Any,                           # int32 per template: one PostFilter text
        reason_of: Callable[[int, Any], str | None],  # (kind, value) -> reason, None declines
        postfix_of: Callable[[int, int], str],        # (template, potential nodes) -> text
    ) -> None: ...


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
    def flush_events(self) -> None: ...
    def flush_pods(self) -> None: ...
    def flush_groups(self) -> None: ...
