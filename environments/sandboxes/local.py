"""The local sandbox: bubblewrap namespaces plus cgroup (v1 or v2) limits, for one machine without Docker.

Threat model. The agent is an untrusted program that may try to read what it should not (hidden tests,
the oracle, the reference, other rollouts, credentials), reach the network, or outlast or starve the
machine. This backend stops:

- changing what decides the verdict: the files a caller names ``read_only`` (a task's existing tests,
  runner configuration and graders) are bound read-only over the workspace and their folders are mount
  points that cannot be moved or removed; new files beside them can still be added;
- reading outside the workspace: a new mount namespace whose root is an empty, read-only tmpfs with binds
  of ``/usr``, a few ``/etc`` files the dynamic linker and Python need, and this interpreter's prefixes;
  the workspace copy is the only writable host folder (at ``/workspace``, and at a task's own work
  directory too), besides a task's writable mounts (private folders, e.g. Harbor's ``/logs``);
  ``/tmp`` is a private tmpfs;
  the host's ``/root``, ``/home``, ``/work``, ``/tmp`` and other sandboxes are not there;
- the network: a new, empty network namespace (``--unshare-net``), so only its own loopback exists and
  every connection to the host (its loopback included) or outside fails at once; the guard is reachable
  only through an explicit ``Forward`` (a unix socket bound in, relayed to ``127.0.0.1:<port>``);
- other processes and privileges: new pid, ipc, uts, user and cgroup namespaces; uid 1000 inside; all
  capabilities dropped; no nested user namespaces (``--disable-userns``, bubblewrap >= 0.8);
  ``--new-session`` (no TIOCSTI into the launcher's terminal);
- resource abuse: per-sandbox cgroups cap memory (swap included), process count and CPU bandwidth;
  rlimits cap CPU seconds, file size and core dumps; the wall-clock limit kills the whole tree;
- litter: every process is killed (pid namespace plus the cgroup) and the folder and cgroups removed
  after use, and a backend sweeps a crashed launcher's leftovers when it starts (``--die-with-parent``
  already kills the tree when the launcher dies).

It does not stop: kernel exploits (the kernel is shared; the seccomp filter, ``seccomp.py``, refuses only
the few calls that make the kernel hold memory for a process unseen), reading what ``/usr``
and the interpreter prefixes hold (public software, but anything a careless admin put there is visible),
timing and cache side channels, disk filling of the workspace beyond ``RLIMIT_FSIZE`` per file, or a consumer
on the host that follows symlinks the agent left in its output (``collect`` copies links as links; code
reading collected files must not follow them). Without usable cgroups (writable v1 controllers or a delegated
v2 group, see ``cgroups.py``; a non-root launcher in a container has neither) the limits are held from
outside: the tree's resident memory, page tables and swap plus what its sized ``/tmp`` and ``/dev/shm``
hold (pages and files), and its tasks (processes and threads), are sampled from ``/proc`` and the tree
killed past either or when a sample fails (``TreeLimit``; a burst shorter than a sample passes), and
``RLIMIT_NPROC`` bounds this user's threads (a root launcher is exempt).
Memory the kernel holds for the tree rather than in its processes' pages is bounded only by a memory cgroup:
shared memory no process has resident (an unmapped ``memfd``, a shared mapping after ``MADV_DONTNEED``),
pipe buffers (and the page-cache pages ``splice`` pins through them), epoll and inotify state,
pseudo-terminals, socket buffers. A red team held three times a 128 MiB limit for 8-12 s through each of
these, unseen by the samples; ``RLIMIT_NOFILE`` (``FALLBACK_NOFILE``) caps the descriptors each process
holds for them, not their memory. File locks (about 200 bytes each) are bounded by nothing, a memory
cgroup included. The seccomp filter refuses the calls no harness needs that did the same (``vmsplice``,
which pins whole huge pages in a pipe; System V message queues, semaphores and shared memory; kernel
keys). Run untrusted policies with cgroups (as root, or with a delegated group). No memory rlimit: Bun
reserves tens of GB of address space it never touches, so an ``RLIMIT_AS`` or ``RLIMIT_DATA`` cap kills
opencode at start. There is no CPU bandwidth limit. ``LocalBackend.notes`` says so and why.

A root launcher's sandbox user is host root outside its user namespace, without capabilities (as in a
Docker container run as root): it owns every file of ``/proc``, so the kernel's settings and triggers are
bound read-only and its host views masked (``proc_guards``, Docker's lists). Running the sandbox as an
unprivileged host user instead would make those writes impossible rather than masked; bubblewrap then
could not reach binds below a folder closed to that user (this interpreter under ``/root``), which is why
it is not done yet.

The project itself must stay outside the bound interpreter (an editable install is fine: its finder points at
the repository, which is not bound): its task generators compute the answers.
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from environments.core.placement import Placement
from environments.core.runner import RunResult, TreeLimit, fallback_rlimits, wait_until
from environments.integrity.snapshot import copy_tree
from environments.sandboxes import cgroups
from environments.sandboxes.protocol import (
    DEFAULT_PREFIX,
    RELAY_INSIDE,
    RELAY_SCRIPT,
    Forward,
    PlacedMounts,
    SandboxError,
    SandboxLimits,
    command_argv,
    image_problem,
    new_name,
    owner_alive,
)
from environments.sandboxes.seccomp import filter_program

WORKSPACE = "/workspace"
SANDBOX_UID = 1000
_MIB = 1024 * 1024
_TAIL_BYTES = 4000
_BWRAP_HELPERS = 2  # bwrap and its pid-1 init count against pids.max too
_SHM_MB = 64  # /dev/shm inside: POSIX shared memory and semaphores, not a second /tmp
_ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "nsswitch.conf",
    "hosts",
    "ssl",
    "ca-certificates",
)


def on_tmpfs(path: Path) -> bool:
    """Whether ``path`` (or its nearest existing folder) lies on a tmpfs, whose files are memory: the file
    system of the deepest mount above it in ``/proc/self/mountinfo``."""
    while not path.exists():
        path = path.parent
    target, best, fs_type = path.resolve(), -1, ""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        point = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4]))
        if (target == point or point in target.parents) and len(point.parts) > best:
            best, fs_type = len(point.parts), rest.split()[0]
    return fs_type == "tmpfs"


PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/pressure")
"""Kernel settings and triggers the sandbox must not write: Docker's read-only paths for a container, and
the pressure files (each write makes a kernel trigger)."""
PROC_MASKED = ("/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats")
"""Host views the sandbox must not read: Docker's masked files (``/dev/null`` over each)."""
PROC_MASKED_DIRS = ("/proc/acpi", "/proc/asound", "/proc/scsi")
"""Docker's masked folders (an empty read-only tmpfs over each): ``/proc/scsi/scsi`` and
``/proc/acpi/wakeup`` take writes from root."""


