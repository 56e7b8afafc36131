"""vLLM-shaped chat-completion streams and a paced streaming upstream, for benchmarks, tests and dry runs.

The guard asks its upstream for token ids and logprobs, so a faithful stand-in for vLLM must send them
the way vLLM does: ``prompt_token_ids`` on the first chunk, ``token_ids`` and ``logprobs`` on every
choice chunk, tool calls whose arguments arrive in pieces, a finish chunk, a usage chunk with
``choices: []`` and ``[DONE]``. ``turn_events`` builds such a turn; ``sse_bytes`` frames it;
``streaming_app`` serves fixed chunks with an optional gap between events, as a decoding server would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable

BENIGN_COMMAND = "ls -la /testbed && python -m pytest -q"


def _chunk(choices: list, **extra: object) -> dict:
    head = {"id": "chatcmpl-up1", "object": "chat.completion.chunk", "created": 1700000000, "model": "ad"}
    return {**head, **extra, "choices": choices}


def _choice(delta: dict, ids: list[int], finish: str | None = None) -> dict:
    logprobs = {"content": [{"token": f"t{i}", "logprob": -0.5 - i / 100, "bytes": []} for i in ids]}
    return {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish, "token_ids": ids}


def turn_events(
    text: str = "Let me look.",
    command: str | None = BENIGN_COMMAND,
    repeat_ids: bool = False,
    tool: str = "bash",
) -> list[dict]:
    """One streamed turn: prompt ids first, ``text`` in 4-character pieces, then (unless ``command`` is
    None) one call of ``tool`` with ``{"command": command}`` in 7-character pieces, finish, usage.
    ``repeat_ids`` repeats the call's id and name on every piece, as some servers do."""
    events = [_chunk([_choice({"role": "assistant", "content": ""}, [])], prompt_token_ids=[1, 2, 3, 4])]
    next_id = 10
    for piece in [text[i : i + 4] for i in range(0, len(text), 4)]:
        events.append(_chunk([_choice({"content": piece}, [next_id])]))
        next_id += 1
    if command is not None:
        args = json.dumps({"command": command})
        head = {"index": 0, "id": "call_abc", "type": "function", "function": {"name": tool, "arguments": ""}}
        events.append(_chunk([_choice({"tool_calls": [head]}, [next_id])]))
        next_id += 1
        for piece in [args[i : i + 7] for i in range(0, len(args), 7)]:
            call: dict = {"index": 0, "function": {"arguments": piece}}
            if repeat_ids:
                call.update(id="call_abc", type="function")
                call["function"]["name"] = tool
            events.append(_chunk([_choice({"tool_calls": [call]}, [next_id])]))
            next_id += 1
    events.append(_chunk([_choice({}, [next_id], "tool_calls" if command else "stop")]))
    count = next_id - 9
    usage = {"prompt_tokens": 4, "completion_tokens": count, "total_tokens": 4 + count}
    events.append(_chunk([], usage=usage))
    return events


def sse_bytes(events: Iterable[dict], done: bool = True) -> bytes:
    out = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return out + (b"data: [DONE]\n\n" if done else b"")


def sse_chunks(events: Iterable[dict]) -> list[bytes]:
    """The stream of ``events`` (``[DONE]`` included) as one byte string per event."""
    return [block + b"\n\n" for block in sse_bytes(events).split(b"\n\n") if block]


def streaming_app(chunks: list[bytes], pace_s: float = 0.0):
    """A Starlette app answering ``POST /v1/chat/completions`` with ``chunks``, ``pace_s`` apart."""
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def chat(request):
        await request.body()

        async def body():
            for chunk in chunks:
                if pace_s:
                    await asyncio.sleep(pace_s)
                yield chunk

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
