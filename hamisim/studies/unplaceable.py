"""Pods no node of the cluster could hold, even with the cluster empty.

A pod asking 16 GPUs of a cluster whose largest node has 8, a card type the
cluster lacks, more memory than any node has, a selector no node matches or
more than its namespace's quota never binds, whatever the policy. Such pods
still queue, fail and preempt as the real pair makes them (the run is
unchanged), but every output counts them apart: otherwise their waits, which
last to the end of the run, set the pending p99 of every policy alike.

:func:`find_unplaceable` decides it with the run's own filters, not a
re-implementation: one scheduling attempt per distinct request (a trace
template) on a fresh scheduler of the same backend and policies over the
empty cluster, every node examined (``percentage_of_nodes_to_score: 100``).
The attempt's per-node reasons give a short reason per request
(:func:`summarise`). A pod whose own request exceeds its namespace's
ResourceQuota is refused by HAMi's webhook at creation and is unplaceable too.
Pods refused by the webhook for a malformed request (``gpumem-percentage``
outside 0..100) are not: they are ``rejected``, never queued.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Mapping, Sequence

import numpy as np

from hamisim.cluster import Cluster
from hamisim.devices import NVIDIA as _NVIDIA, nvidia_flags
from hamisim.hami.decision import NODE_INSUFFICIENT_DEVICE
from hamisim.hami.reference import USE_TYPE, type_allowed
from hamisim.pods import GPU, Pod, admission_error
from hamisim.shapes import USE_GPUTYPE
from hamisim.sim.backend import make_scheduler

__all__ = ["find_unplaceable", "unplaceable_pods", "summarise"]

#: the name the probing attempts give their pod (any name: the scheduler is fresh)
_PROBE = "hamisim-unplaceable-probe"

#: HAMi's and kube-scheduler's node reasons in words, when every node gives it
_WORDS = {
    "CardInsufficientMemory": "more GPU memory than any card has",
    "CardInsufficientCore": "more GPU cores than any card has",
    "CardUuidMismatch": "a GPU UUID no node has",
    "NumaNotFit": "its GPUs on one NUMA node, which no node offers",
    "CardMigTopologyInfeasible": "a MIG instance no card's profiles and free slices offer",
    "ResourceQuotaNotFit": "more than its namespace's quota on any card",
    "Insufficient cpu": "more CPU than any node has",
    "Insufficient memory": "more memory than any node has",
    "node unregistered": "GPUs, and no node has HAMi cards",
}


def _key(reason: str) -> str:
    """One node reason as a key: a Fit string ``"6/8 CardTypeMismatch, 2/8 X"``
    by its most frequent card reason, anything else as it is."""
    parts = [p.strip() for p in reason.split(", ") if p.strip()]
    if parts and all(p.partition(" ")[0].count("/") == 1 for p in parts):
        best = max(parts, key=lambda p: int(p.partition(" ")[0].split("/")[0]))
        return best.partition(" ")[2]
    return reason


def summarise(pod: Pod, node_reasons: Mapping[str, Sequence[str]], n_nodes: int,
              max_cards: int, cluster_cards: Sequence[Sequence] = ()) -> str:
    """One short reason for an attempt no empty node took: ``asks 16 GPUs, the
    largest node has 8`` when the count alone rules every node out, else the
    type named by ``nvidia.com/use-gputype`` when no card of ``cluster_cards``
    (per node, its cards) has it, else the two most common node reasons and on
    how many nodes (in words first when every node gives the same one), e.g.
    ``Insufficient memory on 5/9 nodes, node(s) had untolerated taint {k: v} on
    4/9 nodes``."""
    asked = max((c.value(GPU) or 0 for c in (*pod.init_containers, *pod.containers)),
                default=0)
    if asked > max_cards:
        return f"asks {asked} GPUs, the largest node has {max_cards}"
    wanted = pod.annotations.get(USE_GPUTYPE)
    if wanted and not any(type_allowed({USE_TYPE: wanted}, c.type)
                          for n in cluster_cards for c in n):
        return f"asks GPU type {wanted}, no card in the cluster has it"
    keys = Counter(_key(r[0]) for r in node_reasons.values() if r)
    if not keys:
        return "no node takes it"
    top = sorted(keys.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{key} on {n}/{n_nodes} nodes" for key, n in top[:2])
    if len(top) > 2:
        text += f" (+{len(top) - 2} other reasons)"
    words = None
    if top[0][1] == n_nodes:
        words = _insufficient_device(asked, cluster_cards) \
            if top[0][0] == NODE_INSUFFICIENT_DEVICE else _WORDS.get(top[0][0])
    return f"asks {words}: {text}" if words else text


def _insufficient_device(asked: int, cluster_cards: Sequence[Sequence]) -> str:
    """``NodeInsufficientDevice`` on every node of a pod asking no more cards than
    the largest node has: HAMi counts only the cards whose type contains its
    vendor's (``NVIDIA``, any case), so the node has fewer of those."""
    counted = max((sum(nvidia_flags(n)) for n in cluster_cards), default=0)
    gpus = f"{asked} GPU{'' if asked == 1 else 's'}"
    if not counted:
        return f"{gpus}, and no card's type contains {_NVIDIA} (HAMi counts no other card)"
    return (f"{gpus}, and no node has more than {counted} cards HAMi counts (their type "
            f"contains {_NVIDIA})")


