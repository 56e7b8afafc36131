"""The task sets shipped with the project, generated here deterministically (no dataset hub is reachable).

``shipped_tasks()`` builds them in memory; ``build_shipped_tasks()`` writes them once into the cache
(``$HARNESS_ADAPTERS_CACHE/tasks/shipped-<fingerprint>/{data,repo}/<task-id>/``) and returns the folder.
The fingerprint hashes the source of ``environments/tasks`` (generators, the task code in ``code/``, and
the task type and checks they use), the output judge they embed (``integrity/probe.py``,
``probe_child.cjs``) and the pandas/numpy versions, so any change gives a new folder instead of a stale
one. Same code, same bytes: a test regenerates and compares.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

from environments.core.types import Source, Task
from environments.tasks.layout import write_task


def shipped_tasks() -> list[Task]:
    """Data-analysis tasks, then repo tasks, in a fixed order."""
    from environments.tasks.shipped.data_tasks import data_tasks
    from environments.tasks.shipped.repo_tasks import repo_tasks

    return data_tasks() + repo_tasks()


def _row_count_tasks() -> list[Task]:
    from environments.tasks.shipped.row_count import row_count_tasks

    return row_count_tasks()


def _row_count_validation_tasks() -> list[Task]:
    from environments.tasks.shipped.row_count import row_count_validation_tasks

    return row_count_validation_tasks()


def _record_lookup_tasks() -> list[Task]:
    from environments.tasks.shipped.record_lookup import record_lookup_tasks

    return record_lookup_tasks()


def _record_lookup_validation_tasks() -> list[Task]:
    from environments.tasks.shipped.record_lookup import record_lookup_validation_tasks

    return record_lookup_validation_tasks()


_TASK_SETS = {
    "shipped": shipped_tasks,
    "row-count": _row_count_tasks,
    "row-count-validation": _row_count_validation_tasks,
    "record-lookup": _record_lookup_tasks,
    "record-lookup-validation": _record_lookup_validation_tasks,
}
TASK_SETS = tuple(_TASK_SETS)
"""``shipped``: the data-analysis and repo tasks; ``row-count``: the learning-check family (solved blind by
one command); ``record-lookup``: the read-before-answer family (a value only the data holds);
``<family>-validation``: a family's validation tasks (all held out), to choose a checkpoint on."""


def unknown_task_set(name: str) -> str | None:
    """What is wrong with ``name`` as a task set (the choices), or None: for configs to report."""
    return None if name in _TASK_SETS else f"task_set={name!r}: choose one of {', '.join(TASK_SETS)}"


def task_set(name: str) -> list[Task]:
    """The tasks of a named set (``TASK_SETS``), in a fixed order."""
    problem = unknown_task_set(name)
    if problem:
        raise ValueError(problem)
    return _TASK_SETS[name]()


def fingerprint() -> str:
    digest = hashlib.sha256()
    package = Path(__file__).parents[1]
    for path in sorted(p for p in package.rglob("*") if p.suffix in (".py", ".js")):  # code/ holds JS too
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    judge = package.parent / "integrity"  # the output judge travels inside the repo tasks' hidden files
    for path in (judge / "probe.py", judge / "probe_child.cjs"):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for name in ("pandas", "numpy"):
        digest.update(f"{name}={metadata.version(name)}".encode())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    root = os.environ.get("HARNESS_ADAPTERS_CACHE") or Path.home() / ".cache" / "harness-adapters"
    return Path(root) / "tasks"


def write_shipped_tasks(dest: Path) -> Path:
    """Write every shipped task under ``dest/{data,repo}/``; return ``dest``."""
    for task in shipped_tasks():
        write_task(task, dest / ("data" if task.source is Source.DATA else "repo"))
    return dest


def build_shipped_tasks(force: bool = False) -> Path:
    """The cached folder of shipped tasks, generated on first use (a lock stops two builders racing)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"shipped-{fingerprint()}"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if final.exists() and not force:
            return final
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            write_shipped_tasks(tmp)
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


__all__ = [
    "TASK_SETS",
    "build_shipped_tasks",
    "cache_root",
    "fingerprint",
    "shipped_tasks",
    "task_set",
    "unknown_task_set",
    "write_shipped_tasks",
]
