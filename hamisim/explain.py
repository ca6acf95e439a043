"""``hamisim explain``: one placement attempt, step by step, in HAMi's terms.

The explanation is what :class:`hamisim.hami.reference.ReferenceScheduler` does
for one pod, recorded through its :class:`~hamisim.hami.reference.Tracer` hooks
(the decision is the reference's own, unchanged):

* kube-scheduler's pass: which nodes it rejected (``Insufficient cpu``,
  ``Insufficient memory``) and which it handed to HAMi (in clusters of 100
  nodes or more, only a sample);
* per node HAMi evaluated: the node score (§5.3), and per container with a
  GPU request every card's score (§3.1), its place in the sorted list
  (§3.2-3.3), the order Fit visited the cards (from the end of the list)
  and the first check that rejected each card (§4), or that it was picked;
  cards Fit never reached are ``not visited``;
* the node verdict (the reason string HAMi reports for it), the node sort
  among the nodes that fit (§5.4) and the chosen node;
* the result as ``kubectl describe pod`` shows it: for an unschedulable pod
  kube-scheduler's ``FailedScheduling`` message and HAMi's ``FilteringFailed``
  events (one per reason key with the nodes that reported it, then ``no
  available node, N nodes do not meet``), for a bound pod its node and
  ``hami.io/vgpu-devices-allocated``.

Per container, the cards' verdicts add up to the node's reason string: every
rejection key counts one card, ``NumaNotFit`` the picks a numa-bind walk
dropped, ``AllocatedCardsInsufficientRequest`` the acceptable cards of a walk
that found too few. Two entry points:

* :func:`explain_pod`: one pod against a cluster and an optional initial
  state (a fresh scheduler: kube-scheduler's sampling starts at node 0);
* :func:`explain_run`: an attempt of a finished ``hamisim run``: its inputs
  (recorded in ``summary.json``) are read again and its events table is
  replayed -- every attempt re-scheduled and checked against the row it
  wrote, departures and abandons applied -- up to that attempt, which is
  then explained on exactly the state (and sampling position) it saw.
"""
from __future__ import annotations

import math
import os
from collections import Counter
from itertools import combinations
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hamisim.cluster import Cluster
from hamisim.devices import FAMILIES, family
from hamisim.errors import HamisimError, InputError
from hamisim.hami.decision import Decision, Pick, parse_reason
from hamisim.hami.mig import select_candidate
from hamisim.hami.policy import parse_card_policy, pod_gpu_policy
from hamisim.hami.reference import (
    CardUsage,
    FitResult,
    NodeFit,
    ReferenceScheduler,
    Tracer,
)
from hamisim.hami.gpuscore import link_entries
from hamisim.kube.filters import is_unresolvable
from hamisim.kube.scheduler import KubeScheduler, full_message
from hamisim.pods import NO_PERCENTAGE, Pod, Request
from hamisim.shapes import NOUSE_GPUTYPE, USE_GPUTYPE
from hamisim.sim.placement import NodeFacts

__all__ = ["CardVerdict", "ContainerExplanation", "NodeExplanation", "Explanation",
           "explain_pod", "explain_with", "explain_run", "load_pod", "format_text",
           "NOT_VISITED", "PICKED", "NOT_CHOSEN", "NOT_NVIDIA"]

PICKED = "picked"
NOT_CHOSEN = "not chosen"
NOT_VISITED = "not visited"
NOT_NVIDIA = "not an NVIDIA card"
# how a node was settled
STAGE_HAMI = "hami"
STAGE_KUBE = "kube-scheduler"
STAGE_UNREGISTERED = "unregistered"
STAGE_NOT_EXAMINED = "not examined"


def _f32(x) -> float:
    """A float32 score as the shortest decimal that reads back as that float32."""
    return float(str(np.float32(x)))


# ---------------------------------------------------------------------------
# the explanation

@dataclass
class CardVerdict:
    """One card in one container's Fit walk (usage as that container saw it)."""

    id: str
    index: int
    type: str
    numa: int
    health: bool
    cordoned: bool
    count: int
    devmem: int
    devcore: int
    used: int
    usedmem: int
    usedcores: int
    score: float
    position: int | None    # 1-based place in the sorted list (None: not an NVIDIA card)
    visit: int | None       # 1-based place in Fit's walk (None: not visited)
    verdict: str            # a reason key, "picked", "not chosen", "not visited", ...
    detail: str = ""

    def to_json(self) -> dict:
        return {"card": self.id, "index": self.index, "type": self.type, "numa": self.numa,
                "health": self.health, "cordoned": self.cordoned,
                "slots": [self.used, self.count], "memory_mib": [self.usedmem, self.devmem],
                "cores": [self.usedcores, self.devcore], "score": self.score,
                "position": self.position, "visit": self.visit, "verdict": self.verdict,
                "detail": self.detail}


@dataclass
class ContainerExplanation:
    """One container's placement on one node."""

    index: int
    init: bool
    request: Request | None
    cards: list[CardVerdict] = field(default_factory=list)   # in Fit's walk order
    sorted: list[str] = field(default_factory=list)          # HAMi's sorted order
    visited: list[str] = field(default_factory=list)
    fit: bool | None = None
    reason: str = ""
    picks: list[Pick] = field(default_factory=list)

    def verdict_counts(self) -> dict[str, int]:
        """Rejection keys over the cards (what the node's reason string counts)."""
        c = Counter(v.verdict for v in self.cards
                    if v.verdict not in (PICKED, NOT_CHOSEN, NOT_VISITED, NOT_NVIDIA)
                    and not v.verdict.startswith("not offered to "))
        return dict(c)

    def to_json(self) -> dict:
        r = self.request
        return {"container": self.index, "init": self.init,
                "request": None if r is None else {
                    "nums": r.nums, "memreq": r.memreq, "mempercentagereq": r.mempercentagereq,
                    "coresreq": r.coresreq, "type": r.type},
                "sorted": self.sorted, "visited": self.visited,
                "fit": self.fit, "reason": self.reason,
                "picks": [{"card": p.uuid, "memory_mib": p.usedmem, "cores": p.usedcores}
                          for p in self.picks],
                "cards": [c.to_json() for c in self.cards]}


@dataclass
class NodeExplanation:
    """One node's verdict."""

    index: int
    name: str
    stage: str
    fit: bool = False
    reasons: list[str] = field(default_factory=list)
    score: float | None = None
    containers: list[ContainerExplanation] = field(default_factory=list)
    rank: int | None = None          # 1-based place in the node sort (fitting nodes)
    detail: str = ""                 # kube-scheduler's arithmetic for its rejections
    #: the part of ``score`` a family's ScoreNode added (Ascend 910's networks)
    family_score: float | None = None

    @property
    def verdict(self) -> str:
        if self.fit:
            return "fits"
        if self.stage == STAGE_NOT_EXAMINED:
            return "not examined (outside kube-scheduler's sample)"
        return ", ".join(self.reasons)

    def to_json(self) -> dict:
        return {"node": self.name, "stage": self.stage, "fit": self.fit,
                "reasons": self.reasons, "detail": self.detail,
                "node_score": self.score, "rank": self.rank,
                **({"family_score": self.family_score} if self.family_score is not None else {}),
                "containers": [c.to_json() for c in self.containers]}


