"""Server-sent events in and out (pure): a decoder for the upstream stream and the chunks the
guard re-emits.

`SSEDecoder.feed(bytes)` returns the `data:` payloads completed so far, whatever the cut of the
byte stream (CRLF, LF or CR line ends; multi-line data joined by "\\n"; comments and other
fields ignored), so a stream gives the same events however the network split it.

`ChunkWriter` builds the harness-facing stream in the shape all three harnesses accept (the
real-harness tests run each against it): a role chunk, content/reasoning deltas, one
`tool_calls` delta per complete call (id, type, name and arguments together) or the guard's
notice as assistant text, a `finish_reason` chunk, a usage chunk with `choices: []` when the
client asked for usage, and `data: [DONE]`. It never carries token ids or logprobs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .toolcalls import ToolCall

DONE = b"data: [DONE]\n\n"


class SSEDecoder:
    def __init__(self, max_event_bytes: int = 8 * 1024 * 1024) -> None:
        self.max_event_bytes = max_event_bytes
        self._buffer = b""
        self._data: list[bytes] = []
        self._size = 0
        self._pending_cr = False

    def feed(self, chunk: bytes | str) -> list[str]:
        # Bytes until a line is complete: a UTF-8 character split across reads stays whole.
        data = chunk.encode() if isinstance(chunk, str) else chunk
        if self._pending_cr and data.startswith(b"\n"):
            data = data[1:]
        self._pending_cr = data.endswith(b"\r")
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, self._buffer = (self._buffer + data).split(b"\n")
        events: list[str] = []
        for line in lines:
            if not line:
                if self._data:
                    events.append(b"\n".join(self._data).decode("utf-8", errors="replace"))
                self._data = []
                self._size = 0
            elif line.startswith(b"data:"):
                value = line[6:] if line.startswith(b"data: ") else line[5:]
                self._data.append(value)
                self._size += len(value)
        if self._size + len(self._buffer) > self.max_event_bytes:
            raise ValueError("sse_event_too_large")
        return events

    def close(self) -> list[str]:
        """Payloads left when the stream ends without a final blank line."""
        return self.feed(b"\n\n") if self._buffer or self._data else []


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def encode(payload: Mapping[str, object]) -> bytes:
    return b"data: " + _dumps(payload) + b"\n\n"


@dataclass(frozen=True, slots=True)
class ChunkWriter:
    """Chunk envelopes for one response: the id, created time and model the client sees."""

    id: str
    created: int
    model: str
    _head: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Text deltas are most of a stream: their envelope is encoded once (same bytes as `delta`).
        envelope = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }
        object.__setattr__(self, "_head", b"data: " + _dumps(envelope)[:-1] + b',"choices":[{"index":')

    def _chunk(self, choices: list[dict[str, object]], **extra: object) -> bytes:
        body: dict[str, object] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        body.update(extra)
        return encode(body)

    def delta(self, choice: int, delta: Mapping[str, object]) -> bytes:
        return self._chunk([{"index": choice, "delta": dict(delta), "logprobs": None, "finish_reason": None}])

    def role(self, choice: int = 0) -> bytes:
        return self.delta(choice, {"role": "assistant", "content": ""})

    def text(self, choice: int, text: str) -> bytes:
        return b'%s%d,"delta":{"content":%s},"logprobs":null,"finish_reason":null}]}\n\n' % (
            self._head,
            choice,
            _dumps(text),
        )

    def tool_calls(self, choice: int, calls: Sequence[ToolCall]) -> list[bytes]:
        out = []
        for position, call in enumerate(calls):
            entry = {"index": position, **call.as_message()}
            out.append(self.delta(choice, {"tool_calls": [entry]}))
        return out

    def finish(self, choice: int, reason: str) -> bytes:
        return self._chunk([{"index": choice, "delta": {}, "logprobs": None, "finish_reason": reason}])

    def usage(self, usage: Mapping[str, object]) -> bytes:
        return self._chunk([], usage=dict(usage))

    def error(self, message: str, kind: str, code: str) -> bytes:
        # OpenAI SDKs raise an APIError on a chunk carrying `error`.
        return encode({"error": {"message": message, "type": kind, "code": code}})
