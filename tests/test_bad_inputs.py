"""Bad input, everywhere: the malformed-input corpus through the CLI, and policy warnings.

Every file of ``tests/data/bad_inputs/`` (see its ``manifest.yaml``) must make
the CLI exit with status 2 and print exactly one ``file:line: problem`` line
on stderr (no traceback), leaving the ``--out`` folder as it was. Policy
strings are the exception: HAMi ignores what it does not understand, so
hamisim simulates exactly that and prints a located warning once per
distinct string.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from hamisim.cli import build_parser, main
from hamisim.io.scenariofile import load_scenario
from hamisim.studies.scenario import run_scenario

DATA = Path(__file__).resolve().parent / "data" / "bad_inputs"
MANIFEST = yaml.safe_load((DATA / "manifest.yaml").read_text())
GOOD_CLUSTER = DATA / "good" / "cluster.yaml"
GOOD_TRACE = DATA / "good" / "trace.csv"
#: the reader module behind each manifest section (a missing one fails its cases)
READERS = {"cluster": "hamisim.io.clusterfile", "trace": "hamisim.io.traces",
           "scenario": "hamisim.io.scenariofile", "sweep": "hamisim.studies.sweepfile",
           "kubectl": "hamisim.io.kubeimport", "state": "hamisim.io.initialstate",
           "plan": "hamisim.studies.plan", "pod": "hamisim.explain"}


def cases():
    for section, entries in MANIFEST.items():
        for case in entries or []:
            name = case.get("file") or case["nodes"]
            yield pytest.param(section, case, id=f"{section}:{name}")


def reader_present(section: str) -> bool:
    return importlib.util.find_spec(READERS[section]) is not None


def has_command(name: str) -> bool:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return name in sub.choices


def command(section: str, case: dict, out: Path) -> tuple[list[str], str]:
    """The CLI arguments of a case and the path its message must start with."""
    blamed = str(DATA / (case.get("blame") or case.get("pods") or case.get("file")
                         or case["nodes"]))
    if section == "kubectl":
        pods = [str(DATA / case["pods"])] if case.get("pods") else []
        return ["import", str(DATA / case["nodes"]), *pods, "--out", str(out)], blamed
    path = str(DATA / case["file"])
    if section == "cluster":
        return ["run", path, str(GOOD_TRACE), "--as-traced", "--out", str(out)], blamed
    if section == "trace":
        return ["run", str(GOOD_CLUSTER), path, "--as-traced", "--out", str(out)], blamed
    if section == "scenario":
        return ["scenario", path], blamed
    if section == "sweep":
        return ["sweep", path, "--out", str(out)], blamed
    if section == "state":
        return ["run", str(GOOD_CLUSTER), str(GOOD_TRACE), "--as-traced", "--state", path,
                "--out", str(out)], blamed
    if section == "plan":
        return ["plan", path, "--out", str(out)], blamed
    if section == "pod":
        return ["explain", str(GOOD_CLUSTER), path], blamed
    raise AssertionError(f"unknown manifest section {section!r}")


def expected_prefix(path: str, line: int | None) -> str:
    return f"hamisim: {path}:{line}: " if line is not None else f"hamisim: {path}: "


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------
# the corpus

def test_corpus_is_complete():
    """Every file is a case, every case a file, and there are enough of them."""
    listed = []
    for entries in MANIFEST.values():
        for case in entries or []:
            listed += [case[k] for k in ("file", "nodes", "pods")
                       if case.get(k) and not case[k].startswith("good/")]
            assert (DATA / case.get("blame", "")).exists()
    on_disk = sorted(p.name for p in DATA.iterdir() if p.is_file() and p.name != "manifest.yaml")
    assert sorted(set(listed)) == on_disk
    assert len(listed) == len(set(listed)), "a file is listed twice"
    counts = {s: len(MANIFEST.get(s) or []) for s in READERS}
    assert sum(counts.values()) >= 40
    assert min(counts["cluster"], counts["trace"], counts["scenario"]) >= 10
    assert set(MANIFEST) == set(READERS)        # placeholders for sweep and kubectl stay


def test_the_good_partners_run(tmp_path, capsys):
    """The bad files fail on their own account: their partners are valid."""
    out = tmp_path / "out"
    assert main(["run", str(GOOD_CLUSTER), str(GOOD_TRACE), "--as-traced", "--out", str(out),
                 "--format", "csv"]) == 0
    assert (out / "summary.json").exists()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("section,case", list(cases()))
def test_bad_input_gives_one_located_message(section, case, tmp_path, capsys):
    assert reader_present(section), f"{READERS[section]} is missing"
    assert has_command(command(section, case, tmp_path)[0][0])
    out = tmp_path / "results"
    out.mkdir()
    (out / "summary.json").write_text('{"from": "an earlier run"}\n')
    before = snapshot(out)
    argv, path = command(section, case, out)

    status = main(argv)
    captured = capsys.readouterr()

    assert status == 2, captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(expected_prefix(path, case["line"])), lines[0]
    assert case["message"] in lines[0], lines[0]
    assert "Traceback" not in captured.err and captured.out == ""
    # the earlier results are untouched and nothing was left beside them
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]

    # a results folder that did not exist is not created
    fresh = tmp_path / "fresh"
    argv, _ = command(section, case, fresh)
    assert main(argv) == 2
    capsys.readouterr()
    assert not fresh.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


SUBPROCESS_CASES = ["cluster-truncated.json", "trace-not-utf8.csv", "trace-corrupt.parquet",
                    "scenario-unknown-step.yaml"]


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_bad_input_in_a_real_process(name, tmp_path):
    """The console entry point, in its own process: status 2, one line, no traceback."""
    section, case = next((s, c) for s, entries in MANIFEST.items() for c in entries or []
                         if c.get("file") == name)
    argv, path = command(section, case, tmp_path / "out")
    proc = subprocess.run([sys.executable, "-m", "hamisim.cli", *argv], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith(expected_prefix(path, case["line"]))
    assert case["message"] in proc.stderr and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------
# the results folder itself

def test_out_naming_a_file_is_refused_and_the_file_kept(tmp_path, capsys):
    target = tmp_path / "results.csv"
    target.write_text("precious\n")
    status = main(["run", str(GOOD_CLUSTER), str(GOOD_TRACE), "--as-traced",
                   "--out", str(target), "--format", "csv"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith(f"hamisim: {target}: exists and is not a folder")
    assert target.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]


def test_out_below_a_file_is_a_clean_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    status = main(["run", str(GOOD_CLUSTER), str(GOOD_TRACE), "--as-traced",
                   "--out", str(blocker / "results")])
    err = capsys.readouterr().err
    assert status == 2 and f"cannot create the results folder: {blocker} is a file" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("trace,cluster,fragment", [
    ("name,arrival,gpu\np1,0,1\n", GOOD_CLUSTER,
     "cannot re-time the trace to a GPU load (--load): no pod has both a GPU request and a "
     "positive lifetime"),
    ("name,arrival,duration,gpu\np1,0,5,1\n", "nodes: [{name: cpu-only}]\n",
     "cannot re-time the trace to a GPU load (--load): the cluster has no GPUs"),
])
def test_a_workload_that_cannot_be_retimed_is_bad_input(tmp_path, capsys, trace, cluster,
                                                        fragment):
    tpath = tmp_path / "t.csv"
    tpath.write_text(trace)
    if isinstance(cluster, str):
        cpath = tmp_path / "c.yaml"
        cpath.write_text(cluster)
        blamed = cpath
    else:
        cpath, blamed = cluster, tpath
    status = main(["run", str(cpath), str(tpath), "--load", "0.8", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith(f"hamisim: {blamed}: ") and fragment in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option", [["--fill-to", "nan"], ["--fill-to", "-5"],
                                    ["--seed", "-1"], ["--load", "inf"]])
def test_bad_options_are_usage_errors(option, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["run", str(GOOD_CLUSTER), str(GOOD_TRACE), *option, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"argument {option[0]}: must be" in err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_plot_of_a_damaged_results_folder(tmp_path, capsys):
    (tmp_path / "summary.json").write_text("{")
    (tmp_path / "timeseries.csv").write_text("time\n0\n")
    assert main(["plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hamisim: {tmp_path}: not a readable results folder") and \
        len(err.splitlines()) == 1


def test_arrivals_out_of_order_are_allowed_and_replayed_in_time_order(tmp_path, capsys):
    """DESIGN §4.2 requires no order: a trace whose times go backwards is replayed by
    arrival time (ties in file order), not rejected."""
    import pandas as pd
    tpath = tmp_path / "t.csv"
    tpath.write_text("name,arrival,duration,gpu\nlate,5,1,1\nearly,1,1,1\nsame,5,1,1\n")
    out = tmp_path / "out"
    assert main(["run", str(GOOD_CLUSTER), str(tpath), "--as-traced", "--out", str(out),
                 "--format", "csv"]) == 0
    events = pd.read_csv(out / "events.csv")
    arrivals = events[events.event == "arrive"]
    assert list(arrivals.pod) == ["early", "late", "same"]
    assert list(arrivals.time) == [1.0, 5.0, 5.0]
    capsys.readouterr()


# ---------------------------------------------------------------------------
# policy strings: simulated as HAMi reads them, with one located warning each

TWO_CARDS = """\
nodes:
  - name: node1
    devices:
      - {id: GPU-A, index: 0, devmem: 15360, type: NVIDIA-Tesla T4}
      - {id: GPU-B, index: 1, devmem: 15360, type: NVIDIA-Tesla T4}
