"""Cluster files (``.yaml``, ``.yml``, ``.json``): nodes, cards and scheduler settings.

Layout (DESIGN §4.1)::

    scheduler:                        # optional, every key optional
      gpu_scheduler_policy: spread    # string (may be a chain, e.g. "binpack,numa")
      node_scheduler_policy: binpack  # string
      default_memory: 0               # MiB, 0..2**31-1
      default_cores: 0                # 0..2**31-1
      default_gpu_num: 1              # 0..2**31-1
      memory_factor: 1                # 1..2**31-1
      percentage_of_nodes_to_score: 0 # 0..100, 0 = kube-scheduler's adaptive default
      node_tie_break: last            # last | random
    nodes:                            # non-empty list
      - name: node1                   # required, unique in the cluster
        cpu_milli: 64000              # optional allocatable CPU (absent = no constraint)
        memory_mib: 262144            # optional allocatable memory
        devices: [...]                # cards, see below; absent or [] = no HAMi cards
        nvidia_score: {...}           # optional pair scores (hami.io/node-nvidia-score)
        cordon: [GPU-A]               # optional cordoned card ids (hami.io/device-cordon)
        group: h100                   # optional group name for per-group reports
    quotas:                           # optional: ResourceQuota per namespace, as HAMi enforces it
      team-a:
        limits.nvidia.com/gpumem: 40000   # MiB (x memory_factor)
        limits.nvidia.com/gpucores: 200   # percent of a card

**Cards** (``devices``) use the field names of ``hami.io/node-nvidia-register``:
``id`` (required, unique in the whole cluster), ``type`` (required; the
card-type quirk of HAMi's card score depends on it; an empty type, which HAMi
decodes from a registration without one, loads with a warning), ``devmem`` (required,
MiB), ``count`` (vGPU slots; default 10, HAMi's chart ``deviceSplitCount``),
``devcore`` (default 100), ``index`` (default:
the card's position in the list), ``numa`` (default 0), ``health`` (default
true), ``mode`` (default ``hami-core``; ``mig`` or ``mps``, or ``''`` as HAMi
decodes a registration without one; any other spelling is an error, since
HAMi's device plugin registers no other). ``count``, ``devmem``, ``devcore``,
``index``, ``numa`` are integers in 0..2**31-1; a ``devmem`` below 256 is
probably GiB and warned. GPU indexes must be distinct within a node.

``devices`` may instead be the annotation's JSON string pasted verbatim. It is
decoded as HAMi decodes it: keys match case-insensitively, unknown keys
(``customInfo``, ``devicepairscore``, ``links``, ...) are ignored, absent
keys take Go zero values (``index`` 0, ``health`` **false**, ``mode`` and
``type`` ``""``, ``count``/``devmem``/``devcore`` 0), JSON ``null`` is absent.

**Pair scores** (``nvidia_score``): a mapping ``{uuid: {uuid: score}}``, or the
annotation's JSON string / list form ``[{"uuid": "GPU-A", "score": {"GPU-B": 100}}]``.
Every uuid must be a card id of that node; scores are integers.

**Cordon** (``cordon``): a list of card ids of that node, or the annotation's
comma-separated string (blank entries skipped, as HAMi does).

**Node groups** (for large clusters): a node entry with ``replicas: N``
expands into N identical nodes named ``<prefix>-<i>``, ``i`` = 0..N-1
zero-padded to the width of N-1 (``replicas: 1000`` gives ``gpu-000`` ..
``gpu-999``). Keys of a group entry:

* ``replicas``: number of nodes, 1..1000000 (required for a group);
* ``name_prefix`` (or ``name``, used as the prefix): the node-name prefix;
* ``cpu_milli``, ``memory_mib``: as for a node, per node;
* the cards, either ``devices`` (a list or annotation JSON as above, ``id``
  optional) or ``gpus: K`` with a single ``card:`` template (the card keys
  except ``id`` and ``index``; cards get indexes 0..K-1; ``gpus: 0`` leaves
  the template unused and warns);
* ``nvidia_score``, ``cordon``: as for a node, naming cards by their *local*
  name (the card's ``id`` as written, or its index as a string when ``id``
  is omitted); applied to every node of the group;
* ``group``: the name its nodes report under (default: the prefix).

``name_prefix`` without ``replicas`` is an error that says so. Nodes outside
groups report under their card type (:func:`hamisim.cluster.group_of`).

Card ids in a group are derived from the node name: a card with ``id: X``
becomes ``<node name>-X``, a card without ``id`` becomes
``GPU-<node name>-<index>``. ``gpus``/``card`` may also be used by a single
(non-group) node, whose cards then get ids ``GPU-<node name>-<index>``.

Every problem raises :class:`hamisim.errors.InputError` at the line of the
offending item; nothing is half-loaded.
"""
from __future__ import annotations

import difflib
import json
import os
import warnings
from dataclasses import replace
from typing import Any, Collection, Mapping

from hamisim.cluster import (
    INIT_CONTAINER_USAGES,
    KUBE_SCHEDULER_VERSIONS,
    QUOTA_CORES,
    QUOTA_MEMORY,
    TAINT_EFFECTS,
    Card,
    Cluster,
    Node,
    Quota,
    SchedulerConfig,
    Taint,
)
from hamisim.devices import (
    SIMULATED_FAMILIES,
    backend_of,
    device_family,
    family,
    is_simulated,
    vendors,
)
from hamisim.devices import ascend
from hamisim.errors import InputError, InputWarning
from hamisim.hami.gpuscore import gpu_scores, topology_scored
from hamisim.hami.policy import CARD_MODES, policy_problem, warn_policy
from hamisim.io.documents import (
    INT32_MAX,
    MAX_SAFE_INT,
    Doc,
    Value,
    from_plain,
    load_mapping,
    parse_json,
)
from hamisim.io.openb import OPENB_NODE_COLUMNS, openb_nodes_from_text
from hamisim.io.tables import first_line, read_text
from hamisim.mig import (
    DEFAULT_ALLOWLIST,
    MAX_PLACEMENT_END,
    NVML_TABLES,
    SLICE_KEYS,
    AllowedMigProfiles,
    MigPlacement,
    MigProfile,
    allowlist_problem,
    card_count,
    nvml_table_for,
    register_profiles,
)
from hamisim.registry import PLUGIN_PREFIX, is_plugin_policy, plugin_parts
from hamisim.topology import MAX_NVLINKS, TEMPLATES, GpuPlace, NicPlace, ServerTopology

__all__ = [
    "load_cluster", "cluster_from_path", "cluster_from_document", "scheduler_from_document",
    "nodes_from_document", "quotas_from_document", "quota_limit_from_value", "CLUSTER_KEYS", "SCHEDULER_KEYS", "NODE_KEYS", "CARD_KEYS",
]

CLUSTER_KEYS = frozenset({"scheduler", "nodes", "quotas"})
SCHEDULER_KEYS = frozenset({
    "gpu_scheduler_policy", "node_scheduler_policy", "default_memory", "default_cores",
    "default_gpu_num", "memory_factor", "percentage_of_nodes_to_score", "node_tie_break",
    "preemption", "kube_scheduler_version", "init_container_usage", "migProfileAllowlist",
    "hami_vnpu_core",
})
NODE_KEYS = frozenset({"name", "cpu_milli", "memory_mib", "devices", "nvidia_score", "cordon",
                       "topology",
                       "gpus", "card", "group", "labels", "taints", "unschedulable",
                       "annotations"})
GROUP_KEYS = NODE_KEYS | {"replicas", "name_prefix"}
CARD_KEYS = frozenset({"id", "index", "count", "devmem", "devcore", "type", "numa", "health",
                       "mode", "migProfiles", "customInfo"})
TEMPLATE_KEYS = CARD_KEYS - {"id", "index"}
MAX_REPLICAS = 1_000_000
#: at most this many cards on one node (the metrics meter's per-node bitmasks)
MAX_CARDS_PER_NODE = 64
#: at most this many nodes, and cards, in one cluster (guards against a typo
#: such as ``replicas: 1000000`` with ``gpus: 64`` exhausting memory)
MAX_NODES = 1_000_000
MAX_CARDS = 1 << 20
#: a MIG profile's keys (HAMi's ``MigProfile`` JSON; ``instanceCount`` is NVML's,
#: read for the card's ``count`` only)
MIG_PROFILE_KEYS = frozenset({"name", "memoryMB", "core", "sliceCount", "placements",
                              "instanceCount"})
_TIE_BREAKS = ("last", "random")


def load_cluster(path: str | os.PathLike[str], *,
                 resize: Mapping[str, int] | None = None,
                 gpu_policy: str | None = None) -> Cluster:
    """Load and validate a cluster file; raises :class:`InputError` on any problem.

    ``resize`` gives node groups (by ``name_prefix`` or ``name``) other
    ``replicas`` than the file's, everything else unchanged: a sweep's cell, or a
    what-if with more nodes of one group. ``gpu_policy`` is the card policy the
    cluster will run under when a command overrides the file's: the default
    policy decides whether HAMi's chart turns the device plugin's topology scores
    on (the cluster's own ``scheduler:`` block is returned unchanged).
    """
    name = os.fspath(path)
    if name.lower().endswith(".json"):
        cluster = _fast_json_cluster(name, resize)
        if cluster is not None:
            return cluster
    return cluster_from_document(load_mapping(name), name, resize=resize,
                                 gpu_policy=gpu_policy)


