"""The per-rollout record: frozen, self-checking, and exported as ATIF that atif-scan reads."""

from __future__ import annotations

import json

import pytest
from atif_scan import parse_trace
from proxyutil import MESSAGES

from serve.decisions import Reason, RuleId
from serve.record import OTHER_HARNESS, BlockRecord, RolloutRecord, TurnRecord, UpstreamError, reply_message

CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}


def _record() -> RolloutRecord:
    block = BlockRecord(RuleId.HOSTS, Reason.HOST_NOT_IN_CONVERSATION, "bash")
    turns = (
        TurnRecord(0, (1, 2, 3), (7, 8), (-0.1, -0.2), tool_calls=1, conversation="k"),
        TurnRecord(1, (4,), (), (), tool_calls=0, error=UpstreamError.CONNECT, conversation="k"),
        TurnRecord(2, (1, 2, 3, 7, 8, 9), (5,), (-0.3,), tool_calls=1, blocks=(block,), conversation="k"),
    )
    conversation = (
        *MESSAGES,
        reply_message("", [CALL]),
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        reply_message("[guard] notice", []),
    )
    return RolloutRecord("r1", "pi", "pi-v3", ("pypi.org",), turns, conversation, conversation_key="k")


def test_turn_invariants_are_checked():
    with pytest.raises(ValueError, match="one entry per completion token"):
        TurnRecord(0, (), (1, 2), (-0.1,), tool_calls=0)
    with pytest.raises(ValueError):
        BlockRecord("hosts", "x", "bash")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="harness"):
        RolloutRecord("r", "claude", "a")  # type: ignore[arg-type]


def test_record_flags_and_json():
    record = _record()
    assert record.blocked and record.failed and record.tool_calls == 2
    data = json.loads(json.dumps(record.to_json()))
    assert data["blocks"] == [{"rule": "hosts", "reason": "host_not_in_conversation", "tool_name": "bash"}]
    assert data["turns"][0]["completion_ids"] == [7, 8]


def test_atif_export_parses_with_atif_scan_and_carries_the_metrics():
    atif = json.loads(json.dumps(_record().to_atif()))
    trace = parse_trace(atif)
    assert [s.source for s in trace.steps] == ["system", "user", "agent", "agent"]
    assert trace.steps[2].calls[0].name == "bash"
    assert trace.steps[2].observations[0].content.text == "a.py"
    agents = [s for s in atif["steps"] if s["source"] == "agent"]
    assert agents[0]["metrics"]["completion_token_ids"] == [7, 8]
    assert agents[0]["metrics"]["logprobs"] == [-0.1, -0.2]
    assert agents[1]["metrics"]["prompt_token_ids"] == [1, 2, 3, 7, 8, 9]
    assert agents[1]["extra"]["guard"]["blocks"][0]["rule"] == "hosts"
    assert atif["extra"]["guard"]["blocked"] is True


def test_atif_export_of_an_empty_rollout_parses():
    parse_trace(RolloutRecord("r", OTHER_HARNESS, "").to_atif())


def test_a_record_takes_any_harness_the_registry_knows_and_names_them_when_not():
    from environments.harnesses.registry import harness_names

    for name in (*harness_names(), OTHER_HARNESS):
        assert RolloutRecord("r", name, "").harness == name
    with pytest.raises(ValueError, match=r"harness='claude-code': must be one of \['hermes'|'pi'"):
        RolloutRecord("r", "claude-code", "")
