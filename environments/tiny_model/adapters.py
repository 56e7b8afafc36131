"""Random, non-zero LoRA adapters for the tiny model: stand-ins for trained checkpoints.

PEFT initialises B to zero, which would make every adapter decode exactly like the base; serving tests and
benchmarks need adapters that change the output, so both A and B are random here.
"""

from __future__ import annotations

from pathlib import Path


def random_lora_adapter(base: Path, out: Path, *, rank: int, seed: int, alpha: int | None = None) -> Path:
    """Save a PEFT LoRA adapter on all linear layers of ``base`` with seeded random weights to ``out``."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(base)
    peft_model = get_peft_model(
        model,
        LoraConfig(
            r=rank, lora_alpha=alpha or 2 * rank, target_modules="all-linear", init_lora_weights=False
        ),
    )
    peft_model.save_pretrained(out)
    return out
