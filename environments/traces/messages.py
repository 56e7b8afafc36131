"""Building blocks every reader shares: OpenAI message constructors, text of content parts, tool-call
arguments as JSON strings, the harness defaults (tools and system prompt), and ``TraceError``.

A reader turns one trace into one ``Conversation`` or raises ``TraceError`` with a fixed code (never a
piece of the input); ``read.py`` turns that into a ``Skipped``. Messages come out in one shape:

- ``{"role": "system" | "user", "content": str}``
- ``{"role": "assistant", "content": str, "tool_calls": [...]}`` (``tool_calls`` only when there are
  calls; ``content`` is ``""``, never ``None``, when the model wrote only calls)
- ``{"role": "tool", "tool_call_id": str, "content": str}`` (plus ``name`` where the harness sends it)

Content is always a string: text parts are joined (images and other media are dropped and counted in
``meta["dropped"]``), so a chat template renders the same text the harness's parts array would give.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from environments.harness_prompts import HARNESSES, harness_system_prompt, harness_tools
from environments.traces.types import Conversation


class TraceError(ValueError):
    """A trace (or record) that cannot be read; the message is a fixed code, never input text."""


def field(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    """``obj[key]`` when it has type ``kind``; else ``TraceError("missing_field:<key>")``."""
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise TraceError(f"missing_field:{key}")
    return value


def text_of(content: object, sep: str = "", dropped: Counter[str] | None = None) -> str:
    """The text of an OpenAI/harness content value: a string, or its text parts joined by ``sep``.

    Parts without text (images, files) are counted in ``dropped`` under their ``type``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        raise TraceError("invalid_content")
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif dropped is not None:
            kind = part.get("type") if isinstance(part, Mapping) else None
            dropped[kind if kind in ("image", "image_url", "file", "input_audio") else "part"] += 1
    return sep.join(texts)


def json_args(arguments: object) -> str:
    """Tool-call arguments as the JSON string OpenAI messages carry: a string is kept as written,
    anything else is serialized compactly (as ``JSON.stringify`` does in the TypeScript harnesses)."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    try:
        return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        raise TraceError("invalid_tool_arguments") from None


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def system(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str, calls: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [dict(c) for c in calls]
    return message


def tool_result(call_id: str, text: str, name: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": text}
    if name:
        message["name"] = name
    return message


class Draft:
    """A conversation being read: messages, plus what the reader set aside (counts, reasoning)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.dropped: Counter[str] = Counter()
        self.reasoning: list[dict[str, Any]] = []

    def add(self, message: dict[str, Any], reasoning: str = "") -> None:
        if reasoning:
            self.reasoning.append({"message": len(self.messages), "text": reasoning})
        self.messages.append(message)

    def finish(
        self,
        *,
        source: str,
        harness: str | None,
        tools: Sequence[Mapping[str, Any]] = (),
        meta: Mapping[str, Any] | None = None,
        fill_from_harness: bool = True,
    ) -> Conversation:
        """The conversation; a harness's captured tools and system prompt fill in what the trace lacks."""
        out = {k: v for k, v in (meta or {}).items() if v is not None}
        if self.dropped:
            out["dropped"] = dict(sorted(self.dropped.items()))
        if self.reasoning:
            out["reasoning"] = list(self.reasoning)
        messages = list(self.messages)
        harness = harness if harness in HARNESSES else None
        if harness is not None and fill_from_harness:
            if not tools:
                tools = harness_tools(harness)
                out["tools_from"] = "harness_prompts"
            if not messages or messages[0].get("role") != "system":
                messages.insert(0, system(harness_system_prompt(harness)))
                out["system_from"] = "harness_prompts"
                for item in out.get("reasoning", ()):
                    item["message"] += 1
        return Conversation(tuple(messages), tuple(dict(t) for t in tools), source, harness, out)
