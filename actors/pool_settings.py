"""A trainer's GRPO groups as a job config sets them (its ``pool`` section): pure, so the config checks
them at load; the rollout pool (``actors.rollout_pool.PoolConfig``) and the trainer hold them whole."""

from __future__ import annotations

from dataclasses import dataclass

from actors.grpo.advantages import row_weighting_problem
from actors.grpo.staleness import StalenessPolicy


@dataclass(frozen=True, slots=True)
class PoolSettings:
    group_size: int = 8
    """Rollouts per task (GRPO's group); their rewards' spread is the advantage."""
    max_staleness: int = 4
    """Versions a rollout's policy may lag the trainer's before its group is dropped."""
    max_queued_rows: int = 0
    """Start no group while this many scored rows (model turns) wait for the trainer; 0: no bound. On a
    few CPU cores, a step or two of rows keeps sessions from taking the trainer's CPU for rows that only
    go stale."""
    row_weighting: str = "tokens"
    """How a step's loss weighs its rows (model turns): ``tokens`` (each trained token the same, TRL's) or
    ``rows`` (each row the same, GRPO's sequence mean: ``actors.grpo.advantages.row_advantage``) or
    ``sessions`` (each session the same, however many turns it took). A long broken call weighs as much as
    a short good one under ``rows``; a 12-turn session as much as a one-turn one under ``sessions``."""

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.group_size, int) or self.group_size < 1:
            problems.append(f"group_size={self.group_size}: must be >= 1")
        try:
            self.staleness()
        except ValueError as exc:
            problems.append(str(exc))
        if self.max_queued_rows < 0:
            problems.append(f"max_queued_rows={self.max_queued_rows}: must be >= 0 (0: no bound)")
        if problem := row_weighting_problem(self.row_weighting):
            problems.append(problem)
        if problems:
            raise ValueError("; ".join(problems))

    def staleness(self, hold_s: float | None = None) -> StalenessPolicy:
        """The staleness policy of ``max_staleness`` (its check is the policy's own)."""
        if hold_s is None:
            return StalenessPolicy(self.max_staleness)
        return StalenessPolicy(self.max_staleness, hold_s)
