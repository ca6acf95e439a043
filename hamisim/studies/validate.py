"""``hamisim validate``: HAMi's decisions, step by step, against a cluster's audit log.

The walk (:func:`validate`) replays the log's pod records
(:mod:`hamisim.io.auditlog`) in order, keeping the cluster's *recorded*
state: which pods run where with which cards (HAMi's pod cache, on the
compiled kernel) and their CPU and memory (kube-scheduler's). At each
recorded binding of a pod that asks for GPUs it asks what HAMi v2.10 behind
kube-scheduler's filters would decide for that pod in exactly that state,
compares node and cards, and then applies the **recorded** decision, so one
divergence does not cascade.

The comparison rule (kube-scheduler's sampling makes the real choice depend on
a rotating start the log does not show):

* every node is examined (``percentageOfNodesToScore: 100``); the nodes HAMi
  would pick are the fitting nodes with the best node score (HAMi's ties
  are a goroutine race; hamisim's convention picks the last in cluster order);
* ``agree``: the recorded node is hamisim's pick; ``tie``: it is another of the
  tied best; ``sample``: the cluster samples nodes (100 nodes or more and
  ``percentage_of_nodes_to_score`` below 100) and the recorded node is HAMi's
  best within some sample kube-scheduler could have drawn (a run of
  ``numFeasibleNodesToFind`` consecutive feasible nodes, in cluster order
  from a rotating start, with no fitting node scoring better); ``disagree``:
  none of these (the row says whether the recorded node did not fit, and
  why, or fitted but scored worse); ``unschedulable``: hamisim finds no node.
  ``node_agreement_pct`` counts agree, tie and sample;
* cards: hamisim's cards *on the recorded node* (what HAMi's card policy picks
  there) against the recorded ``hami.io/vgpu-devices-allocated``, per
  container as sets of card UUIDs; a recorded node that does not fit
  disagrees;
* MIG instances (a pod on ``mode: mig`` cards): the recorded ones come from
  ``hami.io/vgpu-mig-allocations``, paired with the recorded cards by GPU UUID
  as a state file's ``mig_allocations``, and are adopted with the pod; the row's
  ``mig_agree`` says whether HAMi's instances there (card, profile,
  placement) are the recorded ones (``mig_agreement_pct``).

Pods the log keeps pending: at each new timestamp (after every record of the
previous one is applied) the pending pods are tried in queue order (priority,
then creation) on the state, each one found schedulable held tentatively so
the next is tried after it (then released); only after a pod's end freed
something is a pod found unschedulable tried again. A pod hamisim could have
bound at ``t`` and that the log binds (or ends) more than ``pending_grace``
seconds later (default 11 s: kube-scheduler's longest backoff, 10 s, and
its backoff queue's 1 s flush) counts as
``pending_but_schedulable``.

A pod's init containers finishing (the kubelet's ``pods/status`` with every
init container terminated, exit 0: :data:`hamisim.io.auditlog.INIT_DONE`)
shrinks its recorded usage to its app containers' as HAMi does
(:func:`hamisim.hami.reference.app_containers_only`, once per binding), and
counts as a release for the pending pods.

kube-scheduler's nominations (:data:`hamisim.io.auditlog.NOMINATE`, its
``status.nominatedNodeName`` patch after a preemption) are kept until the pod
binds, ends or a patch clears them, and act as in
:meth:`hamisim.kube.scheduler.KubeScheduler.schedule`: a nominated pod is first
evaluated on its nominated node alone, which decides when the pod fits there
(``agree`` only on that node; the row's ``nominated_node`` and the summary's
``decided_on_nominated_node`` say so), else every node is; the CPU and memory
of the pods nominated to a node with at least the pod's priority count for
NodeResourcesFit (:func:`hamisim.kube.scheduler.nominated_load`).

Not modelled here: the preemption decision itself (a recorded preemption
shows as the victims' ends and the preemptor's nomination); ResourceQuota admission refusals count as
``unschedulable``; pods without GPU requests are applied (CPU and memory) but
not compared (kube-scheduler's own scoring places them).
"""
from __future__ import annotations

import csv
import dataclasses
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from hamisim.cluster import Cluster, SchedulerConfig
from hamisim.errors import HamisimError, InputError
from hamisim.hami.decision import REASONS, fit_reason, mig_allocations_annotation
from hamisim.hami.reference import app_containers_only
from hamisim.hami.policy import pod_gpu_policy, pod_node_policy
from hamisim.io.auditlog import (
    ANNOTATE,
    BIND,
    CREATE,
    DEVICES_ALLOCATED,
    DEVICES_TO_ALLOCATE,
    END,
    INIT_DONE,
    MIG_ALLOCATIONS,
    NOMINATE,
    AuditRecord,
    ReadStats,
    format_time,
    read_audit,
)
from hamisim.io.documents import from_plain
from hamisim.io.initialstate import InitialState, decode_devices, with_mig_allocations
from hamisim.io.kubeimport import _state_entry, pod_from_kubernetes, state_yaml
from hamisim.io.outputs import atomic_folder, write_json
from hamisim.kube.fit import resource_fit_reasons
from hamisim.kube.sampling import num_feasible_nodes_to_find
from hamisim.kube.scheduler import nominated_load
from hamisim.pods import AdmissionDenied, Pod, admit, container_request
from hamisim.shapes import ShapeCache
from hamisim.sim.kernel import _ST_FIT, KernelScheduler

