"""Every sample's conversation renders with the Qwen3 chat template our tiny model uses (TRL's copy),
tool calls and tool responses in place: the readers' output is what a chat template accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from environments.tiny_model.recipe import chat_template
from environments.traces import Conversation, read_traces

DATA = Path(__file__).parent / "data"
SAMPLES = (
    "hermes-session-export.jsonl",
    "oc-format-json-stdout.jsonl",
    "oc-session-export.json",
    "pi-mode-json-stdout.jsonl",
    "pi-session-sample.jsonl",
)


def render(conversation: Conversation) -> str:
    """As transformers' ``apply_chat_template`` renders (same jinja settings and helpers)."""

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = lambda x, indent=None, ensure_ascii=False, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, sort_keys=sort_keys
    )
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(chat_template())
    return template.render(
        messages=list(conversation.messages),
        tools=list(conversation.tools) or None,
        add_generation_prompt=False,
    )


@pytest.mark.parametrize("name", SAMPLES)
def test_each_sample_renders_with_its_tool_call_and_result(name: str):
    (conv,), _ = read_traces(DATA / name, prompt="Run echo and tell me the result")
    text = render(conv)
    call = conv.messages[2]["tool_calls"][0]["function"]
    assert f'"name": "{call["name"]}"' in text and "echo FAKE_TOOL_OK" in text
    assert "<tool_response>\n" + conv.messages[3]["content"] in text
    assert text.count("<|im_start|>assistant") == 2
    assert '"name": "' + conv.tools[0]["function"]["name"] + '"' in text
