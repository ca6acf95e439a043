"""Write trace.csv, the topology study's workload (seeded: the same file every time).

Inference pods share cards (one GPU, a slice of its memory and cores); training
pods take whole cards, 2, 4 or 8 of them; a few inference pods ask for a card of
their own with HAMi's mutex policy. Arrivals are Poisson over six hours.

    python workloads/topology/make_trace.py
"""
from __future__ import annotations

import random
from pathlib import Path

SEED = 16
N_PODS = 500
SPAN_S = 6 * 3600


def main() -> None:
    rng = random.Random(SEED)
    rows = ["name,arrival,duration,gpu,gpumem,gpucores,gpu_policy,class"]
    t = 0.0
    for i in range(N_PODS):
        t += rng.expovariate(N_PODS / SPAN_S)
        kind = rng.random()
        if kind < 0.6:            # inference: a slice of one card
            mem = rng.choice([4096, 8192, 12288, 16384])
            rows.append(f"infer-{i:04d},{t:.1f},{rng.randint(600, 3600)},1,{mem},"
                        f"{rng.choice([10, 20, 30, 50])},,inference")
        elif kind < 0.7:          # a card of its own, whatever else is free (mutex)
            rows.append(f"solo-{i:04d},{t:.1f},{rng.randint(600, 3600)},1,16384,50,"
                        f"mutex,inference (mutex)")
        else:                     # training: whole cards
            gpus = rng.choices([2, 4, 8], weights=[5, 3, 2])[0]
            rows.append(f"train{gpus}-{i:04d},{t:.1f},{rng.randint(900, 3600)},{gpus},,,,"
                        f"training {gpus} GPUs")
    path = Path(__file__).with_name("trace.csv")
    path.write_text("\n".join(rows) + "\n")
    print(f"wrote {path} ({N_PODS} pods over {SPAN_S / 3600:.0f} h)")


if __name__ == "__main__":
    main()
