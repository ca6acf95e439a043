"""Native trace files: reading, writing and located errors (hamisim.io.traces)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hamisim.cluster import Card, Cluster, Node
from hamisim.errors import InputError
from hamisim.io.traces import read_trace, write_trace
from hamisim.pods import GPU, GPUCORES, GPUMEM, GPUMEM_PERCENTAGE, Container, Pod
from hamisim.workload import Trace, TracePod

OPENB = Path(__file__).resolve().parent.parent / "workloads" / "openb"
DEFAULT = OPENB / "openb_pod_list_default.csv"


@pytest.fixture(scope="module")
def default_trace() -> Trace:
    return read_trace(DEFAULT)


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
    ("fractional-int", "name,arrival,gpumem\na,0,1.5\n", 2,
     "'gpumem' must be MiB as an integer or a byte quantity such as 16Gi, got '1.5'"),
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
# values that probably mean something else: accepted, converted or warned about

@pytest.mark.parametrize("cell,value", [("true", "true"), ("TRUE", "true"), ("yes", "true"),
                                        ("Yes", "true"), ("1", "true"), ("false", "false"),
                                        ("No", "false"), ("0", "false")])
def test_numa_bind_booleans(tmp_path, cell, value):
    path = tmp_path / "t.csv"
    path.write_text(f"name,arrival,gpu,numa_bind\np,0,2,{cell}\n")
    (tp,) = read_trace(path).pods
    assert tp.pod.annotations == {"nvidia.com/numa-bind": value}


def test_a_numa_bind_annotation_hami_cannot_parse_is_a_warning(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"name": "p", "arrival": 0, "gpu": 2, '
                    '"annotations": {"nvidia.com/numa-bind": "yes"}}\n')
    with pytest.warns(UserWarning) as caught:
        (tp,) = read_trace(path).pods
    assert tp.pod.annotations == {"nvidia.com/numa-bind": "yes"}     # as HAMi would see it
    (w,) = caught
    assert str(w.message).startswith(f"{path}:1: warning: annotation nvidia.com/numa-bind "
                                     "'yes': HAMi parses it with Go's strconv.ParseBool")


@pytest.mark.parametrize("gpumem,memory,mib,mem_mib", [("16Gi", "8Gi", 16384, 8192),
                                                       ("16G", "512Mi", 15259, 512),
                                                       ("4000", "1024", 4000, 1024)])
def test_memory_columns_take_kubernetes_quantities(tmp_path, gpumem, memory, mib, mem_mib):
    for ext, text in ((".csv", f"name,arrival,gpu,gpumem,memory_mib\np,0,1,{gpumem},{memory}\n"),
                      (".jsonl", json.dumps({"name": "p", "arrival": 0, "gpu": 1,
                                             "gpumem": gpumem if not gpumem.isdigit()
                                             else int(gpumem), "memory_mib": memory
                                             if not memory.isdigit() else int(memory)}) + "\n")):
        path = tmp_path / f"t{ext}"
        path.write_text(text)
        (tp,) = read_trace(path).pods
        assert tp.pod.containers[0].limits[GPUMEM] == mib and tp.pod.memory_mib == mem_mib


def small_gpumem_warnings(tmp_path, devmem: int, rows: str) -> list[str]:
    from hamisim.io.traces import warn_suspect_units
    path = tmp_path / "t.csv"
    path.write_text("name,arrival,gpu,gpumem,use_gputype\n" + rows)
    cluster = Cluster((Node("n", (Card("A", 0, devmem=devmem, type="NVIDIA-H100"),
                                  Card("B", 1, devmem=16000, type="NVIDIA-T4"))),))
    trace = read_trace(path)
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_suspect_units(trace, cluster)
    return [str(w.message) for w in caught]


def test_a_tiny_gpumem_on_big_cards_is_a_located_warning(tmp_path):
    got = small_gpumem_warnings(tmp_path, 81920, "a,0,1,4000,H100\nb,1,1,15,H100\n"
                                                 "c,2,1,15,H100\nd,3,1,80,\n")
    assert got == [f"{tmp_path / 't.csv'}:3: warning: pod 'b': gpumem 15 is MiB, did you mean "
                   "15360 (15 GiB)? Every card it may use has at least 81920 MiB (2 pods ask "
                   "for gpumem 15)",
                   # d may use every card, the 16000 MiB T4 too: still far above 80 MiB
                   f"{tmp_path / 't.csv'}:5: warning: pod 'd': gpumem 80 is MiB, did you mean "
                   "81920 (80 GiB)? Every card it may use has at least 16000 MiB"]


def test_no_warning_when_a_small_card_may_take_the_pod(tmp_path):
    assert small_gpumem_warnings(tmp_path, 4096, "d,3,1,80,H100\n") == []   # 4 GiB cards
    assert small_gpumem_warnings(tmp_path, 81920, "e,3,1,0,H100\n") == []   # 0: not asked


# ---------------------------------------------------------------------------
# the fast reader (pyarrow, column-wise) reads exactly what the row reader reads

def slow_read(path: Path, fmt: str) -> Trace:
    from hamisim.io import traces
    rows = traces._parquet_rows(str(path)) if fmt == "parquet" else \
        traces._csv_rows(traces.read_text(str(path)), str(path))
    return Trace(path.stem, traces._build(rows, str(path), fmt), path=str(path), format=fmt)


def same_trace(a: Trace, b: Trace) -> None:
    assert a.names == b.names and len(a) == len(b)
    for col in ("arrival", "duration", "deletion", "line"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col))
    assert [(tp.pod, tp.pod.priority, tp.pod_class, tp.line) for tp in a.pods] == \
        [(tp.pod, tp.pod.priority, tp.pod_class, tp.line) for tp in b.pods]


CELLS = {
    "arrival": ["0", "1.5", "3", "1e2", " 4", "-1", "nan", "x"],
    "duration": ["", "10", "0", "2.25", "inf"],
    "deletion": ["", "", "500", "0.5"],
    "gpu": ["", "1", "2", "0", "-1", "1.0", " 1"],
    "gpumem": ["", "4000", "16Gi", "512Mi", "15", "x"],
    "gpucores": ["", "30", "100", "  "],
    "gpu_policy": ["", "binpack", '"mutex,binpack,numa"', "pack", " spread"],
    "numa_bind": ["", "true", "yes", "0", "maybe"],
    "priority": ["", "5", "-3", "99999999999"],
    "class": ["", "train", " infer ", "  "],
    "annotations": ["", '"{""example.com/a"": ""b""}"'],
}


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_fast_reader_reads_what_the_row_reader_reads(tmp_path_factory, data):
    from hamisim.io.traces import _fast_trace
    columns = ["name", "arrival"] + data.draw(st.lists(
        st.sampled_from([c for c in CELLS if c != "arrival"]), unique=True, max_size=6))
    n = data.draw(st.integers(1, 12))
    rows = []
    for i in range(n):
        cells = [data.draw(st.sampled_from([f"p{i}"] * 6 + ["p0", f" p{i}"]))]
        # mostly values both readers take, now and then one to decline or reject
        cells += [data.draw(st.sampled_from(CELLS[c][:3] if data.draw(st.integers(0, 7))
                                            else CELLS[c])) for c in columns[1:]]
        rows.append(",".join(cells))
    path = tmp_path_factory.mktemp("fast") / "t.csv"
    path.write_text(",".join(columns) + "\n" + "\n".join(rows) + "\n")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = _fast_trace(str(path), "csv")
        try:
            slow = slow_read(path, "csv")
        except InputError:
            slow = None
    if fast is not None:
        assert slow is not None, "the fast path accepted a file the row reader rejects"
        same_trace(fast, slow)
        if data.draw(st.booleans()):       # and the same table as Parquet
            ppath = path.with_suffix(".parquet")
            write_trace(fast, ppath)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pfast = _fast_trace(str(ppath), "parquet")
                pslow = slow_read(ppath, "parquet")
            assert pfast is not None
            same_trace(pfast, pslow)


def test_the_fast_reader_takes_a_large_plain_trace(tmp_path):
    from hamisim.io.traces import _fast_trace
    path = tmp_path / "t.csv"
    path.write_text("name,arrival,duration,gpu,gpucores,gpu_policy\n" + "".join(
        f"p{i},{i / 10},{60 + i % 7},1,{10 + i % 5},\"mutex,binpack\"\n" for i in range(3000)))
    fast = _fast_trace(str(path), "csv")
    assert fast is not None and len(fast.templates) == 5      # one pod per distinct request
    same_trace(fast, slow_read(path, "csv"))


def test_a_parquet_string_column_that_is_not_utf8_is_a_located_error(tmp_path):
    """Parquet does not promise valid UTF-8 in string columns (found by the byte
    fuzzer: a traceback before); the reader checks them column-wise."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from hamisim.errors import InputError
    names = pa.array([b"\x80ulti"], type=pa.binary()).view(pa.string())
    path = tmp_path / "trace.parquet"
    pq.write_table(pa.table({"name": names, "arrival": [0.0], "duration": [10.0],
                             "gpu": [1]}), path)
    with pytest.raises(InputError, match="not a readable Parquet file: .*Invalid UTF8"):
        read_trace(str(path))
