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
