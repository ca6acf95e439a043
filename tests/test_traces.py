"""Trace files, the openb reader and workload transforms (hamisim.traces, hamisim.openb)."""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hamisim.cluster import Cluster
from hamisim.errors import InputError
from hamisim.openb import OPENB_CARD_MEMORY_MIB, openb_card_type, read_openb_pods
from hamisim.pods import GPU, GPUCORES, GPUMEM, GPUMEM_PERCENTAGE, Container, Pod
from hamisim.reference import type_allowed
from hamisim.traces import (Trace, TracePod, cluster_from_path, fill_workload, gpu_request,
                            lifetime, offered_load, poisson_rate, read_openb_nodes, read_trace,
                            retime, write_trace)

OPENB = Path(__file__).resolve().parent.parent / "workloads" / "openb"
DEFAULT = OPENB / "openb_pod_list_default.csv"
GPU_NODES = OPENB / "openb_node_list_gpu_node.csv"
CAPACITY = 6212


@pytest.fixture(scope="module")
def default_trace() -> Trace:
    return read_trace(DEFAULT)


def openb_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def error_of(path) -> InputError:
    with pytest.raises(InputError) as info:
        read_trace(path)
    return info.value


# ---------------------------------------------------------------------------
# native round trip

def sample_trace() -> Trace:
    pods = [
        TracePod(Pod("cpu-only", (Container(),), cpu_milli=2000, memory_mib=512), 0.0, line=2),
        TracePod(Pod("frac", (Container({GPU: 1, GPUCORES: 30, GPUMEM_PERCENTAGE: 30}),),
                     annotations={"nvidia.com/use-gputype": "T4,A10",
                                  "hami.io/gpu-scheduler-policy": "binpack"}),
                 1.25, duration=60.5, line=3),
        TracePod(Pod("mem, \"quoted\" ünïcode", (Container({GPU: 2, GPUMEM: 4000}),),
                     annotations={"nvidia.com/numa-bind": "true", "example.com/team": "a,b"},
                     priority=-5),
                 1.25, deletion=100.0, line=4),
        TracePod(Pod("multi", (Container({GPU: 1}), Container(requests={GPU: 1, GPUMEM: 10})),
                     init_containers=(Container({GPU: 1, GPUCORES: 100}),)),
                 0.1 + 0.2, duration=0.0, deletion=7.5, line=5),
        TracePod(Pod("zero-gpu", (Container({GPU: 0}),)), 3e-7, line=6),
    ]
    return Trace("sample", pods)


def same_pods(a: Trace, b: Trace) -> bool:
    return [(p.pod, p.arrival, p.duration, p.deletion) for p in a.pods] == \
        [(p.pod, p.arrival, p.duration, p.deletion) for p in b.pods]


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".jsonl"])
def test_native_round_trip(tmp_path, ext):
    trace = sample_trace()
    path = tmp_path / f"t{ext}"
    write_trace(trace, path)
    back = read_trace(path)
    assert same_pods(trace, back)
    assert back.format == ext[1:] and back.name == "t" and back.path == str(path)
    assert os.listdir(tmp_path) == [path.name]  # the temporary file is gone


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".jsonl"])
def test_openb_round_trips_through_native(tmp_path, default_trace, ext):
    path = tmp_path / f"default{ext}"
    write_trace(default_trace, path)
    assert same_pods(default_trace, read_trace(path))


def test_csv_lines_and_flat_columns(tmp_path):
    path = tmp_path / "t.csv"
    write_trace(sample_trace(), path)
    header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[:4] == ["name", "arrival", "duration", "deletion"]
    assert "use_gputype" in header and "annotations" in header and "containers" in header
    back = read_trace(path)
    assert [tp.line for tp in back.pods] == [2, 3, 4, 5, 6]
    assert back.where(back.pods[1]) == f"{path}:3"


