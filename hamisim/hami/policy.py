"""Policy strings and annotations -> the small codes both backends use.

HAMi reads the card policy from the pod annotation
``hami.io/gpu-scheduler-policy`` (else the scheduler default) and uses it in
two different ways (HAMI-SEMANTICS §3.2, §4):

* as a *sort order* for the node's cards: *chain mode* when the string holds
  a comma or is exactly ``numa``, otherwise *single-value mode*, where the
  whole untrimmed string is compared (``" binpack"`` sorts like spread);
* as *Fit filters*: ``mutex`` and ``topology-aware`` act when they are one of
  the trimmed comma-separated tokens.

Unknown tokens are ignored by HAMi (a ``pack`` policy sorts like spread,
HAMi issue #1931), and hamisim simulates exactly that; the readers call
:func:`warn_policy` / :func:`warn_pod_policies`, which issue a
:class:`PolicyWarning` (``file:line: warning: ...``) once per distinct string.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Iterable, Mapping

from hamisim.errors import InputWarning
from hamisim.registry import RESERVE_TOKEN, is_plugin_policy, is_research_policy

__all__ = [
    "GPU_POLICY_ANNOTATION", "NODE_POLICY_ANNOTATION", "WEIGHTS_ANNOTATION",
    "NUMA_BIND_ANNOTATION", "CardPolicy", "parse_card_policy", "policy_contains",
    "pod_gpu_policy", "pod_node_policy", "reserves_cards", "node_policy_spread", "parse_weights",
    "pod_weights", "filter_error", "go_quote", "go_parse_bool", "numa_bind", "unknown_tokens",
    "PolicyWarning", "policy_problem", "warn_policy", "warn_pod_policies", "vgpu_mode_problem",
    "VGPU_MODE_ANNOTATION", "CARD_MODES",
    "KEY_BINPACK", "KEY_SPREAD", "KEY_NUMA",
    "SINGLE_MUTEX", "SINGLE_BINPACK", "SINGLE_SPREAD", "MODE_CHAIN",
]

GPU_POLICY_ANNOTATION = "hami.io/gpu-scheduler-policy"
NODE_POLICY_ANNOTATION = "hami.io/node-scheduler-policy"
WEIGHTS_ANNOTATION = "hami.io/device-scoring-weights"
NUMA_BIND_ANNOTATION = "nvidia.com/numa-bind"

# Sort keys of chain mode and the single-value modes, as small ints so the
# kernel can switch on them.
KEY_BINPACK, KEY_SPREAD, KEY_NUMA = 1, 2, 3
MODE_CHAIN, SINGLE_MUTEX, SINGLE_BINPACK, SINGLE_SPREAD = 0, 1, 2, 3

_GO_INT = re.compile(r"[+-]?[0-9]+")  # strconv.Atoi's syntax (no underscores)
_CHAIN_KEYS = {"binpack": KEY_BINPACK, "spread": KEY_SPREAD, "numa": KEY_NUMA}
_KNOWN_TOKENS = {"binpack", "spread", "numa", "mutex", "topology-aware"}


@dataclass(frozen=True)
class CardPolicy:
    """A card policy string resolved for one pod.

    ``mode`` is :data:`MODE_CHAIN` (then ``chain`` holds the sort keys, the
    numa-bind reordering already applied) or one of the ``SINGLE_*`` codes.
    ``numa_bind`` changes the single-value comparator and Fit's NUMA grouping.
    """

    text: str
    mode: int
    chain: tuple[int, ...]
    numa_bind: bool
    mutex: bool
    topology: bool
    #: the what-if token ``mutex-reserve`` (:data:`hamisim.registry.RESERVE_TOKEN`):
    #: read as ``mutex``, and the pod's cards take no other tenant while it holds them
    reserve: bool = False


def _tokens(policy: str) -> list[str]:
    return [t.strip() for t in policy.split(",")]


def policy_contains(policy: str, target: str) -> bool:
    """HAMi's filter test: is ``target`` one of the trimmed comma tokens?"""
    return target in _tokens(policy)


