"""`hamisim plan`: the capacity search against a brute-force sweep, targets, plan files."""
from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from test_sweep import make_inputs

from hamisim.cli import main
from hamisim.errors import InputError
from hamisim.studies.plan import Target, load_plan, run_plan
from hamisim.studies.sweep import load_sweep, run_sweep

WORKLOAD = "workload: {trace: trace.csv, offered_gpus: 10, n_pods: 300, max_lifetime: 600}\n"
POLICY = "policies: {node_scheduler_policy: binpack, gpu_scheduler_policy: spread}\n"
PLAN = ("cluster: {file: cluster.yaml, vary: gpu}\n" + WORKLOAD + POLICY + "seeds: 2\n"
        "target: pending_p99_s <= 200\nsearch: {min: 2, max: 12}\n")
BRUTE_FORCE = ("cluster: {file: cluster.yaml, vary: gpu, replicas: {from: 2, to: 12}}\n"
               + WORKLOAD + POLICY + "seeds: 2\n")


@pytest.fixture(scope="module")
def brute_force(tmp_path_factory):
    """Every size 2..12 (two seeds) as a sweep, and the plan file beside it."""
    folder = tmp_path_factory.mktemp("plan")
    sweep = make_inputs(folder, BRUTE_FORCE)
    (folder / "plan.yaml").write_text(PLAN)
    out = folder / "sweep-out"
    outcome = run_sweep(load_sweep(sweep), out, workers=2, progress=False)
    return folder, outcome


def smallest_meeting(table: pd.DataFrame, target: Target, agg: str = "max") -> int:
    worst = table.groupby("replicas")[target.metric].agg(agg)
    meeting = [r for r, v in worst.items() if target.met(v)]
    # the search assumes more nodes never hurt: check the fixture really is monotone
    assert meeting == list(range(min(meeting), 13))
    return min(meeting)


def test_plan_finds_the_brute_force_answer(brute_force, tmp_path):
    folder, sweep = brute_force
    plan = load_plan(folder / "plan.yaml")
    outcome = run_plan(plan, tmp_path / "out", workers=2, progress=False)
    expected = smallest_meeting(sweep.table, plan.target)
    assert expected == 5            # the fixture makes the answer an inner point
    assert outcome.answer == expected and outcome.exact
    assert outcome.bracket == (expected - 1, expected)
    curve = outcome.curve
    assert len(curve) <= 10 and curve["replicas"].is_monotonic_increasing
    assert curve["replicas"].iloc[-1] == 12 and curve["round"].min() == 1
    # every explored point is the sweep's value at that size (the same cells)
    worst = sweep.table.groupby("replicas")["pending_p99_s"].max()
    for _, row in curve.iterrows():
        assert row["pending_p99_s"] == worst[row["replicas"]]
        assert row["met"] == (row["pending_p99_s"] <= 200)
    assert 2 not in set(curve["replicas"])     # the overloaded bottom is never simulated
    doc = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert (doc["answer"], doc["exact"], doc["evaluations"]) == (5, True, len(curve))
    assert (tmp_path / "out" / "figures" / "plan.png").stat().st_size > 10_000
    assert len(pd.read_parquet(tmp_path / "out" / "results.parquet")) == 2 * len(curve)


def test_plan_reuses_the_cells_of_a_sweep(brute_force, tmp_path, capsys):
    folder, sweep = brute_force
    out = tmp_path / "out"
    import shutil
    shutil.copytree(sweep.out, out)
    status = main(["plan", str(folder / "plan.yaml"), "--out", str(out), "--resume",
                   "--workers", "1", "--format", "csv"])
    assert status == 0
    report = capsys.readouterr().out
    assert report.startswith("hamisim plan: 5 nodes of group 'gpu' (20 GPUs) meet "
                             "pending_p99_s <= 200 under node=binpack card=spread")
    assert "4 nodes do not" in report and "(0 cells run," in report
    curve = pd.read_csv(out / "curve.csv")
    assert list(curve.columns[:5]) == ["replicas", "nodes", "gpus", "round", "seeds"]


