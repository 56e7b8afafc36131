"""Start the standalone guard (``python -m serve``) as a child process, for tests and benchmarks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def guard_subprocess(
    upstream_url: str, log: Path, *, startup_s: float = 60.0, mode: str = "enforce"
) -> Iterator[tuple[str, int]]:
    """The guard in front of ``upstream_url`` (``.../v1``), its output in ``log``; yields (URL, port) once
    ``/health`` answers, and stops it on exit. ``mode``: enforce, monitor or off (``--guard``)."""
    port = free_port()
    with Path(log).open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "serve", "--upstream", upstream_url, "--port", str(port), "--guard", mode],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the guard did not start in {startup_s:.0f} s:\n{Path(log).read_text()}")
            time.sleep(0.2)
        yield url, port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
