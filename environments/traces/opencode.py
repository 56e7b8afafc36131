"""opencode traces: ``opencode export <sessionID>`` JSON and its ``run --format json`` stdout events.

An export is ``{"info": session, "messages": [{"info": message, "parts": [...]}]}``. Each assistant
*step* (the parts after a ``step-start``) is one model call: its ``text`` parts joined become the
content, its ``tool`` parts the calls (``callID``, ``tool``, ``state.input``), and each call's
``state`` its result, in the shape opencode sends it back: ``output`` when completed, ``error`` when it
failed, ``"[Tool execution was interrupted]"`` when it never finished. User ``text`` parts (not
``ignored`` ones) are joined as-is; ``file`` parts are dropped and counted.

The ``--format json`` stream (``step_start``, ``text``, ``tool_use``, ``step_finish``, ``error``
events, each with a ``part``) holds the same assistant steps but not the user's prompt: pass
``prompt=`` (the launcher knows it) or the conversation has no user turn and is skipped.

``reasoning`` parts are kept in ``meta["reasoning"]``; tokens, cost, timestamps and titles are dropped.
Limit: a session holding a compaction summary (an assistant message with ``summary: true``) is not read
(``opencode_compaction_unsupported``). opencode records neither its system prompt nor its tools: they
come from the captured opencode request (``harness_prompts/opencode.json``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from environments.traces.messages import (
    Draft,
    TraceError,
    assistant,
    field,
    json_args,
    text_of,
    tool_call,
    tool_result,
    user,
)
from environments.traces.types import Conversation

EVENT_TYPES = frozenset({"step_start", "step_finish", "text", "tool_use", "reasoning", "error"})
INTERRUPTED = "[Tool execution was interrupted]"


def _result_text(state: Mapping[str, Any]) -> str:
    status = state.get("status")
    if status == "completed":
        time = state.get("time")
        if isinstance(time, Mapping) and time.get("compacted"):
            return "[Old tool result content cleared]"
        return text_of(state.get("output"))
    if status == "error":
        return text_of(state.get("error"))
    return INTERRUPTED


class _Steps:
    """Assistant steps from a sequence of parts: text, calls and their results per step."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []

    def part(self, part: Mapping[str, Any]) -> None:
        kind = part.get("type")
        if kind == "step-start":
            self.flush()
        elif kind == "text" and not part.get("ignored"):
            self.text.append(text_of(part.get("text")))
        elif kind == "reasoning":
            self.reasoning.append(text_of(part.get("text")))
        elif kind == "tool":
            call_id = field(part, "callID", str)
            state = field(part, "state", Mapping)
            self.calls.append(tool_call(call_id, field(part, "tool", str), json_args(state.get("input"))))
            self.results.append(tool_result(call_id, _result_text(state)))

    def flush(self) -> None:
        text = "".join(self.text)
        if text or self.calls:
            self.draft.add(assistant(text, self.calls), "\n".join(r for r in self.reasoning if r))
            for result in self.results:
                self.draft.add(result)
        elif self.reasoning:
            self.draft.dropped["empty_assistant"] += 1
        self.text, self.reasoning, self.calls, self.results = [], [], [], []


def read_opencode_export(
    export: Mapping[str, Any], *, source: str, fill_from_harness: bool = True
) -> Conversation:
    """One ``opencode export`` JSON document as a conversation."""
    info = field(export, "info", Mapping)
    draft = Draft()
    model = None
    for message in field(export, "messages", list):
        if not isinstance(message, Mapping):
            raise TraceError("invalid_message")
        minfo = field(message, "info", Mapping)
        parts = [p for p in field(message, "parts", list) if isinstance(p, Mapping)]
        role = minfo.get("role")
        if role == "user":
            texts = [
                text_of(p.get("text")) for p in parts if p.get("type") == "text" and not p.get("ignored")
            ]
            files = sum(p.get("type") == "file" for p in parts)
            if files:
                draft.dropped["file"] += files
            if texts:
                draft.add(user("".join(texts)))
        elif role == "assistant":
            if minfo.get("summary"):
                raise TraceError("opencode_compaction_unsupported")
            steps = _Steps(draft)
            for part in parts:
                steps.part(part)
            steps.flush()
            model = minfo.get("modelID") if isinstance(minfo.get("modelID"), str) else model
        else:
            raise TraceError("opencode_unknown_role")
    meta = {"session_id": info.get("id"), "cwd": info.get("directory"), "model": model}
    return draft.finish(source=source, harness="opencode", meta=meta, fill_from_harness=fill_from_harness)


def read_opencode_events(
    events: Sequence[Mapping[str, Any]],
    *,
    source: str,
    prompt: str | None = None,
    fill_from_harness: bool = True,
) -> Conversation:
    """opencode's ``--format json`` stdout (its lines, parsed) as a conversation; ``prompt`` is the user's
    message, which the stream does not carry."""
    draft = Draft()
    if prompt is not None:
        draft.add(user(prompt))
    steps = _Steps(draft)
    session = None
    for event in events:
        part = event.get("part")
        session = event.get("sessionID") if isinstance(event.get("sessionID"), str) else session
        if event.get("type") == "error":
            draft.dropped["error_event"] += 1
        elif isinstance(part, Mapping):
            steps.part(part)
    steps.flush()
    meta = {"session_id": session}
    return draft.finish(source=source, harness="opencode", meta=meta, fill_from_harness=fill_from_harness)