def unknown_tokens(policy: str) -> list[str]:
    """Tokens HAMi silently ignores (e.g. ``pack``); empty tokens excluded."""
    return [t for t in _tokens(policy) if t and t not in _KNOWN_TOKENS]


class PolicyWarning(InputWarning):
    """A policy string or annotation HAMi accepts but reads differently than it
    looks (an :class:`~hamisim.errors.InputWarning`)."""


_KEY_NAMES = {KEY_BINPACK: "binpack", KEY_SPREAD: "spread", KEY_NUMA: "numa"}


def policy_problem(policy: str, kind: str = "gpu", research_ok: bool = False) -> str | None:
    """What HAMi silently makes of a policy string it does not fully
    understand, or ``None`` when the string means what it says.

    ``kind`` is ``"gpu"`` (card policy) or ``"node"``; ``research_ok`` accepts
    the FGD research node policies (cluster-wide settings only).
    """
    if kind == "node":
        if policy in ("binpack", "spread"):
            return None
        if research_ok and (is_research_policy(policy) or is_plugin_policy(policy)):
            return None
        spaced = " (HAMi compares the whole string, spaces included)" \
            if policy.strip() in ("binpack", "spread") else ""
        return (f"node policy {policy!r} is neither 'binpack' nor 'spread'{spaced}: HAMi "
                "ranks nodes like binpack")
    if policy_contains(policy, RESERVE_TOKEN):
        return (f"card policy {policy!r}: '{RESERVE_TOKEN}' is a hamisim what-if, not HAMi "
                "v2.10 behaviour (HAMi ignores the token): read as 'mutex', and the pod's "
                "cards take no other tenant until it leaves (HAMi issue #3038)")
    if is_plugin_policy(policy):
        return None             # a user's card policy (hamisim.research.plugins)
    unknown = unknown_tokens(policy)
    parsed = parse_card_policy(policy)
    if parsed.mode == MODE_CHAIN:
        effect = "sorts cards by " + ",".join(_KEY_NAMES[k] for k in parsed.chain)
    elif parsed.mode == SINGLE_SPREAD:
        effect = "sorts cards like spread"
    else:
        effect = ""
    if unknown:
        many = len(unknown) > 1
        return (f"card policy {policy!r}: HAMi ignores the unknown token{'s' if many else ''} "
                f"{', '.join(repr(t) for t in unknown)} and {effect}")
    if parsed.mode == SINGLE_SPREAD and policy.strip() in ("binpack", "mutex", "numa"):
        return (f"card policy {policy!r}: without a comma HAMi compares the whole string, "
                f"spaces included, so it {effect}")
    return None


def warn_policy(where: str | None, policy: str, kind: str = "gpu", *,
                research_ok: bool = False) -> None:
    """Issue a :class:`PolicyWarning` at ``where`` when :func:`policy_problem`
    finds one."""
    problem = policy_problem(policy, kind, research_ok)
    if problem is not None:
        warnings.warn(PolicyWarning(where, problem), stacklevel=2)


