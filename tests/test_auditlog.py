"""The audit log reader: kube-apiserver's ``audit.k8s.io/v1`` events, one JSON
object a line, as written by its log backend (the lines below are in the exact
shapes the API server writes: ``requestURI``, ``objectRef.subresource``,
``stage``, ``level``, ``responseStatus``), plain or gzip'd, several files."""
from __future__ import annotations

import gzip
import json

import pytest

from hamisim.errors import InputError
from hamisim.io.auditlog import (
    ANNOTATE,
    BIND,
    CREATE,
    DEVICES_ALLOCATED,
    END,
    INIT_DONE,
    MIG_ALLOCATIONS,
    NOMINATE,
    VGPU_NODE,
    ReadStats,
    audit_lines,
    format_time,
    parse_time,
    read_audit,
)
from hamisim.io.documents import from_plain
from hamisim.io.kubeimport import pod_from_kubernetes
from hamisim.pods import Container, Pod

POD = {"kind": "Pod", "apiVersion": "v1",
       "metadata": {"name": "train-0", "namespace": "ml",
                    "annotations": {"hami.io/gpu-scheduler-policy": "binpack"}},
       "spec": {"schedulerName": "hami-scheduler", "priority": 5, "containers": [
           {"name": "main", "image": "pytorch", "resources": {
               "limits": {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "4000"},
               "requests": {"cpu": "2", "memory": "8Gi"}}}]},
       "status": {"phase": "Pending"}}
# as stored: HAMi's webhook added nvidia.com/gpucores
STORED = json.loads(json.dumps(POD))
STORED["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"] = "30"
STORED["metadata"]["uid"] = "6c1d7f2e-0000-4000-8000-000000000001"

CREATE_LINE = json.dumps({
    "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
    "auditID": "1b0a0c9e-8a5d-4c52-9d0c-000000000001", "stage": "ResponseComplete",
    "requestURI": "/api/v1/namespaces/ml/pods?fieldManager=kubectl-create&fieldValidation=Strict",
    "verb": "create", "user": {"username": "alice", "groups": ["system:authenticated"]},
    "sourceIPs": ["10.0.0.5"], "userAgent": "kubectl/v1.32.0 (linux/amd64) kubernetes/abc",
    "objectRef": {"resource": "pods", "namespace": "ml", "name": "train-0", "apiVersion": "v1"},
    "responseStatus": {"metadata": {}, "code": 201},
    "requestObject": POD, "responseObject": STORED,
    "requestReceivedTimestamp": "2026-11-30T10:00:00.000000Z",
    "stageTimestamp": "2026-11-30T10:00:00.012345Z",
    "annotations": {"authorization.k8s.io/decision": "allow",
                    "authorization.k8s.io/reason": ""}})

PATCH_LINE = json.dumps({
    "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
    "auditID": "1b0a0c9e-8a5d-4c52-9d0c-000000000002", "stage": "ResponseComplete",
    "requestURI": "/api/v1/namespaces/ml/pods/train-0", "verb": "patch",
    "user": {"username": "system:serviceaccount:kube-system:hami-scheduler"},
    "sourceIPs": ["10.0.0.9"], "userAgent": "scheduler/v0.0.0",
    "objectRef": {"resource": "pods", "namespace": "ml", "name": "train-0", "apiVersion": "v1"},
    "responseStatus": {"metadata": {}, "code": 200},
    "requestObject": {"metadata": {"annotations": {
        "hami.io/vgpu-node": "gpu-1", "hami.io/vgpu-time": "1764496800",
        "hami.io/vgpu-devices-to-allocate": "GPU-a,NVIDIA,4000,30:GPU-b,NVIDIA,4000,30:;",
        "hami.io/vgpu-devices-allocated": "GPU-a,NVIDIA,4000,30:GPU-b,NVIDIA,4000,30:;"}}},
    "requestReceivedTimestamp": "2026-11-30T10:00:00.100000Z",
    "stageTimestamp": "2026-11-30T10:00:00.104000Z"})

