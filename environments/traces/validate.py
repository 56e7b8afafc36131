"""Which conversations a chat template can render, as fixed reason codes.

``conversation_problem`` returns the first problem or ``None``. The rules are the ones chat templates
(and the OpenAI API) enforce: known roles only, a system message only first, string content, an assistant
message with content or tool calls, well-formed tool calls (an id, a name, arguments that are a JSON
object string, ids unique within the message), each tool message answering a not-yet-answered call of
the closest assistant message before it, at least one user and one assistant message, and OpenAI
function tools. An assistant call left without a result is allowed (the trace may end there).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from environments.traces.types import ROLES, Conversation, Skipped


def _call_problem(call: object, seen: set[str]) -> str | None:
    if not isinstance(call, Mapping) or call.get("type", "function") != "function":
        return "invalid_tool_call"
    function = call.get("function")
    call_id = call.get("id")
    if not isinstance(function, Mapping) or not isinstance(call_id, str) or not call_id:
        return "invalid_tool_call"
    if not isinstance(function.get("name"), str) or not function["name"]:
        return "invalid_tool_call"
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return "tool_call_arguments_not_json_object"
    if call_id in seen:
        return "duplicate_tool_call_id"
    seen.add(call_id)
    return None


def _tools_problem(tools: tuple[dict[str, Any], ...]) -> str | None:
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if tool.get("type") != "function" or not isinstance(function, Mapping):
            return "invalid_tools"
        if not isinstance(function.get("name"), str) or not function["name"]:
            return "invalid_tools"
    return None


def conversation_problem(conversation: Conversation) -> str | None:
    """The first reason a chat template could not render ``conversation``, or ``None``."""
    messages = conversation.messages
    if not messages:
        return "no_messages"
    open_calls: set[str] | None = None  # ids of the last assistant's calls not yet answered
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in ROLES:
            return "unknown_role"
        if not isinstance(message.get("content"), str):
            return "content_not_string"
        if role == "system" and index != 0:
            return "system_not_first"
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                return "invalid_tool_call"
            seen: set[str] = set()
            for call in calls:
                problem = _call_problem(call, seen)
                if problem:
                    return problem
            if not calls and not message["content"]:
                return "empty_assistant"
            open_calls = seen
        elif role == "tool":
            if open_calls is None:
                return "tool_without_call"
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in open_calls:
                return "tool_result_without_matching_call"
            open_calls.discard(call_id)
        else:
            open_calls = None
    roles = {m["role"] for m in messages}
    if "assistant" not in roles:
        return "no_assistant_turn"
    if "user" not in roles:
        return "no_user_turn"
    return _tools_problem(conversation.tools)


def validate_conversation(conversation: Conversation) -> Conversation | Skipped:
    """``conversation`` itself when a chat template can render it, else a ``Skipped`` with the reason."""
    problem = conversation_problem(conversation)
    return conversation if problem is None else Skipped(conversation.source, problem)
