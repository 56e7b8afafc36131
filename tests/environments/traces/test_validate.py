"""What a chat template cannot render is rejected with a fixed reason."""

from __future__ import annotations

import pytest

from environments.traces import Conversation, Skipped, conversation_problem, validate_conversation

USER = {"role": "user", "content": "hi"}
SYSTEM = {"role": "system", "content": "be brief"}
DONE = {"role": "assistant", "content": "done"}


def _calls(*ids: str, arguments: str = "{}") -> dict:
    calls = [{"id": i, "type": "function", "function": {"name": "bash", "arguments": arguments}} for i in ids]
    return {"role": "assistant", "content": "", "tool_calls": calls}


def _tool(call_id: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def test_a_renderable_conversation_passes_unchanged():
    conv = Conversation((SYSTEM, USER, _calls("a", "b"), _tool("b"), _tool("a"), _calls("c"), USER, DONE))
    assert conversation_problem(conv) is None
    assert validate_conversation(conv) is conv


@pytest.mark.parametrize(
    ("messages", "reason"),
    [
        ((), "no_messages"),
        ((USER, {"role": "critic", "content": "x"}, DONE), "unknown_role"),
        ((USER, {"role": "assistant", "content": None}), "content_not_string"),
        ((USER, SYSTEM, DONE), "system_not_first"),
        ((USER, {"role": "assistant", "content": ""}), "empty_assistant"),
        ((USER, _tool("a"), DONE), "tool_without_call"),
        ((USER, _calls("a"), _tool("b")), "tool_result_without_matching_call"),
        ((USER, _calls("a"), _tool("a"), _tool("a")), "tool_result_without_matching_call"),
        ((USER, _calls("a"), USER, _tool("a")), "tool_without_call"),
        ((USER, _calls("a", "a")), "duplicate_tool_call_id"),
        ((USER, _calls("a", arguments='{"command": "l')), "tool_call_arguments_not_json_object"),
        ((USER, _calls("a", arguments="[1]")), "tool_call_arguments_not_json_object"),
        ((USER, {"role": "assistant", "content": "", "tool_calls": [{"id": "a"}]}), "invalid_tool_call"),
        ((SYSTEM, USER), "no_assistant_turn"),
        ((SYSTEM, DONE), "no_user_turn"),
    ],
)
def test_what_a_template_cannot_render_is_skipped_with_the_reason(messages: tuple, reason: str):
    assert validate_conversation(Conversation(messages, source="x#3")) == Skipped("x#3", reason)


def test_tools_must_be_openai_functions():
    conv = Conversation((USER, DONE), tools=({"type": "function", "function": {"description": "no name"}},))
    assert conversation_problem(conv) == "invalid_tools"
