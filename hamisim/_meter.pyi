"""Type stub of hamisim/_meter.pyx (the meter's per-node refresh); C types in
trailing comments."""
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]


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
    def apply_deficit(
        self, rows: list[int], used: list[int], mem: list[int], cores: list[int],
        sign: int,                              # 1 add, -1 remove
    ) -> None: ...
    def quirk_figures(self, end_time: float) -> dict[str, float]: ...
    def apply(
        self,
        node: int,
        rows: list[int],                        # card rows
        amounts: list[tuple[int, int, int]],    # per row: slots, memory, cores
        cpu_milli: int,
        sign: int,                              # 1 add, -1 remove
    ) -> None: ...
