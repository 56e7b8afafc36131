"""The learning-check family: every task passes the seven checks, one command solves them all, and no
single remembered answer passes more than a few."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from environments.core.runner import SubprocessRunner
from environments.core.types import Split
from environments.tasks.checks import run_checks
from environments.tasks.layout import write_files
from environments.tasks.oracle import Verdict, verify
from environments.tasks.shipped import TASK_SETS, task_set
from environments.tasks.shipped.row_count import EVAL_TASKS, ROW_COUNT_COMMAND, TRAIN_TASKS


@pytest.fixture(scope="module")
def tasks():
    return task_set("row-count")


def test_the_family_has_its_splits_and_is_the_same_every_time(tasks):
    assert Counter(t.split for t in tasks) == {Split.TRAIN: TRAIN_TASKS, Split.EVAL: EVAL_TASKS}
    assert len({t.id for t in tasks}) == len(tasks)
    assert task_set("row-count") == tasks


def test_answers_vary_so_only_counting_passes(tasks):
    answers = Counter(t.oracle.expected for t in tasks)
    assert len(answers) >= 25 and max(answers.values()) <= 0.1 * len(tasks)  # no answer passes 10%
    train = {t.workspace["data.csv"] for t in tasks if t.split is Split.TRAIN}
    assert not train & {t.workspace["data.csv"] for t in tasks if t.split is Split.EVAL}


def test_every_task_passes_all_seven_checks(tasks):
    failed = {t.id: [(r.name.value, r.reason) for r in run_checks(t) if not r.passed] for t in tasks}
    assert {k: v for k, v in failed.items() if v} == {}


def test_a_wrong_count_fails_and_the_command_passes(tasks, tmp_path: Path):
    task = tasks[0]
    runner = SubprocessRunner()
    produced = tmp_path / "produced"
    write_files(produced, task.workspace)
    (produced / "answer.txt").write_text(f"{int(task.oracle.expected) + 1}\n")  # the header counted
    assert verify(task, produced, tmp_path / "wrong", runner).verdict is Verdict.FAIL
    assert runner.run(ROW_COUNT_COMMAND, produced, timeout_s=30, memory_mb=256).ok
    assert verify(task, produced, tmp_path / "right", runner).verdict is Verdict.PASS


def test_an_unknown_task_set_names_the_choices():
    assert TASK_SETS[:3] == ("shipped", "row-count", "row-count-validation")
    with pytest.raises(ValueError, match="task_set='rows': choose one of shipped, row-count, row-count-val"):
        task_set("rows")


def test_the_validation_tasks_are_held_out_and_share_no_data_with_training_evaluation_or_demos(tasks):
    from environments.tasks.shipped.row_count import VALIDATION_TASKS, row_count_demo_tasks

    validation = task_set("row-count-validation")
    assert len(validation) == VALIDATION_TASKS and {t.split for t in validation} == {Split.EVAL}
    assert all(t.id.startswith("rows-validation-") for t in validation)
    seen = {t.workspace["data.csv"] for t in [*tasks, *row_count_demo_tasks(96)]}
    assert not seen & {t.workspace["data.csv"] for t in validation}
    assert not {t.id for t in tasks} & {t.id for t in validation}
    failed = {t.id: [r.name.value for r in run_checks(t) if not r.passed] for t in validation[:4]}
    assert {k: v for k, v in failed.items() if v} == {}
