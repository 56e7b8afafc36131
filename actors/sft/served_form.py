"""A request's messages and tools in the form the serving engine hands its chat template.

SFT must render a conversation into the very text the model will read when vLLM serves it, or the adapter
learns one prompt and is served another. Two things change between the OpenAI request a harness sends and
what vLLM 0.32's template sees (``renderers/chat_utils.py::_postprocess_messages`` and the request model
``ChatCompletionToolsParam``):

- a tool call's ``arguments`` JSON string is parsed into an object, so the template's ``tojson`` writes it
  (``{"command": "ls"}``), whatever spacing the harness sent it back with (pi and opencode send
  ``{"command":"ls"}``);
- each declared tool is rebuilt as ``{"type", "function": {"name", "description", "parameters"[, "strict"]}}``
  in that key order, other keys dropped and ``parameters`` kept as sent.

Measured on SmolLM2-135M: an adapter trained with the tools block in another key order wrote its answer in
8 of 8 held-out sessions prompted in the training order and in 0 of 8 prompted in the served one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


class ServedFormError(ValueError):
    """A tool or tool call the server would refuse; the message names which."""


def served_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """``tool`` as the server's request model re-serializes it."""
    function = tool.get("function") if isinstance(tool, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise ServedFormError("a declared tool has no function name")
    rebuilt: dict[str, Any] = {
        "name": function["name"],
        "description": function.get("description"),
        "parameters": function.get("parameters"),
    }
    if function.get("strict") is not None:
        rebuilt["strict"] = function["strict"]
    return {"type": "function", "function": rebuilt}


def served_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [served_tool(tool) for tool in tools]


def served_arguments(arguments: object) -> dict[str, Any]:
    """A tool call's arguments as the object the template receives. Stricter than the server, which
    renders empty or broken arguments as ``{}``: SFT does not teach a call it cannot read."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            raise ServedFormError("a tool call's arguments are not JSON") from None
    if not isinstance(arguments, dict):
        raise ServedFormError("a tool call's arguments are not a JSON object")
    return arguments


def served_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` whose tool calls carry parsed arguments."""
    out = dict(message)
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = []
        for call in calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping) or not function.get("name"):
                raise ServedFormError("a tool call has no function name")
            parsed = {**function, "arguments": served_arguments(function.get("arguments"))}
            out["tool_calls"].append({**call, "function": parsed})
    return out
