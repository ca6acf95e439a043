"""Pods described by trace-column keys (scenario ``create`` steps, trace rows).

:func:`pod_from_document` turns one mapping into a :class:`hamisim.pods.Pod`.
Its keys are the trace column names of DESIGN §4.2:

* ``name`` (required, non-empty string);
* single-container shorthand ``gpu``, ``gpumem``, ``gpumem_percentage``,
  ``gpucores`` (integers >= 0, as Kubernetes rejects negative quantities;
  stored verbatim as container *limits* under ``nvidia.com/gpu``,
  ``nvidia.com/gpumem``, ``nvidia.com/gpumem-percentage``,
  ``nvidia.com/gpucores``; upper bounds are the webhook's and scheduler's
  business, e.g. a percentage of 150 loads fine and is rejected by
  :func:`hamisim.pods.admit`). ``gpumem`` is MiB; a Kubernetes byte quantity
  such as ``16Gi`` is accepted and converted (16384);
* ``cpu_milli`` (milli-CPU), ``memory_mib`` (MiB, or a quantity such as
  ``8Gi``): pod requests, >= 0; ``priority`` (int32);
* annotation columns (see :data:`TRACE_COLUMN_ANNOTATIONS`): strings;
  ``numa_bind`` is a boolean: ``true``/``false``, ``1``/``0`` or
  ``yes``/``no`` in any case (written ``"true"`` / ``"false"``), anything
  else is an error; the four ``use_``/``nouse_`` columns may also be lists
  of strings (joined with ``,``);
* ``annotations``: a mapping of real annotation names to string values;
  naming the same annotation here and through its column is an error;
* ``containers`` / ``init_containers``: lists of ``{gpu, gpumem,
  gpumem_percentage, gpucores, limits, requests}`` where ``limits`` and
  ``requests`` map the four real resource names to integers, and ``cpu`` /
  ``memory`` to Kubernetes quantities (``500m``, ``2``; ``512Mi``, ``8Gi``:
  memory needs a unit, since a bare number is bytes to Kubernetes but MiB in
  ``memory_mib``); a request defaults to its limit and must not exceed it, as
  the API server has it. An init container may also give ``restart_policy:
  Always`` (a sidecar, ``restartPolicy: Always``). ``containers`` excludes
  the top-level shorthand. Without either, the pod has one container (with no
  limits when no GPU key is given);
* the pod's CPU and memory requests are kube-scheduler's (:func:`hamisim.kube.fit.pod_request`):
  the larger of the app containers' sum (top-level ``cpu_milli`` /
  ``memory_mib``, or the containers' own ``cpu`` / ``memory``, not both) plus
  the sidecars, and each init container on top of the sidecars started before
  it; they stay so for the pod's whole life;
* ``node_selector``, ``tolerations``, ``affinity``, ``preemption_policy``:
  kube-scheduler's constraints, below.

kube-scheduler's constraints of a pod (JSON in a CSV or Parquet cell), in
Kubernetes' own structure and field names; the same functions read the pod
spec fields they mirror for ``hamisim import``:

* ``node_selector`` (``spec.nodeSelector``): a mapping of label names to
  string values;
* ``tolerations`` (``spec.tolerations``): a list of ``{key, operator, value,
  effect, tolerationSeconds}``; ``operator`` ``Equal`` (default) or
  ``Exists``; ``effect`` empty (all), ``NoSchedule``, ``PreferNoSchedule`` or
  ``NoExecute``;
* ``affinity`` (``spec.affinity``): ``{nodeAffinity:
  {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{
  matchExpressions: [{key, operator, values}], matchFields: [...]}]}}}``.
  Operators ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``
  with the API server's value rules; ``matchFields`` takes ``metadata.name``
  with ``In``/``NotIn`` and one value.
  ``preferredDuringSchedulingIgnoredDuringExecution`` is accepted and has no
  effect (HAMi's extender returns the one node it chose, so kube-scheduler's
  scores never decide); ``podAffinity`` / ``podAntiAffinity`` are not
  modelled and rejected;
* ``preemption_policy`` (``spec.preemptionPolicy``): ``PreemptLowerPriority``
  (default) or ``Never``;
* ``termination_grace_period`` (``spec.terminationGracePeriodSeconds``):
  seconds a deleted or preempted running pod keeps its node and cards
  (default 0, not Kubernetes' 30: gone at once);
* ``init_duration``: seconds after binding when the init containers have all
  succeeded (HAMi then keeps the app containers' usage only); absent = never;
* ``namespace`` (``metadata.namespace``, default ``default``): whose
  ResourceQuota (the cluster file's ``quotas``) the pod's cards count against.

Every mistake the API server would refuse is a located error.

Which keys are allowed is a parameter: scenario steps use
:data:`SCENARIO_POD_KEYS`; trace readers pass :data:`TRACE_POD_KEYS`, whose
``arrival`` / ``duration`` / ``deletion`` are accepted here but not read
(the trace reader handles timing itself).
"""
from __future__ import annotations

