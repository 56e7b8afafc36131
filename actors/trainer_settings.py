"""The trainer's attention and checkpointing settings and their check: pure, so the train job's config
checks them at load without importing torch, and the trainer and ``trl_cpu`` share one list."""

from __future__ import annotations

ATTENTION = ("sdpa", "kernels")
"""Packed batches' variable-length attention on GPU (``actors.trl_cpu.use_packed_attention``)."""
CHECKPOINTING = ("on", "off", "auto")


def setting_problems(attention: str, gradient_checkpointing: str) -> list[str]:
    """What is wrong with a trainer's attention and checkpointing settings, each naming the choices
    (checked by the trainer's config and, at load, by the train job's)."""
    problems = []
    if attention not in ATTENTION:
        problems.append(f"attention={attention!r}: use sdpa (no hub needed) or kernels (hub-fetched)")
    if gradient_checkpointing not in CHECKPOINTING:
        problems.append(f"gradient_checkpointing={gradient_checkpointing!r}: must be on, off or auto")
    return problems
