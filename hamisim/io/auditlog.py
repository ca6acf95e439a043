"""Kubernetes audit logs: the pod history ``hamisim validate`` compares against.

The reader streams ``audit.k8s.io/v1`` ``Event`` objects as kube-apiserver's
log backend writes them (``--audit-log-format=json``, the default): one JSON
object a line, in files given oldest first, each plain or gzip'd (``.gz``, or
gzip's magic bytes). Memory stays flat: one line at a time.

Of every event only what HAMi's and kube-scheduler's decisions need is kept,
as :class:`AuditRecord` s in log order:

* ``create`` of ``pods`` (no subresource): the Pod, from ``responseObject``
  when the policy logs it (``RequestResponse``: the object as stored, after
  HAMi's mutating webhook and defaulting), else from ``requestObject``
  (``Request``: as the client sent it; the name may then come from
  ``objectRef.name``);
* ``patch`` / ``update`` of ``pods`` (no subresource) carrying one of HAMi's
  allocation annotations (:data:`HAMI_KEYS`): their new values (the
  response's full annotations when logged, else the patch body's; a JSON
  Patch, ``kubectl patch --type=json``, logs its body as an array of
  operations, kubernetes/kubernetes#60110: its annotations come from the
  response only);
* ``create`` of ``pods/binding`` (``target.name``), or of the older
  ``bindings`` resource: where the pod was bound;
* the pod's end: ``delete`` of ``pods`` (unless the response shows a graceful
  deletion still running: ``metadata.deletionGracePeriodSeconds`` > 0, the
  pod then still holds its node and cards), or an ``update``/``patch`` of
  ``pods/status`` to phase ``Succeeded`` or ``Failed``;
* its init containers done (``INIT_DONE``): any other ``update``/``patch`` of
  ``pods/status`` whose ``initContainerStatuses`` (the response's when logged,
  else the request's) are all ``terminated`` with ``exitCode`` 0, HAMi's
  ``AllInitContainersSucceeded`` (the kubelet sends such statuses again and
  again: the walk acts on the first);
* a nomination (``NOMINATE``): a ``pods/status`` patch (or update) that sets
  or clears ``status.nominatedNodeName``, as kube-scheduler's preemption
  (``util.PatchPodStatus``) sends it: the request's merge patch (``null``:
  cleared), or a JSON Patch operation on ``/status/nominatedNodeName``.

Skipped and counted (:class:`ReadStats`): events of other resources, stages
other than ``ResponseComplete`` (``RequestReceived``, ``ResponseStarted``,
``Panic``), failed requests (``responseStatus.code`` >= 300), other verbs and
events without the object they need (a ``Metadata``-level policy). A line that
is not a JSON object, or an ``Event`` whose fields have the wrong types (HAMi's
annotations included: strings, the devices ones in HAMi's encoding, as
``hamisim import`` reads them, and ``hami.io/vgpu-mig-allocations`` a JSON list
of ``{gpuUUID, profile, placement: {start, size}}``), is an :class:`~hamisim.errors.InputError` at
``file:line``. Warnings (:attr:`ReadStats.warnings`, located): a devices entry
without a card (HAMi skips it, so the container records no card), and, once,
an event whose time goes back more than :data:`BACKWARDS_TOLERANCE_S` from the
latest before it (files given out of order, or overlapping: the reader does not
reorder, the walk takes the events in the order given).

:func:`audit_lines` is the other direction: a hamisim run's history as the API
server would log it (for tests, benchmarks and demonstrations).
"""
from __future__ import annotations

import gzip
import heapq
import io
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Mapping, Sequence

from hamisim.errors import InputError
from hamisim.pods import Pod

__all__ = ["HAMI_KEYS", "VGPU_NODE", "DEVICES_ALLOCATED", "DEVICES_TO_ALLOCATE", "BIND_PHASE",
           "MIG_ALLOCATIONS", "CREATE", "ANNOTATE", "BIND", "END", "INIT_DONE", "NOMINATE",
           "AuditRecord",
           "ReadStats", "read_audit", "parse_time", "format_time", "pod_manifest", "audit_lines",
           "run_audit_lines", "write_lines", "AUDIT_POLICY", "BACKWARDS_TOLERANCE_S"]

VGPU_NODE = "hami.io/vgpu-node"
DEVICES_TO_ALLOCATE = "hami.io/vgpu-devices-to-allocate"
DEVICES_ALLOCATED = "hami.io/vgpu-devices-allocated"
BIND_PHASE = "hami.io/bind-phase"
#: the MIG instances HAMi chose for a pod on MIG cards (JSON, HAMi's ``EncodeMigAllocations``)
MIG_ALLOCATIONS = "hami.io/vgpu-mig-allocations"
#: HAMi's allocation annotations on a pod, the ones the reader keeps from patches
HAMI_KEYS = (VGPU_NODE, DEVICES_TO_ALLOCATE, DEVICES_ALLOCATED, BIND_PHASE, MIG_ALLOCATIONS)

#: how far (s) an event's time may go back from the latest before it without a
#: warning: the API server stamps events at completion, so concurrent requests
#: land a few milliseconds out of order; rotated files given out of order jump back
#: by minutes or more
BACKWARDS_TOLERANCE_S = 1.0

