"""Small input files the tests write: a cluster of one node group, as text; a
diurnal trace (a strong hour-of-day profile over several days)."""
from __future__ import annotations

import numpy as np

from hamisim.pods import GPU, GPUCORES, GPUMEM, GPUMEM_PERCENTAGE, Container, Pod
from hamisim.workload import Trace, TracePod


#: two T4 nodes and an A100 node in MIG mode, as the lines of a cluster file's
#: ``nodes:`` list (the report and figure tests' mixed cluster)
T4_AND_MIG_NODES = """\
  - name_prefix: t4
    replicas: 2
    gpus: 4
    card: {devmem: 15360, type: NVIDIA-Tesla T4}
  - name_prefix: a100
    replicas: 1
    gpus: 2
    card: {type: NVIDIA A100-SXM4-40GB, mode: mig}
"""


def group_cluster(replicas: int, *, gpus: int, prefix: str = "gpu", cpu_milli: int = 32000,
                  count: int = 4, devmem: int = 16000, card_type: str = "NVIDIA-Tesla T4",
                  scheduler: str = "") -> str:
    """A cluster file of ``replicas`` identical nodes with ``gpus`` cards each."""
    head = f"scheduler: {{{scheduler}}}\n" if scheduler else ""
    return (f"{head}nodes:\n  - {{name_prefix: {prefix}, replicas: {replicas}, "
            f"cpu_milli: {cpu_milli}, gpus: {gpus},\n     card: {{count: {count}, "
            f"devmem: {devmem}, devcore: 100, type: {card_type}}}}}\n")


#: MIG and hami-core nodes side by side (hamisim validate's MIG tests)
MIG_MIXED_CLUSTER = """\
scheduler:
  gpu_scheduler_policy: binpack
  node_scheduler_policy: binpack
  migProfileAllowlist:
    - models: [A100-SXM4-40GB]
      profiles: [1g.5gb, 2g.10gb, 3g.20gb, 7g.40gb]
nodes:
  - name_prefix: a100
    replicas: 3
    gpus: 2
    card: {type: NVIDIA A100-SXM4-40GB, mode: mig}
  - name_prefix: t4
    replicas: 3
    gpus: 2
    card: {type: NVIDIA-Tesla T4, count: 10, devmem: 15360, devcore: 100}
"""


#: arrivals per hour of the day: a working-day peak over a quiet night
HOURLY = np.array([2, 1, 1, 1, 1, 2, 4, 8, 16, 30, 34, 34, 28, 32, 34, 30, 26, 18, 12,
                   8, 6, 4, 3, 2])
#: (request, namespace, class, share of the pods) of the diurnal trace
KINDS = (({GPU: 1, GPUMEM: 20000, GPUCORES: 30}, "serving", "inference", 0.6),
         ({GPU: 4}, "research", "train-4gpu", 0.15),
         ({GPU: 8}, "research", "train-8gpu", 0.05),
         ({GPU: 1, GPUMEM_PERCENTAGE: 25}, "notebooks", "notebook", 0.2))


def diurnal_trace(days: int = 6, seed: int = 7) -> Trace:
    """A trace with a strong hour-of-day profile (:data:`HOURLY`, weekends at half
    the rate) over ``days`` days, four kinds of pods in three namespaces, some
    with a deletion time."""
    rng = np.random.default_rng(seed)
    pods = []
    for day in range(days):
        for hour, rate in enumerate(HOURLY):
            n = rng.poisson(rate if day % 7 < 5 else rate / 2)
            for t in np.sort(rng.uniform(0, 3600, n)):
                k = rng.choice(len(KINDS), p=[kind[3] for kind in KINDS])
                limits, ns, label, _ = KINDS[k]
                arrival = float(day * 86400 + hour * 3600 + t)
                life = float(rng.exponential(3600))
                deletion = arrival + life if len(pods) % 10 == 0 else None
                pods.append(TracePod(Pod(f"p{len(pods)}", (Container(limits),), namespace=ns),
                                     arrival, None if deletion else life, deletion,
                                     len(pods) + 2, label))
    return Trace.from_pods("diurnal", pods)


def hour_shares(trace: Trace) -> np.ndarray:
    return np.bincount((trace.arrival // 3600 % 24).astype(int), minlength=24) / len(trace)
