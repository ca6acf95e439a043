"""`hamisim explain`: the reference's steps, recorded, agree with every backend."""
from __future__ import annotations

import json
import random
from collections import Counter

import pandas as pd
import pytest

from hamisim import Card, Cluster, Container, Node, Pod, SchedulerConfig
from hamisim.cli import main
from hamisim.explain import (
    NOT_VISITED,
    PICKED,
    STAGE_HAMI,
    explain_pod,
    explain_with,
    format_text,
)
from hamisim.hami.decision import parse_reason
from hamisim.hami.reference import ReferenceScheduler
from hamisim.io.bundled import workloads_dir
from hamisim.io.kubeimport import import_kubectl, write_import
from hamisim.sim.backend import make_scheduler

EXAMPLE = workloads_dir() / "kubectl-example"
LLAMA = "ml/finetune-llama-0"
LLAMA_MESSAGE = ("0/4 nodes are available: 1 1/4 CardCordoned, 3/4 CardInsufficientMemory, "
                 "1 2/2 CardInsufficientMemory, 1 Insufficient cpu, 1 node unregistered. "
                 "preemption: 0/4 nodes are available: 4 No preemption victims found for "
                 "incoming pod.")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("imp") / "imp"
    res = import_kubectl(EXAMPLE / "nodes.json", EXAMPLE / "pods.json")
    files = write_import(res, out)
    return res, files


def _check_cards_add_up(exp) -> None:
    """Per node, the failing container's card verdicts are the node's reason."""
    for n in exp.nodes:
        if n.stage != STAGE_HAMI:
            continue
        for c in n.containers:
            if c.request is None:
                continue
            if c.fit:
                assert sorted(v.id for v in c.cards if v.verdict == PICKED) == \
                    sorted(p.uuid for p in c.picks)
                continue
            assert not n.fit and c is n.containers[-1]
            if "/" in c.reason:            # a Fit histogram, not a bare node reason
                assert c.verdict_counts() == parse_reason(c.reason)
                assert c.reason == n.reasons[0]
            visits = [v.visit for v in c.cards if v.visit is not None]
            assert visits == list(range(1, len(visits) + 1))
            # Fit walks the sorted list from its end
            assert [v.position for v in c.cards if v.position] == \
                list(range(len(c.sorted), 0, -1))[:len([v for v in c.cards if v.position])]


def test_example_pending_pod_matches_the_engine_and_kubectl(imported):
    res, files = imported
    llama = res.pending[0].pod
    assert llama.name == LLAMA
    exp = explain_pod(res.cluster, llama, res.state)
    assert exp.message == LLAMA_MESSAGE
    # the message the cluster itself recorded for this pod (the dump's condition)
    pods = json.loads((EXAMPLE / "pods.json").read_text())["items"]
    cond = next(p for p in pods if p["metadata"]["name"] == "finetune-llama-0")
    assert cond["status"]["conditions"][0]["message"] == exp.message
    # both backends, same state: same message and per-node reasons
    for backend in ("kernel", "reference"):
        sched = make_scheduler(res.cluster, backend)
        res.state.adopt_into(sched, res.cluster)
        d = sched.schedule(llama)
        # the backend's FitError text; kube-scheduler's PostFilter adds the rest
        assert exp.message == d.message + " " + exp.postfilter
        assert d.node_reasons == exp.node_reasons()
    _check_cards_add_up(exp)
    node2 = next(n for n in exp.nodes if n.name == "gpu-node-2")
    verdicts = [(v.index, v.visit, v.verdict) for v in node2.containers[0].cards]
    # cordoned card 3 scores 0 and is visited first (spread: highest score first)
    assert verdicts == [(3, 1, "CardCordoned"), (0, 2, "CardInsufficientMemory"),
                        (2, 3, "CardInsufficientMemory"), (1, 4, "CardInsufficientMemory")]
    assert exp.hami_events() == [
        "1 nodes CardCordoned(gpu-node-2)",
        "2 nodes CardInsufficientMemory(gpu-node-1,gpu-node-2)",
        "no available node, 3 nodes do not meet"]
    kube = next(n for n in exp.nodes if n.name == "gpu-node-3")
    assert kube.reasons == ["Insufficient cpu"] and "1800m of 15900m free" in kube.detail


