"""Rule 1, declared tools: the call names a tool from the request's `tools`, its arguments
parse as a JSON object, and they fit that tool's parameter schema.

This rule reads the raw OpenAI tool call, before normalisation, and fails closed: a call
without a function name, arguments that aren't a JSON string of an object, or a name the
request didn't declare is blocked. Harnesses differ in names (`bash` vs `terminal`, `read`
vs `read_file`), so a pi name in a hermes session is undeclared too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ..decisions import Reason, RuleId
from .base import Finding
from .schema import fits


def declared_schemas(tools: object) -> dict[str, object]:
    """name -> parameters schema of each OpenAI `{"type":"function","function":{…}}` tool."""
    out: dict[str, object] = {}
    if not isinstance(tools, list):
        return out
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            out[function["name"]] = function.get("parameters", {})
    return out


def parse_arguments(raw: object) -> tuple[dict[str, object] | None, Reason | None]:
    """The decoded argument object, or the reason it isn't one. An empty string is `{}`
    (OpenAI clients send it for tools without parameters)."""
    if isinstance(raw, Mapping):
        return dict(raw), None
    if not isinstance(raw, str):
        return None, Reason.ARGUMENTS_NOT_JSON
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        return None, Reason.ARGUMENTS_NOT_JSON
    if not isinstance(value, dict):
        return None, Reason.ARGUMENTS_NOT_OBJECT
    return value, None


@dataclass(frozen=True)
class DeclaredToolsRule:
    rule_id: RuleId = RuleId.DECLARED_TOOLS

    def judge_raw(self, schemas: Mapping[str, object], tool_call: object) -> Finding | None:
        function = tool_call.get("function") if isinstance(tool_call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            return Finding(Reason.BAD_TOOL_CALL)
        name = function["name"]
        if name not in schemas:
            return Finding(Reason.UNDECLARED_TOOL)
        args, problem = parse_arguments(function.get("arguments"))
        if problem is not None:
            return Finding(problem)
        if not fits(args, schemas[name]):
            return Finding(Reason.SCHEMA_MISMATCH)
        return None
