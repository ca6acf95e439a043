"""The bundled company cluster and its day trace (workloads/company, issue 36):
they load, the generator writes the bundled file again byte for byte, and a
slice of the day runs."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from hamisim.io.clusterfile import load_cluster
from hamisim.io.traces import read_trace
from hamisim.studies.runs import RunSpec, run

HERE = Path(__file__).resolve().parent.parent / "workloads" / "company"


def _generator():
    spec = importlib.util.spec_from_file_location("company_make_trace", HERE / "make_trace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cluster_is_the_planners_400_nodes():
    cluster = load_cluster(str(HERE / "cluster.yaml"))
    groups = {}
    for node in cluster.nodes:
        groups[node.group] = groups.get(node.group, 0) + 1
    assert groups == {"dgx": 48, "a100": 64, "a100-mig": 32, "l40s": 64, "t4": 192}
    assert set(cluster.quotas) == {"inference", "research", "notebooks", "platform"}
    mig = [n for n in cluster.nodes if n.group == "a100-mig"]
    assert all(c.mode == "mig" for n in mig for c in n.cards)
    assert all(n.taints for n in cluster.nodes if n.group == "t4")
    assert all(n.topology is not None for n in cluster.nodes if n.group == "dgx")


def test_the_bundled_day_is_what_the_generator_writes(tmp_path):
    out = tmp_path / "day.parquet"
    make = _generator()
    n = make.write(out, 1)
    bundled = read_trace(str(HERE / "trace-day.parquet"))
    assert len(bundled) == n
    assert out.read_bytes() == (HERE / "trace-day.parquet").read_bytes()
    # three priority classes, four namespaces, every kind of pod the docstring names
    pods = [tp.pod for tp in bundled]
    assert {p.priority for p in pods} == set(make.PRIORITY_CLASSES.values())
    assert {p.namespace for p in pods} == {"inference", "research", "notebooks", "platform"}
    classes = {p.name.rsplit("-", 1)[0] for p in pods}
    assert {"inference", "inference-mig", "batch-t4", "notebook", "train-8gpu"} <= classes


def test_the_week_has_a_daily_cycle():
    make = _generator()
    week = make.rows(7)
    assert 90_000 <= len(week) <= 110_000
    by_hour = [0] * 24
    for pod in week:
        if pod["class"] != "batch-t4":
            by_hour[int(pod["arrival"] // 3600) % 24] += 1
    assert min(by_hour[9:17]) > 3 * max(by_hour[0:5])


def test_a_slice_of_the_day_runs(tmp_path):
    table = pq.read_table(HERE / "trace-day.parquet")
    piece = table.filter(pc.less(table["arrival"], 1800.0))
    path = tmp_path / "slice.parquet"
    pq.write_table(piece, path)
    result = run(RunSpec(cluster=str(HERE / "cluster.yaml"), trace=str(path)))
    summary = result.summary["results"]
    assert summary["pods"] == piece.num_rows
    assert summary["bound"] == piece.num_rows      # the night is quiet: every pod fits