@dataclass
class Explanation:
    """Everything one attempt did, and its outcome."""

    pod: Pod
    cluster: Cluster
    requests: list[Request | None] = field(default_factory=list)
    n_init: int = 0
    gpu_policy: str | None = None
    card_sort: str = ""
    node_policy: str | None = None
    weights: tuple[int, int, int] | None = None
    numa_bind: bool = False
    window: list[int] = field(default_factory=list)
    start: int = 0
    nodes: list[NodeExplanation] = field(default_factory=list)
    ranking: list[str] = field(default_factory=list)
    chosen: str | None = None
    decision: Decision | None = None
    error: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    #: DefaultPreemption's verdict after a failed attempt (``preemption: ...``)
    postfilter: str = ""

    @property
    def wants_gpu(self) -> bool:
        return any(r is not None for r in self.requests)

    @property
    def message(self) -> str | None:
        """kube-scheduler's FailedScheduling message (``None`` when bound)."""
        if self.error is not None:
            return self.error
        if self.decision is None or self.decision.bound:
            return None
        return full_message(self.decision.message, self.postfilter)

    def node_reasons(self) -> dict[str, list[str]]:
        """Rejected nodes with their reasons, as :attr:`Decision.node_reasons`."""
        return {n.name: n.reasons for n in self.nodes
                if not n.fit and n.stage != STAGE_NOT_EXAMINED}

    def hami_events(self) -> list[str]:
        """HAMi's own ``FilteringFailed`` event messages for a pod no node fits.

        One per reason key with the nodes whose reason string carries it
        (``"<n> nodes <Key>(<node>,...)"``, nodes sorted; HAMi emits them in Go
        map order, here by key), then ``no available node, <N> nodes do not
        meet`` with N the nodes HAMi was handed. None for a bound pod, a pod
        without HAMi resources or when kube-scheduler left HAMi no node.
        """
        if not self.wants_gpu or self.error is not None or self.decision is None \
                or self.decision.bound or not self.window:
            return []
        by_key: dict[str, list[str]] = {}
        for n in self.nodes:
            if n.stage != STAGE_HAMI or n.fit:
                continue
            for reason in n.reasons:
                for key in parse_reason(reason) if "/" in reason else ():
                    by_key.setdefault(key, []).append(n.name)
        out = [f"{len(names)} nodes {key}({','.join(sorted(names))})"
               for key, names in sorted(by_key.items())]
        out.append(f"no available node, {len(self.window)} nodes do not meet")
        return out

    def to_json(self) -> dict:
        d = self.decision
        return {
            "pod": self.pod.name,
            "context": self.context,
            "requests": [None if r is None else {
                "container": j, "init": j < self.n_init, "nums": r.nums, "memreq": r.memreq,
                "mempercentagereq": r.mempercentagereq, "coresreq": r.coresreq}
                for j, r in enumerate(self.requests)],
            "cpu_milli": self.pod.cpu_milli, "memory_mib": self.pod.memory_mib,
            "gpu_types": requested_types(self.pod),
            "gpu_policy": self.gpu_policy, "card_sort": self.card_sort,
            "node_policy": self.node_policy,
            "weights": list(self.weights) if self.weights else None,
            "numa_bind": self.numa_bind,
            "kube_scheduler": {"nodes": len(self.cluster.nodes), "start": self.start,
                               "handed_to_hami": [self.cluster.nodes[i].name
                                                  for i in self.window]},
            "nodes": [n.to_json() for n in self.nodes],
            "ranking": self.ranking, "chosen": self.chosen,
            "result": {
                "bound": bool(d is not None and d.bound),
                "node": d.node if d is not None else None,
                "devices": d.devices if d is not None else None,
                "mig_allocations": d.mig_allocations if d is not None else None,
                "message": self.message,
                "error": self.error,
                "filtering_failed": self.hami_events(),
            },
            "placement": _placement_json(self),
        }


# ---------------------------------------------------------------------------
# where a multi-GPU pod's cards sit

_LINK_WORDS = {"P2PLinkSameBoard": "same board", "P2PLinkSingleSwitch": "one PCIe switch",
               "P2PLinkSameCPU": "one socket", "P2PLinkCrossCPU": "across sockets"}


def placement_of(exp: Explanation) -> dict | None:
    """For a bound pod holding two or more cards on a node that describes its
    topology (or gives pair scores): the chosen cards' links and mean pair score,
    and the best-linked set of as many cards on that node with what kept each of
    its other cards from being chosen (the first GPU container's verdicts)."""
    d = exp.decision
    if d is None or not d.bound:
        return None
    ids = list(dict.fromkeys(d.card_ids))
    node = exp.cluster.nodes[d.node_index]
    facts = NodeFacts(node)
    if len(ids) < 2 or facts.score is None:
        return None
    pos = [facts.pos[i] for i in ids]
    topo = node.topology
    names = {c.id: f"GPU {c.index}" for c in node.cards}

    def mean(ps) -> float:
        ordered = [facts.score[a][b] for a in ps for b in ps if a != b]
        return sum(ordered) / len(ordered)

    pairs = []
    for a, b in combinations(pos, 2):
        ca, cb = node.cards[a], node.cards[b]
        if topo is not None:
            entries = link_entries(topo, ca.index, cb.index)
            words = [_LINK_WORDS.get(e, e) for e in entries[:1]]
            links = topo.links(ca.index, cb.index)
            words.append(f"{links} NVLink{'s' if links != 1 else ''}" if links else "no NVLink")
        else:
            words = ["pair score from hami.io/node-nvidia-score"]
        pairs.append({"cards": [ca.id, cb.id], "links": ", ".join(words),
                      "score": facts.score[a][b]})
    chosen = mean(pos)
    best = max(combinations(range(len(node.cards)), len(pos)), key=mean)
    out = {"node": node.name, "cards": ids, "pairs": pairs, "mean_pair_score": chosen}
    if mean(best) > chosen:
        verdicts = {}
        x = next((n for n in exp.nodes if n.name == node.name), None)
        if x is not None and x.containers:
            verdicts = {v.id: (v.verdict, v.detail) for v in x.containers[0].cards}
        needed = []
        for p in best:
            cid = node.cards[p].id
            if cid in ids:
                continue
            verdict, detail = verdicts.get(cid, ("", ""))
            needed.append({"card": cid, "verdict": verdict, "detail": detail})
        out["best"] = {"cards": [node.cards[p].id for p in best],
                       "mean_pair_score": mean(best), "needed": needed}
    out["names"] = names
    return out