"""


def second_card(tmp_path, policy: str) -> str:
    """Where the second of two 1000 MiB pods lands under card policy ``policy``."""
    path = tmp_path / f"s{abs(hash(policy))}.yaml"
    path.write_text(TWO_CARDS + textwrap.dedent(f"""\
        steps:
          - create: {{name: p1, gpu: 1, gpumem: 1000, gpu_policy: binpack}}
          - create: {{name: p2, gpu: 1, gpumem: 1000, gpu_policy: {policy!r}}}
        """))
    with pytest.warns(Warning) if policy in ("pack", " binpack") else _no_warning():
        result = run_scenario(load_scenario(path), backend="reference")
    first, second = [e.devices.split(",")[0] for e in result.events]
    return "same" if first == second else "other"


class _no_warning:
    def __enter__(self):
        import warnings
        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def test_unknown_policy_tokens_are_ignored_as_hami_ignores_them(tmp_path):
    """HAMi issue #1931: 'pack' is no policy, so HAMi sorts the cards like spread;
    hamisim does the same (and ' binpack' without a comma is compared whole)."""
    assert second_card(tmp_path, "binpack") == "same"
    assert second_card(tmp_path, "spread") == "other"
    assert second_card(tmp_path, "pack") == "other"
    assert second_card(tmp_path, " binpack") == "other"


def warning_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": warning: " in line]


def test_policy_warning_once_per_distinct_string_at_its_first_line(tmp_path, capsys):
    rows = ["name,arrival,duration,gpu,gpu_policy,node_policy"]
    rows += [f"p{i},{i},5,1,pack," for i in range(6)]           # lines 2..7
    rows += ["q1,7,5,1,mutex,", "q2,8,5,1,binpack,pakc", "q3,9,5,1,\"mutex,pack\",pakc"]
    tpath = tmp_path / "t.csv"
    tpath.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    status = main(["run", str(GOOD_CLUSTER), str(tpath), "--as-traced", "--out", str(out),
                   "--format", "csv"])
    err = capsys.readouterr().err
    assert status == 0
    assert warning_lines(err) == [
        f"hamisim: {tpath}:2: warning: card policy 'pack': HAMi ignores the unknown token "
        "'pack' and sorts cards like spread",
        f"hamisim: {tpath}:9: warning: node policy 'pakc' is neither 'binpack' nor 'spread': "
        "HAMi ranks nodes like binpack",
        f"hamisim: {tpath}:10: warning: card policy 'mutex,pack': HAMi ignores the unknown "
        "token 'pack' and sorts cards by spread",
    ]
    assert (out / "summary.json").exists()


def test_policy_warnings_from_cluster_file_scenario_and_options(tmp_path, capsys):
    cpath = tmp_path / "c.yaml"
    cpath.write_text("scheduler:\n  gpu_scheduler_policy: pack\n  node_scheduler_policy: fgd\n"
                     + GOOD_CLUSTER.read_text().split("\n", 2)[2])
    status = main(["compare", str(cpath), str(GOOD_TRACE), "--as-traced", "--seeds", "2",
                   "--gpu-policy", "binpack,numa,spraed", "--gpu-policy", "spread",
                   "--out", str(tmp_path / "cmp"), "--format", "csv"])
    err = capsys.readouterr().err
    assert status == 0, err
    # fgd is a research node policy: fine in a cluster file; the trace is read four
    # times and the cluster file four times, but each warning shows once
    assert warning_lines(err) == [
        "hamisim: --gpu-policy: warning: card policy 'binpack,numa,spraed': HAMi ignores "
        "the unknown token 'spraed' and sorts cards by binpack,numa",
        f"hamisim: {cpath}:2: warning: card policy 'pack': HAMi ignores the unknown token "
        "'pack' and sorts cards like spread",
    ]

    spath = tmp_path / "s.yaml"
    spath.write_text(TWO_CARDS + textwrap.dedent("""\
        steps:
          - create: {name: p1, gpu: 1}
          - create:
              name: p2
              gpu: 1
              annotations: {hami.io/gpu-scheduler-policy: "topology-aware,mutex,binpakc"}
          - create: {name: p3, gpu: 1, node_policy: " spread"}
        """))
    assert main(["scenario", str(spath)]) == 0
    assert warning_lines(capsys.readouterr().err) == [
        f"hamisim: {spath}:8: warning: card policy 'topology-aware,mutex,binpakc': HAMi "
        "ignores the unknown token 'binpakc' and sorts cards by spread",
        f"hamisim: {spath}:12: warning: node policy ' spread' is neither 'binpack' nor "
        "'spread' (HAMi compares the whole string, spaces included): HAMi ranks nodes like "
        "binpack",
    ]


KNOWN = ["spread", "binpack", "mutex", "numa", "topology-aware", "mutex,binpack,numa",
         "binpack,numa", "topology-aware,mutex", "binpack,,numa"]


def test_known_policies_do_not_warn(tmp_path, capsys):
    from hamisim.hami.policy import policy_problem
    assert [p for p in KNOWN if policy_problem(p) is not None] == []
    assert policy_problem("fgd", "node", research_ok=True) is None
    assert policy_problem("fgd", "node") is not None    # a pod annotation is read by HAMi
    tpath = tmp_path / "t.jsonl"
    tpath.write_text("".join(f'{{"name": "p{i}", "arrival": {i}, "gpu": 1, "gpu_policy": '
                             f'"{p}", "node_policy": "{("spread", "binpack")[i % 2]}"}}\n'
                             for i, p in enumerate(KNOWN)))
    assert main(["run", str(GOOD_CLUSTER), str(tpath), "--as-traced", "--gpu-policy", KNOWN[-2],
                 "--node-policy", "dotprod", "--out", str(tmp_path / "o"),
                 "--format", "csv"]) == 0
    assert warning_lines(capsys.readouterr().err) == []


def test_every_message_names_a_file_and_line_or_the_whole_file():
    """The manifest's own consistency: lines are positive and fragments non-empty."""
    for section, entries in MANIFEST.items():
        for case in entries or []:
            assert case["line"] is None or (isinstance(case["line"], int) and case["line"] >= 1)
            assert case["message"].strip()
            assert not re.search(r"^\s|\s$", case["message"])
    assert os.path.isfile(GOOD_CLUSTER) and os.path.isfile(GOOD_TRACE)


