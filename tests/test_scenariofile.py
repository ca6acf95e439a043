"""Scenario-file loading (no running): steps, pods and located errors."""
from __future__ import annotations

import json
import textwrap

import pytest

from hamisim.errors import InputError
from hamisim.io.documents import from_plain, parse_json
from hamisim.io.podspec import TRACE_COLUMN_ANNOTATIONS, TRACE_POD_KEYS, pod_from_document
from hamisim.io.scenariofile import CreateStep, DeleteStep, ExpectStep, load_scenario
from hamisim.pods import GPU, GPUCORES, GPUMEM, GPUMEM_PERCENTAGE, Container

HEAD = """\
scheduler: {gpu_scheduler_policy: spread}
nodes:
  - name: node1
    devices:
      - {id: GPU-MOCK-A, index: 0, count: 10, devmem: 15360, devcore: 100, type: NVIDIA-Tesla T4}
      - {id: GPU-MOCK-B, index: 1, count: 10, devmem: 15360, devcore: 100, type: NVIDIA-Tesla T4}
"""
HEAD_LINES = HEAD.count("\n")  # steps: is on line HEAD_LINES + 1, step 0 on HEAD_LINES + 2


def write(tmp_path, text, ext=".yaml"):
    path = tmp_path / f"scenario{ext}"
    path.write_text(text, encoding="utf-8")
    return str(path)


def with_steps(steps: str) -> str:
    return HEAD + "steps:\n" + textwrap.dedent(steps).lstrip("\n")


def load_error(path) -> InputError:
    with pytest.raises(InputError) as info:
        load_scenario(path)
    return info.value


def test_design_example(tmp_path):
    scenario = load_scenario(write(tmp_path, with_steps("""
        - create: {name: plain-1, gpu: 1, gpumem: 1000}
        - create: {name: mutex-1, gpu: 1, gpumem: 1000,
                   annotations: {hami.io/gpu-scheduler-policy: mutex}}
        - delete: plain-1
        - expect: {plain-1: deleted, mutex-1: GPU-MOCK-B}
        - create: {name: plain-1, gpu: 2}
        - expect: {plain-1: "GPU-MOCK-A , GPU-MOCK-B", mutex-1: pending}
        """)))
    s = HEAD_LINES + 2
    c1, c2, d, e1, c3, e2 = scenario.steps
    assert c1 == CreateStep(pod=c1.pod, line=s)
    assert c1.pod.name == "plain-1"
    assert c1.pod.containers == (Container(limits={GPU: 1, GPUMEM: 1000}),)
    assert c2.pod.annotations == {"hami.io/gpu-scheduler-policy": "mutex"} and c2.line == s + 1
    assert d == DeleteStep(pod_name="plain-1", line=s + 3)
    assert e1 == ExpectStep(expected={"plain-1": "deleted", "mutex-1": "GPU-MOCK-B"}, line=s + 4)
    assert c3.pod.containers[0].limits == {GPU: 2}
    assert e2.expected == {"plain-1": "GPU-MOCK-A,GPU-MOCK-B", "mutex-1": "pending"}
    assert [n.name for n in scenario.cluster.nodes] == ["node1"]
    assert scenario.cluster.scheduler.gpu_scheduler_policy == "spread"
    assert scenario.path.endswith("scenario.yaml")


def test_json_scenario(tmp_path):
    doc = {"nodes": [{"name": "n", "devices": [{"id": "G", "devmem": 100, "type": "NVIDIA"}]}],
           "steps": [{"create": {"name": "p", "gpu": 1}}, {"expect": {"p": "G"}}]}
    text = json.dumps(doc, indent=2)
    scenario = load_scenario(write(tmp_path, text, ext=".json"))
    assert [type(s).__name__ for s in scenario.steps] == ["CreateStep", "ExpectStep"]
    lines = text.splitlines()
    create_key = next(i for i, l in enumerate(lines) if '"create"' in l)
    assert scenario.steps[0].line == create_key  # 1-based line of the step's opening brace


