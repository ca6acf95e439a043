"""Fuzzing every input reader: success or InputError, never another exception.

Random bytes, byte-level mutations of valid files and structural mutations of
their YAML/JSON documents go to every reader (cluster files in YAML, JSON and
openb CSV; traces in CSV, JSON Lines, Parquet and openb CSV; scenario files;
sweep and plan files; state files; kubectl dumps; explain's pod manifests).
The only allowed outcomes are an :class:`InputError` whose message starts with
the file it blames, or a loaded object that is valid: it goes through
hamisim's own writer and reader unchanged (clusters, traces, scenario pods,
imports) or satisfies the loader's promises (states, sweeps, plans), so
garbage cannot load silently. The example counts are bounded (a few hundred per
reader family) so the module runs in CI in seconds; set
``HAMISIM_FUZZ_SCALE=20`` (say) to fuzz twenty times longer locally.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hamisim.errors import InputError
from hamisim.explain import load_pod
from hamisim.io import clusterfile
from hamisim.io.clusterfile import cluster_from_path, load_cluster
from hamisim.io.initialstate import load_state
from hamisim.io.kubeimport import cluster_yaml, import_kubectl, write_import
from hamisim.io.scenariofile import CreateStep, load_scenario
from hamisim.io.traces import read_trace, write_trace
from hamisim.pods import GPU, GPUCORES, GPUMEM, Container, Pod
from hamisim.studies.plan import load_plan
from hamisim.studies.sweepfile import load_sweep
from hamisim.workload import Trace, TracePod

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "workloads"
BAD = Path(__file__).resolve().parent / "data" / "bad_inputs"
SCALE = float(os.environ.get("HAMISIM_FUZZ_SCALE", "1"))
FUZZ = settings(max_examples=int(50 * SCALE), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MANY = settings(FUZZ, max_examples=int(100 * SCALE))
#: readers that hash or expand what they load (tens of ms per example): fewer examples
SLOW = settings(FUZZ, max_examples=int(30 * SCALE))

# ---------------------------------------------------------------------------
# seeds: valid files of every format


def _head(path: Path, lines: int) -> bytes:
    return b"".join(path.read_bytes().splitlines(keepends=True)[:lines])


def _sample_trace() -> Trace:
    pods = [
        TracePod(Pod("cpu", (Container(),), cpu_milli=2000, memory_mib=512), 0.0, line=2),
        TracePod(Pod("frac", (Container({GPU: 1, GPUCORES: 30, GPUMEM: 3000}),),
                     annotations={"nvidia.com/use-gputype": "T4",
                                  "hami.io/gpu-scheduler-policy": "binpack,numa",
                                  "example.com/x": "y"}, priority=3),
                 1.5, duration=60.0, line=3),
        TracePod(Pod("multi", (Container({GPU: 1}), Container(requests={GPU: 1, GPUMEM: 10})),
                     init_containers=(Container({GPU: 1, GPUCORES: 100}),)),
                 2.0, duration=1.0, deletion=7.5, line=4),
    ]
    return Trace("sample", pods)


def _trace_bytes(ext: str) -> bytes:
    folder = Path(tempfile.mkdtemp())
    try:
        write_trace(_sample_trace(), folder / f"t{ext}")
        return (folder / f"t{ext}").read_bytes()
    finally:
        shutil.rmtree(folder)


ANNOTATED_CLUSTER = b"""\
scheduler: {gpu_scheduler_policy: "mutex,binpack", percentage_of_nodes_to_score: 50}
nodes:
  - name: node1
    cpu_milli: 64000
    devices: '[{"id":"GPU-A","index":0,"count":10,"devmem":15360,"devcore":100,"type":"NVIDIA","health":true},
               {"id":"GPU-B","index":1,"count":10,"devmem":15360,"devcore":100,"type":"NVIDIA","health":true}]'
    nvidia_score: {GPU-A: {GPU-B: 100}, GPU-B: {GPU-A: 100}}
    cordon: GPU-B
  - name_prefix: pool
    replicas: 3
    gpus: 2
    card: {devmem: 40960, type: NVIDIA-A100, numa: 1}
