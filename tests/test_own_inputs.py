"""A user's own cluster file and trace, through the CLI as a user runs it (issue 12).

The cluster and trace are generated here as a user would write them (node
groups with NUMA and pair scores, a second GPU type, single nodes; a trace
mixing shares, whole and multi-card pods, mutex, numa-bind and topology-aware
pods, deletions, a class column), then replayed with ``hamisim run CLUSTER
TRACE`` in a separate process. The events and pods tables must hold exactly the
trace's pods, arrival times and lifetimes, and every decision in the event log
is re-decided, in order, by the reference scheduler (``hamisim/hami/reference.py``,
the readable specification, independent of the compiled kernel that ran).
"""
from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hamisim.hami.decision import Decision
from hamisim.hami.reference import ReferenceScheduler
from hamisim.io.clusterfile import load_cluster
from hamisim.io.traces import read_trace
from hamisim.kube.scheduler import KubeScheduler, full_message


def write_cluster(path: Path, rng: random.Random) -> None:
    scores = "\n".join(f"      \"{a}\": {{" + ", ".join(
        f"\"{b}\": {rng.choice([10, 40, 100])}" for b in range(4) if b != a) + "}"
        for a in range(4))
    path.write_text(f"""\
scheduler: {{gpu_scheduler_policy: {rng.choice(["spread", "binpack"])},
            node_scheduler_policy: {rng.choice(["binpack", "spread"])}}}
nodes:
  - name_prefix: h100
    replicas: {rng.randint(3, 6)}
    cpu_milli: 192000
    memory_mib: 2097152
    devices:
      - {{index: 0, devmem: 81920, type: NVIDIA-H100, numa: 0}}
      - {{index: 1, devmem: 81920, type: NVIDIA-H100, numa: 0}}
      - {{index: 2, devmem: 81920, type: NVIDIA-H100, numa: 1}}
      - {{index: 3, devmem: 81920, type: NVIDIA-H100, numa: 1}}
    nvidia_score:
{scores}
  - name_prefix: t4
    replicas: {rng.randint(2, 4)}
    cpu_milli: 64000
    memory_mib: 262144
    gpus: 4
    card: {{devmem: 15360, type: NVIDIA-Tesla T4}}
  - name: a10-box
    cpu_milli: 32000
    devices:
      - {{id: GPU-a10-0, index: 0, devmem: 23028, type: NVIDIA-A10}}
      - {{id: GPU-a10-1, index: 1, devmem: 23028, type: NVIDIA-A10, health: false}}
""")


def write_trace(path: Path, rng: random.Random, n: int) -> None:
    rows = ["name,arrival,duration,deletion,gpu,gpumem,gpumem_percentage,gpucores,cpu_milli,"
            "memory_mib,gpu_policy,use_gputype,numa_bind,class"]
    t = 0.0
    for i in range(n):
        t += round(rng.expovariate(1 / 8), 1)
        life = round(rng.expovariate(1 / 400), 1)
        kind = rng.random()
        deletion = f"{t + life + rng.choice([0, 50]):.1f}" if rng.random() < 0.1 else ""
        duration = "" if deletion else f"{life}"
        if kind < 0.35:
            rows.append(f"share-{i},{t},{duration},{deletion},1,,25,25,2000,8Gi,,,,")
        elif kind < 0.5:
            rows.append(f"t4-{i},{t},{duration},{deletion},1,6000,,30,1000,4096,,T4,,")
        elif kind < 0.65:
            rows.append(f"train-{i},{t},{duration},{deletion},2,,,,16000,65536,"
                        f"\"mutex,binpack,numa\",H100,yes,training")
        elif kind < 0.75:
            rows.append(f"topo-{i},{t},{duration},{deletion},2,20000,,50,8000,32768,"
                        "topology-aware,H100,,")
        elif kind < 0.85:
            rows.append(f"mutex-{i},{t},{duration},{deletion},1,10000,,20,4000,16384,mutex,,,")
        elif kind < 0.95:
            rows.append(f"whole-{i},{t},{duration},{deletion},{rng.choice([1, 4])},,,,32000,"
                        "131072,,,,")
        else:
            rows.append(f"cpu-{i},{t},{duration},{deletion},0,,,,500,1024,,,,")
    path.write_text("\n".join(rows) + "\n")


