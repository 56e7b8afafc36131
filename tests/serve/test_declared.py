"""Rule 1, declared tools, and the schema check behind it."""

from __future__ import annotations

import json

from serve.decisions import Reason
from serve.rules.declared import DeclaredToolsRule, declared_schemas, parse_arguments
from serve.rules.schema import fits

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "edit",
            "parameters": {
                "type": "object",
                "required": ["path", "edits"],
                "additionalProperties": False,
                "properties": {
                    "path": {"type": "string"},
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["oldText", "newText"],
                            "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                        },
                    },
                },
            },
        },
    }
]


def call(name: str, arguments: object) -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": "1", "type": "function", "function": {"name": name, "arguments": raw}}


def reason(tool_call: object) -> Reason | None:
    found = DeclaredToolsRule().judge_raw(declared_schemas(TOOLS), tool_call)
    return None if found is None else found.reason


def test_a_declared_tool_with_fitting_arguments_passes() -> None:
    assert reason(call("edit", {"path": "a.py", "edits": [{"oldText": "a", "newText": "b"}]})) is None


def test_undeclared_unparsable_and_misfit_calls_are_blocked() -> None:
    assert reason(call("write", {"path": "a"})) is Reason.UNDECLARED_TOOL
    assert reason(call("edit", '{"path": "a.py", ')) is Reason.ARGUMENTS_NOT_JSON
    assert reason(call("edit", "[1, 2]")) is Reason.ARGUMENTS_NOT_OBJECT
    assert reason(call("edit", {"path": "a.py"})) is Reason.SCHEMA_MISMATCH
    assert reason(call("edit", {"path": "a.py", "edits": []})) is Reason.SCHEMA_MISMATCH
    assert (
        reason(call("edit", {"path": 3, "edits": [{"oldText": "a", "newText": "b"}]}))
        is Reason.SCHEMA_MISMATCH
    )
    assert (
        reason(call("edit", {"path": "a", "edits": [{"oldText": "a", "newText": "b"}], "x": 1}))
        is Reason.SCHEMA_MISMATCH
    )
    assert reason({"id": "1", "function": {"arguments": "{}"}}) is Reason.BAD_TOOL_CALL
    assert reason("nonsense") is Reason.BAD_TOOL_CALL


def test_schema_types_enums_and_alternatives() -> None:
    assert (
        fits(1, {"type": "integer"})
        and not fits(True, {"type": "integer"})
        and not fits(1.5, {"type": "integer"})
    )
    assert fits("a", {"type": ["string", "null"]}) and not fits(1, {"enum": ["a", "b"]})
    assert fits(1, {"anyOf": [{"type": "string"}, {"type": "integer"}]})
    assert parse_arguments("") == ({}, None)