__all__ = ["Validation", "validate", "validate_files", "write_validation", "OUTCOMES",
           "CSV_COLUMNS"]

#: node outcomes of a compared pod
OUTCOMES = ("agree", "tie", "sample", "disagree", "unschedulable")
CSV_COLUMNS = ("pod", "time", "seconds", "node_outcome", "cards_agree", "mig_agree",
               "recorded_node",
               "recorded_cards", "hamisim_node", "hamisim_cards", "recorded_node_score",
               "hamisim_node_score", "tied_nodes", "nominated_node", "reason", "explain")


@dataclass
class _Pending:
    name: str
    pod: Pod                      # a template: see _Walk.pod_of
    obj: dict
    created: float
    where: str
    seq: int
    checked: int = -1             # release counter at the last unschedulable check
    schedulable_at: float | None = None
    ann: dict = field(default_factory=dict)


@dataclass
class _Running:
    node: int
    devices: str | None
    n_init: int
    cpu: int
    mem: int
    namespace: str
    mig: str | None = None        # hami.io/vgpu-mig-allocations
    #: its picks while its init containers run (None: none to finish, or finished)
    containers: list | None = None
    init_finished: bool = False


@dataclass
class Validation:
    """What :func:`validate` found (``summary`` is ``validation.json``)."""

    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    #: per disagreement row (same order, up to the explain limit): the pod
    #: object and the state entries it saw, for ``hamisim explain``
    bundles: list[tuple[dict, list[dict]]]