BINDING_LINE = json.dumps({
    "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
    "auditID": "1b0a0c9e-8a5d-4c52-9d0c-000000000003", "stage": "ResponseComplete",
    "requestURI": "/api/v1/namespaces/ml/pods/train-0/binding", "verb": "create",
    "user": {"username": "system:serviceaccount:kube-system:hami-scheduler"},
    "sourceIPs": ["10.0.0.9"], "userAgent": "scheduler/v0.0.0",
    "objectRef": {"resource": "pods", "namespace": "ml", "name": "train-0", "apiVersion": "v1",
                  "subresource": "binding"},
    "responseStatus": {"metadata": {}, "status": "Success", "code": 201},
    "requestObject": {"kind": "Binding", "apiVersion": "v1",
                      "metadata": {"name": "train-0", "namespace": "ml",
                                   "uid": "6c1d7f2e-0000-4000-8000-000000000001",
                                   "creationTimestamp": None},
                      "target": {"kind": "Node", "name": "gpu-1"}},
    "responseObject": {"kind": "Status", "apiVersion": "v1", "metadata": {},
                       "status": "Success", "code": 201},
    "requestReceivedTimestamp": "2026-11-30T10:00:00.110000Z",
    "stageTimestamp": "2026-11-30T10:00:00.115000Z"})

STATUS_LINE = json.dumps({
    "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request",
    "auditID": "1b0a0c9e-8a5d-4c52-9d0c-000000000004", "stage": "ResponseComplete",
    "requestURI": "/api/v1/namespaces/ml/pods/train-0/status", "verb": "patch",
    "user": {"username": "system:node:gpu-1", "groups": ["system:nodes"]},
    "sourceIPs": ["10.0.1.1"], "userAgent": "kubelet/v1.32.0",
    "objectRef": {"resource": "pods", "namespace": "ml", "name": "train-0", "apiVersion": "v1",
                  "subresource": "status"},
    "responseStatus": {"metadata": {}, "code": 200},
    "requestObject": {"metadata": {"uid": "6c1d7f2e-0000-4000-8000-000000000001"},
                      "status": {"$setElementOrder/conditions": [{"type": "Ready"}],
                                 "phase": "Succeeded"}},
    "requestReceivedTimestamp": "2026-11-30T11:00:00.000000Z",
    "stageTimestamp": "2026-11-30T11:00:00.003000Z"})


def _event(**over) -> str:
    ev = json.loads(BINDING_LINE)
    for k, v in over.items():
        if v is None:
            ev.pop(k, None)
        else:
            ev[k] = v
    return json.dumps(ev)


def _write(path, lines) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_pod_history_in_api_server_shapes(tmp_path):
    log = _write(tmp_path / "audit.log", [CREATE_LINE, PATCH_LINE, BINDING_LINE, STATUS_LINE])
    recs = list(read_audit([log]))
    assert [r.kind for r in recs] == [CREATE, ANNOTATE, BIND, END]
    assert {r.pod for r in recs} == {"ml/train-0"}
    create, patch, bind, end = recs
    # responseObject (as stored, after HAMi's webhook) wins over requestObject
    limits = create.obj["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpucores"] == "30"
    assert patch.annotations[VGPU_NODE] == "gpu-1"
    assert patch.annotations[DEVICES_ALLOCATED].startswith("GPU-a,NVIDIA,4000,30:")
    assert "hami.io/vgpu-time" not in patch.annotations
    assert bind.node == "gpu-1"
    assert bind.time == pytest.approx(parse_time("2026-11-30T10:00:00.115000Z"))
    assert end.time - create.time == pytest.approx(3600.0 - 0.012345 + 0.003, abs=1e-6)
    assert bind.where == f"{log}:3"


def test_request_level_create_reads_the_request_object(tmp_path):
    ev = json.loads(CREATE_LINE)
    ev["level"] = "Request"
    del ev["responseObject"]
    log = _write(tmp_path / "a.log", [json.dumps(ev)])
    (rec,) = read_audit([log])
    assert "nvidia.com/gpucores" not in rec.obj["spec"]["containers"][0]["resources"]["limits"]
    pod = pod_from_kubernetes(from_plain(rec.obj, log, 1).as_doc("pod"))
    assert pod.name == "ml/train-0" and pod.priority == 5 and pod.cpu_milli == 2000