def find_unplaceable(cluster: Cluster, templates: Sequence[Pod], backend: str = "kernel",
                     shapes: Sequence = (), seed: int = 0,
                     used: Sequence[int] | None = None) -> dict[int, str]:
    """``{template index: reason}`` for the requests no node of ``cluster`` takes
    even empty; templates not listed fit somewhere (or are refused by the
    webhook for a malformed request). ``used`` limits the check to those template
    indices. One attempt per template on a fresh ``backend`` scheduler with the
    cluster's policies and every node examined; a bound probe is deleted again."""
    if not templates:
        return {}
    empty = dataclasses.replace(cluster, scheduler=dataclasses.replace(
        cluster.scheduler, percentage_of_nodes_to_score=100))
    sched = make_scheduler(empty, backend=backend, shapes=shapes, seed=seed)
    max_cards = max((len(n.cards) for n in cluster.nodes), default=0)
    n_nodes = len(cluster.nodes)
    cards = [n.cards for n in cluster.nodes]
    quotas = any(cluster.quota_of(ns) is not None for ns in cluster.quotas)
    out: dict[int, str] = {}
    for t in (range(len(templates)) if used is None else used):
        template = templates[t]
        if admission_error(template):
            continue                    # rejected at creation, never queued
        pod = dataclasses.replace(template, name=_PROBE)
        if quotas and hasattr(sched, "admission_denial"):
            denied = sched.admission_denial(pod)
            if denied:
                out[t] = f"asks more than namespace {pod.namespace}'s ResourceQuota allows"
                continue
        try:
            d = sched.schedule(pod)
        except ValueError as err:       # HAMi's Filter errors on every attempt
            out[t] = f"HAMi's Filter fails: {err}"
            continue
        if d.node is not None:
            sched.delete(_PROBE)
            continue
        out[t] = summarise(template, d.node_reasons, n_nodes, max_cards, cards)
    return out


def unplaceable_pods(trace, found: Mapping[int, str]) -> dict[str, str]:
    """``{pod name: reason}`` of the trace's pods whose template is in ``found``
    (:func:`find_unplaceable`)."""
    if not found:
        return {}
    codes = np.fromiter(found, dtype=np.int64)
    rows = np.flatnonzero(np.isin(trace.template, codes))
    names, template = trace.names, trace.template
    return {names[i]: found[int(template[i])] for i in rows.tolist()}
