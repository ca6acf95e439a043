"""``hamisim validate``'s comparison: a log of hamisim's own history agrees
100 %, moved placements are reported, ties, kube-scheduler's samples,
unschedulable and kept-pending pods are named, skipped pods say why."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hamisim.io.auditlog import audit_lines, write_lines
from hamisim.io.clusterfile import load_cluster
from hamisim.io.initialstate import state_from_document
from hamisim.io.documents import from_plain
from hamisim.pods import Container, Pod
from hamisim.studies.runs import RunSpec, run
from hamisim.studies.validate import validate_files

from samples import MIG_MIXED_CLUSTER, group_cluster


def gpu_pod(name: str, gpu: int = 1, mem: int = 2000, cores: int = 10, **kw) -> Pod:
    return Pod(name, (Container({"nvidia.com/gpu": gpu, "nvidia.com/gpumem": mem,
                                 "nvidia.com/gpucores": cores}),), cpu_milli=1000,
               memory_mib=1024, **kw)


def cluster_file(tmp: Path, replicas: int, policy: str = "binpack", gpus: int = 4,
                 extra: str = "") -> Path:
    p = tmp / f"cluster-{replicas}-{policy}.yaml"
    p.write_text(group_cluster(replicas, gpus=gpus, count=10, card_type="NVIDIA-Tesla T4",
                               scheduler=f"gpu_scheduler_policy: binpack, "
                                         f"node_scheduler_policy: {policy}{extra}"))
    return p


def walk(tmp: Path, cluster: Path, pods: dict[str, Pod], rows, state=None, **kw):
    log = tmp / "audit.log"
    write_lines(audit_lines(pods, rows), log)
    return validate_files(load_cluster(str(cluster)), [log], state, **kw)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """hamisim's own 300-pod history on 12 nodes (with pods kept pending)."""
    tmp = tmp_path_factory.mktemp("history")
    cluster = cluster_file(tmp, 12)
    rnd = random.Random(1)
    lines = ["name,arrival,duration,gpu,gpumem,gpucores,cpu_milli,memory_mib"]
    for i in range(300):
        lines.append(f"p{i},{i * 2.0},{rnd.choice([60, 200, 400, 900])},"
                     f"{rnd.choice([1, 1, 1, 2, 4])},{rnd.choice([2000, 4000, 8000])},"
                     f"{rnd.choice([10, 20, 30])},1000,2048")
    trace = tmp / "trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    result = run(RunSpec(cluster=str(cluster), trace=str(trace)))
    ev = result.events
    from hamisim.io.traces import read_trace
    pods = {tp.pod.name: tp.pod for tp in read_trace(str(trace)).pods}
    rows = list(zip(ev["time"].tolist(), ev["pod"].tolist(), ev["event"].tolist(),
                    [n if isinstance(n, str) else None for n in ev["node"].tolist()],
                    [d if isinstance(d, str) else None for d in ev["devices"].tolist()]))
    return tmp, cluster, pods, rows


def test_own_history_agrees_completely(history):
    tmp, cluster, pods, rows = history
    assert sum(1 for r in rows if r[2] == "unschedulable") > 0     # pods were kept pending
    v = walk(tmp, cluster, pods, rows)
    s = v.summary
    assert s["pods_compared"] == 300
    assert s["node_agreement_pct"] == 100.0 and s["card_agreement_pct"] == 100.0
    assert s["bound_but_unschedulable"] == 0 and s["pending_but_schedulable"] == 0
    assert v.rows == [] and s["skipped"] == {}


def _moved(rows, pods, share, n_nodes):
    """``share`` of the binds moved to the node 5 further on, onto its first cards."""
    binds = [r for r in rows if r[2] == "bind"]
    chosen = set(random.Random(7).sample([r[1] for r in binds], round(share * len(binds))))
    out, moved = [], {}
    for t, name, ev, node, dev in rows:
        if ev == "bind" and name in chosen:
            j = (int(node.split("-")[1]) + 5) % n_nodes
            node = f"gpu-{j:02d}"
            segs = [[e for e in s.split(":") if e] for s in dev.split(";") if s]
            dev = "".join("".join(f"GPU-{node}-{k},NVIDIA,{e.split(',')[2]},{e.split(',')[3]}:"
                                  for k, e in enumerate(seg)) + ";" for seg in segs)
            moved[f"default/{name}"] = node
        out.append((t, name, ev, node, dev))
    return out, moved


