"""Read tasks in Harbor's layout: task.toml, instruction.md, environment/, tests/ and solution/.

Mapping, so that published Harbor task sets can be validated and used here:

- id: ``[task].name`` (``org/name`` -> ``org.name``), else the folder name, lower-cased;
- source/kind/split: ``[metadata]`` keys of those names when present; otherwise a ``data`` category gives
  ``data``/``analysis`` and anything else ``repo``/``build`` (what most Harbor tasks are), split ``train``;
- workspace: the files of ``environment/`` except the Dockerfile/compose file, which describe the image;
- hidden: ``tests/`` as ``tests/...``; the oracle is ``bash tests/test.sh`` and passes on exit status 0;
- reference: ``solution/`` as ``solution/...``, run with ``bash solution/solve.sh``;
- limits: ``[agent].timeout_sec``, ``[verifier].timeout_sec``, ``[environment]`` cpus and memory.

Not covered: building the Dockerfile (a sandbox job), Harbor's absolute paths (``/tests``, ``/logs``) and
graded rewards from ``reward.txt``; ``allow_internet`` cannot be expressed as a host list and is dropped.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from environments.tasks.layout import TaskFormatError, read_files
from environments.tasks.types import CommandOracle, Limits, Reference, Task

HARBOR_TASK_FILE = "task.toml"
_IMAGE_FILES = {"Dockerfile", "docker-compose.yaml", "docker-compose.yml"}


def is_harbor_task(folder: Path) -> bool:
    return (Path(folder) / HARBOR_TASK_FILE).is_file() and (Path(folder) / "instruction.md").is_file()


def _memory_mb(env: dict[str, Any]) -> int | None:
    if "memory_mb" in env:
        return int(env["memory_mb"])
    text = str(env.get("memory", "")).strip().upper()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([GM])I?B?", text)
    if not match:
        return None
    return int(float(match[1]) * (1024 if match[2] == "G" else 1))


def _limits(config: dict[str, Any]) -> Limits:
    values: dict[str, Any] = {}
    if "timeout_sec" in config.get("agent", {}):
        values["agent_timeout_s"] = float(config["agent"]["timeout_sec"])
    if "timeout_sec" in config.get("verifier", {}):
        values["verify_timeout_s"] = float(config["verifier"]["timeout_sec"])
    env = config.get("environment", {})
    if "cpus" in env:
        values["cpus"] = float(env["cpus"])
    memory = _memory_mb(env)
    if memory is not None:
        values["memory_mb"] = memory
    return Limits(**values)


def load_harbor_task(folder: Path) -> Task:
    """One Harbor task folder as a ``Task``; raise ``TaskFormatError`` naming what is missing."""
    folder = Path(folder)
    if not is_harbor_task(folder):
        raise TaskFormatError(f"{folder}: not a Harbor task; it needs task.toml and instruction.md")
    try:
        config = tomllib.loads((folder / HARBOR_TASK_FILE).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(f"{folder / HARBOR_TASK_FILE}: not valid TOML ({exc})") from exc
    if not (folder / "tests" / "test.sh").is_file():
        raise TaskFormatError(f"{folder}: no tests/test.sh; Harbor's verifier entry point is required")
    meta = config.get("metadata", {})
    name = str(config.get("task", {}).get("name") or folder.name)
    task_id = re.sub(r"[^a-z0-9._-]+", "-", name.lower().replace("/", ".")).strip("-.")
    is_data = "data" in str(meta.get("category", "")).lower()
    workspace = {p: b for p, b in read_files(folder / "environment").items() if p not in _IMAGE_FILES}
    hidden = {f"tests/{p}": b for p, b in read_files(folder / "tests").items()}
    solution = {f"solution/{p}": b for p, b in read_files(folder / "solution").items()}
    command = "bash solution/solve.sh" if "solution/solve.sh" in solution else None
    try:
        return Task(
            id=task_id,
            source=meta.get("source", "data" if is_data else "repo"),
            kind=meta.get("kind", "analysis" if is_data else "build"),
            split=meta.get("split", "train"),
            instruction=(folder / "instruction.md").read_text(encoding="utf-8"),
            workspace=workspace,
            hidden=hidden,
            oracle=CommandOracle("bash tests/test.sh", env=dict(config.get("verifier", {}).get("env", {}))),
            reference=Reference(files=solution, command=command),
            limits=_limits(config),
        )
    except (TypeError, ValueError) as exc:
        raise TaskFormatError(f"{folder}: {exc}") from exc


def find_harbor_tasks(root: Path) -> list[Path]:
    """Harbor task folders under ``root`` (``root`` itself if it is one), sorted."""
    root = Path(root)
    if is_harbor_task(root):
        return [root]
    return sorted(p.parent for p in root.rglob(HARBOR_TASK_FILE) if is_harbor_task(p.parent))
