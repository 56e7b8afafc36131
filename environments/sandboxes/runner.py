"""A ``Runner`` (``environments.core.runner``) backed by a sandbox backend, so the oracle and the seven
checks run verify and reference commands isolated, with the same call they make on ``SubprocessRunner``.

Each ``run`` is one fresh sandbox: a private copy of ``cwd`` goes in, the command runs, what it produced
replaces ``cwd``'s contents (``apply_reference`` reads the reference's output from there), and the sandbox
is destroyed. So a verify run sees only what ``oracle.verify`` put in its scratch folder: the produced
workspace plus the hidden files. Inside, the folder is ``/workspace`` and ``HOME`` points at it; a task's
``Placement`` (work directory alias, absolute mounts, its own image) is passed on to the backend.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from environments.core.placement import Placement
from environments.core.runner import RunResult
from environments.sandboxes.protocol import SandboxBackend, SandboxLimits


class SandboxRunner:
    """Implements ``Runner``; ``max_processes`` and ``cpus`` apply to every run (the Protocol passes only
    time and memory)."""

    def __init__(self, backend: SandboxBackend, *, max_processes: int = 64, cpus: float = 1.0) -> None:
        self.backend = backend
        self.max_processes, self.cpus = max_processes, cpus

    def run(
        self,
        command: str,
        cwd: Path,
        *,
        timeout_s: float,
        memory_mb: int,
        env: Mapping[str, str] | None = None,
        placement: Placement | None = None,
    ) -> RunResult:
        cwd = Path(cwd)
        limits = SandboxLimits(memory_mb=memory_mb, max_processes=self.max_processes, cpus=self.cpus)
        sandbox = self.backend.create(cwd, limits, placement=placement)
        try:
            result = sandbox.run(command, timeout_s=timeout_s, env=env)
            _empty(cwd)
            sandbox.collect(cwd)
        finally:
            sandbox.destroy()
        return result


def _empty(folder: Path) -> None:
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
