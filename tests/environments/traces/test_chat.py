"""Plain OpenAI chat records (``{"messages", "tools"}`` per line) normalized to one message shape."""

from __future__ import annotations

import json

from environments.harness_prompts import harness_system_prompt, harness_tools
from environments.traces import TraceFormat, read_text

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
RECORD = {
    "messages": [
        {"role": "developer", "content": "Be brief."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "list"}, {"type": "image_url", "image_url": {}}],
        },
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "ls it",
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "1", "name": "bash", "content": "a\n"},
        {"role": "assistant", "content": "a"},
    ],
    "tools": TOOLS,
}


def test_a_record_is_normalized():
    (conv,), skipped = read_text(json.dumps(RECORD), source="c.jsonl")
    assert skipped == []
    assert list(conv.messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "list"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": "a\n", "name": "bash"},
        {"role": "assistant", "content": "a"},
    ]
    assert conv.tools == tuple(TOOLS) and conv.harness is None
    assert conv.meta == {"dropped": {"image_url": 1}, "reasoning": [{"message": 2, "text": "ls it"}]}


def test_a_record_naming_its_harness_gets_that_harness_s_tools_and_prompt():
    record = {"harness": "opencode", "messages": RECORD["messages"][1:]}
    (conv,), _ = read_text(json.dumps(record), source="c", format=TraceFormat.CHAT)
    assert conv.messages[0] == {"role": "system", "content": harness_system_prompt("opencode")}
    assert list(conv.tools) == harness_tools("opencode") and conv.harness == "opencode"


def test_messages_jsonl_and_openai_name_the_chat_format():
    assert TraceFormat("messages-jsonl") is TraceFormat("openai") is TraceFormat.CHAT


def test_each_bad_line_is_skipped_with_its_reason_and_the_rest_read():
    good = json.dumps(RECORD)
    unknown_role = {**RECORD, "messages": [*RECORD["messages"], {"role": "critic", "content": "meh"}]}
    orphan = {**RECORD, "messages": [RECORD["messages"][1], RECORD["messages"][3], RECORD["messages"][4]]}
    no_role = {**RECORD, "messages": [{"content": "hi"}]}
    lines = [
        good,
        json.dumps(unknown_role),
        json.dumps(orphan),
        json.dumps(no_role),
        "[1, 2]",
        good[:50],
        good,
    ]
    conversations, skipped = read_text("\n".join(lines), source="c.jsonl")
    assert [c.source for c in conversations] == ["c.jsonl#1", "c.jsonl#7"]
    assert sorted((s.source, s.reason) for s in skipped) == [
        ("c.jsonl#2", "unknown_role"),
        ("c.jsonl#3", "tool_without_call"),
        ("c.jsonl#4", "missing_field:role"),
        ("c.jsonl#5", "not_an_object"),
        ("c.jsonl#6", "invalid_json"),
    ]
