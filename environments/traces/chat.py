"""Plain OpenAI chat records: ``{"messages": [...], "tools": [...]}`` (one per JSONL line).

Messages are normalized to the shape every reader produces (``messages.py``): content parts joined into
a string (media dropped and counted), ``developer`` read as ``system``, tool-call arguments as JSON
strings, and only the keys a chat template reads (``role``, ``content``, ``tool_calls``,
``tool_call_id``, ``name``). A message's ``reasoning_content`` goes to ``meta["reasoning"]``. Roles are
kept as written, so an unknown one is rejected by validation. A record may name its ``harness``
(``pi``/``opencode``/``hermes``): its captured tools and system prompt then fill in what it lacks; its own
``meta`` object, if any, is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from environments.traces.messages import Draft, TraceError, field, json_args, text_of, tool_call
from environments.traces.types import Conversation


def _message(raw: object, draft: Draft) -> tuple[dict[str, Any], str]:
    if not isinstance(raw, Mapping):
        raise TraceError("invalid_message")
    role = field(raw, "role", str)
    message: dict[str, Any] = {
        "role": "system" if role == "developer" else role,
        "content": text_of(raw.get("content"), "", draft.dropped),
    }
    calls = raw.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise TraceError("invalid_tool_call")
        message["tool_calls"] = []
        for call in calls:
            function = field(call, "function", Mapping) if isinstance(call, Mapping) else None
            if function is None:
                raise TraceError("invalid_tool_call")
            message["tool_calls"].append(
                tool_call(
                    field(call, "id", str), field(function, "name", str), json_args(function.get("arguments"))
                )
            )
    for key in ("tool_call_id", "name"):
        if isinstance(raw.get(key), str):
            message[key] = raw[key]
    reasoning = raw.get("reasoning_content")
    return message, reasoning if isinstance(reasoning, str) else ""


def read_chat(record: Mapping[str, Any], *, source: str, fill_from_harness: bool = True) -> Conversation:
    """One ``{"messages", "tools"}`` record as a conversation."""
    draft = Draft()
    for raw in field(record, "messages", list):
        draft.add(*_message(raw, draft))
    tools = record.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, Mapping) for t in tools):
        raise TraceError("invalid_tools")
    harness = record.get("harness")
    meta = record.get("meta")
    return draft.finish(
        source=source,
        harness=harness if isinstance(harness, str) else None,
        tools=tools,
        meta=dict(meta) if isinstance(meta, Mapping) else None,
        fill_from_harness=fill_from_harness,
    )