import re
import warnings
from fractions import Fraction
from typing import Collection, Iterable, Mapping, NamedTuple

from hamisim.devices import FAMILIES, OTHER_THAN_NVIDIA, requested_family
from hamisim.devices.family import int32
from hamisim.devices.kunlun import PLACEABLE_COUNTS
from hamisim.errors import InputWarning
from hamisim.io.documents import INT32_MAX, MAX_SAFE_INT, Doc, Value
from hamisim.kube.filters import selector_problem
from hamisim.kube.fit import pod_request
from hamisim.kube.quantity import cpu_milli as milli_cpu
from hamisim.kube.quantity import memory_mib as mib_of_bytes
from hamisim.kube.quantity import parse_memory_mib
from hamisim.pods import (
    GPU,
    GPUCORES,
    GPUMEM,
    GPUMEM_PERCENTAGE,
    PREEMPTION_POLICIES,
    TOLERATION_OPERATORS,
    Container,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Toleration,
    admission_error,
)

__all__ = [
    "TRACE_COLUMN_ANNOTATIONS", "CONTAINER_COLUMN_RESOURCES", "SCENARIO_POD_KEYS",
    "TRACE_POD_KEYS", "pod_from_document", "container_from_document", "PLACEMENT_KEYS",
    "node_selector_from_value", "tolerations_from_value", "affinity_from_value",
    "preemption_policy_from_value", "grace_period_from_value", "placement_fields",
    "namespace_from_value",
    "placement_json", "warn_core_limits", "warn_no_card_allowed", "GANG_MARKERS",
    "gang_markers", "warn_unmodelled_annotations",
]

#: Trace column -> pod annotation name.
TRACE_COLUMN_ANNOTATIONS: dict[str, str] = {
    "gpu_policy": "hami.io/gpu-scheduler-policy",
    "node_policy": "hami.io/node-scheduler-policy",
    "use_gputype": "nvidia.com/use-gputype",
    "nouse_gputype": "nvidia.com/nouse-gputype",
    "use_gpuuuid": "nvidia.com/use-gpuuuid",
    "nouse_gpuuuid": "nvidia.com/nouse-gpuuuid",
    "numa_bind": "nvidia.com/numa-bind",
    "scoring_weights": "hami.io/device-scoring-weights",
    "vgpu_mode": "nvidia.com/vgpu-mode",
}
#: Trace column -> container resource name.
CONTAINER_COLUMN_RESOURCES: dict[str, str] = {
    "gpu": GPU,
    "gpumem": GPUMEM,
    "gpumem_percentage": GPUMEM_PERCENTAGE,
    "gpucores": GPUCORES,
}
_LIST_COLUMNS = frozenset({"use_gputype", "nouse_gputype", "use_gpuuuid", "nouse_gpuuuid"})
#: the other simulated families' resources (hamisim.devices), by their vendors' names
FAMILY_RESOURCES: dict[str, tuple[str, ...]] = {
    f.word: f.resource_names for f in FAMILIES if f.word != "NVIDIA"}
_RESOURCES = frozenset(CONTAINER_COLUMN_RESOURCES.values()) | frozenset(
    name for names in FAMILY_RESOURCES.values() for name in names)
_RESOURCE_OF_NVIDIA = frozenset(CONTAINER_COLUMN_RESOURCES.values())
_CONTAINER_KEYS = frozenset(CONTAINER_COLUMN_RESOURCES) | {"limits", "requests"}
_INIT_CONTAINER_KEYS = _CONTAINER_KEYS | {"restart_policy"}
#: the resources kube-scheduler's NodeResourcesFit counts, as Kubernetes quantities
_KUBE_RESOURCES = ("cpu", "memory")

#: the pod keys of kube-scheduler's constraints
PLACEMENT_KEYS = ("node_selector", "tolerations", "affinity", "preemption_policy",
                  "termination_grace_period", "init_duration")
_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _string(v: Value, what: str) -> str:
    if v.is_null:
        return ""
    if not isinstance(v.scalar, str) or v.is_mapping or v.is_list:
        raise v.error(f"{what} must be a string (quote numbers and booleans), got "
                      f"{v.describe()}")
    return v.scalar


def node_selector_from_value(v: Value | None) -> dict[str, str]:
    """``node_selector``: label name -> value (strings)."""
    if v is None or v.is_null:
        return {}
    doc = v.as_doc("'node_selector'")
    return {key: _string(item, f"node_selector '{key}'") for key, item in doc.items()}


