"""The multi-node tests' nodes share nothing but what real nodes share: checked on one node's disk alone."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.raynodes import NodeDisk, closed_ancestor, on_own_disk


@pytest.fixture
def machine() -> Path:
    root = Path(tempfile.mkdtemp(prefix="nodedisk", dir="/var/tmp"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def on_node(disk: NodeDisk, script: str, stage: Path) -> subprocess.CompletedProcess:
    argv = on_own_disk(disk, ["sh", "-c", script], stage)
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_a_node_sees_its_own_empty_tmp_and_home_and_its_provisioned_files(machine: Path, tmp_path: Path):
    (tmp_path / "host-only").write_text("the host's")
    seed = machine / "seed"
    (seed / "models").mkdir(parents=True)
    (seed / "models" / "built").write_text("built on this node")
    home, cache = machine / "home", machine / "cache"
    disk = NodeDisk(private=(Path("/tmp"), home, cache), seeds=((seed, cache),))
    script = f"ls -A /tmp | wc -l; cat {cache}/models/built; echo mine > {home}/file; echo mine > /tmp/file"
    node = on_node(disk, script, machine / "stage")
    assert node.returncode == 0, node.stderr
    assert node.stdout.splitlines() == ["0", "built on this node"]
    assert not (home / "file").exists() and not Path("/tmp/file").exists()  # gone with the node
    assert not cache.exists() or not any(cache.iterdir())
    assert (tmp_path / "host-only").read_text() == "the host's"


def test_a_non_root_node_reaches_an_install_under_a_folder_closed_to_it(machine: Path):
    """As this machine's interpreter under root's home: a node image would install it readable by all."""
    closed = machine / "root-home"
    install = closed / "tools"
    install.mkdir(parents=True)
    tool = install / "hello"
    tool.write_text("#!/bin/sh\necho hello\n")
    tool.chmod(0o755)
    closed.chmod(0o700)
    assert closed_ancestor(install) == closed
    disk = NodeDisk(private=(Path("/tmp"),), uid=1000, installs=(install,))
    node = on_node(disk, f"id -u; {tool}", machine / "stage")
    assert node.returncode == 0, node.stderr
    assert node.stdout.splitlines() == ["1000", "hello"]
    bare = on_node(NodeDisk(private=(Path("/tmp"),), uid=1000), str(tool), machine / "stage2")
    assert bare.returncode != 0 and "Permission denied" in bare.stderr


def test_a_seed_inside_a_private_folder_is_refused():
    with pytest.raises(ValueError, match="stage it elsewhere"):
        NodeDisk(private=(Path("/tmp"),), seeds=((Path("/tmp/built"), Path("/tmp/cache")),))