def test_older_bindings_resource_and_deletes(tmp_path):
    legacy = _event(requestURI="/api/v1/namespaces/ml/bindings",
                    objectRef={"resource": "bindings", "namespace": "ml", "apiVersion": "v1"})
    final_delete = _event(verb="delete", requestURI="/api/v1/namespaces/ml/pods/train-0",
                          objectRef={"resource": "pods", "namespace": "ml", "name": "train-0",
                                     "apiVersion": "v1"},
                          requestObject={"kind": "DeleteOptions", "apiVersion": "v1",
                                         "gracePeriodSeconds": 0},
                          responseObject={"kind": "Pod", "apiVersion": "v1", "metadata": {
                              "name": "train-0", "deletionGracePeriodSeconds": 0}})
    graceful = json.loads(final_delete)
    graceful["responseObject"]["metadata"]["deletionGracePeriodSeconds"] = 30
    stats = ReadStats()
    log = _write(tmp_path / "a.log", [legacy, json.dumps(graceful), final_delete])
    recs = list(read_audit([log], stats))
    assert [(r.kind, r.pod, r.node) for r in recs] == [(BIND, "ml/train-0", "gpu-1"),
                                                        (END, "ml/train-0", None)]
    assert stats.skipped == {"graceful deletion begun": 1}


def test_other_events_are_skipped_and_counted(tmp_path):
    lines = [
        _event(stage="RequestReceived", responseStatus=None),               # first stage
        _event(responseStatus={"metadata": {}, "status": "Failure", "code": 409,
                               "reason": "Conflict"}),                        # failed request
        _event(objectRef={"resource": "leases", "namespace": "kube-node-lease", "name": "n1",
                          "apiGroup": "coordination.k8s.io", "apiVersion": "v1"},
               requestURI="/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
               verb="update"),                                               # other resource
        _event(verb="watch", stage="ResponseStarted", requestURI="/api/v1/pods?watch=true",
               objectRef={"resource": "pods", "apiVersion": "v1"}),         # a watch
        _event(verb="get", requestURI="/api/v1/namespaces/ml/pods/train-0/log",
               objectRef={"resource": "pods", "namespace": "ml", "name": "train-0",
                          "apiVersion": "v1", "subresource": "log"}),       # logs
        _event(level="Metadata", requestObject=None, responseObject=None),  # no object logged
        json.dumps({**json.loads(STATUS_LINE),
                    "requestObject": {"status": {"phase": "Running"}}}),   # not an end
        json.dumps({**json.loads(PATCH_LINE),
                    "requestObject": {"metadata": {"labels": {"a": "b"}}}}),  # unrelated field
        "",
    ]
    stats = ReadStats()
    assert list(read_audit([_write(tmp_path / "a.log", lines)], stats)) == []
    assert stats.skipped == {
        "stage not ResponseComplete": 2, "failed request": 1, "other resource": 1,
        "other subresource": 1, "binding without target (Metadata level)": 1,
        "status without end": 1, "pod change without HAMi annotations": 1}
    assert stats.records == 0 and stats.lines == len(lines)


def test_gzip_and_several_files_in_order(tmp_path):
    first = tmp_path / "audit-2026-11-30T10-00.log.gz"
    with gzip.open(first, "wt") as fh:
        fh.write(CREATE_LINE + "\n" + PATCH_LINE + "\n")
    # a rotated file gzip'd without the suffix is recognised by its magic bytes
    second = tmp_path / "audit-2026-11-30T10-30.log"
    second.write_bytes(gzip.compress((BINDING_LINE + "\n").encode()))
    third = _write(tmp_path / "audit.log", [STATUS_LINE])
    recs = list(read_audit([str(first), str(second), third]))
    assert [r.kind for r in recs] == [CREATE, ANNOTATE, BIND, END]
    assert recs[2].where == f"{second}:1"


def _with(line: str, path: tuple, value) -> str:
    """``line`` with the field at ``path`` (keys) set to ``value``."""
    ev = json.loads(line)
    d = ev
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    return json.dumps(ev)


_PATCH_ANN = ("requestObject", "metadata", "annotations")


