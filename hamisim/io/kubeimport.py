"""``hamisim import``: a cluster, its running pods and its pending pods from kubectl.

Reads ``kubectl get nodes -o json`` (and optionally ``kubectl get pods -A -o
json``; YAML output works too) and writes three files (DESIGN §4.4):

* ``cluster.yaml`` -- one node per Kubernetes node, in the dump's order:

  - cards from the node annotation ``hami.io/node-nvidia-register``. HAMi
    v2.10's device plugin writes a JSON list of device infos
    (``[{"id": ..., "index": 1, "count": 10, "devmem": 15360, "devcore": 100,
    "type": "NVIDIA-Tesla T4", "numa": 0, "mode": "hami-core", "health":
    true}]``) and the scheduler decodes it with Go's ``encoding/json``: keys
    match case-insensitively, absent keys are Go zero values (``index`` 0,
    ``health`` false, ``mode`` ""), unknown keys are ignored. The older
    colon-separated encoding (``id,count,devmem,devcore,type,numa,health[,
    index,mode]:`` per card, HAMi's ``EncodeNodeDevices``) is accepted too,
    with a warning: v2.10's scheduler no longer reads it (such a node would be
    unregistered until its device plugin is upgraded); entries without an
    index are numbered by position. A node without the annotation (or with
    an empty one) has no HAMi cards: GPU pods see it as ``node unregistered``.
    MIG cards (``mode: mig``) keep their ``migProfiles``.
  - pair scores from ``hami.io/node-nvidia-score`` (topology-aware);
  - per-GPU cordon from ``hami.io/device-cordon`` (comma list of UUIDs; ids
    not on the node are dropped with a warning, as HAMi ignores them);
  - ``metadata.labels``, ``spec.taints`` and ``spec.unschedulable`` (a node
    cordoned with ``kubectl cordon``) as the node's ``labels``, ``taints``
    and ``unschedulable``: kube-scheduler's own filters read them before
    HAMi sees the node (:mod:`hamisim.kube.filters`);
  - ``cpu_milli`` / ``memory_mib`` from ``status.allocatable`` (CPU rounded
    up to milli-CPU as Kubernetes does, memory rounded down to MiB).

* ``state.yaml`` -- the pods that hold resources now (:mod:`hamisim.io.initialstate`):
  every pod that is not ``Succeeded`` or ``Failed`` (HAMi drops those from its
  cache; a terminating pod keeps its usage) and is either placed by HAMi (it
  carries ``hami.io/vgpu-node``; its cards are ``hami.io/vgpu-devices-allocated``
  as written, init containers first) or bound by kube-scheduler
  (``spec.nodeName``, CPU and memory only). A HAMi pod whose bind failed
  (``hami.io/bind-phase: failed``, no ``spec.nodeName``) is pending instead: its
  next Filter drops the old allocation. A pod whose init containers all
  succeeded holds only its app containers' usage (HAMi v2.10.0 shrinks it).
  Pods bound to nodes missing from the node dump are skipped unless HAMi placed
  them (then the dump is inconsistent: an error).

* ``pending.jsonl`` -- the pods still waiting for a node, as a trace
  (DESIGN §4.2), all arriving at time 0 in creation order (the engine's queue
  then tries them by priority, then that order), without a duration. Containers keep
  the ``limits`` and ``requests`` of ``nvidia.com/gpu``, ``nvidia.com/gpumem``,
  ``nvidia.com/gpumem-percentage`` and ``nvidia.com/gpucores`` (HAMi's
  default resource names; other extended resources are ignored); the pod's
  CPU and memory are kube-scheduler's pod request: the larger of the app
  containers' sum (plus restartable init containers) and each init
  container, plus ``spec.overhead``; a container without requests uses its
  limits. Memory is rounded up to MiB, CPU up to milli-CPU. Annotations
  under ``hami.io/`` and ``nvidia.com/`` are kept (HAMi's bookkeeping ones
  dropped), others are not.

Pods are named ``<namespace>/<name>``. Quantities follow Kubernetes
(``500m``, ``2Gi``, ``1.5``, ``1e3``); HAMi's extended resources must be
whole numbers. Every problem in the input is an :class:`~hamisim.errors.InputError`
at its line in the dump. The scheduler policies are not in a dump: they are
written as HAMi's defaults (``spread`` / ``binpack``) unless given.
"""
from __future__ import annotations

import json
import os
import re
import warnings as _warnings
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from hamisim._version import __version__
from hamisim.cluster import QUOTA_CORES, QUOTA_MEMORY, Cluster, Node, Quota, SchedulerConfig
from hamisim.devices import FAMILIES, OTHER_THAN_NVIDIA, family, vendors
from hamisim.devices import ascend
from hamisim.errors import InputError, InputWarning
from hamisim.io.clusterfile import load_cluster, nodes_from_document, quota_limit_from_value
from hamisim.io.documents import Doc, Value, load_document
from hamisim.io.initialstate import InitialState, decode_devices, load_state
from hamisim.io.outputs import atomic_folder
from hamisim.io.podspec import (
    GANG_MARKERS,
    affinity_from_value,
    gang_markers,
    grace_period_from_value,
    node_selector_from_value,
    namespace_from_value,
    preemption_policy_from_value,
    tolerations_from_value,
)
from hamisim.io.traces import write_trace
from hamisim.kube.fit import pod_request
from hamisim.kube.quantity import cpu_milli, memory_mib
from hamisim.topology import ServerTopology
from hamisim.pods import GPU, GPUCORES, GPUMEM, GPUMEM_PERCENTAGE, Container, Pod
from hamisim.workload import Trace, TracePod

__all__ = ["ImportResult", "import_kubectl",
           "write_import", "pod_from_kubernetes", "kubernetes_pods", "REGISTER", "PAIR_SCORE",
           "DEVICE_CORDON", "ASSIGNED_NODE", "DEVICES_ALLOCATED", "BIND_PHASE"]