# ---------------------------------------------------------------------------
# valid values HAMi reads with another meaning: simulated as HAMi reads them,
# with one located warning (issue 31: no silent values)

T4_NODE = "  - name: t4\n    devices:\n      - {id: GPU-T, devmem: 15360, type: NVIDIA-Tesla T4}\n"
ONE_POD = "name,arrival,duration,gpu,gpumem\na,0,2,1,1000\n"
A100_40 = "NVIDIA A100-SXM4-40GB"

#: (name, cluster file text, trace file name and text, line warned, fragment)
MEANT_OTHERWISE = [
    ("mig-profile-memory",
     "scheduler:\n  migProfileAllowlist:\n    - models: [A100-SXM4-40GB]\n"
     "      profiles:\n        - 1g.5gb\n        - 2g.12gb\n"
     f"nodes:\n  - name: m\n    devices:\n      - {{id: GPU-M, type: {A100_40}, mode: mig}}\n",
     ("t.csv", ONE_POD), ("c.yaml", 6),
     f"MIG profile '2g.12gb': on card type '{A100_40}' HAMi's device plugin registers it "
     "with NVML's '2g' profile 2g.10gb (9984 MiB of memory)"),
    ("gpus-0-template",
     "nodes:\n" + T4_NODE + "  - name_prefix: cpu\n    replicas: 3\n    gpus: 0\n"
     "    card: {devmem: 15360, type: NVIDIA-Tesla T4}\n",
     ("t.csv", ONE_POD), ("c.yaml", 7),
     "node group 'cpu': 'gpus: 0' leaves the card template unused: these nodes have no "
     "HAMi cards"),
    ("devmem-in-gib",
     "nodes:\n" + T4_NODE + "  - name: big\n    devices:\n"
     "      - {id: GPU-B, type: NVIDIA A100-SXM4-80GB,\n         devmem: 80}\n",
     ("t.csv", ONE_POD), ("c.yaml", 8),
     "node 'big': card 0: devmem 80 is MiB, did you mean 81920 (80 GiB)?"),
    ("devmem-in-gib-json-group",
     '{"nodes": [\n  {"name_prefix": "g", "replicas": 2, "gpus": 1,\n'
     '   "card": {"type": "NVIDIA-Tesla T4", "devmem": 16}}\n]}\n',
     ("t.csv", ONE_POD), ("c.json", 3),
     "node group 'g': card template: devmem 16 is MiB, did you mean 16384 (16 GiB)?"),
    ("node-memory-in-gib",
     "nodes:\n  - name: t4\n    cpu_milli: 64000\n    memory_mib: 512\n"
     "    devices:\n      - {id: GPU-T, devmem: 15360, type: NVIDIA-Tesla T4}\n",
     ("t.csv", ONE_POD), ("c.yaml", 4),
     "node 't4': 'memory_mib: 512' is less than a GPU server has, did you mean 524288 "
     "(512 GiB)?"),
    ("node-cpus-json",
     '{"nodes": [{"name": "t4", "cpu_milli": 64, "memory_mib": 262144,\n'
     '  "devices": [{"id": "GPU-T", "devmem": 15360, "type": "NVIDIA-Tesla T4"}]}]}\n',
     ("t.csv", ONE_POD), ("c.json", 1),
     "node 't4': 'cpu_milli: 64' is less than a GPU server has, did you mean 64000 (64 CPUs)?"),
    ("annotation-mode",
     "nodes:\n  - name: n\n    devices: >-\n"
     '      [{"id": "GPU-A", "type": "NVIDIA-Tesla T4", "devmem": 15360, "count": 10,\n'
     '        "devcore": 100, "health": true, "mode": "hami_core"}]\n',
     ("t.csv", ONE_POD), ("c.yaml", 3),
     "card mode 'hami_core' is none HAMi's device plugin registers (hami-core, mig, mps)"),
    ("default-cores",
     "scheduler:\n  default_cores: 150\nnodes:\n" + T4_NODE,
     ("t.csv", ONE_POD), ("c.yaml", 2),
     "'default_cores: 150' is more than one card's 100 percent: HAMi charges it as 100"),
    ("gpucores-csv",
     "nodes:\n" + T4_NODE,
     ("t.csv", "name,arrival,duration,gpu,gpumem,gpucores\na,0,2,1,1000,50\n"
               "b,1,2,1,1000,150\nc,2,2,1,1000,150\n"), ("t.csv", 3),
     "pod 'b': gpucores 150 is more than one card's 100 percent: HAMi charges it as 100"),
    ("use-gputype-typo",
     "nodes:\n" + T4_NODE,
     ("t.csv", "name,arrival,duration,gpu,gpumem,use_gputype,nouse_gputype\n"
               "a,0,2,1,1000,t4,\nb,1,2,1,1000,,T4\nc,2,2,1,1000,T4,\nd,3,2,1,1000,,T4\n"),
     ("t.csv", 3),
     "pod 'b': nvidia.com/nouse-gputype 'T4' leaves it no card of the cluster, so HAMi "
     "never binds it (card types: NVIDIA-Tesla T4;"),
    ("use-gpuuuid-unknown",
     "nodes:\n" + T4_NODE,
     ("t.jsonl", '{"name": "a", "arrival": 0, "gpu": 1, "use_gpuuuid": ["GPU-T"]}\n'
                 '{"name": "b", "arrival": 1, "gpu": 1, "use_gpuuuid": ["GPU-X", "GPU-Y"]}\n'
                 '{"name": "c", "arrival": 1, "gpu": 0, "use_gputype": "H100"}\n'),
     ("t.jsonl", 2),
     "pod 'b': nvidia.com/use-gpuuuid 'GPU-X,GPU-Y' leaves it no card of the cluster"),
    ("gpucores-jsonl-container",
     "nodes:\n" + T4_NODE,
     ("t.jsonl", '{"name": "a", "arrival": 0, "gpu": 1}\n'
                 '{"name": "b", "arrival": 1, "containers": [{"gpu": 1, "gpucores": 120}]}\n'),
     ("t.jsonl", 2),
     "pod 'b': gpucores 120 is more than one card's 100 percent"),
    ("gang-annotation-jsonl",
     "nodes:\n" + T4_NODE,
     ("t.jsonl", '{"name": "a", "arrival": 0, "gpu": 1}\n'
                 '{"name": "b", "arrival": 1, "gpu": 1, "annotations": '
                 '{"scheduling.k8s.io/group-name": "job-1"}}\n'
                 '{"name": "c", "arrival": 1, "gpu": 1, "annotations": '
                 '{"scheduling.k8s.io/group-name": "job-2"}}\n'),
     ("t.jsonl", 2),
     "annotation scheduling.k8s.io/group-name='job-1' (Volcano's PodGroup, gang scheduling) "
     "is accepted and not modelled: pods are scheduled one by one"),
    ("gang-annotation-csv",
     "nodes:\n" + T4_NODE,
     ("t.csv", 'name,arrival,duration,gpu,annotations\na,0,2,1,\n'
               'b,1,2,1,"{""scheduling.x-k8s.io/pod-group"": ""pg""}"\n'
               'c,1,2,1,"{""scheduling.x-k8s.io/pod-group"": ""pg""}"\n'),
     ("t.csv", 3),
     "annotation scheduling.x-k8s.io/pod-group='pg' (scheduler-plugins Coscheduling's "
     "PodGroup, gang scheduling) is accepted and not modelled"),
]


