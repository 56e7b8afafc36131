"""Conversations -> token ids and labels for SFT: the model learns exactly the assistant's turns.

Each ``Conversation`` is rendered once, whole, with the model's chat template and its tools, both in the form
vLLM hands its template (``actors.sft.served_form``: what is trained is what is served), then tokenized
once with character offsets. A token's label is its id when its characters lie inside an assistant span and
``-100`` otherwise, so system and user text, tool results, the tools block and every role header stay out of
the loss, while assistant text, tool calls and the end-of-turn token that closes each assistant turn (what
the model must emit to stop) are in it.

Assistant spans come from one of two methods (``plan_template`` picks and says which and why):

- ``generation``: the template marks assistant output with ``{% generation %}``; jinja reports the marked
  character ranges. A model template without markers is swapped for TRL's training variant of it when TRL
  ships one (for Qwen3: the same rendering except that every assistant turn carries its (possibly empty)
  ``<think>`` block, which makes the template prefix-preserving).
- ``prefix``: for any other template, the span of assistant turn ``i`` is what ``messages[:i+1]`` adds to
  ``messages[:i]`` rendered with the generation prompt. This needs a prefix-stable template (appending a
  message never re-renders earlier ones); when that fails the template is the problem, not the data, so it
  raises ``TemplateError`` instead of skipping.

Bad conversations (no assistant turn, unknown roles, non-text content, tool-call arguments that are not a
JSON object, a template that refuses them, nothing left to learn after truncation) come back as ``Skipped``
with a fixed reason from ``SkipReason``; the caller counts them. Nothing here imports a trainer.

Errors: ``SFTDataError`` <- ``TemplateError`` (the chat template cannot give exact masks; operator message).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors.sft.served_form import ServedFormError, served_message, served_tools
from environments.errors import UserError
from environments.traces.types import ROLES, Conversation, Skipped

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

IGNORE_INDEX = -100
_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")


class SFTDataError(UserError, ValueError):
    """Base of this module's errors."""


class TemplateError(SFTDataError):
    """The chat template cannot yield exact assistant masks; the message says what to change."""


class MaskMethod(StrEnum):
    AUTO = "auto"
    GENERATION = "generation"
    PREFIX = "prefix"


class SkipReason(StrEnum):
    """Fixed reasons (never echoing the data) so that skips can be counted."""

    EMPTY = "no messages"
    BAD_MESSAGE = "a message is not an object with a known role"
    NON_TEXT_CONTENT = "a message has non-text content parts"
    NO_ASSISTANT = "no assistant turn to learn from"
    ASSISTANT_FIRST = "an assistant turn comes before any prompt"
    BAD_TOOL_CALL = "a tool call lacks a function name or JSON-object arguments"
    BAD_TOOL = "a declared tool lacks a function name"
    TEMPLATE_FAILED = "the chat template refused the conversation"
    STRADDLE = "a token straddles an assistant span boundary"
    TRUNCATED_AWAY = "no assistant tokens within max_length"


class _Skip(Exception):
    def __init__(self, reason: SkipReason) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class TemplatePlan:
    """Which template renders the conversations and how assistant spans are found in it."""

    chat_template: str
    method: MaskMethod
    origin: str
    """Why this template and method, for the preflight printout."""

    def __post_init__(self) -> None:
        if self.method is MaskMethod.AUTO:
            raise ValueError("TemplatePlan.method must be a concrete method, not auto")
        if self.method is MaskMethod.GENERATION and not _GENERATION_TAG.search(self.chat_template):
            raise ValueError("TemplatePlan: the generation method needs {% generation %} markers")


@dataclass(frozen=True, slots=True)
class TokenizedExample:
    """One conversation ready for the trainer: labels are -100 or equal to input_ids, token for token."""

    input_ids: tuple[int, ...]
    labels: tuple[int, ...]
    source: str = ""
    truncated: bool = False

    def __post_init__(self) -> None:
        if len(self.input_ids) != len(self.labels):
            raise ValueError(f"{self.source}: {len(self.input_ids)} input ids but {len(self.labels)} labels")
        if any(lab not in (IGNORE_INDEX, tok) for tok, lab in zip(self.input_ids, self.labels, strict=True)):
            raise ValueError(f"{self.source}: a label is neither -100 nor its input id")

    @property
    def assistant_tokens(self) -> int:
        return sum(lab != IGNORE_INDEX for lab in self.labels)

    def to_row(self) -> dict[str, list[int]]:
        return {"input_ids": list(self.input_ids), "labels": list(self.labels)}


# -- reading -------------------------------------------------------------------------------------------------


