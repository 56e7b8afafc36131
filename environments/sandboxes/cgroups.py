"""Per-sandbox cgroup limits (memory, pids, cpu) by direct writes, on cgroup v1 or the v2 unified hierarchy.

``detect()`` picks the hierarchy this process can use and returns a ``Hierarchy``; its ``create`` makes one
sandbox's group(s) and writes the limits, and ``sweep`` removes a crashed launcher's leftovers. Sandboxes
are always nested under the group this process is in, so a sandbox never escapes its launcher's limits.

- v1 (what the project's CPU machines have): one group per controller under this process's
  group in each of the ``memory``, ``pids`` and ``cpu`` hierarchies, which must accept ``mkdir`` and
  limit writes (root, or a delegated subtree).
- v2 (unified, one tree; ``/sys/fs/cgroup`` itself, or ``/sys/fs/cgroup/unified`` in hybrid mode): one
  group with ``memory.max``, ``memory.swap.max`` (0: no escape into swap), ``memory.oom.group``, ``pids.max``
  and ``cpu.max``. The parent is this process's group when it is *delegated to us*: it lists memory, pids
  and cpu in ``cgroup.controllers``, we may write it and its ``cgroup.subtree_control``, and those
  controllers are enabled for its children already, or can be (it is the root, or holds no processes;
  the kernel's "no internal processes" rule forbids enabling them on a group that has its own).
  Killing uses ``cgroup.kill`` when the kernel has it (5.14+), else SIGKILL in a loop; peak memory is
  ``memory.peak`` (5.19+; reset per run through a kept descriptor on 6.12+, else the peak since the
  sandbox was made), or ``memory.current`` at the end of the run without it.

Selection: a pure v2 mount uses v2; otherwise v1 when its three controllers are writable, else v2 on the
hybrid ``unified`` mount if it holds the controllers. ``explain()`` says why neither works; then the local
backend falls back to rlimits and says so in ``LocalBackend.notes``. Not done here: moving this process
into a leaf group to free its own group for delegation (start the launcher in a leaf instead, e.g. under
``systemd-run --scope -p Delegate=yes``), threaded cgroups, and the io or cpuset controllers.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from environments.sandboxes.protocol import SandboxError, SandboxLimits

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
UNIFIED = "unified"
_CFS_PERIOD_US = 100_000
_MIB = 1024 * 1024


class SandboxCgroup(Protocol):
    """One sandbox's cgroup(s), as the local backend uses them."""

    paths: tuple[Path, ...]

    def procs_files(self) -> tuple[str, ...]:
        """The files a child writes its own pid into (before exec) to join every group."""
        ...

    def pids(self) -> set[int]: ...

    def reset_peak(self) -> None:
        """Called before each run, so ``peak_memory_mb`` measures that run."""
        ...

    def peak_memory_mb(self) -> float: ...

    def oom_killed(self) -> bool: ...

    def kill(self, wait_s: float = 5.0) -> bool:
        """SIGKILL every process in the group(s); False if some survived ``wait_s``."""
        ...

    def remove(self) -> None:
        """Kill what is left and remove the group(s); raise ``SandboxError`` if they stay."""
        ...


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _proc_lines(proc: Path) -> list[tuple[str, str, str]]:
    try:
        lines = proc.read_text().splitlines()
    except OSError:
        return []
    return [tuple(line.split(":", 2)) for line in lines if line.count(":") >= 2]  # type: ignore[misc]


# --- v1 ---------------------------------------------------------------------------------------------------


def _v1_parents(root: Path, proc: Path) -> dict[str, Path] | None:
    found: dict[str, Path] = {}
    for _, controllers, path in _proc_lines(proc):
        for controller in controllers.split(","):
            if controller in CONTROLLERS:
                found[controller] = root / controller / path.lstrip("/")
    if set(found) != set(CONTROLLERS):
        return None
    if not all((p / "cgroup.procs").is_file() and os.access(p, os.W_OK) for p in found.values()):
        return None
    return found


