"""One trainer per harness, built on TRL's ``AsyncGRPOTrainer`` through its seams.

- Rollouts: the trainer's ``RolloutPool`` is passed as ``rollout_worker``; it feeds ``RolloutSample``s made
  from the guard's exact token record (no re-tokenization).
- Adapter sync: TRL publishes each version with ``load_lora_adapter`` / ``unload_lora_adapter`` around a
  ``pause()`` / ``resume()`` of the whole server, under the fixed name ``trl-policy-v<N>``. With three
  trainers on one server both must change, so the trainer's server client is replaced by
  ``ServingPublisher``: versions are published through the serving actor (copied, validated, loaded
  without pausing anyone) as ``<harness>-v<N>``, pause and resume are no-ops (vLLM loads a LoRA at run time
  while it serves), and a version that falls out of the staleness window is retired (unloaded once no
  request or lease names it). TRL's probe of the server at start (``/server_info``, adapter limits) is kept.
- CPU: ``actors.trl_cpu.patch_trl_for_cpu`` (no CUDA probes, an SDPA varlen attention).

``HarnessTrainer`` is a plain class; ``actors.placement.make_actor`` makes it a Ray actor in the train job.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from actors.grpo.collapse import CollapseWatch
from actors.memory import ModelShape, activations_bytes
from actors.pool_settings import PoolSettings
from actors.progress import StepProgress, step_progress
from actors.serving.config import ServingConfig
from actors.trainer_settings import TrainerSettings

if TYPE_CHECKING:
    from actors.ranks import Rendezvous
    from actors.rollout import RolloutSetup
    from actors.rollout_pool import RolloutPool
    from environments.tasks.sources import TaskMix

log = logging.getLogger("actors.trainer")
ROLLOUT_STATE = "rollout_state.json"
"""Written into each checkpoint folder: the adapter version the run had reached."""


class AdapterServer(Protocol):
    """The two serving calls a trainer makes (``VLLMServer`` or a wrapper of its Ray handle)."""

    def publish(self, name: str, path: str) -> float: ...

    def retire(self, name: str, wait: bool = True) -> None: ...


class ServingPublisher:
    """Stands in for TRL's ``VLLMClient`` where the trainer syncs adapters (see the module docstring)."""

    def __init__(self, server: AdapterServer) -> None:
        self.server = server
        self.published: list[tuple[str, float]] = []
        """(name, publish milliseconds) per version, in order."""
        self.windows: list[tuple[float, float]] = []
        """(start, end) wall-clock seconds of each publish, to line up with other trainers' sessions."""

    def pause(self, timeout: int = 0) -> None:
        """No-op: a runtime LoRA load does not need the server paused; other trainers keep sampling."""

    def resume(self, timeout: int = 0) -> None:
        """No-op (see ``pause``)."""

    def load_lora_adapter(self, lora_name: str, lora_path: str, timeout: int = 0) -> None:
        start = time.time()
        self.published.append((lora_name, self.server.publish(lora_name, lora_path)))
        self.windows.append((start, time.time()))

    def unload_lora_adapter(self, lora_name: str, timeout: int = 0) -> None:
        self.server.retire(lora_name, wait=False)


def _node_ip() -> str:
    from actors.serving.address import node_address

    return node_address("node")


CHECKPOINTING_MIN_TOKENS = 16384
"""Token budget from which ``auto`` turns gradient checkpointing on (GPU)."""

CPU_CHECKPOINTING_SHARE = 0.125
"""Share of the host's memory from which a CPU trainer under ``auto`` checkpoints a micro-batch, by the
estimate of its tokens' float32 activations (``cpu_activations_share``), and maps its large blocks on
their own (``actors.cpu_memory``). Under glibc's default heap a checkpointed 8,192-token SmolLM2-135M row
took 8.4 GiB, mapped 1.5 (``benchmarks/cpu_checkpointing.py``, one run each); the record-lookup trainer,
saved from a quarter of the host and with glibc's heap, still reached 15.8 GB in its second step. Mapping
costs time on a checkpointed row (54% at 2,048 tokens, 18% at 4,096, 4% at 8,192), so it is kept to rows
long enough to need it: an eighth of a 24 GiB host is SmolLM2 rows from about 2,700 tokens. The tiny
model's packed steps stay far below and run unsaved."""


