"""A card policy of one's own (hamisim's Python card policies; not HAMi behaviour).

Order the cards HAMi's Fit tries on a node: the card with the fewest tenants
first, then the one with the most free memory, then the lower index. Use it as

    hamisim run CLUSTER TRACE --backend reference \
        --gpu-policy python:workloads/policies/coolest_card.py:score

The function gets each card (hamisim.hami.reference.CardUsage: ``used``,
``usedmem``, ``devmem``, ``usedcores``, ``numa``, ``index``, and ``score``,
HAMi's card score for this request) and the container's request
(hamisim.pods.Request: ``nums``, ``memreq``, ``coresreq``, ...). Fit tries the
highest score first and still applies every one of HAMi's checks.
"""


def score(card, request) -> float:
    free = card.devmem - card.usedmem
    return -1000.0 * card.used + free / max(card.devmem, 1) - card.index / 1000.0
