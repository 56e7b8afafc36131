"""The guard proxy: async OpenAI-compatible forwarding with every tool call checked.

`GuardProxy` holds the open rollouts and talks to the upstream server through an injected
`httpx.AsyncClient`; `GuardProxy.app()` is the Starlette app over it (used by the Ray Serve
deployment in `serve/app.py` and by `python -m serve`). Routes:

- `POST /rollouts` `{"rollout_id"?, "harness", "adapter", "allowlist"?, "protected"?}` opens a rollout (201);
  `GET /rollouts/{id}` reads its record, `GET /rollouts/{id}/atif` its ATIF trajectory,
  `DELETE /rollouts/{id}` closes it (returns the final record and drops its state).
- `POST /s/{id}/v1/chat/completions` (stream or not), `GET /s/{id}/v1/models`.
- `GET /api/v1/models` (hermes's probe) and `GET /v1/models`: the upstream's model list.
- Standalone (`ProxyConfig.auto_open`): `/s/{id}/...` opens a session on first use, and
  `POST /v1/chat/completions` uses one session per API key.

Errors, as the three harnesses react to them (each retries a 5xx, so none is ever sent): a malformed
request gets a 400 (404 for an unknown rollout) with `{"error": {message, type, code}}`; an
upstream 4xx is passed on as it is; an upstream that is unreachable, times out, answers 5xx or
something unreadable gets a 424 `upstream_error`, never a 5xx, because every harness retries
5xx (pi 12 times over ~24 s) while a 4xx stops it after one request with the message shown;
the turn is recorded with the error code and the rollout reads `failed` (infrastructure, to be
dropped or rerun by the trainer, not scored). A failure after the stream started becomes an
`error` event plus `[DONE]` (the OpenAI SDKs raise on it); a harness that hangs up mid-stream
leaves its turn recorded as `client_closed_stream`. Bad model output (unparsable or blocked
calls) is never an error: it is a normal 200 turn carrying the guard's notice.

Per-rollout state is bounded (`max_rollouts`, `max_turns`, a few conversations per rollout)
and dropped on close.

`ProxyConfig.guard` (`serve.mode.GuardMode`): `enforce` applies the blocks as above; `monitor`
checks every call the same way but sends every call on, recording what it would have blocked in
the turn's `would_block` (the rollout is never marked blocked); `off` checks and records nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from actors.rollout_settings import temperature_problem
from environments.harnesses.route import ROLLOUT_ID, rollout_path, rollout_route

from .book import Book, LocalBook, RolloutBook, RolloutView
from .engine import GuardConfig, GuardSession
from .grammar import tool_grammar_problem
from .mode import GuardMode
from .record import MAX_TURNS, RolloutRecord, TurnRecord, UpstreamError, upstream_message
from .sse import SSEDecoder
from .turn import (
    RequestError,
    StreamTurn,
    TurnParts,
    conversation_key,
    guard_completion,
    parse_request,
    upstream_body,
    wants_usage,
)

log = logging.getLogger("serve.guard")


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    upstream: str
    """OpenAI base URL of the model server, with its `/v1` (e.g. `http://127.0.0.1:8000/v1`)."""
    auto_open: bool = False
    """Standalone mode: open sessions on first use (per `/s/<id>` or per API key)."""
    upstream_api_key: str | None = None
    """Sent upstream as the bearer token; the harness's own key is never forwarded."""
    max_rollouts: int = 4096
    """Open rollouts at most; standalone mode evicts the least recently used beyond it."""
    max_turns: int = MAX_TURNS
    max_conversations: int = 8
    """Conversations (a guard session each) kept per rollout, least recently used dropped."""
    max_body_bytes: int = 32 * 1024 * 1024
    fail_closed: bool = True
    guard: GuardMode = GuardMode.ENFORCE
    """`enforce` (blocks applied), `monitor` (would-be blocks recorded, nothing blocked) or `off`."""
    temperature: float | None = None
    """The sampling temperature every forwarded turn asks for, replacing the harness's (none of pi,
    opencode and hermes sends one); None leaves the request as sent and the server's default applies."""
    tool_grammar: str | None = None
    """The server's tool-call parser, when every forwarded turn's tool calls are constrained to the
    request's declared tools in its format (`serve.grammar`); None: the model writes calls freely."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "guard", GuardMode.parse(self.guard))
        if problem := temperature_problem(self.temperature):
            raise ValueError(problem)
        if self.tool_grammar is not None and (problem := tool_grammar_problem(self.tool_grammar)):
            raise ValueError(problem)
        if not self.upstream.startswith(("http://", "https://")):
            raise ValueError(
                f"upstream={self.upstream!r}: must be an http(s) URL such as http://127.0.0.1:8000/v1"
            )
        if self.max_rollouts < 1 or self.max_turns < 1 or self.max_conversations < 1:
            raise ValueError("max_rollouts, max_turns and max_conversations must be >= 1")


def default_client(connect_s: float = 10.0, read_s: float = 600.0) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=512, max_keepalive_connections=128)
    return httpx.AsyncClient(timeout=httpx.Timeout(read_s, connect=connect_s), limits=limits)


def _error(status: int, code: str, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": code}}, status_code=status)


def _tool_names(session: GuardSession) -> tuple[str, ...]:
    return tuple(sorted(session.schemas))


class GuardProxy:
    def __init__(
        self,
        config: ProxyConfig,
        client: httpx.AsyncClient,
        *,
        book: Book | None = None,
        wall_clock: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """``book``: where the open rollouts are kept (``serve.book``); by default in this process."""
        self.config = config
        self.client = client
        self.book = book or LocalBook(RolloutBook(config.max_rollouts, config.guard, config.auto_open))
        self.wall_clock = wall_clock
        self.clock = clock
        self.sessions: OrderedDict[str, OrderedDict[str, GuardSession]] = OrderedDict()
        """This replica's guard sessions per rollout, per conversation (a cache: see ``serve.book``)."""

    # -- rollouts ---------------------------------------------------------------------------
    async def open(
        self,
        harness: str,
        adapter: str,
        allowlist: tuple[str, ...] = (),
        rollout_id: str | None = None,
        protected: tuple[str, ...] = (),
    ) -> RolloutRecord:
        """Open a rollout (called by the rollout actor before it starts the harness). `protected`:
        the task's paths the agent must not change (tests, runner configuration, graders), relative
        to its working directory or absolute; the rules judge writes against them."""
        return await self.book.call(
            "open", harness, adapter, tuple(allowlist), rollout_id, tuple(protected), self.wall_clock()
        )

    async def record(self, rollout_id: str) -> RolloutRecord:
        return await self.book.call("record", rollout_id)

    async def close(self, rollout_id: str) -> RolloutRecord:
        """Close a rollout: its final record, and its state dropped."""
        self.sessions.pop(rollout_id, None)
        return await self.book.call("close", rollout_id)

    async def _session(
        self, rollout_id: str, rollout: RolloutView, request: dict[str, object], key: str
    ) -> GuardSession | None:
        if self.config.guard is GuardMode.OFF:
            return None  # nothing is checked: no facts to keep
        sessions = self.sessions.get(rollout_id)
        if sessions is None:
            sessions = self.sessions[rollout_id] = OrderedDict()
            while len(self.sessions) > self.config.max_rollouts:
                self.sessions.popitem(last=False)
        self.sessions.move_to_end(rollout_id)
        session = sessions.get(key)
        if session is None:
            config = GuardConfig(rollout.record.allowlist, self.config.fail_closed, rollout.protected)
            session = GuardSession(request.get("tools"), config)
            # pi and opencode compact by rewriting the second message, which starts a new conversation
            # key: a new conversation with the same tools continues this rollout's agent, so it keeps
            # what the latest one had shown (a separate summarisation request has no tools). The latest
            # is this replica's, else the book's (another replica served it).
            if session.schemas:
                names = _tool_names(session)
                earlier = [s for s in sessions.values() if _tool_names(s) == names]
                facts = earlier[-1].facts if earlier else await self.book.call("facts", rollout_id, names)
                if facts is not None:
                    session.facts.absorb(facts)
            sessions[key] = session
            while len(sessions) > self.config.max_conversations:
                sessions.popitem(last=False)
        sessions.move_to_end(key)
        messages = request["messages"]
        assert isinstance(messages, list)
        session.sync(messages)
        return session

    def _commit(
        self,
        rollout_id: str,
        request: dict[str, object],
        key: str,
        session: GuardSession | None,
        parts: TurnParts,
        *,
        stream: bool,
        started_at: float,
        t0: float,
        first: float | None,
        status: int | None = None,
    ) -> Awaitable[int]:
        """Send the turn to the book (at once: the book has it even if the caller's wait is cancelled);
        the awaitable gives its index (-1: the rollout was closed meanwhile)."""
        turn = TurnRecord(
            index=0,  # numbered by the book
            prompt_ids=tuple(parts.prompt_ids),
            completion_ids=tuple(parts.completion_ids),
            logprobs=tuple(parts.logprobs) if len(parts.logprobs) == len(parts.completion_ids) else (),
            tool_calls=parts.tool_calls,
            blocks=tuple(parts.blocks),
            would_block=tuple(parts.would_block),
            finish_reason=parts.finish_reason,
            error=parts.error,
            upstream_status=status,
            upstream_message=parts.upstream_message,
            stream=stream,
            started_at_s=started_at,
            first_token_s=None if first is None else first - t0,
            duration_s=max(0.0, self.clock() - t0),
            conversation=key,
        )
        if parts.error is not None:
            log.warning(
                "guard upstream failure rollout=%s error=%s status=%s %s",
                rollout_id,
                parts.error.value,
                status,
                parts.upstream_message,
            )
        for block in parts.blocks:
            log.warning(
                "guard block rollout=%s rule=%s reason=%s tool=%s",
                rollout_id,
                block.rule.value,
                block.reason.value,
                block.tool_name[:64],
            )
        for block in parts.would_block:
            log.info(
                "guard would block (monitor, call sent on) rollout=%s rule=%s reason=%s tool=%s",
                rollout_id,
                block.rule.value,
                block.reason.value,
                block.tool_name[:64],
            )
        conversation = None
        if parts.error is None:
            messages = request["messages"]
            assert isinstance(messages, list)
            conversation = (*messages, parts.reply())
        facts = (_tool_names(session), session.facts) if session is not None and session.schemas else None
        has_tools = bool(request.get("tools"))
        return self.book.call("commit", rollout_id, turn, conversation, key, has_tools, facts)

    # -- chat -------------------------------------------------------------------------------
    async def chat(self, rollout_id: str, raw: bytes) -> Response:
        try:
            if len(raw) > self.config.max_body_bytes:
                raise RequestError(413, "body_too_large", "the request body is too large")
            request = parse_request(raw)
            rollout: RolloutView = await self.book.call("view", rollout_id, self.wall_clock())
            if rollout.turns >= self.config.max_turns:
                raise RequestError(400, "rollout_turn_limit", "this rollout has reached its turn limit")
        except RequestError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        client_model = request.get("model")
        client_model = client_model if isinstance(client_model, str) and client_model else "guard"
        model = rollout.record.adapter or client_model
        key = conversation_key(request)
        session = await self._session(rollout_id, rollout, request, key)
        body = upstream_body(request, model, self.config.temperature, self.config.tool_grammar)
        started_at, t0 = self.wall_clock(), self.clock()
        stream = bool(request.get("stream"))
        failed = TurnParts()

        def commit(parts: TurnParts, first: float | None = None, status: int | None = None) -> Awaitable[int]:
            return self._commit(
                rollout_id, request, key, session, parts, stream=stream, started_at=started_at, t0=t0,
                first=first, status=status,
            )  # fmt: skip

        url = self.config.upstream.rstrip("/") + "/chat/completions"
        headers = {"content-type": "application/json"}
        if self.config.upstream_api_key:
            headers["authorization"] = f"Bearer {self.config.upstream_api_key}"
        upstream_request = self.client.build_request("POST", url, content=json.dumps(body), headers=headers)
        try:
            upstream = await self.client.send(upstream_request, stream=True)
        except httpx.TimeoutException:
            failed.error = UpstreamError.TIMEOUT
            await commit(failed)
            return self._upstream_failed(failed.error)
        except httpx.HTTPError:
            failed.error = UpstreamError.CONNECT
            await commit(failed)
            return self._upstream_failed(failed.error)
        if upstream.status_code >= 400:
            content = await self._read_quietly(upstream)
            failed.error = UpstreamError.STATUS
            failed.upstream_message = upstream_message(content)
            await commit(failed, status=upstream.status_code)
            if upstream.status_code < 500:
                media = upstream.headers.get("content-type", "application/json")
                return Response(content, status_code=upstream.status_code, media_type=media)
            return self._upstream_failed(failed.error, upstream.status_code)
        if not stream:
            return await self._complete(upstream, session, client_model, commit)
        turn = StreamTurn(
            session, client_model, wants_usage(request), self.config.fail_closed, self.config.guard
        )
        return StreamingResponse(
            self._relay(upstream, turn, commit),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
            background=BackgroundTask(upstream.aclose),  # also if the stream never started
        )

    async def _relay(
        self, upstream: httpx.Response, turn: StreamTurn, commit: Callable[..., Awaitable[int]]
    ) -> AsyncIterator[bytes]:
        decoder = SSEDecoder()
        first: float | None = None
        committed = False
        try:
            try:
                async for chunk in upstream.aiter_bytes():
                    if first is None:
                        first = self.clock()
                    # What one upstream read completes goes out as one write (fewer ASGI sends).
                    outs = [out for data in decoder.feed(chunk) for out in turn.on_data(data)]
                    if outs:
                        yield b"".join(outs)
                    if turn.parts.error is not None:
                        break
                outs = [out for data in decoder.close() for out in turn.on_data(data)]
                if outs:
                    yield b"".join(outs)
            except (httpx.HTTPError, ValueError):
                for out in turn.fail(UpstreamError.INTERRUPTED):
                    yield out
            except Exception:  # noqa: BLE001 - whatever upstream sent, the harness gets a well-formed end
                log.exception("guard could not relay an upstream stream (rollout turn kept as failed)")
                for out in turn.fail(UpstreamError.MALFORMED):
                    yield out
            tail = b"".join(turn.close())
            # The turn is in the book before the harness reads the end of the stream, so a close
            # that follows at once (on any replica) finds it.
            committed = True
            await commit(turn.parts, first, upstream.status_code)
            if tail:
                yield tail
        finally:
            # Runs on a client disconnect too (the generator is cancelled): ``commit`` sends the
            # turn before its first await, so it is kept even if that await is cancelled again.
            try:
                if not committed:
                    if not turn.ended and turn.parts.error is None:
                        turn.parts.error = UpstreamError.CLIENT_CLOSED
                    await commit(turn.parts, first, upstream.status_code)
            finally:
                await upstream.aclose()

    async def _complete(
        self,
        upstream: httpx.Response,
        session: GuardSession | None,
        model: str,
        commit: Callable[..., Awaitable[int]],
    ) -> Response:
        first = self.clock()
        try:
            payload = json.loads(await upstream.aread())
            body, parts = guard_completion(
                session, payload, model, self.config.fail_closed, self.config.guard
            )
        except Exception as exc:  # noqa: BLE001 - bad upstream output is a 424, never a 5xx
            if not isinstance(exc, httpx.HTTPError | ValueError):
                log.exception("guard could not read an upstream response")
            parts = TurnParts(error=UpstreamError.MALFORMED)
            await commit(parts, first, upstream.status_code)
            return self._upstream_failed(UpstreamError.MALFORMED, upstream.status_code)
        finally:
            await upstream.aclose()
        await commit(parts, first, upstream.status_code)
        return JSONResponse(body)

    @staticmethod
    async def _read_quietly(upstream: httpx.Response) -> bytes:
        try:
            return await upstream.aread()
        except httpx.HTTPError:
            return b'{"error": {"message": "upstream error", "type": "upstream_error"}}'
        finally:
            await upstream.aclose()

    @staticmethod
    def _upstream_failed(error: UpstreamError, status: int | None = None) -> JSONResponse:
        where = f" (HTTP {status})" if status else ""
        message = f"the model server failed{where}: {error.value}; the guard did not retry"
        return _error(424, error.value, message, kind="upstream_error")

    async def models(self) -> Response:
        """The upstream's model list (hermes probes `/api/v1/models`); 404 when unavailable."""
        try:
            upstream = await self.client.get(self.config.upstream.rstrip("/") + "/models")
        except httpx.HTTPError:
            return _error(404, "models_unavailable", "the model list is not available", kind="upstream_error")
        if upstream.status_code != 200:
            return _error(404, "models_unavailable", "the model list is not available", kind="upstream_error")
        return Response(upstream.content, media_type="application/json")

    async def rollout_models(self, rollout_id: str) -> Response:
        try:
            rollout: RolloutView = await self.book.call("view", rollout_id, self.wall_clock())
        except RequestError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        name = rollout.record.adapter or "guard"
        model = {"id": name, "object": "model", "created": 0, "owned_by": "guard"}
        return JSONResponse({"object": "list", "data": [model]})

    # -- HTTP -------------------------------------------------------------------------------
    def app(self) -> Starlette:
        return Starlette(routes=routes(self))