ADAPTER_WEIGHTS = "adapter_model.safetensors"


def local_copy(location: str, into: Path) -> str:
    """A folder the job names (the warm-start adapter, the checkpoint to resume from) as a folder on this
    node: a storage URI (``s3://...``: the trainer may run on any node) is copied into ``into`` first; a
    folder (one machine's, or one every node mounts) or "" is returned as it is."""
    from actors.storage import download, is_uri, open_storage

    if not is_uri(location):
        return location
    return str(download(open_storage(location), "", into))


def resume_folder(location: str | None, output_dir: str, rank: int) -> str | None:
    """The checkpoint to resume from (``jobs.train.resume_location``) on this node: one in storage is copied
    to ``<output_dir>/resume/rank-<rank>/<checkpoint>`` (a copy per rank: two ranks may share a node and
    its ``output_dir``); a folder is returned as it is; None or "": no resume."""
    if not location:
        return None
    name = location.rstrip("/").rsplit("/", 1)[-1]
    return local_copy(location, Path(output_dir) / "resume" / f"rank-{rank}" / name)


def warm_start_config(folder: str) -> Any:
    """The ``LoraConfig`` of the adapter in ``folder``, made trainable; raises ``ValueError`` naming what is
    missing or not a LoRA adapter."""
    from peft import LoraConfig, PeftConfig

    path = Path(folder)
    if not (path / "adapter_config.json").is_file() or not (path / ADAPTER_WEIGHTS).is_file():
        raise ValueError(
            f"init_adapter={folder!r}: needs adapter_config.json and {ADAPTER_WEIGHTS} (jobs.sft writes both "
            "into its out_dir; a full fine-tune has no adapter to start from)"
        )
    config = PeftConfig.from_pretrained(str(path))
    if not isinstance(config, LoraConfig):
        raise ValueError(f"init_adapter={folder!r}: a {type(config).__name__}, not a LoRA adapter")
    config.inference_mode = False
    config.task_type = "CAUSAL_LM"
    return config


def load_adapter_weights(model: Any, folder: str) -> int:
    """Copy the adapter weights in ``folder`` into ``model``'s (a PEFT model built with
    ``warm_start_config(folder)``); return how many tensors were loaded. Every LoRA tensor of the model
    must come from the file, so a file of another base model or shape fails here, by name."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    state = load_file(str(Path(folder) / ADAPTER_WEIGHTS))
    try:
        result = set_peft_model_state_dict(model, state)
    except RuntimeError as exc:  # size mismatches
        raise ValueError(
            f"init_adapter={folder!r} does not fit this model: {str(exc).splitlines()[0]}"
        ) from exc
    lora = [name for name, _ in model.named_parameters() if "lora_" in name]
    missing = [name for name in getattr(result, "missing_keys", []) if "lora_" in name]
    if result.unexpected_keys or missing or not lora:
        raise ValueError(
            f"init_adapter={folder!r} does not fit this model: {len(result.unexpected_keys)} unexpected and "
            f"{len(missing)} missing LoRA tensors (e.g. {(list(result.unexpected_keys) + missing)[:2]})"
        )
    return len(state)


def _assigned_gpus() -> list[Any]:
    """The GPUs Ray assigned this process (none outside Ray)."""
    import ray

    return list(ray.get_gpu_ids()) if ray.is_initialized() else []


def checkpointing_wanted(setting: str, cuda: bool, token_budget: int) -> bool:
    """Whether to recompute activations in the backward pass from the start: an explicit ``on``/``off``,
    else on for GPU training once a packed micro-batch holds ``CHECKPOINTING_MIN_TOKENS`` tokens or more
    (0 = one sample per micro-batch, whose length is not bounded, so it counts as large). A CPU trainer
    under ``auto`` starts without and decides per micro-batch (``checkpoint_long_micro_batches``)."""
    if setting in ("on", "off"):
        return setting == "on"
    return cuda and (token_budget == 0 or token_budget >= CHECKPOINTING_MIN_TOKENS)


def cpu_activations_share(shape: ModelShape, tokens: int, host_bytes: float) -> float:
    """What the activations of a micro-batch of ``tokens`` take without checkpointing, as a share of the
    host's memory: ``actors.memory``'s bf16 estimate, doubled for the CPU trainer's float32."""
    return 2 * activations_bytes(shape, tokens, checkpointing=False) / host_bytes


