"""The SFT run's configuration (``jobs/configs/sft-*.yaml``): a library module, imported by the entry
point (``jobs.sft``), the trainer (``actors.sft.train``), the sweep and the tiny agent's recipe alike."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class LoraSection:
    rank: int = 8
    """LoRA rank."""
    alpha: int = 16
    """LoRA alpha (the update's scale is alpha / rank)."""
    dropout: float = 0.0
    """Dropout on the LoRA input, in [0, 1)."""
    target_modules: tuple[str, ...] = ("all-linear",)
    """PEFT module names, or the single entry ``all-linear``."""

    def __post_init__(self) -> None:
        if self.rank < 1 or self.alpha < 1:
            raise ValueError(f"lora.rank={self.rank}, lora.alpha={self.alpha}: both must be >= 1")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"lora.dropout={self.dropout}: must be in [0, 1)")
        if not self.target_modules:
            raise ValueError("lora.target_modules is empty: name modules or use [all-linear]")


@dataclass(frozen=True, slots=True)
class SweepSection:
    learning_rates: tuple[float, ...] = ()
    """Grid axes; an empty axis means the run's own value."""
    ranks: tuple[int, ...] = ()
    """Grid axis of LoRA ranks (empty: the run's ``lora.rank``)."""
    max_lengths: tuple[int, ...] = ()
    """Grid axis of ``max_length`` values (empty: the run's)."""
    trackio_project: str = "sft-sweep"
    """The sweep's one Trackio project (a run per grid point)."""
    trackio_dir: str = ""
    """Where Trackio's SQLite files go; empty means Trackio's default (``$HF_HOME/trackio``)."""
    cpus_per_run: float = 1.0
    """CPUs reserved per grid point (a Ray task)."""
    gpus_per_run: float = 0.0
    """GPUs reserved per grid point (0 on CPU)."""

    def __post_init__(self) -> None:
        if any(lr <= 0 for lr in self.learning_rates) or any(r < 1 for r in self.ranks):
            raise ValueError("sweep.learning_rates must be > 0 and sweep.ranks >= 1")
        if any(n < 16 for n in self.max_lengths):
            raise ValueError("sweep.max_lengths must be >= 16")
        if self.cpus_per_run <= 0 or self.gpus_per_run < 0:
            raise ValueError("sweep.cpus_per_run must be > 0 and sweep.gpus_per_run >= 0")
        if not self.trackio_project:
            raise ValueError("sweep.trackio_project is empty: name the Trackio project")


@dataclass(frozen=True, slots=True)
class SFTConfig:
    model: str = "tiny"
    """A model preset (actors/model_presets/), a local folder or a hub id."""
    traces: tuple[str, ...] = ()
    """Trace files or folders, read by ``actors.sft.data.read_conversations``."""
    trace_format: str | None = None
    """A ``environments.traces.read.TraceFormat`` (pi-session, pi-events, opencode-export, opencode-events,
    hermes-export, atif, chat); None: detected per file."""
    out_dir: str = "artifacts/sft/tiny"
    """Where the adapter (or full model), tokenizer and ``metrics.json`` are written."""
    full_finetune: bool = False
    """Train every weight instead of a LoRA adapter (sensible only for tiny models)."""
    lora: LoraSection = field(default_factory=LoraSection)
    """The adapter's shape (ignored with ``full_finetune``)."""
    mask_method: str = "auto"
    """auto | generation | prefix: how assistant spans are found (see actors/sft/data.py)."""
    learning_rate: float = 2e-4
    """The optimizer's learning rate."""
    epochs: float = 1.0
    """Passes over the training examples (``max_steps`` >= 1 overrides it)."""
    max_steps: int = -1
    """Stop after this many optimizer steps; -1 means run the epochs."""
    max_length: int = 4096
    """Tokens per conversation; longer ones keep their start."""
    batch_size: int = 1
    """Examples per device batch."""
    grad_accum: int = 1
    """Batches per optimizer step."""
    eval_fraction: float = 0.1
    """Share of conversations held out for the eval loss (at least one when > 0)."""
    max_eval_examples: int = 64
    """At most this many held out (0: no cap); the rest of the share trains."""
    bf16: bool = False
    """Used only on a CUDA device; CPU runs are always float32."""
    seed: int = 0
    """Seed of the split and the training order."""
    logging_steps: int = 1
    """Log the loss every N steps."""
    trackio_project: str = ""
    """A single run's Trackio project (its training and held-out losses, by step); "" logs nowhere. The
    sweep logs to ``sweep.trackio_project``."""
    sweep: SweepSection = field(default_factory=SweepSection)
    """The grid ``--sweep`` runs (one Ray task per point)."""

    def __post_init__(self) -> None:
        problems = []
        if self.learning_rate <= 0:
            problems.append(f"learning_rate={self.learning_rate}: must be > 0")
        if self.epochs <= 0 and self.max_steps < 1:
            problems.append("epochs must be > 0 or max_steps >= 1")
        if self.max_length < 16:
            problems.append(f"max_length={self.max_length}: must be >= 16")
        if self.batch_size < 1 or self.grad_accum < 1 or self.logging_steps < 1:
            problems.append("batch_size, grad_accum and logging_steps must be >= 1")
        if self.max_eval_examples < 0:
            problems.append(f"max_eval_examples={self.max_eval_examples}: must be >= 0 (0: no cap)")
        if not 0 <= self.eval_fraction < 1:
            problems.append(f"eval_fraction={self.eval_fraction}: must be in [0, 1)")
        if self.full_finetune and self.sweep.ranks:
            problems.append("sweep.ranks is set but full_finetune: true trains no adapter: drop sweep.ranks")
        if self.mask_method not in ("auto", "generation", "prefix"):
            problems.append(f"mask_method={self.mask_method!r}: use auto, generation or prefix")
        if problems:
            raise ValueError("; ".join(problems))