def _placement_json(exp: Explanation) -> dict | None:
    pl = placement_of(exp)
    if pl is not None:
        pl = {k: v for k, v in pl.items() if k != "names"}
    return pl


def _placement_text(exp: Explanation) -> list[str]:
    pl = placement_of(exp)
    if pl is None:
        return []
    names = pl["names"]
    out = ["", f"Placement on {pl['node']}: " + " + ".join(names[c] for c in pl["cards"])
           + f", mean pair score {pl['mean_pair_score']:g}"]
    for p in pl["pairs"]:
        a, b = (names[c] for c in p["cards"])
        out.append(f"  {a} - {b}: {p['links']} (score {p['score']})")
    best = pl.get("best")
    if best is None:
        out.append("  no set of as many cards on this node is better linked")
    else:
        out.append("  better linked: " + " + ".join(names[c] for c in best["cards"])
                   + f" (mean pair score {best['mean_pair_score']:g}); it would have needed:")
        for n in best["needed"]:
            plain = {"not chosen": "free enough, but the card policy preferred the chosen cards",
                     "not visited": "free enough, but Fit had its cards before reaching it "
                                    "(the card policy's order)",
                     "": "no verdict recorded"}
            what = plain.get(n["verdict"])
            if what is None:        # a rejection: what the card lacked
                what = n["verdict"] + (f" ({n['detail']})" if n["detail"] else "")
            out.append(f"    {names[n['card']]}: {what}")
    return out


# ---------------------------------------------------------------------------
# the recorder

class _Container:
    def __init__(self, j: int, init: bool, request: Request | None) -> None:
        self.j, self.init, self.request = j, init, request
        self.snap: dict[str, tuple] = {}
        #: MIG cards: the placements in use before this container
        self.mig_in_use: dict[str, list] = {}
        self.sorted: list[str] = []
        self.vendor: list[str] = []
        self.visits: list[tuple[str, str]] = []
        self.dropped: dict[str, int] = {}       # card -> NUMA of the card that dropped it
        self.result: FitResult | None = None
        self.failure: str | None = None


class _Recorder(Tracer):
    """Collects the reference's steps; :meth:`build` turns them into an Explanation."""

    def __init__(self, cluster: Cluster, pod: Pod,
                 requested: Sequence[tuple[int, int]] = ()) -> None:
        self.exp = Explanation(pod, cluster)
        self.requested = list(requested)
        self.mutex = False
        #: the pod's namespace quota as Fit sees it (ResourceQuotaNotFit details)
        self.quota_text = ""
        self.node_data: dict[int, list[_Container]] = {}
        self.node_results: dict[int, NodeFit] = {}
        self.node_scores: dict[int, np.float32] = {}
        self.bonus: dict[int, np.float32] = {}
        self.kube_rejected: dict[int, list[str]] = {}
        self.cur: list[_Container] | None = None
        self.cur_i = -1
        self.cards_of = [{c.id: (c, n.cordon) for c in n.cards} for n in cluster.nodes]

    # -- hooks -------------------------------------------------------------
    def attempt(self, pod, requests, n_init) -> None:
        self.exp.pod = pod
        self.exp.requests = list(requests)
        self.exp.n_init = n_init

    def policy(self, policy_text, policy, node_policy, weights) -> None:
        self.exp.card_sort = sort_rule(policy)
        self.exp.gpu_policy = policy_text
        self.exp.node_policy = node_policy
        self.exp.weights = tuple(weights)
        self.exp.numa_bind = bool(policy.numa_bind)
        self.mutex = bool(policy.mutex)

    def sampled(self, window, rejected, start) -> None:
        self.exp.window = list(window)
        self.exp.start = start
        self.kube_rejected = {i: list(r) for i, r in rejected.items()}

    def node(self, i) -> None:
        self.cur_i = i
        self.cur = self.node_data.setdefault(i, [])

    def container(self, j, init, request) -> None:
        self.cur.append(_Container(j, init, request))

    def node_score(self, score) -> None:
        self.node_scores[self.cur_i] = score

    def family_score(self, bonus, score) -> None:
        self.node_scores[self.cur_i] = score
        self.bonus[self.cur_i] = bonus

    def scored(self, cards: Sequence[CardUsage]) -> None:
        self.cur[-1].snap = {c.id: (c.used, c.usedmem, c.usedcores, c.score) for c in cards}
        self.cur[-1].mig_in_use = {c.id: list(c.mig_in_use) for c in cards if c.mode == "mig"}

    def sorted(self, cards, vendor_cards) -> None:
        c = self.cur[-1]
        c.sorted = [x.id for x in cards]
        c.vendor = [x.id for x in vendor_cards]

    def request_failed(self, reason) -> None:
        self.cur[-1].failure = reason

    def visit(self, card, verdict) -> None:
        self.cur[-1].visits.append((card.id, verdict))

    def numa_regroup(self, card, discarded) -> None:
        for p in discarded:
            self.cur[-1].dropped[p.uuid] = card.numa

    def fit_done(self, result) -> None:
        self.cur[-1].result = result

    def node_done(self, i, result) -> None:
        self.node_results[i] = result

    def ranked(self, order, chosen) -> None:
        names = self.exp.cluster.nodes
        self.exp.ranking = [names[i].name for i in order]
        self.exp.chosen = names[chosen].name

    # -- building ----------------------------------------------------------
    def build(self, decision: Decision | None, error: str | None) -> Explanation:
        exp = self.exp
        exp.decision, exp.error = decision, error
        nodes = exp.cluster.nodes
        window = set(exp.window)
        rank = {name: k + 1 for k, name in enumerate(exp.ranking)}
        for i, node in enumerate(nodes):
            if i in self.kube_rejected:
                exp.nodes.append(NodeExplanation(i, node.name, STAGE_KUBE,
                                                 reasons=self.kube_rejected[i],
                                                 detail=self._kube_detail(i)))
                continue
            if i not in window:
                exp.nodes.append(NodeExplanation(i, node.name, STAGE_NOT_EXAMINED))
                continue
            res = self.node_results.get(i)
            if res is None:
                # a pod without HAMi resources: kube-scheduler alone places it,
                # on one of the nodes that passed its filters
                exp.nodes.append(NodeExplanation(i, node.name, STAGE_KUBE, fit=True))
                if decision is not None and decision.bound:
                    exp.chosen = decision.node
                continue
            if not node.registered:
                exp.nodes.append(NodeExplanation(i, node.name, STAGE_UNREGISTERED,
                                                 reasons=[res.reason]))
                continue
            ne = NodeExplanation(i, node.name, STAGE_HAMI, fit=res.fit,
                                 reasons=[] if res.fit else [res.reason],
                                 score=_f32(self.node_scores[i]) if i in self.node_scores
                                 else None, rank=rank.get(node.name),
                                 family_score=_f32(self.bonus[i]) if i in self.bonus else None)
            ne.containers = [self._container(i, c) for c in self.node_data.get(i, [])]
            exp.nodes.append(ne)
        return exp

    def _kube_detail(self, i: int) -> str:
        if i >= len(self.requested):
            return ""
        node, pod = self.exp.cluster.nodes[i], self.exp.pod
        reasons = self.kube_rejected.get(i, [])
        if reasons and is_unresolvable(reasons[0]):
            return _static_detail(node, pod, reasons[0])
        cpu, mem = self.requested[i]
        parts = []
        if node.cpu_milli is not None and pod.cpu_milli > node.cpu_milli - cpu:
            parts.append(f"CPU: asks {pod.cpu_milli}m, {node.cpu_milli - cpu}m of "
                         f"{node.cpu_milli}m free")
        if node.memory_mib is not None and pod.memory_mib > node.memory_mib - mem:
            parts.append(f"memory: asks {pod.memory_mib} MiB, {node.memory_mib - mem} of "
                         f"{node.memory_mib} MiB free")
        return "; ".join(parts)

    def _container(self, i: int, c: _Container) -> ContainerExplanation:
        ce = ContainerExplanation(c.j, c.init, c.request, sorted=list(c.sorted),
                                  visited=[cid for cid, _ in c.visits])
        if c.request is None:
            return ce
        res = c.result
        ce.fit = res.fit if res is not None else False
        ce.reason = c.failure or (res.reason if res is not None else "")
        ce.picks = list(res.picks) if res is not None and res.fit else []
        chosen = {p.uuid for p in ce.picks}
        # a MIG card is visited again after each instance it takes: it counts as
        # picked when any visit took one
        verdicts = dict(c.visits)
        verdicts.update({cid: PICKED for cid, v in c.visits if v == PICKED})
        order = {cid: k + 1 for k, cid in enumerate(c.vendor)}
        visit_no = {cid: k + 1 for k, (cid, _) in enumerate(c.visits)}
        need_mem, need_cores = _needs(c.request)
        # Fit walks the NVIDIA cards from the end of the sorted list
        walk = list(reversed(c.vendor)) + [cid for cid in reversed(c.sorted)
                                           if cid not in order]
        for cid in walk:
            card, cordon = self.cards_of[i][cid]
            used, usedmem, usedcores, score = c.snap.get(cid, (0, 0, 0, np.float32(0)))
            v = verdicts.get(cid)
            if cid not in order:
                word = c.request.type
                verdict = NOT_NVIDIA if word == "NVIDIA" else f"not offered to {word}"
                detail = f"its type does not contain {word}"
            elif v is None:
                verdict = NOT_VISITED
                detail = ("Fit stopped before it" if c.visits else
                          f"Fit did not run ({c.failure})" if c.failure else "")
            elif v == PICKED:
                if cid in c.dropped:
                    verdict = "NumaNotFit"
                    detail = (f"acceptable, dropped when the walk entered NUMA node "
                              f"{c.dropped[cid]} (numa-bind)")
                elif ce.fit and cid in chosen:
                    pick = next(p for p in ce.picks if p.uuid == cid)
                    verdict = PICKED
                    detail = f"{pick.usedmem} MiB, {pick.usedcores} cores"
                    if card.mode == "mig":
                        detail = _mig_picked(card, c.mig_in_use.get(cid, []), need_mem,
                                             sum(1 for p in ce.picks if p.uuid == cid))
                elif ce.fit:
                    fam = family(c.request.type)
                    chooser = ("the 910C module choice (whole modules, index // 2)"
                               if fam is not None and fam.module_pairs else
                               "Ascend's network choice (largest network first)"
                               if fam is not None and fam.network_topology else
                               "topology-aware")
                    verdict, detail = NOT_CHOSEN, f"acceptable; {chooser} chose others"
                else:
                    verdict = "AllocatedCardsInsufficientRequest"
                    n_ok = sum(1 for _, x in c.visits if x == PICKED) - len(c.dropped)
                    detail = (f"acceptable, but only {n_ok} of the {c.request.nums} cards "
                              "needed were found")
            elif v == "CardMigTopologyInfeasible":
                verdict = v
                detail = _mig_infeasible(card, c.mig_in_use.get(cid, []), need_mem,
                                         sum(1 for x, w in c.visits if x == cid and w == PICKED))
            else:
                verdict = v
                detail = _detail(v, card, cordon, used, usedmem, usedcores, need_mem,
                                 need_cores, self.mutex) or \
                    (self.quota_text if v == "ResourceQuotaNotFit" else "")
            ce.cards.append(CardVerdict(
                cid, card.index, card.type, card.numa, card.health, cid in cordon,
                card.count, card.devmem, card.devcore, used, usedmem, usedcores, _f32(score),
                order.get(cid), visit_no.get(cid), verdict, detail))
        return ce


