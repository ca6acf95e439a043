"""Per device family figures (hamisim.sim.families): results.families, the
console's table and report.html's, on a cluster of NVIDIA, Hygon DCU, Iluvatar
and AMD nodes; each family in its own units."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.sim.families import _held_seconds

CLUSTER = """\
nodes:
  - name_prefix: t4
    replicas: 2
    gpus: 4
    card: {type: NVIDIA-Tesla T4, devmem: 15360}
  - name_prefix: dcu
    replicas: 2
    gpus: 4
    card: {type: DCU, devmem: 65536}
  - name_prefix: mr
    replicas: 1
    gpus: 8
    card: {type: MR-V100, devmem: 32768}
  - name_prefix: mi
    replicas: 1
    gpus: 4
    card: {type: AMD_Instinct_MI300X, devmem: 196608, devcore: 304, count: 4}
"""


def _trace(n: int = 160) -> str:
    shapes = [
        [{"gpu": 1, "gpumem": 4096, "gpucores": 30}],
        [{"limits": {"hygon.com/dcunum": 1, "hygon.com/dcumem": 16384, "hygon.com/dcucores": 50}}],
        [{"limits": {"iluvatar.ai/MR-V100-vgpu": 1, "iluvatar.ai/MR-V100.vMem": 32}}],
        [{"limits": {"amd.com/gpu": 1, "amd.com/gpumem": 65536, "amd.com/gpucores": 25}}],
    ]
    rows = [json.dumps({"name": f"p{i}", "arrival": 20.0 * i, "duration": 600 + 37 * (i % 5),
                        "containers": shapes[i % 4]}) for i in range(n)]
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("families")
    (d / "cluster.yaml").write_text(CLUSTER)
    (d / "trace.jsonl").write_text(_trace())
    out = {}
    for name, extra in (("compiled", ()), ("python", ("--backend", "reference"))):
        assert main(["run", str(d / "cluster.yaml"), str(d / "trace.jsonl"), "--out",
                     str(d / name), "--no-progress", *extra]) == 0
        out[name] = d / name
    return out


def _families(folder):
    return json.loads((folder / "summary.json").read_text())["results"]["families"]


def test_both_engines_give_the_same_family_figures(runs):
    assert _families(runs["compiled"]) == _families(runs["python"])


def test_each_family_is_its_own_cards_in_its_own_units(runs):
    fams = {f["family"]: f for f in _families(runs["compiled"])}
    assert list(fams) == ["NVIDIA", "DCU", "MR-V100", "AMD"]
    assert (fams["DCU"]["cards"], fams["DCU"]["memory_mib"]) == (8, 8 * 65536)
    assert (fams["AMD"]["cores"], fams["AMD"]["cores_unit"]) == (4 * 304, "compute units")
    assert fams["MR-V100"]["assumed"].startswith("scheduled as with HAMi's --enable-iluvatar")
    assert all(f["pods"] == 40 for f in fams.values())


def test_the_shares_are_the_pods_own_allocations_over_the_window(runs):
    """Recomputed from pods.parquet: memory-seconds of each family's entries over
    its memory times the headline window; cards with a tenant equal the node
    group's own series (one family per group here)."""
    summary = json.loads((runs["compiled"] / "summary.json").read_text())["results"]
    a, b = summary["window"]["start_s"], summary["window"]["end_s"]
    pods = pd.read_parquet(runs["compiled"] / "pods.parquet")
    pods = pods[pods["bind"].notna()]
    fams = {f["family"]: f for f in summary["families"]}
    mem = dict.fromkeys(fams, 0.0)
    cores = dict.fromkeys(fams, 0.0)
    word = {"NVIDIA": "NVIDIA", "DCU": "DCU", "MR-V100": "MR-V100",
            "AMD_Instinct_MI300X": "AMD"}
    for _, p in pods.iterrows():
        held = max(0.0, min(p["departure"], b) - max(p["bind"], a))
        for e in p["devices"].replace(";", ":").split(":"):
            if e:
                _, kind, m, c = e.rsplit(",", 3)
                mem[word[kind]] += int(m) * held
                cores[word[kind]] += int(c) * held
    for name, f in fams.items():
        assert f["mean_memory_allocated_pct"] == pytest.approx(
            100 * mem[name] / (f["memory_mib"] * (b - a)))
        assert f["mean_cores_allocated_pct"] == pytest.approx(
            100 * cores[name] / (f["cores"] * (b - a)))
    groups = {g["group"]: g for g in summary["groups"]}
    for name, group in (("NVIDIA", "t4"), ("DCU", "dcu"), ("MR-V100", "mr"), ("AMD", "mi")):
        assert fams[name]["mean_gpu_allocated_pct"] == pytest.approx(
            groups[group]["mean_gpu_allocated_pct"])


