"""The steps of a session, before any harness renders them: ``environments.demos`` plans them, each
harness module's ``render_step`` turns one into its own tool calls and results and its ``parse_call`` reads
one back from a recorded session (``environments.tasks.sessions``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

WORKSPACE = "/workspace"
"""Where a demonstration's session works (the sandbox's working directory)."""


def numbered(text: str, sep: str) -> list[str]:
    """``text``'s lines as a harness's read tool shows them: ``<n><sep><line>``, from 1."""
    return [f"{i}{sep}{line}" for i, line in enumerate(text.splitlines(), 1)]


def unnumbered(lines: list[str], sep: str) -> str:
    """The file text behind ``numbered`` lines (each line ended by a newline)."""
    pattern = re.compile(rf"^\d+{re.escape(sep)}")
    return "".join(pattern.sub("", line, count=1) + "\n" for line in lines)


@dataclass(frozen=True, slots=True)
class Shell:
    command: str
    output: str
    exit_code: int = 0


@dataclass(frozen=True, slots=True)
class Read:
    path: str
    text: str


@dataclass(frozen=True, slots=True)
class Write:
    path: str
    content: str


@dataclass(frozen=True, slots=True)
class Edit:
    path: str
    edits: tuple[tuple[str, str], ...]
    """(old, new) pairs, each unique in the file and applied in order."""
    before: str
    after: str


Step = Shell | Read | Write | Edit
