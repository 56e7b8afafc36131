"""ATIF trajectories (Harbor's Agent Trajectory Interchange Format, v1.x) as conversations.

Steps map to messages the way ``serve/record.py`` (via ``serve/trace.py``) exports them, so an exported
rollout reads back as the conversation it came from:

- a ``system``/``user`` step becomes a system/user message (``message`` text; parts joined by newlines);
- an ``agent`` step becomes an assistant message: ``message`` as content, ``tool_calls``
  (``tool_call_id``, ``function_name``, ``arguments``: an object, or a JSON string as our exporter
  writes it) as OpenAI calls, then one ``tool`` message per ``observation.results`` entry, linked by
  ``source_call_id`` (or by position when the ids are missing and the counts match, or to a step's only
  call).

The raw JSON is read (not ``atif_scan.parse_trace``, whose projection normalizes arguments and hides raw
text). ``reasoning_content`` goes to ``meta["reasoning"]``; per-step metrics, timestamps and
subagent references are dropped; the session id, the ``agent`` block and our guard's verdict
(``extra.guard``: ``blocked``, ``failed``, ``closed``) go to ``meta``. Tools come from
``agent.tool_definitions`` when present, else, for a trajectory whose agent is one of our harnesses,
from its captured request. Lost in a round trip through our exporter: a tool message's ``name`` and the
split of a content-parts list (joined by newlines on export).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from environments.traces.messages import (
    Draft,
    TraceError,
    assistant,
    field,
    json_args,
    system,
    text_of,
    tool_call,
    tool_result,
    user,
)
from environments.traces.types import Conversation

GUARD_FLAGS = ("blocked", "failed", "closed")


def _calls(step: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = step.get("tool_calls") or []
    if not isinstance(raw, list):
        raise TraceError("atif_invalid_tool_calls")
    calls = []
    for call in raw:
        if not isinstance(call, Mapping):
            raise TraceError("atif_invalid_tool_calls")
        calls.append(
            tool_call(
                field(call, "tool_call_id", str),
                field(call, "function_name", str),
                json_args(call.get("arguments")),
            )
        )
    return calls


def _results(step: Mapping[str, Any], calls: list[dict[str, Any]], draft: Draft) -> list[dict[str, Any]]:
    observation = step.get("observation")
    if observation is None:
        return []
    if not isinstance(observation, Mapping) or not isinstance(observation.get("results", []), list):
        raise TraceError("atif_invalid_observation")
    results = [r for r in observation.get("results", []) if isinstance(r, Mapping)]
    out = []
    for index, result in enumerate(results):
        call_id = result.get("source_call_id")
        if not isinstance(call_id, str) or not call_id:
            if len(results) == len(calls):
                call_id = calls[index]["id"]
            elif len(calls) == 1:
                call_id = calls[0]["id"]
            else:
                raise TraceError("atif_unpaired_observation")
        out.append(tool_result(call_id, text_of(result.get("content"), "\n", draft.dropped)))
    return out


def read_atif(trajectory: Mapping[str, Any], *, source: str, fill_from_harness: bool = True) -> Conversation:
    """One ATIF trajectory object as a conversation."""
    draft = Draft()
    for step in field(trajectory, "steps", list):
        if not isinstance(step, Mapping):
            raise TraceError("atif_invalid_step")
        kind = step.get("source")
        text = text_of(step.get("message"), "\n", draft.dropped)
        if kind in ("system", "user"):
            if step.get("observation"):
                raise TraceError("atif_observation_outside_agent_step")
            draft.add(system(text) if kind == "system" else user(text))
        elif kind == "agent":
            calls = _calls(step)
            reasoning = step.get("reasoning_content")
            draft.add(assistant(text, calls), reasoning if isinstance(reasoning, str) else "")
            for result in _results(step, calls, draft):
                draft.add(result)
        else:
            raise TraceError("atif_unknown_step_source")
    agent = trajectory.get("agent") if isinstance(trajectory.get("agent"), Mapping) else {}
    tools = agent.get("tool_definitions")
    extra = trajectory.get("extra")
    guard = extra.get("guard") if isinstance(extra, Mapping) else None
    meta = {
        "session_id": trajectory.get("session_id"),
        "schema_version": trajectory.get("schema_version"),
        "agent": {k: agent[k] for k in ("name", "version", "model_name") if isinstance(agent.get(k), str)},
        "guard": {k: guard[k] for k in GUARD_FLAGS if k in guard} if isinstance(guard, Mapping) else None,
    }
    name = agent.get("name")
    return draft.finish(
        source=source,
        harness=name if isinstance(name, str) else None,
        tools=[t for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else (),
        meta=meta,
        fill_from_harness=fill_from_harness,
    )
