"""The sandbox's route filter in ``UnixToTcp``: the pure decision (which request lines pass, how the head
is rewritten), then the relay on real sockets against a recording upstream on 127.0.0.1 (allowed requests
and their streamed answers get through; refused, pipelined and smuggled ones never reach it), then against
the real guard (``python -m serve``), whose rollout API a tool call must not reach."""

from __future__ import annotations

import json
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from environments.harnesses.sandboxed import (
    REFUSAL_BODY,
    HeadError,
    UnixToTcp,
    check_prefix,
    decide,
    forwarded_head,
    parse_head,
    target_path,
)

RID = "pi-g3-r1"
PREFIX = f"/s/{RID}/v1"
CHAT = f"{PREFIX}/chat/completions"
MODELS = f"{PREFIX}/models"
BODY = b'{"model":"pi-v3","stream":true,"messages":[{"role":"user","content":"hi"}]}'
SSE = [
    b'data: {"choices":[{"delta":{"content":"he"}}]}\n\n',
    b'data: {"choices":[]}\n\n',
    b"data: [DONE]\n\n",
]


def head(method: str, target: str, *headers: str) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1:8000", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def post(target: str = CHAT, body: bytes = BODY, *headers: str) -> bytes:
    return (
        head("POST", target, "Content-Type: application/json", f"Content-Length: {len(body)}", *headers)
        + body
    )


def verdict(method: str, target: str, *headers: str) -> tuple[bool, str]:
    decision = decide(parse_head(head(method, target, *headers)), PREFIX)
    return decision.allowed, decision.reason


# -- the pure part ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("POST", CHAT),
        ("POST", CHAT + "?stream=1"),
        ("GET", MODELS),
        ("GET", MODELS + "?x=1&y=%2F"),  # the query is the guard's business, not a path
    ],
)
def test_the_rollouts_own_chat_and_models_routes_pass(method: str, target: str):
    assert verdict(method, target) == (True, "allowed")


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("POST", "/s/pi-g3-r2/v1/chat/completions"),  # another rollout
        ("GET", "/s/pi-g3-r2/v1/models"),
        ("POST", "/s/pi-g3-r1x/v1/chat/completions"),  # a rollout id that merely starts the same
        ("POST", "/rollouts"),
        ("GET", f"/rollouts/{RID}"),
        ("DELETE", f"/rollouts/{RID}"),
        ("GET", f"/rollouts/{RID}/atif"),
        ("GET", "/health"),
        ("POST", "/v1/chat/completions"),  # the model by key, outside any rollout
        ("GET", "/v1/models"),
        ("GET", "/api/v1/models"),
        ("GET", "/"),
    ],
)
def test_every_other_guard_route_is_refused(method: str, target: str):
    assert verdict(method, target) == (False, "route_not_allowed")


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("GET", CHAT),  # the right path with the wrong method
        ("DELETE", CHAT),
        ("POST", MODELS),
        ("HEAD", MODELS),
        ("GET", f"{MODELS}/pi-v3"),
        ("GET", f"/s/{RID}/api/v1/models"),  # hermes's server-type probes
        ("GET", f"/s/{RID}/api/tags"),
        ("GET", f"/s/{RID}/v1/props"),
        ("GET", f"/s/{RID}/version"),
    ],
)
def test_other_requests_under_the_rollouts_own_root_are_refused_and_told_apart(method: str, target: str):
    assert verdict(method, target) == (False, "own_rollout_route")


@pytest.mark.parametrize(
    "target",
    [
        f"{PREFIX}/../../../rollouts/{RID}",
        f"{PREFIX}/%2e%2e/%2e%2e/%2E%2E/rollouts/{RID}",
        f"{PREFIX}/chat/completions/../../../../rollouts/{RID}",
        f"{PREFIX}/chat/../chat/completions",  # resolves to the allowed path, but is not it
        f"{PREFIX}/./chat/completions",
        f"{PREFIX}/chat%2Fcompletions",
        f"{PREFIX}/chat/%63ompletions",  # an encoded letter that decodes to the allowed path
        f"/s/{RID}%2Fv1/chat/completions",
        f"/{PREFIX}/chat/completions",  # //s/...
        f"{PREFIX}//chat/completions",
        f"{PREFIX}/chat/completions/",
        f"{PREFIX}/chat/completions#frag",
        f"{PREFIX}/chat/completions%00",
        f"{PREFIX}/chat/completions%ff",  # not UTF-8
        f"http://127.0.0.1:8000{CHAT}",  # absolute-form
        f"HTTP://127.0.0.1:8000{CHAT}",
        "127.0.0.1:8000",  # authority-form
        "*",
    ],
)
def test_traversal_encoded_and_non_origin_targets_are_refused(target: str):
    assert target_path(target) is None
    allowed, _ = verdict("POST", target, "Content-Length: 0")
    assert not allowed


