"""pi's session JSONL and ``--mode json`` stdout read as the conversation pi sends (captured samples)."""

from __future__ import annotations

import json
from pathlib import Path

from environments.harness_prompts import harness_request, harness_system_prompt, harness_tools
from environments.traces import TraceFormat, read_text, read_traces

DATA = Path(__file__).parent / "data"
SESSION = DATA / "pi-session-sample.jsonl"
EVENTS = DATA / "pi-mode-json-stdout.jsonl"


def _roles(conversation) -> list[str]:
    return [m["role"] for m in conversation.messages]


def test_the_session_sample_reads_as_one_tool_round_trip():
    conversations, skipped = read_traces(SESSION)
    assert skipped == []
    (conv,) = conversations
    assert conv.harness == "pi" and conv.source == str(SESSION)
    assert _roles(conv) == ["system", "user", "assistant", "tool", "assistant"]
    assert conv.messages[1] == {"role": "user", "content": "Run echo and tell me the result"}
    (call,) = conv.messages[2]["tool_calls"]
    assert call["id"] == "call_97dd176e" and call["function"]["name"] == "bash"
    assert json.loads(call["function"]["arguments"]) == {"command": "echo FAKE_TOOL_OK"}
    assert conv.messages[3] == {"role": "tool", "tool_call_id": "call_97dd176e", "content": "FAKE_TOOL_OK\n"}
    assert conv.messages[4]["content"] == "DONE: saw 1 tool result(s). FAKE_FINAL_ANSWER"
    assert conv.meta["session_id"] == "01a2269a-d6a8-73cc-86e2-756988a85e84"


def test_the_session_renders_like_the_captured_pi_request():
    """Same shapes as pi's real second request: compact JSON arguments, its system prompt and tools."""
    (conv,), _ = read_traces(SESSION)
    sent = harness_request("pi")["messages"]
    assert conv.messages[0] == {"role": "system", "content": harness_system_prompt("pi")}
    assert (
        conv.messages[2]["tool_calls"][0]["function"]["arguments"]
        == sent[2]["tool_calls"][0]["function"]["arguments"]
    )
    assert conv.messages[3]["content"] == sent[3]["content"]
    assert list(conv.tools) == harness_tools("pi")
    assert conv.meta["tools_from"] == conv.meta["system_from"] == "harness_prompts"


def test_the_stdout_event_stream_reads_as_the_same_conversation():
    (conv,), skipped = read_traces(EVENTS)
    assert skipped == []
    assert _roles(conv) == ["system", "user", "assistant", "tool", "assistant"]
    assert conv.messages[2]["tool_calls"][0]["id"] == "call_eeb135b6"
    assert conv.messages[3]["tool_call_id"] == "call_eeb135b6"


def test_a_truncated_last_line_is_skipped_and_the_rest_is_read():
    lines = SESSION.read_text().splitlines()
    text = "\n".join([*lines[:-1], lines[-1][: len(lines[-1]) // 2]])
    (conv,), skipped = read_text(text, source="s.jsonl")
    assert [(s.source, s.reason) for s in skipped] == [(f"s.jsonl#{len(lines)}", "invalid_json")]
    assert _roles(conv) == ["system", "user", "assistant", "tool"]


def test_a_message_missing_its_field_skips_the_session_with_the_reason():
    lines = SESSION.read_text().splitlines()
    entry = json.loads(lines[5])
    del entry["message"]["toolCallId"]
    text = "\n".join([*lines[:5], json.dumps(entry), *lines[6:]])
    conversations, skipped = read_text(text, source="s.jsonl")
    assert conversations == []
    assert [s.reason for s in skipped] == ["missing_field:toolCallId"]


def _entry(id_: str, parent: str | None, message: dict) -> str:
    return json.dumps({"type": "message", "id": id_, "parentId": parent, "message": message})


def test_the_last_branch_is_read_errors_are_dropped_and_orphan_calls_get_pis_placeholder():
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}
    text = "\n".join(
        [
            json.dumps({"type": "session", "version": 3, "id": "s"}),
            _entry("a", None, {"role": "user", "content": "first"}),
            _entry("b", "a", {"role": "assistant", "content": [{"type": "text", "text": "abandoned"}]}),
            _entry(
                "c", "a", {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}, call]}
            ),
            _entry("d", "c", {"role": "assistant", "content": [], "stopReason": "error"}),
            _entry("e", "d", {"role": "assistant", "content": [{"type": "text", "text": "done"}]}),
        ]
    )
    (conv,), skipped = read_text(text, source="s", format=TraceFormat.PI_SESSION, fill_from_harness=False)
    assert skipped == [] and conv.tools == ()
    assert [(m["role"], m["content"]) for m in conv.messages] == [
        ("user", "first"),
        ("assistant", ""),
        ("tool", "No result provided"),
        ("assistant", "done"),
    ]
    assert conv.meta["dropped"] == {"errored_assistant": 1}
    assert conv.meta["reasoning"] == [{"message": 1, "text": "hm"}]


def test_a_compacted_session_is_skipped_not_misread():
    text = "\n".join(
        [
            _entry("a", None, {"role": "user", "content": "hi"}),
            json.dumps({"type": "compaction", "id": "b", "parentId": "a", "summary": "x"}),
            _entry("c", "b", {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}),
        ]
    )
    assert read_text(text, source="s")[1][0].reason == "pi_compaction_unsupported"
