"""Adapters that drive one backend with HAMi's unit-test vectors.

Each backend offers the same small operations (card score, comparator, Fit,
node evaluation) on the vectors' plain-JSON objects, so
``test_hami_vectors.py`` states each check once and runs it on both backends.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from hamisim.cluster import Card
from hamisim.hami import reference as ref
from hamisim.hami.policy import parse_card_policy, pod_gpu_policy
from hamisim.mig import MigPlacement, MigProfile
from hamisim.pods import Request
from hamisim.sim.arrays import mig_arrays


def request(d: dict) -> Request:
    return Request(nums=d["nums"], memreq=d["memreq"], mempercentagereq=d["mempercentagereq"],
                   coresreq=d["coresreq"], type=d["type"])


def weights(d: dict | None) -> tuple[int, int, int]:
    if not d:
        return 1, 1, 1
    return d["slot"], d["core"], d["memory"]


def mig_profiles(d: dict) -> tuple[MigProfile, ...]:
    """A vector card's ``mig_profiles`` (HAMi's Go field names) as hamisim's profiles."""
    return tuple(MigProfile(p["Name"], p.get("MemoryMB", 0), p.get("Core", 0),
                            p.get("SliceCount", 0),
                            tuple(MigPlacement(q.get("Start", 0), q.get("Size", 0))
                                  for q in p.get("Placements") or []))
                 for p in d.get("mig_profiles") or [])


def card(d: dict) -> ref.CardUsage:
    return ref.CardUsage(id=d["id"], index=d["index"], type=d["type"], count=d["count"],
                         devmem=d["devmem"], devcore=d["devcore"], used=d["used"],
                         usedmem=d["usedmem"], usedcores=d["usedcores"], numa=d["numa"],
                         health=d["health"], mode=d["mode"], mig_profiles=mig_profiles(d),
                         network_id=d.get("network_id"))


def vnpu_core(case: dict) -> bool:
    """An Ascend case's node support for hami-vnpu-core (its node annotation,
    else the backend's global ``hamiVnpuCore``)."""
    from hamisim.devices.ascend import NODE_ANNOTATION, node_supports_hami_core
    return node_supports_hami_core((case.get("node_annotations") or {}).get(NODE_ANNOTATION),
                                   case.get("hami_vnpu_core", False))


def pick_dict(p) -> dict:
    # "type": what the allocation names (AMD's: the card's own type)
    return {"uuid": p.uuid, "type": p.label or p.type, "usedmem": p.usedmem,
            "usedcores": p.usedcores, "idx": p.idx}


class ReferenceOps:
    """The vectors' operations on :mod:`hamisim.hami.reference`."""

    name = "reference"

    def card_score(self, c: dict, requests: list[dict], w: dict) -> float:
        return float(ref.card_score(card(c), [request(r) for r in requests], weights(w)))

    def card_less(self, policy: str, numa_bind: bool, a: dict, b: dict) -> bool:
        cp = parse_card_policy(policy, numa_bind)
        ka = SimpleNamespace(score=np.float32(a["score"]), numa=a["numa"], used=a["used"],
                             index=a["index"])
        kb = SimpleNamespace(score=np.float32(b["score"]), numa=b["numa"], used=b["used"],
                             index=b["index"])
        return ref.card_less(cp, ka, kb)

    def sort_order(self, policy: str, numa_bind: bool, ids: list[str], scores: dict,
                   numa: dict, used: dict | None = None) -> list[str]:
        items = [SimpleNamespace(id=i, score=np.float32(scores[i]), numa=numa.get(i, 0),
                                 used=(used or {}).get(i, 0), index=pos)
                 for pos, i in enumerate(ids)]
        ref.sort_cards(items, parse_card_policy(policy, numa_bind))
        return [it.id for it in items]

    def node_base_score(self, cards: list[dict]) -> float:
        return float(ref.node_base_score([card(c) for c in cards]))

    def node_less(self, policy: str, a: float, b: float) -> bool:
        return ref.node_less(policy, np.float32(a), np.float32(b))

    def fit(self, case: dict) -> tuple[bool, list[dict], str]:
        cards = [card(c) for c in case["cards"]]
        ann = case.get("annotations") or {}
        policy = pod_gpu_policy(case.get("default_gpu_policy", ""), ann)
        if case.get("sort"):
            s = case["sort"]
            for c in cards:
                c.score = np.float32(s["cards_scores"][c.id])
            ref.sort_cards(cards, parse_card_policy(s["policy"], s["numa_bind"]))
        res = ref.fit(cards, request(case["request"]), ann, policy, case.get("pair_scores"),
                      vnpu_core=vnpu_core(case))
        return res.fit, [pick_dict(p) for p in res.picks], res.reason

    def fit_container(self, case: dict) -> tuple[bool, list[str], str]:
        cards = [card(c) for c in case["cards"]]
        cp = parse_card_policy(case["list_policy"], case["numa_bind"])
        # Fit's filters read the pod's policy; the comparator reads list_policy.
        ann = case.get("annotations") or {}
        fit_policy = pod_gpu_policy(case.get("default_gpu_policy", ""), ann)
        cp = _with_text(cp, fit_policy)
        ok, picks, reason = ref.fit_in_devices(
            cards, [request(r) for r in case["requests"]], ann, cp, weights(case.get("weights")),
            case.get("pair_scores"), case.get("registered_types", ["NVIDIA"]))
        return ok, [p.uuid for p in picks], reason

    def node_pipeline(self, case: dict) -> dict[str, tuple]:
        ann = case.get("annotations") or {}
        fit_policy = pod_gpu_policy(case.get("default_gpu_policy", ""), ann)
        out = {}
        for name, node in case["nodes"].items():
            cards = [card(c) for c in node["cards"]]
            cp = _with_text(parse_card_policy(node["list_policy"], node["numa_bind"]), fit_policy)
            containers = [request(c[0]) if c else None for c in case["containers"]]
            res = ref.score_node(cards, containers, case["n_init"], ann, cp,
                                 weights(case.get("weights")))
            devices = [[pick_dict(p) for p in picks] for picks in res.containers]
            out[name] = (res.fit, devices, float(res.score), res.reason)
        return out