def test_aggregate_and_target_override(brute_force, tmp_path):
    folder, sweep = brute_force
    median = load_plan(folder / "plan.yaml", target="pending_p99_s <= 110")
    worst = run_plan(median, tmp_path / "worst", workers=2, progress=False)
    assert worst.answer == smallest_meeting(sweep.table, median.target) == 6
    text = PLAN.replace("target: pending_p99_s <= 200", "target: pending_p99_s <= 110\n"
                        "aggregate: median")
    (folder / "median.yaml").write_text(text)
    by_median = run_plan(load_plan(folder / "median.yaml"), tmp_path / "median", workers=2,
                         progress=False)
    assert by_median.answer == smallest_meeting(sweep.table, median.target, "median") == 5


def test_aggregate_mean(brute_force, tmp_path):
    folder, sweep = brute_force
    target = "pending_p99_s <= 110"
    (folder / "mean.yaml").write_text(PLAN.replace("target: pending_p99_s <= 200",
                                                   f"target: {target}\naggregate: mean"))
    plan = load_plan(folder / "mean.yaml")
    by_mean = run_plan(plan, tmp_path / "mean", workers=2, progress=False)
    expected = smallest_meeting(sweep.table, plan.target, "mean")
    assert by_mean.answer == expected
    # the curve holds the mean of the seeds at every size it tried
    means = sweep.table.groupby("replicas")["pending_p99_s"].mean()
    for _, row in by_mean.curve.iterrows():
        assert row["pending_p99_s"] == pytest.approx(means[row["replicas"]])