@dataclass(frozen=True, slots=True)
class Cgroup:
    """One sandbox's v1 groups, one per controller (memory, pids, cpu)."""

    paths: tuple[Path, ...]

    @classmethod
    def create(
        cls,
        name: str,
        limits: SandboxLimits,
        *,
        extra_processes: int,
        root: Path = CGROUP_ROOT,
        proc: Path = PROC_SELF_CGROUP,
    ) -> Cgroup | None:
        """Make the groups and write the limits; ``extra_processes`` is headroom for the launcher's own
        helper processes (bwrap and its init) on top of ``limits.max_processes``."""
        parents = _v1_parents(root, proc)
        return None if parents is None else _create_v1(parents, name, limits, extra_processes)

    def procs_files(self) -> tuple[str, ...]:
        return tuple(str(p / "cgroup.procs") for p in self.paths)

    def pids(self) -> set[int]:
        return _pids_in(self.paths)

    def reset_peak(self) -> None:
        _write(self.paths[0] / "memory.max_usage_in_bytes", "0")

    def peak_memory_mb(self) -> float:
        """Peak memory charged to the group since ``reset_peak`` (resident pages plus page cache/tmpfs)."""
        return int((self.paths[0] / "memory.max_usage_in_bytes").read_text()) / _MIB

    def oom_killed(self) -> bool:
        """Whether the memory limit killed a process (v1 ``memory.oom_control`` counter, or a hit limit)."""
        memory = self.paths[0]
        try:
            control = (memory / "memory.oom_control").read_text()
            failcnt = int((memory / "memory.failcnt").read_text())
        except OSError:
            return False
        kills = [int(line.split()[1]) for line in control.splitlines() if line.startswith("oom_kill ")]
        return bool(kills[0]) if kills else failcnt > 0

    def kill(self, wait_s: float = 5.0) -> bool:
        return kill_all(self.paths, wait_s)

    def remove(self) -> None:
        self.kill()
        stuck = [path for path in self.paths if not _rmdir_quietly(path)]
        if stuck:
            raise SandboxError(f"could not remove cgroups {stuck}; a process in them survived SIGKILL")


# --- v2 ---------------------------------------------------------------------------------------------------


def _v2_parent(mount: Path, proc: Path) -> tuple[Path | None, str]:
    """This process's v2 group if sandboxes can be made under it, else None and the reason."""
    own = [path for hierarchy, controllers, path in _proc_lines(proc) if hierarchy == "0" and not controllers]
    if not own:
        return None, f"{proc} lists no cgroup v2 group (no '0::/path' line)"
    group = mount / own[0].lstrip("/")
    if not (group / "cgroup.procs").is_file():
        return None, f"{group} is not a cgroup v2 group (no cgroup.procs)"
    missing = [c for c in CONTROLLERS if c not in _read(group / "cgroup.controllers").split()]
    if missing:
        return None, f"{group}: controllers {missing} are not delegated to it (see its cgroup.controllers)"
    if _read(group / "cgroup.type").strip() not in ("", "domain"):
        return None, f"{group} is a threaded cgroup; sandboxes need a domain group"
    control = group / "cgroup.subtree_control"
    if not (os.access(group, os.W_OK) and os.access(control, os.W_OK)):
        return None, f"{group} is not writable by this user; delegate it (chown) or run as root"
    enabled = set(_read(control).split())
    is_root = not (group / "cgroup.type").exists()  # the root cgroup has no cgroup.type
    if set(CONTROLLERS) <= enabled or is_root or not _read(group / "cgroup.procs").split():
        return group, ""
    return None, (
        f"{group} holds processes (this launcher's among them), so the kernel will not enable "
        f"{'/'.join(CONTROLLERS)} for its children; start the launcher in a leaf of a delegated subtree "
        "whose own subtree_control enables them (e.g. systemd-run --scope -p Delegate=yes)"
    )


def _has(child: Path, parent: Path, name: str) -> bool:
    """Whether the kernel offers interface file ``name``: a new group has it, so does a non-root parent."""
    return (child / name).exists() or (parent / name).exists()


