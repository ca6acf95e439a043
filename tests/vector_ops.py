"""Adapters that drive one backend with HAMi's unit-test vectors.

Each backend offers the same small operations (card score, comparator, Fit,
node evaluation) on the vectors' plain-JSON objects, so
``test_hami_vectors.py`` states each check once and runs it on both backends.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from hamisim import reference as ref
from hamisim.pods import Request
from hamisim.policy import parse_card_policy, pod_gpu_policy


def request(d: dict) -> Request:
    return Request(nums=d["nums"], memreq=d["memreq"], mempercentagereq=d["mempercentagereq"],
                   coresreq=d["coresreq"], type=d["type"])


def weights(d: dict | None) -> tuple[int, int, int]:
    if not d:
        return 1, 1, 1
    return d["slot"], d["core"], d["memory"]


def card(d: dict) -> ref.CardUsage:
    return ref.CardUsage(id=d["id"], index=d["index"], type=d["type"], count=d["count"],
                         devmem=d["devmem"], devcore=d["devcore"], used=d["used"],
                         usedmem=d["usedmem"], usedcores=d["usedcores"], numa=d["numa"],
                         health=d["health"], mode=d["mode"])


def pick_dict(p) -> dict:
    return {"uuid": p.uuid, "type": "NVIDIA", "usedmem": p.usedmem, "usedcores": p.usedcores,
            "idx": p.idx}


class ReferenceOps:
    """The vectors' operations on :mod:`hamisim.reference`."""

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
        res = ref.fit(cards, request(case["request"]), ann, policy, case.get("pair_scores"))
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