def test_every_moved_placement_is_reported(history):
    tmp, cluster, pods, rows = history
    changed, moved = _moved(rows, pods, 0.05, 12)
    assert len(moved) == 15
    v = walk(tmp, cluster, pods, changed)
    reported = {r["pod"]: r for r in v.rows}
    assert set(moved) <= set(reported)
    for name, node in moved.items():
        row = reported[name]
        assert row["recorded_node"] == node
        assert row["reason"]
    assert v.summary["node_agreement_pct"] < 100.0
    assert len(v.bundles) == min(len(v.rows), 100)


def test_a_recorded_tie_agrees_and_says_so(tmp_path):
    cluster = cluster_file(tmp_path, 3, "spread", gpus=1)
    pods = {"a": gpu_pod("a")}
    # three empty nodes score alike; hamisim's convention picks the last (gpu-2)
    rows = [(0, "a", "arrive", None, None), (1, "a", "bind", "gpu-0", "GPU-gpu-0-0,NVIDIA,2000,10:;")]
    v = walk(tmp_path, cluster, pods, rows)
    assert v.summary["node_outcomes"]["tie"] == 1 and v.summary["ties"] == 1
    assert v.summary["node_agreement_pct"] == 100.0 and v.summary["card_agreement_pct"] == 100.0
    assert v.rows == []
    # the same tie with other cards than HAMi's is a card disagreement whose row names the tie
    cluster4 = cluster_file(tmp_path, 3, "spread", gpus=2)
    rows = [(0, "a", "arrive", None, None), (1, "a", "bind", "gpu-0", "GPU-gpu-0-0,NVIDIA,2000,10:;")]
    v = walk(tmp_path, cluster4, pods, rows)
    (row,) = v.rows
    assert row["node_outcome"] == "tie" and row["tied_nodes"] == 3 and not row["cards_agree"]
    assert row["reason"].startswith("tie: recorded node among the 3 nodes tied")
    assert "picks GPU-gpu-0-1, recorded GPU-gpu-0-0" in row["reason"]


def test_recorded_node_that_scores_lower_or_does_not_fit(tmp_path):
    cluster = cluster_file(tmp_path, 3, "binpack", gpus=1)
    pods = {"a": gpu_pod("a", mem=10000), "b": gpu_pod("b", mem=2000),
            "c": gpu_pod("c", mem=8000)}
    rows = [(0, "a", "arrive", None, None), (0, "a", "bind", "gpu-1", "GPU-gpu-1-0,NVIDIA,10000,10:;"),
            # binpack prefers the used gpu-1; the log puts b on an empty node
            (1, "b", "arrive", None, None), (1, "b", "bind", "gpu-2", "GPU-gpu-2-0,NVIDIA,2000,10:;"),
            # c (8000 MiB) no longer fits on gpu-1's card; binpack would take the used gpu-2
            (2, "c", "arrive", None, None), (2, "c", "bind", "gpu-1", "GPU-gpu-1-0,NVIDIA,8000,10:;")]
    v = walk(tmp_path, cluster, pods, rows)
    rows_by = {r["pod"]: r for r in v.rows}
    b, c = rows_by["default/b"], rows_by["default/c"]
    assert b["node_outcome"] == "disagree" and b["hamisim_node"] == "gpu-1"
    assert b["hamisim_node_score"] > b["recorded_node_score"] == 0.0
    assert "recorded node fits but HAMi's binpack prefers gpu-1" in b["reason"]
    assert c["node_outcome"] == "disagree" and c["hamisim_node"] == "gpu-2"
    assert "recorded node gpu-1 does not fit: 1/1 CardInsufficientMemory" in c["reason"]
    # a on the empty cluster: gpu-1 is one of three tied nodes
    assert v.summary["node_outcomes"] == {"agree": 0, "tie": 1, "sample": 0, "disagree": 2,
                                          "unschedulable": 0}


