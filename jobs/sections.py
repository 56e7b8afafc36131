"""The sections of the train and evaluation job configs: what both jobs set the same way is declared,
documented and checked once here, and a job passes a section on whole instead of copying its fields.

    serving:  the model preset, its serving overrides, the placement of the serving (and trainer) bundles
    guard:    the guard's mode and where its proxy and replicas run
    tasks:    which tasks (a shipped set, or sources mixed by weight)
    rollouts: how sessions run (sandbox, sessions in flight, output tokens, sampling temperature)
    pool:     a trainer's GRPO groups (size, staleness, queue bound, row weighting) - train only
    trainer:  the LoRA, the optimizer and the trainer's resources - train only

A key of a section written at the top level (``max_steps: 20`` for ``trainer.max_steps``) is refused with
the key it belongs under (``actors.config_loader``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from actors.config_loader import ConfigError
from actors.grpo.advantages import row_weighting_problem
from actors.grpo.collapse import CollapsePolicy
from actors.models import load_preset
from actors.ranks import rank_problems
from actors.trainer_settings import setting_problems
from environments.core.types import Kind
from environments.tasks.shipped import unknown_task_set
from environments.tasks.sources import TaskSource, configured_sources
from serve.mode import GuardMode
from serve.turn import temperature_problem

STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
PROXIES = ("auto", "every_node", "head_only")
ALL_KINDS = tuple(kind.value for kind in Kind)


def fields_of(section: Any, *leave_out: str) -> dict[str, Any]:
    """A section's fields by name (shallow), less ``leave_out``: the keyword arguments of the runtime
    config whose fields the section shares by name (``PoolConfig``, ``TrainerConfig``)."""
    return {f.name: getattr(section, f.name) for f in dataclasses.fields(section) if f.name not in leave_out}


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
class GuardSection:
    mode: GuardMode = GuardMode.ENFORCE
    """``enforce`` (blocked calls become notices, the rollout scores 0), ``monitor`` (every call checked,
    would-be blocks recorded and counted, nothing blocked or zeroed) or ``off``."""
    port: int = 8000
    """Port of the guard's HTTP proxy (Ray Serve) on each node."""
    proxy: str = "auto"
    """Where the HTTP proxy runs: ``every_node`` (each rollout reaches the proxy on its own node at
    127.0.0.1; Ray Serve runs proxies only on the head and on nodes that host a guard replica, so only
    for one node), ``head_only`` (one proxy, at the head node's address, reached from every node) or
    ``auto`` (``every_node`` on one node, ``head_only`` on a cluster of several)."""
    min_replicas: int = 1
    """Replicas of each guard shard (one shard per harness; the minimum when ``max_replicas`` is larger)."""
    max_replicas: int = 1
    """Above ``min_replicas``: Ray Serve autoscales each shard up to this many replicas, which share one
    ledger actor of open rollouts (``serve/book.py``)."""

    def __post_init__(self) -> None:
        from serve.app import replicas_problem  # lazily: serve.app brings the proxy's HTTP stack

        problems = []
        try:
            object.__setattr__(self, "mode", GuardMode.parse(self.mode, "mode"))
        except ValueError as exc:
            problems.append(str(exc))
        if not 1 <= self.port <= 65535:
            problems.append(f"port={self.port}: a TCP port, 1-65535")
        if self.proxy not in PROXIES:
            problems.append(f"proxy={self.proxy!r}: choose auto, every_node or head_only")
        if problem := replicas_problem(self.min_replicas, self.max_replicas):
            problems.append(problem)
        _raise(problems)

    @property
    def replicas(self) -> tuple[int, int]:
        return (self.min_replicas, self.max_replicas)

    def placement_key(self) -> tuple[int, str, int, int]:
        """What a stack started for one job must share with another job that runs on it (the mode may
        differ: a job redeploys its shards with its own)."""
        return (self.port, self.proxy, self.min_replicas, self.max_replicas)


@dataclass(frozen=True, slots=True)
class TaskSection:
    set: str = "shipped"
    """``shipped`` or ``row-count`` (the learning-check family); used when ``sources`` is empty."""
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


@dataclass(frozen=True, slots=True)
class RolloutSection:
    sandbox: str = "local"
    """``local`` (bubblewrap) or ``docker``: where every session's harness and verifier run (``docker`` is
    needed for tasks that build their own image)."""
    max_sessions: int = 48
    """Harness sessions in flight per harness (a trainer's: at most 48, and at least its group size)."""
    max_tokens: int = 4096
    """Output tokens per model turn (the harness's request may ask for fewer)."""
    actors: bool = True
    """Sessions as Ray rollout actors, one per session slot in a CPU placement group (False: threads in
    the trainer's or the evaluation's process)."""
    cpus: float = 1.0
    """CPUs reserved per rollout actor (its harness, sandbox and verifier)."""
    temperature: float | None = None
    """Sampling temperature of every session's turns, set by the guard (none of the harnesses sends one;
    0: greedy); null: the server's default (1.0 unless the model's generation config says otherwise). A
    trainer's log-probs stay those of the untempered policy."""

    def __post_init__(self) -> None:
        problems = []
        if self.sandbox not in ("local", "docker"):
            problems.append(f"sandbox={self.sandbox!r}: use local or docker")
        if self.max_sessions < 1:
            problems.append(f"max_sessions={self.max_sessions}: must be >= 1")
        if self.max_tokens < 1:
            problems.append(f"max_tokens={self.max_tokens}: must be >= 1")
        if self.cpus <= 0:
            problems.append(f"cpus={self.cpus}: must be > 0 (a placement-group bundle)")
        if problem := temperature_problem(self.temperature):
            problems.append(problem)
        _raise(problems)