#: record kinds (``INIT_DONE``: every init container of the pod succeeded;
#: ``NOMINATE``: kube-scheduler set or cleared the pod's ``status.nominatedNodeName``)
CREATE, ANNOTATE, BIND, END, INIT_DONE = "create", "annotate", "bind", "end", "init-done"
NOMINATE = "nominate"

#: the audit policy a cluster needs (``kube-apiserver --audit-policy-file``):
#: pods and their bindings and status at RequestResponse, nothing else
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: RequestResponse
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: ""
        resources: ["pods", "pods/binding", "pods/status", "bindings"]
  - level: None
"""


@dataclass(slots=True)
class AuditRecord:
    """One pod event of the log.

    ``time``: seconds since the epoch (``stageTimestamp``); ``pod``:
    ``namespace/name``; ``node``: the binding's target, or a ``NOMINATE``'s
    nominated node (``""``: cleared); ``obj``: the Pod (a
    ``create``); ``annotations``: HAMi's keys a patch set (``None`` values:
    removed); ``where``: ``file:line``.
    """

    kind: str
    time: float
    pod: str
    where: str
    node: str | None = None
    obj: dict | None = None
    annotations: dict[str, str | None] | None = None


@dataclass
class ReadStats:
    """What the reader read and skipped, by reason."""

    lines: int = 0
    records: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    #: ``file:line: warning: problem``, the first :attr:`MAX_WARNINGS` (of ``n_warnings``)
    warnings: list[str] = field(default_factory=list)
    n_warnings: int = 0
    #: the latest record time so far, and whether time went back already
    latest: float | None = None
    went_back: bool = False

    MAX_WARNINGS = 100

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def warn(self, where: tuple[str, int], problem: str) -> None:
        self.n_warnings += 1
        if len(self.warnings) < self.MAX_WARNINGS:
            self.warnings.append(f"{where[0]}:{where[1]}: warning: {problem}")


_TIME_CACHE: dict[str, float] = {}


def parse_time(text: str) -> float:
    """An RFC 3339 time (``2024-05-01T10:00:00.123456Z``) as seconds since the epoch."""
    t = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.timestamp()


def format_time(seconds: float) -> str:
    """Seconds since the epoch as the API server's MicroTime (UTC, microseconds)."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _open(path: str) -> IO[str]:
    """The file's lines as text (UTF-8, as the API server writes), gunzipped when it
    starts with gzip's magic bytes."""
    raw = open(path, "rb")
    head = raw.peek(2)[:2]
    binary: IO[bytes] = gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw  # type: ignore[assignment]
    return io.TextIOWrapper(binary, encoding="utf-8", errors="strict", newline="\n")


def _dict(ev: dict, key: str, where: tuple[str, int]) -> dict | None:
    v = ev.get(key)
    if v is None:
        return None
    if not isinstance(v, dict):
        raise InputError(where[0], where[1], f"audit event: '{key}' must be an object, "
                                             f"got {type(v).__name__}")
    return v


def _str(d: dict, key: str, where: tuple[str, int], what: str) -> str:
    v = d.get(key)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise InputError(where[0], where[1], f"audit event: '{what}' must be a string, "
                                             f"got {type(v).__name__}")
    return v


def _meta(obj: dict | None, where: tuple[str, int], what: str) -> dict:
    """``obj``'s metadata (``{}`` when absent); ``what`` names ``obj`` in errors."""
    if obj is None:
        return {}
    m = obj.get("metadata")
    if m is None:
        return {}
    if m.__class__ is not dict:
        raise InputError(where[0], where[1], f"audit event: '{what}.metadata' must be an "
                                             f"object, got {type(m).__name__}")
    return m


class _AnyCard:
    index = 0


class _AnyCards(dict):
    """Every UUID is a card: :func:`decode_devices` then checks the encoding only
    (the walk checks the cards against the recorded node)."""

    def get(self, key, default=None):  # type: ignore[override]
        return _AnyCard


_ANY_CARDS = _AnyCards()


def _hami_annotations(meta: dict, where: tuple[str, int], what: str,
                      stats: ReadStats) -> dict[str, str | None] | None:
    """HAMi's keys of ``meta``'s annotations (``None`` values: removed by a merge
    patch), checked as ``hamisim import`` reads them; ``None`` without annotations."""
    ann = meta.get("annotations")
    if ann is None:
        return None
    if ann.__class__ is not dict:
        raise InputError(where[0], where[1], f"audit event: '{what}.metadata.annotations' "
                                             f"must be an object, got {type(ann).__name__}")
    found = {k: ann[k] for k in HAMI_KEYS if k in ann}
    for k, v in found.items():
        if v is None:
            continue
        if v.__class__ is not str:
            raise InputError(where[0], where[1], f"audit event: annotation {k} must be a "
                                                 f"string, got {type(v).__name__}")
        if k == DEVICES_ALLOCATED or k == DEVICES_TO_ALLOCATE:
            _check_devices(v, k, where, stats)
        elif k == MIG_ALLOCATIONS:
            _check_mig(v, where)
    return found


