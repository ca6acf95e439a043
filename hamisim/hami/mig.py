"""HAMi v2.10.0's MIG rules: which profile and placement a card gives a request.

``pkg/device/nvidia/device.go`` (``selectMigCandidate``, ``CustomFilterRule``,
``AddResourceUsage``) and ``mig_topology.go``. Read beside HAMI-SEMANTICS §11.

* A request's memory (MiB, a percentage already resolved against the whole
  card) takes the **smallest profile whose memory is at least it** (profiles
  ordered by memory, then slice count, registration order on ties) that has a
  free placement; when all of that profile's placements are taken, the next
  larger profile, and so on. Cores never choose the profile.
* Placements are tried in a fixed order by profile *name*: ``1g.*`` and
  ``3g.*`` from the highest start down, every other profile from the lowest
  start up; the first one overlapping no occupied placement wins (greedy, no
  backtracking).
"""
from __future__ import annotations

from typing import Iterable, Sequence

from hamisim.mig import MigPlacement, MigProfile

__all__ = ["prefers_high", "ordered_placements", "candidate_order", "select_placement",
           "select_candidate", "MIG_MODE"]

#: the card mode whose cards get MIG placement
MIG_MODE = "mig"


def prefers_high(profile_name: str) -> bool:
    """``preferHighMigPlacement``: ``1g.*`` and ``3g.*`` fill from the top."""
    return profile_name.startswith("1g.") or profile_name.startswith("3g.")


def ordered_placements(profile: MigProfile) -> list[MigPlacement]:
    """``orderedMigPlacements``: a stable sort by start, descending for 1g/3g."""
    if prefers_high(profile.name):
        return sorted(profile.placements, key=lambda p: -p.start)
    return sorted(profile.placements, key=lambda p: p.start)


def candidate_order(profiles: Sequence[MigProfile]) -> list[MigProfile]:
    """``selectMigCandidate``'s order: memory ascending, then slice count (stable)."""
    return sorted(profiles, key=lambda p: (p.memory_mb, p.slice_count))


def select_placement(profiles: Sequence[MigProfile], occupied: Iterable[MigPlacement],
                     name: str) -> MigPlacement | None:
    """``selectMigPlacement``: the first free placement of the profile *named*
    ``name`` (the first registered profile of that name, as HAMi looks it up)."""
    profile = next((p for p in profiles if p.name == name), None)
    if profile is None:
        return None
    taken = list(occupied)
    for cand in ordered_placements(profile):
        if not any(cand.overlaps(o) for o in taken):
            return cand
    return None


def select_candidate(profiles: Sequence[MigProfile], occupied: Iterable[MigPlacement],
                     memory: int) -> tuple[MigProfile, MigPlacement] | None:
    """``selectMigCandidate``: the profile and placement a request of ``memory``
    MiB gets, or ``None`` when no profile large enough has a free placement."""
    taken = list(occupied)
    for profile in candidate_order(profiles):
        if profile.memory_mb < memory:
            continue
        placement = select_placement(profiles, taken, profile.name)
        if placement is not None:
            return profile, placement
    return None
