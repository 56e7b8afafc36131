"""A task on disk, and back. One folder per task; only ``instruction.md`` and ``workspace/`` reach the agent.

    <task-id>/
      task.json        id, source, kind, split, oracle, limits, allowed_hosts, env, reference command,
                       placement (work directory and mounts, when not the plain /workspace)
      instruction.md   the prompt
      workspace/       the agent's starting files
      hidden/          tests and oracle data (verifier only)
      solution/        the reference solution's files (laid over the workspace)

``read_task`` rejects unknown keys and missing parts with a ``TaskFormatError`` that names the file and
the fix; it never returns a half-read task. ``write_task`` then ``read_task`` gives back an equal task.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from environments.core.placement import SANDBOX_WORKSPACE, Mount, Placement
from environments.core.types import AnswerOracle, CommandOracle, Limits, Reference, Task
from environments.errors import UserError

TASK_FILE = "task.json"
INSTRUCTION_FILE = "instruction.md"
WORKSPACE_DIR = "workspace"
HIDDEN_DIR = "hidden"
SOLUTION_DIR = "solution"
_TOP_KEYS = {
    "id",
    "source",
    "kind",
    "split",
    "oracle",
    "limits",
    "allowed_hosts",
    "env",
    "reference",
    "placement",
    "judge",
}
_SKIP = {"__pycache__", ".pytest_cache", "node_modules"}


class TaskFormatError(UserError, ValueError):
    """A task folder or record that cannot become a ``Task``; the message names the file and the fix."""


def read_files(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` as ``{posix relative path: bytes}``; caches are skipped."""
    if not root.is_dir():
        return {}
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in _SKIP for part in rel.parts) or path.suffix == ".pyc":
            continue
        if path.is_symlink():
            raise TaskFormatError(f"{path}: symbolic links are not allowed in a task; copy the file instead")
        if path.is_file():
            files[rel.as_posix()] = path.read_bytes()
    return files


