"""``hamisim validate`` end to end: the command, its folder (validation.json,
disagreements.csv, report.html, explain bundles), ``hamisim explain`` on a
disagreement, ``hamisim report`` on the folder, located errors."""
from __future__ import annotations

import csv
import gzip
import json
import shlex

import pytest

from hamisim.cli import main
from hamisim.io.auditlog import audit_lines, write_lines
from hamisim.pods import Container, Pod
from hamisim.studies.validate import CSV_COLUMNS

from samples import group_cluster


def _pod(name: str, mem: int) -> Pod:
    return Pod(name, (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": mem}),),
               cpu_milli=100, memory_mib=100)


def _inputs(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(group_cluster(3, gpus=2, count=10, scheduler="node_scheduler_policy: "
                                     "binpack, gpu_scheduler_policy: binpack"))
    pods = {"a": _pod("a", 4000), "b": _pod("b", 4000), "c": _pod("c", 4000)}
    rows = [(0, "a", "arrive", None, None), (0, "a", "bind", "gpu-2", "GPU-gpu-2-1,NVIDIA,4000,0:;"),
            # binpack would add b to gpu-2; the log puts it on gpu-0
            (5, "b", "arrive", None, None), (5, "b", "bind", "gpu-0", "GPU-gpu-0-1,NVIDIA,4000,0:;"),
            (9, "c", "arrive", None, None), (9, "c", "bind", "gpu-2", "GPU-gpu-2-1,NVIDIA,4000,0:;")]
    lines = list(audit_lines(pods, rows))
    # two files, the older gzip'd
    old, new = tmp_path / "audit-1.log.gz", tmp_path / "audit.log"
    with gzip.open(old, "wt") as fh:
        fh.write("\n".join(lines[:5]) + "\n")
    write_lines(lines[5:], new)
    return cluster, old, new


def test_validate_writes_its_folder_and_explain_follows_a_disagreement(tmp_path, capsys,
                                                                       monkeypatch):
    cluster, old, new = _inputs(tmp_path)
    out = tmp_path / "val"
    # paths relative to the folder validate runs in ...
    monkeypatch.chdir(tmp_path)
    assert main(["validate", cluster.name, old.name, new.name, "--out", "val"]) == 0
    old, new = old.name, new.name
    text = capsys.readouterr().out
    assert "hamisim validate: 3 pods compared" in text
    assert "node agreement 66.67 %" in text and "card agreement 100.00 %" in text
    assert "disagrees: default/b" in text
    s = json.loads((out / "validation.json").read_text())
    assert s["pods_compared"] == 3 and s["node_outcomes"]["disagree"] == 1
    assert s["reader"]["files"] == [str(old), str(new)]
    with open(out / "disagreements.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        (row,) = list(reader)
    assert (row["pod"], row["recorded_node"], row["hamisim_node"]) == ("default/b", "gpu-0",
                                                                        "gpu-2")
    html = (out / "report.html").read_text()
    assert "Validation against the audit log" in html and "default/b" in html
    # the row's explain command shows HAMi choosing hamisim's node in that state, run
    # from elsewhere (... and the command's paths absolute)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    argv = shlex.split(row["explain"])
    assert argv[0] == "hamisim"
    assert main(argv[1:] + ["--json"]) == 0
    exp = json.loads(capsys.readouterr().out)
    assert exp["result"]["node"] == "gpu-2" and exp["pod"] == "default/b"
    # hamisim report re-renders the folder
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0
    assert "Validation against the audit log" in (out / "report.html").read_text()


def test_cluster_as_an_import_folder(tmp_path, capsys):
    cluster, old, new = _inputs(tmp_path)
    folder = tmp_path / "imported"
    folder.mkdir()
    (folder / "cluster.yaml").write_text(cluster.read_text())
    assert main(["validate", str(folder), str(old), str(new), "--out",
                 str(tmp_path / "v2")]) == 0
    assert "3 pods compared" in capsys.readouterr().out


def test_a_malformed_line_exits_2_located(tmp_path, capsys):
    cluster, old, new = _inputs(tmp_path)
    with open(new, "a") as fh:
        fh.write('{"kind": "Event", "verb": \n')
    n_lines = len(new.read_text().splitlines())
    out = tmp_path / "val"
    assert main(["validate", str(cluster), str(old), str(new), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{new}:{n_lines}: not a JSON audit event" in err
    assert not out.exists()


def _patch_of(lines: list[str], pod: str) -> int:
    """The index of HAMi's annotation patch of ``pod`` among ``lines``."""
    return next(i for i, ln in enumerate(lines)
                if json.loads(ln)["verb"] == "patch" and f"/pods/{pod}" in ln
                and "subresource" not in json.loads(ln)["objectRef"])


def test_a_json_patch_in_the_log_is_read(tmp_path, capsys):
    # kubectl patch --type=json logs its operations as requestObject (an array)
    cluster, old, new = _inputs(tmp_path)
    lines = new.read_text().splitlines()
    i = _patch_of(lines, "b")
    ev = json.loads(lines[i])
    ann = ev["requestObject"]["metadata"]["annotations"]
    ev["requestObject"] = [{"op": "add", "path": "/metadata/annotations", "value": ann}]
    ev["responseObject"] = {"kind": "Pod", "apiVersion": "v1",
                            "metadata": {"name": "b", "namespace": "default",
                                         "annotations": ann}}
    lines[i] = json.dumps(ev)
    write_lines(lines, new)
    out = tmp_path / "val"
    assert main(["validate", str(cluster), str(old), str(new), "--out", str(out)]) == 0
    s = json.loads((out / "validation.json").read_text())
    assert s["pods_compared"] == 3 and s["card_agreement_pct"] == 100.0


@pytest.mark.parametrize("path, value, problem", [
    (("requestObject", "metadata", "annotations", "hami.io/vgpu-devices-allocated"), 5,
     "audit event: annotation hami.io/vgpu-devices-allocated must be a string, got int"),
    (("requestObject", "metadata", "annotations", "hami.io/vgpu-devices-allocated"),
     "GPU-gpu-0-1,NVIDIA;", "has 2 fields; expected UUID,TYPE,MEM,CORES"),
])
def test_a_mistyped_annotation_exits_2_located(tmp_path, capsys, path, value, problem):
    cluster, old, new = _inputs(tmp_path)
    lines = new.read_text().splitlines()
    i = _patch_of(lines, "b")
    ev = json.loads(lines[i])
    d = ev
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    lines[i] = json.dumps(ev)
    write_lines(lines, new)
    out = tmp_path / "val"
    assert main(["validate", str(cluster), str(old), str(new), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{new}:{i + 1}: " in err and problem in err
    assert not out.exists()


def test_files_out_of_time_order_are_warned_located(tmp_path, capsys):
    cluster, old, new = _inputs(tmp_path)
    out = tmp_path / "val"
    assert main(["validate", str(cluster), str(new), str(old), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    # old's line 1 is the create's RequestReceived stage; its line 2 goes back 9 s
    warned = [ln for ln in err.splitlines() if "time goes back" in ln]
    assert len(warned) == 1 and warned[0].startswith(f"hamisim: {old}:2: warning: ")
    s = json.loads((out / "validation.json").read_text())
    assert s["reader"]["n_warnings"] == 1
    # oldest first: no warning
    assert main(["validate", str(cluster), str(old), str(new), "--out", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_the_explain_command_carries_the_policy_overrides(tmp_path, capsys):
    # the comparison ran under --gpu-policy spread: its explain replays under it too
    cluster, old, new = _inputs(tmp_path)
    out = tmp_path / "val"
    assert main(["validate", str(cluster), str(old), str(new), "--out", str(out),
                 "--gpu-policy", "spread", "--node-policy", "binpack"]) == 0
    with open(out / "disagreements.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    for row in rows:
        argv = shlex.split(row["explain"])
        assert argv[argv.index("--gpu-policy") + 1] == "spread"
        assert argv[argv.index("--node-policy") + 1] == "binpack"


@pytest.mark.parametrize("value", ["nan", "-1", "inf"])
def test_a_pending_grace_that_is_no_duration_is_refused(tmp_path, capsys, value):
    cluster, old, new = _inputs(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["validate", str(cluster), str(old), "--out", str(tmp_path / "v"),
              "--pending-grace", value])
    assert exit_.value.code == 2
    assert "--pending-grace" in capsys.readouterr().err
    assert not (tmp_path / "v").exists()


def test_a_misspelt_policy_override_is_warned_about(tmp_path, capsys):
    cluster, old, new = _inputs(tmp_path)
    main(["validate", str(cluster), str(old), str(new), "--out", str(tmp_path / "v"),
          "--gpu-policy", "binpak"])
    assert "--gpu-policy" in capsys.readouterr().err


def test_a_pod_asking_only_gpumem_is_compared(tmp_path, capsys):
    # HAMi's webhook gives a container with gpumem alone default_gpu_num cards: the
    # extender decides it, so validate compares it instead of skipping it
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(group_cluster(2, gpus=1, count=10, scheduler="node_scheduler_policy: "
                                     "binpack, gpu_scheduler_policy: binpack"))
    pods = {"m": Pod("m", (Container({"nvidia.com/gpumem": 3000}),), cpu_milli=100,
                     memory_mib=100)}
    rows = [(0, "m", "arrive", None, None),
            (1, "m", "bind", "gpu-1", "GPU-gpu-1-0,NVIDIA,3000,0:;")]
    log = tmp_path / "audit.log"
    write_lines(list(audit_lines(pods, rows)), log)
    assert main(["validate", str(cluster), str(log), "--out", str(tmp_path / "v")]) == 0
    s = json.loads((tmp_path / "v" / "validation.json").read_text())
    assert s["pods_compared"] == 1, s["skipped"]


def test_a_mig_run_folder_validates_completely(tmp_path, capsys):
    # hamisim run's folder on MIG and hami-core nodes, written as the API server logs
    # it (run_audit_lines: the pods table's mig_allocations at the binds)
    from hamisim.io.auditlog import run_audit_lines
    from samples import MIG_MIXED_CLUSTER
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(MIG_MIXED_CLUSTER)
    trace = tmp_path / "trace.csv"
    trace.write_text("name,arrival,duration,gpu,gpumem,gpucores\n" + "".join(
        f"p{i},{i},{300 + 40 * i},1,{(3000, 9000, 18000, 12000)[i % 4]},10\n"
        for i in range(24)))
    assert main(["run", str(cluster), str(trace), "--out", str(tmp_path / "run"),
                 "--format", "csv", "--events", "all"]) == 0   # the log needs every attempt
    log = tmp_path / "audit.log"
    lines = list(run_audit_lines(tmp_path / "run", trace))
    assert any("hami.io/vgpu-mig-allocations" in ln for ln in lines)
    write_lines(lines, log)
    capsys.readouterr()
    assert main(["validate", str(cluster), str(log), "--out", str(tmp_path / "val")]) == 0
    text = capsys.readouterr().out
    assert "hamisim validate: 24 pods compared" in text
    assert "node agreement 100.00 %" in text and "card agreement 100.00 %" in text
    assert "MIG instance agreement 100.00 %" in text


@pytest.mark.parametrize("policy, grace, seed", [("spread", 0, 1), ("binpack", 5, 2)])
def test_a_preempting_run_folder_validates_completely(tmp_path, capsys, policy, grace, seed):
    # a cluster full in CPU, pods of four priorities: kube-scheduler preempts (victims
    # gone at once, or terminating for their grace period), nominates the preemptors,
    # clears nominations whose preemption later finds no candidate; run_audit_lines
    # derives those patches from the events, and the log agrees on every node and card
    import random
    from hamisim.io.auditlog import run_audit_lines
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(group_cluster(4, gpus=2, count=10, cpu_milli=4000,
                                     scheduler=f"node_scheduler_policy: {policy}, "
                                               "gpu_scheduler_policy: binpack"))
    rnd = random.Random(seed)
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "name,arrival,duration,gpu,gpumem,gpucores,cpu_milli,memory_mib,priority,"
        "termination_grace_period\n" + "".join(
            f"p{i},{i * 0.7:.1f},{rnd.choice([20, 40, 80])},{rnd.choice([1, 1, 2])},"
            f"{rnd.choice([2000, 4000, 8000])},10,{rnd.choice([500, 1000, 1500, 2000])},1024,"
            f"{rnd.choice([0, 0, 5, 10, 20])},{grace}\n" for i in range(120)))
    assert main(["run", str(cluster), str(trace), "--out", str(tmp_path / "run"),
                 "--format", "csv", "--events", "all"]) == 0   # the log needs every attempt
    with open(tmp_path / "run" / "events.csv") as fh:
        events = list(csv.DictReader(fh))
    preemptors = {e["message"].split()[3] for e in events if e["event"] == "preempt"}
    assert len(preemptors) >= 10
    lines = list(run_audit_lines(tmp_path / "run", trace))
    patches = [json.loads(ln) for ln in lines if "nominatedNodeName" in ln]
    nominations = [p for p in patches if p["requestObject"]["status"]["nominatedNodeName"]]
    assert {n["objectRef"]["name"] for n in nominations} == preemptors
    assert len(patches) > len(nominations)            # some were cleared
    log = tmp_path / "audit.log"
    write_lines(lines, log)
    capsys.readouterr()
    assert main(["validate", str(cluster), str(log), "--out", str(tmp_path / "val")]) == 0
    assert "decided on the pod's nominated node" in capsys.readouterr().out
    s = json.loads((tmp_path / "val" / "validation.json").read_text())
    assert s["pods_compared"] == 120 and s["skipped"] == {}
    assert s["node_agreement_pct"] == 100.0 and s["card_agreement_pct"] == 100.0
    assert s["bound_but_unschedulable"] == 0 and s["pending_but_schedulable"] == 0
    # preemptors' bindings were decided on their nominated nodes
    assert 10 <= s["decided_on_nominated_node"] <= len(preemptors)
