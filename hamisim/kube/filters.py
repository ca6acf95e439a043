"""kube-scheduler's node filters that run before HAMi's extender.

kube-scheduler runs its Filter plugins on a node in a fixed order and stops at
the first that rejects it (``RunFilterPlugins``); the ones hamisim models, in
that order (kube-scheduler v1.32, the version modelled; the strings are the
same from v1.31 to v1.34):

1. **NodeUnschedulable**: a node with ``spec.unschedulable`` (``kubectl
   cordon``) unless the pod tolerates ``node.kubernetes.io/unschedulable:NoSchedule``;
2. **TaintToleration**: the first ``NoSchedule`` / ``NoExecute`` taint, in the
   node's order, that no toleration of the pod tolerates;
3. **NodeAffinity**: ``spec.nodeSelector`` (every label present and equal) and
   required node affinity (terms ORed, requirements ANDed);
4. NodeResourcesFit (CPU and memory, :mod:`hamisim.kube.fit`).

The first three only depend on the pod's spec and the node, never on what runs
there, and reject with ``UnschedulableAndUnresolvable``: preemption does not
try such nodes (:mod:`hamisim.kube.preemption`). :func:`static_reasons` gives
their verdict for every node at once, so a scheduler can compute it once per
pod shape.
"""
from __future__ import annotations

from typing import Sequence

from hamisim.cluster import Node, Taint
from hamisim.pods import NodeSelectorRequirement, NodeSelectorTerm, Pod, Toleration

__all__ = [
    "UNSCHEDULABLE", "AFFINITY_MISMATCH", "UNSCHEDULABLE_TAINT_KEY", "taint_reason",
    "tolerates", "node_unschedulable", "taint_toleration", "node_affinity",
    "static_reason", "static_reasons", "is_unresolvable", "requirement_matches",
    "selector_problem", "UNTOLERATED_TAINTS", "kube_minor", "hides_taints",
]

#: NodeUnschedulable's reason (``ErrReasonUnschedulable``).
UNSCHEDULABLE = "node(s) were unschedulable"
#: NodeAffinity's reason for a nodeSelector or required-affinity mismatch.
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
#: the taint a cordoned node stands for in NodeUnschedulable's toleration check
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
_TAINT_PREFIX = "node(s) had untolerated taint {"
#: taint effects the TaintToleration filter reads (PreferNoSchedule only scores)
_FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


#: TaintToleration's reason from kube-scheduler 1.35 (and late 1.34 patches),
#: which no longer shows taint keys and values in pod statuses
UNTOLERATED_TAINTS = "node(s) had untolerated taint(s)"


def taint_reason(taint: Taint, hidden: bool = False) -> str:
    """TaintToleration's reason: key and value, never the effect
    (``node(s) had untolerated taint {nvidia.com/gpu: }`` for an empty value),
    or with ``hidden`` (kube-scheduler 1.35+) :data:`UNTOLERATED_TAINTS`."""
    if hidden:
        return UNTOLERATED_TAINTS
    return f"{_TAINT_PREFIX}{taint.key}: {taint.value}}}"


def kube_minor(version: str) -> int:
    """The minor release of a ``1.N`` kube-scheduler version."""
    return int(version.split(".")[1])


def hides_taints(version: str) -> bool:
    """Whether kube-scheduler ``version`` writes :data:`UNTOLERATED_TAINTS`."""
    return kube_minor(version) >= 35


def is_unresolvable(reason: str) -> bool:
    """Whether ``reason`` comes from one of this module's filters (status
    ``UnschedulableAndUnresolvable``: preemption cannot help on that node)."""
    return reason == UNSCHEDULABLE or reason == AFFINITY_MISMATCH or \
        reason.startswith(_TAINT_PREFIX) or reason == UNTOLERATED_TAINTS


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint``: an empty effect or key matches
    all; ``Exists`` ignores the value, ``Equal`` (or empty) compares it exactly."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def _tolerated(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


