"""The local backend really isolates: run for real with bubblewrap and this machine's cgroups.

Network checks only ever connect to 127.0.0.1 (a port this test listens on outside the sandbox).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from environments.sandboxes import cgroups
from environments.sandboxes.local import LocalBackend
from environments.sandboxes.protocol import Forward, SandboxError, SandboxLimits
from tests.environments.sandboxes.conftest import (
    assert_forward_reaches_only_the_guard,
    leftover_cgroups,
    requires_bwrap,
    requires_cgroups,
)

pytestmark = requires_bwrap
SMALL = SandboxLimits(memory_mb=256, max_processes=16, cpus=1.0)
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def sandbox(local_backend, workspace):
    box = local_backend.create(workspace, SMALL)
    yield box
    box.destroy()


def test_commands_run_in_the_workspace_as_an_unprivileged_user_with_this_python(sandbox):
    result = sandbox.run(
        'pwd; id -u; cat hello.txt; python -c "import sys; print(sys.executable)"', timeout_s=20
    )
    assert result.ok, result.output_tail
    assert result.output_tail.split() == ["/workspace", "1000", "hi", sys.executable]


def test_the_sandbox_works_on_a_copy_and_collect_returns_what_it_produced(sandbox, workspace, tmp_path):
    result = sandbox.run("echo made > out.txt; rm hello.txt; ln -s /etc/passwd link", timeout_s=20)
    assert result.ok, result.output_tail
    assert sorted(p.name for p in workspace.iterdir()) == ["hello.txt", "pkg"]
    out = sandbox.collect(tmp_path / "collected")
    assert sorted(p.name for p in out.iterdir()) == ["link", "out.txt", "pkg"]
    assert (out / "out.txt").read_text() == "made\n"
    assert (out / "link").is_symlink()  # copied as a link, never followed


def test_files_outside_the_workspace_cannot_be_read(sandbox, tmp_path):
    canary = Path("/tmp") / f"hsbx-canary-{secrets.token_hex(4)}"
    canary.write_text("secret\n")
    try:
        for path in (
            canary,
            tmp_path / "workspace" / "hello.txt",
            REPO / "pyproject.toml",
            Path("/etc/passwd"),
        ):
            result = sandbox.run(f"cat {path} || ls {path}", timeout_s=20)
            assert result.exit_code != 0, f"{path} is visible inside: {result.output_tail}"
            assert "secret" not in result.output_tail
    finally:
        canary.unlink()


def test_the_projects_code_and_task_generators_cannot_be_imported_inside(sandbox):
    result = sandbox.run('python -c "import environments.tasks.shipped"', timeout_s=20)
    assert result.exit_code != 0 and "ModuleNotFoundError" in result.output_tail


def test_the_system_is_read_only_and_tmp_is_private(sandbox, tmp_path):
    from environments.sandboxes.local import interpreter_dirs

    result = sandbox.run("touch /usr/x 2>&1; touch /etc/x 2>&1", timeout_s=20)
    assert "Read-only file system" in result.output_tail or "Permission denied" in result.output_tail
    (tmp_path / "host-only").write_text("x")
    listing = sandbox.run("ls -A /tmp", timeout_s=20).output_tail.split()
    # Only mount points of the interpreter's own folders may show (a checkout under /tmp in CI).
    mount_points = {d.parts[2] for d in interpreter_dirs() if d.parts[1] == "tmp"}
    assert set(listing) == mount_points


def test_the_host_loopback_is_unreachable_from_inside(sandbox):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        probe = (
            f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')"
        )
        outside = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=20)
        assert outside.stdout.strip() == "connected"  # the listener is real
        inside = sandbox.run(f'python -c "{probe}"', timeout_s=20)
    assert inside.exit_code != 0 and "connected" not in inside.output_tail
    assert "ConnectionRefusedError" in inside.output_tail


def test_no_capabilities_and_no_nested_user_namespaces_inside(sandbox, local_backend):
    caps = sandbox.run("grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status", timeout_s=20)
    assert {line.split()[1] for line in caps.output_tail.splitlines()} == {"0000000000000000"}
    if not local_backend.disable_userns:
        pytest.skip("bubblewrap < 0.8 cannot disable nested user namespaces")
    nested = sandbox.run("unshare -U true", timeout_s=20)
    assert nested.exit_code != 0


def test_only_a_loopback_interface_exists_inside(sandbox):
    result = sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1", timeout_s=20)
    assert result.output_tail.split() == ["lo"]


def test_a_command_past_its_time_is_killed_with_every_child(sandbox, local_backend):
    start = time.monotonic()
    result = sandbox.run("sleep 30 & setsid sleep 30 & sleep 30", timeout_s=1.0)
    assert result.timed_out and result.exit_code is None and not result.ok
    assert time.monotonic() - start < 5
    assert sandbox.cgroup is None or not sandbox.cgroup.pids()


def test_background_processes_do_not_outlive_the_command(sandbox):
    result = sandbox.run("(sleep 1; echo late > late.txt) & disown; setsid sleep 30 & exit 0", timeout_s=20)
    assert result.ok
    time.sleep(1.5)
    assert not (sandbox.workspace / "late.txt").exists()
    assert sandbox.cgroup is None or not sandbox.cgroup.pids()


@requires_cgroups
def test_memory_beyond_the_limit_is_killed_and_below_it_is_measured(sandbox):
    fits = sandbox.run("python -c \"b = b'x' * (100 * 1024 * 1024); print(len(b))\"", timeout_s=30)
    assert fits.ok, fits.output_tail
    assert 100 <= fits.peak_rss_mb <= SMALL.memory_mb
    assert not sandbox.oom_killed()
    grows = sandbox.run("python -c \"b = b'x' * (600 * 1024 * 1024); print(len(b))\"", timeout_s=30)
    assert grows.exit_code not in (0, None), grows.output_tail
    assert sandbox.oom_killed()


@requires_cgroups
def test_processes_beyond_the_limit_cannot_start(sandbox):
    fork = textwrap.dedent(
        """
        import os, time
        started = 0
        for _ in range(40):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(5)
                os._exit(0)
            started += 1
        print(started)
        """
    )
    (sandbox.workspace / "fork.py").write_text(fork)
    result = sandbox.run("python fork.py", timeout_s=30)
    assert result.ok, result.output_tail
    assert 1 <= int(result.output_tail.split()[-1]) < SMALL.max_processes


def test_destroy_removes_the_folder_and_cgroups_and_is_idempotent(local_backend, workspace, prefix):
    box = local_backend.create(workspace, SMALL)
    box.run("sleep 30 &", timeout_s=5)
    assert box.folder.is_dir()
    box.destroy()
    box.destroy()
    assert not box.folder.exists() and not leftover_cgroups(prefix)
    with pytest.raises(SandboxError, match="destroyed"):
        box.run("true", timeout_s=5)


CRASH = """
import sys
from pathlib import Path
from environments.sandboxes import cgroups
from environments.sandboxes.local import LocalBackend
from environments.sandboxes.protocol import SandboxLimits
backend = LocalBackend(Path(sys.argv[1]), prefix=sys.argv[2])
box = backend.create(Path(sys.argv[3]), SandboxLimits(memory_mb=256, max_processes=16))
print(box.name, flush=True)
box.run("touch started; sleep 60", timeout_s=120)
"""


def test_a_crashed_launchers_leftovers_are_swept_by_the_next_backend(tmp_path, prefix, workspace):
    root = tmp_path / "sandboxes"
    launcher = subprocess.Popen(
        [sys.executable, "-c", CRASH, str(root), prefix, str(workspace)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    name = launcher.stdout.readline().strip()
    started = root / name / "workspace" / "started"
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the launcher's sandbox never started"
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    launcher.stdout.close()
    assert (root / name).is_dir()  # what a crash leaves
    assert leftover_cgroups(prefix) or not cgroups.available()
    backend = LocalBackend(root, prefix=prefix)
    assert backend.swept >= 1
    assert not (root / name).exists() and not leftover_cgroups(prefix)


def test_a_live_launchers_sandboxes_are_not_swept(local_backend, workspace, prefix, tmp_path):
    box = local_backend.create(workspace, SMALL)
    try:
        assert LocalBackend(local_backend.root, prefix=prefix).swept == 0
        assert box.folder.is_dir()
    finally:
        box.destroy()


def test_a_forward_reaches_the_host_socket_and_nothing_else(local_backend, workspace, guard_socket):
    box = local_backend.create(workspace, SMALL, forwards=(Forward(8000, guard_socket),))
    assert_forward_reaches_only_the_guard(box, "python")


def test_without_cgroups_the_tree_is_held_to_its_memory_and_process_limits_and_says_so(
    tmp_path, prefix, workspace
):
    """A non-root launcher without a delegated cgroup: the sandbox's memory (across processes, each small)
    and process count are held by sampling its tree, and the run says what killed it."""
    backend = LocalBackend(tmp_path / "plain", prefix=prefix, use_cgroups=False)
    assert any("sampling its tree" in note for note in backend.notes)
    box = backend.create(workspace, SMALL)
    grow = "python -c \"import time; b = b'x' * (100 * 1024 ** 2); time.sleep(20)\""
    try:
        small = box.run(grow, timeout_s=30)  # 100 MiB of 256: untouched
        assert box.oom_killed() is False
        memory = box.run(f"for i in 1 2 3 4; do {grow} & done; wait", timeout_s=30)
        assert box.oom_killed() is True
        forks = box.run("for i in $(seq 40); do sleep 20 & done; wait", timeout_s=30)
        late = box.run("(sleep 1; echo late > late.txt) & setsid sleep 30 & sleep 30", timeout_s=0.5)
        time.sleep(1.5)
        assert late.timed_out and not (box.workspace / "late.txt").exists()
    finally:
        box.destroy()
    assert small.ok and 100 <= small.peak_rss_mb < 256, small
    assert memory.exit_code != 0 and memory.wall_s < 15, memory
    assert "[sandbox] killed: memory" in memory.output_tail and memory.peak_rss_mb > 256
    assert forks.exit_code != 0 and forks.wall_s < 15, forks
    assert "tasks (processes and threads) over the limit of 18" in forks.output_tail
    assert not list((tmp_path / "plain").iterdir())


def test_a_run_returns_only_when_every_process_of_the_sandbox_is_gone(tmp_path, prefix, workspace):
    """Killed at its deadline or by a limit, a run returns after the sandbox's pid namespace has emptied,
    not when bwrap alone is reaped (its init is still killing the rest then)."""

    def left() -> list[str]:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and b"37.25" in (entry / "cmdline").read_bytes():
                    found.append(entry.name)
            except OSError:
                continue
        return found

    for use_cgroups in (False, True):
        backend = LocalBackend(tmp_path / f"cg{use_cgroups}", prefix=prefix, use_cgroups=use_cgroups)
        box = backend.create(workspace, SMALL)
        try:
            timed = box.run("for i in 1 2 3 4 5 6; do sleep 37.25 & done; sleep 37.25", timeout_s=1)
            after_timeout = left()
            killed = box.run(
                "for i in 1 2 3 4 5 6; do sleep 37.25 & done; head -c 300M /dev/zero > /tmp/big; sleep 37.25",
                timeout_s=30,
            )
            after_kill = left()
        finally:
            box.destroy()
        assert timed.timed_out and after_timeout == [], (use_cgroups, after_timeout)
        assert killed.exit_code != 0 and after_kill == [], (use_cgroups, killed, after_kill)


def test_without_cgroups_threads_and_files_in_the_private_tmpfs_count_against_the_limits(
    tmp_path, prefix, workspace
):
    """What a red team used to pass the sampled limits: threads (one process, 40 threads, over a limit of 16
    tasks) and memory held as files in /tmp (pages that belong to no process) are counted; /dev/shm is
    small and /dev takes no files."""
    backend = LocalBackend(tmp_path / "plain", prefix=prefix, use_cgroups=False)
    box = backend.create(workspace, SMALL)
    threads = (
        'python -c "import threading, time; [threading.Thread(target=time.sleep, args=(20,)).start() '
        'for _ in range(40)]; time.sleep(20)"'
    )
    files = "for i in 1 2 3; do head -c 100M /dev/zero > /tmp/f$i; done; sleep 20"
    try:
        threaded = box.run(threads, timeout_s=30)
        filled = box.run(files, timeout_s=30)
        shm = box.run(
            "head -c 100M /dev/zero > /dev/shm/big; echo rc=$?; touch /dev/x; echo rc=$?", timeout_s=30
        )
    finally:
        box.destroy()
    assert threaded.exit_code != 0 and threaded.wall_s < 15, threaded
    assert "tasks (processes and threads) over the limit" in threaded.output_tail
    assert filled.exit_code != 0 and filled.wall_s < 15, filled
    assert "[sandbox] killed: memory" in filled.output_tail
    assert shm.output_tail.count("rc=1") == 2, shm.output_tail  # /dev/shm full at 64 MiB; /dev read-only


# What a second red team used to hold memory or tasks the sampled limits did not see (each over SMALL's
# 256 MiB or 16 tasks, for 20 s unless killed): a process name that is not UTF-8 (its status read as text
# failed, and the process counted as nothing), a main thread that exits alone (a zombie leader has no VmRSS
# while its threads hold the memory), empty files in /tmp (an inode each, no blocks), and page tables (a
# read of every 2 MiB of a huge mapping maps only the zero page, yet takes a page-table page each time).
_HIDDEN = {
    "name": """
