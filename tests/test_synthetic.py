"""Synthetic workloads: lazy, reproducible, at the asked load."""
from __future__ import annotations

import types

import pandas as pd
import pytest

from hamisim.io.synthetic import synthetic_cluster, synthetic_trace
from hamisim.shapes import gpu_request
from hamisim.sim.engine import EngineConfig, simulate


def test_trace_is_lazy_and_reproducible():
    gen = synthetic_trace(1000, 80, seed=3)
    assert isinstance(gen, types.GeneratorType)
    a = [(tp.pod.name, tp.arrival, tp.duration) for tp in synthetic_trace(300, 80, seed=3)]
    b = [(tp.pod.name, tp.arrival, tp.duration) for tp in synthetic_trace(300, 80, seed=3)]
    assert a == b
    assert [t for _, t, _ in a] == sorted(t for _, t, _ in a)


def test_offered_load_is_near_the_target():
    pods = list(synthetic_trace(20000, 1000, load=0.5, seed=1))
    span = pods[-1].arrival
    offered = sum(gpu_request(tp.pod, card_memory_mib=40960) * tp.duration for tp in pods)
    assert offered / span / 1000 == pytest.approx(0.5, rel=0.1)


def test_sampled_time_series_is_sparse_and_ends_with_the_final_state():
    cluster = synthetic_cluster(4)
    trace = list(synthetic_trace(400, cluster.n_cards, load=0.7, seed=2))
    every = simulate(cluster, trace, EngineConfig())
    sparse = simulate(cluster, trace, EngineConfig(sample_interval=600.0))
    pd.testing.assert_frame_equal(sparse.events, every.events)
    gaps = sparse.timeseries.time.diff().dropna()
    assert (gaps[:-1] >= 600.0).all() and len(sparse.timeseries) < len(every.timeseries)
    last = sparse.timeseries.iloc[-1]
    assert last.pods_departed + last.pods_abandoned + last.pods_running + last.pods_pending \
        == 400