def _quota_text(scheduler: ReferenceScheduler, pod: Pod) -> str:
    """What a ResourceQuotaNotFit card means for ``pod``: its namespace's quota
    and what the namespace holds without the pod (HAMi's ``fitQuota``)."""
    cached = scheduler.pods.pop(pod.name, None)       # Fit does not count the pod itself
    try:
        gate = scheduler.quota_gate(pod.namespace)
    finally:
        if cached is not None:
            scheduler.pods[pod.name] = cached
    if gate is None:
        return ""
    parts = []
    if gate.limit_mem is not None:
        parts.append(f"{gate.used_mem} of {gate.limit_mem} MiB")
    if gate.limit_cores is not None:
        parts.append(f"{gate.used_cores} of {gate.limit_cores} cores")
    return (f"with this card the pod's containers so far would take namespace "
            f"'{pod.namespace}' past its quota ({' and '.join(parts)} in use)")


def _static_detail(node, pod: Pod, reason: str) -> str:
    """Which of kube-scheduler's NodeUnschedulable, TaintToleration and
    NodeAffinity filters rejected the node, and on what."""
    from hamisim.kube.filters import AFFINITY_MISMATCH, UNSCHEDULABLE
    if reason == UNSCHEDULABLE:
        return ("NodeUnschedulable: the node is cordoned (spec.unschedulable) and the pod "
                "does not tolerate node.kubernetes.io/unschedulable:NoSchedule")
    if reason == AFFINITY_MISMATCH:
        wanted = []
        if pod.node_selector:
            wanted.append("nodeSelector " + ", ".join(f"{k}={v}" for k, v in
                                                       pod.node_selector.items()))
        if pod.affinity is not None:
            wanted.append(f"required node affinity ({len(pod.affinity)} term(s))")
        labels = ", ".join(f"{k}={v}" for k, v in node.labels.items()) or "none"
        return f"NodeAffinity: {' and '.join(wanted)} against the node's labels ({labels})"
    for t in node.taints:
        if reason.endswith(f"{{{t.key}: {t.value}}}"):
            return (f"TaintToleration: taint {t.key}={t.value}:{t.effect} is not tolerated "
                    "by the pod")
    return ""