def test_bound_in_the_log_but_unschedulable(tmp_path):
    cluster = cluster_file(tmp_path, 2, gpus=1)
    pods = {"big": gpu_pod("big", mem=20000)}
    rows = [(0, "big", "arrive", None, None),
            (0, "big", "bind", "gpu-0", "GPU-gpu-0-0,NVIDIA,20000,10:;")]
    v = walk(tmp_path, cluster, pods, rows)
    assert v.summary["bound_but_unschedulable"] == 1
    (row,) = v.rows
    assert row["node_outcome"] == "unschedulable" and row["hamisim_node"] == ""
    assert row["reason"].startswith("hamisim finds no node: 0/2 nodes are available: "
                                    "2 1/1 CardInsufficientMemory.")


@pytest.mark.parametrize("wait, late", [(5.0, 0), (60.0, 1)])
def test_pods_kept_pending_while_hamisim_would_bind(tmp_path, wait, late):
    cluster = cluster_file(tmp_path, 2, gpus=1)
    pods = {"a": gpu_pod("a", mem=16000), "b": gpu_pod("b", mem=16000),
            "c": gpu_pod("c", mem=16000)}
    rows = [(0, "a", "arrive", None, None), (0, "a", "bind", "gpu-0", "GPU-gpu-0-0,NVIDIA,16000,10:;"),
            (0, "c", "arrive", None, None), (0, "c", "bind", "gpu-1", "GPU-gpu-1-0,NVIDIA,16000,10:;"),
            (1, "b", "arrive", None, None),            # no room: legitimately pending
            (100, "a", "depart", "gpu-0", None),
            (100 + wait, "b", "bind", "gpu-0", "GPU-gpu-0-0,NVIDIA,16000,10:;")]
    v = walk(tmp_path, cluster, pods, rows)
    assert v.summary["pending_but_schedulable"] == late
    if late:
        (p,) = v.summary["pending_but_schedulable_pods"]
        assert p["pod"] == "default/b" and p["waited_s"] == pytest.approx(wait)


def test_kube_scheduler_sample_rule(tmp_path):
    # 200 nodes: kube-scheduler examines 100 feasible nodes from a rotating start
    cluster = cluster_file(tmp_path, 200, "binpack", gpus=1)
    pods = {f"u{i}": gpu_pod(f"u{i}") for i in range(4)} | {"x": gpu_pod("x"),
                                                            "y": gpu_pod("y")}
    rows = [(0, "u0", "arrive", None, None),
            (0, "u0", "bind", "gpu-150", "GPU-gpu-150-0,NVIDIA,2000,10:;"),
            # the only used node is gpu-150: a sample of 100 nodes around gpu-010 misses it
            (1, "x", "arrive", None, None), (1, "x", "bind", "gpu-010", "GPU-gpu-010-0,NVIDIA,2000,10:;")]
    v = walk(tmp_path, cluster, pods, rows)
    assert v.summary["node_outcomes"]["sample"] == 1 and v.rows == []
    assert v.summary["node_agreement_pct"] == 100.0
    assert v.summary["node_agreement_all_nodes_pct"] == 50.0
    # used nodes every 50 nodes: every sample of 100 around gpu-010 holds a better one
    rows = [r for i in range(4) for r in ((0, f"u{i}", "arrive", None, None),
            (0, f"u{i}", "bind", f"gpu-{50 * i + 25:03d}", f"GPU-gpu-{50 * i + 25:03d}-0,NVIDIA,2000,10:;"))]
    rows += [(1, "y", "arrive", None, None), (1, "y", "bind", "gpu-010", "GPU-gpu-010-0,NVIDIA,2000,10:;")]
    v = walk(tmp_path, cluster, pods, rows)
    # u1 (gpu-075) and u2 (gpu-125) still have a sample of 100 without a used node;
    # u3 (gpu-175) has 99 nodes between gpu-125 and gpu-025, y (gpu-010) 49
    assert {r["pod"]: r["node_outcome"] for r in v.rows} == {"default/u3": "disagree",
                                                             "default/y": "disagree"}
    assert v.summary["node_outcomes"]["sample"] == 2


