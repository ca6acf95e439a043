"""Vectorised node policies: HAMi's candidates as columns (not HAMi behaviour).

A user's node policy (:mod:`hamisim.research.plugins`) marked with
:func:`vectorised` is called once per attempt with a :class:`NodeRows`: one row
per node that HAMi's Filter passed for the pod (cluster order), each column a
read-only numpy array, and returns one score per row; the highest wins. Both
backends build the same rows and choose with :func:`choose_row`, so they decide
identically: the kernel fills the columns in C while it filters and fits
(:meth:`hamisim._core.Core.rank_attempt`), the reference from its objects
(:func:`reference_rows`).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from hamisim.errors import HamisimError

__all__ = ["COLUMNS", "INT_COLUMNS", "FLOAT_COLUMNS", "NodeRows", "vectorised",
           "is_vectorised", "choose_row", "reference_rows", "RowRanker"]

#: Integer columns, in the kernel's row-buffer order (``Core.np_rows_i``).
INT_COLUMNS = ("index", "cards", "gpumem", "gpumem_free", "gpucores", "gpucores_free",
               "tenants", "used_cards", "pick_numas")
#: Float columns, in ``Core.np_rows_f``'s order.
FLOAT_COLUMNS = ("hami_score", "cpu_free", "memory_free")
COLUMNS = INT_COLUMNS + FLOAT_COLUMNS

_MARK = "__hamisim_vectorised__"


class NodeRows:
    """The nodes HAMi's Filter passed for one pod, one row each, in cluster order.

    Every column is a read-only numpy array of ``len(rows)`` values, the
    node's state before the pod (cards are all the node's cards):

    * ``index`` (int64): the node's position in the cluster;
    * ``hami_score`` (float64): HAMi's own node score (the binpack score, §5.3;
      HAMi's ``spread`` puts the lowest first);
    * ``cards``; ``gpumem`` / ``gpumem_free`` (MiB); ``gpucores`` /
      ``gpucores_free`` (percent points, summed over cards); ``tenants``
      (slots in use, summed); ``used_cards`` (cards with a tenant) (int64);
    * ``cpu_free`` (milli-CPU) and ``memory_free`` (MiB) (float64): allocatable
      less what the node's pods (and nominated ones) request; ``inf`` on a node
      that declares none;
    * ``pick_numas`` (int64): how many NUMA nodes the cards HAMi's Fit picked
      for the pod (every container) span.
    """

    __slots__ = ("_n",) + COLUMNS

    def __init__(self, n: int, columns: dict[str, np.ndarray]) -> None:
        self._n = n
        for name in COLUMNS:
            setattr(self, name, columns[name])

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"NodeRows({self._n} nodes: {', '.join(COLUMNS)})"


def vectorised(fn: Callable[[NodeRows], Sequence[float]]) -> Callable:
    """Mark a node policy as vectorised: ``fn(nodes: NodeRows) -> scores``,
    one float per row (a numpy array or sequence), called once per attempt;
    the highest score wins, ties as for a per-candidate policy (the last row
    in cluster order, or a draw under ``node_tie_break: random``). Such a
    policy runs on the compiled kernel (and the compiled replay engine) as
    well as on the reference backend."""
    setattr(fn, _MARK, True)
    return fn


def is_vectorised(fn: object) -> bool:
    """Whether ``fn`` was marked with :func:`vectorised`."""
    return callable(fn) and bool(getattr(fn, _MARK, False))


def choose_row(scores: object, n: int, draw: float | None, policy: str,
               name_of: Callable[[int], str] | None = None) -> int:
    """The winning row of ``n`` scored rows: the highest score, the last of
    those tied, or ``tied[int(draw * len(tied))]`` when ``draw`` (in [0, 1))
    is given. Raises :class:`HamisimError` on a wrong shape or a NaN score
    (``name_of(row)``: the row's node name, for the message)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.shape != (n,):
        raise HamisimError(f"the node policy {policy} returned {s.shape} scores "
                           f"for {n} nodes (one float per row)")
    nan = np.flatnonzero(np.isnan(s))
    if len(nan):
        where = name_of(int(nan[0])) if name_of is not None else f"row {int(nan[0])}"
        raise HamisimError(f"the node policy {policy} scored node {where} NaN")
    tied = np.flatnonzero(s == s.max())
    if draw is None or draw < 0:
        return int(tied[-1])
    return int(tied[min(int(draw * len(tied)), len(tied) - 1)])


class RowRanker:
    """A vectorised policy bound to a kernel's row buffers (``Core.np_rows_i``
    and ``np_rows_f``): :meth:`choose` builds the rows' columns as read-only
    views (no copy) and returns the winning row. The kernel calls it."""

    def __init__(self, fn: Callable, policy: str, rows_i: np.ndarray, rows_f: np.ndarray,
                 node_names: Sequence[str]) -> None:
        self.fn = fn
        self.policy = policy
        self.node_names = node_names
        vi, vf = rows_i.view(), rows_f.view()
        vi.flags.writeable = False
        vf.flags.writeable = False
        self._cols = [(name, vi[k]) for k, name in enumerate(INT_COLUMNS)] + \
                     [(name, vf[k]) for k, name in enumerate(FLOAT_COLUMNS)]
        self._index = vi[0]

    def choose(self, n: int, draw: float) -> int:
        """The winning row of the ``n`` rows the kernel filled (``draw < 0``: no draw)."""
        rows = NodeRows(n, {name: col[:n] for name, col in self._cols})
        return choose_row(self.fn(rows), n, draw, self.policy,
                          lambda r: self.node_names[int(self._index[r])])


def reference_rows(fits: Sequence, usage: Sequence, nodes: Sequence,
                   requested: Sequence[tuple[int, int]]) -> NodeRows:
    """The rows the kernel builds, from the reference's objects: ``fits``
    (node index, :class:`~hamisim.hami.reference.NodeFit`) in cluster order,
    every node's :class:`~hamisim.hami.reference.CardUsage` list, the cluster's
    nodes and the CPU and memory requested on each."""
    cols: dict[str, list] = {name: [] for name in COLUMNS}
    for i, res in fits:
        cards = usage[i]
        node = nodes[i]
        numa_of = {c.id: c.numa for c in cards}
        cols["index"].append(i)
        cols["hami_score"].append(float(res.score))
        cols["cards"].append(len(cards))
        cols["gpumem"].append(sum(c.devmem for c in cards))
        cols["gpumem_free"].append(sum(c.devmem - c.usedmem for c in cards))
        cols["gpucores"].append(sum(c.devcore for c in cards))
        cols["gpucores_free"].append(sum(c.devcore - c.usedcores for c in cards))
        cols["tenants"].append(sum(c.used for c in cards))
        cols["used_cards"].append(sum(1 for c in cards if c.used > 0))
        cols["cpu_free"].append(math.inf if node.cpu_milli is None
                                else float(node.cpu_milli - requested[i][0]))
        cols["memory_free"].append(math.inf if node.memory_mib is None
                                   else float(node.memory_mib - requested[i][1]))
        cols["pick_numas"].append(len({numa_of[p.uuid] for picks in res.containers
                                       for p in picks}))
    out = {}
    for name, values in cols.items():
        arr = np.array(values, dtype=np.int64 if name in INT_COLUMNS else np.float64)
        arr.flags.writeable = False
        out[name] = arr
    return NodeRows(len(fits), out)