def test_explain_matches_the_engine_run_of_the_example(imported, tmp_path):
    res, files = imported
    out = tmp_path / "run"
    assert main(["run", str(files["cluster"]), str(files["pending"]), "--state",
                 str(files["state"]), "--out", str(out), "--format", "csv",
                 "--events", "all"]) == 0     # a row per attempt, as explain counts them
    ev = pd.read_csv(out / "events.csv")
    tries = ev[(ev["pod"] == LLAMA) & (ev["event"] == "unschedulable")]
    # HAMi rejects it at 0; kube-scheduler's status write retries it at 1 s
    assert tries["time"].tolist() == [0.0, 1.0]
    row = tries.iloc[-1]          # explain's default: the last attempt
    assert row["message"] == LLAMA_MESSAGE
    from hamisim.explain import explain_run
    exp = explain_run(out, "finetune-llama-0")          # short names resolve
    assert exp.message == row["message"] and exp.context["event_row"] == row.name
    # a pod that was bound: the explanation ends in the same bind
    carol = explain_run(out, "default/jupyter-carol-0")
    bind = ev[(ev["pod"] == "default/jupyter-carol-0") & (ev["event"] == "bind")].iloc[0]
    assert (carol.decision.node, carol.decision.devices) == (bind["node"], bind["devices"])
    assert carol.chosen == bind["node"] and carol.ranking[-1] == bind["node"]


