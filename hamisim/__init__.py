"""hamisim: simulate HAMi GPU scheduling on Kubernetes clusters.

The public API::

    from hamisim import load_cluster, make_scheduler, Pod, Container
    sched = make_scheduler(load_cluster("cluster.yaml"))        # kernel backend
    decision = sched.schedule(Pod("p", (Container({"nvidia.com/gpu": 1}),)))
    decision.node, decision.devices, decision.message

``backend="reference"`` selects the pure-Python executable specification.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .cluster import Card, Cluster, Node, SchedulerConfig
from .errors import HamisimError, InputError, SchedulerError
from .outcome import Decision, Pick
from .pods import Container, Pod, Request
from .scheduler import BACKENDS, make_scheduler

__all__ = [
    "__version__", "Card", "Cluster", "Node", "SchedulerConfig", "HamisimError", "InputError",
    "SchedulerError", "Decision", "Pick", "Container", "Pod", "Request", "BACKENDS",
    "make_scheduler", "load_cluster", "load_scenario", "run_scenario",
    "RunSpec", "run", "compare", "simulate", "EngineConfig", "read_trace",
    "load_sweep", "run_sweep", "load_plan", "run_plan", "explain_pod", "import_kubectl",
    "load_state", "InvariantError",
]

# name -> module for the lazily loaded part of the API
_LAZY = {
    "load_sweep": "sweep", "run_sweep": "sweep", "load_plan": "plan", "run_plan": "plan",
    "explain_pod": "explain", "import_kubectl": "kubeimport", "load_state": "initialstate",
    "InvariantError": "checker",
}


def __getattr__(name: str):
    # File readers and the scenario runner import PyYAML and friends; load them
    # on first use so `import hamisim` stays light.
    if name == "load_cluster":
        from .clusterfile import load_cluster
        return load_cluster
    if name in ("load_scenario", "run_scenario"):
        from . import scenario
        return getattr(scenario, name)
    if name in ("RunSpec", "run", "compare"):
        from . import study
        return getattr(study, name)
    if name in ("simulate", "EngineConfig"):
        from . import engine
        return getattr(engine, name)
    if name == "read_trace":
        from .traces import read_trace
        return read_trace
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'hamisim' has no attribute {name!r}")
