"""SFT renders what vLLM serves: tools rebuilt in the request model's key order, tool-call arguments parsed,
whatever form the conversation stored them in; checked by rule and against a real vLLM server's rendering."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from actors.sft.data import SkipReason, build_examples, plan_template, tokenize_conversation
from actors.sft.served_form import ServedFormError, served_message, served_tool, served_tools
from environments.demos import build_demos
from environments.harness_prompts import HARNESSES
from environments.tasks.shipped import shipped_tasks
from environments.traces.types import Conversation

BASH = {
    "function": {
        "parameters": {
            "type": "object",
            "required": ["command"],
            "properties": {"command": {"type": "string"}},
        },
        "name": "bash",
        "description": "Run a command",
        "extra": "dropped by the server",
    },
    "type": "function",
}
SESSION = (
    {"role": "user", "content": [{"type": "text", "text": "List the files."}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\n"},
    {"role": "assistant", "content": "One file: a.py."},
)


@pytest.fixture(scope="module")
def tokenizer(tiny_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def test_a_tool_is_rebuilt_in_the_servers_key_order_with_its_parameters_as_sent():
    rebuilt = served_tool(BASH)
    assert json.dumps(rebuilt) == json.dumps(
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a command",
                "parameters": BASH["function"]["parameters"],
            },
        }
    )
    assert list(rebuilt["function"]["parameters"]) == ["type", "required", "properties"]
    strict = served_tool({"type": "function", "function": {"name": "x", "strict": False}})
    assert strict["function"] == {"name": "x", "description": None, "parameters": None, "strict": False}


def test_tool_call_arguments_reach_the_template_as_objects():
    served = served_message(SESSION[1])
    assert served["tool_calls"][0]["function"]["arguments"] == {"command": "ls"}
    assert SESSION[1]["tool_calls"][0]["function"]["arguments"] == '{"command":"ls"}'  # input untouched
    for bad in ("[1, 2]", "{not json", "", None):  # skipped by SFT, as before it rendered as served
        call = {"id": "c", "function": {"name": "x", "arguments": bad}}
        with pytest.raises(ServedFormError, match="arguments"):
            served_message({"role": "assistant", "tool_calls": [call]})
    nameless = {"id": "c", "function": {"arguments": "{}"}}
    with pytest.raises(ServedFormError, match="no function name"):
        served_message({"role": "assistant", "tool_calls": [nameless]})
    with pytest.raises(ServedFormError, match="no function name"):
        served_tools([{"type": "function", "function": {"description": "nameless"}}])


def test_the_stored_form_of_a_conversation_does_not_change_what_is_trained(tokenizer):
    plan = plan_template(tokenizer)
    reordered = Conversation(SESSION, (BASH,), source="as stored")
    spaced = [dict(m) for m in SESSION]
    spaced[1] = served_message(SESSION[1])
    canonical = Conversation(tuple(spaced), tuple(served_tools([BASH])), source="as served")
    one = tokenize_conversation(tokenizer, plan, reordered, max_length=4096)
    other = tokenize_conversation(tokenizer, plan, canonical, max_length=4096)
    assert one.input_ids == other.input_ids and one.labels == other.labels
    text = tokenizer.decode(one.input_ids)
    assert '{"type": "function", "function": {"name": "bash"' in text and "dropped by the server" not in text


def test_a_declared_tool_without_a_name_is_skipped_and_counted(tokenizer):
    nameless = Conversation(SESSION, ({"type": "function", "function": {}},), source="nameless")
    examples, skipped = build_examples(tokenizer, [nameless], max_length=4096)
    assert examples == [] and [s.reason for s in skipped] == [SkipReason.BAD_TOOL.value]


@pytest.mark.vllm
@pytest.mark.parametrize("harness", HARNESSES)
def test_a_demonstrations_prompt_is_the_token_ids_vllm_renders_for_the_same_request(
    serving, tokenizer, harness: str
):
    """Each harness's demonstration, rendered for SFT, starts with exactly the ids the server renders for
    the request the harness sends at its last turn (arguments compact, as harnesses send them back), the
    template held equal: the tiny model is served with Qwen3's own, which drops the empty ``<think>`` of
    earlier turns that SFT's training variant keeps (a converted checkpoint is served with the variant)."""
    import ray

    demos, _ = build_demos(shipped_tasks(), harness)
    demo = max(demos, key=lambda d: sum(1 for m in d.messages if m.get("tool_calls")))
    messages = [dict(m) for m in demo.messages]
    for message in messages:
        for call in message.get("tool_calls") or ():
            args = json.loads(call["function"]["arguments"])
            call["function"] = {**call["function"], "arguments": json.dumps(args, separators=(",", ":"))}
    plan = plan_template(tokenizer)
    example = tokenize_conversation(tokenizer, plan, demo, max_length=16384)
    body = {
        "messages": messages[:-1],
        "tools": list(demo.tools),
        "add_generation_prompt": True,
        "chat_template": plan.chat_template,
    }
    url = ray.get(serving.url.remote()).removesuffix("/v1") + "/tokenize"
    served = httpx.post(url, json=body, timeout=60).json()
    assert served["count"] > 500, served
    assert served["tokens"] == list(example.input_ids[: served["count"]])
