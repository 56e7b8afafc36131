from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from environments.core.runner import PlacementUnsupported, SubprocessRunner
from environments.core.types import Kind, Source
from environments.tasks.checks import check_no_leakage, run_checks
from environments.tasks.harbor import find_harbor_tasks, load_harbor_task, parse_dockerfile
from environments.tasks.layout import TaskFormatError
from environments.tasks.oracle import Verdict, apply_reference, verify, write_start

BWRAP_MISSING = "bubblewrap (bwrap) is not installed: apt-get update && apt-get install -y bubblewrap"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason=BWRAP_MISSING)


def local_runner(tmp_path: Path):
    from environments.sandboxes import LocalBackend
    from environments.sandboxes.runner import SandboxRunner

    return SandboxRunner(LocalBackend(tmp_path / "boxes", prefix="hxhb"))


TOML = """schema_version = "1.1"

[task]
name = "acme/Fix-Greeting"

[metadata]
category = "programming"
difficulty = "easy"

[verifier]
timeout_sec = 30.0

[agent]
timeout_sec = 120.0

[environment]
cpus = 1
memory = "2G"
"""


def make_harbor_task(root: Path, name: str = "fix-greeting") -> Path:
    folder = root / name
    for sub in ("environment", "tests", "solution"):
        (folder / sub).mkdir(parents=True)
    (folder / "task.toml").write_text(TOML)
    (folder / "instruction.md").write_text("Make greet.py print 'hello, world'.\n")
    (folder / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY greet.py /app/\n")
    (folder / "environment" / "greet.py").write_text("print('hello')\n")
    (folder / "tests" / "test.sh").write_text(
        'if test "$(python /app/greet.py)" = "hello, world"; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    (folder / "solution" / "solve.sh").write_text("echo \"print('hello, world')\" > greet.py\n")
    return folder


def test_a_harbor_folder_maps_onto_a_task(tmp_path):
    task = load_harbor_task(make_harbor_task(tmp_path))
    assert task.id == "acme.fix-greeting"
    assert (task.source, task.kind) == (Source.REPO, Kind.BUILD)
    assert set(task.workspace) == {"greet.py"}  # the Dockerfile describes the image, not the workspace
    assert set(task.hidden) == {".harbor/tests/test.sh"}
    assert (task.oracle.command, task.oracle.reward_dir) == ("bash /tests/test.sh", ".harbor/logs/verifier")
    assert task.reference.command == "bash /solution/solve.sh"
    assert set(task.reference.files) == {".harbor/solution/solve.sh"}
    placement = task.placement
    assert placement.workdir == "/app" and placement.image is None  # the shared image runs it
    assert [(m.source, m.target, m.writable) for m in placement.mounts] == [
        (".harbor/tests", "/tests", False),
        (".harbor/solution", "/solution", False),
        (".harbor/logs", "/logs", True),
    ]
    limits = task.limits
    assert (limits.agent_timeout_s, limits.verify_timeout_s, limits.memory_mb) == (120.0, 30.0, 2048)


@needs_bwrap
def test_a_harbor_task_passes_the_seven_checks(tmp_path):
    results = run_checks(load_harbor_task(make_harbor_task(tmp_path)))
    assert [(r.name.value, r.reason) for r in results if not r.passed] == []


def test_metadata_can_set_kind_and_split_and_data_category_means_analysis(tmp_path):
    folder = make_harbor_task(tmp_path)
    (folder / "task.toml").write_text(TOML.replace('category = "programming"', 'category = "data-science"'))
    assert load_harbor_task(folder).kind is Kind.ANALYSIS
    (folder / "task.toml").write_text(TOML.replace('difficulty = "easy"', 'kind = "extend"\nsplit = "eval"'))
    task = load_harbor_task(folder)
    assert (task.kind, task.split.value) == (Kind.EXTEND, "eval")


def test_missing_test_script_or_bad_toml_is_a_format_error(tmp_path):
    folder = make_harbor_task(tmp_path)
    (folder / "task.toml").write_text("[task\n")
    with pytest.raises(TaskFormatError, match="not valid TOML"):
        load_harbor_task(folder)
    (folder / "task.toml").write_text(TOML)
    (folder / "tests" / "test.sh").unlink()
    with pytest.raises(TaskFormatError, match="tests/test.sh"):
        load_harbor_task(folder)


def test_find_harbor_tasks_walks_a_dataset(tmp_path):
    make_harbor_task(tmp_path / "ds", "b")
    make_harbor_task(tmp_path / "ds", "a")
    assert [p.name for p in find_harbor_tasks(tmp_path / "ds")] == ["a", "b"]


PYTEST_STYLE = """#!/bin/bash
mkdir -p /logs/verifier
cd /app
TEST_DIR="${TEST_DIR:-/tests}"
python "$TEST_DIR/test_outputs.py" > /logs/verifier/test-output.txt 2>&1
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit 0
"""
TEST_OUTPUTS = """from pathlib import Path
assert Path("/app/out/result.txt").read_text().strip() == "42", "wrong result"
assert Path("/tests/expected.txt").read_text().strip() == "42"
assert "/tests_data_is_not_a_tests_path".startswith("/tests_")  # not a /tests path: left alone
"""


def make_path_task(root: Path, test_sh: str = PYTEST_STYLE) -> Path:
    """A task written the way published Harbor tasks are: absolute /app, /tests and /logs paths."""
    folder = make_harbor_task(root, "paths")
    (folder / "environment" / "Dockerfile").write_text(
        "FROM python:3.12-slim\nWORKDIR /app\nRUN mkdir -p /app/out && \\\n    chmod 755 /app/out\n"
        "COPY src/ /app/src/\nCOPY greet.py .\nENV GREETING=hi\n"
    )
    (folder / "environment" / "src").mkdir()
    (folder / "environment" / "src" / "lib.py").write_text("X = 41\n")
    (folder / "environment" / "notes.txt").write_text("not copied into the image\n")
    (folder / "tests" / "test.sh").write_text(test_sh)
    (folder / "tests" / "test_outputs.py").write_text(TEST_OUTPUTS)
    (folder / "tests" / "expected.txt").write_text("42\n")
    (folder / "solution" / "solve.sh").write_text(
        "mkdir -p /app/out && python -c \"import sys; sys.path.insert(0, '/app/src'); import lib; "
        'print(lib.X + 1)" > /app/out/result.txt\n'
    )
    return folder


def test_the_workspace_is_what_the_dockerfile_copies_into_its_workdir(tmp_path):
    task = load_harbor_task(make_path_task(tmp_path))
    assert set(task.workspace) == {"greet.py", "src/lib.py"}  # notes.txt is not in the image
    assert task.env == {"GREETING": "hi"} and task.oracle.env == {"GREETING": "hi"}


@needs_bwrap
def test_absolute_tests_app_and_logs_paths_work_and_the_reference_passes_all_checks(tmp_path):
    task = load_harbor_task(make_path_task(tmp_path))
    results = run_checks(task)
    assert [(r.name.value, r.reason) for r in results if not r.passed] == []


def _judge(task, produced: Path, tmp_path: Path):
    return verify(task, produced, tmp_path / "scratch", local_runner(tmp_path))


@needs_bwrap
def test_the_reward_file_decides_not_the_exit_status(tmp_path):
    for case, (body, verdict) in enumerate(
        (
            ("echo 0.5 > /logs/verifier/reward.txt; exit 0", Verdict.FAIL),  # partial credit is not a pass
            ("echo 1 > /logs/verifier/reward.txt; exit 1", Verdict.PASS),  # Harbor ignores the exit status
            ('echo \'{"reward": 1.0, "tests": 3}\' > /logs/verifier/reward.json', Verdict.PASS),
            (
                "echo '{\"reward\": 0.0}' > /logs/verifier/reward.json; echo 1 > /logs/verifier/reward.txt",
                Verdict.FAIL,
            ),
            (
                "echo '{\"passed\": 3}' > /logs/verifier/reward.json; echo 1 > /logs/verifier/reward.txt",
                Verdict.PASS,
            ),
            ("echo nonsense > /logs/verifier/reward.txt", Verdict.FAIL),
            ("exit 0", Verdict.FAIL),  # no reward at all: cannot be judged, never a pass
        )
    ):
        where = tmp_path / str(case)
        task = load_harbor_task(make_path_task(where, test_sh=body + "\n"))
        run = _judge(task, write_start(task, where / "start"), where)
        assert run.verdict is verdict, (body, run.reason)
    assert "wrote no reward" in run.reason


@needs_bwrap
def test_a_reward_the_agent_planted_in_its_workspace_does_not_count(tmp_path):
    task = load_harbor_task(make_path_task(tmp_path, test_sh="exit 1\n"))
    produced = write_start(task, tmp_path / "produced")
    (produced / ".harbor" / "logs" / "verifier").mkdir(parents=True)
    (produced / ".harbor" / "logs" / "verifier" / "reward.txt").write_text("1\n")
    (produced / "tests").mkdir()
    (produced / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")  # overwritten
    assert _judge(task, produced, tmp_path).verdict is Verdict.FAIL


@pytest.mark.parametrize(
    ("dockerfile", "reason"),
    [
        ("FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y jq\n", "build step 'apt-get update'"),
        ("FROM node:20\nWORKDIR /app\n", "base image 'node'"),
        ("FROM python:3.12 AS build\nFROM debian:12\n", "multi-stage"),
        ("FROM python:3.12\nCOPY --from=build /x /app/x\n", "another stage"),
        ("FROM python:3.12\nCOPY greet.py /opt/greet.py\n", "outside WORKDIR /app"),
        ("FROM python:3.12\nENV PATH=/opt/venv/bin:$PATH\n", "ENV that extends PATH"),
        ("FROM python:3.12\nUSER agent\n", "USER"),
    ],
)
def test_a_dockerfile_doing_more_than_the_shared_image_makes_the_task_build_its_own(
    tmp_path, dockerfile, reason
):
    folder = make_harbor_task(tmp_path)
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    image = load_harbor_task(folder).placement.image
    assert image is not None and reason in image.reason and "Dockerfile line" in image.reason
    assert image.context["Dockerfile"] == dockerfile.encode() and "greet.py" in image.context
    same = load_harbor_task(folder).placement.image
    (folder / "environment" / "greet.py").write_text("print('changed')\n")
    changed = load_harbor_task(folder).placement.image
    assert same.digest == image.digest != changed.digest  # one build per content, a new one per change


@needs_bwrap
def test_the_local_backend_refuses_a_task_whose_image_must_be_built_naming_the_fix(tmp_path):
    folder = make_harbor_task(tmp_path)
    (folder / "environment" / "Dockerfile").write_text(
        "FROM python:3.12\nRUN pip install numpy\nCOPY greet.py /app/\n"
    )
    task = load_harbor_task(folder)
    run = _judge(task, write_start(task, tmp_path / "start"), tmp_path)
    assert run.verdict is Verdict.ERROR
    assert "pip install numpy" in run.reason and "sandbox: docker" in run.reason


def test_a_subprocess_cannot_place_harbor_files_and_says_to_use_a_sandbox(tmp_path):
    task = load_harbor_task(make_harbor_task(tmp_path))
    with pytest.raises(PlacementUnsupported, match="/app, /tests, /solution, /logs.*SandboxRunner"):
        apply_reference(task, tmp_path / "reference", SubprocessRunner())


@needs_bwrap
def test_paths_built_at_run_time_reach_the_mounts_because_nothing_is_rewritten(tmp_path):
    body = (
        'root=/te; d="${root}sts"; app="/a""pp"\n'
        'if [ "$(cat "$d/expected.txt")" = "$(cat "$app/out/result.txt")" ]; then r=1; else r=0; fi\n'
        'echo $r > "/lo""gs/verifier/reward.txt"\n'
    )
    task = load_harbor_task(make_path_task(tmp_path, test_sh=body))
    produced = apply_reference(task, tmp_path / "produced", local_runner(tmp_path)) and tmp_path / "produced"
    assert (produced / "out" / "result.txt").read_text().strip() == "42"  # solve.sh wrote /app/out
    run = verify(task, produced, tmp_path / "scratch", local_runner(tmp_path))
    assert run.verdict is Verdict.PASS, run.reason
    start = write_start(task, tmp_path / "start")
    assert verify(task, start, tmp_path / "scratch2", local_runner(tmp_path)).verdict is Verdict.FAIL


def test_prebuilt_images_and_compose_environments_are_rejected(tmp_path):
    folder = make_harbor_task(tmp_path)
    (folder / "task.toml").write_text(TOML + 'docker_image = "ghcr.io/acme/env:1"\n')
    with pytest.raises(TaskFormatError, match="docker_image"):
        load_harbor_task(folder)
    (folder / "task.toml").write_text(TOML)
    (folder / "environment" / "docker-compose.yaml").write_text("services: {}\n")
    with pytest.raises(TaskFormatError, match="multi-container"):
        load_harbor_task(folder)


def test_dockerfile_parsing_follows_continuations_workdir_and_copy_forms():
    image = parse_dockerfile(
        "# comment\nFROM python:3.12-slim\nWORKDIR /srv\nWORKDIR app\nCOPY a.py b.py lib/\n"
        "ADD . /srv/app/\nENV A=1 B=two\nENV LEGACY some value\nLABEL x=y\n",
        "Dockerfile",
    )
    assert image.workdir == "/srv/app"
    assert image.copies == [("a.py", "lib/"), ("b.py", "lib/"), (".", "")]
    assert image.env == {"A": "1", "B": "two", "LEGACY": "some value"}


def test_hidden_harbor_tests_copied_into_the_workspace_are_still_a_leak(tmp_path):
    folder = make_path_task(tmp_path)
    (folder / "environment" / "test_outputs.py").write_text(TEST_OUTPUTS)
    dockerfile = folder / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "COPY test_outputs.py .\n")
    assert not check_no_leakage(load_harbor_task(folder)).passed
