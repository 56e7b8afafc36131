"""What the learning-check families (``row_count``, ``record_lookup``) share: their train and eval tasks
built by one generator, each checked as it is made."""

from __future__ import annotations

from collections.abc import Callable

from environments.core.types import Split, Task
from environments.tasks.checks import check_no_leakage, check_well_formed


def checked_splits(family: str, make: Callable[[int, Split], Task], train: int, evaluate: int) -> list[Task]:
    """Tasks ``0..train-1`` (train), then the next ``evaluate`` (eval), in a fixed order; each passes checks
    1 and 5 here (the run checks are each family's test's), else ``RuntimeError`` names the task."""
    tasks = [make(i, Split.TRAIN) for i in range(train)]
    tasks += [make(train + i, Split.EVAL) for i in range(evaluate)]
    for task in tasks:
        for check in (check_well_formed(task), check_no_leakage(task)):
            if not check.passed:
                raise RuntimeError(f"{family} task {task.id} fails {check.name}: {check.reason}")
    return tasks
