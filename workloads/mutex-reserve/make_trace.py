"""Write trace-mutex.csv and trace-mutex-reserve.csv: one workload, two policies.

The question of HAMi issue #3038: latency-sensitive model servers ask for a
card with no tenant (``mutex``), shared inference pods fill the rest. Under
HAMi's ``mutex`` the guarantee holds only at placement time, so shared pods
that arrive later may join a mutex pod's card; the what-if ``mutex-reserve``
keeps the card to itself until the pod leaves. Both files hold the same pods
(names, arrivals, lifetimes, requests); only the ``gpu_policy`` of the
exclusive pods differs. Poisson arrivals over six hours, seeded.

    python workloads/mutex-reserve/make_trace.py
"""
from __future__ import annotations

import random
from pathlib import Path

SEED = 3038
N_PODS = 1500
SPAN_S = 6 * 3600
EXCLUSIVE_SHARE = 0.2


def rows(policy: str) -> list[str]:
    rng = random.Random(SEED)
    out = ["name,arrival,duration,gpu,gpumem,gpucores,gpu_policy,class"]
    t = 0.0
    for i in range(N_PODS):
        t += rng.expovariate(N_PODS / SPAN_S)
        life = rng.randint(600, 3600)
        if rng.random() < EXCLUSIVE_SHARE:
            out.append(f"exclusive-{i:04d},{t:.1f},{life},1,12288,60,{policy},exclusive")
        else:
            mem = rng.choice([2048, 4096, 6144])
            out.append(f"shared-{i:04d},{t:.1f},{life},1,{mem},{rng.choice([10, 20])},,"
                       "shared")
    return out


def main() -> None:
    here = Path(__file__).parent
    for policy in ("mutex", "mutex-reserve"):
        path = here / f"trace-{policy}.csv"
        path.write_text("\n".join(rows(policy)) + "\n")
        print(f"wrote {path} ({N_PODS} pods over {SPAN_S / 3600:.0f} h)")


if __name__ == "__main__":
    main()