def proc_guards() -> list[str]:
    """bwrap arguments that follow ``--proc /proc``. A root launcher's sandbox user is host root outside
    its user namespace (without capabilities), and root owns every file of ``/proc``: it could write
    ``/proc/sys/kernel/core_pattern`` (a program the kernel runs as root) or ``/proc/sysrq-trigger``.
    These are bound read-only from the host's ``/proc`` (``/proc/sys`` then shows the host network
    namespace's values, read-only) or masked, as Docker does for a root container."""
    argv: list[str] = []
    for path in PROC_READ_ONLY:
        if Path(path).exists():
            argv += ["--ro-bind", path, path]
    for path in PROC_MASKED:
        if Path(path).exists():
            argv += ["--ro-bind", "/dev/null", path]
    for path in PROC_MASKED_DIRS:
        if Path(path).is_dir():
            argv += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    return argv


def default_root() -> Path:
    """``<tmp>/harness-sandboxes``, or ``/var/tmp/...`` when the temp folder is a tmpfs: a workspace there
    is memory that only a memory cgroup would count."""
    temp = Path(tempfile.gettempdir())
    if on_tmpfs(temp) and Path("/var/tmp").is_dir() and not on_tmpfs(Path("/var/tmp")):
        temp = Path("/var/tmp")
    return temp / "harness-sandboxes"


