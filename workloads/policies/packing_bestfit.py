"""A research node policy of one's own, on the FGD paper's model (not HAMi behaviour).

GpuPacking, one of the paper's six, gives only a handful of distinct scores
(partly used cards 50..100, used nodes 33..49, empty nodes below 33), so
most of its decisions are ties, which hamisim breaks like the authors'
simulator: the last top-scored node in cluster order. This policy keeps
GpuPacking's score and breaks its ties with BestFit's (the least CPU and GPU
left over), by returning the pair: scores are compared as Python compares
them, so a tuple ranks lexicographically.

    hamisim run workloads/openb/openb_node_list_gpu_node.csv \
        workloads/openb/openb_pod_list_default.csv --mode fill --backend reference \
        --node-policy python:workloads/policies/packing_bestfit.py:PackingThenBestFit

A policy on this model is a subclass of hamisim.research.policies.ModelPolicy
(here of GpuPacking, one of the six built-ins, which are subclasses too):
``score(node, pod)`` sees a ModelNode (``cards``: free milli per card,
``free_cpu``, ``free_memory``, ``gpu_left``, ``classes``, ``fitting(milli)``,
``tightest(k, milli)``, ``fragmentation()``) and a ModelPod (``k`` cards of
``milli`` each, ``score_cpu``, ``memory_mib``, ``share``); ``cards(node,
pod, draw)`` picks the winner's cards (inherited here: the tightest fitting
ones, GpuPacking's own choice).
"""
from hamisim.research.policies import BestFit, GpuPacking

_BESTFIT = BestFit()


class PackingThenBestFit(GpuPacking):
    def score(self, node, pod):
        return (super().score(node, pod), _BESTFIT.score(node, pod))
