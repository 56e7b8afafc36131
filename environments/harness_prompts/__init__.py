"""The real request shape of each harness: system prompt, tool list and one tool round trip.

Extracted from captured traffic by ``scripts/extract_harness_prompts.py``. Used wherever code needs to look
like what a harness really sends (tokenizer training text, benchmark workloads, demonstrations).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from environments.harnesses.registry import harness_names

HARNESSES: tuple[str, ...] = tuple(sorted(harness_names()))
"""The registered harnesses (``environments.harnesses.registry``), sorted; each has ``<name>.json`` here."""
_DIR = Path(__file__).resolve().parent


@cache
def _load(harness: str) -> dict[str, Any]:
    if harness not in HARNESSES:
        raise ValueError(f"unknown harness {harness!r}: expected one of {', '.join(HARNESSES)}")
    return json.loads((_DIR / f"{harness}.json").read_text())


def harness_request(harness: str) -> dict[str, Any]:
    """A fresh copy of the harness's captured two-turn chat-completions request body."""
    return copy.deepcopy(_load(harness)["request"])


def harness_tools(harness: str) -> list[dict[str, Any]]:
    """The OpenAI `tools` list the harness declares."""
    return harness_request(harness)["tools"]


def harness_system_prompt(harness: str) -> str:
    """The harness's system prompt text."""
    first = harness_request(harness)["messages"][0]
    assert first["role"] == "system", "captured requests start with the system prompt"
    content = first["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


__all__ = ["HARNESSES", "harness_request", "harness_system_prompt", "harness_tools"]