def interpreter_dirs() -> list[Path]:
    """The folders this Python needs to run inside: the venv and the base installation."""
    dirs = {Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parents[1]}
    return sorted(d for d in dirs if d.is_dir() and d != Path("/usr"))


def sandbox_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Inside-the-sandbox environment: this interpreter's ``bin`` first on PATH, home is the workspace."""
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    return {
        "PATH": path,
        "HOME": WORKSPACE,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "NO_COLOR": "1",
        **(env or {}),
    }


class LocalSandbox:
    """One bubblewrap sandbox; see the module docstring for what it isolates."""

    def __init__(
        self,
        name: str,
        folder: Path,
        limits: SandboxLimits,
        cgroup: cgroups.SandboxCgroup | None,
        argv: list[str],
        forwards: tuple[Forward, ...] = (),
        mounts: PlacedMounts | None = None,
    ) -> None:
        self.name, self.folder, self.limits, self.cgroup = name, folder, limits, cgroup
        self.forwards, self.mounts = forwards, mounts
        self._bwrap_argv = argv
        self._destroyed = False
        self._limit_killed = False

    @property
    def workspace(self) -> Path:
        """The host folder bound at ``/workspace`` (for inspection; the agent writes here)."""
        return self.folder / "workspace"

    def run(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None) -> RunResult:
        if self._destroyed:
            raise SandboxError(f"sandbox {self.name} was destroyed; create a new one")
        argv = list(self._bwrap_argv)
        for key, value in sandbox_env(env).items():
            argv += ["--setenv", key, value]
        seccomp_read, seccomp_write = os.pipe()  # bwrap reads the filter to its end (a few hundred bytes)
        os.write(seccomp_write, filter_program())
        os.close(seccomp_write)
        argv += ["--seccomp", str(seccomp_read)]
        argv += ["--", *command_argv(command, self.forwards, sys.executable)]
        procs_files = self.cgroup.procs_files() if self.cgroup else ()
        limits = self.limits
        allowance = limits.max_processes + _BWRAP_HELPERS
        fallback = fallback_rlimits(allowance) if self.cgroup is None else ()

        def prepare_child() -> None:  # runs in the child between fork and exec
            pid = str(os.getpid()).encode()
            for procs in procs_files:
                fd = os.open(procs, os.O_WRONLY)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)
            cpu = math.ceil(timeout_s * max(limits.cpus, 1.0)) + 1
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            resource.setrlimit(resource.RLIMIT_FSIZE, (256 * _MIB, 256 * _MIB))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            for which, limit in fallback:  # no cgroups: per process here, the tree's total by TreeLimit
                resource.setrlimit(which, (limit, limit))

        if self.cgroup:
            self.cgroup.reset_peak()
        with tempfile.TemporaryFile(dir=self.folder) as out:  # on the root's disk, not a tmpfs /tmp
            status_read, status_write = os.pipe()  # bwrap writes its init's pid here: see _wait_gone
            start = time.monotonic()
            try:
                proc = subprocess.Popen(
                    [argv[0], "--json-status-fd", str(status_write), *argv[1:]],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=prepare_child,
                    pass_fds=(status_write, seccomp_read),
                )
            except (OSError, subprocess.SubprocessError) as exc:
                os.close(status_read)
                raise SandboxError(f"could not start bwrap for {self.name}: {exc}") from exc
            finally:
                os.close(status_write)
                os.close(seccomp_read)
            watch = None if self.cgroup else TreeLimit(proc.pid, limits.memory_mb, allowance)
            try:
                status, _, timed_out = wait_until(proc.pid, start + timeout_s, on_poll=watch and watch.sample)
            except BaseException:  # nothing of the sandbox outlives a launcher's error
                self._kill_rest(proc.pid)
                proc.wait()
                _wait_gone(_init_pid(status_read))
                raise
            wall = time.monotonic() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
            self._kill_rest(proc.pid)
            _wait_gone(_init_pid(status_read))
            out.seek(max(0, out.seek(0, os.SEEK_END) - _TAIL_BYTES))
            tail = out.read().decode("utf-8", "replace")
        if watch and watch.exceeded:
            self._limit_killed = True
            tail += f"\n[sandbox] killed: {watch.exceeded} (no cgroups: the tree is sampled from /proc)\n"
        return RunResult(
            exit_code=None if timed_out else proc.returncode,
            timed_out=timed_out,
            wall_s=wall,
            peak_rss_mb=self.cgroup.peak_memory_mb() if self.cgroup else watch.mb,
            output_tail=tail,
        )

    def _kill_rest(self, pgid: int) -> None:
        """SIGKILL the process group (bwrap and the namespace's init; the kernel then kills the rest)."""
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.cgroup and not self.cgroup.kill():
            where = ", ".join(map(str, self.cgroup.paths))
            raise SandboxError(f"processes of {self.name} survived SIGKILL; inspect {where}")

    def oom_killed(self) -> bool:
        """Whether a limit killed a process in this sandbox so far: the cgroup's memory limit, or without
        cgroups the sampled memory or process limit."""
        return self._limit_killed or bool(self.cgroup and self.cgroup.oom_killed())

    def collect(self, dest: Path) -> Path:
        copy_tree(self.workspace, Path(dest))
        if self.mounts:
            self.mounts.restore(Path(dest))
        return Path(dest)

    def destroy(self) -> None:
        try:
            if self.cgroup:
                self.cgroup.remove()
        finally:
            _remove_tree(self.folder)
            self._destroyed = True