def test_skipped_pods_say_why_and_initial_state(tmp_path):
    cluster = cluster_file(tmp_path, 2, gpus=1)
    c = load_cluster(str(cluster))
    state = state_from_document(from_plain({"pods": [
        {"name": "default/old", "node": "gpu-0", "devices": "GPU-gpu-0-0,NVIDIA,16000,10:;"}]},
        None, 1).as_doc("state"), c)
    cpu_only = Pod("web", (Container(),), cpu_milli=500, memory_mib=100)
    pods = {"web": cpu_only, "a": gpu_pod("a", mem=16000), "b": gpu_pod("b", mem=16000)}
    rows = [(0, "web", "arrive", None, None), (0, "web", "bind", "gpu-0", None),
            # the state's pod fills gpu-0: a goes to gpu-1
            (1, "a", "arrive", None, None), (1, "a", "bind", "gpu-1", "GPU-gpu-1-0,NVIDIA,16000,10:;"),
            (2, "old", "depart", "gpu-0", None),
            (3, "b", "arrive", None, None), (3, "b", "bind", "gpu-0", "GPU-gpu-0-0,NVIDIA,16000,10:;")]
    pods["old"] = gpu_pod("old")          # written by the writer, but its create is dropped below
    log = tmp_path / "audit.log"
    lines = [ln for ln in audit_lines(pods, rows) if '"name":"old"' not in ln
             or '"verb":"create"' not in ln]
    write_lines(lines, log)
    v = validate_files(c, [log], state)
    assert v.summary["pods_compared"] == 2 and v.summary["node_agreement_pct"] == 100.0
    assert v.summary["skipped"] == {"no GPU request (kube-scheduler's own choice)": 1}
    # without the state, a's and b's nodes are ties and the state pod is unknown
    v = validate_files(c, [log])
    assert v.summary["pods_compared"] == 2
    stray = tmp_path / "stray.log"
    write_lines(audit_lines({"z": gpu_pod("z")}, [(0, "z", "bind", "gpu-0", None),
                                                  (0, "z", "arrive", None, None),
                                                  (1, "z", "bind", "gpu-9", None)]), stray)
    v = validate_files(c, [stray])
    assert v.summary["skipped"] == {"created before the log starts (give --state)": 1,
                                    "bound to a node not in the cluster": 1}


@pytest.mark.parametrize("used, outcome", [((150,), "sample"), ((150, 50), "disagree")])
def test_sample_rule_past_many_better_nodes_that_do_not_fit(tmp_path, used, outcome):
    # full cards score better than x's node but do not fit: 10 on each side of gpu-100
    cluster = cluster_file(tmp_path, 200, "binpack", gpus=1)
    full = [n for n in range(90, 111) if n != 100]
    pods = {f"f{n}": gpu_pod(f"f{n}", mem=16000) for n in full}
    pods |= {f"u{n}": gpu_pod(f"u{n}") for n in used} | {"x": gpu_pod("x")}
    rows = []
    for name, n in [(f"f{n}", n) for n in full] + [(f"u{n}", n) for n in used]:
        mem = pods[name].containers[0].limits["nvidia.com/gpumem"]
        rows += [(0, name, "arrive", None, None),
                 (0, name, "bind", f"gpu-{n:03d}", f"GPU-gpu-{n:03d}-0,NVIDIA,{mem},10:;")]
    rows += [(1, "x", "arrive", None, None),
             (1, "x", "bind", "gpu-100", "GPU-gpu-100-0,NVIDIA,2000,10:;")]
    v = walk(tmp_path, cluster, pods, rows)
    x = [r for r in v.rows if r["pod"] == "default/x"]
    if outcome == "sample":
        assert x == [] and v.summary["node_outcomes"]["sample"] >= 1
    else:
        # the nodes between gpu-050 and gpu-150 (99) are one short of a sample
        assert x[0]["node_outcome"] == "disagree"


