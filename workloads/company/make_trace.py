"""Write the company cluster's trace: a day (bundled) or a week (made at benchmark time).

A capacity planner's own workload for ``cluster.yaml`` beside this file (issue 36),
seeded, so the same arguments write the same file byte for byte:

    python workloads/company/make_trace.py                 # trace-day.parquet (the bundled day)
    python workloads/company/make_trace.py --days 7 week.csv --seed 36

Each kind of pod follows its own hour-of-day curve (working days; weekends at a
lower rate, batch excepted) in its team's namespace, at one of three
priority classes (``PRIORITY_CLASSES``; the trace's ``priority`` column holds the
class's value, as a pod's ``spec.priority`` does):

* ``inference`` (production): model servers asking a slice of an L40S or a
  non-MIG A100 (``gpumem`` 8-24 GiB, 20-40 % of the cores), with a 30 s grace
  period; a fifth of them ask a MIG slice of an A100 instead
  (``nvidia.com/vgpu-mode: mig``, 5 or 10 GB).
* ``platform`` (best-effort): overnight batch inference on the tainted T4s,
  tolerating their taint.
* ``notebooks`` (standard): a quarter or half of a card during working hours.
* ``research`` (standard; a tenth best-effort): 1-4 whole A100s or 8 whole H100s
  (the 8-GPU jobs on the DGX pool), 100 % of the cores, running for hours, with
  a GPU-less init container (data staging, ``init_duration`` 1-10 min; HAMi
  v2.10 then drops the app container's usage, HAMi #2965) and a 5 min grace period.

On working days training asks more whole cards than the DGX and A100 pools hold,
so the cluster saturates by mid-morning and a queue of unschedulable pods builds
up: the overloaded regime ``benchmarks/overload.py`` measures.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import random
from pathlib import Path

SEED = 36
#: priority classes (name: value), as a cluster's PriorityClass objects would give them
PRIORITY_CLASSES = {"production": 1000000, "standard": 1000, "best-effort": 0}
#: the shape of each kind's hour-of-day curve (0..23), scaled by ``RATE``
HOURLY = {
    "inference": (14, 10, 8, 8, 8, 12, 20, 34, 46, 52, 54, 54, 52, 54, 54, 52, 48, 42, 36, 30, 26, 22, 18, 16),
    "mig": (4, 3, 2, 2, 2, 3, 5, 8, 11, 13, 13, 13, 13, 13, 13, 13, 12, 10, 9, 7, 6, 5, 4, 4),
    "batch": (60, 64, 64, 64, 60, 50, 30, 14, 8, 6, 6, 6, 6, 6, 6, 6, 8, 12, 20, 30, 40, 50, 56, 60),
    "notebook": (1, 1, 1, 1, 1, 1, 4, 16, 40, 56, 60, 54, 40, 50, 56, 52, 44, 30, 16, 8, 4, 2, 2, 1),
    "train": (8, 6, 6, 6, 6, 8, 12, 22, 40, 54, 60, 58, 48, 56, 60, 56, 50, 40, 30, 22, 16, 12, 10, 8),
}
#: pods per hour of a working day at a curve value of 1, by kind
RATE = {"inference": 6.0, "mig": 6.0, "batch": 6.0, "notebook": 6.0, "train": 2.1}
#: a weekend day's rate against a working day's, by kind (batch runs every night)
WEEKEND = {"inference": 1.0, "mig": 1.0, "batch": 1.0, "notebook": 0.5, "train": 0.7}
T4_TOLERATION = [{"key": "nvidia.com/gpu.product", "operator": "Equal", "value": "Tesla-T4",
                  "effect": "NoSchedule"}]
COLUMNS = ("name", "arrival", "duration", "gpu", "gpumem", "gpumem_percentage", "gpucores",
           "cpu_milli", "memory_mib", "priority", "namespace", "class", "vgpu_mode",
           "node_selector", "tolerations", "affinity", "termination_grace_period",
           "init_duration", "init_containers", "controller")

FLOATS = ("arrival", "duration", "init_duration")


def _pool(*pools: str) -> str:
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": list(pools)}]}
    return json.dumps({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                        {"nodeSelectorTerms": [term]}}}, separators=(",", ":"))


INFERENCE_POOLS = _pool("l40s", "a100")
STAGING = json.dumps([{"requests": {"cpu": "2", "memory": "4Gi"}}], separators=(",", ":"))


def _pod(kind: str, rng: random.Random) -> dict[str, object]:
    """One pod of ``kind`` (its columns but name and arrival)."""
    pc = PRIORITY_CLASSES
    if kind == "inference":
        return {"duration": rng.expovariate(1 / 5400), "gpu": 1,
                "gpumem": rng.choice((8192, 12288, 16384, 24576)),
                "gpucores": rng.choice((20, 30, 40)), "cpu_milli": 4000, "memory_mib": 16384,
                "priority": pc["production"], "namespace": "inference", "class": "inference",
                "affinity": INFERENCE_POOLS, "termination_grace_period": 30}
    if kind == "mig":
        return {"duration": rng.expovariate(1 / 7200), "gpu": 1,
                "gpumem": rng.choice((4864, 9984)), "cpu_milli": 2000, "memory_mib": 8192,
                "priority": pc["production"], "namespace": "inference", "class": "inference-mig",
                "vgpu_mode": "mig", "node_selector": '{"pool":"a100-mig"}',
                "termination_grace_period": 30}
    if kind == "batch":
        return {"duration": rng.expovariate(1 / 2400), "gpu": 1,
                "gpumem": rng.choice((4096, 6144, 8192)), "gpucores": rng.choice((25, 50)),
                "cpu_milli": 2000, "memory_mib": 8192, "priority": pc["best-effort"],
                "namespace": "platform", "class": "batch-t4", "node_selector": '{"pool":"t4"}',
                "tolerations": json.dumps(T4_TOLERATION, separators=(",", ":"))}
    if kind == "notebook":
        return {"duration": rng.uniform(1800, 4 * 3600), "gpu": 1,
                "gpumem_percentage": rng.choice((25, 50)), "gpucores": 25, "cpu_milli": 4000,
                "memory_mib": 32768, "priority": pc["standard"], "namespace": "notebooks",
                "class": "notebook", "affinity": INFERENCE_POOLS}
    gpus = rng.choices((1, 2, 4, 8), weights=(30, 25, 25, 20))[0]
    pool = '{"pool":"h100"}' if gpus == 8 else '{"pool":"a100"}'
    return {"duration": rng.lognormvariate(math.log(4 * 3600), 0.8), "gpu": gpus, "gpucores": 100,
            "cpu_milli": 12000 * gpus, "memory_mib": 98304 * gpus,
            "priority": pc["best-effort"] if rng.random() < 0.1 else pc["standard"],
            "namespace": "research", "class": f"train-{gpus}gpu", "node_selector": pool,
            "termination_grace_period": 300, "init_duration": rng.uniform(60, 600),
            "init_containers": STAGING}


def rows(days: int, seed: int = SEED) -> list[dict[str, object]]:
    """The trace's pods in arrival order: ``days`` days from a Monday 00:00."""
    rng = random.Random(seed)
    out: list[tuple[float, int, dict[str, object]]] = []
    for day in range(days):
        weekend = day % 7 >= 5
        for hour in range(24):
            for kind, curve in HOURLY.items():
                rate = curve[hour] * RATE[kind] * (WEEKEND[kind] if weekend else 1.0)
                t = rng.expovariate(rate / 3600)    # a Poisson process within the hour
                while t < 3600:
                    out.append((day * 86400 + hour * 3600 + t, len(out), _pod(kind, rng)))
                    t += rng.expovariate(rate / 3600)
    out.sort(key=lambda r: (r[0], r[1]))
    result = []
    for k, (arrival, _, pod) in enumerate(out):
        name = f"{pod['class']}-{k}"
        pod = {"name": name, "arrival": arrival, **pod, "controller": _controller(name, k)}
        result.append(pod)
    return result


