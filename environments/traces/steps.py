"""The steps of a demonstration, before any harness renders them (``environments.traces.demos`` plans them;
each harness module's ``render_step`` turns one into its own tool calls and results)."""

from __future__ import annotations

from dataclasses import dataclass

WORKSPACE = "/workspace"
"""Where a demonstration's session works (the sandbox's working directory)."""


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