@pytest.mark.parametrize("bad, problem", [
    # the message says where on the (one) line, not the JSON decoder's own line count
    ('{"kind": "Event", "stage": ', "not a JSON audit event: Expecting value at the end of "
                                    "the line"),
    ('{"kind": "Event" "stage": 1}', "Expecting ',' delimiter at column 18"),
    ("[1, 2]", "expected an object, got list"),
    (_event(objectRef="pods"), "'objectRef' must be an object"),
    (_event(stageTimestamp="yesterday"), "bad stageTimestamp 'yesterday'"),
    (json.dumps({"hello": "world"}), "not an audit event"),
    # an array body is a JSON Patch's, for a patch only
    (_with(CREATE_LINE, ("requestObject",), [{"op": "add"}]),
     "'requestObject' must be an object, got list"),
    (_with(PATCH_LINE, _PATCH_ANN + (DEVICES_ALLOCATED,), 5),
     "annotation hami.io/vgpu-devices-allocated must be a string, got int"),
    (_with(PATCH_LINE, _PATCH_ANN + (VGPU_NODE,), ["gpu-1"]),
     "annotation hami.io/vgpu-node must be a string, got list"),
    (_with(PATCH_LINE, _PATCH_ANN, "x"), "'requestObject.metadata.annotations' must be an "
                                         "object, got str"),
    (_with(CREATE_LINE, ("responseObject", "metadata", "annotations", DEVICES_ALLOCATED), 5),
     "annotation hami.io/vgpu-devices-allocated must be a string, got int"),
    # the devices encoding as `hamisim import` reads it
    (_with(PATCH_LINE, _PATCH_ANN + (DEVICES_ALLOCATED,), "GPU-a,NVIDIA,lots,30:;"),
     "annotation hami.io/vgpu-devices-allocated: devices entry 'GPU-a,NVIDIA,lots,30': "
     "memory 'lots' is not a non-negative integer"),
    (_with(PATCH_LINE, _PATCH_ANN + (DEVICES_ALLOCATED,), "GPU-a,NVIDIA:;"),
     "has 2 fields; expected UUID,TYPE,MEM,CORES"),
    # hami.io/vgpu-mig-allocations: a JSON list of instances (HAMi's EncodeMigAllocations)
    (_with(PATCH_LINE, _PATCH_ANN + (MIG_ALLOCATIONS,), 5),
     "annotation hami.io/vgpu-mig-allocations must be a string, got int"),
    (_with(PATCH_LINE, _PATCH_ANN + (MIG_ALLOCATIONS,), "[{"),
     "annotation hami.io/vgpu-mig-allocations: not JSON"),
    (_with(PATCH_LINE, _PATCH_ANN + (MIG_ALLOCATIONS,), '{"gpuUUID":"GPU-a"}'),
     "annotation hami.io/vgpu-mig-allocations: expected a list of allocations, got dict"),
    (_with(PATCH_LINE, _PATCH_ANN + (MIG_ALLOCATIONS,),
           '[{"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":"0","size":1}}]'),
     "allocation 0: 'placement.start' must be an integer in 0..64, got '0'"),
    (_with(PATCH_LINE, _PATCH_ANN + (MIG_ALLOCATIONS,),
           '[{"gpuUUID":"GPU-a","placement":{"start":0,"size":1}}]'),
     "allocation 0: 'profile' must be a non-empty string, got None"),
    (_with(PATCH_LINE, _PATCH_ANN + (MIG_ALLOCATIONS,),
           '[{"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":0}}]'),
     "allocation 0: a MIG allocation needs a placement size"),
    (_with(BINDING_LINE, ("requestObject", "target", "name"), 7),
     "'requestObject.target.name' must be a node name, got 7"),
    (_with(BINDING_LINE, ("requestObject", "target"), "gpu-1"),
     "'requestObject.target' must be an object, got str"),
    (_with(CREATE_LINE, ("responseObject", "metadata"), "x"),
     "'responseObject.metadata' must be an object, got str"),
    (_with(CREATE_LINE, ("responseObject", "metadata", "name"), 7),
     "'responseObject.metadata.name' must be a string, got int"),
])
def test_a_malformed_line_is_a_located_error(tmp_path, bad, problem):
    log = _write(tmp_path / "audit.log", [CREATE_LINE, bad, BINDING_LINE])
    with pytest.raises(InputError) as err:
        list(read_audit([log]))
    assert err.value.path == log and err.value.line == 2
    assert problem in str(err.value)
    assert "(char " not in str(err.value)


