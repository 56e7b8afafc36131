"""``SandboxRunner`` gives the oracle the same verdicts as ``SubprocessRunner``, on shipped tasks and the
hand-made ones, with every run isolated in a fresh local sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.core.runner import Runner, SubprocessRunner
from environments.core.types import Task
from environments.sandboxes.local import LocalBackend
from environments.sandboxes.runner import SandboxRunner
from environments.tasks.checks import run_checks
from environments.tasks.oracle import Verdict, apply_reference, verify, write_start
from environments.tasks.shipped import shipped_tasks
from tests.environments.sandboxes.conftest import requires_bwrap
from tests.environments.tasks.taskutil import answer_task, repo_task

pytestmark = requires_bwrap
SHIPPED = ("repo-textkit-slugify-repair", "repo-jsutils-chunk-repair", "data-sales-00-month-total")


@pytest.fixture(scope="module")
def shipped() -> dict[str, Task]:
    return {t.id: t for t in shipped_tasks() if t.id in SHIPPED}


@pytest.fixture
def runner(local_backend: LocalBackend) -> SandboxRunner:
    return SandboxRunner(local_backend)


def verdicts(task: Task, runner: Runner, work: Path) -> tuple[Verdict, Verdict]:
    """(verdict on the reference's output, verdict on the untouched start state)."""
    apply_reference(task, work / "reference", runner)
    on_reference = verify(task, work / "reference", work / "reference-check", runner)
    start = write_start(task, work / "start")
    on_start = verify(task, start, work / "start-check", runner)
    return on_reference.verdict, on_start.verdict


@pytest.mark.parametrize("task_id", SHIPPED)
def test_shipped_tasks_get_the_same_verdicts_in_the_sandbox(task_id, shipped, runner, tmp_path):
    task = shipped[task_id]
    plain = verdicts(task, SubprocessRunner(), tmp_path / "plain")
    boxed = verdicts(task, runner, tmp_path / "boxed")
    assert plain == boxed == (Verdict.PASS, Verdict.FAIL)


def test_the_reference_commands_output_comes_back_to_the_callers_folder(runner, tmp_path):
    result = apply_reference(answer_task(), tmp_path / "ref", runner)
    assert result is not None and result.ok, result.output_tail
    assert float((tmp_path / "ref" / "answer.txt").read_text()) == pytest.approx(46.85)


@pytest.mark.parametrize("make", [repo_task, answer_task])
def test_all_seven_checks_pass_with_the_sandboxed_runner(make, runner):
    results = run_checks(make(), runner)
    assert all(r.passed for r in results), [(r.name, r.reason) for r in results if not r.passed]


def test_a_shipped_repo_task_passes_all_seven_checks_inside_the_sandbox(shipped, runner):
    results = run_checks(shipped["repo-textkit-slugify-repair"], runner)
    assert all(r.passed for r in results), [(r.name, r.reason) for r in results if not r.passed]
