"""opencode's session export and ``--format json`` stdout read as the conversation opencode sends."""

from __future__ import annotations

import json
from pathlib import Path

from environments.harness_prompts import harness_request, harness_tools
from environments.traces import read_text, read_traces

DATA = Path(__file__).parent / "data"
EXPORT = DATA / "oc-session-export.json"
EVENTS = DATA / "oc-format-json-stdout.jsonl"


def test_the_export_sample_reads_as_one_tool_round_trip():
    (conv,), skipped = read_traces(EXPORT)
    assert skipped == []
    assert conv.harness == "opencode"
    assert [m["role"] for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant"]
    # opencode's quirk: a prompt given as an argument reached the model wrapped in quotes
    assert conv.messages[1]["content"] == '"Run echo and tell me the result"'
    (call,) = conv.messages[2]["tool_calls"]
    assert (call["id"], call["function"]["name"]) == ("call_5c4f937b", "bash")
    assert (
        call["function"]["arguments"]
        == harness_request("opencode")["messages"][2]["tool_calls"][0]["function"]["arguments"]
    )
    assert conv.messages[3] == {"role": "tool", "tool_call_id": "call_5c4f937b", "content": "FAKE_TOOL_OK\n"}
    assert conv.messages[4] == {
        "role": "assistant",
        "content": "DONE: saw 1 tool result(s). FAKE_FINAL_ANSWER",
    }
    assert list(conv.tools) == harness_tools("opencode")
    assert conv.meta["session_id"] == "ses_dd963b2f1fferbjC8FQEhJdzUP"


def test_the_stdout_stream_needs_the_prompt_it_does_not_record():
    conversations, skipped = read_traces(EVENTS)
    assert conversations == [] and [s.reason for s in skipped] == ["no_user_turn"]
    (conv,), _ = read_traces(EVENTS, prompt="Run echo and tell me the result")
    assert [m["role"] for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert conv.messages[3]["tool_call_id"] == conv.messages[2]["tool_calls"][0]["id"] == "call_5c4f937b"


def test_failed_and_unfinished_tools_get_the_results_opencode_sends():
    export = json.loads(EXPORT.read_text())
    parts = export["messages"][1]["parts"]
    failed = json.loads(json.dumps(parts[1]))
    failed.update(callID="c2", state={"status": "error", "input": {"command": "x"}, "error": "boom"})
    running = json.loads(json.dumps(parts[1]))
    running.update(callID="c3", state={"status": "running", "input": {"command": "y"}})
    parts[2:2] = [failed, running]
    (conv,), _ = read_text(json.dumps(export), source="e.json")
    tools = [(m["tool_call_id"], m["content"]) for m in conv.messages if m["role"] == "tool"]
    assert tools == [
        ("call_5c4f937b", "FAKE_TOOL_OK\n"),
        ("c2", "boom"),
        ("c3", "[Tool execution was interrupted]"),
    ]


def test_a_truncated_export_is_one_skip_not_one_per_line():
    text = EXPORT.read_text()
    conversations, skipped = read_text(text[: len(text) // 2], source="e.json")
    assert conversations == [] and [(s.source, s.reason) for s in skipped] == [("e.json", "invalid_json")]


def test_an_export_missing_a_field_is_skipped_with_the_field_name():
    export = json.loads(EXPORT.read_text())
    del export["messages"][1]["parts"][1]["callID"]
    assert read_text(json.dumps(export), source="e.json")[1][0].reason == "missing_field:callID"
