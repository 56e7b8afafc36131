"""Fixtures for the sandbox tests: a local backend with its own prefix and root, checked clean afterwards.

The local backend's tests need bubblewrap (CI: ``apt-get update && apt-get install -y bubblewrap``);
without it they skip with that reason. Limit tests also need writable cgroup controllers (v1 memory, pids
and cpu, or a delegated v2 group).
"""

from __future__ import annotations

import secrets
import shutil
import socket
import threading
from pathlib import Path

import pytest

from environments.sandboxes import cgroups

BWRAP_MISSING = "bubblewrap (bwrap) is not installed: apt-get update && apt-get install -y bubblewrap"
requires_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason=BWRAP_MISSING)
requires_cgroups = pytest.mark.skipif(
    not cgroups.available(), reason=f"no usable cgroups: {cgroups.explain()} (see SANDBOX.md)"
)


def leftover_cgroups(prefix: str) -> list[Path]:
    parents = cgroups.own_parents() or {}
    return [child for parent in parents.values() for child in parent.glob(f"{prefix}-*")]


@pytest.fixture
def prefix() -> str:
    """A prefix of this test's own, so sweeps never touch another run's sandboxes."""
    return f"hsbxt{secrets.token_hex(3)}"


@pytest.fixture
def local_backend(tmp_path: Path, prefix: str):
    from environments.sandboxes.local import LocalBackend

    root = tmp_path / "sandboxes"
    backend = LocalBackend(root, prefix=prefix)
    yield backend
    assert not list(root.iterdir()), "sandbox folders were left behind"
    assert not leftover_cgroups(prefix), "sandbox cgroups were left behind"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "hello.txt").write_text("hi\n")
    (folder / "pkg").mkdir()
    (folder / "pkg" / "mod.py").write_text("X = 1\n")
    return folder


@pytest.fixture
def guard_socket(tmp_path: Path):
    """A stand-in for the guard: a unix socket on the host that answers ``pong:<what it got>``."""
    path = tmp_path / "guard.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(0o666)  # the Docker sandbox connects as uid 1000
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong:" + conn.recv(1024))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    server.shutdown(socket.SHUT_RDWR)
    server.close()
    thread.join(timeout=5)


GUARD_PROBE = (
    "import socket; s = socket.create_connection(('127.0.0.1', 8000), timeout=5); s.sendall(b'ping'); "
    "print(s.recv(1024).decode())"
)
"""Run inside a sandbox with ``Forward(8000, guard_socket)``: prints ``pong:ping``."""


def assert_forward_reaches_only_the_guard(box, python: str) -> None:
    """Shared by both backends: port 8000 inside reaches the host socket (also when the command then fails),
    another loopback port reaches nothing. Destroys ``box``."""
    try:
        first = box.run(f'{python} -c "{GUARD_PROBE}"', timeout_s=20)
        again = box.run(f'{python} -c "{GUARD_PROBE}"; exit 3', timeout_s=20)
        other = box.run(
            f"{python} -c \"import socket; socket.create_connection(('127.0.0.1', 8001), timeout=3)\"",
            timeout_s=20,
        )
    finally:
        box.destroy()
    assert first.ok and first.output_tail.strip() == "pong:ping", first.output_tail
    assert again.exit_code == 3 and again.output_tail.strip() == "pong:ping"
    assert "ConnectionRefusedError" in other.output_tail


BASE_IMAGE = "harness-adapters/debian-base:bookworm"


def docker_or_skip():
    """The engine at ``DOCKER_HOST`` with the sandbox image (re)built, or a skip that says how to get it."""
    docker = pytest.importorskip("docker")
    from environments.sandboxes import build_image

    try:
        api = docker.from_env()
        api.ping()
    except Exception as exc:  # no engine: the reason says how to get one
        pytest.skip(
            f"no Docker engine at DOCKER_HOST ({exc.__class__.__name__}): source scripts/sandbox-deps.sh"
        )
    try:
        api.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"base image {BASE_IMAGE} missing: source scripts/sandbox-deps.sh (as root) builds it")
    build_image(api)
    return api


@pytest.fixture(scope="module")
def docker_api():
    return docker_or_skip()


@pytest.fixture
def docker_backend(docker_api, prefix: str):
    """A Docker backend with this test's prefix; no container of it may be left afterwards."""
    from environments.sandboxes.docker import PREFIX_LABEL, DockerBackend

    backend = DockerBackend(docker_api, prefix=prefix)
    yield backend
    left = docker_api.containers.list(all=True, filters={"label": f"{PREFIX_LABEL}={prefix}"})
    assert not left, f"containers left behind: {[c.name for c in left]}"