def _with_text(cp, text: str):
    """The comparator of one policy with the Fit filters of another.

    HAMi's unit tests set the card list's sort policy directly while Fit
    reads the pod annotation; in production both come from one string.
    """
    from dataclasses import replace
    fp = parse_card_policy(text)
    return replace(cp, text=text, mutex=fp.mutex, topology=fp.topology)


BACKENDS = {"reference": ReferenceOps()}


# ---------------------------------------------------------------------------
# The compiled kernel's test entry points
# ---------------------------------------------------------------------------
def _one_node_table(cards: list[dict], pair_scores: dict | None, req_type: str = "NVIDIA",
                    all_offered: bool = False, vnpu_core: bool = False):
    """A kernel card table holding one node made of the vector's cards.

    ``req_type`` is the container's request type: it decides the vendor
    filter (substring, any case) and the card-score type equality;
    ``all_offered``: every card is offered to the request's family (Fit's own
    unit tests hand it the list as given).
    """
    from hamisim import _core

    i64 = lambda key: np.array([c[key] for c in cards], dtype=np.int64)  # noqa: E731
    u8 = lambda vals: np.array(vals, dtype=np.uint8)  # noqa: E731
    k = len(cards)
    types = list(dict.fromkeys(c["type"] for c in cards))
    modes = list(dict.fromkeys(c["mode"] for c in cards))
    pair = np.zeros(k * k, dtype=np.int64)
    for a, ca in enumerate(cards):
        row = (pair_scores or {}).get(ca["id"], {})
        for b, cb in enumerate(cards):
            pair[a * k + b] = row.get(cb["id"], 0)
    from hamisim.devices import family
    fam = family(req_type) or family("NVIDIA")
    offer = np.array([(1 << fam.fid) if all_offered or req_type.upper() in c["type"].upper()
                      else 0 for c in cards], dtype=np.uint32)
    table = _core.CardTable(
        node_start=np.array([0, k], dtype=np.int64),
        pair_start=np.array([0, k * k], dtype=np.int64),
        count=i64("count"), devmem=i64("devmem"), devcore=i64("devcore"), numa=i64("numa"),
        index=i64("index"), health=u8([c["health"] for c in cards]),
        cordoned=u8([False] * k), offer=offer,
        type_exact=u8([fam.fid + 1 if c["type"] == req_type else 0 for c in cards]),
        type_id=np.array([types.index(c["type"]) for c in cards], dtype=np.int32),
        mode_id=np.array([modes.index(c["mode"]) for c in cards], dtype=np.int32),
        used=i64("used"), usedmem=i64("usedmem"), usedcores=i64("usedcores"), pair=pair,
        alloc_cpu=np.array([-1], dtype=np.int64), alloc_mem=np.array([-1], dtype=np.int64),
        req_cpu=np.zeros(1, dtype=np.int64), req_mem=np.zeros(1, dtype=np.int64),
        mig=mig_arrays([Card(c["id"], mode=c["mode"], mig_profiles=mig_profiles(c))
                        for c in cards])[0],
        network=np.array([c.get("network_id", -1) for c in cards], dtype=np.int64),
        vnpu_core=u8([vnpu_core]))
    return table, types, modes