def test_cli_min_and_max_evaluations(brute_force, tmp_path, capsys):
    folder, _ = brute_force
    # --min above the answer (5): the smallest size searched meets the target
    assert main(["plan", str(folder / "plan.yaml"), "--out", str(tmp_path / "min"),
                 "--min", "7", "--workers", "2", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("hamisim plan: 7 nodes of group 'gpu'")
    curve = pd.read_csv(tmp_path / "min" / "curve.csv")
    assert curve["replicas"].min() == 7
    # --max-evaluations 2: the top and the middle only, an answer bracketed, not exact
    status = main(["plan", str(folder / "plan.yaml"), "--out", str(tmp_path / "k"),
                   "--max-evaluations", "2", "--workers", "2", "--format", "csv"])
    out = capsys.readouterr().out
    curve = pd.read_csv(tmp_path / "k" / "curve.csv")
    assert curve["replicas"].tolist() == [6, 12]
    doc = json.loads((tmp_path / "k" / "plan.json").read_text())
    assert doc["evaluations"] == 2 and not doc["exact"] and doc["answer"] == 6
    assert status == 0 and "2..6" in out


def test_parallel_rounds_find_the_same_answer(brute_force, tmp_path):
    folder, _ = brute_force
    (folder / "rounds.yaml").write_text(PLAN.replace("search: {min: 2, max: 12}",
                                                     "search: {min: 2, max: 12, per_round: 3}"))
    outcome = run_plan(load_plan(folder / "rounds.yaml"), tmp_path / "out", workers=2,
                       progress=False)
    assert outcome.answer == 5 and outcome.exact
    # round 1: the top; round 2: three sizes splitting 2..11 evenly; round 3: between 3 and 6
    rounds = outcome.curve.groupby("round")["replicas"].apply(list).to_dict()
    assert rounds[1] == [12] and rounds[2] == [3, 6, 9] and rounds[3] == [4, 5]


def test_failing_cells_stop_the_plan_with_exit_1(tmp_path, capsys):
    from test_sweep import FAILING_CLUSTER
    folder = tmp_path / "in"
    make_inputs(folder, "cluster: cluster.yaml\n", FAILING_CLUSTER)
    (folder / "plan.yaml").write_text(PLAN)
    assert main(["plan", str(folder / "plan.yaml"), "--out", str(tmp_path / "out"),
                 "--workers", "2"]) == 1
    out = capsys.readouterr().out
    assert "no answer" in out and "cells failed; the search stopped" in out
    assert "duplicate node name 'gpu-3'" in out


def test_no_answer_in_range_exits_1(brute_force, tmp_path, capsys):
    folder, _ = brute_force
    status = main(["plan", str(folder / "plan.yaml"), "--out", str(tmp_path / "out"),
                   "--max", "4", "--workers", "2"])
    assert status == 1
    out = capsys.readouterr().out
    assert "no answer for pending_p99_s <= 200" in out and "not met even at 4 nodes" in out


def test_budget_exhausted_gives_a_bracket(brute_force, tmp_path):
    folder, _ = brute_force
    plan = load_plan(folder / "plan.yaml", max_evaluations=2, max_nodes=12)
    outcome = run_plan(plan, tmp_path / "out", workers=2, progress=False)
    assert len(outcome.curve) == 2 and not outcome.exact
    assert outcome.curve["replicas"].tolist() == [6, 12]      # max first, then the middle
    assert outcome.answer == 6 and "answer lies in 2..6" in outcome.note


def test_abandoned_pct_target_on_an_as_traced_replay(tmp_path):
    folder = tmp_path / "in"
    make_inputs(folder, "cluster: cluster.yaml\n")
    # every pod gives up 120 s after it arrives unless bound; bound pods run to deletion
    rows = ["name,arrival,deletion,gpu,gpumem,gpucores"]
    for i in range(80):
        rows.append(f"p{i:02d},{i * 5},{i * 5 + 120 + (i % 7) * 60},{1 + i % 2},4096,50")
    (folder / "trace.csv").write_text("\n".join(rows) + "\n")
    common = "workload: {trace: trace.csv, as_traced: true}\n" + POLICY
    (folder / "bf.yaml").write_text("cluster: {file: cluster.yaml, vary: gpu, replicas: "
                                    "{from: 1, to: 12}}\n" + common)
    (folder / "plan.yaml").write_text("cluster: {file: cluster.yaml, vary: gpu}\n" + common
                                      + "target: abandoned_pct <= 1\nsearch: {max: 12}\n")
    table = run_sweep(load_sweep(folder / "bf.yaml"), tmp_path / "bf", workers=2,
                      progress=False).table
    plan = load_plan(folder / "plan.yaml")
    expected = min(r for r, v in zip(table["replicas"], table["abandoned_pct"]) if v <= 1)
    assert 1 < expected < 12
    assert (table.loc[table["replicas"] < expected, "abandoned"] > 0).all()
    outcome = run_plan(plan, tmp_path / "out", workers=2, progress=False)
    assert outcome.answer == expected and outcome.exact


# ---------------------------------------------------------------------------
# plan files

def plan_error(tmp_path: Path, text: str) -> InputError:
    folder = tmp_path / "in"
    make_inputs(folder)
    (folder / "plan.yaml").write_text(textwrap.dedent(text))
    with pytest.raises(InputError) as err:
        load_plan(folder / "plan.yaml")
    return err.value


BASE = "cluster: {file: cluster.yaml, vary: gpu}\n" + WORKLOAD


@pytest.mark.parametrize("text, line, needle", [
    (BASE + "target: pending_p99 <= 60\nsearch: {max: 9}\n", 3,
     "did you mean 'pending_p99_s'"),
    (BASE + "target: pending_p99_s = 60\nsearch: {max: 9}\n", 3, "METRIC OP NUMBER"),
    (BASE + "target: pending_p99_s <= 60\nsearch: {max: 9, min: 10}\n", 4,
     "max (9) is below min (10)"),
    (BASE + "target: pending_p99_s <= 60\nsearch: {min: 9}\n", 4, "'search' needs 'max'"),
    (BASE + "target: pending_p99_s <= 60\nsearch: {max: 9, maxevals: 3}\n", 4,
     "did you mean 'max_evaluations'"),
    ("cluster: {file: cluster.yaml, vary: gpu}\nworkload: {trace: trace.csv, load: 0.5}\n"
     "target: pending_p99_s <= 60\nsearch: {max: 9}\n", 2, "does not grow with the cluster"),
    (BASE + "policies: {node_scheduler_policy: [binpack, spread]}\n"
     "target: pending_p99_s <= 60\nsearch: {max: 9}\n", 3, "a plan takes one value"),
    ("cluster: {file: cluster.yaml, vary: gpu, replicas: [2, 3]}\n" + WORKLOAD[:-1] + "\n"
     "target: pending_p99_s <= 60\nsearch: {max: 9}\n", 1, "not 'replicas' here"),
    ("cluster: cluster.yaml\n" + WORKLOAD + "target: pending_p99_s <= 60\nsearch: {max: 9}\n",
     1, "a plan sizes a node group"),
    (BASE + "target: pending_p99_s <= 60\nsearch: {max: 9}\naggregate: best\n", 5,
     "'aggregate' must be one of worst, median, mean"),
])
def test_plan_file_errors_are_located(tmp_path, text, line, needle):
    err = plan_error(tmp_path, text)
    assert err.path.endswith("plan.yaml") and err.line == line, str(err)
    assert needle in err.problem, str(err)


def test_cli_bad_target_override_exits_2(brute_force, tmp_path, capsys):
    folder, _ = brute_force
    assert main(["plan", str(folder / "plan.yaml"), "--out", str(tmp_path / "o"),
                 "--target", "pending <= 1"]) == 2
    assert "--target: 'target': unknown metric 'pending'" in capsys.readouterr().err


@pytest.mark.slow
def test_openb_plan_answers_within_a_minute(tmp_path):
    """The bundled openb plan: a 10-point search (at most) in under a minute on 2 workers."""
    from hamisim.io.bundled import workloads_dir
    plan = load_plan(workloads_dir() / "sweeps" / "openb-plan.yaml")
    assert plan.max_evaluations == 10
    start = time.monotonic()
    outcome = run_plan(plan, tmp_path / "out", workers=2, progress=False)
    elapsed = time.monotonic() - start
    assert elapsed < 60, f"{elapsed:.1f} s"
    assert outcome.answer is not None and plan.min <= outcome.answer <= plan.max
    curve = outcome.curve.set_index("replicas")
    assert curve.loc[outcome.answer, "met"]
    if outcome.bracket[0] is not None:
        assert not curve.loc[outcome.bracket[0], "met"]
    assert 2 <= len(curve) <= 10


TWO_GROUPS = ("scheduler: {gpu_scheduler_policy: spread, node_scheduler_policy: binpack}\n"
               "nodes:\n"
               "  - {name_prefix: t4, replicas: 1, gpus: 4, cpu_milli: 32000, "
               "memory_mib: 131072, card: {devmem: 16384, type: NVIDIA-T4}}\n"
               "  - {name_prefix: a100, replicas: 1, gpus: 8, cpu_milli: 96000, "
               "memory_mib: 1048576, card: {devmem: 40960, type: NVIDIA-A100}}\n")


def two_group_inputs(folder: Path) -> None:
    """A T4 group and one A100 node; 8-card training no T4 node holds arrives at once
    with inference: the training queues for the A100 whatever the T4 count."""
    make_inputs(folder, "cluster: cluster.yaml\n", TWO_GROUPS)
    rows = ["name,arrival,duration,gpu,gpumem,gpucores,class"]
    for i in range(40):
        rows.append(f"t{i:02d},{i},600,8,30000,100,train-8gpu" if i % 4 == 0 else
                    f"i{i:02d},{i},{60 + 20 * i},1,12000,60,inference")
    (folder / "trace.csv").write_text("\n".join(rows) + "\n")


def test_no_answer_names_the_pods_the_group_cannot_serve(tmp_path, capsys):
    """A target set by pods only another group serves: 'not met even at N' says so."""
    folder = tmp_path / "in"
    two_group_inputs(folder)
    (folder / "plan.yaml").write_text(
        "cluster: {file: cluster.yaml, vary: t4}\nworkload: {trace: trace.csv, as_traced: true}\n"
        "target: pending_p99_s <= 60\nsearch: {max: 4}\n")
    status = main(["plan", str(folder / "plan.yaml"), "--out", str(tmp_path / "out"),
                   "--workers", "1"])
    out = capsys.readouterr().out
    assert status == 1 and "not met even at 4 nodes" in out
    assert "10 pods of the trace fit no node of group 't4' even empty (10 of class train-8gpu" \
        in out
    doc = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert doc["unservable_by_group"] == {"pods": 10, "classes": {"train-8gpu": 10}}


def test_a_class_target_finds_the_brute_force_answer(tmp_path):
    """``METRIC of class C``: the class's figure of each cell (summary.json), the
    smallest size meeting it as a sweep over every size says."""
    folder = tmp_path / "in"
    two_group_inputs(folder)
    common = "workload: {trace: trace.csv, as_traced: true}\n" + POLICY
    (folder / "bf.yaml").write_text("cluster: {file: cluster.yaml, vary: t4, replicas: "
                                    "{from: 1, to: 8}}\n" + common)
    (folder / "plan.yaml").write_text("cluster: {file: cluster.yaml, vary: t4}\n" + common
                                      + "target: pending_p99_s of class inference <= 60\n"
                                        "search: {max: 8}\n")
    sweep = run_sweep(load_sweep(folder / "bf.yaml"), tmp_path / "bf", workers=2,
                      progress=False)
    by_size = {}
    for _, row in sweep.table.iterrows():
        summary = json.loads((tmp_path / "bf" / "cells" / row["cell"] / "summary.json")
                             .read_text())
        (inference,) = [c for c in summary["results"]["classes"] if c["class"] == "inference"]
        by_size[row["replicas"]] = inference["pending_p99_s"]
    meeting = [r for r, v in sorted(by_size.items()) if v <= 60]
    assert meeting and 1 < meeting[0] < 8 and meeting == list(range(meeting[0], 9))
    plan = load_plan(folder / "plan.yaml")
    assert str(plan.target) == "pending_p99_s of class inference <= 60"
    outcome = run_plan(plan, tmp_path / "out", workers=2, progress=False)
    assert outcome.answer == meeting[0] and outcome.exact
    column = "pending_p99_s[inference]"
    for _, row in outcome.curve.iterrows():
        assert row[column] == by_size[row["replicas"]]
    # the all-pods figure never meets it: the training waits for the one A100
    assert min(sweep.table["pending_p99_s"]) > 60


def test_a_class_target_names_a_class_of_the_trace(tmp_path):
    folder = tmp_path / "in"
    two_group_inputs(folder)
    (folder / "plan.yaml").write_text(
        "cluster: {file: cluster.yaml, vary: t4}\nworkload: {trace: trace.csv, as_traced: true}"
        "\ntarget: pending_p99_s of class train <= 60\nsearch: {max: 4}\n")
    with pytest.raises(InputError) as err:
        load_plan(folder / "plan.yaml")
    assert err.value.line == 3 and "classes: inference, train-8gpu" in err.value.problem
    with pytest.raises(InputError) as err:
        load_plan(folder / "plan.yaml", target="bound_pct of class inference <= 1")
    assert "a class's figure is one of" in err.value.problem


def test_the_bundled_two_group_plan(tmp_path):
    """workloads/plan: the inference class has an answer, the all-pods target none,
    and the 8-GPU training the L40S group cannot serve is named."""
    from hamisim.io.bundled import workloads_dir
    path = workloads_dir() / "plan" / "plan.yaml"
    outcome = run_plan(load_plan(path), tmp_path / "class", workers=2, progress=False)
    assert outcome.answer is not None and outcome.exact
    below = outcome.curve[outcome.curve["replicas"] == outcome.bracket[0]].iloc[0]
    assert not below["met"]
    every = run_plan(load_plan(path, target="pending_p99_s <= 60"), tmp_path / "all",
                     workers=2, progress=False)
    assert every.answer is None
    assert "fit no node of group 'l40s' even empty (10 of class train-8gpu" in every.note


# ---------------------------------------------------------------------------
# several node groups at once, targets per class, namespace and group

def _figure(summary: dict, target: Target) -> float:
    """The target's figure read straight from a run's summary (not through the plan)."""
    scope, name = target.scoped
    key = {"class": "classes", "namespace": "namespaces", "group": "groups"}[scope]
    (entry,) = [e for e in summary["results"][key] if e[scope] == name]
    return entry[target.metric]


def test_the_bundled_two_group_plan_is_the_cheapest_meeting_size(tmp_path):
    """workloads/plan/groups-plan.yaml (H100 at 10, L40S at 3; a class target and a
    namespace target): the answer, simulated on its own, meets both targets; one
    node fewer of either group, simulated on its own, misses the target the plan
    says binds that group; and every cheaper size is below a size the search saw
    miss (the exactness claim, under the stated monotonicity)."""
    from hamisim.io.bundled import workloads_dir
    from hamisim.studies.runs import RunSpec, run
    folder = workloads_dir() / "plan"
    plan = load_plan(folder / "groups-plan.yaml")
    assert [(g.name, g.cost) for g in plan.groups] == [("h100", 10.0), ("l40s", 3.0)]
    o = run_plan(plan, tmp_path / "out", workers=2, progress=False)
    assert o.answer is not None and o.exact and o.cost == o.lower_bound
    assert o.cost == sum(g.cost * o.answer[g.name] for g in plan.groups)

    def simulate(sizes: dict[str, int]) -> dict:
        spec = RunSpec(cluster=str(folder / "cluster.yaml"), trace=str(folder / "trace.csv"),
                       resize=sizes, as_traced=True, progress=False)
        return run(spec).summary

    at = simulate(o.answer)
    assert all(t.met(_figure(at, t)) for t in plan.all_targets)
    for g in plan.groups:
        fewer = {**o.answer, g.name: o.answer[g.name] - 1}
        assert fewer[g.name] >= g.min           # the fixture binds both groups
        there = simulate(fewer)
        missed = {str(t) for t in plan.all_targets if not t.met(_figure(there, t))}
        assert missed and set(o.binding[g.name]) <= missed
    # each group is bound by a different target: the class's by the H100 count,
    # the namespace's by the L40S count
    assert o.binding == {"h100": ["pending_p95_s of class train-8gpu <= 3600"],
                         "l40s": ["pending_p99_s of namespace team-a <= 60"]}
    missed = [tuple(r[["h100", "l40s"]]) for _, r in o.curve.iterrows() if not r["met"]]
    for h in range(1, 7):
        for lo in range(1, 9):
            if 10 * h + 3 * lo < o.cost:
                assert any(h <= a and lo <= b for a, b in missed), (h, lo)
    doc = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert doc["answer"] == o.answer and doc["binding"] == o.binding and doc["exact"]
    page = (tmp_path / "out" / "report.html").read_text()
    sizes = ", ".join(f"{n} {g}" for g, n in o.answer.items())
    assert f"{sizes} nodes (cost {o.cost:g}) meet" in page and "one node fewer misses" in page


def test_a_multi_group_plan_stops_at_its_budget_with_a_bound(tmp_path):
    """Too few evaluations: the cheapest size that met so far, not called exact,
    with the cost below which every size was ruled out."""
    from hamisim.io.bundled import workloads_dir
    plan = load_plan(workloads_dir() / "plan" / "groups-plan.yaml", max_evaluations=4)
    o = run_plan(plan, tmp_path / "out", workers=2, progress=False)
    assert not o.exact and o.answer is not None and len(o.curve) == 4
    assert o.lower_bound is not None and o.lower_bound <= o.cost
    assert o.curve[o.curve["met"]]["cost"].min() == o.cost
    assert "evaluations used" in o.note


def test_a_multi_group_plan_names_the_pods_no_varied_group_serves(tmp_path, capsys):
    """Varying only the L40S group (--vary): the 8-GPU training fits no L40S node,
    so the class target has no answer, and the console says why."""
    from hamisim.io.bundled import workloads_dir
    path = workloads_dir() / "plan" / "groups-plan.yaml"
    status = main(["plan", str(path), "--vary", "l40s:min=1,max=4,cost=3",
                   "--out", str(tmp_path / "out"), "--workers", "1", "--no-progress"])
    out = capsys.readouterr().out
    assert status == 1 and "no answer for" in out
    assert "pods of the trace fit no node of l40s even empty (10 of class train-8gpu" in out
    doc = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert doc["unservable"] == {"pods": 10, "classes": {"train-8gpu": 10}}


@pytest.mark.parametrize("text, scoped, value", [
    ("pending_p95_s of class train-8gpu <= 30min", ("class", "train-8gpu"), 1800.0),
    ("pending_p99_s of namespace team-a <= 10min", ("namespace", "team-a"), 600.0),
    ("queueing_delay_p99_s of group l40s < 1.5h", ("group", "l40s"), 5400.0),
    ("pending_p99_s <= 60s", None, 60.0),
])
def test_targets_take_a_scope_and_a_unit(text, scoped, value):
    t = Target.parse(text)
    assert t.scoped == scoped and t.value == value


@pytest.mark.parametrize("text, problem", [
    ("pods of namespace team-a <= 3min", "unit of time"),
    ("pods_bound of namespace team-a <= 3", "a namespace's figure is one of"),
    ("pending_p99_s of group l40s <= 3", "a group's figure is one of"),
    ("pending_p99_s of team team-a <= 3", "must read METRIC OP NUMBER"),
])
def test_malformed_scoped_targets_are_refused(text, problem):
    with pytest.raises(InputError) as err:
        Target.parse(text, path="--target")
    assert problem in err.value.problem


def test_multi_group_plan_files_are_checked(tmp_path):
    from hamisim.io.bundled import workloads_dir
    src = workloads_dir() / "plan"
    for name in ("cluster.yaml", "trace.csv"):
        (tmp_path / name).write_text((src / name).read_text())
    head = "cluster: {file: cluster.yaml}\nworkload: {trace: trace.csv, as_traced: true}\n"

    def error(text: str, **kw) -> InputError:
        (tmp_path / "p.yaml").write_text(head + text)
        with pytest.raises(InputError) as err:
            load_plan(tmp_path / "p.yaml", **kw)
        return err.value

    e = error("vary: {h100: {max: 3}, a100: {max: 2}}\ntarget: pending_p99_s <= 60\n")
    assert e.line == 3 and "no node group 'a100'" in e.problem
    e = error("vary: {h100: {max: 3, cost: -1}}\ntarget: pending_p99_s <= 60\n")
    assert e.line == 3 and "'cost' must be a positive number" in e.problem
    e = error("vary: {h100: {min: 1}}\ntarget: pending_p99_s <= 60\n")
    assert "needs 'max'" in e.problem
    e = error("vary: {h100: {max: 3}}\ntarget:\n  - pending_p99_s <= 60\n"
              "  - pending_p99_s of namespace team-c <= 60\n")
    assert e.line == 6 and "namespaces: team-a, team-b" in e.problem
    e = error("vary: {h100: {max: 3}}\ntarget: pending_p99_s <= 60\nsearch: {max: 4}\n")
    assert e.line == 5 and "each group's range is given there" in e.problem
    e = error("target: pending_p99_s <= 60\n", vary=["h100:max=3,price=2"])
    assert e.path == "--vary" and "price=2" in e.problem
    e = error("target: pending_p99_s <= 60\n", vary=["h100:min=2"])
    assert "give max=B" in e.problem
    plan = load_plan(tmp_path / "p.yaml", vary=["h100:max=3,cost=10", "l40s:min=2,max=5"])
    assert plan.groups[1].cost == 1.0 and plan.groups[1].min == 2
