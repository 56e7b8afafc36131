"""Task images on a fake engine: one build per content digest, a failed build remembered as that task's
error, the sandbox layer, and how the Docker backend runs a placed task (work directory, mounts)."""

from __future__ import annotations

import io
import tarfile
import threading
from pathlib import Path

import pytest

from environments.core.placement import Mount, Placement, TaskImage
from environments.sandboxes import bases
from environments.sandboxes.docker import IMAGE_TAG, DockerBackend
from environments.sandboxes.images import TaskImageError, TaskImages, layer_dockerfile
from environments.sandboxes.protocol import SandboxError, SandboxLimits
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


# --- FROM images the engine lacks -----------------------------------------------------------------------


def test_from_images_are_the_stages_bases_without_stage_names_scratch_or_args():
    dockerfile = (
        "ARG BASE=python:3.12\n"
        "FROM --platform=linux/amd64 python:3.11-slim AS build\n"
        "RUN pip wheel .\n"
        "from build as test\n"
        "FROM $BASE\n"
        "FROM scratch\n"
        "FROM docker.io/library/debian:bookworm-slim\n"
        "COPY --from=build /w /w\n"
    )
    assert bases.from_images(dockerfile) == ["python:3.11-slim", "docker.io/library/debian:bookworm-slim"]


@pytest.mark.parametrize(
    ("ref", "kind"),
    [
        ("python:3.11-slim", "python3.11"),
        ("python:3.11.9-slim-bookworm", "python3.11"),
        ("docker.io/library/python:3.11", "python3.11"),
        ("debian:12", "debian-bookworm"),
        ("debian:bookworm-slim", "debian-bookworm"),
        ("python:3.12-slim", None),  # bookworm's Python is 3.11: no honest stand-in
        ("ghcr.io/acme/python:3.11-slim", None),
        ("node:20", None),
    ],
)
def test_stand_ins_exist_only_for_what_the_debian_base_really_is(ref, kind):
    assert bases.stand_in_kind(ref) == kind


def test_a_missing_python_base_is_replaced_by_its_stand_in_built_once():
    api, lines = FakeDocker(), []
    images = TaskImages(api, log=lines.append)
    first = TaskImage({"Dockerfile": b"FROM python:3.11-slim AS b\nRUN pip install -e .\n"}, "line 2", "one")
    second = TaskImage({"Dockerfile": b"FROM python:3.11\nRUN pip install jq\n"}, "line 2", "two")
    images.ensure(first)
    images.ensure(second)
    stand_in = [b for b in api.images.builds if b["tag"].startswith("harness-adapters/stand-in:python3.11-")]
    assert len(stand_in) == 1  # one stand-in for both tasks
    recipe = files_of(stand_in[0])["Dockerfile"].decode()
    assert recipe.startswith(f"FROM {bases.DEBIAN_BASE}\n") and "EXTERNALLY-MANAGED" in recipe
    task_builds = [files_of(b)["Dockerfile"] for b in api.images.builds if b["tag"].endswith("-task")]
    tag = stand_in[0]["tag"].encode()
    assert task_builds == [
        b"FROM " + tag + b" AS b\nRUN pip install -e .\n",
        b"FROM " + tag + b"\nRUN pip install jq\n",
    ]
    assert "python:3.11-slim" not in api.images.tags  # the engine's own names are left alone
    assert any(f"python:3.11-slim -> {tag.decode()}" in line for line in lines)


def test_a_base_image_present_in_the_engine_is_used_as_written():
    api = FakeDocker()
    api.images.tags.add("python:3.11-slim")
    TaskImages(api, log=lambda _: None).ensure(
        TaskImage({"Dockerfile": b"FROM python:3.11-slim\nRUN true\n"}, "line 2", "t")
    )
    assert [files_of(b)["Dockerfile"] for b in api.images.builds][0] == b"FROM python:3.11-slim\nRUN true\n"


def test_a_missing_base_without_a_stand_in_names_it_and_the_fix_once():
    api = FakeDocker()
    images = TaskImages(api, log=lambda _: None)
    image = TaskImage({"Dockerfile": b"FROM node:20\nRUN npm ci\n"}, "line 2", "acme.web")
    with pytest.raises(TaskImageError, match=r"acme\.web: .*node:20 .*docker pull node:20.*docker load"):
        images.ensure(image)
    with pytest.raises(TaskImageError, match="node:20"):
        images.ensure(image)  # remembered: no second attempt
    assert api.images.builds == []


def test_the_backend_builds_the_shared_image_when_the_engine_lacks_it_and_says_how_to_get_its_base():
    api = FakeDocker()
    api.images.tags.discard(IMAGE_TAG)
    DockerBackend(api, prefix="hsbx")
    assert [b["tag"] for b in api.images.builds] == [IMAGE_TAG]
    assert api.images.builds[0]["network_mode"] == "none"
    bare = FakeDocker()
    bare.images.tags = set()
    with pytest.raises(SandboxError, match=r"debian-base:bookworm is not in the Docker engine: source"):
        DockerBackend(bare, prefix="hsbx")


def test_task_images_build_with_the_hosts_network_and_sandboxes_run_without():
    api = FakeDocker()
    backend = DockerBackend(api, prefix="hsbx")
    backend.task_images.ensure(IMAGE)
    assert {b["network_mode"] for b in api.images.builds} == {"host"}


def test_a_build_with_network_trusts_the_hosts_certificates_in_every_stage(tmp_path: Path, monkeypatch):
    """A machine that reaches PyPI through a proxy with its own certificate: the task's ``RUN pip install``
    must trust what the host trusts. The host's bundle goes into the build's context and every stage that
    starts from an image copies it and points pip, requests, curl, OpenSSL and Node at it; a build without
    network gets nothing."""
    bundle = tmp_path / "host-ca.pem"
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\nhost\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    dockerfile = "FROM debian:12 AS build\nRUN pip install x\nFROM scratch AS empty\nFROM build\nRUN true"
    image = TaskImage({"Dockerfile": dockerfile.encode()}, "trust", task_id="t")
    for network, trusted in (("host", True), ("none", False)):
        api = FakeDocker()
        TaskImages(api, network=network, log=lambda line: None).ensure(image)
        files = files_of(api.images.builds[0])
        built = files["Dockerfile"].decode()
        assert (files.get(bases.HOST_CA) == bundle.read_bytes()) is trusted
        copies = [line for line in built.splitlines() if line.startswith(f"COPY {bases.HOST_CA} ")]
        assert len(copies) == (2 if trusted else 0), built  # the two stages from images, not scratch
        if trusted:
            lines = built.splitlines()
            assert lines[1].startswith("COPY") and "PIP_CERT=" in lines[2] and "SSL_CERT_FILE=" in lines[2]
            assert lines[3] == "RUN pip install x" and lines[4] == "FROM scratch AS empty"
