"""Users' own node and card policies, in Python (not HAMi behaviour).

``python:PATH.py:NAME`` (``PATH`` relative to the working directory) names a
policy of one's own, at one of two levels:

* **On HAMi's model**, a function. As a ``gpu_scheduler_policy``
  (``--gpu-policy``), ``NAME(card, request) -> float`` orders the cards HAMi's
  Fit tries on each node (:func:`load_card_policy`). As a
  ``node_scheduler_policy`` (cluster file, or ``--node-policy``),
  ``NAME(candidate) -> float`` ranks the nodes HAMi's Filter passed instead of
  HAMi's binpack/spread comparator: the highest score wins, ties go to the
  last node in cluster order (or to a draw under ``node_tie_break: random``).
  HAMi still decides which nodes fit and which cards each container gets (its
  Fit, with the card policy); the function sees a
  :class:`~hamisim.hami.reference.NodeCandidate` (the node, its cards' usage
  before the pod, HAMi's picks, HAMi's own node score, the pod) and must not
  change it. A pod whose own ``hami.io/node-scheduler-policy`` annotation
  names another policy is ranked by that one, as HAMi would.
* **On the FGD paper's model**, a :class:`~hamisim.research.policies.ModelPolicy`
  subclass (or instance) as the node policy: it scores the nodes that fit on
  the Open-Gpu-Share model and picks the winner's cards, replacing HAMi's
  Filter, Fit and card policy altogether. The paper's six research policies
  are such subclasses and run through the same interface
  (:mod:`hamisim.research.policies`); subclass one to change one rule.

**Vectorised node policies** (HAMi's model) run at the kernel's speed: mark the
function with :func:`vectorised` and it is called once per attempt with a
:class:`~hamisim.hami.noderows.NodeRows`, one row per node HAMi's Filter
passed (cluster order), read-only numpy columns ``index``, ``hami_score``,
``cards``, ``gpumem``/``gpumem_free``, ``gpucores``/``gpucores_free``,
``tenants``, ``used_cards``, ``cpu_free``/``memory_free`` (``inf`` where the
node declares none) and ``pick_numas`` (NUMA nodes HAMi's picks span); it
returns one score per row (highest wins, ties as above; NaN is an error)::

    from hamisim.research.plugins import vectorised

    @vectorised
    def score(nodes):
        return 1000.0 * (nodes.pick_numas <= 1) - nodes.tenants

The kernel filters and fits in C, fills the columns and calls the function
once; the reference backend builds the same rows, so both decide alike. Such a
policy runs on the default (kernel) backend and in the compiled replay engine
(``benchmarks/python_policy.py`` measures it against a run without a policy).

The per-candidate function, the card policy and the ModelPolicy run on the
readable backend (``--backend reference``, which ``run``,
``compare`` and sweeps take for them when no backend is asked for): on the
1,213-node openb cluster about 2 ms per attempt for GpuPacking's or BestFit's
rules in Python, 60 ms for FGD's (the compiled kernel: microseconds). The
compiled path is the one the six research policies took, in three steps:

1. move the class into :mod:`hamisim.research.policies`, add it to
   ``BUILTIN`` and its name to ``registry.RESEARCH_NODE_POLICIES`` (its
   position there is its policy code, :data:`hamisim.research.model.POLICY_CODES`);
2. port its score and card choice into ``_research.pyx`` (``ResearchCore``'s
   attempt and choose switch on the code; ``RESEARCH_CODES`` must list it,
   which :class:`~hamisim.research.scheduler.ResearchScheduler` checks);
3. ``tests/test_research_policies.py`` draws every name of
   ``RESEARCH_POLICIES``, so its kernel-vs-reference property test then holds
   the compiled port to the Python class, decision for decision.

A HAMi-model function goes the same way into ``hami/reference.py`` and the
kernel's node score (README, "Your own node and card policies").
"""
from __future__ import annotations

import importlib.util
import os
from typing import Callable

from hamisim.errors import HamisimError, InputError
from hamisim.hami.noderows import NodeRows, is_vectorised, vectorised
from hamisim.hami.reference import NodeCandidate
from hamisim.registry import PLUGIN_PREFIX, is_plugin_policy, is_research_policy, plugin_parts
from hamisim.research.policies import ModelPolicy

__all__ = ["NodeCandidate", "NodeRows", "ModelPolicy", "vectorised", "load_node_policy",
           "load_card_policy", "load_model_policy", "load_vectorised", "runs_compiled",
           "default_backend",
           "on_research_model", "check_policy", "plugin_file"]

_LOADED: dict[str, Callable[[NodeCandidate], float] | ModelPolicy] = {}


