"""HAMi v2.10.0's ResourceQuota on ``gpumem`` / ``gpucores`` per namespace.

Expectations are worked by hand from HAMi's rules (``pkg/device/quota.go``
``FitQuota``, ``pkg/scheduler/webhook.go`` ``fitResourceQuota``,
``pkg/device/nvidia/device.go`` ``fitQuota`` at v2.10.0; see
``hamisim.hami.quota``), not from hamisim's output. The bundled scenario
``resource-quota`` walks the same rules on both backends (test_checker).
"""
from __future__ import annotations

import json
import warnings

import pytest

from hamisim.cluster import Card, Cluster, Node, Quota, SchedulerConfig
from hamisim.errors import InputError, InputWarning
from hamisim.hami.quota import QUOTA_DENIED, QuotaGate, pod_quota_request, quota_gate
from hamisim.hami.reference import ReferenceScheduler
from hamisim.io.clusterfile import load_cluster
from hamisim.io.traces import read_trace, write_trace
from hamisim.pods import Container, Pod, Request
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.sim.kernel import KernelScheduler
from hamisim.workload import Trace, TracePod

BACKENDS = [ReferenceScheduler, KernelScheduler]
T4 = "NVIDIA-Tesla T4"


def _cluster(quotas, *, cards=2, **scheduler) -> Cluster:
    node = Node("n", tuple(Card(f"GPU-{k}", k, devmem=16000, type=T4) for k in range(cards)))
    return Cluster((node,), SchedulerConfig(**scheduler), quotas=quotas)


def _pod(name, ns="team", *containers, init=()) -> Pod:
    return Pod(name, tuple(Container(c) for c in containers), tuple(Container(c) for c in init),
               namespace=ns)


def gpu(mem=None, pct=None, cores=None, n=1) -> dict:
    out = {"nvidia.com/gpu": n}
    if mem is not None:
        out["nvidia.com/gpumem"] = mem
    if pct is not None:
        out["nvidia.com/gpumem-percentage"] = pct
    if cores is not None:
        out["nvidia.com/gpucores"] = cores
    return out


# ---------------------------------------------------------------------------
# the rules

def test_fit_quota_is_used_plus_request_greater_than_limit():
    gate = QuotaGate(limit_mem=8000, limit_cores=100, used_mem=5000, used_cores=70)
    assert gate.fits(3000, 30)                 # exactly at both limits still fits
    assert not gate.fits(3001, 0)
    assert not gate.fits(0, 31)
    assert QuotaGate(0, None).fits(0, 500) and not QuotaGate(0, None).fits(1, 0)


def test_the_memory_limit_is_multiplied_by_memory_factor():
    assert quota_gate(Quota(memory=100, cores=5), 10, (0, 0)) == QuotaGate(1000, 5, 0, 0)
    assert quota_gate(Quota(), 10, (0, 0)) is None
    assert quota_gate(None, 1, (0, 0)) is None


