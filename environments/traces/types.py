"""The one conversation type every trace reader produces and the SFT stage consumes.

A conversation is an OpenAI chat message list plus the tools that were declared to the model, so the
model's own chat template can render it (tools included) exactly as a harness would have sent it.
Readers never raise on a bad trace: they return it as a ``Skipped`` with the reason, and the caller counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class Conversation:
    """OpenAI-format ``messages`` (system/user/assistant/tool; assistant ``tool_calls`` with JSON-string
    ``arguments``; tool messages with ``tool_call_id``) and OpenAI-format ``tools``."""

    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...] = ()
    source: str = ""
    """Where it came from (``<file>#<line or index>``), for error messages and counts."""
    harness: str | None = None
    """``pi`` | ``opencode`` | ``hermes`` when the trace names its harness."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Anything else a reader knows (task id, model, ...); not rendered."""

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": list(self.messages),
            "tools": list(self.tools),
            "source": self.source,
            "harness": self.harness,
            "meta": self.meta,
        }


@dataclass(frozen=True, slots=True)
class Skipped:
    """A trace (or one record of it) that was not read, and why; the reader went on."""

    source: str
    reason: str
