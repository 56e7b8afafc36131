"""Supervised fine-tuning on agent traces, as a library: the run's config (``config``), exact assistant
masks (``data``), one run with TRL (``train``), the sweep as Ray tasks (``sweep``), and the tiny agent's
recipe built with them (``tiny_agent``). ``jobs.sft`` is the command line; nothing here imports ``jobs``.

Heavy modules (torch, TRL, Ray) are imported where they are used, never here.
"""

from actors.sft.config import LoraSection, SFTConfig, SweepSection

__all__ = ["LoraSection", "SFTConfig", "SweepSection"]