@dataclass(frozen=True, slots=True)
class PoolSection:
    """A trainer's groups; the names are ``actors.rollout_pool.PoolConfig``'s, which takes them whole."""

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
    ``rows`` (each row the same, GRPO's sequence mean). A long broken call weighs as much as a short good
    one under ``rows``."""

    def __post_init__(self) -> None:
        problems = []
        if self.group_size < 1:
            problems.append(f"group_size={self.group_size}: must be >= 1")
        for name in ("max_staleness", "max_queued_rows"):
            if getattr(self, name) < 0:
                problems.append(f"{name}={getattr(self, name)}: must be >= 0")
        if problem := row_weighting_problem(self.row_weighting):
            problems.append(problem)
        _raise(problems)


@dataclass(frozen=True, slots=True)
class TrainerSection:
    """One trainer per harness; the names are ``actors.trainer.TrainerConfig``'s, which takes them whole
    (less ``JOB_ONLY``: what the job itself places and resumes)."""

    lora_rank: int = 32
    """LoRA rank of a fresh adapter (``init_adapter`` brings its own)."""
    lora_alpha: int = 64
    """LoRA alpha (the update's scale is alpha / rank)."""
    init_adapter: str = ""
    """Start every trainer from this LoRA adapter (``jobs.sft``'s out_dir: the SFT warm start) instead of a
    fresh one; ``{harness}`` in it is each trainer's harness (``artifacts/sft-{harness}``). Its rank and
    alpha replace ``lora_rank``/``lora_alpha``."""
    learning_rate: float = 1.0e-5
    """The optimizer's learning rate."""
    max_steps: int = 200
    """Optimizer steps per trainer; each publishes a new adapter version."""
    save_steps: int = 0
    """Checkpoint every N steps (0: at the end only)."""
    token_budget: int = 65536
    """Tokens per packed micro-batch; 0: ``micro_batch_samples`` samples per micro-batch."""
    micro_batch_samples: int = 1
    """With ``token_budget: 0``, samples per micro-batch, packed as a prefix tree: what they share (the
    harness's system prompt, a session's earlier turns) is forwarded once."""
    micro_batches: int = 4
    """Micro-batches per optimizer step (gradient accumulation)."""
    seed: int = 0
    """Seed of each trainer: a fresh adapter's initial weights and TRL's sampling of its buffer. For an
    independent run, change it and ``tasks.seed`` (the learning check's runs use 0, 1, 2)."""
    gradient_checkpointing: str = "auto"
    """``on``, ``off`` or ``auto`` (on for GPU trainers at token budgets of 16K and more)."""
    attention: str = "sdpa"
    """Packed batches' attention on GPU: ``sdpa`` (nothing from a hub) or ``kernels`` (hub-fetched)."""
    ranks: int = 1
    """Processes per trainer (``actors.ranks``), one bundle of ``cpus`` / ``gpus`` each: data-parallel
    over several GPUs, rank 0 holding the rollout pool."""
    fsdp: str = ""
    """With ``ranks > 1``: "" (DDP, a whole model per rank) or FSDP words such as ``full_shard auto_wrap``
    (parameters sharded over the ranks)."""
    cpus: float = 1.0
    """CPUs per trainer rank."""
    gpus: float = 0.0
    """GPUs per trainer rank: a fraction when the trainers share one GPU, as in the 1.7B preset."""
    resume: bool = False
    """Resume each trainer from the latest checkpoint under ``<out_dir>/<harness>/``."""
    collapse: CollapsePolicy = CollapsePolicy()
    """Noticing a collapse (pass or blocked rate against the start's, KL spikes) and rolling back or
    stopping (``actors.grpo.collapse``)."""

    JOB_ONLY = ("cpus", "gpus", "resume")

    def __post_init__(self) -> None:
        problems = setting_problems(self.attention, self.gradient_checkpointing)
        problems += rank_problems(self.ranks, self.gpus, self.fsdp)
        for name in ("lora_rank", "lora_alpha", "max_steps", "micro_batches", "micro_batch_samples"):
            if getattr(self, name) < 1:
                problems.append(f"{name}={getattr(self, name)}: must be >= 1")
        for name in ("token_budget", "save_steps"):
            if getattr(self, name) < 0:
                problems.append(f"{name}={getattr(self, name)}: must be >= 0")
        if not self.learning_rate > 0:
            problems.append(f"learning_rate={self.learning_rate}: must be > 0, e.g. 1.0e-5")
        if self.cpus <= 0 or self.gpus < 0:
            problems.append(f"cpus={self.cpus}, gpus={self.gpus}: need cpus > 0 and gpus >= 0")
        _raise(problems)

    def bundle(self) -> dict[str, float]:
        """One rank's placement-group bundle."""
        return {"CPU": self.cpus, **({"GPU": self.gpus} if self.gpus else {})}