@pytest.mark.parametrize(
    "raw",
    [
        b"POST " + CHAT.encode() + b" HTTP/1.1\nHost: x\r\n\r\n",  # a bare LF
        b"POST " + CHAT.encode() + b" HTTP/1.1\r\nHost: x\rContent-Length: 5\r\n\r\n",  # a bare CR
        b"POST " + CHAT.encode() + b" HTTP/1.1\r\nHost: x\r\n Content-Length: 5\r\n\r\n",  # obs-fold
        b"POST " + CHAT.encode() + b" HTTP/1.1\r\nContent-Length : 5\r\n\r\n",  # space before the colon
        b"POST " + CHAT.encode() + b" HTTP/1.1\r\nX-Name: caf\xc3\xa9\r\n\r\n",
        b"POST " + CHAT.encode() + b" HTTP/1.1\r\nX-Nul: a\x00b\r\n\r\n",
        b"post " + CHAT.encode() + b" HTTP/1.1\r\n\r\n",
        b"POST  " + CHAT.encode() + b" HTTP/1.1\r\n\r\n",
        b"POST " + CHAT.encode() + b" HTTP/2.0\r\n\r\n",
        b"POST " + CHAT.encode() + b"\r\n\r\n",
        b"\r\nPOST " + CHAT.encode() + b" HTTP/1.1\r\n\r\n",
        b"",
    ],
)
def test_heads_a_lenient_server_might_read_differently_do_not_parse(raw: bytes):
    with pytest.raises(HeadError):
        parse_head(raw)


def test_a_body_the_relay_cannot_frame_exactly_is_refused():
    assert verdict("POST", CHAT, "Transfer-Encoding: chunked") == (False, "transfer_encoding")
    assert verdict("POST", CHAT, "Content-Length: 5", "Transfer-Encoding: chunked") == (
        False,
        "transfer_encoding",
    )
    assert verdict("POST", CHAT, "Content-Length: 5", "Content-Length: 5") == (False, "content_length")
    assert verdict("POST", CHAT, "Content-Length: +5") == (False, "content_length")
    assert verdict("POST", CHAT, "Content-Length: 5, 6") == (False, "content_length")
    assert decide(parse_head(head("POST", CHAT, "Content-Length: 12")), PREFIX).body_length == 12
    assert decide(parse_head(head("GET", MODELS)), PREFIX).body_length == 0


def test_the_forwarded_head_closes_the_connection_and_keeps_the_rest():
    raw = post(
        CHAT,
        BODY,
        "Connection: keep-alive, Upgrade",
        "Keep-Alive: timeout=5, max=100",
        "Proxy-Connection: keep-alive",
        "Upgrade: h2c",
        "authorization: Bearer sk-test",
        "user-agent: python-httpx/0.28.1",
    )
    out = forwarded_head(parse_head(raw[: raw.index(b"\r\n\r\n") + 4]))
    assert out.endswith(b"\r\n\r\n")
    lines = out.decode().split("\r\n")[:-2]
    assert lines[0] == f"POST {CHAT} HTTP/1.1"
    names = [line.split(":", 1)[0].lower() for line in lines[1:]]
    assert names.count("connection") == 1 and "Connection: close" in lines
    assert not {"keep-alive", "proxy-connection", "upgrade"} & set(names)
    assert f"Content-Length: {len(BODY)}" in lines and "authorization: Bearer sk-test" in lines
    assert "Host: 127.0.0.1:8000" in lines and "user-agent: python-httpx/0.28.1" in lines
    again = parse_head(out)  # what the relay sends is itself a head the filter accepts
    assert decide(again, PREFIX).allowed and again.values("connection") == ("close",)