def sort_rule(policy) -> str:
    """HAMi's card comparator for a resolved policy (§3.2), in words."""
    from hamisim.hami.policy import (
        KEY_BINPACK,
        KEY_NUMA,
        KEY_SPREAD,
        MODE_CHAIN,
        SINGLE_BINPACK,
        SINGLE_MUTEX,
    )
    if policy.mode == MODE_CHAIN:
        words = {KEY_BINPACK: "lower score", KEY_SPREAD: "higher score", KEY_NUMA: "lower NUMA"}
        return ", then ".join([words[k] for k in policy.chain] + ["lower index"]) + " first"
    if policy.mode == SINGLE_MUTEX:
        return "more tenants first, then lower NUMA"
    binpack = policy.mode == SINGLE_BINPACK
    score = "lower score" if binpack else "higher score"
    if policy.numa_bind:
        return f"{'higher' if binpack else 'lower'} NUMA first, then {score}"
    return f"{score} first, then lower NUMA"


def _needs(r: Request | None) -> tuple[Any, int]:
    """Memory (MiB, or a percentage marker) and cores one card must offer."""
    if r is None:
        return 0, 0
    cores = min(r.coresreq, 100)
    if r.memreq > 0 or r.mempercentagereq == NO_PERCENTAGE:
        return r.memreq, cores
    return ("pct", r.mempercentagereq), cores


def _slots(start: int, size: int) -> str:
    return f"slot {start}" if size == 1 else f"slots {start}-{start + size - 1}"


def _mig_picked(card, in_use, need_mem, n: int) -> str:
    """A MIG card's instances for one container, and what HAMi records for them."""
    mem = card.devmem * need_mem[1] // 100 if isinstance(need_mem, tuple) else need_mem
    taken, parts, charged = list(in_use), [], (0, 0)
    for _ in range(n):
        choice = select_candidate(card.mig_profiles, taken, mem)
        if choice is None:
            break
        prof, place = choice
        taken.append(place)
        parts.append(f"{prof.name} at {_slots(place.start, place.size)}")
        charged = (charged[0] + prof.memory_mb, charged[1] + prof.core)
    asked = f"{mem} MiB ({need_mem[1]} % of the card)" if isinstance(need_mem, tuple) \
        else f"{mem} MiB"
    return (f"MIG {', '.join(parts)}: the smallest profile with >= {asked} and a free "
            f"placement; HAMi charges the profiles' {charged[0]} MiB and {charged[1]} cores, "
            "not the request's")


def _mig_infeasible(card, in_use, need_mem, own: int) -> str:
    """Why a MIG card's geometry refused the request (HAMI-SEMANTICS §11)."""
    mem = card.devmem * need_mem[1] // 100 if isinstance(need_mem, tuple) else need_mem
    if not card.mig_profiles:
        return "the card registered no MIG profile"
    largest = max(card.mig_profiles, key=lambda p: p.memory_mb)
    if largest.memory_mb < mem:
        why = (f"{mem} MiB needed, more than its largest profile {largest.name} "
               f"({largest.memory_mb} MiB)")
        if isinstance(need_mem, tuple) and need_mem[1] == 100:
            why += ("; a request without nvidia.com/gpumem asks 100 % of the card's "
                    f"{card.devmem} MiB and never fits a MIG card")
        return why
    big = [p.name for p in sorted(card.mig_profiles, key=lambda p: p.memory_mb)
           if p.memory_mb >= mem]
    taken = ", ".join(_slots(p.start, p.size) for p in sorted(in_use, key=lambda p: p.start))
    own_text = f" and this pod's {own} instance(s) placed on it" if own else ""
    return (f"no free placement for {mem} MiB: every profile that large ({', '.join(big)}) "
            f"overlaps instances in use ({taken or 'none'}){own_text}")


def _detail(key: str, card, cordon, used, usedmem, usedcores, need_mem, need_cores,
            mutex: bool) -> str:
    if key == "CardNotHealth":
        return "registered unhealthy"
    if key == "CardCordoned":
        return "listed in hami.io/device-cordon"
    if key == "CardTypeMismatch":
        return f"type '{card.type}' / mode '{card.mode}' excluded by the pod's filters"
    if key == "CardUuidMismatch":
        return "excluded by nvidia.com/use-gpuuuid / nouse-gpuuuid"
    if key == "CardTimeSlicingExhausted":
        return f"all {card.count} slots taken"
    if key == "ExclusiveDeviceAllocateConflict":
        # Fit's mutex check comes before the exclusive-cores one
        who = "mutex needs a card with no tenant" if mutex else \
            "gpucores 100 (exclusive) needs a card with no tenant"
        return f"{who}; it has {used}"
    if key == "CardInsufficientMemory":
        mem = need_mem if not isinstance(need_mem, tuple) else \
            card.devmem * need_mem[1] // 100
        return f"free {card.devmem - usedmem} MiB < {mem} MiB needed"
    if key == "CardInsufficientCore":
        text = f"free {card.devcore - usedcores} cores < {need_cores} needed"
        if card.mode == "mig" and usedcores > card.devcore:
            text += ("; the MIG instances in use are charged their profiles' cores, rounded up "
                     "from NVML's SM counts, which can pass 100")
        return text
    if key == "CardComputeUnitsExhausted":
        return f"cores {usedcores}/{card.devcore} in use and the pod asks 0 cores"
    if key == "CardReservedByMutex":
        return "held by a mutex-reserve pod until it leaves; a hamisim what-if, not HAMi"
    if key == "CardNotFoundCustomFilterRule":
        return ("an earlier container of the pod holds another Moore Threads card; all of a "
                "pod's Moore Threads containers share one")
    return ""


# ---------------------------------------------------------------------------
# entry points

def explain_with(scheduler: ReferenceScheduler, pod: Pod, tie_draw: float | None = None,
                 context: Mapping[str, Any] | None = None,
                 kube: KubeScheduler | None = None) -> Explanation:
    """Explain one attempt of ``pod`` on ``scheduler`` (which it then holds, if bound).

    ``kube``: kube-scheduler's view around ``scheduler`` (running pods'
    priorities, nominations): the attempt then counts nominated pods, tries a
    nominated pod's node first, and the message carries DefaultPreemption's
    verdict. Without it, nothing runs or is nominated besides what
    ``scheduler`` holds.
    """
    if kube is None:
        kube = KubeScheduler(scheduler.cluster, scheduler, lambda n: 0)
        for name, cached in scheduler.pods.items():
            kube.bound(Pod(name, cpu_milli=cached.cpu_milli, memory_mib=cached.memory_mib),
                       cached.node, 0.0)
    load = kube._nominated_load(pod)
    requested = scheduler.node_requested()
    if load:
        for i, (cpu, mem) in load.items():
            requested[i] = (requested[i][0] + cpu, requested[i][1] + mem)
    rec = _Recorder(scheduler.cluster, pod, requested)
    rec.quota_text = _quota_text(scheduler, pod)
    decision, error, post = None, None, None
    nominated = kube.nominated.get(pod.name)
    try:
        if nominated is not None:
            try:
                first = scheduler.schedule(pod, tie_draw, trace=rec, nominated=load,
                                           only=nominated[0])
            except ValueError:
                first = None
            if first is not None and first.bound:
                decision = first
            else:
                rec = _Recorder(scheduler.cluster, pod, requested)
                rec.quota_text = _quota_text(scheduler, pod)
        if decision is None:
            decision = scheduler.schedule(pod, tie_draw, trace=rec, nominated=load)
            if not decision.bound and kube.enabled:
                post = kube._post_filter(pod, decision, nominated[0] if nominated else -1)
    except ValueError as err:         # HAMi Filter error or admission rejection
        error = str(err)
    exp = rec.build(decision, error)
    exp.postfilter = post.message if post is not None else ""
    exp.context = dict(context or {})
    return exp


