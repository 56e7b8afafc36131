"""The solution surface: the part of an agent's final workspace the verifier takes, and the copy it builds.

The verifier starts from the pristine task. From the agent's workspace it takes only regular files on the
solution surface (``paths.PathClass.SOLUTION``) that it added or changed, and the removal of pristine
solution files; tests, runner configuration, graders and shadowing files always come from the task (or
are absent), symbolic links are never taken (nor followed), special and oversize files are refused and
named. ``build_verify_tree`` writes the result plus the hidden files into a fresh folder that holds only
regular files and folders this code created, so no later write can follow a link out of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from environments.integrity.paths import PathRules
from environments.integrity.snapshot import EntryKind, Snapshot

if TYPE_CHECKING:
    from environments.core.types import Task


@dataclass(frozen=True, slots=True)
class Surface:
    """What the verifier takes from the agent."""

    files: dict[str, bytes]
    """Added or changed solution files, by path."""
    removed: frozenset[str]
    """Pristine solution files the agent deleted."""
    refused: tuple[tuple[str, str], ...]
    """``(path, why)`` for solution paths that were not taken (links, special or oversize files)."""
    ignored: int = 0
    """Changed paths off the surface (tests, configuration, graders, shadows) that were not taken."""

    def refusal(self, path: str) -> str | None:
        return next((why for p, why in self.refused if p == path), None)


def solution_surface(task: Task, final: Snapshot) -> Surface:
    rules = PathRules(task)
    files: dict[str, bytes] = {}
    refused: list[tuple[str, str]] = []
    ignored = 0
    for path, entry in final.entries.items():
        if entry.kind is EntryKind.DIR:
            continue
        pristine = task.workspace.get(path)
        if entry.kind is EntryKind.FILE and pristine is not None and final.contents.get(path) == pristine:
            continue
        if not rules.is_solution(path) or _under_cache(path):
            ignored += 1
            continue
        if entry.kind is EntryKind.FILE and path in final.contents:
            files[path] = final.contents[path]
        else:
            refused.append((path, f"a {entry.kind.value} entry, not a regular file within the size limit"))
    removed = frozenset(
        p for p in task.workspace if rules.is_solution(p) and final.entries.get(p) is None and p not in files
    )
    return Surface(files, removed, tuple(refused), ignored)


def _under_cache(path: str) -> bool:
    return any(
        part in {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"} for part in path.split("/")
    )


def build_verify_tree(task: Task, surface: Surface, dest: Path) -> Path:
    """Pristine workspace, minus removed files, plus the surface (less what clashes with the task's own
    paths), plus the hidden files, in ``dest`` (which must not exist)."""
    dest = Path(dest)
    dest.mkdir(parents=True)
    pristine = {p: d for p, d in task.workspace.items() if p not in surface.removed}
    fixed = set(pristine) | set(task.hidden)
    taken = {p: d for p, d in surface.files.items() if not _clashes(p, fixed)}
    for layer in (pristine, taken, task.hidden):
        for rel, data in layer.items():
            write_fresh(dest, rel, data)
    return dest


def _clashes(path: str, fixed: set[str]) -> bool:
    """Whether ``path`` would turn a folder the task needs into a file, or needs a task file as a folder
    (the task's files win: the agent's file is not taken)."""
    parts = path.split("/")
    parents = {"/".join(parts[:i]) for i in range(1, len(parts))}
    return bool(parents & fixed) or any(f.startswith(path + "/") for f in fixed)


def write_fresh(root: Path, rel: str, data: bytes) -> None:
    """Write ``root/rel``, replacing a file there; never through a link (none exist in a tree we built)."""
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with os.fdopen(os.open(target, flags, 0o644), "wb") as handle:
        handle.write(data)
