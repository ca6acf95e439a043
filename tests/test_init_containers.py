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
