from __future__ import annotations

from pathlib import Path

import pytest

from environments.tasks.checks import run_checks
from environments.tasks.harbor import find_harbor_tasks, load_harbor_task
from environments.tasks.layout import TaskFormatError
from environments.tasks.types import Kind, Source

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
    (folder / "tests" / "test.sh").write_text('test "$(python greet.py)" = "hello, world"\n')
    (folder / "solution" / "solve.sh").write_text("echo \"print('hello, world')\" > greet.py\n")
    return folder


def test_a_harbor_folder_maps_onto_a_task(tmp_path):
    task = load_harbor_task(make_harbor_task(tmp_path))
    assert task.id == "acme.fix-greeting"
    assert (task.source, task.kind) == (Source.REPO, Kind.BUILD)
    assert set(task.workspace) == {"greet.py"}  # the Dockerfile describes the image, not the workspace
    assert set(task.hidden) == {"tests/test.sh"}
    assert task.oracle.command == "bash tests/test.sh"
    assert task.reference.command == "bash solution/solve.sh"
    limits = task.limits
    assert (limits.agent_timeout_s, limits.verify_timeout_s, limits.memory_mb) == (120.0, 30.0, 2048)


def test_a_harbor_task_passes_the_six_checks(tmp_path):
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
