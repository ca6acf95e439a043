"""kube-scheduler's own behaviour in front of HAMi's extender.

* :mod:`hamisim.kube.fit`: NodeResourcesFit (CPU and memory) and the
  LeastAllocated placement of pods HAMi does not handle;
* :mod:`hamisim.kube.sampling`: ``percentageOfNodesToScore``, the rotating
  sample of feasible nodes handed to HAMi.

Knows the model (nodes, pods) only: nothing of HAMi's cards, files or time.
"""