"""

SCENARIOS = sorted((WORKLOADS / "scenarios").glob("*.yaml"))
GOOD_CLUSTER = (BAD / "good" / "cluster.yaml").read_bytes()
#: server topologies: a template, one with overrides, one described in full
TOPOLOGY_CLUSTER = b"""\
scheduler: {gpu_scheduler_policy: topology-aware}
nodes:
  - {name_prefix: dgx, replicas: 2, topology: dgx-h100}
  - name: box
    topology: {template: pcie-4gpu, nics: [{numa: 1, switch: 1}], score: true}
  - name: custom
    gpus: 3
    card: {devmem: 24576, type: NVIDIA-A10}
    topology:
      gpus: [{numa: 0, switch: 0, board: 0}, {numa: 0, switch: 0, board: 0}, {numa: 1, switch: 1}]
      nvlink: [[0, 2, 3], [2, 0, 2]]
      nvswitch: [0, 0, 0]
"""

SEEDS: dict[str, tuple[str, list[bytes]]] = {
    "cluster-yaml": (".yaml", [GOOD_CLUSTER, ANNOTATED_CLUSTER, TOPOLOGY_CLUSTER,
                               (WORKLOADS / "sweeps" / "openb-g3-pool.yaml").read_bytes()]),
    "cluster-json": (".json", [json.dumps(yaml.safe_load(GOOD_CLUSTER), indent=1).encode(),
                               json.dumps(yaml.safe_load(ANNOTATED_CLUSTER)).encode(),
                               json.dumps(yaml.safe_load(TOPOLOGY_CLUSTER)).encode()]),
    "cluster-openb": (".csv", [_head(WORKLOADS / "openb" / "openb_node_list_gpu_node.csv", 12)]),
    "trace-csv": (".csv", [(BAD / "good" / "trace.csv").read_bytes(), _trace_bytes(".csv")]),
    "trace-openb": (".csv", [_head(WORKLOADS / "openb" / "openb_pod_list_default.csv", 12),
                             _head(WORKLOADS / "openb" / "openb_pod_list_multigpu20.csv", 8)]),
    "trace-jsonl": (".jsonl", [_trace_bytes(".jsonl")]),
    "trace-parquet": (".parquet", [_trace_bytes(".parquet")]),
    "scenario-yaml": (".yaml", [p.read_bytes() for p in SCENARIOS]),
    "scenario-json": (".json", [json.dumps(yaml.safe_load(p.read_bytes())).encode()
                                for p in SCENARIOS[:3]]),
}

KUBECTL = WORKLOADS / "kubectl-example"


def _few(path: Path, n: int) -> bytes:
    doc = json.loads(path.read_bytes())
    doc["items"] = doc["items"][:n]
    return json.dumps(doc, indent=1).encode()


STATE = b"""source: fuzz
pods:
  - {name: default/a, node: node1, devices: "GPU-A,NVIDIA,4000,30:;", cpu_milli: 2000}
  - {name: team/b, node: node1, namespace: team, devices: ";GPU-B,NVIDIA,1000,0:;",
     init_containers: 1, init_finished: true, departure: 60}
