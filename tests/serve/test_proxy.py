"""The guard proxy over a MockTransport upstream, driven over ASGI as a harness would."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections import defaultdict

import httpx
import pytest
from atif_scan import parse_trace
from guardcases import load_captures, need
from proxyutil import (
    ATTACK,
    UPSTREAM,
    Upstream,
    chat_request,
    completion,
    guard_client,
    make_proxy,
    parse_sse,
    random_cuts,
    sse_bytes,
    streaming,
    upstream_events,
)

from serve.decisions import NOTICES, RuleId
from serve.proxy import GuardProxy, ProxyConfig
from serve.record import UpstreamError


def run(coro):
    return asyncio.run(coro)


async def _open(client: httpx.AsyncClient, rollout_id: str = "r1", **extra) -> dict:
    spec = {"rollout_id": rollout_id, "harness": "pi", "adapter": "pi-v3", **extra}
    response = await client.post("/rollouts", json=spec)
    assert response.status_code == 201, response.text
    return response.json()


def _stream_upstream(events: list[dict]) -> Upstream:
    return Upstream(streaming([sse_bytes(events)]))


def _content(events: list) -> str:
    return "".join(
        e["choices"][0]["delta"].get("content") or "" for e in events if e != "[DONE]" and e.get("choices")
    )


def test_a_benign_streamed_turn_is_relayed_and_recorded():
    upstream = _stream_upstream(upstream_events())
    proxy = make_proxy(upstream)

    async def go():
        async with guard_client(proxy) as client:
            await _open(client, allowlist=["pypi.org"])
            response = await client.post("/s/r1/v1/chat/completions", json=chat_request())
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            record = (await client.get("/rollouts/r1")).json()
            return response.content, record

    out, record = run(go())
    events = parse_sse(out)
    assert (
        events[-1] == "[DONE]" and events[-2]["choices"] == [] and events[-2]["usage"]["prompt_tokens"] == 4
    )
    assert all(e["model"] == "fake-model" for e in events[:-1])
    assert _content(events) == "Let me look."
    assert b"token_ids" not in out and b'logprob"' not in out
    sent = upstream.bodies[0]
    assert sent["model"] == "pi-v3" and sent["logprobs"] is True and sent["return_token_ids"] is True
    assert not record["blocked"] and record["tool_calls"] == 1
    turn = record["turns"][0]
    assert turn["prompt_ids"] == [1, 2, 3, 4] and len(turn["completion_ids"]) == len(turn["logprobs"]) > 0
    assert (
        turn["finish_reason"] == "tool_calls"
        and turn["duration_s"] >= 0
        and turn["first_token_s"] is not None
    )


def test_random_chunkings_through_the_proxy_give_the_same_bytes_and_verdict():
    data = sse_bytes(upstream_events(command=ATTACK, repeat_ids=True))
    rng = random.Random(3)
    cuts = [[data]] + [random_cuts(data, rng) for _ in range(200)]

    async def go():
        outs, verdicts = set(), set()
        for n, pieces in enumerate(cuts):
            proxy = make_proxy(Upstream(streaming(pieces)))
            async with guard_client(proxy) as client:
                await _open(client, f"r{n}")
                response = await client.post(f"/s/r{n}/v1/chat/completions", json=chat_request())
                outs.add(response.content)
                verdicts.add(json.dumps((await client.get(f"/rollouts/r{n}")).json()["blocks"]))
        return outs, verdicts

    outs, verdicts = run(go())
    assert len(outs) == 1 and len(verdicts) == 1
    assert "hosts" in verdicts.pop()


def test_a_blocked_call_becomes_the_notice_and_marks_the_rollout(caplog: pytest.LogCaptureFixture):
    proxy = make_proxy(_stream_upstream(upstream_events(command=ATTACK)))

    async def go():
        async with guard_client(proxy) as client:
            await _open(client)
            response = await client.post("/s/r1/v1/chat/completions", json=chat_request())
            record = (await client.get("/rollouts/r1")).json()
            atif = (await client.get("/rollouts/r1/atif")).json()
            closed = (await client.delete("/rollouts/r1")).json()
            gone = await client.get("/rollouts/r1")
            return response, record, atif, closed, gone

    with caplog.at_level(logging.WARNING, logger="serve.guard"):
        response, record, atif, closed, gone = run(go())
    assert response.status_code == 200
    events = parse_sse(response.content)
    assert events[-1] == "[DONE]" and events[-2]["choices"] == []
    assert _content(events).endswith(NOTICES[RuleId.HOSTS])
    assert not any("tool_calls" in e["choices"][0]["delta"] for e in events[:-2])
    assert [e["choices"][0]["finish_reason"] for e in events[:-2]][-1] == "stop"
    assert b"evil.example" not in response.content
    assert record["blocked"] and record["blocks"][0]["rule"] == "hosts"
    assert closed["closed"] and closed["blocked"] and gone.status_code == 404 and not proxy.book.book.entries
    assert "rule=hosts reason=host_not_in_conversation" in caplog.text
    trace = parse_trace(atif)
    assert trace.steps[-1].source == "agent" and NOTICES[RuleId.HOSTS] in trace.steps[-1].message.text


def test_the_non_stream_path():
    upstream = Upstream(lambda request: httpx.Response(200, json=completion(command=ATTACK)))
    proxy = make_proxy(upstream)

    async def go():
        async with guard_client(proxy) as client:
            await _open(client)
            response = await client.post("/s/r1/v1/chat/completions", json=chat_request(stream=False))
            return response, (await client.get("/rollouts/r1")).json()

    response, record = run(go())
    body = response.json()
    assert response.status_code == 200 and body["object"] == "chat.completion"
    assert body["choices"][0]["finish_reason"] == "stop" and "tool_calls" not in body["choices"][0]["message"]
    assert "prompt_token_ids" not in body and "token_ids" not in body["choices"][0]
    assert "stream_options" not in upstream.bodies[0] and upstream.bodies[0]["return_token_ids"] is True
    assert record["blocked"] and record["turns"][0]["completion_ids"] == [7, 8, 9]


@pytest.mark.parametrize(
    ("path", "content", "status", "code"),
    [
        ("/s/r1/v1/chat/completions", b"{not json", 400, "body_not_json"),
        ("/s/r1/v1/chat/completions", b'{"messages": []}', 400, "messages_missing"),
        ("/s/nope/v1/chat/completions", json.dumps(chat_request()).encode(), 404, "rollout_not_found"),
        ("/rollouts", b'{"harness": "pi"}', 400, "rollout_invalid"),
        ("/rollouts", b'{"harness": "claude", "adapter": "a"}', 400, "rollout_invalid"),
        ("/rollouts", b'{"harness": "pi", "adapter": "a", "allowlist": "x"}', 400, "allowlist_invalid"),
        ("/rollouts", b'{"harness": "pi", "adapter": "a", "rollout_id": "r1"}', 409, "rollout_exists"),
    ],
)
def test_malformed_requests_get_a_4xx_naming_the_problem(path: str, content: bytes, status: int, code: str):
    upstream = _stream_upstream(upstream_events())
    proxy = make_proxy(upstream)

    async def go():
        async with guard_client(proxy) as client:
            await _open(client)
            return await client.post(path, content=content, headers={"content-type": "application/json"})

    response = run(go())
    assert response.status_code == status and response.json()["error"]["code"] == code
    assert not upstream.bodies


def _failing(reply) -> tuple[httpx.Response, dict]:
    proxy = make_proxy(Upstream(reply))

    async def go():
        async with guard_client(proxy) as client:
            await _open(client)
            response = await client.post("/s/r1/v1/chat/completions", json=chat_request())
            return response, (await client.get("/rollouts/r1")).json()

    return run(go())


@pytest.mark.parametrize(("temperature", "sent"), [(None, None), (0.0, 0.0), (0.7, 0.7)])
def test_the_jobs_temperature_replaces_the_harness_s_and_none_leaves_the_request_as_sent(temperature, sent):
    upstream = _stream_upstream(upstream_events())
    proxy = make_proxy(upstream, temperature=temperature)

    async def go():
        async with guard_client(proxy) as client:
            await _open(client)
            for request in (chat_request(), {**chat_request(), "temperature": 1.3}):
                response = await client.post("/s/r1/v1/chat/completions", json=request)
                assert response.status_code == 200

    run(go())
    assert [b.get("temperature") for b in upstream.bodies] == ([None, 1.3] if sent is None else [sent, sent])


def test_a_job_that_constrains_calls_sends_the_declared_tools_grammar_upstream():
    upstream = _stream_upstream(upstream_events())
    proxy = make_proxy(upstream, tool_grammar="hermes")

    async def go():
        async with guard_client(proxy) as client:
            await _open(client)
            for request in (chat_request(), chat_request(tool_choice="none")):
                response = await client.post("/s/r1/v1/chat/completions", json=request)
                assert response.status_code == 200

    run(go())
    tagged, untouched = upstream.bodies
    names = [s["begin"].split('"name": "')[1].split('"')[0] for s in tagged["response_format"]["structures"]]
    assert names == [t["function"]["name"] for t in chat_request()["tools"]]
    assert "response_format" not in untouched  # the harness asked for no calls: nothing to constrain


@pytest.mark.parametrize("bad", [-0.1, 2.5, "hot", True])
def test_a_temperature_out_of_range_is_refused_with_its_range(bad):
    with pytest.raises(ValueError, match=r"temperature=.*: a number from 0 \(greedy\) to 2, or null"):
        ProxyConfig(UPSTREAM, temperature=bad)


def test_an_upstream_500_is_a_424_that_stops_the_harness_and_is_recorded():
    # Every harness retries a 5xx (pi 12 times over ~24 s, NOTES.md section 4) and stops after one
    # request on a 4xx, showing the message: a broken upstream should end the rollout, which the
    # trainer then drops as failed (infrastructure), rather than retry-storm it.
    response, record = _failing(lambda r: httpx.Response(500, json={"error": {"message": "boom"}}))
    assert response.status_code == 424
    error = response.json()["error"]
    assert error["code"] == UpstreamError.STATUS and "HTTP 500" in error["message"]
    assert record["failed"] and not record["blocked"]
    assert (
        record["turns"][0]["error"] == UpstreamError.STATUS and record["turns"][0]["upstream_status"] == 500
    )
    assert record["turns"][0]["upstream_message"] == "boom"  # the server's reason, kept with the turn


def test_an_unreachable_upstream_is_a_424_and_an_upstream_4xx_passes_through():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    response, record = _failing(refuse)
    assert response.status_code == 424 and response.json()["error"]["code"] == UpstreamError.CONNECT
    assert record["failed"]
    response, record = _failing(lambda r: httpx.Response(400, json={"error": {"message": "too long"}}))
    assert response.status_code == 400 and response.json()["error"]["message"] == "too long"
    assert (
        record["turns"][0]["upstream_status"] == 400 and record["turns"][0]["upstream_message"] == "too long"
    )
    _, record = _failing(lambda r: httpx.Response(400, text="x" * 2000))
    assert record["turns"][0]["upstream_message"] == "x" * 500


def test_an_upstream_stream_cut_midway_ends_with_an_error_event():
    events = upstream_events()
    response, record = _failing(streaming([sse_bytes(events[:3], done=False)]))
    out = parse_sse(response.content)
    assert (
        response.status_code == 200
        and out[-1] == "[DONE]"
        and out[-2]["error"]["code"] == "upstream_stream_interrupted"
    )
    assert record["failed"]


CAPTURES = load_captures()


def test_captured_real_requests_pass_through_with_no_false_block():
    groups: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for name, body in need(CAPTURES, "harness captures"):
        groups[name.rsplit("-", 1)[0]].append((name, body))

    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        names = [t["function"]["name"] for t in body.get("tools") or []]
        shell = next((n for n in ("bash", "terminal") if n in names), None)
        command = "echo FAKE_TOOL_OK && ls -la && cat README.md" if shell else None
        return streaming([sse_bytes(upstream_events(command=command, tool=shell or "bash"))])(request)

    upstream = Upstream(reply)
    proxy = make_proxy(upstream)

    async def go():
        results = {}
        async with guard_client(proxy) as client:
            for group, items in groups.items():
                harness = group.split("-")[0].replace("oc", "opencode")
                await _open(client, group, harness=harness)
                for name, body in items:
                    response = await client.post(f"/s/{group}/v1/chat/completions", json=body)
                    results[name] = (response.status_code, parse_sse(response.content))
                results[group] = (await client.delete(f"/rollouts/{group}")).json()
        return results

    results = run(go())
    for group in groups:
        record = results[group]
        assert not record["blocked"], (group, record["blocks"])
        assert all(t["error"] is None for t in record["turns"]), group
    for (name, body), sent in zip(CAPTURES, upstream.bodies, strict=True):
        status, events = results[name]
        assert status == 200 and events[-1] == "[DONE]", name
        assert sent["messages"] == body["messages"] and sent.get("tools") == body.get("tools"), name
        if body.get("tools"):
            assert events[-3]["choices"][0]["finish_reason"] == "tool_calls", name


def test_model_lists():
    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"object": "list", "data": [{"id": "base"}, {"id": "pi-v3"}]})

    proxy = make_proxy(Upstream(reply))

    async def go():
        async with guard_client(proxy) as client:
            await _open(client)
            return [
                await client.get(p)
                for p in ("/s/r1/v1/models", "/api/v1/models", "/v1/models", "/s/x/v1/models")
            ]

    mine, probe, listing, unknown = run(go())
    assert [m["id"] for m in mine.json()["data"]] == ["pi-v3"]
    assert probe.json()["data"][1]["id"] == "pi-v3" and listing.status_code == 200
    assert unknown.status_code == 404

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("down", request=request)

    proxy = make_proxy(Upstream(down))

    async def go_down():
        async with guard_client(proxy) as client:
            return await client.get("/api/v1/models")

    assert run(go_down()).status_code == 404


def test_state_is_bounded():
    proxy = make_proxy(_stream_upstream(upstream_events(command=None)), max_rollouts=2, max_turns=1)

    async def go():
        async with guard_client(proxy) as client:
            await _open(client, "a")
            await _open(client, "b")
            full = await client.post("/rollouts", json={"harness": "pi", "adapter": "x"})
            first = await client.post("/s/a/v1/chat/completions", json=chat_request())
            second = await client.post("/s/a/v1/chat/completions", json=chat_request())
            return full, first, second

    full, first, second = run(go())
    assert full.status_code == 409 and full.json()["error"]["code"] == "too_many_rollouts"
    assert first.status_code == 200
    assert second.status_code == 400 and second.json()["error"]["code"] == "rollout_turn_limit"


def test_standalone_sessions_per_api_key_and_per_path_with_lru_eviction():
    upstream = Upstream(lambda r: streaming([sse_bytes(upstream_events(command=ATTACK))])(r))
    proxy = make_proxy(upstream, auto_open=True, max_rollouts=2)
    assert isinstance(proxy.config, ProxyConfig)

    async def go():
        async with guard_client(proxy) as client:
            for key in ("k1", "k2", "k1"):
                response = await client.post(
                    "/v1/chat/completions", json=chat_request(), headers={"authorization": f"Bearer {key}"}
                )
                assert response.status_code == 200
            await client.post("/s/mine/v1/chat/completions", json=chat_request())

    run(go())
    entries = proxy.book.book.entries
    assert list(entries)[-1] == "mine" and len(entries) == 2
    counts = sorted(len(r.turns) for r in entries.values())
    assert counts == [1, 2]  # k1 kept its two turns; k2 was evicted
    assert upstream.bodies[0]["model"] == "fake-model"  # no adapter: the client's model goes upstream


def test_48_concurrent_sessions_each_get_their_own_verdict():
    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        attack = "attack" in body["messages"][-1]["content"]
        return streaming([sse_bytes(upstream_events(command=ATTACK if attack else "ls"))])(request)

    proxy = make_proxy(Upstream(reply))

    async def one(client: httpx.AsyncClient, i: int) -> bool:
        await _open(client, f"c{i}")
        body = chat_request()
        body["messages"] = [*body["messages"], {"role": "user", "content": "attack" if i % 2 else "go"}]
        response = await client.post(f"/s/c{i}/v1/chat/completions", json=body)
        assert parse_sse(response.content)[-1] == "[DONE]"
        return (await client.delete(f"/rollouts/c{i}")).json()["blocked"]

    async def go():
        async with guard_client(proxy) as client:
            return await asyncio.gather(*(one(client, i) for i in range(48)))

    assert run(go()) == [bool(i % 2) for i in range(48)]
    assert not proxy.book.book.entries and not proxy.sessions


def test_a_broken_upstream_stream_object_still_ends_the_harness_stream_well():
    def reply(request: httpx.Request) -> httpx.Response:
        async def body():
            yield sse_bytes(upstream_events()[:2], done=False)
            raise httpx.ReadError("reset")

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    response, record = _failing(reply)
    events = parse_sse(response.content)
    assert events[-1] == "[DONE]" and events[-2]["error"]["type"] == "upstream_error"
    assert _content(events) == "Let "
    assert record["turns"][0]["error"] == UpstreamError.INTERRUPTED


def test_a_harness_that_goes_away_mid_stream_leaves_a_recorded_turn_and_a_closed_upstream():
    closed = []

    def reply(request: httpx.Request) -> httpx.Response:
        async def body():
            try:
                for event in upstream_events():
                    yield sse_bytes([event], done=False)
            finally:
                closed.append(True)

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    proxy = make_proxy(Upstream(reply))

    async def go():
        await proxy.open("pi", "pi-v3", rollout_id="r1")
        response = await proxy.chat("r1", json.dumps(chat_request()).encode())
        stream = response.body_iterator
        first = await stream.__anext__()
        await stream.aclose()  # what Starlette does when the client disconnects
        return first

    first = run(go())
    assert first.startswith(b"data: ")
    turn = run(proxy.record("r1")).turns[0]
    assert turn.error == UpstreamError.CLIENT_CLOSED and closed == [True]


def test_odd_but_valid_message_shapes_never_crash_the_guard():
    proxy = make_proxy(_stream_upstream(upstream_events(command="ls")))
    body = chat_request()
    body["messages"] = [
        {"role": "system", "content": {"weird": 1}},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}, 3, None]},
        {"role": "assistant", "content": None, "tool_calls": "nope"},
        {"role": "assistant", "tool_calls": [{"id": 5, "function": {"name": None, "arguments": {"a": 1}}}]},
        {"role": "tool", "tool_call_id": None, "content": [1, 2]},
        {"role": "martian", "content": "hi"},
        {"role": "user", "content": "go on"},
    ]
    body["tools"] = [{"type": "function"}, "x", {"function": {"name": "bash", "parameters": "no"}}]

    async def go():
        async with guard_client(proxy) as client:
            await _open(client)
            return await client.post("/s/r1/v1/chat/completions", json=body)

    response = run(go())
    assert response.status_code == 200 and parse_sse(response.content)[-1] == "[DONE]"


def test_a_rollouts_protected_paths_reach_its_sessions_and_a_compacted_conversation_keeps_the_facts():
    proxy = make_proxy(_stream_upstream(upstream_events()))
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    system = {"role": "system", "content": "Working directory: /w"}
    first = {
        "tools": tools,
        "messages": [system, {"role": "user", "content": "see https://api.example.org/x"}],
    }
    compacted = {"tools": tools, "messages": [system, {"role": "user", "content": "Summary: work so far."}]}
    summariser = {"tools": [], "messages": [system, {"role": "user", "content": "Summarise."}]}

    async def go():
        await proxy.open("pi", "pi-v1", (), "r1", ("tests/check_totals.py",))
        rollout = await proxy.book.call("view", "r1")
        session = await proxy._session("r1", rollout, first, "k1")
        # pi's compaction rewrites the second message: a new conversation key with the same tools
        after = await proxy._session("r1", rollout, compacted, "k2")
        alone = await proxy._session("r1", rollout, summariser, "k3")
        return session, after, alone

    session, after, alone = run(go())
    assert session is not None and "/w/tests/check_totals.py" in session.facts.protected
    assert after is not session and after is not None and after.facts.host_known("api.example.org")
    assert alone is not None and not alone.facts.host_known("api.example.org")


def test_replicas_sharing_a_book_keep_one_record_and_the_facts_another_replica_saw():
    """Proxies over one book stand for Serve replicas over the ledger: turns go to different replicas,
    the record holds every turn in order, and a compacted conversation reaching a replica that never
    saw the rollout still knows the host shown before (the book keeps the facts of the same tools)."""
    from serve.book import LocalBook, RolloutBook
    from serve.mode import GuardMode

    book = LocalBook(RolloutBook(16, GuardMode.ENFORCE))
    upstream = _stream_upstream(upstream_events(command="curl -s https://api.example.org/x"))
    replicas = [GuardProxy(ProxyConfig(UPSTREAM), upstream.client(), book=book) for _ in range(3)]
    body = chat_request()
    body["messages"] = [*body["messages"], {"role": "user", "content": "fetch https://api.example.org/x"}]
    compacted = chat_request()
    compacted["messages"] = [compacted["messages"][0], {"role": "user", "content": "Summary: keep going."}]
    alone = make_proxy(upstream)  # the control: the compacted turn with no history anywhere

    async def turn(proxy: GuardProxy, rollout_id: str, request: dict) -> None:
        response = await proxy.chat(rollout_id, json.dumps(request).encode())
        assert response.status_code == 200
        async for _ in response.body_iterator:
            pass

    async def go():
        await replicas[0].open("pi", "pi-v1", rollout_id="r1")
        for proxy in replicas[:2] + replicas[:1]:
            await turn(proxy, "r1", body)
        await turn(replicas[2], "r1", compacted)
        await alone.open("pi", "pi-v1", rollout_id="r2")
        await turn(alone, "r2", compacted)
        return await replicas[1].close("r1"), await alone.close("r2")

    record, control = run(go())
    assert [t.index for t in record.turns] == [0, 1, 2, 3] and record.closed
    assert not record.blocked, record.blocks
    assert control.blocked  # without the book's facts the same turn is blocked
    assert not book.book.entries