def tolerations_from_value(v: Value | None) -> tuple[Toleration, ...]:
    """``tolerations``: a list of Kubernetes tolerations."""
    if v is None or v.is_null:
        return ()
    out = []
    for item in v.as_list("'tolerations'"):
        t = item.as_doc("a toleration")
        t.check_keys({"key", "operator", "value", "effect", "tolerationSeconds"},
                     "a toleration")
        key = _string(t.get("key"), "a toleration's 'key'") if "key" in t else ""
        op_v = t.get("operator")
        op = _string(op_v, "a toleration's 'operator'") if op_v is not None else "Equal"
        op = op or "Equal"
        if op not in TOLERATION_OPERATORS:
            raise op_v.error(f"toleration operator must be Equal or Exists, got '{op}'")
        value = _string(t.get("value"), "a toleration's 'value'") if "value" in t else ""
        effect_v = t.get("effect")
        effect = _string(effect_v, "a toleration's 'effect'") if effect_v is not None else ""
        if effect not in _EFFECTS:
            raise effect_v.error(f"toleration effect must be NoSchedule, PreferNoSchedule or "
                                 f"NoExecute (or empty for all), got '{effect}'")
        if op == "Exists" and value:
            raise t.error("a toleration with operator Exists takes no 'value' (the API "
                          "server rejects it)")
        if not key and op != "Exists":
            raise t.error("a toleration without 'key' must use operator Exists (the API "
                          "server rejects it)")
        if "tolerationSeconds" in t:
            t.get("tolerationSeconds").as_int("'tolerationSeconds'")
        out.append(Toleration(key, op, value, effect))
    return tuple(out)


def _requirements(v: Value | None, fields: bool) -> tuple[NodeSelectorRequirement, ...]:
    if v is None or v.is_null:
        return ()
    what = "matchFields" if fields else "matchExpressions"
    out = []
    for item in v.as_list(f"'{what}'"):
        r = item.as_doc(f"a {what} entry")
        r.check_keys({"key", "operator", "values"}, f"a {what} entry")
        key = _string(r.require("key"), f"a {what} 'key'")
        op = _string(r.require("operator"), f"a {what} 'operator'")
        values_v = r.get("values")
        values = () if values_v is None or values_v.is_null else tuple(
            _string(x, f"a {what} value") for x in values_v.as_list("'values'"))
        req = NodeSelectorRequirement(key, op, values)
        problem = selector_problem(req, field=fields)
        if problem is not None:
            raise r.error(f"{what} '{key}': {problem}")
        out.append(req)
    return tuple(out)


def affinity_from_value(v: Value | None) -> tuple[NodeSelectorTerm, ...] | None:
    """``affinity``: the required node-affinity terms of a pod's ``spec.affinity``
    (``None`` when it has none)."""
    if v is None or v.is_null:
        return None
    doc = v.as_doc("'affinity'")
    doc.check_keys({"nodeAffinity", "podAffinity", "podAntiAffinity"}, "'affinity'")
    for key in ("podAffinity", "podAntiAffinity"):
        if key in doc and not doc.get(key).is_null:
            raise doc.error(f"affinity '{key}' (inter-pod affinity) is not modelled by "
                            "hamisim", line=doc.key_line(key))
    node = doc.optional_doc("nodeAffinity")
    if node is None:
        return None
    node.check_keys({_REQUIRED, _PREFERRED}, "'nodeAffinity'")
    required = node.optional_doc(_REQUIRED)
    if required is None:
        return None
    required.check_keys({"nodeSelectorTerms"}, f"'{_REQUIRED}'")
    terms_v = required.require("nodeSelectorTerms")
    items = terms_v.as_list("'nodeSelectorTerms'")
    if not items:
        raise terms_v.error("'nodeSelectorTerms' is empty: the API server requires at "
                            "least one term")
    terms = []
    for item in items:
        t = item.as_doc("a node selector term")
        t.check_keys({"matchExpressions", "matchFields"}, "a node selector term")
        terms.append(NodeSelectorTerm(_requirements(t.get("matchExpressions"), False),
                                      _requirements(t.get("matchFields"), True)))
    return tuple(terms)


def preemption_policy_from_value(v: Value | None) -> str:
    """``preemption_policy``: ``PreemptLowerPriority`` (default) or ``Never``."""
    if v is None or v.is_null:
        return PREEMPTION_POLICIES[0]
    text = _string(v, "'preemption_policy'")
    if text not in PREEMPTION_POLICIES:
        raise v.error(f"'preemption_policy' must be PreemptLowerPriority or Never, got "
                      f"'{text}'")
    return text


def placement_fields(doc: Doc) -> dict:
    """The :class:`~hamisim.pods.Pod` fields of the keys in :data:`PLACEMENT_KEYS`."""
    return {"node_selector": node_selector_from_value(doc.get("node_selector")),
            "tolerations": tolerations_from_value(doc.get("tolerations")),
            "affinity": affinity_from_value(doc.get("affinity")),
            "preemption_policy": preemption_policy_from_value(doc.get("preemption_policy")),
            "termination_grace_period": grace_period_from_value(
                doc.get("termination_grace_period")),
            "init_duration": _init_duration(doc)}


