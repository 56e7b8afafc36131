"""Collecting a task's rollouts into a GRPO group, with bounded retries and counters that add up.

A group is ``size`` rollouts of one task, started at one adapter version. It is released for training
only when every rollout is scored. A rollout whose attempt fails for infrastructure reasons (harness,
sandbox or actor crash) is retried up to ``max_attempts`` attempts in all; if it still fails, the whole
group is dropped, so no group is ever trained half-counted. Every attempt ends exactly one way, so at
rest ``started == finished + dropped + retried`` (``RolloutCounters.balanced``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from actors.grpo.advantages import group_advantages
from actors.grpo.staleness import StalenessPolicy


class Attempt(StrEnum):
    RETRY = "retry"
    """Start the rollout again."""
    DROPPED = "dropped"
    """Out of attempts: the rollout and its group are dropped."""
    IGNORED = "ignored"
    """The group was already dropped or closed: nothing to do."""


@dataclass(frozen=True, slots=True)
class ScoredRollout:
    rollout_id: str
    group_id: str
    reward: float
    tool_calls: int = 0
    blocked: bool = False
    rows: tuple = ()
    """Training rows (``samples.TrainingRow``) from the guard's token record."""
    tampered: bool = False
    """The effect audit flagged the rollout's workspace (its reward is 0)."""
    would_block: int = 0
    """Calls a guard in monitor mode would have blocked (no effect on the reward)."""
    session_error: bool = False
    """The session ended in a way the agent could have caused (its reward is 0; never retried)."""


@dataclass(frozen=True, slots=True)
class CompletedGroup:
    group_id: str
    task_id: str
    start_version: int
    rollouts: tuple[ScoredRollout, ...]
    advantages: tuple[float, ...]


@dataclass(slots=True)
class RolloutCounters:
    started: int = 0
    """Attempts started."""
    finished: int = 0
    """Attempts that ended scored."""
    dropped: int = 0
    """Attempts that failed with no attempt left."""
    retried: int = 0
    """Attempts that failed and were started again."""
    blocked: int = 0
    """Finished rollouts the guard blocked (scored 0)."""
    tampered: int = 0
    """Finished rollouts the effect audit flagged (scored 0)."""
    would_blocked: int = 0
    """Finished rollouts a guard in monitor mode would have blocked (scored as usual)."""
    session_errors: int = 0
    """Finished rollouts scored 0 for a session end the agent could have caused (harness killed from
    inside, records deleted, sandbox ended early)."""
    groups_trained: int = 0
    groups_dropped: int = 0
    groups_stale: int = 0
    """Complete groups discarded by the off-policy window."""
    groups_equal: int = 0
    """Trained groups whose rewards were all equal: zero advantage for every rollout, so no gradient
    (all failing, as in a collapse, or all passing in the same number of calls)."""
    groups_rolled_back: int = 0
    """Complete groups discarded because a rollback retracted the version they were sampled from."""

    @property
    def in_flight(self) -> int:
        return self.started - self.finished - self.dropped - self.retried

    @property
    def balanced(self) -> bool:
        return self.in_flight == 0

    @property
    def stale_discard_rate(self) -> float:
        complete = self.groups_trained + self.groups_stale
        return self.groups_stale / complete if complete else 0.0


@dataclass(slots=True)
class _Group:
    task_id: str
    start_version: int
    size: int
    scored: dict[str, ScoredRollout] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)


@dataclass
class GroupCollector:
    """The pool's ledger of open groups (one per trainer; not thread-safe: one owner calls it)."""

    policy: StalenessPolicy = field(default_factory=StalenessPolicy)
    max_attempts: int = 3
    counters: RolloutCounters = field(default_factory=RolloutCounters)
    _groups: dict[str, _Group] = field(default_factory=dict)
    _retracted: list[tuple[int, int]] = field(default_factory=list)
    """Version ranges (first, last) a rollback withdrew: their groups are never trained. Appended to from
    the trainer's thread (a list append is atomic), read by the owner's."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts={self.max_attempts}: must be >= 1")

    def open(self, group_id: str, task_id: str, start_version: int, size: int = 8) -> None:
        if group_id in self._groups:
            raise ValueError(f"group {group_id!r} is already open")
        if size < 1:
            raise ValueError(f"group size {size}: must be >= 1")
        self._groups[group_id] = _Group(task_id, start_version, size)

    def inflight_start_versions(self) -> list[int]:
        return [g.start_version for g in self._groups.values()]

    def started(self, group_id: str, rollout_id: str) -> None:
        """An attempt of ``rollout_id`` begins (first or retry)."""
        group = self._groups.get(group_id)
        if group is None:
            raise KeyError(f"group {group_id!r} is not open")
        group.attempts[rollout_id] = group.attempts.get(rollout_id, 0) + 1
        self.counters.started += 1

    def failed(self, group_id: str, rollout_id: str) -> Attempt:
        """The attempt crashed (not the model's fault). Say whether to retry it."""
        group = self._groups.get(group_id)
        if group is None:  # the group was dropped while this attempt ran
            self.counters.dropped += 1
            return Attempt.IGNORED
        if group.attempts.get(rollout_id, 0) < self.max_attempts:
            self.counters.retried += 1
            return Attempt.RETRY
        self.counters.dropped += 1
        self.counters.groups_dropped += 1
        del self._groups[group_id]
        return Attempt.DROPPED

    def retract(self, first: int, last: int) -> None:
        """A rollback withdrew versions ``first``..``last``: groups sampled from them, complete or still
        running, are not trained (``groups_rolled_back``)."""
        self._retracted.append((first, last))

    def finished(self, rollout: ScoredRollout, current_version: int) -> CompletedGroup | None:
        """Record a scored rollout; return its group when it is complete and fresh enough to train."""
        self.counters.finished += 1
        self.counters.blocked += rollout.blocked
        self.counters.tampered += rollout.tampered
        self.counters.would_blocked += rollout.would_block > 0
        self.counters.session_errors += rollout.session_error
        group = self._groups.get(rollout.group_id)
        if group is None:
            return None
        if rollout.rollout_id in group.scored:
            raise ValueError(f"rollout {rollout.rollout_id!r} was scored twice")
        group.scored[rollout.rollout_id] = rollout
        if len(group.scored) < group.size:
            return None
        del self._groups[rollout.group_id]
        if self.policy.is_stale(group.start_version, current_version):
            self.counters.groups_stale += 1
            return None
        if any(first <= group.start_version <= last for first, last in self._retracted):
            self.counters.groups_rolled_back += 1
            return None
        self.counters.groups_trained += 1
        rollouts = tuple(group.scored[k] for k in sorted(group.scored))
        rewards = [r.reward for r in rollouts]
        self.counters.groups_equal += max(rewards) - min(rewards) < 1e-9
        advantages = tuple(group_advantages(rewards))
        return CompletedGroup(rollout.group_id, group.task_id, group.start_version, rollouts, advantages)