def test_a_json_patch_reads_the_annotations_from_the_response(tmp_path):
    # kubectl patch --type=json: the body is the operations (kubernetes/kubernetes#60110)
    ops = [{"op": "add", "path": "/metadata/labels/x", "value": "y"}]
    stored = json.loads(json.dumps(STORED))
    stored["metadata"]["annotations"].update(json.loads(PATCH_LINE)["requestObject"]
                                             ["metadata"]["annotations"])
    with_pod = _with(_with(PATCH_LINE, ("requestObject",), ops), ("responseObject",), stored)
    # Request level: no response, the operations alone are not read
    without = _with(PATCH_LINE, ("requestObject",), ops)
    status = _with(STATUS_LINE, ("requestObject",), [{"op": "replace", "path": "/status/phase",
                                                      "value": "Succeeded"}])
    stats = ReadStats()
    recs = list(read_audit([_write(tmp_path / "a.log", [with_pod, without, status])], stats))
    assert [r.kind for r in recs] == [ANNOTATE]
    assert recs[0].annotations[VGPU_NODE] == "gpu-1"
    assert recs[0].annotations[DEVICES_ALLOCATED].startswith("GPU-a,NVIDIA,4000,30:")
    assert "hami.io/gpu-scheduler-policy" not in recs[0].annotations
    assert stats.skipped == {"JSON patch without the pod (annotations not read)": 1,
                             "status without end": 1}


def test_a_devices_entry_without_a_card_is_a_located_warning(tmp_path):
    # HAMi skips entries without a comma: the record stands, the reader says so
    line = _with(PATCH_LINE, _PATCH_ANN + (DEVICES_ALLOCATED,), "garbage")
    stats = ReadStats()
    log = _write(tmp_path / "a.log", [CREATE_LINE, line])
    recs = list(read_audit([log], stats))
    assert recs[1].annotations[DEVICES_ALLOCATED] == "garbage"
    (w,) = stats.warnings
    assert w.startswith(f"{log}:2: warning: annotation hami.io/vgpu-devices-allocated: "
                        "devices entry 'garbage' names no card")
    stats = ReadStats()
    list(read_audit([_write(tmp_path / "b.log", [CREATE_LINE, PATCH_LINE])], stats))
    assert stats.warnings == [] and stats.n_warnings == 0


def _at(line: str, seconds: float) -> str:
    ev = json.loads(line)
    ev["stageTimestamp"] = format_time(parse_time(ev["stageTimestamp"]) + seconds)
    return json.dumps(ev)


def test_time_going_back_is_warned_once_where_it_happens(tmp_path):
    # rotated files given newest first: the older file's first record goes back an hour
    new = _write(tmp_path / "audit.log", [_at(BINDING_LINE, 3600), _at(STATUS_LINE, 0)])
    old = _write(tmp_path / "audit-1.log", [CREATE_LINE, PATCH_LINE, _at(BINDING_LINE, -7200)])
    stats = ReadStats()
    recs = list(read_audit([new, old], stats))
    assert len(recs) == 5                       # read on, in the order given
    (w,) = stats.warnings
    assert w.startswith(f"{old}:1: warning: time goes back ")
    assert "oldest first" in w
    # given oldest first, and concurrent requests a few ms out of order: no warning
    stats = ReadStats()
    close = _write(tmp_path / "c.log", [PATCH_LINE, _at(BINDING_LINE, -0.02), STATUS_LINE])
    list(read_audit([close], stats))
    assert stats.warnings == []


def test_a_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read the audit log"):
        list(read_audit([str(tmp_path / "none.log")]))