@pytest.fixture(scope="module")
def mig_history(tmp_path_factory):
    """hamisim's own 150-pod history on 3 MIG and 3 hami-core nodes: the binds
    carry the run's hami.io/vgpu-mig-allocations (pods table)."""
    tmp = tmp_path_factory.mktemp("mig")
    cluster = tmp / "cluster.yaml"
    cluster.write_text(MIG_MIXED_CLUSTER)
    rnd = random.Random(3)
    lines = ["name,arrival,duration,gpu,gpumem,gpucores,cpu_milli,memory_mib"]
    for i in range(150):
        lines.append(f"m{i},{i * 2.0},{rnd.choice([60, 200, 400, 900])},1,"
                     f"{rnd.choice([3000, 4000, 8000, 9000, 18000])},{rnd.choice([10, 20])},"
                     "1000,2048")
    trace = tmp / "trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    result = run(RunSpec(cluster=str(cluster), trace=str(trace)))
    ev, table = result.events, result.pods
    mig = {p: m for p, m in zip(table["pod"].tolist(), table["mig_allocations"].tolist())
           if isinstance(m, str)}
    from hamisim.io.traces import read_trace
    pods = {tp.pod.name: tp.pod for tp in read_trace(str(trace)).pods}
    rows = [(t, p, e, n if isinstance(n, str) else None, d if isinstance(d, str) else None,
             mig.get(p) if e == "bind" else None)
            for t, p, e, n, d in zip(ev["time"].tolist(), ev["pod"].tolist(),
                                     ev["event"].tolist(), ev["node"].tolist(),
                                     ev["devices"].tolist())]
    return tmp, cluster, pods, rows, mig


def test_mig_cluster_own_history_agrees_completely(mig_history):
    tmp, cluster, pods, rows, mig = mig_history
    assert 0 < len(mig) < 150                  # MIG and non-MIG pods
    v = walk(tmp, cluster, pods, rows)
    s = v.summary
    assert s["pods_compared"] == 150 and s["mig_compared"] == len(mig)
    assert s["node_agreement_pct"] == 100.0 and s["card_agreement_pct"] == 100.0
    assert s["mig_agreement_pct"] == 100.0
    assert v.rows == [] and s["skipped"] == {}
    # without the instances the MIG pods' cards cannot be adopted: said, not guessed
    bare = [r[:5] for r in rows]
    v = walk(tmp, cluster, pods, bare)
    assert v.summary["skipped"] == {
        "recorded MIG instances do not match the recorded cards": len(mig)}


