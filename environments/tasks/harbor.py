"""Read tasks in Harbor's layout: task.toml, instruction.md, environment/, tests/ and solution/.

Mapping, so that published Harbor task sets can be validated and used here:

- id: ``[task].name`` (``org/name`` -> ``org.name``), else the folder name, lower-cased;
- source/kind/split: ``[metadata]`` keys of those names when present; otherwise a ``data`` category gives
  ``data``/``analysis`` and anything else ``repo``/``build`` (what most Harbor tasks are), split ``train``;
- workspace: what ``environment/Dockerfile`` copies into its ``WORKDIR`` (``/app`` when it sets none),
  at the same paths relative to it; without a Dockerfile, every file of ``environment/``;
- hidden: ``tests/`` as ``tests/...`` plus the runner ``.harbor/run.py``; the oracle is
  ``python .harbor/run.py verify``;
- reference: ``solution/`` as ``solution/...``, run with ``python .harbor/run.py solve``;
- env: the Dockerfile's ``ENV`` lines (the agent's and the verifier's), plus ``[verifier].env`` for the
  verifier only;
- limits: ``[agent].timeout_sec``, ``[verifier].timeout_sec``, ``[environment]`` cpus and memory.

Harbor's verdict. Harbor runs ``/tests/test.sh`` with the task's tests uploaded to ``/tests`` and reads the
score from ``/logs/verifier/reward.json`` (an object of numeric fields; its ``reward`` key, else
``reward.txt`` as the scalar) or ``/logs/verifier/reward.txt`` (one number); test.sh's exit status is
ignored. Harbor does not define "pass"; a task here passes when that reward is >= 1 (full marks, what
Terminal-Bench counts as resolved). When test.sh writes no reward, a non-zero exit is a fail and a zero
exit cannot be judged (also a fail, with a reason saying so).

Absolute paths. The runner rewrites, in the fresh verify copy only, the absolute prefixes ``/tests``,
``/solution``, ``/logs`` and the image's ``WORKDIR`` in the test (or solution) files to the copy's own
absolute folders, then runs the script from the copy's root. We rewrite rather than mount because our
runners share no mount model: ``SubprocessRunner`` runs on the host, where creating ``/tests`` needs root
and would race every verifier running in parallel; the local sandbox binds only ``/workspace``; the Docker
backend's image is shared by all tasks. The rewrite works in all three, touches nothing outside the copy,
and the copy is thrown away. It matches whole path prefixes (``/tests`` or ``/tests/x``, never
``/tests_data`` or ``a/tests``); a path assembled at run time (``"/" + "tests"``) is not caught. The logs
folder is emptied before test.sh runs, so a reward the agent planted in its workspace never counts.

The image. Tasks run on our shared base image (Debian with this Python), not on their own: a Dockerfile
may use ``FROM`` a Debian, Ubuntu or Python image, ``WORKDIR``, ``COPY``/``ADD`` of build-context files
into the workdir, ``ENV``, ``ARG``, ``LABEL``, ``EXPOSE``, ``CMD``, and ``RUN`` steps made only of
``mkdir``/``chmod``/``touch``. Anything else (installing packages, multi-stage builds, other base images)
would be silently missing here, so ``load_harbor_task`` rejects it with a ``TaskFormatError`` naming the
line. Building per-task images is not supported (the Docker backend builds one shared image only).
``docker-compose`` environments and ``[environment].docker_image`` are rejected the same way;
``allow_internet`` cannot be expressed as a host list and is dropped.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from environments.tasks.layout import TaskFormatError, read_files
from environments.tasks.types import CommandOracle, Limits, Reference, Task

HARBOR_TASK_FILE = "task.toml"
RUNNER_PATH = ".harbor/run.py"
DEFAULT_WORKDIR = "/app"
PASS_REWARD = 1.0
_COMPOSE_FILES = {"docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml"}
_BASE_IMAGES = {"python", "debian", "ubuntu", "buildpack-deps"}
_NOOP_INSTRUCTIONS = {"ARG", "LABEL", "EXPOSE", "CMD", "MAINTAINER"}
_HARMLESS_RUN = {"mkdir", "chmod", "touch", "true"}
_FIX = (
    "our sandboxes run the shared base image (Debian with this Python) and build no per-task image; "
    "drop the step if the base already provides it, or add what it installs to "
    "environments/sandboxes/docker/Dockerfile"
)

# The runner that goes into the verify copy (and the reference's). Stdlib only: it runs inside the sandbox,
# where this project cannot be imported. Exit 0 = reward >= PASS_REWARD; the last line says why.
_RUNNER = r'''"""Run a Harbor task's tests/test.sh (verify) or solution/solve.sh (solve) in this folder."""
import json, os, re, shutil, subprocess, sys

