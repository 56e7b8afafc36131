"""Sandboxes for agent sessions and verifiers: one Protocol, a local backend (bubblewrap, cgroup v1 or v2)
and a Docker backend, and a ``Runner`` over either for the oracle and the task checks.

Threat model, in short (each backend's module docstring has the full one): the agent sees only its
workspace copy and public software (``/usr``, the interpreter), has no network but its own loopback and
the guard's forward (``Forward``), runs as an unprivileged uid without capabilities under memory,
process, CPU and wall-time limits, and leaves nothing behind; leftovers of a crashed launcher are swept
when the next backend starts. Not stopped: kernel exploits and side channels (the kernel is shared).
The verifier runs in a fresh sandbox holding only what the agent produced plus the hidden files.
"""

from environments.sandboxes.docker import DockerAPI, DockerBackend, DockerSandbox, build_image
from environments.sandboxes.local import LocalBackend, LocalSandbox
from environments.sandboxes.protocol import (
    DEFAULT_PREFIX,
    Forward,
    Sandbox,
    SandboxBackend,
    SandboxError,
    SandboxLimits,
)
from environments.sandboxes.runner import SandboxRunner


def backend_named(name: str, root=None, *, prefix: str = DEFAULT_PREFIX, extra_ro_binds=()) -> SandboxBackend:
    """The backend a config names: ``local`` (bubblewrap; its folders under ``root``) or ``docker``."""
    if name == "docker":
        return DockerBackend(prefix=prefix, extra_ro_binds=extra_ro_binds)
    if name == "local":
        return LocalBackend(root, prefix=prefix, extra_ro_binds=tuple(extra_ro_binds))
    raise ValueError(f"sandbox={name!r}: use local or docker")


__all__ = [
    "DockerAPI",
    "DockerBackend",
    "DockerSandbox",
    "Forward",
    "LocalBackend",
    "LocalSandbox",
    "Sandbox",
    "SandboxBackend",
    "SandboxError",
    "SandboxLimits",
    "SandboxRunner",
    "backend_named",
    "build_image",
]
