"""Initial states: pods running before the first event (state files, engine, CLI)."""
from __future__ import annotations

import json
import re
import textwrap

import pandas as pd
import pytest

from hamisim import Card, Cluster, Container, Node, Pod
from hamisim.cli import main
from hamisim.errors import InputError
from hamisim.hami.decision import Pick
from hamisim.hami.reference import collapsed_usage
from hamisim.io.initialstate import load_state
from hamisim.io.scenariofile import load_scenario
from hamisim.sim.backend import make_scheduler
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.sim.recorder import INITIAL_STATE_MESSAGE
from hamisim.studies.runs import RunSpec, run
from hamisim.studies.scenario import run_scenario
from hamisim.workload import TracePod

BACKENDS = ["kernel", "reference"]

CLUSTER_YAML = """\
nodes:
  - name: n1
    cpu_milli: 8000
    devices:
      - {id: GPU-A, index: 0, count: 10, devmem: 15360, devcore: 100, type: NVIDIA-Tesla T4}
      - {id: GPU-B, index: 1, count: 10, devmem: 15360, devcore: 100, type: NVIDIA-Tesla T4}
  - name: n2
    cpu_milli: 8000
    devices:
      - {id: GPU-C, index: 0, count: 10, devmem: 15360, devcore: 100, type: NVIDIA-Tesla T4}
"""


def _cluster() -> Cluster:
    card = dict(count=10, devmem=15360, devcore=100, type="NVIDIA-Tesla T4")
    return Cluster((Node("n1", (Card("GPU-A", 0, **card), Card("GPU-B", 1, **card)),
                         cpu_milli=8000),
                    Node("n2", (Card("GPU-C", 0, **card),), cpu_milli=8000)))


def _files(tmp_path, state: str, cluster: str = CLUSTER_YAML):
    c = tmp_path / "cluster.yaml"
    c.write_text(cluster)
    s = tmp_path / "state.yaml"
    s.write_text(textwrap.dedent(state))
    return c, s


STATE = """\
    pods:
      - name: busy-a
        node: n1
        devices: "GPU-A,NVIDIA,15360,100:;"
        cpu_milli: 2000
        departure: 50
      - name: busy-bc
        node: n1
        devices: "GPU-B,NVIDIA,15360,100:;"
      - name: n2-pod
        node: n2
        devices: "GPU-C,NVIDIA,2000,0:;GPU-C,NVIDIA,3000,10:;"
        init_containers: 1
        cpu_milli: 1000
        memory_mib: 512
      - name: cpu-only
        node: n2
        cpu_milli: 500
"""


def test_load_state_decodes_as_hamis_informer(tmp_path):
    c, s = _files(tmp_path, STATE)
    state = load_state(s, _cluster())
    assert [p.name for p in state.pods] == ["busy-a", "busy-bc", "n2-pod", "cpu-only"]
    a = state.pods[0]
    assert (a.node, a.containers, a.cpu_milli, a.departure) == (
        "n1", [[Pick("GPU-A", 15360, 100, 0)]], 2000, 50.0)
    n2 = state.pods[2]
    assert n2.n_init == 1 and n2.containers == [[Pick("GPU-C", 2000, 0, 0)],
                                                [Pick("GPU-C", 3000, 10, 0)]]
    # the init container's peak against the app container's sum: one slot
    assert collapsed_usage(n2.containers, n2.n_init) == {"GPU-C": (1, 3000, 10)}
    assert state.pods[3].containers == [] and state.warnings == []


def test_init_finished_keeps_only_the_app_containers(tmp_path):
    c, s = _files(tmp_path, """\
        pods:
          - {name: p, node: n2, devices: "GPU-C,NVIDIA,9000,0:;GPU-C,NVIDIA,3000,10:;",
             init_containers: 1, init_finished: true}
    """)
    p = load_state(s, _cluster()).pods[0]
    assert collapsed_usage(p.containers, p.n_init) == {"GPU-C": (1, 3000, 10)}


def test_overcommitted_cards_warn(tmp_path):
    c, s = _files(tmp_path, """\
        pods:
          - {name: p, node: n2, devices: "GPU-C,NVIDIA,9000,0:;"}
          - {name: q, node: n2, devices: "GPU-C,NVIDIA,9000,0:;"}
    """)
    state = load_state(s, _cluster())
    assert len(state.warnings) == 1 and "memory MiB 18000/15360" in state.warnings[0]


@pytest.mark.parametrize("body,line,problem", [
    ("pods:\n  - {name: p, node: n9}\n", 2, "node 'n9' is not in the cluster"),
    ("pods:\n  - name: p\n    node: n1\n    devices: 'GPU-C,NVIDIA,1,0:;'\n", 4,
     "names card 'GPU-C', which is not a card of node 'n1'"),
    ("pods:\n  - {name: p, node: n1}\n  - {name: p, node: n2}\n", 3, "duplicate pod name"),
    ("pods:\n  - {name: p, node: n1, devices: 'GPU-A,NVIDIA,-5,0:;'}\n", 2,
     "memory '-5' is not a non-negative integer"),
    ("pods:\n  - {name: p, node: n1, departure: -1}\n", 2, "'departure' must be a finite"),
    ("pods:\n  - {name: p, node: n1, gpu: 1}\n", 2, "unknown key 'gpu'"),
    ("pod: []\n", 1, "unknown key 'pod'"),
])
def test_bad_state_is_located(tmp_path, body, line, problem):
    c, s = _files(tmp_path, body)
    with pytest.raises(InputError) as info:
        load_state(s, _cluster())
    assert (info.value.path, info.value.line) == (str(s), line)
    assert problem in info.value.problem


