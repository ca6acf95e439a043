"""Pods with init containers, held as HAMi v2.10.0 caches them.

HAMi's ``CollapseInitContainerUsage`` tells init from app entries only by their
position in its per-vendor list (the first ``len(initContainers)`` are init);
on a node whose cards are not typed exactly ``NVIDIA`` that list has no entry
for a container without GPUs. The worked cases below are HAMi's own
(``pkg/device/initContainer.go``, ``pkg/scheduler/score.go``), with a
GPU-less init container and two app containers of 6000 MiB each.
"""
from __future__ import annotations

import pytest

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.io.initialstate import load_state
from hamisim.pods import Container, Pod
from hamisim.sim.backend import make_scheduler

BACKENDS = ["kernel", "reference"]
APP = Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 6000})
POD = Pod("p", (APP, APP), init_containers=(Container(),))


def _cluster(card_type: str, n_cards: int, policy: str, usage: str = "hami-v2.10") -> Cluster:
    cards = tuple(Card(f"GPU-{k}", k, devmem=15360, type=card_type) for k in range(n_cards))
    return Cluster((Node("n", cards),), SchedulerConfig(gpu_scheduler_policy=policy,
                                                        init_container_usage=usage))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("card_type, usage, held", [
    # a real card type, both apps on one card: app 1 is taken for the init
    # container, max'ed with app 2: 1 slot and 6000 MiB, not 2 and 12000
    ("NVIDIA-Tesla T4", "hami-v2.10", (1, 6000, 0)),
    # HAMi's unit-test type "NVIDIA" keeps the init container's entry: correct
    ("NVIDIA", "hami-v2.10", (2, 12000, 0)),
    # the corrected accounting, on request
    ("NVIDIA-Tesla T4", "corrected", (2, 12000, 0)),
])
def test_one_card(backend, card_type, usage, held):
    sched = make_scheduler(_cluster(card_type, 1, "binpack", usage), backend)
    d = sched.schedule(POD)
    assert d.bound and d.card_ids == ["GPU-0", "GPU-0"]
    assert sched.usage_by_card()["GPU-0"] == held


