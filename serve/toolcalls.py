"""Tool calls assembled from streamed deltas (pure).

OpenAI-style streams send each tool call as deltas keyed by the choice index and the call's
`index`: normally the id, type and name first, then the `arguments` string in pieces. Servers
differ: some repeat the id and name in every delta, some omit the id, some omit `index` (then
one call per choice is assumed, or the id picks the call). `ToolCallAssembler` folds deltas in
order and tolerates all of these: a repeated id or name equal to the one held is ignored, a
different name is taken as a further piece of the name, arguments are concatenated. A call
that never got an id gets a deterministic one (`call_<choice>_<index>`), so the same stream
gives the same calls however it was cut.

Limits: nothing here judges the call; a call with no name or unparsable arguments is still
returned, and the rule engine blocks it (fail closed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One complete call, in the OpenAI message shape by `as_message()`."""

    choice: int
    index: int
    id: str
    name: str
    arguments: str

    def as_message(self) -> dict[str, object]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class _Partial:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """Folds `delta.tool_calls` lists per (choice, index); `calls(choice)` returns them in index order."""

    def __init__(self, max_calls: int = 128, max_chars: int = 1_000_000) -> None:
        self.max_calls = max_calls
        self.max_chars = max_chars
        self._parts: dict[tuple[int, int], _Partial] = {}
        self._chars = 0
        self.overflow = False
        """Set once a stream exceeds the bounds; later deltas are dropped (the caller fails closed)."""

    def feed(self, choice: int, deltas: object) -> None:
        if not isinstance(deltas, Sequence) or isinstance(deltas, str):
            return
        for delta in deltas:
            if isinstance(delta, Mapping):
                self._feed_one(choice, delta)

    def _slot(self, choice: int, delta: Mapping[str, object]) -> tuple[int, int]:
        raw_index = delta.get("index")
        if isinstance(raw_index, int) and not isinstance(raw_index, bool) and raw_index >= 0:
            return (choice, raw_index)
        call_id = delta.get("id")
        mine = sorted(k for k in self._parts if k[0] == choice)
        if isinstance(call_id, str) and call_id:
            for key in mine:
                if self._parts[key].id == call_id:
                    return key
            return (choice, mine[-1][1] + 1 if mine and self._parts[mine[-1]].id else 0)
        return mine[-1] if mine else (choice, 0)

    def _feed_one(self, choice: int, delta: Mapping[str, object]) -> None:
        key = self._slot(choice, delta)
        part = self._parts.get(key)
        if part is None:
            if len(self._parts) >= self.max_calls:
                self.overflow = True
                return
            part = self._parts[key] = _Partial()
        call_id = delta.get("id")
        if isinstance(call_id, str) and call_id and not part.id:
            part.id = call_id
        function = delta.get("function")
        if not isinstance(function, Mapping):
            return
        name = function.get("name")
        if isinstance(name, str) and name and name != part.name:
            # a longer repeat of the held name replaces it; anything else is a further piece
            part.name = name if name.startswith(part.name) else part.name + name
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            self._chars += len(arguments)
            if self._chars > self.max_chars:
                self.overflow = True
                return
            part.arguments.append(arguments)

    def has_calls(self, choice: int) -> bool:
        return any(k[0] == choice for k in self._parts)

    def calls(self, choice: int) -> list[ToolCall]:
        keys = sorted(k for k in self._parts if k[0] == choice)
        out = []
        for _, index in keys:
            part = self._parts[(choice, index)]
            call_id = part.id or f"call_{choice}_{index}"
            out.append(ToolCall(choice, index, call_id, part.name, "".join(part.arguments)))
        return out


def assemble(choice_deltas: Sequence[tuple[int, object]]) -> dict[int, list[ToolCall]]:
    """All calls of a stream given as (choice index, delta.tool_calls) pairs, per choice."""
    assembler = ToolCallAssembler()
    for choice, deltas in choice_deltas:
        assembler.feed(choice, deltas)
    choices = sorted({choice for choice, _ in choice_deltas})
    return {c: assembler.calls(c) for c in choices if assembler.has_calls(c)}
