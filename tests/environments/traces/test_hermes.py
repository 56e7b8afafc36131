"""hermes's session export (JSONL, a session per line) read as the conversation hermes sends."""

from __future__ import annotations

import json
from pathlib import Path

from environments.harness_prompts import harness_request, harness_tools
from environments.traces import read_text, read_traces

EXPORT = Path(__file__).parent / "data" / "hermes-session-export.jsonl"


def test_the_export_sample_reads_as_one_tool_round_trip():
    (conv,), skipped = read_traces(EXPORT)
    assert skipped == []
    assert conv.harness == "hermes"
    assert [m["role"] for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert conv.messages[0]["content"].startswith("You are Hermes Agent")
    assert "system_from" not in conv.meta  # the export records hermes's own system prompt
    (call,) = conv.messages[2]["tool_calls"]
    assert call["id"] == "call_01b9e8cb" and call["function"]["name"] == "terminal"
    assert json.loads(call["function"]["arguments"]) == {"command": "echo FAKE_TOOL_OK"}
    assert conv.messages[4]["content"] == "DONE: saw 1 tool result(s). FAKE_FINAL_ANSWER"


def test_the_export_becomes_what_hermes_sent_on_the_wire():
    """The captured hermes request of the same run: compact re-serialized arguments, ``name`` on the tool
    message (the export itself keeps the model's ``{"command": "..."}`` with a space)."""
    (conv,), _ = read_traces(EXPORT)
    sent = harness_request("hermes")["messages"]
    assert list(conv.messages[1:4]) == sent[1:4]
    assert list(conv.tools) == harness_tools("hermes") and conv.meta["tools_from"] == "harness_prompts"
    assert conv.meta["tool_call_count"] == 1


def test_a_bad_line_is_counted_and_the_other_sessions_are_read():
    good = EXPORT.read_text().strip()
    missing = json.loads(good)
    del missing["messages"][2]["tool_call_id"]
    text = "\n".join([good, json.dumps(missing), good[:300], good])
    conversations, skipped = read_text(text, source="h.jsonl")
    assert [c.source for c in conversations] == ["h.jsonl#1", "h.jsonl#4"]
    assert sorted((s.source, s.reason) for s in skipped) == [
        ("h.jsonl#2", "missing_field:tool_call_id"),
        ("h.jsonl#3", "invalid_json"),
    ]


def test_a_dropped_empty_turn_merges_the_user_messages_it_leaves_adjacent():
    session = json.loads(EXPORT.read_text())
    rows = session["messages"]
    empty = {**rows[3], "content": "  ", "reasoning": "thinking only"}
    again = {**rows[0], "content": " and again \n"}
    session["messages"] = [rows[0], empty, again, *rows[1:]]
    (conv,), _ = read_text(json.dumps(session), source="h.jsonl", fill_from_harness=False)
    assert conv.messages[1] == {"role": "user", "content": "Run echo and tell me the result\n\nand again"}
    assert conv.meta["dropped"] == {"empty_assistant": 1} and conv.tools == ()