def test_create_all_columns(tmp_path):
    scenario = load_scenario(write(tmp_path, with_steps("""
        - create:
            name: full
            gpu: 2
            gpumem: 3000
            gpumem_percentage: 150        # the webhook's business, not a load error
            gpucores: 30
            cpu_milli: 4000
            memory_mib: 8192
            priority: -5
            gpu_policy: binpack
            node_policy: spread
            use_gputype: [T4, A100]
            nouse_gputype: V100
            use_gpuuuid: GPU-MOCK-A,GPU-MOCK-B
            nouse_gpuuuid: GPU-X
            numa_bind: true
            scoring_weights: slot=1,core=2,memory=3
            annotations: {nvidia.com/vgpu-mode: hami-core}
        """)))
    pod = scenario.steps[0].pod
    assert pod.containers == (Container(limits={GPU: 2, GPUMEM: 3000, GPUMEM_PERCENTAGE: 150,
                                                GPUCORES: 30}),)
    assert (pod.cpu_milli, pod.memory_mib, pod.priority) == (4000, 8192, -5)
    assert pod.annotations == {
        "nvidia.com/vgpu-mode": "hami-core",
        "hami.io/gpu-scheduler-policy": "binpack",
        "hami.io/node-scheduler-policy": "spread",
        "nvidia.com/use-gputype": "T4,A100",
        "nvidia.com/nouse-gputype": "V100",
        "nvidia.com/use-gpuuuid": "GPU-MOCK-A,GPU-MOCK-B",
        "nvidia.com/nouse-gpuuuid": "GPU-X",
        "nvidia.com/numa-bind": "true",
        "hami.io/device-scoring-weights": "slot=1,core=2,memory=3",
    }
    assert set(TRACE_COLUMN_ANNOTATIONS.values()) <= set(pod.annotations)


def test_multi_container_pod(tmp_path):
    scenario = load_scenario(write(tmp_path, with_steps("""
        - create:
            name: multi
            containers:
              - {gpu: 1, gpumem: 1000}
              - {}
              - limits: {nvidia.com/gpu: 2, nvidia.com/gpucores: 50}
                requests: {nvidia.com/gpumem: 500}
            init_containers:
              - {gpu: 1, gpucores: 100}
            numa_bind: false
        """)))
    pod = scenario.steps[0].pod
    assert pod.containers == (
        Container(limits={GPU: 1, GPUMEM: 1000}),
        Container(),
        Container(limits={GPU: 2, GPUCORES: 50}, requests={GPUMEM: 500}),
    )
    assert pod.init_containers == (Container(limits={GPU: 1, GPUCORES: 100}),)
    assert pod.annotations == {"nvidia.com/numa-bind": "false"}


def test_pod_without_gpu_keys_has_one_empty_container(tmp_path):
    scenario = load_scenario(write(tmp_path, with_steps("- create: {name: cpu, cpu_milli: 5}\n")))
    assert scenario.steps[0].pod.containers == (Container(),)


def test_trace_keys_are_a_parameter():
    row = from_plain({"name": "p", "arrival": 1.5, "gpu": 1}, "trace.csv", 7)
    pod = pod_from_document(row, "trace.csv", allowed_keys=TRACE_POD_KEYS)
    assert pod.containers[0].limits == {GPU: 1}
    with pytest.raises(InputError) as info:
        pod_from_document(row, "trace.csv")
    assert str(info.value).startswith("trace.csv:7: unknown key 'arrival' in a pod")


def test_jsonl_row_lines():
    row = parse_json('{"name": "p", "gpu": "1"}', "t.jsonl", first_line=12)
    with pytest.raises(InputError) as info:
        pod_from_document(row.as_doc("row"), "t.jsonl", allowed_keys=TRACE_POD_KEYS)
    assert str(info.value) == "t.jsonl:12: pod 'p': 'gpu' must be an integer, got string '1'"


S0 = HEAD_LINES + 2  # line of step 0

