"""Small input files the tests write: a cluster of one node group, as text."""
from __future__ import annotations


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
