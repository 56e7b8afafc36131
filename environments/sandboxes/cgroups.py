"""Per-sandbox cgroup v1 limits (memory, pids, cpu) by direct writes, as this kind of machine allows.

Measured on the project's machines (``SANDBOX.md``): systemd and cgroup v2 delegation are unavailable,
cgroup v1 hierarchies accept ``mkdir`` and limit writes from root. Each sandbox gets one group per
controller, nested under the group this process is in, so a sandbox never escapes its launcher's own
limits. ``available()`` says whether that works here; without it the local backend falls back to
rlimits (address space for memory; no per-sandbox process limit) and says so in ``LocalBackend.notes``.
cgroup v2 is not implemented yet.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from environments.sandboxes.protocol import SandboxError, SandboxLimits

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
_CFS_PERIOD_US = 100_000
_MIB = 1024 * 1024


def own_parents(root: Path = CGROUP_ROOT) -> dict[str, Path] | None:
    """This process's group in each v1 controller, or None when a controller is missing or read-only."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    found: dict[str, Path] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if controller in CONTROLLERS:
                found[controller] = root / controller / path.lstrip("/")
    if set(found) != set(CONTROLLERS):
        return None
    if not all((p / "cgroup.procs").is_file() and os.access(p, os.W_OK) for p in found.values()):
        return None
    return found


def available(root: Path = CGROUP_ROOT) -> bool:
    return own_parents(root) is not None


def _write(path: Path, value: str) -> None:
    path.write_text(value)


@dataclass(frozen=True, slots=True)
class Cgroup:
    """One sandbox's groups, one per controller."""

    paths: tuple[Path, ...]

    @classmethod
    def create(
        cls, name: str, limits: SandboxLimits, *, extra_processes: int, root: Path = CGROUP_ROOT
    ) -> Cgroup | None:
        """Make the groups and write the limits; ``extra_processes`` is headroom for the launcher's own
        helper processes (bwrap and its init) on top of ``limits.max_processes``."""
        parents = own_parents(root)
        if parents is None:
            return None
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
            _write(pids / "pids.max", str(limits.max_processes + extra_processes))
            _write(cpu / "cpu.cfs_period_us", str(_CFS_PERIOD_US))
            _write(cpu / "cpu.cfs_quota_us", str(max(1000, int(limits.cpus * _CFS_PERIOD_US))))
        except OSError:
            for path in reversed(made):
                _rmdir_quietly(path)
            raise
        return cls(tuple(made))

    def procs_files(self) -> tuple[str, ...]:
        """The files a child writes its own pid into (before exec) to join every group."""
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
        """SIGKILL every process in the groups until none is left; False if some survived ``wait_s``."""
        return kill_all(self.paths, wait_s)

    def remove(self) -> None:
        self.kill()
        stuck = [path for path in self.paths if not _rmdir_quietly(path)]
        if stuck:
            raise SandboxError(f"could not remove cgroups {stuck}; a process in them survived SIGKILL")


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


def sweep(prefix: str, stale: Callable[[str], bool], root: Path = CGROUP_ROOT) -> set[str]:
    """Kill and remove groups named ``<prefix>-*`` under this process's groups for which ``stale(name)``;
    return their names."""
    parents = own_parents(root)
    if parents is None:
        return set()
    names = {
        child.name
        for parent in parents.values()
        for child in parent.glob(f"{prefix}-*")
        if child.is_dir() and stale(child.name)
    }
    for name in names:
        paths = tuple(parents[c] / name for c in CONTROLLERS if (parents[c] / name).is_dir())
        kill_all(paths)
        for path in paths:
            _rmdir_quietly(path)
    return names