def _check_mig(text: str, where: tuple[str, int]) -> None:
    """``hami.io/vgpu-mig-allocations``'s shape, as a state file's ``mig_allocations``
    reads it: a JSON list of ``{gpuUUID, profile, placement: {start, size}}``
    (the walk pairs the entries with the recorded cards)."""
    def bad(problem: str) -> InputError:
        return InputError(where[0], where[1], f"audit event: annotation {MIG_ALLOCATIONS}: "
                                              f"{problem}")
    if not text.strip():
        return
    try:
        root = json.loads(text)
    except json.JSONDecodeError as err:
        raise bad(f"not JSON: {err.msg} at column {err.pos + 1}") from None
    except ValueError as err:
        raise bad(f"not JSON: {err}") from None
    if root is None:
        return
    if root.__class__ is not list:
        raise bad(f"expected a list of allocations, got {type(root).__name__}")
    for pos, e in enumerate(root):
        if e.__class__ is not dict:
            raise bad(f"allocation {pos} must be an object, got {type(e).__name__}")
        for key in ("gpuUUID", "profile"):
            if e.get(key).__class__ is not str or not e[key]:
                raise bad(f"allocation {pos}: '{key}' must be a non-empty string, got "
                          f"{e.get(key)!r}")
        place = e.get("placement")
        if place.__class__ is not dict:
            raise bad(f"allocation {pos}: 'placement' must be an object, got {place!r}")
        for key in ("start", "size"):
            v = place.get(key, 0)
            if v.__class__ is not int or not 0 <= v <= 64:
                raise bad(f"allocation {pos}: 'placement.{key}' must be an integer in 0..64, "
                          f"got {v!r}")
        if place.get("size", 0) == 0:
            raise bad(f"allocation {pos}: a MIG allocation needs a placement size (HAMi "
                      "refuses size 0)")


def _check_devices(text: str, key: str, where: tuple[str, int], stats: ReadStats) -> None:
    from hamisim.io.initialstate import decode_devices
    try:
        decode_devices(text, None, _ANY_CARDS, "")
    except InputError as err:
        raise InputError(where[0], where[1], f"audit event: annotation {key}: "
                                             f"{err.problem}") from None
    for seg in text.split(";"):
        for entry in seg.split(":"):
            if entry.strip() and "," not in entry:
                stats.warn(where, f"annotation {key}: devices entry {entry!r} names no card "
                                  "(UUID,TYPE,MEM,CORES); HAMi skips it, the container "
                                  "records no card there")
                return


def _inits_succeeded(statuses: Any, where: tuple[str, int], what: str) -> bool:
    """HAMi's ``AllInitContainersSucceeded``: some init container statuses, every
    one ``state.terminated`` with ``exitCode`` 0."""
    if statuses is None:
        return False
    if statuses.__class__ is not list:
        raise InputError(where[0], where[1], f"audit event: '{what}.status."
                                             "initContainerStatuses' must be a list, got "
                                             f"{type(statuses).__name__}")
    if not statuses:
        return False
    for k, cs in enumerate(statuses):
        state = cs.get("state") if cs.__class__ is dict else None
        if cs.__class__ is not dict or (state is not None and state.__class__ is not dict):
            raise InputError(where[0], where[1], f"audit event: '{what}.status."
                                                 f"initContainerStatuses[{k}]' must be an "
                                                 "object with an object 'state'")
        term = (state or {}).get("terminated")
        if term.__class__ is not dict or term.get("exitCode") != 0:
            return False
    return True


def _nomination(ev: dict, req: dict | None, json_patch: bool, where: tuple[str, int]
                ) -> str | None:
    """The ``status.nominatedNodeName`` a ``pods/status`` request sets (``""``:
    cleared), ``None`` when it does not touch it. kube-scheduler's
    ``util.PatchPodStatus`` sends a strategic merge patch of the status
    (``{"status": {"nominatedNodeName": "n1", ...}}``; clearing it, as
    ``ClearNominatedNodeName`` does, gives ``null``: the field is omitempty);
    a JSON Patch's operation on ``/status/nominatedNodeName`` (``remove``:
    cleared) and an update whose status names the field are read the same. An
    update without the field is not read as a clearing (kube-scheduler patches)."""
    if json_patch:
        found = None
        for k, op in enumerate(ev["requestObject"]):
            if op.__class__ is not dict or op.get("path") != "/status/nominatedNodeName":
                continue
            kind = op.get("op")
            if kind == "remove":
                found = ""
            elif kind in ("add", "replace"):
                found = _node_name(op.get("value"), where, f"requestObject[{k}].value")
        return found
    st = req.get("status") if req is not None else None
    if st is None:
        return None
    if st.__class__ is not dict:
        raise InputError(where[0], where[1], "audit event: 'requestObject.status' must be an "
                                             f"object, got {type(st).__name__}")
    if "nominatedNodeName" not in st:
        return None
    return _node_name(st["nominatedNodeName"], where, "requestObject.status.nominatedNodeName")


def _node_name(v: Any, where: tuple[str, int], what: str) -> str:
    if v is None:
        return ""
    if v.__class__ is not str:
        raise InputError(where[0], where[1], f"audit event: '{what}' must be a node name "
                                             f"(a string) or null, got {type(v).__name__}")
    return v


