"""What a rollout sampled, per turn, and its export as an ATIF trajectory (pure values).

A `TurnRecord` is one chat-completions call through the guard: the prompt token ids and the
completion token ids with one logprob per completion token, exactly as the server sampled them
(training never re-tokenizes), how many tool calls the model made, the blocks the guard applied
(rule and reason code, never input text), the finish reason, an upstream error code if the call
failed, and timings. A `RolloutRecord` is the frozen snapshot of a rollout: its declared
harness, adapter and allowlist, its turns, and the latest conversation the harness sent plus the
assistant reply it received (for the ATIF export). `blocked` is true once any turn was blocked:
the trainer scores such a rollout 0. Under `GuardMode.MONITOR` nothing is blocked: the calls the
guard would have blocked are recorded as `would_block` (same rule and reason codes) and never zero
the rollout; under `GuardMode.OFF` neither is recorded.

`to_atif()` gives an ATIF-v1.4 trajectory (Harbor RFC 0001) that `atif_scan.parse_trace`
reads: system/user/agent steps from the conversation (tool results become observations of the
agent step that made the calls), and on the i-th agent step that the guard produced, the i-th
turn's `metrics` (`prompt_token_ids`, `completion_token_ids`, `logprobs`, token counts) and the
guard's blocks under `extra.guard`. Limit: if the harness rewrote its history (compaction), the
conversation holds fewer agent steps than turns; metrics are attached to as many as match,
and every turn stays in `extra.guard.turns`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum

from .decisions import Reason, RuleId
from .mode import GuardMode
from .trace import session_steps

MAX_TURNS = 1024


OTHER_HARNESS = "other"
"""The harness of a rollout the guard opened itself, for a request naming a rollout it had not seen."""


def harness_problem(name: object) -> str | None:
    """Why ``name`` cannot be a record's harness (one the registry knows, or ``OTHER_HARNESS``), or None."""
    from environments.harnesses.registry import harness_names

    known = harness_names()
    if name == OTHER_HARNESS or name in known:
        return None
    return f"harness={name!r}: must be one of {[*known, OTHER_HARNESS]}"


class UpstreamError(StrEnum):
    """Why a turn did not complete; fixed codes, recorded on the turn."""

    CONNECT = "upstream_unreachable"
    TIMEOUT = "upstream_timeout"
    STATUS = "upstream_error_status"
    MALFORMED = "upstream_malformed_response"
    INTERRUPTED = "upstream_stream_interrupted"
    CLIENT_CLOSED = "client_closed_stream"
    """The harness went away before the turn's stream ended."""