def _controller(name: str, k: int) -> str | None:
    """Who owns the pod (made from its name, so the random draws are those of the
    trace before it had owners): inference pods belong to eight ReplicaSets (four
    for MIG), batch and training pods each to its own Job, notebooks to none."""
    if name.startswith("inference-mig"):
        return f"ReplicaSet/serve-mig-{k % 4}"
    if name.startswith("inference"):
        return f"ReplicaSet/serve-{k % 8}"
    if name.startswith(("batch", "train")):
        return f"Job/{name}"
    return None


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def write(path: Path, days: int, seed: int = SEED) -> int:
    """Write the trace to ``path`` (CSV, or Parquet by its suffix); returns its number of pods."""
    pods = rows(days, seed)
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        def column(c: str) -> list[object]:
            values = [p.get(c) for p in pods]
            if c in FLOATS:     # the CSV's 0.1 s resolution, so both forms hold one trace
                return [None if v is None else round(float(v), 1) for v in values]
            return values
        table = pa.table({c: column(c) for c in COLUMNS})
        pq.write_table(table, path, compression="zstd")
        return len(pods)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS)
        for pod in pods:
            w.writerow([_cell(pod.get(c)) for c in COLUMNS])
    return len(pods)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=str(Path(__file__).resolve().parent / "trace-day.parquet"))
    ap.add_argument("--days", type=int, default=1)
    ap.add_argument("--seed", type=int, default=SEED)
    a = ap.parse_args()
    n = write(Path(a.out), a.days, a.seed)
    print(f"{a.out}: {n} pods over {a.days} day(s), seed {a.seed}")


if __name__ == "__main__":
    main()
