"""hamisim: simulate HAMi GPU scheduling on Kubernetes clusters.

The public API::

    from hamisim import load_cluster, make_scheduler, Pod, Container
    sched = make_scheduler(load_cluster("cluster.yaml"))        # kernel backend
    decision = sched.schedule(Pod("p", (Container({"nvidia.com/gpu": 1}),)))
    decision.node, decision.devices, decision.message

``backend="reference"`` selects the pure-Python executable specification.
"""
from __future__ import annotations

from hamisim._version import __version__

from hamisim.cluster import Card, Cluster, Node, SchedulerConfig
from hamisim.errors import HamisimError, InputError, SchedulerError
from hamisim.hami.decision import Decision, Pick
from hamisim.mig import MigPlacement, MigProfile
from hamisim.pods import Container, Pod, Request
from hamisim.sim.backend import BACKENDS, make_scheduler

__all__ = [
    "__version__", "Card", "Cluster", "Node", "SchedulerConfig", "HamisimError", "InputError",
    "SchedulerError", "Decision", "Pick", "MigProfile", "MigPlacement", "Container", "Pod", "Request", "BACKENDS",
    "make_scheduler", "load_cluster", "load_scenario", "run_scenario",
    "RunSpec", "run", "compare", "simulate", "EngineConfig", "read_trace",
    "load_sweep", "run_sweep", "load_plan", "run_plan", "explain_pod", "import_kubectl",
    "load_state", "InvariantError",
]

# name -> module of the lazily loaded part of the API: file readers, the engine
# and the studies import PyYAML, pandas and SimPy, so `import hamisim` stays light
_LAZY = {
    "load_cluster": "hamisim.io.clusterfile",
    "read_trace": "hamisim.io.traces",
    "load_scenario": "hamisim.io.scenariofile",
    "load_state": "hamisim.io.initialstate",
    "import_kubectl": "hamisim.io.kubeimport",
    "simulate": "hamisim.sim.engine", "EngineConfig": "hamisim.sim.engine",
    "InvariantError": "hamisim.sim.checker",
    "run_scenario": "hamisim.studies.scenario",
    "RunSpec": "hamisim.studies.runs", "run": "hamisim.studies.runs",
    "compare": "hamisim.studies.runs",
    "load_sweep": "hamisim.studies.sweepfile", "run_sweep": "hamisim.studies.sweep",
    "load_plan": "hamisim.studies.plan", "run_plan": "hamisim.studies.plan",
    "explain_pod": "hamisim.explain",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hamisim' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(module), name)
