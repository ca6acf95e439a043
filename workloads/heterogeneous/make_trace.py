"""Write trace.jsonl, a working day on the heterogeneous cluster (seeded: the same
file every time).

Arrivals follow the hour of the day (a morning ramp, an afternoon peak, a quiet
night). Every pod asks one device family with its vendor's own resource names
and units, as a team running on that hardware writes it:

* NVIDIA H100: model servers (1 card, 20 GiB, 30 % cores) and 8-card training;
* Hygon DCU: inference slices (``hygon.com/dcumem`` MiB, ``dcucores`` %);
* Iluvatar MR-V100: slices (``.vMem`` in 256 MiB units, ``.vCore`` %);
* AMD MI300X: 1-2 cards of 48 GiB and 25-50 % of the CUs;
* Cambricon MLU370: slices (``mlu.smlu.vmemory`` in 256 MiB units, ``vcore`` %)
  and whole-card jobs (no memory, cores default to the whole card);
* Biren: 1-2 cards by count alone (a card takes ``count`` pods);
* Moore Threads: slices (``sgpu-memory`` in 512 MiB units of the legal sizes,
  ``sgpu-core`` of 16) and 2-card jobs (the webhook makes them whole cards);
* Ascend 910B3: hard-split inference (``huawei.com/Ascend910B3-memory`` 12 GiB,
  which the webhook rounds up to the 16 GiB template), soft-split slices
  (``huawei.com/vnpu-mode: hami-core``, 8 GiB and 20 % of the cores) and
  4-NPU training (whole NPUs, Fit takes one HCCS network);
* Ascend 910C: one NPU, which the webhook makes a whole module of two;
* Kunlunxin: 1, 2 or 4 whole cards (``kunlunxin.com/xpu``; graghSelect picks
  them by wing) and quarter-card vXPU slices (``kunlunxin.com/vxpu-memory``
  20 GiB, which the webhook rounds up to 24 GiB).

    python workloads/heterogeneous/make_trace.py
"""
from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 37
#: pods per hour, by hour of the day
HOURLY = (6, 4, 3, 3, 3, 4, 8, 16, 30, 44, 52, 52, 44, 50, 54, 50, 42, 30, 20, 14, 10, 8, 7, 6)


def _pod(rng: random.Random) -> tuple[str, list[dict], float, dict]:
    """(class, containers, lifetime s, annotations) of one pod."""
    family = rng.choices(("nvidia", "dcu", "mr", "amd", "mlu", "biren", "mthreads", "ascend",
                          "910c", "kunlun", "vxpu"),
                         weights=(30, 18, 8, 10, 16, 8, 10, 16, 4, 8, 6))[0]
    serve = rng.expovariate(1 / 3600)
    train = rng.expovariate(1 / (3 * 3600))
    if family == "nvidia":
        if rng.random() < 0.85:
            return "h100-serve", [{"gpu": 1, "gpumem": 20480, "gpucores": 30}], serve
        return "h100-train-8", [{"gpu": 8, "gpumem_percentage": 100, "gpucores": 100}], train
    if family == "dcu":
        mem = rng.choice((4096, 8192, 16384))
        return f"dcu-{mem // 1024}g", [{"limits": {"hygon.com/dcunum": 1, "hygon.com/dcumem": mem,
                                                  "hygon.com/dcucores": 25}}], serve
    if family == "mr":
        return "mr-v100-8g", [{"limits": {"iluvatar.ai/MR-V100-vgpu": 1,
                                          "iluvatar.ai/MR-V100.vMem": 32,
                                          "iluvatar.ai/MR-V100.vCore": 25}}], serve
    if family == "amd":
        n = rng.choice((1, 1, 2))
        return f"mi300x-{n}", [{"limits": {"amd.com/gpu": n, "amd.com/gpumem": 49152,
                                           "amd.com/gpucores": rng.choice((25, 50))}}], train
    if family == "mlu":
        if rng.random() < 0.8:
            return "mlu-12g", [{"limits": {"cambricon.com/vmlu": 1,
                                           "cambricon.com/mlu.smlu.vmemory": 48,
                                           "cambricon.com/mlu.smlu.vcore": 25}}], serve
        return "mlu-whole", [{"limits": {"cambricon.com/vmlu": 1}}], train
    if family == "biren":
        n = rng.choice((1, 2))
        return f"biren-{n}", [{"limits": {"birentech.com/gpu": n}}], serve
    if family == "mthreads":
        if rng.random() < 0.8:
            return "mthreads-8g", [{"limits": {"mthreads.com/vgpu": 1,
                                               "mthreads.com/sgpu-memory": 16,
                                               "mthreads.com/sgpu-core": 4}}], serve
        return "mthreads-2", [{"limits": {"mthreads.com/vgpu": 2}}], train
    if family == "ascend":
        kind = rng.random()
        if kind < 0.6:
            return "npu-12g", [{"limits": {"huawei.com/Ascend910B3": 1,
                                           "huawei.com/Ascend910B3-memory": 12288}}], serve
        if kind < 0.85:
            return "npu-soft-8g", [{"limits": {"huawei.com/Ascend910B3": 1,
                                               "huawei.com/Ascend910B3-memory": 8192,
                                               "huawei.com/Ascend910B3-core": 20}}], serve, \
                {"huawei.com/vnpu-mode": "hami-core"}
        return "npu-train-4", [{"limits": {"huawei.com/Ascend910B3": 4}}], train
    if family == "910c":
        return "910c-module", [{"limits": {"huawei.com/Ascend910C": 1}}], train
    if family == "kunlun":
        n = rng.choice((1, 2, 4))
        return f"kunlun-{n}", [{"limits": {"kunlunxin.com/xpu": n}}], train
    return "vxpu-24g", [{"limits": {"kunlunxin.com/vxpu": 1,
                                    "kunlunxin.com/vxpu-memory": 20480}}], serve


def main() -> None:
    rng = random.Random(SEED)
    lines = []
    for hour, rate in enumerate(HOURLY):
        for t in sorted(rng.uniform(0, 3600) for _ in range(rate)):
            cls, containers, life, *ann = _pod(rng)
            lines.append(json.dumps({"name": f"p{len(lines)}", "arrival": round(hour * 3600 + t, 1),
                                     "duration": round(max(life, 60.0), 1), "class": cls,
                                     "containers": containers,
                                     **({"annotations": ann[0]} if ann else {})}))
    (Path(__file__).resolve().parent / "trace.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