def load_card_policy(policy: str) -> Callable:
    """A card policy ``python:PATH.py:FUNCTION``: ``FUNCTION(card, request) ->
    float`` orders the cards HAMi's Fit tries on a node, the highest first
    (``card``: a :class:`~hamisim.hami.reference.CardUsage` with its usage and
    HAMi's card ``score``; ``request``: the container's
    :class:`~hamisim.pods.Request`, ``nums``, ``memreq``, ``coresreq``, ...).
    Fit's checks are HAMi's; a pod with its own card policy annotation keeps
    HAMi's order. Loaded as :func:`load_node_policy`."""
    fn = load_node_policy(policy)
    if isinstance(fn, ModelPolicy):
        raise HamisimError(f"card policy {policy!r} names a node policy of the Open-Gpu-Share "
                           "model (a ModelPolicy); a card policy is a function (card, request)")
    return fn


def load_node_policy(policy: str) -> Callable[[NodeCandidate], float] | ModelPolicy:
    """What a ``python:PATH.py:NAME`` policy names, loaded once per string: a
    function, or a :class:`ModelPolicy` (a subclass is instantiated); raises
    :class:`HamisimError` saying what is wrong."""
    if not is_plugin_policy(policy):
        raise HamisimError(f"{policy!r} is not a Python node policy "
                           f"({PLUGIN_PREFIX}PATH.py:FUNCTION)")
    if policy in _LOADED:
        return _LOADED[policy]
    path, name = _split(policy)
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
    if isinstance(fn, type) and issubclass(fn, ModelPolicy):
        try:
            fn = fn()
        except Exception as exc:  # noqa: BLE001 - the user's class: say what failed
            raise HamisimError(f"node policy {policy!r}: {name}() failed: "
                               f"{type(exc).__name__}: {exc}") from None
    if isinstance(fn, ModelPolicy) and not (vars(fn).get("name") or vars(type(fn)).get("name")):
        fn.name = policy.strip()        # not the name of the built-in it may extend
    if not callable(fn) and not isinstance(fn, ModelPolicy):
        raise HamisimError(f"node policy {policy!r}: {path} defines no function {name!r}")
    _LOADED[policy] = fn
    return fn


def load_vectorised(policy: str) -> Callable[[NodeRows], object]:
    """The vectorised node policy ``python:PATH.py:NAME`` names (a function
    marked with :func:`vectorised`); raises :class:`HamisimError` for any other
    policy, which runs on the readable backend only."""
    fn = load_node_policy(policy)
    if not is_vectorised(fn):
        raise HamisimError(f"the Python node policy {policy} runs on the readable backend "
                           "(add --backend reference), or mark it @vectorised "
                           "(hamisim.research.plugins) to run it on the compiled kernel")
    return fn


def runs_compiled(node_policy: str | None, card_policy: str | None) -> bool:
    """Whether the compiled kernel can place with these policies: no Python
    card policy, and a Python node policy only if it is vectorised. A policy
    that does not load counts as compiled-capable here (loading it later
    reports the error)."""
    if is_plugin_policy(card_policy):
        return False
    if not is_plugin_policy(node_policy):
        return True
    try:
        return is_vectorised(load_node_policy(node_policy))
    except HamisimError:
        return True


def default_backend(node_policy: str | None, card_policy: str | None) -> str:
    """The backend a run takes when none is asked for: the readable one for a
    Python policy the kernel cannot call (a card policy, a per-candidate or
    ModelPolicy node policy), else the compiled kernel (a vectorised node
    policy included)."""
    return "kernel" if runs_compiled(node_policy, card_policy) else "reference"


def _split(policy: str) -> tuple[str, str]:
    parts = plugin_parts(policy)
    if parts is None:
        raise HamisimError(f"node policy {policy!r}: expected {PLUGIN_PREFIX}PATH.py:FUNCTION")
    return parts


def plugin_file(policy: str) -> str:
    """The file a ``python:PATH.py:NAME`` policy names (``PATH.py``)."""
    return _split(policy)[0]


def load_model_policy(policy: str) -> ModelPolicy | None:
    """The :class:`~hamisim.research.policies.ModelPolicy` a
    ``python:PATH.py:NAME`` node policy names (a subclass, instantiated once,
    or an instance), or ``None`` when NAME is a function ranking HAMi's nodes."""
    obj = load_node_policy(policy)
    return obj if isinstance(obj, ModelPolicy) else None


def on_research_model(policy: str | None) -> bool:
    """Whether a node policy schedules on the Open-Gpu-Share model instead of
    HAMi's: one of the six research policies, or a user's ModelPolicy."""
    if is_research_policy(policy):
        return True
    return is_plugin_policy(policy) and load_model_policy(policy) is not None


def check_policy(where: str, line: int | None, policy: str, kind: str = "node") -> None:
    """Load a ``python:`` node (``kind="node"``) or card (``"gpu"``) policy now,
    so that a missing file or name is reported at ``where`` (a file, with its
    ``line``, or an option) before anything runs; other policy strings pass."""
    if not is_plugin_policy(policy):
        return
    try:
        (load_card_policy if kind == "gpu" else load_node_policy)(policy)
    except HamisimError as exc:
        raise InputError(where, line, str(exc)) from None
