"""The guard's three modes through the proxy: enforce blocks, monitor records would-be blocks and blocks
nothing, off checks nothing."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import pytest
from proxyutil import (
    ATTACK,
    Upstream,
    chat_request,
    completion,
    guard_client,
    make_proxy,
    parse_sse,
    sse_bytes,
    streaming,
    upstream_events,
)

from serve import GuardMode
from serve.decisions import NOTICES, RuleId
from serve.proxy import ProxyConfig

HOSTS_BLOCK = {"rule": "hosts", "reason": "host_not_in_conversation", "tool_name": "bash"}


def test_modes_parse_from_config_values_and_name_the_allowed_ones():
    assert GuardMode.parse("monitor") is GuardMode.MONITOR
    assert GuardMode.parse(GuardMode.OFF) is GuardMode.OFF
    assert GuardMode.parse(False) is GuardMode.OFF  # YAML 1.1 reads a bare `off` as false
    for bad in ("block", True, None, 1, "Enforce"):
        with pytest.raises(ValueError, match=r"guard=.*: choose one of enforce, monitor, off"):
            GuardMode.parse(bad)
    with pytest.raises(ValueError, match=r"^eval_guard='x'"):
        GuardMode.parse("x", "eval_guard")
    assert ProxyConfig("http://u/v1").guard is GuardMode.ENFORCE
    assert ProxyConfig("http://u/v1", guard="monitor").guard is GuardMode.MONITOR  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="choose one of"):
        ProxyConfig("http://u/v1", guard="block")  # type: ignore[arg-type]


def _calls(events: list) -> str:
    """The streamed tool-call arguments the harness received."""
    return "".join(
        call["function"].get("arguments") or ""
        for e in events
        if e != "[DONE]" and e.get("choices")
        for call in e["choices"][0]["delta"].get("tool_calls") or ()
    )


def _turn(mode: str, command: str = ATTACK, stream: bool = True):
    if stream:
        upstream = Upstream(streaming([sse_bytes(upstream_events(command=command))]))
    else:
        upstream = Upstream(lambda request: httpx.Response(200, json=completion(command=command)))
    proxy = make_proxy(upstream, guard=mode)

    async def go():
        async with guard_client(proxy) as client:
            opened = await client.post(
                "/rollouts", json={"rollout_id": "r1", "harness": "pi", "adapter": "a"}
            )
            assert opened.status_code == 201 and opened.json()["guard"] == mode
            response = await client.post("/s/r1/v1/chat/completions", json=chat_request(stream=stream))
            atif = (await client.get("/rollouts/r1/atif")).json()
            health = (await client.get("/health")).json()
            sessions = len(proxy.sessions.get("r1", {}))
            closed = (await client.delete("/rollouts/r1")).json()
            return response, closed, atif, health, sessions

    return asyncio.run(go())


@pytest.mark.parametrize("stream", [True, False])
def test_enforce_replaces_the_call_by_the_notice_and_marks_the_rollout(stream: bool):
    response, record, _, health, _ = _turn("enforce", stream=stream)
    assert health["guard"] == "enforce"
    assert record["guard"] == "enforce" and record["blocked"] and record["blocks"] == [HOSTS_BLOCK]
    assert record["would_block"] == [] and record["turns"][0]["would_block"] == []
    assert b"evil.example" not in response.content and NOTICES[RuleId.HOSTS].encode() in response.content


@pytest.mark.parametrize("stream", [True, False])
def test_monitor_sends_the_call_on_and_records_the_would_be_block(
    stream: bool, caplog: pytest.LogCaptureFixture
):
    with caplog.at_level(logging.INFO, logger="serve.guard"):
        response, record, atif, health, sessions = _turn("monitor", stream=stream)
    assert health["guard"] == "monitor" and sessions == 1  # every call was checked
    assert record["guard"] == "monitor" and not record["blocked"] and record["blocks"] == []
    assert record["would_block"] == [HOSTS_BLOCK] and record["turns"][0]["would_block"] == [HOSTS_BLOCK]
    assert record["turns"][0]["blocks"] == [] and record["tool_calls"] == 1
    assert NOTICES[RuleId.HOSTS].encode() not in response.content
    if stream:
        events = parse_sse(response.content)
        assert json.loads(_calls(events)) == {"command": ATTACK}  # unchanged
        assert events[-3]["choices"][0]["finish_reason"] == "tool_calls"
    else:
        choice = response.json()["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {"command": ATTACK}
    assert record["turns"][0]["finish_reason"] == "tool_calls"
    agent = [s for s in atif["steps"] if s["source"] == "agent"][-1]
    assert agent["extra"]["guard"]["would_block"] == [HOSTS_BLOCK]
    assert "would block (monitor, call sent on)" in caplog.text and "rule=hosts" in caplog.text
    assert not any(r.levelno >= logging.WARNING and "guard block" in r.message for r in caplog.records)


def test_monitor_records_nothing_for_a_call_the_guard_allows():
    _, record, _, _, _ = _turn("monitor", command="ls -la")
    assert not record["blocked"] and record["would_block"] == [] and record["tool_calls"] == 1


@pytest.mark.parametrize("stream", [True, False])
def test_off_checks_nothing_and_records_nothing(stream: bool):
    response, record, _, health, sessions = _turn("off", stream=stream)
    assert health["guard"] == "off" and sessions == 0  # no guard session: nothing folded or checked
    assert record["guard"] == "off" and not record["blocked"]
    assert record["blocks"] == [] and record["would_block"] == [] and record["tool_calls"] == 1
    assert NOTICES[RuleId.HOSTS].encode() not in response.content
    assert (b"evil.example" in response.content) and record["turns"][0]["finish_reason"] == "tool_calls"
