"""GRPO bookkeeping between the rollout pool and the trainers, as plain functions and dataclasses:
group collection with bounded retries and honest counters, backing off after failures, group
advantages, the off-policy window and admission control, and turning a guard record into training
samples."""

from actors.grpo.advantages import group_advantages
from actors.grpo.backoff import Backoff
from actors.grpo.groups import Attempt, CompletedGroup, GroupCollector, RolloutCounters, ScoredRollout
from actors.grpo.samples import RecordedTurn, TrainingRow, rollout_rows, turns_from_record
from actors.grpo.staleness import StalenessPolicy

__all__ = [
    "Attempt",
    "Backoff",
    "CompletedGroup",
    "GroupCollector",
    "RecordedTurn",
    "RolloutCounters",
    "ScoredRollout",
    "StalenessPolicy",
    "TrainingRow",
    "group_advantages",
    "rollout_rows",
    "turns_from_record",
]
