"""Workload controllers create a pod again when HAMi's webhook refuses it
(``hamisim.kube.controllers``, DESIGN §3 "Controllers", issue 36).

The timelines below are worked out by hand from kube-controller-manager's
rules: a ReplicaSet's failed sync is retried after 5 ms doubling (client-go's
DefaultTypedControllerRateLimiter, up to 1000 s), a Job's after 1 s doubling up
to 60 s; a pod of a ReplicaSet leaving syncs it at once, a Job's after 1 s;
the quota freeing up syncs nothing.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies import NAMESPACES, SLOW, clusters
from test_compiled_engine import _quotas, assert_same_run, configs, traces

from hamisim import Card, Cluster, Container, Node, Pod
from hamisim.cluster import Quota
from hamisim.errors import InputError
from hamisim.pods import GPU, GPUMEM
from hamisim.io.traces import read_trace, write_trace
from hamisim.kube.controllers import parse_controller, resync_delay, RS, JOB
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.workload import Trace, TracePod

GIB40 = 40960
DENIED = 'admission webhook "vgpu.hami.io" denied the request: exceeding resource quota'


def _cluster(limit_mib: int = GIB40, cards: int = 2) -> Cluster:
    node = Node("n1", tuple(Card(f"G{i}", index=i, devmem=GIB40, type="NVIDIA-A100")
                            for i in range(cards)))
    return Cluster((node,), quotas={"team": Quota(memory=limit_mib)})


def _pod(name: str, mib: int = GIB40, gpus: int = 1, namespace: str = "team") -> Pod:
    return Pod(name, (Container({GPU: gpus, GPUMEM: mib}),), namespace=namespace)


def _run(cluster, rows, engine):
    trace = Trace.from_pods("t", [TracePod(_pod(name, **kw), arrival, duration, deletion, i + 2,
                                           None, owner)
                                  for i, (name, arrival, duration, deletion, owner, kw)
                                  in enumerate(rows)])
    return simulate(cluster, trace, EngineConfig(engine=engine))


def _times(run, pod, kind):
    ev = run.events
    return ev.time[(ev.pod == pod) & (ev.event == kind)].round(6).tolist()


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_refused_pod_is_created_again_by_its_controller(engine):
    # one card's worth of quota: a holds it for 100 s; b (ReplicaSet) and c
    # (Job) are refused, d (a bare pod) is refused for good
    run = _run(_cluster(), [("a", 0, 100, None, "ReplicaSet/web", {}),
                            ("b", 1, 100, None, "ReplicaSet/web", {}),
                            ("c", 2, 50, None, "Job/train", {}),
                            ("d", 3, 50, None, None, {})], engine)
    # the ReplicaSet: 1 + 0.005 * (2**n - 1) until a leaves, then at once
    rs = [round(1 + 0.005 * (2 ** n - 1), 6) for n in range(15)]
    rs = [t for t in rs if t < 100]
    assert _times(run, "b", "rejected") == rs
    assert _times(run, "b", "bind") == [100.0]
    # the Job: 2, then 1 s doubling up to 60 s; its quota is free at 200 s
    # (b left), but nothing syncs the Job before its next try at 245 s
    assert _times(run, "c", "rejected") == [2, 3, 5, 9, 17, 33, 65, 125, 185]
    assert _times(run, "c", "bind") == [245.0]
    assert _times(run, "d", "rejected") == [3.0]
    assert _times(run, "d", "abandon") == []        # a bare pod: gone at its refusal
    s = run.summary
    assert s["rejected"] == 1
    assert s["quota_refusals"] == [{
        "namespace": "team", "refused_creations": len(rs) + 9 + 1, "pods_refused": 3,
        "created_later": 2, "never_created": 1, "deleted_before_created": 0,
        "waiting_at_end": 0}]
    # the pods table spans the whole wait: c arrived at 2 and waited 243 s
    pods = run.pods.set_index("pod")
    assert pods.loc["c", "arrival"] == 2.0 and pods.loc["c", "bind"] == 245.0


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_job_pod_leaving_syncs_the_job_a_second_later(engine):
    run = _run(_cluster(), [("a", 0, 10, None, "Job/j", {}),
                            ("b", 0.5, 5, None, "Job/j", {})], engine)
    # refused at 0.5 and 1.5 (1 s), then a leaves at 10: the Job syncs at 11,
    # before its rate limiter's 3.5
    assert _times(run, "b", "rejected") == [0.5, 1.5, 3.5, 7.5]
    assert _times(run, "b", "bind") == [11.0]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_slow_start_stops_after_the_batch_with_a_refusal(engine):
    # quota for two cards; x (of the ReplicaSet) holds one until 50 s, y (a
    # bare pod) the other for good. p1..p4 of the ReplicaSet wait; p3 asks for
    # two cards. HAMi's webhook counts bound pods only, so when x leaves the
    # sync creates p1 (batch 1) and p2 (batch 2), refuses p3 (batch 2, which
    # ends the sync) and does not try p4 (batch 3)
    cluster = _cluster(limit_mib=2 * GIB40, cards=4)
    rows = [("x", 0, 50, None, "ReplicaSet/web", {}), ("y", 0, None, None, None, {})]
    rows += [(f"p{i}", 1, None, None, "ReplicaSet/web", {"gpus": 2 if i == 3 else 1})
             for i in range(1, 5)]
    run = _run(cluster, rows, engine)
    pods = run.pods.set_index("pod")
    assert pods.loc["p1", "first_attempt"] == 50.0 and pods.loc["p2", "first_attempt"] == 50.0
    assert 50.0 in _times(run, "p3", "rejected")
    assert 50.0 not in _times(run, "p4", "rejected")
    assert np.isnan(pods.loc["p4", "first_attempt"])
    # p3 heads the list from then on: every later sync stops at it, and when
    # nothing else can change the cluster the controller stops asking
    row = run.summary["quota_refusals"][0]
    assert row["waiting_at_end"] == 2 and row["created_later"] == 2
    assert row["pods_refused"] == 2         # p1 (at 1 s) and p3; p2 and p4 were behind p1


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_pod_too_big_for_its_quota_ends_the_run(engine):
    # the request exceeds the limit itself: every sync is refused; the run
    # ends once nothing else can change (the rate limiter reaches 1000 s)
    run = _run(_cluster(limit_mib=1000), [("big", 0, 10, None, "ReplicaSet/web", {})], engine)
    times = _times(run, "big", "rejected")
    # refused at arrival and at the first retry 5 ms later; then nothing else
    # can change the cluster: that refusal is the last
    assert times == [0.0, 0.005]
    assert run.summary["quota_refusals"][0]["waiting_at_end"] == 1
    # with another pod running for 3 s, the syncs go on until it left
    run = _run(_cluster(limit_mib=1000), [
        ("small", 0, 3, None, None, {"mib": 500}),
        ("big", 0, 10, None, "ReplicaSet/web", {})], engine)
    times = _times(run, "big", "rejected")
    assert times[-1] > 3 and times[-2] <= 3 and len(times) > 5


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_waiting_pod_deleted_by_its_trace_is_given_up(engine):
    run = _run(_cluster(), [("a", 0, 100, None, None, {}),
                            ("b", 1, 10, 30.0, "Job/j", {})], engine)
    assert _times(run, "b", "abandon") == [30.0]
    assert max(_times(run, "b", "rejected")) < 30
    row = run.summary["quota_refusals"][0]
    assert row["deleted_before_created"] == 1 and row["created_later"] == 0
    assert run.summary["abandoned"] == 1


def test_without_quotas_a_controller_changes_nothing():
    cluster = dataclasses.replace(_cluster(), quotas={})
    rows = [("a", 0, 10, None, "ReplicaSet/web", {}), ("b", 1, 10, None, "Job/j", {})]
    bare = [(n, a, d, x, None, kw) for n, a, d, x, _, kw in rows]
    for engine in ("python", "compiled"):
        a, b = _run(cluster, rows, engine), _run(cluster, bare, engine)
        pd.testing.assert_frame_equal(a.events, b.events)
        assert a.summary == b.summary and "quota_refusals" not in a.summary


def test_the_rate_limiters():
    assert [resync_delay(RS, f) for f in (0, 1, 2)] == [0.005, 0.01, 0.02]
    assert resync_delay(RS, 17) == 655.36 and resync_delay(RS, 18) == 1000.0
    assert resync_delay(RS, 10**6) == 1000.0
    assert [resync_delay(JOB, f) for f in (0, 1, 5, 6, 99)] == [1, 2, 32, 60, 60]


@pytest.mark.parametrize("value, message", [
    ("replicaset/web", "did you mean ReplicaSet/web"),
    ("Deployment/web", "owned by its ReplicaSet"),
    ("StatefulSet/db", "not modelled"),
    ("CronJob/nightly", "write Job/<name>"),
    ("Job/Train", "DNS subdomain"),
    ("web", "Kind/name"),
    ("ReplicaSet/", "DNS subdomain"),
])
def test_a_bad_controller_is_a_located_error(tmp_path, value, message):
    with pytest.raises(ValueError, match=message):
        parse_controller(value)
    path = tmp_path / "t.csv"
    path.write_text(f"name,arrival,gpu,controller\nok,0,1,Job/fine\np,1,1,{value}\n")
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert str(err.value).startswith(f"{path}:3: pod 'p': ") and message in str(err.value)
    cluster = tmp_path / "c.yaml"
    cluster.write_text("nodes:\n  - name: n1\n    devices:\n      - {id: G0, index: 0, "
                       "count: 10, devmem: 40960, devcore: 100, type: NVIDIA-A100}\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "hamisim.cli", "run", str(cluster), str(path),
                           "--out", str(out), "--no-progress"], capture_output=True, text=True,
                          cwd=tmp_path)     # the installed package, not the source tree
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{path}:3:" in done.stderr and not out.exists()


@pytest.mark.parametrize("ext", ["csv", "parquet", "jsonl"])
def test_the_controller_column_round_trips(tmp_path, ext):
    pods = [TracePod(_pod("a"), 0.0, 5.0, None, 2, None, "ReplicaSet/web"),
            TracePod(_pod("b"), 1.0, 5.0, None, 3, None, None),
            TracePod(_pod("c"), 2.0, 5.0, None, 4, None, "Job/t-1.x")]
    path = tmp_path / f"t.{ext}"
    write_trace(Trace.from_pods("t", pods), path)
    back = read_trace(path)
    assert [tp.controller for tp in back] == ["ReplicaSet/web", None, "Job/t-1.x"]
    assert back.controller_names == ["ReplicaSet/web", "Job/t-1.x"]


def _note_refusals(run) -> list[dict]:
    """Hypothesis events for what the run's refused pods went through; its
    ``quota_refusals`` rows."""
    rows = run.summary.get("quota_refusals", [])
    for key, what in (("created_later", "a pod created after a refusal"),
                      ("waiting_at_end", "a pod still waiting at the end"),
                      ("deleted_before_created", "a waiting pod deleted")):
        if any(r[key] for r in rows):
            event(what)
    return rows


@st.composite
def _owned(draw, cluster: Cluster):
    """A random trace whose pods belong to a few controllers (or none) in the
    quota's namespaces."""
    trace = draw(traces(cluster, max_pods=25))
    owners = [None, None, "ReplicaSet/a", "ReplicaSet/b", "Job/x", "Job/y"]
    out = []
    for tp in trace.pods:
        pod = dataclasses.replace(tp.pod, namespace=draw(st.sampled_from(NAMESPACES[:2])))
        if draw(st.integers(0, 2)):
            # a request its quota holds a few of at a time: refused under load only
            pod = dataclasses.replace(pod, containers=(Container(
                {GPU: 1, GPUMEM: draw(st.sampled_from([2000, 4000, 8000, 16000]))}),),
                init_containers=(), init_duration=None)
        # most pods leave (their quota frees up), so refused pods get created later
        duration = tp.duration if tp.duration is not None or draw(st.booleans()) else \
            draw(st.sampled_from([0.5, 7.3, 40.0]))
        out.append(tp._replace(pod=pod, duration=duration,
                               controller=draw(st.sampled_from(owners))))
    return Trace.from_pods("owned", out)


