"""Verifiable tasks: their on-disk layouts (ours, Harbor's, JSONL), the oracle and seven checks.

The task type, its placement and the ``Runner`` seam live in ``environments.core`` (re-exported here); the
shipped task sets in ``environments.tasks.shipped``; ``python -m environments.validate`` checks any set.
Sandboxing is not here: the default runner isolates nothing (see ``environments.core.runner``).
"""

from environments.core.runner import Runner, RunResult, SubprocessRunner
from environments.core.types import (
    AnswerOracle,
    CommandOracle,
    Kind,
    Limits,
    Oracle,
    Reference,
    Source,
    Split,
    Task,
)
from environments.tasks.checks import CheckName, CheckResult, Trial, run_checks
from environments.tasks.harbor import find_harbor_tasks, load_harbor_task
from environments.tasks.jsonl import dump_jsonl, iter_jsonl, load_jsonl
from environments.tasks.layout import TaskFormatError, find_task_folders, read_task, write_task
from environments.tasks.oracle import OracleRun, Verdict, verify

__all__ = [
    "AnswerOracle",
    "CheckName",
    "CheckResult",
    "CommandOracle",
    "Kind",
    "Limits",
    "Oracle",
    "OracleRun",
    "Reference",
    "RunResult",
    "Runner",
    "Source",
    "Split",
    "SubprocessRunner",
    "Task",
    "TaskFormatError",
    "Trial",
    "Verdict",
    "dump_jsonl",
    "find_harbor_tasks",
    "find_task_folders",
    "iter_jsonl",
    "load_harbor_task",
    "load_jsonl",
    "read_task",
    "run_checks",
    "verify",
    "write_task",
]
