"""Where the bundled workloads (clusters, traces, scenarios) live.

The repository keeps them in the top-level ``workloads/`` folder; a
non-editable ``pip install .`` copies that folder into the installed package
as ``hamisim/workloads`` (see setup.py), so commands work from any folder.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["workloads_dir", "bundled_scenarios", "resolve_scenario"]

#: the installed package folder (this module lives in hamisim/io/)
_PACKAGE = Path(__file__).resolve().parent.parent


def workloads_dir() -> Path:
    """The bundled ``workloads`` folder (installed copy, else the checkout's)."""
    for candidate in (_PACKAGE / "workloads", _PACKAGE.parent / "workloads"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("hamisim's bundled workloads folder is missing; reinstall hamisim")


def bundled_scenarios() -> dict[str, Path]:
    """Bundled scenario files by name (file name without extension)."""
    folder = workloads_dir() / "scenarios"
    return {p.stem: p for p in sorted(folder.glob("*.y*ml"))}


def resolve_scenario(name_or_path: str) -> Path:
    """A path as given, or the bundled scenario of that name."""
    path = Path(name_or_path)
    if path.exists() or path.suffix:
        return path
    found = bundled_scenarios().get(name_or_path)
    return found if found is not None else path