def test_cli_explain_text_and_json(imported, capsys):
    res, files = imported
    args = ["explain", str(files["cluster"]), str(files["pending"]), "--pod", LLAMA,
            "--state", str(files["state"])]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"Warning  FailedScheduling  {LLAMA_MESSAGE}" in text
    assert "Warning  FilteringFailed   2 nodes CardInsufficientMemory(gpu-node-1,gpu-node-2)" \
        in text
    assert "CardInsufficientMemory (free 10960 MiB < 32000 MiB needed)" in text
    assert "CardCordoned (listed in hami.io/device-cordon)" in text
    assert main(args + ["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pod"] == LLAMA and doc["result"]["message"] == LLAMA_MESSAGE
    assert doc["result"]["bound"] is False
    node1 = next(n for n in doc["nodes"] if n["node"] == "gpu-node-1")
    assert [c["verdict"] for c in node1["containers"][0]["cards"]] == \
        ["CardInsufficientMemory"] * 2
    assert node1["reasons"] == ["2/2 CardInsufficientMemory"]


def test_cli_explain_a_kubernetes_pod_manifest(imported, tmp_path, capsys):
    res, files = imported
    pods = json.loads((EXAMPLE / "pods.json").read_text())["items"]
    one = next(p for p in pods if p["metadata"]["name"] == "finetune-llama-0")
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(one, indent=2))
    assert main(["explain", str(files["cluster"]), str(path), "--state", str(files["state"]),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["message"] == LLAMA_MESSAGE
    # the whole pod list works too, with --pod
    assert main(["explain", str(files["cluster"]), str(EXAMPLE / "pods.json"), "--pod",
                 "finetune-llama-0", "--state", str(files["state"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["message"] == LLAMA_MESSAGE
    # ... but a pod of the state is already running: explaining it again is an error
    assert main(["explain", str(files["cluster"]), str(EXAMPLE / "pods.json"), "--pod",
                 "jupyter-alice-0", "--state", str(files["state"])]) == 2
    assert "is running in the initial state" in capsys.readouterr().err


def test_cli_explain_exit_codes(imported, tmp_path, capsys):
    res, files = imported
    c, t, s = str(files["cluster"]), str(files["pending"]), str(files["state"])
    cases = [
        ["explain"],                                            # nothing to explain
        ["explain", c],                                         # no pod
        ["explain", c, t, "--state", s],                        # several pods, no --pod
        ["explain", c, t, "--pod", "nope", "--state", s],       # unknown pod
        ["explain", "--run", str(tmp_path)],                    # --run without --pod
        ["explain", "--run", str(tmp_path), "--pod", "x"],      # not a results folder
        ["explain", c, t, "--pod", LLAMA, "--attempt", "1"],    # --attempt needs --run
    ]
    for args in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("hamisim: ") and "Traceback" not in err


def test_explain_run_checks_its_inputs(imported, tmp_path, capsys):
    res, files = imported
    work = tmp_path / "w"
    write_import(import_kubectl(EXAMPLE / "nodes.json", EXAMPLE / "pods.json"), work)
    out = tmp_path / "run"
    assert main(["run", str(work / "cluster.yaml"), str(work / "pending.jsonl"), "--state",
                 str(work / "state.yaml"), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["explain", "--run", str(out), "--pod", LLAMA, "--attempt", "3"]) == 2
    assert "has 2 attempt(s)" in capsys.readouterr().err
    assert main(["explain", "--run", str(out), "--pod", "default/jupyter-alice-0"]) == 2
    assert "is running from the initial state" in capsys.readouterr().err
    (work / "state.yaml").write_text((work / "state.yaml").read_text() + "\n")
    assert main(["explain", "--run", str(out), "--pod", LLAMA]) == 2
    assert "changed since the run" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# random clusters: the explanation is the kernel's decision, card by card

POLICIES = ["spread", "binpack", "mutex", "mutex,binpack", "binpack,numa", "topology-aware",
            "spread,numa"]


def _random_cluster(rng: random.Random) -> Cluster:
    nodes = []
    for i in range(rng.randint(1, 4)):
        k = rng.randint(1, 4)
        cards = tuple(Card(f"G{i}-{j}", j, count=rng.choice([2, 4, 10]),
                           devmem=rng.choice([8000, 16000]), devcore=100,
                           type=rng.choice(["NVIDIA-Tesla T4", "NVIDIA A10", "NVIDIA"]),
                           numa=j % 2, health=rng.random() > 0.1) for j in range(k))
        cordon = frozenset(c.id for c in cards if rng.random() < 0.1)
        pair = {a.id: {b.id: rng.choice([0, 50, 100]) for b in cards if b is not a}
                for a in cards}
        nodes.append(Node(f"node-{i}", cards if rng.random() > 0.1 else (),
                          cpu_milli=rng.choice([None, 8000]), pair_scores=pair, cordon=cordon))
    return Cluster(tuple(nodes), SchedulerConfig(
        gpu_scheduler_policy=rng.choice(POLICIES),
        node_scheduler_policy=rng.choice(["binpack", "spread"])))


def _random_pod(rng: random.Random, name: str) -> Pod:
    def container():
        kind = rng.random()
        if kind < 0.25:
            return Container({"nvidia.com/gpu": rng.choice([1, 2, 3])})
        if kind < 0.5:
            return Container({"nvidia.com/gpu": rng.choice([1, 2]),
                              "nvidia.com/gpumem-percentage": rng.choice([20, 50, 80]),
                              "nvidia.com/gpucores": rng.choice([0, 20, 60])})
        if kind < 0.9:
            return Container({"nvidia.com/gpu": rng.choice([1, 2]),
                              "nvidia.com/gpumem": rng.choice([1000, 4000, 9000])})
        return Container({})
    ann = {}
    if rng.random() < 0.4:
        ann["hami.io/gpu-scheduler-policy"] = rng.choice(POLICIES)
    if rng.random() < 0.15:
        ann["nvidia.com/numa-bind"] = "true"
    if rng.random() < 0.1:
        ann["nvidia.com/use-gputype"] = "A10"
    init = (container(),) if rng.random() < 0.15 else ()
    return Pod(name, tuple(container() for _ in range(rng.choice([1, 1, 2]))), init, ann,
               cpu_milli=rng.choice([0, 1000, 6000]))


@pytest.mark.parametrize("seed", range(60))
def test_explanation_is_the_kernels_decision(seed):
    rng = random.Random(seed)
    cluster = _random_cluster(rng)
    kernel = make_scheduler(cluster, "kernel")
    plain = ReferenceScheduler(cluster)
    traced = ReferenceScheduler(cluster)
    for j in range(rng.randint(3, 12)):
        pod = _random_pod(rng, f"p{j}")
        try:
            want = kernel.schedule(pod)
        except ValueError as err:
            want = err
        exp = explain_with(traced, pod)
        try:
            untraced = plain.schedule(pod)       # tracing changes nothing
        except ValueError:
            untraced = None
        if isinstance(want, ValueError):
            assert exp.error == str(want)
            continue
        assert exp.decision == want == untraced
        if not want.bound:       # all priorities 0: nobody to preempt anywhere
            assert exp.message == (f"{want.message} preemption: 0/{len(cluster.nodes)} nodes "
                                   f"are available: {want.n_potential} No preemption victims "
                                   "found for incoming pod"
                                   + (f", {len(cluster.nodes) - want.n_potential} Preemption "
                                      "is not helpful for scheduling."
                                      if want.n_potential < len(cluster.nodes) else "."))
        if want.bound:
            assert exp.chosen == want.node
        else:   # a bound Decision records no rejected nodes
            assert exp.node_reasons() == want.node_reasons
        _check_cards_add_up(exp)
        text = format_text(exp)
        assert pod.name in text
        json.dumps(exp.to_json())                # serialisable
        # nodes HAMi never reached are listed as such, not silently dropped
        assert {n.name for n in exp.nodes} == {n.name for n in cluster.nodes}
    assert kernel.usage_by_card() == traced.usage_by_card()


def test_not_visited_cards_after_an_early_fit():
    card = dict(count=10, devmem=16000, devcore=100, type="NVIDIA-Tesla T4")
    cluster = Cluster((Node("n", tuple(Card(f"G{j}", j, **card) for j in range(3))),))
    exp = explain_pod(cluster, Pod("p", (Container({"nvidia.com/gpu": 1,
                                                     "nvidia.com/gpumem": 100}),)))
    cards = exp.nodes[0].containers[0].cards
    # three idle cards tie; the stable sort keeps them, Fit starts from the last
    assert [(v.id, v.visit, v.verdict) for v in cards] == [
        ("G2", 1, PICKED), ("G1", None, NOT_VISITED), ("G0", None, NOT_VISITED)]
    assert exp.decision.devices == "G2,NVIDIA,100,0:;"
    assert Counter(v.position for v in cards) == Counter([3, 2, 1])


# ---------------------------------------------------------------------------
# hand-worked cases: every number below is computed from HAMi's rules by hand
# (HAMI-SEMANTICS §3.1 card score, §3.2 spread order, §4 Fit from the end of
# the list, §5.3 node score), not taken from hamisim

def _two_t4s(usage_a, usage_b) -> tuple[Cluster, object]:
    from hamisim.hami.decision import Pick
    card = dict(count=10, devmem=16000, devcore=100, type="NVIDIA-Tesla T4")
    cluster = Cluster((Node("n", (Card("A", 0, **card), Card("B", 1, **card))),),
                      SchedulerConfig(gpu_scheduler_policy="spread"))
    sched = ReferenceScheduler(cluster)
    for name, card_id, usage in (("a", "A", usage_a), ("b", "B", usage_b)):
        if usage:
            sched.adopt(name, 0, [[Pick(card_id, usage[0], usage[1], 0)]])
    return cluster, sched


def test_hand_worked_spread_fit_from_the_end():
    # A holds one pod of 6000 MiB and 30 cores, B is idle. Card score (the
    # request's type NVIDIA is not the card's, so only usage counts):
    # A = 10 * ((1/10 + 30/100) + 6000/16000) = 7.75, B = 0. Spread puts the
    # higher score first: [A, B]; Fit starts at the end: B, 16000 free >= 12000.
    _, sched = _two_t4s((6000, 30), None)
    exp = explain_with(sched, Pod("p", (Container({"nvidia.com/gpu": 1,
                                                    "nvidia.com/gpumem": 12000}),)))
    node = exp.nodes[0]
    cards = {v.id: v for v in node.containers[0].cards}
    assert cards["A"].score == pytest.approx(7.75) and cards["B"].score == 0
    assert (cards["A"].position, cards["B"].position) == (1, 2)
    assert (cards["B"].visit, cards["B"].verdict) == (1, PICKED)
    assert (cards["A"].visit, cards["A"].verdict) == (None, NOT_VISITED)
    # node score before the pod: 10 * ((1/20 + 30/200) + 6000/32000) = 3.875
    assert node.score == pytest.approx(3.875)
    assert exp.decision.devices == "B,NVIDIA,12000,0:;"


def test_hand_worked_memory_failure_with_details():
    # A holds 6000 MiB (10000 free), B 8000 MiB (8000 free): 12000 fits neither.
    # Scores: A = 10 * (0.1 + 0.375) = 4.75, B = 10 * (0.1 + 0.5) = 6.0; spread
    # order [B, A]; Fit visits A first, then B.
    _, sched = _two_t4s((6000, 0), (8000, 0))
    exp = explain_with(sched, Pod("p", (Container({"nvidia.com/gpu": 1,
                                                    "nvidia.com/gpumem": 12000}),)))
    cards = {v.id: v for v in exp.nodes[0].containers[0].cards}
    assert (cards["A"].visit, cards["B"].visit) == (1, 2)
    assert cards["A"].detail == "free 10000 MiB < 12000 MiB needed"
    assert cards["B"].detail == "free 8000 MiB < 12000 MiB needed"
    assert exp.nodes[0].reasons == ["2/2 CardInsufficientMemory"]
    assert exp.message.startswith("0/1 nodes are available: 1 2/2 CardInsufficientMemory.")


def test_explain_shows_a_better_linked_set(tmp_path, capsys):
    # the article's 4-GPU box under spread: GPU 2 holds 20000 MiB, so a pod of
    # two 30000 MiB cards gets GPUs 3 and 1 (spread's order), across the sockets
    # (score 10), while GPUs 0 and 1 share a switch (score 50): GPU 0 was free
    # but Fit had its two cards first
    (tmp_path / "c.yaml").write_text("nodes:\n  - {name: box, topology: pcie-4gpu}\n")
    (tmp_path / "s.yaml").write_text(
        'pods:\n  - {name: small, node: box, devices: "GPU-box-2,NVIDIA,20000,30:;"}\n')
    (tmp_path / "p.yaml").write_text("name: p\ngpu: 2\ngpumem: 30000\n")
    args = ["explain", str(tmp_path / "c.yaml"), str(tmp_path / "p.yaml"), "--state",
            str(tmp_path / "s.yaml")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "Placement on box: GPU 3 + GPU 1, mean pair score 10" in text
    assert "GPU 3 - GPU 1: across sockets, no NVLink (score 10)" in text
    assert "better linked: GPU 0 + GPU 1 (mean pair score 50)" in text
    assert "GPU 0: free enough, but Fit had its cards before reaching it" in text
    assert main([*args, "--json"]) == 0
    pl = json.loads(capsys.readouterr().out)["placement"]
    assert pl["cards"] == ["GPU-box-3", "GPU-box-1"] and pl["mean_pair_score"] == 10
    assert pl["best"]["cards"] == ["GPU-box-0", "GPU-box-1"]
    assert pl["best"]["needed"] == [{"card": "GPU-box-0", "verdict": "not visited",
                                     "detail": "Fit stopped before it"}]


def test_explain_replays_a_victim_through_its_grace_period(tmp_path):
    """A victim with a grace period holds its CPU and card until its depart
    row, not from its preempt row: high's attempts in between fail in the
    replay as in the run (not eligible: a terminating pod on its node)."""
    (tmp_path / "c.yaml").write_text(
        "nodes:\n"
        "  - {name: n1, cpu_milli: 4000, devices: [{id: GPU-n1, devmem: 16000, "
        "type: NVIDIA-Tesla T4}]}\n"
        "  - {name: n2, cpu_milli: 1000}\n")
    (tmp_path / "t.csv").write_text(
        "name,arrival,duration,gpu,gpumem,cpu_milli,priority,termination_grace_period\n"
        "low,0,1000,1,4000,3000,0,30\n"
        "blip,0.5,9.5,0,,100,0,0\n"          # its departure at 10 s retries high
        "high,1,10,1,4000,2000,10,0\n")
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--out", str(out),
                 "--format", "csv"]) == 0
    ev = pd.read_csv(out / "events.csv")
    low = ev[ev["pod"] == "low"]
    assert list(zip(low["time"], low["event"]))[-2:] == [(1.0, "preempt"), (31.0, "depart")]
    tries = ev[(ev["pod"] == "high") & (ev["event"] == "unschedulable") & (ev["time"] > 1.0)]
    assert len(tries) and tries["message"].str.endswith(
        "not eligible due to a terminating pod on the nominated node.").all()
    from hamisim.explain import explain_run
    exp = explain_run(out, "high")                   # its last failed attempt
    assert exp.message == tries["message"].iloc[-1]
    bound = explain_run(out, "high", attempt=-1)     # and its bind at 31 s
    bind = ev[(ev["pod"] == "high") & (ev["event"] == "bind")].iloc[0]
    assert bind["time"] == 31.0 and bound.decision.node == "n1"