def explain_pod(cluster: Cluster, pod: Pod, state=None,
                context: Mapping[str, Any] | None = None) -> Explanation:
    """Explain ``pod`` against ``cluster`` with ``state``'s pods running
    (:class:`hamisim.io.initialstate.InitialState`, or ``None``)."""
    _hami_only(cluster)
    sched = ReferenceScheduler(cluster)
    if state is not None:
        state.adopt_into(sched, cluster)
    return explain_with(sched, pod, context=context)


def _hami_only(cluster: Cluster) -> None:
    from hamisim.research.plugins import on_research_model
    policy = cluster.scheduler.node_scheduler_policy
    if on_research_model(policy):
        raise HamisimError(f"explain covers HAMi's own placement; node policy '{policy}' is a "
                           "research policy on the FGD paper's model (no HAMi reasons to "
                           "explain)")


def load_pod(path: str, name: str | None = None) -> Pod:
    """A pod from a file, picked by ``name`` when the file holds several.

    ``.yaml`` / ``.yml`` / ``.json``: a Kubernetes Pod (``kind: Pod``), a list
    of them (``kubectl get pods -o json``), or one pod in the trace-column form
    of a scenario ``create`` step. ``.csv`` / ``.jsonl`` / ``.parquet``: a trace.
    ``name`` matches a pod's name, or the part after ``namespace/``.
    """
    ext = os.path.splitext(path)[1].lower()
    if ext in (".csv", ".jsonl", ".parquet"):
        from hamisim.io.traces import read_trace
        trace = read_trace(path)
        return _pick({tp.pod.name: tp.pod for tp in trace.pods}, name, path)
    from hamisim.io.documents import load_document
    from hamisim.io.kubeimport import kubernetes_pods, pod_from_kubernetes
    from hamisim.io.podspec import TRACE_POD_KEYS, pod_from_document, warn_core_limits
    root = load_document(path)
    if root.is_mapping:
        doc = root.as_doc("the top level")
        kind = doc.get("kind")
        if "items" in doc or (kind is not None and kind.scalar in ("Pod", "List", "PodList")) \
                or "apiVersion" in doc:
            pods = {}
            for i, obj in enumerate(kubernetes_pods(path)):
                pod = pod_from_kubernetes(obj, i)
                pods[pod.name] = pod
            return _pick(pods, name, path)
        pod = pod_from_document(doc, path, allowed_keys=TRACE_POD_KEYS)
        warn_core_limits([(f"{path}:{doc.line}", pod)])
        return _pick({pod.name: pod}, name, path)
    raise root.error(f"expected a pod (a mapping), got {root.describe()}")


def _pick(pods: dict[str, Pod], name: str | None, path: str) -> Pod:
    if not pods:
        raise InputError(path, None, "no pod in the file")
    if name is None:
        if len(pods) == 1:
            return next(iter(pods.values()))
        raise InputError(path, None, f"the file holds {len(pods)} pods; choose one with --pod "
                                     f"({_listing(pods)})")
    if name in pods:
        return pods[name]
    short = [p for n, p in pods.items() if n.rsplit("/", 1)[-1] == name]
    if len(short) == 1:
        return short[0]
    raise InputError(path, None, f"no pod named '{name}' ({_listing(pods)})")


def _listing(names) -> str:
    names = sorted(names)
    return ", ".join(names[:6]) + (f", ... ({len(names)} in all)" if len(names) > 6 else "")


# ---------------------------------------------------------------------------
# a finished run

def _text(v) -> str | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return str(v)