# (case id, steps text, expected line, expected message fragment)
STEP_CASES = [
    ("unknown-step-kind", "- create: {name: a}\n- schedule: {name: b}\n", S0 + 1,
     "step 1: unknown key 'schedule' in a step (expected one of: create, delete, expect, "
     "expect_message, wait)"),
    ("two-kinds", "- create: {name: a}\n  delete: a\n", S0,
     "step 0: a step needs exactly one of 'create', 'delete', 'expect', 'expect_message', "
     "'wait' (got create, delete)"),
    ("empty-step", "- {}\n", S0, "a step needs exactly one of"),
    ("step-not-mapping", "- create\n", S0, "step 0 must be a mapping, got string 'create'"),
    ("duplicate-create", "- create: {name: a, gpu: 1}\n- create: {name: b}\n"
     "- create: {name: a}\n", S0 + 2,
     "step 2: pod 'a' already exists (created on line %d); delete it first" % S0),
    ("delete-never-created", "- create: {name: a}\n- delete: b\n", S0 + 1,
     "step 1: pod 'b' is not created by any earlier step"),
    ("delete-twice", "- create: {name: a}\n- delete: a\n- delete: a\n", S0 + 2,
     "pod 'a' is already deleted"),
    ("delete-not-string", "- create: {name: a}\n- delete: [a]\n", S0 + 1,
     "'delete' must be a string, got a list"),
    ("expect-before-create", "- expect: {a: pending}\n- create: {name: a}\n", S0,
     "expect names pod 'a', which no earlier step creates"),
    ("expect-not-string", "- create: {name: a}\n- expect:\n    a: 3\n", S0 + 2,
     "the expectation for pod 'a' (a card id, a comma list of card ids, 'pending', "
     "'deleted' or 'rejected') must be a string, got integer 3"),
    ("expect-list", "- create: {name: a}\n- expect: {a: [GPU-MOCK-A]}\n", S0 + 1,
     "must be a string, got a list"),
    ("expect-unknown-card", "- create: {name: a}\n- expect: {a: GPU-MOCK-Z}\n", S0 + 1,
     "names card 'GPU-MOCK-Z', which is not in the cluster"),
    ("expect-typo-pending", "- create: {name: a}\n- expect: {a: Pending}\n", S0 + 1,
     "names card 'Pending', which is not in the cluster (or write 'pending' / 'deleted')"),
    ("expect-empty-id", "- create: {name: a}\n- expect: {a: 'GPU-MOCK-A,'}\n", S0 + 1,
     "has an empty card id"),
    ("expect-empty", "- create: {name: a}\n- expect: {}\n", S0 + 1, "'expect' is empty"),
    ("create-missing-name", "- create: {gpu: 1}\n", S0, "missing required key 'name'"),
    ("create-not-mapping", "- create: a\n", S0, "'create' must be a mapping, got string 'a'"),
    ("create-arrival", "- create: {name: a, arrival: 3}\n", S0,
     "unknown key 'arrival' in a pod"),
    ("create-unknown-key", "- create:\n    name: a\n    gpus: 1\n", S0 + 2,
     "unknown key 'gpus' in a pod (expected one of: "),
    ("create-gpu-string", "- create: {name: a, gpu: '1'}\n", S0,
     "step 0: pod 'a': 'gpu' must be an integer, got string '1'"),
    ("create-gpu-bool", "- create: {name: a, gpu: true}\n", S0,
     "'gpu' must be an integer, got boolean true"),
    ("create-gpumem-float", "- create: {name: a, gpumem: 1000.5}\n", S0,
     "'gpumem' must be an integer, got the fractional number 1000.5"),
    ("create-gpumem-nan", "- create: {name: a, gpumem: .NaN}\n", S0,
     "'gpumem' must be an integer, got nan"),
    ("create-gpumem-huge", "- create: {name: a, gpumem: 99999999999999999999}\n", S0,
     "'gpumem' is too large"),
    ("create-negative-cpu", "- create: {name: a, cpu_milli: -1}\n", S0,
     "'cpu_milli' must be >= 0, got -1"),
    ("create-priority-huge", "- create: {name: a, priority: 2147483648}\n", S0,
     "'priority' is too large: 2147483648 (at most 2147483647)"),
    ("shorthand-and-containers", "- create:\n    name: a\n    gpu: 1\n    containers: [{gpu: 1}]\n",
     S0 + 2, "'gpu' at the top level and 'containers' are mutually exclusive"),
    ("empty-containers", "- create: {name: a, containers: []}\n", S0, "'containers' is empty"),
    ("container-unknown-key", "- create:\n    name: a\n    containers:\n      - {gpu: 1, gpu_mem: 3}\n",
     S0 + 3, "step 0: pod 'a': container 0: unknown key 'gpu_mem' in a container"),
    ("container-unknown-resource", "- create:\n    name: a\n    containers:\n"
     "      - limits:\n          nvidia.com/gpumemory: 3\n", S0 + 4,
     "unknown resource 'nvidia.com/gpumemory' in 'limits'"),
    ("container-resource-twice", "- create:\n    name: a\n    init_containers:\n"
     "      - {limits: {nvidia.com/gpu: 1}, gpu: 2}\n", S0 + 3,
     "init container 0: 'gpu' and limits 'nvidia.com/gpu' give the same resource twice"),
    ("annotation-not-string", "- create:\n    name: a\n    annotations:\n"
     "      nvidia.com/numa-bind: true\n", S0 + 3,
     "annotation 'nvidia.com/numa-bind' must be a string, got boolean true (quote it: 'true')"),
    ("annotation-and-column", "- create:\n    name: a\n    annotations: "
     "{hami.io/gpu-scheduler-policy: mutex}\n    gpu_policy: binpack\n", S0 + 3,
     "'gpu_policy' and annotations 'hami.io/gpu-scheduler-policy' set the same annotation twice"),
    ("numa-bind-int", "- create: {name: a, numa_bind: 2}\n", S0,
     "'numa_bind' must be true/false, 1/0 or yes/no, got integer 2"),
    ("numa-bind-word", "- create: {name: a, numa_bind: sometimes}\n", S0,
     "'numa_bind' must be true/false, 1/0 or yes/no, got string 'sometimes'"),
    ("steps-empty", "[]\n", S0 - 1, "'steps' is empty"),
    ("steps-not-list", "{create: {name: a}}\n", S0 - 1, "'steps' must be a list, got a mapping"),
]


