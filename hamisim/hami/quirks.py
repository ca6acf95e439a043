"""HAMi v2.10's own quirks that moved a run's figures, in numbers (summary.json
``results.hami_quirks``, the console's block, report.html's section).

hamisim reproduces HAMi v2.10.0 quirks included; a planner reading a run's
figures must know when one of them drove the answer:

* ``init_container_usage``: HAMi's init-container accounting (HAMi issue #2965),
  measured by both engines during the run (:func:`hamisim.sim.result.init_container_quirk`):
  pods HAMi booked below what they use, the cards they were on, and the
  over-commit on the cards (true usage beyond a card's slots, cores, memory);
  ``init_container_usage: corrected`` (``--init-container-usage corrected``) is the
  run without it;
* ``policy_read_as``: pods whose node or card policy string HAMi does not read as
  written (an unknown node policy ranks like binpack, an unknown card token is
  dropped: :func:`hamisim.hami.policy.policy_problem`);
* ``gpucores_above_100``: pods asking more than 100 % of a card's cores, which HAMi
  charges as 100 on every card;
* ``quota_memory_uncounted``: pods of a namespace with a memory quota whose card
  memory HAMi's webhook counts as 0 MiB at creation (a percentage or a whole card).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from hamisim.cluster import Cluster
from hamisim.hami.policy import policy_problem, pod_gpu_policy, pod_node_policy
from hamisim.pods import GPUCORES, admit, pod_requests
from hamisim.registry import RESERVE_TOKEN
from hamisim.workload import Trace

__all__ = ["trace_quirks", "hami_quirks", "quirk_lines", "quirk_columns", "CORRECTED_FLAG"]

#: the one flag that gives the same run without the init-container quirk
CORRECTED_FLAG = "--init-container-usage corrected"


def _pods_per_template(workload: Trace) -> np.ndarray:
    return np.bincount(workload.template, minlength=len(workload.templates)) \
        if len(workload) else np.zeros(len(workload.templates), dtype=np.int64)


def trace_quirks(workload: Trace, cluster: Cluster) -> dict[str, Any]:
    """The quirks read off the pods as run: policy strings HAMi reads otherwise
    and ``gpucores`` above 100, each with the pods affected (trace pods; pods of
    an initial state are HAMi's already)."""
    per_template = _pods_per_template(workload)
    s = cluster.scheduler
    misread: dict[tuple[str, str], list] = {}
    cores: dict[int, int] = {}
    pods_misread = pods_cores = 0
    uncounted: dict[str, int] = {}
    for t, pod in enumerate(workload.templates):
        n = int(per_template[t])
        if n == 0:
            continue
        hit = False
        for kind, policy in (("node", pod_node_policy(s.node_scheduler_policy, pod.annotations)),
                             ("card", pod_gpu_policy(s.gpu_scheduler_policy, pod.annotations))):
            problem = policy_problem(policy, "node" if kind == "node" else "gpu",
                                     research_ok=True)
            if problem is None or RESERVE_TOKEN in problem:
                continue            # mutex-reserve is a named what-if, not a HAMi quirk
            entry = misread.setdefault((kind, policy), [problem, 0])
            entry[1] += n
            hit = True
        pods_misread += n * hit
        asked = [c.value(GPUCORES) for c in (*pod.init_containers, *pod.containers)]
        over = [v for v in asked if v is not None and v > 100]
        for v in set(over):
            cores[v] = cores.get(v, 0) + n
        pods_cores += n * bool(over)
        quota = cluster.quota_of(pod.namespace)
        if quota is not None and quota.memory is not None and _memory_uncounted(pod, s):
            uncounted[pod.namespace] = uncounted.get(pod.namespace, 0) + n
    return {
        "policy_read_as": {
            "pods_affected": pods_misread,
            "policies": [{"kind": kind, "policy": policy, "pods": n, "hami_reads": problem}
                         for (kind, policy), (problem, n) in sorted(misread.items())]},
        "gpucores_above_100": {
            "pods_affected": pods_cores,
            "values": [{"gpucores": v, "pods": n} for v, n in sorted(cores.items())]},
        "quota_memory_uncounted": {
            "pods_affected": sum(uncounted.values()),
            "namespaces": [{"namespace": ns, "pods": n} for ns, n in sorted(uncounted.items())]},
    }


def _memory_uncounted(pod, config) -> bool:
    """Whether HAMi's webhook counts 0 MiB for a container of ``pod`` that asks for
    cards (its memory as a percentage, or a whole card's): the quota check at
    creation (:func:`hamisim.hami.quota.pod_quota_request`) lets it through."""
    try:
        requests, _ = pod_requests(admit(pod, config), config)
    except ValueError:
        return False                # refused for another reason
    return any(r is not None and r.nums > 0 and r.memreq == 0 for r in requests)


def hami_quirks(measured: Mapping[str, Any], workload: Trace, cluster: Cluster) -> dict:
    """``results.hami_quirks``: the engine's measure of the init-container
    accounting (``measured``) with the accounting the run used, and
    :func:`trace_quirks`."""
    init = dict(measured.get("init_container_usage", {}))
    return {"init_container_usage": {"accounting": cluster.scheduler.init_container_usage,
                                     **init},
            **trace_quirks(workload, cluster)}


#: compare's columns of the init-container quirk (from results.hami_quirks)
QUIRK_COLUMNS = ("init_pods_underbooked", "cards_overcommitted", "overcommitted_card_hours")


def quirk_columns(results: Mapping[str, Any]) -> dict[str, float]:
    """A compare row's figures of HAMi #2965's double-booking (0 when corrected)."""
    q = (results.get("hami_quirks") or {}).get("init_container_usage") or {}
    return {"init_pods_underbooked": q.get("pods_affected", 0),
            "cards_overcommitted": q.get("cards_overcommitted", 0),
            "overcommitted_card_hours": q.get("card_seconds_overcommitted", 0.0) / 3600}


def _n(x: float) -> str:
    return f"{x:,.0f}"


def quirk_lines(quirks: Mapping[str, Any] | None) -> list[str]:
    """The quirks that moved the run, one line each (empty: none did), for the
    console's "HAMi quirks that moved this run" block and report.html."""
    if not quirks:
        return []
    out = []
    q = quirks.get("init_container_usage") or {}
    if q.get("pods_affected"):
        out.append(f"init-container accounting (HAMi #2965): {_n(q['pods_affected'])} pods "
                   f"booked below what they use, on {_n(q['cards_affected'])} cards")
        over = q.get("cards_overcommitted", 0)
        if over:
            most = [f"+{_n(q['peak_cores_over'])} % cores",
                    f"+{_n(q['peak_memory_over_mib'])} MiB"]
            if q["peak_slots_over"]:
                most.append(f"+{_n(q['peak_slots_over'])} tenants over its slots")
            out.append(f"  {_n(over)} cards over their limits (at most "
                       f"{_n(q['peak_cards_overcommitted'])} at once, "
                       f"{q['card_seconds_overcommitted'] / 3600:,.1f} card-hours); the most "
                       f"on one card: {', '.join(most)}")
            out.append(f"  cores booked twice: {q['core_seconds_over'] / 360000:,.1f} "
                       "card-hours; the cards with a tenant and the waits above are HAMi's "
                       "books, not the cards' use")
        else:
            out.append("  no card over its limits")
        out.append(f"  the corrected run: the same command with {CORRECTED_FLAG}; "
                   "compare --init-container-usage hami-v2.10,corrected runs both")
    p = quirks.get("policy_read_as") or {}
    for e in p.get("policies", []):
        out.append(f"{e['kind']} policy {e['policy']!r} of {_n(e['pods'])} pods: "
                   + e["hami_reads"].split(": ", 1)[-1])
    c = quirks.get("gpucores_above_100") or {}
    if c.get("pods_affected"):
        vals = ", ".join(f"{v['gpucores']} ({_n(v['pods'])} pods)" for v in c["values"])
        out.append(f"gpucores above 100 charged as 100 on every card: "
                   f"{_n(c['pods_affected'])} pods ({vals})")
    u = quirks.get("quota_memory_uncounted") or {}
    if u.get("pods_affected"):
        where = ", ".join(f"{e['namespace']} ({_n(e['pods'])})" for e in u["namespaces"])
        out.append(f"card memory a namespace's quota does not see (HAMi's webhook counts a "
                   f"percentage or whole-card request as 0 MiB): {_n(u['pods_affected'])} pods "
                   f"({where})")
    return out
