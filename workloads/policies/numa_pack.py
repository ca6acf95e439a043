"""A node policy of one's own (hamisim's Python node policies; not HAMi behaviour).

Rank the nodes HAMi's Filter passed: first those where every card HAMi picked
for the pod sits on one NUMA node, then the fuller node (HAMi's binpack idea,
by the share of GPU memory already allocated). Use it as

    hamisim run CLUSTER TRACE \
        --node-policy python:workloads/policies/numa_pack.py:score

``score`` is vectorised: called once per attempt with a NodeRows
(hamisim.research.plugins), one row per fitting node and numpy columns such as
``pick_numas`` (NUMA nodes HAMi's picks span), ``gpumem`` and ``gpumem_free``
(MiB), ``hami_score``, ``tenants``, ``cpu_free``, ``index``; it returns one
score per row. It runs on the compiled kernel (the default backend) and on the
reference backend alike. The highest score wins; ties go to the last node in
cluster order.

``score_each`` is the same policy per candidate (reference backend only,
``--backend reference``): it gets a hamisim.hami.reference.NodeCandidate,
``node``, ``cards`` (each card's usage before the pod), ``picks`` (per
container, the cards HAMi's Fit chose), ``hami_score`` and ``pod``, and can
read anything about them; it ranks exactly as ``score`` does.
"""
import numpy as np

from hamisim.research.plugins import vectorised


@vectorised
def score(nodes):
    used = nodes.gpumem - nodes.gpumem_free
    total = np.maximum(nodes.gpumem, 1)
    return 1000.0 * (nodes.pick_numas <= 1) + 100.0 * used / total


def score_each(candidate) -> float:
    picked = {p.uuid for picks in candidate.picks for p in picks}
    numa = {card.numa for card in candidate.cards if card.id in picked}
    one_numa = len(numa) <= 1
    total = sum(card.devmem for card in candidate.cards) or 1
    used = sum(card.usedmem for card in candidate.cards)
    return (1000.0 if one_numa else 0.0) + 100.0 * used / total