def test_the_webhook_counts_app_containers_summed_and_init_containers_at_their_largest():
    reqs = [Request(1, 3000, coresreq=20), Request(2, 500, coresreq=5),    # init
            Request(1, 1000, coresreq=10), None, Request(2, 700, coresreq=30)]
    # init: max(3000, 1000) MiB, max(20, 10) cores; app: 1000 + 1400 MiB, 10 + 60 cores
    assert pod_quota_request(reqs, 2) == (3000, 70)
    # a percentage or whole-card request has memreq 0 at admission
    assert pod_quota_request([Request(1, 0, 50, 0)], 0) == (0, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_admission_refuses_the_pod_that_would_exceed_the_quota(backend):
    cluster = _cluster({"team": Quota(memory=8000, cores=100)})
    s = backend(cluster)
    assert s.schedule(_pod("a", "team", gpu(5000, cores=30))).bound
    assert s.namespace_usage("team") == (5000, 30)
    assert s.admission_denial(_pod("b", "team", gpu(3000, cores=70))) is None   # = limits
    assert s.admission_denial(_pod("c", "team", gpu(3001))) == QUOTA_DENIED
    assert s.admission_denial(_pod("d", "team", gpu(cores=71, mem=1))) == QUOTA_DENIED
    # a whole card counts 100 cores (the webhook's default) and 0 MiB
    assert s.admission_denial(_pod("e", "team", gpu())) == QUOTA_DENIED
    # other namespaces and pods without GPUs are not checked
    assert s.admission_denial(_pod("f", "other", gpu(50000))) is None
    assert s.admission_denial(Pod("g", (Container(),), namespace="team")) is None
    s.delete("a")
    assert s.namespace_usage("team") == (0, 0)
    assert s.admission_denial(_pod("c", "team", gpu(3001))) is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_fit_counts_a_percentage_in_mib_of_the_card(backend):
    s = backend(_cluster({"team": Quota(memory=8000)}))
    assert s.schedule(_pod("a", "team", gpu(5000))).bound
    # 25 % of 16000 = 4000 MiB: 5000 + 4000 > 8000 on both cards
    d = s.schedule(_pod("b", "team", gpu(pct=25)))
    assert not d.bound and d.node_reasons == {"n": ["2/2 ResourceQuotaNotFit"]}
    assert s.schedule(_pod("c", "team", gpu(pct=18))).bound            # 2880 MiB
    assert s.namespace_usage("team") == (7880, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quota_is_checked_after_the_mutex_rule_and_before_memory(backend):
    s = backend(_cluster({"team": Quota(memory=1000)}, cards=3))
    assert s.schedule(_pod("x", "other", gpu(15000))).bound           # fills one card
    pod = Pod("m", (Container(gpu(2000)),), annotations={"hami.io/gpu-scheduler-policy": "mutex"},
              namespace="team")
    d = s.schedule(pod)
    # the used card is a mutex conflict; the two idle ones fail the quota
    assert d.node_reasons == {"n": ["1/3 ExclusiveDeviceAllocateConflict, "
                                    "2/3 ResourceQuotaNotFit"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_container_on_several_cards_counts_every_card(backend):
    s = backend(_cluster({"team": Quota(memory=20000)}, cards=3))
    # 3 x 7000: the third card would bring the pod to 21000
    d = s.schedule(_pod("a", "team", gpu(7000, n=3)))
    assert d.node_reasons == {"n": ["1/3 ResourceQuotaNotFit, "
                                    "2/3 AllocatedCardsInsufficientRequest"]}
    assert s.schedule(_pod("b", "team", gpu(10000, n=2))).bound


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("usage,expected", [("hami-v2.10", True), ("corrected", False)])
def test_the_first_app_container_counts_as_the_init_container(backend, usage, expected):
    # one GPU-less init container, two app containers of 20 % (3200 MiB): in
    # HAMi's app pass the first app entry sits at position 0 < 1 init
    # container, so the second is max'ed with it on one card (3200 <= 5000)
    # and summed on another (6400 > 5000); corrected counts 6400 everywhere
    cluster = _cluster({"team": Quota(memory=5000)}, init_container_usage=usage)
    s = backend(cluster)
    pod = _pod("c", "team", gpu(pct=20), gpu(pct=20), init=[{}])
    d = s.schedule(pod)
    assert d.bound is expected
    if expected:
        assert d.card_ids[0] == d.card_ids[1]
        assert s.namespace_usage("team") == (3200, 0)     # HAMi's cache: max'ed too
    else:
        assert d.node_reasons == {"n": ["2/2 ResourceQuotaNotFit"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_app_pass_list_holds_app_containers_only_on_nvidia_typed_cards(backend):
    # cards typed exactly NVIDIA keep an entry for the GPU-less init container
    # in the cached list, but Fit's app pass still lists the app containers
    # alone: app1 sits at position 0 (< 1 init container) and is max'ed
    card = dict(count=10, devmem=16000, devcore=100, type="NVIDIA")
    cluster = Cluster((Node("n", (Card("A", 0, **card), Card("B", 1, **card))),),
                      quotas={"team": Quota(memory=5000)})
    s = backend(cluster)
    d = s.schedule(_pod("c", "team", gpu(pct=20), gpu(pct=20), init=[{}]))
    assert d.bound and d.card_ids[0] == d.card_ids[1]
    # the cache keeps the init container's entry: the pod is held at 6400 MiB
    assert s.namespace_usage("team") == (6400, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_init_containers_are_max_ed_against_each_other(backend):
    s = backend(_cluster({"team": Quota(memory=6000)}, cards=1))
    # two init containers of 5000 on one card: max 5000 <= 6000; the app's 6000 too
    pod = _pod("i", "team", gpu(6000), init=[gpu(5000), gpu(5000)])
    assert s.schedule(pod).bound
    assert s.namespace_usage("team") == (6000, 0)


def test_adopted_pods_count_for_their_namespace():
    from hamisim.hami.decision import Pick
    for backend in BACKENDS:
        s = backend(_cluster({"team": Quota(memory=4000)}))
        s.adopt("old", 0, [[Pick("GPU-0", 3000, 10)]], namespace="team")
        s.adopt("else", 0, [[Pick("GPU-1", 3000, 10)]])
        assert s.namespace_usage("team") == (3000, 10)
        assert s.admission_denial(_pod("p", "team", gpu(1500))) == QUOTA_DENIED


# ---------------------------------------------------------------------------
# the engine: refused at creation, with the usage at that time

@pytest.mark.parametrize("backend,engine", [("kernel", "python"), ("reference", "python"),
                                            ("kernel", "compiled")])
def test_a_replay_refuses_pods_while_their_namespace_is_full(backend, engine):
    cluster = _cluster({"team": Quota(memory=10000)})
    pods = [TracePod(_pod("a", "team", gpu(6000)), 0.0, 100.0),
            TracePod(_pod("b", "team", gpu(6000)), 10.0, 100.0),      # refused: 12000
            TracePod(_pod("c", "team", gpu(4000)), 20.0, 100.0),      # 10000: admitted
            TracePod(_pod("d", "other", gpu(6000)), 30.0, 100.0),
            TracePod(_pod("e", "team", gpu(6000)), 150.0, 10.0)]      # a and c have left
    res = simulate(cluster, Trace.from_pods("t", pods), EngineConfig(backend=backend,
                                                                      engine=engine))
    ev = res.events
    assert ev[ev.pod == "b"].event.tolist() == ["arrive", "rejected"]
    assert ev[ev.pod == "b"].message.iloc[1] == QUOTA_DENIED
    assert all("bind" in ev[ev.pod == p].event.tolist() for p in "acde")
    assert res.summary["rejected"] == 1


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_fill_creates_its_pods_through_the_webhook_too(engine):
    # fill mode submits each pod like any creation: the webhook refuses the one
    # over the quota (rejected, never attempted) rather than Fit failing it
    cluster = _cluster({"team": Quota(memory=10000)})
    pods = [_pod("a", "team", gpu(6000)), _pod("b", "team", gpu(6000)),
            _pod("c", "team", gpu(4000))]
    res = simulate(cluster, Trace.from_pods("t", [TracePod(p, 0.0, None) for p in pods]),
                   EngineConfig(mode="fill", engine=engine))
    ev = res.events
    assert ev[ev.pod == "b"].event.tolist() == ["arrive", "rejected"]
    assert ev[ev.pod == "b"].message.iloc[1] == QUOTA_DENIED
    assert ev[ev.pod == "c"].event.tolist() == ["arrive", "bind"]
    assert res.summary["rejected"] == 1 and res.summary["attempts"] == 2


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_fit_sees_the_namespace_usage_after_a_departure(engine):
    # admitted together while the namespace is empty; Fit then refuses the one
    # that would exceed the quota until the first one has left
    cluster = _cluster({"team": Quota(cores=100)})
    pods = [TracePod(_pod("a", "team", gpu(cores=60)), 0.0, 50.0),
            TracePod(_pod("b", "team", gpu(cores=60)), 0.0, 50.0)]
    res = simulate(cluster, Trace.from_pods("t", pods), EngineConfig(engine=engine))
    ev = res.events
    assert ev[ev.pod == "a"].event.tolist() == ["arrive", "bind", "depart"]
    b = ev[ev.pod == "b"]
    assert b.event.tolist()[:2] == ["arrive", "unschedulable"]
    assert "ResourceQuotaNotFit" in b.message.iloc[1]
    assert b[b.event == "bind"].time.iloc[0] >= 50.0


def test_the_compiled_engine_runs_quotas():
    from hamisim.sim.compiled import unsupported
    cluster = _cluster({"team": Quota(memory=10000)})
    trace = Trace.from_pods("t", [TracePod(_pod("a", "team", gpu(6000)), 0.0, 1.0)])
    assert unsupported(cluster, EngineConfig(), trace, []) is None


# ---------------------------------------------------------------------------
# inputs

def _write(tmp_path, text, name="cluster.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


NODES = "nodes:\n  - {name: n, devices: [{id: G, devmem: 16000, type: NVIDIA-Tesla T4}]}\n"


def test_cluster_file_quotas(tmp_path):
    path = _write(tmp_path, NODES + "quotas:\n  team-a:\n    limits.nvidia.com/gpumem: 8000\n"
                  "    limits.nvidia.com/gpucores: 150\n  team-b: {limits.nvidia.com/gpucores: 0}\n")
    cluster = load_cluster(path)
    assert cluster.quotas == {"team-a": Quota(8000, 150), "team-b": Quota(None, 0)}
    # the JSON reader's fast path keeps them too
    doc = {"nodes": [{"name": "n", "devices": [{"id": "G", "devmem": 16000, "type": T4}]}],
           "quotas": {"team-a": {"limits.nvidia.com/gpumem": 8000}}}
    json_path = _write(tmp_path, json.dumps(doc), "cluster.json")
    assert load_cluster(json_path).quotas == {"team-a": Quota(8000, None)}
    from hamisim.io.clusterfile import _fast_json_cluster
    assert _fast_json_cluster(str(json_path), None) == load_cluster(json_path)
    # a value HAMi reads otherwise than it looks still warns at its line (the
    # line-tracking reader), and a quota key HAMi ignores too
    for hard, warning in (({"limits.nvidia.com/gpumem": "24Gi"}, "plain number"),
                          ({"requests.cpu": 4}, "enforces only")):
        doc["quotas"] = {"team-a": hard}
        json_path.write_text(json.dumps(doc, indent=1))
        assert _fast_json_cluster(str(json_path), None) is None
        with pytest.warns(InputWarning, match=warning):
            load_cluster(json_path)


@pytest.mark.parametrize("value,expected,warning", [
    ("24Gi", 24 * 2**30, "reads the quantity as the plain number 25769803776"),
    ("1.5", None, "not a whole number: HAMi v2.10.0 ignores it"),
    ("8000", 8000, None),
])
def test_quota_values_as_hami_reads_them(tmp_path, value, expected, warning):
    path = _write(tmp_path, NODES + f"quotas:\n  t:\n    limits.nvidia.com/gpumem: '{value}'\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cluster = load_cluster(path)
    assert cluster.quotas["t"].memory == expected
    texts = [str(w.message) for w in caught if issubclass(w.category, InputWarning)]
    if warning is None:
        assert texts == []
    else:
        assert len(texts) == 1 and warning in texts[0] and f"{path}:5:" in texts[0]


def test_keys_hami_does_not_enforce_are_warned_about(tmp_path):
    path = _write(tmp_path, NODES + "quotas:\n  t:\n    requests.nvidia.com/gpu: 4\n")
    with pytest.warns(InputWarning, match=r"cluster.yaml:5: warning: quota key "
                                          r"'requests.nvidia.com/gpu': HAMi v2.10.0 enforces only"):
        assert load_cluster(path).quotas == {"t": Quota()}


@pytest.mark.parametrize("body,line,problem", [
    ("  t:\n    limits.nvidia.com/gpumem: -1\n", 5, "must be >= 0"),
    ("  t:\n    limits.nvidia.com/gpumem: true\n", 5, "must be an integer"),
    ("  t:\n    limits.nvidia.com/gpucores: lots\n", 5, "not a Kubernetes quantity"),
    ("  t: 5\n", 4, "the quota of namespace 't'"),
])
def test_bad_quotas_are_located_errors(tmp_path, body, line, problem):
    path = _write(tmp_path, NODES + "quotas:\n" + body)
    with pytest.raises(InputError) as err:
        load_cluster(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and problem in str(err.value)


def test_the_namespace_column_round_trips_and_is_validated(tmp_path):
    trace = Trace.from_pods("t", [TracePod(_pod("a", "team-a", gpu(100)), 0.0, 1.0),
                                  TracePod(_pod("b", "default", gpu(100)), 1.0, 1.0)])
    for ext in ("csv", "jsonl", "parquet"):
        path = tmp_path / f"t.{ext}"
        write_trace(trace, path)
        back = read_trace(path)
        assert [tp.pod.namespace for tp in back.pods] == ["team-a", "default"]
    bad = tmp_path / "bad.csv"
    bad.write_text("name,arrival,gpu,namespace\nx,0,1,Team_A\n")
    with pytest.raises(InputError, match=r"bad.csv:2: .*'namespace' must be a lowercase DNS"):
        read_trace(bad)
