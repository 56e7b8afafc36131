"""The Docker backend against a fake of its narrow API (no engine or base image is available here); the
fake records each call, so these tests pin what the backend asks the engine for."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from environments.sandboxes.docker import (
    HOST_LABEL,
    IMAGE_TAG,
    PREFIX_LABEL,
    DockerBackend,
    build_image,
    extract_workspace,
    workspace_tar,
)
from environments.sandboxes.protocol import Forward, SandboxError, SandboxLimits, owner_tag

LIMITS = SandboxLimits(memory_mb=512, max_processes=32, cpus=1.5)


def tar_of(files: dict[str, bytes], links: dict[str, str] | None = None, top: str = "workspace") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(top)
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buffer.getvalue()


class FakeContainer:
    def __init__(self, name: str, labels: dict[str, str], exec_result=(0, b"ok\n")) -> None:
        self.name, self.labels = name, labels
        self.exec_result = exec_result
        self.archives: list[tuple[str, bytes]] = []
        self.execs: list[dict[str, Any]] = []
        self.removed = 0
        self.put_ok = True
        self.out_tar = tar_of({"out.txt": b"made\n"})

    def put_archive(self, path: str, data: bytes) -> bool:
        self.archives.append((path, data))
        return self.put_ok

    def exec_run(self, cmd, *, workdir, environment, user):
        self.execs.append({"cmd": cmd, "workdir": workdir, "environment": environment, "user": user})
        return self.exec_result

    def get_archive(self, path: str):
        return iter([self.out_tar[:100], self.out_tar[100:]]), {"name": path}

    def stats(self, *, stream: bool, one_shot: bool) -> dict[str, Any]:
        return {"memory_stats": {"max_usage": 64 * 1024 * 1024}}

    def remove(self, *, force: bool) -> None:
        assert force
        self.removed += 1


class FakeContainers:
    def __init__(self) -> None:
        self.created: list[tuple[str, list[str], dict[str, Any]]] = []
        self.existing: list[FakeContainer] = []

    def run(self, image: str, command: list[str], **kwargs: Any) -> FakeContainer:
        self.created.append((image, command, kwargs))
        container = FakeContainer(kwargs["name"], kwargs["labels"])
        self.existing.append(container)
        return container

    def list(self, *, all: bool, filters: dict[str, Any]) -> list[FakeContainer]:
        key, value = filters["label"].split("=", 1)
        return [c for c in self.existing if c.labels.get(key) == value and not c.removed]


class ImageNotFound(Exception):
    """Named as docker-py's, which is how ``TaskImages`` tells a missing image from a broken engine."""


class FakeImages:
    def __init__(self) -> None:
        self.builds: list[dict[str, Any]] = []
        # What a set-up engine holds: the Debian base, the shared sandbox image, one official image.
        self.tags: set[str] = {"harness-adapters/debian-base:bookworm", "harness-adapters/sandbox:latest"}
        self.tags.add("debian:12")
        self.fail_with: Exception | None = None

    def build(self, **kwargs: Any) -> None:
        self.builds.append(kwargs)
        if self.fail_with is not None:
            raise self.fail_with
        self.tags.add(kwargs["tag"])

    def get(self, name: str) -> str:
        if name not in self.tags:
            raise ImageNotFound(f"No such image: {name}")
        return name


class FakeDocker:
    def __init__(self) -> None:
        self.containers = FakeContainers()
        self.images = FakeImages()


@pytest.fixture
def api() -> FakeDocker:
    return FakeDocker()


def test_a_sandbox_is_a_container_without_network_privileges_or_host_folders(api, workspace):
    box = DockerBackend(api, prefix="hsbx").create(workspace, LIMITS)
    image, command, kwargs = api.containers.created[0]
    assert (image, command) == (IMAGE_TAG, ["sleep", "infinity"])
    assert kwargs["network_mode"] == "none"
    assert kwargs["cap_drop"] == ["ALL"] and kwargs["security_opt"] == ["no-new-privileges"]
    assert kwargs["user"] == "1000:1000" and kwargs["init"] is True
    assert kwargs["mem_limit"] == kwargs["memswap_limit"] == "512m"
    assert kwargs["pids_limit"] >= 32 and kwargs["nano_cpus"] == 1_500_000_000
    assert kwargs["volumes"] == {}
    assert kwargs["labels"] == {PREFIX_LABEL: "hsbx", HOST_LABEL: socket.gethostname()}
    assert box.name == kwargs["name"] and box.name.startswith(f"hsbx-{owner_tag()}-")