"""
POD_MANIFEST = json.dumps(json.loads(_few(KUBECTL / "pods.json", 8))["items"][6]).encode()
SEEDS["sweep"] = (".yaml", [(WORKLOADS / "sweeps" / "openb-policies.yaml").read_bytes()])
SEEDS["plan"] = (".yaml", [(WORKLOADS / "sweeps" / "openb-plan.yaml").read_bytes()])
SEEDS["state"] = (".yaml", [STATE])
SEEDS["kubectl-nodes"] = (".json", [_few(KUBECTL / "nodes.json", 3)])
SEEDS["kubectl-pods"] = (".json", [_few(KUBECTL / "pods.json", 6)])
SEEDS["kubectl-quotas"] = (".json", [(KUBECTL / "quotas.json").read_bytes()])
SEEDS["pod-manifest"] = (".json", [POD_MANIFEST, b'{"name": "p", "gpu": 1, "gpumem": 1000}'])

READERS = sorted(SEEDS)
SLOW_READERS = {"sweep", "plan", "kubectl-nodes", "kubectl-pods", "kubectl-quotas"}
FAST = [r for r in READERS if r not in SLOW_READERS]
SLOWS = [r for r in READERS if r in SLOW_READERS]


@pytest.fixture(scope="module")
def workdir():
    """A folder for the fuzzed files, with the files a sweep or a pod dump refers to;
    the cluster size limits are lowered so no example builds a million nodes."""
    folder = Path(tempfile.mkdtemp(prefix="hamisim-fuzz-"))
    shutil.copy(WORKLOADS / "sweeps" / "openb-g3-pool.yaml", folder)
    (folder / "nodes-seed.json").write_bytes(SEEDS["kubectl-nodes"][1][0])
    (folder / "state-cluster.yaml").write_bytes(GOOD_CLUSTER)
    mp = pytest.MonkeyPatch()
    mp.setattr(clusterfile, "MAX_NODES", 2_000)
    mp.setattr(clusterfile, "MAX_CARDS", 8_000)
    yield folder
    mp.undo()
    shutil.rmtree(folder, ignore_errors=True)


def read(reader: str, path: Path, folder: Path):
    if reader.startswith("cluster"):
        return cluster_from_path(path)
    if reader.startswith("trace"):
        return read_trace(path)
    if reader.startswith("scenario"):
        return load_scenario(path)
    if reader == "sweep":
        return load_sweep(path)
    if reader == "plan":
        return load_plan(path)
    if reader == "state":
        return load_state(path, load_cluster(folder / "state-cluster.yaml"))
    if reader == "pod-manifest":
        return load_pod(str(path))
    if reader == "kubectl-nodes":
        return import_kubectl(path, None)
    if reader == "kubectl-quotas":
        return import_kubectl(folder / "nodes-seed.json", None, quotas_path=path)
    return import_kubectl(folder / "nodes-seed.json", path)


def _timed(trace: Trace) -> list[tuple]:
    return [(tp.pod, tp.arrival, tp.duration, tp.deletion, tp.pod_class) for tp in trace.pods]


def _round_trip_trace(trace: Trace, folder: Path) -> None:
    out = folder / "round-trip.jsonl"
    write_trace(trace, out)
    assert _timed(read_trace(out)) == _timed(trace), "a loaded trace does not write back"


def _round_trip_cluster(cluster, folder: Path) -> None:
    out = folder / "round-trip-cluster.yaml"
    out.write_text(cluster_yaml(cluster, "fuzz"), encoding="utf-8")
    assert load_cluster(out) == cluster, "a loaded cluster does not write back"


def validate(reader: str, loaded, folder: Path) -> None:
    """What loaded is valid: hamisim's writer and reader give it back, or it
    keeps the loader's promises."""
    if reader.startswith("cluster"):
        _round_trip_cluster(loaded, folder)
    elif reader.startswith("trace"):
        _round_trip_trace(loaded, folder)
    elif reader.startswith("scenario"):
        _round_trip_cluster(loaded.cluster, folder)
        # a scenario may create a name again after deleting it: one name each here
        pods = [TracePod(s.pod.renamed(f"step-{k}"), 0.0)
                for k, s in enumerate(loaded.steps) if isinstance(s, CreateStep)]
        if pods:
            _round_trip_trace(Trace("scenario", pods), folder)
    elif reader == "pod-manifest":
        _round_trip_trace(Trace("pod", [TracePod(loaded, 0.0)]), folder)
    elif reader.startswith("kubectl"):
        write_import(loaded, folder / "round-trip-import")  # reads its files back itself
    elif reader == "state":
        nodes = {n.name: {c.id for c in n.cards} for n in load_cluster(
            folder / "state-cluster.yaml").nodes}
        names = [p.name for p in loaded.pods]
        assert len(set(names)) == len(names)
        for p in loaded.pods:
            assert p.node in nodes and p.n_init >= 0 and p.cpu_milli >= 0
            assert all(pick.uuid in nodes[p.node] and pick.usedmem >= 0 and pick.usedcores >= 0
                       for picks in p.containers for pick in picks)
            assert p.departure is None or p.departure >= 0
    elif reader == "sweep":
        assert len(loaded.cells) >= 1, "a sweep without cells loaded"
    elif reader == "plan":
        assert 1 <= loaded.min <= loaded.max and loaded.step >= 1


