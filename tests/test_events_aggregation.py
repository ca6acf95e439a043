"""Failed attempts aggregated in the events table (issue 36 item 1, DESIGN §5):
one ``unschedulable`` row per pod and distinct message with ``count``, ``time``
(the first attempt) and ``last_time``, written before the pod's next row of
another kind or at the end of the run; ``--events all`` keeps a row per
attempt. Both engines write the identical table in both modes."""
from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SLOW, clusters
from test_compiled_engine import assert_same_run, configs, contended

from hamisim import Card, Cluster, Container, Node, Pod
from hamisim.cli import main
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.sim.recorder import EVENT_COLUMNS
from hamisim.workload import Trace, TracePod

WHOLE = (Container({"nvidia.com/gpu": 1}),)
#: a cluster file of one node with one T4 that takes one pod at a time
ONE_CARD = ("nodes:\n  - name: n\n    devices:\n"
            "      - {id: G0, index: 0, count: 1, devmem: 1000, devcore: 100, type: NVIDIA-T4}\n")


def _saturated() -> tuple[Cluster, Trace]:
    """One card, four pods asking it whole: each waits for the one before."""
    card = Card("G0", 0, count=1, devmem=1000, devcore=100, type="NVIDIA-T4")
    cluster = Cluster((Node("n", (card,)),))
    pods = [TracePod(Pod(f"p{i}", WHOLE), float(i), 30.0) for i in range(4)]
    pods.append(TracePod(Pod("never", (Container({"nvidia.com/gpu": 2}),)), 0.5, 1.0))
    return cluster, Trace.from_pods("saturated", pods)


def _aggregate(all_rows: pd.DataFrame) -> dict:
    """(pod, message) -> (attempts, first, last) of a per-attempt table."""
    fails = all_rows[all_rows["event"] == "unschedulable"]
    return {key: (len(g), g["time"].min(), g["time"].max())
            for key, g in fails.groupby(["pod", "message"], sort=False)}


def test_a_pods_failed_attempts_are_one_row_before_its_bind():
    cluster, trace = _saturated()
    run = simulate(cluster, trace, EngineConfig(events="aggregated"))
    ev = run.events
    assert list(ev.columns) == list(EVENT_COLUMNS)
    p3 = ev[ev["pod"] == "p3"]
    assert p3["event"].tolist() == ["arrive", "unschedulable", "bind", "depart"]
    fail = p3.iloc[1]
    assert fail["count"] > 1 and fail["time"] == 3.0 and fail["last_time"] > fail["time"]
    # the aggregated row comes just before the bind it waited for
    assert p3.index[2] == p3.index[1] + 1
    assert ev.loc[p3.index[2], "time"] >= fail["last_time"]
    # a pod pending at the end: its row comes at the end of the table
    assert ev.iloc[-1]["pod"] == "never" and ev.iloc[-1]["event"] == "unschedulable"
    # every other row stands for itself
    single = ev[ev["event"] != "unschedulable"]
    assert (single["count"] == 1).all() and (single["last_time"] == single["time"]).all()
    # the attempts, counted from the rows, are the run's attempts
    binds = (ev["event"] == "bind").sum()
    assert ev.loc[ev["event"] == "unschedulable", "count"].sum() + binds \
        == run.summary["attempts"]


def test_aggregated_rows_sum_the_per_attempt_rows():
    cluster, trace = _saturated()
    every = simulate(cluster, trace, EngineConfig(events="all")).events
    agg = simulate(cluster, trace, EngineConfig(events="aggregated")).events
    assert (every["count"] == 1).all() and (every["last_time"] == every["time"]).all()
    fails = agg[agg["event"] == "unschedulable"]
    assert {(r.pod, r.message): (r.count, r.time, r.last_time)
            for r in fails.itertuples()} == _aggregate(every)
    assert len(fails) < (every["event"] == "unschedulable").sum()
    # the rows of other kinds are the same rows in the same order
    others = ["time", "pod", "event", "node", "devices", "message"]
    pd.testing.assert_frame_equal(
        agg.loc[agg["event"] != "unschedulable", others].reset_index(drop=True),
        every.loc[every["event"] != "unschedulable", others].reset_index(drop=True))


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_both_engines_write_the_same_aggregated_table(data):
    """Priorities, preemption, grace periods, retries: value for value, both modes."""
    cluster, trace = data.draw(contended(
        data.draw(clusters(max_nodes=4, max_cards=4, with_quotas=False)), grace=True))
    config = data.draw(configs())
    agg = assert_same_run(cluster, trace, dataclasses.replace(config, events="aggregated"))
    every = assert_same_run(cluster, trace, dataclasses.replace(config, events="all"))
    fails = agg.events[agg.events["event"] == "unschedulable"]
    assert {(r.pod, r.message): (r.count, r.time, r.last_time)
            for r in fails.itertuples()} == _aggregate(every.events)
    assert agg.summary == every.summary


