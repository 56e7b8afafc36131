"""Assistant-only masks are exact: checked against spans found independently in the rendered text."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from actors.sft.data import (
    IGNORE_INDEX,
    MaskMethod,
    SkipReason,
    TemplateError,
    TemplatePlan,
    TokenizedExample,
    build_examples,
    plan_template,
    read_messages_jsonl,
    show_mask,
    tokenize_conversation,
)
from actors.sft.served_form import served_message
from environments.traces.types import Conversation

TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    },
)


def call(call_id: str, name: str, **arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


MULTI_TURN = (
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "What is in the repo?"},
    {"role": "assistant", "content": "Let me look.", "tool_calls": [call("c1", "bash", cmd="ls")]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [call("c2", "read", path="a.py"), call("c3", "read", path="b.py")],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "print('a')"},
    {"role": "tool", "tool_call_id": "c3", "content": "print('b')"},
    {"role": "assistant", "content": "Two scripts that print a and b."},
    {"role": "user", "content": "Thanks, run a.py"},
    {"role": "assistant", "content": "", "tool_calls": [call("c4", "bash", cmd="python a.py")]},
    {"role": "tool", "tool_call_id": "c4", "content": "a"},
    {"role": "assistant", "content": "It printed a."},
)
ASSISTANT_PART = re.compile(r"(<\|im_start\|>assistant\n)(.*?<\|im_end\|>\n)", re.S)
# A ChatML template without generation markers that TRL does not know: exercises the prefix-diff path.
PLAIN_CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content if m.content is string else '' }}"
    "{% for c in m.tool_calls or [] %}<tool_call>\n{{ c.function | tojson }}\n</tool_call>{% endfor %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer(tiny_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


@pytest.fixture(scope="module")
def plan(tokenizer) -> TemplatePlan:
    return plan_template(tokenizer)


def labelled_runs(tokenizer, example: TokenizedExample) -> tuple[list[str], str]:
    """Decoded runs of consecutive labelled tokens, and the decoded text of all unlabelled tokens."""
    runs: list[list[int]] = []
    rest: list[int] = []
    previous = False
    for token, label in zip(example.input_ids, example.labels, strict=True):
        if label != IGNORE_INDEX:
            assert label == token
            if not previous:
                runs.append([])
            runs[-1].append(token)
        else:
            rest.append(token)
        previous = label != IGNORE_INDEX
    return [tokenizer.decode(r) for r in runs], tokenizer.decode(rest)


def test_labels_cover_exactly_the_assistant_turns_of_a_multi_turn_tool_conversation(tokenizer, plan):
    conversation = Conversation(MULTI_TURN, TOOLS, source="multi")
    example = tokenize_conversation(tokenizer, plan, conversation, max_length=4096)

    # Independently: render with the same template through the tokenizer, find assistant parts by regex.
    text = tokenizer.apply_chat_template(
        list(MULTI_TURN), tools=list(TOOLS), chat_template=plan.chat_template, tokenize=False
    )
    assert "# Tools" in text and '"name": "read"' in text
    assert list(example.input_ids) == tokenizer(text, add_special_tokens=False)["input_ids"]
    expected = [m.group(2) for m in ASSISTANT_PART.finditer(text)]
    runs, rest = labelled_runs(tokenizer, example)
    assert runs == expected
    assert len(runs) == sum(m["role"] == "assistant" for m in MULTI_TURN)
    assert all(run.endswith("<|im_end|>\n") for run in runs)  # the model learns to stop
    assert '"arguments": {"path": "b.py"}' in runs[1]  # tool-call turns are trained
    assert rest == ASSISTANT_PART.sub(r"\1", text)  # everything else (tools, results, headers) is not
    assert "print('a')" in rest and "You are a coding agent." in rest


def test_the_tiny_model_gets_trls_generation_marked_training_template(tokenizer, plan):
    assert plan.method is MaskMethod.GENERATION
    assert "TRL" in plan.origin and "{%- generation %}" in plan.chat_template
    assert tokenizer.chat_template != plan.chat_template  # the saved tokenizer keeps the model's own


def test_prefix_diff_and_generation_markers_agree_on_a_prefix_stable_template(tokenizer, plan):
    conversation = Conversation(MULTI_TURN, TOOLS)
    prefix = TemplatePlan(plan.chat_template, MaskMethod.PREFIX, "training template, prefix diff")
    by_markers = tokenize_conversation(tokenizer, plan, conversation, max_length=4096)
    assert tokenize_conversation(tokenizer, prefix, conversation, max_length=4096) == by_markers


def test_a_template_without_markers_falls_back_to_exact_prefix_diff_spans(tokenizer):
    plain = copy.deepcopy(tokenizer)
    plain.chat_template = PLAIN_CHATML
    plan = plan_template(plain)
    assert plan.method is MaskMethod.PREFIX
    example = tokenize_conversation(plain, plan, Conversation(MULTI_TURN, TOOLS), max_length=4096)
    text = plain.apply_chat_template([served_message(m) for m in MULTI_TURN], tokenize=False)
    runs, rest = labelled_runs(plain, example)
    assert runs == [m.group(2) for m in ASSISTANT_PART.finditer(text)]
    assert rest == ASSISTANT_PART.sub(r"\1", text)


def test_a_template_that_is_not_prefix_stable_fails_loudly(tokenizer):
    # Qwen3's own template drops the empty <think> block from assistant turns once a later turn follows.
    with pytest.raises(TemplateError, match="not prefix-stable"):
        plan_template(tokenizer, MaskMethod.PREFIX)  # its probe conversation already shows it
    own = TemplatePlan(tokenizer.chat_template, MaskMethod.PREFIX, "the model's own template")
    with pytest.raises(TemplateError, match="not prefix-stable"):
        build_examples(tokenizer, [Conversation(MULTI_TURN, TOOLS)], max_length=4096, plan=own)


def test_a_template_that_leaves_the_end_of_turn_token_untrained_is_refused(tokenizer):
    broken = copy.deepcopy(tokenizer)
    broken.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}{% generation %}"
        "{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
    )
    with pytest.raises(TemplateError, match="never learn to stop"):
        plan_template(broken)


def test_bad_conversations_are_skipped_and_counted_with_fixed_reasons(tokenizer, plan):
    good = Conversation(MULTI_TURN, TOOLS, source="good")
    bad_args = [dict(m) for m in MULTI_TURN[:3]]
    bad_args[2]["tool_calls"] = [{"type": "function", "function": {"name": "bash", "arguments": "{oops"}}]
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
    bad = {
        "empty": Conversation(()),
        "no-assistant": Conversation(({"role": "user", "content": "hi"},)),
        "role": Conversation(({"role": "robot", "content": "hi"}, {"role": "assistant", "content": "x"})),
        "first": Conversation(({"role": "assistant", "content": "x"}, {"role": "user", "content": "y"})),
        "args": Conversation(tuple(bad_args)),
        "image": Conversation((image, {"role": "assistant", "content": "x"})),
    }
    conversations = [good, *(Conversation(c.messages, c.tools, source=k) for k, c in bad.items())]
    examples, skipped = build_examples(tokenizer, conversations, max_length=4096, plan=plan)
    assert [e.source for e in examples] == ["good"]
    assert {s.source: s.reason for s in skipped} == {
        "empty": SkipReason.EMPTY,
        "no-assistant": SkipReason.NO_ASSISTANT,
        "role": SkipReason.BAD_MESSAGE,
        "first": SkipReason.ASSISTANT_FIRST,
        "args": SkipReason.BAD_TOOL_CALL,
        "image": SkipReason.NON_TEXT_CONTENT,
    }


def test_text_part_lists_render_like_strings(tokenizer, plan):
    parts = [dict(m) for m in MULTI_TURN]
    parts[1]["content"] = [{"type": "text", "text": "What is in "}, {"type": "text", "text": "the repo?"}]
    as_parts = tokenize_conversation(tokenizer, plan, Conversation(tuple(parts), TOOLS), max_length=4096)
    as_text = tokenize_conversation(tokenizer, plan, Conversation(MULTI_TURN, TOOLS), max_length=4096)
    assert as_parts == as_text


def test_truncation_keeps_the_start_and_skips_what_has_nothing_left_to_learn(tokenizer, plan):
    conversation = Conversation(MULTI_TURN, TOOLS, source="long")
    full = tokenize_conversation(tokenizer, plan, conversation, max_length=4096)
    first_label = next(i for i, lab in enumerate(full.labels) if lab != IGNORE_INDEX)
    cut = tokenize_conversation(tokenizer, plan, conversation, max_length=first_label + 3)
    assert cut.truncated and cut.input_ids == full.input_ids[: first_label + 3]
    assert cut.labels == full.labels[: first_label + 3] and cut.assistant_tokens == 3
    _, skipped = build_examples(tokenizer, [conversation], max_length=first_label, plan=plan)
    assert [s.reason for s in skipped] == [SkipReason.TRUNCATED_AWAY]


def test_examples_check_their_own_labels():
    with pytest.raises(ValueError, match="neither -100 nor its input id"):
        TokenizedExample((1, 2), (1, 3))
    with pytest.raises(ValueError, match="2 input ids but 1 labels"):
        TokenizedExample((1, 2), (1,))


def test_show_mask_brackets_the_trained_tokens(tokenizer, plan):
    example = tokenize_conversation(tokenizer, plan, Conversation(MULTI_TURN, TOOLS), max_length=4096)
    shown = show_mask(tokenizer, example, max_chars=100_000)
    assert shown.count("[[") == shown.count("]]") == 5
    assert "[[<think>\n\n</think>\n\nIt printed a.<|im_end|>\n]]" in shown
    assert len(show_mask(tokenizer, example, max_chars=300)) < 320


def test_the_jsonl_loader_skips_bad_lines_and_keeps_tools(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    good = {"messages": list(MULTI_TURN), "tools": list(TOOLS)}
    path.write_text(json.dumps(good) + "\nnot json\n\n" + json.dumps({"tools": []}) + "\n")
    conversations, skipped = read_messages_jsonl(path)
    assert len(conversations) == 1 and conversations[0].tools == TOOLS
    assert conversations[0].source == f"{path}#1"
    assert [(s.source, s.reason) for s in skipped] == [
        (f"{path}#2", "line is not valid JSON"),
        (f"{path}#4", "line has no messages list"),
    ]