def check(reader: str, data: bytes, folder: Path) -> None:
    """The property: the reader loads ``data`` into something valid, or raises
    a located InputError."""
    path = folder / f"fuzzed-{reader}{SEEDS[reader][0]}"
    path.write_bytes(data)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # policy warnings are fine here
            loaded = read(reader, path, folder)
            validate(reader, loaded, folder)
    except InputError as err:
        blamed = (str(path), str(folder / "nodes-seed.json"))
        assert str(err).startswith(blamed), f"unlocated: {err}"


# ---------------------------------------------------------------------------
# mutations

TOKENS = [b"-1", b"0", b"1e999", b"-1e400", b"NaN", b".nan", b"inf", b"Infinity", b'"', b"'",
          b"{", b"}", b"[", b"]", b",", b":", b"\n", b"\r\n", b"\t", b" ", b"#", b"- ",
          b"null", b"~", b"true", b"yes", b"&a ", b"*a", b"<<: ", b"!!binary ",
          b"!!python/object:os.system ", b"99999999999999999999999", b"2147483648",
          b"9007199254740993", b"0x1F", b"1_000", b"\x00", b"\xff", b"\xc3", b"\xe2\x82",
          b"\xef\xbb\xbf", b'\\u0000', b'\\ud800', b"replicas: 5", b"gpus: 64"]


@st.composite
def byte_mutations(draw, reader: str) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS[reader][1])))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["set", "delete", "insert", "truncate", "duplicate"]))
        i = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "set" and data:
            data[i] = draw(st.integers(0, 255))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 64))]
        elif op == "insert":
            data[i:i] = draw(st.sampled_from(TOKENS))
        elif op == "truncate":
            del data[i:]
        else:
            j = draw(st.integers(0, max(len(data) - 1, 0)))
            data[i:i] = data[j:j + draw(st.integers(1, 80))]
    return bytes(data)


SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-2**70, max_value=2**70),
    st.sampled_from([0, 1, -1, 10, 100, 2**31 - 1, 2**31, 2**53, 2**53 + 1, 2**63, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", " ", "x", "0", "1.5", "-1", "nan", "NVIDIA", "GPU-A", "GPU-MOCK-A",
                     "node1", "pack", "mutex,binpack,numa", "spread", "binpack", "mig", "true",
                     "[1]", '{"a": 1}', "p1", "plain-1", "pending", "deleted", "\x00", "é",
                     "a" * 300, "openb:default", "g3", "100m", "1Gi", "1e3", "-5"]),
    st.text(max_size=12),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["name", "id", "gpu", "count", "devmem", "devcore", "type",
                                     "index", "devices", "nodes", "steps", "create", "delete",
                                     "expect", "replicas", "gpus", "card", "annotations",
                                     "containers", "limits", "x", "arrival", "items",
                                     "metadata", "spec", "status"]), inner, max_size=3)),
    max_leaves=6)


@st.composite
def tree_mutations(draw, reader: str) -> bytes:
    """A seed's document with a few subtrees replaced, deleted or added."""
    doc = yaml.load(draw(st.sampled_from(SEEDS[reader][1])), Loader=yaml.SafeLoader)
    for _ in range(draw(st.integers(1, 3))):
        doc = _mutate(draw, doc, 0)
    if SEEDS[reader][0] == ".json":
        return json.dumps(doc, allow_nan=True, default=str).encode()
    return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")


def _mutate(draw, node, depth):
    if isinstance(node, dict) and node and depth < 8:
        key = draw(st.sampled_from(sorted(node, key=str)))
        action = draw(st.sampled_from(["descend", "descend", "replace", "delete", "add"]))
        if action == "descend":
            node[key] = _mutate(draw, node[key], depth + 1)
        elif action == "replace":
            node[key] = draw(VALUES)
        elif action == "delete":
            del node[key]
        else:
            node[draw(st.sampled_from(["extra", "name", "replicas", "gpus", "card",
                                       "devices", "cordon", str(key).upper()]))] = draw(VALUES)
        return node
    if isinstance(node, list) and node and depth < 8:
        i = draw(st.integers(0, len(node) - 1))
        action = draw(st.sampled_from(["descend", "descend", "replace", "delete", "copy"]))
        if action == "descend":
            node[i] = _mutate(draw, node[i], depth + 1)
        elif action == "replace":
            node[i] = draw(VALUES)
        elif action == "delete":
            del node[i]
        else:
            node.append(json.loads(json.dumps(node[i], default=str)))
        return node
    return draw(VALUES)


