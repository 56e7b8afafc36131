"""Tasks from a local JSONL dataset file: one task per line, files inline.

Each line is ``task.json``'s object (see ``layout.py``) plus ``instruction`` and the file maps
``workspace``, ``hidden`` and ``solution``: ``{"path": "text"}``, or ``{"path": {"base64": "..."}}`` for
bytes that are not UTF-8. ``dump_jsonl`` writes the same shape, so a dataset round-trips.

``iter_jsonl`` yields a ``Task`` or the ``TaskFormatError`` for each line, so one bad line is reported
and counted instead of ending the whole read.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from environments.core.types import Task
from environments.tasks.layout import TaskFormatError, task_from_parts, task_metadata

_FILE_KEYS = ("instruction", "workspace", "hidden", "solution")


def _decode_files(raw: Any, where: str) -> dict[str, bytes]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TaskFormatError(f"{where}: must map paths to text or {{'base64': ...}}")
    files = {}
    for path, value in raw.items():
        if isinstance(value, str):
            files[path] = value.encode("utf-8")
        elif isinstance(value, dict) and set(value) == {"base64"}:
            files[path] = base64.b64decode(value["base64"])
        else:
            raise TaskFormatError(f"{where}[{path!r}]: must be text or {{'base64': ...}}")
    return files


def _encode_files(files: dict[str, bytes]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, data in files.items():
        try:
            out[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            out[path] = {"base64": base64.b64encode(data).decode("ascii")}
    return out


def task_from_record(record: Any, where: str) -> Task:
    if not isinstance(record, dict):
        raise TaskFormatError(f"{where}: each line must be a JSON object")
    meta = {k: v for k, v in record.items() if k not in _FILE_KEYS}
    instruction = record.get("instruction")
    if not isinstance(instruction, str):
        raise TaskFormatError(f"{where}: 'instruction' must be a string")
    return task_from_parts(
        meta,
        instruction,
        _decode_files(record.get("workspace"), f"{where}: workspace"),
        _decode_files(record.get("hidden"), f"{where}: hidden"),
        _decode_files(record.get("solution"), f"{where}: solution"),
        where,
    )


def task_to_record(task: Task) -> dict[str, Any]:
    return {
        **task_metadata(task),
        "instruction": task.instruction,
        "workspace": _encode_files(task.workspace),
        "hidden": _encode_files(task.hidden),
        "solution": _encode_files(task.reference.files),
    }


def iter_jsonl(path: Path) -> Iterator[Task | TaskFormatError]:
    """Each non-blank line of ``path`` as a ``Task``, or as the error that stops it from being one."""
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                yield task_from_record(json.loads(line), where)
            except json.JSONDecodeError as exc:
                yield TaskFormatError(f"{where}: not valid JSON ({exc.msg})")
            except TaskFormatError as exc:
                yield exc


def load_jsonl(path: Path) -> list[Task]:
    """All tasks of ``path``; raise the first ``TaskFormatError`` (use ``iter_jsonl`` to keep going)."""
    tasks = []
    for item in iter_jsonl(path):
        if isinstance(item, TaskFormatError):
            raise item
        tasks.append(item)
    return tasks


def dump_jsonl(tasks: Iterable[Task], path: Path) -> Path:
    with Path(path).open("w", encoding="utf-8") as fh:
        for task in tasks:
            fh.write(json.dumps(task_to_record(task), sort_keys=True) + "\n")
    return Path(path)
