"""Fill-mode curves against arrived workload, binned as the FGD paper does.

The FGD artifact (``experiments/analysis/merge_*_discrete.py``) logs one
record per submitted pod, rounds the arrived workload to an integer percent
of GPU capacity, averages every record of a bin (each value first rounded to
two decimals) and, for a bin without records, averages the records within
±1 percent instead. :func:`curves` does the same on a hamisim time series.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["CURVE_COLUMNS", "curves", "median_at"]

CURVE_COLUMNS = ("policy", "seed", "arrived_pct", "unallocated_gpu_pct",
                 "frag_pct_of_capacity", "frag_rate_pct")


def curves(ts: pd.DataFrame, policy: str, seed: int, max_pct: int = 130) -> pd.DataFrame:
    """One row per integer arrived percent 0..``max_pct`` that has data."""
    cap = float(ts["hami_gpu_total"].iloc[0])
    arrived = np.round(100.0 * ts["gpu_arrived"].to_numpy() / cap)   # half to even, as Python
    values = {
        "unallocated_gpu_pct": np.round(100.0 * ts["unallocated_gpu"].to_numpy() / cap, 2),
        "frag_pct_of_capacity": np.round(ts["frag_pct_of_capacity"].to_numpy(), 2),
        "frag_rate_pct": np.round(ts["frag_rate_pct"].to_numpy(), 2),
    }
    rows = []
    for pct in range(max_pct + 1):
        sel = arrived == pct
        if not sel.any():
            sel = (arrived >= pct - 1) & (arrived <= pct + 1)
            if not sel.any():
                continue
        rows.append((policy, seed, pct, *(round(float(v[sel].mean()), 2)
                                          for v in values.values())))
    return pd.DataFrame(rows, columns=list(CURVE_COLUMNS))


def median_at(table: pd.DataFrame, column: str = "unallocated_gpu_pct") -> pd.DataFrame:
    """Median over seeds: rows = arrived percent, columns = policies."""
    return table.pivot_table(index="arrived_pct", columns="policy", values=column,
                             aggfunc="median", sort=False)
