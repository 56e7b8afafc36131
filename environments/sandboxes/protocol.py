"""The sandbox seam: what a rollout or a verifier asks of any backend, and the values that cross it.

A backend (``SandboxBackend``) creates a ``Sandbox`` from a workspace folder; the sandbox owns a private
copy of it, runs commands in it under limits, hands back what was produced, and is destroyed. Backends
name everything they create ``<prefix>-<owner>-<token>`` where ``<owner>`` is the creating process's pid
and start time, so ``sweep()`` can tell a crashed launcher's leftovers from a live one's.

Errors: ``SandboxError`` (operator-facing: the backend could not create, run or clean up; the message says
what to install or change). A command's own failure, crash or timeout is a ``RunResult``, never raised.
"""

from __future__ import annotations

import math
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from environments.errors import UserError
from environments.integrity.snapshot import copy_tree

if TYPE_CHECKING:
    from collections.abc import Mapping

    from environments.core.placement import Mount, Placement
    from environments.core.runner import RunResult

DEFAULT_PREFIX = "hsbx"
"""Names of sandbox folders, cgroups and containers start with this; ``sweep`` only touches these."""


class SandboxError(UserError, RuntimeError):
    """The backend itself failed (not the command in it); the message says what to fix."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What all processes of one sandbox together may use; fixed when the sandbox is created."""

    memory_mb: int = 2048
    """Memory of the whole sandbox (cgroup), including its tmpfs ``/tmp``."""
    max_processes: int = 64
    """Processes and threads alive at once in the sandbox's command tree."""
    cpus: float = 1.0
    """CPU bandwidth in cores (cgroup CFS quota)."""

    def __post_init__(self) -> None:
        for name in ("memory_mb", "max_processes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"sandbox.{name}={value!r}: must be an integer >= 1")
        if not (isinstance(self.cpus, int | float) and math.isfinite(self.cpus) and self.cpus > 0):
            raise ValueError(f"sandbox.cpus={self.cpus!r}: must be a positive number of cores")


RELAY_SCRIPT = Path(__file__).with_name("relay.py")
RELAY_INSIDE = "/run/forward/relay.py"
_READY_INSIDE = "/tmp/.forward-ready"


@dataclass(frozen=True, slots=True)
class Forward:
    """The one way out of a sandbox (the seam for the guard): ``127.0.0.1:port`` inside relays to the
    unix socket ``host_socket`` on the host. Backends mount the socket at ``/run/forward/<port>.sock``
    and start ``relay.py`` there before each command. The sandbox user must be able to connect to the
    socket (Docker: uid 1000; local: the launcher's own uid)."""

    port: int
    host_socket: Path

    def __post_init__(self) -> None:
        if not isinstance(self.port, int) or not 1 <= self.port <= 65535:
            raise ValueError(f"forward.port={self.port!r}: must be 1-65535")

    @property
    def inside_socket(self) -> str:
        return f"/run/forward/{self.port}.sock"


def command_argv(command: str, forwards: tuple[Forward, ...], python: str) -> list[str]:
    """``bash -c command``, preceded by starting the relay for ``forwards`` (if any) and waiting up to 10 s
    until it listens; the command's exit status is bash's. Each run starts its own relay (a sandbox kills
    what a run leaves), so a ready mark left by an earlier run's relay is removed first."""
    if not forwards:
        return ["bash", "-c", command]
    specs = " ".join(f"{f.port}:{f.inside_socket}" for f in forwards)
    prelude = (
        f"rm -f {_READY_INSIDE}; "
        f"{python} {RELAY_INSIDE} --ready {_READY_INSIDE} {specs} </dev/null >/dev/null 2>&1 & "
        f"for _ in $(seq 1000); do [ -e {_READY_INSIDE} ] && break; sleep 0.01; done; "
    )
    return ["bash", "-c", prelude + 'exec bash -c "$1"', "sandbox", command]


class Sandbox(Protocol):
    """One isolated workspace. Made by ``SandboxBackend.create``; used by one rollout or one verify run."""

    name: str

    def run(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None) -> RunResult:
        """Run ``command`` with bash in the workspace; called any number of times before ``destroy``.

        Every process it started is gone when it returns; a timeout kills them all and gives
        ``timed_out=True``. Never raises for the command's own failure.
        """
        ...

    def collect(self, dest: Path) -> Path:
        """Copy the workspace as the commands left it into ``dest`` (created if missing; symlinks are
        copied as links, never followed); called by the rollout before the verifier's fresh sandbox."""
        ...

    def destroy(self) -> None:
        """Kill what is left and remove every trace; idempotent, also after a failed ``run``."""
        ...


class SandboxBackend(Protocol):
    """Makes sandboxes; one per launcher process. Calls ``sweep`` once when it starts."""

    def create(
        self,
        workspace: Path,
        limits: SandboxLimits,
        *,
        forwards: tuple[Forward, ...] = (),
        read_only: tuple[str, ...] = (),
        placement: Placement | None = None,
    ) -> Sandbox:
        """A new sandbox holding a private copy of ``workspace`` (the folder itself is never changed);
        ``read_only``: workspace paths the commands may read but not change (where the backend can);
        ``placement``: the task's work directory alias, absolute mounts and image (``SandboxError`` naming
        the fix when this backend cannot provide them)."""
        ...

    def sweep(self) -> int:
        """Remove leftovers of this backend's prefix whose owner process is dead; return how many."""
        ...


class PlacedMounts:
    """A sandbox's mounts on the host: each ``Mount``'s source moved out of the workspace copy into a
    private folder that the backend binds at the mount's target, and put back into collected trees."""

    def __init__(self, workspace: Path, mounts: tuple[Mount, ...], into: Path) -> None:
        self.folders: list[tuple[Mount, Path]] = []
        for number, mount in enumerate(mounts):
            host = into / str(number)
            source = workspace / mount.source
            if source.is_dir() and not source.is_symlink():
                copy_tree(source, host, max_file_bytes=None)
                shutil.rmtree(source)
            else:  # a missing source (or anything but a folder) binds an empty folder
                if source.is_symlink() or source.exists():
                    source.unlink()
                host.mkdir(parents=True)
            self.folders.append((mount, host))

    def restore(self, dest: Path) -> None:
        """Put each mount's folder, as the commands left it, back at its source path under ``dest``."""
        for mount, host in self.folders:
            copy_tree(host, Path(dest) / mount.source)


def image_problem(placement: Placement | None, backend: str) -> str | None:
    """Why a backend that runs only the shared image cannot run ``placement``, with the fix; else None."""
    if placement is None or placement.image is None:
        return None
    return (
        f"this task's Dockerfile must be built ({placement.image.reason}); the {backend} backend runs the "
        "shared image only, so it would run the task on the wrong software: use sandbox: docker "
        "(a Docker engine on this host, see scripts/sandbox-deps.sh)"
    )


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the "(comm)" field


def owner_tag(pid: int | None = None) -> str:
    """``<pid>.<start time>`` of this process: unique per process even when pids are reused."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_time(pid) or 0}"


def new_name(prefix: str) -> str:
    return f"{prefix}-{owner_tag()}-{secrets.token_hex(4)}"


def owner_alive(name: str, prefix: str) -> bool:
    """Whether the process that created ``name`` still runs; names that do not parse count as alive."""
    rest = name.removeprefix(f"{prefix}-")
    if rest == name:
        return True
    try:
        pid_text, start = rest.split("-", 1)[0].split(".", 1)
        pid = int(pid_text)
    except ValueError:
        return True
    return _start_time(pid) == start
