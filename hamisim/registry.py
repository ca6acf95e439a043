"""Node-policy names and the family each belongs to.

A ``node_scheduler_policy`` is either HAMi's (``binpack``, ``spread``; HAMi
ranks any other string like binpack) or one of the FGD paper's research
policies (:mod:`hamisim.research`, not HAMi behaviour). Readers asking for
policy warnings, the backend switch and the study specs look names up here,
so that HAMi's semantics (:mod:`hamisim.hami`) and the research policies
need not import each other. Part of the model: knows no files and no time.
"""
from __future__ import annotations

__all__ = ["HAMI_NODE_POLICIES", "RESEARCH_NODE_POLICIES", "is_research_policy",
           "RESERVE_TOKEN", "PLUGIN_PREFIX", "is_plugin_policy", "plugin_parts",
           "not_hamis"]

#: HAMi's node policies (``hami.io/node-scheduler-policy``).
HAMI_NODE_POLICIES: tuple[str, ...] = ("binpack", "spread")
#: The FGD paper's six node policies, as ``node_scheduler_policy`` values
#: (Weng et al., USENIX ATC '23); research policies, not HAMi behaviour.
RESEARCH_NODE_POLICIES: tuple[str, ...] = (
    "random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd")
_RESEARCH = frozenset(RESEARCH_NODE_POLICIES)


def is_research_policy(policy: str | None) -> bool:
    """Whether ``policy`` (a ``node_scheduler_policy``) names a research policy
    (case and surrounding spaces ignored)."""
    return policy is not None and policy.strip().lower() in _RESEARCH


#: The what-if card-policy token (not HAMi behaviour; HAMi v2.10 ignores it):
#: HAMi's ``mutex`` made two-way, a card a pod with this token holds takes no
#: other tenant until the pod leaves (HAMi issue #3038). :mod:`hamisim.hami.policy`
#: reads it, :mod:`hamisim.research` documents it.
RESERVE_TOKEN = "mutex-reserve"


#: A node or card policy of the user's own, in Python: ``python:PATH.py:NAME``
#: (:mod:`hamisim.research.plugins`; not HAMi behaviour).
PLUGIN_PREFIX = "python:"


def is_plugin_policy(policy: str | None) -> bool:
    """Whether ``policy`` (a node or card policy) names a Python policy."""
    return policy is not None and policy.strip().startswith(PLUGIN_PREFIX)


def plugin_parts(policy: str) -> tuple[str, str] | None:
    """``(PATH.py, NAME)`` of a ``python:PATH.py:NAME`` policy; ``None`` when the
    text after the prefix is not of that form."""
    path, sep, name = policy.strip()[len(PLUGIN_PREFIX):].rpartition(":")
    if not sep or not path.endswith(".py") or not name.isidentifier():
        return None
    return path, name


def not_hamis(node_policy: str | None, card_policy: str | None) -> str | None:
    """The policy of the two that HAMi's kernel cannot place with (a research
    node policy, a Python node or card policy), else ``None``: the what-ifs that
    drive the kernel directly (defrag, scaleup) refuse such clusters."""
    if is_research_policy(node_policy) or is_plugin_policy(node_policy):
        return node_policy
    if is_plugin_policy(card_policy):
        return card_policy
    return None