def read_audit(paths: Sequence[str | os.PathLike[str]], stats: ReadStats | None = None
               ) -> Iterator[AuditRecord]:
    """The pod records of the audit log files ``paths`` (oldest first), streamed.

    ``stats`` (optional) counts lines, records and the events skipped by reason.
    Raises :class:`InputError` at ``file:line`` for a malformed line.
    """
    stats = stats if stats is not None else ReadStats()
    for p in paths:
        path = os.fspath(p)
        try:
            fh = _open(path)
        except OSError as err:
            raise InputError(path, None, f"cannot read the audit log: {err.strerror or err}")
        with fh:
            try:
                yield from _read_file(fh, path, stats)
            except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as err:
                raise InputError(path, None, f"cannot read the audit log: {err}") from None


def _read_file(fh: IO[str], path: str, stats: ReadStats) -> Iterator[AuditRecord]:
    loads = json.loads
    for lineno, line in enumerate(fh, 1):
        stats.lines += 1
        if not line.strip():
            continue
        try:
            ev = loads(line)
        except json.JSONDecodeError as err:
            # the decoder's own line/column count from the start of this one line
            end = len(line.rstrip("\r\n"))
            at = f"at column {err.pos + 1}" if err.pos < end else "at the end of the line"
            raise InputError(path, lineno, f"not a JSON audit event: {err.msg} {at}") from None
        except ValueError as err:
            raise InputError(path, lineno, f"not a JSON audit event: {err}") from None
        if not isinstance(ev, dict):
            raise InputError(path, lineno, "not a JSON audit event: expected an object, got "
                                           f"{type(ev).__name__}")
        rec = _record(ev, (path, lineno), stats)
        if rec is not None:
            stats.records += 1
            latest = stats.latest
            if latest is None or rec.time > latest:
                stats.latest = rec.time
            elif latest - rec.time > BACKWARDS_TOLERANCE_S and not stats.went_back:
                stats.went_back = True
                stats.warn((path, lineno), f"time goes back {latest - rec.time:.3f} s, to "
                                           f"{format_time(rec.time)} after "
                                           f"{format_time(latest)}: are the log files given "
                                           "oldest first? The events are walked in the order "
                                           "given")
            yield rec


