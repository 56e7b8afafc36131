"""Which judge a task gets: a pure function of its oracle (no sandbox, no run)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from environments.core.types import AnswerOracle, CommandOracle, Kind, Reference, Source, Task
from environments.integrity.judging import (
    IN_PROCESS,
    ISOLATED,
    OUTPUT_JUDGE,
    OUTPUT_ONLY,
    judge_plan,
    parse_python_tests,
    stdlib_only_checker,
)


def task(command: str, hidden: dict[str, bytes] | None = None, **changes) -> Task:
    made = Task(
        id="plan",
        source=Source.REPO,
        kind=Kind.REPAIR,
        instruction="fix it\n",
        workspace={"m.py": b"x = 1\n"},
        hidden=hidden or {"tests/test_m.py": b"def test_x():\n    pass\n"},
        oracle=CommandOracle(command),
        reference=Reference(files={"m.py": b"x = 2\n"}),
    )
    return replace(made, **changes)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python -m pytest -q tests", ("pytest", ("-q", "tests"))),
        ("pytest", ("pytest", ())),
        ("python3.11 -m unittest discover -s tests", ("unittest", ("discover", "-s", "tests"))),
    ],
)
def test_plain_python_test_commands_parse(command, expected):
    assert parse_python_tests(command) == expected


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("pytest -q | tee log", "shell"),
        ("cd sub && pytest", "shell"),
        ("pytest $ARGS", "shell"),
        ("make test", "not a plain"),
        ("python -m nose", "not a plain"),
    ],
)
def test_anything_else_is_not_a_plain_test_command(command, why):
    assert why in parse_python_tests(command)


def test_pytest_and_unittest_tasks_are_isolated_unless_they_opt_out():
    assert judge_plan(task("python -m pytest -q tests")).mode == ISOLATED
    assert judge_plan(task("python -m unittest")).runner == "unittest"
    opted = judge_plan(task("python -m pytest -q tests", judge=IN_PROCESS))
    assert opted.mode == IN_PROCESS and "opts in" in opted.reason
    with pytest.raises(ValueError, match="judge"):
        task("pytest", judge="sometimes")


def test_other_oracles_say_why_they_are_not_isolated():
    assert "not a plain" in judge_plan(task("node --test test/")).reason
    harbor = judge_plan(task("bash tests/test.sh", oracle=CommandOracle("bash t.sh", reward_dir="logs")))
    assert harbor.mode == IN_PROCESS and "Harbor" in harbor.reason


def test_answer_files_and_the_output_judge_are_separated():
    answer = replace(task("true"), oracle=AnswerOracle(expected=3.0))
    assert judge_plan(answer).separated
    probe = task("python -I .oracle/probe.py", {".oracle/probe.py": OUTPUT_JUDGE.read_bytes()})
    assert judge_plan(probe).mode == OUTPUT_ONLY
    tampered = task("python -I .oracle/probe.py", {".oracle/probe.py": OUTPUT_JUDGE.read_bytes() + b"\n#"})
    assert judge_plan(tampered).mode == IN_PROCESS
    no_isolation_flag = task("python .oracle/probe.py", {".oracle/probe.py": OUTPUT_JUDGE.read_bytes()})
    assert judge_plan(no_isolation_flag).mode == IN_PROCESS


@pytest.mark.parametrize(
    ("source", "reads_only"),
    [
        (b"import json, sys\nfrom pathlib import Path\nprint(json.loads(Path('a').read_text()))\n", True),
        (b"import m\n", False),
        (b"import importlib\nimportlib.import_module('m')\n", False),
        (b"import sys\nsys.path.insert(0, '.')\n", False),
        (b"exec(open('m.py').read())\n", False),
        (b"__import__('m')\n", False),
        (b"import os\nos.system('python m.py')\n", False),
        (b"from . import m\n", False),
        (b"def broken(:\n", False),
    ],
)
def test_a_checker_counts_as_output_only_when_it_can_only_read(source, reads_only):
    assert stdlib_only_checker(source) is reads_only


def test_a_task_placed_at_paths_of_its_own_is_not_isolated():
    from environments.core.placement import Mount, Placement

    placed = task("python -m pytest -q tests", placement=Placement(workdir="/app"))
    plan = judge_plan(placed)
    assert plan.mode == IN_PROCESS and "paths of their own" in plan.reason
    mounted = task("python -m pytest -q /checks", placement=Placement(mounts=(Mount("checks", "/checks"),)))
    assert judge_plan(mounted).mode == IN_PROCESS


def test_landlock_grants_skip_the_judges_folder_and_any_alias_of_it(tmp_path):
    from environments.integrity.isolation.landlock import grants

    judge = tmp_path / "judge"
    (judge / "tests").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "alias").symlink_to(judge)
    granted = {path for path, _ in grants(str(judge), (str(judge / ".solution"),))}
    assert str(tmp_path / "other") in granted
    assert str(judge) not in granted and str(tmp_path / "alias") not in granted
    assert not any(p.startswith(str(judge) + "/tests") for p in granted)


def test_task_modules_are_the_top_modules_the_starting_workspace_ships_as_code():
    from dataclasses import replace as _replace

    from environments.core.types import CommandOracle, Kind, Reference, Source, Task
    from environments.integrity.judging import task_modules

    task = Task(
        id="mods",
        source=Source.REPO,
        kind=Kind.REPAIR,
        instruction="x\n",
        workspace={
            "pkg/__init__.py": b"",
            "src/lib/core.py": b"",
            "tool.py": b"",
            "README.md": b"",
            "tests/test_pkg.py": b"",
        },
        hidden={"tests/test_hidden.py": b""},
        oracle=CommandOracle("python -m pytest -q tests"),
        reference=Reference(files={"tool.py": b""}),
    )
    assert task_modules(task) == ["lib", "pkg", "tool"]
    assert task_modules(_replace(task, workspace={"data.csv": b""})) == []
