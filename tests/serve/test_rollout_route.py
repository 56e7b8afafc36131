"""The rollout route ``/s/<id>/v1`` comes from one function: the path the rollout actor builds from the
guard's answer is the one the guard serves and the one the sandbox relay lets through."""

from __future__ import annotations

import asyncio

import httpx
from proxyutil import Upstream, chat_request, completion, guard_client, make_proxy

from actors.rollout import GuardHTTP
from environments.harnesses.route import rollout_path, rollout_route
from environments.harnesses.sandboxed import check_prefix, decide, parse_head


def test_the_route_is_one_template_with_the_rollout_as_its_parameter():
    assert rollout_path("r-7") == "/s/r-7/v1"
    assert rollout_path("r-7", "/pi") == "/pi/s/r-7/v1"
    assert rollout_route("/models") == "/s/{rollout_id}/v1/models"


def test_the_path_the_actor_builds_is_served_by_the_guard_and_passed_by_the_relay():
    actor = GuardHTTP("http://127.0.0.1:9")
    answered = httpx.MockTransport(lambda request: httpx.Response(201, json={}))
    actor._client = httpx.Client(base_url=actor.url, transport=answered)
    prefix = actor.open("r-7", "pi", "pi-v1", allowlist=())
    assert prefix == rollout_path("r-7")

    head = f"POST {prefix}/chat/completions HTTP/1.1\r\nHost: g\r\nContent-Length: 2\r\n\r\n".encode()
    assert decide(parse_head(head), check_prefix(prefix)).allowed

    proxy = make_proxy(Upstream(lambda request: httpx.Response(200, json=completion("done", None))))

    async def go() -> tuple[int, int]:
        async with guard_client(proxy) as client:
            spec = {"rollout_id": "r-7", "harness": "pi", "adapter": "a"}
            opened = await client.post("/rollouts", json=spec)
            assert opened.status_code == 201, opened.text
            chat = await client.post(f"{prefix}/chat/completions", json=chat_request(stream=False))
            models = await client.get(f"{prefix}/models")
            return chat.status_code, models.status_code

    assert asyncio.run(go()) == (200, 200)
