"""The book of open rollouts: each one's record, turns and protected paths, and the facts its guard
sessions had shown, kept apart from the replicas that check its calls.

One replica keeps its book in its own process (`LocalBook`). Several replicas of one guard (Ray Serve
autoscaling) share one book held by a Ray actor (`RolloutLedger`, reached through `LedgerBook`), so any
replica can serve any request of any rollout: the record comes out whole whichever replica served which
turn. A replica's guard sessions stay in the replica as a cache (`serve.proxy`): one that meets a
conversation it has not seen folds its full history, and first absorbs the facts the book holds for a
conversation with the same tools (a compaction another replica saw), so nothing shown is forgotten.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from .mode import GuardMode
from .record import OTHER_HARNESS, RolloutRecord, TurnRecord
from .rules.facts import SessionFacts
from .turn import RequestError


@dataclass(frozen=True, slots=True)
class RolloutView:
    """What a replica needs of an open rollout to serve one request."""

    record: RolloutRecord
    """The record without its turns (they stay in the book)."""
    turns: int
    protected: tuple[str, ...]


@dataclass(slots=True)
class _Entry:
    record: RolloutRecord
    protected: tuple[str, ...]
    turns: list[TurnRecord] = field(default_factory=list)
    facts: OrderedDict[tuple[str, ...], SessionFacts] = field(default_factory=OrderedDict)
    """The latest facts of each tool set's conversation (by tool names), the newest last."""

    def snapshot(self) -> RolloutRecord:
        return replace(self.record, turns=tuple(self.turns))


class RolloutBook:
    """The open rollouts, least recently used first; plain and synchronous (the ledger actor runs one
    call at a time, so no call sees another's half-done update)."""

    def __init__(
        self, max_rollouts: int, guard: GuardMode, auto_open: bool = False, max_facts: int = 8
    ) -> None:
        self.max_rollouts = max_rollouts
        self.guard = guard
        self.auto_open = auto_open
        self.max_facts = max_facts
        self.entries: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self.entries)

    def open(
        self,
        harness: str,
        adapter: str,
        allowlist: tuple[str, ...],
        rollout_id: str | None,
        protected: tuple[str, ...],
        opened_at_s: float,
    ) -> RolloutRecord:
        rollout_id = rollout_id or uuid.uuid4().hex
        if rollout_id in self.entries:
            raise RequestError(409, "rollout_exists", "a rollout with this id is already open")
        if len(self.entries) >= self.max_rollouts:
            if not self.auto_open:
                raise RequestError(409, "too_many_rollouts", "too many open rollouts: close finished ones")
            self.entries.popitem(last=False)
        try:
            record = RolloutRecord(
                rollout_id,
                harness,
                adapter,
                tuple(allowlist),
                opened_at_s=opened_at_s,
                guard=self.guard,
            )
        except ValueError as exc:
            raise RequestError(400, "rollout_invalid", str(exc)) from None
        self.entries[rollout_id] = _Entry(record, tuple(protected))
        return record

    def view(self, rollout_id: str, opened_at_s: float = 0.0) -> RolloutView:
        """The rollout a request names (opened on first use in standalone mode); it becomes the most
        recently used."""
        entry = self.entries.get(rollout_id)
        if entry is None and self.auto_open:
            self.open(OTHER_HARNESS, "", (), rollout_id, (), opened_at_s)
            entry = self.entries[rollout_id]
        if entry is None:
            raise RequestError(404, "rollout_not_found", "no open rollout with this id")
        self.entries.move_to_end(rollout_id)
        return RolloutView(entry.record, len(entry.turns), entry.protected)

    def facts(self, rollout_id: str, tools: tuple[str, ...]) -> SessionFacts | None:
        """The latest facts of this rollout's conversation with these tool names, if any."""
        entry = self.entries.get(rollout_id)
        return None if entry is None else entry.facts.get(tools)

    def commit(
        self,
        rollout_id: str,
        turn: TurnRecord,
        conversation: tuple[Any, ...] | None,
        key: str,
        has_tools: bool,
        facts: tuple[tuple[str, ...], SessionFacts] | None,
    ) -> int:
        """Append a turn (numbered here, in arrival order); keep the conversation it continued when it
        is the record's (a request with tools, or the first), and its session's facts by tool names.
        -1: the rollout was closed while the turn ran, nothing kept."""
        entry = self.entries.get(rollout_id)
        if entry is None:
            return -1
        index = len(entry.turns)
        entry.turns.append(replace(turn, index=index))
        if conversation is not None and (has_tools or not entry.record.conversation):
            entry.record = replace(entry.record, conversation=conversation, conversation_key=key)
        if facts is not None:
            names, shown = facts
            entry.facts[names] = shown
            entry.facts.move_to_end(names)
            while len(entry.facts) > self.max_facts:
                entry.facts.popitem(last=False)
        return index

    def record(self, rollout_id: str) -> RolloutRecord:
        entry = self.entries.get(rollout_id)
        if entry is None:
            raise RequestError(404, "rollout_not_found", "no open rollout with this id")
        return entry.snapshot()

    def close(self, rollout_id: str) -> RolloutRecord:
        """The final record; the rollout's state dropped."""
        entry = self.entries.pop(rollout_id, None)
        if entry is None:
            raise RequestError(404, "rollout_not_found", "no open rollout with this id")
        return replace(entry.snapshot(), closed=True)


class Book(Protocol):
    """The book as a replica reaches it (in its process, or through the ledger actor). ``call`` starts
    the call before it returns: what it sends is in the book even if the wait for it is cancelled."""

    def call(self, method: str, *args: Any) -> Awaitable[Any]: ...

    async def size(self) -> int: ...


async def _value(value: Any) -> Any:
    return value


async def _raise(exc: BaseException) -> Any:
    raise exc


class LocalBook:
    """A book in this process (one replica, the standalone guard, the tests)."""

    def __init__(self, book: RolloutBook) -> None:
        self.book = book

    def call(self, method: str, *args: Any) -> Awaitable[Any]:
        try:
            return _value(getattr(self.book, method)(*args))
        except RequestError as exc:
            return _raise(exc)

    async def size(self) -> int:
        return len(self.book)


class RolloutLedger:
    """The Ray actor that holds one guard's book for all its replicas (``max_concurrency=1``). A refused
    call comes back as a value, not an exception, so the replica raises the same ``RequestError``."""

    def __init__(self, max_rollouts: int, guard: str) -> None:
        self.book = RolloutBook(max_rollouts, GuardMode.parse(guard))
        self.replicas: dict[str, str] = {}
        """The node of each replica that has joined (for the run's report of what ran where)."""

    def join(self, replica: str, node: str) -> None:
        self.replicas[replica] = node

    def members(self) -> dict[str, str]:
        return dict(self.replicas)

    def call(self, method: str, *args: Any) -> tuple[bool, Any]:
        if method not in ("open", "view", "facts", "commit", "record", "close"):
            raise ValueError(f"the ledger has no method {method!r}")
        try:
            return True, getattr(self.book, method)(*args)
        except RequestError as exc:
            return False, (exc.status, exc.code, exc.message)

    def size(self) -> int:
        return len(self.book)


class LedgerBook:
    """A replica's way to the ledger actor (each call one actor call, ordered per replica)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def call(self, method: str, *args: Any) -> Awaitable[Any]:
        return self._result(self.handle.call.remote(method, *args))

    @staticmethod
    async def _result(ref: Any) -> Any:
        ok, value = await ref
        if not ok:
            raise RequestError(*value)
        return value

    async def size(self) -> int:
        return await self.handle.size.remote()