def cluster_from_document(doc: Doc, path: str | None = None, *,
                          extra_keys: Collection[str] = (),
                          resize: Mapping[str, int] | None = None,
                          gpu_policy: str | None = None) -> Cluster:
    """Build a :class:`Cluster` from a loaded top-level mapping.

    ``extra_keys`` are further top-level keys the caller handles itself
    (e.g. ``steps`` in a scenario file). ``path`` is informational; errors
    use the document's own path.
    """
    doc.check_keys(CLUSTER_KEYS | set(extra_keys))
    sched = doc.optional_doc("scheduler")
    config = scheduler_from_document(sched) if sched is not None else SchedulerConfig()
    aliases: dict[str, str] = {}
    nodes = nodes_from_document(doc.require("nodes"), resize=resize,
                                gpu_policy=gpu_policy or config.gpu_scheduler_policy,
                                allowlist=_located_allowlist(sched, config.mig_profile_allowlist),
                                aliases=aliases)
    quotas = doc.optional_doc("quotas")
    return Cluster(nodes=nodes, scheduler=config,
                   quotas=quotas_from_document(quotas) if quotas is not None else {},
                   group_aliases=aliases)


#: ResourceQuota keys HAMi does not enforce but a user may well write
_UNENFORCED_QUOTA_HINT = (f"HAMi v2.10.0 enforces only '{QUOTA_MEMORY}' and '{QUOTA_CORES}' "
                          "(kube-apiserver's own quota on requests.* is not modelled); ignored")


def quotas_from_document(doc: Doc) -> dict[str, Quota]:
    """The ``quotas:`` mapping, namespace -> ResourceQuota ``spec.hard``, as HAMi reads it.

    Only ``limits.nvidia.com/gpumem`` (MiB) and ``limits.nvidia.com/gpucores``
    count. HAMi takes the value as a plain integer (``Quantity.AsInt64``): a
    suffixed quantity such as ``24Gi`` is kept as the huge number HAMi sees,
    with a warning; a non-integer quantity is ignored by HAMi (no limit), with
    a warning; other keys are ignored with a warning.
    """
    doc = doc.with_context("quotas") if not doc.context else doc
    out: dict[str, Quota] = {}
    for namespace, value in doc.items():
        if not namespace.strip():
            raise value.error("a namespace name must not be empty")
        hard = value.as_doc(f"the quota of namespace '{namespace}'")
        limits: dict[str, int | None] = {QUOTA_MEMORY: None, QUOTA_CORES: None}
        for key, v in hard.items():
            if key not in limits:
                warnings.warn(InputWarning(f"{v.path}:{v.line}",
                                           f"quota key '{key}': {_UNENFORCED_QUOTA_HINT}"),
                              stacklevel=2)
                continue
            limits[key] = quota_limit_from_value(key, v)
        out[namespace] = Quota(memory=limits[QUOTA_MEMORY], cores=limits[QUOTA_CORES])
    return out


def quota_limit_from_value(key: str, v: Value) -> int | None:
    """One ``spec.hard`` value HAMi enforces, as ``Quantity.AsInt64`` reads it:
    an integer (a suffixed quantity becomes its plain number, with a located
    warning), or ``None`` for a fraction HAMi ignores (warned too)."""
    where = f"{v.path}:{v.line}"
    if isinstance(v.scalar, bool) or v.is_mapping or v.is_list or v.is_null:
        raise v.error(f"'{key}' must be an integer, got {v.describe()}")
    if isinstance(v.scalar, int):
        return v.as_int(key, min=0)
    text = str(v.scalar).strip()
    amount = v.as_quantity(f"'{key}'")
    if amount.denominator != 1:
        warnings.warn(InputWarning(where, f"'{key}: {text}' is not a whole number: HAMi v2.10.0 "
                                          "ignores it (no limit)"), stacklevel=3)
        return None
    number = int(amount)
    if text != str(number):
        unit = "MiB" if key == QUOTA_MEMORY else "percent of a card"
        warnings.warn(InputWarning(where, f"'{key}: {text}': HAMi v2.10.0 reads the quantity as "
                                          f"the plain number {number} ({unit})"), stacklevel=3)
    return number


def scheduler_from_document(doc: Doc) -> SchedulerConfig:
    """The ``scheduler:`` mapping as a :class:`SchedulerConfig` (absent keys: defaults)."""
    doc = doc.with_context("scheduler") if not doc.context else doc
    doc.check_keys(SCHEDULER_KEYS)
    d = SchedulerConfig()
    tie = doc.optional_str("node_tie_break", d.node_tie_break)
    if tie not in _TIE_BREAKS:
        raise doc.get("node_tie_break").error(
            f"'node_tie_break' must be 'last' or 'random', got {tie!r}")
    config = SchedulerConfig(
        gpu_scheduler_policy=doc.optional_str("gpu_scheduler_policy", d.gpu_scheduler_policy),
        node_scheduler_policy=doc.optional_str("node_scheduler_policy", d.node_scheduler_policy),
        default_memory=doc.optional_int("default_memory", d.default_memory, min=0, max=INT32_MAX),
        default_cores=doc.optional_int("default_cores", d.default_cores, min=0, max=INT32_MAX),
        default_gpu_num=doc.optional_int("default_gpu_num", d.default_gpu_num, min=0,
                                         max=INT32_MAX),
        memory_factor=doc.optional_int("memory_factor", d.memory_factor, min=1, max=INT32_MAX),
        percentage_of_nodes_to_score=doc.optional_int(
            "percentage_of_nodes_to_score", d.percentage_of_nodes_to_score, min=0, max=100),
        node_tie_break=tie,
        preemption=doc.optional_bool("preemption", d.preemption),
        kube_scheduler_version=_kube_version(doc, d.kube_scheduler_version),
        init_container_usage=_choice(doc, "init_container_usage", d.init_container_usage,
                                     INIT_CONTAINER_USAGES),
        mig_profile_allowlist=_allowlist(doc) if "migProfileAllowlist" in doc
        else d.mig_profile_allowlist,
        hami_vnpu_core=doc.optional_bool("hami_vnpu_core", d.hami_vnpu_core),
    )
    if config.default_cores > 100:
        v = doc.get("default_cores")
        warnings.warn(InputWarning(f"{v.path}:{v.line}", (
            f"'default_cores: {config.default_cores}' is more than one card's 100 percent: "
            "HAMi charges it as 100 on every card")), stacklevel=2)
    # HAMi ignores what it does not understand in a policy; hamisim does the same, and says so
    for key, kind in (("gpu_scheduler_policy", "gpu"), ("node_scheduler_policy", "node")):
        v = doc.get(key)
        if v is not None and isinstance(v.scalar, str):
            warn_policy(f"{v.path}:{v.line}", v.scalar, kind, research_ok=True)
            _check_plugin_file(v)
    return config


def _check_plugin_file(v: Value) -> None:
    """A ``python:PATH.py:NAME`` policy's form and file, located here; what the
    file defines is checked when the scheduler loads it (hamisim.research.plugins)."""
    if not is_plugin_policy(v.scalar):
        return
    parts = plugin_parts(v.scalar)
    if parts is None:
        raise v.error(f"policy {v.scalar!r}: expected {PLUGIN_PREFIX}PATH.py:NAME")
    if not os.path.isfile(parts[0]):
        raise v.error(f"policy {v.scalar!r}: no such file: {parts[0]} (the path is relative "
                      "to the working directory)")


def _allowlist(doc: Doc) -> tuple[AllowedMigProfiles, ...]:
    """``migProfileAllowlist`` (HAMi's device-config key and layout): a list of
    ``{models: [...], profiles: [...]}``, checked as HAMi checks it at start."""
    out = []
    for pos, item in enumerate(doc.require("migProfileAllowlist").as_list(
            "'migProfileAllowlist'")):
        entry = item.as_doc(f"entry {pos}").with_context(f"migProfileAllowlist entry {pos}")
        entry.check_keys({"models", "profiles"}, "an allowlist entry")
        lists, items = {}, {}
        for key in ("models", "profiles"):
            items[key] = entry.optional_list(key) or []
            lists[key] = tuple(v.as_str(f"'{key}' item", nonempty=True) for v in items[key])
        allowed = AllowedMigProfiles(lists["models"], lists["profiles"])
        problem = allowlist_problem([allowed])
        if problem is not None:
            raise entry.error(f"{problem} (HAMi's scheduler refuses to start)")
        for v, name in zip(items["profiles"], allowed.profiles):
            if name.partition(".")[0] not in SLICE_KEYS:
                # no GPU has it: HAMi's device plugin skips the name on every GPU
                raise v.error(f"MIG profile {name!r}: HAMi's device plugin maps no "
                              f"GPU-instance profile to '{name.partition('.')[0]}' and skips "
                              f"the name without a word; the slice prefixes it knows: "
                              f"{', '.join(SLICE_KEYS)}")
        out.append(allowed)
    return tuple(out)


class _LocatedAllowlist(tuple):
    """A file's ``migProfileAllowlist`` as handed to its cards, with ``where``: per
    entry, the ``(file, line)`` of each profile name (for messages only; the
    :class:`SchedulerConfig` keeps the plain tuple)."""

    where: tuple[tuple[tuple[str | None, int], ...], ...] = ()