def _init_duration(doc: Doc) -> float | None:
    v = doc.get("init_duration")
    if v is None or v.is_null:
        return None
    x = v.scalar
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x < float("inf"):
        raise v.error(f"'init_duration' must be a number of seconds >= 0, got {v.describe()}")
    return float(x)


def grace_period_from_value(v: Value | None) -> int:
    """``termination_grace_period``: whole seconds >= 0 (0 when absent)."""
    if v is None or v.is_null:
        return 0
    return v.as_int("'termination_grace_period'", min=0)


def placement_json(pod) -> dict:
    """The keys of :data:`PLACEMENT_KEYS` (and ``namespace``) that ``pod`` sets,
    as JSON values in Kubernetes' structure (the inverse of :func:`placement_fields`)."""
    out: dict = {}
    if pod.node_selector:
        out["node_selector"] = dict(pod.node_selector)
    if pod.tolerations:
        out["tolerations"] = [
            {k: v for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value),
                               ("effect", t.effect)) if v}
            for t in pod.tolerations]
    if pod.affinity is not None:
        def reqs(rs):
            return [{"key": r.key, "operator": r.operator, **({"values": list(r.values)}
                                                              if r.values else {})}
                    for r in rs]
        terms = []
        for t in pod.affinity:
            term = {}
            if t.match_expressions:
                term["matchExpressions"] = reqs(t.match_expressions)
            if t.match_fields:
                term["matchFields"] = reqs(t.match_fields)
            terms.append(term)
        out["affinity"] = {"nodeAffinity": {_REQUIRED: {"nodeSelectorTerms": terms}}}
    if pod.preemption_policy != PREEMPTION_POLICIES[0]:
        out["preemption_policy"] = pod.preemption_policy
    if pod.termination_grace_period:
        out["termination_grace_period"] = pod.termination_grace_period
    if pod.init_duration is not None:
        out["init_duration"] = pod.init_duration
    if pod.namespace != "default":
        out["namespace"] = pod.namespace
    return out


SCENARIO_POD_KEYS: frozenset[str] = frozenset(
    {"name", "namespace", "cpu_milli", "memory_mib", "priority", "annotations", "containers",
     "init_containers", *PLACEMENT_KEYS}
    | set(CONTAINER_COLUMN_RESOURCES) | set(TRACE_COLUMN_ANNOTATIONS))
#: trace rows add timing, an optional ``class`` label and the owning ``controller``
#: (read by the trace reader)
TRACE_POD_KEYS: frozenset[str] = SCENARIO_POD_KEYS | {"arrival", "duration", "deletion", "class",
                                                      "controller"}


def pod_from_document(doc: Doc, path: str | None = None, *,
                      allowed_keys: Collection[str] = SCENARIO_POD_KEYS) -> Pod:
    """Build a :class:`Pod` from one located mapping; raises ``InputError``.

    ``path`` is informational (errors use the document's own path).
    """
    doc.check_keys(allowed_keys, "a pod")
    name = doc.require_str("name")
    doc = doc.with_context(f"{doc.context}: pod '{name}'" if doc.context else f"pod '{name}'")

    shorthand = [k for k in CONTAINER_COLUMN_RESOURCES if k in doc]
    containers_v = doc.get("containers")
    if containers_v is not None and shorthand:
        raise doc.error(f"'{shorthand[0]}' at the top level and 'containers' are mutually "
                        "exclusive (put the GPU keys inside each container)",
                        line=doc.key_line(shorthand[0]))
    if containers_v is not None:
        items = containers_v.as_list("'containers'")
        if not items:
            raise containers_v.error("'containers' is empty: a pod needs at least one container")
        app = [_container_parts(v, f"container {i}") for i, v in enumerate(items)]
    else:
        limits = {CONTAINER_COLUMN_RESOURCES[k]: _shorthand(doc, k) for k in shorthand}
        app = [_Parts(Container(limits=limits), None, None, False)]
    init_v = doc.optional_list("init_containers") or []
    init = [_container_parts(v, f"init container {i}", init=True) for i, v in enumerate(init_v)]
    placement = placement_fields(doc)
    if placement["init_duration"] is not None and any(p.sidecar for p in init):
        raise doc.error("'init_duration' with a sidecar (an init container with restart_policy "
                        "Always): it runs as long as the pod, so HAMi v2.10.0 never sees every "
                        "init container succeed and keeps their usage",
                        line=doc.key_line("init_duration"))

    return Pod(
        name=name,
        containers=tuple(p.container for p in app),
        init_containers=tuple(p.container for p in init),
        annotations=_annotations(doc),
        cpu_milli=_pod_request(doc, "cpu_milli", app, init),
        memory_mib=_pod_request(doc, "memory_mib", app, init),
        priority=doc.optional_int("priority", 0, min=-2**31, max=INT32_MAX),
        namespace=namespace_from_value(doc.get("namespace")),
        **placement,
    )


