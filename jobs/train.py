"""The train job: one serving actor, the guard, and one asynchronous GRPO trainer per harness, at once.

    python -m jobs.train --config jobs/configs/train-smoke.yaml [key=value ...]
    ray job submit --working-dir . -- python -m jobs.train --config jobs/configs/train-smoke.yaml

Placement: one placement group holds the serving bundle (its GPU on GPU machines) and one bundle per
trainer (``trainer_gpus`` each: fractional when the three share one GPU, as in the 1.7B preset). The guard
runs as a Ray Serve application in front of the serving actor. Each trainer's rollout pool runs its
sessions in Ray rollout actors, one per session slot, in a placement group of CPU bundles of its own
(``rollout_actors: false`` runs them as threads inside the trainer's actor). ``guard`` is the guard's mode
(``enforce``, ``monitor``: would-be blocks recorded and counted per step, never zeroing a reward, or
``off``). The last line of stdout is one JSON object with the run's figures; ``<out_dir>/train.json`` holds
every trainer's summary.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.grpo.advantages import row_weighting_problem
from actors.ranks import rank_problems
from actors.trainer_settings import setting_problems
from environments.harnesses.registry import harness_problem
from environments.tasks.shipped import unknown_task_set
from environments.tasks.sources import TaskSource, configured_sources, load_sources
from jobs.config import job_main
from jobs.stack import placement_problems
from serve.mode import GuardMode
from serve.turn import temperature_problem

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "train-smoke.yaml"


@dataclass(frozen=True, slots=True)
class TrainJobConfig:
    model_preset: str = "tiny-agent"
    """A preset in jobs/configs/models/ (``tiny-agent`` builds the tiny agent if missing)."""
    harnesses: tuple[str, ...] = ("pi", "opencode", "hermes")
    """One trainer (and one adapter) per harness, from the registry (``environments/harnesses``)."""
    out_dir: str = "artifacts/train"
    """Where ``train.json`` and ``<harness>/checkpoint-<step>/`` are written."""
    sandbox: str = "local"
    """``local`` (bubblewrap) or ``docker``: where every rollout's harness and verifier run."""
    task_kinds: tuple[str, ...] = ("analysis",)
    """Kinds of ``task_set`` to train on (analysis, repair, qa, build, extend); ignored with ``tasks``."""
    task_set: str = "shipped"
    """``shipped`` or ``row-count`` (the learning-check family); used when ``tasks`` is empty."""
    tasks: tuple[TaskSource, ...] = ()
    """Task sources mixed by weight (``environments/tasks/sources.py``: ``kind`` shipped, folder,
    harbor, jsonl or hub; ``path``; ``weight``; ``task_kinds``; ``holdout``); empty: ``task_set`` of
    ``task_kinds``. Their held-out tasks are checked at start never to be trained on."""
    tasks_seed: int = 0
    """Seed of the mix of task sources (which task each group gets, in which order)."""
    seed: int = 0
    """Seed of each trainer: a fresh adapter's initial weights and TRL's sampling of its buffer. For an
    independent run, change it and ``tasks_seed`` (the learning check's runs use 0, 1, 2)."""
    group_size: int = 8
    """Rollouts per task (GRPO's group); their rewards' spread is the advantage."""
    max_sessions: int = 48
    """Harness sessions in flight per trainer (at most 48); at least ``group_size``."""
    max_staleness: int = 4
    """Versions a rollout's policy may lag the trainer's before its group is dropped."""
    max_queued_rows: int = 0
    """Start no group while this many scored rows (model turns) wait for the trainer; 0: no bound. On a
    few CPU cores, a step or two of rows keeps sessions from taking the trainer's CPU for rows that only
    go stale."""
    row_weighting: str = "tokens"
    """How a step's loss weighs its rows (model turns): ``tokens`` (each trained token the same, TRL's) or
    ``rows`` (each row the same, GRPO's sequence mean; with ``micro_batch_samples`` above 1, what one row
    per micro-batch gave). A long broken call weighs as much as a short good one under ``rows``."""
    lora_rank: int = 32
    """LoRA rank of the trained adapter (a fresh one; ``init_adapter`` brings its own)."""
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
    token_budget: int = 65536
    """Tokens per packed micro-batch; 0: ``micro_batch_samples`` samples per micro-batch."""
    micro_batch_samples: int = 1
    """With ``token_budget: 0``, samples per micro-batch, packed as a prefix tree: what they share (the
    harness's system prompt, a session's earlier turns) is forwarded once."""
    micro_batches: int = 4
    """Micro-batches per optimizer step (gradient accumulation)."""
    max_tokens: int = 4096
    """Output tokens per model turn in a session (the harness's request may ask for fewer)."""
    trainer_cpus: float = 1.0
    """CPUs per trainer rank."""
    trainer_gpus: float = 0.0
    """GPUs per trainer rank: a fraction when the trainers share one GPU, as in the 1.7B preset."""
    trainer_ranks: int = 1
    """Processes per trainer (``actors.ranks``), one bundle of ``trainer_cpus`` / ``trainer_gpus`` each:
    data-parallel over several GPUs, rank 0 holding the rollout pool."""
    fsdp: str = ""
    """With ``trainer_ranks > 1``: "" (DDP, a whole model per rank) or FSDP words such as
    ``full_shard auto_wrap`` (parameters sharded over the ranks)."""
    rollout_actors: bool = True
    """Sessions as Ray rollout actors, one per session slot in a CPU placement group per trainer
    (False: threads inside each trainer's actor)."""
    rollout_cpus: float = 1.0
    """CPUs reserved per rollout actor (its harness, sandbox and verifier)."""
    guard_port: int = 8000
    """Port of the guard's HTTP proxy (Ray Serve) on each node."""
    guard: GuardMode = GuardMode.ENFORCE
    """The guard's mode: ``enforce`` (blocked calls become notices, the rollout scores 0), ``monitor``
    (every call checked, would-be blocks recorded and counted, nothing blocked or zeroed) or ``off``."""
    save_steps: int = 0
    """Checkpoint every N steps (0: at the end only)."""
    resume: bool = False
    """Resume each trainer from the latest checkpoint under ``<out_dir>/<harness>/``."""
    trackio_project: str = ""
    """One Trackio project for the run (a run per harness); "" logs to the Ray dashboard only."""
    serving_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of the model preset's serving config."""
    temperature: float | None = None
    """Sampling temperature of every rollout's turns, set by the guard (none of the harnesses sends one);
    null: the server's default (1.0 unless the model's generation config says otherwise). The sampler's
    log-probs stay those of the untempered policy, as the trainer computes them."""
    storage: str = ""
    """Where checkpoints, trajectories and ``train.json`` are copied so other nodes and later jobs find
    them: a folder or a URI (``s3://bucket/runs/x``, ``gs://…``); "" keeps them in ``out_dir``."""
    gradient_checkpointing: str = "auto"
    """``on``, ``off`` or ``auto`` (on for GPU trainers at token budgets of 16K and more)."""
    attention: str = "sdpa"
    """Packed batches' attention on GPU: ``sdpa`` (nothing from a hub) or ``kernels`` (hub-fetched)."""
    placement: str = "PACK"
    """Ray placement strategy of the serving and trainer bundles: PACK (fill a node first), SPREAD,
    STRICT_PACK (one node) or STRICT_SPREAD (the server and each trainer on different nodes)."""
    guard_proxy: str = "every_node"
    """Where the guard's HTTP proxy runs: ``every_node`` (each rollout reaches the proxy on its own node
    at 127.0.0.1) or ``head_only`` (one proxy, at the head node's address)."""
    guard_min_replicas: int = 1
    """Replicas of each guard shard (the minimum when ``guard_max_replicas`` is larger)."""
    guard_max_replicas: int = 1
    """Above ``guard_min_replicas``: Ray Serve autoscales each shard up to this many replicas, which share
    one ledger actor of open rollouts (``serve/book.py``)."""

    def __post_init__(self) -> None:
        problems = []
        problems += placement_problems(
            self.placement, self.guard_proxy, (self.guard_min_replicas, self.guard_max_replicas)
        )
        problems += setting_problems(self.attention, self.gradient_checkpointing)
        problems += rank_problems(self.trainer_ranks, self.trainer_gpus, self.fsdp)
        if problem := harness_problem(self.harnesses):
            problems.append(problem)
        for name in (
            "lora_rank",
            "lora_alpha",
            "max_steps",
            "micro_batches",
            "micro_batch_samples",
            "max_tokens",
        ):
            if getattr(self, name) < 1:
                problems.append(f"{name}={getattr(self, name)}: must be >= 1")
        for name in ("token_budget", "max_staleness", "save_steps", "max_queued_rows"):
            if getattr(self, name) < 0:
                problems.append(f"{name}={getattr(self, name)}: must be >= 0")
        if problem := row_weighting_problem(self.row_weighting):
            problems.append(problem)
        if not self.learning_rate > 0:
            problems.append(f"learning_rate={self.learning_rate}: must be > 0, e.g. 1.0e-5")
        if self.max_sessions < self.group_size or self.group_size < 1:
            problems.append("max_sessions must be >= group_size >= 1")
        if self.rollout_cpus <= 0:
            problems.append(f"rollout_cpus={self.rollout_cpus}: must be > 0 (a placement-group bundle)")
        for harness in self.harnesses if self.init_adapter else ():
            folder = Path(self.init_adapter.replace("{harness}", harness))
            if not (folder / "adapter_config.json").is_file():
                problems.append(
                    f"init_adapter={str(folder)!r}: no adapter_config.json there; give jobs.sft's out_dir"
                )
        if self.sandbox not in ("local", "docker"):
            problems.append(f"sandbox={self.sandbox!r}: use local or docker")
        if problem := unknown_task_set(self.task_set):
            problems.append(problem)
        try:
            object.__setattr__(self, "guard", GuardMode.parse(self.guard))
        except ValueError as exc:
            problems.append(str(exc))
        if problem := temperature_problem(self.temperature):
            problems.append(problem)
        elif self.temperature == 0 and self.group_size > 1:
            problems.append(
                "temperature=0: a group's greedy sessions are alike and GRPO learns nothing; use > 0"
            )
        if problems:
            raise ValueError("; ".join(problems))


