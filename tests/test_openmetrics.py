"""--metrics-out: a run as OpenMetrics text with HAMi's and kube-scheduler's names.

The per-card families are summed from the pods' allocations, independently of
the meter that writes the time series, so their sums must equal the time
series' cluster totals at every sample (the trace has no init containers, whose
entries HAMi's metrics count and its scheduler does not). The Prometheus test
backfills the file with promtool, starts Prometheus on those blocks and reads
the values back over its HTTP API (Debian's ``prometheus``, installed by
``.ci/run``; it skips and says why where the programs are missing).
"""
from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import textwrap
import time
import urllib.parse
import urllib.request
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hamisim.cli import main
from hamisim.studies.openmetrics import parse_start, refresh_every

CLUSTER = """
nodes:
  - name_prefix: t4
    replicas: 3
    gpus: 4
    card: {devmem: 15360, type: NVIDIA-Tesla T4}
  - name_prefix: l40s
    replicas: 1
    topology: pcie-8gpu
"""
# busy enough that pods wait (backoff and unschedulable queues), two namespaces,
# multi-card pods on the topology node
TRACE = "name,arrival,duration,gpu,gpumem,gpucores,namespace\n" + "".join(
    f"p{i},{i * 13},{400 + 90 * (i % 7)},{1 + (i % 4 == 0) * 3},{3000 + 1500 * (i % 5)},"
    f"{30 * (i % 3)},{'team-a' if i % 3 == 0 else 'default'}\n" for i in range(120))
START = "2026-11-30T00:00:00Z"
T0 = 1795996800
LINE = re.compile(r'^([a-z_:]+)(\{[^}]*\})? (\S+) (\d+)$')


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("openmetrics")
    (base / "c.yaml").write_text(textwrap.dedent(CLUSTER))
    (base / "t.csv").write_text(TRACE)
    args = ["run", str(base / "c.yaml"), str(base / "t.csv"), "--out", str(base / "run"),
            "--no-progress", "--metrics-out", str(base / "m.om"), "--metrics-start", START,
            "--metrics-interval", "30"]
    assert main(args) == 0
    return base, args


