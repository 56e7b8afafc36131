"""Merge a LoRA adapter into its base model (PEFT ``merge_and_unload``): the one-model-per-checkpoint way
of serving that multi-LoRA serving is measured against."""

from __future__ import annotations

from pathlib import Path


def merge_adapter(base: str | Path, adapter: str | Path, out: str | Path) -> Path:
    """Write base + adapter as one model (weights and tokenizer) to ``out``; returns ``out``."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base, dtype="auto")
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    merged.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return Path(out)
