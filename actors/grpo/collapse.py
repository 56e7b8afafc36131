"""Noticing that training collapsed, and which version to go back to: plain logic the trainer's step-end
callback feeds (``actors.trainer``) and obeys.

A policy can fall off a cliff in a few steps: its tool-call arguments stop parsing, the guard blocks
every rollout, every group scores all zeros, and GRPO, which learns only from differences inside a group,
has no gradient left to climb back with. Three signs show it, each against the run's own start:

- **pass rate**: the latest ``recent_rollouts`` scored rollouts pass at under ``pass_floor`` of the rate
  of the first ``reference_rollouts``, and so few passes would happen at the start's rate with a chance
  under ``significance`` (one-sided binomial), so a hard draw of tasks is not read as a collapse;
- **blocked rate**: at least ``max_blocked`` of the latest rollouts blocked by the guard, again beyond
  chance against the start's blocked rate;
- **KL spike**: the step's KL between sampler and trainer log-probs above ``kl_factor`` times its median
  so far (and above ``kl_floor``) for ``kl_steps`` steps in a row;
- **runaway calls** (with ``calls_factor`` set): the window's mean tool calls above ``calls_factor`` times
  the start's (at least one call), as when sessions loop to the turn limit. Passing rollouts that loop
  still win inside a group with a failure, so the pass rate can hold while the policy learns to loop.

The version to go back to is the latest one published before the evidence (the oldest version the
window's rollouts were sampled from; for a spike, the weights the first spiking step started from) whose
own rollouts vouch for it: at least ``min_evidence`` of them, passing at no less than ``pass_floor`` of the
start's rate, blocked under ``max_blocked``, calling within the runaway bound, and not withdrawn by an
earlier rollback. Evidence lags a few versions behind the weights, so a version nobody sampled enough is
passed over; with none vouched for, it is the run's first. ``action`` says what the trainer does: ``rollback``
(restore that version's weights, scale the learning rate by ``lr_factor``, forget the optimizer's
moments, discard rollouts of the versions in between; after ``max_rollbacks``, stop), ``stop`` (keep
that version's weights and stop with a message), or ``watch`` (record only).
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field

ACTIONS = ("rollback", "stop", "watch")


@dataclass(frozen=True, slots=True)
class CollapsePolicy:
    action: str = "rollback"
    """``rollback`` | ``stop`` | ``watch`` (see the module docstring)."""
    reference_rollouts: int = 12
    """The start's pass and blocked rates: the first rollouts scored in the run."""
    recent_rollouts: int = 12
    """The window judged at each step: the latest rollouts scored (since the last rollback)."""
    pass_floor: float = 0.5
    """A collapse: the window passes at under this share of the start's pass rate (and beyond chance)."""
    max_blocked: float = 0.5
    """A collapse: at least this share of the window blocked by the guard (and beyond chance)."""
    significance: float = 0.001
    """The one-sided binomial test's level: how unlikely the window must be under the start's rates."""
    kl_factor: float = 10.0
    """A KL spike: the step's KL above this many times the median of the steps before it."""
    kl_floor: float = 0.02
    """... and above this absolute value (tiny KLs jitter by large factors)."""
    kl_steps: int = 2
    """Spiking steps in a row that make a collapse."""
    calls_factor: float = 0.0
    """A collapse: the window's mean tool calls above this many times the start's (at least 1); 0: off."""
    min_evidence: int = 4
    """Rollouts of a version needed to vouch for it as one to go back to."""
    max_rollbacks: int = 2
    """Rollbacks in a run before the trainer stops instead."""
    lr_factor: float = 0.5
    """Each rollback multiplies the learning rate by this."""
    snapshots: int = 8
    """Published versions whose adapter weights the trainer keeps (on the CPU) to roll back to, beside the
    run's first, which is always kept."""

    def __post_init__(self) -> None:
        problems = []
        if self.action not in ACTIONS:
            problems.append(f"action={self.action!r}: use rollback, stop or watch")
        for name in ("reference_rollouts", "recent_rollouts", "kl_steps", "snapshots", "min_evidence"):
            if getattr(self, name) < 1:
                problems.append(f"{name}={getattr(self, name)}: must be >= 1")
        for name in ("pass_floor", "max_blocked", "significance", "lr_factor"):
            if not 0 < getattr(self, name) <= 1:
                problems.append(f"{name}={getattr(self, name)}: must be in (0, 1]")
        if self.calls_factor != 0 and self.calls_factor <= 1:
            problems.append(f"calls_factor={self.calls_factor}: must be above 1 (0 turns the sign off)")
        if self.kl_factor <= 1 or self.kl_floor < 0 or self.max_rollbacks < 0:
            problems.append(
                f"kl_factor={self.kl_factor}, kl_floor={self.kl_floor}, max_rollbacks={self.max_rollbacks}: "
                "need kl_factor > 1, kl_floor >= 0, max_rollbacks >= 0"
            )
        if problems:
            raise ValueError("collapse: " + "; ".join(problems))