def _record(ev: dict, where: tuple[str, int], stats: ReadStats) -> AuditRecord | None:
    # the common path reads fields directly; a field of the wrong type is an error
    if ev.get("kind") != "Event":
        if ev.get("kind") is None and "auditID" not in ev:
            raise InputError(where[0], where[1], "not an audit event (no 'kind: Event')")
        stats.skip("not an Event")
        return None
    ref = ev.get("objectRef")
    if ref is None:
        stats.skip("other resource")
        return None
    if ref.__class__ is not dict:
        _dict(ev, "objectRef", where)
    resource = ref.get("resource")
    if (resource != "pods" and resource != "bindings") or ref.get("apiGroup"):
        stats.skip("other resource")
        return None
    if ev.get("stage") != "ResponseComplete":
        stats.skip("stage not ResponseComplete")
        return None
    status = ev.get("responseStatus")
    if status is not None:
        if status.__class__ is not dict:
            _dict(ev, "responseStatus", where)
        code = status.get("code")
        if code is not None:
            if code.__class__ is not int:
                raise InputError(where[0], where[1], "audit event: 'responseStatus.code' must "
                                                     "be an integer")
            if code >= 300:
                stats.skip("failed request")
                return None
    verb = _str(ev, "verb", where, "verb")
    sub = _str(ref, "subresource", where, "objectRef.subresource")
    ts = _str(ev, "stageTimestamp", where, "stageTimestamp") or \
        _str(ev, "requestReceivedTimestamp", where, "requestReceivedTimestamp")
    if not ts:
        raise InputError(where[0], where[1], "audit event without 'stageTimestamp'")
    try:
        t = _TIME_CACHE.get(ts)
        if t is None:
            t = parse_time(ts)
            if len(_TIME_CACHE) > 4096:
                _TIME_CACHE.clear()
            _TIME_CACHE[ts] = t
    except ValueError:
        raise InputError(where[0], where[1], f"audit event: bad stageTimestamp {ts!r}") from None
    if verb == "patch" and ev.get("requestObject").__class__ is list:
        req = None              # a JSON Patch's operations (kubernetes/kubernetes#60110)
        json_patch = True
    else:
        req = _dict(ev, "requestObject", where)
        json_patch = False
    resp = _dict(ev, "responseObject", where)
    ns = _str(ref, "namespace", where, "objectRef.namespace") or "default"
    name = _str(ref, "name", where, "objectRef.name")
    at = f"{where[0]}:{where[1]}"
    if resource == "bindings" or sub == "binding":
        if verb != "create":
            stats.skip("other verb")
            return None
        what = "requestObject" if req is not None else "responseObject"
        body = req if req is not None else resp
        target = body.get("target") if body is not None else None
        if target is None:
            stats.skip("binding without target (Metadata level)")
            return None
        if target.__class__ is not dict:
            raise InputError(where[0], where[1], f"audit event: '{what}.target' must be an "
                                                 f"object, got {type(target).__name__}")
        node = target.get("name")
        if node.__class__ is not str or not node:
            raise InputError(where[0], where[1], f"audit event: '{what}.target.name' must be "
                                                 f"a node name, got {node!r}")
        if resource == "bindings":        # POST .../bindings: the pod is the Binding's name
            name = _meta(body, where, what).get("name") or name
        return AuditRecord(BIND, t, f"{ns}/{name}", at, node=node)
    if sub == "status":
        if verb not in ("update", "patch"):
            stats.skip("other verb")
            return None
        phase = None
        for body in (resp, req):
            st = body.get("status") if body is not None else None
            if isinstance(st, dict) and isinstance(st.get("phase"), str):
                phase = st["phase"]
                break
        if phase in ("Succeeded", "Failed"):
            return AuditRecord(END, t, f"{ns}/{name}", at)
        for what, body in (("responseObject", resp), ("requestObject", req)):
            st = body.get("status") if body is not None else None
            if st.__class__ is dict and "initContainerStatuses" in st:
                if _inits_succeeded(st["initContainerStatuses"], where, what):
                    return AuditRecord(INIT_DONE, t, f"{ns}/{name}", at)
                break
        nominated = _nomination(ev, req, json_patch, where)
        if nominated is not None:
            return AuditRecord(NOMINATE, t, f"{ns}/{name}", at, node=nominated)
        stats.skip("status without end")
        return None
    if sub:
        stats.skip("other subresource")
        return None
    if verb == "create":
        stored = resp is not None and resp.get("kind", "Pod") == "Pod"
        obj = resp if stored else req
        if obj is None:
            stats.skip("pod create without object (Metadata level)")
            return None
        what = "responseObject" if stored else "requestObject"
        meta = _meta(obj, where, what)
        _hami_annotations(meta, where, what, stats)
        pname = _str(meta, "name", where, f"{what}.metadata.name") or name
        pns = _str(meta, "namespace", where, f"{what}.metadata.namespace") or ns
        if not pname:
            stats.skip("pod create without name")
            return None
        return AuditRecord(CREATE, t, f"{pns}/{pname}", at, obj=obj)
    if verb in ("patch", "update"):
        stored = resp is not None and resp.get("kind", "Pod") == "Pod"
        if not stored and json_patch:
            stats.skip("JSON patch without the pod (annotations not read)")
            return None
        what = "responseObject" if stored else "requestObject"
        body = resp if stored else req
        found = _hami_annotations(_meta(body, where, what), where, what, stats)
        if not found:
            stats.skip("pod change without HAMi annotations")
            return None
        return AuditRecord(ANNOTATE, t, f"{ns}/{name}", at, annotations=found)
    if verb == "delete":
        grace = _meta(resp, where, "responseObject").get("deletionGracePeriodSeconds")
        if isinstance(grace, int) and grace > 0:
            stats.skip("graceful deletion begun")
            return None
        return AuditRecord(END, t, f"{ns}/{name}", at)
    stats.skip("other verb")
    return None


# ---------------------------------------------------------------------------
# the other direction: a run's history as audit lines

def pod_manifest(pod: Pod, name: str, namespace: str, node: str | None = None) -> dict:
    """A Kubernetes Pod object for ``pod`` (as the API server stores it after
    admission): containers with their GPU limits, CPU and memory on the first
    container, annotations, priority, node selector and tolerations."""
    def container(i: int, c, first: bool, prefix: str) -> dict:
        limits = {k: str(v) for k, v in c.limits.items()}
        requests = {k: str(v) for k, v in c.requests.items()}
        if first:
            if pod.cpu_milli:
                requests["cpu"] = f"{pod.cpu_milli}m"
            if pod.memory_mib:
                requests["memory"] = f"{pod.memory_mib}Mi"
        res: dict[str, Any] = {}
        if limits:
            res["limits"] = limits
        if requests:
            res["requests"] = requests
        return {"name": f"{prefix}{i}", "image": "busybox", "resources": res}

    spec: dict[str, Any] = {
        "containers": [container(i, c, i == 0, "c") for i, c in enumerate(pod.containers)]
        or [container(0, type("C", (), {"limits": {}, "requests": {}})(), True, "c")],
        "schedulerName": "hami-scheduler", "priority": pod.priority,
    }
    if pod.init_containers:
        spec["initContainers"] = [container(i, c, False, "init")
                                  for i, c in enumerate(pod.init_containers)]
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if pod.tolerations:
        spec["tolerations"] = [{k: v for k, v in (("key", t.key), ("operator", t.operator),
                                                  ("value", t.value), ("effect", t.effect)) if v}
                               for t in pod.tolerations]
    if pod.preemption_policy != "PreemptLowerPriority":
        spec["preemptionPolicy"] = pod.preemption_policy
    if node is not None:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if pod.annotations:
        meta["annotations"] = dict(pod.annotations)
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec,
            "status": {"phase": "Pending"}}