import threading, time
open("/proc/self/comm", "wb").write(bytes([255, 254]))
held = bytearray(400 * 1024 * 1024)
for i in range(0, len(held), 4096):
    held[i] = 1
[threading.Thread(target=time.sleep, args=(20,)).start() for _ in range(30)]
time.sleep(20)
""",
    "leader": """
import ctypes, os, threading, time
def hold():
    time.sleep(0.3)
    held = bytearray(400 * 1024 * 1024)
    for i in range(0, len(held), 4096):
        held[i] = 1
    time.sleep(20)
    os._exit(0)
threading.Thread(target=hold).start()
ctypes.CDLL(None).syscall(60, 0)  # exit(2) of the main thread alone (x86_64)
""",
    "inodes": """
import os, time
for d in range(400):
    os.mkdir(f"/tmp/d{d}")
    for i in range(1000):
        os.close(os.open(f"/tmp/d{d}/{'x' * 100}{i}", os.O_CREAT | os.O_WRONLY, 0o600))
time.sleep(20)
""",
    "page_tables": """
import ctypes, time
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
c_int = ctypes.c_int
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, c_int, c_int, c_int, ctypes.c_long]
span = 200 << 30
base = libc.mmap(None, span, 1, 0x2 | 0x20 | 0x4000, -1, 0)  # read-only, private, anonymous, no reserve
for offset in range(0, span, 2 << 20):
    ctypes.c_char.from_address(base + offset).value
