"""A node policy of one's own (hamisim's Python node policies; not HAMi behaviour).

Rank the nodes HAMi's Filter passed: first those where every card HAMi picked
for the pod sits on one NUMA node, then the fuller node (HAMi's binpack idea,
by the share of GPU memory already allocated). Use it as

    hamisim run CLUSTER TRACE --backend reference \
        --node-policy python:workloads/policies/numa_pack.py:score

The function gets a hamisim.hami.reference.NodeCandidate: ``node`` (the
cluster's Node), ``cards`` (each card's usage before the pod: ``numa``,
``used``, ``usedmem``, ``devmem``, ...), ``picks`` (per container, the cards
HAMi's Fit chose), ``hami_score`` (HAMi's own node score) and ``pod``. The
highest score wins; ties go to the last node in cluster order.
"""


def score(candidate) -> float:
    picked = {p.uuid for picks in candidate.picks for p in picks}
    numa = {card.numa for card in candidate.cards if card.id in picked}
    one_numa = len(numa) <= 1
    total = sum(card.devmem for card in candidate.cards) or 1
    used = sum(card.usedmem for card in candidate.cards)
    return (1000.0 if one_numa else 0.0) + 100.0 * used / total
