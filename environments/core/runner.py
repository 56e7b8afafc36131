"""Run one shell command in a folder with a time limit and rlimits, and measure it.

``SubprocessRunner`` is the default ``Runner`` for validation and tests. It is *not* a sandbox: the command
runs as this user with this machine's network and can read any file this user can. Network isolation,
per-sandbox process limits (cgroup pids) and hiding the rest of the file system are the sandbox backends'
job; a ``Runner`` backed by a sandbox implements the same Protocol. What it does enforce: wall time (the
whole process group is killed), CPU time, address space (a coarse stand-in for a cgroup memory limit, set
to twice ``memory_mb`` because interpreters reserve more than they touch), file size and no core dumps.
It measures wall time and the peak resident memory of the command's process tree.
"""

from __future__ import annotations

import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from environments.core.placement import SANDBOX_WORKSPACE

if TYPE_CHECKING:
    from environments.core.placement import Placement

_MIB = 1024 * 1024
_TAIL_BYTES = 4000


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one command did. ``exit_code`` is None when it was killed for running past its time."""

    exit_code: int | None
    timed_out: bool
    wall_s: float
    peak_rss_mb: float
    output_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Runner(Protocol):
    """Runs verify and reference commands; called by the oracle once per fresh copy of a workspace."""

    def run(
        self,
        command: str,
        cwd: Path,
        *,
        timeout_s: float,
        memory_mb: int,
        env: Mapping[str, str] | None = None,
        placement: Placement | None = None,
    ) -> RunResult:
        """Run ``command`` with bash in ``cwd``; never raise for the command's own failure or timeout.
        ``placement``: where the task's files must sit (raise ``PlacementUnsupported`` if this runner
        cannot put them there)."""
        ...


class PlacementUnsupported(RuntimeError):
    """The runner cannot place the task's files as the task needs; the message names the fix."""


def check_plain(placement: Placement | None, where: str) -> None:
    """Raise ``PlacementUnsupported`` unless ``placement`` is the plain ``/workspace`` layout."""
    if placement is None or placement.plain:
        return
    needs = [f"{m.target}" for m in placement.mounts]
    if placement.workdir != SANDBOX_WORKSPACE:
        needs.insert(0, placement.workdir)
    what = f"its files at {', '.join(needs)}" if needs else "its own image"
    raise PlacementUnsupported(
        f"{where} cannot give this task {what}; run it through a sandbox "
        "(SandboxRunner with the local backend, or the docker backend for a task that builds its image)"
    )