def test_the_workspace_goes_in_as_a_tar_owned_by_the_sandbox_user(api, workspace):
    box = DockerBackend(api, prefix="hsbx").create(workspace, LIMITS)
    path, data = box.container.archives[0]
    assert path == "/workspace"
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert set(members) == {"hello.txt", "pkg", "pkg/mod.py"}
    assert {(m.uid, m.gid) for m in members.values()} == {(1000, 1000)}


def test_run_wraps_the_command_in_a_time_limit_and_reports_its_result(api, workspace):
    box = DockerBackend(api, prefix="hsbx").create(workspace, LIMITS)
    result = box.run("echo ok", timeout_s=2.5, env={"GREETING": "yo"})
    call = box.container.execs[0]
    assert call["cmd"] == ["timeout", "-k", "1", "3", "bash", "-c", "echo ok"]
    assert call["workdir"] == "/workspace" and call["user"] == "1000:1000"
    assert call["environment"]["GREETING"] == "yo" and call["environment"]["HOME"] == "/workspace"
    assert (result.exit_code, result.timed_out, result.output_tail, result.peak_rss_mb) == (
        0,
        False,
        "ok\n",
        64,
    )


def test_a_quick_exit_124_is_a_failure_not_a_timeout(api, workspace):
    box = DockerBackend(api, prefix="hsbx").create(workspace, LIMITS)
    box.container.exec_result = (124, b"")
    result = box.run("exit 124", timeout_s=30)
    assert (result.exit_code, result.timed_out) == (124, False)


def test_collect_unpacks_the_workspace_and_drops_links_that_escape(api, workspace, tmp_path):
    box = DockerBackend(api, prefix="hsbx").create(workspace, LIMITS)
    box.container.out_tar = tar_of(
        {"out.txt": b"made\n", "sub/a.py": b"A = 1\n"}, links={"inside": "out.txt", "escape": "/etc/passwd"}
    )
    out = box.collect(tmp_path / "collected")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "inside",
        "out.txt",
        "sub",
        "sub/a.py",
    ]
    assert (out / "inside").is_symlink() and (out / "out.txt").read_bytes() == b"made\n"


def test_extract_refuses_paths_that_climb_out(tmp_path):
    out = extract_workspace([tar_of({"../../evil.txt": b"x", "ok.txt": b"y"})], tmp_path / "dest")
    assert [p.name for p in out.iterdir()] == ["ok.txt"]
    assert not (tmp_path / "evil.txt").exists()


def test_destroy_removes_the_container_once(api, workspace):
    box = DockerBackend(api, prefix="hsbx").create(workspace, LIMITS)
    box.destroy()
    box.destroy()
    assert box.container.removed == 1
    with pytest.raises(SandboxError, match="destroyed"):
        box.run("true", timeout_s=1)


def test_a_failed_copy_in_removes_the_container(api, workspace, monkeypatch):
    monkeypatch.setattr(FakeContainer, "put_archive", lambda self, path, data: False)
    with pytest.raises(SandboxError, match="could not copy the workspace"):
        DockerBackend(api, prefix="hsbx").create(workspace, LIMITS)
    assert api.containers.existing[0].removed == 1


def test_sweep_removes_only_dead_owners_containers_of_this_host_and_prefix(api):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    dead_tag = owner_tag(child.pid)
    child.kill()
    child.wait()
    host = socket.gethostname()
    mine = {PREFIX_LABEL: "hsbx", HOST_LABEL: host}
    dead = FakeContainer(f"hsbx-{dead_tag}-aa", mine)
    live = FakeContainer(f"hsbx-{owner_tag(os.getpid())}-bb", mine)
    elsewhere = FakeContainer(f"hsbx-{dead_tag}-cc", {PREFIX_LABEL: "hsbx", HOST_LABEL: "other-host"})
    other_prefix = FakeContainer(f"other-{dead_tag}-dd", {PREFIX_LABEL: "other", HOST_LABEL: host})
    api.containers.existing += [dead, live, elsewhere, other_prefix]
    backend = DockerBackend(api, prefix="hsbx")
    assert backend.swept == 1
    assert [c.removed for c in (dead, live, elsewhere, other_prefix)] == [1, 0, 0, 0]


