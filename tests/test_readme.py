"""The README's "Your own cluster and trace" example works as printed."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from hamisim.cli import main
from hamisim.io.clusterfile import load_cluster

README = Path(__file__).resolve().parent.parent / "README.md"


def section() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("## Your own cluster and trace"):text.index("## Runs and comparisons")]


def test_the_example_cluster_and_trace_run_as_printed(tmp_path, capsys):
    blocks = re.findall(r"```(yaml|csv)\n(.*?)```", section(), re.S)
    cluster, scores = [b for kind, b in blocks if kind == "yaml"]
    (trace,) = [b for kind, b in blocks if kind == "csv"]
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "trace.csv").write_text(trace)
    assert main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.csv"),
                 "--format", "csv", "--out", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert "cluster.yaml: 24 nodes, 160 GPUs (128 NVIDIA-H100, 32 NVIDIA-Tesla T4)" in out
    pods = pd.read_csv(tmp_path / "results" / "pods.csv").set_index("pod")
    assert pods["bind"].notna().all()                       # every example pod fits
    assert pods.loc["train-1", "class"] == "training"
    # the pair-score snippet, in a four-card group
    (tmp_path / "box.yaml").write_text("nodes:\n  - name_prefix: box\n    replicas: 1\n"
                                       "    gpus: 4\n    card: {devmem: 16000, type: NVIDIA}\n"
                                       + scores)
    (node,) = load_cluster(tmp_path / "box.yaml").nodes
    assert node.pair_scores["GPU-box-0-0"] == {"GPU-box-0-1": 100, "GPU-box-0-2": 40,
                                               "GPU-box-0-3": 40}


def test_the_scale_example_prints_what_the_readme_shows(tmp_path, capsys):
    # the "A busier week" example: the lines shown are lines the command prints
    text = README.read_text(encoding="utf-8")
    part = text[text.index("**A busier week, and the span the figures cover**"):]
    (block,) = re.findall(r"```\n\$ (hamisim run .*?)\n(.*?)```", part, re.S)[:1]
    command, shown = block
    argv = command.split()[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "busier")
    root = README.parent
    argv = [str(root / a) if a.startswith("workloads/") else a for a in argv]
    assert main([*argv, "--no-progress"]) == 0
    printed = capsys.readouterr().out.splitlines()
    for line in shown.strip("\n").splitlines():
        assert line in printed


def test_the_card_types_example_warns_and_counts_as_printed(tmp_path, capsys, monkeypatch):
    # "Cards no simulated family offers": the cluster block, run on a small
    # trace, prints the warning and the cluster line shown
    text = README.read_text(encoding="utf-8")
    part = text[text.index("**Cards no simulated family offers.**"):]
    cluster = re.findall(r"```yaml\n(.*?)```", part, re.S)[0]
    (shown,) = re.findall(r"```\n\$ hamisim run cluster.yaml trace.csv --out results\n(.*?)```",
                          part, re.S)[:1]
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "trace.csv").write_text("name,arrival,duration,gpu,gpumem\n"
                                        + "".join(f"p{k},{k},60,1,4000\n" for k in range(8)))
    monkeypatch.chdir(tmp_path)     # the warning names the file as the command gives it
    assert main(["run", "cluster.yaml", "trace.csv", "--out", "results", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    printed = err.splitlines() + out.splitlines()
    for line in shown.strip("\n").splitlines():
        assert line in printed, line


def test_the_device_families_example_runs_as_printed(tmp_path, capsys):
    # "Device families": the cluster block and the trace, each pod on its family's
    # cards, AMD's 50 % of 304 CUs charged as 152 CUs, a row per family
    text = README.read_text(encoding="utf-8")
    part = text[text.index("**Device families.**"):
                text.index("**Cards no simulated family offers.**")]
    (cluster,) = re.findall(r"```yaml\n(.*?)```", part, re.S)
    (lines,) = re.findall(r"```json\n(.*?)```", part, re.S)
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "trace.jsonl").write_text(lines)
    assert main(["run", str(tmp_path / "cluster.yaml"), str(tmp_path / "trace.jsonl"),
                 "--out", str(tmp_path / "results"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert ("cluster.yaml: 9 nodes, 56 GPUs (16 DCU, 8 NVIDIA-Tesla T4, 8 AMD_Instinct_MI300X, "
            "8 Biren-BR104, 8 Mthreads, 4 MLU, 4 Ascend910B3)") in out
    assert ("NVIDIA (8 cards), DCU (16 cards), AMD (8 cards), MLU (4 cards), Biren (8 cards), "
            "Mthreads (8 cards), Ascend910B3 (4 cards)") in out
    pods = pd.read_parquet(tmp_path / "results" / "pods.parquet").set_index("pod")
    assert pods.loc["infer-1", "devices"] == "GPU-dcu-1-7,DCU,8192,25:;"
    assert pods.loc["train-1", "devices"] == ("GPU-mi-0-7,AMD_Instinct_MI300X,98304,152:"
                                              "GPU-mi-0-6,AMD_Instinct_MI300X,98304,152:;")
    assert pods.loc["mlu-1", "devices"] == "GPU-mlu-0-3,MLU,4096,25:;"
    # Biren charges a slot only: no memory, no cores, the request's type
    assert pods.loc["br-1", "devices"] == "GPU-br-0-7,Biren,0,0:GPU-br-0-6,Biren,0,0:;"
    # Moore Threads: 16 units of 512 MiB, 4 of the card's 16 cores
    assert pods.loc["mt-1", "devices"] == "GPU-mt-0-7,Mthreads,8192,4:;"
    assert pods.loc["mt-1", "class"] == "1 Mthreads: 8192 MiB, 4/16 cores"
    assert pods.loc["infer-1", "class"] == "1 DCU: 8192 MiB, 25% cores"
    # Ascend: 10000 MiB rounded up to the 16 GiB template; a soft split keeps its
    # memory and cores (the node runs hami-vnpu-core)
    assert pods.loc["npu-1", "devices"] == "GPU-npu-0-3,Ascend910B3,16384,0:;"
    assert pods.loc["npu-2", "devices"].endswith(",Ascend910B3,4096,25:;")
