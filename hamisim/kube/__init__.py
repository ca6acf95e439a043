"""kube-scheduler's own behaviour in front of HAMi's extender.

* :mod:`hamisim.kube.fit`: NodeResourcesFit (CPU and memory) and the
  LeastAllocated placement of pods HAMi does not handle;
* :mod:`hamisim.kube.sampling`: ``percentageOfNodesToScore``, the rotating
  sample of feasible nodes handed to HAMi;
* :mod:`hamisim.kube.filters`: NodeUnschedulable, TaintToleration and
  NodeAffinity, the filters that run before the resource fit;
* :mod:`hamisim.kube.fiterror`: the FailedScheduling text;
* :mod:`hamisim.kube.preemption`: DefaultPreemption, readable (eligibility,
  the dry run, victim and node choice);
* :mod:`hamisim.kube.scheduler`: :class:`~hamisim.kube.scheduler.KubeScheduler`,
  the HAMi backend behind kube-scheduler's nominations and preemption, as the
  engines and scenarios use it.

Knows the model (nodes, pods) only: nothing of HAMi's cards, files or time.
"""