def test_writer_lines_read_back_as_the_run_wrote_them(tmp_path):
    pod = Pod("p", (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000}),),
              annotations={"hami.io/gpu-scheduler-policy": "spread"}, cpu_milli=1500,
              memory_mib=2048, priority=3, namespace="team-a")
    rows = [(0.0, "p", "arrive", None, None), (0.5, "p", "bind", "n1", "GPU-x,NVIDIA,3000,0:;"),
            (60.0, "p", "depart", "n1", None)]
    log = _write(tmp_path / "w.log", audit_lines({"p": pod}, rows, start=1e9, noise=1))
    stats = ReadStats()
    recs = list(read_audit([log], stats))
    assert [r.kind for r in recs] == [CREATE, ANNOTATE, BIND, END, END]
    assert recs[2].node == "n1" and recs[0].time == 1e9 and recs[3].time == 1e9 + 60
    assert recs[1].annotations[DEVICES_ALLOCATED] == "GPU-x,NVIDIA,3000,0:;"
    back = pod_from_kubernetes(from_plain(recs[0].obj, log, 1).as_doc("pod"))
    assert back == pod.renamed("team-a/p")
    assert stats.skipped["stage not ResponseComplete"] == 1        # the create's first stage
    assert stats.skipped["failed request"] == 3                    # the noise


def test_mig_allocations_are_kept_from_patches_and_written_at_bind(tmp_path):
    mig = ('[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb",'
           '"placement":{"start":3,"size":1}}]')
    pod = Pod("p", (Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}),))
    rows = [(0.0, "p", "arrive", None, None), (0.5, "p", "bind", "n1", "GPU-a,NVIDIA,4000,0:;",
                                                mig),
            (1.0, "q", "arrive", None, None)]
    recs = list(read_audit([_write(tmp_path / "m.log", audit_lines({"p": pod}, rows))]))
    assert [r.kind for r in recs] == [CREATE, ANNOTATE, BIND]
    assert recs[1].annotations[MIG_ALLOCATIONS] == mig
    # a patch that only sets (or removes) the MIG instances is kept too
    only = _with(PATCH_LINE, _PATCH_ANN, {MIG_ALLOCATIONS: None})
    recs = list(read_audit([_write(tmp_path / "n.log", [only])]))
    assert recs[0].kind == ANNOTATE and recs[0].annotations == {MIG_ALLOCATIONS: None}
    # a bind without instances writes no annotation (HAMi writes none off MIG cards)
    plain = [(0.5, "p", "bind", "n1", "GPU-a,NVIDIA,4000,0:;")]
    assert all(MIG_ALLOCATIONS not in ln for ln in audit_lines({"p": pod}, plain))


def _inits(*states) -> str:
    return _with(STATUS_LINE, ("requestObject", "status"), {"initContainerStatuses": [
        {"name": f"i{k}", "state": st} for k, st in enumerate(states)]})


def test_init_containers_done_is_a_status_with_every_init_terminated_ok(tmp_path):
    ok = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    lines = [_inits(ok, ok),
             _inits(ok, {"running": {}}),                       # one still running
             _inits(ok, {"terminated": {"exitCode": 1}}),       # one failed
             _with(STATUS_LINE, ("requestObject", "status"), {"phase": "Running"})]
    stats = ReadStats()
    recs = list(read_audit([_write(tmp_path / "i.log", lines)], stats))
    assert [(r.kind, r.where.rsplit(":", 1)[1]) for r in recs] == [(INIT_DONE, "1")]
    assert stats.skipped["status without end"] == 3
    bad = _with(STATUS_LINE, ("requestObject", "status"), {"initContainerStatuses": "done"})
    with pytest.raises(InputError, match="initContainerStatuses' must be a list, got str"):
        list(read_audit([_write(tmp_path / "b.log", [bad])]))


# kube-scheduler's nomination after a preemption (util.PatchPodStatus: a strategic
# merge patch of pods/status, the PodScheduled condition and nominatedNodeName)
NOMINATION_LINE = json.dumps({
    "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
    "auditID": "1b0a0c9e-8a5d-4c52-9d0c-000000000005", "stage": "ResponseComplete",
    "requestURI": "/api/v1/namespaces/ml/pods/train-0/status", "verb": "patch",
    "user": {"username": "system:kube-scheduler"}, "sourceIPs": ["10.0.0.8"],
    "userAgent": "kube-scheduler/v1.32.0 (linux/amd64) kubernetes/abc/scheduler",
    "objectRef": {"resource": "pods", "namespace": "ml", "name": "train-0", "apiVersion": "v1",
                  "subresource": "status"},
    "responseStatus": {"metadata": {}, "code": 200},
    "requestObject": {"status": {
        "$setElementOrder/conditions": [{"type": "PodScheduled"}],
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "message": "0/3 nodes are available: 3 Insufficient cpu. "
                                   "preemption: 0/3 nodes are available: 3 No preemption "
                                   "victims found for incoming pod.",
                        "lastTransitionTime": "2026-11-30T10:00:05Z"}],
        "nominatedNodeName": "gpu-2"}},
    "responseObject": dict(STORED, status={"phase": "Pending", "nominatedNodeName": "gpu-2"}),
    "requestReceivedTimestamp": "2026-11-30T10:00:05.000000Z",
    "stageTimestamp": "2026-11-30T10:00:05.004000Z"})


