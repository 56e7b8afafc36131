"""pi traces: its session JSONL and its ``--mode json`` stdout event stream.

A session file (``docs/session-format.md`` in the pi package, v3) is a header line and a tree of entries
linked by ``id``/``parentId``; the conversation is the path from the last entry (pi's leaf on load) back
to the root. The event stream holds the same messages as ``message_end`` events, in order; a stream cut
off mid-run yields the messages that ended.

pi's messages become OpenAI messages the way pi's own request builder (pi-ai ``convertMessages`` and
``transformMessages``) does it:

- user text parts joined as-is; assistant text blocks that are not blank joined as-is; tool-result text
  parts joined by newlines (``"(see attached image)"`` when a result holds only images);
- tool-call arguments serialized compactly, as ``JSON.stringify`` does;
- assistant messages that ended in ``error``/``aborted`` are dropped (pi never sends them back), and so are
  assistant messages with neither text nor calls; a call left without a result before the next
  assistant or user message gets pi's synthetic ``"No result provided"`` result;
- extension ``custom`` messages become user messages; ``bashExecution`` (user ``!`` commands) are dropped.

Thinking blocks are kept in ``meta["reasoning"]`` (pi sends them back only for reasoning models with a
signature); usage, timestamps and images are dropped. Limits: a path through a ``compaction`` or
``branch_summary`` entry is not read (``pi_compaction_unsupported``/``pi_branch_summary_unsupported``):
the summary text pi sends in their place is not recorded in the file. pi's session does not record its
system prompt or tools: they come from the captured pi request (``harness_prompts/pi.json``).
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

EVENT_TYPES = frozenset(
    {
        "agent_start",
        "agent_end",
        "turn_start",
        "turn_end",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
    }
)
SESSION_TYPES = frozenset(
    {"session", "message", "model_change", "thinking_level_change", "compaction", "branch_summary"}
)
NO_RESULT = "No result provided"


def _path_to_leaf(entries: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    by_id: dict[str, Mapping[str, Any]] = {}
    leaf = None
    for entry in entries:
        if entry.get("type") != "session" and isinstance(entry.get("id"), str):
            by_id[entry["id"]] = entry
            leaf = entry["id"]
    path: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    while leaf is not None:
        entry = by_id.get(leaf)
        if entry is None or leaf in seen:
            raise TraceError("pi_broken_parent_chain")
        seen.add(leaf)
        path.append(entry)
        parent = entry.get("parentId")
        leaf = parent if isinstance(parent, str) else None
    return path[::-1]


def _agent_messages(path: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    messages: list[Mapping[str, Any]] = []
    for entry in path:
        kind = entry.get("type")
        if kind == "message":
            messages.append(field(entry, "message", Mapping))
        elif kind == "custom_message":
            messages.append({"role": "custom", "content": entry.get("content")})
        elif kind in ("compaction", "branch_summary"):
            raise TraceError(f"pi_{kind}_unsupported")
    return messages


def _convert(messages: Sequence[Mapping[str, Any]], draft: Draft) -> str | None:
    """Append pi's messages to ``draft`` as OpenAI messages; the last assistant's model name."""
    model = None
    pending: list[str] = []  # calls of the last assistant message still without a result

    def close_pending() -> None:
        for call_id in pending:
            draft.add(tool_result(call_id, NO_RESULT))
        pending.clear()

    for message in messages:
        role = message.get("role")
        if role in ("user", "custom"):
            close_pending()
            content = message.get("content")
            if isinstance(content, list) and not content:
                continue
            draft.add(user(text_of(content, "", draft.dropped)))
        elif role == "assistant":
            close_pending()
            if message.get("stopReason") in ("error", "aborted"):
                draft.dropped["errored_assistant"] += 1
                continue
            blocks = [b for b in field(message, "content", list) if isinstance(b, Mapping)]
            text = "".join(
                b["text"] for b in blocks if b.get("type") == "text" and str(b.get("text", "")).strip()
            )
            thinking = "\n".join(
                b["thinking"]
                for b in blocks
                if b.get("type") == "thinking" and str(b.get("thinking", "")).strip()
            )
            calls = [
                tool_call(field(b, "id", str), field(b, "name", str), json_args(b.get("arguments")))
                for b in blocks
                if b.get("type") == "toolCall"
            ]
            if not text and not calls:
                draft.dropped["empty_assistant"] += 1
                continue
            draft.add(assistant(text, calls), thinking)
            pending = [c["id"] for c in calls]
            model = message.get("model") if isinstance(message.get("model"), str) else model
        elif role == "toolResult":
            call_id = field(message, "toolCallId", str)
            parts = message.get("content")
            text = text_of(parts, "\n", draft.dropped)
            if not text and isinstance(parts, list) and parts:
                text = "(see attached image)"
            draft.add(tool_result(call_id, text))
            if call_id in pending:
                pending.remove(call_id)
        elif role == "bashExecution":
            draft.dropped["bash_execution"] += 1
        elif role in ("branchSummary", "compactionSummary"):
            raise TraceError("pi_compaction_unsupported")
        else:
            raise TraceError("pi_unknown_role")
    return model


def _header_meta(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    header = next((e for e in entries if e.get("type") == "session"), {})
    return {"session_id": header.get("id"), "cwd": header.get("cwd")}


def read_pi_session(
    entries: Sequence[Mapping[str, Any]], *, source: str, fill_from_harness: bool = True
) -> Conversation:
    """One pi session file (its lines, parsed) as a conversation."""
    draft = Draft()
    model = _convert(_agent_messages(_path_to_leaf(entries)), draft)
    meta = {**_header_meta(entries), "model": model}
    return draft.finish(source=source, harness="pi", meta=meta, fill_from_harness=fill_from_harness)


def read_pi_events(
    entries: Sequence[Mapping[str, Any]], *, source: str, fill_from_harness: bool = True
) -> Conversation:
    """pi's ``--mode json`` stdout (its lines, parsed) as a conversation: the ``message_end`` events."""
    messages = [
        e["message"]
        for e in entries
        if e.get("type") == "message_end" and isinstance(e.get("message"), Mapping)
    ]
    draft = Draft()
    model = _convert(messages, draft)
    meta = {**_header_meta(entries), "model": model}
    return draft.finish(source=source, harness="pi", meta=meta, fill_from_harness=fill_from_harness)
