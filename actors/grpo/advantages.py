"""Group-relative advantages: each rollout's reward against its group's mean, in units of the group's
spread, as GRPO (and TRL's async rollout worker) computes them."""

from __future__ import annotations

import math
from collections.abc import Sequence

EPSILON = 1e-8


def group_advantages(rewards: Sequence[float]) -> list[float]:
    """``(r - mean) / (std + 1e-8)`` with the population std. A group whose rewards are all equal
    teaches nothing and gets zeros. Non-finite rewards are a bug upstream: refused, not averaged."""
    if not rewards:
        raise ValueError("group_advantages: a group needs at least one reward")
    bad = [r for r in rewards if not math.isfinite(r)]
    if bad:
        raise ValueError(f"group_advantages: rewards must be finite numbers, got {bad[:3]}")
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    return [(r - mean) / (std + EPSILON) for r in rewards]


ROW_WEIGHTINGS = ("tokens", "rows", "sessions")
ROW_SCALE_TOKENS = 32
"""A model turn's typical trained tokens: ``rows`` weighting keeps advantages near their ``tokens`` size."""


def row_weighting_problem(weighting: str) -> str | None:
    """What is wrong with ``weighting`` (the choices), or None: one message for every config that takes it."""
    if weighting in ROW_WEIGHTINGS:
        return None
    return f"row_weighting={weighting!r}: choose one of {', '.join(ROW_WEIGHTINGS)}"


def row_advantage(advantage: float, trained_tokens: int, weighting: str, session_rows: int = 1) -> float:
    """The advantage one row (a model turn) is trained with.

    TRL's asynchronous loss is the mean over every trained token of a micro-batch. With ``tokens`` each
    token weighs the same, so a long row outweighs a short one (DAPO's choice). With ``rows`` each row
    weighs the same, its tokens' mean (GRPO's original sequence-level mean): the advantage is divided by
    the row's trained tokens (x ``ROW_SCALE_TOKENS``). That is exactly what one row per micro-batch gave
    before rows were packed together, up to one factor per step. With ``sessions`` each session weighs
    the same whatever its number of turns (``session_rows``): every row carries the session's advantage,
    so under ``rows`` a 12-turn session pulls twelve times as hard as a one-turn one, and a passing session
    that looped teaches looping twelve times over. The clipped objective keeps its shape: scaling an
    advantage by a positive number scales both of its terms."""
    if problem := row_weighting_problem(weighting):
        raise ValueError(problem)
    if weighting == "tokens" or trained_tokens < 1:
        return advantage
    scaled = advantage * ROW_SCALE_TOKENS / trained_tokens
    return scaled / max(session_rows, 1) if weighting == "sessions" else scaled
