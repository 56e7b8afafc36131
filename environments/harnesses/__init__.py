"""Launchers that run the real coding-agent harnesses (pi, opencode, hermes) headless against the guard.

``launch(harness_spec("pi").launcher(), LaunchSpec(...), run_dir)`` (``registry``: every harness by name)
writes the harness's own config into an isolated home under ``run_dir``, runs it as a subprocess and returns
a ``LaunchResult`` (exit status, output tails, the harness's own tool-call count and usage). Install the
pinned harnesses with ``scripts/harness-deps.sh`` (into ``.harnesses/``).

``launch_in_sandbox`` runs the same prepared harness inside a ``Sandbox`` (the local bubblewrap and the
Docker backends are tested) whose only way out is a ``Forward`` to the guard; ``UnixToTcp`` is the host
end of that forward for a guard listening on TCP, and ``harness_binds()`` the host paths either backend
must bind read-only (``extra_ro_binds``).
"""

from __future__ import annotations

from environments.harnesses.base import (
    HarnessError,
    HarnessLauncher,
    Invocation,
    LaunchResult,
    LaunchSpec,
    ProcessOutcome,
    install_root,
    isolated_env,
    launch,
    run_invocation,
)
from environments.harnesses.hermes import HermesLauncher
from environments.harnesses.opencode import OpencodeLauncher
from environments.harnesses.pi import PiLauncher
from environments.harnesses.sandboxed import UnixToTcp, harness_binds, launch_in_sandbox

__all__ = [
    "HarnessError",
    "HarnessLauncher",
    "HermesLauncher",
    "Invocation",
    "LaunchResult",
    "LaunchSpec",
    "OpencodeLauncher",
    "PiLauncher",
    "ProcessOutcome",
    "UnixToTcp",
    "harness_binds",
    "install_root",
    "isolated_env",
    "launch",
    "launch_in_sandbox",
    "run_invocation",
]