REGISTER = "hami.io/node-nvidia-register"
PAIR_SCORE = "hami.io/node-nvidia-score"
#: the register annotations of HAMi's other device backends (hami.io/node-dcu-register,
#: hami.io/node-register-Ascend910B, ...): cards hamisim does not simulate
OTHER_REGISTER = re.compile(r"hami\.io/node-[^/]*register[^/]*$")
#: the register annotations of the other simulated families that use HAMi's
#: colon/comma encoding (DecodeNodeDevices): Hygon's, each Iluvatar chip's
TEXT_REGISTERS: tuple[tuple[str, str], ...] = tuple(
    (f.register_annotation, f.word) for f in OTHER_THAN_NVIDIA if f.register_format == "text")
#: the other simulated families whose device plugin registers a JSON list (AMD's)
JSON_REGISTERS: tuple[tuple[str, str], ...] = tuple(
    (f.register_annotation, f.word) for f in OTHER_THAN_NVIDIA if f.register_format == "json")
#: Go's encoding/json matches DeviceInfo's fields case-insensitively; a key left
#: out is the field's zero value (health false: the card is unhealthy)
_JSON_ZERO = {"id": "", "index": 0, "count": 0, "devmem": 0, "devcore": 0, "type": "",
              "numa": 0, "mode": "", "health": False}
#: the other simulated families whose cards come from the node's capacity (Cambricon's,
#: Moore Threads')
CAPACITY_FAMILIES = tuple(f for f in OTHER_THAN_NVIDIA if f.register_format == "capacity")
#: every register annotation hamisim imports
_SIMULATED_REGISTERS = frozenset(f.register_annotation for f in FAMILIES if f.register_annotation)
DEVICE_CORDON = "hami.io/device-cordon"
ASSIGNED_NODE = "hami.io/vgpu-node"
DEVICES_ALLOCATED = "hami.io/vgpu-devices-allocated"
MIG_ALLOCATIONS = "hami.io/vgpu-mig-allocations"
BIND_PHASE = "hami.io/bind-phase"
#: HAMi's own bookkeeping annotations: not carried over to pending pods.
_BOOKKEEPING = frozenset({ASSIGNED_NODE, DEVICES_ALLOCATED, BIND_PHASE, MIG_ALLOCATIONS,
                          "hami.io/vgpu-time",
                          "hami.io/bind-time", "hami.io/vgpu-devices-to-allocate"})
_HAMI_RESOURCES = (GPU, GPUMEM, GPUMEM_PERCENTAGE, GPUCORES)
_TERMINATED = ("Succeeded", "Failed")

# ---------------------------------------------------------------------------
# Kubernetes quantities

# ---------------------------------------------------------------------------
# the result

@dataclass
class ImportResult:
    """What an import found, before it is written."""

    cluster: Cluster
    state: InitialState
    pending: list[TracePod]
    nodes_path: str
    pods_path: str | None
    skipped_finished: int = 0
    skipped_elsewhere: int = 0
    warnings: list[str] = field(default_factory=list)
    state_entries: list[dict] = field(default_factory=list)


# ---------------------------------------------------------------------------
# reading

def _objects(path: str, kind: str) -> list[Doc]:
    """The objects of a kubectl dump: a ``List`` / ``<Kind>List`` or one object."""
    root = load_document(path)
    if not root.is_mapping:
        raise root.error(f"expected the output of 'kubectl get {kind.lower()}s -o json' "
                         f"(a mapping), got {root.describe()}")
    doc = root.as_doc("the top level")
    if "items" in doc:
        items = doc.get("items")
        if items.is_null:
            return []
        out = [v.as_doc(f"item {i}") for i, v in enumerate(items.as_list("'items'"))]
    else:
        out = [doc]
    for i, obj in enumerate(out):
        k = obj.get("kind")
        if k is not None and not k.is_null and k.scalar != kind:
            raise obj.error(f"item {i} is a {k.describe()}, expected kind '{kind}' "
                            f"(is this the right file?)")
    return out


def _meta(obj: Doc, i: int, kind: str) -> tuple[Doc, str, Doc]:
    meta = obj.get("metadata")
    if meta is None or not meta.is_mapping:
        raise obj.error(f"{kind.lower()} {i} has no 'metadata' mapping")
    meta = meta.as_doc("'metadata'")
    name = meta.require_str("name")
    ann = meta.get("annotations")
    if ann is None or ann.is_null:
        ann_doc = Doc(meta.path, meta.line, children={}, key_lines={})
    else:
        ann_doc = ann.as_doc("'metadata.annotations'")
    return meta, name, ann_doc


def _gang_markers(meta: Doc) -> list[str]:
    """The gang markers (:data:`~hamisim.io.podspec.GANG_MARKERS`) among a pod's
    labels and annotations."""
    names: list[str] = []
    for key in ("labels", "annotations"):
        v = meta.get(key)
        if v is not None and v.is_mapping:
            names += gang_markers(v.as_doc(f"'metadata.{key}'").keys())
    return list(dict.fromkeys(names))


def _annotation(ann: Doc, key: str) -> Value | None:
    v = ann.get(key)
    if v is None or v.is_null:
        return None
    v.as_str(f"annotation {key}")
    return v


def _sub(doc: Doc | None, key: str) -> Doc | None:
    if doc is None:
        return None
    v = doc.get(key)
    if v is None or v.is_null:
        return None
    return v.as_doc(f"'{key}'")


def _value(path: str | None, line: int, data: Any) -> Value:
    return Value(path, line, data)


def _doc(path: str | None, line: int, children: dict[str, Value], context: str = "") -> Doc:
    return Doc(path, line, children=children, key_lines={k: v.line for k, v in children.items()},
               context=context)


