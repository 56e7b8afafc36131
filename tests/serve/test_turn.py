"""One turn through the guard, without I/O: request checks, upstream body, stream and non-stream."""

from __future__ import annotations

import json
import random

import pytest
from proxyutil import (
    ATTACK,
    MESSAGES,
    PI_TOOLS,
    completion,
    parse_sse,
    random_cuts,
    sse_bytes,
    upstream_events,
)

from serve.decisions import NOTICES, RuleId
from serve.engine import GuardSession
from serve.record import UpstreamError
from serve.sse import SSEDecoder
from serve.turn import RequestError, StreamTurn, guard_completion, parse_request, upstream_body


def _session() -> GuardSession:
    session = GuardSession(PI_TOOLS)
    session.sync(MESSAGES)
    return session


def _run(pieces: list[bytes]) -> tuple[bytes, StreamTurn]:
    turn = StreamTurn(_session(), "fake-model", include_usage=True)
    decoder = SSEDecoder()
    out = [b for piece in pieces for data in decoder.feed(piece) for b in turn.on_data(data)]
    out += [b for data in decoder.close() for b in turn.on_data(data)]
    return b"".join(out + turn.close()), turn


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{nope", "body_not_json"),
        (b"[1]", "body_not_object"),
        (b"{}", "messages_missing"),
        (b'{"messages": [3]}', "message_invalid"),
        (b'{"messages": [{"role": "user"}], "tools": {}}', "tools_invalid"),
        (b'{"messages": [{"role": "user"}], "stream": "yes"}', "stream_invalid"),
        (b'{"messages": [{"role": "user"}], "n": 2}', "n_unsupported"),
        (b'{"messages": [{"role": "user"}], "model": 1}', "model_invalid"),
    ],
)
def test_malformed_requests_name_the_problem(raw: bytes, code: str):
    with pytest.raises(RequestError) as info:
        parse_request(raw)
    assert info.value.status == 400 and info.value.code == code


def test_upstream_body_asks_for_ids_logprobs_and_usage_with_the_adapter_as_model():
    body = upstream_body({"model": "fake", "messages": [], "stream": True, "n": 1}, "pi-v3")
    assert body["model"] == "pi-v3" and body["logprobs"] is True and body["return_token_ids"] is True
    assert body["stream_options"] == {"include_usage": True} and "n" not in body


def test_a_benign_stream_passes_text_and_the_call_and_records_ids():
    out, turn = _run([sse_bytes(upstream_events())])
    events = parse_sse(out)
    assert events[-1] == "[DONE]" and events[-2]["choices"] == []
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-2])
    assert text == "Let me look."
    calls = [c for e in events[:-2] for c in e["choices"][0]["delta"].get("tool_calls", [])]
    assert len(calls) == 1 and json.loads(calls[0]["function"]["arguments"])["command"].startswith("ls")
    assert events[-3]["choices"][0]["finish_reason"] == "tool_calls"
    assert b"token_ids" not in out and b'logprob"' not in out and b"-0.5" not in out
    assert turn.parts.prompt_ids == [1, 2, 3, 4]
    assert len(turn.parts.completion_ids) == len(turn.parts.logprobs) == turn.parts.usage["completion_tokens"]
    assert turn.parts.tool_calls == 1 and not turn.parts.blocks


def test_an_attack_becomes_the_notice_with_a_normal_finish():
    out, turn = _run([sse_bytes(upstream_events(command=ATTACK))])
    events = parse_sse(out)
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-2])
    assert text.endswith(NOTICES[RuleId.HOSTS]) and b"evil.example" not in out
    assert not any("tool_calls" in e["choices"][0]["delta"] for e in events[:-2])
    assert events[-3]["choices"][0]["finish_reason"] == "stop"
    assert [b.rule for b in turn.parts.blocks] == [RuleId.HOSTS] and turn.parts.tool_calls == 1
    assert turn.parts.reply() == {"role": "assistant", "content": text}


@pytest.mark.parametrize("command", [None, "cat a.py", ATTACK])
def test_hundreds_of_random_chunkings_give_the_same_bytes_and_verdict(command: str | None):
    data = sse_bytes(upstream_events(command=command, repeat_ids=True))
    want, first = _run([data])
    rng = random.Random(hash(command) & 0xFFFF)
    for _ in range(300):
        out, turn = _run(random_cuts(data, rng))
        assert out == want
        assert turn.parts.blocks == first.parts.blocks


