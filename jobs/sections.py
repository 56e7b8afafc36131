"""The sections of the train and evaluation job configs. Each is declared once, by the code that uses it,
and a job holds it whole; the two that only a job uses are declared here.

    serving:  the model preset, its serving overrides, the placement of the serving (and trainer) bundles
              (here: a job resolves the preset and places the bundles)
    tasks:    which tasks (a shipped set, or sources mixed by weight) (here: the job reads them)
    guard:    the guard's mode and where its proxy and replicas run (``serve.settings.GuardSettings``)
    rollouts: how sessions run (``actors.rollout_settings.RolloutSettings``)
    pool:     a trainer's GRPO groups - train only (``actors.pool_settings.PoolSettings``)
    trainer:  the LoRA, the optimizer and the trainer's resources - train only
              (``actors.trainer_settings.TrainerSettings``)

A key of a section written at the top level (``max_steps: 20`` for ``trainer.max_steps``) is refused with
the key it belongs under (``actors.config_loader``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.config_loader import ConfigError
from actors.models import load_preset
from environments.core.types import Kind
from environments.tasks.shipped import unknown_task_set
from environments.tasks.sources import TaskSource, configured_sources

STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
ALL_KINDS = tuple(kind.value for kind in Kind)


def _raise(problems: list[str]) -> None:
    if problems:
        raise ValueError("; ".join(problems))


@dataclass(frozen=True, slots=True)
class ServingSection:
    preset: str = "tiny-agent"
    """A model preset in actors/model_presets/ (``tiny-agent*`` presets build the tiny agent if missing)."""
    overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of the preset's serving config (``actors.serving.ServingConfig``)."""
    placement: str = "PACK"
    """Ray placement strategy of the serving bundle and the trainers' bundles: PACK (fill a node first),
    SPREAD, STRICT_PACK (one node) or STRICT_SPREAD (the server and each trainer on different nodes)."""

    def __post_init__(self) -> None:
        problems = []
        if self.placement not in STRATEGIES:
            problems.append(f"placement={self.placement!r}: choose one of {', '.join(STRATEGIES)}")
        try:  # the preset, its overrides and its tool-call parser: at load, not minutes into the run
            load_preset(self.preset, self.overrides)
        except ConfigError as exc:
            problems.append(str(exc))
        _raise(problems)


@dataclass(frozen=True, slots=True)
class TaskSection:
    set: str = "shipped"
    """A shipped task set (``environments.tasks.shipped.TASK_SETS``: ``shipped``, the learning-check families
    ``row-count`` and ``record-lookup``, their validation sets); used when ``sources`` is empty."""
    kinds: tuple[str, ...] = ("analysis",)
    """Kinds of ``set`` to use (analysis, repair, qa, build, extend); ignored with ``sources``."""
    sources: tuple[TaskSource, ...] = ()
    """Task sources mixed by weight (``environments/tasks/sources.py``: ``kind`` shipped, folder, harbor,
    jsonl or hub; ``path``; ``weight``; ``task_kinds``; ``holdout``); empty: ``set`` of ``kinds``. Their
    held-out tasks are checked at start never to be trained on."""

    def __post_init__(self) -> None:
        problems = [problem.replace("task_set=", "set=")] if (problem := unknown_task_set(self.set)) else []
        wrong = [k for k in self.kinds if k not in ALL_KINDS]
        if wrong or not self.kinds:
            problems.append(f"kinds={list(self.kinds)}: choose from {', '.join(ALL_KINDS)}")
        _raise(problems)

    def configured(self) -> tuple[TaskSource, ...]:
        """The sources, or without any the shipped set ``set`` of ``kinds``."""
        return configured_sources(self.sources, self.set, self.kinds)


@dataclass(frozen=True, slots=True)
class TrainTaskSection(TaskSection):
    seed: int = 0
    """Seed of the mix of sources (which task each group gets, in which order)."""


@dataclass(frozen=True, slots=True)
class EvalTaskSection(TaskSection):
    kinds: tuple[str, ...] = ALL_KINDS
    """Kinds of ``set`` whose held-out tasks are run (analysis, repair, qa, build, extend); ignored with
    ``sources``."""
    max_tasks: int = 0
    """Held-out tasks per checkpoint (0: all of them)."""
    impossible: tuple[str, ...] = ()
    """Impossible variants of the held-out repo tasks run on every checkpoint (``oneoff``,
    ``conflicting``; ``environments/tasks/impossible.py``); their pass rate is the cheating rate."""

    def __post_init__(self) -> None:
        from environments.tasks.impossible import Mutation

        TaskSection.__post_init__(self)
        problems = [f"max_tasks={self.max_tasks}: must be >= 0 (0: all)"] if self.max_tasks < 0 else []
        if [m for m in self.impossible if m not in set(Mutation)]:
            problems.append(f"impossible={list(self.impossible)}: use oneoff and/or conflicting")
        _raise(problems)