_LEGACY_FIELDS = ("id", "count", "devmem", "devcore", "type", "numa", "health", "index", "mode")


def _legacy_cards(v: Value, node: str, warnings: list[str], annotation: str = REGISTER
                  ) -> Value:
    """The colon/comma register encoding (HAMi's ``DecodeNodeDevices``; NVIDIA's
    older one) as a located list of card mappings."""
    text = v.scalar
    items = []
    nvidia = annotation == REGISTER
    for pos, entry in enumerate(e for e in text.split(":") if e.strip()):
        fields = entry.split(",")
        if len(fields) not in (7, 9):
            raise v.error(f"annotation {annotation}: card {pos} {entry!r} has {len(fields)} "
                          "fields; expected "
                          + ("a JSON list (HAMi v2.10) or the older " if nvidia else "the ")
                          + "id,count,devmem,devcore,type,numa,health[,index,mode] form")
        data: dict[str, Any] = {}
        for key, raw in zip(_LEGACY_FIELDS, fields):
            raw = raw.strip()
            if key in ("count", "devmem", "devcore", "numa", "index"):
                if not raw.lstrip("-").isdigit():
                    raise v.error(f"annotation {annotation}: card {pos}: {key} {raw!r} is "
                                  "not an integer")
                data[key] = int(raw)
            elif key == "health":
                if raw.lower() not in ("true", "false", "1", "0", "t", "f"):
                    raise v.error(f"annotation {annotation}: card {pos}: health {raw!r} is "
                                  "not a boolean")
                data[key] = raw.lower() in ("true", "1", "t")
            else:
                data[key] = raw
        # DecodeNodeDevices: 7 fields give index 0 (NVIDIA's older encoding: the position)
        data.setdefault("index", pos if nvidia else 0)
        data.setdefault("mode", "hami-core")
        items.append(_doc(v.path, v.line, {k: _value(v.path, v.line, x)
                                           for k, x in data.items()}))
    if nvidia:
        warnings.append(f"node {node}: {REGISTER} uses the older colon-separated encoding, "
                        "which HAMi v2.10's scheduler no longer reads; imported anyway")
    return Value(v.path, v.line, items=items)


def _text_cards(reg: Value, node: str, warnings: list[str], annotation: str,
                word: str) -> list[Doc]:
    """A colon/comma register annotation (Hygon's ``hami.io/node-dcu-register``,
    an Iluvatar chip's ``hami.io/node-<chip>-register``) as card mappings. HAMi
    skips the whole annotation when it does not decode (no such card on the
    node): so does the import, with a warning."""
    text = reg.scalar if isinstance(reg.scalar, str) else ""
    if ":" not in text:
        warnings.append(f"node {node}: {annotation} {text!r} has no ':' (HAMi: \"node "
                        f"annotation missing device separator\"); HAMi registers no {word} there")
        return []
    try:
        cards = _legacy_cards(reg, node, warnings, annotation)
    except InputError as err:
        warnings.append(f"node {node}: {err.problem}; HAMi skips the annotation, so no {word} "
                        "there")
        return []
    items = cards.as_list(annotation)
    if not items:
        warnings.append(f"node {node}: {annotation} lists no card (HAMi: \"no gpu found "
                        "on node\")")
    return items


def _json_family_cards(reg: Value, node: str, warnings: list[str], annotation: str,
                       word: str) -> list[Doc]:
    """A JSON register annotation of another family (AMD's
    ``hami.io/node-amd-register``) as card mappings, decoded as Go decodes it
    (keys in any case, unknown keys ignored, absent ones zero: a card without
    ``health`` is unhealthy). One that does not decode is skipped with a
    warning, as HAMi skips it."""
    try:
        data = json.loads(reg.scalar)
    except ValueError as exc:
        warnings.append(f"node {node}: {annotation} is not JSON ({exc}); HAMi skips the "
                        f"annotation, so no {word} there")
        return []
    if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
        warnings.append(f"node {node}: {annotation} is not a JSON list of cards; HAMi skips "
                        f"the annotation, so no {word} there")
        return []
    if not data:
        warnings.append(f"node {node}: {annotation} lists no card (HAMi: \"no gpu found on "
                        "node\")")
    items = []
    for pos, card in enumerate(data):
        fields = dict(_JSON_ZERO)
        for key, x in card.items():
            if key.lower() in fields and x is not None:
                fields[key.lower()] = x
            elif key.lower() == "custominfo" and isinstance(x, dict) and "NetworkID" in x:
                # Ascend 910's network (HAMi reads it as a JSON number, truncated)
                nid = x["NetworkID"]
                if isinstance(nid, (int, float)) and not isinstance(nid, bool) and nid >= 0:
                    fields["customInfo"] = {"NetworkID": int(nid)}
                else:
                    warnings.append(f"node {node}: {annotation}: card {pos}: customInfo "
                                    f"NetworkID {nid!r} is not a number; not imported")
        fam = family(word)
        if fam is not None and fam.registered_devcore is not None:
            fields["devcore"] = fam.registered_devcore     # GetNodeDevices overwrites it
        if fields["health"] is not True:
            warnings.append(f"node {node}: {annotation}: card {pos} ({fields['id']!r}) is not "
                            "registered healthy (no \"health\": true), so HAMi never places on "
                            "it")
        items.append(_doc(reg.path, reg.line, {
            k: _doc(reg.path, reg.line, {n: _value(reg.path, reg.line, v) for n, v in x.items()})
            if isinstance(x, dict) else _value(reg.path, reg.line, x)
            for k, x in fields.items()}))
    return items