@dataclass(slots=True)
class CgroupV2:
    """One sandbox's group in the unified hierarchy."""

    paths: tuple[Path, ...]
    parent: Path
    _peak_fd: list[int] = field(default_factory=list, repr=False)

    @property
    def path(self) -> Path:
        return self.paths[0]

    @classmethod
    def create(cls, parent: Path, name: str, limits: SandboxLimits, *, extra_processes: int) -> CgroupV2:
        enabled = set(_read(parent / "cgroup.subtree_control").split())
        if not set(CONTROLLERS) <= enabled:
            _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS))
        path = parent / name
        path.mkdir()
        try:
            _write(path / "memory.max", str(limits.memory_mb * _MIB))
            if _has(path, parent, "memory.swap.max"):  # no escape into swap
                _write(path / "memory.swap.max", "0")
            if _has(path, parent, "memory.oom.group"):  # an OOM kill takes the whole sandbox
                _write(path / "memory.oom.group", "1")
            _write(path / "pids.max", str(limits.max_processes + extra_processes))
            quota = max(1000, int(limits.cpus * _CFS_PERIOD_US))
            _write(path / "cpu.max", f"{quota} {_CFS_PERIOD_US}")
        except OSError:
            _rmdir_quietly(path)
            raise
        return cls((path,), parent)

    def procs_files(self) -> tuple[str, ...]:
        return (str(self.path / "cgroup.procs"),)

    def _tree(self) -> tuple[Path, ...]:
        """The group and any groups made inside it, deepest first."""
        found = [Path(base) for base, _, _ in os.walk(self.path)]
        return tuple(sorted(found, key=lambda p: len(p.parts), reverse=True))

    def pids(self) -> set[int]:
        return _pids_in(self._tree())

    def _close_peak(self) -> None:
        while self._peak_fd:
            os.close(self._peak_fd.pop())

    def reset_peak(self) -> None:
        """Open ``memory.peak`` and write to it: on 6.12+ that resets the peak for reads through this
        descriptor; older kernels refuse the write and the peak counts from the group's creation."""
        self._close_peak()
        peak = self.path / "memory.peak"
        if not peak.exists():
            return
        fd = os.open(peak, os.O_RDWR)
        try:
            os.write(fd, b"reset\n")
        except OSError:
            pass
        self._peak_fd.append(fd)

    def peak_memory_mb(self) -> float:
        if self._peak_fd:
            return int(os.pread(self._peak_fd[0], 64, 0).split()[0]) / _MIB
        for name in ("memory.peak", "memory.current"):
            text = _read(self.path / name).strip()
            if text:
                return int(text) / _MIB
        return 0.0

    def oom_killed(self) -> bool:
        """Whether the memory limit killed a process (``memory.events``: oom_kill or oom_group_kill)."""
        events = dict(line.split() for line in _read(self.path / "memory.events").splitlines() if " " in line)
        return any(int(events.get(key, "0")) > 0 for key in ("oom_kill", "oom_group_kill"))

    def kill(self, wait_s: float = 5.0) -> bool:
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            try:
                _write(kill_file, "1")
            except OSError:
                pass
        return kill_all(self._tree(), wait_s)

    def remove(self) -> None:
        self._close_peak()
        self.kill()
        stuck = [path for path in self._tree() if not _rmdir_quietly(path)]
        if stuck:
            raise SandboxError(f"could not remove cgroups {stuck}; a process in them survived SIGKILL")


# --- selection --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """The cgroup hierarchy sandboxes are made in: v1 (``parents`` per controller) or v2 (``{"unified":
    delegated group}``)."""

    version: int
    parents: dict[str, Path]

    def create(self, name: str, limits: SandboxLimits, *, extra_processes: int) -> SandboxCgroup:
        """One sandbox's group(s) with its limits written; ``extra_processes`` is headroom for the
        launcher's helper processes (bwrap and its init) on top of ``limits.max_processes``."""
        if self.version == 2:
            return CgroupV2.create(self.parents[UNIFIED], name, limits, extra_processes=extra_processes)
        return _create_v1(self.parents, name, limits, extra_processes)

    def sweep(self, prefix: str, stale: Callable[[str], bool]) -> set[str]:
        """Kill and remove groups named ``<prefix>-*`` for which ``stale(name)``; return their names."""
        names = {
            child.name
            for parent in self.parents.values()
            for child in parent.glob(f"{prefix}-*")
            if child.is_dir() and stale(child.name)
        }
        for name in names:
            groups = [p / name for p in self.parents.values() if (p / name).is_dir()]
            if self.version == 2:
                box = CgroupV2(tuple(groups), self.parents[UNIFIED])
                box.kill()
                groups = list(box._tree())
            else:
                kill_all(tuple(groups))
            for path in groups:
                _rmdir_quietly(path)
        return names