@pytest.mark.parametrize("prefix", ["/s/a b/v1", "/s/../v1", "s/x/v1", "/s/x/v1/", "/s/%2e/v1", "/", ""])
def test_a_prefix_that_would_need_encoding_or_normalising_is_rejected(prefix: str):
    with pytest.raises(ValueError, match="allowed_prefix"):
        check_prefix(prefix)
    assert check_prefix("/s/eval-pi-step12-0a1b2c3d4e/v1") == "/s/eval-pi-step12-0a1b2c3d4e/v1"


# -- the relay on sockets -----------------------------------------------------------------------------


@dataclass
class Seen:
    """One upstream connection: every byte it received, and the requests the upstream parsed from them."""

    raw: bytearray = field(default_factory=bytearray)
    requests: list[tuple[bytes, bytes]] = field(default_factory=list)


class RecordingUpstream:
    """A raw HTTP/1.1 server on 127.0.0.1 that parses requests as a keep-alive server would (one after
    another on a connection), answers ``/models`` with JSON and chat with a chunked SSE stream sent in
    pieces, and records every byte and request per connection. After a ``Connection: close`` request it
    keeps reading for a moment, so bytes the relay should not have forwarded would still be seen."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections: list[Seen] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            seen = Seen()
            self.connections.append(seen)
            threading.Thread(target=self._serve, args=(conn, seen), daemon=True).start()

    def _serve(self, conn: socket.socket, seen: Seen) -> None:
        conn.settimeout(2.0)
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    seen.raw += data
                    buf += data
                request_head, buf = buf.split(b"\r\n\r\n", 1)
                lines = request_head.decode().split("\r\n")
                fields = dict(line.lower().split(": ", 1) for line in lines[1:])
                size = int(fields.get("content-length", "0"))
                while len(buf) < size:
                    data = conn.recv(65536)
                    if not data:
                        return
                    seen.raw += data
                    buf += data
                seen.requests.append((request_head + b"\r\n\r\n", buf[:size]))
                buf = buf[size:]
                self._respond(conn, lines[0].split(" ")[1])
                if fields.get("connection") == "close":
                    conn.settimeout(0.5)
                    while data := conn.recv(65536):
                        seen.raw += data
                    return
        except OSError:
            return
        finally:
            conn.close()

    def _respond(self, conn: socket.socket, target: str) -> None:
        if target.endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "pi-v3"}]}).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            conn.sendall(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            return
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for event in SSE:
            time.sleep(0.05)
            conn.sendall(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        conn.sendall(b"0\r\n\r\n")

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def upstream() -> Iterator[RecordingUpstream]:
    server = RecordingUpstream()
    yield server
    server.close()


@pytest.fixture
def sockets() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="hrf"))  # unix socket paths must stay short
    yield folder
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


def exchange(relay: UnixToTcp, *parts: bytes, pause_s: float = 0.0) -> bytes:
    """Send ``parts`` through the relay (``pause_s`` apart) and read until the relay closes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(str(relay.path))
        for part in parts:
            client.sendall(part)
            time.sleep(pause_s)
        out = b""
        while data := client.recv(65536):
            out += data
    return out


def split_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    response_head, body = raw.split(b"\r\n\r\n", 1)
    lines = response_head.decode().split("\r\n")
    fields = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}
    if fields.get("transfer-encoding") == "chunked":
        chunks, rest = [], body
        while True:
            size_line, rest = rest.split(b"\r\n", 1)
            size = int(size_line, 16)
            if size == 0:
                break
            chunks.append(rest[:size])
            rest = rest[size + 2 :]
        body = b"".join(chunks)
    return int(lines[0].split(" ")[1]), fields, body


def streamed_text(sse: bytes) -> str:
    """The assistant text of a chat-completions event stream."""
    events = [line[6:] for line in sse.decode().splitlines() if line.startswith("data: {")]
    deltas = [c.get("delta", {}) for e in events for c in json.loads(e)["choices"]]
    return "".join(d.get("content") or "" for d in deltas)