def _event(t: float, verb: str, ns: str, name: str, sub: str = "", req: dict | None = None,
           resp: dict | None = None, code: int = 200, stage: str = "ResponseComplete",
           level: str = "RequestResponse", seq: int = 0, user: str = "system:admin") -> str:
    uri = f"/api/v1/namespaces/{ns}/pods" + ("" if verb == "create" and not sub else
                                             f"/{name}") + (f"/{sub}" if sub else "")
    ref: dict[str, Any] = {"resource": "pods", "namespace": ns, "name": name,
                           "apiVersion": "v1"}
    if sub:
        ref["subresource"] = sub
    ts = format_time(t)
    ev: dict[str, Any] = {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
        "auditID": f"00000000-0000-4000-8000-{seq:012x}", "stage": stage, "requestURI": uri,
        "verb": verb, "user": {"username": user}, "sourceIPs": ["10.0.0.1"],
        "objectRef": ref, "responseStatus": {"metadata": {}, "code": code},
    }
    if req is not None:
        ev["requestObject"] = req
    if resp is not None:
        ev["responseObject"] = resp
    ev["requestReceivedTimestamp"] = ts
    ev["stageTimestamp"] = ts
    return json.dumps(ev, separators=(",", ":"))


def audit_lines(pods: dict[str, Pod], events: Iterable[tuple],
                start: float = 1.7e9, noise: int = 0, init_done: bool = True) -> Iterator[str]:
    """A run's history as kube-apiserver's audit log lines (``RequestResponse``).

    ``pods``: the run's pods by name; ``events``: ``(time, pod, event, node,
    devices)`` rows of its events table in order, optionally with a sixth
    field, a bind's ``hami.io/vgpu-mig-allocations`` (the pods table's
    ``mig_allocations``; ``None``: no MIG instance) (``arrive``, ``bind``,
    ``depart``, ``delete``/``abandon``/``preempt`` and ``nominate`` are
    written; others ignored; a ``preempt`` of a pod with a
    ``termination_grace_period`` is a graceful delete, the pod ending at its
    ``depart``). A ``nominate`` row (not an events table's: see
    :func:`run_audit_lines`) is kube-scheduler's ``pods/status`` patch setting
    the pod's ``status.nominatedNodeName`` to its ``node`` (``None``: cleared);
    a bind clears it without a patch of its own. Each arrival becomes a pod ``create`` (preceded by its
    ``RequestReceived`` stage), each bind HAMi's annotation patch then the
    ``pods/binding`` create and the kubelet's ``Running`` status patch, each
    departure the ``Succeeded`` status patch then the final ``delete``.
    ``init_done`` (a replay run's engine): a bound pod with init containers,
    cards and an ``init_duration`` gets the kubelet's status patch with every
    init container terminated (exit 0) ``init_duration`` after its bind, unless
    it ended before; the events table has no row for it, so it is written
    before the first event at or after that time (an event at the same time may
    in the run have come first).
    ``noise``: unrelated events (node lease renewals, a ``get``, a failed
    create) written after every ``noise``-th pod event, as a real log has them.
    ``start``: the epoch second of time 0.
    """
    seq = 0
    due: list[tuple[float, int, str]] = []      # init containers done: (time, seq, pod)
    due_of: dict[str, int] = {}

    def inits_done(until: float | None) -> Iterator[str]:
        nonlocal seq
        while due and (until is None or due[0][0] <= until):
            when, k, who = heapq.heappop(due)
            if due_of.get(who) != k:
                continue                   # ended (or bound again) before
            del due_of[who]
            p = pods[who]
            seq += 1
            statuses = [{"name": f"init{i}", "ready": True, "restartCount": 0,
                         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
                        for i in range(len(p.init_containers))]
            yield _event(start + when, "patch", p.namespace, who, sub="status",
                         req={"status": {"initContainerStatuses": statuses}}, seq=seq,
                         user="system:node")

    for row in events:
        time, name, event, node, devices = row[:5]
        mig = row[5] if len(row) > 5 else None
        pod = pods.get(name)
        if pod is None:
            continue
        if due:
            yield from inits_done(float(time))
        ns = pod.namespace
        t = start + float(time)
        seq += 1
        if event == "arrive":
            obj = pod_manifest(pod, name, ns)
            yield _event(t, "create", ns, name, stage="RequestReceived", level="RequestResponse",
                         req=obj, seq=seq)
            yield _event(t, "create", ns, name, req=obj, resp=obj, code=201, seq=seq)
        elif event == "bind":
            ann = {VGPU_NODE: node, "hami.io/vgpu-time": str(int(t))}
            if devices:
                ann[DEVICES_TO_ALLOCATE] = devices
                ann[DEVICES_ALLOCATED] = devices
            if mig:
                ann[MIG_ALLOCATIONS] = mig
            ann[BIND_PHASE] = "allocating"
            patch = {"metadata": {"annotations": ann}}
            yield _event(t, "patch", ns, name, req=patch, seq=seq,
                         user="system:serviceaccount:kube-system:hami-scheduler")
            seq += 1
            binding = {"kind": "Binding", "apiVersion": "v1",
                       "metadata": {"name": name, "namespace": ns},
                       "target": {"kind": "Node", "name": node}}
            yield _event(t, "create", ns, name, sub="binding", req=binding,
                         resp={"kind": "Status", "apiVersion": "v1", "status": "Success",
                               "code": 201}, code=201, seq=seq,
                         user="system:serviceaccount:kube-system:hami-scheduler")
            seq += 1
            yield _event(t, "patch", ns, name, sub="status",
                         req={"status": {"phase": "Running"}}, seq=seq, user=f"system:node:{node}")
            if init_done and pod.init_containers and pod.init_duration is not None and devices \
                    and any(e.strip() for e in devices.replace(":", ";").split(";")):
                due_of[name] = seq
                heapq.heappush(due, (float(time) + pod.init_duration, seq, name))
        elif event == "nominate":
            # kube-scheduler's handleSchedulingFailure after a preemption:
            # util.PatchPodStatus, a strategic merge patch of the status (the
            # PodScheduled condition and the nomination; null clears it)
            status: dict[str, Any] = {"nominatedNodeName": node or None}
            if node:
                status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                         "reason": "Unschedulable",
                                         "lastTransitionTime": format_time(t)[:19] + "Z"}]
            yield _event(t, "patch", ns, name, sub="status", req={"status": status},
                         seq=seq, user="system:kube-scheduler")
        elif event == "preempt" and pod.termination_grace_period > 0:
            # a graceful deletion begins: the victim keeps its node and cards
            # until its period ends (the run's depart row, the final delete)
            gone = {"metadata": {"name": name, "namespace": ns,
                                 "deletionTimestamp": format_time(
                                     t + pod.termination_grace_period)[:19] + "Z",
                                 "deletionGracePeriodSeconds": pod.termination_grace_period},
                    "kind": "Pod", "apiVersion": "v1"}
            yield _event(t, "delete", ns, name, req={"kind": "DeleteOptions",
                                                     "apiVersion": "v1"}, resp=gone, seq=seq,
                         user="system:kube-scheduler")
        elif event in ("depart", "delete", "abandon", "preempt"):
            due_of.pop(name, None)
            if event == "depart":
                yield _event(t, "patch", ns, name, sub="status",
                             req={"status": {"phase": "Succeeded"}}, seq=seq,
                             user="system:node")
                seq += 1
            yield _event(t, "delete", ns, name, req={"kind": "DeleteOptions",
                                                     "apiVersion": "v1",
                                                     "gracePeriodSeconds": 0}, seq=seq)
        else:
            continue
        if noise and seq % noise == 0:
            seq += 1
            yield json.dumps({
                "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
                "auditID": f"00000000-0000-4000-9000-{seq:012x}", "stage": "ResponseComplete",
                "requestURI": "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n",
                "verb": "update", "user": {"username": "system:node:n"},
                "objectRef": {"resource": "leases", "namespace": "kube-node-lease", "name": "n",
                              "apiGroup": "coordination.k8s.io", "apiVersion": "v1"},
                "responseStatus": {"metadata": {}, "code": 200},
                "requestReceivedTimestamp": format_time(t), "stageTimestamp": format_time(t)},
                separators=(",", ":"))
            yield _event(t, "get", ns, name, seq=seq, level="Metadata")
            yield _event(t, "create", ns, name + "-dup", req={"kind": "Pod"}, code=409, seq=seq)
    yield from inits_done(None)


