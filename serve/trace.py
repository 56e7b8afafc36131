"""OpenAI chat messages as an ATIF trajectory, the format atif-scan reads.

system/developer and user messages become `system`/`user` steps; an assistant message becomes
an `agent` step with its tool calls, and the `tool` messages answering it become that step's
observation results (linked by `source_call_id`). `session_trace(messages, tool_call)`
appends the call under check as a last agent step, so a full-trace atif-scan run judges the
same call the incremental engine does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from atif_scan import Trace, parse_trace

SOURCES = {"system": "system", "developer": "system", "user": "user", "assistant": "agent"}


def message_text(content: object) -> str:
    """Text of an OpenAI message content: a string, or the text of its parts joined by lines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def tool_calls(message: Mapping[str, object]) -> list[Mapping[str, object]]:
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []


def call_parts(call: Mapping[str, object]) -> tuple[str, str, object]:
    """(id, function name, raw arguments) of an OpenAI tool call; "" where absent."""
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    name = function.get("name")
    call_id = call.get("id")
    return (
        call_id if isinstance(call_id, str) else "",
        name if isinstance(name, str) else "",
        function.get("arguments", ""),
    )


def _atif_call(call: Mapping[str, object]) -> dict[str, object]:
    call_id, name, arguments = call_parts(call)
    return {"tool_call_id": call_id, "function_name": name, "arguments": arguments}


def session_steps(messages: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    steps: list[dict[str, object]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if steps and steps[-1]["source"] == "agent":
                results = steps[-1].setdefault("observation", {"results": []})["results"]  # type: ignore[index]
                results.append(
                    {
                        "source_call_id": message.get("tool_call_id") or None,
                        "content": message_text(message.get("content")),
                    }
                )
            continue
        source = SOURCES.get(role) if isinstance(role, str) else None
        if source is None:
            continue
        step: dict[str, object] = {
            "step_id": len(steps) + 1,
            "source": source,
            "message": message_text(message.get("content")),
        }
        if source == "agent":
            step["tool_calls"] = [_atif_call(c) for c in tool_calls(message)]
        steps.append(step)
    return steps


def session_trace(
    messages: Sequence[Mapping[str, object]], tool_call: Mapping[str, object] | None = None
) -> Trace:
    """The session (plus the call under check, as the last agent step) as an atif-scan Trace."""
    steps = session_steps(messages)
    if tool_call is not None:
        steps.append(
            {
                "step_id": len(steps) + 1,
                "source": "agent",
                "message": "",
                "tool_calls": [_atif_call(tool_call)],
            }
        )
    return parse_trace({"schema_version": "ATIF-v1.4", "steps": steps})
