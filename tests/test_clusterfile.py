"""Cluster-file loading: every malformed input is a located InputError."""
from __future__ import annotations

import json
import textwrap
import warnings

import pytest

from hamisim.cluster import Card
from hamisim.errors import InputError
from hamisim.devices import SIMULATED_FAMILIES, vendors
from hamisim.io.clusterfile import load_cluster


def write(tmp_path, text, ext=".yaml", raw: bytes | None = None):
    path = tmp_path / f"cluster{ext}"
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return str(path)


def load_error(path) -> InputError:
    with pytest.raises(InputError) as info:
        load_cluster(path)
    return info.value


NODE = """
nodes:
  - name: node1
    devices:
      - {id: GPU-A, count: 10, devmem: 15360, type: NVIDIA-Tesla T4}
"""

# (case id, file text, expected line, expected message fragment)
YAML_CASES = [
    ("missing-nodes", "scheduler: {}\n", 1, "missing required key 'nodes'"),
    ("empty-node-list", "nodes: []\n", 1, "'nodes' is empty"),
    ("nodes-not-list", "nodes: {a: 1}\n", 1, "'nodes' must be a list, got a mapping"),
    ("missing-node-name", """
        nodes:
          - name: n0
          - cpu_milli: 1
        """, 3, "node 1: missing required key 'name'"),
    ("missing-card-id", """
        nodes:
          - name: n1
            devices:
              - {count: 10, devmem: 1, type: NVIDIA}
        """, 4, "card 0: missing required key 'id'"),
    ("missing-card-devmem", """
        nodes:
          - name: n1
            devices:
              - {id: A, devmem: 1, type: NVIDIA}
              - id: B
                type: NVIDIA
        """, 5, "node 'n1': card 1: missing required key 'devmem'"),
    ("missing-card-type", """
        nodes:
          - name: n1
            devices:
              - {id: A, devmem: 1}
        """, 4, "missing required key 'type'"),
    ("count-as-string", """
        nodes:
          - name: n1
            devices:
              - id: A
                type: NVIDIA
                devmem: 10
                count: "10"
        """, 7, "'count' must be an integer, got string '10'"),
    ("count-as-bool", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 10, count: true}
        """, 4, "'count' must be an integer, got boolean true"),
    ("devmem-fraction", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 1.5}
        """, 4, "'devmem' must be an integer, got the fractional number 1.5"),
    ("devmem-float-integral", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 2.0}
        """, 4, "'devmem' must be an integer, got the number 2.0"),
    ("devmem-nan", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: .nan}
        """, 4, "'devmem' must be an integer, got nan"),
    ("devcore-inf", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 1, devcore: .inf}
        """, 4, "'devcore' must be an integer, got inf"),
    ("health-as-string", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 1, health: "true"}
        """, 4, "'health' must be true or false, got string 'true'"),
    ("type-as-number", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: 4, devmem: 1}
        """, 4, "'type' must be a string, got integer 4"),
    ("card-not-mapping", """
        nodes:
          - name: n1
            devices:
              - GPU-A
        """, 4, "card 0 must be a mapping, got string 'GPU-A'"),
    ("negative-count", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 1, count: -1}
        """, 4, "'count' must be >= 0, got -1"),
    ("negative-devmem", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: -15360}
        """, 4, "'devmem' must be >= 0, got -15360"),
    ("negative-devcore", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 1, devcore: -100}
        """, 4, "'devcore' must be >= 0, got -100"),
    ("negative-cpu", """
        nodes:
          - name: n1
            cpu_milli: -1
        """, 3, "node 'n1': 'cpu_milli' must be >= 0, got -1"),
    ("huge-devmem", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 2147483648}
        """, 4, "'devmem' is too large: 2147483648 (at most 2147483647)"),
    ("huge-memory", """
        nodes:
          - name: n1
            memory_mib: 100000000000000000000
        """, 3, "'memory_mib' is too large"),
    ("duplicate-card-id-across-nodes", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, type: NVIDIA, devmem: 1}
          - name: n2
            devices:
              - {id: GPU-B, type: NVIDIA, devmem: 1}
              - {id: GPU-A, type: NVIDIA, devmem: 1}
        """, 8, "duplicate card id 'GPU-A' (already a card of node 'n1', line 4)"),
    ("duplicate-card-id-in-node", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, type: NVIDIA, devmem: 1}
              - {id: GPU-A, type: NVIDIA, devmem: 1}
        """, 5, "duplicate card id 'GPU-A'"),
    ("duplicate-gpu-index", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, index: 1, type: NVIDIA, devmem: 1}
              - {id: GPU-B, index: 1, type: NVIDIA, devmem: 1}
        """, 5, "duplicate GPU index 1"),
    ("duplicate-node-name", """
        nodes:
          - name: n1
          - name: n2
          - name: n1
        """, 4, "duplicate node name 'n1' (first defined on line 2)"),
    ("duplicate-node-name-from-group", """
        nodes:
          - name: gpu-1
          - {name_prefix: gpu, replicas: 3}
        """, 3, "duplicate node name 'gpu-1' (first defined on line 2)"),
    ("unknown-top-level-key", "nodes: [{name: a}]\nnode: []\n", 2,
     "unknown key 'node' (expected one of: nodes, quotas, scheduler); did you mean 'nodes'?"),
    ("unknown-node-key", """
        nodes:
          - name: n1
            cpu: 4
        """, 3, "unknown key 'cpu' in a node"),
    ("unknown-card-key", """
        nodes:
          - name: n1
            devices:
              - id: A
                type: NVIDIA
                devmem: 1
                memory: 5
        """, 7, "node 'n1': card 0: unknown key 'memory' in a card"),
    ("unknown-scheduler-key", """
        scheduler:
          gpu_policy: binpack
        nodes: [{name: a}]
        """, 2, "scheduler: unknown key 'gpu_policy'"),
    ("percentage-too-big", """
        scheduler:
          percentage_of_nodes_to_score: 101
        nodes: [{name: a}]
        """, 2, "'percentage_of_nodes_to_score' is too large: 101 (at most 100)"),
    ("percentage-negative", """
        scheduler: {percentage_of_nodes_to_score: -5}
        nodes: [{name: a}]
        """, 1, "'percentage_of_nodes_to_score' must be >= 0, got -5"),
    ("tie-break", """
        scheduler: {node_tie_break: first}
        nodes: [{name: a}]
        """, 1, "'node_tie_break' must be 'last' or 'random', got 'first'"),
    ("policy-not-string", """
        scheduler:
          gpu_scheduler_policy: [spread]
        nodes: [{name: a}]
        """, 2, "'gpu_scheduler_policy' must be a string, got a list"),
    ("mig-unknown-model", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 1, mode: mig}
        """, 4, "card type 'NVIDIA' has no built-in MIG table"),
    ("mig-not-allowlisted", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA H100 80GB HBM3, mode: mig}
        """, 4, "no migProfileAllowlist entry names a model in 'NVIDIA H100 80GB HBM3'"),
    ("mig-placement-size-0", """
        nodes:
          - name: n1
            devices:
              - id: A
                type: NVIDIA
                devmem: 1000
                mode: mig
                migProfiles:
                  - {name: 1g.x, memoryMB: 10, placements: [{start: 0, size: 0}]}
        """, 9, "node 'n1': card 0: MIG profile 0: placement 0: a placement of size 0 "
            "overlaps nothing"),
    ("mig-profile-no-name", """
        nodes:
          - name: n1
            devices:
              - {id: A, type: NVIDIA, devmem: 1, mode: mig, migProfiles: [{memoryMB: 1}]}
        """, 4, "a MIG profile needs its 'name'"),
    ("mig-allowlist-invalid", """
        scheduler:
          migProfileAllowlist:
            - {models: [A100], profiles: [g1.5gb]}
        nodes: [{name: a}]
        """, 3, "invalid MIG profile 'g1.5gb' (HAMi's scheduler refuses to start)"),
    ("mig-allowlist-no-profiles", """
        scheduler:
          migProfileAllowlist:
            - {models: [A100]}
        nodes: [{name: a}]
        """, 3, "MIG profile allowlist must define models and profiles"),
    ("broken-annotation-json", """
        nodes:
          - name: n1
            devices: '[{"id": "GPU-A", "count": 10,'
        """, 3, "node 'n1': 'devices' annotation JSON: invalid JSON: unexpected end of input"),
    ("annotation-json-wrong-type", """
        nodes:
          - name: n1
            cpu_milli: 1000
            devices: '[{"id": "GPU-A", "count": "10"}]'
        """, 4, "'devices' annotation JSON: card 0: 'count' must be an integer, got string '10'"),
    ("annotation-json-negative", """
        nodes:
          - name: n1
            devices: '[{"id": "GPU-A", "devmem": -1}]'
        """, 3, "'devmem' must be >= 0, got -1"),
    ("annotation-json-nan", """
        nodes:
          - name: n1
            devices: '[{"id": "GPU-A", "devmem": NaN}]'
        """, 3, "NaN is not allowed in JSON"),
    ("annotation-json-not-list", """
        nodes:
          - name: n1
            devices: '{"id": "GPU-A"}'
        """, 3, "the annotation must be a list, got a mapping"),
    ("annotation-json-mig-placement", """
        nodes:
          - name: n1
            devices: '[{"id": "GPU-A", "mode": "mig", "migProfiles":
              [{"name": "1g", "placements": [{"start": 60, "size": 8}]}]}]'
        """, 3, "ends beyond slot 64"),
    ("annotation-json-no-id", """
        nodes:
          - name: n1
            devices: '[{"count": 10, "type": "NVIDIA"}]'
        """, 3, "card 0: card has no 'id'"),
    ("annotation-json-duplicate-key", """
        nodes:
          - name: n1
            devices: '[{"id": "GPU-A", "id": "GPU-B"}]'
        """, 3, "duplicate key 'id'"),
    ("cordon-unknown-card", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, type: NVIDIA, devmem: 1}
            cordon: [GPU-A, GPU-Z]
        """, 5, "'cordon' names card 'GPU-Z', which is not a card of this node (cards: GPU-A)"),
    ("cordon-string-unknown-card", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, type: NVIDIA, devmem: 1}
            cordon: "GPU-A,GPU-Z"
        """, 5, "'cordon' names card 'GPU-Z'"),
    ("score-unknown-row", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, type: NVIDIA, devmem: 1}
              - {id: GPU-B, type: NVIDIA, devmem: 1}
            nvidia_score:
              GPU-A: {GPU-B: 100}
              GPU-C: {GPU-A: 100}
        """, 8, "'nvidia_score' names card 'GPU-C'"),
    ("score-unknown-column", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, type: NVIDIA, devmem: 1}
              - {id: GPU-B, type: NVIDIA, devmem: 1}
            nvidia_score:
              GPU-A:
                GPU-X: 100
        """, 8, "'nvidia_score' names card 'GPU-X'"),
    ("score-not-int", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, type: NVIDIA, devmem: 1}
              - {id: GPU-B, type: NVIDIA, devmem: 1}
            nvidia_score: {GPU-A: {GPU-B: 1.5}}
        """, 6, "score of 'GPU-B' must be an integer"),
    ("score-annotation-unknown", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, type: NVIDIA, devmem: 1}
            nvidia_score: '[{"uuid": "GPU-Q", "score": {"GPU-A": 1}}]'
        """, 5, "'nvidia_score' names card 'GPU-Q'"),
    ("score-annotation-broken", """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, type: NVIDIA, devmem: 1}
            nvidia_score: '[{"uuid": "GPU-A", "score": {"GPU-A" 1}}]'
        """, 5, "invalid JSON: expected ':' after key 'GPU-A'"),
    ("group-replicas-zero", """
        nodes:
          - {name_prefix: gpu, replicas: 0}
        """, 2, "node 0: 'replicas' must be >= 1, got 0"),
    ("group-no-prefix", """
        nodes:
          - replicas: 3
            cpu_milli: 1
        """, 2, "a node group (with 'replicas') needs 'name_prefix' or 'name'"),
    ("group-gpus-without-card", """
        nodes:
          - name_prefix: gpu
            replicas: 3
            gpus: 8
        """, 2, "'gpus' and 'card' go together: missing 'card'"),
    ("group-template-with-id", """
        nodes:
          - name_prefix: gpu
            replicas: 3
            gpus: 8
            card:
              id: GPU-A
              type: NVIDIA
              devmem: 1
        """, 6, "card template: a card template must not give 'id'"),
    ("group-devices-and-gpus", """
        nodes:
          - name_prefix: gpu
            replicas: 3
            gpus: 8
            card: {type: NVIDIA, devmem: 1}
            devices: []
        """, 6, "give either 'devices' or 'gpus' with 'card', not both"),
    ("group-template-negative", """
        nodes:
          - name_prefix: gpu
            replicas: 3
            gpus: 2
            card: {type: NVIDIA, devmem: -1}
        """, 5, "node group 'gpu': card template: 'devmem' must be >= 0"),
    ("duplicate-yaml-key", """
        nodes:
          - name: n1
            cpu_milli: 1
            cpu_milli: 2
        """, 4, "duplicate key 'cpu_milli' (first given on line 3)"),
    ("bad-yaml", """
        nodes:
          - name: n1
            devices: [{id: A, type: NVIDIA, devmem: 1}
          - name: n2
        """, 4, "invalid YAML: "),
    ("bad-yaml-indent", "nodes:\n  - name: n1\n cpu_milli: 3\n", 3, "invalid YAML: "),
    ("empty-yaml", "", 1, "file is empty"),
    ("comments-only-yaml", "# nothing here\n\n", 1, "file is empty"),
    ("top-level-list", "- name: n1\n", 1, "must hold a mapping at the top level, got a list"),
    ("tabs-yaml", "nodes:\n\t- name: n1\n", 2, "invalid YAML: "),
]


