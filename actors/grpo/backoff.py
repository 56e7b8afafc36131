"""Backing off after failed sessions, so a broken sandbox or an out-of-memory node does not turn the
pool into a loop that starts, fails and drops thousands of groups a minute (seen: a trainer's pool
opened 12,900 groups in ten minutes while its rollout actors were being killed for memory)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    base_s: float = 0.5
    """The wait after the first failure in a row; it doubles with each further one."""
    max_s: float = 30.0

    def __post_init__(self) -> None:
        if not 0 <= self.base_s <= self.max_s:
            raise ValueError(f"backoff: need 0 <= base_s <= max_s (got {self.base_s}, {self.max_s})")

    def delay_s(self, failures_in_a_row: int) -> float:
        """Seconds to wait before the next start, after ``failures_in_a_row`` failures (0: none)."""
        if failures_in_a_row <= 0:
            return 0.0
        return min(self.base_s * 2 ** min(failures_in_a_row - 1, 32), self.max_s)
