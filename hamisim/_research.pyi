"""Type stub of hamisim/_research.pyx (the FGD paper's research node policies);
C types in trailing comments."""
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
U8 = npt.NDArray[np.uint8]
F64 = npt.NDArray[np.float64]


RESEARCH_CODES: dict[str, int]  # policy codes (RESEARCH_POLICIES order), rejection bits, constants
RESEARCH_REASONS: tuple[str, str, str, str]     # reasons of the rejection bits, bit order
# [rng.integers(n) for n in n_values], drawn in C from rng's bit generator (n <= 2**32)
def bounded_draws(rng: np.random.Generator, n_values: Any) -> list[int]: ...


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