@dataclass(frozen=True, slots=True)
class BlockRecord:
    rule: RuleId
    reason: Reason
    tool_name: str
    """The blocked call's function name (a name from the request's tools, or as the model wrote it)."""
    notice: bool = False
    """The finding's reason is held at notice (`serve.precision`): the call was sent on, and only
    recorded here (in `TurnRecord.would_block`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.rule, RuleId) or not isinstance(self.reason, Reason):
            raise ValueError("block_record_needs_rule_and_reason_codes")

    def to_json(self) -> dict[str, object]:
        """Its fields, `notice` only when set (a block's record reads as it always has)."""
        out: dict[str, object] = {"rule": self.rule, "reason": self.reason, "tool_name": self.tool_name}
        return out | {"notice": True} if self.notice else out


@dataclass(frozen=True, slots=True)
class TurnRecord:
    index: int
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    """One per completion token when the server returned them; empty otherwise."""
    tool_calls: int
    """Tool calls the model made in this turn (blocked ones included)."""
    blocks: tuple[BlockRecord, ...] = ()
    finish_reason: str | None = None
    """The finish reason the harness saw (a blocked turn reads "stop")."""
    error: UpstreamError | None = None
    upstream_status: int | None = None
    upstream_message: str = ""
    """The server's own words for a refused turn (its error message, at most 500 characters)."""
    stream: bool = True
    started_at_s: float = 0.0
    """Wall-clock start (unix seconds)."""
    first_token_s: float | None = None
    """Seconds from start to the first upstream event."""
    duration_s: float = 0.0
    conversation: str = ""
    """Key of the conversation this turn belongs to (a harness may run side requests, e.g. titles)."""
    would_block: tuple[BlockRecord, ...] = ()
    """Calls the guard found against but sent on unchanged: every block in monitor mode, and in any
    mode findings held at notice (`BlockRecord.notice`, `serve.precision`)."""

    def __post_init__(self) -> None:
        if self.logprobs and len(self.logprobs) != len(self.completion_ids):
            raise ValueError(f"turn {self.index}: logprobs must have one entry per completion token")
        if self.tool_calls < 0 or self.duration_s < 0:
            raise ValueError(f"turn {self.index}: tool_calls and duration_s must be >= 0")

    @property
    def blocked(self) -> bool:
        return bool(self.blocks)

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["blocks"] = [b.to_json() for b in self.blocks]
        out["would_block"] = [b.to_json() for b in self.would_block]
        return out


@dataclass(frozen=True, slots=True)
class RolloutRecord:
    rollout_id: str
    harness: str
    adapter: str
    allowlist: tuple[str, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    conversation: tuple[Mapping[str, object], ...] = ()
    """The latest request's messages followed by the assistant reply the harness received."""
    conversation_key: str = ""
    closed: bool = False
    opened_at_s: float = 0.0
    guard: GuardMode = GuardMode.ENFORCE
    """What the guard did with its decisions in this rollout (`serve.mode`)."""

    def __post_init__(self) -> None:
        if not self.rollout_id:
            raise ValueError("rollout_id must be a non-empty string")
        problem = harness_problem(self.harness)
        if problem:
            raise ValueError(problem)
        if len(self.turns) > MAX_TURNS:
            raise ValueError(f"a rollout holds at most {MAX_TURNS} turns")
        if not isinstance(self.guard, GuardMode):
            raise ValueError(f"guard={self.guard!r}: must be one of {[m.value for m in GuardMode]}")

    @property
    def blocked(self) -> bool:
        return any(t.blocked for t in self.turns)

    @property
    def blocks(self) -> tuple[BlockRecord, ...]:
        return tuple(b for t in self.turns for b in t.blocks)

    @property
    def would_block(self) -> tuple[BlockRecord, ...]:
        """Monitor mode: every call the guard would have blocked, in order."""
        return tuple(b for t in self.turns for b in t.would_block)

    @property
    def failed(self) -> bool:
        """Some turn failed upstream (infrastructure, not the model): drop rather than score."""
        return any(t.error is not None for t in self.turns)

    @property
    def tool_calls(self) -> int:
        return sum(t.tool_calls for t in self.turns)

    def to_json(self) -> dict[str, object]:
        return {
            "rollout_id": self.rollout_id,
            "harness": self.harness,
            "adapter": self.adapter,
            "allowlist": list(self.allowlist),
            "conversation_key": self.conversation_key,
            "closed": self.closed,
            "guard": self.guard.value,
            "blocked": self.blocked,
            "failed": self.failed,
            "tool_calls": self.tool_calls,
            "blocks": [b.to_json() for b in self.blocks],
            "would_block": [b.to_json() for b in self.would_block],
            "turns": [t.to_json() for t in self.turns],
        }

    def to_atif(self) -> dict[str, object]:
        steps = session_steps(list(self.conversation))
        agent_steps = [s for s in steps if s["source"] == "agent"]
        # The guard's turns produced the last len(turns) agent messages (earlier ones, if any,
        # came with the history the harness started from).
        # Only turns of the recorded conversation that reached the harness made its agent steps.
        made = [t for t in self.turns if t.error is None and t.conversation == self.conversation_key]
        offset = max(0, len(agent_steps) - len(made))
        for step, turn in zip(
            agent_steps[offset:], made[len(made) - len(agent_steps[offset:]) :], strict=True
        ):
            step["model_name"] = self.adapter
            step["metrics"] = _metrics(turn)
            guard: dict[str, object] = {"turn": turn.index, "blocks": [b.to_json() for b in turn.blocks]}
            if turn.would_block:
                guard["would_block"] = [b.to_json() for b in turn.would_block]
            step["extra"] = {"guard": guard}
        return {
            "schema_version": "ATIF-v1.4",
            "session_id": self.rollout_id,
            "agent": {"name": self.harness, "version": "unknown", "model_name": self.adapter},
            "steps": steps,
            "final_metrics": {
                "total_prompt_tokens": sum(len(t.prompt_ids) for t in self.turns),
                "total_completion_tokens": sum(len(t.completion_ids) for t in self.turns),
                "total_steps": len(steps),
            },
            "extra": {"guard": self.to_json()},
        }


def _metrics(turn: TurnRecord) -> dict[str, object]:
    return {
        "prompt_tokens": len(turn.prompt_ids),
        "completion_tokens": len(turn.completion_ids),
        "prompt_token_ids": list(turn.prompt_ids),
        "completion_token_ids": list(turn.completion_ids),
        "logprobs": list(turn.logprobs),
    }


def reply_message(text: str, calls: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """The assistant message a harness received, in the shape it sends back next turn."""
    message: dict[str, object] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [dict(c) for c in calls]
    return message


def upstream_message(content: bytes, limit: int = 500) -> str:
    """The message of a server's error body (OpenAI's ``{"error": {"message"}}``, or the body as text),
    cut to ``limit`` characters: kept with the turn so a refused request says why."""
    text = content.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        return text[:limit]
    if not isinstance(body, dict):
        return text[:limit]
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else body.get("message")
    return (message if isinstance(message, str) else text)[:limit]