def _limit_child(timeout_s: float, memory_mb: int) -> None:
    cpu = math.ceil(timeout_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    address = max(2 * memory_mb, 1024) * _MIB
    resource.setrlimit(resource.RLIMIT_AS, (address, address))
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * _MIB, 256 * _MIB))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def base_env(cwd: Path) -> dict[str, str]:
    """A small, fixed environment: this interpreter's ``bin`` first on PATH so ``python`` is ours."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
    return {
        "PATH": path,
        "HOME": str(cwd),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "NO_COLOR": "1",
        "TMPDIR": str(cwd),
    }


def wait_until(
    pid: int, deadline: float, poll_s: float = 0.005, on_poll: Callable[[], None] | None = None
) -> tuple[int, resource.struct_rusage, bool]:
    """Reap ``pid``, killing its process group at ``deadline``; return (status, rusage, timed_out).
    ``on_poll`` runs at every poll while ``pid`` is alive (e.g. to sample its memory)."""
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage, False
        if on_poll is not None:
            on_poll()
        if time.monotonic() >= deadline:
            os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            return status, usage, True
        time.sleep(poll_s)


class SubprocessRunner:
    """The default ``Runner``: ``bash -c`` in a new session, rlimits in ``preexec_fn``, no isolation."""

    def __init__(self, poll_s: float = 0.005) -> None:
        self.poll_s = poll_s

    def run(
        self,
        command: str,
        cwd: Path,
        *,
        timeout_s: float,
        memory_mb: int,
        env: Mapping[str, str] | None = None,
        placement: Placement | None = None,
    ) -> RunResult:
        check_plain(placement, "SubprocessRunner (no sandbox)")
        full_env = {**base_env(Path(cwd)), **(env or {})}
        with tempfile.TemporaryFile() as out:
            start = time.monotonic()
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=cwd,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=lambda: _limit_child(timeout_s, memory_mb),
            )
            peak = TreePeak(proc.pid)
            status, _, timed_out = wait_until(proc.pid, start + timeout_s, self.poll_s, peak.sample)
            wall = time.monotonic() - start
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4; keep Popen consistent
            try:  # background children outlive nothing
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out.seek(max(0, out.seek(0, os.SEEK_END) - _TAIL_BYTES))
            tail = out.read().decode("utf-8", "replace")
        return RunResult(
            exit_code=None if timed_out else proc.returncode,
            timed_out=timed_out,
            wall_s=wall,
            peak_rss_mb=peak.mb,
            output_tail=tail,
        )


class TreePeak:
    """The peak resident memory of a process tree, sampled from ``/proc`` while it runs.

    ``wait4``'s ``ru_maxrss`` cannot be used here: a child forked from a large process (a test session
    that has loaded a model) reports at least its parent's size at the fork, whatever it runs after exec.
    Sampling every poll misses processes that live shorter than a poll; each sample also reads every
    process's own high-water mark (``VmHWM``), so a process seen once counts with its peak."""

    counts_tmpfs = False
    """Whether the tree's private tmpfs mounts count as its memory (``tmpfs_kb``): only a sandbox has
    them, so a plain subprocess's frequent samples skip reading every process's mount table."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kb = 0

    def sample(self) -> None:
        self._measure()

    def _measure(self) -> tuple[int, int]:
        """Sample once; return the tree's task count (threads, as a cgroup's ``pids.max`` counts them) and
        its resident memory now (KiB), with what its private tmpfs mounts hold if ``counts_tmpfs``."""
        total = tasks = 0
        pids = _tree(self.pid)
        for pid in pids:
            status = _status(pid)
            total += _held_kb(pid, status)
            tasks += max(status.get(b"Threads:", 1), 1)
            self.peak_kb = max(self.peak_kb, status.get(b"VmHWM:", 0))
        if self.counts_tmpfs:
            total += tmpfs_kb(pids)
        self.peak_kb = max(self.peak_kb, total)
        return tasks, total

    @property
    def mb(self) -> float:
        return self.peak_kb / 1024


class TreeLimit(TreePeak):
    """A process tree's memory and task limits, held from outside where no cgroup can hold them (a
    launcher without a writable or delegated cgroup): every ``every_s`` the tree is sampled, and when its
    resident memory plus what its private tmpfs mounts hold passes ``memory_mb``, or it runs more than
    ``max_processes`` tasks (processes and their threads, as ``pids.max`` counts), its process group is
    killed and ``exceeded`` says which; a sample that fails (whatever the agent did to ``/proc``'s view of
    it) kills the tree too. Memory is resident pages, page tables and swap of each process (a zombie
    leader's from its live threads), plus the tmpfs mounts' pages and files. Sampling misses what grows
    faster than a sample: a burst shorter
    than one passes (``fallback_rlimits`` stops a fork burst at the kernel, but not for a root launcher,
    whom ``RLIMIT_NPROC`` does not bind). Memory the kernel holds for the tree rather than in its pages
    (shared memory no process has resident, pipe buffers, System V message queues, epoll and inotify
    state, socket buffers, keys: ``environments.sandboxes.local``) is not seen: only a memory cgroup bounds
    it."""

    counts_tmpfs = True

    def __init__(self, pid: int, memory_mb: int, max_processes: int, every_s: float = 0.05) -> None:
        super().__init__(pid)
        self.memory_mb, self.max_processes, self.every_s = memory_mb, max_processes, every_s
        self.exceeded = ""
        self._next = 0.0

    def sample(self) -> None:
        now = time.monotonic()
        if self.exceeded or now < self._next:
            return
        self._next = now + self.every_s
        try:
            count, rss_kb = self._measure()
        except Exception as exc:  # what the agent wrote broke the walk: a tree not measured is over the limit
            self.exceeded = f"the tree could not be measured ({type(exc).__name__}: {exc})"
        else:
            if rss_kb > self.memory_mb * 1024:
                self.exceeded = f"memory {rss_kb // 1024} MiB over the limit of {self.memory_mb} MiB"
            elif count > self.max_processes:
                self.exceeded = (
                    f"{count} tasks (processes and threads) over the limit of {self.max_processes}"
                )
        if self.exceeded:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


FALLBACK_NOFILE = 4096
"""Open descriptors per sandboxed process without cgroups: each pipe, epoll set or inotify instance that
holds kernel memory no sample sees takes one (a red team held 343 MiB in 30,000 pipes across 3
processes). It bounds their count, not their memory; Node and Bun run well within it."""


def fallback_rlimits(max_threads: int) -> tuple[tuple[int, int], ...]:
    """``(resource, limit)`` pairs that bound each process where no cgroup can: the threads of this user
    (``RLIMIT_NPROC`` counts threads per user: those this user runs now plus the allowance), so a fork
    bomb stops at the kernel even between ``TreeLimit``'s samples; and its open descriptors
    (``FALLBACK_NOFILE``). No memory rlimit: Bun reserves ~70 GB of writable address space it never
    touches (``VmData``), so ``RLIMIT_AS`` and ``RLIMIT_DATA`` both kill it at start; ``TreeLimit`` holds
    the tree's resident memory instead. Computed in the parent."""
    own = sum(_threads(entry) for entry in os.scandir("/proc") if entry.name.isdigit() and _owned(entry))
    nofile = min(FALLBACK_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    return ((resource.RLIMIT_NPROC, own + max_threads), (resource.RLIMIT_NOFILE, nofile))


def _threads(entry: os.DirEntry) -> int:
    """The kernel counts threads against ``RLIMIT_NPROC``, not processes."""
    try:
        return len(os.listdir(f"{entry.path}/task"))
    except OSError:
        return 0


def _owned(entry: os.DirEntry) -> bool:
    try:
        return entry.stat().st_uid == os.getuid()
    except OSError:
        return False


def _tree(root: int) -> list[int]:
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:  # a thread that ends mid-walk loses only its own children for this sample
            try:
                with open(f"/proc/{pid}/task/{task}/children") as handle:
                    todo.extend(int(child) for child in handle.read().split())
            except OSError:
                continue
    return pids


_STATUS_KEYS = (b"VmRSS:", b"VmHWM:", b"VmPTE:", b"VmSwap:", b"Threads:")
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _status(pid: int) -> dict[bytes, int]:
    """``VmRSS``, ``VmHWM``, ``VmPTE``, ``VmSwap`` (KiB) and ``Threads`` of ``pid``, those it has (none once
    it is gone). Read as bytes: the process names its own ``Name:`` line, which need not be UTF-8."""
    found: dict[bytes, int] = {}
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(_STATUS_KEYS):
                    found[line.split()[0]] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return found


def _held_kb(pid: int, status: dict[bytes, int]) -> int:
    """The memory ``pid`` holds (KiB): resident pages, its page tables (a sparse mapping's page tables
    can outweigh its resident pages many times) and swap. A thread-group leader that exited while its
    threads run is a zombie with no ``VmRSS``; its threads still share the memory, read from their
    ``statm``."""
    resident = status.get(b"VmRSS:")
    if resident is None:
        resident = _threads_resident_kb(pid)
    return max(resident, 0) + max(status.get(b"VmPTE:", 0), 0) + max(status.get(b"VmSwap:", 0), 0)


def _threads_resident_kb(pid: int) -> int:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/statm", "rb") as handle:
                resident = int(handle.read().split()[1]) * _PAGE_KB
        except (OSError, ValueError, IndexError):
            continue
        if resident:
            return resident
    return 0


PRIVATE_TMPFS = ("tmp", "dev/shm")
"""The tmpfs mounts a sandbox holds privately (``environments.sandboxes.local``): their pages are memory
that belongs to no process, so ``TreeLimit`` counts what they hold."""


TMPFS_INODE_BYTES = 1024
"""Kernel memory a tmpfs file holds however empty it is (its inode and dentry): a tmpfs's inode cap is
half the host's pages, not its size, so files of no blocks would otherwise go uncounted (800K empty files
held about 1 GiB of slab)."""


def tmpfs_kb(pids: list[int]) -> int:
    """What the private tmpfs mounts of the first process in ``pids`` that lives in a sandbox's mount
    namespace hold (KiB), pages and files, read through its ``/proc/<pid>/root``; 0 when none does. A
    sandbox's namespace is told by its mounts (its root and these mounts are each a tmpfs): a process still
    setting it up sees the host's, which must not count."""
    for pid in pids:
        try:
            with open(f"/proc/{pid}/mountinfo", "rb") as handle:  # the agent names its folders: bytes
                fstypes = {line.split()[4]: line.split(b" - ")[1].split()[0] for line in handle}
            if any(fstypes.get(f"/{mount}".encode()) != b"tmpfs" for mount in ("", *PRIVATE_TMPFS)):
                continue
            used = 0
            for mount in PRIVATE_TMPFS:
                stats = os.statvfs(f"/proc/{pid}/root/{mount}")
                used += (stats.f_blocks - stats.f_bfree) * stats.f_frsize
                used += (stats.f_files - stats.f_ffree) * TMPFS_INODE_BYTES
            return used // 1024
        except (OSError, IndexError):
            continue
    return 0
