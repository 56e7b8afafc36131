"""The one entry point: read trace files of any supported format into validated conversations.

``read_traces(path)`` reads a file, or every ``*.json``/``*.jsonl`` file under a folder (sorted), and
returns ``(conversations, skipped)``. It never raises on bad data: an unreadable file, a line that is not
JSON (a run cut off mid-write leaves a truncated last line), a record missing a field, or a conversation a
chat template cannot render (``validate.py``) becomes a ``Skipped`` with a fixed reason code, and reading
goes on. A file is parsed as one JSON document (a record, or a list of records) or else as JSON lines;
its format is ``format=`` or detected from the records' shape:

- ``pi-session``: pi's session JSONL (``type`` session/message/...): one conversation per file;
- ``pi-events``: pi's ``--mode json`` stdout (``message_end``, ``turn_start``, ...): one per file;
- ``opencode-export``: ``opencode export`` JSON ``{"info", "messages"}``: one per record;
- ``opencode-events``: opencode's ``--format json`` stdout (events with a ``part``): one per file;
- ``hermes-export``: ``hermes sessions export`` lines (``messages``, ``system_prompt``...): one per record;
- ``atif``: ATIF trajectories ``{"steps": [...]}``: one per record;
- ``chat``: ``{"messages": [...], "tools": [...]}``: one per record.

(``messages-jsonl`` and ``openai`` are accepted as names of ``chat``.)

Sources are ``<file>`` or ``<file>#<line>`` (``#<index>`` in a JSON list).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from environments.traces import opencode, pi
from environments.traces.atif import read_atif
from environments.traces.chat import read_chat
from environments.traces.hermes import read_hermes_session
from environments.traces.messages import TraceError
from environments.traces.types import Conversation, Skipped
from environments.traces.validate import validate_conversation

SUFFIXES = (".json", ".jsonl")
DETECT_RECORDS = 64
Entry = tuple[str, Mapping[str, Any]]


class TraceFormat(StrEnum):
    PI_SESSION = "pi-session"
    PI_EVENTS = "pi-events"
    OPENCODE_EXPORT = "opencode-export"
    OPENCODE_EVENTS = "opencode-events"
    HERMES_EXPORT = "hermes-export"
    ATIF = "atif"
    CHAT = "chat"

    @classmethod
    def _missing_(cls, value: object) -> TraceFormat | None:
        return cls.CHAT if value in ("messages-jsonl", "openai") else None


STREAMS = (TraceFormat.PI_SESSION, TraceFormat.PI_EVENTS, TraceFormat.OPENCODE_EVENTS)
HERMES_KEYS = ("system_prompt", "tool_call_count", "message_count")


def _record_format(record: Mapping[str, Any]) -> TraceFormat | None:
    kind = record.get("type")
    if kind in pi.EVENT_TYPES:
        return TraceFormat.PI_EVENTS
    if kind in opencode.EVENT_TYPES and isinstance(record.get("part"), Mapping):
        return TraceFormat.OPENCODE_EVENTS
    if kind in pi.SESSION_TYPES:
        return TraceFormat.PI_SESSION
    if "info" in record and "messages" in record:
        return TraceFormat.OPENCODE_EXPORT
    if "steps" in record:
        return TraceFormat.ATIF
    if "messages" in record:
        return TraceFormat.HERMES_EXPORT if any(k in record for k in HERMES_KEYS) else TraceFormat.CHAT
    return None


def detect_format(records: Sequence[Mapping[str, Any]]) -> TraceFormat | None:
    """The format of a file's records (its first few decide), or ``None`` when none is recognized.

    A pi event stream starts with the same ``session`` header as a session file, so any event type among
    the first records makes it ``pi-events``."""
    found = [f for r in records[:DETECT_RECORDS] if (f := _record_format(r)) is not None]
    if TraceFormat.PI_EVENTS in found:
        return TraceFormat.PI_EVENTS
    return found[0] if found else None


def parse_records(text: str, *, source: str) -> tuple[list[Entry], list[Skipped]]:
    """A file's JSON objects with their sources, and the lines that were not JSON objects."""
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, Mapping):
        return [(source, whole)], []
    if isinstance(whole, list):
        entries = [(f"{source}#{i}", r) for i, r in enumerate(whole) if isinstance(r, Mapping)]
        skipped = [
            Skipped(f"{source}#{i}", "not_an_object")
            for i, r in enumerate(whole)
            if not isinstance(r, Mapping)
        ]
        return entries, skipped
    entries, skipped = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            skipped.append(Skipped(f"{source}#{number}", "invalid_json"))
            continue
        if isinstance(record, Mapping):
            entries.append((f"{source}#{number}", record))
        else:
            skipped.append(Skipped(f"{source}#{number}", "not_an_object"))
    if not entries:  # not JSON lines at all (e.g. a truncated JSON document): one reason, not one per line
        return [], [Skipped(source, "invalid_json" if text.strip() else "empty_file")]
    return entries, skipped