def _json_cards(reg: Value) -> list[Doc]:
    """NVIDIA's JSON register annotation as located card mappings (to join a
    node's cards of another family)."""
    try:
        data = json.loads(reg.scalar)
    except ValueError as exc:
        raise reg.error(f"annotation {REGISTER} is not JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
        raise reg.error(f"annotation {REGISTER} must be a JSON list of cards")
    return [_doc(reg.path, reg.line, {k: _value(reg.path, reg.line, x) for k, x in c.items()})
            for c in data]


def _node_entry(obj: Doc, i: int, warnings: list[str]) -> tuple[Doc, Value | None, bool]:
    """One Kubernetes node as a located cluster-file node entry (without its
    cordon), its device-cordon annotation and whether it is unschedulable."""
    meta, name, ann = _meta(obj, i, "Node")
    children: dict[str, Value] = {"name": meta.get("name")}
    others = [k for k in ann.keys()
              if OTHER_REGISTER.match(k) and k not in _SIMULATED_REGISTERS]
    if others:
        warnings.append(f"node {name}: {', '.join(others)} register{'s' if len(others) == 1 else ''} "
                        "cards of another of HAMi's device backends; hamisim simulates the "
                        f"backends of {vendors()} only, so they are not imported")
    reg = _annotation(ann, REGISTER)
    if reg is not None:
        text = reg.scalar.strip()
        if not text or text == "null":
            warnings.append(f"node {name}: {REGISTER} is empty; HAMi sees no cards there")
        elif text.startswith("["):
            children["devices"] = reg
        else:
            children["devices"] = _legacy_cards(reg, name, warnings)
    for annotation, word, decode in (*((a, w, _text_cards) for a, w in TEXT_REGISTERS),
                                     *((a, w, _json_family_cards) for a, w in JSON_REGISTERS)):
        reg_other = _annotation(ann, annotation)
        cards = decode(reg_other, name, warnings, annotation, word) \
            if reg_other is not None else []
        if cards:
            # the node's cards: NVIDIA's, then each other family's in
            # hamisim.devices order (HAMi lists the families of a node in Go's
            # map order, which varies; hamisim keeps this one)
            have = children.get("devices")
            before = [] if have is None else have.as_list("devices") if have.is_list \
                else _json_cards(have)
            children["devices"] = Value(reg_other.path, reg_other.line, items=before + cards)
    score = _annotation(ann, PAIR_SCORE)
    if score is not None and score.scalar.strip():
        children["nvidia_score"] = score
    vnpu = _annotation(ann, ascend.NODE_ANNOTATION)
    if vnpu is not None:
        children["annotations"] = Value(vnpu.path, vnpu.line, children={
            ascend.NODE_ANNOTATION: vnpu})
    status = _sub(obj, "status")
    capacity = _sub(status, "capacity")
    for fam in CAPACITY_FAMILIES:
        # Cambricon, Moore Threads and Kunlunxin (whole cards) register no annotation: their cards come
        # from the capacity
        resource = fam.capacity_resource or fam.cores_name
        vcore = capacity.get(resource) if capacity is not None else None
        if vcore is None or vcore.is_null:
            continue
        vmem = capacity.get(fam.memory_name) if fam.memory_name else None
        cores = int(vcore.as_quantity(f"capacity {resource}"))
        mem = 0 if vmem is None or vmem.is_null else int(
            vmem.as_quantity(f"capacity {fam.memory_name}"))
        made = fam.capacity_cards(name, cores, mem)
        if not made:
            warnings.append(f"node {name}: capacity {resource} is 0 (HAMi: \"device not "
                            f"found {resource}\"); no {fam.word} there")
            continue
        have = children.get("devices")
        before = [] if have is None else have.as_list("devices") if have.is_list \
            else _json_cards(have)
        cards = [_doc(vcore.path, vcore.line, {k: _value(vcore.path, vcore.line, x)
                                               for k, x in c.items()}) for c in made]
        children["devices"] = Value(vcore.path, vcore.line, items=before + cards)
    alloc = _sub(status, "allocatable")
    if alloc is None:
        warnings.append(f"node {name}: no status.allocatable; its CPU and memory do not "
                        "constrain placement")
    else:
        cpu = alloc.get("cpu")
        if cpu is not None and not cpu.is_null:
            children["cpu_milli"] = _value(cpu.path, cpu.line,
                                           cpu_milli(cpu.as_quantity("allocatable cpu")))
        mem = alloc.get("memory")
        if mem is not None and not mem.is_null:
            children["memory_mib"] = _value(mem.path, mem.line, memory_mib(
                mem.as_quantity("allocatable memory"), round_up=False))
    spec = _sub(obj, "spec")
    unsched = spec.get("unschedulable") if spec is not None else None
    if unsched is not None and not unsched.is_null:
        children["unschedulable"] = unsched
    taints = spec.get("taints") if spec is not None else None
    if taints is not None and not taints.is_null:
        children["taints"] = taints
    labels = meta.get("labels")
    if labels is not None and not labels.is_null:
        children["labels"] = labels
    entry = _doc(obj.path, obj.line, children)
    return entry, _annotation(ann, DEVICE_CORDON), False


_ANNOTATION_OF = {"'devices' annotation JSON": f"annotation {REGISTER}",
                  "'devices'": f"annotation {REGISTER}",
                  "'nvidia_score' annotation JSON": f"annotation {PAIR_SCORE}",
                  "'nvidia_score'": f"annotation {PAIR_SCORE}"}


def _in_kubectl_terms(err: InputError) -> InputError:
    problem = err.problem
    for ours, theirs in _ANNOTATION_OF.items():
        problem = problem.replace(ours, theirs)
    return InputError(err.path, err.line, problem)


def read_nodes(path: str, warnings: list[str]) -> tuple[Node, ...]:
    """The nodes of a ``kubectl get nodes -o json`` dump, as hamisim nodes."""
    objs = _objects(path, "Node")
    if not objs:
        raise InputError(path, 1, "the node list is empty")
    entries, extras = [], []
    for i, obj in enumerate(objs):
        entry, cordon, unsched = _node_entry(obj, i, warnings)
        entries.append(entry)
        extras.append((cordon, unsched))
    try:
        nodes = nodes_from_document(Value(path, 1, items=entries))
    except InputError as err:
        raise _in_kubectl_terms(err) from None
    out = []
    for node, (cordon, unsched) in zip(nodes, extras):
        ids = {c.id for c in node.cards}
        cordoned: set[str] = set()
        if cordon is not None:
            for uuid in (u.strip() for u in cordon.scalar.split(",")):
                if not uuid:
                    continue
                if uuid in ids:
                    cordoned.add(uuid)
                else:
                    warnings.append(f"node {node.name}: {DEVICE_CORDON} names '{uuid}', which "
                                    "is not one of its cards; ignored (as HAMi does)")
        out.append(replace(node, cordon=frozenset(cordoned)) if cordoned else node)
    return tuple(out)


# -- pods --------------------------------------------------------------------

def _container_resources(c: Doc, what: str) -> tuple[Container, Fraction, Fraction]:
    res = _sub(c, "resources")
    limits_doc = _sub(res, "limits")
    requests_doc = _sub(res, "requests")
    hami: dict[str, dict[str, int]] = {"limits": {}, "requests": {}}
    plain: dict[str, dict[str, Fraction]] = {"limits": {}, "requests": {}}
    located: dict[str, Value] = {}
    for kind, d in (("limits", limits_doc), ("requests", requests_doc)):
        if d is None:
            continue
        for rname, v in d.items():
            if rname in _HAMI_RESOURCES:
                q = v.as_quantity(f"{what} {kind} {rname}")
                if q.denominator != 1:
                    raise v.error(f"{what} {kind} {rname} must be a whole number, got "
                                  f"{v.scalar!r} (Kubernetes rejects fractional extended "
                                  "resources)")
                hami[kind][rname] = int(q)
                located[rname] = v
            elif rname in ("cpu", "memory"):
                plain[kind][rname] = v.as_quantity(f"{what} {kind} {rname}")
    # the API server defaults requests to limits
    cpu = plain["requests"].get("cpu", plain["limits"].get("cpu", Fraction(0)))
    mem = plain["requests"].get("memory", plain["limits"].get("memory", Fraction(0)))
    # the API server refuses an extended resource whose request differs from
    # its limit; a request that repeats its limit says nothing more (HAMi reads
    # limits first, in its request generation and its default-exclusivity rule)
    for rname, value in hami["requests"].items():
        if rname in hami["limits"] and value != hami["limits"][rname]:
            raise located[rname].error(f"{what} requests {rname}: must be equal to {rname} "
                                       f"limit (Kubernetes does not overcommit extended "
                                       f"resources), got {value} and {hami['limits'][rname]}")
    requests = {k: v for k, v in hami["requests"].items() if k not in hami["limits"]}
    return Container(limits=hami["limits"], requests=requests), cpu, mem


def _pod_spec(obj: Doc, key: str) -> tuple[tuple[Container, ...], tuple[Container, ...],
                                             int, int, Doc]:
    spec = _sub(obj, "spec")
    if spec is None:
        raise obj.error(f"pod {key} has no 'spec'")
    spec = spec.with_context(f"pod {key}")
    app, init = [], []
    app_cpu, app_mem, init_cpu, init_mem = [], [], [], []
    items = spec.optional_list("containers") or []
    if not items:
        raise spec.error("'spec.containers' is empty or missing")
    for j, v in enumerate(items):
        c = v.as_doc(f"container {j}")
        cname = c.optional_str("name") or str(j)
        container, cpu, mem = _container_resources(c, f"container {cname}")
        app.append(container)
        app_cpu.append(cpu)
        app_mem.append(mem)
    for j, v in enumerate(spec.optional_list("initContainers") or []):
        c = v.as_doc(f"init container {j}")
        cname = c.optional_str("name") or str(j)
        container, cpu, mem = _container_resources(c, f"init container {cname}")
        init.append(container)
        sidecar = c.optional_str("restartPolicy") == "Always"     # a sidecar runs on
        init_cpu.append((cpu, sidecar))
        init_mem.append((mem, sidecar))
    over = {"cpu": Fraction(0), "memory": Fraction(0)}
    overhead = _sub(spec, "overhead")
    if overhead is not None:
        for rname, v in overhead.items():
            if rname in over:
                over[rname] += v.as_quantity(f"overhead {rname}")
    return (tuple(app), tuple(init), cpu_milli(pod_request(app_cpu, init_cpu, over["cpu"])),
            memory_mib(pod_request(app_mem, init_mem, over["memory"])), spec)


def _hami_annotations(ann: Doc) -> dict[str, str]:
    out = {}
    for key, v in ann.items():
        if key in _BOOKKEEPING or not (key.startswith("hami.io/")
                                       or key.startswith("nvidia.com/")):
            continue
        out[key] = v.as_str(f"annotation {key}")
    return out


def pod_from_kubernetes(obj: Doc, i: int = 0) -> Pod:
    """One Kubernetes Pod object (as ``kubectl get pod -o json`` prints it, or a
    manifest) as a hamisim pod named ``<namespace>/<name>``, read as the import
    reads pending pods."""
    meta, name, ann = _meta(obj, i, "Pod")
    ns = namespace_from_value(meta.get("namespace"))
    key = f"{ns}/{name}"
    app, init, cpu, mem, spec = _pod_spec(obj, key)
    prio = spec.get("priority")
    priority = prio.as_int("'spec.priority'") if prio is not None and not prio.is_null else 0
    return Pod(key, app, init, _hami_annotations(ann), cpu, mem, priority,
               namespace=ns, **_placement(spec, key, []))


def _placement(spec: Doc, key: str, warnings: list[str]) -> dict:
    """A pod's nodeSelector, tolerations, required node affinity and preemption
    policy; inter-pod affinity, which hamisim does not model, is dropped with a
    warning."""
    affinity = spec.get("affinity")
    if affinity is not None and affinity.is_mapping:
        doc = affinity.as_doc("'spec.affinity'")
        dropped = [k for k in ("podAffinity", "podAntiAffinity")
                   if k in doc and not doc.get(k).is_null]
        if dropped:
            warnings.append(f"pod {key}: {' and '.join(dropped)} not modelled; ignored")
        node = doc.get("nodeAffinity")
        affinity = None if node is None else _doc(
            affinity.path, affinity.line, {"nodeAffinity": node})
    return {"node_selector": node_selector_from_value(spec.get("nodeSelector")),
            "tolerations": tolerations_from_value(spec.get("tolerations")),
            "affinity": affinity_from_value(affinity),
            "preemption_policy": preemption_policy_from_value(spec.get("preemptionPolicy")),
            "termination_grace_period": grace_period_from_value(
                spec.get("terminationGracePeriodSeconds"))}


def kubernetes_pods(path: str) -> list[Doc]:
    """The Pod objects of a file holding one Pod or a (Pod)List."""
    return _objects(path, "Pod")


def _init_finished(obj: Doc) -> bool:
    """HAMi's ``AllInitContainersSucceeded``: every init status terminated with exit 0."""
    status = _sub(obj, "status")
    statuses = status.optional_list("initContainerStatuses") if status is not None else None
    if not statuses:
        return False
    for v in statuses:
        st = _sub(v.as_doc("an init container status"), "state")
        term = _sub(st, "terminated")
        if term is None or term.optional_int("exitCode", -1) != 0:
            return False
    return True


def read_pods(path: str, cluster: Cluster, warnings: list[str]
              ) -> tuple[list[dict], list[TracePod], int, int]:
    """Running pods (state entries), pending pods (in creation order), and the
    numbers of finished pods and of pods on nodes missing from the dump."""
    objs = _objects(path, "Pod")
    nodes = {n.name: n for n in cluster.nodes}
    running: list[dict] = []
    pending: list[tuple[str, int, TracePod]] = []
    seen: dict[str, int] = {}
    finished = elsewhere = 0
    gangs: dict[str, list[str]] = {}
    for i, obj in enumerate(objs):
        meta, name, ann = _meta(obj, i, "Pod")
        ns = namespace_from_value(meta.get("namespace"))
        key = f"{ns}/{name}"
        if key in seen:
            raise meta.error(f"pod {key} appears twice (first on line {seen[key]})")
        seen[key] = meta.line
        status = _sub(obj, "status")
        phase = status.optional_str("phase") if status is not None else None
        if phase in _TERMINATED:
            finished += 1
            continue
        app, init, cpu, mem, spec = _pod_spec(obj, key)
        node_v = spec.get("nodeName")
        node_name = node_v.as_str("'spec.nodeName'") if node_v is not None and \
            not node_v.is_null else None
        hami_v = _annotation(ann, ASSIGNED_NODE)
        phase_v = _annotation(ann, BIND_PHASE)
        bind_failed = phase_v is not None and phase_v.scalar == "failed" and node_name is None
        if hami_v is not None and not bind_failed:
            hami_node = hami_v.scalar
            if node_name is not None and node_name != hami_node:
                raise hami_v.error(f"pod {key}: {ASSIGNED_NODE} is '{hami_node}' but "
                                   f"spec.nodeName is '{node_name}'")
            node = nodes.get(hami_node)
            if node is None:
                raise hami_v.error(f"pod {key}: {ASSIGNED_NODE} names node '{hami_node}', "
                                   f"which is not in the node dump")
            dev_v = _annotation(ann, DEVICES_ALLOCATED)
            devices = dev_v.scalar if dev_v is not None else ""
            if devices:
                ctx = dev_v.with_context(f"pod {key}: annotation {DEVICES_ALLOCATED}")
                decode_devices(devices, ctx, {c.id: c for c in node.cards}, hami_node)
            mig_v = _annotation(ann, MIG_ALLOCATIONS)
            entry = _state_entry(key, hami_node, devices or None, len(init),
                                 _init_finished(obj) if init else False, cpu, mem, ns)
            if mig_v is not None and mig_v.scalar.strip():
                entry["mig_allocations"] = mig_v.scalar
            running.append(entry)
        elif node_name is not None:
            if node_name not in nodes:
                elsewhere += 1
                continue
            running.append(_state_entry(key, node_name, None, 0, False, cpu, mem, ns))
        else:
            created = meta.optional_str("creationTimestamp") or ""
            prio = spec.get("priority")
            priority = prio.as_int("'spec.priority'") if prio is not None and \
                not prio.is_null else 0
            pod = Pod(key, app, init, _hami_annotations(ann), cpu, mem, priority,
                      namespace=ns, **_placement(spec, key, warnings))
            pending.append((created, i, TracePod(pod, 0.0, line=meta.line)))
            for marker in _gang_markers(meta):
                gangs.setdefault(marker, []).append(f"{meta.path}:{meta.line}: pod {key}")
    for marker, where in gangs.items():
        more = f" and {len(where) - 1} more pending pods" if len(where) > 1 else ""
        warnings.append(f"{where[0]}{more}: {marker} ({GANG_MARKERS[marker]}, gang "
                        "scheduling) not modelled; the pending pods are scheduled one by one")
    pending.sort(key=lambda t: (t[0], t[1]))
    return running, [tp for _, _, tp in pending], finished, elsewhere


def _state_entry(name: str, node: str, devices: str | None, n_init: int, finished: bool,
                 cpu: int, mem: int, namespace: str = "default") -> dict:
    entry: dict[str, Any] = {"name": name, "node": node}
    if namespace != "default":
        entry["namespace"] = namespace
    if devices:
        entry["devices"] = devices
        if n_init:
            entry["init_containers"] = n_init
            if finished:
                entry["init_finished"] = True
    if cpu:
        entry["cpu_milli"] = cpu
    if mem:
        entry["memory_mib"] = mem
    return entry


# ---------------------------------------------------------------------------
# the whole import

def read_quotas(path: str, warnings: list[str]) -> dict[str, Quota]:
    """HAMi's view of ``kubectl get resourcequota -A -o json``: per namespace the
    ``spec.hard`` keys it enforces (``limits.nvidia.com/gpumem`` and
    ``limits.nvidia.com/gpucores``); with several objects in a namespace the
    later one's value wins, as in HAMi's cache. Other keys are kube-apiserver's
    business and listed in one warning per object."""
    out: dict[str, dict[str, int | None]] = {}
    for i, obj in enumerate(_objects(path, "ResourceQuota")):
        meta, name, _ = _meta(obj, i, "ResourceQuota")
        ns = namespace_from_value(meta.get("namespace"))
        spec = _sub(obj, "spec")
        hard = _sub(spec, "hard") if spec is not None else None
        if hard is None:
            continue
        limits = out.setdefault(ns, {})
        ignored = []
        for key, v in hard.items():
            if key in (QUOTA_MEMORY, QUOTA_CORES):
                limits[key] = quota_limit_from_value(key, v)
            else:
                ignored.append(key)
        if ignored:
            warnings.append(f"ResourceQuota {ns}/{name}: {', '.join(ignored)} not enforced by "
                            "HAMi (kube-apiserver's quota is not modelled); ignored")
    return {ns: Quota(v.get(QUOTA_MEMORY), v.get(QUOTA_CORES))
            for ns, v in out.items() if v}


def import_kubectl(nodes_path: str | os.PathLike[str], pods_path: str | os.PathLike[str] | None,
                   scheduler: SchedulerConfig = SchedulerConfig(),
                   quotas_path: str | os.PathLike[str] | None = None) -> ImportResult:
    """Read the dumps; nothing is written (see :func:`write_import`)."""
    nodes_path = os.fspath(nodes_path)
    warnings: list[str] = []
    nodes = read_nodes(nodes_path, warnings)
    quotas = read_quotas(os.fspath(quotas_path), warnings) if quotas_path is not None else {}
    cluster = Cluster(nodes, scheduler, quotas=quotas)
    running: list[dict] = []
    pending: list[TracePod] = []
    finished = elsewhere = 0
    pods_file = os.fspath(pods_path) if pods_path is not None else None
    if pods_file is not None:
        running, pending, finished, elsewhere = read_pods(pods_file, cluster, warnings)
    result = ImportResult(cluster, InitialState([]), pending, nodes_path, pods_file,
                          finished, elsewhere, warnings, running)
    return result


# ---------------------------------------------------------------------------
# writing

def _q(text: str) -> str:
    # a YAML double-quoted scalar: JSON's escapes for quotes, backslashes and
    # control characters are YAML's too; every other character outside printable
    # ASCII is escaped by code point (\u or \U: JSON's surrogate pairs for
    # characters beyond U+FFFF are not valid YAML)
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    return '"' + "".join(
        c if " " <= c <= "~" else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
        for c in body) + '"'


def cluster_yaml(cluster: Cluster, source: str) -> str:
    """A cluster file (DESIGN §4.1) with every card field written out."""
    s = cluster.scheduler
    lines = [f"# hamisim cluster file, imported from {source} by `hamisim import` "
             f"(hamisim {__version__}).",
             "# The scheduler policies are not in a kubectl dump: set them to your "
             "hami-scheduler's",
             "# (--gpu-scheduler-policy / --node-scheduler-policy, or the chart's "
             "scheduler.defaultSchedulerPolicy),",
             "# and default_memory / default_cores / default_gpu_num to its device "
             "config if changed.",
             "scheduler:",
             f"  gpu_scheduler_policy: {_q(s.gpu_scheduler_policy)}",
             f"  node_scheduler_policy: {_q(s.node_scheduler_policy)}",
             f"  default_memory: {s.default_memory}",
             f"  default_cores: {s.default_cores}",
             f"  default_gpu_num: {s.default_gpu_num}",
             f"  memory_factor: {s.memory_factor}",
             f"  percentage_of_nodes_to_score: {s.percentage_of_nodes_to_score}"]
    defaults = SchedulerConfig()
    for key in ("node_tie_break", "preemption", "kube_scheduler_version",
                "init_container_usage", "hami_vnpu_core"):
        value = getattr(s, key)
        if value != getattr(defaults, key):
            lines.append(f"  {key}: {_q(value) if isinstance(value, str) else str(value).lower()}")
    if s.mig_profile_allowlist != defaults.mig_profile_allowlist:
        entries = [{"models": list(e.models), "profiles": list(e.profiles)}
                   for e in s.mig_profile_allowlist]
        lines.append(f"  migProfileAllowlist: {json.dumps(entries, ensure_ascii=False)}")
    if cluster.quotas:
        lines.append("quotas:                    # ResourceQuota spec.hard, as HAMi reads it")
        for ns, q in cluster.quotas.items():
            lines.append(f"  {_q(ns)}:")
            for key, value in ((QUOTA_MEMORY, q.memory), (QUOTA_CORES, q.cores)):
                if value is not None:
                    lines.append(f"    {key}: {value}")
            if not q.limits:
                lines[-1] += " {}"
    lines.append("nodes:")
    for n in cluster.nodes:
        lines.append(f"  - name: {_q(n.name)}")
        if n.cpu_milli is not None:
            lines.append(f"    cpu_milli: {n.cpu_milli}")
        if n.memory_mib is not None:
            lines.append(f"    memory_mib: {n.memory_mib}")
        if n.group is not None:
            lines.append(f"    group: {_q(n.group)}")
        if n.unschedulable:
            lines.append("    unschedulable: true    # kubectl cordon")
        if n.hami_vnpu_core is not None:
            lines.append(f"    annotations: {{{ascend.NODE_ANNOTATION}: {_q(n.hami_vnpu_core)}}}")
        if n.labels:
            lines.append("    labels:")
            lines.extend(f"      {_q(k)}: {_q(v)}" for k, v in n.labels.items())
        if n.taints:
            lines.append("    taints:")
            lines.extend(f"      - {{key: {_q(t.key)}, value: {_q(t.value)}, "
                         f"effect: {t.effect}}}" for t in n.taints)
        if not n.cards:
            lines.append("    devices: []            # no card registered")
            continue
        lines.append("    devices:")
        for c in n.cards:
            mig = ""
            if c.mig_profiles:
                # HAMi's wire format, plus NVML's instance counts where known
                wire = json.dumps([{**p.to_wire(), **({"instanceCount": p.instance_count}
                                                      if p.instance_count else {})}
                                   for p in c.mig_profiles], separators=(",", ":"),
                                  ensure_ascii=False)
                mig = f", migProfiles: {wire}"
            lines.append(
                f"      - {{id: {_q(c.id)}, index: {c.index}, count: {c.count}, "
                f"devmem: {c.devmem}, devcore: {c.devcore}, type: {_q(c.type)}, "
                f"numa: {c.numa}, health: {'true' if c.health else 'false'}, "
                f"mode: {_q(c.mode)}{mig}"
                + ("" if c.network_id is None else f", customInfo: {{NetworkID: {c.network_id}}}")
                + "}")
        if n.pair_scores:
            lines.append("    nvidia_score:")
            for a, row in n.pair_scores.items():
                inner = ", ".join(f"{_q(b)}: {v}" for b, v in row.items())
                lines.append(f"      {_q(a)}: {{{inner}}}")
        if n.cordon:
            ids = [c.id for c in n.cards if c.id in n.cordon]
            lines.append(f"    cordon: [{', '.join(_q(i) for i in ids)}]")
        if n.topology is not None:
            lines.extend(_topology_lines(n.topology))
    return "\n".join(lines) + "\n"


def _topology_lines(t: ServerTopology) -> list[str]:
    """A node's ``topology`` written out in full (its template named, for its card)."""
    out = ["    topology:"]
    if t.template is not None:
        out.append(f"      template: {_q(t.template)}")
    places = ", ".join("{" + f"numa: {g.numa}, switch: {g.switch}"
                       + (f", board: {g.board}" if g.board is not None else "") + "}"
                       for g in t.gpus)
    out.append(f"      gpus: [{places}]")
    out.append("      nvlink: [" + ", ".join(f"[{a}, {b}, {k}]"
                                             for (a, b), k in t.nvlink.items()) + "]")
    if t.nvswitch:
        out.append(f"      nvswitch: [{', '.join(map(str, t.nvswitch))}]")
    out.append("      nics: [" + ", ".join(f"{{numa: {x.numa}, switch: {x.switch}}}"
                                           for x in t.nics) + "]")
    if t.score is not None:
        out.append(f"      score: {'true' if t.score else 'false'}")
    return out


def state_yaml(entries: list[dict], source: str) -> str:
    """A state file (DESIGN §4.4)."""
    lines = [f"# hamisim initial state, imported from {source} by `hamisim import` "
             f"(hamisim {__version__}).",
             "# Pods holding resources now; add 'departure: SECONDS' to let one end "
             "during a run.",
             f"source: {_q(source)}"]
    if not entries:
        lines.append("pods: []")
    else:
        lines.append("pods:")
    for e in entries:
        first = True
        for k, v in e.items():
            text = _q(v) if isinstance(v, str) else ("true" if v is True else str(v))
            lines.append(f"  {'- ' if first else '  '}{k}: {text}")
            first = False
    return "\n".join(lines) + "\n"


def write_import(result: ImportResult, out: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``cluster.yaml``, ``state.yaml`` and (with pending pods)
    ``pending.jsonl`` into ``out``, replaced atomically; return their paths.

    The written files are read back through hamisim's own loaders, so what
    was written is what ``run`` / ``explain`` will read.
    """
    source = os.path.basename(result.nodes_path)
    if result.pods_path is not None:
        source += f" + {os.path.basename(result.pods_path)}"
    out = Path(out)
    with atomic_folder(out) as tmp:
        (tmp / "cluster.yaml").write_text(cluster_yaml(result.cluster, source),
                                          encoding="utf-8")
        (tmp / "state.yaml").write_text(state_yaml(result.state_entries, source),
                                        encoding="utf-8")
        if result.pending:
            write_trace(Trace("pending", result.pending), tmp / "pending.jsonl")
        with _warnings.catch_warnings():
            # what the file says was warned about at the dump's own lines
            _warnings.simplefilter("ignore", InputWarning)
            written = load_cluster(tmp / "cluster.yaml")
        if written != result.cluster:     # pragma: no cover - a writer bug
            raise AssertionError("the cluster file written does not read back equal")
        result.state = load_state(tmp / "state.yaml", written)
        result.state.path = str(out / "state.yaml")
        result.warnings.extend(result.state.warnings)
    files = {"cluster": out / "cluster.yaml", "state": out / "state.yaml"}
    if result.pending:
        files["pending"] = out / "pending.jsonl"
    return files