def trainer_bundles(cfg: TrainJobConfig) -> list[dict[str, float]]:
    """One bundle per trainer rank (each trainer's ranks in a row), placed beside the serving bundle
    with ``cfg.placement``."""
    bundle = {"CPU": cfg.trainer_cpus, **({"GPU": cfg.trainer_gpus} if cfg.trainer_gpus else {})}
    return [bundle] * (len(cfg.harnesses) * cfg.trainer_ranks)


def rank_bundle(cfg: TrainJobConfig, trainer: int, rank: int) -> int:
    """The placement-group bundle of ``rank`` of the ``trainer``-th harness (bundle 0 is the server's)."""
    return 1 + trainer * cfg.trainer_ranks + rank


def session_bundles(cfg: TrainJobConfig) -> list[dict[str, float]]:
    """One trainer's rollout slots: a CPU bundle per session (a placement group per trainer, PACK)."""
    return [{"CPU": cfg.rollout_cpus}] * cfg.max_sessions if cfg.rollout_actors else []


def latest_checkpoint(folder: Path) -> str | None:
    """The newest ``checkpoint-<step>`` folder a trainer wrote under ``folder`` (None when there is none)."""
    found = [p for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return str(max(found, key=lambda p: int(p.name.split("-")[-1]))) if found else None


def run(cfg: TrainJobConfig, stack: Any = None) -> dict:
    """Train; on ``stack`` (a ``jobs.stack.Stack`` whose placement group holds ``trainer_bundles(cfg)``
    after the server's) when one is given, else on a serving stack of its own."""
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    from actors.cluster import connect_ray
    from actors.placement import first_failure_raises, make_actor
    from actors.rollout import RolloutSetup
    from actors.rollout_pool import PoolConfig
    from actors.trainer import TrainerActor, TrainerConfig, TrainerRank
    from jobs.models import load_preset, resolve_model
    from jobs.stack import job_stack

    started = time.monotonic()
    out = Path(cfg.out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    say = lambda message: print(f"[train] {message}", flush=True)  # noqa: E731
    serving_cfg = resolve_model(load_preset(cfg.model_preset, cfg.serving_overrides))
    say(f"model {serving_cfg.model}; harnesses {', '.join(cfg.harnesses)}; guard {cfg.guard}")
    sources = configured_sources(cfg.tasks, cfg.task_set, cfg.task_kinds)
    for loaded in load_sources(sources):  # before anything starts: readable, and held-out kept apart
        say(
            f"tasks {loaded.source.label} (weight {loaded.source.weight}): {len(loaded.train)} train, "
            f"{len(loaded.held_out)} held out, {len(loaded.rejected)} rejected"
        )
    connect_ray(local_cpus=max(os.cpu_count() or 1, 8))
    bundles = trainer_bundles(cfg)
    trainers: dict = {}
    later_ranks: dict = {}
    rollout_groups: list = []
    with job_stack(cfg, serving_cfg, out / "serving", bundles, say, given=stack) as stack:
        try:
            for index, harness in enumerate(cfg.harnesses):
                tcfg = TrainerConfig(
                    harness=harness,
                    model=serving_cfg.model,
                    revision=serving_cfg.revision,
                    cache_dir=serving_cfg.cache_dir,
                    offline=serving_cfg.offline,
                    gradient_checkpointing=cfg.gradient_checkpointing,
                    attention=cfg.attention,
                    storage=cfg.storage,
                    server_url=stack.url,
                    output_dir=str(out / harness),
                    lora_rank=cfg.lora_rank,
                    lora_alpha=cfg.lora_alpha,
                    learning_rate=cfg.learning_rate,
                    max_steps=cfg.max_steps,
                    token_budget=cfg.token_budget,
                    micro_batches=cfg.micro_batches,
                    micro_batch_samples=cfg.micro_batch_samples,
                    max_staleness=cfg.max_staleness,
                    dtype=serving_cfg.dtype,
                    trackio_project=cfg.trackio_project,
                    save_steps=cfg.save_steps,
                    ranks=cfg.trainer_ranks,
                    fsdp=cfg.fsdp,
                    group_size=cfg.group_size,
                    seed=cfg.seed,
                    init_adapter=cfg.init_adapter.replace("{harness}", harness),
                )
                pool = PoolConfig(
                    harness,
                    cfg.group_size,
                    cfg.max_sessions,
                    max_staleness=cfg.max_staleness,
                    max_queued_rows=cfg.max_queued_rows,
                    row_weighting=cfg.row_weighting,
                )
                setup = RolloutSetup(
                    stack.guard_url(harness),
                    cfg.sandbox,
                    str(out / harness),
                    sources,
                    cfg.max_tokens,
                    cfg.rollout_actors,
                    cfg.rollout_cpus,
                    cfg.tasks_seed,
                    trajectory_dir=f"{cfg.storage.rstrip('/')}/{harness}/trajectories" if cfg.storage else "",
                )
                sessions_group = None
                if cfg.rollout_actors:
                    sessions_group = placement_group(session_bundles(cfg))
                    rollout_groups.append(sessions_group)
                    ray.get(sessions_group.ready(), timeout=300)
                trainers[harness] = make_actor(
                    TrainerActor,
                    tcfg,
                    pool,
                    setup,
                    stack.server,
                    sessions_group,
                    resources=bundles[0],
                    placement_group=stack.group,
                    bundle_index=rank_bundle(cfg, index, 0),
                )
                later_ranks[harness] = [
                    make_actor(
                        TrainerRank,
                        tcfg,
                        stack.server,
                        resources=bundles[0],
                        placement_group=stack.group,
                        bundle_index=rank_bundle(cfg, index, rank),
                    )
                    for rank in range(1, cfg.trainer_ranks)
                ]
            say(
                f"{len(trainers)} trainers started ({cfg.trainer_ranks} rank(s) each); "
                f"training {cfg.max_steps} steps each"
            )
            runs, rank_runs = [], []
            for harness, trainer in trainers.items():
                resume = latest_checkpoint(out / harness) if cfg.resume else None
                meet = ray.get(trainer.rendezvous.remote()) if cfg.trainer_ranks > 1 else None
                runs.append(trainer.train.remote(resume, meet))
                rank_runs += [r.train.remote(resume, meet, n) for n, r in enumerate(later_ranks[harness], 1)]
            results = first_failure_raises([*runs, *rank_runs])
            summaries = dict(zip(trainers, results[: len(runs)], strict=True))
            for ranked in results[len(runs) :]:
                summaries[ranked["harness"]].setdefault("rank_nodes", []).append(ranked["node"])
        finally:
            for handle in [*trainers.values(), *(r for ranks in later_ranks.values() for r in ranks)]:
                ray.kill(handle)  # a rank 0's rollout actors are owned by it and go with it
            for sessions_group in rollout_groups:
                remove_placement_group(sessions_group)
    (out / "train.json").write_text(json.dumps(summaries, indent=2, default=str) + "\n")
    if cfg.storage:
        from actors.storage import open_storage, upload

        upload(out / "train.json", open_storage(cfg.storage), "train.json")
    figures = {
        "guard": str(cfg.guard),
        "train_s": round(time.monotonic() - started, 1),
        "steps": {h: s["steps"] for h, s in summaries.items()},
        "versions": {h: s["version"] for h, s in summaries.items()},
        "publish_ms_max": max((max(s["publish_ms"] or [0]) for s in summaries.values()), default=0),
        "rollouts": {h: s["rollouts"] for h, s in summaries.items()},
        "nodes": {"serving": stack.node, **{h: s.get("node") for h, s in summaries.items()}},
        "guard_nodes": stack.guard_nodes,
        "adapter_transfer_s_max": max(
            (t[2] for s in summaries.values() for t in s.get("adapter_transfers", [])), default=0
        ),
        "summary": str(out / "train.json"),
    }
    return figures


def main(argv: list[str] | None = None) -> None:
    job_main(TrainJobConfig, DEFAULT_CONFIG, run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