#: DefaultPreemption's text when the dry run found no candidate (a node histogram);
#: its other texts (policy Never, a terminating victim, an error) name no count
_PREEMPTION_FOUND_NONE = "preemption: 0/"


def _preemptor(message: Any) -> str | None:
    """The preemptor a ``preempt`` row's message names (``Preempted by pod <p> on
    node <n>``, the events table's contract, docs/DESIGN.md)."""
    if not isinstance(message, str) or not message.startswith("Preempted by pod "):
        return None
    return message[len("Preempted by pod "):].rpartition(" on node ")[0] or None


def _nominations(due: tuple, nominated: dict[str, str], pods: Mapping[str, Pod]
                 ) -> Iterator[tuple]:
    """The nomination rows of a preemption ``due`` = (time, preemptor, node), after
    its victims: the lower-priority pods nominated to that node lose theirs (a
    status patch each, as kube-scheduler's ``prepareCandidate``), then the
    preemptor's is set (a ``bind`` row clears it later)."""
    t, who, node = due
    p = pods.get(who)
    prio = p.priority if p is not None else 0
    for other, n in list(nominated.items()):
        q = pods.get(other)
        if n == node and other != who and q is not None and q.priority < prio:
            del nominated[other]
            yield t, other, "nominate", None, None, None
    if nominated.get(who) != node:
        nominated[who] = node
        yield t, who, "nominate", node, None, None


def write_lines(lines: Iterable[str], path: str | os.PathLike[str]) -> int:
    """Write audit lines to ``path`` (gzip'd when it ends in ``.gz``); returns the count."""
    name = os.fspath(path)
    n = 0
    opener = gzip.open if name.endswith(".gz") else open
    with opener(name, "wt", encoding="utf-8") as fh:      # type: ignore[operator]
        assert isinstance(fh, io.TextIOBase)
        for line in lines:
            fh.write(line)
            fh.write("\n")
            n += 1
    return n