class _Parts(NamedTuple):
    """One container as read: HAMi's resources, kube-scheduler's CPU (cores) and
    memory (bytes) requests (``None`` when not given), and whether it is a sidecar."""

    container: Container
    cpu: Fraction | None
    memory: Fraction | None
    sidecar: bool


def _pod_request(doc: Doc, key: str, app: list[_Parts], init: list[_Parts]) -> int:
    """The pod's ``cpu_milli`` or ``memory_mib`` as kube-scheduler counts it: the
    top-level key is the app containers' total, unless they give their own."""
    field = "cpu" if key == "cpu_milli" else "memory"
    unit = Fraction(1, 1000) if key == "cpu_milli" else Fraction(2**20)
    own = [getattr(p, field) for p in app]
    if key in doc and any(x is not None for x in own):
        raise doc.error(f"'{key}' at the top level and the containers' own '{field}' requests "
                        f"give the app containers' {field} twice (give one of them)",
                        line=doc.key_line(key))
    top = doc.optional_int(key, 0, min=0) if key == "cpu_milli" else _optional_mib(doc, key)
    apps = [x or 0 for x in own] if key not in doc else [top * unit]
    if not init:
        total = sum(apps, Fraction(0))
    else:
        total = pod_request(apps, [(getattr(p, field) or 0, p.sidecar) for p in init])
    value = milli_cpu(total) if key == "cpu_milli" else mib_of_bytes(total)
    if value > (INT32_MAX if key == "memory_mib" else MAX_SAFE_INT):
        raise doc.error(f"the pod's {field} request is too large: {value} "
                        f"{'milli-CPU' if key == 'cpu_milli' else 'MiB'}")
    return value


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def namespace_from_value(v: Value | None) -> str:
    """``namespace`` (``metadata.namespace``): a DNS-1123 label, ``default`` when absent."""
    if v is None or v.is_null:
        return "default"
    text = _string(v, "'namespace'")
    if len(text) > 63 or not _DNS_LABEL.fullmatch(text):
        raise v.error(f"'namespace' must be a lowercase DNS label (a-z, 0-9, '-', at most 63 "
                      f"characters, starting and ending with a letter or digit), got {text!r}")
    return text


def container_from_document(value: Value, what: str = "container") -> Container:
    """One ``containers`` item: shorthand GPU keys and/or ``limits`` / ``requests``
    (their ``cpu`` and ``memory`` are checked here and counted by :func:`pod_from_document`)."""
    return _container_parts(value, what).container


def _container_parts(value: Value, what: str, *, init: bool = False) -> _Parts:
    doc = value.as_doc(what)
    doc = doc.with_context(f"{doc.context}: {what}" if doc.context else what)
    doc.check_keys(_INIT_CONTAINER_KEYS if init else _CONTAINER_KEYS,
                   "an init container" if init else "a container")
    limits, kube_limits = _resources(doc, "limits")
    for key, resource in CONTAINER_COLUMN_RESOURCES.items():
        if key in doc:
            if resource in limits:
                raise doc.error(f"'{key}' and limits '{resource}' give the same resource twice",
                                line=doc.key_line(key))
            limits[resource] = _shorthand(doc, key)
    requests, kube_requests = _resources(doc, "requests")
    kube = []
    for name in _KUBE_RESOURCES:
        # the API server defaults a request to its limit and refuses one above it
        limit, request = kube_limits.get(name), kube_requests.get(name)
        if limit is not None and request is not None and request[0] > limit[0]:
            raise request[1].error(f"requests '{name}' {request[1].scalar} is more than its "
                                   f"limit {limit[1].scalar} (the API server rejects it)")
        kube.append((request or limit or (None,))[0])
    sidecar = False
    if "restart_policy" in doc:
        v = doc.get("restart_policy")
        if v.scalar != "Always":
            raise v.error("an init container's 'restart_policy' can only be Always (a "
                          f"sidecar; leave it out for a plain init container), got {v.describe()}")
        sidecar = True
    asked = [word for word, names in (("NVIDIA", tuple(_RESOURCE_OF_NVIDIA)),
                                      *FAMILY_RESOURCES.items())
             if any(n in limits or n in requests for n in names)]
    if len(asked) > 1:
        raise doc.error(f"{what} asks for cards of {' and '.join(asked)}: hamisim models one "
                        "device family per container (put each family's resources in a "
                        "container of its own)")
    return _Parts(Container(limits=limits, requests=requests), kube[0], kube[1], sidecar)


