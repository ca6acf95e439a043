"""Vectorised node policies for the tests (tests/test_plugins.py,
tests/test_compiled_engine.py): few distinct scores (ties are the hard case),
and every row each backend hands over is recorded in SEEN to be compared."""
import numpy as np

from hamisim.hami.noderows import COLUMNS
from hamisim.research.plugins import vectorised

SEEN: list = []


@vectorised
def ties(nodes):
    """Few distinct values: most attempts tie several nodes."""
    return np.minimum(nodes.tenants, 2) + (nodes.pick_numas <= 1) - (nodes.used_cards > 1)


@vectorised
def record(nodes):
    """``ties``, after recording a copy of every column."""
    SEEN.append({name: np.array(getattr(nodes, name)) for name in COLUMNS})
    return ties(nodes)


@vectorised
def mixed(nodes):
    """Every column counts (so a wrong column changes decisions)."""
    cpu = np.minimum(nodes.cpu_free, 1e6) / 1e6
    mem = np.minimum(nodes.memory_free, 1e6) / 1e6
    return (nodes.hami_score - nodes.gpumem_free / 1e4 + nodes.gpucores_free / 100
            + nodes.cards - nodes.gpucores / 1e3 + nodes.gpumem / 1e6 - nodes.index / 1e3
            + cpu + mem)


def ties_each(candidate):
    """``ties`` per candidate (the reference's one call per node)."""
    picked = {p.uuid for picks in candidate.picks for p in picks}
    numas = {c.numa for c in candidate.cards if c.id in picked}
    tenants = sum(c.used for c in candidate.cards)
    used_cards = sum(1 for c in candidate.cards if c.used > 0)
    return float(min(tenants, 2) + (len(numas) <= 1) - (used_cards > 1))