def _create_v1(parents: dict[str, Path], name: str, limits: SandboxLimits, extra: int) -> Cgroup:
    made: list[Path] = []
    try:
        for controller in CONTROLLERS:
            path = parents[controller] / name
            path.mkdir()
            made.append(path)
        memory, pids, cpu = made
        limit = str(limits.memory_mb * _MIB)
        _write(memory / "memory.limit_in_bytes", limit)
        if (memory / "memory.memsw.limit_in_bytes").exists():  # no escape into swap
            _write(memory / "memory.memsw.limit_in_bytes", limit)
        _write(pids / "pids.max", str(limits.max_processes + extra))
        _write(cpu / "cpu.cfs_period_us", str(_CFS_PERIOD_US))
        _write(cpu / "cpu.cfs_quota_us", str(max(1000, int(limits.cpus * _CFS_PERIOD_US))))
    except OSError:
        for path in reversed(made):
            _rmdir_quietly(path)
        raise
    return Cgroup(tuple(made))


def _detect(root: Path, proc: Path) -> tuple[Hierarchy | None, str]:
    if (root / "cgroup.controllers").is_file():  # a pure v2 mount
        parent, why = _v2_parent(root, proc)
        return (Hierarchy(2, {UNIFIED: parent}) if parent else None), why
    v1 = _v1_parents(root, proc)
    if v1 is not None:
        return Hierarchy(1, v1), ""
    why_v1 = f"cgroup v1 controllers {'/'.join(CONTROLLERS)} are not all mounted and writable under {root}"
    if (root / UNIFIED / "cgroup.controllers").is_file():  # hybrid mode
        parent, why = _v2_parent(root / UNIFIED, proc)
        if parent:
            return Hierarchy(2, {UNIFIED: parent}), ""
        return None, f"{why_v1}; cgroup v2: {why}"
    return None, why_v1


def detect(root: Path = CGROUP_ROOT, proc: Path = PROC_SELF_CGROUP) -> Hierarchy | None:
    """The hierarchy sandboxes can be made in here, or None (see ``explain``)."""
    return _detect(root, proc)[0]


def explain(root: Path = CGROUP_ROOT, proc: Path = PROC_SELF_CGROUP) -> str:
    """Why ``detect`` finds nothing usable ("" when it does)."""
    return _detect(root, proc)[1]


def own_parents(root: Path = CGROUP_ROOT, proc: Path = PROC_SELF_CGROUP) -> dict[str, Path] | None:
    """The groups sandboxes are made under: per v1 controller, or ``{"unified": group}`` on v2."""
    hierarchy = detect(root, proc)
    return dict(hierarchy.parents) if hierarchy else None


def available(root: Path = CGROUP_ROOT, proc: Path = PROC_SELF_CGROUP) -> bool:
    return detect(root, proc) is not None


def sweep(
    prefix: str, stale: Callable[[str], bool], root: Path = CGROUP_ROOT, proc: Path = PROC_SELF_CGROUP
) -> set[str]:
    """Kill and remove groups named ``<prefix>-*`` under this process's groups for which ``stale(name)``;
    return their names."""
    hierarchy = detect(root, proc)
    return hierarchy.sweep(prefix, stale) if hierarchy else set()


# --- shared -----------------------------------------------------------------------------------------------


def _pids_in(paths: tuple[Path, ...]) -> set[int]:
    found: set[int] = set()
    for path in paths:
        try:
            found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        except OSError:
            continue
    return found


def kill_all(paths: tuple[Path, ...], wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        alive = _pids_in(paths)
        if not alive:
            return True
        if time.monotonic() > deadline:
            return False
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _rmdir_quietly(path: Path) -> bool:
    for _ in range(50):  # the kernel lets go of a just-emptied group a moment later
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.02)
    return False