def _shorthand(doc: Doc, key: str) -> int:
    """One of the GPU shorthand keys: a non-negative integer (``gpumem``: MiB or a
    byte quantity)."""
    v = doc.require(key)
    if key == "gpumem":
        return _mib(v, "'gpumem'")
    return _quantity_int(v, f"'{key}'")


def _quantity_int(v: Value, what: str) -> int:
    """A resource amount: an integer, never negative (the API server rejects it)."""
    n = v.as_int(what)
    if n < 0:
        raise v.error(f"{what} must not be negative (Kubernetes rejects negative resource "
                      f"quantities), got {n}")
    return n


def _optional_mib(doc: Doc, key: str) -> int:
    v = doc.get(key)
    return 0 if v is None or v.is_null else _mib(v, f"'{key}'")


def _mib(v: Value, what: str) -> int:
    """MiB: an integer, or a Kubernetes byte quantity with a memory suffix
    (``16Gi`` -> 16384, ``16G`` -> 15259, rounded up as a request)."""
    if isinstance(v.scalar, str) and not v.is_mapping and not v.is_list:
        try:
            mib = parse_memory_mib(v.scalar)
        except ValueError as exc:
            raise v.error(f"{what}: {exc}") from None
        if mib is None:
            raise v.error(f"{what} must be MiB as an integer or a byte quantity such as "
                          f"16Gi, got {v.scalar!r}")
        if mib > INT32_MAX:
            raise v.error(f"{what} is too large: {v.scalar} is {mib} MiB")
        return mib
    return _quantity_int(v, what)


def _resources(doc: Doc, key: str) -> tuple[dict[str, int], dict[str, tuple[Fraction, Value]]]:
    """``limits`` or ``requests``: HAMi's resources (integers), and kube-scheduler's
    ``cpu`` (cores) and ``memory`` (bytes) as exact quantities with their values."""
    sub = doc.optional_doc(key)
    if sub is None:
        return {}, {}
    out: dict[str, int] = {}
    kube: dict[str, tuple[Fraction, Value]] = {}
    for name, v in sub.items():
        if name in _KUBE_RESOURCES:
            kube[name] = (_kube_quantity(v, f"'{key}' '{name}'", name), v)
            continue
        if name not in _RESOURCES:
            raise sub.error(f"unknown resource '{name}' in '{key}' (hamisim models "
                            f"{', '.join(sorted(_RESOURCES | set(_KUBE_RESOURCES)))})",
                            line=sub.key_line(name))
        out[name] = _quantity_int(v, f"'{key}' '{name}'")
    return out, kube


def _kube_quantity(v: Value, what: str, name: str) -> Fraction:
    """A container's ``cpu`` or ``memory`` as Kubernetes reads it; memory must
    carry a unit (a bare number would be bytes here and MiB in ``memory_mib``)."""
    if name == "memory":
        text = v.scalar if isinstance(v.scalar, str) else None
        try:
            suffixed = text is not None and parse_memory_mib(text) is not None
        except ValueError as exc:
            raise v.error(f"{what}: {exc}") from None
        if not suffixed:
            raise v.error(f"{what} needs a unit, e.g. '512Mi' or '8Gi' (a bare number is bytes "
                          f"to Kubernetes but MiB in 'memory_mib'), got {v.describe()}")
    return v.as_quantity(what)


def _annotations(doc: Doc) -> Mapping[str, str]:
    out: dict[str, str] = {}
    given = doc.optional_doc("annotations")
    if given is not None:
        for name, v in given.items():
            if not isinstance(v.scalar, str):
                hint = ""
                if isinstance(v.scalar, (bool, int, float)):
                    text = str(v.scalar).lower() if isinstance(v.scalar, bool) else str(v.scalar)
                    hint = f" (quote it: '{text}')"
                raise v.error(f"annotation '{name}' must be a string, got {v.describe()}{hint}")
            out[name] = v.scalar
    for column, annotation in TRACE_COLUMN_ANNOTATIONS.items():
        v = doc.get(column)
        if v is None or v.is_null:
            continue
        if annotation in out:
            raise doc.error(f"'{column}' and annotations '{annotation}' set the same "
                            "annotation twice", line=doc.key_line(column))
        if column == "numa_bind":
            out[annotation] = "true" if _boolean(v, "'numa_bind'") else "false"
        elif column in _LIST_COLUMNS and v.is_list:
            out[annotation] = ",".join(i.as_str(f"a '{column}' entry") for i in v.as_list(column))
        else:
            out[annotation] = v.as_str(f"'{column}'")
    return out


_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})


