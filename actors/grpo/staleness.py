"""The off-policy window and the admission control that keeps it from starving slow tasks.

A group is trained only if it started at most ``max_staleness`` adapter versions before the current one
(the reference run: 4); older groups are discarded and counted. Discarding alone would starve slow, hard
tasks: their sessions outlive four versions and every attempt is thrown away, so the policy never learns
them. Two gates prevent that. (1) Admission: while an in-flight group is one publish away from going
stale, the pool starts no new group, so the trainer runs out of fresh work instead of racing ahead.
(2) Publish hold: the trainer holds a publish that would make an in-flight group stale, for at most
``hold_s`` (so one stuck session cannot stop training).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StalenessPolicy:
    max_staleness: int = 4
    """Versions a group's start may lag behind the current version and still be trained."""
    hold_s: float = 120.0
    """Longest a publish waits for an in-flight group that it would make stale."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_staleness, int) or self.max_staleness < 0:
            raise ValueError(f"max_staleness={self.max_staleness!r}: must be an integer >= 0")
        if self.hold_s < 0:
            raise ValueError(f"hold_s={self.hold_s!r}: must be >= 0 seconds")

    def lag(self, start_version: int, current_version: int) -> int:
        return current_version - start_version

    def is_stale(self, start_version: int, current_version: int) -> bool:
        """Too old to train on: discard and count."""
        return self.lag(start_version, current_version) > self.max_staleness

    def at_edge(self, start_version: int, current_version: int) -> bool:
        """Still usable now, but the next publish would make it stale."""
        return self.lag(start_version, current_version) == self.max_staleness

    def may_admit(self, inflight_start_versions: Iterable[int], current_version: int) -> bool:
        """Whether the pool may start a new group now (gate 1)."""
        return not any(self.at_edge(v, current_version) for v in inflight_start_versions)

    def may_publish(
        self, inflight_start_versions: Iterable[int], current_version: int, held_s: float
    ) -> bool:
        """Whether the trainer may publish ``current_version + 1`` now (gate 2), having held it ``held_s``."""
        return held_s >= self.hold_s or self.may_admit(inflight_start_versions, current_version)
