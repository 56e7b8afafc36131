"""One chat-completions turn through the guard (pure: no I/O).

- `parse_request(raw)` checks the harness's request and raises `RequestError` (a 4xx with a
  code naming the problem) for anything malformed.
- `upstream_body(request, model, temperature, tool_grammar)` is what goes to the server: its
  chat-completions fields with the rollout's adapter as `model`, the job's sampling temperature where
  it sets one, its tool calls constrained to the declared tools where the job asks (`serve.grammar`),
  and token ids, logprobs and usage asked for.
- `StreamTurn` takes the server's stream events one by one and returns the bytes the harness
  gets: text and reasoning deltas as they arrive; tool-call deltas held (assembled per
  (choice, index)) until the choice finishes, then either the checked calls or, if any call is
  blocked, the rule's notice as assistant text with finish_reason "stop"; then usage and
  `[DONE]`. Token ids and logprobs are kept for the record and never sent on.
- `guard_completion(...)` does the same for a non-streamed response.

Every call of a turn is judged against the conversation before that turn, and one blocked call
drops the whole turn's calls (the rollout is marked blocked and scores 0 either way). That is
`GuardMode.ENFORCE`; under `MONITOR` the calls are judged the same way but always pass, the blocks
they would have got kept apart as `would_block`; under `OFF` nothing is judged (`serve.mode`). A
finding held at notice (`serve.precision`) never blocks: in either mode it joins `would_block` as a
notice and its call goes on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .decisions import Allow, Block, Decision, Reason, RuleId, Unknown, Verdict, verdict
from .engine import GuardSession
from .grammar import constrained, tool_call_tag
from .mode import GuardMode
from .record import BlockRecord, UpstreamError, reply_message
from .sse import DONE, ChunkWriter
from .toolcalls import ToolCall, ToolCallAssembler

REASONING_KEYS = ("reasoning_content", "reasoning")
# Fields the server adds for us that the harness must not see.
PRIVATE_KEYS = ("prompt_token_ids", "prompt_logprobs", "kv_transfer_params")


@dataclass(frozen=True)
class RequestError(Exception):
    status: int
    code: str
    message: str

    def body(self) -> dict[str, object]:
        return {"error": {"message": self.message, "type": "invalid_request_error", "code": self.code}}


def parse_request(raw: bytes) -> dict[str, object]:
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise RequestError(400, "body_not_json", "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise RequestError(400, "body_not_object", "the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "messages_missing", "`messages` must be a non-empty list")
    for position, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise RequestError(
                400, "message_invalid", f"messages[{position}] must be an object with a `role`"
            )
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise RequestError(400, "tools_invalid", "`tools` must be a list")
    if not isinstance(body.get("stream", False), bool):
        raise RequestError(400, "stream_invalid", "`stream` must be a boolean")
    if body.get("n", 1) not in (1, None):
        raise RequestError(400, "n_unsupported", "`n` must be 1: the guard records one completion per turn")
    if "model" in body and not isinstance(body["model"], str):
        raise RequestError(400, "model_invalid", "`model` must be a string")
    return body


REQUEST_FIELDS = frozenset(
    {
        "messages",
        "model",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "user",
        "store",
        "reasoning_effort",
        "response_format",
    }
)
"""What a harness's request may ask of the server: the chat-completions fields the harnesses send. Server
extensions (guided decoding, logits processors, prompt embeddings) never reach it: a tool call that posts
to its own route could otherwise make the server fail, and a server failure is retried, not scored."""


def upstream_body(
    request: Mapping[str, object],
    model: str,
    temperature: float | None = None,
    tool_grammar: str | None = None,
) -> dict[str, object]:
    body = {k: v for k, v in request.items() if k in REQUEST_FIELDS}
    body["model"] = model
    if temperature is not None:  # the job's sampling, whatever the harness sent
        body["temperature"] = temperature
    if tool_grammar is not None and constrained(body):
        if (tag := tool_call_tag(body.get("tools"), tool_grammar)) is not None:
            body["response_format"] = tag
    body["logprobs"] = True
    body["return_token_ids"] = True
    body.pop("n", None)
    options = body.pop("stream_options", None)
    if body.get("stream"):
        body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    return body


def wants_usage(request: Mapping[str, object]) -> bool:
    options = request.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def conversation_key(request: Mapping[str, object]) -> str:
    """Which conversation a request continues: its tools' names and first two messages."""
    messages = request.get("messages")
    head = messages[:2] if isinstance(messages, list) else []
    tools = request.get("tools")
    names = [
        t.get("function", {}).get("name")
        if isinstance(t, dict) and isinstance(t.get("function"), dict)
        else None
        for t in (tools if isinstance(tools, list) else [])
    ]
    blob = json.dumps([names, head], sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _ints(value: object) -> list[int]:
    if type(value) is not list:
        return []
    return [v for v in value if type(v) is int]


def _logprobs(value: object) -> list[float]:
    content = value.get("content") if type(value) is dict else None
    if type(content) is not list:
        return []
    out = []
    for entry in content:
        logprob = entry.get("logprob") if type(entry) is dict else None
        out.append(float(logprob) if type(logprob) is float or type(logprob) is int else float("nan"))
    return out


@dataclass(slots=True)
class TurnParts:
    """What one turn produced; the proxy turns it into a `TurnRecord`."""

    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    tool_calls: int = 0
    blocks: list[BlockRecord] = field(default_factory=list)
    finish_reason: str | None = None
    error: UpstreamError | None = None
    upstream_message: str = ""
    text: str = ""
    sent_calls: list[dict[str, object]] = field(default_factory=list)
    usage: dict[str, object] | None = None
    decisions: list[Decision] = field(default_factory=list)
    would_block: list[BlockRecord] = field(default_factory=list)
    """Calls sent on that a rule found against: a monitor's would-be blocks, and notices
    (`BlockRecord.notice`)."""

    def reply(self) -> dict[str, object]:
        return reply_message(self.text, self.sent_calls)


def judge(
    session: GuardSession, calls: Sequence[ToolCall], fail_closed: bool, overflow: bool = False
) -> tuple[list[Decision], list[BlockRecord], list[BlockRecord]]:
    """Decisions for a turn's calls (all against the conversation before the turn), the blocks, and
    the notices of allowed calls (findings held at notice, `serve.precision`)."""
    decisions: list[Decision] = []
    blocks: list[BlockRecord] = []
    notices: list[BlockRecord] = []
    for call in calls:
        decision: Decision = (
            Block(RuleId.DECLARED_TOOLS, Reason.BAD_TOOL_CALL)
            if overflow
            else session.check(call.as_message())
        )
        decisions.append(decision)
        if verdict(decision, fail_closed) == Verdict.BLOCK and isinstance(decision, Block | Unknown):
            blocks.append(BlockRecord(decision.rule_id, decision.reason, call.name))
        elif isinstance(decision, Allow):
            notices += (BlockRecord(h.rule_id, h.reason, call.name, notice=True) for h in decision.notices)
    return decisions, blocks, notices


def judge_turn(
    session: GuardSession | None,
    calls: Sequence[ToolCall],
    fail_closed: bool,
    overflow: bool = False,
    mode: GuardMode = GuardMode.ENFORCE,
) -> tuple[list[Decision], list[BlockRecord], list[BlockRecord]]:
    """`judge` under `mode`: (decisions, blocks to apply, would-be blocks to record only: a monitor's
    blocks, and in any mode the notices of findings held at notice)."""
    if mode is GuardMode.OFF or session is None or not calls:
        return [], [], []
    decisions, blocks, notices = judge(session, calls, fail_closed, overflow)
    if mode is GuardMode.MONITOR:
        return decisions, [], blocks + notices
    return decisions, blocks, notices


def _notice(decisions: Sequence[Decision], fail_closed: bool) -> str:
    for decision in decisions:
        if not isinstance(decision, Allow) and verdict(decision, fail_closed) == Verdict.BLOCK:
            return decision.notice
    return ""


class StreamTurn:
    """Upstream stream events in, harness-facing SSE bytes out (see the module docstring)."""

    def __init__(
        self,
        session: GuardSession | None,
        model: str,
        include_usage: bool,
        fail_closed: bool = True,
        mode: GuardMode = GuardMode.ENFORCE,
    ) -> None:
        self.session = session
        """None when the guard is off (`GuardMode.OFF`)."""
        self.model = model
        self.include_usage = include_usage
        self.fail_closed = fail_closed
        self.mode = mode
        self.parts = TurnParts()
        self.assembler = ToolCallAssembler()
        self.writer: ChunkWriter | None = None
        self.started: set[int] = set()
        self.finished: set[int] = set()
        self.done = False
        """Upstream sent `[DONE]`."""
        self.ended = False
        """The harness-facing stream was ended (`close` or `fail` returned its last bytes)."""

    def _writer(self, payload: Mapping[str, object]) -> ChunkWriter:
        if self.writer is None:
            chunk_id = payload.get("id")
            created = payload.get("created")
            self.writer = ChunkWriter(
                chunk_id if isinstance(chunk_id, str) else "chatcmpl-guard",
                created if isinstance(created, int) else 0,
                self.model,
            )
        return self.writer

    def on_data(self, data: str) -> list[bytes]:
        """One SSE `data:` payload from upstream."""
        if data.strip() == "[DONE]":
            self.done = True
            return []
        try:
            payload = json.loads(data)
        except ValueError:
            return self.fail(UpstreamError.MALFORMED)
        if not isinstance(payload, dict):
            return self.fail(UpstreamError.MALFORMED)
        return self.on_event(payload)

    def on_event(self, payload: Mapping[str, object]) -> list[bytes]:
        if "error" in payload:
            return self.fail(UpstreamError.STATUS)
        writer = self._writer(payload)
        if not self.parts.prompt_ids:
            self.parts.prompt_ids = _ints(payload.get("prompt_token_ids"))
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self.parts.usage = usage
        out: list[bytes] = []
        choices = payload.get("choices")
        # Hot path (one call per streamed token): plain dict/list checks, no ABC isinstance.
        for choice in choices if isinstance(choices, list) else ():
            if type(choice) is not dict:
                continue
            index = choice.get("index", 0)
            index = index if type(index) is int and index >= 0 else 0
            if index in self.finished:
                continue
            if index not in self.started:
                self.started.add(index)
                out.append(writer.role(index))
            if index == 0:
                self.parts.completion_ids += _ints(choice.get("token_ids"))
                self.parts.logprobs += _logprobs(choice.get("logprobs"))
            delta = choice.get("delta")
            if type(delta) is dict and delta:
                content = delta.get("content")
                if type(content) is str and content:
                    if index == 0:
                        self.parts.text += content
                    out.append(writer.text(index, content))
                for key in REASONING_KEYS:
                    value = delta.get(key)
                    if type(value) is str and value:
                        out.append(writer.delta(index, {key: value}))
                calls = delta.get("tool_calls")
                if calls is not None:
                    self.assembler.feed(index, calls)
            reason = choice.get("finish_reason")
            if type(reason) is str and reason:
                out += self._finish(index, reason)
        return out

    def _finish(self, index: int, reason: str) -> list[bytes]:
        assert self.writer is not None
        self.finished.add(index)
        calls = self.assembler.calls(index)
        decisions, blocks, would = judge_turn(
            self.session, calls, self.fail_closed, self.assembler.overflow, self.mode
        )
        out: list[bytes] = []
        if index == 0:
            self.parts.tool_calls += len(calls)
            self.parts.blocks += blocks
            self.parts.would_block += would
            self.parts.decisions += decisions
        if blocks:
            notice = _notice(decisions, self.fail_closed)
            text = ("\n\n" if self.parts.text and index == 0 else "") + notice
            out.append(self.writer.text(index, text))
            reason = "stop"
            if index == 0:
                self.parts.text += text
        elif calls:
            out += self.writer.tool_calls(index, calls)
            if index == 0:
                self.parts.sent_calls = [c.as_message() for c in calls]
            reason = "tool_calls"
        if index == 0:
            self.parts.finish_reason = reason
        out.append(self.writer.finish(index, reason))
        return out

    def close(self) -> list[bytes]:
        """The upstream stream ended: finish open choices, then usage and `[DONE]`."""
        if self.parts.error is not None:
            return []
        self.ended = True
        if not self.done and self.started - self.finished:
            return self.fail(UpstreamError.INTERRUPTED)
        if self.writer is None:
            return self.fail(UpstreamError.MALFORMED)
        out: list[bytes] = []
        for index in sorted(self.started - self.finished):
            out += self._finish(index, "stop")
        if self.include_usage:
            out.append(self.writer.usage(self.usage()))
        out.append(DONE)
        return out

    def usage(self) -> dict[str, object]:
        if self.parts.usage is not None:
            return self.parts.usage
        prompt, completion = len(self.parts.prompt_ids), len(self.parts.completion_ids)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def fail(self, error: UpstreamError) -> list[bytes]:
        """An upstream failure mid-stream: an `error` event the SDKs raise on, then `[DONE]`."""
        if self.parts.error is not None:
            return []
        self.parts.error = error
        self.ended = True
        writer = self.writer or ChunkWriter("chatcmpl-guard", 0, self.model)
        message = f"the model server failed mid-stream ({error.value}); the guard did not retry"
        return [writer.error(message, "upstream_error", error.value), DONE]


def guard_completion(
    session: GuardSession | None,
    response: object,
    model: str,
    fail_closed: bool = True,
    mode: GuardMode = GuardMode.ENFORCE,
) -> tuple[dict[str, object], TurnParts]:
    """A non-streamed upstream response -> (the body the harness gets, the turn's parts).

    Raises `ValueError("upstream_malformed_response")` when the response has no usable choice.
    """
    if (
        not isinstance(response, dict)
        or not isinstance(response.get("choices"), list)
        or not response["choices"]
    ):
        raise ValueError(UpstreamError.MALFORMED.value)
    parts = TurnParts(prompt_ids=_ints(response.get("prompt_token_ids")))
    usage = response.get("usage")
    parts.usage = usage if isinstance(usage, dict) else None
    choices_out: list[dict[str, object]] = []
    for position, choice in enumerate(response["choices"]):
        if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
            raise ValueError(UpstreamError.MALFORMED.value)
        index = choice.get("index", position)
        message = choice["message"]
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        assembler = ToolCallAssembler()
        raw_calls = message.get("tool_calls")
        if isinstance(raw_calls, list):
            for call_index, call in enumerate(raw_calls):
                if isinstance(call, Mapping):
                    assembler.feed(index, [{**call, "index": call_index}])
        calls = assembler.calls(index)
        decisions, blocks, would = judge_turn(session, calls, fail_closed, assembler.overflow, mode)
        reason = choice.get("finish_reason")
        out_message: dict[str, object] = {"role": "assistant", "content": text or None}
        for key in REASONING_KEYS:
            if isinstance(message.get(key), str):
                out_message[key] = message[key]
        if blocks:
            text = (text + "\n\n" if text else "") + _notice(decisions, fail_closed)
            out_message["content"] = text
            reason = "stop"
        elif calls:
            out_message["tool_calls"] = [c.as_message() for c in calls]
            reason = "tool_calls"
        choices_out.append(
            {"index": index, "message": out_message, "logprobs": None, "finish_reason": reason}
        )
        if position == 0:
            parts.completion_ids = _ints(choice.get("token_ids"))
            parts.logprobs = _logprobs(choice.get("logprobs"))
            parts.tool_calls = len(calls)
            parts.blocks = blocks
            parts.would_block = would
            parts.decisions = decisions
            parts.finish_reason = reason if isinstance(reason, str) else None
            parts.text = text
            parts.sent_calls = [] if blocks else [c.as_message() for c in calls]
    body: dict[str, object] = {
        "id": response.get("id", "chatcmpl-guard"),
        "object": "chat.completion",
        "created": response.get("created", 0),
        "model": model,
        "choices": choices_out,
    }
    if parts.usage is not None:
        body["usage"] = parts.usage
    return body, parts