def test_a_moved_mig_placement_is_reported(mig_history):
    tmp, cluster, pods, rows, mig = mig_history
    binds = [r for r in rows if r[2] == "bind" and r[5] is not None]
    # a MIG pod of the busy middle of the run (not a tie of empty nodes): onto the
    # same card of another MIG node
    first = binds[len(binds) // 2]
    t, name, _, node, dev, text = first
    other = "a100-1" if node != "a100-1" else "a100-2"
    moved = (t, name, "bind", other, dev.replace(f"GPU-{node}-", f"GPU-{other}-"),
             text.replace(f"GPU-{node}-", f"GPU-{other}-"))
    # a later one (not 7g.40gb, whose only placement is 0): same card, another placement
    t2, name2, _, node2, dev2, text2 = next(r for r in binds[len(binds) // 2 + 1:]
                                            if "7g.40gb" not in r[5])
    entry = json.loads(text2)
    start = entry[0]["placement"]["start"]
    entry[0]["placement"]["start"] = 4 if start == 0 else 0
    shifted = (t2, name2, "bind", node2, dev2, json.dumps(entry, separators=(",", ":")))
    changed = [moved if r[:3] == first[:3] else shifted if r[:3] == (t2, name2, "bind")
               else r for r in rows]
    v = walk(tmp, cluster, pods, changed)
    by = {r["pod"]: r for r in v.rows}
    row = by[f"default/{name}"]
    assert row["recorded_node"] == other and row["node_outcome"] == "disagree"
    assert row["hamisim_node"] == node and row["mig_agree"] is False and row["reason"]
    row = by[f"default/{name2}"]
    assert row["node_outcome"] in ("agree", "tie") and row["cards_agree"] is True
    assert row["mig_agree"] is False
    assert f"@{start}+" in row["reason"] and "MIG instances: HAMi's" in row["reason"]
    assert v.summary["mig_agreement_pct"] < 100.0
    # report.html says it too: the MIG figure and the rows' MIG column
    from hamisim.studies.report import validation_html
    html = validation_html(v.summary, v.rows)
    assert "MIG instance agreement" in html and "<th>mig_agree</th>" in html
    # the explain bundle's state keeps the running MIG pods' instances: it loads
    _, entries = v.bundles[-1]
    assert any("mig_allocations" in e for e in entries)
    state_from_document(from_plain({"pods": entries}, None, 1).as_doc("state"),
                        load_cluster(str(cluster)))


def test_own_history_with_kube_schedulers_sampling_agrees(tmp_path):
    # 120 nodes: kube-scheduler hands HAMi 100 feasible nodes from a rotating start,
    # so the run's choices are often not the best of all nodes, but each is the
    # best of a sample kube-scheduler could have drawn
    cluster = cluster_file(tmp_path, 120, "binpack", gpus=2)
    rnd = random.Random(5)
    lines = ["name,arrival,duration,gpu,gpumem,gpucores,cpu_milli,memory_mib"]
    for i in range(400):
        lines.append(f"q{i},{i * 1.0},{rnd.choice([100, 300, 900])},{rnd.choice([1, 1, 2])},"
                     f"{rnd.choice([4000, 8000, 16000])},{rnd.choice([10, 30])},1000,2048")
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    ev = run(RunSpec(cluster=str(cluster), trace=str(trace))).events
    from hamisim.io.traces import read_trace
    pods = {tp.pod.name: tp.pod for tp in read_trace(str(trace)).pods}
    rows = list(zip(ev["time"].tolist(), ev["pod"].tolist(), ev["event"].tolist(),
                    [n if isinstance(n, str) else None for n in ev["node"].tolist()],
                    [d if isinstance(d, str) else None for d in ev["devices"].tolist()]))
    v = walk(tmp_path, cluster, pods, rows)
    s = v.summary
    assert s["pods_compared"] == 400 and v.rows == []
    assert s["node_agreement_pct"] == 100.0 and s["card_agreement_pct"] == 100.0
    assert s["node_outcomes"]["sample"] > 0
    assert s["node_agreement_all_nodes_pct"] < 100.0


def test_init_containers_finishing_free_their_cards_for_a_later_pod(tmp_path):
    # a's init container holds 12000 MiB of its card until it finishes at 10 s; then
    # HAMi counts a's app container only (3000 MiB) and binpack puts b (10000 MiB)
    # beside it: the log says so with the kubelet's status patch (init containers
    # terminated), which the walk applies before b's binding
    from hamisim.io.traces import write_trace
    from hamisim.workload import Trace, TracePod
    cluster = cluster_file(tmp_path, 2, gpus=1)
    a = Pod("a", (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000}),),
            init_containers=(Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 12000}),),
            init_duration=10.0)
    b = gpu_pod("b", mem=10000)
    trace = tmp_path / "trace.jsonl"
    write_trace(Trace.from_pods("init", [TracePod(a, 0.0, 1000.0), TracePod(b, 20.0, 100.0)]),
                trace)
    ev = run(RunSpec(cluster=str(cluster), trace=str(trace))).events
    rows = list(zip(ev["time"].tolist(), ev["pod"].tolist(), ev["event"].tolist(),
                    [n if isinstance(n, str) else None for n in ev["node"].tolist()],
                    [d if isinstance(d, str) else None for d in ev["devices"].tolist()]))
    node = {r[1]: r[3] for r in rows if r[2] == "bind"}
    assert node["a"] == node["b"]               # the run shrank a before b came
    pods = {"a": a, "b": b}
    v = walk(tmp_path, cluster, pods, rows)
    s = v.summary
    assert s["pods_compared"] == 2 and v.rows == []
    assert s["node_agreement_pct"] == 100.0 and s["card_agreement_pct"] == 100.0
    # without the status patch a still holds 12000 MiB there: b's node does not fit
    log = tmp_path / "no-init.log"
    write_lines(audit_lines(pods, rows, init_done=False), log)
    v = validate_files(load_cluster(str(cluster)), [log])
    (row,) = v.rows
    assert row["pod"] == "default/b" and "does not fit" in row["reason"]



