"""Session traces to repo tasks: sessions the test writes in each harness's own tool vocabulary (rendered
by the harness modules, as demonstrations are), undone into start states, kept when they pass the checks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from environments.core.types import Kind
from environments.demos import session_messages
from environments.harnesses.steps import Edit, Read, Shell, Write
from environments.tasks.sessions import (
    final_test_command,
    session_steps,
    session_task,
    session_tasks,
    undo_session,
)
from tests.environments.tasks.taskutil import repo_task

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
WITH_MUL = FIXED + "\n\ndef mul(a, b):\n    return a * b\n"
TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TEST_AREA = "from geometry import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n"
AREA = "def area(w, h):\n    return w * h\n"
CONFTEST = "import sys, os\nsys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))\n"


def _messages(harness: str, request: str, steps: list) -> list[dict]:
    return session_messages(repo_task(instruction=request), harness, steps, "Done.")


def _repair(harness: str) -> tuple[dict[str, bytes], list[dict]]:
    final = {
        "calc.py": FIXED.encode(),
        "tests/test_calc.py": TEST_ADD.encode(),
        "tests/conftest.py": CONFTEST.encode(),
    }
    steps = [
        Read("calc.py", BUGGY),
        Edit("calc.py", (("a - b", "a + b"),), BUGGY, FIXED),
        Shell("python -m pytest -q tests/test_calc.py", "1 passed"),
    ]
    return final, _messages(harness, "add() in calc.py subtracts; make the tests pass.", steps)


@pytest.mark.parametrize("harness", ["pi", "opencode", "hermes"])
def test_a_fix_and_its_tests_read_back_from_each_harness_become_a_repair_task(harness: str):
    final, messages = _repair(harness)
    steps = session_steps(messages, harness)
    assert [type(s).__name__ for s in steps] == ["Read", "Edit", "Shell"]
    assert steps[0].path == "calc.py" and steps[0].text == BUGGY  # the read result, unwrapped
    task = session_task(final, messages, harness, f"calc-{harness}")
    assert task.kind is Kind.REPAIR and task.workspace["calc.py"] == BUGGY.encode()
    assert (
        task.hidden == {"tests/test_calc.py": TEST_ADD.encode()}
        and "tests/test_calc.py" not in task.workspace
    )
    assert task.reference.files == {"calc.py": FIXED.encode()}
    assert task.oracle.command == "python -m pytest -q tests/test_calc.py"
    assert task.instruction.startswith("add() in calc.py subtracts")


def test_a_feature_with_its_own_tests_becomes_extend_or_build_with_the_tests_hidden():
    final = {
        "calc.py": WITH_MUL.encode(),
        "tests/test_mul.py": TEST_MUL.encode(),
        "tests/conftest.py": CONFTEST.encode(),
    }
    steps = [
        Read("calc.py", FIXED),
        Edit("calc.py", ((FIXED, WITH_MUL),), FIXED, WITH_MUL),
        Write("tests/test_mul.py", TEST_MUL),
        Shell("pytest -q tests/test_mul.py", "1 passed"),
    ]
    extend = session_task(final, _messages("pi", "Add mul(a, b) to calc.py.", steps), "pi", "calc-mul")
    assert extend.kind is Kind.EXTEND and extend.workspace["calc.py"] == FIXED.encode()
    assert "tests/test_mul.py" not in extend.workspace and extend.hidden == {
        "tests/test_mul.py": TEST_MUL.encode()
    }
    built = {
        "geometry.py": AREA.encode(),
        "tests/test_geometry.py": TEST_AREA.encode(),
        "tests/conftest.py": CONFTEST.encode(),
    }
    steps = [
        Write("geometry.py", AREA),
        Write("tests/test_geometry.py", TEST_AREA),
        Shell("pytest tests", "1 passed"),
    ]
    build = session_task(built, _messages("opencode", "Write geometry.area.", steps), "opencode", "geo")
    assert build.kind is Kind.BUILD and "geometry.py" not in build.workspace
    assert (
        build.reference.files == {"geometry.py": AREA.encode()} and "tests/test_geometry.py" in build.hidden
    )


def test_sessions_that_cannot_make_a_task_say_why():
    final, messages = _repair("pi")
    no_tests = _messages("pi", "Fix it.", [Edit("calc.py", (("a - b", "a + b"),), BUGGY, FIXED)])
    with pytest.raises(ValueError, match="ran no tests after its last change"):
        session_task(final, no_tests, "pi", "x")
    drifted = {**final, "calc.py": b"def add(a, b):\n    return b + a\n"}  # the repo is not what it left
    with pytest.raises(ValueError, match="cannot be undone exactly"):
        session_task(drifted, messages, "pi", "x")
    only_tests = _messages(
        "pi", "Fix the test.", [Write("tests/test_calc.py", TEST_ADD), Shell("pytest tests", "")]
    )
    with pytest.raises(ValueError, match="changed only its tests"):
        session_task(final, only_tests, "pi", "x")
    assert final_test_command([Shell("pytest", ""), Write("a.py", "x"), Shell("ls", "")]) is None
    start, created = undo_session({"new.py": b"x"}, [Write("new.py", "x")])
    assert start == {} and created == {"new.py"}


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (scripts/sandbox-deps.sh)")
def test_kept_tasks_pass_the_seven_checks_in_the_sandbox(tmp_path: Path):
    from environments.sandboxes import LocalBackend
    from environments.sandboxes.runner import SandboxRunner

    final, messages = _repair("hermes")
    broken = {**final, "tests/test_calc.py": b"def test_nothing():\n    pass\n"}  # passes before the fix too
    report = session_tasks(
        [("calc-fix", final, messages, "hermes"), ("calc-vacuous", broken, messages, "hermes")],
        SandboxRunner(LocalBackend(prefix="hxses")),
    )
    assert [t.id for t in report.tasks] == ["calc-fix"], report.rejected
    assert len(report.rejected) == 1 and "start_fails" in report.rejected[0]
