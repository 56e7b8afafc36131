"""Where a task's files sit inside its sandbox: the work directory, folders bound at absolute paths, and
the image the task's own Dockerfile builds.

Most tasks need none of this: the workspace is ``/workspace`` and the shared sandbox image runs them.
Harbor tasks are written against absolute paths (``/app``, ``/tests``, ``/solution``, ``/logs``), and many
install software in their Dockerfile. Rather than rewrite paths in the task's scripts, the backends place
the files where the scripts expect them (``Placement``): the workspace is also reachable at ``workdir``,
each ``Mount`` takes a folder of the run's tree out of the workspace and binds it at its absolute target,
and a ``TaskImage`` that needs building runs only on a backend that can build it (Docker).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import PurePosixPath

SANDBOX_WORKSPACE = "/workspace"
"""Where every backend puts the workspace; a ``Placement.workdir`` elsewhere is an alias of it."""
RESERVED = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/sys", "/run", "/tmp")
"""What the sandboxes themselves provide; a task may not put its files over these."""


def check_relative_path(path: str, where: str) -> None:
    """Raise unless ``path`` is a plain relative POSIX path that stays inside its folder."""
    p = PurePosixPath(path)
    if not path or p.is_absolute() or ".." in p.parts or "\\" in path or str(p) != path:
        raise ValueError(f"{where}: {path!r} must be a normalised relative path without '..'")


def _check_absolute(path: str, where: str) -> None:
    p = PurePosixPath(path)
    if not p.is_absolute() or str(p) != path or ".." in p.parts or path == "/":
        raise ValueError(f"{where}={path!r}: give a normalised absolute path other than '/', e.g. '/app'")
    owned = [PurePosixPath(r) for r in (*RESERVED, SANDBOX_WORKSPACE)]
    clash = [r for r in owned if p == r or r in p.parents or p in r.parents]
    if clash:
        raise ValueError(f"{where}={path!r}: overlaps {clash[0]}, the sandbox's own; use another path")


@dataclass(frozen=True, slots=True)
class Mount:
    """The run's folder ``source`` (relative to the workspace copy) bound at the absolute ``target``.

    The backend moves ``source`` out of the workspace for the run (an empty folder when it is missing) and
    puts it back where it was when the run's tree is collected, so what the command wrote there is read
    from the collected tree."""

    source: str
    target: str
    writable: bool = False

    def __post_init__(self) -> None:
        check_relative_path(self.source, f"mount {self.target}: source")
        _check_absolute(self.target, "mount.target")


@dataclass(frozen=True, slots=True)
class TaskImage:
    """A task's own Docker build context (``Dockerfile`` at its root) and why the shared image cannot
    stand in for it (the first Dockerfile line that installs or changes something outside the workdir)."""

    context: dict[str, bytes]
    reason: str
    task_id: str = ""
    """Whose image it is, for progress lines and errors (not part of the digest)."""
    digest: str = field(init=False)
    """sha256 over the context's paths and bytes: the cache key of the built image."""

    def __post_init__(self) -> None:
        if "Dockerfile" not in self.context:
            raise ValueError("image.context: needs a Dockerfile at its root")
        if not self.reason.strip():
            raise ValueError("image.reason: say which Dockerfile line needs the build")
        object.__setattr__(self, "context", dict(sorted(self.context.items())))
        digest = hashlib.sha256()
        for path, data in self.context.items():
            digest.update(path.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
        object.__setattr__(self, "digest", digest.hexdigest())


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the task's files go in the sandbox; the default is the plain ``/workspace`` layout."""

    workdir: str = SANDBOX_WORKSPACE
    """Where commands start; the workspace is reachable here as well as at ``/workspace``."""
    mounts: tuple[Mount, ...] = ()
    """Verifier-side folders bound at absolute paths (Harbor's ``/tests``, ``/solution``, ``/logs``)."""
    image: TaskImage | None = None
    """The task's own image, when the shared one cannot run it."""

    def __post_init__(self) -> None:
        if self.workdir != SANDBOX_WORKSPACE:
            _check_absolute(self.workdir, "placement.workdir")
        mounts = tuple(self.mounts)
        targets = [m.target for m in mounts] + ([self.workdir] if self.workdir != SANDBOX_WORKSPACE else [])
        for i, a in enumerate(targets):
            for b in targets[i + 1 :]:
                pa, pb = PurePosixPath(a), PurePosixPath(b)
                if pa == pb or pa in pb.parents or pb in pa.parents:
                    raise ValueError(f"placement: {a} and {b} overlap; bind each folder at its own path")
        object.__setattr__(self, "mounts", mounts)

    @property
    def plain(self) -> bool:
        """Whether any backend (and a plain subprocess) can run it: no alias, no mounts, no own image."""
        return self.workdir == SANDBOX_WORKSPACE and not self.mounts and self.image is None

    def tree_path(self, path: str) -> str | None:
        """The run's tree (relative) path that ``path``, as a command in the sandbox names it, refers to:
        relative paths and paths under the work directory or ``/workspace`` are workspace paths, paths under
        a mount's target are under its source; None for anything else."""
        p = PurePosixPath(path)
        if not p.is_absolute():
            return path
        for mount in self.mounts:
            target = PurePosixPath(mount.target)
            if p == target or target in p.parents:
                return str(PurePosixPath(mount.source, p.relative_to(target)))
        for root in (PurePosixPath(self.workdir), PurePosixPath(SANDBOX_WORKSPACE)):
            if root in p.parents:
                return str(p.relative_to(root))
        return None

    def for_agent(self) -> Placement:
        """What the agent's session gets: the work directory and the image, none of the verifier's mounts."""
        return Placement(self.workdir, (), self.image)