def _boolean(v: Value, what: str) -> bool:
    """A boolean column: a YAML/JSON boolean, 1/0, or true/false/1/0/yes/no in
    any case; anything else is an error (never a silent false)."""
    data = v.scalar
    if isinstance(data, bool):
        return data
    if isinstance(data, int) and data in (0, 1):
        return bool(data)
    if isinstance(data, str) and not v.is_mapping and not v.is_list:
        word = data.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise v.error(f"{what} must be true/false, 1/0 or yes/no, got {v.describe()}")


def warn_core_limits(pods: Iterable[tuple[str | None, Pod]]) -> None:
    """Warn about a pod HAMi's webhook refuses (an Ascend memory no template
    holds, a 910C count of 3, ...), about a card's cores above 100 (``gpucores``,
    ``hygon.com/dcucores``, ...), about requests another family's webhook drops, and about an Iluvatar
    ``vMem`` that reads as MiB, once per distinct value (at its first
    ``where``); ``pods`` yields ``(where, pod)``.

    Such a value is valid, and HAMi's Fit charges cores above 100 as 100 (a
    whole card's cores, sticky for the rest of the request): the pod is
    simulated that way, but the number written probably meant something else
    (a share of several cards, or a milli-unit)."""
    seen: set[tuple[str, object]] = set()
    # (AMD's webhook refuses a percentage above 100 instead: the run says so)
    core_names = (GPUCORES, *(f.cores_name for f in OTHER_THAN_NVIDIA
                               if f.cores_name and not f.cores_as_cus))
    for where, pod in pods:
        refused = admission_error(pod)
        if refused is not None and ("refused", refused) not in seen:
            # valid input, and HAMi's webhook answers the pod's creation with an
            # error: it never exists (the run counts it as refused)
            seen.add(("refused", refused))
            warnings.warn(InputWarning(where, (
                f"pod '{pod.name}': HAMi's admission webhook refuses to create it "
                f"({refused.split(': ', 1)[-1]}); the run counts it as refused")),
                stacklevel=2)
        for c in (*pod.init_containers, *pod.containers):
            asked = requested_family(c)
            for name in core_names:
                cores = c.value(name)
                if cores is None or cores <= 100 or (name, cores) in seen:
                    continue
                if name != GPUCORES and asked is not None and asked[1] is None:
                    continue            # dropped: the warning below says so
                seen.add((name, cores))
                short = "gpucores" if name == GPUCORES else name
                read = int32(cores)     # every family without a range check takes int32
                if read == cores:
                    text = (f"is more than one card's 100 percent: HAMi charges it as 100 "
                            f"on every card ({short} is per card)")
                elif read > 100:
                    text = (f"leaves int32: HAMi reads it as {read}, more than one card's "
                            f"100 percent, and charges 100 on every card")
                elif read >= 0:
                    text = f"leaves int32: HAMi reads it as {read} percent of each card"
                else:
                    text = (f"leaves int32: HAMi reads it as {read}, asks no cores and "
                            "books none (its shrink after the init containers books "
                            f"{read} on the card)")
                warnings.warn(InputWarning(where, f"pod '{pod.name}': {short} {cores} {text}"),
                              stacklevel=2)
            if asked is None:
                continue
            fam, fields = asked
            if fields is None:
                # the family's request generation drops a request it cannot
                # read: the container then asks no card at all, silently in HAMi
                values = tuple((k, c.value(k)) for k in fam.resource_names
                               if c.value(k) is not None)
                if ("dropped", values) in seen:
                    continue
                seen.add(("dropped", values))
                shown = ", ".join(f"{k} {v}" for k, v in values)
                warnings.warn(InputWarning(where, (
                    f"pod '{pod.name}': {shown}: HAMi's {fam.vendor} request generation drops "
                    "this request (a count of 0, or a value beyond its range such as bytes "
                    f"for MiB), so the container asks for no {fam.word} and the pod is placed "
                    "without one")), stacklevel=2)
                continue
            if fam.wings and fields[0] not in PLACEABLE_COUNTS \
                    and ("wings", fam.word, fields[0]) not in seen:
                # valid, and HAMi's graghSelect never chooses so many cards
                seen.add(("wings", fam.word, fields[0]))
                warnings.warn(InputWarning(where, (
                    f"pod '{pod.name}': {fam.count_name} {fields[0]}: HAMi's Kunlunxin "
                    "topology (graghSelect) places 1, 2, 4 or 8 cards only, so this pod never "
                    "fits (NumaNotFit on every node)")), stacklevel=2)
            mem = c.value(fam.memory_name) if fam.memory_name else None
            if (fam.memory_unit_mib > 1 and mem is not None
                    and mem * fam.memory_unit_mib > _LARGEST_CARD_MIB
                    and ("unit", fam.memory_name, mem) not in seen):
                seen.add(("unit", fam.memory_name, mem))
                warnings.warn(InputWarning(where, (
                    f"pod '{pod.name}': {fam.memory_name} {mem} counts {fam.memory_unit_mib} "
                    f"MiB units, so it asks {mem * fam.memory_unit_mib // 1024} GiB, more than "
                    f"any card has; for {mem} MiB write {-(-mem // fam.memory_unit_mib)}")),
                    stacklevel=2)