def test_a_nomination_is_a_status_patch_setting_or_clearing_nominated_node_name(tmp_path):
    cleared = _with(NOMINATION_LINE, ("requestObject", "status"), {"nominatedNodeName": None})
    ops = json.loads(NOMINATION_LINE)
    ops["requestObject"] = [{"op": "replace", "path": "/status/nominatedNodeName",
                             "value": "gpu-0"}]
    removed = json.loads(NOMINATION_LINE)
    removed["requestObject"] = [{"op": "remove", "path": "/status/nominatedNodeName"}]
    other = _with(STATUS_LINE, ("requestObject", "status"), {"phase": "Running"})
    stats = ReadStats()
    recs = list(read_audit([_write(tmp_path / "n.log", [
        NOMINATION_LINE, cleared, json.dumps(ops), json.dumps(removed), other])], stats))
    assert [(r.kind, r.pod, r.node) for r in recs] == [
        (NOMINATE, "ml/train-0", "gpu-2"), (NOMINATE, "ml/train-0", ""),
        (NOMINATE, "ml/train-0", "gpu-0"), (NOMINATE, "ml/train-0", "")]
    assert recs[0].time == parse_time("2026-11-30T10:00:05.004Z")
    assert stats.skipped["status without end"] == 1
    bad = _with(NOMINATION_LINE, ("requestObject", "status"), {"nominatedNodeName": 3})
    with pytest.raises(InputError, match=r"b\.log:1: .*nominatedNodeName' must be a node "
                                         r"name \(a string\) or null, got int"):
        list(read_audit([_write(tmp_path / "b.log", [bad])]))


def test_the_writer_nominates_a_preemptor_and_its_bind_follows(tmp_path):
    pods = {"hi": Pod("hi", (Container({"nvidia.com/gpu": 1}),), priority=10),
            "lo": Pod("lo", (Container({"nvidia.com/gpu": 1}),))}
    rows = [(0, "lo", "arrive", None, None), (0, "lo", "bind", "n1", None),
            (1, "hi", "arrive", None, None), (1, "lo", "preempt", "n1", None),
            (1, "hi", "nominate", "n1", None), (2, "hi", "bind", "n1", None)]
    recs = list(read_audit([_write(tmp_path / "w.log", audit_lines(pods, rows))]))
    assert [(r.kind, r.pod, r.node) for r in recs if r.kind in (NOMINATE, BIND, END)] == [
        (BIND, "default/lo", "n1"), (END, "default/lo", None),
        (NOMINATE, "default/hi", "n1"), (BIND, "default/hi", "n1")]


def test_the_writer_keeps_a_victim_with_a_grace_period_until_it_departs(tmp_path):
    pods = {"v": Pod("v", (Container({"nvidia.com/gpu": 1}),), termination_grace_period=5)}
    rows = [(0, "v", "arrive", None, None), (0, "v", "bind", "n1", None),
            (1, "v", "preempt", "n1", None), (6, "v", "depart", "n1", None)]
    stats = ReadStats()
    recs = list(read_audit([_write(tmp_path / "g.log", audit_lines(pods, rows))], stats))
    ends = [r.time - recs[0].time for r in recs if r.kind == END]
    assert ends == [6.0, 6.0]               # Succeeded, then the final delete
    assert stats.skipped["graceful deletion begun"] == 1