def _located_allowlist(sched: Doc | None, allowlist: tuple[AllowedMigProfiles, ...]
                       ) -> tuple[AllowedMigProfiles, ...]:
    """``allowlist`` (read by :func:`_allowlist` from ``sched``) with where its
    names were written; the chart's default as it is."""
    if sched is None or "migProfileAllowlist" not in sched:
        return allowlist
    located = _LocatedAllowlist(allowlist)
    located.where = tuple(
        tuple((v.path, v.line) for v in item.as_doc("an entry").optional_list("profiles") or [])
        for item in sched.require("migProfileAllowlist").as_list("'migProfileAllowlist'"))
    return located


def _check_allowlisted(table, card_type: str,
                       allowlist: tuple[AllowedMigProfiles, ...]) -> None:
    """The allowlist entry that applies to a MIG card of ``card_type`` (with the
    built-in NVML ``table``) against NVML's profiles, as HAMi's device plugin looks
    each name up: by its slice prefix only (:func:`hamisim.mig.register_profiles`).

    A name whose prefix the GPU has no profile for (``9g.90gb``, or ``3g`` on an
    A30) is skipped by HAMi without a word: an error at the name, listing the
    GPU's profiles. A known prefix with another memory (``2g.12gb`` on an A100
    40GB) is registered under the name written but with NVML's memory: HAMi
    accepts it with another meaning, so a warning. Only a file's own allowlist
    is checked (:class:`_LocatedAllowlist`; the chart's default carries HAMi's own
    quirks, e.g. ``7g.79gb``)."""
    k = next((k for k, e in enumerate(allowlist) if any(m in card_type for m in e.models)), None)
    where = getattr(allowlist, "where", ())
    if k is None or not where:
        return
    for name, (path, line) in zip(allowlist[k].profiles, where[k]):
        prefix = name.partition(".")[0]
        nvml = next((p for p in table.profiles if p.slices == prefix), None)
        if nvml is None:
            raise InputError(path, line, (
                f"MIG profile {name!r}: {table.nvml_name} has no '{prefix}' GPU-instance "
                f"profile, so HAMi's device plugin skips the name without a word; card type "
                f"{card_type!r} has " + ", ".join(p.name for p in table.profiles)))
        if nvml.name != name:
            warnings.warn(InputWarning(f"{path}:{line}", (
                f"MIG profile {name!r}: on card type {card_type!r} HAMi's device plugin "
                f"registers it with NVML's '{prefix}' profile {nvml.name} ({nvml.memory_mb} "
                "MiB of memory): it looks profiles up by their slice prefix only")),
                stacklevel=4)


def _choice(doc: Doc, key: str, default: str, choices: tuple[str, ...]) -> str:
    value = doc.optional_str(key, default)
    if value not in choices:
        raise doc.get(key).error(f"'{key}' must be {' or '.join(choices)}, got {value!r}")
    return value


def _kube_version(doc: Doc, default: str) -> str:
    v = doc.get("kube_scheduler_version")
    if v is None or v.is_null:
        return default
    text = str(v.scalar).strip() if isinstance(v.scalar, (str, float)) else None
    if text is not None and text.startswith("v"):
        text = text[1:]
    if text is not None and text.count(".") == 2:
        text = text.rsplit(".", 1)[0]          # a patch release: its minor's texts
    if text not in KUBE_SCHEDULER_VERSIONS:
        raise v.error(f"'kube_scheduler_version' must be one of "
                      f"{', '.join(KUBE_SCHEDULER_VERSIONS)} (quoted, e.g. \"1.32\"), "
                      f"got {v.describe()}")
    return text


def nodes_from_document(value: Value, *, resize: Mapping[str, int] | None = None,
                        gpu_policy: str = "spread",
                        allowlist: tuple[AllowedMigProfiles, ...] = DEFAULT_ALLOWLIST,
                        aliases: dict[str, str] | None = None,
                        ) -> tuple[Node, ...]:
    """The ``nodes:`` list (groups expanded, ``resize`` applied), checking cluster-wide
    uniqueness. ``gpu_policy``: the cluster's card policy (HAMi's chart turns the
    device plugin's topology scores on when it is ``topology-aware``). ``aliases``,
    when given, receives :attr:`Cluster.group_aliases <hamisim.cluster.Cluster>`."""
    items = value.as_list("'nodes'")
    resized: set[str] = set()
    if not items:
        raise value.error("'nodes' is empty: a cluster needs at least one node")
    nodes: list[Node] = []
    node_lines: dict[str, int] = {}
    card_owner: dict[str, tuple[str, int]] = {}
    # per card type HAMi's NVIDIA backend never offers: first line, cards, nodes
    foreign: dict[str, tuple[int, list[int], list[str]]] = {}
    totals = [0, 0]     # nodes, cards so far (checked before a group is expanded)
    for pos, item in enumerate(items):
        entry = item.as_doc(f"node {pos}").with_context(f"node {pos}")
        for node, card_lines in _expand_entry(entry, totals, resize, resized, gpu_policy,
                                              allowlist, aliases):
            if node.name in node_lines:
                raise entry.error(f"duplicate node name '{node.name}' "
                                  f"(first defined on line {node_lines[node.name]})")
            node_lines[node.name] = entry.line
            for card in node.cards:
                line = card_lines[card.id]
                if card.id in card_owner:
                    other, first = card_owner[card.id]
                    raise InputError(entry.path, line,
                                     f"node '{node.name}': duplicate card id '{card.id}' "
                                     f"(already a card of node '{other}', line {first})")
                card_owner[card.id] = (node.name, line)
                if card.type.strip() and not is_simulated(card.type):
                    first, n, names = foreign.setdefault(card.type, (line, [0], []))
                    n[0] += 1
                    if not names or names[-1] != node.name:
                        names.append(node.name)
            nodes.append(node)
    unknown = sorted(set(resize or ()) - resized)
    if unknown:
        raise value.error(f"no node group '{unknown[0]}' to resize (node groups are entries "
                          "with 'replicas', named by 'name_prefix' or 'name')")
    for card_type, (line, n, names) in foreign.items():
        warn_foreign_cards(f"{value.path}:{line}", card_type, n[0], names)
    return tuple(nodes)


def warn_foreign_cards(where: str, card_type: str, cards: int, nodes: list[str]) -> None:
    """Warn that ``cards`` cards of ``card_type`` on ``nodes`` are never offered
    to a pod by the HAMi backends hamisim simulates (:mod:`hamisim.devices`):
    accepted, left out of the GPU totals. One warning per type, at its first card."""
    shown = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3:,} more" if len(nodes) > 3 else "")
    backend = backend_of(card_type)
    words = ", ".join(repr(w) for w in SIMULATED_FAMILIES)
    warnings.warn(InputWarning(where, (
        f"card type {card_type!r} ({cards:,} card{'' if cards == 1 else 's'} on "
        f"node{'' if len(nodes) == 1 else 's'} {shown}) contains none of {words}"
        + (f" (a card for {backend})" if backend else "")
        + f": no HAMi backend hamisim simulates ({vendors()}) offers it to a pod; "
        "never scheduled, left out of every GPU total (utilisation, fragmentation, offered "
        "load)")), stacklevel=2)


# ---------------------------------------------------------------------------
# the fast path for large JSON files

class _Slow(Exception):
    """The fast path declines; the line-tracking reader decides (and locates errors)."""


def _fast_json_cluster(path: str, resize: Mapping[str, int] | None) -> Cluster | None:
    """A JSON cluster file parsed by the stdlib's C parser and checked on plain data,
    or ``None`` whenever anything is unusual or wrong (the line-tracking reader then
    reports the problem at its line, or warns there). Plain nodes (``name``,
    ``cpu_milli``, ``memory_mib``, ``group``, a ``devices`` list) are checked here
    rule by rule; other entries (node groups, card templates, pair scores, cordons,
    annotation strings) go through the full reader one entry at a time."""
    try:
        text = read_text(path)
        data = json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
        return _plain_cluster(data, path, resize)
    except (_Slow, InputError, ValueError, RecursionError, TypeError):
        return None


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Slow
    return out


def _no_constant(word: str) -> Any:
    raise _Slow


def _plain_cluster(data: Any, path: str, resize: Mapping[str, int] | None) -> Cluster:
    if type(data) is not dict or not set(data) <= CLUSTER_KEYS:
        raise _Slow
    config = _plain_scheduler(data.get("scheduler"))
    quotas = _plain_quotas(data.get("quotas"))
    entries = data.get("nodes")
    if type(entries) is not list or not entries:
        raise _Slow
    plain = [type(e) is dict and set(e) <= _PLAIN_NODE_KEYS for e in entries]
    if not all(type(e) is dict for e in entries) or any("topology" in e for e in entries):
        raise _Slow                 # topologies may warn: the line-tracking reader does
    made_plain = iter(_plain_nodes([e for e, ok in zip(entries, plain) if ok]))
    nodes: list[Node] = []
    totals = [0, 0]
    resized: set[str] = set()
    aliases: dict[str, str] = {}
    for pos, (entry, ok) in enumerate(zip(entries, plain)):
        if ok:
            node = next(made_plain)
            _add_alias(aliases, node.name, node.group)
            nodes.append(node)
            totals[0] += 1
            totals[1] += len(node.cards)
        else:                               # the full reader, for this entry only
            doc = from_plain(entry, path, 0).as_doc(f"node {pos}").with_context(f"node {pos}")
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always", InputWarning)
                nodes += [n for n, _ in _expand_entry(doc, totals, resize, resized,
                                                      aliases=aliases)]
            if any(issubclass(w.category, InputWarning) for w in warned):
                raise _Slow                 # plain data has no lines: warn at the entry's own
            for w in warned:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if totals[0] > MAX_NODES or totals[1] > MAX_CARDS or set(resize or ()) - resized:
        raise _Slow
    names = [n.name for n in nodes]
    ids = [c.id for n in nodes for c in n.cards]
    if len(set(names)) != len(names) or len(set(ids)) != len(ids):
        raise _Slow
    if not all(map(is_simulated, {c.type for n in nodes for c in n.cards})):
        raise _Slow                         # cards HAMi's NVIDIA backend never offers: warned
    return Cluster(nodes=tuple(nodes), scheduler=config, quotas=quotas, group_aliases=aliases)