time.sleep(20)
""",
}


@pytest.mark.parametrize("how", sorted(_HIDDEN))
def test_without_cgroups_memory_and_tasks_hidden_from_a_naive_sample_are_still_counted(
    how, tmp_path, prefix, workspace
):
    backend = LocalBackend(tmp_path / "plain", prefix=prefix, use_cgroups=False)
    box = backend.create(workspace, SMALL)
    (box.workspace / "hide.py").write_text(_HIDDEN[how])
    try:
        result = box.run("python hide.py", timeout_s=40)
    finally:
        box.destroy()
    assert result.exit_code != 0 and result.wall_s < 25, result
    assert "[sandbox] killed: " in result.output_tail, result.output_tail


def test_a_tree_that_cannot_be_measured_is_killed_as_over_its_limit(monkeypatch):
    from environments.core import runner

    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        watch = runner.TreeLimit(proc.pid, memory_mb=256, max_processes=16)

        def broken(_pid):
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

        monkeypatch.setattr(runner, "_tree", broken)
        watch.sample()
        assert proc.wait(timeout=5) == -signal.SIGKILL
    finally:
        proc.kill()
    assert watch.exceeded.startswith("the tree could not be measured (UnicodeDecodeError")


def test_no_folder_above_a_read_only_file_can_be_moved(local_backend, tmp_path):
    """A test two folders deep: moving the folder above its own folder would carry the read-only file away
    and leave its path free for a file of the agent's."""
    from environments.sandboxes.local import read_only_binds

    workspace = tmp_path / "ws"
    (workspace / "tests" / "unit").mkdir(parents=True)
    (workspace / "tests" / "unit" / "test_x.py").write_text("assert 1 == 2\n")
    bound = read_only_binds(workspace, ("tests/unit/test_x.py",))
    assert [bound[i + 2] for i in range(0, len(bound), 3)] == [
        "/workspace/tests",
        "/workspace/tests/unit",
        "/workspace/tests/unit/test_x.py",
    ]
    box = local_backend.create(workspace, SandboxLimits(), read_only=("tests/unit/test_x.py",))
    try:
        result = box.run("mv tests moved; echo a=$?; mv tests/unit tests/moved; echo b=$?", timeout_s=30)
        out = box.collect(tmp_path / "out")
    finally:
        box.destroy()
    assert "a=0" not in result.output_tail and "b=0" not in result.output_tail, result.output_tail
    assert (out / "tests" / "unit" / "test_x.py").read_text() == "assert 1 == 2\n"


