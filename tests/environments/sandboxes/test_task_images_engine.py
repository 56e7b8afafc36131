"""Harbor tasks with their own Dockerfiles on a real Docker engine: the project's demo set
(``environments/tasks/harbor_demo``: packages built and installed from the build context, data generated
at build time, files outside the work directory, absolute ``/app``, ``/tests`` and ``/logs`` paths).

Needs the engine and the base image (``source scripts/sandbox-deps.sh``); skips with that reason otherwise.
Builds run with no network.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from environments.sandboxes.images import TaskImages
from environments.sandboxes.protocol import SandboxLimits
from environments.sandboxes.runner import SandboxRunner
from environments.tasks.checks import run_checks
from environments.tasks.harbor import find_harbor_tasks, load_harbor_task
from environments.tasks.oracle import Verdict, apply_reference, verify, write_start
from tests.environments.sandboxes.conftest import BASE_IMAGE

DEMO = Path(__file__).resolve().parents[3] / "environments" / "tasks" / "harbor_demo"
SMALL = SandboxLimits(memory_mb=512, max_processes=32, cpus=1.0)


@pytest.fixture
def backend(docker_backend):
    docker_backend.lines = []
    docker_backend.task_images.log = docker_backend.lines.append
    return docker_backend


def forget(api, task) -> None:
    """Remove a task's images from the engine, so the test sees the build itself."""
    image = task.placement.image
    for name in (TaskImages.tag(image, task.placement.workdir), TaskImages.task_tag(image)):
        try:
            api.images.remove(name, force=True)
        except Exception as exc:  # docker.errors.ImageNotFound
            assert "not found" in str(exc).lower() or "No such image" in str(exc), exc


def test_the_demo_set_builds_each_image_once_and_every_task_passes_the_seven_checks(docker_api, backend):
    tasks = [load_harbor_task(folder) for folder in find_harbor_tasks(DEMO)]
    assert [t.id for t in tasks] == ["orders-count", "slug-fix", "top-words"]
    assert all(t.placement.image is not None for t in tasks)
    for task in tasks:
        forget(docker_api, task)
    runner = SandboxRunner(backend)
    for task in tasks:
        failed = [(r.name.value, r.reason) for r in run_checks(task, runner) if not r.passed]
        assert failed == [], task.id
    building = [line for line in backend.lines if line.startswith("building the image of task")]
    assert [line.split()[5] for line in building] == [t.id for t in tasks]  # many sandboxes, one build each
    assert sorted(backend.task_images.built) == sorted(t.placement.image.digest for t in tasks)


def test_in_a_task_image_the_workdir_is_the_workspace_and_the_package_is_installed(backend, tmp_path):
    task = load_harbor_task(DEMO / "orders-count")
    box = backend.create(write_start(task, tmp_path / "start"), SMALL, placement=task.placement.for_agent())
    try:
        result = box.run(
            "id -u; pwd -P; readlink /app; tail -n +2 /app/orders.csv | wc -l; "
            "dpkg-query -W -f='${Status}\\n' orders-data; ls /tests /logs 2>&1 | head -1; "
            "echo mine > /app/new.txt",
            timeout_s=30,
        )
        out = box.collect(tmp_path / "out")
    finally:
        box.destroy()
    assert result.ok, result.output_tail
    uid, cwd, link, rows, status, no_tests = result.output_tail.splitlines()
    # commands start at /app, a link to the workspace (the engine resolves it, so pwd -P shows /workspace)
    assert (uid, cwd, link, rows, status) == (
        "1000",
        "/workspace",
        "/workspace",
        "60",
        "install ok installed",
    )
    assert "No such file" in no_tests  # the agent's session gets no verifier mounts
    assert (out / "new.txt").read_text() == "mine\n" and (out / "orders.csv").is_file()  # built at build time


def test_a_task_whose_dockerfile_fails_is_an_error_for_that_task_alone(backend, tmp_path):
    broken_folder = tmp_path / "broken"
    shutil.copytree(DEMO / "slug-fix", broken_folder)
    dockerfile = broken_folder / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN echo cannot build this >&2 && exit 3\n")
    broken = load_harbor_task(broken_folder)
    runner = SandboxRunner(backend)
    for attempt in range(2):
        run = verify(
            broken, write_start(broken, tmp_path / f"start{attempt}"), tmp_path / f"v{attempt}", runner
        )
        assert run.verdict is Verdict.ERROR and "its Dockerfile did not build" in run.reason, run.reason
        assert "cannot build this" in run.reason and "network='host'" in run.reason
    assert sum(line.startswith("building") for line in backend.lines) == 1  # not retried
    good = load_harbor_task(DEMO / "top-words")
    produced = tmp_path / "produced"
    apply_reference(good, produced, runner)
    assert verify(good, produced, tmp_path / "good", runner).verdict is Verdict.PASS


def test_a_plain_harbor_task_runs_on_the_shared_image_with_its_workdir_linked(backend, tmp_path):
    """No build: the Dockerfile only copies into /app, so the shared image runs it, /app linked by root."""
    folder = (
        Path(__file__).resolve().parents[2] / "environments" / "tamper" / "harbor" / "tamper-harbor-testsh"
    )
    task = load_harbor_task(folder)
    assert task.placement.image is None and task.placement.workdir == "/app"
    runner = SandboxRunner(backend)
    produced = tmp_path / "produced"
    apply_reference(task, produced, runner)
    run = verify(task, produced, tmp_path / "verify", runner)
    assert run.verdict is Verdict.PASS and run.reason == "reward 1 >= 1", run.reason
    start = write_start(task, tmp_path / "start")
    assert verify(task, start, tmp_path / "verify-start", runner).verdict is Verdict.FAIL
    assert backend.lines == []  # nothing was built


def test_a_harbor_task_from_python_slim_builds_on_its_stand_in_where_no_registry_is_reached(
    docker_api, backend, tmp_path
):
    """The engine lacks ``python:3.11-slim`` and cannot pull it: the build starts from the local stand-in,
    whose ``python`` is 3.11 with pip, and the task passes every check."""
    folder = tmp_path / "slim"
    shutil.copytree(DEMO / "slug-fix", folder)
    dockerfile = folder / "environment" / "Dockerfile"
    text = dockerfile.read_text().replace(f"FROM {BASE_IMAGE}", "FROM python:3.11-slim")
    check = 'RUN python -c "import sys; assert sys.version_info[:2] == (3, 11)" && pip --version\n'
    dockerfile.write_text(text + check)
    task = load_harbor_task(folder)
    forget(docker_api, task)
    with pytest.raises(Exception, match="(?i)not found|no such image"):
        docker_api.images.get("python:3.11-slim")
    failed = [(r.name.value, r.reason) for r in run_checks(task, SandboxRunner(backend)) if not r.passed]
    assert failed == []
    assert any("python:3.11-slim -> harness-adapters/stand-in:python3.11-" in line for line in backend.lines)
