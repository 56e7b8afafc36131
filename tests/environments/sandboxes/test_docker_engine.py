"""The Docker backend against a real engine and the image built from ``environments/sandboxes/docker``.

Needs a running engine (``DOCKER_HOST``) and the base image ``harness-adapters/debian-base:bookworm``
imported locally (see the Dockerfile for the two commands); skips with the reason otherwise. Network
checks only ever connect to 127.0.0.1.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from environments.sandboxes.docker import PREFIX_LABEL, DockerBackend
from environments.sandboxes.protocol import Forward, SandboxLimits
from environments.sandboxes.runner import SandboxRunner
from environments.tasks.oracle import Verdict, apply_reference, verify, write_start
from tests.environments.sandboxes.conftest import assert_forward_reaches_only_the_guard
from tests.environments.tasks.taskutil import repo_task

SMALL = SandboxLimits(memory_mb=256, max_processes=16, cpus=1.0)
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def backend(docker_backend):
    return docker_backend


@pytest.fixture
def sandbox(backend, workspace):
    box = backend.create(workspace, SMALL)
    yield box
    box.destroy()


def test_commands_run_in_the_workspace_as_an_unprivileged_user(sandbox, tmp_path):
    result = sandbox.run("pwd; id -u; cat hello.txt; echo made > out.txt", timeout_s=20)
    assert result.ok, result.output_tail
    assert result.output_tail.split() == ["/workspace", "1000", "hi"]
    out = sandbox.collect(tmp_path / "out")
    assert (out / "out.txt").read_text() == "made\n" and (out / "pkg" / "mod.py").is_file()


def test_host_files_are_not_there(sandbox):
    canary = Path("/tmp") / f"hsbx-canary-{secrets.token_hex(4)}"
    canary.write_text("secret\n")
    try:
        result = sandbox.run(f"cat {canary} {REPO / 'pyproject.toml'}", timeout_s=20)
    finally:
        canary.unlink()
    assert result.exit_code != 0 and "secret" not in result.output_tail


def test_the_host_loopback_is_unreachable_and_only_lo_exists(sandbox):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        probe = (
            f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')"
        )
        inside = sandbox.run(f'python3 -c "{probe}"', timeout_s=20)
    assert inside.exit_code != 0 and "ConnectionRefusedError" in inside.output_tail
    interfaces = sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1", timeout_s=20)
    assert interfaces.output_tail.split() == ["lo"]


def test_a_command_past_its_time_is_killed(sandbox):
    start = time.monotonic()
    result = sandbox.run("sleep 30", timeout_s=1)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - start < 10


def test_background_processes_do_not_outlive_their_run(sandbox, tmp_path):
    """A daemon that left the run's process group (setsid, nohup, double fork) is killed when the run
    returns, so it cannot change the workspace before it is collected; the sandbox still works after."""
    left = sandbox.run(
        "setsid bash -c 'sleep 1; echo late > late.txt' </dev/null >/dev/null 2>&1 & "
        "(nohup bash -c 'sleep 1; echo later > later.txt' >/dev/null 2>&1 &) ; exit 0",
        timeout_s=20,
    )
    assert left.ok and left.wall_s < 1, left  # nothing held the run open until the writes
    time.sleep(2)
    after = sandbox.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '", timeout_s=20)
    assert after.ok and "sleep infinity" in after.output_tail and "sleep 1" not in after.output_tail
    out = sandbox.collect(tmp_path / "out")
    assert not (out / "late.txt").exists() and not (out / "later.txt").exists()


def test_memory_beyond_the_limit_is_killed(sandbox):
    fits = sandbox.run("python3 -c \"b = b'x' * (100 * 1024 * 1024); print(len(b))\"", timeout_s=30)
    assert fits.ok, fits.output_tail
    grows = sandbox.run("python3 -c \"b = b'x' * (600 * 1024 * 1024); print(len(b))\"", timeout_s=30)
    assert grows.exit_code not in (0, None), grows.output_tail


def test_processes_beyond_the_limit_cannot_start(sandbox):
    fork = (
        "import os, time\nstarted = 0\nfor _ in range(40):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(5)\n        os._exit(0)\n"
        "    started += 1\nprint(started)\n"
    )
    result = sandbox.run(f"cat > fork.py <<'EOF'\n{fork}EOF\npython3 fork.py", timeout_s=30)
    assert result.ok, result.output_tail
    assert 1 <= int(result.output_tail.split()[-1]) < SMALL.max_processes


CRASH = """
import sys
from pathlib import Path
from environments.sandboxes.docker import DockerBackend
from environments.sandboxes.protocol import Forward, SandboxLimits
backend = DockerBackend(prefix=sys.argv[1])
box = backend.create(Path(sys.argv[2]), SandboxLimits(memory_mb=256, max_processes=16))
print(box.name, flush=True)
box.run("sleep 60", timeout_s=120)
"""


def test_a_crashed_launchers_containers_are_swept(docker_api, prefix, workspace):
    launcher = subprocess.Popen(
        [sys.executable, "-c", CRASH, prefix, str(workspace)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    name = launcher.stdout.readline().strip()
    assert name.startswith(prefix)
    time.sleep(1)
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    launcher.stdout.close()
    assert [c.name for c in docker_api.containers.list(all=True, filters={"name": name})] == [name]
    assert DockerBackend(docker_api, prefix=prefix).swept == 1
    assert not docker_api.containers.list(all=True, filters={"label": f"{PREFIX_LABEL}={prefix}"})


def test_the_oracle_gives_the_same_verdicts_through_docker(backend, tmp_path):
    task, runner = repo_task(), SandboxRunner(backend)
    apply_reference(task, tmp_path / "ref", runner)
    assert verify(task, tmp_path / "ref", tmp_path / "ref-check", runner).verdict is Verdict.PASS
    start = write_start(task, tmp_path / "start")
    assert verify(task, start, tmp_path / "start-check", runner).verdict is Verdict.FAIL


def test_a_forward_reaches_the_host_socket_and_nothing_else(backend, workspace, guard_socket):
    box = backend.create(workspace, SMALL, forwards=(Forward(8000, guard_socket),))
    assert_forward_reaches_only_the_guard(box, "python3")


def test_extra_binds_are_readable_at_their_host_paths_and_read_only(docker_api, prefix, workspace, tmp_path):
    """As the harness installs are bound (under /tmp too: the sandbox's own /tmp is a tmpfs beneath them)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "tool.sh").write_text("echo tool-ran\n")
    backend = DockerBackend(docker_api, prefix=prefix, extra_ro_binds=(tools,))
    box = backend.create(workspace, SMALL)
    try:
        ran = box.run(f"bash {tools}/tool.sh", timeout_s=20)
        write = box.run(f"touch {tools}/new", timeout_s=20)
    finally:
        box.destroy()
    assert ran.ok and ran.output_tail.strip() == "tool-ran", ran.output_tail
    assert write.exit_code not in (0, None) and "Read-only file system" in write.output_tail
    assert sorted(p.name for p in tools.iterdir()) == ["tool.sh"]
    assert not docker_api.containers.list(all=True, filters={"label": f"{PREFIX_LABEL}={prefix}"})