class _Walk:
    def __init__(self, cluster: Cluster, pending_grace: float, explain_limit: int) -> None:
        self.cluster = cluster
        # whether HAMi decides a pod: once per request shape
        self.wants_gpu = ShapeCache(lambda pod: _wants_gpu(pod, cluster.scheduler))
        # every node examined: the comparison's rule (module docstring)
        self.full = dataclasses.replace(cluster, scheduler=dataclasses.replace(
            cluster.scheduler, percentage_of_nodes_to_score=100))
        self.ks = KernelScheduler(self.full)
        self.core = self.ks._core
        self.state = self.ks.state
        self.n = len(cluster.nodes)
        self.wanted = num_feasible_nodes_to_find(cluster.scheduler.percentage_of_nodes_to_score,
                                                 self.n)
        self.node_index = {nd.name: i for i, nd in enumerate(cluster.nodes)}
        self.capacity = [(sum(c.count for c in nd.cards), sum(c.devcore for c in nd.cards),
                          sum(c.devmem for c in nd.cards)) for nd in cluster.nodes]
        #: node scores (float32) and the nodes whose score changed since
        self.score_of = np.zeros(self.n, dtype=np.float32)
        self.dirty: set[int] = set(range(self.n))
        self.cards = [{c.id: c for c in nd.cards} for nd in cluster.nodes]
        self.grace = pending_grace
        self.explain_limit = explain_limit
        self.pending: dict[str, _Pending] = {}
        self.running: dict[str, _Running] = {}
        self.ann: dict[str, dict] = {}       # HAMi annotations of pods not created in the log
        #: kube-scheduler's nominations: pod -> (node, priority, cpu, memory), the
        #: shape of KubeScheduler.nominated (hamisim.kube.scheduler.nominated_load)
        self.nominated: dict[str, tuple[int, int, int, int]] = {}
        self.from_nominated = 0              # comparisons decided on the nominated node
        self.templates: dict[tuple, Pod] = {}
        self.releases = 0
        self.checked_releases = -1
        self.flagged: set[str] = set()      # pending pods found schedulable
        self.fresh = False                   # pods created since the last check
        self.seq = 0
        self.t0: float | None = None
        self.now: float | None = None
        self.counts = dict.fromkeys(OUTCOMES, 0)
        self.cards_compared = 0
        self.cards_agree = 0
        self.mig_compared = 0
        self.mig_agree = 0
        self.skipped: dict[str, int] = {}
        self.pending_late: list[dict] = []
        self.n_pending_late = 0
        self.rows: list[dict] = []
        self.bundles: list[tuple[dict, list[dict]]] = []

    # -- inputs ----------------------------------------------------------
    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def pod_of(self, rec: AuditRecord) -> Pod:
        """The pod of a create record, as a template shared by pods of the same spec
        (its name may be another pod's: the walk keeps names apart, and names a
        template only where the kernel keeps it, :meth:`check_pending`)."""
        obj = rec.obj
        meta = obj.get("metadata") or {}
        ann = meta.get("annotations") or {}
        hami = tuple(sorted((k, v) for k, v in ann.items()
                            if isinstance(k, str) and (k.startswith("hami.io/")
                                                       or k.startswith("nvidia.com/"))))
        key = (rec.pod.split("/", 1)[0], json.dumps(obj.get("spec"), sort_keys=True), hami)
        tmpl = self.templates.get(key)
        if tmpl is None:
            path, _, line = rec.where.rpartition(":")
            doc = from_plain(obj, path, int(line)).as_doc("the pod")
            tmpl = pod_from_kubernetes(doc)
            if len(self.templates) > 65536:
                self.templates.clear()
            self.templates[key] = tmpl
        return tmpl

    def adopt_state(self, state: InitialState) -> None:
        for p in state.pods:
            i = self.node_index[p.node]
            self.ks.adopt(p.name, i, p.containers, p.n_init, p.cpu_milli, p.memory_mib,
                          namespace=p.namespace)
            # init_finished: the state already dropped the init containers' picks
            running = any(p.containers[:p.n_init])
            self.running[p.name] = _Running(i, p.devices, p.n_init, p.cpu_milli,
                                            p.memory_mib, p.namespace,
                                            mig_allocations_annotation(p.containers),
                                            p.containers if running else None,
                                            bool(p.n_init and p.devices and not running))

    # -- the walk ----------------------------------------------------------
    def feed(self, rec: AuditRecord) -> None:
        if self.t0 is None:
            self.t0 = rec.time
        if self.now is not None and rec.time > self.now:
            self.check_pending()
        self.now = rec.time if self.now is None else max(self.now, rec.time)
        kind = rec.kind
        if kind == CREATE:
            self.create(rec)
        elif kind == ANNOTATE:
            p = self.pending.get(rec.pod)
            target = p.ann if p is not None else self.ann.setdefault(rec.pod, {})
            for k, v in rec.annotations.items():
                if v is None:
                    target.pop(k, None)
                else:
                    target[k] = v
        elif kind == BIND:
            self.bind(rec)
        elif kind == END:
            self.end(rec)
        elif kind == INIT_DONE:
            self.init_done(rec)
        elif kind == NOMINATE:
            self.nominate(rec)

    def nominate(self, rec: AuditRecord) -> None:
        """kube-scheduler set (or cleared: ``""``) the pending pod's
        ``status.nominatedNodeName``: its CPU and memory count on that node for
        pods of no higher priority, and its next attempt tries that node first."""
        if not rec.node:
            self.nominated.pop(rec.pod, None)
            return
        p = self.pending.get(rec.pod)
        i = self.node_index.get(rec.node)
        if p is None or i is None:
            self.skip("nomination of a pod not pending" if p is None else
                      "nominated to a node not in the cluster")
            return
        self.nominated[rec.pod] = (i, p.pod.priority, p.pod.cpu_milli, p.pod.memory_mib)

    def init_done(self, rec: AuditRecord) -> None:
        """Every init container succeeded: HAMi's shrink to the app containers'
        usage (as :meth:`hamisim.sim.engine.Engine._init_done`), once per binding."""
        r = self.running.get(rec.pod)
        if r is None or r.containers is None:
            return
        app = app_containers_only(r.containers, r.n_init, self.ks._aligned[r.node])
        self.ks.adopt(rec.pod, r.node, app, 0, r.cpu, r.mem, namespace=r.namespace,
                      app_only=True)
        r.containers = None
        r.init_finished = True
        self.dirty.add(r.node)
        self.releases += 1                  # room freed: pending pods are tried again

    def create(self, rec: AuditRecord) -> None:
        spec = rec.obj.get("spec") if isinstance(rec.obj.get("spec"), dict) else {}
        pod = self.pod_of(rec)
        node = spec.get("nodeName")
        if isinstance(node, str) and node:
            # bound at creation (a static or DaemonSet pod): no scheduler was asked
            self.skip("node set at creation (no scheduler asked)")
            i = self.node_index.get(node)
            if i is not None and rec.pod not in self.running:
                self.ks.adopt(rec.pod, i, [], 0, pod.cpu_milli, pod.memory_mib,
                              namespace=pod.namespace)
                self.running[rec.pod] = _Running(i, None, 0, pod.cpu_milli, pod.memory_mib,
                                                 pod.namespace)
            return
        self.seq += 1
        p = _Pending(rec.pod, pod, rec.obj, rec.time, rec.where, self.seq)
        ann = ((rec.obj.get("metadata") or {}).get("annotations") or {})
        for k in (DEVICES_ALLOCATED, DEVICES_TO_ALLOCATE, MIG_ALLOCATIONS):
            if k in ann:
                p.ann[k] = ann[k]
        self.pending[rec.pod] = p
        self.fresh = True

    def end(self, rec: AuditRecord) -> None:
        self.nominated.pop(rec.pod, None)    # PriorityQueue.Delete drops its nomination
        p = self.pending.pop(rec.pod, None)
        if p is not None:
            self.late(p, rec.time, "ended pending")
        r = self.running.pop(rec.pod, None)
        if r is not None:
            self.ks.delete(rec.pod)
            self.dirty.add(r.node)
            self.releases += 1
        self.ann.pop(rec.pod, None)

    def late(self, p: _Pending, t: float, what: str) -> None:
        self.flagged.discard(p.name)
        if p.schedulable_at is not None and t - p.schedulable_at > self.grace:
            self.n_pending_late += 1
            if len(self.pending_late) < 1000:
                self.pending_late.append({
                    "pod": p.name, "schedulable_at": format_time(p.schedulable_at),
                    "waited_s": round(t - p.schedulable_at, 3), "then": what})

    # -- one recorded binding ---------------------------------------------
    def bind(self, rec: AuditRecord) -> None:
        name = rec.pod
        try:
            self._bind(rec)
        finally:
            self.nominated.pop(name, None)   # a bound pod is nominated no more

    def _bind(self, rec: AuditRecord) -> None:
        name = rec.pod
        p = self.pending.pop(name, None)
        node = self.node_index.get(rec.node)
        ann = p.ann if p is not None else self.ann.pop(name, {})
        devices = ann.get(DEVICES_ALLOCATED) or ann.get(DEVICES_TO_ALLOCATE) or None
        mig = ann.get(MIG_ALLOCATIONS) or None
        if node is None:
            self.skip("bound to a node not in the cluster")
            return
        containers: list | None = None
        bad = "recorded cards not on the recorded node"
        if devices:
            try:
                containers = decode_devices(devices, None, self.cards[node], rec.node)
            except InputError:
                containers = None
            if containers is not None:
                # the picks on MIG cards with the instances HAMi recorded for them
                try:
                    containers = with_mig_allocations(mig, containers, self.cards[node])
                except InputError:
                    containers = None
                    bad = "recorded MIG instances do not match the recorded cards"
        if p is None:
            self.skip("created before the log starts (give --state)")
            if name not in self.running:
                self.apply(name, node, containers or [], devices if containers else None, 0,
                           0, 0, "default", mig if containers else None)
            return
        pod = p.pod
        self.late(p, rec.time, "bound")
        n_init = len(pod.init_containers)
        if devices and containers is None:
            self.skip(bad)
            self.apply(name, node, [], None, n_init, pod.cpu_milli, pod.memory_mib,
                       pod.namespace)
            return
        if not self.wants_gpu.get(pod):
            self.skip("no GPU request (kube-scheduler's own choice)")
            self.apply(name, node, containers or [], devices, n_init, pod.cpu_milli,
                       pod.memory_mib, pod.namespace, mig)
            return
        self.compare(rec, p, node, containers or [])
        self.apply(name, node, containers or [], devices, n_init, pod.cpu_milli,
                   pod.memory_mib, pod.namespace, mig)

    def apply(self, name: str, node: int, containers: list, devices: str | None, n_init: int,
              cpu: int, mem: int, namespace: str, mig: str | None = None) -> None:
        old = self.running.get(name)
        if old is not None:
            self.ks.delete(name)
            self.dirty.add(old.node)
        self.ks.adopt(name, node, containers, n_init, cpu, mem, namespace=namespace)
        self.dirty.add(node)
        self.running[name] = _Running(node, devices, n_init, cpu, mem, namespace, mig,
                                      containers if n_init and any(containers) else None)

    def _node_score(self, node: int) -> np.float32:
        """HAMi's node score of ``node`` now, before the pod (HAMI-SEMANTICS §5.3;
        float32 as :func:`hamisim.hami.reference.node_base_score`)."""
        s = self.state
        r0, r1 = int(s.node_start[node]), int(s.node_start[node + 1])
        count, devcore, devmem = self.capacity[node]
        if count == 0 or devcore == 0 or devmem == 0:
            return np.float32(0)
        f = np.float32
        used = int(s.used[r0:r1].sum())
        cores = int(s.usedcores[r0:r1].sum())
        mem = int(s.usedmem[r0:r1].sum())
        return f(10) * ((f(used) / f(count) + f(cores) / f(devcore)) + f(mem) / f(devmem))

    def _scores(self) -> np.ndarray:
        """Every node's score, kept up to date for the nodes pods left or joined."""
        for i in self.dirty:
            self.score_of[i] = self._node_score(i)
        self.dirty.clear()
        return self.score_of

    def _score(self, node: int) -> float:
        """HAMi's node score of ``node`` now, as the shortest decimal of its float32."""
        if node in self.dirty:
            self.score_of[node] = self._node_score(node)
            self.dirty.discard(node)
        return float(str(self.score_of[node]))

    def _kube_ok(self, pod: Pod, shape, node: int) -> list[str]:
        if shape.gate is not None and shape.gate[node]:
            return ["rejected by kube-scheduler's filters (unschedulable node, taint or "
                    "node affinity/selector)"]
        s = self.state
        return resource_fit_reasons(self.cluster.nodes[node],
                                    (int(s.req_cpu[node]), int(s.req_mem[node])), pod)

    def _cards_on(self, pod: Pod, shape, node: int
                  ) -> tuple[list[str] | None, list[tuple], list[tuple]]:
        """HAMi's verdict on ``node``: (reasons, or None when it fits; its picks;
        its MIG instances as sorted ``(card, profile, start, size)``)."""
        kube = self._kube_ok(pod, shape, node)
        if kube:
            return kube, [], []
        st, _, picks, counts, n_cards = self.core.score_node(shape.spec, node)
        if st == _ST_FIT:
            state = self.state
            ids = state.card_ids
            r0 = int(state.node_start[node])
            inst: list[tuple] = []
            if state.has_mig:
                for cp, cm in zip(picks, self.core.mig_picks(len(picks))):
                    inst += [(ids[r0 + q], state.mp_name[prof], *state.pl_place[pl])
                             for (q, _, _), (prof, pl) in zip(cp, cm) if prof >= 0]
            return None, [tuple(sorted(ids[r0 + q] for q, _, _ in cp)) for cp in picks
                          if cp], sorted(inst)
        hist = {REASONS[k]: c for k, c in enumerate(counts) if c}
        if hist:
            return [fit_reason(hist, n_cards)], [], []
        return ["NodeInsufficientDevice" if n_cards else "node unregistered"], [], []

    def _no_mig(self, recorded_mig: list) -> bool | str:
        """``mig_agree`` of a pod hamisim does not place: False (counted) when the
        log gives it MIG instances, else empty."""
        if not recorded_mig:
            return ""
        self.mig_compared += 1
        return False

    def compare(self, rec: AuditRecord, p: _Pending, node: int, containers: list) -> None:
        pod, core = p.pod, self.core
        recorded_cards = [tuple(sorted(q.uuid for q in c)) for c in containers if c]
        recorded_mig = sorted((q.uuid, *q.mig) for c in containers for q in c
                              if q.mig is not None)
        row: dict[str, Any] = {
            "pod": p.name, "time": rec.time,        # formatted by add_row
            "seconds": round(rec.time - (self.t0 or rec.time), 6),
            "recorded_node": self.cluster.nodes[node].name,
            "recorded_cards": _cards_text(recorded_cards), "hamisim_node": "",
            "hamisim_cards": "", "recorded_node_score": self._score(node),
            "hamisim_node_score": "", "tied_nodes": 0, "reason": "", "explain": "",
            "mig_agree": "", "nominated_node": ""}
        try:
            shape = self.ks.prepared_shape(pod)
            refused = None if shape.filter_error is None else \
                f"HAMi's Filter errors out: {shape.filter_error}"
        except ValueError as err:
            refused = f"HAMi's admission refuses the pod: {err}"
        if refused is not None:
            self.counts["unschedulable"] += 1
            self.cards_compared += 1
            row.update(node_outcome="unschedulable", cards_agree=False,
                       mig_agree=self._no_mig(recorded_mig), reason=refused)
            self.add_row(row, p)
            return
        # the CPU and memory of the pods nominated to a node (of at least this
        # pod's priority) count for NodeResourcesFit during this decision only
        load = nominated_load(self.nominated, p.name, pod.priority)
        if load:
            for i, (cpu, mem) in load.items():
                core.apply(i, [], [], [], [], cpu, mem, 1)
        try:
            self._decide(rec, p, node, row, shape, recorded_cards, recorded_mig)
        finally:
            if load:
                for i, (cpu, mem) in load.items():
                    core.apply(i, [], [], [], [], cpu, mem, -1)

    def _decide(self, rec: AuditRecord, p: _Pending, node: int, row: dict, shape,
                recorded_cards: list, recorded_mig: list) -> None:
        """HAMi's decision behind kube-scheduler (a nominated pod: its nominated
        node alone first), compared with the recorded ``node``."""
        pod, core, ks = p.pod, self.core, self.ks
        nom = self.nominated.get(p.name)
        if nom is not None:
            row["nominated_node"] = self.cluster.nodes[nom[0]].name
            if self._cards_on(pod, shape, nom[0])[0] is None:
                # schedulePod's evaluateNominatedNode: the filters and HAMi's
                # Filter/Score on that node alone take the pod there
                self.from_nominated += 1
                self._compare_with(p, node, row, shape, recorded_cards, recorded_mig,
                                   nom[0], np.array([nom[0]]), True)
                return
        best = core.attempt(shape.spec, 0, self.n, shape.wants_gpu, shape.node_spread,
                            False, True)
        if best < 0:
            msg = ks.failure_message(shape.wants_gpu)
            self.counts["unschedulable"] += 1
            self.cards_compared += 1
            row.update(node_outcome="unschedulable", cards_agree=False,
                       mig_agree=self._no_mig(recorded_mig),
                       reason=f"hamisim finds no node: {msg}")
            self.add_row(row, p)
            return
        window = core.np_window
        chosen = int(window[best])
        tied = window[core.np_tied[:core.n_tied]].copy()
        self._compare_with(p, node, row, shape, recorded_cards, recorded_mig, chosen, tied,
                           False)

    def _compare_with(self, p: _Pending, node: int, row: dict, shape, recorded_cards: list,
                      recorded_mig: list, chosen: int, tied: np.ndarray,
                      nominated: bool) -> None:
        """Count and report HAMi's pick ``chosen`` (``tied``: the nodes tied with
        it; ``nominated``: decided on the pod's nominated node alone)."""
        pod = p.pod
        cfg = self.cluster.scheduler
        row["hamisim_node"] = self.cluster.nodes[chosen].name
        row["hamisim_node_score"] = self._score(chosen)
        row["tied_nodes"] = len(tied)
        rec_reasons, rec_picks, rec_mig = self._cards_on(pod, shape, node)
        spread = shape.node_spread
        node_policy = pod_node_policy(cfg.node_scheduler_policy, pod.annotations)
        if node == chosen:
            outcome = "agree"
        elif bool((tied == node).any()):
            outcome = "tie"
        elif not nominated and rec_reasons is None and self.wanted < self.n and \
                self._best_in_some_sample(pod, shape, node, spread):
            outcome = "sample"
        else:
            outcome = "disagree"
        self.counts[outcome] += 1
        if rec_reasons is not None:
            node_reason = f"recorded node {row['recorded_node']} does not fit: " \
                          f"{', '.join(rec_reasons)}"
        elif outcome == "disagree" and nominated:
            node_reason = (f"kube-scheduler tries the nominated node {row['hamisim_node']} "
                           "alone first and HAMi takes the pod there; the recorded node "
                           "fits too")
        elif outcome == "disagree":
            node_reason = (f"recorded node fits but HAMi's {node_policy} prefers "
                           f"{row['hamisim_node']} (node score {row['hamisim_node_score']} "
                           f"against {row['recorded_node_score']}, "
                           f"{'lower' if spread else 'higher'} wins)")
        elif outcome == "tie":
            node_reason = (f"tie: recorded node among the {len(tied)} nodes tied at HAMi's "
                           f"best node score {row['hamisim_node_score']}")
        elif outcome == "sample":
            node_reason = ("recorded node is HAMi's best within a sample kube-scheduler "
                           f"could have drawn ({self.wanted} of {self.n} nodes)")
        else:
            node_reason = ""
        self.cards_compared += 1
        if rec_reasons is None:
            hamisim_cards, hamisim_mig = rec_picks, rec_mig
            cards_ok = sorted(hamisim_cards) == sorted(recorded_cards)
        else:
            # the picks on hamisim's own node, to show
            _, hamisim_cards, hamisim_mig = self._cards_on(pod, shape, chosen)
            cards_ok = False
        self.cards_agree += cards_ok
        mig_ok = True
        if recorded_mig or hamisim_mig:
            # on MIG cards HAMi also picks the instance: profile and placement
            mig_ok = rec_reasons is None and hamisim_mig == recorded_mig
            self.mig_compared += 1
            self.mig_agree += mig_ok
            row["mig_agree"] = mig_ok
        row["hamisim_cards"] = _cards_text(hamisim_cards)
        row["node_outcome"] = outcome
        row["cards_agree"] = cards_ok
        reasons = [node_reason] if node_reason else []
        if nominated and outcome == "agree" and (not cards_ok or not mig_ok):
            reasons.append(f"decided on the nominated node {row['hamisim_node']} alone")
        if not cards_ok and rec_reasons is None:
            gpu_policy = pod_gpu_policy(cfg.gpu_scheduler_policy, pod.annotations)
            reasons.append(f"cards: on {row['recorded_node']} HAMi's {gpu_policy} card policy "
                           f"picks {row['hamisim_cards']}, recorded {row['recorded_cards']}")
        if not mig_ok:
            reasons.append(f"MIG instances: HAMi's {_mig_text(hamisim_mig) or 'none'} on "
                           f"{row['recorded_node'] if rec_reasons is None else row['hamisim_node']}"
                           f", recorded {_mig_text(recorded_mig) or 'none'}")
        row["reason"] = "; ".join(reasons)
        if outcome in ("disagree", "unschedulable") or not cards_ok or not mig_ok:
            self.add_row(row, p)

    def _feasible(self, pod: Pod, shape) -> np.ndarray:
        """The kube-feasible nodes (kube-scheduler's filters and NodeResourcesFit,
        as the kernel tests them), in cluster order."""
        s = self.state
        ok = np.ones(self.n, dtype=bool)
        if shape.gate is not None:
            ok &= np.asarray(shape.gate) == 0
        if pod.cpu_milli > 0:
            ok &= (s.alloc_cpu == -1) | (pod.cpu_milli <= s.alloc_cpu - s.req_cpu)
        if pod.memory_mib > 0:
            ok &= (s.alloc_mem == -1) | (pod.memory_mib <= s.alloc_mem - s.req_mem)
        return np.flatnonzero(ok)

    def _best_in_some_sample(self, pod: Pod, shape, node: int, spread: bool) -> bool:
        """Whether some run of ``wanted`` consecutive kube-feasible nodes (cyclic,
        cluster order) holds ``node`` and no fitting node scoring better.

        The blockers are the better-scoring nodes HAMi's Filter passes: the
        nearest few on each side are tried one by one (usually enough); else one
        kernel pass over every node (:meth:`hamisim._core.Core.rank_attempt`,
        its rows are the nodes that fit) settles it."""
        feasible = self._feasible(pod, shape)
        m = len(feasible)
        if m <= self.wanted:
            return False            # every feasible node is examined: the full rule stands
        scores = self._scores()
        mine = scores[node]
        theirs = scores[feasible]
        cand = np.flatnonzero(theirs < mine if spread else theirs > mine)
        if not len(cand):
            return True
        pos = int(np.searchsorted(feasible, node))
        core = self.core
        sides = []
        for sign in (1, -1):
            dist = (sign * (cand - pos)) % m
            near = np.sort(dist[np.argpartition(dist, 7)[:8]]) if len(dist) > 8 else \
                np.sort(dist)
            found = None
            for d in near.tolist():
                if core.place(shape.spec, int(feasible[(pos + sign * d) % m])) == _ST_FIT:
                    found = d
                    break
            if found is None and len(dist) > 8:
                return self._sample_full(shape, feasible, pos, mine, spread)
            sides.append(m if found is None else found)
        # the nodes strictly between the nearest blocker on each side, with ``node``
        return sides[0] + sides[1] - 1 >= self.wanted

    def _sample_full(self, shape, feasible: np.ndarray, pos: int,
                     mine: np.float32, spread: bool) -> bool:
        rows = _Rows()
        self.core.rank_attempt(shape.spec, 0, self.n, rows, -1.0)
        fitting = self.core.np_rows_i[0, :rows.n]
        theirs = self.score_of[fitting]
        blockers = fitting[theirs < mine] if spread else fitting[theirs > mine]
        if not len(blockers):
            return True
        m = len(feasible)
        at = np.searchsorted(feasible, blockers)        # blockers are feasible too
        right = int(((at - pos) % m).min())
        left = int(((pos - at) % m).min())
        return right + left - 1 >= self.wanted

    def add_row(self, row: dict, p: _Pending) -> None:
        row["time"] = format_time(row["time"])
        self.rows.append(row)
        if len(self.bundles) < self.explain_limit:
            entries = []
            names = self.cluster.nodes
            for name, r in self.running.items():
                entry = _state_entry(name, names[r.node].name, r.devices, r.n_init,
                                     r.init_finished, r.cpu, r.mem, r.namespace)
                if r.mig and r.devices:
                    entry["mig_allocations"] = r.mig
                entries.append(entry)
            self.bundles.append((p.obj, entries))

    # -- pods the log keeps pending ------------------------------------------
    def check_pending(self) -> None:
        """Try the pending pods on the state as of ``self.now`` (module docstring):
        a pod not known unschedulable since the last release, or found
        schedulable before (a bind since may have taken its room)."""
        if not self.pending or (self.releases == self.checked_releases and not self.flagged
                                and not self.fresh):
            return
        self.checked_releases = self.releases
        self.fresh = False
        held: list[str] = []
        order = sorted(self.pending.values(), key=lambda q: (-q.pod.priority, q.seq))
        try:
            for q in order:
                if q.schedulable_at is None and q.checked == self.releases:
                    continue
                if not self.wants_gpu.get(q.pod):
                    q.checked = self.releases
                    continue
                # held in the kernel under its own name
                pod = q.pod if q.pod.name == q.name else q.pod.renamed(q.name)
                # as kube-scheduler: the nominated node alone first, nominated
                # pods' CPU and memory counted
                load = nominated_load(self.nominated, q.name, q.pod.priority)
                nom = self.nominated.get(q.name)
                d = None
                if nom is not None:
                    try:
                        d = self.ks.schedule(pod, nominated=load, only=nom[0])
                    except ValueError:
                        d = None
                if d is None or not d.bound:
                    try:
                        d = self.ks.schedule(pod, nominated=load)
                    except ValueError:
                        d = None
                if d is not None and d.bound:
                    held.append(q.name)
                    if q.schedulable_at is None:
                        q.schedulable_at = self.now
                        self.flagged.add(q.name)
                else:
                    q.checked = self.releases
                    if q.schedulable_at is not None:
                        q.schedulable_at = None
                        self.flagged.discard(q.name)
        finally:
            for name in held:
                self.ks.delete(name)

    def finish(self) -> None:
        if self.now is not None:
            for p in self.pending.values():
                self.late(p, self.now, "still pending at the log's end")