def replay_with_the_reference(cluster, trace, events: pd.DataFrame) -> int:
    """Re-decide every attempt of the event log with the reference; returns how many."""
    pods = {tp.name: tp.pod for tp in trace.pods}
    ref = ReferenceScheduler(cluster)
    # kube-scheduler's nominations and preemption around it (the CLI's seed 0)
    offsets = np.random.default_rng([0, 1])
    kube = KubeScheduler(cluster, ref, lambda n: int(offsets.integers(n)))
    node_index = {n.name: i for i, n in enumerate(cluster.nodes)}
    checked = 0
    events = events.astype(object).where(events.notna(), None)     # NaN -> None
    for row in events.itertuples(index=False):
        if row.event in ("depart", "abandon", "preempt"):
            ref.delete(row.pod)
            kube.gone(row.pod)
        elif row.event in ("bind", "unschedulable"):
            post = None
            try:
                d, post = kube.schedule(pods[row.pod])
            except ValueError as err:
                d = Decision(row.pod, message=str(err))
            if row.event == "bind":
                assert d.bound and (d.node, d.devices) == (row.node, row.devices), \
                    (row, d.node, d.devices)
                kube.bound(pods[row.pod], node_index[d.node], row.time)
            else:
                message = full_message(d.message, post.message) if post else d.message
                assert not d.bound and message == row.message, (row, message)
            checked += 1
    return checked


@pytest.mark.parametrize("seed", [1, 2])
def test_a_users_cluster_and_trace_are_simulated_as_given(tmp_path, seed):
    rng = random.Random(seed)
    write_cluster(tmp_path / "cluster.yaml", rng)
    write_trace(tmp_path / "trace.csv", rng, 250)
    out = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "hamisim.cli", "run", "cluster.yaml",
                           "trace.csv", "--format", "csv", "--out", str(out),
                           "--events", "all"],      # replayed below attempt by attempt
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "trace.csv: 250 pods arriving over" in proc.stdout and "as traced" in proc.stdout
    assert "openb" not in proc.stdout and proc.stderr == ""

    trace = read_trace(tmp_path / "trace.csv")
    expected = {tp.name: tp for tp in trace.pods}
    events = pd.read_csv(out / "events.csv", dtype={"devices": str, "message": str,
                                                     "node": str})
    pods = pd.read_csv(out / "pods.csv").set_index("pod")
    # exactly the trace's pods, at the trace's times
    arrive = events[events["event"] == "arrive"].set_index("pod")["time"]
    assert set(arrive.index) == set(expected) == set(pods.index)
    for name, tp in expected.items():
        assert arrive[name] == tp.arrival and pods.loc[name, "arrival"] == tp.arrival
        bind, dep, ab = pods.loc[name, ["bind", "departure", "abandon"]]
        if tp.deletion is not None:          # deleted at its absolute time, bound or not
            assert (dep if not math.isnan(bind) else ab) == pytest.approx(tp.deletion) \
                or (math.isnan(dep) and math.isnan(ab))
        elif not math.isnan(bind):
            assert dep == pytest.approx(bind + tp.duration)
    assert (pods.loc[[n for n in pods.index if n.startswith("train-")], "class"]
            == "training").all()
    assert pods.loc[[n for n in pods.index if n.startswith("share-")], "class"].eq(
        "1 GPU: 25% memory, 25% cores").all()
    # numa_bind 'yes' reached HAMi as true: every train pod's two cards share a NUMA node
    cluster = load_cluster(tmp_path / "cluster.yaml")
    numa = {c.id: c.numa for n in cluster.nodes for c in n.cards}
    for devices in pods.loc[[n for n in pods.index if n.startswith("train-")], "devices"]:
        if isinstance(devices, str):
            cards = [e.split(",")[0] for e in devices.rstrip(";").split(":") if e]
            assert len({numa[c] for c in cards}) == 1, devices
    # every decision, re-decided in order by the readable specification
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"]["timing"] == "as traced"
    checked = replay_with_the_reference(cluster, trace, events)
    assert checked == summary["results"]["attempts"] > summary["results"]["bound"]
    assert (events["event"] == "unschedulable").any()   # contention was exercised