def explain_run(run_dir: str | os.PathLike[str], pod_name: str,
                attempt: int | None = None) -> Explanation:
    """Explain an attempt of ``pod_name`` in the results folder of ``hamisim run``.

    ``attempt`` counts the pod's ``bind`` and ``unschedulable`` rows from 1
    (negative: from the end); by default its last ``unschedulable`` row, or
    its ``bind`` when it never was, counted per attempt: a run whose events
    were aggregated (``--events aggregated``, the default) is simulated again
    in memory with a row per attempt. The run's inputs must be unchanged
    (their SHA-256 is checked).
    """
    from hamisim.io.outputs import read_table
    from hamisim.sim.backend import make_scheduler
    from hamisim.sim.recorder import INITIAL_STATE_MESSAGE
    from hamisim.studies.runs import prepare_recorded

    folder = Path(run_dir)
    _, spec, prep = prepare_recorded(folder, "explain")
    events_path = next((p for p in (folder / "events.parquet", folder / "events.csv")
                        if p.exists()), None)
    if events_path is None:
        raise InputError(str(folder), None, "no events.parquet or events.csv in the folder")
    cluster = prep.cluster
    _hami_only(cluster)
    if spec.events == "all":
        events = read_table(events_path)
    else:
        # the run's table holds a pod's failed attempts as one row per message;
        # replaying needs every attempt in order: the same run, a row per attempt
        import dataclasses
        from hamisim.studies.runs import run_prepared
        events = run_prepared(dataclasses.replace(spec, events="all"), prep).events
    trace = prep.workload
    pods = {name: trace.pod(i) for i, name in enumerate(trace.names)}
    initial = {p.name: p for p in prep.state.pods} if prep.state is not None else {}

    known = set(pods) | set(initial)
    if pod_name not in known:
        short = [n for n in known if n.rsplit("/", 1)[-1] == pod_name]
        if len(short) == 1:
            pod_name = short[0]
    rows = list(zip(events["time"].tolist(), events["pod"].tolist(),
                    events["event"].tolist(), events["node"].tolist(),
                    events["devices"].tolist(), events["message"].tolist()))
    attempts = [k for k, r in enumerate(rows) if r[1] == pod_name and r[2] in (
        "bind", "unschedulable") and _text(r[5]) != INITIAL_STATE_MESSAGE]
    if not attempts:
        where = "is running from the initial state" if pod_name in initial else \
            "has no scheduling attempt in this run" if pod_name in pods else \
            "is not a pod of this run"
        raise InputError(str(events_path), None, f"pod '{pod_name}' {where}")
    if attempt is None:
        failed = [k for k in attempts if rows[k][2] == "unschedulable"]
        target = failed[-1] if failed else attempts[-1]
        number = attempts.index(target) + 1
    else:
        if attempt == 0 or abs(attempt) > len(attempts):
            raise InputError(str(events_path), None,
                             f"pod '{pod_name}' has {len(attempts)} attempt(s); --attempt "
                             f"{attempt} is out of range")
        target = attempts[attempt - 1 if attempt > 0 else attempt]
        number = attempts.index(target) + 1

    sched = make_scheduler(cluster, backend=spec.backend)
    offsets = np.random.default_rng([spec.seed, 1])     # as the engine draws them
    kube = KubeScheduler(cluster, sched, lambda n: int(offsets.integers(n)))
    placed: dict[str, tuple] = {}
    random_ties = cluster.scheduler.node_tie_break == "random"
    rng = np.random.default_rng(spec.seed)
    node_index = {n.name: i for i, n in enumerate(cluster.nodes)}
    draw = None
    for k, (time, name, event, node, devices, message) in enumerate(rows):
        if event == "preempt" and name in pods and pods[name].termination_grace_period > 0:
            # deleted with a grace period: it holds its node and cards until
            # its depart row, carrying preemption's DisruptionTarget condition
            # (a repeated row, kube-scheduler <= 1.34, changes nothing else)
            kube.terminating(name)
            continue
        if event in ("depart", "abandon", "preempt"):
            sched.delete(name)
            kube.gone(name)
            placed.pop(name, None)
            continue
        if event == "move":             # the what-if defragmenter: evict, HAMi re-places
            pod = pods[name]
            sched.delete(name)
            kube.gone(name)
            d = sched.schedule(pod)
            if not d.bound or d.devices != _text(devices):
                raise InputError(str(events_path), None, f"events row {k} (move of {name}) "
                                 "does not replay: the run's inputs or hamisim changed")
            kube.bound(pod, d.node_index, float(time))
            reserve = parse_card_policy(pod_gpu_policy(cluster.scheduler.gpu_scheduler_policy,
                                                       pod.annotations)).reserve
            placed[name] = (d.node_index, d.containers, len(pod.init_containers),
                            pod.cpu_milli, pod.memory_mib, pod.namespace, reserve)
            continue
        if event not in ("bind", "unschedulable"):
            continue
        if event == "bind" and _text(message) == INITIAL_STATE_MESSAGE:
            ip = initial[name]
            sched.adopt(name, node_index[ip.node], ip.containers, ip.n_init, ip.cpu_milli,
                        ip.memory_mib, namespace=ip.namespace)
            placed[name] = (node_index[ip.node], ip.containers, ip.n_init, ip.cpu_milli,
                            ip.memory_mib, ip.namespace, False)
            kube.bound(Pod(name, cpu_milli=ip.cpu_milli, memory_mib=ip.memory_mib),
                       node_index[ip.node], 0.0)
            continue
        pod = pods[name]
        draw = float(rng.random()) if random_ties else None
        if k == target:
            break
        try:
            d, post = kube.schedule(pod, draw)
        except ValueError as err:
            d, post = Decision(name, message=str(err)), None
        if post is not None:
            d.message = full_message(d.message, post.message)
        _check_row(d, k, event, node, devices, message, events_path)
        if d.bound:
            kube.bound(pod, d.node_index, float(time))
            # the what-if mutex-reserve's hold on the cards goes with the pod
            reserve = parse_card_policy(pod_gpu_policy(cluster.scheduler.gpu_scheduler_policy,
                                                       pod.annotations)).reserve
            placed[name] = (d.node_index, d.containers, len(pod.init_containers),
                            pod.cpu_milli, pod.memory_mib, pod.namespace, reserve)
    ref = ReferenceScheduler(cluster)
    for name, (i, containers, n_init, cpu, mem, ns, reserve) in placed.items():
        ref.adopt(name, i, containers, n_init, cpu, mem, namespace=ns, reserve=reserve)
    ref.next_start = sched.next_start
    kube.sched = ref
    time, name, event, node, devices, message = rows[target]
    exp = explain_with(ref, pods[pod_name], draw, context={
        "run": str(folder), "time": float(time), "event_row": target, "attempt": number,
        "attempts": len(attempts), "event": event}, kube=kube)
    d = exp.decision if exp.decision is not None else Decision(pod_name, message=exp.error)
    if not d.bound and exp.error is None:
        d = Decision(pod_name, message=exp.message)
    _check_row(d, target, event, node, devices, message, events_path)
    return exp


def _check_row(d: Decision, k: int, event: str, node, devices, message, where) -> None:
    got = ("bind", d.node, d.devices) if d.bound else ("unschedulable", None, None)
    want = (event, _text(node), _text(devices)) if event == "bind" else (event, None, None)
    if got != want or (not d.bound and d.message != _text(message)):
        said = f"bound to {d.node} ({d.devices})" if d.bound else f"unschedulable ({d.message})"
        raise HamisimError(f"{where}: row {k} ({event} of pod '{d.pod}') does not replay: "
                           f"the scheduler now says {said}; were the events written by "
                           "another hamisim version?")


# ---------------------------------------------------------------------------
# text

def requested_types(pod: Pod) -> dict[str, str]:
    """The card types the pod asks for or refuses (``nvidia.com/use-gputype``,
    ``nvidia.com/nouse-gputype``) as ``{"use": ..., "nouse": ...}``, those given."""
    return {k: pod.annotations[a] for k, a in (("use", USE_GPUTYPE), ("nouse", NOUSE_GPUTYPE))
            if pod.annotations.get(a)}


def _request_text(r: Request | None) -> str:
    if r is None:
        return "no GPU"
    mem = f"{r.memreq} MiB" if r.memreq > 0 else (
        f"{r.mempercentagereq}% of the card's memory" if r.mempercentagereq != NO_PERCENTAGE
        else "0 MiB")
    return f"{r.nums} card{'s' if r.nums != 1 else ''}, {mem} and {r.coresreq} cores per card"