def _pod_spec(reqs, n_init: int, sort_policy, fit_text: str, ann: dict, cards: list[dict],
              types: list[str], modes: list[str], w=(1, 1, 1), registered=("NVIDIA",)):
    from hamisim import _core
    from hamisim.hami.policy import numa_bind
    from hamisim.sim.arrays import encode_policy, request_rows

    from hamisim.devices import family
    from hamisim.devices.ascend import is_hami_core
    mode, chain, n_chain = encode_policy(sort_policy)
    fp = parse_card_policy(fit_text)
    mode_ann = ann.get(ref.VGPU_MODE)
    # the type and UUID filters of the request's family (NVIDIA's for a type no family has)
    fam = family(reqs[0].type if reqs and reqs[0] is not None else "NVIDIA") \
        or family("NVIDIA")
    return _core.PodSpec(
        request_rows(reqs, registered), n_init, mode, chain, n_chain, sort_policy.numa_bind,
        numa_bind(ann), fp.mutex, fp.topology,
        np.array([np.float32(x) for x in w], dtype=np.float32),
        np.array([fam.use_type is None
                  or ref.type_allowed(ann, t, fam.use_type, fam.nouse_type) for t in types]
                 or [1], dtype=np.uint8),
        np.array([ref.mode_allowed(mode_ann, m) for m in modes] or [1], dtype=np.uint8),
        np.array([ref.uuid_allowed(ann, c["id"], fam.use_uuid, fam.nouse_uuid)
                  and (fam.legacy_uuid is None or ref.uuid_allowed(ann, c["id"], *fam.legacy_uuid))
                  for c in cards] or [1], dtype=np.uint8), hami_core=is_hami_core(ann))


def _kernel_picks(cards: list[dict], picks, word: str = "NVIDIA") -> list[dict]:
    from hamisim.devices import family
    fam = family(word)
    labelled = fam is not None and fam.cores_as_cus      # AMD names the card's type
    return [{"uuid": cards[p]["id"], "type": cards[p]["type"] if labelled else word,
             "usedmem": int(m), "usedcores": int(c), "idx": cards[p]["index"]}
            for p, m, c in picks]


def _status_reason(status: int, counts: list[int], n_cards: int) -> str:
    from hamisim import _core
    from hamisim.hami.decision import (
        DEVICE_TYPE_NOT_FOUND,
        NODE_INSUFFICIENT_DEVICE,
        REASONS,
        fit_reason,
    )

    st = _core.ST_NAMES
    if status == st["FIT"]:
        return ""
    if status == st["INSUFFICIENT"]:
        return NODE_INSUFFICIENT_DEVICE
    if status == st["TYPE_NOT_FOUND"]:
        return DEVICE_TYPE_NOT_FOUND
    return fit_reason(dict(zip(REASONS, counts)), n_cards)