def micro_batch_wants_checkpointing(tokens: int, share_per_token: float) -> bool:
    """Whether a CPU micro-batch of ``tokens`` is long enough to checkpoint (``CPU_CHECKPOINTING_SHARE``)."""
    return tokens * share_per_token >= CPU_CHECKPOINTING_SHARE


def checkpoint_long_micro_batches(trainer: Any, share_per_token: float) -> Callable[[], int]:
    """Make ``trainer`` (TRL's) checkpoint each micro-batch that ``micro_batch_wants_checkpointing`` and no
    other: the length of a row is known only when it comes, and a bound from the context (8 packed rows of
    the tiny model's 65,536 positions) would slow every short step. Such a micro-batch also runs with its
    large blocks mapped on their own, and the heap's free pages go back to the host after it
    (``actors.cpu_memory``): glibc's arenas otherwise keep a long row's peak, and more. Returns a count of
    the micro-batches checkpointed so far."""
    from actors.cpu_memory import map_large_blocks, release_free_heap

    model, step = trainer.model, trainer.training_step
    checkpointed = [0]

    def training_step(model_: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> Any:
        wanted = micro_batch_wants_checkpointing(int(inputs["attention_mask"].sum()), share_per_token)
        if wanted and not model.is_gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        elif model.is_gradient_checkpointing and not wanted:
            model.gradient_checkpointing_disable()
        checkpointed[0] += wanted
        if not wanted:
            return step(model_, inputs, num_items_in_batch)
        map_large_blocks(True)
        try:
            return step(model_, inputs, num_items_in_batch)
        finally:
            map_large_blocks(False)
            release_free_heap()

    trainer.training_step = training_step
    return lambda: checkpointed[0]


def host_share_per_token(model_folder: Path) -> float:
    """``cpu_activations_share`` of one token of the model in ``model_folder`` on this host (0 without its
    ``config.json``: nothing to estimate from, so nothing is checkpointed)."""
    import psutil

    config = model_folder / "config.json"
    if not config.is_file():
        return 0.0
    return cpu_activations_share(ModelShape.from_config(config, params=0), 1, psutil.virtual_memory().total)


def gpu_problem(assigned_gpus: Sequence[Any], cuda: bool) -> str | None:
    """Why training must not start: Ray gave this trainer GPUs that torch cannot see (a driver too old
    for torch's CUDA build, a CPU-only torch), which would train on the CPU without a word; else None."""
    if assigned_gpus and not cuda:
        return (
            f"this trainer holds GPU(s) {list(assigned_gpus)} but torch sees no CUDA device (torch "
            "built for CPU, or a driver older than its CUDA build): fix the node's driver or torch, or set "
            "trainer.gpus=0 to train on the CPU on purpose"
        )
    return None


@dataclass(frozen=True, slots=True)
class TrainerConfig:
    harness: str
    serving: ServingConfig
    """The base model as the serving actor holds it (its ``model``, ``revision``, ``cache_dir``, ``offline``
    and ``dtype``): a folder, a Hub id fetched on this trainer's node at the pinned commit, or (a local
    folder on a cluster) its copy in storage, copied to this node (``jobs.stack.model_for_nodes``)."""
    server_url: str
    """The serving actor's OpenAI URL (``.../v1``); TRL probes it at start."""
    output_dir: str
    settings: TrainerSettings = TrainerSettings()
    """The LoRA, the optimizer, the batches, the ranks and the collapse watch: a job's ``trainer``
    section, whole (``init_adapter``'s ``{harness}`` is filled in with this trainer's)."""
    groups: PoolSettings = PoolSettings()
    """The groups this trainer trains on (a job's ``pool`` section): ``group_size`` is TRL's
    ``num_generations`` (every rank must agree; rank 0's pool uses the same), ``max_staleness`` its
    off-policy window."""
    trackio_project: str = ""
    """One Trackio project per run, one run per harness ("" logs nowhere but the Ray dashboard)."""
    storage: str = ""
    """Where each checkpoint is copied as ``<harness>/checkpoint-<step>`` (a folder or a URI such as
    ``s3://bucket/run``; "": it stays in ``output_dir`` on this trainer's node only)."""

    @property
    def init_adapter(self) -> str:
        """The adapter this trainer starts from ("": a fresh one)."""
        return self.settings.adapter_for(self.harness)


def peak_rss_gib() -> float:
    """This process's peak resident memory so far, in GiB (Linux: ``ru_maxrss`` counts KiB), to set beside
    the host's memory: Ray's monitor kills the largest process once the node passes 95%."""
    import resource

    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return round(kib / 1024**2, 2)


def grpo_arguments(cfg: TrainerConfig, cuda: bool) -> dict[str, Any]:
    """TRL's ``AsyncGRPOConfig`` for ``cfg`` on this device (a plain dict, so it can be checked alone)."""
    cpu = not cuda
    return dict(
        output_dir=cfg.output_dir,
        vllm_server_base_url=cfg.server_url.removesuffix("/").removesuffix("/v1"),
        vllm_server_timeout=60,
        max_steps=cfg.settings.max_steps,
        learning_rate=cfg.settings.learning_rate,
        per_device_train_batch_size=cfg.settings.micro_batch_samples,
        gradient_accumulation_steps=cfg.settings.micro_batches,
        token_budget=cfg.settings.token_budget,
        max_staleness=cfg.groups.max_staleness,
        num_generations=cfg.groups.group_size,
        bf16=not cpu and cfg.serving.device_dtype("gpu") == "bfloat16",
        dtype="float32" if cpu else cfg.serving.device_dtype("gpu"),
        use_cpu=cpu,  # else Accelerate ignores a CPU process group of several ranks (gloo)
        gradient_checkpointing=checkpointing_wanted(
            cfg.settings.gradient_checkpointing, not cpu, cfg.settings.token_budget
        ),
        logging_steps=1,
        report_to=["trackio"] if cfg.trackio_project else [],
        project=cfg.trackio_project or "huggingface",
        run_name=cfg.harness,
        trackio_static_space_id=False,  # local SQLite only: never create a Space
        save_strategy="steps",
        save_steps=cfg.settings.save_steps or cfg.settings.max_steps,  # 0: one checkpoint, at the last step
        seed=cfg.settings.seed,
        fsdp=cfg.settings.fsdp,  # Transformers' FSDP2 by default; GPU only (Accelerate runs CPU ranks as DDP)
    )


class HarnessTrainer:
    """TRL's trainer for one harness, in one process: rank 0 (the only one, or the first of
    ``cfg.settings.ranks``) holds the rollout pool; a later rank has ``pool=None`` and gets its rows from
    rank 0."""

    def __init__(self, cfg: TrainerConfig, server: AdapterServer, pool: RolloutPool | None) -> None:
        if pool is not None and pool.cfg.groups.group_size != cfg.groups.group_size:
            raise ValueError(
                f"the pool's group_size {pool.cfg.groups.group_size} != the trainer's {cfg.groups.group_size}"
            )
        self.cfg = cfg
        self.server = server
        self.pool = pool
        self.publisher = ServingPublisher(server)
        self.trainer: Any = None
        self.held_s = 0.0
        """Seconds publishes waited for slow groups (the off-policy window's gate)."""
        self.checkpointed: Callable[[], int] = lambda: 0
        """Micro-batches a CPU trainer under ``auto`` checkpointed (``checkpoint_long_micro_batches``)."""
        self.tasks_drawn: list[dict[str, int]] = []
        """At each step's end: the groups started so far per task source (cumulative)."""
        self.watch = CollapseWatch(cfg.settings.collapse)
        self.snapshots: dict[int, dict[str, Any]] = {}
        """Adapter weights (on the CPU) of the versions kept to roll back to, by version."""
        self.collapses: list[dict[str, Any]] = []
        """What the watch found and what was done, in order (the run's result carries them)."""
        self.on_progress: Callable[[StepProgress], None] | None = None
        """Called with each logged step's progress on rank 0 (the train job posts it to its console)."""
        self._reported_step = -1

    def build(self) -> None:
        """Load the model and TRL's trainer (probes the server); separate from ``train`` so a failed
        set-up surfaces before any rollout starts."""
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
        from actors.trl_cpu import use_packed_attention

        use_packed_attention(self.cfg.settings.attention)
        import datasets
        import torch
        from peft import LoraConfig
        from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

        cfg = self.cfg
        cpu = not torch.cuda.is_available()
        if problem := gpu_problem(_assigned_gpus(), cuda=not cpu):
            raise RuntimeError(problem)
        from actors.serving.weights import local_weights

        weights = local_weights(cfg.serving)  # a Hub id: this node's cache, at the pinned commit
        args = AsyncGRPOConfig(**grpo_arguments(cfg, cuda=not cpu))
        init_adapter = local_copy(cfg.init_adapter, Path(cfg.output_dir) / "init-adapter")
        if init_adapter:
            peft = warm_start_config(init_adapter)
        else:
            peft = LoraConfig(
                r=cfg.settings.lora_rank,
                lora_alpha=cfg.settings.lora_alpha,
                target_modules="all-linear",
                task_type="CAUSAL_LM",
            )
        # TRL requires a dataset even when the rollout worker brings its own prompts; ours ignores it.
        placeholder = datasets.Dataset.from_dict({"prompt": [f"{cfg.harness} rollouts come from the pool"]})
        from transformers import set_seed

        set_seed(
            cfg.settings.seed
        )  # before the model is built: TRL seeds only later, after the LoRA's weights exist
        trainer = AsyncGRPOTrainer(
            model=str(weights),
            args=args,
            train_dataset=placeholder,
            peft_config=peft,
            rollout_worker=self.pool,
            callbacks=[self._dashboard_callback()],
        )
        if init_adapter:
            load_adapter_weights(trainer.model, init_adapter)
        if cpu and cfg.settings.gradient_checkpointing == "auto":
            self.checkpointed = checkpoint_long_micro_batches(trainer, host_share_per_token(Path(weights)))
        if not trainer._lora_sync:
            raise RuntimeError(
                "the serving actor does not take runtime LoRA updates: start it with enable_lora and "
                f"max_loras >= {cfg.groups.max_staleness + 2} per trainer"
            )
        if trainer.accelerator.is_main_process:  # only rank 0 publishes
            trainer.vllm_client = self.publisher  # the adapter-sync seam (module docstring)
        trainer._lora_name = cfg.harness  # versions are published as <harness>-v<N>
        self.trainer = trainer

    def _dashboard_callback(self) -> Any:
        """Two step-end duties, run before TRL's own step-end sync (callbacks passed in run first): hold
        the publish while it would make an in-flight group stale (``StalenessPolicy.hold_s`` at most), and
        copy TRL's step figures (step time, tokens per step) and the version to the Ray dashboard."""
        from transformers import TrainerCallback

        owner = self
        last_end = [time.monotonic()]

        class StepEnd(TrainerCallback):
            def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                # before TRL's first publish: these weights become the next version
                if owner.pool is not None:
                    owner.watch.start_version = owner.trainer.model_version + 1
                    owner.snapshot(owner.trainer.model_version + 1)

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                if owner.pool is None:  # a later rank: TRL's sync waits for rank 0 at a barrier
                    return
                event = owner.check_collapse(state.global_step)
                if event is not None and event.action == "stop":
                    control.should_training_stop = True
                    control.should_save = True  # the restored version's weights, as this step's checkpoint
                now = time.monotonic()  # the step's wall time goes out with this step's log (Trackio too)
                owner.pool.metrics_queue.put({"perf/step_s": now - last_end[0]})
                last_end[0] = now
                start = time.monotonic()
                while not owner.pool.may_publish(time.monotonic() - start):
                    time.sleep(0.2)
                owner.held_s += time.monotonic() - start
                drawn = getattr(owner.pool.tasks, "drawn", None)  # a mix of task sources
                if drawn is not None:
                    owner.tasks_drawn.append(dict(drawn))

            def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
                if logs and owner.trainer is not None and owner.pool is not None:
                    owner.pool.metrics.step(logs, owner.trainer.model_version)
                    owner.report(state.global_step, logs)

            def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                # TRL keeps the version only for its own rollout worker; ours needs it too, so a resumed
                # run publishes v<N+1>, never a name a live server already holds.
                if not state.is_world_process_zero:
                    return
                folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                folder.mkdir(parents=True, exist_ok=True)
                version = {"model_version": owner.trainer.model_version}
                (folder / ROLLOUT_STATE).write_text(json.dumps(version) + "\n")
                owner.write_card(folder, state.global_step)
                if owner.cfg.storage:  # no disk in common with the evaluation: copy it out
                    from actors.storage import open_storage, upload

                    upload(folder, open_storage(owner.cfg.storage), owner.cfg.harness, folder.name)

        return StepEnd()

    def report(self, step: int, logs: dict[str, Any]) -> None:
        """Hand ``on_progress`` the progress of ``step``, once per step (``actors.progress``); the record
        logged when training ends is no step and is skipped."""
        if self.on_progress is None or step == self._reported_step:
            return
        collapse = next((c["said"] for c in reversed(self.collapses) if c["step"] == step), "")
        progress = step_progress(self.cfg.harness, step, self.cfg.settings.max_steps, logs, collapse)
        if progress is not None:
            self._reported_step = step
            self.on_progress(progress)

    def snapshot(self, version: int) -> None:
        """Keep the adapter weights about to be published as ``version`` (the run's first always, and the
        latest ``collapse.snapshots``)."""
        import torch
        from peft import get_peft_model_state_dict

        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        with torch.no_grad():
            self.snapshots[version] = {
                k: v.detach().to("cpu", copy=True) for k, v in get_peft_model_state_dict(model).items()
            }
        for old in sorted(self.snapshots)[1 : -self.cfg.settings.collapse.snapshots]:
            del self.snapshots[old]

    def check_collapse(self, step: int) -> Any:
        """Feed the watch this step's rollouts and KL; on a collapse, act (module ``actors.grpo.collapse``)
        before TRL publishes: restore the last good kept version, and for a rollback shrink the step, forget
        the optimizer's moments and retract the versions in between. Returns the watch's finding or None."""
        trainer, pool = self.trainer, self.pool
        assert pool is not None
        for version, passed, blocked, tool_calls in pool.drain_health():
            self.watch.rollout(version, passed, blocked, tool_calls)
        kls = [float(v) for v in trainer._metrics["train"].get("kl", []) if isinstance(v, (int, float))]
        event = self.watch.step(step, sum(kls) / len(kls) if kls else None, trainer.model_version)
        action = (
            "watch" if event is not None and self.cfg.settings.ranks > 1 else getattr(event, "action", None)
        )
        if event is None or action == "watch":
            if event is not None:
                log.warning(
                    "%s step %d: collapse noticed (%s), watching only", self.cfg.harness, step, event.reason
                )
                said = f"{event.reason}; noticed, watching only"
                self.collapses.append({"step": step, "reason": event.reason, "action": "watch", "said": said})
            self.snapshot(trainer.model_version + 1)
            return event
        kept = [v for v in self.snapshots if v <= event.good_version] or [min(self.snapshots)]
        restored = max(kept)
        self._restore(restored)
        record: dict[str, Any] = {
            "step": step,
            "reason": event.reason,
            "action": action,
            "restored_version": restored,
        }
        if action == "rollback":
            record["learning_rate"] = self._smaller_step(self.cfg.settings.collapse.lr_factor)
            record["rows_withdrawn"] = pool.retract(restored + 1, trainer.model_version)
            self.watch.rolled_back(restored, trainer.model_version)
            self.snapshot(trainer.model_version + 1)  # the restored weights, published next
            record["said"] = (
                f"{event.reason}; rolled back to version {restored} with learning rate "
                f"{record['learning_rate']:.3g}"
            )
        else:
            record["said"] = (
                f"{event.reason}; training stopped, with version {restored}'s weights in this step's "
                "checkpoint"
            )
        message = f"{self.cfg.harness} step {step}: collapse ({record['said']})"
        log.warning(message)
        print(f"[trainer] {message}", flush=True)
        self.collapses.append(record)
        return event

    def _restore(self, version: int) -> None:
        from peft import set_peft_model_state_dict

        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        set_peft_model_state_dict(model, self.snapshots[version])

    def _smaller_step(self, factor: float) -> float:
        """Scale the learning rate (the optimizer's, the scheduler's base and its last value) by ``factor``
        and forget the optimizer's moments, which the collapsed steps filled; returns the new base learning
        rate. The last value matters for the log: Transformers logs a step's learning rate from the
        scheduler's last value, read before the scheduler steps, so without it the next step's log would
        give the rate from before the rollback while the optimizer applies the smaller one."""
        optimizer = getattr(self.trainer.optimizer, "optimizer", self.trainer.optimizer)
        optimizer.state.clear()
        for group in optimizer.param_groups:
            group["lr"] *= factor
        scheduler = getattr(self.trainer.lr_scheduler, "scheduler", self.trainer.lr_scheduler)
        if hasattr(scheduler, "base_lrs"):
            scheduler.base_lrs = [lr * factor for lr in scheduler.base_lrs]
            scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]
            return float(scheduler.base_lrs[0])
        return float(optimizer.param_groups[0]["lr"])

    def write_card(self, folder: Path, step: int) -> None:
        """The checkpoint's model card: base model, harness, training config (``actors.model_card``)."""
        from dataclasses import asdict

        from actors.model_card import write_card

        training = {
            k: v
            for k, v in asdict(self.cfg).items()
            if k not in ("server_url", "output_dir", "model", "cache_dir", "storage")
        }
        training |= {
            "step": step,
            "adapter version": self.trainer.model_version,
            "group size": self.cfg.groups.group_size,
        }
        write_card(folder, self.cfg.serving.model, self.cfg.harness, training)

    def train(
        self, resume_from: str | None = None, rendezvous: Rendezvous | None = None, rank: int = 0
    ) -> dict[str, Any]:
        """Train ``max_steps`` steps; from a checkpoint of an earlier run when ``resume_from`` is given (a
        folder, or a storage URI copied here first: ``resume_folder``), with optimizer, scheduler and step
        from TRL and the adapter version from ``rollout_state.json``. With ``rendezvous``, this process is
        ``rank`` of ``rendezvous.world`` (set before TRL starts)."""
        if (rendezvous is None) != (self.cfg.settings.ranks == 1) or (rank == 0) != (self.pool is not None):
            raise ValueError(
                f"rank {rank} of a {self.cfg.settings.ranks}-rank trainer needs a rendezvous exactly when "
                "ranks > 1, "
                "and the rollout pool exactly on rank 0"
            )
        resume_from = resume_folder(resume_from, self.cfg.output_dir, rank)
        if rendezvous is not None:
            os.environ.update(rendezvous.env(rank))
        if self.trainer is None:
            self.build()
        if self.pool is None:
            result = self.trainer.train(resume_from_checkpoint=resume_from or None)
            return {
                "harness": self.cfg.harness,
                "rank": rank,
                "steps": int(result.global_step),
                "node": _node_ip(),
            }
        if resume_from:
            state = Path(resume_from) / ROLLOUT_STATE
            if not state.is_file():
                raise FileNotFoundError(f"{state} is missing: resume from a checkpoint this trainer wrote")
            version = int(json.loads(state.read_text())["model_version"])
            self.trainer.model_version = version
            self.pool.update_model_version(version)  # type: ignore[union-attr]
        start = time.monotonic()
        result = self.trainer.train(resume_from_checkpoint=resume_from or None)
        assert self.pool is not None
        counters = self.pool.collector.counters
        return {
            "harness": self.cfg.harness,
            "ranks": self.cfg.settings.ranks,
            "steps": int(result.global_step),
            "train_s": round(time.monotonic() - start, 1),
            "version": self.trainer.model_version,
            "published": [name for name, _ in self.publisher.published],
            "publish_ms": [round(ms, 2) for _, ms in self.publisher.published],
            "publish_held_s": round(self.held_s, 1),
            "checkpointed_micro_batches": self.checkpointed(),
            "peak_rss_gib": peak_rss_gib(),
            "tasks_drawn": self.tasks_drawn,
            "collapses": self.collapses,
            "adapter_transfers": list(getattr(self.server, "transfers", [])),
            "node": _node_ip(),
            "publish_windows": self.publisher.windows,
            "session_spans": list(self.pool.session_spans),
            "log_history": self.trainer.state.log_history,
            "rollouts": {
                "started": counters.started,
                "finished": counters.finished,
                "retried": counters.retried,
                "dropped": counters.dropped,
                "blocked": counters.blocked,
                "would_blocked": counters.would_blocked,
                "tampered": counters.tampered,
                "groups_trained": counters.groups_trained,
                "groups_stale": counters.groups_stale,
                "groups_dropped": counters.groups_dropped,
                "groups_equal": counters.groups_equal,
                "groups_rolled_back": counters.groups_rolled_back,
                "in_flight": counters.in_flight,
            },
        }


