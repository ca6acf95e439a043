"""Multi-GPU placement measures, recomputed by brute force from the event log.

Random clusters (with and without server topologies, templates, one-sided
NVLinks, NVSwitch fabrics, NICs, explicit pair scores) replay random traces;
every bound pod's placement columns in the pods table, and the summary's
totals, are recomputed here from the bind events' devices and the cluster
alone.
"""
from __future__ import annotations

import dataclasses
import math
import re
from itertools import combinations, permutations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SLOW, clusters, pods

from hamisim import Container, Pod
from hamisim.hami.gpuscore import pair_score
from hamisim.io.clusterfile import load_cluster
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.sim.placement import PLACEMENT_COLUMNS
from hamisim.workload import Trace, TracePod


def expected_row(node, devices: str) -> dict:
    """The measures of one placement, from the cluster's own description."""
    ids = list(dict.fromkeys(re.findall(r"([^,:;]+),NVIDIA,", devices)))
    if len(ids) < 2:
        return {c: None for c in PLACEMENT_COLUMNS}
    by_id = {c.id: c for c in node.cards}
    cards = [by_id[i] for i in ids]
    topo = node.topology
    row = {"gpus": len(cards), "numa_nodes": len({c.numa for c in cards})}
    row.update(pcie_switches=None, pairs_without_nvlink=None, min_pair_score=None,
               mean_pair_score=None, gpus_nic_other_numa=None, gpus_nic_other_switch=None)
    if topo is not None:
        idx = [c.index for c in cards]
        row["pcie_switches"] = len({topo.gpus[g].switch for g in idx})
        row["pairs_without_nvlink"] = sum(
            1 for a, b in combinations(idx, 2) if not topo.links(a, b) and not topo.links(b, a))
        scores = [pair_score(topo, a, b)[0] for a, b in permutations(idx, 2)]
        if topo.nics:
            far = []
            for g in idx:
                nic = topo.nearest_nic(g)
                far.append((nic.numa != topo.gpus[g].numa, nic.switch != topo.gpus[g].switch))
            row["gpus_nic_other_numa"] = sum(f[0] for f in far)
            row["gpus_nic_other_switch"] = sum(f[1] for f in far)
    elif node.pair_scores:
        scores = [node.pair_scores.get(a.id, {}).get(b.id, 0) for a, b in permutations(cards, 2)]
    else:
        scores = None
    if scores is not None:
        row["min_pair_score"] = min(scores)
        row["mean_pair_score"] = sum(scores) / len(scores)
    return row


def _same(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b)) or pd.isna(b)
    return b is not None and not pd.isna(b) and math.isclose(float(a), float(b))


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_placement_columns_and_totals_match_a_brute_force_recount(data):
    cluster = data.draw(clusters(max_nodes=4, max_cards=8, with_quotas=False))
    card_ids = [c.id for n in cluster.nodes for c in n.cards]
    trace = []
    for j in range(data.draw(st.integers(1, 20))):
        pod = data.draw(pods(f"p{j}", card_ids))
        if data.draw(st.booleans()):        # many multi-GPU pods
            pod = dataclasses.replace(pod, containers=(Container(
                {"nvidia.com/gpu": data.draw(st.sampled_from([2, 3, 4])),
                 "nvidia.com/gpumem": 500}),), init_containers=(), annotations={})
        trace.append(TracePod(pod, float(j), data.draw(st.none() | st.just(5.0))))
    engine = data.draw(st.sampled_from(["python", "auto"]))   # auto: compiled where it runs
    res = simulate(cluster, Trace.from_pods("t", trace), EngineConfig(engine=engine,
                                                                      progress=False))
    nodes = {n.name: n for n in cluster.nodes}
    binds = res.events[res.events.event == "bind"].set_index("pod")
    rows = res.pods.set_index("pod")
    multi = []
    for pod, bind in binds.iterrows():
        devices = bind["devices"]
        want = expected_row(nodes[bind["node"]], devices) if isinstance(devices, str) else \
            {c: None for c in PLACEMENT_COLUMNS}
        got = rows.loc[pod]
        for c in PLACEMENT_COLUMNS:
            assert _same(want[c], got[c]), (pod, c, want[c], got[c])
        if want["gpus"] is not None:
            multi.append(want)
    s = res.summary
    assert s["multi_gpu_pods"] == len(multi)
    if multi:
        cross = 100 * sum(m["numa_nodes"] > 1 for m in multi) / len(multi)
        assert s["cross_numa_pct"] == pytest.approx(cross)
        with_scores = [m for m in multi if m["mean_pair_score"] is not None]
        assert ("mean_pair_score" in s) == bool(with_scores)
        if with_scores:
            assert s["mean_pair_score"] == pytest.approx(
                sum(m["mean_pair_score"] for m in with_scores) / len(with_scores))
        with_switch = [m for m in multi if m["pcie_switches"] is not None]
        if with_switch:
            assert s["cross_switch_pct"] == pytest.approx(
                100 * sum(m["pcie_switches"] > 1 for m in with_switch) / len(with_switch))


