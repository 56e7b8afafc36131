"""Agent traces: readers for the harnesses' own session formats, ATIF and plain OpenAI message lists,
all into one ``Conversation`` type for SFT."""

from environments.traces.types import Conversation, Skipped

__all__ = ["Conversation", "Skipped"]