def read_conversations(
    path: str | Path, format: str | None = None
) -> tuple[list[Conversation], list[Skipped]]:
    """THE switch point for trace input: ``environments.traces.read_traces`` (every harness format, ATIF,
    chat JSONL); only where that reader is absent, ``read_messages_jsonl`` ({"messages", "tools"} lines)."""
    try:
        from environments.traces import read_traces
    except ImportError:  # an environments package without the readers: plain chat JSONL only
        if format not in (None, "messages-jsonl"):
            raise SFTDataError(
                f"trace format {format!r} needs environments.traces.read_traces, which is not available yet; "
                "use a JSONL of {messages, tools} objects (format: messages-jsonl)"
            ) from None
        return read_messages_jsonl(path)
    return read_traces(path, format=format)


def read_messages_jsonl(path: str | Path) -> tuple[list[Conversation], list[Skipped]]:
    """One ``{"messages": [...], "tools": [...]}`` object per line; a bad line is skipped, not fatal."""
    conversations: list[Conversation] = []
    skipped: list[Skipped] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            source = f"{path}#{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                skipped.append(Skipped(source, "line is not valid JSON"))
                continue
            if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
                skipped.append(Skipped(source, "line has no messages list"))
                continue
            tools = record.get("tools") or []
            if not isinstance(tools, list):
                skipped.append(Skipped(source, "tools is not a list"))
                continue
            conversations.append(Conversation(tuple(record["messages"]), tuple(tools), source=source))
    return conversations, skipped


# -- template choice -----------------------------------------------------------------------------------------


def _own_template(tokenizer: PreTrainedTokenizerBase) -> str:
    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    if not template:
        raise TemplateError("the tokenizer has no chat template: SFT renders conversations with it")
    return template


def plan_template(
    tokenizer: PreTrainedTokenizerBase, method: MaskMethod | str = MaskMethod.AUTO
) -> TemplatePlan:
    """Pick the template and span method (see the module docstring), then check the end-of-turn token is
    inside the assistant span of a probe conversation."""
    method = MaskMethod(method)
    own = _own_template(tokenizer)
    plan: TemplatePlan | None = None
    if method is not MaskMethod.PREFIX:
        if _GENERATION_TAG.search(own):
            plan = TemplatePlan(
                own, MaskMethod.GENERATION, "the model's own template ({% generation %} marks)"
            )
        else:
            from trl.chat_template_utils import get_training_chat_template

            try:
                training = get_training_chat_template(tokenizer)
            except ValueError:
                training = None
            if training:
                plan = TemplatePlan(
                    training, MaskMethod.GENERATION, "TRL's training variant of the model's template"
                )
        if plan is None and method is MaskMethod.GENERATION:
            raise TemplateError(
                "mask method 'generation' needs {% generation %} markers, and TRL ships no training variant "
                "of this model's template: use mask_method: prefix or add the markers to the template"
            )
    if plan is None:
        plan = TemplatePlan(own, MaskMethod.PREFIX, "the model's own template, spans by prefix diff")
    _check_stop_token_trained(tokenizer, plan)
    return plan


def _check_stop_token_trained(tokenizer: PreTrainedTokenizerBase, plan: TemplatePlan) -> None:
    probe = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ]
    text, spans = render_with_spans(tokenizer, plan, probe, ())
    if len(spans) != 1:
        raise TemplateError(f"{plan.origin}: found {len(spans)} assistant spans in a one-turn probe, not 1")
    inside = text[spans[0][0] : spans[0][1]].rstrip()
    specials = [t for t in tokenizer.all_special_tokens + list(tokenizer.get_added_vocab()) if t.strip()]
    if not any(inside.endswith(token) for token in specials):
        raise TemplateError(
            f"{plan.origin}: the assistant span ends with {inside[-20:]!r}, not an end-of-turn token, so the "
            "model would never learn to stop; fix the template's assistant span"
        )


# -- rendering and masking -----------------------------------------------------------------------------------


def render_with_spans(
    tokenizer: PreTrainedTokenizerBase,
    plan: TemplatePlan,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]],
) -> tuple[str, list[tuple[int, int]]]:
    """The rendered conversation and the character ranges of its assistant output, in order."""
    tool_list = list(tools) or None
    if plan.method is MaskMethod.GENERATION:
        from transformers.utils.chat_template_utils import render_jinja_template

        rendered, indices = render_jinja_template(
            conversations=[list(messages)],
            tools=tool_list,
            chat_template=plan.chat_template,
            return_assistant_tokens_mask=True,
            **tokenizer.special_tokens_map,
        )
        return rendered[0], [(start, end) for start, end in indices[0] if end > start]

    def render(part: Sequence[dict[str, Any]], prompt: bool) -> str:
        return tokenizer.apply_chat_template(
            list(part), tools=tool_list, chat_template=plan.chat_template, tokenize=False,
            add_generation_prompt=prompt,
        )  # fmt: skip

    full = render(messages, False)
    spans = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        before, upto = render(messages[:i], True), render(messages[: i + 1], False)
        if not (upto.startswith(before) and full.startswith(upto)):
            raise TemplateError(
                f"{plan.origin} is not prefix-stable (rendering more messages changed assistant turn {i} or "
                "what precedes it), so its spans cannot be found by prefix diff; use a template with "
                "{% generation %} markers (mask_method: generation)"
            )
        spans.append((len(before), len(upto)))
    return full, spans