def _key_session(request: Request) -> str:
    auth = request.headers.get("authorization", "")
    token = auth.removeprefix("Bearer ").strip() or "anonymous"
    return "key-" + hashlib.sha256(token.encode()).hexdigest()[:16]


def routes(proxy: GuardProxy) -> list[Route]:
    async def open_rollout(request: Request) -> Response:
        try:
            try:
                spec = json.loads(await request.body())
            except ValueError:
                raise RequestError(400, "body_not_json", "the request body is not valid JSON") from None
            if not isinstance(spec, dict):
                raise RequestError(400, "body_not_object", "the request body must be a JSON object")
            harness, adapter = spec.get("harness"), spec.get("adapter")
            allowlist = spec.get("allowlist", [])
            rollout_id = spec.get("rollout_id")
            protected = spec.get("protected", [])
            if not isinstance(protected, list) or not all(isinstance(p, str) for p in protected):
                raise RequestError(400, "protected_invalid", "`protected` must be a list of paths")
            if not isinstance(harness, str) or not isinstance(adapter, str) or not adapter:
                raise RequestError(400, "rollout_invalid", "`harness` and `adapter` must be strings")
            if not isinstance(allowlist, list) or not all(isinstance(h, str) for h in allowlist):
                raise RequestError(400, "allowlist_invalid", "`allowlist` must be a list of host names")
            if rollout_id is not None and (not isinstance(rollout_id, str) or not rollout_id.isprintable()):
                raise RequestError(400, "rollout_id_invalid", "`rollout_id` must be a printable string")
            record = await proxy.open(harness, adapter, tuple(allowlist), rollout_id, tuple(protected))
        except RequestError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        return JSONResponse(record.to_json(), status_code=201)

    def on_record(
        read: Callable[[str], Awaitable[RolloutRecord]], atif: bool = False
    ) -> Callable[..., object]:
        async def handler(request: Request) -> Response:
            try:
                record = await read(request.path_params["rollout_id"])
            except RequestError as exc:
                return JSONResponse(exc.body(), status_code=exc.status)
            return JSONResponse(record.to_atif() if atif else record.to_json())

        return handler

    async def chat(request: Request) -> Response:
        return await proxy.chat(request.path_params[ROLLOUT_ID], await request.body())

    async def chat_by_key(request: Request) -> Response:
        if not proxy.config.auto_open:
            return _error(404, "route_not_found", f"use {rollout_path('<rollout_id>')}/chat/completions")
        return await proxy.chat(_key_session(request), await request.body())

    async def models(request: Request) -> Response:
        return await proxy.models()

    async def rollout_models(request: Request) -> Response:
        return await proxy.rollout_models(request.path_params[ROLLOUT_ID])

    async def health(request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "rollouts": await proxy.book.size(), "guard": proxy.config.guard.value}
        )

    return [
        Route("/health", health, methods=["GET"]),
        Route("/rollouts", open_rollout, methods=["POST"]),
        Route("/rollouts/{rollout_id}", on_record(proxy.record), methods=["GET"]),
        Route("/rollouts/{rollout_id}", on_record(proxy.close), methods=["DELETE"]),
        Route("/rollouts/{rollout_id}/atif", on_record(proxy.record, atif=True), methods=["GET"]),
        Route(rollout_route("/chat/completions"), chat, methods=["POST"]),
        Route(rollout_route("/models"), rollout_models, methods=["GET"]),
        Route("/v1/chat/completions", chat_by_key, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/api/v1/models", models, methods=["GET"]),
    ]
