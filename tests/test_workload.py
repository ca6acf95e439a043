"""Workloads: GPU requests (hamisim.shapes), lifetimes, re-timing and the fill (hamisim.workload)."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from samples import diurnal_trace, hour_shares

from hamisim.io.traces import read_trace
from hamisim.pods import GPU, GPUCORES, GPUMEM, GPUMEM_PERCENTAGE, Container, Pod
from hamisim.shapes import gpu_request
from hamisim.workload import (
    Trace,
    TracePod,
    fill_workload,
    lifetime,
    offered_load,
    poisson_rate,
    retime,
    scale,
)

OPENB = Path(__file__).resolve().parent.parent / "workloads" / "openb"
DEFAULT = OPENB / "openb_pod_list_default.csv"
CAPACITY = 6212


@pytest.fixture(scope="module")
def default_trace() -> Trace:
    return read_trace(DEFAULT)


def openb_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# ---------------------------------------------------------------------------
# gpu_request

@pytest.mark.parametrize("limits,card_mem,expected", [
    ({}, None, 0.0),
    ({GPU: 0}, None, 0.0),
    ({GPU: 2}, None, 2.0),
    ({GPU: 1, GPUMEM_PERCENTAGE: 25}, None, 0.25),
    ({GPU: 1, GPUMEM_PERCENTAGE: 25, GPUCORES: 60}, None, 0.6),
    ({GPU: 1, GPUCORES: 30}, None, 1.0),        # no memory asked: HAMi grants all of it
    ({GPU: 2, GPUMEM: 4000}, 16000, 0.5),
    ({GPU: 1, GPUMEM: 4000}, None, 1.0),        # MiB without a card size: a whole card
])
def test_gpu_request(limits, card_mem, expected):
    pod = Pod("p", (Container(limits),))
    assert gpu_request(pod, card_memory_mib=card_mem) == pytest.approx(expected)


def test_gpu_request_init_containers():
    pod = Pod("p", (Container({GPU: 1, GPUCORES: 20, GPUMEM_PERCENTAGE: 20}),),
              init_containers=(Container({GPU: 2}),))
    assert gpu_request(pod) == 2.0


# ---------------------------------------------------------------------------
# retime

def openb_gl() -> tuple[np.ndarray, np.ndarray]:
    rows = sorted(openb_rows(DEFAULT), key=lambda r: int(r["creation_time"]))
    g = np.array([int(r["num_gpu"]) * int(r["gpu_milli"]) / 1000 for r in rows])
    life = np.array([int(r["deletion_time"]) - int(r["creation_time"]) for r in rows], float)
    return g, life


def test_poisson_rate_formula(default_trace):
    g, life = openb_gl()
    expected = 0.8 * CAPACITY / np.mean(g * life)
    assert poisson_rate(default_trace, 0.8, CAPACITY) == pytest.approx(expected, rel=1e-12)
    capped = 0.8 * CAPACITY / np.mean(g * np.minimum(life, 600))
    assert poisson_rate(default_trace, 0.8, CAPACITY, max_lifetime=600) == \
        pytest.approx(capped, rel=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_retime_offers_the_target_load(default_trace, seed):
    out = retime(default_trace, 0.8, seed, CAPACITY)
    assert len(out) == len(default_trace)
    arrivals = np.array([tp.arrival for tp in out.pods])
    assert arrivals[0] > 0 and np.all(np.diff(arrivals) > 0)
    assert offered_load(out, CAPACITY) == pytest.approx(0.8, rel=0.03)
    # pods keep their order and lifetime (as a duration)
    ordered = list(default_trace.iter_arrivals())
    assert [tp.name for tp in out.pods] == [tp.name for tp in ordered]
    assert [tp.duration for tp in out.pods] == [lifetime(tp) for tp in ordered]
    assert all(tp.deletion is None for tp in out.pods)


def test_retime_is_seed_reproducible(default_trace):
    a = retime(default_trace, 0.5, 7, CAPACITY)
    b = retime(default_trace, 0.5, 7, CAPACITY)
    c = retime(default_trace, 0.5, 8, CAPACITY)
    assert [tp.arrival for tp in a.pods] == [tp.arrival for tp in b.pods]
    assert [tp.arrival for tp in a.pods] != [tp.arrival for tp in c.pods]


def concurrent_load(trace: Trace, capacity: float, warmup: float) -> float:
    """Time-averaged concurrently requested GPUs over [warmup, last arrival] / capacity."""
    g = np.array([gpu_request(tp.pod) for tp in trace.pods])
    a = np.array([tp.arrival for tp in trace.pods])
    d = np.array([tp.duration for tp in trace.pods])
    end = a.max()
    held = np.clip(a + d, warmup, end) - np.clip(a, warmup, end)
    return float((g * held).sum() / (end - warmup) / capacity)


def test_retime_steady_state_concurrency(default_trace):
    # openb's lifetimes are heavy-tailed: cap them and resample a long stream,
    # then the time-averaged concurrent request is the target (Little's law).
    out = retime(default_trace, 0.8, 3, CAPACITY, max_lifetime=1800, n_pods=60_000)
    assert len(out) == 60_000 and len({tp.name for tp in out.pods}) == 60_000
    assert max(tp.duration for tp in out.pods) == 1800
    assert concurrent_load(out, CAPACITY, warmup=1800) == pytest.approx(0.8, rel=0.05)


def test_retime_lifetimes_edge_cases():
    pods = [TracePod(Pod("forever", (Container({GPU: 1}),)), 0.0),
            TracePod(Pod("instant", (Container({GPU: 1}),)), 1.0, deletion=1.0),
            TracePod(Pod("run", (Container({GPU: 2}),)), 2.0, duration=10.0)]
    trace = Trace("t", pods)
    # E[g × L] = (0 + 0 + 20) / 3: the pod without lifetime counts 0.
    assert poisson_rate(trace, 1.0, 4) == pytest.approx(4 / (20 / 3))
    out = retime(trace, 1.0, 0, 4)
    assert [tp.duration for tp in out.pods] == [None, 0.0, 10.0]
    no_load = Trace("cpu", [TracePod(Pod("c", (Container(),)), 0.0, duration=5.0)])
    with pytest.raises(ValueError, match="no pod has both"):
        retime(no_load, 0.5, 0, 4)
    with pytest.raises(ValueError, match="target_load"):
        retime(trace, 0, 0, 4)


# ---------------------------------------------------------------------------
# fill_workload

def test_fill_default_to_130_percent(default_trace):
    out = fill_workload(default_trace, CAPACITY, 130, seed=42)
    target = 1.3 * CAPACITY
    total = out.total_gpu_request()
    assert total <= target + 1e-6 and total > target - 8
    assert 10_600 <= len(out) <= 11_000            # FGD: about 10.8k pods
    originals = out.pods[:len(default_trace)]
    assert sorted(tp.name for tp in originals) == sorted(tp.name for tp in default_trace.pods)
    assert [tp.name for tp in originals] != [tp.name for tp in default_trace.pods]  # shuffled
    tuned = out.pods[len(default_trace):]
    assert len(tuned) > 2_400
    assert [tp.name.rsplit("-tuned-", 1)[1] for tp in tuned] == [str(i) for i in range(len(tuned))]
    assert [tp.arrival for tp in out.pods] == [float(i) for i in range(len(out))]
    assert list(out) == out.pods == list(out.iter_arrivals())
    assert all(tp.duration is None and tp.deletion is None for tp in out.pods)
    assert len({tp.name for tp in out.pods}) == len(out)


def test_fill_is_seed_reproducible(default_trace):
    a = fill_workload(default_trace, CAPACITY, 130, seed=42)
    b = fill_workload(default_trace, CAPACITY, 130, seed=42)
    c = fill_workload(default_trace, CAPACITY, 130, seed=43)
    assert [tp.name for tp in a.pods] == [tp.name for tp in b.pods]
    assert [tp.name for tp in a.pods] != [tp.name for tp in c.pods]


def test_fill_drops_pods_above_target(default_trace):
    out = fill_workload(default_trace, CAPACITY, 50, seed=1)
    assert out.total_gpu_request() <= 0.5 * CAPACITY + 1e-6
    assert not any("-tuned-" in tp.name for tp in out.pods)
    assert len(out) < len(default_trace)


def test_fill_fgd_quirk_lets_multi_gpu_draws_overshoot():
    pods = [TracePod(Pod("big", (Container({GPU: 8}),)), 0.0)]
    out = fill_workload(Trace("t", pods), 10, 100, seed=0, fgd_stop_quirk=True)
    assert out.total_gpu_request() == 16      # the second draw counts 1 GPU at the check
    plain = fill_workload(Trace("t", pods), 10, 100, seed=0)
    assert plain.total_gpu_request() == 8


def test_fill_rejects_cpu_only_traces():
    trace = Trace("t", [TracePod(Pod("c", (Container(),)), 0.0)])
    with pytest.raises(ValueError, match="requests no GPU"):
        fill_workload(trace, 10, 100, seed=0)


# ---------------------------------------------------------------------------
# scale: the trace's own pods F times over, its cycles kept

def kind_shares(trace: Trace) -> dict[tuple, float]:
    keys = [(trace.class_labels[c], trace.templates[t].namespace, trace.templates[t].shape_key)
            for c, t in zip(trace.pod_class.tolist(), trace.template.tolist())]
    values, counts = np.unique(np.array([repr(k) for k in keys]), return_counts=True)
    return dict(zip(values.tolist(), (counts / len(keys)).tolist()))


#: each hour's share of the arrivals may move by 2 points (the profile spans 0.1 to
#: 10 %; a flat one would be 4.2 % each)
HOUR_SHARE_TOLERANCE = 0.02


@pytest.fixture(scope="module")
def diurnal() -> Trace:
    return diurnal_trace()


@pytest.mark.parametrize("factor", [1.3, 2.5, 0.6])
def test_scale_keeps_the_daily_cycle(diurnal, factor):
    scaled = scale(diurnal, factor, seed=3)
    assert len(scaled) == round(factor * len(diurnal))
    # every hour of the day keeps its share of the arrivals (the copies move by
    # minutes), and a day-by-day count grows by the factor (the weekly cycle)
    shares = hour_shares(diurnal)
    assert np.abs(hour_shares(scaled) - shares).max() < HOUR_SHARE_TOLERANCE
    assert np.corrcoef(hour_shares(scaled), shares)[0, 1] > 0.98
    days = np.bincount((diurnal.arrival // 86400).astype(int))
    scaled_days = np.bincount((scaled.arrival // 86400).astype(int), minlength=len(days))
    assert scaled_days == pytest.approx(factor * days, rel=0.15)
    # the span is the trace's own: the copies are kept within it
    assert scaled.arrival.min() >= diurnal.arrival.min()
    assert scaled.arrival.max() <= diurnal.arrival.max()
    assert np.all(np.diff(scaled.arrival) >= 0)


def test_retime_loses_the_daily_cycle_that_scale_keeps(diurnal):
    # what --load does to the same trace, so the test above can tell the two apart
    retimed = retime(diurnal, 1.3 * offered_load(diurnal, 64), 3, 64)
    assert np.abs(hour_shares(retimed) - hour_shares(diurnal)).max() > 2 * HOUR_SHARE_TOLERANCE


@pytest.mark.parametrize("factor", [1.3, 0.6])
def test_scale_keeps_classes_namespaces_and_shapes(diurnal, factor):
    before, after = kind_shares(diurnal), kind_shares(scale(diurnal, factor, seed=3))
    assert set(after) == set(before)
    for key, share in before.items():
        assert after[key] == pytest.approx(share, abs=0.03)


def test_scale_copies_are_named_and_jittered_by_minutes(diurnal):
    scaled = scale(diurnal, 1.3, seed=1)
    names = scaled.names
    assert len(set(names)) == len(names)
    # every pod of the trace is kept as it was; the copies are POD-x1
    kept = {n: i for i, n in enumerate(names)}
    for i in range(0, len(diurnal), 50):
        j = kept[diurnal.names[i]]
        assert scaled.arrival[j] == diurnal.arrival[i]
    copies = [i for i, n in enumerate(names) if "-x" in n]
    assert len(copies) == round(0.3 * len(diurnal))
    source = {n: i for i, n in enumerate(diurnal.names)}
    offsets, lifetimes = [], []
    for j in copies:
        i = source[names[j].rsplit("-x", 1)[0]]
        assert names[j].endswith("-x1")
        assert scaled.template[j] == diurnal.template[i]
        assert scaled.pod_class[j] == diurnal.pod_class[i]
        assert scaled.line[j] == diurnal.line[i]                 # messages name its row
        offsets.append(scaled.arrival[j] - diurnal.arrival[i])
        lifetimes.append((scaled.lifetimes()[j], diurnal.lifetimes()[i]))
    offsets = np.array(offsets)
    assert np.abs(offsets).max() <= 300.0 and np.abs(offsets).min() > 0
    assert offsets.std() > 100                # spread over the ten minutes, not one instant
    life = np.array(lifetimes)
    assert life[:, 0] == pytest.approx(life[:, 1])     # a deletion time moves with its copy


def test_scale_is_deterministic_under_its_seed(diurnal):
    a, b, c = (scale(diurnal, 1.7, seed=s) for s in (5, 5, 6))
    assert a.names == b.names and np.array_equal(a.arrival, b.arrival)
    assert a.names != c.names or not np.array_equal(a.arrival, c.arrival)
    assert diurnal.names[0] == "p0" and len(diurnal) == len(diurnal_trace())   # untouched


def test_scale_below_one_thins_to_a_seeded_share(diurnal):
    thin = scale(diurnal, 0.4, seed=2)
    assert len(thin) == round(0.4 * len(diurnal))
    assert set(thin.names) <= set(diurnal.names)          # pods kept as they were
    rows = [diurnal.names.index(n) for n in thin.names[:40]]
    assert [diurnal.arrival[i] for i in rows] == list(thin.arrival[:40])
    assert scale(diurnal, 1.0, seed=2).names == diurnal.names


def test_scale_multiplies_the_offered_load(diurnal):
    given = offered_load(diurnal, 64)
    assert offered_load(scale(diurnal, 1.3, seed=0), 64) == pytest.approx(1.3 * given, rel=0.08)


@pytest.mark.parametrize("factor", [0, -1, float("nan"), float("inf"), True])
def test_scale_refuses_a_factor_that_is_not_positive(diurnal, factor):
    with pytest.raises(ValueError, match="positive number"):
        scale(diurnal, factor, seed=0)


def test_scale_refuses_a_copy_name_already_taken():
    pods = [TracePod(Pod(n, (Container({GPU: 1}),)), float(i), 10.0)
            for i, n in enumerate(["a", "a-x1", "b"])]
    with pytest.raises(ValueError, match="pod name a-x1 already exists"):
        scale(Trace.from_pods("t", pods), 2, seed=0)