@pytest.mark.parametrize("backend", BACKENDS)
def test_apps_on_different_cards_are_held_correctly(backend):
    sched = make_scheduler(_cluster("NVIDIA-Tesla T4", 2, "spread"), backend)
    d = sched.schedule(POD)
    assert sorted(d.card_ids) == ["GPU-0", "GPU-1"]
    assert sched.usage_by_card() == {"GPU-0": (1, 6000, 0), "GPU-1": (1, 6000, 0)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_pod_through_a_state_file_is_held_alike(backend, tmp_path):
    """hamisim used to hold 12000 MiB for a pod it placed but HAMi's 6000 for
    the same pod read back from its annotation: now both are HAMi's."""
    cluster = _cluster("NVIDIA-Tesla T4", 1, "binpack")
    placed = make_scheduler(cluster, backend)
    d = placed.schedule(POD)
    state = tmp_path / "state.yaml"
    state.write_text(f"pods:\n  - {{name: p, node: n, devices: '{d.devices}', "
                     "init_containers: 1}\n")
    adopted = make_scheduler(cluster, backend)
    load_state(state, cluster).adopt_into(adopted, cluster)
    assert adopted.usage_by_card() == placed.usage_by_card() == {"GPU-0": (1, 6000, 0)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_freed_room_is_really_used(backend):
    """The misaccounting matters: a third 6000 MiB pod fits beside the pod on
    a 15360 MiB card, since HAMi thinks only 6000 MiB are taken."""
    sched = make_scheduler(_cluster("NVIDIA-Tesla T4", 1, "binpack"), backend)
    assert sched.schedule(POD).bound
    assert sched.schedule(Pod("q", (APP,))).bound
    corrected = make_scheduler(_cluster("NVIDIA-Tesla T4", 1, "binpack", "corrected"),
                               backend)
    assert corrected.schedule(POD).bound
    assert not corrected.schedule(Pod("q", (APP,))).bound


def _replay(cluster, pods, engine="auto"):
    from hamisim.sim.engine import EngineConfig, simulate
    from hamisim.workload import Trace
    return simulate(cluster, Trace.from_pods("t", pods), EngineConfig(engine=engine, check=True))


def test_init_containers_finishing_drop_hamis_first_entries():
    """HAMi issue #2965, as HAMi v2.10.0 does it: an exclusive app container
    behind a GPU-less init container. Before the init container finishes the
    card is held (app taken for the init peak); after, HAMi drops the first
    entry -- the app container's own -- and the card looks free while the app
    runs, so another whole-card pod lands on it."""
    from hamisim.workload import TracePod
    cluster = _cluster("NVIDIA-Tesla T4", 1, "binpack")
    whole = Container({"nvidia.com/gpu": 1})          # the webhook adds gpucores: 100
    first = Pod("first", (whole,), init_containers=(Container(),), init_duration=10.0)
    res = _replay(cluster, [TracePod(first, 0.0, 1000.0),
                            TracePod(Pod("second", (whole,)), 1.0, 100.0)])
    rows = list(zip(res.events.time, res.events.pod, res.events.event))
    assert (0.0, "first", "bind") in rows
    assert (1.0, "second", "unschedulable") in rows
    # at 10 s HAMi drops first's usage: second (backing off) binds on the card
    assert [r for r in rows if r[1] == "second" and r[2] == "bind"] == [(10.0, "second", "bind")]


def test_the_entries_kept_once_the_init_containers_are_done():
    # one GPU-less init container, app containers on a and b: HAMi's list has no
    # entry for the init container unless aligned, so it drops a's entry instead
    from hamisim.hami.decision import Pick
    from hamisim.hami.reference import app_containers_only
    a, b = Pick("a", 1000, 10), Pick("b", 2000, 20)
    containers = [[], [a], [b]]
    assert app_containers_only(containers, 1, aligned=True) == [[a], [b]]
    assert app_containers_only(containers, 1, aligned=False) == [[b]]
    assert app_containers_only(containers, 0, aligned=False) == [[a], [b]]
    kept = app_containers_only(containers, 1, aligned=True)
    kept[0].append(b)               # new lists: the pod's own are left as they were
    assert containers == [[], [a], [b]]


def test_the_corrected_accounting_keeps_the_app_containers():
    from hamisim.workload import TracePod
    cluster = _cluster("NVIDIA-Tesla T4", 1, "binpack", "corrected")
    whole = Container({"nvidia.com/gpu": 1})
    first = Pod("first", (whole,), init_containers=(Container(),), init_duration=10.0)
    res = _replay(cluster, [TracePod(first, 0.0, 1000.0),
                            TracePod(Pod("second", (whole,)), 1.0, 100.0)])
    ev = res.events
    # second waits for first to leave at 1000 s
    assert ev[(ev.pod == "second") & (ev.event == "bind")].time.tolist() == [1000.0]


def test_a_terminating_pod_is_not_shrunk():
    """HAMi's onUpdatePod returns early for a pod being deleted: its init
    containers finishing during the grace period change nothing."""
    from hamisim.workload import TracePod
    cluster = _cluster("NVIDIA-Tesla T4", 1, "binpack")
    whole = Container({"nvidia.com/gpu": 1})
    first = Pod("first", (whole,), init_containers=(Container(),), init_duration=10.0,
                termination_grace_period=30)
    res = _replay(cluster, [TracePod(first, 0.0, None, 5.0),     # deleted at 5, gone at 35
                            TracePod(Pod("second", (whole,)), 1.0, 100.0)])
    ev = res.events
    assert ev[(ev.pod == "second") & (ev.event == "bind")].time.tolist() == [35.0]


# -- kube-scheduler's CPU and memory of a pod with init containers --------------

def test_pod_request_is_kube_schedulers_rule():
    """component-helpers PodRequests: max(app sum + sidecars, each init container
    on top of the sidecars started before it), plus the overhead."""
    from fractions import Fraction as F

    from hamisim.kube.fit import pod_request
    assert pod_request([F(1), F(2)]) == 3
    assert pod_request([F(1)], [(F(4), False), (F(2), False)]) == 4   # init containers one by one
    assert pod_request([F(5)], [(F(4), False)]) == 5                  # the apps' sum wins
    # a sidecar (1) adds to the apps (2) and runs under the later init container (3)
    assert pod_request([F(2)], [(F(1), True), (F(3), False)]) == 4
    # an init container before the sidecar runs alone
    assert pod_request([F(2)], [(F(3), False), (F(1), True)]) == 3
    assert pod_request([F(1)], [(F(2), True), (F(2), True)]) == 5
    assert pod_request([F(1)], [(F(3), False)], overhead=F(1, 2)) == F(7, 2)


def _trace(tmp_path, *rows: str):
    from hamisim.io.traces import read_trace
    path = tmp_path / "t.jsonl"
    path.write_text("".join(r + "\n" for r in rows))
    return read_trace(str(path))


def test_init_containers_cpu_and_memory_are_counted(tmp_path):
    trace = _trace(
        tmp_path,
        # the top-level columns are the app containers' total
        '{"name": "a", "arrival": 0, "gpu": 1, "cpu_milli": 2000, "memory_mib": 1024, '
        '"init_containers": [{"requests": {"cpu": "4", "memory": "8Gi"}}]}',
        # the containers' own requests; a limit stands for a missing request
        '{"name": "b", "arrival": 0, "containers": [{"gpu": 1, "requests": {"cpu": "500m"}}, '
        '{"limits": {"cpu": "1", "memory": "1Gi"}}], "init_containers": [{"requests": '
        '{"cpu": "1", "memory": "512Mi"}, "restart_policy": "Always"}, '
        '{"limits": {"cpu": "2"}}]}',
        # an app total above every init container
        '{"name": "c", "arrival": 0, "cpu_milli": 8000, "init_containers": '
        '[{"requests": {"cpu": "1500m", "memory": "100M"}}]}')
    got = {tp.pod.name: (tp.pod.cpu_milli, tp.pod.memory_mib) for tp in trace}
    # b: apps 1.5 + sidecar 1 = 2.5 CPUs, under the init container 2 + sidecar 1 = 3;
    # memory apps 1Gi + sidecar 512Mi; c: 100M = 95.37 MiB, rounded up
    assert got == {"a": (4000, 8192), "b": (3000, 1536), "c": (8000, 96)}


@pytest.mark.parametrize("row, problem", [
    ('"gpu": 1, "init_containers": [{"requests": {"memory": 4096}}]',
     "init container 0: 'requests' 'memory' needs a unit, e.g. '512Mi'"),
    ('"cpu_milli": 500, "containers": [{"requests": {"cpu": "1"}}]',
     "'cpu_milli' at the top level and the containers' own 'cpu' requests give"),
    ('"gpu": 1, "init_containers": [{"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}]',
     "init container 0: requests 'cpu' 2 is more than its limit 1"),
    ('"init_containers": [{"restart_policy": "OnFailure"}]',
     "init container 0: an init container's 'restart_policy' can only be Always"),
    ('"init_duration": 5, "init_containers": [{"restart_policy": "Always"}]',
     "'init_duration' with a sidecar"),
    ('"init_containers": [{"requests": {"ephemeral-storage": "1Gi"}}]',
     "unknown resource 'ephemeral-storage' in 'requests'"),
])
def test_bad_container_requests_are_located(tmp_path, row, problem):
    from hamisim.errors import InputError
    with pytest.raises(InputError) as caught:
        _trace(tmp_path, '{"name": "ok", "arrival": 0}',
               '{"name": "p", "arrival": 1, ' + row + '}')
    assert str(caught.value).startswith(f"{tmp_path / 't.jsonl'}:2: pod 'p': ")
    assert problem in str(caught.value)


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_an_init_containers_cpu_is_held_for_the_pods_life(tmp_path, engine):
    """kube-scheduler's NodeInfo counts a bound pod's requests from its spec, init
    containers included, until it leaves: a 4-CPU init container keeps 4 of the
    node's 4 CPUs requested after it (and HAMi's view of the card) is done, so a
    1-CPU pod waits for the first pod to leave, on both engines."""
    from dataclasses import replace

    from hamisim.sim.engine import EngineConfig, simulate
    cluster = _cluster("NVIDIA-Tesla T4", 2, "binpack")
    cluster = replace(cluster, nodes=(replace(cluster.nodes[0], cpu_milli=4000),))
    trace = _trace(
        tmp_path,
        '{"name": "first", "arrival": 0, "duration": 100, "gpu": 1, "gpumem": 1000, '
        '"cpu_milli": 1000, "init_containers": [{"requests": {"cpu": "4"}}], '
        '"init_duration": 10}',
        '{"name": "second", "arrival": 1, "duration": 10, "gpu": 1, "gpumem": 1000, '
        '"cpu_milli": 1000}')
    res = simulate(cluster, trace, EngineConfig(engine=engine))
    assert res.engine == engine
    ev = res.events
    assert ev[(ev.pod == "second") & (ev.event == "bind")].time.tolist() == [100.0]
    said = [m for m in ev[ev.pod == "second"].message.tolist() if isinstance(m, str)]
    assert any("Insufficient cpu" in m for m in said), said


def test_cli_init_container_usage_overrides_the_cluster_file():
    """--init-container-usage (run/compare) replaces scheduler.init_container_usage."""
    from hamisim.cli import _spec, build_parser
    from hamisim.studies.runs import _cluster
    args = build_parser().parse_args(["run", "--init-container-usage", "corrected"])
    spec = _spec(args)
    assert spec.init_container_usage == "corrected"
    assert _cluster(spec).scheduler.init_container_usage == "corrected"
    plain = _spec(build_parser().parse_args(["run"]))
    assert _cluster(plain).scheduler.init_container_usage == "hami-v2.10"


def test_compare_init_container_usage_list_gives_a_run_per_value():
    """compare --init-container-usage hami-v2.10,corrected: one spec (and label) per value."""
    from hamisim.cli import build_parser
    from hamisim.studies.runs import RunSpec, _run_names, _cluster, policy_grid
    args = build_parser().parse_args(["compare", "--init-container-usage",
                                      "hami-v2.10,corrected"])
    assert args.init_container_usage == ["hami-v2.10", "corrected"]
    specs = policy_grid([None], [None], 1, RunSpec(), args.init_container_usage)
    assert [s.init_container_usage for s in specs] == ["hami-v2.10", "corrected"]
    names = _run_names(specs, _cluster(specs[0]).scheduler)
    assert len(set(names)) == 2 and names[1].endswith("init_corrected-seed0")
    assert policy_grid([None], [None], 2, RunSpec())[1].init_container_usage is None