def parse(path: Path):
    """{family: (type, help)}, {(sample name, labels): [(unix time, value)]}."""
    families, samples = {}, defaultdict(list)
    lines = path.read_text().splitlines()
    assert lines[-1] == "# EOF" and lines.count("# EOF") == 1
    help_of = {}
    for line in lines[:-1]:
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            families[name] = kind
        elif line.startswith("# HELP "):
            _, _, name, text = line.split(" ", 3)
            help_of[name] = text
        else:
            m = LINE.match(line)
            assert m, line
            labels = tuple(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            samples[(m.group(1), labels)].append((int(m.group(4)), float(m.group(3))))
    return {k: (v, help_of[k]) for k, v in families.items()}, samples


def at(ts: pd.DataFrame, column: str, t: np.ndarray) -> np.ndarray:
    rows = np.searchsorted(ts["time"].to_numpy(), t, side="right") - 1
    return np.where(rows >= 0, ts[column].to_numpy()[np.maximum(rows, 0)], 0)


def test_families_names_and_labels_are_hamis(run):
    base, _ = run
    families, samples = parse(base / "m.om")
    card = ("device_index", "device_type", "device_uuid", "node", "zone")
    expected = {
        "hami_gpu_memory_limit_bytes": card, "hami_gpu_core_limit_ratio": card,
        "hami_gpu_memory_allocated_bytes": tuple(sorted(card + ("device_cores",))),
        "hami_gpu_shared_count": card, "hami_gpu_core_allocated_ratio": card,
        "hami_node_gpu_overview": tuple(sorted(card + ("device_cores",
                                                       "device_memory_limit"))),
        "hami_node_gpu_memory_allocated_ratio": card,
        "hami_vgpu_memory_allocated_bytes": ("container_index", "device_uuid", "namespace",
                                             "node", "pod", "zone"),
        "hami_vgpu_core_allocated_ratio": ("container_index", "device_uuid", "namespace",
                                           "node", "pod", "zone"),
        "scheduler_pending_pods": ("queue",),
        "scheduler_schedule_attempts_total": ("profile", "result"),
    }
    seen = defaultdict(set)
    for name, labels in samples:
        seen[name].add(tuple(k for k, _ in labels))
    for name, label_names in expected.items():
        assert seen[name] == {label_names}, name
    assert families["scheduler_schedule_attempts"][0] == "counter"
    assert families["hami_gpu_shared_count"] == ("gauge", "Number of containers sharing this GPU")
    assert all(dict(labels).get("zone") == "vGPU" for name, labels in samples
               if name.startswith("hami_"))
    # one series per card, 20 cards
    assert len([k for k in samples if k[0] == "hami_gpu_memory_limit_bytes"]) == 20
    t4 = dict(next(k[1] for k in samples if k[0] == "hami_node_gpu_overview"
                   and dict(k[1])["node"] == "t4-0"))
    assert t4["device_memory_limit"] == "15360" and t4["device_cores"] == "100"
    assert {dict(k[1])["namespace"] for k in samples
            if k[0] == "hami_vgpu_memory_allocated_bytes"} == {"default", "team-a"}


def instant(points, t: np.ndarray, lookback: float = 300.0) -> np.ndarray:
    """What a Prometheus instant query returns at each of the times ``t`` for a
    series with ``points``: its last sample at or before, if younger than the
    lookback; NaN where the query finds nothing."""
    stamps, values = np.array(points, dtype=float).T
    i = np.searchsorted(stamps, t, side="right") - 1
    found = (i >= 0) & (t - stamps[np.maximum(i, 0)] < lookback)
    return np.where(found, values[np.maximum(i, 0)], np.nan)


def test_values_equal_the_time_series_at_every_sample(run):
    # what Prometheus answers at every grid instant, from the thinned file
    base, _ = run
    _, samples = parse(base / "m.om")
    ts = pd.read_parquet(base / "run" / "timeseries.parquet")
    pods = pd.read_parquet(base / "run" / "pods.parquet").set_index("pod")
    grid = np.arange(int(ts["time"].iloc[-1] // 30) + 1) * 30.0
    stamps = T0 + grid

    def total(name, every_sample=True):
        out = np.zeros(len(grid))
        for (n, labels), points in samples.items():
            if n == name:
                t = np.array([p[0] for p in points])
                assert np.all(np.diff(t) > 0)
                got = instant(points, stamps)
                # a query just before the next instant (up to 299.999 s after a
                # refresh) still finds this instant's value
                between = instant(points, stamps[:-1] + 29.999)
                if every_sample:
                    assert not np.isnan(got).any(), name    # never stale while the run lasts
                    assert np.array_equal(between, got[:-1]), name
                else:       # a container's series counts while its pod holds the card
                    pod = pods.loc[dict(labels)["pod"]]
                    held = (grid >= pod["bind"]) & ~(grid >= pod["departure"])
                    assert not np.isnan(got[held]).any(), name
                    assert np.array_equal(between[held[:-1]], got[:-1][held[:-1]]), name
                    got = np.where(held, got, 0)
                out += got
        return out

    assert np.array_equal(total("hami_gpu_memory_allocated_bytes"),
                          at(ts, "hami_gpu_memory_allocated_bytes", grid))
    assert np.array_equal(total("hami_gpu_core_allocated_ratio"),
                          at(ts, "hami_gpu_core_allocated", grid))
    assert np.array_equal(total("hami_gpu_shared_count"),
                          at(ts, "hami_vgpu_slots_allocated", grid))
    assert np.array_equal(total("hami_gpu_memory_limit_bytes"),
                          np.full(len(grid), ts["hami_gpu_memory_total_bytes"].iloc[0]))
    assert np.array_equal(total("hamisim_gpu_zero_tenant_cards"),
                          at(ts, "hami_gpu_zero_tenant", grid))
    # the trace keeps pods waiting in more than one queue; the queues add up
    assert np.array_equal(total("scheduler_pending_pods"), at(ts, "pods_pending", grid))
    for queue in ("backoff", "unschedulable"):
        assert samples[("scheduler_pending_pods", (("queue", queue),))][-1] is not None
        assert max(v for _, v in samples[("scheduler_pending_pods", (("queue", queue),))]) > 0
    summary = json.loads((base / "run" / "summary.json").read_text())["results"]
    attempts = total("scheduler_schedule_attempts_total")
    assert np.all(np.diff(attempts) >= 0) and attempts[-1] == summary["attempts"]
    scheduled = samples[("scheduler_schedule_attempts_total",
                         (("profile", "hami-scheduler"), ("result", "scheduled")))]
    assert scheduled[-1][1] == summary["bound"]
    # the vGPU families: the sum over containers is the card's allocation
    assert np.array_equal(total("hami_vgpu_memory_allocated_bytes", every_sample=False),
                          total("hami_gpu_memory_allocated_bytes"))
    # the ratio is a fraction of the card's memory (HAMi: Usedmem / Totalmem)
    ratios = [v for (n, _), pts in samples.items()
              if n == "hami_node_gpu_memory_allocated_ratio" for _, v in pts]
    assert 0 < max(ratios) <= 1


def test_unchanged_values_repeat_only_under_the_lookback(run):
    # HAMi's per-card and per-container series: every change, an unchanged value
    # again after exactly 300 s (the most 30 s steps within Prometheus's 5-minute
    # lookback), and the run's last instant; counters and the cluster-wide gauges
    # keep every sample (rate() needs two in its window)
    base, _ = run
    _, samples = parse(base / "m.om")
    ts = pd.read_parquet(base / "run" / "timeseries.parquet")
    last = T0 + int(ts["time"].iloc[-1] // 30) * 30
    every = refresh_every(30)
    assert every * 30 <= 300 < (every + 1) * 30 and refresh_every(600) == 1
    assert refresh_every(60) == 5 and refresh_every(70) == 4 and refresh_every(300) == 1
    thinned = full = repeats = 0
    for (name, _), points in samples.items():
        t, v = np.array(points, dtype=float).T
        if name.startswith("hami_"):
            gaps, same = np.diff(t), v[1:] == v[:-1]
            assert np.all(gaps <= every * 30), name
            assert np.all((gaps[same] == every * 30) | (t[1:][same] == last)), name
            repeats += same.sum()
            thinned += len(t)
            full += (t[-1] - t[0]) // 30 + 1
        else:
            assert len(t) == (last - T0) // 30 + 1, name
    # most samples are the repeats; the file holds a fraction of the full grid
    assert repeats > thinned / 2 and thinned < full / 3


def test_a_container_series_lives_while_its_pod_holds_the_card(run):
    base, _ = run
    _, samples = parse(base / "m.om")
    pods = pd.read_parquet(base / "run" / "pods.parquet").set_index("pod")
    pod = pods.loc["p4"]                       # 4 cards, namespace default
    series = {dict(k[1])["device_uuid"]: v for k, v in samples.items()
              if k[0] == "hami_vgpu_memory_allocated_bytes" and dict(k[1])["pod"] == "p4"}
    uuids = [entry.split(",")[0] for entry in pod["devices"].split(":")[:-1]]
    assert sorted(series) == sorted(uuids) and len(uuids) == 4
    held = [T0 + t for t in range(0, 10**6, 30) if pod["bind"] <= t < pod["departure"]]
    # the value is unchanged while it lives: sampled when it starts, then again
    # every 300 s (the most 30 s steps within Prometheus's 5-minute lookback)
    expected = held[::10]
    assert len(held) > 10 and expected[-1] < held[-1]
    for points in series.values():
        assert [t for t, _ in points] == expected
        assert {v for _, v in points} == {9000 * 2**20}     # gpumem 3000 + 1500 * 4
    labels = dict(next(k[1] for k in samples if k[0] == "hami_vgpu_core_allocated_ratio"
                       and dict(k[1])["pod"] == "p3"))
    assert labels["namespace"] == "team-a" and labels["container_index"] == "0"


def test_topology_gauges_count_pods_across_numa(run):
    base, _ = run
    _, samples = parse(base / "m.om")
    pods = pd.read_parquet(base / "run" / "pods.parquet")
    crossing = pods[(pods["gpus"] > 1) & (pods["numa_nodes"] > 1)]
    t = 30 * np.arange(len(samples[("hamisim_multi_gpu_pods_cross_numa", ())]))
    expected = [((crossing["bind"] <= x) & ~(crossing["departure"] <= x)).sum() for x in t]
    assert [v for _, v in samples[("hamisim_multi_gpu_pods_cross_numa", ())]] == expected
    assert max(expected) > 0


def test_same_inputs_give_the_same_bytes(run, tmp_path):
    base, args = run
    again = [a.replace(str(base / "m.om"), str(tmp_path / "m.om"))
             .replace(str(base / "run"), str(tmp_path / "run")) for a in args]
    assert main(again) == 0
    assert (tmp_path / "m.om").read_bytes() == (base / "m.om").read_bytes()


def test_start_must_say_its_time_zone():
    assert parse_start("2026-11-30T00:00:00Z") == T0
    assert parse_start("2026-11-30T08:00:00+08:00") == T0
    assert parse_start(str(T0)) == T0
    for bad, why in (("2026-11-30T00:00:00", "no time zone"), ("yesterday", "neither"),
                     ("-5", "after 1970")):
        with pytest.raises(ValueError, match=why):
            parse_start(bad)


def test_metrics_options_are_checked_before_the_run(run, tmp_path, capsys):
    base, _ = run
    common = ["run", str(base / "c.yaml"), str(base / "t.csv"), "--out", str(tmp_path / "r")]
    assert main(common + ["--metrics-out", str(tmp_path / "no" / "m.om"),
                          "--metrics-start", START]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(common + ["--metrics-start", START]) == 2
    assert "--metrics-start needs --metrics-out" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(common + ["--metrics-out", str(tmp_path / "m.om"), "--metrics-start",
                       "2026-11-30 00:00"])
    assert exit_.value.code == 2 and "no time zone" in capsys.readouterr().err
    assert not (tmp_path / "r").exists() and not (tmp_path / "m.om").exists()


def test_the_default_start_ends_the_series_at_the_moment_of_the_run(run, tmp_path, capsys):
    # without --metrics-start the last sample is the moment of the run (down to
    # the minute), inside Prometheus's retention; the start is printed and kept
    # in summary.json, and giving it back writes the same bytes
    base, _ = run
    common = ["run", str(base / "c.yaml"), str(base / "t.csv"), "--no-progress",
              "--metrics-interval", "30"]
    before = time.time()
    assert main(common + ["--out", str(tmp_path / "a"), "--metrics-out",
                          str(tmp_path / "a.om")]) == 0
    after = time.time()
    out = capsys.readouterr()
    recorded = json.loads((tmp_path / "a" / "summary.json").read_text())["metrics"]
    assert f"--metrics-start {recorded['start']} (default" in out.out
    assert "warning" not in out.err
    assert parse_start(recorded["start"]) == recorded["start_unix"] and not recorded["start_given"]
    _, samples = parse(tmp_path / "a.om")
    last = max(t for points in samples.values() for t, _ in points)
    assert before - 60 < last <= after and recorded["start_unix"] % 60 == 0
    assert recorded["samples"] == sum(len(p) for p in samples.values())
    assert main(common + ["--out", str(tmp_path / "b"), "--metrics-out", str(tmp_path / "b.om"),
                          "--metrics-start", recorded["start"]]) == 0
    assert (tmp_path / "b.om").read_bytes() == (tmp_path / "a.om").read_bytes()
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["metrics"]["start_given"]
    capsys.readouterr()
    # a start beyond Prometheus's 15-day retention is said, with the flag that keeps it
    month_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 30 * 86400))
    assert main(common + ["--out", str(tmp_path / "c"), "--metrics-out", str(tmp_path / "c.om"),
                          "--metrics-start", month_ago]) == 0
    err = capsys.readouterr().err
    assert f"--metrics-out {tmp_path / 'c.om'}: warning: the samples start on {month_ago}" in err
    assert "deletes all of them" in err and "--storage.tsdb.retention.time=3" in err


def test_a_run_longer_than_the_retention_is_warned_about():
    from hamisim.studies.openmetrics import retention_warning
    now = 2_000_000_000.0
    assert retention_warning(now - 14 * 86400, now, now) is None
    said = retention_warning(now - 20 * 86400, now, now)
    assert "deletes those before" in said and "spans more than 15 days" in said
    assert "retention.time=21d" in said


DASHBOARD = Path(__file__).parents[1] / "workloads" / "grafana" / "hamisim-dashboard.json"
DASHBOARD_QUERIES = [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"]
                     for t in p.get("targets", ())]
# the queries of HAMi's dashboard (dashboards/hami-vgpu-dashboard.json at v2.10.0)
# that read the scheduler's families
HAMI_DASHBOARD_QUERIES = [
    'count(hami_gpu_memory_limit_bytes{node=~"$node"})',
    'sum(hami_gpu_memory_allocated_bytes{node=~"$node"})',
    'sum(hami_gpu_shared_count{node=~"$node"})',
    'sum by (node) (hami_gpu_memory_allocated_bytes{node=~"$node"})',
    'hami_node_gpu_memory_allocated_ratio{node=~"$node"}',
    'hami_gpu_core_allocated_ratio{node=~"$node"}',
]


def test_the_dashboard_reads_only_families_the_file_has(run):
    base, _ = run
    families, _ = parse(base / "m.om")
    names = set(families) | {f + "_total" for f, (kind, _) in families.items()
                             if kind == "counter"}
    used = {m for expr in DASHBOARD_QUERIES
            for m in re.findall(r"\b((?:hami|hamisim|scheduler)_[a-z_]+)", expr)}
    assert used and used <= names, used - names
    panels = json.loads(DASHBOARD.read_text())["panels"]
    assert all(p["title"] and (p["type"] == "row" or p["description"]) for p in panels)


# -- the real thing --------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _query(port: int, expr: str, when: int) -> float | None:
    url = (f"http://127.0.0.1:{port}/api/v1/query?"
           + urllib.parse.urlencode({"query": expr, "time": str(when)}))
    with urllib.request.urlopen(url, timeout=10) as reply:
        body = json.load(reply)
    assert body["status"] == "success", body
    result = body["data"]["result"]
    return float(result[0]["value"][1]) if result else None


@pytest.mark.skipif(shutil.which("promtool") is None or shutil.which("prometheus") is None,
                    reason="Prometheus is not installed (Debian: apt-get install prometheus; "
                           ".ci/run installs it)")
def test_prometheus_serves_the_backfilled_run(run, tmp_path):
    base, _ = run
    db = tmp_path / "tsdb"
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics",
                    str(base / "m.om"), str(db)], check=True, capture_output=True, timeout=120)
    (tmp_path / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n")
    port = _free_port()
    server = subprocess.Popen(
        ["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={db}", "--storage.tsdb.retention.time=100y",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("w"))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "Prometheus did not become ready in 60 s"
            time.sleep(0.2)
        ts = pd.read_parquet(base / "run" / "timeseries.parquet")
        end = int(ts["time"].iloc[-1] // 30) * 30
        checked = 0
        # on the grid and between its instants (thinned series: the last sample
        # kept, up to 300 s back, answers)
        for t in sorted({0, 600, 1200, 1830, 1845, 2013, end // 2 // 30 * 30, end}):
            when, t = T0 + t, t // 30 * 30
            assert _query(port, "count(hami_gpu_memory_limit_bytes)", when) == 20
            for expr, column in (("sum(hami_gpu_memory_allocated_bytes)",
                                  "hami_gpu_memory_allocated_bytes"),
                                 ("sum(hami_gpu_shared_count)", "hami_vgpu_slots_allocated"),
                                 ('scheduler_pending_pods{queue="backoff"}',
                                  "pods_pending_backoff"),
                                 ("sum(scheduler_schedule_attempts_total)", None),
                                 ("hamisim_gpu_zero_tenant_cards", "hami_gpu_zero_tenant")):
                got = _query(port, expr, when)
                if column is None:
                    want = sum(at(ts, f"attempts_{r}", np.array([t]))[0]
                               for r in ("scheduled", "unschedulable", "error"))
                else:
                    want = at(ts, column, np.array([t]))[0]
                assert got == pytest.approx(float(want)), (expr, t)
                checked += 1
        assert checked >= 25
        # HAMi's dashboard panel "GPU memory allocated %"
        pct = _query(port, "100 * sum(hami_gpu_memory_allocated_bytes) / "
                           "sum(hami_gpu_memory_limit_bytes)", T0 + 1200)
        assert pct == pytest.approx(100 * at(ts, "hami_gpu_memory_allocated_bytes",
                                             np.array([1200]))[0]
                                    / ts["hami_gpu_memory_total_bytes"].iloc[0])
        # every query of hamisim's dashboard, and HAMi's dashboard's queries of the
        # scheduler's families, find series (multi-card pods run at 1200 s)
        for expr in DASHBOARD_QUERIES + HAMI_DASHBOARD_QUERIES:
            assert _query(port, expr.replace("$node", ".*"), T0 + 1200) is not None, expr
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_imported_pods_are_labelled_by_namespace_and_name(tmp_path):
    example = Path(__file__).parents[1] / "workloads" / "kubectl-example"
    assert main(["import", str(example / "nodes.json"), str(example / "pods.json"),
                 "--out", str(tmp_path / "imp")]) == 0
    imp = tmp_path / "imp"
    assert main(["run", str(imp / "cluster.yaml"), str(imp / "pending.jsonl"), "--state",
                 str(imp / "state.yaml"), "--out", str(tmp_path / "run"), "--metrics-out",
                 str(tmp_path / "m.om"), "--metrics-start", str(T0)]) == 0
    _, samples = parse(tmp_path / "m.om")
    pods = {(d["namespace"], d["pod"], d["container_index"]) for d in
            (dict(k[1]) for k in samples if k[0] == "hami_vgpu_memory_allocated_bytes")}
    assert ("ml", "train-resnet-0", "0") in pods and ("default", "jupyter-alice-0", "0") in pods
    # HAMi's container index counts the finished GPU init container's (empty) entry
    assert ("ml", "serve-embeddings-6d5f8c7b9-x2kqp", "1") in pods


def test_two_instances_of_one_card_in_one_container_are_one_series(tmp_path):
    # HAMi would collect two samples with the same labels (its endpoint then
    # fails); the file sums them
    from hamisim import Card, Cluster, Node
    from hamisim.studies.openmetrics import write_openmetrics
    cluster = Cluster((Node("n", (Card("GPU-m", 0, devmem=40000),)),))
    ts = pd.DataFrame({"time": [0.0, 60.0], **{c: [0, 0] for c in (
        "pods_pending", "pods_running", "pods_arrived", "pods_departed", "pods_abandoned",
        "pods_pending_active", "pods_pending_backoff", "pods_pending_unschedulable",
        "attempts_scheduled", "attempts_unschedulable", "attempts_error", "unallocated_gpu",
        "frag_gpu", "stranded_gpu", "unfit_gpu")}})
    pods = pd.DataFrame({"pod": ["p"], "node": ["n"], "bind": [0.0], "departure": [np.nan],
                         "devices": ["GPU-m,NVIDIA,10000,28:GPU-m,NVIDIA,5000,14:;"]})
    write_openmetrics(tmp_path / "m.om", cluster, ts, pods, T0, 60)
    _, samples = parse(tmp_path / "m.om")
    (key,) = [k for k in samples if k[0] == "hami_vgpu_memory_allocated_bytes"]
    assert samples[key] == [(T0, 15000 * 2**20), (T0 + 60, 15000 * 2**20)]
    assert samples[("hami_gpu_shared_count", next(
        k[1] for k in samples if k[0] == "hami_gpu_shared_count"))][0][1] == 2


def _plain_columns(heads, values, integer, stamps, every):
    """The readable rule the writer implements with numpy and C: each series'
    runs of one value (NaN equal to NaN), a line at a run's first sample, every ``every``-th
    after it, and the file's last instant when the run reaches it."""
    from hamisim.studies.openmetrics import _number
    out = []
    k = len(values)
    for j, head in enumerate(heads):
        column = values[:, j].tolist()
        a = 0
        while a < k:
            b = a + 1
            while b < k and (column[b] == column[a] or column[b] != column[b]
                             and column[a] != column[a]):      # NaN runs like any value
                b += 1
            picked = list(range(a, b, every))
            if b == k and picked[-1] != k - 1:
                picked.append(k - 1)
            out += [f"{head} {_number(column[a], integer)}{stamps[i].decode()}" for i in picked]
            a = b
    return "".join(out)


@pytest.mark.parametrize("seed", range(4))
def test_the_fast_writer_writes_what_the_plain_rule_says(seed, monkeypatch):
    # samples chosen with numpy and lines assembled in C (hamisim._openmetrics)
    # equal, byte for byte, the readable per-series rule, across buffer cuts
    import io
    from hamisim.studies import openmetrics as om
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(1, 40)), int(rng.integers(1, 30))
    stamps = [f" {T0 + 60 * i}\n".encode() for i in range(k)]
    heads = [f'm{{node="n{j}",x="{"y" * int(rng.integers(0, 9))}"}}' for j in range(n)]
    ints = rng.integers(0, 3, (k, n)) * int(rng.choice([1, 2**20, 10**12]))
    floats = np.where(rng.random((k, n)) < 0.1, np.nan, rng.integers(0, 3, (k, n)) / 3)
    for every in (1, 3, 5):
        for values, integer in ((ints, True), (floats, False)):
            for thin in (True, False):
                out = io.BytesIO()
                counts = [0, 0, 0]
                # many buffers, cut anywhere
                monkeypatch.setattr(om, "_BUFFER", int(rng.integers(1, 400)))
                om._Writer(out, stamps, counts, (), every).columns(heads, values, integer, thin)
                want = _plain_columns(heads, values, integer, stamps, every if thin else 1)
                assert out.getvalue().decode() == want
                assert counts[:2] == [n, want.count("\n")]


def test_a_nan_series_is_thinned_like_any_other():
    import io
    from hamisim.studies import openmetrics as om
    stamps = [f" {T0 + 60 * i}\n".encode() for i in range(7)]
    values = np.array([[np.nan]] * 3 + [[0.5]] * 4)
    out = io.BytesIO()
    om._Writer(out, stamps, [0, 0, 0], (), 5).columns(["m"], values, False)
    assert out.getvalue().decode().splitlines() == [
        f"m NaN {T0}", f"m 0.5 {T0 + 180}", f"m 0.5 {T0 + 360}"]


def test_lines_are_their_pieces_in_order():
    from hamisim._openmetrics import lines

    def pieces(items):
        at = np.cumsum([0, *map(len, items)]).astype(np.int64)
        return np.frombuffer(b"".join(items) or b"\0", dtype=np.uint8), at
    heads, values, stamps = [b"a", b"bcd", b""], [b" 1", b" 22"], [b" 7\n", b" 88\n"]
    head, value, stamp = (np.array(x, dtype=np.int64) for x in ([1, 0, 2, 1], [0, 1, 1, 0],
                                                                 [1, 1, 0, 0]))
    want = b"".join(heads[h] + values[v] + stamps[s] for h, v, s in zip(head, value, stamp))
    out = np.zeros(len(want), dtype=np.uint8)
    assert lines(*pieces(heads), *pieces(values), *pieces(stamps), head, value, stamp,
                 out) == len(want)
    assert out.tobytes() == want
    with pytest.raises(IndexError):
        lines(*pieces(heads), *pieces(values), *pieces(stamps), head, value, stamp, out[:-1])


def test_a_failed_summary_rewrite_leaves_no_temporary_file(run, tmp_path, monkeypatch, capsys):
    # --metrics-out adds its start to summary.json, replaced whole: a write that
    # fails half-way leaves the run's own summary.json and no temporary file
    import errno

    from hamisim.io import outputs
    base, _ = run
    original = outputs.write_json

    def half_then_full(obj, path):
        original(obj, path)
        path.write_text(path.read_text()[:20])
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(outputs, "write_json", half_then_full)
    out = tmp_path / "r"
    assert main(["run", str(base / "c.yaml"), str(base / "t.csv"), "--out", str(out),
                 "--no-progress", "--metrics-out", str(tmp_path / "m.om"), "--metrics-start",
                 START, "--metrics-interval", "30"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert "metrics" not in json.loads((out / "summary.json").read_text())