def test_a_missing_bwrap_is_an_error_that_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxError, match="apt-get install -y bubblewrap"):
        LocalBackend(tmp_path)


def test_the_backend_uses_the_detected_hierarchy_and_says_why_when_there_is_none(
    tmp_path, prefix, monkeypatch
):
    detected = cgroups.detect()
    backend = LocalBackend(tmp_path / "auto", prefix=prefix)
    assert backend.cgroups == detected and backend.use_cgroups is (detected is not None)
    monkeypatch.setattr(cgroups, "detect", lambda: None)
    monkeypatch.setattr(cgroups, "explain", lambda: "cgroup v2: /job holds processes")
    fallback = LocalBackend(tmp_path / "none", prefix=prefix)
    assert not fallback.use_cgroups
    assert any(
        "cgroup v2: /job holds processes" in note and "sampling its tree" in note for note in fallback.notes
    )


def test_read_only_files_cannot_be_changed_moved_or_removed_but_new_files_can_be_added(
    local_backend, tmp_path
):
    workspace = tmp_path / "ws"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "tests" / "test_x.py").write_text("assert True\n")
    (workspace / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (workspace / "src.py").write_text("x = 1\n")
    box = local_backend.create(workspace, SandboxLimits(), read_only=("tests/test_x.py", "pyproject.toml"))
    try:
        script = (
            "echo bad >> tests/test_x.py; echo a=$?; rm -f tests/test_x.py; echo b=$?; "
            "mv tests moved; echo c=$?; echo x > pyproject.toml; echo d=$?; "
            "echo ok > tests/test_new.py; echo e=$?; echo y > src.py; echo f=$?"
        )
        result = box.run(script, timeout_s=30)
        codes = dict(
            line.split("=") for line in result.output_tail.splitlines() if len(line) < 6 and "=" in line
        )
        assert all(codes[k] != "0" for k in "abcd"), result.output_tail
        assert codes["e"] == "0" and codes["f"] == "0", result.output_tail
        out = box.collect(tmp_path / "out")
        assert (out / "tests" / "test_x.py").read_text() == "assert True\n"
        assert (out / "tests" / "test_new.py").exists() and (out / "src.py").read_text() == "y\n"
    finally:
        box.destroy()


def test_a_placement_binds_the_workspace_at_its_workdir_and_mount_folders_at_their_targets(
    local_backend, tmp_path
):
    from environments.core.placement import Mount, Placement

    workspace = tmp_path / "placed"
    (workspace / ".harbor" / "tests").mkdir(parents=True)
    (workspace / ".harbor" / "tests" / "check.sh").write_text("echo checked\n")
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_mine.py").write_text("protected\n")
    placement = Placement(
        "/app", (Mount(".harbor/tests", "/tests"), Mount(".harbor/logs", "/logs", writable=True))
    )
    box = local_backend.create(workspace, SMALL, read_only=("tests/test_mine.py",), placement=placement)
    try:
        result = box.run(
            "pwd; bash /tests/check.sh; ls /workspace/.harbor; echo 1 > /logs/reward.txt; "
            "echo made > /app/a.txt; cat /workspace/a.txt; "
            "(echo x > /tests/new) 2>/dev/null || echo tests-ro; "
            "(echo x > /app/tests/test_mine.py) 2>/dev/null || echo protected-under-app",
            timeout_s=20,
        )
        out = box.collect(tmp_path / "out")
    finally:
        box.destroy()
    assert result.output_tail.split() == ["/app", "checked", "made", "tests-ro", "protected-under-app"]
    assert (out / ".harbor" / "logs" / "reward.txt").read_text() == "1\n"  # the writable mount came back
    assert (out / ".harbor" / "tests" / "check.sh").is_file() and (out / "a.txt").read_text() == "made\n"
    assert (workspace / ".harbor" / "tests" / "check.sh").is_file()  # the caller's folder is never changed


def test_the_local_backend_refuses_a_task_image_and_a_placement_over_its_own_paths(local_backend, workspace):
    from environments.core.placement import Mount, Placement, TaskImage

    image = TaskImage({"Dockerfile": b"FROM x\nRUN make\n"}, "line 2: RUN make", "acme.make")
    with pytest.raises(SandboxError, match="line 2: RUN make.*sandbox: docker"):
        local_backend.create(workspace, SMALL, placement=Placement("/app", (), image))
    for bad in ("/usr/local/app", "/workspace/x", "/", "app"):
        with pytest.raises(ValueError, match="placement.workdir"):
            Placement(bad)
    with pytest.raises(ValueError, match="overlap"):
        Placement("/app", (Mount("t", "/app/tests"),))


def test_nothing_outside_the_workspace_tmp_and_shm_takes_a_file(sandbox):
    """The sandbox's root is a tmpfs: files written there would be memory no sample of the tree sees."""
    places = ("/big", "/etc/big", "/work-big", "/workspace/ok", "/tmp/ok", "/dev/shm/ok")
    script = "; ".join(f"(echo x > {p}) 2>/dev/null && echo wrote {p}" for p in places)
    result = sandbox.run(script, timeout_s=20)
    assert result.output_tail.split("\n")[:3] == ["wrote /workspace/ok", "wrote /tmp/ok", "wrote /dev/shm/ok"]


def test_without_cgroups_each_process_holds_a_bounded_number_of_descriptors(tmp_path, prefix, workspace):
    from environments.core.runner import FALLBACK_NOFILE

    backend = LocalBackend(tmp_path / "plain", prefix=prefix, use_cgroups=False)
    box = backend.create(workspace, SMALL)
    try:
        result = box.run("ulimit -n; ulimit -Hn", timeout_s=20)
    finally:
        box.destroy()
    assert result.output_tail.split() == [str(FALLBACK_NOFILE)] * 2


DEEP_AND_SHUT = """
import os, sys
from pathlib import Path
from environments.sandboxes.local import _remove_tree
root = Path(sys.argv[1])
os.makedirs(root / "shut" / "inner")
(root / "shut" / "inner" / "file").write_text("x")
os.chmod(root / "shut", 0)
os.makedirs(root / "deep")
fd = os.open(root / "deep", os.O_RDONLY)
for _ in range(3000):  # deeper than the recursion limit, and than PATH_MAX
    os.mkdir("d", dir_fd=fd)
    fd = os.open("d", os.O_RDONLY, dir_fd=fd)
_remove_tree(root)
print("gone" if not root.exists() else "left")
"""


@pytest.mark.parametrize("uid", [None, 1000], ids=["root", "non-root"])
def test_a_sandbox_folder_with_shut_folders_and_a_very_deep_chain_is_removed(uid, tmp_path):
    """What an agent may leave in its workspace must not stop ``destroy`` or a later backend's sweep."""
    from tests.raynodes import NodeDisk, on_own_disk

    disk = NodeDisk(private=(Path("/tmp"),), uid=uid, installs=(Path(sys.base_prefix),))
    argv = [sys.executable, "-c", DEEP_AND_SHUT, "/tmp/sandbox-folder"]
    stage = Path(__import__("tempfile").mkdtemp(prefix="stage", dir="/var/tmp"))
    try:
        done = subprocess.run(
            on_own_disk(disk, argv, stage), capture_output=True, text=True, timeout=120, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    finally:
        subprocess.run(["rm", "-rf", str(stage)])
    assert done.returncode == 0 and done.stdout.split() == ["gone"], done.stderr[-2000:]


def test_the_sandboxes_default_root_is_not_a_tmpfs_and_a_tmpfs_root_without_cgroups_is_named(
    monkeypatch, prefix
):
    from environments.sandboxes import local

    monkeypatch.setattr(local.tempfile, "gettempdir", lambda: "/dev/shm")
    assert local.on_tmpfs(Path("/dev/shm")) and local.default_root() == Path("/var/tmp/harness-sandboxes")
    root = Path("/dev/shm") / f"{prefix}-root"
    try:
        backend = LocalBackend(root, prefix=prefix, use_cgroups=False)
        assert any("is on a tmpfs" in note for note in backend.notes), backend.notes
    finally:
        subprocess.run(["rm", "-rf", str(root)])


SYSCALL_PROBE = """
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
results = {}
for name, number in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    rc = libc.syscall(number, 0, 0, 0, 0)
    results[name] = errno.errorcode.get(ctypes.get_errno(), "ok") if rc == -1 else "ok"
read_end, write_end = os.pipe()
os.write(write_end, b"still works")
results["pipe"] = os.read(read_end, 64).decode()
print(json.dumps(results))
"""


def test_the_calls_that_make_the_kernel_hold_memory_unseen_are_refused(sandbox):
    """vmsplice (pins huge pages in a pipe), System V message queues and kernel keys: EPERM inside."""
    import json
    import platform

    from environments.sandboxes.seccomp import DENIED, SYSCALLS

    (sandbox.workspace / "probe.py").write_text(SYSCALL_PROBE)
    numbers = json.dumps(SYSCALLS[platform.machine()])
    result = sandbox.run(f"python probe.py '{numbers}'", timeout_s=30)
    found = json.loads(result.output_tail.strip().splitlines()[-1])
    assert {name: found[name] for name in DENIED} == dict.fromkeys(DENIED, "EPERM"), found
    assert found["pipe"] == "still works"


def test_the_filter_is_refused_for_a_machine_it_has_no_table_for():
    from environments.sandboxes.seccomp import filter_program

    assert len(filter_program("x86_64")) % 8 == 0 and len(filter_program("aarch64")) % 8 == 0
    with pytest.raises(ValueError, match="no seccomp table for 'riscv64'"):
        filter_program("riscv64")


def test_the_kernels_settings_and_triggers_cannot_be_written_from_inside(sandbox):
    """A root launcher's sandbox user is host root outside: ``/proc/sys/kernel/core_pattern`` names a program
    the kernel runs as root, and every file of ``/proc`` is root's."""
    targets = ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger")
    targets += ("/proc/pressure/memory",)
    script = "; ".join(f"(: >> {t}) 2>/dev/null && echo writable {t}" for t in targets)
    shown = "cat /proc/sys/kernel/ostype; cat /proc/keys 2>/dev/null | wc -c"
    result = sandbox.run(f"{script}; {shown}", timeout_s=20)
    assert result.output_tail.split() == ["Linux", "0"], result.output_tail
