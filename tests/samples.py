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
