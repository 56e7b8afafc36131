"""Task images on a fake engine: one build per content digest, a failed build remembered as that task's
error, the sandbox layer, and how the Docker backend runs a placed task (work directory, mounts)."""

from __future__ import annotations

import io
import tarfile
import threading
from pathlib import Path

import pytest

from environments.sandboxes.docker import DockerBackend
from environments.sandboxes.images import TaskImageError, TaskImages, layer_dockerfile
from environments.sandboxes.protocol import SandboxLimits
from environments.tasks.placement import Mount, Placement, TaskImage
from tests.environments.sandboxes.test_docker import FakeDocker

IMAGE = TaskImage(
    {"Dockerfile": b"FROM debian:12\nRUN apt-get install -y jq\n"}, "line 2: RUN apt-get", "acme.jq"
)


class BuildFailed(Exception):
    def __init__(self, message: str, build_log: list[dict]) -> None:
        super().__init__(message)
        self.build_log = build_log


def files_of(build: dict) -> dict[str, bytes]:
    with tarfile.open(fileobj=build["fileobj"], mode="r") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def test_an_image_is_built_once_per_digest_then_found_in_the_engine():
    api, lines = FakeDocker(), []
    images = TaskImages(api, log=lines.append)
    tag = images.ensure(IMAGE, "/app")
    assert tag == TaskImages.tag(IMAGE, "/app") != TaskImages.tag(IMAGE, "/srv")
    task_build, layer_build = api.images.builds
    assert files_of(task_build) == IMAGE.context
    assert task_build["tag"] == f"harness-adapters/task:{IMAGE.digest[:24]}-task"
    assert task_build["network_mode"] == "none" and task_build["pull"] is False
    layer = files_of(layer_build)["Dockerfile"].decode()
    assert (
        layer.startswith(f"FROM {task_build['tag']}\n") and "W='/app'" in layer and "USER 1000:1000" in layer
    )
    assert lines[0].startswith("building the image of task acme.jq") and "RUN apt-get" in lines[0]
    assert lines[1].startswith(f"built {tag} for task acme.jq in ")
    assert images.ensure(IMAGE, "/app") == tag and len(api.images.builds) == 2  # cached in this process
    again = TaskImages(api, log=lines.append)  # a new process: the engine's tag is the cache
    assert again.ensure(IMAGE, "/app") == tag and len(api.images.builds) == 2 and again.built == {}


def test_a_failed_build_is_that_tasks_error_and_is_not_retried():
    api, lines = FakeDocker(), []
    api.images.fail_with = BuildFailed(
        "exit 100",
        [{"stream": "Step 2/2 : RUN apt-get install -y jq"}, {"error": "E: Unable to locate package jq"}],
    )
    images = TaskImages(api, log=lines.append)
    with pytest.raises(TaskImageError, match="task acme.jq: its Dockerfile did not build") as info:
        images.ensure(IMAGE, "/app")
    assert "Unable to locate package jq" in str(info.value) and "network='none'" in str(info.value)
    with pytest.raises(TaskImageError, match="Unable to locate package jq"):
        images.ensure(IMAGE, "/app")
    assert len(api.images.builds) == 1 and lines[-1].startswith("image of task acme.jq failed")
    api.images.fail_with = None
    other = TaskImage({"Dockerfile": b"FROM debian:12\nRUN true && touch /x\nUSER 0\n"}, "line 3: USER")
    assert images.ensure(other, "/app") == TaskImages.tag(other, "/app")  # the rest goes on


def test_concurrent_sessions_of_one_task_wait_for_one_build():
    api = FakeDocker()
    images = TaskImages(api, log=lambda _: None)
    threads = [threading.Thread(target=images.ensure, args=(IMAGE, "/app")) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(api.images.builds) == 2


def test_the_layer_refuses_a_workdir_it_cannot_quote():
    assert "W='/workspace'" in layer_dockerfile("base", "/workspace")
    with pytest.raises(ValueError, match="quotes"):
        layer_dockerfile("base", "/it's")


def test_a_placed_task_runs_its_own_image_at_its_workdir_with_private_mount_folders(tmp_path: Path):
    api = FakeDocker()
    backend = DockerBackend(api, prefix="hsbxi", mounts_root=tmp_path / "mounts")
    workspace = tmp_path / "ws"
    (workspace / ".harbor" / "tests").mkdir(parents=True)
    (workspace / ".harbor" / "tests" / "test.sh").write_text("exit 0\n")
    (workspace / "main.py").write_text("print(1)\n")
    placement = Placement(
        "/app", (Mount(".harbor/tests", "/tests"), Mount(".harbor/logs", "/logs", True)), IMAGE
    )
    box = backend.create(workspace, SandboxLimits(memory_mb=256), placement=placement)
    image, _, kwargs = api.containers.created[0]
    assert image == TaskImages.tag(IMAGE, "/app")
    binds = {v["bind"]: (Path(k), v["mode"]) for k, v in kwargs["volumes"].items()}
    tests_host, tests_mode = binds["/tests"]
    assert tests_mode == "ro" and (tests_host / "test.sh").read_text() == "exit 0\n"
    logs_host, logs_mode = binds["/logs"]
    assert logs_mode == "rw" and list(logs_host.iterdir()) == [] and logs_host.stat().st_mode & 0o777 == 0o777
    container = api.containers.existing[0]
    with tarfile.open(fileobj=io.BytesIO(container.archives[0][1])) as tar:
        names = tar.getnames()
    assert "main.py" in names and not any(n.startswith(".harbor/") for n in names)  # mounts, not copies
    assert not container.execs  # the task image's layer already links /app; nothing to do as root
    box.run("true", timeout_s=5)
    assert container.execs[0]["workdir"] == "/app"
    (logs_host / "verifier").mkdir()
    (logs_host / "verifier" / "reward.txt").write_text("1\n")
    out = box.collect(tmp_path / "out")
    assert (out / ".harbor" / "logs" / "verifier" / "reward.txt").read_text() == "1\n"
    box.destroy()
    assert not (tmp_path / "mounts" / box.name).exists() and (workspace / ".harbor" / "tests").is_dir()


def test_the_shared_image_gets_the_workdir_link_from_a_root_exec(tmp_path: Path):
    api = FakeDocker()
    backend = DockerBackend(api, prefix="hsbxi", mounts_root=tmp_path / "mounts")
    (tmp_path / "ws").mkdir()
    box = backend.create(tmp_path / "ws", SandboxLimits(memory_mb=256), placement=Placement("/app"))
    container = api.containers.existing[0]
    (link,) = container.execs
    assert link["user"] == "0:0" and link["cmd"][-1] == "/app" and "ln -s /workspace" in link["cmd"][2]
    assert api.containers.created[0][0] == backend.image
    box.destroy()