def wait_for(predicate, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_an_allowed_chat_request_reaches_upstream_once_and_its_stream_comes_back(upstream, sockets):
    with UnixToTcp(sockets / "g.sock", upstream.port, allowed_prefix=PREFIX) as relay:
        raw = exchange(relay, post(CHAT, BODY, "Connection: keep-alive", "Keep-Alive: timeout=5"))
    status, fields, body = split_response(raw)
    assert status == 200 and fields["content-type"] == "text/event-stream"
    assert body == b"".join(SSE)
    wait_for(lambda: upstream.connections and upstream.connections[0].requests)
    [seen] = upstream.connections
    [(request_head, request_body)] = seen.requests
    assert request_body == BODY
    assert request_head.startswith(f"POST {CHAT} HTTP/1.1\r\n".encode())
    assert b"Connection: close\r\n" in request_head and b"keep-alive" not in request_head.lower()
    assert relay.refused == 0


def test_the_models_route_and_a_body_sent_after_the_head_get_through(upstream, sockets):
    big = json.dumps({"messages": [{"role": "user", "content": "x" * 200_000}]}).encode()
    with UnixToTcp(sockets / "g.sock", upstream.port, allowed_prefix=PREFIX) as relay:
        status, _, body = split_response(exchange(relay, head("GET", MODELS)))
        assert status == 200 and json.loads(body)["data"][0]["id"] == "pi-v3"
        request = post(CHAT, big)
        cut = request.index(b"\r\n\r\n") + 4
        raw = exchange(relay, request[:cut], request[cut : cut + 1000], request[cut + 1000 :], pause_s=0.1)
    assert split_response(raw)[2] == b"".join(SSE)
    wait_for(lambda: len(upstream.connections) == 2 and all(c.requests for c in upstream.connections))
    assert [len(c.requests) for c in upstream.connections] == [1, 1]
    assert upstream.connections[1].requests[0][1] == big


@pytest.mark.parametrize(
    "request_bytes",
    [
        head("GET", f"/rollouts/{RID}"),
        head("DELETE", f"/rollouts/{RID}"),
        post("/rollouts", b'{"harness":"pi","adapter":"pi-v3"}'),
        post("/s/pi-g3-r2/v1/chat/completions"),
        post("/v1/chat/completions"),
        head("GET", "/health"),
        post(f"{PREFIX}/%2e%2e/%2e%2e/%2e%2e/rollouts/{RID}"),
        post(f"http://127.0.0.1:8000{CHAT}"),
        post(CHAT, BODY, "Transfer-Encoding: chunked"),
        b"GARBAGE\r\n\r\n",
    ],
)
def test_a_refused_request_gets_the_403_and_never_reaches_upstream(upstream, sockets, request_bytes: bytes):
    with UnixToTcp(sockets / "g.sock", upstream.port, allowed_prefix=PREFIX) as relay:
        raw = exchange(relay, request_bytes)
        status, fields, body = split_response(raw)
        assert status == 403 and fields["connection"] == "close"
        assert json.loads(body) == REFUSAL_BODY
        assert relay.refused == 1
    time.sleep(0.2)
    assert upstream.connections == []  # not even a connection was opened


def test_refusals_are_counted_by_reason(upstream, sockets):
    with UnixToTcp(sockets / "g.sock", upstream.port, allowed_prefix=PREFIX) as relay:
        for request in (
            head("DELETE", f"/rollouts/{RID}"),
            head("GET", "/health"),
            head("GET", f"/s/{RID}/version"),
        ):
            assert split_response(exchange(relay, request))[0] == 403
        assert split_response(exchange(relay, head("GET", MODELS)))[0] == 200
        assert relay.refused == 3
        assert dict(relay.refusals) == {"route_not_allowed": 2, "own_rollout_route": 1}
        assert relay.refused_outside == 2


def test_two_pipelined_requests_only_the_first_reaches_upstream(upstream, sockets):
    first, second = post(CHAT, BODY), head("DELETE", f"/rollouts/{RID}")
    with UnixToTcp(sockets / "g.sock", upstream.port, allowed_prefix=PREFIX) as relay:
        raw = exchange(relay, first + second)
    assert raw.count(b"HTTP/1.1 ") == 1 and split_response(raw)[2] == b"".join(SSE)
    wait_for(lambda: upstream.connections and upstream.connections[0].requests)
    time.sleep(0.7)  # the upstream reads on for 0.5 s after its answer
    [seen] = upstream.connections
    assert len(seen.requests) == 1
    assert bytes(seen.raw).endswith(BODY) and b"DELETE" not in seen.raw


SMUGGLED = head("GET", f"/rollouts/{RID}")


@pytest.mark.parametrize(
    "parts",
    [
        (post(CHAT, BODY) + SMUGGLED, SMUGGLED),  # in the head's segment, then once more later
        (
            head("POST", CHAT, f"Content-Length: {len(BODY)}"),
            BODY[:10],
            BODY[10:] + SMUGGLED,  # in the segment that ends the body
        ),
    ],
    ids=["with-the-head", "with-the-body"],
)
def test_a_request_smuggled_past_the_content_length_never_reaches_upstream(upstream, sockets, parts):
    with UnixToTcp(sockets / "g.sock", upstream.port, allowed_prefix=PREFIX) as relay:
        raw = exchange(relay, *parts, pause_s=0.1)
    assert split_response(raw)[2] == b"".join(SSE)
    wait_for(lambda: upstream.connections and upstream.connections[0].requests)
    time.sleep(0.7)
    [seen] = upstream.connections
    assert bytes(seen.raw).endswith(BODY) and b"/rollouts/" not in seen.raw
    assert len(seen.requests) == 1


def test_a_head_that_does_not_arrive_in_time_is_refused(upstream, sockets):
    with UnixToTcp(sockets / "g.sock", upstream.port, allowed_prefix=PREFIX, head_deadline_s=0.3) as relay:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(5)
            client.connect(str(relay.path))
            client.sendall(f"POST {CHAT} HTTP/1.1\r\nHost: x\r\n".encode())  # and never the blank line
            raw = b""
            while data := client.recv(65536):
                raw += data
        assert split_response(raw)[0] == 403
        assert dict(relay.refusals) == {"head_timeout": 1}
    assert upstream.connections == []


def test_without_a_prefix_the_relay_still_passes_everything(upstream, sockets):
    with UnixToTcp(sockets / "g.sock", upstream.port) as relay:
        raw = exchange(relay, head("GET", "/v1/models", "Connection: close"))
    assert split_response(raw)[0] == 200
    wait_for(lambda: upstream.connections and upstream.connections[0].requests)
    assert upstream.connections[0].requests[0][0].startswith(b"GET /v1/models ")


# -- the real guard ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_guard(tmp_path_factory: pytest.TempPathFactory):
    """``python -m serve`` in front of the scripted upstream, with one rollout open."""
    from serve.standalone import guard_subprocess
    from tests.environments.harnesses.conftest import http_json
    from tests.environments.harnesses.scripted_upstream import Say, ScriptedUpstream

    scripted = ScriptedUpstream([Say("FILTER_OK")]).start()
    log = tmp_path_factory.mktemp("guard") / "guard.log"
    try:
        with guard_subprocess(scripted.base_url, log) as (url, port):
            status, body = http_json(
                "POST", f"{url}/rollouts", {"rollout_id": RID, "harness": "pi", "adapter": "m"}
            )
            assert status == 201, body
            yield url, port
    finally:
        scripted.stop()


def test_through_the_real_guard_the_chat_works_and_the_rollout_api_is_out_of_reach(real_guard, sockets):
    from tests.environments.harnesses.conftest import http_json

    url, port = real_guard
    tool = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    messages = [{"role": "user", "content": "hi"}]
    chat = json.dumps({"model": "m", "stream": True, "messages": messages, "tools": [tool]}).encode()
    with UnixToTcp(sockets / "g.sock", port, allowed_prefix=PREFIX) as relay:
        status, _, body = split_response(exchange(relay, post(CHAT, chat, "Connection: keep-alive")))
        assert status == 200 and body.rstrip().endswith(b"data: [DONE]")
        assert streamed_text(body) == "FILTER_OK"
        status, _, body = split_response(exchange(relay, head("GET", MODELS)))
        assert status == 200 and json.loads(body)["data"][0]["id"] == "m"
        for attack in (
            head("DELETE", f"/rollouts/{RID}"),
            head("GET", f"/rollouts/{RID}"),
            post(CHAT, chat) + head("DELETE", f"/rollouts/{RID}"),  # pipelined behind an allowed request
            post(CHAT, b"0\r\n\r\n" + head("DELETE", f"/rollouts/{RID}"), "Transfer-Encoding: chunked"),
        ):
            exchange(relay, attack)
        assert relay.refused == 3
    status, record = http_json("GET", f"{url}/rollouts/{RID}")
    assert status == 200 and record["closed"] is False, record  # no DELETE got through
    assert len(record["turns"]) == 2, record  # the chat above and the one pipelined attack's allowed half