@pytest.mark.parametrize("case,text,line,message", YAML_CASES, ids=[c[0] for c in YAML_CASES])
def test_malformed_yaml(tmp_path, case, text, line, message):
    path = write(tmp_path, text)
    err = load_error(path)
    assert str(err).startswith(f"{path}:{line}: "), str(err)
    assert message in err.problem, str(err)
    assert err.line == line


JSON_CASES = [
    ("truncated-json", '{"nodes": [\n  {"name": "n1",\n   "cpu_milli": 5\n', 3,
     "invalid JSON: unexpected end of input: '{' opened on line 2 is never closed"),
    ("json-missing-comma", '{"nodes": [\n  {"name": "n1"}\n  {"name": "n2"}]}', 3,
     "invalid JSON: expected ',' or ']' in a list"),
    ("json-trailing-comma", '{"nodes": [{"name": "n1"},\n]}', 2, "invalid JSON: expected a value"),
    ("json-nan", '{"nodes": [{"name": "n1",\n "cpu_milli": NaN}]}', 2,
     "NaN is not allowed in JSON"),
    ("json-infinity", '{"nodes": [{"name": "n1",\n "cpu_milli": -Infinity}]}', 2,
     "-Infinity is not allowed in JSON"),
    ("json-huge-exponent", '{"nodes": [{"name": "n1",\n "cpu_milli": 1e999}]}', 2,
     "'cpu_milli' must be an integer, got inf"),
    ("json-huge-int", '{"nodes": [{"name": "n1",\n "cpu_milli": 18014398509481985}]}', 2,
     "'cpu_milli' is too large"),
    ("json-float", '{"nodes": [{"name": "n1",\n "memory_mib": 1e3}]}', 2,
     "'memory_mib' must be an integer, got the number 1000.0"),
    ("json-duplicate-key", '{"nodes": [{"name": "n1",\n  "name": "n2"}]}', 2,
     "duplicate key 'name' (first given on line 1)"),
    ("json-extra-data", '{"nodes": [{"name": "n1"}]}\n{}', 2, "extra data after the end"),
    ("json-single-quotes", "{'nodes': []}", 1, "expected a quoted key"),
    ("json-empty", "", 1, "file is empty"),
    ("json-whitespace", "\n\n  \n", 1, "file is empty"),
    ("json-not-object", "[1, 2]", 1, "must hold a mapping at the top level, got a list"),
    ("json-unknown-key", '{"nodes": [{"name": "n1"}],\n "nodez": 1}', 2,
     "unknown key 'nodez'"),
    ("json-mig", '{"nodes": [{"name": "n1", "devices": [\n'
     ' {"id": "A", "type": "NVIDIA", "devmem": 1, "mode": "mig"}]}]}', 2,
     "has no built-in MIG table"),
]