def test_a_forward_mounts_its_socket_copies_the_relay_and_starts_it_before_the_command(
    api, workspace, tmp_path
):
    forward = Forward(8000, tmp_path / "g.sock")
    box = DockerBackend(api, prefix="hsbx").create(workspace, LIMITS, forwards=(forward,))
    volumes = api.containers.created[0][2]["volumes"]
    assert volumes == {str(tmp_path / "g.sock"): {"bind": "/run/forward/8000.sock", "mode": "rw"}}
    path, data = box.container.archives[1]
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert (path, tar.getnames()) == ("/run/forward", ["relay.py"])
    box.run("echo ok", timeout_s=5)
    cmd = box.container.execs[0]["cmd"]
    assert "python3 /run/forward/relay.py" in cmd[-3] and "8000:/run/forward/8000.sock" in cmd[-3]
    assert cmd[-1] == "echo ok"


def test_every_run_is_followed_by_a_sweep_of_the_sandbox_users_processes(api, workspace):
    box = DockerBackend(api, prefix="hsbx").create(workspace, LIMITS)
    box.run("setsid sleep 30 &", timeout_s=5)
    run, sweep = box.container.execs
    assert sweep["cmd"][:2] == ["bash", "-c"] and "kill -s $signal" in sweep["cmd"][2]
    assert sweep["user"] == run["user"] == "1000:1000"  # the same user: it can kill what the run left
    assert '" 1 $keep $$ "' in sweep["cmd"][2]  # never the init, its keeper or itself


def test_the_image_is_built_offline_from_the_repos_dockerfile(api):
    assert build_image(api, base="my/base:1") == IMAGE_TAG
    build = api.images.builds[0]
    assert build["pull"] is False and build["buildargs"] == {"BASE": "my/base:1"}
    dockerfile = Path(build["path"]) / "Dockerfile"
    assert dockerfile.is_file() and "ARG BASE" in dockerfile.read_text()


def test_workspace_tar_keeps_symlinks_as_links(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "link").symlink_to("a.txt")
    with tarfile.open(fileobj=io.BytesIO(workspace_tar(tmp_path))) as tar:
        link = tar.getmember("link")
    assert link.issym() and link.linkname == "a.txt"


def test_extra_binds_are_mounted_read_only_at_their_host_paths(api, workspace, tmp_path):
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    backend = DockerBackend(api, prefix="hsbx", extra_ro_binds=(tmp_path, tool, tmp_path))
    backend.create(workspace, LIMITS, forwards=(Forward(8000, tmp_path / "g.sock"),))
    assert api.containers.created[0][2]["volumes"] == {
        str(tmp_path): {"bind": str(tmp_path), "mode": "ro"},
        str(tool): {"bind": str(tool), "mode": "ro"},
        str(tmp_path / "g.sock"): {"bind": "/run/forward/8000.sock", "mode": "rw"},
    }


@pytest.mark.parametrize("bind", ["relative/path", "/no/such/folder-hsbx", "/", "/run"])
def test_extra_binds_must_exist_and_not_hide_the_sandboxes_own_folders(api, bind):
    with pytest.raises(ValueError, match="extra_ro_binds"):
        DockerBackend(api, prefix="hsbx", extra_ro_binds=(Path(bind),))


def test_extract_streams_and_turns_an_oversize_file_into_a_sparse_one(tmp_path):
    """A file above the limit is never kept in memory or written out: only its size survives."""
    archive = tar_of({"big.bin": b"\0" * 4096, "ok.txt": b"y"})
    chunks = (archive[i : i + 700] for i in range(0, len(archive), 700))
    out = extract_workspace(chunks, tmp_path / "dest", max_file_bytes=1024)
    assert (out / "ok.txt").read_bytes() == b"y"
    assert (out / "big.bin").stat().st_size == 4096 and (out / "big.bin").stat().st_blocks == 0
