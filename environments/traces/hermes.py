"""hermes traces: ``hermes sessions export --format jsonl``, one session per line.

A session line holds its ``system_prompt`` and ``messages`` (rows of hermes's ``messages`` table):
``role``, ``content``, ``tool_calls`` (OpenAI calls with JSON-string arguments, plus hermes's own
``call_id``/``response_item_id``, dropped), ``tool_call_id`` and ``tool_name``. They are turned into
what hermes puts on the wire (``agent/conversation_loop.py`` in hermes-agent 0.19): every content
stripped, tool-call arguments re-serialized compactly with sorted keys (the export keeps the model's own
string), assistant turns with neither text nor calls dropped and the user messages this leaves adjacent
merged with a blank line; the tool message keeps ``name`` (hermes sends it). ``api_content``, when set,
is taken over ``content`` as what went to the API.

``reasoning``/``reasoning_content`` are kept in ``meta["reasoning"]``; token counts, costs and timestamps
are dropped (the session's ``model``, ``cwd``, ``end_reason`` and ``tool_call_count`` go to ``meta``).
Rows marked inactive (``active: 0``, e.g. rewound) and rows of other roles are dropped and counted.
Limit: a session with compacted rows (``compacted: 1``) is not read (``hermes_compaction_unsupported``).
The export has no tool declarations: they come from the captured hermes request
(``harness_prompts/hermes.json``, hermes run with ``-t terminal,file``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from environments.traces.messages import (
    Draft,
    TraceError,
    assistant,
    field,
    system,
    text_of,
    tool_call,
    tool_result,
    user,
)
from environments.traces.types import Conversation


def _call(call: object) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise TraceError("invalid_tool_call")
    function = field(call, "function", Mapping)
    call_id = call.get("id") or call.get("call_id")
    if not isinstance(call_id, str):
        raise TraceError("missing_field:id")
    return tool_call(call_id, field(function, "name", str), wire_arguments(function.get("arguments")))


def wire_arguments(arguments: object) -> str:
    """Arguments as hermes sends them: compact JSON with sorted keys, or as written if not JSON."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(arguments, separators=(",", ":"), sort_keys=True)


def read_hermes_session(
    session: Mapping[str, Any], *, source: str, fill_from_harness: bool = True
) -> Conversation:
    """One line of a hermes session export as a conversation."""
    rows = field(session, "messages", list)
    draft = Draft()
    prompt = session.get("system_prompt")
    if isinstance(prompt, str) and prompt.strip():
        draft.add(system(prompt.strip()))
    for row in rows:
        if not isinstance(row, Mapping):
            raise TraceError("invalid_message")
        if row.get("compacted"):
            raise TraceError("hermes_compaction_unsupported")
        if row.get("active", 1) in (0, False):
            draft.dropped["inactive"] += 1
            continue
        role = row.get("role")
        api_content = row.get("api_content")
        content = api_content if isinstance(api_content, str) else row.get("content")
        text = text_of(content, "", draft.dropped).strip()
        if role == "user":
            last = draft.messages[-1] if draft.messages else None
            if last is not None and last["role"] == "user" and draft.dropped["empty_assistant"]:
                last["content"] += "\n\n" + text if last["content"] and text else text
            else:
                draft.add(user(text))
        elif role == "system":
            draft.add(system(text))
        elif role == "assistant":
            calls = [_call(c) for c in row.get("tool_calls") or []]
            reasoning = row.get("reasoning_content") or row.get("reasoning")
            if not text and not calls:
                draft.dropped["empty_assistant"] += 1
                continue
            draft.add(assistant(text, calls), reasoning if isinstance(reasoning, str) else "")
        elif role == "tool":
            name = row.get("tool_name")
            draft.add(
                tool_result(field(row, "tool_call_id", str), text, name if isinstance(name, str) else None)
            )
        else:
            draft.dropped["other_role"] += 1
    meta = {
        "session_id": session.get("id"),
        "model": session.get("model"),
        "cwd": session.get("cwd"),
        "end_reason": session.get("end_reason"),
        "tool_call_count": session.get("tool_call_count"),
    }
    return draft.finish(source=source, harness="hermes", meta=meta, fill_from_harness=fill_from_harness)
