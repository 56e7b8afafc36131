"""Agent traces: readers for the harnesses' own session formats, ATIF and plain OpenAI message lists,
all into one ``Conversation`` type for SFT.

``read_traces(path)`` is the entry point (formats and detection in ``read.py``); every conversation it
returns passed ``validate_conversation``, and everything it could not read comes back as ``Skipped``.
"""

from environments.traces.read import TraceFormat, detect_format, read_text, read_traces
from environments.traces.types import Conversation, Skipped
from environments.traces.validate import conversation_problem, validate_conversation

__all__ = [
    "Conversation",
    "Skipped",
    "TraceFormat",
    "conversation_problem",
    "detect_format",
    "read_text",
    "read_traces",
    "validate_conversation",
]