def _guarded(source: str, read: Callable[[], Conversation]) -> Conversation | Skipped:
    try:
        return validate_conversation(read())
    except TraceError as exc:
        return Skipped(source, str(exc))
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
        return Skipped(source, "malformed_trace")


def read_text(
    text: str,
    *,
    source: str,
    format: TraceFormat | str | None = None,
    prompt: str | None = None,
    fill_from_harness: bool = True,
) -> tuple[list[Conversation], list[Skipped]]:
    """The conversations in one file's text. ``prompt`` is the user's message for streams that do not
    record it (opencode ``--format json``); ``fill_from_harness=False`` leaves tools and system prompt as
    the trace has them."""
    entries, skipped = parse_records(text, source=source)
    if not entries:
        return [], skipped
    records = [r for _, r in entries]
    fmt = TraceFormat(format) if format is not None else detect_format(records)
    if fmt is None:
        return [], [*skipped, Skipped(source, "unknown_format")]
    fill = fill_from_harness
    results: list[Conversation | Skipped]
    if fmt in STREAMS:
        readers: dict[TraceFormat, Callable[[], Conversation]] = {
            TraceFormat.PI_SESSION: lambda: pi.read_pi_session(
                records, source=source, fill_from_harness=fill
            ),
            TraceFormat.PI_EVENTS: lambda: pi.read_pi_events(records, source=source, fill_from_harness=fill),
            TraceFormat.OPENCODE_EVENTS: lambda: opencode.read_opencode_events(
                records, source=source, prompt=prompt, fill_from_harness=fill
            ),
        }
        results = [_guarded(source, readers[fmt])]
    else:
        read_one = {
            TraceFormat.OPENCODE_EXPORT: opencode.read_opencode_export,
            TraceFormat.HERMES_EXPORT: read_hermes_session,
            TraceFormat.ATIF: read_atif,
            TraceFormat.CHAT: read_chat,
        }[fmt]
        results = [
            _guarded(where, lambda r=record, w=where: read_one(r, source=w, fill_from_harness=fill))
            for where, record in entries
        ]
    conversations = [r for r in results if isinstance(r, Conversation)]
    return conversations, [*skipped, *(r for r in results if isinstance(r, Skipped))]


def trace_files(path: Path) -> list[Path]:
    """``path`` itself, or the ``*.json``/``*.jsonl`` files under the folder ``path``, sorted."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    return [path]


def read_traces(
    path: str | Path,
    format: TraceFormat | str | None = None,
    *,
    prompt: str | None = None,
    fill_from_harness: bool = True,
) -> tuple[list[Conversation], list[Skipped]]:
    """Every conversation in a trace file or folder, and what was skipped (with reasons)."""
    if format is not None:
        format = TraceFormat(format)  # a wrong format name is the caller's bug: raise now
    conversations: list[Conversation] = []
    skipped: list[Skipped] = []
    for file in trace_files(Path(path)):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            skipped.append(Skipped(str(file), "unreadable_file"))
            continue
        found, missed = read_text(
            text, source=str(file), format=format, prompt=prompt, fill_from_harness=fill_from_harness
        )
        conversations.extend(found)
        skipped.extend(missed)
    return conversations, skipped