# ---------------------------------------------------------------------------
# the engine

def _trace(*pods, arrival=10.0):
    return [TracePod(p, arrival) for p in pods]


def _whole(name: str, cpu: int = 0) -> Pod:
    return Pod(name, (Container({"nvidia.com/gpu": 1}),), cpu_milli=cpu)


@pytest.mark.parametrize("backend", BACKENDS)
def test_usage_before_the_first_event_is_the_adopted_pods(tmp_path, backend):
    c, s = _files(tmp_path, STATE)
    cluster = _cluster()
    state = load_state(s, cluster)
    res = simulate(cluster, _trace(Pod("late", (Container({"nvidia.com/gpu": 1,
                                                            "nvidia.com/gpumem": 100}),))),
                   EngineConfig(backend=backend), initial=state.pods)
    ts, ev = res.timeseries, res.events
    first = ts.iloc[0]
    assert first["time"] == 0.0
    want = {}
    for p in state.pods:
        for uuid, u in collapsed_usage(p.containers, p.n_init).items():
            want[uuid] = tuple(a + b for a, b in zip(want.get(uuid, (0, 0, 0)), u))
    assert first["hami_vgpu_slots_allocated"] == sum(u[0] for u in want.values()) == 3
    assert first["hami_gpu_memory_allocated_bytes"] == \
        sum(u[1] for u in want.values()) * 2**20
    assert first["hami_gpu_core_allocated"] == sum(u[2] for u in want.values())
    assert (first["pods_running"], first["pods_pending"]) == (4, 0)
    # the events log every initial pod before anything else happens
    initial = ev[ev["message"] == INITIAL_STATE_MESSAGE]
    assert list(initial["pod"]) == [p.name for p in state.pods]
    assert set(ev.iloc[:8]["event"]) == {"arrive", "bind"} and (ev.iloc[:8]["time"] == 0).all()
    assert res.summary["initial_pods"] == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_pending_pod_waits_for_a_departure(tmp_path, backend):
    c, s = _files(tmp_path, STATE)
    cluster = _cluster()
    state = load_state(s, cluster)
    # every card is taken: A and B whole, C partly
    res = simulate(cluster, _trace(_whole("w", cpu=1000), arrival=0.0),
                   EngineConfig(backend=backend), initial=state.pods)
    ev = res.events[res.events["pod"] == "w"]
    # tried at 0, at 1 s (kube-scheduler's first status write on w requeues it
    # after its backoff), then when busy-a departs
    assert list(ev["event"]) == ["arrive", "unschedulable", "unschedulable", "bind"]
    assert list(ev["time"]) == [0.0, 0.0, 1.0, 50.0]
    # a whole card is 100 % of its memory: the held memory rejects every card
    assert ev.iloc[1]["message"] == (
        "0/2 nodes are available: 1 1/1 CardInsufficientMemory, 1 2/2 CardInsufficientMemory. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")
    # busy-a departs at 50 and w takes its card then
    bind = ev.iloc[3]
    assert (bind["time"], bind["node"], bind["devices"]) == (50.0, "n1", "GPU-A,NVIDIA,15360,100:;")
    depart = res.events[res.events["event"] == "depart"]
    assert list(zip(depart["pod"], depart["time"])) == [("busy-a", 50.0)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_a_departure_it_stays_pending(tmp_path, backend):
    c, s = _files(tmp_path, STATE.replace("        departure: 50\n", ""))
    cluster = _cluster()
    res = simulate(cluster, _trace(_whole("w"), arrival=0.0), EngineConfig(backend=backend),
                   initial=load_state(s, cluster).pods)
    assert res.summary["pending_at_end"] == 1 and res.summary["bound"] == 0
    assert not (res.events["event"] == "depart").any()


def test_adopted_usage_equals_scheduled_usage(tmp_path):
    """Adopting a placement leaves the scheduler where scheduling it would."""
    cluster = _cluster()
    pod = Pod("p", (Container({"nvidia.com/gpu": 2, "nvidia.com/gpumem": 1000}),),
              cpu_milli=300)
    for backend in BACKENDS:
        a = make_scheduler(cluster, backend)
        d = a.schedule(pod)
        b = make_scheduler(cluster, backend)
        c, s = _files(tmp_path, f"pods:\n  - {{name: p, node: {d.node}, devices: "
                                f"'{d.devices}', cpu_milli: 300}}\n")
        load_state(s, cluster).adopt_into(b, cluster)
        assert a.usage_by_card() == b.usage_by_card()


# ---------------------------------------------------------------------------
# run / compare / scenario

def _trace_file(tmp_path, rows):
    t = tmp_path / "trace.jsonl"
    t.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return t


def test_run_with_state(tmp_path, capsys):
    c, s = _files(tmp_path, STATE)
    t = _trace_file(tmp_path, [{"name": "w", "arrival": 0, "gpu": 1}])
    out = tmp_path / "out"
    # --state replays the trace as traced (it has no lifetimes to re-time)
    assert main(["run", str(c), str(t), "--state", str(s), "--out", str(out), "--format",
                 "csv", "--check"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"running from the initial state +4\n", text)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"]["state"] == "state.yaml" and summary["inputs"]["load"] is None
    assert summary["results"]["initial_pods"] == 4
    ev = pd.read_csv(out / "events.csv")
    # its two failed attempts (the same message) are one aggregated row
    w = ev[ev["pod"] == "w"]
    assert w["event"].tolist() == ["arrive", "unschedulable", "bind"]
    assert w["count"].tolist() == [1, 2, 1]


def test_compare_with_state(tmp_path, capsys):
    c, s = _files(tmp_path, STATE)
    t = _trace_file(tmp_path, [{"name": "w", "arrival": 0, "gpu": 1, "gpumem": 1000}])
    assert main(["compare", str(c), str(t), "--state", str(s), "--gpu-policy", "spread",
                 "--gpu-policy", "binpack", "--out", str(tmp_path / "cmp"), "--format",
                 "csv"]) == 0
    table = pd.read_csv(tmp_path / "cmp" / "compare.csv")
    assert list(table["bound"]) == [1, 1] and list(table["initial_pods"]) == [4, 4]


def test_trace_pod_named_like_an_initial_pod(tmp_path, capsys):
    c, s = _files(tmp_path, STATE)
    t = _trace_file(tmp_path, [{"name": "busy-bc", "arrival": 0, "gpu": 1}])
    assert main(["run", str(c), str(t), "--state", str(s), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{s}:7: pod 'busy-bc' is running in the initial state" in err
    with pytest.raises(InputError):
        run(RunSpec(cluster=str(c), trace=str(t), state=str(s), load=None))


def test_scenario_with_state(tmp_path, capsys):
    c, s = _files(tmp_path, STATE)
    scen = tmp_path / "scen.yaml"
    scen.write_text(CLUSTER_YAML + textwrap.dedent("""\
        steps:
          - create: {name: w, gpu: 1}
          - expect: {w: pending, busy-bc: GPU-B}
          - delete: busy-bc
          - expect: {w: GPU-B, busy-bc: deleted}
    """))
    assert main(["scenario", str(scen), "--state", str(s), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert all(x["ok"] for x in doc["expectations"]) and len(doc["expectations"]) == 4
    # without the state the pod binds at once, and 'busy-bc' is unknown
    assert main(["scenario", str(scen)]) == 2
    assert "pod 'busy-bc'" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["kernel", "reference"])
def test_a_scenario_with_state_passes_the_checker(tmp_path, backend):
    # the state's pods arrive and are adopted one by one, as in a run, so the
    # checker's books follow the scheduler's (the runner used to adopt all first)
    c, s = _files(tmp_path, STATE)
    scen = tmp_path / "scen.yaml"
    scen.write_text(CLUSTER_YAML + textwrap.dedent("""\
        steps:
          - create: {name: w, gpu: 1}
          - delete: busy-bc
          - expect: {w: GPU-B, busy-bc: deleted}
    """))
    result = run_scenario(load_scenario(scen, state=s), backend=backend, check=True)
    assert result.ok and [(e.pod, e.event) for e in result.events] == [
        ("w", "unschedulable"), ("busy-bc", "delete"), ("w", "bind")]


def test_a_pod_on_a_mig_card_needs_its_mig_allocations(tmp_path):
    from hamisim.mig import MigPlacement, MigProfile

    one_g = (MigProfile("1g.5gb", 4864, 15, 1, tuple(MigPlacement(i, 1) for i in range(7)), 7),)
    cluster = Cluster((Node("n", (Card("GPU-m", 0, 7, 40960, 100, "NVIDIA", mode="mig",
                                        mig_profiles=one_g),)),))
    path = tmp_path / "state.yaml"
    path.write_text("pods:\n  - name: p\n    node: n\n    devices: 'GPU-m,NVIDIA,4864,15:;'\n")
    with pytest.raises(InputError, match="holds MIG card 'GPU-m' but gives no 'mig_allocations'"):
        load_state(path, cluster)
    path.write_text("pods:\n  - name: p\n    node: n\n    devices: 'GPU-m,NVIDIA,4864,15:;'\n"
                    "    mig_allocations: '[{\"gpuUUID\": \"GPU-m\", \"profile\": \"1g.5gb\","
                    " \"placement\": {\"start\": 2, \"size\": 1}}]'\n")
    assert load_state(path, cluster).pods[0].containers == [
        [Pick("GPU-m", 4864, 15, 0, ("1g.5gb", 2, 1))]]
