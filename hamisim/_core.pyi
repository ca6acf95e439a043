"""Type stub of the compiled HAMi kernel (hamisim/_core.pyx); C types in trailing comments.

The other compiled modules have their own stubs: _research.pyi, _meter.pyi,
_failtext.pyi, _replay.pyi."""
from typing import Any

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
    use_memo: bool              # bint: reuse a failure on a node unchanged since (_memo.pyx)
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
    def nominate(
        self,
        node: int,              # int
        cpu: int,               # int64_t: the nominated pods' CPU there (millicores)
        mem: int,               # int64_t: their memory (MiB)
        sign: int = ...,        # int: 1 count them for the next attempt, -1 stop
    ) -> None: ...              # the filter sees them, the scores do not
    def set_gate_classes(
        self,
        gates: Any,             # sequence of int32_t[n_nodes] arrays, 0 = the gate passes
    ) -> None: ...
    def gate_class_version(self, c: int) -> int: ...  # changes of the nodes class c passes
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
