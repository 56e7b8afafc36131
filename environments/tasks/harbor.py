"""Read tasks in Harbor's layout: task.toml, instruction.md, environment/, tests/ and solution/.

Mapping, so that published Harbor task sets are run as Harbor runs them:

- id: ``[task].name`` (``org/name`` -> ``org.name``), else the folder name, lower-cased;
- source/kind/split: ``[metadata]`` keys of those names when present; otherwise a ``data`` category gives
  ``data``/``analysis`` and anything else ``repo``/``build`` (what most Harbor tasks are), split ``train``;
- workspace: what ``environment/Dockerfile`` copies into its ``WORKDIR`` (``/app`` when it sets none),
  at the same paths relative to it; without a Dockerfile, every file of ``environment/``;
- placement (``environments.core.placement``): the workspace is also the ``WORKDIR``, where commands
  start; ``tests/``, ``solution/`` and an empty logs folder are bound at ``/tests``, ``/solution``
  (read-only) and ``/logs`` (writable), so the task's absolute paths work as written, in every backend,
  with nothing rewritten;
- oracle: ``bash /tests/test.sh``; the verdict is the reward it writes to ``/logs/verifier`` (see
  ``CommandOracle.reward_dir``: ``reward.json``'s ``reward``, else ``reward.txt``, size-limited; >= 1
  passes, what Terminal-Bench counts as resolved; the exit status is ignored, as Harbor ignores it; no
  reward is a fail). The logs folder starts empty, so a reward the agent planted never counts; the grader
  runs under the reward guard (``reward_guard.py``), so neither does one that the agent's code, run by
  the grader, left where the grader's own write could not replace it: a grader a signal ended, a process
  other than the grader alive at or after the reward's last change, a link or a read-only file or folder
  on the reward's path are refused (a fail, with the reason);
- reference: ``solution/`` with ``bash /solution/solve.sh``;
- env: the Dockerfile's ``ENV`` lines (the agent's and the verifier's), plus ``[verifier].env`` for the
  verifier only;
- limits: ``[agent].timeout_sec``, ``[verifier].timeout_sec``, ``[environment]`` cpus and memory.

The image. A Dockerfile that only picks a Debian, Ubuntu or Python base, sets ``WORKDIR``/``ENV``, copies
build-context files into the workdir and makes folders runs on the shared sandbox image (same software,
no build). Anything more (installing packages, other base images, files outside the workdir, multi-stage
builds, ``USER``) makes the task carry its build context as a ``TaskImage`` with the first such line as
the reason: the Docker backend builds it once per content digest (``sandboxes/images.py``); the local
backend refuses the task with that reason and the fix, never running it on the wrong software.
``docker-compose`` environments and ``[environment].docker_image`` are rejected; ``allow_internet``
cannot be expressed as a host list and is dropped (verifiers that download their test tools at verify
time fail: the sandbox has no network).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from environments.core.placement import Mount, Placement, TaskImage
from environments.core.types import CommandOracle, Limits, Reference, Task
from environments.tasks.layout import TaskFormatError, read_files

HARBOR_TASK_FILE = "task.toml"
DEFAULT_WORKDIR = "/app"
HARBOR_DIR = ".harbor"
"""Where the verifier's folders sit in the verify tree, each bound at its absolute path."""
TESTS, SOLUTION, LOGS = f"{HARBOR_DIR}/tests", f"{HARBOR_DIR}/solution", f"{HARBOR_DIR}/logs"
MOUNTS = (Mount(TESTS, "/tests"), Mount(SOLUTION, "/solution"), Mount(LOGS, "/logs", writable=True))
VERIFY_COMMAND = "bash /tests/test.sh"
SOLVE_COMMAND = "bash /solution/solve.sh"
_COMPOSE_FILES = {"docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml"}
_BASE_IMAGES = {"python", "debian", "ubuntu", "buildpack-deps"}
_NOOP_INSTRUCTIONS = {
    "ARG",
    "LABEL",
    "EXPOSE",
    "CMD",
    "MAINTAINER",
    "ENTRYPOINT",
    "HEALTHCHECK",
    "STOPSIGNAL",
}
_HARMLESS_RUN = {"mkdir", "chmod", "touch", "true"}


def is_harbor_task(folder: Path) -> bool:
    return (Path(folder) / HARBOR_TASK_FILE).is_file() and (Path(folder) / "instruction.md").is_file()


@dataclass
class Image:
    """What a Dockerfile amounts to here: the workdir, the files it copies there, its ENV, and the first
    line the shared image cannot stand in for (None: the shared image runs the task)."""

    workdir: str = DEFAULT_WORKDIR
    copies: list[tuple[str, str]] = field(default_factory=list)
    """(source in the build context, destination relative to the workdir)."""
    env: dict[str, str] = field(default_factory=dict)
    needs_build: str | None = None


def _logical_lines(text: str) -> list[tuple[int, str]]:
    lines, buffer, start = [], "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        lines.append((start, buffer + stripped))
        buffer = ""
    if buffer:
        lines.append((start, buffer))
    return lines


def _env_pairs(args: str) -> dict[str, str]:
    words = shlex.split(args)
    if len(words) >= 2 and "=" not in words[0]:  # legacy "ENV KEY value with spaces"
        return {words[0]: " ".join(words[1:])}
    return dict(w.split("=", 1) for w in words if "=" in w)


def _relative_dest(dest: str, workdir: str) -> str | None:
    path = PurePosixPath(dest if dest.startswith("/") else f"{workdir}/{dest}")
    parts: list[str] = []
    for part in path.parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    full, base = PurePosixPath("/", *parts), PurePosixPath(workdir)
    if full != base and base not in full.parents:
        return None
    rel = full.relative_to(base).as_posix()
    return "" if rel == "." else rel