def _plain_quotas(quotas: Any) -> dict[str, Quota]:
    """``quotas:`` whose every limit is a plain integer >= 0 under one of the two
    keys HAMi enforces; anything else (a suffixed quantity, another key: each
    warns) goes to :func:`quotas_from_document` at its line."""
    if quotas is None:
        return {}
    if type(quotas) is not dict:
        raise _Slow
    out: dict[str, Quota] = {}
    for namespace, hard in quotas.items():
        if not namespace.strip() or type(hard) is not dict or \
                not set(hard) <= {QUOTA_MEMORY, QUOTA_CORES}:
            raise _Slow
        if any(type(value) is not int or value < 0 for value in hard.values()):
            raise _Slow
        out[namespace] = Quota(memory=hard.get(QUOTA_MEMORY), cores=hard.get(QUOTA_CORES))
    return out


_PLAIN_NODE_KEYS = frozenset({"name", "cpu_milli", "memory_mib", "devices", "group"})


def _plain_scheduler(sched: Any) -> SchedulerConfig:
    if sched is None:
        return SchedulerConfig()
    if type(sched) is not dict or not set(sched) <= SCHEDULER_KEYS - {"migProfileAllowlist"}:
        raise _Slow
    d = SchedulerConfig()
    values = {}
    for key in ("gpu_scheduler_policy", "node_scheduler_policy", "node_tie_break"):
        v = sched.get(key)
        if v is not None:
            if type(v) is not str:
                raise _Slow
            values[key] = v
    if "preemption" in sched:
        if type(sched["preemption"]) is not bool:
            raise _Slow
        values["preemption"] = sched["preemption"]
    if "init_container_usage" in sched:
        if sched["init_container_usage"] not in INIT_CONTAINER_USAGES:
            raise _Slow
        values["init_container_usage"] = sched["init_container_usage"]
    if "kube_scheduler_version" in sched:
        if sched["kube_scheduler_version"] not in KUBE_SCHEDULER_VERSIONS:
            raise _Slow                     # the line-tracking reader says what is wrong
        values["kube_scheduler_version"] = sched["kube_scheduler_version"]
    if values.get("node_tie_break", d.node_tie_break) not in _TIE_BREAKS:
        raise _Slow
    for key, kind in (("gpu_scheduler_policy", "gpu"), ("node_scheduler_policy", "node")):
        if key in values and policy_problem(values[key], kind, research_ok=True) is not None:
            raise _Slow                     # the line-tracking reader warns at its line
    for key, lo, hi in (("default_memory", 0, INT32_MAX), ("default_cores", 0, INT32_MAX),
                        ("default_gpu_num", 0, INT32_MAX), ("memory_factor", 1, INT32_MAX),
                        ("percentage_of_nodes_to_score", 0, 100)):
        v = sched.get(key)
        if v is not None:
            if type(v) is not int or not lo <= v <= hi:
                raise _Slow
            values[key] = v
    return SchedulerConfig(**values)


def _ints(values: list, default: int | None, hi: int) -> list[int]:
    """A card or node field, column-wise: absent or null take ``default`` (required
    when ``None``); every value an int (not a bool) in 0..``hi``."""
    out = values if default is None else [default if v is None else v for v in values]
    if out and (set(map(type, out)) != {int} or min(out) < 0 or max(out) > hi):
        raise _Slow
    return out


def _strs(values: list) -> list[str]:
    if values and (set(map(type, values)) != {str} or not all(map(str.strip, values))):
        raise _Slow
    return values


def _columns(devs: list[dict]):
    """``column(key)``: the values of ``key`` over ``devs`` (``None`` where absent);
    one C-level transpose when every entry has the same keys in the same order
    (a generated or imported file), a lookup per entry otherwise."""
    layouts = set(map(tuple, devs))
    if len(layouts) == 1:
        keys = next(iter(layouts))
        cols = dict(zip(keys, zip(*map(dict.values, devs))))
        absent = [None] * len(devs)
        return lambda key: list(cols[key]) if key in cols else absent
    return lambda key: [d.get(key) for d in devs]


def _plain_nodes(entries: list[dict]) -> list[Node]:
    """Plain node entries, every rule of the full reader checked column by column."""
    names = _strs([e.get("name") for e in entries])
    cpu = _ints([e.get("cpu_milli", -1) for e in entries], -1, MAX_SAFE_INT) \
        if any(e.get("cpu_milli") is not None for e in entries) else None
    mem = _ints([e.get("memory_mib", -1) for e in entries], -1, MAX_SAFE_INT) \
        if any(e.get("memory_mib") is not None for e in entries) else None
    for values, limit in ((cpu, SUSPECT_CPU_MILLI), (mem, SUSPECT_MEMORY_MIB)):
        if values and min(filter(lambda v: v > 0, values), default=limit) < limit:
            raise _Slow                     # probably CPUs or GiB: warned at its line
    groups = [e.get("group") for e in entries]
    if any(g is not None for g in groups):
        _strs([g for g in groups if g is not None])
    lists = [e.get("devices") or [] for e in entries]
    if set(map(type, lists)) - {list} or any(len(x) > MAX_CARDS_PER_NODE for x in lists):
        raise _Slow
    devs = [d for x in lists for d in x]
    if set(map(type, devs)) - {dict} or any(not set(d) <= CARD_KEYS - {"migProfiles",
                                                                      "customInfo"}
                                            for d in devs):
        raise _Slow
    column = _columns(devs)
    ids = _strs(column("id"))
    types = _strs(column("type"))
    index = column("index")
    if None in index:
        pos = [k for x in lists for k in range(len(x))]
        index = [k if v is None else v for v, k in zip(index, pos)]
    index = _ints(index, None, INT32_MAX)
    if any(getattr(family(device_family(t) or ""), "registered_type", None)
           or getattr(family(device_family(t) or ""), "registered_devcore", None)
           for t in set(types)):
        raise _Slow                         # a family's own defaults and warnings (MLU)
    count = _ints(column("count"), 10, INT32_MAX)
    devmem = _ints(column("devmem"), None, INT32_MAX)
    if devmem and min(filter(None, devmem), default=SUSPECT_DEVMEM_MIB) < SUSPECT_DEVMEM_MIB:
        raise _Slow                         # probably GiB: the full reader warns at its line
    devcore = _ints(column("devcore"), 100, INT32_MAX)
    numa = _ints(column("numa"), 0, INT32_MAX)
    health = [True if v is None else v for v in column("health")]
    mode = [_HAMI_CORE if v is None else v for v in column("mode")]
    if devs and (set(map(type, health)) != {bool} or not set(mode) <= _PLAIN_MODES):
        raise _Slow
    cards = list(map(_card, ids, index, count, devmem, devcore, types, numa, health, mode))
    nodes, k = [], 0
    for i, e in enumerate(entries):
        n = len(lists[i])
        if n and (len(set(index[k:k + n])) != n or len(set(ids[k:k + n])) != n):
            raise _Slow                     # a GPU index or card id twice on one node
        c = None if cpu is None or cpu[i] < 0 else cpu[i]
        m = None if mem is None or mem[i] < 0 else mem[i]
        nodes.append(Node(names[i], tuple(cards[k:k + n]), c, m, group=groups[i]))
        k += n
    return nodes


_HAMI_CORE = "hami-core"
#: the card modes a plain card may have (``mig`` cards and typos: the full reader)
_PLAIN_MODES = frozenset(CARD_MODES) - {"mig"} | {""}


def _card(id, index, count, devmem, devcore, type, numa, health, mode) -> Card:
    """A :class:`Card` of checked values, made without the dataclass's per-field
    ``__setattr__`` (a large cluster has a hundred thousand)."""
    card = object.__new__(Card)
    card.__dict__.update(id=id, index=index, count=count, devmem=devmem, devcore=devcore,
                         type=type, numa=numa, health=health, mode=mode)
    return card


# ---------------------------------------------------------------------------
# node entries

class _CardSpec:
    """A validated card before its final id is known (groups derive ids)."""

    __slots__ = ("card", "local", "line", "explicit_id", "numa_given")

    def __init__(self, card: Card, local: str, line: int, explicit_id: bool,
                 numa_given: bool = True) -> None:
        self.card = card
        self.local = local
        self.line = line
        self.explicit_id = explicit_id
        self.numa_given = numa_given


