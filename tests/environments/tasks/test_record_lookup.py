"""The read-before-answer family: every task passes the seven checks, the answer is a value only the data
holds (no remembered word passes more than a few), and the reference finds it."""

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
from environments.tasks.shipped.record_lookup import (
    EVAL_TASKS,
    TRAIN_TASKS,
    VALIDATION_TASKS,
    asked_code,
    record_lookup_demo_tasks,
)


@pytest.fixture(scope="module")
def tasks():
    return task_set("record-lookup")


def test_the_family_has_its_splits_and_is_the_same_every_time(tasks):
    assert Counter(t.split for t in tasks) == {Split.TRAIN: TRAIN_TASKS, Split.EVAL: EVAL_TASKS}
    assert len({t.id for t in tasks}) == len(tasks)
    assert task_set("record-lookup") == tasks
    assert {"record-lookup", "record-lookup-validation"} <= set(TASK_SETS)


def test_the_answer_is_one_records_value_that_only_reading_finds(tasks):
    answers = Counter(t.oracle.expected for t in tasks)
    assert len(answers) >= 30 and max(answers.values()) <= 0.1 * len(tasks)
    for task in tasks:
        text = task.workspace["data.csv"].decode()
        code = asked_code(task)
        assert code not in text.splitlines()[0] and code in task.instruction
        matching = [line for line in text.splitlines() if line.startswith(code + ",")]
        assert matching == [f"{code},{task.oracle.expected}"]  # one record, the answer its value
        assert task.oracle.expected not in task.instruction
        # other records hold other values often enough that answering any row's value is not enough
    others = sum(len({ln.split(",")[1] for ln in t.workspace["data.csv"].decode().splitlines()[1:]}) > 1
                 for t in tasks)  # fmt: skip
    assert others == len(tasks)


def test_every_task_passes_all_seven_checks(tasks):
    failed = {t.id: [(r.name.value, r.reason) for r in run_checks(t) if not r.passed] for t in tasks}
    assert {k: v for k, v in failed.items() if v} == {}


def test_another_records_value_fails_and_the_reference_passes(tasks, tmp_path: Path):
    task = tasks[0]
    runner = SubprocessRunner()
    produced = tmp_path / "produced"
    write_files(produced, task.workspace)
    rows = task.workspace["data.csv"].decode().splitlines()[1:]
    wrong = next(row.split(",")[1] for row in rows if row.split(",")[1] != task.oracle.expected)
    (produced / "answer.txt").write_text(wrong + "\n")
    assert verify(task, produced, tmp_path / "wrong", runner).verdict is Verdict.FAIL
    assert runner.run(task.reference.command, produced, timeout_s=30, memory_mb=256).ok
    assert verify(task, produced, tmp_path / "right", runner).verdict is Verdict.PASS


def test_the_validation_tasks_are_held_out_and_share_no_data_with_training_evaluation_or_demos(tasks):
    validation = task_set("record-lookup-validation")
    assert len(validation) == VALIDATION_TASKS and {t.split for t in validation} == {Split.EVAL}
    assert all(t.id.startswith("lookup-validation-") for t in validation)
    seen = {t.workspace["data.csv"] for t in [*tasks, *record_lookup_demo_tasks(96)]}
    assert not seen & {t.workspace["data.csv"] for t in validation}
    assert not {t.id for t in tasks} & {t.id for t in validation}
    failed = {t.id: [r.name.value for r in run_checks(t) if not r.passed] for t in validation[:4]}
    assert {k: v for k, v in failed.items() if v} == {}
