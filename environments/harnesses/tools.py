"""The tool vocabulary of the harnesses: what role each tool name plays, harness by harness.

Each harness module declares ``TOOL_ROLES`` (every tool it may offer, by name, with its ``ToolRole``) and
``STEP_TOOLS`` (the tools a demonstration step is rendered as and read back from); the registry carries
them in ``HarnessSpec.tool_roles``. The guard's normalizer (``serve.normalize``) reads the roles of every
registered harness, plus ``OTHER_AGENTS``, from ``environments.harnesses.registry.tool_roles()``, so a
tool name is given its role here and nowhere else. A role says which arguments to read, not what a call
may do: that is the guard's rules' business.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ToolRole(StrEnum):
    SHELL = "shell"
    """Runs its ``command`` in a shell."""
    SHELL_INPUT = "shell_input"
    """Sends text to a running shell's stdin (hermes's ``process``: its ``write`` and ``submit``)."""
    CODE = "code"
    """Runs a program given as ``code``."""
    READ = "read"
    WRITE = "write"
    EDIT = "edit"
    """Replaces text in a file, or applies a patch (a V4A envelope)."""
    SEARCH = "search"
    """Searches files by name or content."""
    SESSION_SEARCH = "session_search"
    """Searches the transcripts of other sessions (hermes)."""
    FETCH = "fetch"
    """Reads URLs."""
    WEB_SEARCH = "web_search"
    DELEGATE = "delegate"
    """Hands work to a sub-agent in words."""
    INERT = "inert"
    """Orchestration (todo lists, memory, skills): its arguments name no file, command or host."""


@dataclass(frozen=True, slots=True)
class StepTools:
    """The tool each kind of demonstration step (``environments.harnesses.steps``) is rendered as."""

    shell: str
    read: str
    write: str
    edit: str

    def roles(self) -> dict[str, ToolRole]:
        return {
            self.shell: ToolRole.SHELL,
            self.read: ToolRole.READ,
            self.write: ToolRole.WRITE,
            self.edit: ToolRole.EDIT,
        }


OTHER_AGENTS: dict[str, ToolRole] = {
    "shell": ToolRole.SHELL,
    "exec_command": ToolRole.SHELL,
    "web_fetch": ToolRole.FETCH,
}
"""Names other coding agents give the same actions (Codex's shell tools, a ``web_fetch``), so that a
standalone guard in front of one of them judges these calls too."""