def read_only_binds(workspace: Path, paths: tuple[str, ...], inside: str = WORKSPACE) -> list[str]:
    """bwrap arguments that make the workspace files ``paths`` read-only and their folders, and every
    folder above them, impossible to move or remove (each is bound onto itself, a mount point; it stays
    writable, so new files can be added), for the workspace bound at ``inside``. Paths that are not regular
    files are skipped."""
    files = sorted(p for p in paths if (workspace / p).is_file() and not (workspace / p).is_symlink())
    ancestors = {str(parent) for p in files for parent in Path(p).parents}  # every level: none moves away
    folders = sorted(ancestors - {"."}, key=lambda f: (f.count("/"), f))
    argv: list[str] = []
    for folder in folders:
        argv += ["--bind", str(workspace / folder), f"{inside}/{folder}"]
    for rel in files:
        argv += ["--ro-bind", str(workspace / rel), f"{inside}/{rel}"]
    return argv


def _remove_tree(path: Path) -> None:
    """Remove a sandbox's folder whatever the agent left in it: folders it shut (``chmod 000``, which stop a
    non-root launcher) are opened first, and chains deeper than Python's recursion limit or ``PATH_MAX``
    are walked by coreutils' ``chmod -R`` and ``rm -rf`` (fts, relative to each folder), which follow no
    symbolic link and stay on this file system."""
    if not path.exists() and not path.is_symlink():
        return
    subprocess.run(["chmod", "-R", "u+rwx", "--", str(path)], capture_output=True)
    removed = subprocess.run(
        ["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True, text=True
    )
    if removed.returncode != 0 or path.exists():
        raise OSError(f"could not remove {path}: {removed.stderr.strip()[-300:]}")


class LocalBackend:
    """Creates ``LocalSandbox``es under ``root``; sweeps a crashed launcher's leftovers on construction.

    ``prefix`` keys everything this backend creates and sweeps (folders under ``root``, cgroups);
    ``extra_ro_binds`` are more host folders the sandbox may read (e.g. a Node installation).
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        prefix: str = DEFAULT_PREFIX,
        extra_ro_binds: tuple[Path, ...] = (),
        use_cgroups: bool = True,
        bwrap: str | None = None,
    ) -> None:
        self.bwrap = bwrap or shutil.which("bwrap")
        if not self.bwrap:
            raise SandboxError("bubblewrap is missing: apt-get install -y bubblewrap (Debian/Ubuntu)")
        if "-" in prefix or not prefix.isalnum():
            raise ValueError(f"prefix={prefix!r}: use letters and digits only (names are split on '-')")
        self.root = Path(root) if root else default_root()
        self.root.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.extra_ro_binds = tuple(Path(p) for p in extra_ro_binds)
        self.cgroups = cgroups.detect() if use_cgroups else None
        self.use_cgroups = self.cgroups is not None
        self.notes: list[str] = []
        if not self.use_cgroups:
            why = cgroups.explain() if use_cgroups else "cgroups were turned off"
            self.notes.append(
                f"no usable cgroups ({why}): the sandbox's memory (resident plus its sized /tmp and "
                "/dev/shm) and tasks are held by sampling its tree (a burst shorter than a sample can "
                "pass), this user's threads by RLIMIT_NPROC (not for root); memory the kernel holds "
                "for the tree outside its pages and those mounts (shared memory no process has resident, "
                "pipe buffers, message queues, epoll and inotify state, socket buffers) is not bounded, "
                "and there is no CPU bandwidth limit: run untrusted policies with cgroups"
            )
            if on_tmpfs(self.root):
                self.notes.append(
                    f"the sandboxes' root {self.root} is on a tmpfs: the workspace files are memory that "
                    "no sample counts; give a root on disk"
                )
        help_text = subprocess.run([self.bwrap, "--help"], capture_output=True, text=True).stdout
        self.disable_userns = "--disable-userns" in help_text  # bubblewrap >= 0.8
        if not self.disable_userns:
            self.notes.append("bubblewrap < 0.8: the sandbox can create nested user namespaces")
        self.swept = self.sweep()

    def create(
        self,
        workspace: Path,
        limits: SandboxLimits,
        *,
        forwards: tuple[Forward, ...] = (),
        read_only: tuple[str, ...] = (),
        placement: Placement | None = None,
    ) -> LocalSandbox:
        """``placement``: the workspace is bound at its ``workdir`` as well (commands start there), each
        mount's folder at its target; a task whose image must be built is refused (``SandboxError``)."""
        problem = image_problem(placement, "local")
        if problem:
            raise SandboxError(problem)
        placement = placement or Placement()
        name = new_name(self.prefix)
        folder = self.root / name
        folder.mkdir(mode=0o700)
        cgroup = None
        try:
            copy_tree(workspace, folder / "workspace", max_file_bytes=None)
            mounts = PlacedMounts(folder / "workspace", placement.mounts, folder / "mounts")
            if self.cgroups:
                cgroup = self.cgroups.create(name, limits, extra_processes=_BWRAP_HELPERS)
            argv = self._bwrap_argv(
                folder / "workspace", forwards, read_only, placement.workdir, mounts, limits.memory_mb
            )
        except BaseException:
            if cgroup:
                cgroup.remove()
            _remove_tree(folder)
            raise
        return LocalSandbox(name, folder, limits, cgroup, argv, forwards, mounts)

    def _bwrap_argv(
        self,
        workspace: Path,
        forwards: tuple[Forward, ...],
        read_only: tuple[str, ...] = (),
        workdir: str = WORKSPACE,
        mounts: PlacedMounts | None = None,
        memory_mb: int = 2048,
    ) -> list[str]:
        argv = [self.bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID)]
        if self.disable_userns:
            argv.append("--disable-userns")
        argv += ["--gid", str(SANDBOX_UID), "--hostname", "sandbox", "--die-with-parent", "--new-session"]
        argv += ["--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
        for link in ("bin", "lib", "lib64", "sbin"):
            target = Path("/") / link
            if target.is_symlink():
                argv += ["--symlink", os.readlink(target), str(target)]
            elif target.is_dir():
                argv += ["--ro-bind", str(target), str(target)]
        for name in _ETC_FILES:
            if (Path("/etc") / name).exists():
                argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        # The private /tmp first: binds that live under /tmp (a venv in a checkout there) go on top of it.
        # Its tmpfs and /dev/shm's are sized (a tmpfs's default is half the host's memory, and its pages
        # belong to no process: without a memory cgroup nothing else would bound them), and /dev, whose
        # own tmpfs would take files as well, is read-only.
        argv += ["--proc", "/proc", *proc_guards()]
        argv += ["--dev", "/dev", "--size", str(memory_mb * _MIB), "--tmpfs", "/tmp"]
        argv += ["--size", str(_SHM_MB * _MIB), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
        for folder in (*interpreter_dirs(), *self.extra_ro_binds):
            argv += ["--ro-bind", str(folder), str(folder)]
        for forward in forwards:
            argv += ["--bind", str(forward.host_socket), forward.inside_socket]
        if forwards:
            argv += ["--ro-bind", str(RELAY_SCRIPT), RELAY_INSIDE]
        argv += ["--bind", str(workspace), WORKSPACE]
        argv += read_only_binds(workspace, read_only)
        if workdir != WORKSPACE:  # the same folder at the task's own path, with the same protections
            argv += ["--bind", str(workspace), workdir]
            argv += read_only_binds(workspace, read_only, workdir)
        for mount, host in mounts.folders if mounts else ():
            argv += ["--bind" if mount.writable else "--ro-bind", str(host), mount.target]
        # The root tmpfs read-only last, once every mount point is made in it: its files would be memory no
        # sample sees. Mounts on it keep their own flags (bwrap remounts that one mount).
        argv += ["--remount-ro", "/", "--chdir", workdir, "--clearenv"]
        return argv

    def sweep(self) -> int:
        """Kill and remove leftovers (folders, cgroups) of dead owners with this prefix; return the count."""

        def stale(name: str) -> bool:
            return not owner_alive(name, self.prefix)

        removed = self.cgroups.sweep(self.prefix, stale) if self.cgroups else set()
        for folder in self.root.glob(f"{self.prefix}-*"):
            if folder.is_dir() and stale(folder.name):
                try:
                    _remove_tree(folder)
                except OSError as exc:  # one folder that cannot go must not stop the backend
                    self.notes.append(f"a dead launcher's {folder.name} could not be removed: {exc}")
                    continue
                removed.add(folder.name)
        return len(removed)


def _init_pid(status_fd: int) -> int | None:
    """The host pid of the sandbox's init (its pid namespace's pid 1), from bwrap's ``--json-status-fd``
    (read once bwrap has exited, so the pipe holds all it wrote); None if it never started one."""
    chunks = []
    try:
        while chunk := os.read(status_fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(status_fd)
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        try:
            pid = json.loads(line).get("child-pid")
        except (ValueError, AttributeError):
            continue
        if isinstance(pid, int):
            return pid
    return None


def _wait_gone(init_pid: int | None, timeout_s: float = 5.0) -> None:
    """Wait until the sandbox's init is reaped: a dying pid namespace's init waits for every process in it
    to exit first, so then nothing of the sandbox runs. Bwrap itself, reaped at once, can end before its
    init has done so, and a ``run`` must not return while the sandbox's processes still run."""
    deadline = time.monotonic() + timeout_s
    while init_pid is not None and _running(init_pid) and time.monotonic() < deadline:
        time.sleep(0.005)


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and has not exited (a zombie has: its parent only has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
