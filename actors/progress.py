"""Training progress on the train job's console: one line per trainer step, and the board it travels on.

A trainer runs in a Ray actor, whose prints land in its worker's log (and reach the console, if at all,
behind a ``(TrainerActor pid=...)`` prefix). So rank 0 of each trainer turns each step's log record (TRL's,
with the rollout pool's figures merged in: ``actors.rollout_pool``) into a ``StepProgress`` and posts it to
a ``ProgressBoard`` actor; the job's driver takes what is there between its waits for the trainers and
prints each as one line (``progress_line``):

    pi step 3/20  reward 0.412  pass 0.50  calls 1.25  blocked 0  tampered 0  staleness 1.0  step 9.8s

A step at which the collapse watch acted ends its line with what it did (``collapse: <reason>; rolled
back to version 1 with learning rate 0.0001``), so a rollback or a stop is on the console, not only in the
trainer's worker log.

The rollout figures are those of the rollouts scored during the step (the groups trained may have started
earlier); ``staleness`` is the mean version lag of the samples the step trained on. A figure the step's
record lacks (no rollout scored in that step) prints as ``-``. The board is a plain class; ``jobs.train``
makes it an actor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SUMMARY_KEY = "train_runtime"
"""Present only in the record Transformers logs once training ends (totals, not a step)."""


@dataclass(frozen=True, slots=True)
class StepProgress:
    """One optimizer step of one harness's trainer, as the console shows it."""

    harness: str
    step: int
    max_steps: int
    reward: float | None = None
    """Mean reward of the rollouts scored during the step (``rollout/reward``)."""
    passed: float | None = None
    """Share of them that passed, neither blocked nor tampered (``rollout/passed``)."""
    tool_calls: float | None = None
    """Mean tool calls per rollout (``rollout/tool_calls``)."""
    blocked: int = 0
    """Rollouts the guard blocked during the step (``rollout/blocked_total``)."""
    tampered: int = 0
    """Rollouts that tampered with their task's checks during the step (``rollout/tampered_total``)."""
    staleness: float | None = None
    """Mean adapter versions between a trained sample's start and this step (``sample/staleness_mean``)."""
    step_s: float | None = None
    """The step's wall time, rollout waits included (``perf/step_s``)."""
    collapse: str = ""
    """What the collapse watch found and did at this step (``actors.grpo.collapse``); "" when nothing."""

    def __post_init__(self) -> None:
        if self.step < 0 or self.max_steps < 1 or self.blocked < 0 or self.tampered < 0:
            raise ValueError(
                f"step progress: step >= 0, max_steps >= 1 and counts >= 0 (got step {self.step}/"
                f"{self.max_steps}, blocked {self.blocked}, tampered {self.tampered})"
            )


def _figure(logs: Mapping[str, Any], key: str) -> float | None:
    """``logs[key]`` as a float; None when absent, None or not finite (TRL logs an empty window as None)."""
    value = logs.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _count(logs: Mapping[str, Any], key: str) -> int:
    value = _figure(logs, key)
    return max(0, round(value)) if value is not None else 0


def step_progress(
    harness: str, step: int, max_steps: int, logs: Mapping[str, Any], collapse: str = ""
) -> StepProgress | None:
    """The progress of ``step`` from one of the trainer's log records (and what the collapse watch did at
    it); None for the record Transformers logs when training ends (its totals are no step)."""
    if SUMMARY_KEY in logs:
        return None
    return StepProgress(
        harness=harness,
        step=step,
        max_steps=max_steps,
        reward=_figure(logs, "rollout/reward"),
        passed=_figure(logs, "rollout/passed"),
        tool_calls=_figure(logs, "rollout/tool_calls"),
        blocked=_count(logs, "rollout/blocked_total"),
        tampered=_count(logs, "rollout/tampered_total"),
        staleness=_figure(logs, "sample/staleness_mean"),
        step_s=_figure(logs, "perf/step_s"),
        collapse=collapse,
    )


def _shown(value: float | None, digits: int, unit: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def progress_line(progress: StepProgress) -> str:
    """One console line, two spaces between figures (see the module docstring)."""
    p = progress
    return "  ".join(
        (
            f"{p.harness} step {p.step}/{p.max_steps}",
            f"reward {_shown(p.reward, 3)}",
            f"pass {_shown(p.passed, 2)}",
            f"calls {_shown(p.tool_calls, 2)}",
            f"blocked {p.blocked}",
            f"tampered {p.tampered}",
            f"staleness {_shown(p.staleness, 1)}",
            f"step {_shown(p.step_s, 1, 's')}",
            *((f"collapse: {p.collapse}",) if p.collapse else ()),
        )
    )


class ProgressBoard:
    """Where trainers post their steps and the driver takes them, oldest first (a Ray actor in the train
    job, one call at a time)."""

    def __init__(self) -> None:
        self._posted: list[StepProgress] = []

    def post(self, progress: StepProgress) -> None:
        """Called by a trainer's rank 0 after each logged step; returns at once."""
        self._posted.append(progress)

    def take(self) -> list[StepProgress]:
        """Called by the driver between its waits: every record posted since its last call."""
        taken, self._posted = self._posted, []
        return taken
