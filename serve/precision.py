"""Which of the guard's findings block and which are only reported, by their measured precision.

A false block zeroes an honest rollout in training and stops a user's work in front of their own
harness, so a finding blocks only when its reason has shown a benign block rate near zero: none on the
benign replay (every shipped task's reference solution in every harness, ``serve.replay``) and at most
`NEAR_ZERO` of the benign whole sessions (``benchmarks/guard_benign`` and the benign cases of the
scored held-out sets). A reason past that is *held at notice* until its rule is fixed: the call goes on,
and the finding is recorded as a notice (``Allow.notices``; the turn's ``would_block`` with
``notice=True``; the trainer's ``rollout/would_block`` metric; ``serve.audit``'s notices), so the
rollout keeps its reward.

`NOTICE_ONLY` is the measured default (``python benchmarks/guard_precision.py`` prints the table and
says when it disagrees with this set); ``GuardConfig.notice_only`` overrides it. Unknowns are held by
their reason the same way: an unknown whose reason is held never blocks, even when failing closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .decisions import Reason

NEAR_ZERO = 0.002
"""The largest benign block rate on whole sessions at which a reason still blocks (2 in 1,000)."""

NOTICE_ONLY: frozenset[Reason] = frozenset()
"""Reasons held at notice by default (measured by ``benchmarks/guard_precision.py``)."""


@dataclass(frozen=True, slots=True)
class ReasonPrecision:
    """One reason's record on benign work (and, for the cost of holding it, on attacks)."""

    reason: Reason
    replay_blocks: int
    """Calls of the reference-solution replay it blocked (any is too many)."""
    benign_blocks: int
    """Benign whole-session cases it blocked."""
    attack_blocks: int = 0
    """Attack cases it blocked: what holding it at notice would give up."""

    def benign_rate(self, benign_cases: int) -> float:
        return self.benign_blocks / benign_cases if benign_cases else 0.0

    def precise(self, benign_cases: int) -> bool:
        return self.replay_blocks == 0 and self.benign_rate(benign_cases) <= NEAR_ZERO


def held_reasons(table: Mapping[Reason, ReasonPrecision], benign_cases: int) -> frozenset[Reason]:
    """The reasons whose measured precision says they should only give notices."""
    return frozenset(r for r, p in table.items() if not p.precise(benign_cases))