ROOT = os.getcwd()
PREFIXES = json.loads(%(prefixes)r)
PASS_REWARD = %(pass_reward)r
PATTERN = re.compile(
    r"(?<![\w.~/])(" + "|".join(re.escape(p) for p in sorted(PREFIXES, key=len, reverse=True))
    + r")(?![\w.-])"
)


def target(match):
    return os.path.normpath(os.path.join(ROOT, PREFIXES[match.group(1)]))


def rewrite(folder):
    for base, _dirs, names in os.walk(os.path.join(ROOT, folder)):
        for name in names:
            path = os.path.join(base, name)
            if os.path.islink(path):
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            new = PATTERN.sub(target, text)
            if new != text:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)


def reward(logs):
    json_path, text_path = os.path.join(logs, "reward.json"), os.path.join(logs, "reward.txt")
    if os.path.isfile(json_path):
        with open(json_path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict):
            raise ValueError("reward.json is not an object")
        value = data.get("reward")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if not os.path.isfile(text_path):
            raise ValueError("reward.json has no numeric 'reward' and there is no reward.txt")
    if os.path.isfile(text_path):
        with open(text_path, encoding="utf-8") as f:
            text = f.read().strip()
        if not text:
            raise ValueError("reward.txt is empty")
        return float(text)
    return None


def main(mode):
    folder, script = ("tests", "test.sh") if mode == "verify" else ("solution", "solve.sh")
    rewrite(folder)
    logs = os.path.join(ROOT, PREFIXES["/logs"])
    if os.path.islink(logs) or os.path.isfile(logs):
        os.unlink(logs)
    shutil.rmtree(logs, ignore_errors=True)
    for sub in ("verifier", "agent"):
        os.makedirs(os.path.join(logs, sub))
    code = subprocess.call(["bash", os.path.join(folder, script)], cwd=ROOT)
    if mode != "verify":
        return code
    try:
        value = reward(os.path.join(logs, "verifier"))
    except (ValueError, OSError) as exc:
        print("harbor: cannot read the reward: %%s" %% exc)
        return 2
    if value is None:
        print("harbor: test.sh exited %%d and wrote no reward.txt or reward.json" %% code)
        return 1 if code else 2
    ok = value >= PASS_REWARD
    print("harbor: reward %%s %%s %%s" %% (value, ">=" if ok else "<", PASS_REWARD))
    return 0 if ok else 1


sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "verify"))
'''


def runner_script(workdir: str) -> bytes:
    """The verify/solve runner for a task whose image works in ``workdir``; see the module docstring."""
    prefixes = {"/tests": "tests", "/solution": "solution", "/logs": ".harbor/logs"}
    if workdir not in ("/", *prefixes):
        prefixes[workdir.rstrip("/")] = "."
    text = _RUNNER % {"prefixes": json.dumps(prefixes, sort_keys=True), "pass_reward": PASS_REWARD}
    return text.encode()


def is_harbor_task(folder: Path) -> bool:
    return (Path(folder) / HARBOR_TASK_FILE).is_file() and (Path(folder) / "instruction.md").is_file()


@dataclass
class Image:
    """What a supported Dockerfile amounts to: the workdir, the files it copies there and its ENV."""

    workdir: str = DEFAULT_WORKDIR
    copies: list[tuple[str, str]] = field(default_factory=list)
    """(source in the build context, destination relative to the workdir)."""
    env: dict[str, str] = field(default_factory=dict)


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
    """The supported subset of a Dockerfile (module docstring); raise ``TaskFormatError`` on the rest."""
    image, froms = Image(), 0
    for number, line in _logical_lines(text):
        instruction, _, args = line.partition(" ")
        instruction, args = instruction.upper(), args.strip()
        at = f"{where} line {number}: {line[:80]!r}"
        if instruction == "FROM":
            froms += 1
            repo = args.split()[0].split("@")[0].rsplit(":", 1)[0].rsplit("/", 1)[-1] if args else ""
            if froms > 1 or " as " in f" {args.lower()} ":
                raise TaskFormatError(f"{at}: multi-stage builds are not supported; {_FIX}")
            if repo not in _BASE_IMAGES:
                raise TaskFormatError(f"{at}: base image {repo!r} is not one we provide; {_FIX}")
        elif instruction == "WORKDIR":
            image.workdir = str(PurePosixPath(args if args.startswith("/") else f"{image.workdir}/{args}"))
        elif instruction == "ENV":
            pairs = _env_pairs(args)
            if "PATH" in pairs or any("$" in v for v in pairs.values()):
                raise TaskFormatError(
                    f"{at}: ENV that extends PATH or expands variables is not supported; {_FIX}"
                )
            image.env.update(pairs)
        elif instruction in ("COPY", "ADD"):
            words = shlex.split(args)
            if any(w.startswith("--from") for w in words) or any("://" in w for w in words):
                raise TaskFormatError(f"{at}: only build-context files can be copied; {_FIX}")
            words = [w for w in words if not w.startswith("--")]
            if len(words) < 2:
                raise TaskFormatError(f"{at}: {instruction} needs a source and a destination")
            dest = _relative_dest(words[-1], image.workdir)
            if dest is None:
                raise TaskFormatError(
                    f"{at}: copies outside WORKDIR {image.workdir}; only the workdir becomes the "
                    "agent's workspace, so copy the files there"
                )
            to_dir = words[-1].endswith("/") or len(words) > 2
            image.copies += [(src, dest + ("/" if to_dir and dest else "")) for src in words[:-1]]
        elif instruction == "RUN":
            commands = [c.strip() for c in re.split(r"&&|;|\|\|", args) if c.strip()]
            bad = [c for c in commands if c.split()[0] not in _HARMLESS_RUN]
            if bad:
                raise TaskFormatError(f"{at}: build step {bad[0][:60]!r} cannot run here; {_FIX}")
        elif instruction not in _NOOP_INSTRUCTIONS:
            raise TaskFormatError(f"{at}: {instruction} is not supported; {_FIX}")
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


def _workspace(folder: Path, config: dict[str, Any]) -> tuple[dict[str, bytes], Image]:
    context = read_files(folder / "environment")
    if config.get("environment", {}).get("docker_image"):
        raise TaskFormatError(
            f"{folder / HARBOR_TASK_FILE}: [environment].docker_image names a prebuilt image; {_FIX}"
        )
    compose = sorted(set(context) & _COMPOSE_FILES)
    if compose:
        raise TaskFormatError(f"{folder}/environment/{compose[0]}: multi-container tasks are not supported")
    if "Dockerfile" not in context:
        return context, Image()
    where = str(folder / "environment" / "Dockerfile")
    image = parse_dockerfile(context.pop("Dockerfile").decode("utf-8", "replace"), where)
    return _copied_files(context, image, where), image


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
    workspace, image = _workspace(folder, config)
    runner = runner_script(image.workdir)
    hidden = {f"tests/{p}": b for p, b in read_files(folder / "tests").items()} | {RUNNER_PATH: runner}
    solution = {f"solution/{p}": b for p, b in read_files(folder / "solution").items()}
    command = None
    if "solution/solve.sh" in solution:
        solution[RUNNER_PATH] = runner
        command = f"python {RUNNER_PATH} solve"
    verifier_env = {**image.env, **dict(config.get("verifier", {}).get("env", {}))}
    try:
        return Task(
            id=task_id,
            source=meta.get("source", "data" if is_data else "repo"),
            kind=meta.get("kind", "analysis" if is_data else "build"),
            split=meta.get("split", "train"),
            instruction=(folder / "instruction.md").read_text(encoding="utf-8"),
            workspace=workspace,
            hidden=hidden,
            oracle=CommandOracle(f"python {RUNNER_PATH} verify", env=verifier_env),
            reference=Reference(files=solution, command=command),
            limits=_limits(config),
            env=image.env,
        )
    except (TypeError, ValueError) as exc:
        raise TaskFormatError(f"{folder}: {exc}") from exc


def find_harbor_tasks(root: Path) -> list[Path]:
    """Harbor task folders under ``root`` (``root`` itself if it is one), sorted."""
    root = Path(root)
    if is_harbor_task(root):
        return [root]
    return sorted(p.parent for p in root.rglob(HARBOR_TASK_FILE) if is_harbor_task(p.parent))