class TrainerActor:
    """The Ray actor of one harness's trainer: builds its rollout pool and its ``HarnessTrainer``, then
    trains. ``tasks`` is the training stream the driver read and mixed (``jobs.train.driver_tasks``): a
    ``Task`` holds its files as bytes, so no task source's path is read here, on a node that need not have
    it. Sessions run as Ray rollout actors (``setup.rollouts.actors``: one per session slot, in the
    bundles of ``rollout_group`` when given) or as threads in this actor's process. With
    ``progress_board`` (an ``actors.progress.ProgressBoard`` actor), each step's progress is posted there
    for the job's console."""

    def __init__(
        self,
        cfg: TrainerConfig,
        pool_cfg: Any,
        setup: RolloutSetup,
        tasks: TaskMix,
        serving_handle: Any,
        rollout_group: Any = None,
        progress_board: Any = None,
    ) -> None:
        from actors.rollout_pool import RolloutPool, session_runner

        root = str(Path(setup.work_root or cfg.output_dir) / "rollouts")
        # Every rollout's ATIF trajectory beside the run, for `python -m serve.audit`.
        trajectories = setup.trajectory_dir or str(Path(cfg.output_dir) / "trajectories")
        setup = replace(setup, trajectory_dir=trajectories)
        sessions = session_runner(setup, cfg.harness, root, pool_cfg.max_sessions, rollout_group)
        self.pool = RolloutPool(pool_cfg, tasks, sessions)
        from actors.serving.remote import RayServing

        self.trainer = HarnessTrainer(cfg, RayServing(serving_handle), self.pool)
        self.board = progress_board
        self._posted: Any = None
        """The latest post's reference: awaited before ``train`` returns, so the last step is on the board
        before the driver hears that training ended."""
        if progress_board is not None:
            self.trainer.on_progress = self._post

    def _post(self, progress: StepProgress) -> None:
        self._posted = self.board.post.remote(progress)  # not awaited: the console never holds a step up

    def rendezvous(self) -> Rendezvous:
        """Where this trainer's later ranks meet it: this node's address and a port free on it."""
        from actors.ranks import Rendezvous, free_port

        address = _node_ip()
        return Rendezvous(address, free_port(address), self.trainer.cfg.settings.ranks)

    def train(self, resume_from: str | None = None, rendezvous: Rendezvous | None = None) -> dict[str, Any]:
        try:
            return self.trainer.train(resume_from, rendezvous, rank=0)
        finally:
            self.pool.stop()
            if self._posted is not None:
                import ray

                ray.wait([self._posted], timeout=10)


class TrainerRank:
    """The Ray actor of a later rank (1 .. ranks-1) of one harness's trainer: no rollout pool; it trains
    on the rows rank 0 hands it and joins rank 0's collective adapter saves."""

    def __init__(self, cfg: TrainerConfig, serving_handle: Any) -> None:
        from actors.serving.remote import RayServing

        self.trainer = HarnessTrainer(cfg, RayServing(serving_handle), None)

    def train(self, resume_from: str | None, rendezvous: Rendezvous, rank: int) -> dict[str, Any]:
        return self.trainer.train(resume_from, rendezvous, rank)
