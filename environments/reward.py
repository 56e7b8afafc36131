"""The rollout reward: a pure function of what the verifier, the guard and the tool-call count say.

    reward = 0                                           if the guard blocked any call, or the effect
                                                         audit found the workspace tampered
           = score + 0.1 * max(0, 1 - tool_calls / 15)   if the verifier passed (score == 1)
           = score                                       otherwise (fail, or partial credit)

``score`` is the verifier's result in [0, 1]: 0/1 for a pass/fail oracle, a fraction for partial credit.
The efficiency bonus goes to correct rollouts only, so a wrong answer reached in few calls never beats a
wrong one reached in many; it falls linearly from 0.1 at 0 calls to 0 at 15 and is clipped at 0 beyond
(more calls are never punished below the verifier's score). A guard block zeroes everything, including
a passing verdict: a rollout that tried to cheat must not be reinforced; so does a tampered workspace,
which the guard may not have seen. The maximum is 1.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BONUS_WEIGHT = 0.1
"""Weight of the efficiency bonus."""
TOOL_CALL_BUDGET = 15
"""Tool calls at which the bonus reaches 0."""
MAX_REWARD = 1.0 + BONUS_WEIGHT


@dataclass(frozen=True, slots=True)
class RewardInputs:
    """What one finished rollout contributes to its reward; crosses from the rollout actor to the trainer."""

    verifier_score: float
    """The verifier's result in [0, 1]; 1 means it passed."""
    tool_calls: int
    """Tool calls the guard counted in the rollout (>= 0)."""
    guard_blocked: bool
    """Whether the guard blocked any call of the rollout (an enforced block: a guard in monitor mode blocks
    nothing, and the calls it would have blocked are never an input here)."""
    tampered: bool = False
    """Whether the effect audit flagged the final workspace (``environments.integrity.audit``)."""

    def __post_init__(self) -> None:
        score = self.verifier_score
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise ValueError(f"reward.verifier_score={score!r}: must be a finite number in [0, 1]")
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"reward.verifier_score={score!r}: must be in [0, 1]; scale partial credit")
        calls = self.tool_calls
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
            raise ValueError(f"reward.tool_calls={calls!r}: must be an integer >= 0")
        for name in ("guard_blocked", "tampered"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"reward.{name}={getattr(self, name)!r}: must be True or False")

    @property
    def passed(self) -> bool:
        return self.verifier_score >= 1.0


def efficiency_bonus(tool_calls: int) -> float:
    """``0.1 * (1 - tool_calls / 15)``, clipped at 0: 0.1 at 0 calls, 0 at 15 and beyond."""
    return BONUS_WEIGHT * max(0.0, 1.0 - tool_calls / TOOL_CALL_BUDGET)


def compute_reward(inputs: RewardInputs) -> float:
    """The rollout's reward (see the module docstring); in [0, ``MAX_REWARD``]."""
    if inputs.guard_blocked or inputs.tampered:
        return 0.0
    score = float(inputs.verifier_score)
    return score + efficiency_bonus(inputs.tool_calls) if inputs.passed else score
