"""Constrained tool calls: a grammar that lets the model write only calls the declared-tools rule accepts.

A small model often writes a tool call that no harness can run: one tool's name with another's arguments
(`read` with `{"command": "ls"}`), JSON cut off, a required field missing. The guard blocks such a call
and the rollout scores 0, so a group of them gives GRPO nothing to learn from. With
``rollouts.constrain_tool_calls`` the guard asks the server to decode every tool call under a grammar
built from the request's own ``tools``: vLLM's structured outputs with a *structural tag*, one structure
per declared tool (its name, then arguments under its parameter schema), triggered by the parser's
opening marker. Text between calls stays free; a call, once begun, can only be a declared tool with
arguments that fit its schema. The harness is not touched: it sends its requests and parses the replies
as it always does.

The structure follows the tool-call parser's format, so only parsers whose format is written here can be
constrained (``GRAMMAR_PARSERS``); a job that asks for another is refused at config load.

The sampler's log-probs are those of the constrained distribution (vLLM masks the logits before it
computes them), so a token the grammar forced has sampler log-prob 0 and a trainer importance ratio of
its model probability: GRPO's clipped ratio bounds the update on such tokens, and the first step's mean
ratio (token exactness) is then below 1 by design.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

HERMES_BEGIN = '<tool_call>\n{"name": "%s", "arguments": '
HERMES_END = "}\n</tool_call>"
GRAMMAR_PARSERS = {"hermes": ("<tool_call>", HERMES_BEGIN, HERMES_END)}
"""Parser -> (trigger, begin with the tool's name, end): the text its parser reads as one call."""


def tool_grammar_problem(parser: str) -> str | None:
    """Why the tool calls of a server with this tool-call parser cannot be constrained (None: they can)."""
    if parser in GRAMMAR_PARSERS:
        return None
    known = ", ".join(sorted(GRAMMAR_PARSERS))
    return (
        f"tool calls can be constrained in the {known} parser's format only, and this server's parser "
        f"is {parser!r}: set rollouts.constrain_tool_calls: false (the standalone guard: drop "
        "--constrain-tool-calls)"
    )


def tool_call_tag(tools: object, parser: str) -> dict[str, object] | None:
    """The ``response_format`` that constrains every tool call to ``tools`` (OpenAI function tools), in
    ``parser``'s format; None where there is nothing to constrain (no function tools)."""
    trigger, begin, end = GRAMMAR_PARSERS[parser]
    structures = []
    for tool in tools if isinstance(tools, list) else ():
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            continue
        schema = function.get("parameters")
        structures.append(
            {
                "begin": begin % _json_string_body(function["name"]),
                "schema": dict(schema) if isinstance(schema, Mapping) and schema else {"type": "object"},
                "end": end,
            }
        )
    if not structures:
        return None
    return {"type": "structural_tag", "structures": structures, "triggers": [trigger]}


def constrained(request: Mapping[str, object]) -> bool:
    """Whether a request leaves tool calls to the model (``tool_choice`` absent or ``auto``) and asks for no
    output format of its own: the only requests a tool-call grammar is added to (``required`` and named
    choices are constrained by the server itself)."""
    choice = request.get("tool_choice")
    return choice in (None, "auto") and request.get("response_format") is None


def _json_string_body(name: str) -> str:
    """``name`` as it appears between the quotes of a JSON string."""
    return json.dumps(name)[1:-1]
