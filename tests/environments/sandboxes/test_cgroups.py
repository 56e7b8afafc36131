"""cgroup selection and the v2 (unified) logic, against fake cgroupfs trees in tmp_path.

A plain folder stands in for cgroupfs: ``mkdir`` makes an empty group and writes create the interface
files, so these tests check what is written where, not what the kernel enforces (``test_local.py`` does
that on the v1 machines we have). No process is ever put into a fake group.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.sandboxes import cgroups
from environments.sandboxes.protocol import SandboxLimits

LIMITS = SandboxLimits(memory_mb=256, max_processes=16, cpus=0.5)
ALL = "cpuset cpu io memory hugetlb pids rdma misc"


def group(path: Path, *, controllers: str = "cpu memory pids", enabled: str = "", procs: str = "") -> Path:
    """A fake non-root v2 group (it has cgroup.type) with the given interface files."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "cgroup.type").write_text("domain\n")
    (path / "cgroup.controllers").write_text(controllers + "\n")
    (path / "cgroup.subtree_control").write_text(enabled + "\n")
    (path / "cgroup.procs").write_text(procs)
    return path


@pytest.fixture
def v2(tmp_path: Path) -> tuple[Path, Path]:
    """A pure v2 mount whose launcher group /job is delegated with memory, pids and cpu enabled."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text(ALL + "\n")
    (root / "cgroup.subtree_control").write_text("cpu memory pids\n")
    (root / "cgroup.procs").write_text("1\n")
    job = group(root / "job", enabled="cpu memory pids")
    for name in ("memory.swap.max", "memory.oom.group", "cgroup.kill"):  # what this kernel offers
        (job / name).write_text("max\n")
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("0::/job\n")
    return root, proc


def test_a_unified_mount_selects_v2_under_the_launchers_delegated_group(v2):
    root, proc = v2
    hierarchy = cgroups.detect(root, proc)
    assert hierarchy is not None and hierarchy.version == 2
    assert hierarchy.parents == {"unified": root / "job"}
    assert cgroups.own_parents(root, proc) == {"unified": root / "job"}
    assert cgroups.explain(root, proc) == ""


def test_v2_create_writes_every_limit_into_one_group(v2):
    root, proc = v2
    box = cgroups.detect(root, proc).create("hsbx-1-a", LIMITS, extra_processes=2)
    path = root / "job" / "hsbx-1-a"
    assert box.paths == (path,)
    assert box.procs_files() == (str(path / "cgroup.procs"),)
    written = {name: (path / name).read_text() for name in ("memory.max", "memory.swap.max", "pids.max")}
    assert written == {"memory.max": str(256 * 1024 * 1024), "memory.swap.max": "0", "pids.max": "18"}
    assert (path / "cpu.max").read_text() == "50000 100000"
    assert (path / "memory.oom.group").read_text() == "1"


def test_v2_without_swap_accounting_skips_swap_max(v2):
    root, proc = v2
    (root / "job" / "memory.swap.max").unlink()
    cgroups.detect(root, proc).create("hsbx-1-b", LIMITS, extra_processes=0)
    assert not (root / "job" / "hsbx-1-b" / "memory.swap.max").exists()


def test_v2_enables_the_controllers_for_children_when_the_parent_may(tmp_path):
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text(ALL + "\n")
    (root / "cgroup.subtree_control").write_text("\n")
    (root / "cgroup.procs").write_text("1\n")
    proc = tmp_path / "proc"
    proc.write_text("0::/\n")  # the real root: exempt from the no-internal-processes rule
    hierarchy = cgroups.detect(root, proc)
    assert hierarchy is not None and hierarchy.parents == {"unified": root}
    hierarchy.create("hsbx-1-c", LIMITS, extra_processes=0)
    assert (root / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"


def test_v2_refuses_a_group_with_processes_whose_children_get_no_controllers(v2):
    root, proc = v2
    group(root / "job", enabled="", procs="4242\n")
    assert cgroups.detect(root, proc) is None
    assert "holds processes" in cgroups.explain(root, proc) and "Delegate=yes" in cgroups.explain(root, proc)
    group(root / "job", enabled="")  # no processes of its own: the launcher may enable them
    assert cgroups.detect(root, proc) is not None


def test_v2_refuses_a_group_missing_controllers_or_threaded(v2):
    root, proc = v2
    group(root / "job", controllers="cpu memory", enabled="cpu memory")
    assert cgroups.detect(root, proc) is None and "['pids']" in cgroups.explain(root, proc)
    group(root / "job", enabled="cpu memory pids")
    (root / "job" / "cgroup.type").write_text("threaded\n")
    assert cgroups.detect(root, proc) is None and "threaded" in cgroups.explain(root, proc)
    proc.write_text("12:pids:/job\n")
    assert "no '0::/path' line" in cgroups.explain(root, proc)


def test_v2_peak_memory_oom_and_kill_read_and_write_the_unified_files(v2):
    root, proc = v2
    box = cgroups.detect(root, proc).create("hsbx-1-d", LIMITS, extra_processes=0)
    path = root / "job" / "hsbx-1-d"
    (path / "memory.current").write_text(str(3 * 1024 * 1024) + "\n")
    assert box.peak_memory_mb() == 3.0  # no memory.peak (kernel < 5.19): the usage at the end
    (path / "memory.peak").write_text(str(5 * 1024 * 1024) + "\n")
    box.reset_peak()  # kept descriptor: later reads see what the kernel reports through it
    (path / "memory.peak").write_text(str(7 * 1024 * 1024) + "\n")
    assert box.peak_memory_mb() == 7.0
    (path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\noom_group_kill 0\n")
    assert not box.oom_killed()
    (path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert box.oom_killed()
    (path / "cgroup.kill").write_text("0")
    assert box.kill(wait_s=0.1) and (path / "cgroup.kill").read_text() == "1"
    assert box.pids() == set()
    box._close_peak()


def test_v2_sweep_removes_only_stale_groups_with_the_prefix(v2):
    root, proc = v2
    for name in ("hsbx-1-dead", "hsbx-2-live", "other-1-dead"):
        (root / "job" / name).mkdir()
    swept = cgroups.sweep("hsbx", lambda name: name.endswith("dead"), root, proc)
    assert swept == {"hsbx-1-dead"}
    assert sorted(p.name for p in (root / "job").iterdir() if p.is_dir()) == ["hsbx-2-live", "other-1-dead"]


def fake_v1(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    for controller in ("memory", "pids", "cpu", "cpuacct"):
        (root / controller / "job").mkdir(parents=True)
        (root / controller / "job" / "cgroup.procs").write_text("")
    (root / "unified").mkdir()
    (root / "unified" / "cgroup.controllers").write_text("\n")  # hybrid: no controllers on the v2 side
    proc = tmp_path / "proc"
    proc.write_text("9:pids:/job\n4:memory:/job\n2:cpu,cpuacct:/job\n0::/job\n")
    return root, proc


def test_a_v1_tree_selects_v1_with_one_group_per_controller(tmp_path):
    root, proc = fake_v1(tmp_path)
    hierarchy = cgroups.detect(root, proc)
    assert hierarchy is not None and hierarchy.version == 1
    assert hierarchy.parents == {c: root / c / "job" for c in ("pids", "memory", "cpu")}
    box = hierarchy.create("hsbx-1-e", LIMITS, extra_processes=2)
    assert box.paths == tuple(root / c / "job" / "hsbx-1-e" for c in ("memory", "pids", "cpu"))
    assert (root / "pids" / "job" / "hsbx-1-e" / "pids.max").read_text() == "18"
    assert (root / "cpu" / "job" / "hsbx-1-e" / "cpu.cfs_quota_us").read_text() == "50000"


def test_hybrid_mode_without_usable_v1_or_v2_controllers_explains_both(tmp_path):
    root, proc = fake_v1(tmp_path)
    proc.write_text("9:pids:/job\n2:cpu,cpuacct:/job\n0::/job\n")  # no memory hierarchy
    group(root / "unified" / "job", controllers="")
    assert cgroups.detect(root, proc) is None
    why = cgroups.explain(root, proc)
    assert "cgroup v1 controllers" in why and "cgroup v2" in why and "not delegated" in why


def test_hybrid_mode_falls_back_to_a_unified_group_that_has_the_controllers(tmp_path):
    root, proc = fake_v1(tmp_path)
    proc.write_text("0::/job\n")
    group(root / "unified" / "job", enabled="cpu memory pids")
    hierarchy = cgroups.detect(root, proc)
    assert hierarchy is not None and hierarchy.version == 2
    assert hierarchy.parents == {"unified": root / "unified" / "job"}
