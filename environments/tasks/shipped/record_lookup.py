"""The read-before-answer family: which value a CSV gives one record. The answer is a word only the data
holds, so an agent has to look the record up and carry what it read into the answer it writes.

Where the row-count family (``row_count``) is solved blind by one fixed command whose output goes straight
into ``answer.txt``, a session here reads before it answers: a ``grep`` for the record's code shows its
line, and the agent writes the value it saw. Each task asks about another code in other data, and the
values are drawn from ``WORDS`` (48 words), so no remembered answer passes more than a few tasks. The
demonstrations (``environments.demos``) look around first with 0-3 calls nobody needs, then the lookup and
the write: 2-6 calls where 2 are enough, so a trained policy has calls to drop without losing the read.
(One shell pipeline, ``REFERENCE_COMMAND``, solves a task without reading; it is the oracle's reference,
never demonstrated.)

48 train and 48 eval tasks, 24 validation tasks (``record-lookup-validation``, numbered far after the
demonstrations' extra tasks), as in the row-count family.
"""

from __future__ import annotations

import random
import re

from environments.core.types import AnswerOracle, Kind, Reference, Source, Split, Task
from environments.tasks.shipped.families import checked_splits
from environments.tasks.shipped.row_count import LIMITS, TITLES

SEED = 20261207
TRAIN_TASKS = 48
EVAL_TASKS = 48
VALIDATION_TASKS = 24
VALIDATION_FIRST = 10_000
"""The validation tasks' first number: past the train, eval and any demonstration tasks."""
ID_PREFIX = "lookup-"
MIN_ROWS, MAX_ROWS = 6, 30
WORDS = (
    "amber birch cedar delta ember fern garnet hazel iris juniper kestrel linden maple nettle olive poppy "
    "quartz rowan sage thistle umber violet willow yarrow zinnia acorn bramble clover dune elm flint grove "
    "heather ivy jasper kelp lichen moss nutmeg oak pebble quince reed spruce tansy urchin vetch wren"
).split()
REFERENCE_COMMAND = "grep '^{code},' data.csv | cut -d, -f2 > answer.txt"
_CODE = re.compile(r"code `([A-Z]\d{4})`")


def instruction(title: str, field: str, code: str) -> str:
    return (
        f"{title} are in `data.csv`, one record per line under a header line; each record has a code.\n\n"
        f"Which {field} does the record with code `{code}` have?\n\n"
        f"Write only that {field} (one word, nothing else) to `answer.txt` in the working directory.\n"
    )


def record_lookup_task(index: int, split: Split, name: str = "") -> Task:
    """Task ``index`` of the family (its data seeded by the index), named ``lookup-<name or split>-<i>``."""
    rng = random.Random(SEED * 1000 + index)
    title, columns = TITLES[index % len(TITLES)]
    field = columns[1 + index % (len(columns) - 1)]
    rows = rng.randint(MIN_ROWS, MAX_ROWS)
    codes = rng.sample(range(1000, 10000), rows)
    letter = rng.choice("ABCDEFGHJKLMNPRSTVWXZ")
    records = [(f"{letter}{number}", rng.choice(WORDS)) for number in codes]
    code, value = records[rng.randrange(rows)]
    lines = [f"code,{field}", *(f"{c},{v}" for c, v in records)]
    return Task(
        id=f"{ID_PREFIX}{name or split.value}-{index:03d}",
        source=Source.DATA,
        kind=Kind.ANALYSIS,
        split=split,
        instruction=instruction(title, field, code),
        workspace={"data.csv": ("\n".join(lines) + "\n").encode()},
        hidden={},
        oracle=AnswerOracle(expected=value),
        reference=Reference(command=REFERENCE_COMMAND.format(code=code)),
        limits=LIMITS,
    )


def is_record_lookup(task: Task) -> bool:
    return task.id.startswith(ID_PREFIX)


def asked_code(task: Task) -> str:
    """The code of the record a task of the family asks about."""
    found = _CODE.search(task.instruction)
    if not found:
        raise ValueError(f"task {task.id}: not a record-lookup task (no record code in its instruction)")
    return found.group(1)


def record_lookup_demo_tasks(count: int) -> list[Task]:
    """``count`` more train tasks of the family, numbered after its train and eval tasks (other data than
    either): demonstrations beyond the family's 48 train tasks."""
    first = TRAIN_TASKS + EVAL_TASKS
    return [record_lookup_task(first + i, Split.TRAIN) for i in range(count)]


def record_lookup_validation_tasks() -> list[Task]:
    """The family's validation tasks, a set of its own whose tasks are all held out."""
    first = VALIDATION_FIRST
    return [record_lookup_task(first + i, Split.EVAL, "validation") for i in range(VALIDATION_TASKS)]


def record_lookup_tasks() -> list[Task]:
    """The family's train tasks, then its eval tasks, in a fixed order; each passes checks 1 and 5 here
    (the run checks are the test's: ``tests/environments/tasks/test_record_lookup.py``)."""
    return checked_splits("record-lookup", record_lookup_task, TRAIN_TASKS, EVAL_TASKS)
