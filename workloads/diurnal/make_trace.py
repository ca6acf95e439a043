"""Write trace.csv, a week with a daily cycle (seeded: the same file every time).

Arrivals follow the hour of the day (a working-day peak, a quiet night) and the
day of the week (weekends at a third of the rate); three teams in their own
namespaces: model servers asking for a slice of a card, notebooks asking for a
quarter, training jobs asking for 2, 4 or 8 whole cards and running for hours.
A few training jobs started late on Sunday run well past the week: the drain.
It is the README's example for ``--scale`` and the headline window.

    python workloads/diurnal/make_trace.py
"""
from __future__ import annotations

import random
from pathlib import Path

SEED = 36
DAYS = 7
#: pods per hour on a working day, by hour of the day
HOURLY = (2, 1, 1, 1, 1, 2, 4, 8, 16, 30, 34, 34, 28, 32, 34, 30, 26, 18, 12, 8, 6, 4, 3, 2)


def main() -> None:
    rng = random.Random(SEED)
    rows = ["name,arrival,duration,gpu,gpumem,gpumem_percentage,gpucores,namespace,class"]
    k = 0
    for day in range(DAYS):
        weekend = day >= 5
        for hour, rate in enumerate(HOURLY):
            n = sum(rng.random() < (rate / 3 if weekend else rate) / 60 for _ in range(60))
            for t in sorted(rng.uniform(0, 3600) for _ in range(n)):
                arrival = day * 86400 + hour * 3600 + t
                kind = rng.random()
                if kind < 0.6:
                    row = (1, 20000, "", 30, rng.expovariate(1 / 3600), "serving", "inference")
                elif kind < 0.8:
                    row = (1, "", 25, 25, rng.expovariate(1 / 7200), "notebooks", "notebook")
                else:
                    gpus = rng.choice((2, 4, 8))
                    life = rng.expovariate(1 / (4 * 3600))
                    if day == DAYS - 1 and hour >= 20:
                        life = 30 * 3600            # started late on Sunday: the drain
                    row = (gpus, "", "", 100, life, "research", f"train-{gpus}gpu")
                g, mem, pct, cores, life, ns, cls = row
                rows.append(f"p{k},{arrival:.1f},{life:.1f},{g},{mem},{pct},{cores},{ns},{cls}")
                k += 1
    (Path(__file__).resolve().parent / "trace.csv").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