def _expand_entry(entry: Doc, totals: list[int] | None = None,
                  resize: Mapping[str, int] | None = None, resized: set[str] | None = None,
                  gpu_policy: str = "spread",
                  allowlist: tuple[AllowedMigProfiles, ...] = DEFAULT_ALLOWLIST,
                  aliases: dict[str, str] | None = None,
                  ) -> list[tuple[Node, dict[str, int]]]:
    """The node(s) of one ``nodes:`` entry, each with the source line of every card id;
    ``aliases`` (when given) receives the entry's other name (:func:`_add_alias`)."""
    group = "replicas" in entry
    if group:
        entry.check_keys(GROUP_KEYS, "a node group")
        replicas = entry.require_int("replicas", min=1, max=MAX_REPLICAS)
        if "name" in entry and "name_prefix" in entry:
            raise entry.error("give 'name_prefix' or 'name' for a node group, not both",
                              line=entry.key_line("name"))
        key = "name_prefix" if "name_prefix" in entry else "name"
        if key not in entry:
            raise entry.error("a node group (with 'replicas') needs 'name_prefix' or 'name'")
        prefix = entry.require_str(key)
        if resize and prefix in resize:
            replicas = resize[prefix]
            if not 1 <= replicas <= MAX_REPLICAS:
                raise entry.error(f"node group '{prefix}' resized to {replicas} nodes; "
                                  f"it must have 1..{MAX_REPLICAS}")
            if resized is not None:
                resized.add(prefix)
        width = len(str(replicas - 1))
        names = [f"{prefix}-{i:0{width}d}" for i in range(replicas)]
        ctx = f"node group '{prefix}'"
    else:
        if "name_prefix" in entry:
            raise entry.error("'name_prefix' names the nodes of a node group: give "
                              "'replicas: N' too (for one node, write 'name')",
                              line=entry.key_line("name_prefix"))
        entry.check_keys(NODE_KEYS, "a node")
        names = [entry.require_str("name")]
        ctx = f"node '{names[0]}'"
    group_name = entry.optional_str("group", nonempty=True) or (prefix if group else None)
    if aliases is not None:
        _add_alias(aliases, prefix if group else names[0], group_name)
    entry = entry.with_context(ctx)
    cpu = entry.optional_int("cpu_milli", min=0)
    mem = entry.optional_int("memory_mib", min=0)
    _warn_node_units(entry, cpu, mem)
    topology = server_topology(entry.get("topology")) if "topology" in entry else None
    specs = _card_specs(entry, derived_ids=group, allowlist=allowlist)
    if topology is not None:
        specs = _place_cards(entry, specs, topology)
    if len(specs) > MAX_CARDS_PER_NODE:
        raise entry.error(f"{len(specs)} cards on one node; hamisim models at most "
                          f"{MAX_CARDS_PER_NODE} cards per node",
                          line=entry.key_line("gpus" if "gpus" in entry else "devices"))
    if totals is not None:
        totals[0] += len(names)
        totals[1] += len(names) * len(specs)
        if totals[0] > MAX_NODES or totals[1] > MAX_CARDS:
            raise entry.error(f"the cluster would have {totals[0]:,} nodes and {totals[1]:,} "
                              f"cards so far; hamisim models at most {MAX_NODES:,} nodes and "
                              f"{MAX_CARDS:,} cards")
    derive = group or "gpus" in entry or (topology is not None and not _gives_cards(entry))
    local_ids = {s.local: s for s in specs}
    scores = _pair_scores(entry, local_ids)
    if topology is not None and not scores and topology_scored(topology, gpu_policy):
        by_index = {s.card.index: s.local for s in specs}
        derived, asymmetric = gpu_scores(topology)
        scores = {by_index[a]: {by_index[b]: v for b, v in row.items()}
                  for a, row in derived.items()}
        if asymmetric:
            warnings.warn(InputWarning(
                f"{entry.path}:{entry.key_line('topology')}",
                f"{entry.context}: some GPU pair has NVLink on one side only; HAMi's device "
                "plugin scores such pairs 0 and warns AsymmetricGPUP2PLink"))
    cordon = _cordon(entry, local_ids)
    labels = _labels(entry)
    vnpu_core = _node_annotations(entry)
    taints = _taints(entry)
    unschedulable = bool(entry.optional_bool("unschedulable", False))

    nodes = []
    for name in names:
        if derive:
            ids = {s.local: (f"{name}-{s.local}" if s.explicit_id
                             else f"GPU-{name}-{s.card.index}") for s in specs}
            cards = tuple(replace(s.card, id=ids[s.local]) for s in specs)
        else:
            ids = {s.local: s.local for s in specs}
            cards = tuple(s.card for s in specs)
        node = Node(
            name=name, cards=cards, cpu_milli=cpu, memory_mib=mem,
            pair_scores={ids[a]: {ids[b]: v for b, v in row.items()} for a, row in scores.items()},
            cordon=frozenset(ids[c] for c in cordon), group=group_name,
            labels=dict(labels), taints=taints, unschedulable=unschedulable,
            topology=topology, hami_vnpu_core=vnpu_core,
        )
        nodes.append((node, {ids[s.local]: s.line for s in specs}))
    return nodes


#: a node's allocatable CPU or memory below these is probably in whole CPUs or GiB
SUSPECT_CPU_MILLI, SUSPECT_MEMORY_MIB = 1000, 1024


def _add_alias(aliases: dict[str, str], name: str, group: str | None) -> None:
    """An entry named ``name`` (its ``name_prefix``, or a single node's ``name``)
    whose nodes report under ``group``: ``name`` is another name of the group
    (the first entry of that name wins)."""
    if group and name != group:
        aliases.setdefault(name, group)


def _warn_node_units(entry: Doc, cpu: int | None, mem: int | None) -> None:
    """``cpu_milli`` below one CPU, ``memory_mib`` below 1 GiB: valid, but no
    GPU server has so little; probably CPUs or GiB. Warned at the value's line."""
    for key, value, limit, unit, scale in (
            ("cpu_milli", cpu, SUSPECT_CPU_MILLI, "CPUs", 1000),
            ("memory_mib", mem, SUSPECT_MEMORY_MIB, "GiB", 1024)):
        if value is not None and 0 < value < limit:
            v = entry.get(key)
            warnings.warn(InputWarning(f"{v.path}:{v.line}", (
                f"{entry.context}: '{key}: {value}' is less than a GPU server has, did you "
                f"mean {value * scale} ({value} {unit})?")), stacklevel=3)


TOPOLOGY_KEYS = frozenset({"template", "gpus", "nvlink", "nvswitch", "nics", "score"})


def server_topology(value: Value) -> ServerTopology:
    """A node's ``topology``: a template name, or a mapping (a ``template`` and
    any of ``gpus``, ``nvlink``, ``nvswitch``, ``nics`` replacing its own, or
    all of them given; ``score``: the device plugin's topology scores on or off,
    default as HAMi's chart sets them)."""
    if isinstance(value.scalar, str):
        return _template(value, value.scalar)
    doc = value.as_doc("'topology'").with_context(f"{value.context}: topology")
    doc.check_keys(TOPOLOGY_KEYS, "a topology")
    base = _template(doc.get("template"), doc.require_str("template")) \
        if "template" in doc else None
    if base is None and "gpus" not in doc:
        raise doc.error("a topology needs 'template' or 'gpus' (the NUMA node and PCIe "
                        "switch of each GPU)")
    gpus = base.gpus if base is not None else ()
    if "gpus" in doc:
        gpus = tuple(_gpu_place(item.as_doc(f"gpu {i}"))
                     for i, item in enumerate(doc.require("gpus").as_list("'gpus'")))
        if not gpus:
            raise doc.get("gpus").error("'gpus' is empty")
    n = len(gpus)
    numa_of: dict[int, int] = {}
    for i, g in enumerate(gpus):
        if numa_of.setdefault(g.switch, g.numa) != g.numa:
            raise doc.get("gpus").error(f"PCIe switch {g.switch} is on NUMA node "
                                        f"{numa_of[g.switch]} and {g.numa} (gpu {i}): a "
                                        "switch hangs off one CPU")
    nvlink = dict(base.nvlink) if base is not None and "gpus" not in doc else {}
    if "nvlink" in doc:
        nvlink = {}
        for item in doc.require("nvlink").as_list("'nvlink'"):
            triple = item.as_list("an 'nvlink' entry ([gpu, gpu, links])")
            if len(triple) != 3:
                raise item.error("an 'nvlink' entry is [gpu, gpu, links], e.g. [0, 1, 4]")
            a, b = (t.as_int("a GPU index", min=0, max=n - 1) for t in triple[:2])
            if a == b:
                raise item.error(f"an NVLink joins two GPUs, got {a} twice")
            if (a, b) in nvlink:
                raise item.error(f"NVLinks from GPU {a} to GPU {b} given twice")
            nvlink[(a, b)] = triple[2].as_int("NVLinks", min=0, max=MAX_NVLINKS)
    nvswitch = base.nvswitch if base is not None and "gpus" not in doc else ()
    if "nvswitch" in doc:
        v = doc.require("nvswitch")
        if v.is_list:
            nvswitch = tuple(x.as_int("NVLinks to the NVSwitch fabric", min=0,
                                      max=MAX_NVLINKS) for x in v.as_list("'nvswitch'"))
            if len(nvswitch) != n:
                raise v.error(f"'nvswitch' gives {len(nvswitch)} GPUs' links; the topology "
                              f"has {n} GPUs")
        else:
            nvswitch = (v.as_int("'nvswitch' (NVLinks per GPU)", min=0, max=MAX_NVLINKS),) * n
    if len(nvswitch) not in (0, n):
        raise doc.error(f"the template's NVSwitch links cover {len(nvswitch)} GPUs, but "
                        f"'gpus' gives {n}: give 'nvswitch' too")
    nics = base.nics if base is not None else ()
    if "nics" in doc:
        nics = tuple(_nic_place(item.as_doc(f"nic {i}"))
                     for i, item in enumerate(doc.require("nics").as_list("'nics'")))
    for i, nic in enumerate(nics):
        if nic.switch in numa_of and numa_of[nic.switch] != nic.numa:
            raise doc.error(f"nic {i} is on PCIe switch {nic.switch}, which is on NUMA node "
                            f"{numa_of[nic.switch]}, not {nic.numa}")
    score = doc.optional_bool("score")
    return ServerTopology(gpus, nvlink, nvswitch, nics,
                          base.template if base is not None else None,
                          base.card if base is not None else None, score)