def warn_pod_policies(pods: Iterable[tuple[str | None, Mapping[str, str] | None]]) -> None:
    """Warn about the pods' policy annotations, once per distinct string
    (at its first ``where``); ``pods`` yields ``(where, annotations)``.

    Besides the policy strings, an ``nvidia.com/numa-bind`` value that Go's
    ``strconv.ParseBool`` rejects (``yes``, ``on``) is reported: HAMi then
    does not bind the pod to one NUMA node."""
    seen: set[tuple[str, str]] = set()
    for where, pod_annotations in pods:
        if not pod_annotations:
            continue
        bind = pod_annotations.get(NUMA_BIND_ANNOTATION)
        if bind is not None and go_parse_bool(bind) is None and ("bind", bind) not in seen:
            seen.add(("bind", bind))
            warnings.warn(PolicyWarning(where, (
                f"annotation {NUMA_BIND_ANNOTATION} {bind!r}: HAMi parses it with Go's "
                "strconv.ParseBool, which rejects it, so the pod is not bound to one NUMA "
                "node (write 'true' or 'false')")), stacklevel=2)
        mode = pod_annotations.get(VGPU_MODE_ANNOTATION)
        if mode is not None and ("mode", mode) not in seen:
            seen.add(("mode", mode))
            problem = vgpu_mode_problem(mode)
            if problem is not None:
                warnings.warn(PolicyWarning(where, problem), stacklevel=2)
        for annotation, kind in ((GPU_POLICY_ANNOTATION, "gpu"), (NODE_POLICY_ANNOTATION, "node")):
            policy = pod_annotations.get(annotation)
            if policy is None or (kind, policy) in seen:
                continue
            seen.add((kind, policy))
            problem = policy_problem(policy, kind)
            if problem is not None:
                warnings.warn(PolicyWarning(where, problem), stacklevel=2)


#: the pod annotation that restricts a pod to cards of some modes
VGPU_MODE_ANNOTATION = "nvidia.com/vgpu-mode"
#: the card modes HAMi v2.10.0's NVIDIA device plugin registers
CARD_MODES = ("hami-core", "mig", "mps")


def vgpu_mode_problem(value: str) -> str | None:
    """What is probably wrong with an ``nvidia.com/vgpu-mode`` value, or ``None``.

    HAMi keeps a card when its mode is a (case-sensitive) substring of the
    value; a value naming no mode that way keeps the pod off every card."""
    if any(m in value for m in CARD_MODES):
        return None
    near = [m for m in CARD_MODES if m in value.lower()]
    hint = f" (HAMi compares case-sensitively: write {near[0]!r})" if near else ""
    return (f"annotation {VGPU_MODE_ANNOTATION} {value!r} contains no card mode "
            f"({', '.join(CARD_MODES)}), so HAMi offers the pod no card{hint}")


def parse_card_policy(policy: str, numa_bind: bool = False) -> CardPolicy:
    """Resolve a card policy string as HAMi's comparator and Fit read it.

    The what-if token ``mutex-reserve`` (not HAMi's) is read as ``mutex``
    wherever it stands, and sets :attr:`CardPolicy.reserve`."""
    if policy_contains(policy, RESERVE_TOKEN):
        as_mutex = ",".join(t.replace(RESERVE_TOKEN, "mutex") if t.strip() == RESERVE_TOKEN
                            else t for t in policy.split(","))
        parsed = parse_card_policy(as_mutex, numa_bind)
        return CardPolicy(policy, parsed.mode, parsed.chain, parsed.numa_bind, True,
                          parsed.topology, True)
    mutex = policy_contains(policy, "mutex")
    topology = policy_contains(policy, "topology-aware")
    if "," in policy or policy == "numa":
        chain: list[int] = []
        for tok in _tokens(policy):
            key = _CHAIN_KEYS.get(tok)
            if key is not None and key not in chain:
                chain.append(key)
        if not chain:
            chain = [KEY_SPREAD]
        if numa_bind and chain[0] != KEY_NUMA:
            chain = [KEY_NUMA] + [k for k in chain if k != KEY_NUMA]
        return CardPolicy(policy, MODE_CHAIN, tuple(chain), numa_bind, mutex, topology)
    if policy == "mutex":
        mode = SINGLE_MUTEX
    elif policy == "binpack":
        mode = SINGLE_BINPACK
    else:  # spread, topology-aware, "", anything unknown
        mode = SINGLE_SPREAD
    return CardPolicy(policy, mode, (), numa_bind, mutex, topology)


