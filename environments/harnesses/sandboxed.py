"""Run a harness inside a sandbox, with the guard as its only way out.

``launch_in_sandbox`` prepares the harness with the paths the sandbox sees (workspace ``/workspace``,
run folder ``/tmp/harness-run`` on the sandbox's private tmpfs, guard ``http://127.0.0.1:<port>``
through a ``Forward``), runs the rendered script with ``Sandbox.run``, copies the harness's own records
(session log, usage file) into the workspace only after the harness has ended, collects the workspace to
the host and moves those records out of it into ``run_dir``, so neither the agent nor the verifier ever
sees them. The harness installs (``.harnesses``, the Python the hermes venv was made from, and the
``node`` that runs pi) must be readable inside at their host paths: ``harness_binds()`` lists them for
``LocalBackend(extra_ro_binds=...)`` and ``DockerBackend(extra_ro_binds=...)`` alike.

``UnixToTcp`` is the host end of the forward for a guard that listens on TCP (``python -m serve``): it
listens on a unix socket and relays each connection to ``127.0.0.1:<port>``.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from environments.harnesses.base import (
    HarnessLauncher,
    LaunchResult,
    LaunchSpec,
    ProcessOutcome,
    install_root,
)
from environments.sandboxes.relay import pump

if TYPE_CHECKING:
    from environments.sandboxes.protocol import Sandbox

INSIDE_WORKSPACE = Path("/workspace")
INSIDE_RUN = Path("/tmp/harness-run")
RECORDS = ".harness-run"
"""Where the harness's records wait in the workspace between the harness's end and ``collect``."""


def harness_binds(root: Path | None = None) -> tuple[Path, ...]:
    """Host paths a sandbox must bind read-only, at the same paths, to run the installed harnesses: the
    install root, the base Python of the hermes venv, and the ``node`` on this ``PATH`` (pi's bin is a
    ``#!/usr/bin/env node`` script and the launchers keep ``PATH``; a Docker image's own node may be
    too old). The node binary is bound as a file, so the image's other programs stay the image's."""
    root = (root or install_root()).resolve()
    binds = [root]
    cfg = root / "hermes-venv" / "pyvenv.cfg"
    if cfg.exists():
        for line in cfg.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":  # the base Python's bin folder; its prefix holds the stdlib
                binds.append(Path(value.strip()).resolve().parent)
    node = shutil.which("node")
    if node and (root / "pi").is_dir():
        binds.append(Path(os.path.abspath(node)))  # the path PATH finds, which `env node` will find inside
    return tuple(dict.fromkeys(binds))


def sandbox_script(launcher: HarnessLauncher, spec: LaunchSpec) -> str:
    """The bash script that runs ``spec`` (already in sandbox paths) and then keeps its records."""
    invocation = launcher.prepare(spec, INSIDE_RUN)
    keep = INSIDE_WORKSPACE / RECORDS
    return (
        invocation.shell_script() + f"rc=$?\nrm -rf {keep}; cp -a {INSIDE_RUN} {keep} 2>/dev/null\nexit $rc\n"
    )


def inside_url(base_url: str, forward_port: int) -> str:
    """The guard URL as the sandbox sees it: same path, host ``127.0.0.1:<forward_port>``."""
    parts = urlsplit(base_url)
    return urlunsplit(("http", f"127.0.0.1:{forward_port}", parts.path, parts.query, ""))


def launch_in_sandbox(
    launcher: HarnessLauncher,
    spec: LaunchSpec,
    sandbox: Sandbox,
    *,
    forward_port: int,
    run_dir: Path,
    collect_to: Path,
) -> LaunchResult:
    """Run ``spec`` (host paths and the host's guard URL) in ``sandbox``, which must have been created
    from ``spec.workspace`` with ``Forward(forward_port, <socket relayed to the guard>)``. The workspace
    as the harness left it is collected to ``collect_to``; the harness's records end up in ``run_dir``."""
    inside = replace(spec, workspace=INSIDE_WORKSPACE, base_url=inside_url(spec.base_url, forward_port))
    run = sandbox.run(sandbox_script(launcher, inside), timeout_s=spec.timeout_s)
    collected = sandbox.collect(Path(collect_to))
    run_dir = Path(run_dir)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    records = collected / RECORDS
    if records.is_dir():
        shutil.move(records, run_dir)
    else:
        run_dir.mkdir(parents=True)
    outcome = ProcessOutcome(run.exit_code, run.timed_out, run.wall_s, run.output_tail, "")
    return launcher.finish(inside, run_dir, outcome)


class UnixToTcp:
    """Listen on the unix socket ``path`` and relay every connection to ``host:port`` (threads)."""

    def __init__(self, path: Path, port: int, host: str = "127.0.0.1") -> None:
        self.path, self.target = Path(path), (host, port)
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self.path.chmod(0o666)  # the sandbox's uid must be able to connect
        self._server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            threading.Thread(target=_connection, args=(client, upstream), daemon=True).start()

    def close(self) -> None:
        try:
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> UnixToTcp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connection(client: socket.socket, upstream: socket.socket) -> None:
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()