def test_run_audit_lines_derives_nominations_from_the_events(tmp_path):
    # the engine records no nomination: the preempt rows give it (the preemptor after
    # its victims), an unschedulable row whose preemption found no candidate clears it,
    # and so does one nominated again where no preempt row says (1.35 skips victims
    # already terminating); lower-priority nominations to the node are cleared
    from hamisim.io.auditlog import run_audit_lines
    (tmp_path / "trace.csv").write_text(
        "name,arrival,duration,gpu,priority\nv1,0,9,1,0\nv2,0,9,1,0\nv3,0,9,1,0\n"
        "mid,1,9,1,5\n"
        "hi,2,9,1,10\n")
    fit = "0/2 nodes are available: 2 Insufficient cpu."
    none = fit + " preemption: 0/2 nodes are available: 2 No preemption victims found " \
                 "for incoming pod."
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.csv").write_text("time,pod,event,node,devices,message\n" + "".join(
        f"{t},{p},{e},{n},,{m}\n" for t, p, e, n, m in [
            (0, "v1", "arrive", "", ""), (0, "v1", "bind", "n1", ""),
            (0, "v2", "arrive", "", ""), (0, "v2", "bind", "n1", ""),
            (0, "v3", "arrive", "", ""), (0, "v3", "bind", "n2", ""),
            (1, "mid", "arrive", "", ""), (1, "mid", "unschedulable", "", fit),
            (1, "v1", "preempt", "n1", "Preempted by pod mid on node n1"),
            (2, "hi", "arrive", "", ""), (2, "hi", "unschedulable", "", fit),
            (2, "v2", "preempt", "n1", "Preempted by pod hi on node n1"),
            (3, "hi", "unschedulable", "", f'"{none}"'),
            (4, "mid", "unschedulable", "", fit), (4, "hi", "unschedulable", "", fit),
            (4, "v3", "preempt", "n2", "Preempted by pod hi on node n2"),
            (5, "hi", "unschedulable", "", fit), (6, "hi", "bind", "n2", "")]))
    recs = list(read_audit([_write(tmp_path / "r.log",
                                   run_audit_lines(run, tmp_path / "trace.csv"))]))
    base = recs[0].time
    assert [(r.time - base, r.pod, r.node) for r in recs if r.kind == NOMINATE] == [
        (1, "default/mid", "n1"),
        (2, "default/mid", ""), (2, "default/hi", "n1"),    # mid is of lower priority
        (3, "default/hi", ""),                              # no candidate any more
        (4, "default/hi", "n2"),                            # mid's row at 4 is no patch
        (5, "default/hi", "")]                              # nominated again: node unknown


def test_the_writer_finishes_init_containers_after_their_duration(tmp_path):
    gpu = Container({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000})
    pod = Pod("p", (gpu,), init_containers=(gpu,), init_duration=10.0)
    rows = [(0.0, "p", "arrive", None, None), (1.0, "p", "bind", "n1", "GPU-x,NVIDIA,3000,0:;" * 2),
            (5.0, "q", "arrive", None, None), (11.0, "q", "arrive", None, None)]
    pods = {"p": pod, "q": Pod("q", (gpu,))}
    recs = list(read_audit([_write(tmp_path / "w.log", audit_lines(pods, rows, start=0.0))]))
    assert [(r.kind, r.pod, r.time) for r in recs if r.time >= 5.0] == [
        (CREATE, "default/q", 5.0), (INIT_DONE, "default/p", 11.0), (CREATE, "default/q", 11.0)]
    # a pod that ends first never finishes them; nor in a fill run (init_done=False)
    gone = rows[:2] + [(4.0, "p", "depart", "n1", None), (20.0, "q", "arrive", None, None)]
    for lines in (audit_lines(pods, gone, start=0.0), audit_lines(pods, rows, init_done=False)):
        recs = list(read_audit([_write(tmp_path / "g.log", lines)]))
        assert INIT_DONE not in [r.kind for r in recs]


def test_the_readme_audit_policy_is_the_one_the_reader_needs():
    import re
    from pathlib import Path

    import yaml

    from hamisim.io.auditlog import AUDIT_POLICY
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("## Validate against a cluster's audit log"):]
    snippet = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    assert snippet == AUDIT_POLICY
    policy = yaml.safe_load(snippet)
    assert (policy["apiVersion"], policy["kind"]) == ("audit.k8s.io/v1", "Policy")
    first = policy["rules"][0]
    assert first["level"] == "RequestResponse"
    assert {"create", "patch", "update", "delete"} <= set(first["verbs"])
    assert {"pods", "pods/binding", "pods/status"} <= set(first["resources"][0]["resources"])