#: more memory than any card of a family with a memory unit has (MiB): a
#: value above it was probably written in MiB
_LARGEST_CARD_MIB = 256 * 1024


#: the pod annotations that choose cards by type or UUID (HAMi's Fit, step 2)
_CARD_FILTERS = tuple(TRACE_COLUMN_ANNOTATIONS[c] for c in ("use_gputype", "nouse_gputype",
                                                               "use_gpuuuid", "nouse_gpuuuid"))


def warn_no_card_allowed(pods: Iterable[tuple[str | None, Pod]], cards) -> None:
    """Warn about pods asking for cards whose ``use-``/``nouse-gputype`` and
    ``use-``/``nouse-gpuuuid`` annotations leave them no card of the cluster (a
    typo in a type or UUID, e.g. ``A10O``): valid, and HAMi then offers the pod no
    card, so it never binds. Once per distinct set of filters, at its first
    ``where``; ``pods`` yields ``(where, pod)``, ``cards`` the cluster's cards."""
    from hamisim.hami.reference import type_allowed, uuid_allowed
    cards = list(cards)
    types = sorted({c.type for c in cards})
    seen: set[tuple] = set()
    for where, pod in pods:
        ann = pod.annotations or {}
        key = tuple(ann.get(a) for a in _CARD_FILTERS)
        if key in seen or not any(key):
            continue
        seen.add(key)
        if not any((c.value(GPU) or 0) > 0 for c in (*pod.init_containers, *pod.containers)):
            continue
        allowed = [t for t in types if type_allowed(ann, t)]
        if allowed and (key[2:] == (None, None) or any(   # the UUID filters: card by card
                type_allowed(ann, c.type) and uuid_allowed(ann, c.id) for c in cards)):
            continue
        given = ", ".join(f"{a} {v!r}" for a, v in zip(_CARD_FILTERS, key) if v is not None)
        warnings.warn(InputWarning(where, (
            f"pod '{pod.name}': {given} leaves it no card of the cluster, so HAMi never "
            f"binds it (card types: {', '.join(types) or 'none'}; types match as "
            "case-insensitive substrings, UUIDs exactly)")), stacklevel=2)


#: Pod annotations (or labels) that put a pod in a gang, a group scheduled all or
#: nothing by another scheduler or plugin, and whose that is. hamisim accepts them
#: and does not model gangs: kube-scheduler and HAMi place pods one by one. HAMi
#: v2.10.0 itself reads only Coscheduling's label (``util.PodGroupLabel``, and
#: ``spec.schedulingGroup``), to retry a contended node lock for a gang member,
#: which a simulation's one-at-a-time decisions never meet.
GANG_MARKERS: dict[str, str] = {
    "scheduling.k8s.io/group-name": "Volcano's PodGroup",
    "scheduling.volcano.sh/group-name": "Volcano's PodGroup",
    "scheduling.x-k8s.io/pod-group": "scheduler-plugins Coscheduling's PodGroup",
    "pod-group.scheduling.sigs.k8s.io": "scheduler-plugins Coscheduling's PodGroup (its "
                                        "older name)",
    "pod-group.scheduling.sigs.k8s.io/name": "scheduler-plugins Coscheduling's PodGroup (its "
                                             "older name)",
    "yunikorn.apache.org/task-group-name": "YuniKorn's task group",
    "kueue.x-k8s.io/pod-group-name": "Kueue's pod group",
}


def gang_markers(names: Iterable[str]) -> list[str]:
    """The names among ``names`` (annotation or label keys) that are :data:`GANG_MARKERS`."""
    return [n for n in names if n in GANG_MARKERS]


def warn_unmodelled_annotations(pods: Iterable[tuple[str | None, Mapping[str, str]]]) -> None:
    """Warn about annotations of features hamisim does not model (gang scheduling:
    :data:`GANG_MARKERS`), once per annotation name at its first ``where``;
    ``pods`` yields ``(where, annotations)``. The pods are simulated as
    kube-scheduler and HAMi place them, one by one."""
    seen: set[str] = set()
    for where, annotations in pods:
        if not annotations:
            continue
        for name in gang_markers(annotations):
            if name in seen:
                continue
            seen.add(name)
            warnings.warn(InputWarning(where, (
                f"annotation {name}={annotations[name]!r} ({GANG_MARKERS[name]}, gang "
                "scheduling) is accepted and not modelled: pods are scheduled one by one, "
                "so a gang's pods bind as each fits, none waiting for the others")),
                stacklevel=2)