COLUMNS = ["name", "arrival", "duration", "deletion", "gpu", "gpumem", "gpucores", "cpu_milli",
           "priority", "gpu_policy", "numa_bind", "use_gputype", "annotations", "containers",
           "init_containers", "bogus"]


@st.composite
def parquet_tables(draw) -> bytes:
    """Parquet files whose columns have arbitrary names, types and values."""
    n = draw(st.integers(0, 4))
    cols = {}
    for name in draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=6, unique=True)):
        kind = draw(st.sampled_from(["int", "float", "str", "bool", "list", "null", "binary",
                                     "timestamp"]))
        if kind == "int":
            vals = draw(st.lists(st.none() | st.integers(-2**63, 2**63 - 1), min_size=n,
                                 max_size=n))
            cols[name] = pa.array(vals, type=pa.int64())
        elif kind == "float":
            cols[name] = pa.array(draw(st.lists(st.none() | st.floats(), min_size=n, max_size=n)),
                                  type=pa.float64())
        elif kind == "str":
            cols[name] = pa.array(draw(st.lists(st.none() | SCALARS.filter(
                lambda v: isinstance(v, str)) | st.sampled_from(
                ['[{"gpu": 1}]', '{"a": "b"}', "[]", "{", '{"a": NaN}']), min_size=n,
                max_size=n)), type=pa.string())
        elif kind == "bool":
            cols[name] = pa.array(draw(st.lists(st.none() | st.booleans(), min_size=n,
                                                max_size=n)), type=pa.bool_())
        elif kind == "list":
            cols[name] = pa.array(draw(st.lists(st.lists(st.integers(-5, 5), max_size=2),
                                                min_size=n, max_size=n)))
        elif kind == "null":
            cols[name] = pa.array([None] * n, type=pa.null())
        elif kind == "binary":
            cols[name] = pa.array(draw(st.lists(st.binary(max_size=4), min_size=n, max_size=n)),
                                  type=pa.binary())
        else:
            cols[name] = pa.array([0] * n, type=pa.timestamp("s"))
    buf = io.BytesIO()
    pq.write_table(pa.table(cols), buf)
    return buf.getvalue()


# ---------------------------------------------------------------------------
# the properties

RANDOM = st.binary(max_size=400) | st.text(max_size=200).map(
    lambda t: t.encode("utf-8", "surrogatepass"))
TREES = [r for r in READERS if SEEDS[r][0] in (".yaml", ".json")]


@pytest.mark.parametrize("reader", READERS)
@FUZZ
@given(data=st.data())
def test_random_bytes(workdir, reader, data):
    check(reader, data.draw(RANDOM), workdir)


@pytest.mark.parametrize("reader", FAST)
@MANY
@given(data=st.data())
def test_byte_mutations_of_valid_files(workdir, reader, data):
    check(reader, data.draw(byte_mutations(reader)), workdir)


@pytest.mark.parametrize("reader", [r for r in FAST if r in TREES])
@MANY
@given(data=st.data())
def test_structural_mutations_of_valid_documents(workdir, reader, data):
    check(reader, data.draw(tree_mutations(reader)), workdir)


@pytest.mark.parametrize("reader", SLOWS)
@SLOW
@given(data=st.data())
def test_mutations_for_the_slower_readers(workdir, reader, data):
    mutate = data.draw(st.sampled_from([byte_mutations, tree_mutations]))
    check(reader, data.draw(mutate(reader)), workdir)


@FUZZ
@given(blob=parquet_tables())
def test_parquet_of_any_schema(workdir, blob):
    check("trace-parquet", blob, workdir)


def test_the_seeds_are_valid(workdir):
    """The mutations start from files every reader accepts."""
    for reader in READERS:
        for seed in SEEDS[reader][1]:
            path = workdir / f"seed-{reader}{SEEDS[reader][0]}"
            path.write_bytes(seed)
            assert read(reader, path, workdir) is not None, reader
