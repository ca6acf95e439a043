"""Write trace.jsonl, a day of training jobs behind a GPU-less init container
(seeded: the same file every time).

Training jobs ask for 1, 2 or 4 whole cards (gpucores 100) and first run an init
container without GPUs for two minutes (a data download: ``init_duration`` 120 s);
inference pods ask for a 30 % slice of one card and have no init container. The
two 8 x H100 nodes of cluster.yaml are typed ``NVIDIA-H100-80GB``, as a real
node's cards are, so HAMi v2.10's init-container accounting (HAMi issue #2965)
drops each training job's cards from its books when the download is done.

    python workloads/init-containers/make_trace.py
"""
from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 2965
HOURS = 24


def main() -> None:
    rng = random.Random(SEED)
    rows = []
    t, k = 0.0, 0
    while True:
        t += rng.expovariate(10 / 3600)         # 10 pods an hour
        if t > HOURS * 3600:
            break
        if rng.random() < 0.4:
            rows.append({"name": f"train-{k:03d}", "arrival": round(t, 1),
                         "duration": round(rng.expovariate(1 / 5400) + 600),
                         "gpu": rng.choice((1, 2, 4)), "gpucores": 100,
                         "init_containers": [{"requests": {"cpu": "1"}}],
                         "init_duration": 120, "class": "training"})
        else:
            rows.append({"name": f"infer-{k:03d}", "arrival": round(t, 1),
                         "duration": round(rng.expovariate(1 / 1800) + 60), "gpu": 1,
                         "gpumem": 20000, "gpucores": 30, "class": "inference"})
        k += 1
    out = Path(__file__).with_name("trace.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