def test_write_is_atomic_on_failure(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("old", encoding="utf-8")
    bad = Trace("bad", [TracePod(Pod("x", ()), 0.0)])
    with pytest.raises(ValueError, match="without containers"):
        write_trace(bad, path)
    assert path.read_text(encoding="utf-8") == "old"
    assert os.listdir(tmp_path) == ["t.csv"]


def test_iter_arrivals_is_stable(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("name,arrival\nc,5\na,1\nb,5\nd,0.5\n", encoding="utf-8")
    trace = read_trace(path)
    assert [tp.name for tp in trace.iter_arrivals()] == ["d", "a", "c", "b"]
    assert [tp.name for tp in trace.pods] == ["c", "a", "b", "d"]


def test_optional_columns_and_empty_cells(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("name,arrival,duration,deletion,gpu,gpucores,numa_bind\n"
                    "a,0,,,1,,\n"
                    "b,1.5,10,,,,true\n", encoding="utf-8")
    a, b = read_trace(path).pods
    assert a.pod.containers == (Container({GPU: 1}),)
    assert (a.duration, a.deletion) == (None, None)
    assert b.pod.containers == (Container(),) and b.duration == 10.0
    assert b.pod.annotations == {"nvidia.com/numa-bind": "true"}


# ---------------------------------------------------------------------------
# malformed native files: the exact location in the message

CSV_CASES = [
    # (id, file text, expected line or None, message fragment)
    ("unknown-column", "name,arrival,gpus\na,0,1\n", 1, "unknown column 'gpus'"),
    ("unknown-hint", "name,arrival,gpus\na,0,1\n", 1, "did you mean 'gpu'?"),
    ("missing-arrival-column", "name,gpu\na,1\n", 1, "missing required column 'arrival'"),
    ("missing-name-column", "arrival,gpu\n0,1\n", 1, "missing required column 'name'"),
    ("duplicate-column", "name,arrival,gpu,gpu\na,0,1,1\n", 1, "column 'gpu' appears twice"),
    ("blank-column", "name,arrival,\na,0,1\n", 1, "column 3 of the header has no name"),
    ("non-numeric-int", "name,arrival,gpu\na,0,1\nb,0,x\n", 3,
     "pod 'b': 'gpu' must be an integer, got 'x'"),
    ("fractional-int", "name,arrival,gpumem\na,0,1.5\n", 2, "'gpumem' must be an integer"),
    ("non-numeric-arrival", "name,arrival\na,0\nb,soon\n", 3,
     "pod 'b': 'arrival' must be a number, got 'soon'"),
    ("nan-arrival", "name,arrival\na,0\nb,nan\n", 3,
     "'arrival' must be a finite number, got 'nan'"),
    ("inf-duration", "name,arrival,duration\na,0,-inf\n", 2,
     "'duration' must be a finite number, got '-inf'"),
    ("overflow", "name,arrival\na,1e999\n", 2, "'arrival' must be a finite number"),
    ("underscore-number", "name,arrival\na,1_000\n", 2, "'arrival' must be a number"),
    ("negative-arrival", "name,arrival\na,0\nb,-1\n", 3, "pod 'b': 'arrival' must be >= 0"),
    ("negative-duration", "name,arrival,duration\na,0,-0.5\n", 2, "'duration' must be >= 0"),
    ("deletion-before-arrival", "name,arrival,deletion\na,0,1\nb,5,1\n", 3,
     "pod 'b': 'deletion' 1.0 is before 'arrival' 5.0"),
    ("duplicate-name", "name,arrival\na,0\nb,0\n\na,1\n", 5,
     "duplicate pod name 'a' (first on line 2, again on line 5)"),
    ("missing-name", "name,arrival\na,0\n,1\n", 3, "missing required key 'name'"),
    ("missing-arrival", "name,arrival\na,0\nb,\n", 3, "pod 'b': missing required value 'arrival'"),
    ("field-count", "name,arrival\na,0\nb,0,1\n", 3, "the row has 3 fields but the header has 2"),
    ("header-only", "name,arrival\n", 1, "the trace has no pods"),
    ("header-and-blank-lines", "name,arrival\n\n\n", 1, "the trace has no pods"),
    ("empty", "", None, "file is empty"),
    ("whitespace-only", "  \n\n", None, "file is empty"),
    ("crlf", "name,arrival\r\na,0\r\nb,x\r\n", 3, "'arrival' must be a number"),
    ("quoted-newline", 'name,arrival,gpu_policy\na,0,"bin\npack"\nb,0,\nc,-2,\n', 5,
     "'arrival' must be >= 0"),
    ("bad-quote", 'name,arrival\na,0\n"b"x,0\n', 3, "cannot parse the CSV row"),
    ("bad-json-cell", "name,arrival,containers\na,0,[{\n", 2, "'containers' must be JSON text"),
    ("bad-container-key", 'name,arrival,containers\na,0,"[{""gpux"":1}]"\n', 2,
     "unknown key 'gpux' in a container"),
    ("priority-range", "name,arrival,priority\na,0,9999999999\n", 2, "'priority' is too large"),
    ("negative-cpu", "name,arrival,cpu_milli\na,0,-1\n", 2, "'cpu_milli' must be >= 0"),
    ("shorthand-and-containers", 'name,arrival,gpu,containers\na,0,1,"[{}]"\n', 2,
     "mutually exclusive"),
]


@pytest.mark.parametrize("case,text,line,fragment", CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_csv_errors(tmp_path, case, text, line, fragment):
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode("utf-8"))
    err = error_of(path)
    assert err.path == str(path) and err.line == line, str(err)
    assert fragment in err.problem, str(err)
    prefix = f"{path}:{line}: " if line is not None else f"{path}: "
    assert str(err).startswith(prefix)


def test_csv_not_utf8(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"name,arrival\na,0\nb\xff,1\n")
    err = error_of(path)
    assert (err.line, "not valid UTF-8" in err.problem) == (3, True), str(err)


def test_unsupported_extension(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("name,arrival\na,0\n", encoding="utf-8")
    assert "unsupported trace file type '.txt'" in str(error_of(path))


JSONL_CASES = [
    ("invalid-json", '{"name":"a","arrival":0}\n{"name":"b",\n', 2, "invalid JSON"),
    ("not-object", '{"name":"a","arrival":0}\n[1]\n', 2, "must hold a JSON object"),
    ("nan", '{"name":"a","arrival":NaN}\n', 1, "NaN is not allowed"),
    ("infinity", '{"name":"a","arrival":0,"duration":Infinity}\n', 1, "Infinity is not allowed"),
    ("unknown-key", '{"name":"a","arrival":0}\n\n{"name":"b","arrival":0,"gpux":1}\n', 3,
     "unknown column 'gpux'"),
    ("missing-arrival", '{"name":"a"}\n', 1, "missing required key 'arrival'"),
    ("missing-name", '{"arrival":0}\n', 1, "missing required key 'name'"),
    ("string-arrival", '{"name":"a","arrival":"5"}\n', 1, "'arrival' must be a number, got '5'"),
    ("bool-arrival", '{"name":"a","arrival":true}\n', 1, "'arrival' must be a number"),
    ("float-int", '{"name":"a","arrival":0,"gpu":1.0}\n', 1, "'gpu' must be an integer"),
    ("string-int", '{"name":"a","arrival":0,"gpu":"1"}\n', 1,
     "'gpu' must be an integer, got string '1'"),
    ("negative-arrival", '{"name":"a","arrival":-3}\n', 1, "'arrival' must be >= 0"),
    ("deletion-before-arrival", '{"name":"a","arrival":3,"deletion":2}\n', 1, "is before"),
    ("duplicate-name", '{"name":"a","arrival":0}\n\n{"name":"a","arrival":1}\n', 3,
     "duplicate pod name 'a' (first on line 1, again on line 3)"),
    ("duplicate-key", '{"name":"a","arrival":0,"arrival":1}\n', 1, "duplicate key 'arrival'"),
    ("only-blank", "\n\n", None, "file is empty"),
    ("empty", "", None, "file is empty"),
]


@pytest.mark.parametrize("case,text,line,fragment", JSONL_CASES, ids=[c[0] for c in JSONL_CASES])
def test_jsonl_errors(tmp_path, case, text, line, fragment):
    path = tmp_path / "t.jsonl"
    path.write_text(text, encoding="utf-8")
    err = error_of(path)
    assert err.line == line and fragment in err.problem, str(err)


def test_jsonl_not_utf8(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"name":"a","arrival":0}\n{"name":"\xc3","arrival":0}\n')
    assert error_of(path).line == 2


def test_jsonl_nested_pod(tmp_path):
    path = tmp_path / "t.jsonl"
    row = {"name": "a", "arrival": 2, "containers": [{"gpu": 1, "gpucores": 20}, {}],
           "annotations": {"x/y": "z"}, "use_gputype": ["T4", "A10"], "numa_bind": True}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (tp,) = read_trace(path).pods
    assert tp.arrival == 2.0 and tp.pod.containers == (Container({GPU: 1, GPUCORES: 20}),
                                                       Container())
    assert tp.pod.annotations == {"x/y": "z", "nvidia.com/use-gputype": "T4,A10",
                                  "nvidia.com/numa-bind": "true"}


def write_parquet(path, columns: dict):
    pq.write_table(pa.table(columns), path)


PARQUET_CASES = [
    ("unknown-column", {"name": ["a"], "arrival": [0.0], "gpus": [1]}, "unknown column 'gpus'"),
    ("missing-arrival", {"name": ["a"], "gpu": [1]}, "missing required column 'arrival'"),
    ("nan-arrival", {"name": ["a", "b"], "arrival": [0.0, float("nan")]},
     "row 2: pod 'b': 'arrival' must be a finite number"),
    ("negative-duration", {"name": ["a", "b"], "arrival": [0.0, 1.0], "duration": [1.0, -1.0]},
     "row 2: pod 'b': 'duration' must be >= 0"),
    ("deletion-before", {"name": ["a"], "arrival": [5], "deletion": [4]},
     "row 1: pod 'a': 'deletion' 4.0 is before 'arrival' 5.0"),
    ("duplicate-name", {"name": ["a", "b", "a"], "arrival": [0, 0, 0]},
     "row 3: duplicate pod name 'a' (first on row 1, again on row 3)"),
    ("fractional-int", {"name": ["a"], "arrival": [0], "gpu": [1.5]},
     "row 1: pod 'a': 'gpu' must be an integer, got the fractional number 1.5"),
    ("nan-int", {"name": ["a", "b"], "arrival": [0, 0], "gpu": [1.0, float("nan")]},
     "row 2: pod 'b': 'gpu' must be an integer, got nan"),
    ("int-name", {"name": [7], "arrival": [0]}, "row 1: 'name' must be a string, got integer 7"),
    ("string-arrival", {"name": ["a"], "arrival": ["0"]},
     "row 1: pod 'a': 'arrival' must be a number"),
    ("null-arrival", {"name": ["a", "b"], "arrival": [0.0, None]},
     "row 2: pod 'b': missing required value 'arrival'"),
    ("bad-json", {"name": ["a"], "arrival": [0], "annotations": ["{"]},
     "row 1: 'annotations' must be JSON text"),
    ("no-rows", {"name": pa.array([], pa.string()), "arrival": pa.array([], pa.float64())},
     "the trace has no pods"),
]


@pytest.mark.parametrize("case,columns,fragment", PARQUET_CASES, ids=[c[0] for c in PARQUET_CASES])
def test_parquet_errors(tmp_path, case, columns, fragment):
    path = tmp_path / "t.parquet"
    write_parquet(path, columns)
    err = error_of(path)
    assert err.line is None and fragment in err.problem, str(err)
    assert str(err).startswith(f"{path}: ")


def test_parquet_integral_floats_and_nulls(tmp_path):
    path = tmp_path / "t.parquet"
    write_parquet(path, {"name": ["a", "b"], "arrival": [0, 3], "gpu": [1.0, None],
                         "duration": [None, 2.5]})
    a, b = read_trace(path).pods
    assert a.pod.containers == (Container({GPU: 1}),) and b.pod.containers == (Container(),)
    assert (a.duration, b.duration, b.arrival, b.line) == (None, 2.5, 3.0, 2)
    assert read_trace(path).where(b) == f"{path}: row 2"


@pytest.mark.parametrize("raw,fragment", [(b"", "file is empty"),
                                          (b"not parquet at all", "not a readable Parquet file")])
def test_parquet_unreadable(tmp_path, raw, fragment):
    path = tmp_path / "t.parquet"
    path.write_bytes(raw)
    assert fragment in error_of(path).problem


# ---------------------------------------------------------------------------
# openb pod lists

def test_openb_default_counts(default_trace):
    assert default_trace.format == "openb" and len(default_trace) == 8152
    limits = [tp.pod.containers[0].limits for tp in default_trace.pods]
    assert sum(1 for lim in limits if not lim) == 1088
    assert sum(1 for lim in limits if GPUCORES in lim) == 3078
    assert sum(1 for lim in limits if lim.get(GPU, 0) > 1) == 75
    assert default_trace.total_gpu_request() == pytest.approx(6086.8)


def test_openb_mapping_matches_the_rows(default_trace):
    rows = openb_rows(DEFAULT)
    for row, tp in zip(rows, default_trace.pods):
        assert tp.name == row["name"]
        assert (tp.pod.cpu_milli, tp.pod.memory_mib) == (int(row["cpu_milli"]),
                                                         int(row["memory_mib"]))
        assert tp.arrival == float(row["creation_time"])
        assert tp.deletion == float(row["deletion_time"]) and tp.duration is None
        assert gpu_request(tp.pod) == pytest.approx(
            int(row["num_gpu"]) * int(row["gpu_milli"]) / 1000)
    assert [tp.line for tp in default_trace.pods[:3]] == [2, 3, 4]


def find(trace: Trace, rows, pred) -> TracePod:
    index = next(i for i, r in enumerate(rows) if pred(r))
    return trace.pods[index]


def test_openb_fractional_pod(default_trace):
    tp = find(default_trace, openb_rows(DEFAULT), lambda r: r["gpu_milli"] == "810")
    assert tp.pod.containers == (Container({GPU: 1, GPUCORES: 81, GPUMEM_PERCENTAGE: 81}),)
    assert tp.pod.annotations == {}
    assert gpu_request(tp.pod) == pytest.approx(0.81)


def test_openb_multi_gpu_pod(default_trace):
    tp = find(default_trace, openb_rows(DEFAULT), lambda r: r["num_gpu"] == "8")
    assert tp.pod.containers == (Container({GPU: 8}),)
    assert gpu_request(tp.pod) == 8


def test_openb_cpu_only_pod(default_trace):
    tp = find(default_trace, openb_rows(DEFAULT), lambda r: r["num_gpu"] == "0")
    assert tp.pod.containers == (Container(),) and gpu_request(tp.pod) == 0
    assert tp.pod.cpu_milli > 0


def test_openb_gpu_spec():
    path = OPENB / "openb_pod_list_gpuspec10.csv"
    trace = read_trace(path)
    rows = openb_rows(path)
    tp = find(trace, rows, lambda r: r["gpu_spec"] == "V100M16|V100M32|V100M32")
    assert tp.pod.annotations == {"nvidia.com/use-gputype": "V100M16,V100M32"}
    specs = {r["gpu_spec"] for r in rows if r["gpu_spec"]}
    assert specs and sum(1 for tp in trace.pods if tp.pod.annotations) == \
        sum(1 for r in rows if r["gpu_spec"])
    # HAMi's substring match selects exactly the listed models' card types.
    for spec in specs:
        models = set(spec.split("|"))
        annotations = {"nvidia.com/use-gputype": ",".join(models)}
        allowed = {m for m in OPENB_CARD_MEMORY_MIB
                   if type_allowed(annotations, openb_card_type(m))}
        assert allowed == models, spec


def test_openb_model_names_do_not_overlap():
    for model in OPENB_CARD_MEMORY_MIB:
        hits = [other for other in OPENB_CARD_MEMORY_MIB
                if model.upper() in openb_card_type(other).upper()]
        assert hits == [model]


def test_openb_multigpu_file_has_no_timestamps():
    trace = read_trace(OPENB / "openb_pod_list_multigpu20.csv")
    assert len(trace) == 8324 and not trace.has_timestamps
    assert all(tp.arrival == 0 and tp.deletion is None for tp in trace.pods)
    assert [tp.name for tp in trace.iter_arrivals()] == [tp.name for tp in trace.pods]
    assert trace.total_gpu_request() == pytest.approx(7086.8)


@pytest.mark.parametrize("name,pods", [("cpu050", 7439), ("gpushare40", 8152)])
def test_openb_other_variants(name, pods):
    trace = read_openb_pods(OPENB / f"openb_pod_list_{name}.csv")
    assert len(trace) == pods


OPENB_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase," \
               "creation_time,deletion_time,scheduled_time\n"
OPENB_CASES = [
    ("milli-range", OPENB_HEADER + "p0,1000,10,1,500,,LS,Running,0,5,0\n"
                                   "p1,1000,10,1,1200,,LS,Running,0,5,0\n", 3,
     "pod 'p1': 'gpu_milli' must be <= 1000"),
    ("milli-zero", OPENB_HEADER + "p0,1000,10,1,0,,LS,Running,0,5,0\n", 2, "'gpu_milli' is 0"),
    ("milli-without-gpu", OPENB_HEADER + "p0,1000,10,0,500,,LS,Running,0,5,0\n", 2,
     "'gpu_milli' is 500 but 'num_gpu' is 0"),
    ("non-numeric", OPENB_HEADER + "p0,1k,10,1,500,,LS,Running,0,5,0\n", 2,
     "pod 'p0': 'cpu_milli' must be an integer, got '1k'"),
    ("deletion-before", OPENB_HEADER + "p0,1000,10,1,500,,LS,Running,9,5,0\n", 2,
     "'deletion_time' 5 is before 'creation_time' 9"),
    ("no-creation", OPENB_HEADER + "p0,1000,10,1,500,,LS,Running,,5,0\n", 2,
     "'creation_time' is empty"),
    ("duplicate", OPENB_HEADER + "p0,1,1,0,0,,LS,Running,0,5,0\np0,1,1,0,0,,LS,Running,0,5,0\n",
     3, "duplicate pod name 'p0' (first on line 2, again on line 3)"),
    ("header-only", OPENB_HEADER, 1, "the trace has no pods"),
    ("unknown-column", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,color\np,1,1,0,0,red\n", 1,
     "unknown openb pod-list column 'color'"),
]


@pytest.mark.parametrize("case,text,line,fragment", OPENB_CASES, ids=[c[0] for c in OPENB_CASES])
def test_openb_pod_errors(tmp_path, case, text, line, fragment):
    path = tmp_path / "openb.csv"
    path.write_text(text, encoding="utf-8")
    err = error_of(path)
    assert err.line == line and fragment in err.problem, str(err)


def test_openb_rounding_and_empty_deletion(tmp_path):
    path = tmp_path / "openb.csv"
    path.write_text(OPENB_HEADER + "p0,1,1,2,815,T4|T4,LS,Running,7,,\n"
                                   "p1,1,1,1,5,,BE,Failed,8,9,\n", encoding="utf-8")
    p0, p1 = read_trace(path).pods
    assert p0.pod.containers == (Container({GPU: 2, GPUCORES: 81, GPUMEM_PERCENTAGE: 81}),)
    assert p0.pod.annotations == {"nvidia.com/use-gputype": "T4"}
    assert (p0.arrival, p0.deletion, p1.deletion) == (7.0, None, 9.0)
    assert p1.pod.containers[0].limits[GPUCORES] == 1


def test_read_openb_pods_rejects_native(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("name,arrival\na,0\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.csv:1: not an openb pod list"):
        read_openb_pods(path)


# ---------------------------------------------------------------------------
# openb node lists and cluster_from_path

def test_openb_gpu_nodes():
    cluster = read_openb_nodes(GPU_NODES)
    assert isinstance(cluster, Cluster)
    assert len(cluster.nodes) == 1213 and cluster.n_cards == 6212
    per_type: dict[str, int] = {}
    for node in cluster.nodes:
        for card in node.cards:
            per_type[card.type] = per_type.get(card.type, 0) + 1
    assert per_type == {"NVIDIA-G2": 4392, "NVIDIA-T4": 842, "NVIDIA-G3": 312,
                        "NVIDIA-P100": 265, "NVIDIA-V100M32": 204, "NVIDIA-V100M16": 195,
                        "NVIDIA-A10": 2}
    node = cluster.nodes[0]
    assert (node.name, node.cpu_milli, node.memory_mib) == ("openb-node-0000", 64000, 262144)
    card = node.cards[1]
    assert (card.id, card.index, card.count, card.devmem, card.devcore, card.type, card.numa) == \
        ("GPU-openb-node-0000-1", 1, 10, 16280, 100, "NVIDIA-P100", 0)
    assert sum(n.cpu_milli for n in cluster.nodes) == 107_018_000


def test_openb_all_nodes_via_cluster_from_path():
    cluster = cluster_from_path(OPENB / "openb_node_list_all_node.csv")
    assert len(cluster.nodes) == 1523 and cluster.n_cards == 6212
    assert sum(1 for n in cluster.nodes if not n.cards) == 310


def test_cluster_from_path_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("nodes:\n  - name: n1\n    devices:\n"
                    "      - {id: GPU-A, devmem: 1000, type: NVIDIA-T4}\n", encoding="utf-8")
    assert cluster_from_path(path).n_cards == 1


NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"


@pytest.mark.parametrize("name,text,line,fragment", [
    ("c.csv", NODE_HEADER + "n0,1,1,2,T4\nn1,1,1,4,G1\n", 3, "unknown GPU model 'G1'"),
    ("c.csv", NODE_HEADER + "n0,1,1,2,\n", 2, "2 GPUs but no 'model'"),
    ("c.csv", NODE_HEADER + "n0,1,1,x,T4\n", 2, "node 'n0': 'gpu' must be an integer"),
    ("c.csv", NODE_HEADER + "n0,1,1,1,T4\nn0,1,1,1,T4\n", 3, "duplicate node 'n0'"),
    ("c.csv", NODE_HEADER, 1, "the node list has no nodes"),
    ("c.csv", "name,arrival\na,0\n", 1, "must be an openb node list"),
    ("c.txt", NODE_HEADER, None, "unsupported cluster file type '.txt'"),
])
def test_cluster_from_path_errors(tmp_path, name, text, line, fragment):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        cluster_from_path(path)
    assert info.value.line == line and fragment in info.value.problem, str(info.value)


# ---------------------------------------------------------------------------
# gpu_request

@pytest.mark.parametrize("limits,card_mem,expected", [
    ({}, None, 0.0),
    ({GPU: 0}, None, 0.0),
    ({GPU: 2}, None, 2.0),
    ({GPU: 1, GPUMEM_PERCENTAGE: 25}, None, 0.25),
    ({GPU: 1, GPUMEM_PERCENTAGE: 25, GPUCORES: 60}, None, 0.6),
    ({GPU: 1, GPUCORES: 30}, None, 1.0),        # no memory asked: HAMi grants all of it
    ({GPU: 2, GPUMEM: 4000}, 16000, 0.5),
    ({GPU: 1, GPUMEM: 4000}, None, 1.0),        # MiB without a card size: a whole card
])
def test_gpu_request(limits, card_mem, expected):
    pod = Pod("p", (Container(limits),))
    assert gpu_request(pod, card_memory_mib=card_mem) == pytest.approx(expected)


def test_gpu_request_init_containers():
    pod = Pod("p", (Container({GPU: 1, GPUCORES: 20, GPUMEM_PERCENTAGE: 20}),),
              init_containers=(Container({GPU: 2}),))
    assert gpu_request(pod) == 2.0


# ---------------------------------------------------------------------------
# retime

def openb_gl() -> tuple[np.ndarray, np.ndarray]:
    rows = sorted(openb_rows(DEFAULT), key=lambda r: int(r["creation_time"]))
    g = np.array([int(r["num_gpu"]) * int(r["gpu_milli"]) / 1000 for r in rows])
    life = np.array([int(r["deletion_time"]) - int(r["creation_time"]) for r in rows], float)
    return g, life


def test_poisson_rate_formula(default_trace):
    g, life = openb_gl()
    expected = 0.8 * CAPACITY / np.mean(g * life)
    assert poisson_rate(default_trace, 0.8, CAPACITY) == pytest.approx(expected, rel=1e-12)
    capped = 0.8 * CAPACITY / np.mean(g * np.minimum(life, 600))
    assert poisson_rate(default_trace, 0.8, CAPACITY, max_lifetime=600) == \
        pytest.approx(capped, rel=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_retime_offers_the_target_load(default_trace, seed):
    out = retime(default_trace, 0.8, seed, CAPACITY)
    assert len(out) == len(default_trace)
    arrivals = np.array([tp.arrival for tp in out.pods])
    assert arrivals[0] > 0 and np.all(np.diff(arrivals) > 0)
    assert offered_load(out, CAPACITY) == pytest.approx(0.8, rel=0.03)
    # pods keep their order and lifetime (as a duration)
    ordered = list(default_trace.iter_arrivals())
    assert [tp.name for tp in out.pods] == [tp.name for tp in ordered]
    assert [tp.duration for tp in out.pods] == [lifetime(tp) for tp in ordered]
    assert all(tp.deletion is None for tp in out.pods)


def test_retime_is_seed_reproducible(default_trace):
    a = retime(default_trace, 0.5, 7, CAPACITY)
    b = retime(default_trace, 0.5, 7, CAPACITY)
    c = retime(default_trace, 0.5, 8, CAPACITY)
    assert [tp.arrival for tp in a.pods] == [tp.arrival for tp in b.pods]
    assert [tp.arrival for tp in a.pods] != [tp.arrival for tp in c.pods]


def concurrent_load(trace: Trace, capacity: float, warmup: float) -> float:
    """Time-averaged concurrently requested GPUs over [warmup, last arrival] / capacity."""
    g = np.array([gpu_request(tp.pod) for tp in trace.pods])
    a = np.array([tp.arrival for tp in trace.pods])
    d = np.array([tp.duration for tp in trace.pods])
    end = a.max()
    held = np.clip(a + d, warmup, end) - np.clip(a, warmup, end)
    return float((g * held).sum() / (end - warmup) / capacity)


def test_retime_steady_state_concurrency(default_trace):
    # openb's lifetimes are heavy-tailed: cap them and resample a long stream,
    # then the time-averaged concurrent request is the target (Little's law).
    out = retime(default_trace, 0.8, 3, CAPACITY, max_lifetime=1800, n_pods=60_000)
    assert len(out) == 60_000 and len({tp.name for tp in out.pods}) == 60_000
    assert max(tp.duration for tp in out.pods) == 1800
    assert concurrent_load(out, CAPACITY, warmup=1800) == pytest.approx(0.8, rel=0.05)


def test_retime_lifetimes_edge_cases():
    pods = [TracePod(Pod("forever", (Container({GPU: 1}),)), 0.0),
            TracePod(Pod("instant", (Container({GPU: 1}),)), 1.0, deletion=1.0),
            TracePod(Pod("run", (Container({GPU: 2}),)), 2.0, duration=10.0)]
    trace = Trace("t", pods)
    # E[g × L] = (0 + 0 + 20) / 3: the pod without lifetime counts 0.
    assert poisson_rate(trace, 1.0, 4) == pytest.approx(4 / (20 / 3))
    out = retime(trace, 1.0, 0, 4)
    assert [tp.duration for tp in out.pods] == [None, 0.0, 10.0]
    no_load = Trace("cpu", [TracePod(Pod("c", (Container(),)), 0.0, duration=5.0)])
    with pytest.raises(ValueError, match="no pod has both"):
        retime(no_load, 0.5, 0, 4)
    with pytest.raises(ValueError, match="target_load"):
        retime(trace, 0, 0, 4)


# ---------------------------------------------------------------------------
# fill_workload

def test_fill_default_to_130_percent(default_trace):
    out = fill_workload(default_trace, CAPACITY, 130, seed=42)
    target = 1.3 * CAPACITY
    total = out.total_gpu_request()
    assert total <= target + 1e-6 and total > target - 8
    assert 10_600 <= len(out) <= 11_000            # FGD: about 10.8k pods
    originals = out.pods[:len(default_trace)]
    assert sorted(tp.name for tp in originals) == sorted(tp.name for tp in default_trace.pods)
    assert [tp.name for tp in originals] != [tp.name for tp in default_trace.pods]  # shuffled
    tuned = out.pods[len(default_trace):]
    assert len(tuned) > 2_400
    assert [tp.name.rsplit("-tuned-", 1)[1] for tp in tuned] == [str(i) for i in range(len(tuned))]
    assert [tp.arrival for tp in out.pods] == [float(i) for i in range(len(out))]
    assert list(out) == out.pods == list(out.iter_arrivals())
    assert all(tp.duration is None and tp.deletion is None for tp in out.pods)
    assert len({tp.name for tp in out.pods}) == len(out)


def test_fill_is_seed_reproducible(default_trace):
    a = fill_workload(default_trace, CAPACITY, 130, seed=42)
    b = fill_workload(default_trace, CAPACITY, 130, seed=42)
    c = fill_workload(default_trace, CAPACITY, 130, seed=43)
    assert [tp.name for tp in a.pods] == [tp.name for tp in b.pods]
    assert [tp.name for tp in a.pods] != [tp.name for tp in c.pods]


def test_fill_drops_pods_above_target(default_trace):
    out = fill_workload(default_trace, CAPACITY, 50, seed=1)
    assert out.total_gpu_request() <= 0.5 * CAPACITY + 1e-6
    assert not any("-tuned-" in tp.name for tp in out.pods)
    assert len(out) < len(default_trace)


def test_fill_fgd_quirk_lets_multi_gpu_draws_overshoot():
    pods = [TracePod(Pod("big", (Container({GPU: 8}),)), 0.0)]
    out = fill_workload(Trace("t", pods), 10, 100, seed=0, fgd_stop_quirk=True)
    assert out.total_gpu_request() == 16      # the second draw counts 1 GPU at the check
    plain = fill_workload(Trace("t", pods), 10, 100, seed=0)
    assert plain.total_gpu_request() == 8


def test_fill_rejects_cpu_only_traces():
    trace = Trace("t", [TracePod(Pod("c", (Container(),)), 0.0)])
    with pytest.raises(ValueError, match="requests no GPU"):
        fill_workload(trace, 10, 100, seed=0)
