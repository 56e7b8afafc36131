"""Tool-call validity: which turns are asked, what counts as a valid call, and the table."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from serve.validity import Validity, harness_requests, reply_problem, table, turn_requests

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]


@dataclass(frozen=True)
class Conv:
    messages: list
    tools: list


def call(name: str, arguments: str) -> dict:
    return {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}


def conversation(calls: int) -> Conv:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    for k in range(calls):
        messages.append({"role": "assistant", "content": "", "tool_calls": [call("bash", f'{{"k": {k}}}')]})
        messages.append({"role": "tool", "content": "out", "tool_call_id": "c"})
    messages.append({"role": "assistant", "content": "done"})
    return Conv(messages, TOOLS)


def test_each_tool_calling_turn_is_asked_with_the_conversation_before_it():
    requests = turn_requests([conversation(2), conversation(1)], limit=0)
    assert [len(r["messages"]) for r in requests] == [2, 4, 2]
    assert all(r["messages"][-1]["role"] in ("user", "tool") for r in requests)
    assert all(r["tools"] == TOOLS for r in requests)


def test_a_limit_spreads_the_turns_over_every_conversation():
    conversations = []
    for k in range(4):
        conv = conversation(3)
        conv.messages[1] = {"role": "user", "content": f"task {k}"}
        conversations.append(conv)
    requests = turn_requests(conversations, limit=4)
    assert [r["messages"][1]["content"] for r in requests] == [f"task {k}" for k in range(4)]
    assert len(turn_requests(conversations, limit=5)) == 5


@pytest.mark.parametrize(
    ("calls", "problem"),
    [
        ([call("bash", '{"command": "ls"}')], ""),
        ([call("bash", '{"command": "ls"}'), call("bash", '{"command": "pwd"}')], ""),
        ([], "no_call"),
        ([call("python", '{"code": "1"}')], "undeclared"),
        ([call("bash", "ls")], "not_json"),
        ([call("bash", "[1]")], "not_json"),
        ([call("bash", "{}")], "misfit"),
        ([call("bash", '{"command": 3}')], "misfit"),
        ([call("bash", '{"command": "ls"}'), call("nope", "{}")], "undeclared"),
    ],
)
def test_a_valid_reply_is_one_the_guards_declared_tools_rule_lets_through(calls, problem):
    assert reply_problem(calls, TOOLS) == problem


def test_missing_demonstrations_name_the_command_that_writes_them(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="environments.demos"):
        harness_requests(tmp_path, "pi", "eval", 5)


def test_demonstration_files_are_read_in_the_chat_format(tmp_path: Path):
    conv = conversation(2)
    record = {"messages": conv.messages, "tools": TOOLS, "harness": "pi"}
    (tmp_path / "pi-eval.jsonl").write_text(json.dumps(record) + "\n")
    requests = harness_requests(tmp_path, "pi", "eval", 0)
    assert len(requests) == 2


def test_the_table_shows_counts_shares_and_refused_prompts():
    rows = {
        "base": {"pi": Validity(10, 0, 10, 0), "hermes": Validity(8, 1, 6, 1, too_long=2)},
        "sft": {"pi": Validity(10, 7, 2, 1)},
    }
    text = table(rows)
    lines = text.splitlines()
    assert lines[0] == "| model | pi | hermes |"
    assert "| base | 0/10 (0% [0%, 28%]) | 1/8 (12% [" in lines[2]
    assert "2 too long" in lines[2]
    assert lines[3].startswith("| sft | 7/10 (70% [") and lines[3].endswith("| - |")


def test_a_prompt_past_the_models_length_is_told_apart_from_other_errors():
    from serve.validity import _too_long

    assert _too_long("This model's maximum context length is 8192 tokens. However, you requested 9000")
    assert _too_long("The decoder prompt (length 9000) is longer than the maximum model length of 8192.")
    assert not _too_long("tool_choice 'required' is not supported")