def test_a_stream_cut_before_finish_ends_with_an_error_event():
    data = sse_bytes(upstream_events()[:4], done=False)
    out, turn = _run([data])
    events = parse_sse(out)
    assert events[-2]["error"]["code"] == UpstreamError.INTERRUPTED and events[-1] == "[DONE]"
    assert turn.parts.error == UpstreamError.INTERRUPTED


def test_garbage_from_upstream_is_an_error_event_not_an_exception():
    out, turn = _run([b"data: {not json\n\n"])
    assert parse_sse(out)[-1] == "[DONE]" and turn.parts.error == UpstreamError.MALFORMED


def test_non_stream_benign_and_blocked():
    body, parts = guard_completion(_session(), completion(), "fake-model")
    assert body["model"] == "fake-model" and "prompt_token_ids" not in body
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["tool_calls"][0]["id"] == "call_1"
    assert "token_ids" not in choice and choice["logprobs"] is None
    assert (
        parts.completion_ids == [7, 8, 9] and parts.logprobs == [-1.0] * 3 and parts.prompt_ids == [1, 2, 3]
    )
    body, parts = guard_completion(_session(), completion(text="ok", command=ATTACK), "fake-model")
    message = body["choices"][0]["message"]
    assert "tool_calls" not in message and message["content"].endswith(NOTICES[RuleId.HOSTS])
    assert body["choices"][0]["finish_reason"] == "stop" and parts.blocks
    with pytest.raises(ValueError, match="upstream_malformed_response"):
        guard_completion(_session(), {"choices": []}, "m")


def _call_delta(index: int, call_id: str, command: str) -> dict:
    args = json.dumps({"command": command})
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": args},
    }


def test_one_blocked_call_drops_every_call_of_the_turn():
    events = upstream_events(command=None)[:1]
    events.append(
        {"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [_call_delta(0, "a", "ls")]}}]}
    )
    events.append(
        {"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [_call_delta(1, "b", ATTACK)]}}]}
    )
    events.append({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    out, turn = _run([sse_bytes(events)])
    assert b'tool_calls":[' not in out and NOTICES[RuleId.HOSTS].encode() in out
    assert turn.parts.tool_calls == 2 and [b.rule for b in turn.parts.blocks] == [RuleId.HOSTS]
    assert [d.verdict for d in turn.parts.decisions] == ["allow", "block"]


def test_reasoning_passes_through_and_a_missing_finish_after_done_is_a_stop():
    events = upstream_events(command=None)[:1]
    events.append({"id": "x", "choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}}]})
    events.append({"id": "x", "choices": [{"index": 0, "delta": {"content": "ok"}}]})
    out, turn = _run([sse_bytes(events)])
    parsed = parse_sse(out)
    assert parsed[1]["choices"][0]["delta"] == {"reasoning_content": "hmm"}
    assert parsed[-3]["choices"][0]["finish_reason"] == "stop" and turn.parts.error is None


def test_unparsable_streamed_arguments_are_blocked_fail_closed():
    events = upstream_events(command=None)[:1]
    bad = {
        "index": 0,
        "id": "a",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "ls'},
    }
    events.append(
        {"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [bad]}, "finish_reason": "length"}]}
    )
    out, turn = _run([sse_bytes(events)])
    assert [b.rule for b in turn.parts.blocks] == [RuleId.DECLARED_TOOLS]
    assert parse_sse(out)[-3]["choices"][0]["finish_reason"] == "stop"


def test_non_stream_upstream_body_drops_stream_options():
    body = upstream_body({"messages": [], "stream": False, "stream_options": {"include_usage": True}}, "m")
    assert "stream_options" not in body


def test_upstream_body_passes_only_chat_completion_fields():
    body = upstream_body(
        {"messages": [], "max_tokens": 5, "guided_json": {"type": "object"}, "logits_processors": ["x"]}, "m"
    )
    assert body["max_tokens"] == 5 and body["messages"] == []
    assert "guided_json" not in body and "logits_processors" not in body