def _normalize(conversation: Conversation) -> list[dict[str, Any]]:
    """Plain dicts for the template as the server hands them to it (``actors.sft.served_form``): text-part
    lists joined into strings, tool-call arguments parsed, everything checked."""
    if not conversation.messages:
        raise _Skip(SkipReason.EMPTY)
    messages = []
    for message in conversation.messages:
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise _Skip(SkipReason.BAD_MESSAGE)
        message = dict(message)
        content = message.get("content")
        if isinstance(content, list):
            if not all(isinstance(p, dict) and p.get("type") == "text" for p in content):
                raise _Skip(SkipReason.NON_TEXT_CONTENT)
            message["content"] = "".join(str(p.get("text", "")) for p in content)
        elif content is not None and not isinstance(content, str):
            raise _Skip(SkipReason.NON_TEXT_CONTENT)
        try:
            message = served_message(message)
        except ServedFormError:
            raise _Skip(SkipReason.BAD_TOOL_CALL) from None
        messages.append(message)
    roles = [m["role"] for m in messages]
    if "assistant" not in roles:
        raise _Skip(SkipReason.NO_ASSISTANT)
    if roles[0] == "assistant":
        raise _Skip(SkipReason.ASSISTANT_FIRST)
    return messages


def tokenize_conversation(
    tokenizer: PreTrainedTokenizerBase, plan: TemplatePlan, conversation: Conversation, *, max_length: int
) -> TokenizedExample:
    """Render, tokenize once with offsets, label the tokens inside assistant spans, keep the first
    ``max_length`` tokens. Raises ``_Skip`` for bad data and ``TemplateError`` for a bad template."""
    messages = _normalize(conversation)
    try:
        tools = served_tools(conversation.tools)
    except ServedFormError:
        raise _Skip(SkipReason.BAD_TOOL) from None
    try:
        text, spans = render_with_spans(tokenizer, plan, messages, tools)
    except TemplateError:
        raise
    except Exception as exc:  # jinja raises whatever the template's raise_exception or a filter raises
        raise _Skip(SkipReason.TEMPLATE_FAILED) from exc
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids: list[int] = encoded["input_ids"]
    labels = [IGNORE_INDEX] * len(ids)
    span_index = 0
    for t, (start, end) in enumerate(encoded["offset_mapping"]):
        while span_index < len(spans) and spans[span_index][1] <= start:
            span_index += 1
        if span_index == len(spans) or end <= spans[span_index][0] or end == start:
            continue
        span_start, span_end = spans[span_index]
        if start < span_start or end > span_end:
            raise _Skip(SkipReason.STRADDLE)
        labels[t] = ids[t]
    truncated = len(ids) > max_length
    example = TokenizedExample(
        tuple(ids[:max_length]), tuple(labels[:max_length]), conversation.source, truncated
    )
    if example.assistant_tokens == 0:
        raise _Skip(SkipReason.TRUNCATED_AWAY)
    return example


def build_examples(
    tokenizer: PreTrainedTokenizerBase,
    conversations: Iterable[Conversation],
    *,
    max_length: int,
    plan: TemplatePlan | None = None,
) -> tuple[list[TokenizedExample], list[Skipped]]:
    """Tokenize every conversation; bad ones are returned as ``Skipped`` with a ``SkipReason``."""
    if not getattr(tokenizer, "is_fast", False):
        raise TemplateError("exact masks need character offsets: load a fast tokenizer (use_fast=True)")
    plan = plan or plan_template(tokenizer)
    examples: list[TokenizedExample] = []
    skipped: list[Skipped] = []
    for conversation in conversations:
        try:
            examples.append(tokenize_conversation(tokenizer, plan, conversation, max_length=max_length))
        except _Skip as skip:
            skipped.append(Skipped(conversation.source, skip.reason.value))
    return examples, skipped


def show_mask(tokenizer: PreTrainedTokenizerBase, example: TokenizedExample, max_chars: int = 2400) -> str:
    """The example's text with labelled (assistant) tokens in ``[[...]]``; long texts are cut around the
    first assistant span."""
    parts: list[str] = []
    inside = False
    for token, label in zip(example.input_ids, example.labels, strict=True):
        labelled = label != IGNORE_INDEX
        if labelled != inside:
            parts.append("[[" if labelled else "]]")
            inside = labelled
        parts.append(tokenizer.decode([token]))
    if inside:
        parts.append("]]")
    text = "".join(parts)
    if len(text) <= max_chars:
        return text
    start = max(0, text.find("[[") - max_chars // 4)
    return ("..." if start else "") + text[start : start + max_chars] + "..."