@settings(max_examples=120, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_with_controllers(data):
    cluster = data.draw(clusters(max_nodes=3, max_cards=4, with_quotas=False))
    quotas = data.draw(_quotas())
    quotas[NAMESPACES[0]] = Quota(memory=data.draw(st.sampled_from([16000, 24000, 40000])),
                                  cores=data.draw(st.sampled_from([None, 150])))
    cluster = dataclasses.replace(cluster, quotas=quotas)
    trace = data.draw(_owned(cluster))
    config = data.draw(configs())
    rows = _note_refusals(assert_same_run(cluster, trace, config))
    for r in rows:      # every refused pod is accounted for (and pods behind them)
        assert r["pods_refused"] <= r["created_later"] + r["never_created"] + \
            r["deleted_before_created"] + r["waiting_at_end"]


@st.composite
def _queued_for_quota(draw) -> tuple[Cluster, Trace]:
    """Two nodes of four 40 GiB cards, a quota that holds two to five of the
    pods at a time, pods that come and go: refusals under load, syncs that
    succeed after a departure, controllers that stop when nothing changes."""
    nodes = tuple(Node(f"n{j}", tuple(Card(f"n{j}-G{i}", index=i, devmem=GIB40,
                                           type="NVIDIA-A100") for i in range(4)))
                  for j in range(2))
    limit = draw(st.sampled_from([16000, 24000, 40000]))
    cluster = Cluster(nodes, quotas={"team": Quota(memory=limit)})
    owners = [None, "ReplicaSet/a", "ReplicaSet/a", "Job/x", "Job/y"]
    out, t = [], 0.0
    for j in range(draw(st.integers(2, 25))):
        t += draw(st.sampled_from([0.0, 0.0, 0.004, 0.3, 1.0, 7.0, 90.0]))
        duration = draw(st.sampled_from([None, 0.5, 3.0, 40.0, 400.0]))
        deletion = t + draw(st.sampled_from([2.0, 100.0])) if draw(st.integers(0, 4)) == 0 \
            else None
        pod = _pod(f"p{j}", mib=draw(st.sampled_from([4000, 8000, 16000])))
        out.append(TracePod(pod, t, duration, deletion, j + 2, None,
                            draw(st.sampled_from(owners))))
    return cluster, Trace.from_pods("queued", out)


@settings(max_examples=120, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_compiled_engine_equals_python_engine_on_pods_queued_for_quota(data):
    cluster, trace = data.draw(_queued_for_quota())
    config = dataclasses.replace(data.draw(configs()), mode="replay")
    _note_refusals(assert_same_run(cluster, trace, config))
