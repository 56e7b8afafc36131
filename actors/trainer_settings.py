"""A trainer's settings as a job config sets them (its ``trainer`` section) and their checks: pure, so the
config checks them at load without importing torch; the trainer (``actors.trainer.TrainerConfig``) holds
them whole, and ``trl_cpu`` shares the attention list."""

from __future__ import annotations

from dataclasses import dataclass

from actors.grpo.collapse import CollapsePolicy
from actors.ranks import rank_problems

ATTENTION = ("sdpa", "kernels")
"""Packed batches' variable-length attention on GPU (``actors.trl_cpu.use_packed_attention``)."""
CHECKPOINTING = ("on", "off", "auto")


def setting_problems(attention: str, gradient_checkpointing: str) -> list[str]:
    """What is wrong with a trainer's attention and checkpointing settings, each naming the choices."""
    problems = []
    if attention not in ATTENTION:
        problems.append(f"attention={attention!r}: use sdpa (no hub needed) or kernels (hub-fetched)")
    if gradient_checkpointing not in CHECKPOINTING:
        problems.append(f"gradient_checkpointing={gradient_checkpointing!r}: must be on, off or auto")
    return problems


@dataclass(frozen=True, slots=True)
class TrainerSettings:
    """One trainer per harness, each with these settings."""

    lora_rank: int = 32
    """LoRA rank of a fresh adapter (``init_adapter`` brings its own)."""
    lora_alpha: int = 64
    """LoRA alpha (the update's scale is alpha / rank)."""
    init_adapter: str = ""
    """Start every trainer from this LoRA adapter (``jobs.sft``'s out_dir: the SFT warm start, or any
    ``save_pretrained`` adapter of this base model) instead of a fresh one, whose B matrices are zero;
    ``{harness}`` in it is each trainer's harness (``artifacts/sft-{harness}``). Its rank, alpha and target
    modules replace ``lora_rank``/``lora_alpha``, and its weights are the first version published."""
    learning_rate: float = 1.0e-5
    """The optimizer's learning rate."""
    max_steps: int = 200
    """Optimizer steps per trainer; each publishes a new adapter version."""
    save_steps: int = 0
    """Checkpoint every N steps (0: at the end only)."""
    token_budget: int = 65536
    """Tokens per packed micro-batch; 0: ``micro_batch_samples`` samples per micro-batch."""
    micro_batch_samples: int = 1
    """With ``token_budget: 0``, samples per micro-batch (a step is ``micro_batches`` x this), packed as a
    prefix tree: what they share (the harness's system prompt, a session's earlier turns) is forwarded
    once."""
    micro_batches: int = 4
    """Micro-batches per optimizer step (TRL's gradient accumulation), each packed under ``token_budget``."""
    seed: int = 0
    """Seed of each trainer: a fresh adapter's initial weights and TRL's sampling of its buffer. For an
    independent run, change it and ``tasks.seed`` (the learning check's runs use 0, 1, 2)."""
    gradient_checkpointing: str = "auto"
    """``on``, ``off`` or ``auto``: on for GPU training at token budgets of 16K and more, where activations
    dominate memory; on CPU, per micro-batch, for those whose activations would take an eighth of the
    host's memory by the estimate (SmolLM2-135M's long rows; the tiny model's steps stay unsaved):
    ``actors.trainer.checkpointing_wanted``."""
    attention: str = "sdpa"
    """Packed batches' variable-length attention on GPU: ``sdpa`` (PyTorch, nothing from a hub) or
    ``kernels`` (TRL's hub-fetched flash-attn kernel; ``actors.trl_cpu``)."""
    ranks: int = 1
    """Data-parallel processes per trainer (``actors.ranks``), one bundle of ``cpus`` / ``gpus`` each;
    rank 0 holds the rollout pool and publishes."""
    fsdp: str = ""
    """With ``ranks > 1``: "" (DDP, a whole model per rank) or Transformers' ``fsdp`` words such as
    ``full_shard auto_wrap`` (parameters, gradients and optimizer state sharded over the ranks, for models
    one GPU cannot hold)."""
    cpus: float = 1.0
    """CPUs per trainer rank (its placement-group bundle)."""
    gpus: float = 0.0
    """GPUs per trainer rank: a fraction when the trainers share one GPU, as in the 1.7B preset."""
    resume: bool = False
    """Resume each trainer from the latest checkpoint under ``<out_dir>/<harness>/`` (the train job finds
    it, locally or in storage)."""
    collapse: CollapsePolicy = CollapsePolicy()
    """Noticing a collapse (pass or blocked rate against the start's, KL spikes) and rolling back or
    stopping (``actors.grpo.collapse``); with several ranks it only watches."""

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
        if problems:
            raise ValueError("; ".join(problems))

    def bundle(self) -> dict[str, float]:
        """One rank's placement-group bundle."""
        return {"CPU": self.cpus, **({"GPU": self.gpus} if self.gpus else {})}

    def adapter_for(self, harness: str) -> str:
        """``init_adapter`` for ``harness``'s trainer ("" : a fresh adapter)."""
        return self.init_adapter.replace("{harness}", harness)
