"""FGD-style binning of fill-mode time series against arrived workload."""
from __future__ import annotations

import pandas as pd
import pytest

from hamisim.studies.fillcurves import curves, median_at


def ts(arrived, unalloc, total=100):
    n = len(arrived)
    return pd.DataFrame({"hami_gpu_total": [total] * n, "gpu_arrived": arrived,
                         "unallocated_gpu": unalloc, "frag_pct_of_capacity": [1.0] * n,
                         "frag_rate_pct": [2.0] * n})


def test_records_of_one_bin_are_averaged():
    c = curves(ts([0.2, 0.4, 1.2], [99.8, 99.6, 98.0]), "p", 1, max_pct=1)
    assert list(c.arrived_pct) == [0, 1]
    assert c.unallocated_gpu_pct.tolist() == [pytest.approx(99.7), 98.0]


def test_empty_bin_uses_the_neighbourhood():
    # nothing rounds to 2: the bins 1..3 are averaged instead
    c = curves(ts([1.0, 3.0], [99.0, 97.0]), "p", 1, max_pct=3)
    got = dict(zip(c.arrived_pct, c.unallocated_gpu_pct))
    assert got[2] == pytest.approx(98.0) and got[1] == 99.0 and got[3] == 97.0


def test_half_percent_rounds_to_even_like_python():
    c = curves(ts([0.5, 1.5], [10.0, 20.0]), "p", 1, max_pct=2)
    got = dict(zip(c.arrived_pct, c.unallocated_gpu_pct))
    assert got[0] == 10.0 and got[2] == 20.0 and got[1] == 15.0   # bin 1 empty -> 0..2


def test_median_over_seeds():
    a = curves(ts([1.0], [10.0]), "p", 1, max_pct=1)
    b = curves(ts([1.0], [20.0]), "p", 2, max_pct=1)
    c = curves(ts([1.0], [40.0]), "p", 3, max_pct=1)
    assert median_at(pd.concat([a, b, c])).loc[1, "p"] == 20.0
