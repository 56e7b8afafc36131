"""What the pipelines from published material (``notebooks``, ``sessions``) share: the candidates they
keep after the seven checks, the reasons for the others, and the command line's output."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from environments.core.runner import Runner
from environments.core.types import Task


@dataclass(slots=True)
class Kept:
    tasks: list[Task] = field(default_factory=list)
    """Candidates that passed every check."""
    rejected: list[str] = field(default_factory=list)
    """One line per candidate (or input) left out, and why."""

    def judge(self, where: str, task: Task, runner: Runner, check: bool = True) -> None:
        """Keep ``task`` if it passes the seven checks (``check=False``: keep it unchecked)."""
        from environments.tasks.checks import run_checks

        failed = [r for r in run_checks(task, runner) if not r.passed] if check else []
        if failed:
            reasons = ", ".join(f"{r.name.value} ({r.reason})" for r in failed)
            self.rejected.append(f"{where}: failed {reasons}")
        else:
            self.tasks.append(task)

    def write(self, out: Path, **counts: int) -> int:
        """Write the kept tasks under ``out``, each rejection to stderr, and a JSON summary (``counts``
        first) as stdout's last line; the exit status: 0 when a task was kept."""
        from environments.tasks.layout import write_task

        for task in self.tasks:
            write_task(task, out)
        for line in self.rejected:
            print(f"REJECTED {line}", file=sys.stderr)
        print(json.dumps({**counts, "kept": len(self.tasks), "rejected": len(self.rejected)}))
        return 0 if self.tasks else 1


def id_from_name(name: str, default: str) -> str:
    """A task id made of a file's name (lower-case, runs of other characters as ``-``)."""
    return re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-") or default