class KernelOps:
    """The vectors' operations on the compiled kernel's test entry points."""

    name = "kernel"

    def card_score(self, c: dict, requests: list[dict], w: dict) -> float:
        from hamisim import _core
        from hamisim.sim.arrays import request_rows

        i64 = lambda key: np.array([c[key]], dtype=np.int64)  # noqa: E731
        reqs = [request(r) for r in requests]
        match = np.array([[r.type == c["type"] for r in reqs]], dtype=np.uint8)
        ws = np.array([np.float32(x) for x in weights(w)], dtype=np.float32)
        out = _core.card_scores(i64("count"), i64("devmem"), i64("devcore"), i64("used"),
                                i64("usedmem"), i64("usedcores"), request_rows(reqs), match, ws)
        return float(out[0])

    def card_less(self, policy: str, numa_bind: bool, a: dict, b: dict) -> bool:
        from hamisim import _core
        from hamisim.sim.arrays import encode_policy

        cp = parse_card_policy(policy, numa_bind)
        mode, chain, n_chain = encode_policy(cp)
        key = lambda d: (d["score"], d["numa"], d["used"], d["index"])  # noqa: E731
        return _core.card_less(mode, chain, n_chain, cp.numa_bind, key(a), key(b))

    def _sort(self, policy: str, numa_bind: bool, scores, numa, used, index) -> list[int]:
        from hamisim import _core
        from hamisim.sim.arrays import encode_policy

        cp = parse_card_policy(policy, numa_bind)
        mode, chain, n_chain = encode_policy(cp)
        perm = _core.sort_order(mode, chain, n_chain, cp.numa_bind,
                                np.array(scores, dtype=np.float32),
                                np.array(numa, dtype=np.int64), np.array(used, dtype=np.int64),
                                np.array(index, dtype=np.int64))
        return perm.tolist()

    def sort_order(self, policy: str, numa_bind: bool, ids: list[str], scores: dict,
                   numa: dict, used: dict | None = None) -> list[str]:
        perm = self._sort(policy, numa_bind, [scores[i] for i in ids],
                          [numa.get(i, 0) for i in ids], [(used or {}).get(i, 0) for i in ids],
                          list(range(len(ids))))
        return [ids[p] for p in perm]

    def node_base_score(self, cards: list[dict]) -> float:
        from hamisim import _core

        a = {k: np.array([c[k] for c in cards], dtype=np.int64)
             for k in ("count", "devmem", "devcore", "used", "usedmem", "usedcores")}
        return _core.node_base_score(a["count"], a["devmem"], a["devcore"], a["used"],
                                     a["usedmem"], a["usedcores"])

    def node_less(self, policy: str, a: float, b: float) -> bool:
        from hamisim import _core
        from hamisim.hami.policy import node_policy_spread

        return _core.node_less(node_policy_spread(policy), a, b)

    def fit(self, case: dict) -> tuple[bool, list[dict], str]:
        from hamisim import _core
        from hamisim.hami.decision import REASONS, fit_reason

        cards = case["cards"]
        ann = case.get("annotations") or {}
        text = pod_gpu_policy(case.get("default_gpu_policy", ""), ann)
        # Fit receives the list as given: the kernel's fit_on_node counts every
        # card as a vendor card.
        r = request(case["request"])
        table, types, modes = _one_node_table(cards, case.get("pair_scores"), r.type,
                                              all_offered=True, vnpu_core=vnpu_core(case))
        spec = _pod_spec([r], 0, parse_card_policy(text), text, ann, cards, types, modes)
        perm = list(range(len(cards)))
        if case.get("sort"):
            s = case["sort"]
            perm = self._sort(s["policy"], s["numa_bind"], [s["cards_scores"][c["id"]]
                                                            for c in cards],
                              [c["numa"] for c in cards], [c["used"] for c in cards],
                              [c["index"] for c in cards])
        core = _core.Core(table)
        ok, picks, counts, n_cards = core.fit_on_node(spec, 0, 0, perm)
        reason = "" if ok else fit_reason(dict(zip(REASONS, counts)), n_cards)
        return ok, _kernel_picks(cards, picks, r.type), reason

    def fit_container(self, case: dict) -> tuple[bool, list[str], str]:
        from hamisim import _core

        cards = case["cards"]
        reqs = [request(r) for r in case["requests"]]
        assert len(reqs) == 1, "the kernel fits one request per container"
        ann = case.get("annotations") or {}
        text = pod_gpu_policy(case.get("default_gpu_policy", ""), ann)
        table, types, modes = _one_node_table(cards, case.get("pair_scores"), reqs[0].type)
        spec = _pod_spec(reqs, 0, parse_card_policy(case["list_policy"], case["numa_bind"]),
                         text, ann, cards, types, modes, weights(case.get("weights")),
                         tuple(case.get("registered_types", ["NVIDIA"])))
        st, picks, counts, n_cards = _core.Core(table).fit_in_devices_on_node(spec, 0, 0)
        return (st == _core.ST_NAMES["FIT"], [cards[p]["id"] for p, _, _ in picks],
                _status_reason(st, counts, n_cards))

    def node_pipeline(self, case: dict) -> dict[str, tuple]:
        from hamisim import _core

        ann = case.get("annotations") or {}
        text = pod_gpu_policy(case.get("default_gpu_policy", ""), ann)
        reqs = [request(c[0]) if c else None for c in case["containers"]]
        out = {}
        for name, node in case["nodes"].items():
            cards = node["cards"]
            table, types, modes = _one_node_table(cards, None)
            spec = _pod_spec(reqs, case["n_init"],
                             parse_card_policy(node["list_policy"], node["numa_bind"]), text,
                             ann, cards, types, modes, weights(case.get("weights")))
            st, score, containers, counts, n_cards = _core.Core(table).score_node(spec, 0)
            devices = [_kernel_picks(cards, picks) for picks in containers]
            ok = st == _core.ST_NAMES["FIT"]
            out[name] = (ok, devices, score if ok else 0.0,
                         _status_reason(st, counts, n_cards))
        return out


BACKENDS["kernel"] = KernelOps()