@pytest.mark.parametrize("case,steps,line,message", STEP_CASES, ids=[c[0] for c in STEP_CASES])
def test_malformed_steps(tmp_path, case, steps, line, message):
    text = with_steps(steps) if not steps.startswith(("[", "{")) else HEAD + "steps: " + steps
    path = write(tmp_path, text)
    err = load_error(path)
    assert str(err).startswith(f"{path}:{line}: "), str(err)
    assert message in err.problem, str(err)


FILE_CASES = [
    ("missing-steps", ".yaml", HEAD, 1, "missing required key 'steps'"),
    ("unknown-top-level", ".yaml", HEAD + "step: []\n", HEAD_LINES + 1,
     "unknown key 'step' (expected one of: nodes, quotas, scheduler, steps); did you mean 'steps'?"),
    ("cluster-error", ".yaml", HEAD.replace("devmem: 15360, devcore", "devmem: -1, devcore", 1)
     + "steps: [{create: {name: a}}]\n", 5, "node 'node1': card 0: 'devmem' must be >= 0"),
    ("bad-yaml", ".yaml", HEAD + "steps:\n  - create: {name: a\n", HEAD_LINES + 3,
     "invalid YAML: "),
    ("truncated-json", ".json", '{"nodes": [{"name": "n"}],\n "steps": [\n  {"create": {"name": "a"}}',
     3, "invalid JSON: unexpected end of input: '[' opened on line 2 is never closed"),
    ("empty", ".yaml", "", 1, "file is empty"),
    ("json-nan", ".json", '{"nodes": [{"name": "n"}],\n "steps": [{"create": {"name": "a", '
     '"gpu": NaN}}]}', 2, "NaN is not allowed in JSON"),
    ("json-duplicate-step-key", ".json", '{"nodes": [{"name": "n"}], "steps": [\n'
     '  {"create": {"name": "a"},\n   "create": {"name": "b"}}]}', 3, "duplicate key 'create'"),
]


@pytest.mark.parametrize("case,ext,text,line,message", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_malformed_files(tmp_path, case, ext, text, line, message):
    path = write(tmp_path, text, ext=ext)
    err = load_error(path)
    assert str(err).startswith(f"{path}:{line}: "), str(err)
    assert message in err.problem, str(err)


def test_non_utf8_scenario(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_bytes(HEAD.encode() + b"steps:\n  - create: {name: caf\xe9}\n")
    err = load_error(str(path))
    assert str(err).startswith(f"{path}:{HEAD_LINES + 2}: file is not valid UTF-8"), str(err)