class _Rows:
    """A ranker for :meth:`hamisim._core.Core.rank_attempt` that only counts the rows."""

    n = 0

    def choose(self, n: int, draw: float) -> int:
        self.n = n
        return 0


def _wants_gpu(pod: Pod, config: SchedulerConfig) -> bool:
    """Whether HAMi's extender decides this pod: a container asks for an NVIDIA
    card once HAMi's webhook has mutated it (``gpumem``/``gpucores`` alone get
    ``default_gpu_num`` cards). A pod the webhook refuses is compared too: the
    kernel reports the refusal."""
    try:
        admitted = admit(pod, config)
    except AdmissionDenied:
        return True
    return any(container_request(c, config) is not None
               for c in admitted.containers + admitted.init_containers)


def _cards_text(cards: Sequence[tuple]) -> str:
    return ";".join(",".join(c) for c in cards)


def _mig_text(instances: Sequence[tuple]) -> str:
    """``card:profile@start+size`` per MIG instance."""
    return ";".join(f"{u}:{prof}@{start}+{size}" for u, prof, start, size in instances)


def validate(cluster: Cluster, records: Iterable[AuditRecord], state: InitialState | None = None,
             *, pending_grace: float = 11.0, explain_limit: int = 100) -> Validation:
    """Walk ``records`` (in log order) on ``cluster`` (with ``state``'s pods running
    when the log starts) and compare each recorded GPU binding with HAMi's
    decision (module docstring). Raises :class:`InputError` for a malformed pod."""
    from hamisim.registry import is_plugin_policy, is_research_policy
    policy = cluster.scheduler.node_scheduler_policy
    if is_research_policy(policy) or is_plugin_policy(policy) or \
            is_plugin_policy(cluster.scheduler.gpu_scheduler_policy):
        raise HamisimError("validate compares against HAMi's own policies; the cluster file "
                           f"names '{policy}'")
    w = _Walk(cluster, pending_grace, explain_limit)
    if state is not None:
        w.adopt_state(state)
    for rec in records:
        w.feed(rec)
    w.finish()
    compared = sum(w.counts.values())
    agree = w.counts["agree"] + w.counts["tie"] + w.counts["sample"]

    def pct(a: int, b: int) -> float | None:
        return round(100.0 * a / b, 3) if b else None

    summary = {
        "pods_compared": compared,
        "node_agreement_pct": pct(agree, compared),
        "node_agreement_all_nodes_pct": pct(w.counts["agree"] + w.counts["tie"], compared),
        "card_agreement_pct": pct(w.cards_agree, w.cards_compared),
        "mig_compared": w.mig_compared,
        "mig_agreement_pct": pct(w.mig_agree, w.mig_compared),
        "node_outcomes": dict(w.counts),
        "ties": w.counts["tie"],
        "bound_but_unschedulable": w.counts["unschedulable"],
        "pending_but_schedulable": w.n_pending_late,
        "pending_but_schedulable_pods": w.pending_late[:100],
        "decided_on_nominated_node": w.from_nominated,
        "disagreements": len(w.rows),
        "skipped": dict(sorted(w.skipped.items())),
        "pods_skipped": sum(w.skipped.values()),
        "log": {"first": format_time(w.t0) if w.t0 is not None else None,
                "last": format_time(w.now) if w.now is not None else None},
        "rule": {"nodes_examined": "all", "sample_size": w.wanted, "nodes": w.n,
                 "pending_grace_s": pending_grace},
    }
    return Validation(summary, w.rows, w.bundles)