@pytest.mark.parametrize("name,cluster,trace,where,fragment", MEANT_OTHERWISE,
                         ids=[c[0] for c in MEANT_OTHERWISE])
def test_values_hami_reads_otherwise_warn_once_at_their_line(name, cluster, trace, where,
                                                             fragment, tmp_path, capsys):
    cpath = tmp_path / ("c.json" if cluster.startswith("{") else "c.yaml")
    cpath.write_text(cluster)
    tpath = tmp_path / trace[0]
    tpath.write_text(trace[1])
    status = main(["run", str(cpath), str(tpath), "--as-traced", "--out",
                   str(tmp_path / "out"), "--format", "csv"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert warning_lines(err) == [line for line in err.splitlines()
                                  if line.startswith(f"hamisim: {tmp_path / where[0]}:")]
    assert len(warning_lines(err)) == 1, err
    assert warning_lines(err)[0].startswith(
        f"hamisim: {tmp_path / where[0]}:{where[1]}: warning: "), err
    assert fragment in err
    assert (tmp_path / "out" / "summary.json").exists()


def test_gpucores_above_100_is_charged_as_100(tmp_path):
    """What the gpucores warning says: HAMi's Fit charges 150 as a whole card's
    cores, so a second pod asking cores finds no room on a one-card node."""
    cpath = tmp_path / "c.yaml"
    cpath.write_text("nodes:\n" + T4_NODE)
    spath = tmp_path / "s.yaml"
    spath.write_text(cpath.read_text() + textwrap.dedent("""\
        steps:
          - create: {name: big, gpu: 1, gpumem: 1000, gpucores: 150}
          - create: {name: small, gpu: 1, gpumem: 1000, gpucores: 10}
        """))
    with pytest.warns(Warning, match=r"s\.yaml:6: warning: pod 'big': gpucores 150"):
        result = run_scenario(load_scenario(spath), backend="reference")
    bound = {e.pod: e.devices for e in result.events if e.devices}
    assert list(bound) == ["big"]


def test_a_scenario_pod_no_card_allows_warns_at_its_step(tmp_path, capsys):
    """The card filters are checked against the scenario's own cluster: a type that
    matches no card warns at the step that creates the pod, which stays pending."""
    spath = tmp_path / "s.yaml"
    spath.write_text("nodes:\n" + T4_NODE + textwrap.dedent("""\
        steps:
          - create: {name: ok, gpu: 1, gpumem: 1000, use_gputype: tesla}
          - create: {name: typo, gpu: 1, gpumem: 1000, use_gputype: A100}
          - expect: {ok: GPU-T, typo: pending}
        """))
    assert main(["scenario", str(spath)]) == 0
    assert warning_lines(capsys.readouterr().err) == [
        f"hamisim: {spath}:7: warning: pod 'typo': nvidia.com/use-gputype 'A100' leaves it no "
        "card of the cluster, so HAMi never binds it (card types: NVIDIA-Tesla T4; types "
        "match as case-insensitive substrings, UUIDs exactly)"]


def test_explain_warns_about_a_pod_file_as_run_does(tmp_path, capsys):
    """explain's own pod file (the trace-column form) gets the gpucores warning too."""
    ppath = tmp_path / "p.yaml"
    ppath.write_text("name: p\ngpu: 1\ngpumem: 1000\ngpucores: 300\n")
    assert main(["explain", str(GOOD_CLUSTER), str(ppath)]) == 0
    assert warning_lines(capsys.readouterr().err) == [
        f"hamisim: {ppath}:1: warning: pod 'p': gpucores 300 is more than one card's 100 "
        "percent: HAMi charges it as 100 on every card (gpucores is per card)"]


def test_a_state_pod_with_more_init_containers_than_segments_warns(tmp_path, capsys):
    """init_containers beyond the containers 'devices' gives makes every container
    an init container (peak, not sum): valid, and warned at its line."""
    spath = tmp_path / "state.yaml"
    spath.write_text("pods:\n  - name: p\n    node: node1\n"
                     "    devices: \"GPU-A,NVIDIA,1000,0:;GPU-A,NVIDIA,2000,0:;\"\n"
                     "    init_containers: 3\n")
    status = main(["run", str(GOOD_CLUSTER), str(GOOD_TRACE), "--as-traced", "--state",
                   str(spath), "--out", str(tmp_path / "out"), "--format", "csv"])
    assert status == 0
    assert warning_lines(capsys.readouterr().err) == [
        f"hamisim: {spath}:5: warning: pod 'p': 'init_containers: 3' is more than the 2 "
        "containers 'devices' gives: all of them count as init containers (the pod's usage "
        "is their peak, not their sum)"]
