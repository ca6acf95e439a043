"""CLI options: each one's effect, and counts that cannot be negative or zero.

Options whose core behaviour is tested elsewhere (sampling, tie-breaks, the
queue) are checked here for reaching the run: the summary records them and the
run's outcome changes the way the option says.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from samples import group_cluster

from hamisim import __version__
from hamisim.cli import main
from hamisim.io.bundled import bundled_scenarios

CLUSTER = group_cluster(2, gpus=1, prefix="n", cpu_milli=8000)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    rows = ["name,arrival,duration,gpu,gpumem"]
    rows += [f"p{i},{i},{30},1,{12000 if i % 4 == 0 else 2000}" for i in range(12)]
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


def status_of(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:            # argparse's own refusals
        return int(exc.code)


def run(files, *extra) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    out = files / f"out{len(list(files.glob('out*')))}"
    assert main(["run", str(files / "cluster.yaml"), str(files / "trace.csv"), "--out",
                 str(out), "--format", "csv", *extra]) == 0
    summary = json.loads((out / "summary.json").read_text())
    return summary, pd.read_csv(out / "events.csv"), pd.read_csv(out / "pods.csv")


def test_version(capsys):
    assert status_of(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"hamisim {__version__}"


def test_scenario_list_names_every_bundled_scenario(capsys):
    assert main(["scenario", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[0]: line.split()[-1] for line in lines if line.strip()}
    assert listed == {name: str(path) for name, path in bundled_scenarios().items()}


@pytest.mark.parametrize("argv,message", [
    (["sweep", "s.yaml", "--retries", "-1"], "--retries: must be at least 0, got -1"),
    (["plan", "p.yaml", "--retries", "-2"], "--retries: must be at least 0, got -2"),
    (["explain", "--max-nodes", "-1"], "--max-nodes: must be at least 0, got -1"),
    (["explain", "--run", "d", "--pod", "p", "--attempt", "0"], "--attempt: attempts count "
                                                                "from 1"),
    (["run", "--pods", "0"], "--pods: must be at least 1, got 0"),
    (["compare", "--seeds", "0"], "--seeds: must be at least 1, got 0"),
    (["sweep", "s.yaml", "--workers", "0"], "--workers: must be at least 1, got 0"),
    (["plan", "p.yaml", "--min", "0"], "--min: must be at least 1, got 0"),
    (["plan", "p.yaml", "--max-evaluations", "0"], "--max-evaluations: must be at least 1"),
    (["run", "--sample-interval", "-1"], "--sample-interval: must be a finite number >= 0"),
    (["run", "--percentage-of-nodes-to-score", "101"], "--percentage-of-nodes-to-score"),
])
def test_counts_are_checked_before_anything_runs(argv, message, capsys):
    assert status_of(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_percentage_of_nodes_to_score_reaches_the_run(files):
    summary, _, _ = run(files, "--percentage-of-nodes-to-score", "30")
    assert summary["scheduler"]["percentage_of_nodes_to_score"] == 30


def test_node_tie_break_random_spreads_ties(files):
    # two identical idle nodes: 'last' puts the first pod on the last node,
    # 'random' (seeded) on either; over seeds both nodes are chosen
    summary, events, _ = run(files)
    assert summary["scheduler"]["node_tie_break"] == "last"
    assert events[(events.pod == "p0") & (events.event == "bind")].node.item() == "n-1"
    firsts = set()
    for seed in range(8):
        summary, events, _ = run(files, "--node-tie-break", "random", "--seed", str(seed))
        assert summary["scheduler"]["node_tie_break"] == "random"
        firsts.add(events[(events.pod == "p0") & (events.event == "bind")].node.item())
        if len(firsts) == 2:
            break
    assert firsts == {"n-0", "n-1"}


def test_retry_none_gives_one_attempt(files):
    summary, events, pods = run(files, "--retry", "none")
    assert summary["inputs"]["retry"] == "none"
    assert pods.attempts.max() == 1
    abandoned = events[events.event == "abandon"]
    assert len(abandoned) > 0 and set(abandoned.message) == {"not retried (retry: none)"}
    _, _, retried = run(files)
    assert retried.attempts.max() > 1


def test_backend_reference_on_run_gives_the_kernels_run(files):
    summary, events, pods = run(files, "--backend", "reference")
    assert summary["inputs"]["backend"] == "reference"
    _, k_events, k_pods = run(files)
    assert events.equals(k_events) and pods.equals(k_pods)


def test_explain_max_nodes_and_node_choose_what_is_printed(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(group_cluster(3, gpus=1, prefix="n"))
    (tmp_path / "p.yaml").write_text("name: p\ngpu: 1\ngpumem: 20000\n")   # fits no card
    args = ["explain", str(tmp_path / "c.yaml"), str(tmp_path / "p.yaml")]

    def printed_nodes(*extra) -> list[str]:
        assert main([*args, *extra]) == 0
        out = capsys.readouterr().out
        return [line.split(":")[0] for line in out.splitlines() if line.startswith("Node ")]

    assert printed_nodes() == ["Node n-0", "Node n-1", "Node n-2"]      # 3 <= 20
    assert printed_nodes("--max-nodes", "2") == []                       # 3 > 2: a summary
    assert printed_nodes("--max-nodes", "2", "--node", "n-1") == ["Node n-1"]


def test_explain_attempt_replays_the_chosen_attempt(tmp_path, capsys):
    # b waits for a's card: tried at 0.4 and 2.0 (HAMi rejects it), bound at 100
    (tmp_path / "c.yaml").write_text(group_cluster(1, gpus=1, prefix="n"))
    (tmp_path / "t.csv").write_text("name,arrival,deletion,gpu\na,0,100,1\nb,0.4,,1\n")
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), "--out", str(out),
                 "--no-progress"]) == 0
    capsys.readouterr()

    def attempt(*extra) -> dict:
        assert main(["explain", "--run", str(out), "--pod", "b", "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)

    first, default, last = attempt("--attempt", "1"), attempt(), attempt("--attempt", "-1")
    assert (first["context"]["time"], first["context"]["event"], first["chosen"]) == \
        (0.4, "unschedulable", None)
    # the default is the last unschedulable attempt
    assert (default["context"]["time"], default["context"]["event"]) == (2.0, "unschedulable")
    assert (last["context"]["time"], last["context"]["event"], last["chosen"]) == \
        (100.0, "bind", "n-0")
    assert attempt("--attempt", "3") == last and last["context"]["attempts"] == 3


# ---------------------------------------------------------------------------
# --scale: the trace's own pods F times over; the offered load on the console

@pytest.fixture(scope="module")
def diurnal_files(tmp_path_factory):
    from samples import diurnal_trace

    from hamisim.io.traces import write_trace
    folder = tmp_path_factory.mktemp("diurnal")
    (folder / "cluster.yaml").write_text(group_cluster(8, gpus=8, prefix="a", count=10,
                                                       devmem=81920, card_type="NVIDIA-A100"))
    write_trace(diurnal_trace(days=4), folder / "trace.csv")
    return folder


def test_scale_on_the_command_line_keeps_the_daily_cycle(diurnal_files, capsys):
    from samples import HOURLY
    f = diurnal_files
    hours = {}
    for scale in ("1", "1.3"):
        out = f / f"out-{scale}"
        assert main(["run", str(f / "cluster.yaml"), str(f / "trace.csv"), "--scale", scale,
                     "--out", str(out), "--format", "csv", "--no-progress"]) == 0
        pods = pd.read_csv(out / "pods.csv")
        hours[scale] = (len(pods), (pods["arrival"] // 3600 % 24).astype(int)
                        .value_counts(normalize=True).reindex(range(24), fill_value=0.0))
        summary = json.loads((out / "summary.json").read_text())
        assert summary["inputs"]["scale"] == float(scale)
        text = capsys.readouterr().out
        given = summary["workload"]["offered_gpu_load_as_given"]
        assert f"offered GPU load                   {100 * given:.1f} % as traced" in text
    (n, base), (m, scaled) = hours["1"], hours["1.3"]
    assert m == round(1.3 * n)
    assert (scaled - base).abs().max() < 0.02                 # each hour keeps its share
    assert scaled.idxmax() in range(9, 17) and scaled[1] < scaled.max() / 10  # day, night
    assert np.corrcoef(scaled, HOURLY)[0, 1] > 0.95
    load = summary["workload"]["offered_gpu_load"]
    assert load == pytest.approx(1.3 * given, rel=0.1)
    assert f"; {100 * load:.1f} % scaled x1.3 (--scale)" in text
    assert "as traced, scaled x1.3" in text                    # the workload line


def test_load_says_that_it_re_times(diurnal_files, capsys):
    f = diurnal_files
    assert main(["run", str(f / "cluster.yaml"), str(f / "trace.csv"), "--load", "0.5",
                 "--out", str(f / "out-load"), "--no-progress"]) == 0
    assert "re-timed (Poisson arrivals, --load: the daily cycle is not kept) to 50 %" \
        in capsys.readouterr().out


@pytest.mark.parametrize("extra,message", [
    (["--scale", "1.3", "--load", "0.5"], "--scale multiplies the trace keeping its own "
                                          "times; --load re-times it"),
    (["--scale", "2", "--pods", "10"], "--pods re-times it into Poisson arrivals"),
    (["--scale", "0"], "argument --scale: must be a positive factor"),
    (["--scale", "-1"], "argument --scale: must be a positive factor"),
    (["--scale", "x"], "argument --scale: must be a positive factor"),
    (["--scale", "2", "--mode", "fill"], "--scale applies to replay mode"),
])
def test_scale_refusals(files, extra, message, capsys):
    assert status_of(["run", str(files / "cluster.yaml"), str(files / "trace.csv"),
                      "--out", str(files / "never"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (files / "never").exists()