def _cpu_pod(name: str, cpu: int, priority: int = 0, mem: int = 2000) -> Pod:
    return Pod(name, (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": mem,
                                 "nvidia.com/gpucores": 10}),), cpu_milli=cpu,
               memory_mib=100, priority=priority)


def _card(node: str, mem: int = 2000) -> str:
    return f"GPU-{node}-0,NVIDIA,{mem},10:;"


def _two_nodes(tmp: Path, policy: str) -> Path:
    p = tmp / f"cluster-{policy}.yaml"
    p.write_text(group_cluster(2, gpus=1, count=10, cpu_milli=4000,
                               scheduler=f"gpu_scheduler_policy: binpack, "
                                         f"node_scheduler_policy: {policy}"))
    return p


@pytest.mark.parametrize("nominated, recorded, outcome", [
    ("gpu-0", "gpu-0", "agree"),        # tried alone first: it fits, HAMi takes it there
    (None, "gpu-0", "disagree"),        # no nomination: spread prefers the empty gpu-1
    ("gpu-0", "gpu-1", "disagree")])    # nominated node fits: the recorded one is not it
def test_a_nominated_pod_is_decided_on_its_nominated_node_first(tmp_path, nominated, recorded,
                                                                outcome):
    cluster = _two_nodes(tmp_path, "spread")
    pods = {"c": _cpu_pod("c", 500), "hi": _cpu_pod("hi", 1000, priority=10)}
    rows = [(0, "c", "arrive", None, None), (0, "c", "bind", "gpu-0", _card("gpu-0")),
            (1, "hi", "arrive", None, None)]
    if nominated:
        rows.append((1, "hi", "nominate", nominated, None))
    rows.append((3, "hi", "bind", recorded, _card(recorded)))
    v = walk(tmp_path, cluster, pods, rows)
    s = v.summary
    assert s["pods_compared"] == 2 and s["node_outcomes"][outcome] == 1
    assert s["decided_on_nominated_node"] == (1 if nominated else 0)
    if outcome == "disagree":
        (row,) = v.rows
        assert row["nominated_node"] == (nominated or "")
        assert ("nominated node gpu-0 alone first" in row["reason"]) == bool(nominated)
        # report.html shows the nomination column only when some row has one
        from hamisim.studies.report import validation_html
        assert ("<th>nominated_node</th>" in validation_html(s, v.rows)) == bool(nominated)


@pytest.mark.parametrize("clear, outcome", [(False, "agree"), (True, "disagree")])
def test_a_nominated_pods_cpu_counts_for_a_lower_priority_pod(tmp_path, clear, outcome):
    # hi (3000m) is nominated to gpu-0; lo (2000m, lower priority) then sees only
    # 1000m free there and goes to gpu-1, though binpack prefers gpu-0 (c's card)
    cluster = _two_nodes(tmp_path, "binpack")
    pods = {"c": _cpu_pod("c", 0), "hi": _cpu_pod("hi", 3000, priority=10),
            "lo": _cpu_pod("lo", 2000)}
    rows = [(0, "c", "arrive", None, None), (0, "c", "bind", "gpu-0", _card("gpu-0")),
            (1, "hi", "arrive", None, None), (1, "hi", "nominate", "gpu-0", None)]
    if clear:
        rows.append((1.5, "hi", "nominate", None, None))
    rows += [(2, "lo", "arrive", None, None), (2, "lo", "bind", "gpu-1", _card("gpu-1")),
             (3, "hi", "bind", "gpu-0", _card("gpu-0"))]
    v = walk(tmp_path, cluster, pods, rows)
    s = v.summary
    assert s["pods_compared"] == 3
    lo = [r for r in v.rows if r["pod"] == "default/lo"]
    assert (lo[0]["node_outcome"] if lo else "agree") == outcome
    if clear:
        assert "prefers gpu-0" in lo[0]["reason"]
    # hi binds on gpu-0 as its nomination (or binpack) says
    assert not [r for r in v.rows if r["pod"] == "default/hi"]
