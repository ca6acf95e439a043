"""What every run needs around its event loop: a progress bar on a terminal, and
the garbage collector paused while millions of long-lived objects are made."""
from __future__ import annotations

import gc
import sys
from contextlib import contextmanager

__all__ = ["progress_bar", "quiet_gc"]


def progress_bar(total: int | None, enabled: bool | None):
    """A tqdm bar counting pods (``enabled`` None: only when stderr is a terminal),
    or None."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="pod", desc="simulating", leave=False)


@contextmanager
def quiet_gc():
    """No automatic garbage collection inside the block (the event loop; also
    the reading of inputs, which builds many long-lived objects).

    A long run keeps a few hundred thousand long-lived objects (the cluster,
    the event columns), and CPython's automatic full collections walk all of
    them every few ten thousand pods: they cost more than the simulation
    itself in a million-pod replay (and even a young collection walks
    every running pod's objects). The engine creates almost no reference
    cycles (8 cyclic objects left by a 100,000-pod replay, freed at the
    next collection after the block), so automatic collection is paused;
    the previous state is restored on exit, also on error.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