def write_files(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def oracle_to_dict(oracle: CommandOracle | AnswerOracle) -> dict[str, Any]:
    kind = "command" if isinstance(oracle, CommandOracle) else "answer"
    return {"type": kind, **asdict(oracle)}


def oracle_from_dict(raw: dict[str, Any], where: str) -> CommandOracle | AnswerOracle:
    raw = dict(raw)
    kind = raw.pop("type", None)
    cls = {"command": CommandOracle, "answer": AnswerOracle}.get(kind)
    if cls is None:
        raise TaskFormatError(f"{where}: oracle.type={kind!r}: must be 'command' or 'answer'")
    return cls(**raw)


def task_metadata(task: Task) -> dict[str, Any]:
    """The JSON-able fields of ``task`` other than its files and instruction."""
    return {
        "id": task.id,
        "source": task.source.value,
        "kind": task.kind.value,
        "split": task.split.value,
        "oracle": oracle_to_dict(task.oracle),
        "limits": asdict(task.limits),
        "allowed_hosts": list(task.allowed_hosts),
        "env": dict(task.env),
        "reference": {"command": task.reference.command},
        **({} if task.placement.plain else {"placement": placement_to_dict(task)}),
        **({} if task.judge == "isolated" else {"judge": task.judge}),
    }


def placement_to_dict(task: Task) -> dict[str, Any]:
    """The work directory and mounts; a task that builds its own image keeps its Harbor layout."""
    if task.placement.image is not None:
        raise TaskFormatError(
            f"task {task.id}: it builds its own image ({task.placement.image.reason}); keep it in Harbor's "
            "layout (a harbor source) instead of writing it in the project's layout"
        )
    return {"workdir": task.placement.workdir, "mounts": [asdict(m) for m in task.placement.mounts]}


def placement_from_dict(raw: Any) -> Placement:
    if not isinstance(raw, dict) or set(raw) - {"workdir", "mounts"}:
        raise ValueError(f"placement={raw!r}: give an object with workdir and mounts only")
    mounts = tuple(Mount(**m) for m in raw.get("mounts") or ())
    return Placement(workdir=raw.get("workdir", SANDBOX_WORKSPACE), mounts=mounts)


def task_from_parts(
    meta: dict[str, Any],
    instruction: str,
    workspace: dict[str, bytes],
    hidden: dict[str, bytes],
    solution: dict[str, bytes],
    where: str,
) -> Task:
    """Build a ``Task`` from decoded parts, turning every schema problem into a ``TaskFormatError``."""
    if not isinstance(meta, dict):
        raise TaskFormatError(f"{where}: the task record must be a JSON object")
    unknown = sorted(set(meta) - _TOP_KEYS)
    if unknown:
        raise TaskFormatError(f"{where}: unknown keys {unknown}; allowed: {sorted(_TOP_KEYS)}")
    missing = sorted({"id", "source", "kind", "oracle"} - set(meta))
    if missing:
        raise TaskFormatError(f"{where}: missing keys {missing}")
    try:
        reference_raw = dict(meta.get("reference") or {})
        extra = sorted(set(reference_raw) - {"command"})
        if extra:
            raise TaskFormatError(f"{where}: reference has unknown keys {extra}; only 'command' is allowed")
        return Task(
            id=meta["id"],
            source=meta["source"],
            kind=meta["kind"],
            split=meta.get("split", "train"),
            instruction=instruction,
            workspace=workspace,
            hidden=hidden,
            oracle=oracle_from_dict(meta["oracle"], where),
            reference=Reference(files=solution, command=reference_raw.get("command")),
            limits=Limits(**(meta.get("limits") or {})),
            allowed_hosts=tuple(meta.get("allowed_hosts") or ()),
            env=dict(meta.get("env") or {}),
            placement=placement_from_dict(meta["placement"]) if "placement" in meta else Placement(),
            judge=meta.get("judge", "isolated"),
        )
    except TaskFormatError:
        raise
    except (TypeError, ValueError, AttributeError) as exc:
        raise TaskFormatError(f"{where}: {exc}") from exc


def read_task(folder: Path) -> Task:
    """Read one task folder; raise ``TaskFormatError`` naming what is missing or wrong."""
    folder = Path(folder)
    meta_path = folder / TASK_FILE
    if not meta_path.is_file():
        raise TaskFormatError(f"{folder}: no {TASK_FILE}; a task folder needs task.json and instruction.md")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskFormatError(f"{meta_path}: not valid JSON ({exc})") from exc
    instruction_path = folder / INSTRUCTION_FILE
    if not instruction_path.is_file():
        raise TaskFormatError(f"{folder}: no {INSTRUCTION_FILE}; write the agent's prompt there")
    task = task_from_parts(
        meta,
        instruction_path.read_text(encoding="utf-8"),
        read_files(folder / WORKSPACE_DIR),
        read_files(folder / HIDDEN_DIR),
        read_files(folder / SOLUTION_DIR),
        str(folder),
    )
    if task.id != folder.name:
        raise TaskFormatError(f"{folder}: task.json says id={task.id!r}; rename the folder to match")
    return task


def write_task(task: Task, parent: Path) -> Path:
    """Write ``task`` as ``parent/<task.id>/`` (replacing an old copy) and return the folder."""
    folder = Path(parent) / task.id
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    meta = json.dumps(task_metadata(task), indent=2, sort_keys=True) + "\n"
    (folder / TASK_FILE).write_text(meta, encoding="utf-8")
    (folder / INSTRUCTION_FILE).write_text(task.instruction, encoding="utf-8")
    write_files(folder / WORKSPACE_DIR, task.workspace)
    write_files(folder / HIDDEN_DIR, task.hidden)
    write_files(folder / SOLUTION_DIR, task.reference.files)
    return folder


def find_task_folders(root: Path) -> list[Path]:
    """Task folders (those holding task.json) under ``root``, or ``root`` itself if it is one; sorted."""
    root = Path(root)
    if (root / TASK_FILE).is_file():
        return [root]
    return sorted(
        p.parent
        for p in root.rglob(TASK_FILE)
        if not (set(p.parent.relative_to(root).parts) & {WORKSPACE_DIR, HIDDEN_DIR, SOLUTION_DIR})
    )