@pytest.mark.parametrize("case,text,line,message", JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_malformed_json(tmp_path, case, text, line, message):
    path = write(tmp_path, text, ext=".json")
    err = load_error(path)
    assert str(err).startswith(f"{path}:{line}: "), str(err)
    assert message in err.problem, str(err)


@pytest.mark.parametrize("ext", [".yaml", ".json"])
def test_non_utf8(tmp_path, ext):
    raw = b'{"nodes": [\n {"name": "n1",\n  "cpu_milli": 1, "x\xff": 2}]}\n'
    path = write(tmp_path, None, ext=ext, raw=raw)
    err = load_error(path)
    assert str(err).startswith(f"{path}:3: file is not valid UTF-8 (byte 0xff"), str(err)


def test_unsupported_extension(tmp_path):
    path = tmp_path / "cluster.txt"
    path.write_text("nodes: []")
    err = load_error(str(path))
    assert "unsupported file type '.txt'" in str(err)


def test_missing_file(tmp_path):
    err = load_error(str(tmp_path / "nope.yaml"))
    assert "cannot read file" in str(err)


# ---------------------------------------------------------------------------
# accepted inputs

def test_plain_yaml_defaults(tmp_path):
    cluster = load_cluster(write(tmp_path, """
        scheduler:
          gpu_scheduler_policy: binpack,numa
          percentage_of_nodes_to_score: 100
          node_tie_break: random
          memory_factor: 2
        nodes:
          - name: node1
            cpu_milli: 64000
            memory_mib: 262144
            devices:
              - {id: GPU-MOCK-A, devmem: 15360, type: NVIDIA-Tesla T4}
              - {id: GPU-MOCK-B, devmem: 15360, type: NVIDIA-Tesla T4, numa: 1, health: false,
                 mode: mps, count: 4, devcore: 200}
          - name: cpu-only
        """))
    s = cluster.scheduler
    assert (s.gpu_scheduler_policy, s.node_scheduler_policy, s.memory_factor) == (
        "binpack,numa", "binpack", 2)
    assert (s.percentage_of_nodes_to_score, s.node_tie_break) == (100, "random")
    n1, n2 = cluster.nodes
    assert n1.cpu_milli == 64000 and n1.memory_mib == 262144
    assert n1.cards[0] == Card(id="GPU-MOCK-A", index=0, count=10, devmem=15360, devcore=100,
                               type="NVIDIA-Tesla T4", numa=0, health=True, mode="hami-core")
    assert n1.cards[1] == Card(id="GPU-MOCK-B", index=1, count=4, devmem=15360, devcore=200,
                               type="NVIDIA-Tesla T4", numa=1, health=False, mode="mps")
    assert n2.cards == () and not n2.registered and n2.cpu_milli is None


ANNOTATION = json.dumps([
    {"id": "GPU-0a1b", "count": 10, "devmem": 15360, "devcore": 100, "type": "NVIDIA-Tesla T4",
     "health": True, "mode": "hami-core", "customInfo": {"driver": "550"},
     "devicepairscore": {}, "links": [1, 2]},
    {"id": "GPU-2c3d", "index": 1, "count": 10, "devmem": 15360, "devcore": 100,
     "type": "NVIDIA-Tesla T4", "numa": 1, "mode": "hami-core", "Health": True},
    {"ID": "GPU-4e5f", "Index": 2, "devmem": 100, "type": "NVIDIA", "migProfiles": None},
], separators=(",", ":"))


def test_annotation_string_devices(tmp_path):
    cluster = load_cluster(write(tmp_path, f"""
        nodes:
          - name: node1
            devices: '{ANNOTATION}'
        """))
    a, b, c = cluster.nodes[0].cards
    assert a == Card(id="GPU-0a1b", index=0, count=10, devmem=15360, devcore=100,
                     type="NVIDIA-Tesla T4", numa=0, health=True, mode="hami-core")
    assert (b.id, b.index, b.numa, b.health) == ("GPU-2c3d", 1, 1, True)
    # absent fields take Go zero values, as HAMi decodes the annotation
    assert c == Card(id="GPU-4e5f", index=2, count=0, devmem=100, devcore=0, type="NVIDIA",
                     numa=0, health=False, mode="")


def test_annotation_string_in_json_file(tmp_path):
    doc = {"nodes": [{"name": "node1", "devices": ANNOTATION}]}
    cluster = load_cluster(write(tmp_path, json.dumps(doc, indent=1), ext=".json"))
    assert [c.id for c in cluster.nodes[0].cards] == ["GPU-0a1b", "GPU-2c3d", "GPU-4e5f"]


def test_json_file_equals_yaml_file(tmp_path):
    text = """
        nodes:
          - name: node1
            devices:
              - {id: GPU-A, devmem: 15360, type: NVIDIA-Tesla T4}
            cordon: [GPU-A]
        """
    from_yaml = load_cluster(write(tmp_path, text))
    doc = {"nodes": [{"name": "node1", "cordon": ["GPU-A"], "devices": [
        {"id": "GPU-A", "devmem": 15360, "type": "NVIDIA-Tesla T4"}]}]}
    from_json = load_cluster(write(tmp_path, json.dumps(doc), ext=".json"))
    assert from_yaml == from_json


@pytest.mark.parametrize("replicas,first,last", [(1, "gpu-0", "gpu-0"), (10, "gpu-0", "gpu-9"),
                                                 (11, "gpu-00", "gpu-10"),
                                                 (1000, "gpu-000", "gpu-999")])
def test_group_names(tmp_path, replicas, first, last):
    cluster = load_cluster(write(tmp_path, f"""
        nodes:
          - name_prefix: gpu
            replicas: {replicas}
            cpu_milli: 96000
            gpus: 2
            card: {{type: NVIDIA-A100, devmem: 81920, numa: 1}}
        """))
    assert len(cluster.nodes) == replicas
    assert cluster.nodes[0].name == first and cluster.nodes[-1].name == last
    node = cluster.nodes[-1]
    assert [c.id for c in node.cards] == [f"GPU-{last}-0", f"GPU-{last}-1"]
    assert [c.index for c in node.cards] == [0, 1]
    assert all(c.devmem == 81920 and c.numa == 1 and c.count == 10 for c in node.cards)
    assert node.cpu_milli == 96000
    assert cluster.n_cards == 2 * replicas


def test_group_with_device_list_scores_and_cordon(tmp_path):
    cluster = load_cluster(write(tmp_path, """
        nodes:
          - name: head
            devices:
              - {id: GPU-H, devmem: 1, type: NVIDIA}
          - name: dgx                 # 'name' is the prefix of a group
            replicas: 2
            devices:
              - {id: A, devmem: 1, type: NVIDIA}
              - {index: 4, devmem: 1, type: NVIDIA}
            nvidia_score: {A: {"4": 100}, "4": {A: 100}}
            cordon: "4"
        """))
    head, d0, d1 = cluster.nodes
    assert (d0.name, d1.name) == ("dgx-0", "dgx-1")
    assert [c.id for c in d1.cards] == ["dgx-1-A", "GPU-dgx-1-4"]
    assert [c.index for c in d1.cards] == [0, 4]
    assert d1.pair_scores == {"dgx-1-A": {"GPU-dgx-1-4": 100}, "GPU-dgx-1-4": {"dgx-1-A": 100}}
    assert d1.cordon == frozenset({"GPU-dgx-1-4"})
    assert d0.cordon == frozenset({"GPU-dgx-0-4"})


def test_nodes_report_under_their_group(tmp_path):
    from hamisim.cluster import NO_GPU_GROUP, group_of
    cluster = load_cluster(write(tmp_path, """
        nodes:
          - name_prefix: h100-a
            replicas: 2
            gpus: 1
            card: {type: NVIDIA-H100, devmem: 81920}
          - name_prefix: h100-b
            replicas: 1
            group: h100               # two pools, one group
            gpus: 1
            card: {type: NVIDIA-H100, devmem: 81920}
          - name: t4-box
            gpus: 1
            card: {type: NVIDIA-T4, devmem: 15360}
          - name: mixed
            devices:
              - {id: X, devmem: 1, type: NVIDIA-A}
              - {id: Y, devmem: 1, type: NVIDIA-B}
          - name: cpu-only
          - name: tagged
            group: special
        """))
    assert [group_of(n) for n in cluster.nodes] == [
        "h100-a", "h100-a", "h100", "NVIDIA-T4", "NVIDIA-A+NVIDIA-B", NO_GPU_GROUP, "special"]


def test_resize_a_node_group(tmp_path):
    path = write(tmp_path, """
        nodes:
          - name_prefix: a
            replicas: 2
            gpus: 1
            card: {type: NVIDIA, devmem: 1000}
          - name: b
            replicas: 1
            gpus: 1
            card: {type: NVIDIA, devmem: 1000}
        """)
    cluster = load_cluster(path, resize={"a": 4})
    assert [n.name for n in cluster.nodes] == ["a-0", "a-1", "a-2", "a-3", "b-0"]
    with pytest.raises(InputError, match="no node group 'c' to resize"):
        load_cluster(path, resize={"c": 1})
    with pytest.raises(InputError, match="resized to 0 nodes"):
        load_cluster(path, resize={"b": 0})


def test_single_node_with_gpus_template(tmp_path):
    cluster = load_cluster(write(tmp_path, """
        nodes:
          - name: box
            gpus: 3
            card: {type: NVIDIA, devmem: 1000}
        """))
    assert [c.id for c in cluster.nodes[0].cards] == ["GPU-box-0", "GPU-box-1", "GPU-box-2"]


def test_group_duplicate_card_id_across_groups(tmp_path):
    # explicit ids of one node can collide with derived ids of a group
    path = write(tmp_path, """
        nodes:
          - name: n
            devices:
              - {id: GPU-g-0-0, devmem: 1, type: NVIDIA}
          - {name_prefix: g, replicas: 1, gpus: 1, card: {devmem: 1, type: NVIDIA}}
        """)
    err = load_error(path)
    assert str(err).startswith(f"{path}:5: node 'g-0': duplicate card id 'GPU-g-0-0'"), str(err)


def test_nvidia_score_forms(tmp_path):
    mapping = load_cluster(write(tmp_path, """
        nodes:
          - name: n1
            devices:
              - {id: GPU-A, devmem: 1, type: NVIDIA}
              - {id: GPU-B, devmem: 1, type: NVIDIA}
            nvidia_score:
              GPU-A: {GPU-B: 100}
              GPU-B: {GPU-A: 90}
        """)).nodes[0].pair_scores
    annotation = json.dumps([{"uuid": "GPU-A", "score": {"GPU-B": 100}},
                             {"uuid": "GPU-B", "score": {"GPU-A": 90}}])
    from_string = load_cluster(write(tmp_path, f"""
        nodes:
          - name: n1
            devices:
              - {{id: GPU-A, devmem: 1, type: NVIDIA}}
              - {{id: GPU-B, devmem: 1, type: NVIDIA}}
            nvidia_score: '{annotation}'
        """)).nodes[0].pair_scores
    from_list = load_cluster(write(tmp_path, f"""
        nodes:
          - name: n1
            devices:
              - {{id: GPU-A, devmem: 1, type: NVIDIA}}
              - {{id: GPU-B, devmem: 1, type: NVIDIA}}
            nvidia_score: {annotation}
        """)).nodes[0].pair_scores
    expected = {"GPU-A": {"GPU-B": 100}, "GPU-B": {"GPU-A": 90}}
    assert mapping == from_string == from_list == expected


@pytest.mark.parametrize("cordon", ['"GPU-B, ,GPU-A,"', "[GPU-A, GPU-B]", "' GPU-A,GPU-B '"])
def test_cordon_forms(tmp_path, cordon):
    cluster = load_cluster(write(tmp_path, f"""
        nodes:
          - name: n1
            devices:
              - {{id: GPU-A, devmem: 1, type: NVIDIA}}
              - {{id: GPU-B, devmem: 1, type: NVIDIA}}
              - {{id: GPU-C, devmem: 1, type: NVIDIA}}
            cordon: {cordon}
        """))
    assert cluster.nodes[0].cordon == frozenset({"GPU-A", "GPU-B"})


def test_yaml_anchors_and_merge_keys(tmp_path):
    cluster = load_cluster(write(tmp_path, """
        nodes:
          - name: n1
            devices:
              - &t4 {id: GPU-A, devmem: 15360, type: NVIDIA-Tesla T4}
              - {<<: *t4, id: GPU-B, devmem: 100}
        """))
    assert [(c.id, c.devmem, c.type) for c in cluster.nodes[0].cards] == [
        ("GPU-A", 15360, "NVIDIA-Tesla T4"), ("GPU-B", 100, "NVIDIA-Tesla T4")]


def test_yaml_anchor_key_is_still_checked(tmp_path):
    path = write(tmp_path, """
        t4: &t4 {devmem: 15360, type: NVIDIA-Tesla T4}
        nodes:
          - name: n1
        """)
    err = load_error(path)
    assert str(err).startswith(f"{path}:1: unknown key 't4'")


def test_an_empty_card_type_loads_with_a_warning(tmp_path):
    # what HAMi decodes from a registration without 'type'; the import writes it so
    from hamisim.errors import InputWarning
    path = tmp_path / "c.yaml"
    path.write_text("nodes:\n  - name: n\n    devices:\n      - {id: G, devmem: 1000, type: ''}\n")
    with pytest.warns(InputWarning, match=r"c.yaml:4: warning: card type '' is empty"):
        cluster = load_cluster(path)
    assert cluster.nodes[0].cards[0].type == ""


FOREIGN = """\
nodes:
  - name: t4
    gpus: 2
    card: {devmem: 15360, type: NVIDIA-Tesla T4}
  - name_prefix: npu
    replicas: 5
    gpus: 8
    card: {devmem: 65536, type: Ascend910B}
  - name: mixed
    devices:
      - {id: G0, index: 0, devmem: 15360, type: nvidia-tesla t4}
      - {id: M1, index: 1, devmem: 32768, type: Enflame-S60}
"""


#: the simulated families' words as the warning lists them
WORDS = ", ".join(repr(w) for w in SIMULATED_FAMILIES)


def test_cards_hamis_nvidia_backend_never_offers_warn_once_per_type_at_their_line(tmp_path):
    from hamisim.errors import InputWarning
    path = write(tmp_path, FOREIGN)
    with pytest.warns(InputWarning) as caught:
        cluster = load_cluster(path)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2, messages
    assert messages[0].startswith(
        f"{path}:8: warning: card type 'Ascend910B' (40 cards on nodes npu-0, npu-1, npu-2 and "
        f"2 more) contains none of {WORDS} (a card for HAMi's Huawei Ascend (a chip outside "
        f"the chart's vnpus list) backend, pkg/device/ascend): no HAMi backend hamisim simulates ({vendors()}) offers it "
        "to a pod; never scheduled, left out of every GPU total")
    assert messages[1].startswith(f"{path}:12: warning: card type 'Enflame-S60' (1 card on "
                                  f"node mixed) contains none of {WORDS} (a card for HAMi's "
                                  "Enflame backend")
    # loaded as written (HAMi's node score still sees them), not counted as GPUs
    assert sum(len(n.cards) for n in cluster.nodes) == 44 and cluster.n_cards == 3
    assert [(n.name, c.type) for n, c in cluster.unsimulated_cards()][-2:] == [
        ("npu-4", "Ascend910B"), ("mixed", "Enflame-S60")]


def test_the_json_fast_path_warns_about_such_cards_as_the_full_reader(tmp_path):
    from hamisim.errors import InputWarning
    nodes = [{"name": "t4", "devices": [{"id": "G", "devmem": 15360, "type": "NVIDIA-T4"}]},
             {"name": "npu", "devices": [{"id": f"N{k}", "index": k, "devmem": 65536,
                                          "type": "Ascend910B"} for k in range(2)]}]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"nodes": nodes}, indent=1))
    with pytest.warns(InputWarning) as caught:
        cluster = load_cluster(path)
    first = path.read_text().splitlines().index('     "id": "N0",')   # the card's "{" line
    assert [str(w.message).split(" contains none of")[0] for w in caught] == [
        f"{path}:{first}: warning: card type 'Ascend910B' (2 cards on node npu)"]
    assert cluster.n_cards == 1
    # an all-NVIDIA file stays on the fast path, without a word
    path.write_text(json.dumps({"nodes": nodes[:1]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_cluster(path).n_cards == 1
