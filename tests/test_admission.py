"""HAMi's admission webhook: a pod it refuses is never created, so it is never
scheduled (``pkg/scheduler/webhook.go`` at v2.10.0; the text is what
kube-apiserver answers for the webhook's HTTP 500: its ``ToStatusErr`` puts
``admission webhook "vgpu.hami.io" denied the request: `` before the webhook's
own text, nothing else)."""
from __future__ import annotations

import dataclasses

import pytest

from hamisim.cluster import Card, Cluster, Node
from hamisim.io.scenariofile import load_scenario
from hamisim.pods import AdmissionDenied, Container, Pod, admission_error, admit
from hamisim.sim.engine import EngineConfig, simulate
from hamisim.studies.scenario import run_scenario
from hamisim.workload import Trace, TracePod

CLUSTER = Cluster((Node("n", (Card("GPU-A", 0, devmem=16000, type="NVIDIA-Tesla T4"),)),))
DENIED = ('admission webhook "vgpu.hami.io" denied the request: '
          "invalid nvidia.com/gpumem-percentage value {v} in container {c}: must be an "
          "integer between 0 and 100")


def _pct(name: str, pct: int, init: bool = False) -> Pod:
    c = Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": pct})
    return Pod(name, (Container({"nvidia.com/gpu": 1}), c)) if not init else \
        Pod(name, (Container(),), init_containers=(c,))


def test_the_webhooks_message_names_the_container():
    assert admission_error(_pct("p", 150)) == DENIED.format(v=150, c="container-1")
    assert admission_error(_pct("p", 101, init=True)) == DENIED.format(v=101, c="init-0")
    assert admission_error(_pct("p", 100)) is None
    with pytest.raises(AdmissionDenied):
        admit(_pct("p", 150), CLUSTER.scheduler)


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_refused_pod_is_rejected_once_and_never_attempted(engine):
    trace = Trace.from_pods("t", [TracePod(_pct("bad", 150), 1.0, 10.0),
                                  TracePod(_pct("good", 50), 2.0, 10.0)])
    res = simulate(CLUSTER, trace, EngineConfig(engine=engine))
    ev = res.events
    bad = ev[ev.pod == "bad"]
    assert bad.event.tolist() == ["arrive", "rejected"]
    assert bad.message.iloc[1] == DENIED.format(v=150, c="container-1")
    assert res.summary["rejected"] == 1 and res.summary["abandoned"] == 1
    assert res.summary["attempts"] == 1                # only "good" was tried
    row = res.pods.set_index("pod").loc["bad"]
    assert row["attempts"] == 0 and row["abandon"] == 1.0


def test_both_engines_write_the_same_rejections():
    pods = [TracePod(_pct(f"p{k}", 150 if k % 3 == 0 else 30), float(k), 5.0)
            for k in range(30)]
    trace = Trace.from_pods("t", pods)
    a = simulate(CLUSTER, trace, EngineConfig(engine="python"))
    b = simulate(CLUSTER, trace, EngineConfig(engine="compiled"))
    assert a.events.equals(b.events) and a.pods.equals(b.pods)
    assert a.summary == b.summary


def test_a_scenario_expects_rejected(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "nodes: [{name: n, devices: [{id: GPU-A, devmem: 16000, type: NVIDIA-Tesla T4}]}]\n"
        "steps:\n"
        "  - create: {name: bad, gpu: 1, gpumem_percentage: 150}\n"
        "  - expect: {bad: rejected}\n"
        "  - expect_message:\n"
        "      bad: 'admission webhook \"vgpu.hami.io\" denied the "
        "request: invalid nvidia.com/gpumem-percentage value 150 in container container-0: "
        "must be an integer between 0 and 100'\n")
    for backend in ("kernel", "reference"):
        result = run_scenario(load_scenario(path), backend, check=True)
        assert result.ok, result.expectations
        assert [e.event for e in result.events] == ["rejected"]


def test_pods_that_pass_admission_are_unchanged():
    pod = dataclasses.replace(_pct("p", 0))
    assert admit(pod, CLUSTER.scheduler).containers[1].limits["nvidia.com/gpumem-percentage"] == 0
