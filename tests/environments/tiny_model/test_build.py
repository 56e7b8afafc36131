"""The tiny model builder: deterministic, cached, and fit for real harness sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.harness_prompts import HARNESSES, harness_request
from environments.tiny_model import TinyModelRecipe, build_tiny_model
from environments.tiny_model.build import MODEL_FILES

SMALL = TinyModelRecipe(
    vocab_size=1024,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    corpus_documents=600,
)


def test_same_recipe_builds_byte_identical_files(tmp_path: Path):
    first = build_tiny_model(SMALL, tmp_path / "a")
    second = build_tiny_model(SMALL, tmp_path / "b")
    for name in MODEL_FILES:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_another_seed_gives_other_weights(tmp_path: Path):
    from dataclasses import replace

    first = build_tiny_model(SMALL, tmp_path / "a")
    other = build_tiny_model(replace(SMALL, seed=1), tmp_path / "b")
    assert (first / "model.safetensors").read_bytes() != (other / "model.safetensors").read_bytes()


def test_cached_build_is_reused_and_a_changed_recipe_is_rebuilt(cache_dir: Path):
    from dataclasses import replace

    first = build_tiny_model(SMALL)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert build_tiny_model(SMALL) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp
    changed = build_tiny_model(replace(SMALL, initializer_range=0.03))
    assert changed != first and changed.parent == first.parent


def test_recipe_rejects_a_context_too_short_for_hermes():
    with pytest.raises(ValueError, match="hermes needs >= 65536"):
        TinyModelRecipe(max_position_embeddings=32768)


@pytest.fixture(scope="module")
def tokenizer(tiny_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


@pytest.mark.parametrize(
    "text",
    [
        'def parse(rows: list[dict]) -> dict[str, int]:\n    return {r["id"]: len(r) for r in rows}\n',
        '{"name": "bash", "arguments": {"command": "grep -rn \\"TODO\\" src/ | head -n 5"}}',
        "cd /workspace && python -m pytest -q tests/test_core.py::test_x 2>&1 | tail -n 20; echo $?",
        "  tabs\tand trailing spaces   \n\n unicode: naïve café — 数据 🚀 \x00\x7f",
    ],
)
def test_tokenizer_round_trips_code_json_and_shell_exactly(tokenizer, text: str):
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text


def test_harness_requests_round_trip_and_fit_the_context(tokenizer, tiny_model: Path):
    config = json.loads((tiny_model / "config.json").read_text())
    assert config["max_position_embeddings"] >= 65536
    assert config["vocab_size"] == len(tokenizer)
    for harness in HARNESSES:
        request = harness_request(harness)
        text = json.dumps(request)
        ids = tokenizer.encode(text, add_special_tokens=False)
        assert tokenizer.decode(ids) == text
        assert len(ids) < len(text) / 3, f"{harness}: tokenizer compresses agent traffic poorly"


def test_chat_template_renders_tools_and_tool_calls(tokenizer):
    request = harness_request("pi")
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "run the tests"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "bash", "arguments": {"command": "pytest -q"}}}
            ],
        },
        {"role": "tool", "content": "3 passed"},
    ]
    text = tokenizer.apply_chat_template(
        messages, tools=request["tools"], tokenize=False, add_generation_prompt=True
    )
    assert '"name": "bash"' in text and "<tools>" in text
    assert '<tool_call>\n{"name": "bash", "arguments": {"command": "pytest -q"}}\n</tool_call>' in text
    assert "<tool_response>\n3 passed\n</tool_response>" in text
    assert text.endswith("<|im_start|>assistant\n")
    for token in ("<tool_call>", "</tool_call>", "<|im_end|>"):
        assert len(tokenizer.encode(token, add_special_tokens=False)) == 1, token


def test_trl_recognises_the_chat_template_and_parses_tool_calls(tokenizer):
    from trl.chat_template_utils import add_response_schema

    add_response_schema(tokenizer)
    text = '<tool_call>\n{"name": "read", "arguments": {"path": "README.md"}}\n</tool_call><|im_end|>'
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "show the readme"}], add_generation_prompt=True, tokenize=False
    )
    parsed = tokenizer.parse_response(text, prefix=prompt)
    assert parsed["tool_calls"][0]["function"] == {"name": "read", "arguments": {"path": "README.md"}}


def test_vllm_hermes_tool_parser_turns_tool_call_text_into_openai_tool_calls(tokenizer):
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.tool_parsers.hermes_tool_parser import Hermes2ProToolParser

    tools = harness_request("hermes")["tools"]
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "x"}], tools=tools)
    output = (
        'Let me look.\n<tool_call>\n{"name": "terminal", "arguments": {"command": "ls -la"}}\n</tool_call>'
        '\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'
    )
    result = Hermes2ProToolParser(tokenizer).extract_tool_calls(output, request)
    assert result.tools_called
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in result.tool_calls]
    assert calls == [("terminal", {"command": "ls -la"}), ("read_file", {"path": "a.py"})]
    assert result.content.strip() == "Let me look."
