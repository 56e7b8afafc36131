"""Run the seven task checks over every task and print a summary.

    python -m environments.validate [PATH ...] [--jobs N] [--sandbox auto|docker]

PATH may be a folder of task folders (ours or Harbor's), one task folder, or a ``.jsonl`` dataset; with
none, the shipped task sets are built (or reused from the cache) and checked. Each failed check prints
one line ``FAIL <task> <check>: <reason>``; a task that cannot be read fails ``well_formed`` and is
counted under kind ``unknown``. A task whose tests are judged in-process prints ``JUDGE <task> judge:
in-process (<reason>)``. The last line is JSON: ``{"tasks", "valid", "invalid", "by_kind", "by_split",
"judged"}``, where each ``by_*`` entry is ``{"tasks": n, "valid": m}`` and ``judged`` counts tasks per
judge (``isolated``, ``in-process``). Exit status 1 if any task is
invalid. ``--sandbox docker`` runs every check in the Docker backend, which builds the images of Harbor
tasks whose Dockerfiles need them (``auto``: a subprocess or the local sandbox, see ``run_checks``).
Progress goes to stderr: a bar on a terminal, else a line every 10 s (``environments.progress``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from environments.core.types import Task
from environments.errors import cli_main
from environments.progress import progress
from environments.tasks.checks import CheckName, CheckResult, run_checks
from environments.tasks.harbor import find_harbor_tasks, load_harbor_task
from environments.tasks.jsonl import iter_jsonl
from environments.tasks.layout import TaskFormatError, find_task_folders, read_task

Item = tuple[str, Path | Task | TaskFormatError]


@dataclass(frozen=True, slots=True)
class TaskReport:
    task_id: str
    kind: str
    split: str
    results: tuple[CheckResult, ...]
    judge: str = "unknown"
    """How the task's tests are judged: ``isolated``, or ``in-process`` with the reason."""

    @property
    def valid(self) -> bool:
        return all(r.passed for r in self.results)


def iter_items(path: Path) -> Iterator[Item]:
    """Work items under ``path``: our folders, Harbor folders, or JSONL lines (tasks or their errors)."""
    if path.is_file() and path.suffix == ".jsonl":
        for item in iter_jsonl(path):
            yield "record", item
        return
    if not path.exists():
        yield "record", TaskFormatError(f"{path}: no such file or folder")
        return
    ours = find_task_folders(path)
    yield from (("folder", p) for p in ours)
    taken = set(ours)
    yield from (("harbor", p) for p in find_harbor_tasks(path) if p not in taken)


def check_item(item: Item, sandbox: str = "auto") -> TaskReport:
    """Load one item and run the checks; a load failure is a failed ``well_formed`` check."""
    how, what = item
    label = what.name if isinstance(what, Path) else getattr(what, "id", "?")
    try:
        if isinstance(what, TaskFormatError):
            raise what
        task = read_task(what) if how == "folder" else load_harbor_task(what) if how == "harbor" else what
    except TaskFormatError as exc:
        label = str(exc).split(": ", 1)[0] if isinstance(what, TaskFormatError) else label
        return TaskReport(label, "unknown", "unknown", (CheckResult(CheckName.WELL_FORMED, False, str(exc)),))
    assert isinstance(task, Task)
    from environments.integrity.judging import judge_plan

    plan = judge_plan(task)
    judge = plan.mode if plan.isolated else f"{plan.mode} ({plan.reason})"
    results = tuple(run_checks(task, _runner(sandbox)))
    return TaskReport(task.id, task.kind.value, task.split.value, results, judge)


def _runner(sandbox: str):
    if sandbox == "auto":
        return None
    from environments.attempt import make_backend
    from environments.sandboxes.runner import SandboxRunner

    return SandboxRunner(make_backend(sandbox))


def summarize(reports: list[TaskReport]) -> dict:
    summary: dict = {
        "tasks": len(reports),
        "valid": sum(r.valid for r in reports),
        "invalid": sum(not r.valid for r in reports),
        "by_kind": {},
        "by_split": {},
        "judged": {},
    }
    for report in reports:
        for key, value in (("by_kind", report.kind), ("by_split", report.split)):
            entry = summary[key].setdefault(value, {"tasks": 0, "valid": 0})
            entry["tasks"] += 1
            entry["valid"] += report.valid
        mode = report.judge.split(" ", 1)[0]
        summary["judged"][mode] = summary["judged"].get(mode, 0) + 1
    for key in ("by_kind", "by_split"):
        summary[key] = dict(sorted(summary[key].items()))
    return summary


def validate(paths: list[Path], jobs: int, sandbox: str = "auto") -> list[TaskReport]:
    """Check every item under ``paths``, reports in the items' order, with a progress display on stderr
    (``environments.progress``: a bar on a terminal, else a line every few seconds)."""
    items = [item for path in paths for item in iter_items(path)]
    check = partial(check_item, sandbox=sandbox)
    reports: list[TaskReport] = []
    with progress(len(items), "validate", "tasks") as shown, ExitStack() as stack:
        if jobs <= 1 or len(items) < 2:
            checked: Iterator[TaskReport] = map(check, items)
        else:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=jobs))
            checked = pool.map(check, items, chunksize=4)
        for report in checked:
            reports.append(report)
            shown.update(1)
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m environments.validate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("paths", nargs="*", type=Path, help="task folders, parents of them, or .jsonl files")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument(
        "--sandbox", choices=("auto", "local", "docker"), default="auto", help="where the checks run"
    )
    args = parser.parse_args(argv)
    _runner(args.sandbox)  # a backend that cannot run (no Docker engine) stops here, once, in one line
    paths = args.paths
    if not paths:
        from environments.tasks.shipped import build_shipped_tasks

        paths = [build_shipped_tasks()]
    reports = validate(paths, max(1, args.jobs), args.sandbox)
    for report in reports:
        for result in report.results:
            if not result.passed:
                print(f"FAIL {report.task_id} {result.name}: {result.reason}")
        if report.judge.startswith("in-process ("):
            print(f"JUDGE {report.task_id} judge: {report.judge}")
    print(json.dumps(summarize(reports), sort_keys=False))
    sys.stdout.flush()
    return 0 if all(r.valid for r in reports) else 1


if __name__ == "__main__":
    cli_main(main)