def validate_files(cluster: Cluster, logs: Sequence[str | os.PathLike[str]],
                   state: InitialState | None = None, **kw: Any) -> Validation:
    """:func:`validate` on audit log files (oldest first), streamed; the reader's
    counts and located warnings go into ``summary["reader"]``."""
    stats = ReadStats()
    v = validate(cluster, read_audit(logs, stats), state, **kw)
    v.summary["reader"] = {"files": [os.fspath(p) for p in logs], "lines": stats.lines,
                           "pod_records": stats.records,
                           "skipped": dict(sorted(stats.skipped.items())),
                           "warnings": list(stats.warnings), "n_warnings": stats.n_warnings}
    return v


def write_validation(v: Validation, out: str | os.PathLike[str], cluster_path: str,
                     inputs: Mapping[str, Any] | None = None,
                     explain_options: Sequence[tuple[str, str]] = ()) -> Path:
    """Write ``validation.json``, ``disagreements.csv``, ``report.html`` and one
    ``explain/<k>/`` bundle (``pod.json``, ``state.yaml``) per disagreement up to
    the explain limit, replacing ``out`` atomically. Returns the folder.

    The rows' ``explain`` commands name the cluster and the bundles by absolute
    paths (shell-quoted), so they run from any folder, with ``explain_options``
    (the policy overrides the comparison ran under, e.g. ``("--gpu-policy",
    "spread")``)."""
    target = Path(out)
    where = Path(os.path.abspath(target))
    cluster_arg = shlex.quote(os.path.abspath(cluster_path))
    with atomic_folder(target) as tmp:
        summary = dict(v.summary)
        if inputs:
            summary["inputs"] = dict(inputs)
        for k, (obj, entries) in enumerate(v.bundles):
            d = tmp / "explain" / str(k + 1)
            d.mkdir(parents=True)
            (d / "pod.json").write_text(json.dumps(obj, indent=1) + "\n")
            (d / "state.yaml").write_text(state_yaml(entries, "hamisim validate"))
            final = where / "explain" / str(k + 1)
            v.rows[k]["explain"] = (f"hamisim explain {cluster_arg} "
                                    f"{shlex.quote(str(final / 'pod.json'))} "
                                    f"--state {shlex.quote(str(final / 'state.yaml'))} "
                                    "--percentage-of-nodes-to-score 100"
                                    + "".join(" " + shlex.join(o) for o in explain_options))
        with open(tmp / "disagreements.csv", "w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
            wr.writeheader()
            for row in v.rows:
                wr.writerow(row)
        write_json(summary, tmp / "validation.json")
        from hamisim.studies.report import validation_html
        (tmp / "report.html").write_text(validation_html(summary, v.rows))
    return target