def test_cli_aggregates_by_default_and_all_keeps_every_attempt(tmp_path):
    (tmp_path / "c.yaml").write_text(ONE_CARD)
    (tmp_path / "t.csv").write_text("name,arrival,duration,gpu\n" + "".join(
        f"p{i},{i},30,1\n" for i in range(4)))
    tables = {}
    for mode in ("aggregated", "all"):
        out = tmp_path / mode
        args = ["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--out", str(out),
                "--format", "csv", "--no-progress"] + (["--events", mode] if mode == "all" else [])
        assert main(args) == 0
        tables[mode] = pd.read_csv(out / "events.csv")
        summary = json.loads((out / "summary.json").read_text())
        assert summary["inputs"]["events"] == mode
    agg, every = tables["aggregated"], tables["all"]
    assert len(agg) < len(every)
    assert agg["count"].sum() == len(every)


def test_explain_reads_an_aggregated_run_attempt_by_attempt(tmp_path):
    from hamisim.explain import explain_run
    (tmp_path / "c.yaml").write_text(ONE_CARD)
    (tmp_path / "t.csv").write_text("name,arrival,duration,gpu\na,0,30,1\nb,1,30,1\n")
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--out", str(out),
                 "--no-progress"]) == 0
    ev = pd.read_parquet(out / "events.parquet")
    fail = ev[(ev["pod"] == "b") & (ev["event"] == "unschedulable")]
    assert len(fail) == 1 and fail["count"].iloc[0] > 1
    exp = explain_run(out, "b")
    assert exp.message == fail["message"].iloc[0]
    assert exp.context["attempts"] == fail["count"].iloc[0] + 1       # + its bind
    assert explain_run(out, "b", attempt=-1).decision.node == "n"


def test_open_rows_grow_with_pending_pods_not_with_attempts():
    from hamisim.sim.recorder import Recorder
    rec = Recorder(["n"], ["g"], events="aggregated")
    rec.event(0.0, "p", "arrive")
    for k in range(20_000):
        rec.event(float(k), "p", "unschedulable", message="A" if k % 3 else "B")
    assert len(rec.pod) == 1                          # only the arrive row is held
    assert {m: e[2] for m, e in rec._open["p"].items()} == {"B": 6667, "A": 13333}
    rec.event(20_000.0, "p", "bind", "n", "G0,NVIDIA,1000,100:;")
    assert rec.pod == ["p"] * 4 and rec.count.tolist() == [1, 6667, 13333, 1]
    assert rec.time.tolist() == [0.0, 0.0, 1.0, 20_000.0] and not rec._open


def test_an_audit_log_of_an_aggregated_run_is_refused(tmp_path):
    from hamisim.errors import InputError
    from hamisim.io.auditlog import run_audit_lines
    (tmp_path / "c.yaml").write_text(ONE_CARD)
    (tmp_path / "t.csv").write_text("name,arrival,duration,gpu\na,0,30,1\nb,1,30,1\n")
    for mode in ("aggregated", "all"):
        out = tmp_path / mode
        assert main(["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--out",
                     str(out), "--no-progress", "--events", mode]) == 0
    with pytest.raises(InputError, match="--events all"):
        list(run_audit_lines(tmp_path / "aggregated", tmp_path / "t.csv"))
    assert list(run_audit_lines(tmp_path / "all", tmp_path / "t.csv"))