def test_the_console_and_the_report_show_the_families(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.jsonl").write_text(_trace(40))
    assert main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.jsonl"),
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    console = capsys.readouterr().out
    assert ("device families                    NVIDIA (8 cards), DCU (8 cards), "
            "MR-V100 (8 cards), AMD (4 cards)") in console
    table = console[console.index("  by device family"):].splitlines()
    assert table[0].split() == ["by", "device", "family", "cards", "%", "with", "a", "tenant",
                                "%", "memory", "%", "cores", "pods", "pending", "p50", "/",
                                "p99", "/", "max", "(s)"]
    assert table[4].startswith("  AMD") and " CU " in table[4]
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Device families</h2>" in html and "memory allocated, mean %" in html


def test_a_single_family_cluster_has_no_family_table(tmp_path, capsys):
    (tmp_path / "cluster.yaml").write_text(CLUSTER.split("  - name_prefix: dcu")[0])
    (tmp_path / "trace.jsonl").write_text(_trace(8))
    assert main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.jsonl"),
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert "by device family" not in capsys.readouterr().out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "families" not in summary["results"]
    assert not (tmp_path / "out" / "timeseries_families.parquet").exists()
    assert not (tmp_path / "out" / "figures" / "families.png").exists()


def test_cards_with_a_tenant_count_overlapping_holders_once():
    rows = pd.DataFrame({"card": [0, 0, 0, 1], "start": [0.0, 5.0, 20.0, 0.0],
                         "end": [10.0, 12.0, 25.0, 3.0]})
    # card 0: [0, 12] and [20, 25] = 17; card 1: 3
    assert _held_seconds(rows) == 20.0
    assert _held_seconds(rows.iloc[::-1]) == 20.0
    assert _held_seconds(rows.iloc[:0]) == 0.0
    assert np.isfinite(_held_seconds(rows))


def test_the_family_series_is_the_same_on_both_engines_and_drawn(runs):
    a = pd.read_parquet(runs["compiled"] / "timeseries_families.parquet")
    pd.testing.assert_frame_equal(a, pd.read_parquet(runs["python"]
                                                     / "timeseries_families.parquet"))
    assert list(dict.fromkeys(a["family"])) == ["NVIDIA", "DCU", "MR-V100", "AMD"]
    assert (runs["compiled"] / "figures" / "families.png").stat().st_size > 10_000
    html = (runs["compiled"] / "report.html").read_text()
    assert "per family, the share of its cards with a tenant" in html


def test_the_family_series_counts_the_cards_the_pods_hold(runs):
    """At every row's time: the family's cards held by a pod bound at or before it
    and departing after it, and their memory and cores, from pods.parquet."""
    ts = pd.read_parquet(runs["compiled"] / "timeseries_families.parquet")
    pods = pd.read_parquet(runs["compiled"] / "pods.parquet")
    pods = pods[pods["bind"].notna()]
    word = {"NVIDIA": "NVIDIA", "DCU": "DCU", "MR-V100": "MR-V100",
            "AMD_Instinct_MI300X": "AMD"}
    held = []            # (family, card, mem, cores, start, end)
    for _, p in pods.iterrows():
        for e in p["devices"].replace(";", ":").split(":"):
            if e:
                card, kind, m, c = e.rsplit(",", 3)
                held.append((word[kind], card, int(m), int(c), p["bind"], p["departure"]))
    held = pd.DataFrame(held, columns=["family", "card", "mem", "cores", "start", "end"])
    for _, row in ts.iterrows():
        live = held[(held.family == row.family) & (held.start <= row.time)
                    & (held.end > row.time)]
        assert row.cards_with_tenant == live.card.nunique(), row
        assert row.memory_allocated_mib == live.mem.sum()
        assert row.cores_allocated == live.cores.sum()
    assert ts.groupby("family").cards_with_tenant.max().min() > 0
