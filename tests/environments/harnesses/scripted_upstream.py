"""A scripted OpenAI-compatible upstream on 127.0.0.1 (stdlib only), for running real harnesses
through the real guard.

Each chat-completions request is answered by the script step numbered by how many ``tool`` messages
the conversation already holds: a step is either a shell command (sent as one streamed call to the
harness's shell tool: ``bash`` for pi/opencode, ``terminal`` for hermes) or a final text. Requests
without ``tools`` (title or other auxiliary calls) get a short text. Streaming follows
``shared/harnesses/NOTES.md`` section 4: a role chunk, the call's id and name, its arguments split
across chunks, a ``finish_reason`` chunk, a usage chunk with ``choices: []`` and ``[DONE]``; the guard
asks for token ids and logprobs, which this server ignores. Every request body is kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHELL_TOOLS = ("bash", "terminal")
MODEL = "scripted-model"
USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


@dataclass(frozen=True, slots=True)
class Shell:
    command: str


@dataclass(frozen=True, slots=True)
class Say:
    text: str


Step = Shell | Say


def shell_call(tools: list[dict], command: str) -> tuple[str, dict]:
    """The harness's shell tool and arguments running ``command`` (required extras filled in)."""
    by_name = {t.get("function", {}).get("name"): t["function"] for t in tools if "function" in t}
    name = next((n for n in SHELL_TOOLS if n in by_name), None)
    if name is None:
        raise AssertionError(f"no shell tool among {sorted(by_name)}")
    params = by_name[name].get("parameters") or {}
    props = params.get("properties") or {}
    args: dict[str, object] = {"command": command}
    for required in params.get("required") or []:
        if required not in args:
            kind = (props.get(required) or {}).get("type")
            args[required] = {"integer": 30, "number": 30, "boolean": False}.get(kind, "Run the command")
    return name, args


def _call(body: dict, step: Step) -> dict | None:
    if isinstance(step, Say):
        return None
    name, args = shell_call(body.get("tools") or [], step.command)
    return {"id": "call_" + uuid.uuid4().hex[:8], "name": name, "arguments": json.dumps(args)}


def completion(body: dict, step: Step) -> dict:
    """A non-streamed reply for ``step``."""
    call = _call(body, step)
    message: dict[str, object] = {"role": "assistant", "content": None}
    if call:
        function = {"name": call["name"], "arguments": call["arguments"]}
        message["tool_calls"] = [{"id": call["id"], "type": "function", "function": function}]
    else:
        message["content"] = step.text  # type: ignore[union-attr]
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:12],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [choice],
        "usage": USAGE,
    }


def stream_chunks(body: dict, step: Step) -> list[dict]:
    """The SSE chunks for ``step`` (``[DONE]`` not included)."""
    call = _call(body, step)
    head = {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion.chunk"}
    head |= {"created": int(time.time()), "model": body.get("model")}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if call:
        function = {"name": call["name"], "arguments": ""}
        chunks.append(
            chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function", "function": function}]})
        )
        arguments = call["arguments"]
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            chunks.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
        chunks.append(chunk({}, "tool_calls"))
    else:
        text = step.text  # type: ignore[union-attr]
        chunks += [chunk({"content": text[i : i + 16]}) for i in range(0, len(text), 16)]
        chunks.append(chunk({}, "stop"))
    chunks.append({**head, "choices": [], "usage": USAGE})
    return chunks


@dataclass
class ScriptedUpstream:
    script: list[Step]
    requests: list[dict] = field(default_factory=list)
    port: int = 0
    stall_once_s: float = 0.0
    """Hold the next model turn this long before answering (once): a turn in progress to fault-inject."""
    stalling: threading.Event = field(default_factory=threading.Event)
    """Set while that turn is held."""
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedUpstream:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _json(self, status: int, payload: object) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "test"}
                    self._json(200, {"object": "list", "data": [model]})
                else:
                    self._json(404, {"error": {"message": "not found", "type": "not_found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                upstream.requests.append(body)
                if not self.path.endswith("/chat/completions") or "messages" not in body:
                    self._json(404, {"error": {"message": "unsupported", "type": "not_found"}})
                    return
                self._answer(body)

            def _answer(self, body: dict) -> None:
                tools = body.get("tools") or []
                done = sum(1 for m in body["messages"] if m.get("role") == "tool")
                step = upstream.script[min(done, len(upstream.script) - 1)] if tools else Say("Title")
                if tools and upstream.stall_once_s > 0:
                    held, upstream.stall_once_s = upstream.stall_once_s, 0.0
                    upstream.stalling.set()
                    time.sleep(held)
                    upstream.stalling.clear()
                if not body.get("stream"):
                    self._json(200, completion(body, step))
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in stream_chunks(body, step):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
