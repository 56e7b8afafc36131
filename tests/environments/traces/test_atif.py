"""ATIF trajectories: what ``serve/record.py`` exports reads back as the conversation it recorded."""

from __future__ import annotations

import json

from environments.harness_prompts import harness_tools
from environments.traces import TraceFormat, read_text
from serve.record import OTHER_HARNESS, RolloutRecord, TurnRecord, reply_message

CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}}
READ = {"id": "c2", "type": "function", "function": {"name": "read", "arguments": '{"path":"a.py"}'}}
CONVERSATION = (
    {"role": "system", "content": "You are a coding agent. Working directory: /testbed"},
    {"role": "user", "content": [{"type": "text", "text": "Fix the bug so the tests pass."}]},
    {"role": "assistant", "content": None, "tool_calls": [CALL, READ]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    {"role": "tool", "tool_call_id": "c2", "content": "print(1)\n"},
    reply_message("Fixed.", []),
)
EXPECTED = [
    {"role": "system", "content": "You are a coding agent. Working directory: /testbed"},
    {"role": "user", "content": "Fix the bug so the tests pass."},
    {"role": "assistant", "content": "", "tool_calls": [CALL, READ]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    {"role": "tool", "tool_call_id": "c2", "content": "print(1)\n"},
    {"role": "assistant", "content": "Fixed."},
]


def _record(harness: str = "pi") -> RolloutRecord:
    turns = (
        TurnRecord(0, (1, 2, 3), (7, 8), (-0.1, -0.2), tool_calls=2, conversation="k"),
        TurnRecord(1, (1, 2, 3, 7, 8, 9), (5,), (-0.3,), tool_calls=0, conversation="k"),
    )
    return RolloutRecord("r1", harness, "pi-v3", (), turns, CONVERSATION, conversation_key="k")


def test_an_exported_record_reads_back_as_its_conversation():
    text = json.dumps(_record().to_atif())
    (conv,), skipped = read_text(text, source="r1.json")
    assert skipped == []
    assert list(conv.messages) == EXPECTED
    assert conv.harness == "pi" and list(conv.tools) == harness_tools("pi")
    assert conv.meta["session_id"] == "r1"
    assert conv.meta["agent"] == {"name": "pi", "version": "unknown", "model_name": "pi-v3"}
    assert conv.meta["guard"] == {"blocked": False, "failed": False, "closed": False}


def test_a_record_of_an_unknown_harness_keeps_no_tools_and_no_filled_prompt():
    (conv,), _ = read_text(json.dumps(_record(OTHER_HARNESS).to_atif()), source="r")
    assert conv.harness is None and conv.tools == () and list(conv.messages) == EXPECTED


def test_object_arguments_tool_definitions_reasoning_and_positional_results():
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    trajectory = {
        "schema_version": "ATIF-v1.5",
        "agent": {"name": "terminus", "version": "2", "tool_definitions": tools},
        "steps": [
            {"step_id": 1, "source": "user", "message": "go"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "reasoning_content": "list first",
                "tool_calls": [
                    {"tool_call_id": "a", "function_name": "bash", "arguments": {"command": "ls"}},
                    {"tool_call_id": "b", "function_name": "bash", "arguments": {"command": "pwd"}},
                ],
                "observation": {"results": [{"content": "x"}, {"content": [{"type": "text", "text": "/"}]}]},
            },
            {"step_id": 3, "source": "agent", "message": "done"},
        ],
    }
    (conv,), _ = read_text(json.dumps(trajectory), source="t.json")
    assert conv.tools == tuple(tools)
    assert conv.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"command":"ls"}'
    assert [(m["tool_call_id"], m["content"]) for m in conv.messages[2:4]] == [("a", "x"), ("b", "/")]
    assert conv.meta["reasoning"] == [{"message": 1, "text": "list first"}]


def test_bad_trajectories_in_a_jsonl_file_are_skipped_with_reasons():
    good = json.dumps(_record().to_atif())
    no_name = _record().to_atif()
    del no_name["steps"][2]["tool_calls"][0]["function_name"]  # type: ignore[index]
    text = "\n".join([good, json.dumps(no_name), good[:-40], json.dumps({"steps": "nope"})])
    conversations, skipped = read_text(text, source="t.jsonl", format=TraceFormat.ATIF)
    assert [c.source for c in conversations] == ["t.jsonl#1"]
    assert sorted((s.source, s.reason) for s in skipped) == [
        ("t.jsonl#2", "missing_field:function_name"),
        ("t.jsonl#3", "invalid_json"),
        ("t.jsonl#4", "missing_field:steps"),
    ]
