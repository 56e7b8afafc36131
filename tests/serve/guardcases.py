"""Shared helpers (imported by name; pytest puts this folder on sys.path): the project's labelled guard
cases (``data/guard_dev.jsonl``; ``guard_dev2.jsonl``, mostly suspicious-but-legitimate calls;
``guard_dev3.jsonl``, evasive attacks across test frameworks; ``guard_dev4.jsonl``, whole-session
benign calls) and the real harness requests it
captured (``data/captures``, made by ``scripts/capture_requests.py``). Both live in the repository,
so a missing file fails the test that needs it instead of skipping it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "guard_dev.jsonl"
CORPORA = (CORPUS, *(DATA / f"guard_dev{n}.jsonl" for n in range(2, 7)))
CAPTURES = DATA / "captures"


def load_corpus() -> list[dict]:
    """The labelled dev cases of both files; [] while one is absent (``need`` then fails the test)."""
    if not all(path.is_file() for path in CORPORA):
        return []
    return [json.loads(line) for path in CORPORA for line in path.read_text().splitlines() if line.strip()]


def load_captures() -> list[tuple[str, dict]]:
    """(name, body) of every captured chat-completions request that carries messages."""
    if not CAPTURES.is_dir():
        return []
    out = []
    for path in sorted(CAPTURES.glob("*.json")):
        data = json.loads(path.read_text())
        body = data.get("body") if isinstance(data, dict) else None
        if isinstance(body, str):
            try:
                body = json.loads(body)
            except ValueError:
                continue
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            out.append((path.stem, body))
    return out


def need(items: list, what: str) -> list:
    """`items`, or a test failure: the data is part of the repository."""
    if not items:
        pytest.fail(f"{what} missing or empty under {DATA} (it is part of the repository)", pytrace=False)
    return items


def case(
    tools_of: str, command: str, messages: list | None = None, name: str = "bash", **args: object
) -> dict:
    """A small case in a harness's shape: `tools_of` names the declared tool set."""
    tools = {
        "pi": ["read", "bash", "edit", "write"],
        "oc": ["bash", "edit", "glob", "grep", "read", "write", "webfetch"],
        "hm": ["terminal", "process", "read_file", "write_file", "patch", "search_files", "execute_code"],
    }[tools_of]
    arguments = {"command": command} if command is not None else args
    return {
        "tools": [
            {"type": "function", "function": {"name": t, "parameters": {"type": "object"}}} for t in tools
        ],
        "messages": messages
        if messages is not None
        else [
            {"role": "system", "content": "Working directory: /testbed"},
            {"role": "user", "content": "Fix the bug so tests pass."},
        ],
        "tool_call": {
            "id": "c1",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        },
    }
