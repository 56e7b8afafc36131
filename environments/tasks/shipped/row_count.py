"""The learning-check family: how many records a CSV holds. One shell call solves every task.

The CPU learning check asks whether RL makes the tiny agent's sessions shorter without losing pass@1.
That needs tasks the 5M-parameter tiny agent can actually solve, and a gap between what its
demonstrations do and what is needed. Every task here is solved by the same command
(``ROW_COUNT_COMMAND``), so the tiny agent can learn it, while each task's answer (its row count) differs,
so only running it passes; the demonstrations (``row_count_plan``) mostly look around first with 1-4 calls
nobody needs (``head``, ``cat answer.txt``, ``ls``, ``wc -l``), so a trained policy has calls to drop, and
about one in five goes straight to the command, so the SFT start samples the short path GRPO can raise.

48 train and 48 eval tasks (48 sessions per checkpoint keep the pass@1 interval within about +-0.14), and
24 validation tasks (``row-count-validation``, numbered far after the demonstrations' extra tasks), on
which the learning check chooses the checkpoint it reports, so the eval tasks judge it unseen.
The reward's 0.1 x (1 - tool_calls/15) is the only thing that separates a one-call solution from a
five-call one.
"""

from __future__ import annotations

import random

from environments.core.types import AnswerOracle, Kind, Limits, Reference, Source, Split, Task
from environments.tasks.shipped.families import checked_splits

SEED = 20261129
TRAIN_TASKS = 48
EVAL_TASKS = 48
VALIDATION_TASKS = 24
VALIDATION_FIRST = 10_000
"""The validation tasks' first number: past the train, eval and any demonstration tasks."""
ROW_COUNT_COMMAND = "tail -n +2 data.csv | wc -l > answer.txt"
MIN_ROWS, MAX_ROWS = 6, 60
LIMITS = Limits(agent_timeout_s=300.0, verify_timeout_s=30.0, memory_mb=1024, max_processes=32)
"""The data tasks' limits: opencode's runtime alone is killed under 512 MB."""

TITLES = (
    ("Library loans", ("member", "title", "branch")),
    ("Ferry crossings", ("vessel", "route", "weather")),
    ("Orchard harvests", ("grower", "variety", "grade")),
    ("Museum visits", ("visitor", "gallery", "ticket")),
    ("Bicycle repairs", ("customer", "part", "mechanic")),
    ("Choir rehearsals", ("singer", "piece", "hall")),
    ("Garden plantings", ("gardener", "plant", "bed")),
    ("Bakery orders", ("customer", "bread", "shop")),
)
_WORDS = (
    "amber birch cedar delta ember fern garnet hazel iris juniper kestrel linden maple nettle olive "
    "poppy quartz rowan sage thistle umber violet willow yarrow zinnia"
).split()


def _csv(rng: random.Random, columns: tuple[str, ...], rows: int) -> bytes:
    lines = [",".join(columns)]
    lines += [",".join(rng.choice(_WORDS) for _ in columns) for _ in range(rows)]
    return ("\n".join(lines) + "\n").encode()


def instruction(title: str) -> str:
    return (
        f"{title} are in `data.csv`, one record per line under a header line.\n\n"
        "How many records does `data.csv` hold? Do not count the header line.\n\n"
        "Write only the answer (a number, nothing else) to `answer.txt` in the working directory.\n"
    )


def row_count_task(index: int, split: Split, name: str = "") -> Task:
    """Task ``index`` of the family (its data seeded by the index), named ``rows-<name or split>-<index>``."""
    rng = random.Random(SEED * 1000 + index)
    title, columns = TITLES[index % len(TITLES)]
    rows = rng.randint(MIN_ROWS, MAX_ROWS)
    return Task(
        id=f"rows-{name or split.value}-{index:03d}",
        source=Source.DATA,
        kind=Kind.ANALYSIS,
        split=split,
        instruction=instruction(title),
        workspace={"data.csv": _csv(rng, columns, rows)},
        hidden={},
        oracle=AnswerOracle(expected=rows),
        reference=Reference(command=ROW_COUNT_COMMAND),
        limits=LIMITS,
    )


def row_count_demo_tasks(count: int) -> list[Task]:
    """``count`` more train tasks of the family, numbered after its train and eval tasks (other data than
    either): demonstrations for an agent that needs more than the family's 48 train tasks give."""
    first = TRAIN_TASKS + EVAL_TASKS
    return [row_count_task(first + i, Split.TRAIN) for i in range(count)]


def row_count_validation_tasks() -> list[Task]:
    """The family's validation tasks, as a set of its own whose tasks are all held out (an evaluation of
    it runs them all; a training run on ``row-count`` never draws them)."""
    return [row_count_task(VALIDATION_FIRST + i, Split.EVAL, "validation") for i in range(VALIDATION_TASKS)]


def row_count_tasks() -> list[Task]:
    """The family's train tasks, then its eval tasks, in a fixed order; each passes checks 1 and 5 here
    (the run checks are the test's: ``tests/environments/tasks/test_row_count.py``)."""
    return checked_splits("row-count", row_count_task, TRAIN_TASKS, EVAL_TASKS)