def run_audit_lines(run_dir: str | os.PathLike[str], trace: str | os.PathLike[str],
                    start: float = 1.7e9, noise: int = 0,
                    moved: Mapping[str, tuple] | None = None) -> Iterator[str]:
    """The audit lines of a ``hamisim run`` results folder (its ``events`` table,
    its ``summary.json``'s mode: init containers finish in a replay run only,
    and its ``pods`` table's ``mig_allocations`` for the binds of pods on MIG
    cards: a pod bound more than once gets its last instances every time)
    whose trace is ``trace`` (:func:`audit_lines`), with kube-scheduler's
    nominations derived from it (the engine records none): a ``preempt`` row's
    preemptor (its message) is nominated to the victims' node after them, the
    lower-priority pods nominated there cleared; a nominated pod's
    ``unschedulable`` row whose preemption found no candidate
    (``preemption: 0/N nodes ...``) clears its own, as does one that was
    nominated again with no ``preempt`` row saying where (kube-scheduler 1.35+
    skips victims already terminating: the node is not in the events). ``moved``: pod -> (node,
    devices) or (node, devices, mig_allocations) written instead of the run's
    placement (to test a validation)."""
    from hamisim.io.outputs import read_table
    from hamisim.io.traces import read_trace
    folder = Path(run_dir)
    table = next((folder / f"events.{ext}" for ext in ("parquet", "csv")
                  if (folder / f"events.{ext}").exists()), None)
    if table is None:
        raise InputError(os.fspath(folder), None, "no events table (events.parquet or .csv)")
    summary = folder / "summary.json"
    if summary.exists() and json.loads(summary.read_text()).get(
            "inputs", {}).get("events", "all") != "all":
        # the attempts' order decides the nominations: a row per attempt is needed
        raise InputError(os.fspath(table), None, "the run's failed attempts are aggregated "
                         "(one row per pod and message); run it with --events all for an "
                         "audit log attempt by attempt")
    df = read_table(table)
    pods = {tp.pod.name: tp.pod for tp in read_trace(os.fspath(trace)).pods}
    moved = moved or {}
    migs: dict[str, str] = {}
    ptable = next((folder / f"pods.{ext}" for ext in ("parquet", "csv")
                   if (folder / f"pods.{ext}").exists()), None)
    if ptable is not None:
        pt = read_table(ptable)
        if "mig_allocations" in pt.columns:
            migs = {n: m for n, m in zip(pt["pod"].tolist(), pt["mig_allocations"].tolist())
                    if isinstance(m, str) and m}

    messages = df["message"].tolist() if "message" in df.columns else [None] * len(df)

    def rows():
        nominated: dict[str, str] = {}          # preemptor -> its nominated node
        due: tuple | None = None                # a nomination to write after its victims
        unknown: tuple | None = None            # (time, pod) nominated, the node not yet seen
        for t, name, ev, node, dev, msg in zip(df["time"].tolist(), df["pod"].tolist(),
                                               df["event"].tolist(), df["node"].tolist(),
                                               df["devices"].tolist(), messages):
            node = node if isinstance(node, str) else None
            dev = dev if isinstance(dev, str) else None
            by = _preemptor(msg) if ev == "preempt" else None
            if due is not None and (by is None or (t, by) != due[:2]):
                yield from _nominations(due, nominated, pods)
                due = None
            if unknown is not None and (by is None or (t, by) != unknown):
                # nominated again, but no victim row says where (kube-scheduler
                # 1.35+ skips victims already terminating): not written, so the
                # old node is not kept either
                if nominated.pop(unknown[1], None) is not None:
                    yield unknown[0], unknown[1], "nominate", None, None, None
            unknown = None
            if by is not None and node is not None and due is None:
                due = (t, by, node)
            if ev in ("bind", "depart", "delete", "abandon", "preempt", "rejected"):
                nominated.pop(name, None)       # a bound or gone pod is nominated no more
            elif ev == "unschedulable" and name in nominated and isinstance(msg, str) \
                    and _PREEMPTION_FOUND_NONE in msg:
                # DefaultPreemption found no candidate for a nominated pod: kube-scheduler
                # overrides its nomination with "" (a status patch); a refusal to try
                # (preemptionPolicy Never, a terminating victim, an error) keeps it
                del nominated[name]
                yield t, name, "nominate", None, None, None
            elif ev == "unschedulable" and name in nominated and isinstance(msg, str) \
                    and "preemption: " not in msg:
                unknown = (t, name)             # PostFilter nominated it (no text)
            mig = migs.get(name) if ev == "bind" else None
            if ev == "bind" and name in moved:
                node, dev, *rest = moved[name]
                mig = rest[0] if rest else None
            yield t, name, ev, node, dev, mig
        if due is not None:
            yield from _nominations(due, nominated, pods)
        if unknown is not None and nominated.pop(unknown[1], None) is not None:
            yield unknown[0], unknown[1], "nominate", None, None, None

    # only a replay run's engine shrinks a pod once its init containers are done
    mode = None
    if (folder / "summary.json").exists():
        try:
            mode = (json.loads((folder / "summary.json").read_text()).get("inputs") or {}
                    ).get("mode")
        except (ValueError, AttributeError):
            mode = None
    return audit_lines(pods, rows(), start=start, noise=noise,
                       init_done=mode in (None, "replay"))