_CORDON_TAINT = Taint(UNSCHEDULABLE_TAINT_KEY, "", "NoSchedule")


def node_unschedulable(node: Node, pod: Pod) -> str | None:
    """NodeUnschedulable: reads ``spec.unschedulable`` only (not the taint the
    node controller also adds to a cordoned node)."""
    if node.unschedulable and not _tolerated(pod.tolerations, _CORDON_TAINT):
        return UNSCHEDULABLE
    return None


def taint_toleration(node: Node, pod: Pod, hidden: bool = False) -> str | None:
    """TaintToleration: the first untolerated NoSchedule/NoExecute taint
    (``hidden``: kube-scheduler 1.35's text without it)."""
    for taint in node.taints:
        if taint.effect in _FILTERED_EFFECTS and not _tolerated(pod.tolerations, taint):
            return taint_reason(taint, hidden)
    return None


def _int64(text: str) -> int | None:
    # Go's strconv.ParseInt(s, 10, 64): optional sign, decimal digits, no spaces
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    v = int(text)
    return v if -2**63 <= v < 2**63 else None


def requirement_matches(req: NodeSelectorRequirement, labels: dict[str, str]) -> bool:
    """One label requirement against a node's labels (``labels.Requirement.Matches``)."""
    op = req.operator
    present = req.key in labels
    if op == "In":
        return present and labels[req.key] in req.values
    if op == "NotIn":
        return not present or labels[req.key] not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(req.values) != 1:
            return False
        have, want = _int64(labels[req.key]), _int64(req.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False                      # an empty term selects nothing
    if not all(requirement_matches(r, node.labels) for r in term.match_expressions):
        return False
    fields = {"metadata.name": node.name}
    return all(requirement_matches(r, fields) for r in term.match_fields)


def node_affinity(node: Node, pod: Pod) -> str | None:
    """NodeAffinity: nodeSelector and required node affinity must both match."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return AFFINITY_MISMATCH
    if pod.affinity is not None and not any(_term_matches(t, node) for t in pod.affinity):
        return AFFINITY_MISMATCH
    return None


def static_reason(node: Node, pod: Pod, hide_taints: bool = False) -> str | None:
    """The first of NodeUnschedulable, TaintToleration, NodeAffinity to reject
    ``node`` for ``pod`` (its reason), or ``None`` when all three pass."""
    return (node_unschedulable(node, pod) or taint_toleration(node, pod, hide_taints)
            or node_affinity(node, pod))


def static_reasons(nodes: Sequence[Node], pod: Pod, hide_taints: bool = False
                   ) -> list[str | None] | None:
    """:func:`static_reason` for every node, or ``None`` when no node can be
    rejected (no taints, cordons, selector or affinity anywhere in play)."""
    if not pod.constrained and not any(n.unschedulable or n.taints for n in nodes):
        return None
    return [static_reason(n, pod, hide_taints) for n in nodes]


def selector_problem(req: NodeSelectorRequirement, field: bool = False) -> str | None:
    """Why the API server would reject this requirement (``None`` if valid):
    the value-count rules of Kubernetes' node selector validation."""
    if field:
        if req.key != "metadata.name":
            return f"matchFields supports only the key metadata.name, not '{req.key}'"
        if req.operator not in ("In", "NotIn"):
            return f"matchFields supports only the operators In and NotIn, not '{req.operator}'"
        if len(req.values) != 1:
            return "a matchFields requirement must have exactly one value"
        return None
    op = req.operator
    if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
        return (f"unknown operator '{op}' (expected In, NotIn, Exists, DoesNotExist, "
                "Gt or Lt)")
    if op in ("In", "NotIn") and not req.values:
        return f"operator {op} needs at least one value"
    if op in ("Exists", "DoesNotExist") and req.values:
        return f"operator {op} takes no values"
    if op in ("Gt", "Lt"):
        if len(req.values) != 1:
            return f"operator {op} needs exactly one value"
        if _int64(req.values[0]) is None:
            return f"operator {op} needs an integer value, not '{req.values[0]}'"
    return None