def reserves_cards(default: str, pods: Iterable) -> bool:
    """Whether some pod of ``pods`` (objects with ``annotations``) runs under the
    what-if ``mutex-reserve``, by its annotation or the scheduler ``default``."""
    return any(policy_contains(pod_gpu_policy(default, p.annotations), RESERVE_TOKEN)
               for p in pods)


def pod_gpu_policy(default: str, annotations: Mapping[str, str] | None) -> str:
    """The pod's card policy: its annotation, else the scheduler default."""
    if annotations and GPU_POLICY_ANNOTATION in annotations:
        return annotations[GPU_POLICY_ANNOTATION]
    return default


def pod_node_policy(default: str, annotations: Mapping[str, str] | None) -> str:
    """The pod's node policy: its annotation, else the scheduler default."""
    if annotations and NODE_POLICY_ANNOTATION in annotations:
        return annotations[NODE_POLICY_ANNOTATION]
    return default


def node_policy_spread(policy: str) -> bool:
    """Node ranking: ``spread`` puts higher scores first; anything else lower."""
    return policy == "spread"


def go_parse_bool(value: str) -> bool | None:
    """Go's ``strconv.ParseBool``: the accepted spellings, else ``None``."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def numa_bind(annotations: Mapping[str, str] | None) -> bool:
    """``nvidia.com/numa-bind`` parsed as a Go bool; unparsable means false."""
    if not annotations or NUMA_BIND_ANNOTATION not in annotations:
        return False
    return go_parse_bool(annotations[NUMA_BIND_ANNOTATION]) is True


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string (``strconv.Quote``): double quotes, backslash
    escapes for quotes, backslashes and control characters."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def parse_weights(value: str) -> tuple[int, int, int]:
    """Parse ``hami.io/device-scoring-weights`` (``slot=a,core=b,memory=c``).

    Returns ``(slot, core, memory)``. Raises ``ValueError`` with HAMi
    v2.10.0's wording, checks in its order (``pkg/util/device_scoring_weights.go``):
    three comma-separated entries; each ``key=value`` (split at the first
    ``=``); no key twice; the value an integer, not negative; then the key
    known; at least one weight positive.
    """
    def fail(problem: str) -> ValueError:
        return ValueError(f"invalid {WEIGHTS_ANNOTATION} annotation {go_quote(value)}: "
                          f"{problem}")
    parts = value.split(",")
    if len(parts) != 3:
        raise fail("expected slot, core, and memory weights")
    seen: dict[str, int] = {}
    for part in parts:
        kv = part.strip().split("=", 1)
        if len(kv) != 2:
            raise fail("expected key=value entries")
        key, raw = kv[0].strip(), kv[1].strip()
        if key in seen:
            raise fail(f"duplicate {go_quote(key)} weight")
        if not _GO_INT.fullmatch(raw) or not -2**63 <= int(raw) < 2**63:
            raise fail(f"{go_quote(key)} weight must be an integer")
        weight = int(raw)
        if weight < 0:
            raise fail(f"{go_quote(key)} weight must not be negative")
        if key not in ("slot", "core", "memory"):
            raise fail(f"unknown weight {go_quote(key)}")
        seen[key] = weight
    if not any(seen.values()):
        raise fail("at least one weight must be positive")
    return seen["slot"], seen["core"], seen["memory"]


def filter_error(error: str, pod_name: str) -> str:
    """HAMi's Filter error as kube-scheduler reports it (no ``0/N nodes`` text):
    ``calcScore failed <error> for pod <name>`` (the pod's own name, without
    its namespace)."""
    return f"calcScore failed {error} for pod {pod_name.rsplit('/', 1)[-1]}"


def pod_weights(annotations: Mapping[str, str] | None) -> tuple[int, int, int]:
    """The pod's card-score weights; ``(1, 1, 1)`` without the annotation."""
    if annotations and WEIGHTS_ANNOTATION in annotations:
        return parse_weights(annotations[WEIGHTS_ANNOTATION])
    return 1, 1, 1