@dataclass(frozen=True, slots=True)
class Collapse:
    """What the watch found at a step, and what the trainer is to do."""

    step: int
    reason: str
    good_version: int
    """The last version published before the evidence: the one to go back to."""
    action: str
    """``rollback``, ``stop`` or ``watch`` (the policy's, turned to ``stop`` when rollbacks ran out)."""


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    p = min(max(p, 0.0), 1.0)
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(0, min(k, n) + 1))


@dataclass
class CollapseWatch:
    """One trainer's watch (not thread-safe: the trainer's step-end callback is its one caller)."""

    policy: CollapsePolicy = field(default_factory=CollapsePolicy)
    start_version: int = 1
    """The version the run's first rollouts were sampled from (the start adapter's)."""
    reference: list[tuple[bool, bool, int]] = field(default_factory=list)
    """(passed, blocked, tool calls) of the run's first rollouts."""
    recent: deque = field(default_factory=deque)
    """(version, passed, blocked, tool calls) of the latest rollouts, oldest first."""
    kls: list[float] = field(default_factory=list)
    """Every step's KL so far, spikes included (the median resists them)."""
    spike_versions: list[int] = field(default_factory=list)
    """Versions published before each step of the current run of spiking steps."""
    ignore_through: int = 0
    """Rollouts sampled from this version or older are not judged (set by a rollback)."""
    tallies: dict[int, list[int]] = field(default_factory=dict)
    """Per version: rollouts scored, passed, blocked, tool calls (every one, judged or not)."""
    withdrawn: list[tuple[int, int]] = field(default_factory=list)
    """Version ranges (first, last) rollbacks withdrew: never gone back to."""
    rollbacks: int = 0
    events: list[Collapse] = field(default_factory=list)

    def rollout(self, version: int, passed: bool, blocked: bool, tool_calls: int = 0) -> None:
        """A rollout was scored (in the order they finish)."""
        if len(self.reference) < self.policy.reference_rollouts:
            self.reference.append((passed, blocked, tool_calls))
        tally = self.tallies.setdefault(version, [0, 0, 0, 0])
        tally[0] += 1
        tally[1] += passed
        tally[2] += blocked
        tally[3] += tool_calls
        if version <= self.ignore_through:
            return
        self.recent.append((version, passed, blocked, tool_calls))
        while len(self.recent) > self.policy.recent_rollouts:
            self.recent.popleft()

    def step(self, step: int, kl: float | None, version: int) -> Collapse | None:
        """After optimizer step ``step``, with its KL (None if not measured) and ``version``, the version
        whose weights that step started from (their KL it measured): a collapse to act on, or None."""
        reason, good = self._rates()
        spike = self._spike(kl, version)
        if reason is None and spike is not None:
            reason, good = spike
        if reason is None:
            return None
        action = self.policy.action
        if action == "rollback" and self.rollbacks >= self.policy.max_rollbacks:
            action = "stop"
            reason += f" (no rollback left: {self.rollbacks} of {self.policy.max_rollbacks} used)"
        event = Collapse(step, reason, self._vouched_before(good + 1), action)
        self.events.append(event)
        return event

    def rolled_back(self, restored_version: int, through_version: int) -> None:
        """The trainer went back to ``restored_version``'s weights: the versions after it through
        ``through_version`` (the last published before the rollback) are withdrawn, only rollouts of later
        versions are judged, and the KL streak starts afresh."""
        self.rollbacks += 1
        self.withdrawn.append((restored_version + 1, through_version))
        self.ignore_through = through_version
        self.recent.clear()
        self.spike_versions.clear()

    def _vouched_before(self, version: int) -> int:
        """The latest version before ``version`` whose own rollouts vouch for it (module docstring), else
        the run's first."""
        p = self.policy
        ref_pass = sum(r[0] for r in self.reference) / len(self.reference) if self.reference else 0.0
        calls_bound = self._calls_bound()
        for candidate in range(version - 1, self.start_version, -1):
            if any(first <= candidate <= last for first, last in self.withdrawn):
                continue
            n, passed, blocked, calls = self.tallies.get(candidate, (0, 0, 0, 0))
            if n < p.min_evidence or calls / n > calls_bound:
                continue
            if passed / n >= p.pass_floor * ref_pass and blocked / n < p.max_blocked:
                return candidate
        return self.start_version

    def _start_calls(self) -> float:
        """The mean tool calls of the run's first rollouts."""
        return sum(r[2] for r in self.reference) / len(self.reference)

    def _calls_bound(self) -> float:
        """The mean tool calls past which the calls ran away (infinite with the sign off)."""
        if not self.policy.calls_factor or not self.reference:
            return math.inf
        return self.policy.calls_factor * max(self._start_calls(), 1.0)

    def _rates(self) -> tuple[str | None, int]:
        p = self.policy
        if len(self.reference) < p.reference_rollouts or len(self.recent) < p.recent_rollouts:
            return None, 0
        n = len(self.recent)
        passed = sum(r[1] for r in self.recent)
        blocked = sum(r[2] for r in self.recent)
        ref_pass = sum(r[0] for r in self.reference) / len(self.reference)
        ref_blocked = sum(r[1] for r in self.reference) / len(self.reference)
        good = min(r[0] for r in self.recent) - 1
        if passed / n < p.pass_floor * ref_pass and binomial_cdf(passed, n, ref_pass) < p.significance:
            return (
                f"pass rate {passed}/{n} over the latest rollouts against {ref_pass:.2f} at the start",
                good,
            )
        chance_blocked = 1 - binomial_cdf(blocked - 1, n, max(ref_blocked, 0.05))
        if blocked / n >= p.max_blocked and chance_blocked < p.significance:
            return (
                f"{blocked}/{n} of the latest rollouts blocked by the guard, {ref_blocked:.2f} at the start",
                good,
            )
        calls = sum(r[3] for r in self.recent) / n
        if calls > self._calls_bound():
            return (
                f"{calls:.1f} tool calls a rollout over the latest rollouts against "
                f"{self._start_calls():.1f} at the start (over {p.calls_factor:g}x)",
                good,
            )
        return None, 0

    def _spike(self, kl: float | None, version: int) -> tuple[str, int] | None:
        if kl is None or math.isnan(kl):
            return None
        before = list(self.kls)
        self.kls.append(kl)
        if len(before) < 3:
            return None
        median = statistics.median(before)
        if kl <= max(self.policy.kl_floor, self.policy.kl_factor * median):
            self.spike_versions.clear()
            return None
        self.spike_versions.append(version)
        if len(self.spike_versions) < self.policy.kl_steps:
            return None
        return (
            f"KL {kl:.3f} over {self.policy.kl_factor:g}x its median {median:.4f} for "
            f"{len(self.spike_versions)} steps in a row",
            self.spike_versions[0] - 1,
        )
