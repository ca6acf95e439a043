"""Users' own node and card policies, in Python (not HAMi behaviour).

A ``gpu_scheduler_policy`` (``--gpu-policy``) ``python:PATH.py:FUNCTION`` orders
the cards HAMi's Fit tries on each node (:func:`load_card_policy`); a node
policy of that form ranks the nodes, as follows.

A ``node_scheduler_policy`` (cluster file, or ``--node-policy``) of the form
``python:PATH.py:FUNCTION`` ranks the nodes HAMi's Filter passed with the
user's ``FUNCTION(candidate) -> float`` instead of HAMi's binpack/spread
comparator: the highest score wins, ties go to the last node in cluster order
(or to a draw under ``node_tie_break: random``). HAMi still decides which
nodes fit and which cards each container gets (its Fit, with the card
policy); the function sees a :class:`~hamisim.hami.reference.NodeCandidate`
(the node, its cards' usage before the pod, HAMi's picks, HAMi's own node
score, the pod) and must not change it. ``PATH`` is relative to the working
directory. A pod whose own ``hami.io/node-scheduler-policy`` annotation names
another policy is ranked by that one, as HAMi would.

This is the readable path: such runs use the reference backend (``--backend
reference``) and the readable engine, a few milliseconds per attempt on
small clusters. The compiled path is the one the FGD research policies take
(:mod:`hamisim.research`): a policy id in ``hamisim.research.model``, its
score in ``_research.pxi`` beside the kernel and its readable twin in
``research/reference.py``, checked against each other by
``tests/test_research_policies.py``; a Python policy that proves itself is
ported the same way (README, "Your own node policy").
"""
from __future__ import annotations

import importlib.util
import os
from typing import Callable

from hamisim.errors import HamisimError
from hamisim.hami.reference import NodeCandidate
from hamisim.registry import PLUGIN_PREFIX, is_plugin_policy

__all__ = ["NodeCandidate", "load_node_policy", "load_card_policy"]

_LOADED: dict[str, Callable[[NodeCandidate], float]] = {}


def load_card_policy(policy: str) -> Callable:
    """A card policy ``python:PATH.py:FUNCTION``: ``FUNCTION(card, request) ->
    float`` orders the cards HAMi's Fit tries on a node, the highest first
    (``card``: a :class:`~hamisim.hami.reference.CardUsage` with its usage and
    HAMi's card ``score``; ``request``: the container's
    :class:`~hamisim.pods.Request`, ``nums``, ``memreq``, ``coresreq``, ...).
    Fit's checks are HAMi's; a pod with its own card policy annotation keeps
    HAMi's order. Loaded as :func:`load_node_policy`."""
    return load_node_policy(policy)


def load_node_policy(policy: str) -> Callable[[NodeCandidate], float]:
    """The function a ``python:PATH.py:FUNCTION`` policy names (loaded once per
    string); raises :class:`HamisimError` saying what is wrong."""
    if not is_plugin_policy(policy):
        raise HamisimError(f"{policy!r} is not a Python node policy "
                           f"({PLUGIN_PREFIX}PATH.py:FUNCTION)")
    if policy in _LOADED:
        return _LOADED[policy]
    body = policy.strip()[len(PLUGIN_PREFIX):]
    path, sep, name = body.rpartition(":")
    if not sep or not path.endswith(".py") or not name.isidentifier():
        raise HamisimError(f"node policy {policy!r}: expected {PLUGIN_PREFIX}PATH.py:FUNCTION")
    if not os.path.isfile(path):
        raise HamisimError(f"node policy {policy!r}: no such file: {path}")
    spec = importlib.util.spec_from_file_location(
        f"hamisim_node_policy_{len(_LOADED)}", os.path.abspath(path))
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's file: say where it failed
        raise HamisimError(f"node policy {policy!r}: loading {path} failed: "
                           f"{type(exc).__name__}: {exc}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise HamisimError(f"node policy {policy!r}: {path} defines no function {name!r}")
    _LOADED[policy] = fn
    return fn
