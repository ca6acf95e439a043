"""Choose a backend: the compiled kernel (default) or the readable reference.

Both backends take identical decisions; the reference is the executable
specification, the kernel the fast path. A missing compiled module is an
error, never a silent fallback to the slow path.
"""
from __future__ import annotations

from typing import Protocol

from .cluster import Cluster
from .errors import HamisimError
from .outcome import Decision
from .pods import Pod

__all__ = ["BACKENDS", "Backend", "make_scheduler"]

BACKENDS = ("kernel", "reference")


class Backend(Protocol):
    """What the engine and the scenario runner need from a scheduler."""

    cluster: Cluster
    backend: str

    def schedule(self, pod: Pod, tie_draw: float | None = None) -> Decision: ...

    def delete(self, name: str) -> None: ...

    def usage_by_card(self) -> dict[str, tuple[int, int, int]]: ...


def make_scheduler(cluster: Cluster, backend: str = "kernel") -> Backend:
    """A fresh scheduler (empty pod cache) for ``cluster`` on ``backend``."""
    if backend == "reference":
        from .reference import ReferenceScheduler
        return ReferenceScheduler(cluster)
    if backend == "kernel":
        try:
            from .kernel import KernelScheduler
        except ImportError as exc:  # pragma: no cover - depends on the build
            raise HamisimError(
                "the compiled kernel hamisim._core is not built; reinstall with "
                "`pip install .` (a C compiler is needed), or pass --backend reference "
                f"({exc})") from exc
        return KernelScheduler(cluster)
    raise HamisimError(f"unknown backend {backend!r} (expected one of {', '.join(BACKENDS)})")