def parse_dockerfile(text: str, where: str) -> Image:
    """What ``text`` means for the workspace and whether the task needs its own image (module docstring)."""
    image, froms = Image(), 0

    def needs(at: str, why: str) -> None:
        image.needs_build = image.needs_build or f"{at}: {why}"

    for number, line in _logical_lines(text):
        instruction, _, args = line.partition(" ")
        instruction, args = instruction.upper(), args.strip()
        at = f"Dockerfile line {number} {line[:70]!r}"
        if instruction == "FROM":
            froms += 1
            repo = args.split()[0].split("@")[0].rsplit(":", 1)[0].rsplit("/", 1)[-1] if args else ""
            if froms > 1 or " as " in f" {args.lower()} ":
                needs(at, "a multi-stage build")
            elif repo not in _BASE_IMAGES:
                needs(at, f"base image {repo!r}")
        elif instruction == "WORKDIR":
            image.workdir = str(PurePosixPath(args if args.startswith("/") else f"{image.workdir}/{args}"))
        elif instruction == "ENV":
            pairs = _env_pairs(args)
            if "PATH" in pairs or any("$" in v for v in pairs.values()):
                needs(at, "ENV that extends PATH or expands variables")
            image.env.update(pairs)
        elif instruction in ("COPY", "ADD"):
            words = shlex.split(args)
            if any(w.startswith("--from") for w in words) or any("://" in w for w in words):
                needs(at, "files from another stage or a URL")
                continue
            words = [w for w in words if not w.startswith("--")]
            if len(words) < 2:
                raise TaskFormatError(f"{where}: {at}: {instruction} needs a source and a destination")
            dest = _relative_dest(words[-1], image.workdir)
            if dest is None:
                needs(at, f"files outside WORKDIR {image.workdir}")
                continue
            to_dir = words[-1].endswith("/") or len(words) > 2
            image.copies += [(src, dest + ("/" if to_dir and dest else "")) for src in words[:-1]]
        elif instruction == "RUN":
            commands = [c.strip() for c in re.split(r"&&|;|\|\|", args) if c.strip()]
            bad = [c for c in commands if c.split()[0] not in _HARMLESS_RUN]
            if bad:
                needs(at, f"build step {bad[0][:60]!r}")
        elif instruction not in _NOOP_INSTRUCTIONS:
            needs(at, f"{instruction}")
    return image


def _copied_files(context: dict[str, bytes], image: Image, where: str) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for src, dest in image.copies:
        src = src.strip("/") if src not in (".", "./") else ""
        src = src.removeprefix("./")
        if src in context:  # one file
            name = f"{dest}{PurePosixPath(src).name}" if dest.endswith("/") or not dest else dest
            files[name] = context[src]
            continue
        under = {p: b for p, b in context.items() if not src or p.startswith(f"{src}/")}
        if not under:
            raise TaskFormatError(f"{where}: COPY {src or '.'}: no such file in environment/")
        prefix = dest.rstrip("/")
        for path, data in under.items():
            rel = path[len(src) + 1 :] if src else path
            files[f"{prefix}/{rel}" if prefix else rel] = data
    return files


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


def _workspace(
    folder: Path, config: dict[str, Any], task_id: str
) -> tuple[dict[str, bytes], Image, TaskImage | None]:
    context = read_files(folder / "environment")
    if config.get("environment", {}).get("docker_image"):
        raise TaskFormatError(
            f"{folder / HARBOR_TASK_FILE}: [environment].docker_image names a prebuilt image, which is not "
            "supported; give the task an environment/Dockerfile instead"
        )
    compose = sorted(set(context) & _COMPOSE_FILES)
    if compose:
        raise TaskFormatError(f"{folder}/environment/{compose[0]}: multi-container tasks are not supported")
    if "Dockerfile" not in context:
        return context, Image(), None
    where = str(folder / "environment" / "Dockerfile")
    image = parse_dockerfile(context["Dockerfile"].decode("utf-8", "replace"), where)
    own = TaskImage(context, image.needs_build, task_id) if image.needs_build else None
    files = {p: b for p, b in context.items() if p != "Dockerfile"}
    return _copied_files(files, image, where), image, own


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
    workspace, image, own_image = _workspace(folder, config, task_id)
    hidden = {f"{TESTS}/{p}": b for p, b in read_files(folder / "tests").items()}
    solution = {f"{SOLUTION}/{p}": b for p, b in read_files(folder / "solution").items()}
    command = SOLVE_COMMAND if f"{SOLUTION}/solve.sh" in solution else None
    verifier_env = {**image.env, **dict(config.get("verifier", {}).get("env", {}))}
    try:
        placement = Placement(workdir=image.workdir, mounts=MOUNTS, image=own_image)
        return Task(
            id=task_id,
            source=meta.get("source", "data" if is_data else "repo"),
            kind=meta.get("kind", "analysis" if is_data else "build"),
            split=meta.get("split", "train"),
            instruction=(folder / "instruction.md").read_text(encoding="utf-8"),
            workspace=workspace,
            hidden=hidden,
            oracle=CommandOracle(VERIFY_COMMAND, env=verifier_env, reward_dir=f"{LOGS}/verifier"),
            reference=Reference(files=solution, command=command),
            limits=_limits(config),
            env=image.env,
            placement=placement,
        )
    except (TypeError, ValueError) as exc:
        raise TaskFormatError(f"{folder}: {exc}") from exc


def find_harbor_tasks(root: Path) -> list[Path]:
    """Harbor task folders under ``root`` (``root`` itself if it is one), sorted."""
    root = Path(root)
    if is_harbor_task(root):
        return [root]
    return sorted(p.parent for p in root.rglob(HARBOR_TASK_FILE) if is_harbor_task(p.parent))