def _template(value: Value, name: str) -> ServerTopology:
    if name not in TEMPLATES:
        near = difflib.get_close_matches(name, TEMPLATES, n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        raise value.error(f"unknown topology template '{name}'{hint}; the templates: "
                          + ", ".join(sorted(TEMPLATES)))
    return TEMPLATES[name]


def _gpu_place(doc: Doc) -> GpuPlace:
    doc.check_keys({"numa", "switch", "board"}, "a GPU's place")
    return GpuPlace(numa=doc.optional_int("numa", 0, min=0, max=INT32_MAX),
                    switch=doc.optional_int("switch", 0, min=0, max=INT32_MAX),
                    board=doc.optional_int("board", min=0, max=INT32_MAX))


def _nic_place(doc: Doc) -> NicPlace:
    doc.check_keys({"numa", "switch"}, "a NIC's place")
    return NicPlace(numa=doc.optional_int("numa", 0, min=0, max=INT32_MAX),
                    switch=doc.optional_int("switch", 0, min=0, max=INT32_MAX))


def _gives_cards(entry: Doc) -> bool:
    devices = entry.get("devices")
    return "gpus" in entry or (devices is not None and not devices.is_null)


def _place_cards(entry: Doc, specs: list[_CardSpec], topo: ServerTopology) -> list[_CardSpec]:
    """The node's cards with their NUMA node from its topology (matched by card
    index); without cards of its own, the template's card for every GPU."""
    line = entry.key_line("topology")
    n = len(topo.gpus)
    if not specs and not _gives_cards(entry):
        if topo.card is None:
            raise entry.error("the topology has no card of its own: give the node's "
                              "cards ('devices', or 'gpus' and 'card')", line=line)
        c = topo.card
        specs = [_CardSpec(Card("", i, count=c.count, devmem=c.devmem, devcore=c.devcore,
                                type=c.type), str(i), line, explicit_id=False,
                           numa_given=False) for i in range(n)]
    if sorted(s.card.index for s in specs) != list(range(n)):
        raise entry.error(f"the topology describes {n} GPUs (indexes 0..{n - 1}), but the "
                          f"node's cards have indexes "
                          f"{sorted(s.card.index for s in specs)}", line=line)
    out = []
    for s in specs:
        numa = topo.gpus[s.card.index].numa
        if s.numa_given and s.card.numa != numa:
            raise InputError(entry.path, s.line,
                             f"{entry.context}: card {s.card.index} says numa "
                             f"{s.card.numa}, its topology {numa}")
        out.append(_CardSpec(replace(s.card, numa=numa), s.local, s.line, s.explicit_id, True))
    return out


def _card_specs(entry: Doc, *, derived_ids: bool,
                allowlist: tuple[AllowedMigProfiles, ...] = DEFAULT_ALLOWLIST) -> list[_CardSpec]:
    if "gpus" in entry or "card" in entry:
        if "devices" in entry:
            raise entry.error("give either 'devices' or 'gpus' with 'card', not both",
                              line=entry.key_line("devices"))
        if "gpus" not in entry or "card" not in entry:
            missing = "gpus" if "gpus" not in entry else "card"
            raise entry.error(f"'gpus' and 'card' go together: missing '{missing}'")
        n = entry.require_int("gpus", min=0, max=MAX_CARDS_PER_NODE)
        tmpl = entry.require_doc("card").with_context(f"{entry.context}: card template")
        for key in ("id", "index"):
            if key in tmpl:
                raise tmpl.error(f"a card template must not give '{key}' (its cards get ids "
                                 "GPU-<node name>-<index> and indexes 0..gpus-1)",
                                 line=tmpl.key_line(key))
        tmpl.check_keys(TEMPLATE_KEYS, "a card template")
        card = _yaml_card(tmpl, index=0, card_id="", allowlist=allowlist)
        if n == 0:
            # valid (CPU-only nodes), but the template then describes nothing
            warnings.warn(InputWarning(
                f"{entry.path}:{entry.key_line('gpus')}",
                f"{entry.context}: 'gpus: 0' leaves the card template unused: these nodes "
                "have no HAMi cards (drop 'card', or give 'gpus' >= 1)"), stacklevel=2)
        return [_CardSpec(replace(card, index=i), str(i), tmpl.line, explicit_id=False,
                          numa_given="numa" in tmpl) for i in range(n)]
    devices = entry.get("devices")
    if devices is None or devices.is_null:
        return []
    if isinstance(devices.scalar, str):
        specs = _annotation_cards(devices, entry, derived_ids)
    else:
        specs = []
        for pos, item in enumerate(devices.as_list("'devices'")):
            doc = item.as_doc(f"card {pos}").with_context(f"{entry.context}: card {pos}")
            doc.check_keys(CARD_KEYS, "a card")
            if derived_ids:
                cid = doc.optional_str("id", nonempty=True)
                explicit = cid is not None
            else:
                cid = doc.require_str("id")
                explicit = True
            card = _yaml_card(doc, index=doc.optional_int("index", pos, min=0, max=INT32_MAX),
                              card_id=cid or "", allowlist=allowlist)
            local = cid if explicit else str(card.index)
            specs.append(_CardSpec(card, local, doc.line, explicit, numa_given="numa" in doc))
    _check_card_set(entry, specs)
    return specs


def _card_mode(doc: Doc) -> str:
    """``mode``: one of :data:`~hamisim.hami.policy.CARD_MODES`, spelt as HAMi's
    device plugin registers it, or ``''`` (what HAMi decodes from a registration
    without one; a cluster written from an annotation keeps it). Any other string
    is an error: the plugin never registers it, and HAMi's scheduler would keep it
    verbatim, so that only an ``nvidia.com/vgpu-mode`` annotation containing the
    typo would select the card."""
    mode = doc.optional_str("mode", "hami-core")
    if mode not in CARD_MODES and mode != "":
        near = difflib.get_close_matches(mode.lower().replace("_", "-"), CARD_MODES, n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        raise doc.get("mode").error(f"unknown card mode {mode!r}{hint}; HAMi's device plugin "
                                    f"registers {', '.join(CARD_MODES)}")
    return mode


def _yaml_card(doc: Doc, *, index: int, card_id: str,
               allowlist: tuple[AllowedMigProfiles, ...] = DEFAULT_ALLOWLIST) -> Card:
    mode = _card_mode(doc)
    if mode == "mig":
        return _mig_card(doc, index=index, card_id=card_id, allowlist=allowlist)
    if "migProfiles" in doc:
        v = doc.get("migProfiles")
        warnings.warn(InputWarning(f"{v.path}:{v.line}", f"'migProfiles' of a card in mode "
                                   f"{mode!r} are ignored: only 'mode: mig' cards are cut into "
                                   "MIG instances"), stacklevel=3)
    card_type = _card_type(doc)
    fam = family(device_family(card_type) or "")
    count = doc.optional_int("count", 10 if fam is None else fam.default_count,
                             min=0, max=INT32_MAX)
    devcore = doc.optional_int(
        "devcore", 100 if fam is None or fam.registered_devcore is None
        else fam.registered_devcore, min=0, max=INT32_MAX)
    if fam is not None and fam.registered_type is not None:
        _warn_unregistrable(doc, fam, card_type, count, devcore)
        if fam.type_case_sensitive and fam.word not in card_type:
            v = doc.get("type")
            warnings.warn(InputWarning(f"{v.path}:{v.line}", (
                f"{doc.context}: type {card_type!r}: HAMi offers this card to {fam.vendor} "
                f"requests (the scheduler's test ignores case) but its Fit looks for "
                f"{fam.word!r} case-sensitively, so no pod is ever placed on it "
                "(CardTypeMismatch)")), stacklevel=3)
    elif fam is not None and fam.registered_devcore is not None \
            and devcore != fam.registered_devcore:
        v = doc.get("devcore")
        warnings.warn(InputWarning(f"{v.path}:{v.line}", (
            f"{doc.context}: devcore {devcore}: HAMi's {fam.vendor} backend registers every "
            f"card with devcore {fam.registered_devcore} whatever its device plugin reports "
            "(GetNodeDevices), and its Fit charges no cores; simulated as written")),
            stacklevel=3)
    return Card(
        id=card_id, index=index,
        count=count,
        devmem=_devmem(doc),
        devcore=devcore,
        type=card_type,
        numa=doc.optional_int("numa", 0, min=0, max=INT32_MAX),
        health=doc.optional_bool("health", True),
        mode=mode,
        network_id=_network_id(doc),
    )


#: a card ``devmem`` below this many MiB is probably GiB (no NVIDIA GPU HAMi
#: schedules has less)
SUSPECT_DEVMEM_MIB = 256


def _devmem(doc: Doc) -> int:
    """``devmem`` (MiB, required). A value in 1..255 is valid (HAMi takes what
    the device plugin registers) but probably GiB: warned at its line."""
    devmem = doc.require_int("devmem", min=0, max=INT32_MAX)
    if 0 < devmem < SUSPECT_DEVMEM_MIB:
        v = doc.get("devmem")
        warnings.warn(InputWarning(f"{v.path}:{v.line}", (
            f"{doc.context}: devmem {devmem} is MiB, did you mean {devmem * 1024} "
            f"({devmem} GiB)?")), stacklevel=3)
    return devmem


def _mig_card(doc: Doc, *, index: int, card_id: str,
              allowlist: tuple[AllowedMigProfiles, ...]) -> Card:
    """A card in ``mig`` mode: its ``migProfiles`` as given, or, without them,
    what HAMi's device plugin registers for its type (the built-in NVML table
    through ``migProfileAllowlist``). ``devmem`` defaults to the table's total,
    ``count`` to the largest instance count (HAMi's rule), ``devcore`` to 100."""
    card_type = _card_type(doc)
    table = nvml_table_for(card_type)
    if "migProfiles" in doc:
        profiles = mig_profiles_from_value(doc.get("migProfiles"), context=doc.context)
    else:
        if table is None:
            raise doc.error(
                f"card type {card_type!r} has no built-in MIG table (hamisim knows "
                + ", ".join(g.nvml_name for g in NVML_TABLES)
                + "): give its 'migProfiles' as HAMi's device plugin registers them "
                "(the node's hami.io/node-nvidia-register annotation)")
        _check_allowlisted(table, card_type, allowlist)
        profiles = register_profiles(table, card_type, allowlist)
        if not profiles:
            raise doc.error(
                f"no migProfileAllowlist entry names a model in {card_type!r}, so HAMi's device "
                "plugin registers no MIG profile and leaves this GPU out of the node; add an "
                "entry for it to the scheduler's 'migProfileAllowlist' (e.g. models: "
                f"[{table.model!r}]) or give the card's 'migProfiles'")
    devmem = doc.optional_int("devmem", table.devmem if table is not None else None,
                              min=0, max=INT32_MAX)
    if devmem is None:
        raise doc.error("a MIG card without a built-in table needs 'devmem' (MiB)")
    return Card(
        id=card_id, index=index,
        count=doc.optional_int("count", card_count(profiles), min=0, max=INT32_MAX),
        devmem=devmem,
        devcore=doc.optional_int("devcore", 100, min=0, max=INT32_MAX),
        type=card_type,
        numa=doc.optional_int("numa", 0, min=0, max=INT32_MAX),
        health=doc.optional_bool("health", True),
        mode="mig",
        mig_profiles=profiles,
    )


def mig_profiles_from_value(value: Value, *, json_keys: bool = False,
                            context: str = "") -> tuple[MigProfile, ...]:
    """A card's ``migProfiles``: a list of ``{name, memoryMB, core, sliceCount,
    placements: [{start, size}]}`` (HAMi's JSON; ``instanceCount`` optional).
    ``json_keys``: keys match case-insensitively and unknown ones are ignored,
    as HAMi's scheduler decodes the annotation."""
    if value.is_null:
        return ()
    out = []
    for pos, item in enumerate(value.as_list("'migProfiles'")):
        where = f"{context}: MIG profile {pos}" if context else f"MIG profile {pos}"
        doc = item.as_doc(f"MIG profile {pos}").with_context(where)
        fields: dict[str, Value] = {}
        for key, v in doc.items():
            name = next((k for k in MIG_PROFILE_KEYS if k.lower() == key.lower()), None) \
                if json_keys else key
            if name not in MIG_PROFILE_KEYS:
                if json_keys:
                    continue
                doc.check_keys(MIG_PROFILE_KEYS, "a MIG profile")
            if not v.is_null:
                fields[name] = v
        if "name" not in fields:
            raise doc.error("a MIG profile needs its 'name' (e.g. 1g.5gb)")
        ints = {k: fields[k].as_int(f"'{k}'", min=0, max=INT32_MAX) if k in fields else 0
                for k in ("memoryMB", "core", "sliceCount", "instanceCount")}
        places = []
        for i, pv in enumerate(fields["placements"].as_list("'placements'")
                               if "placements" in fields else []):
            pd = pv.as_doc(f"placement {i}").with_context(f"{doc.context}: placement {i}")
            if not json_keys:
                pd.check_keys({"start", "size"}, "a placement")
            lower = {k.lower(): v for k, v in pd.items()}
            start = lower["start"].as_int("'start'", min=0) if "start" in lower else 0
            size = lower["size"].as_int("'size'", min=0) if "size" in lower else 0
            if size == 0:
                raise pd.error("a placement of size 0 overlaps nothing, so HAMi's scheduler "
                               "would place instances on it forever; give its size (>= 1)")
            if start + size > MAX_PLACEMENT_END:
                raise pd.error(f"placement {{start: {start}, size: {size}}} ends beyond slot "
                               f"{MAX_PLACEMENT_END} (hamisim models placements in 0..63)")
            places.append(MigPlacement(start, size))
        out.append(MigProfile(fields["name"].as_str("'name'", nonempty=True), ints["memoryMB"],
                              ints["core"], ints["sliceCount"], tuple(places),
                              ints["instanceCount"]))
    return tuple(out)


def _warn_unregistrable(doc: Doc, fam, card_type: str, count: int, devcore: int) -> None:
    """A card of a family that builds its cards itself (Cambricon: from the
    node's capacity, every card typed ``MLU`` with 100 slots; Moore Threads:
    typed ``Mthreads``, 100 slots, devcore 16) written otherwise: valid,
    simulated as written, but HAMi never registers such a card."""
    for key, value, want in (("type", card_type, fam.registered_type),
                             ("count", count, fam.default_count),
                             ("devcore", devcore, fam.registered_devcore)):
        if want is not None and value != want and key in doc:
            v = doc.get(key)
            warnings.warn(InputWarning(f"{v.path}:{v.line}", (
                f"{doc.context}: {key} {value!r}: HAMi's {fam.vendor} backend builds its cards "
                f"from the node's capacity, each with {key} {want!r}, so HAMi never registers "
                "this card as written (simulated as written)")), stacklevel=4)


def _card_type(doc: Doc) -> str:
    """``type`` is required; an empty one (what HAMi decodes from a registration
    without it) loads, with a warning: HAMi offers such a card to no request."""
    value = doc.require_str("type", nonempty=False)
    if not value.strip():
        v = doc.get("type")
        warnings.warn(InputWarning(f"{v.path}:{v.line}", f"card type {value!r} is empty: HAMi "
                                   "offers this card to no NVIDIA request; it is not counted "
                                   "as a GPU"), stacklevel=3)
    return value


def _check_card_set(entry: Doc, specs: list[_CardSpec]) -> None:
    # a device plugin numbers its own cards: an index is unique per family
    seen_index: dict[tuple[str | None, int], int] = {}
    seen_local: dict[str, int] = {}
    for pos, s in enumerate(specs):
        key = (device_family(s.card.type), s.card.index)
        if key in seen_index:
            raise InputError(entry.path, s.line,
                             f"{entry.context}: card {pos}: duplicate GPU index {s.card.index} "
                             f"(card {seen_index[key]} has it too)")
        seen_index[key] = pos
        if s.local in seen_local:
            raise InputError(entry.path, s.line,
                             f"{entry.context}: card {pos}: duplicate card id '{s.local}' "
                             f"(card {seen_local[s.local]} has it too)")
        seen_local[s.local] = pos


# -- the verbatim annotation ----------------------------------------------

# Go's encoding/json matches struct field names case-insensitively.
_GO_FIELDS = {"id": "id", "index": "index", "count": "count", "devmem": "devmem",
              "devcore": "devcore", "type": "type", "numa": "numa", "mode": "mode",
              "health": "health", "migprofiles": "migProfiles"}


def _annotation_cards(devices: Value, entry: Doc, derived_ids: bool) -> list[_CardSpec]:
    where = "'devices' annotation JSON"
    line = entry.key_line("devices")
    root = parse_json(devices.scalar, entry.path, line=line, context=f"{entry.context}: {where}")
    if root.is_null:
        return []
    specs = []
    for pos, item in enumerate(root.as_list("the annotation")):
        item = item.with_context(f"{entry.context}: {where}: card {pos}")
        doc = item.as_doc("a card")
        fields: dict[str, Value] = {}
        for key, v in doc.items():
            name = _GO_FIELDS.get(key.lower())
            if name is None:
                continue  # customInfo, links, ...: ignored as by HAMi's scheduler
            if name in fields:
                raise doc.error(f"field '{name}' is given twice (keys match case-insensitively)")
            if not v.is_null:
                fields[name] = v
        ints = {k: fields[k].as_int(f"'{k}'", min=0, max=INT32_MAX) if k in fields else 0
                for k in ("index", "count", "devmem", "devcore", "numa")}
        strs = {k: fields[k].as_str(f"'{k}'") if k in fields else ""
                for k in ("id", "type", "mode")}
        if strs["mode"] and strs["mode"] not in CARD_MODES:
            v = fields["mode"]
            warnings.warn(InputWarning(f"{v.path}:{v.line}", (
                f"{doc.context}: card mode {strs['mode']!r} is none HAMi's device plugin "
                f"registers ({', '.join(CARD_MODES)}); HAMi's scheduler keeps it as written, "
                "so only an nvidia.com/vgpu-mode annotation containing it selects the card")),
                stacklevel=2)
        health = fields["health"].as_bool("'health'") if "health" in fields else False
        profiles = mig_profiles_from_value(fields["migProfiles"], json_keys=True,
                                           context=doc.context) \
            if "migProfiles" in fields else ()
        explicit = bool(strs["id"])
        if not explicit and not derived_ids:
            raise doc.error("card has no 'id' (the GPU UUID is required outside node groups)")
        card = Card(id=strs["id"], index=ints["index"], count=ints["count"],
                    devmem=ints["devmem"], devcore=ints["devcore"], type=strs["type"],
                    numa=ints["numa"], health=health, mode=strs["mode"],
                    mig_profiles=profiles)
        specs.append(_CardSpec(card, strs["id"] if explicit else str(ints["index"]), line,
                               explicit))
    return specs


# -- pair scores and cordon -------------------------------------------------

def _resolve(value: Value, name: str, cards: dict[str, _CardSpec], what: str) -> str:
    if name not in cards:
        known = ", ".join(sorted(cards)) or "none"
        raise value.error(f"{what} names card '{name}', which is not a card of this node "
                          f"(cards: {known})")
    return name


def _pair_scores(entry: Doc, cards: dict[str, _CardSpec]) -> dict[str, dict[str, int]]:
    value = entry.get("nvidia_score")
    if value is None or value.is_null:
        return {}
    what = "'nvidia_score'"
    if isinstance(value.scalar, str):
        value = parse_json(value.scalar, entry.path, line=entry.key_line("nvidia_score"),
                           context=f"{entry.context}: 'nvidia_score' annotation JSON")
        if value.is_null:
            return {}
    scores: dict[str, dict[str, int]] = {}
    if value.is_mapping:
        doc = value.as_doc(what)
        for uuid, row in doc.items():
            a = _resolve(_at(row, doc.key_line(uuid)), uuid, cards, what)
            scores[a] = _score_row(row.as_doc(f"{what} row '{uuid}'"), cards, what)
        return scores
    for pos, item in enumerate(value.as_list(what)):
        doc = item.as_doc(f"{what} entry {pos}")
        fields: dict[str, Value] = {}
        for key, v in doc.items():
            name = {"uuid": "uuid", "score": "score"}.get(key.lower())
            if name is not None and not v.is_null:
                fields[name] = v
        uuid = fields["uuid"].as_str("'uuid'") if "uuid" in fields else ""
        a = _resolve(doc, uuid, cards, what)
        row = _score_row(fields["score"].as_doc("'score'"), cards, what) if "score" in fields else {}
        # Go keeps the first entry for a uuid (it breaks at the first match)
        scores.setdefault(a, row)
    return scores


def _at(value: Value, line: int) -> Value:
    v = value.with_context(value.context)
    v.line = line
    return v


def _score_row(doc: Doc, cards: dict[str, _CardSpec], what: str) -> dict[str, int]:
    row = {}
    for uuid, v in doc.items():
        b = _resolve(_at(v, doc.key_line(uuid)), uuid, cards, what)
        row[b] = v.as_int(f"score of '{uuid}'")
    return row


def _cordon(entry: Doc, cards: dict[str, _CardSpec]) -> list[str]:
    value = entry.get("cordon")
    if value is None or value.is_null:
        return []
    if isinstance(value.scalar, str):
        names = [(value, n.strip()) for n in value.scalar.split(",") if n.strip()]
    else:
        names = [(v, v.as_str("a 'cordon' entry", nonempty=True).strip())
                 for v in value.as_list("'cordon'")]
    return [_resolve(v, n, cards, "'cordon'") for v, n in names]


def _labels(entry: Doc) -> dict[str, str]:
    """``labels``: a mapping of label names to string values (numbers and
    booleans must be quoted, as in Kubernetes manifests)."""
    doc = entry.optional_doc("labels")
    if doc is None:
        return {}
    out = {}
    for key, v in doc.items():
        if not key:
            raise v.error("a label needs a name")
        if isinstance(v.scalar, bool) or not isinstance(v.scalar, str):
            raise v.error(f"label '{key}' must be a string: write {key}: \"{_plain(v.scalar)}\" "
                          "(Kubernetes label values are strings)")
        out[key] = v.scalar
    return out


#: the node annotations HAMi's scheduler reads that a cluster file may give
NODE_ANNOTATIONS = (ascend.NODE_ANNOTATION,)


def _node_annotations(entry: Doc) -> str | None:
    """``annotations``: the node's ``hami-vnpu-core`` (Ascend's soft split, only
    ``"true"`` turns it on, as HAMi reads it); ``None`` without it. Other
    annotations are not read by HAMi's scheduler: ignored with a warning."""
    doc = entry.optional_doc("annotations")
    if doc is None:
        return None
    out = None
    for key, v in doc.items():
        if key not in NODE_ANNOTATIONS:
            warnings.warn(InputWarning(f"{v.path}:{v.line}", (
                f"{entry.context}: annotation {key!r} is not one hamisim reads (a cluster "
                f"file's node annotations are {', '.join(NODE_ANNOTATIONS)}); ignored")),
                stacklevel=3)
            continue
        if isinstance(v.scalar, bool) or not isinstance(v.scalar, str):
            raise v.error(f"annotation '{key}' must be a string: write {key}: "
                          f"\"{_plain(v.scalar)}\" (Kubernetes annotation values are strings)")
        if v.scalar not in ("true", "false"):
            warnings.warn(InputWarning(f"{v.path}:{v.line}", (
                f"{entry.context}: {key}: {v.scalar!r} is not \"true\": HAMi's Ascend Fit "
                "reads it as false (no hami-vnpu-core, so soft-split pods do not fit here: "
                "ModeNotFit)")), stacklevel=3)
        out = v.scalar
    return out


def _network_id(doc: Doc) -> int | None:
    """``customInfo``: the device plugin's extra fields; HAMi's scheduler reads
    ``NetworkID`` (Ascend 910's network) alone, others are ignored with a warning."""
    info = doc.optional_doc("customInfo")
    if info is None:
        return None
    out = None
    for key, v in info.items():
        if key != "NetworkID":
            warnings.warn(InputWarning(f"{v.path}:{v.line}", (
                f"{doc.context}: customInfo {key!r} is not read by HAMi's scheduler "
                "(only NetworkID, Ascend 910's); ignored")), stacklevel=3)
            continue
        out = v.as_int("customInfo NetworkID", min=0, max=INT32_MAX)
    return out


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def taints_from_value(value: Value | None) -> tuple[Taint, ...]:
    """``taints``: a list of ``{key, value, effect}`` (``value`` optional, empty
    by default; ``effect`` NoSchedule, NoExecute or PreferNoSchedule)."""
    if value is None or value.is_null:
        return ()
    out = []
    for item in value.as_list("'taints'"):
        t = item.as_doc("a taint")
        t.check_keys({"key", "value", "effect", "timeAdded"}, "a taint")
        key = t.require_str("key")
        v = t.get("value")
        text = "" if v is None or v.is_null else v.scalar
        if not isinstance(text, str):
            raise v.error(f"taint '{key}': 'value' must be a string: write value: "
                          f"\"{_plain(text)}\"")
        effect = t.require_str("effect")
        if effect not in TAINT_EFFECTS:
            raise t.get("effect").error(
                f"taint '{key}': unknown effect '{effect}' (expected "
                f"{', '.join(TAINT_EFFECTS)})")
        out.append(Taint(key, text, effect))
    return tuple(out)


def _taints(entry: Doc) -> tuple[Taint, ...]:
    return taints_from_value(entry.get("taints"))


def cluster_from_path(path: str | os.PathLike[str], *,
                      resize: Mapping[str, int] | None = None,
                      gpu_policy: str | None = None) -> Cluster:
    """A cluster file (``.yaml``/``.yml``/``.json``, :func:`load_cluster`, ``resize``
    and ``gpu_policy`` as there) or an openb node list (``.csv`` with the openb
    node header)."""
    name = os.fspath(path)
    ext = os.path.splitext(name)[1].lower()
    if ext in (".yaml", ".yml", ".json"):
        return load_cluster(name, resize=resize, gpu_policy=gpu_policy)
    if resize:
        raise InputError(name, None, "an openb node list has no node groups to resize")
    if ext == ".csv":
        text = read_text(name)
        if first_line(text).strip() != ",".join(OPENB_NODE_COLUMNS):
            raise InputError(name, 1, f"a cluster CSV must be an openb node list with the "
                                      f"header {','.join(OPENB_NODE_COLUMNS)}")
        return openb_nodes_from_text(text, name)
    raise InputError(name, None, f"unsupported cluster file type '{ext or '(none)'}' "
                                 "(expected .yaml, .yml, .json or an openb node list .csv)")
