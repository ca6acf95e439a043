"""Write trace.csv, the MIG study's workload (seeded: the same file every time).

Inference-heavy, as the MIG-versus-slicing question usually arises: most pods
are model servers asking for a slice of one card by memory (``gpumem``), a few
want a card of their own (HAMi's ``mutex`` policy), a few fine-tuning jobs want
half a card. Every pod names its memory: a bare ``nvidia.com/gpu: 1`` asks for
100 % of the card and never fits a MIG card (HAMI-SEMANTICS §10). Arrivals are
Poisson over eight hours.

    python workloads/mig/make_trace.py
"""
from __future__ import annotations

import random
from pathlib import Path

SEED = 17
N_PODS = 2400
SPAN_S = 8 * 3600


def main() -> None:
    rng = random.Random(SEED)
    rows = ["name,arrival,duration,gpu,gpumem,gpucores,gpu_policy,class"]
    t = 0.0
    for i in range(N_PODS):
        t += rng.expovariate(N_PODS / SPAN_S)
        kind = rng.random()
        life = rng.randint(900, 5400)
        if kind < 0.55:           # small model servers
            mem = rng.choice([3072, 4096, 4500])
            rows.append(f"small-{i:04d},{t:.1f},{life},1,{mem},{rng.choice([10, 15])},,"
                        "inference (small)")
        elif kind < 0.80:         # medium model servers
            mem = rng.choice([8192, 9216])
            rows.append(f"medium-{i:04d},{t:.1f},{life},1,{mem},{rng.choice([20, 30])},,"
                        "inference (medium)")
        elif kind < 0.92:         # fine-tuning: half a card
            rows.append(f"tune-{i:04d},{t:.1f},{life},1,18432,40,,fine-tuning")
        else:                     # a card of its own (mutex), as the mutex article's pods
            rows.append(f"solo-{i:04d},{t:.1f},{life},1,16384,50,mutex,inference (mutex)")
    path = Path(__file__).with_name("trace.csv")
    path.write_text("\n".join(rows) + "\n")
    print(f"wrote {path} ({N_PODS} pods over {SPAN_S / 3600:.0f} h)")


if __name__ == "__main__":
    main()