def test_hand_worked_placements(tmp_path):
    # pcie-4gpu: a 4-GPU pod spans both sockets and both switches, its 6 pairs
    # have no NVLink; pair scores 50 (0-1, 2-3) and 10 (the other 4 pairs, both
    # ways): min 10, mean (2*2*50 + 8*10) / 12 = 23.33; the NIC sits beside GPUs
    # 0/1, so GPUs 2 and 3 have it on another NUMA node and switch
    path = tmp_path / "c.yaml"
    path.write_text("nodes:\n  - {name: box, topology: pcie-4gpu}\n")
    pod = Pod("p", (Container({"nvidia.com/gpu": 4}),))
    res = simulate(load_cluster(path), Trace.from_pods("t", [TracePod(pod, 0.0)]),
                   EngineConfig(progress=False))
    row = res.pods.iloc[0]
    assert [row[c] for c in PLACEMENT_COLUMNS] == [4, 2, 2, 6, 10, pytest.approx(70 / 3), 2, 2]
    assert res.summary["placement_by_gpus"]["4"]["cross_numa_pct"] == 100.0
    assert res.summary["gpus_nic_other_numa_pct"] == 50.0


def test_compare_shows_what_topology_aware_buys(tmp_path, capsys):
    # the article's question on three of its 4-GPU boxes: spread puts some
    # 2-GPU pods across the sockets (pair score 10); topology-aware, whose chart
    # default turns the device plugin's scores on, keeps every pair on a switch
    from hamisim.cli import main
    (tmp_path / "c.yaml").write_text("nodes:\n  - {name_prefix: box, replicas: 3, "
                                     "topology: pcie-4gpu}\n")
    rows = ["name,arrival,duration,gpu"] + [f"t{i},{i * 30},{300 + (i * 37) % 400},"
                                            f"{2 if i % 3 else 1}" for i in range(40)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "cmp"
    assert main(["compare", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--gpu-policy",
                 "spread", "--gpu-policy", "topology-aware", "--out", str(out), "--format",
                 "csv", "--no-progress"]) == 0
    assert "cross_numa_pct" in capsys.readouterr().out
    table = pd.read_csv(out / "compare.csv").set_index("gpu_policy")
    assert table.loc["spread", "cross_numa_pct"] > 10
    assert table.loc["spread", "mean_pair_score"] < 50
    assert table.loc["topology-aware", "cross_numa_pct"] == 0
    assert table.loc["topology-aware", "mean_pair_score"] == 50
    assert (out / "figures" / "placement.png").stat().st_size > 10_000


def test_plans_may_target_placement_metrics():
    from hamisim.studies.plan import Target
    t = Target.parse("cross_numa_pct <= 5")
    assert (t.metric, t.upper, t.met(4.0), t.met(6.0)) == ("cross_numa_pct", True, True, False)
    assert Target.parse("mean_pair_score >= 40").met(50.0)
