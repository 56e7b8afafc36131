"""GPU memory plan of a preset: what serving and each trainer hold, from the model's shape and the job's
settings, so a budget that cannot fit is seen before anything is loaded.

The arithmetic (bf16 weights, fp32 LoRA training state), per part:
- weights: parameters x 2 bytes (all experts of a mixture are resident);
- LoRA on every linear layer: rank x (inputs + outputs) per layer matrix; a trainer keeps its LoRA in fp32
  with gradients and Adam's two moments (16 bytes a parameter), serving keeps each resident adapter in bf16;
- activations of one packed micro-batch of ``token_budget`` tokens, after Korthikanti et al. (2022,
  "Reducing Activation Recomputation in Large Transformer Models") with fused attention: about
  34 x hidden bytes a token a layer; with gradient checkpointing each layer keeps only its input
  (2 x hidden bytes a token) and one layer is recomputed at a time;
- logits of the micro-batch: tokens x vocabulary x 6 bytes (bf16 logits and their fp32 log-softmax);
- serving's KV cache is what its share leaves after weights and adapters.
Figures are estimates (allocator slack, CUDA context and kernels' workspaces come on top; keep ~10% free).

``python -m jobs.memory [PRESET ...]`` prints the plan of the reference train presets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

GIB = 1024**3
H200_GIB = 139.0
"""What one H200 offers a process (141 GB nominal)."""
ACTIVATION_BYTES = 34
"""Bytes a token a layer per unit of hidden size, without recomputation (bf16, fused attention)."""


@dataclass(frozen=True, slots=True)
class ModelShape:
    """What the plan needs of a model (``config.json`` names in brackets)."""

    params: float
    """All parameters (every expert of a mixture)."""
    hidden: int  # [hidden_size]
    layers: int  # [num_hidden_layers]
    intermediate: int  # [intermediate_size], per expert for a mixture
    vocab: int  # [vocab_size]
    kv_dim: int  # [num_key_value_heads x head_dim]
    source: str = "config.json"

    @classmethod
    def from_config(cls, path: Path, params: float) -> ModelShape:
        cfg = json.loads(Path(path).read_text())
        cfg = cfg.get("text_config", cfg)
        heads = cfg["num_attention_heads"]
        head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
        return cls(
            params,
            cfg["hidden_size"],
            cfg["num_hidden_layers"],
            cfg.get("intermediate_size") or cfg.get("moe_intermediate_size") or 4 * cfg["hidden_size"],
            cfg["vocab_size"],
            cfg.get("num_key_value_heads", heads) * head_dim,
            source=str(path),
        )


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    serving_weights_gib: float
    serving_adapters_gib: float
    serving_kv_gib: float
    trainer_weights_gib: float
    trainer_lora_state_gib: float
    trainer_activations_gib: float
    trainer_logits_gib: float

    @property
    def trainer_gib(self) -> float:
        return (
            self.trainer_weights_gib
            + self.trainer_lora_state_gib
            + self.trainer_activations_gib
            + self.trainer_logits_gib
        )


def lora_params(shape: ModelShape, rank: int) -> float:
    """LoRA parameters on every linear layer of a dense block: q, o (hidden -> hidden), k, v (hidden ->
    kv), gate, up (hidden -> intermediate) and down."""
    h, kv, i = shape.hidden, shape.kv_dim, shape.intermediate
    per_layer = (h + h) * 2 + (h + kv) * 2 + (h + i) * 2 + (i + h)
    return rank * per_layer * shape.layers


def activations_bytes(shape: ModelShape, tokens: int, checkpointing: bool) -> float:
    full_layer = ACTIVATION_BYTES * shape.hidden * tokens
    if not checkpointing:
        return full_layer * shape.layers
    return 2 * shape.hidden * tokens * shape.layers + full_layer


def plan(
    shape: ModelShape,
    *,
    lora_rank: int,
    max_loras: int,
    token_budget: int,
    checkpointing: bool,
    serving_gib: float,
    shards: int = 1,
) -> MemoryPlan:
    """``shards``: the ranks an FSDP trainer spreads its weights and LoRA state over (the trainer's
    figures are then per rank; each rank packs its own micro-batch row, so activations do not shrink)."""
    weights = shape.params * 2
    lora = lora_params(shape, lora_rank)
    adapters = lora * 2 * max_loras
    return MemoryPlan(
        serving_weights_gib=weights / GIB,
        serving_adapters_gib=adapters / GIB,
        serving_kv_gib=max(0.0, serving_gib - (weights + adapters) / GIB),
        trainer_weights_gib=weights / shards / GIB,
        trainer_lora_state_gib=lora * 16 / shards / GIB,
        trainer_activations_gib=activations_bytes(shape, token_budget, checkpointing) / GIB,
        trainer_logits_gib=token_budget * shape.vocab * 6 / GIB,
    )


# Shapes of the reference presets' models, used until their config.json is at hand (the README says so).
ASSUMED: dict[str, ModelShape] = {
    "lfm3-1.7b": ModelShape(1.7e9, 2048, 28, 8192, 65536, 8 * 64, source="assumed"),
    "lfm2.5-24b-a2b": ModelShape(24e9, 2048, 40, 1536, 65536, 8 * 64, source="assumed"),
    "twil-8b": ModelShape(8e9, 4096, 36, 12288, 151936, 8 * 128, source="assumed"),
}
