"""The same inputs and seed give byte-identical results folders, run as users
run them: the CLI in separate processes (each with its own hash seed), for
the runs where a seed matters (re-timed arrivals, fill mode, random node
tie-breaks) and for ``compare``."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from samples import group_cluster

CLUSTER = group_cluster(6, gpus=4, scheduler="gpu_scheduler_policy: binpack, "
                                             "node_scheduler_policy: spread")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "cluster.yaml").write_text(CLUSTER)
    rows = ["name,arrival,duration,gpu,gpumem_percentage,gpucores,cpu_milli"]
    for i in range(80):
        share = [25, 50, 100][i % 3]
        rows.append(f"p{i},{i * 0.5:.1f},{20 + (i * 13) % 17},1,{share},{share},2000")
    (folder / "trace.csv").write_text("\n".join(rows) + "\n")
    return folder


def _cli(args: list[str], cwd, hash_seed: str) -> None:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    proc = subprocess.run([sys.executable, "-m", "hamisim.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def _files(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("case,args", [
    ("re-timed, random ties", ["run", "cluster.yaml", "trace.csv", "--load", "0.7", "--pods",
                               "60", "--node-tie-break", "random", "--seed", "5"]),
    ("compare in fill mode", ["compare", "cluster.yaml", "trace.csv", "--gpu-policy",
                              "binpack,spread", "--mode", "fill", "--seeds", "2",
                              "--keep-runs"]),
])
def test_reruns_in_separate_processes_are_byte_identical(inputs, case, args):
    out = {}
    for k, hash_seed in enumerate(("1", "2")):
        folder = inputs / f"{case.replace(' ', '-').replace(',', '')}-{k}"
        _cli([*args, "--out", str(folder)], inputs, hash_seed)
        out[k] = _files(folder)
    assert out[0].keys() == out[1].keys() and any(n.endswith(".png") for n in out[0])
    for name in out[0]:
        assert out[0][name] == out[1][name], name