def format_text(exp: Explanation, nodes: Sequence[str] = (), max_nodes: int = 20) -> str:
    """The explanation for a terminal. Per-card tables are printed for every node
    HAMi evaluated when there are at most ``max_nodes`` of them, else only for
    ``nodes`` (and a count of nodes per verdict)."""
    out: list[str] = []
    ctx = exp.context
    p = exp.pod
    head = f"Pod {p.name}"
    if "run" in ctx:
        head += (f" in run {ctx['run']}: attempt {ctx['attempt']} of {ctx['attempts']} "
                 f"at t={ctx['time']:g} s (events row {ctx['event_row']})")
    elif ctx.get("cluster"):
        head += f" on {ctx['cluster']}" + (f" with the pods of {ctx['state']}"
                                            if ctx.get("state") else "")
    out.append(head)
    for j, r in enumerate(exp.requests):
        kind = "init container" if j < exp.n_init else "container"
        out.append(f"  {kind} {j}: {_request_text(r)}")
    out.append(f"  CPU {p.cpu_milli}m, memory {p.memory_mib} MiB"
               + (f"; priority {p.priority}" if p.priority else ""))
    types = requested_types(p)
    if types:
        out.append("  GPU type: " + "; ".join(
            f"{'only' if k == 'use' else 'not'} {v} (nvidia.com/{k}-gputype)"
            for k, v in types.items()))
    if exp.wants_gpu and exp.gpu_policy is not None:
        w = exp.weights or (1, 1, 1)
        out.append(f"  card policy '{exp.gpu_policy}', node policy '{exp.node_policy}'"
                   + (", numa-bind" if exp.numa_bind else "")
                   + ("" if tuple(w) == (1, 1, 1) else
                      f", card-score weights slot={w[0]} core={w[1]} memory={w[2]}"))
    n = len(exp.cluster.nodes)
    kube = [x for x in exp.nodes if x.stage == STAGE_KUBE and x.reasons]
    skipped = [x for x in exp.nodes if x.stage == STAGE_NOT_EXAMINED]
    line = f"kube-scheduler: {n} nodes"
    if kube:
        line += f"; {len(kube)} rejected by its own filters"
    line += f"; {len(exp.window)} handed to HAMi" if exp.wants_gpu else \
        f"; {len(exp.window)} feasible"
    if skipped:
        line += f"; {len(skipped)} not examined (percentageOfNodesToScore sample from node " \
                f"{exp.start})"
    out += ["", line]
    if not exp.wants_gpu:
        out.append("  the pod asks for no HAMi resource: kube-scheduler places it alone "
                   "(hamisim: LeastAllocated over CPU and memory)")
    wanted = set(nodes)
    listed = kube if len(kube) <= max_nodes else [x for x in kube if x.name in wanted]
    if len(kube) > max_nodes:
        for reasons, k in Counter(", ".join(x.reasons) for x in kube).most_common():
            out.append(f"  {k:6d}  {reasons}")
    for x in listed:
        out.append(f"  {x.name}: {', '.join(x.reasons)}" + (f" ({x.detail})" if x.detail else ""))
    if exp.error is not None:
        out += ["", f"HAMi rejects the pod before any node is scored: {exp.error}"]
        return "\n".join(out) + "\n"

    hami = [x for x in exp.nodes if x.stage in (STAGE_HAMI, STAGE_UNREGISTERED)]
    detailed = hami if len(hami) <= max_nodes else [x for x in hami if x.name in wanted]
    if exp.wants_gpu and hami:
        out += ["", f"HAMi's Filter, node by node. Cards are sorted {exp.card_sort} "
                    "(SORTED) and Fit walks the list from its end (VISIT):"]
    if len(hami) > max_nodes:
        counts = Counter(x.verdict for x in hami)
        out.append(f"  {len(hami)} nodes evaluated; per verdict:")
        for verdict, k in sorted(counts.items(), key=lambda t: (-t[1], t[0])):
            out.append(f"    {k:6d}  {verdict}")
        out.append("  (--node NAME prints a node's cards)")
    for x in detailed:
        out += _node_text(x)
    if exp.ranking:
        from hamisim.hami.policy import node_policy_spread
        spread = node_policy_spread(exp.node_policy)
        scores = {x.name: x.score for x in exp.nodes}
        shown = [f"{name} {scores[name]:g}" for name in exp.ranking]
        if len(shown) > 12:
            shown = shown[:3] + [f"... ({len(shown) - 11} more)"] + shown[-8:]
        out += ["", f"Node sort ({exp.node_policy}: {'higher' if spread else 'lower'} score "
                    "first, the last one wins): " + ", ".join(shown)]
    out += ["", "Result:"]
    d = exp.decision
    if d is not None and d.bound:
        out.append(f"  bound to {d.node}" + (f"  {_allocated_names(d)}: {d.devices}"
                                             if d.devices else ""))
        if d.mig_allocations:
            out.append(f"  hami.io/vgpu-mig-allocations: {d.mig_allocations}")
        out += _placement_text(exp)
    else:
        for ev in exp.hami_events():
            head, paren, names = ev.partition("(")
            listed = names.rstrip(")").split(",") if paren else []
            if len(listed) > 10:        # HAMi lists every node; keep the text readable
                ev = f"{head}({','.join(listed[:10])},... {len(listed) - 10} more)"
            out.append(f"  Warning  FilteringFailed   {ev}")
        out.append(f"  Warning  FailedScheduling  {exp.message}")
    return "\n".join(out) + "\n"


def _allocated_names(d: Decision) -> str:
    """The allocation annotation(s) a bound pod's ``devices`` value is written to
    (``hami.io/vgpu-devices-allocated`` for NVIDIA's, each family's own)."""
    words = {p.type for picks in d.containers for p in picks}
    names = [f.allocated_annotation for f in FAMILIES if f.word in words]
    return " / ".join(names) or "hami.io/vgpu-devices-allocated"


def _node_text(x: NodeExplanation) -> list[str]:
    out = [""]
    if x.stage == STAGE_UNREGISTERED:
        out.append(f"Node {x.name}: {x.verdict} (no hami.io/node-nvidia-register)")
        return out
    score = f"node score {x.score:g}" if x.score is not None else "no node score"
    if x.family_score is not None:
        score += f", {x.family_score:g} of it Ascend 910's network score (ScoreNode)"
    out.append(f"Node {x.name}: {x.verdict}   ({score}"
               + (f", rank {x.rank}" if x.rank else "") + ")")
    for c in x.containers:
        kind = "init container" if c.init else "container"
        if c.request is None:
            out.append(f"  {kind} {c.index}: no GPU")
            continue
        status = "fits" if c.fit else f"fails: {c.reason}"
        out.append(f"  {kind} {c.index}: {_request_text(c.request)} -> {status}")
        if not c.cards:
            continue
        rows = [("SORTED", "VISIT", "CARD", "IDX", "NUMA", "SCORE", "SLOTS", "MEMORY MiB",
                 "CORES", "VERDICT")]
        for v in c.cards:
            rows.append((
                "-" if v.position is None else str(v.position),
                "-" if v.visit is None else str(v.visit), v.id, str(v.index), str(v.numa),
                f"{v.score:g}", f"{v.used}/{v.count}", f"{v.usedmem}/{v.devmem}",
                f"{v.usedcores}/{v.devcore}",
                v.verdict + (f" ({v.detail})" if v.detail else "")))
        widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]) - 1)]
        for r in rows:
            out.append("    " + "  ".join(r[k].ljust(widths[k]) for k in range(len(widths)))
                       + "  " + r[-1])
    return out
