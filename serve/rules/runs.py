"""Effects across calls: what a call runs that the session wrote earlier.

A script, Makefile target, package-manager script or hook written in one call and run in a later one
does its work when it runs: ``./scripts/check.sh``, ``make test``, ``npm test`` (with ``pretest`` and
``posttest``), ``git commit`` (``.git/hooks/pre-commit``), ``python tools/x.py``. ``record`` keeps the
text the session wrote into such files (whole-file writes, heredocs, edits applied to what was kept);
``run_calls`` turns a command that runs one of them into the calls its content makes (a shell command,
or Python code), so every rule judges the effect at the moment it happens, as ``derive`` does for
decoded payloads. Content the session never wrote (the task's own Makefile) is not judged here: running
the project's own targets is ordinary work.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Protocol

from .. import rx
from ..normalize import NormalCall, ToolKind
from .gates import is_gate_file
from .outcome import neutralizes_checks
from .paths import is_runner_config, is_shell_startup
from .shellwords import operands, option_values, resolve

if TYPE_CHECKING:
    from .shellread import ShellCommand, ShellView


class SessionFacts(Protocol):
    """What this module reads of ``facts.SessionFacts`` (which folds calls through ``record``)."""

    scripts: dict[str, str]
    cwd: str | None


MAX_KEPT = 64 * 1024
MAX_FILES = 64
RUNNABLE = rx.compile(
    r"(?:\.(?:sh|bash|zsh|py|js|mjs|cjs|ts|rb|pl|mk|rake|R|r|jl|php)$|(?:^|/)(?:GNU)?[Mm]akefile$|(?:^|/)package\.json$"
    r"|(?:^|/)(?:composer\.json|Rakefile|pom\.xml|build\.gradle(?:\.kts)?|settings\.gradle(?:\.kts)?|tox\.ini)$"
    r"|(?:^|/)\.git/hooks/[\w.-]+$|(?:^|/)\.husky/[\w.-]+$|(?:^|/)(?:bin|scripts?|tools|ci)/[\w.-]+$"
    r"|(?:^|/)[Jj]ustfile$|(?:^|/)\.envrc$)"
)
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "source", "."})
STARTUP_FILES = ("sitecustomize.py", "usercustomize.py")
"""Files Python runs at start-up from any folder on ``PYTHONPATH``."""
PYTHONS = rx.compile(r"^python(?:\d(?:\.\d+)?)?$")
NODES = frozenset({"node", "tsx", "ts-node", "bun", "deno"})
INTERPRETERS = frozenset({"Rscript", "ruby", "perl", "php", "julia"})
"""Other interpreters: what they run is judged as program text (its paths, hosts and commands)."""
PACKAGE_RUNNERS = frozenset({"npm", "yarn", "pnpm", "bun"})
MAKES = frozenset({"make", "gmake"})
PYTESTS = frozenset({"pytest", "py.test"})
RUNNER_CONFIG = {
    "tox": ("tox.ini",),
    "mvn": ("pom.xml", ".mvn/maven.config", ".mvn/jvm.config"),
    "mvnw": ("pom.xml", ".mvn/maven.config", ".mvn/jvm.config"),
    "gradle": ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"),
    "gradlew": ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"),
    "bazel": (".bazelrc", ".bazelrc.user", "user.bazelrc"),
    "bazelisk": (".bazelrc", ".bazelrc.user", "user.bazelrc"),
    "cargo": (".cargo/config.toml", ".cargo/config"),
}
"""Build files a runner reads: what the session wrote into them takes effect when it runs."""
RAKE_SH = rx.compile(r"""(?m)^\s*(?:sh|system|ruby)\s*\(?\s*(['"])(.+?)\1""")
GIT_ALIAS = "git-alias:"
"""Key prefix in ``scripts`` for git aliases (``git config alias.t '!…'``), run as ``git t``."""
MAKEFILE_OPTIONS = frozenset({"-f", "--file", "--makefile"})
MAKE_VALUES = MAKEFILE_OPTIONS | {"-C", "--directory", "-I", "--include-dir", "-o", "-W"}
"""make's options that take the next word as their value (so it is no target)."""
TARGET = rx.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)(.*)$")


def runnable(path: str) -> bool:
    return RUNNABLE.search(path) is not None


def gate_like(path: str) -> bool:
    """A file a check reads as it runs: a gate (lint, CI, build, benchmark), a runner's configuration, a
    shell start-up file."""
    return is_gate_file(path) or is_runner_config(path) or is_shell_startup(path)


CHECK_RUN = rx.compile(
    r"(?i)^(?:\S*/)?(?:make|gmake|pytest|py\.test|tox|nox|jest|vitest|mocha|rspec|rake|ctest|phpunit|phpstan|"
    r"pre-commit|golangci-lint|mypy|ruff|flake8|eslint|tsc|gradlew?|mvnw?|just|task)\b"
    r"|^(?:\S*/)?(?:npm|yarn|pnpm|bun)\s+(?:test|t|run|ci)\b|^(?:\S*/)?(?:cargo|go|swift|dotnet|mix|composer|bundle|"
    r"deno)\s+\S+|^git\s+(?:commit|push)\b|^(?:\S*/)?python\d?(?:\.\d+)?\s+-m\s+(?:pytest|unittest|nox|tox)\b"
    r"|^R(?:script)?\b|^(?:bash|sh)\s+\S*(?:test|check|ci|lint|verify)|^\./\S*(?:test|check|ci|lint|verify)"
)
"""A command that runs checks: the gates the session wrote are in force when it runs."""


def record(facts: SessionFacts, call: NormalCall, view: ShellView | None) -> None:
    """Keep what ``call`` writes into runnable files (see the module docstring)."""
    kept = facts.scripts
    for path, content in call.writes:
        _keep(kept, resolve(path, facts.cwd), content)
    for edit in call.edits:
        path = resolve(edit.path, facts.cwd)
        if path in kept and edit.old and edit.old in kept[path]:
            _keep(kept, path, kept[path].replace(edit.old, edit.new, 1))
        elif runnable(path):
            _keep(kept, path, (kept.get(path, "") + "\n" + edit.new).strip("\n"))
        elif gate_like(path):  # a gate known only by its edits: what they added
            before = {line.strip() for line in edit.old.splitlines()}
            added = "\n".join(line for line in edit.new.splitlines() if line.strip() not in before)
            _keep(kept, path, (kept.get(path, "") + "\n" + added).strip("\n"))
    if view is not None:
        for command in view.commands:
            if command.name in PACKAGE_RUNNERS:
                _set_package_scripts(kept, command, facts.cwd)
            words = [w for _, w in operands(command.argv, frozenset({"-f", "--file"}))]
            if command.name == "git" and words[:1] == ["config"] and len(words) >= 3:
                if words[1].startswith("alias.") and len(kept) < MAX_FILES:
                    body = words[2][1:] if words[2].startswith("!") else "git " + words[2]  # a subcommand
                    kept[GIT_ALIAS + words[1].removeprefix("alias.")] = body[:MAX_KEPT]
    if view is not None and view.bodies:
        writers = [c for c in view.commands if c.name in ("cat", "tee") and c.writes]
        for command, body in zip(writers, view.bodies, strict=False):
            for path in command.writes:
                appended = ">>" in " ".join(command.argv) or "-a" in command.argv
                _keep(kept, path, (kept.get(path, "") + "\n" + body) if appended else body)


def package_script_writes(name: str, view: ShellView) -> list[NormalCall]:
    """``npm pkg set scripts.test='vitest run || exit 0'`` as the write to ``package.json`` it is."""
    out = []
    for command in view.commands:
        pairs = _script_pairs(command) if command.name in PACKAGE_RUNNERS else []
        if pairs:
            content = json.dumps({"scripts": dict(pairs)})
            path = resolve("package.json", command.cwd)
            out.append(NormalCall(name, ToolKind.WRITE, writes=((path, content),)))
    return out


def _script_pairs(command: ShellCommand) -> list[tuple[str, str]]:
    words = [w for _, w in operands(command.argv, frozenset({"--workspace", "-w"}))]
    if words[:2] == ["pkg", "set"]:
        return [w.removeprefix("scripts.").partition("=")[::2] for w in words[2:] if w.startswith("scripts.")]
    if words[:1] == ["set-script"] and len(words) >= 3:
        return [(words[1], words[2])]
    return []


def _set_package_scripts(kept: dict[str, str], command: ShellCommand, cwd: str | None) -> None:
    """``npm pkg set scripts.NAME=TEXT …`` and ``npm set-script NAME TEXT``: the scripts join what is kept
    of ``package.json`` (the file as the session knows it, or only these scripts)."""
    pairs = _script_pairs(command)
    if not pairs:
        return
    path = resolve("package.json", command.cwd or cwd)
    try:
        package = json.loads(kept.get(path, "{}"))
    except ValueError:
        package = {}
    if not isinstance(package, dict):
        package = {}
    scripts = package.setdefault("scripts", {})
    if isinstance(scripts, dict):
        scripts.update(pairs)
        _keep(kept, path, json.dumps(package))


def _keep(kept: dict[str, str], path: str, content: str) -> None:
    if not (runnable(path) or gate_like(path)):
        return
    if path not in kept and len(kept) >= MAX_FILES:
        return
    kept[path] = content[:MAX_KEPT]


def run_calls(name: str, view: ShellView, facts: SessionFacts) -> list[NormalCall]:
    """The calls made by running files the session wrote (see the module docstring), and by an alias the
    command defines for itself (``git -c alias.x='!git rm -q tests/t.py' x``)."""
    inline = [
        NormalCall(name, ToolKind.SHELL, command=body, ran=True)
        for body in map(_inline_alias, view.commands)
        if body
    ]
    if not facts.scripts:
        return inline
    out: list[NormalCall] = inline
    judged: set[str] = set()  # files already judged as written now, once each

    def judge_written(path: str, text: str) -> None:
        if path not in judged:
            judged.add(path)
            out.append(NormalCall(name, ToolKind.WRITE, writes=((path, text),), ran=True))

    if any(CHECK_RUN.search(" ".join(c.argv)) for c in view.commands):
        for path, text in facts.scripts.items():  # every gate the session wrote, judged as it gates, and
            if gate_like(path) or neutralizes_checks(text):  # code that unmakes assertions where it loads
                judge_written(path, text)
    for command in view.commands:
        for kind, text in _runs(command, facts):
            if kind.startswith("file:"):  # a build file the runner reads: judged as written now
                judge_written(kind[5:], text)
            elif kind == "code":
                out.append(NormalCall(name, ToolKind.CODE, code=text, ran=True))
            else:
                out.append(NormalCall(name, ToolKind.SHELL, command=text, ran=True))
    return out


def _inline_alias(command: ShellCommand) -> str:
    """The body of a ``git -c alias.NAME=BODY NAME`` the command runs, or ""."""
    if command.name != "git":
        return ""
    aliases = {}
    for _, value in option_values(command.argv, frozenset({"-c"})):
        key, _, body = value.partition("=")
        if key.startswith("alias."):
            aliases[key.removeprefix("alias.")] = body[1:] if body.startswith("!") else "git " + body
    words = [w for _, w in operands(command.argv, frozenset({"-c", "-C"}))]
    return aliases.get(words[0], "") if words else ""


RUN_WRAPPERS = frozenset({"uv", "poetry", "pipenv", "hatch", "pdm", "rye", "pixi"})
"""Environment managers whose ``run`` runs the rest of the command as it is."""


def _runs(command: ShellCommand, facts: SessionFacts):
    kept, cwd = facts.scripts, command.cwd or facts.cwd
    argv = [w for w in command.argv if w]
    if not argv:
        return
    if command.name in RUN_WRAPPERS and len(argv) > 2 and argv[1] == "run":  # `uv run python tools/x.py`
        rest = argv[2:]
        inner = dataclasses.replace(
            command, name=rest[0].rsplit("/", 1)[-1], argv=tuple(rest), unresolved=command.unresolved[2:]
        )
        yield from _runs(inner, facts)
        return
    for key, value in command.env:  # `PYTHONPATH=.shim python -m pytest`: the shim's startup files load
        if key == "PYTHONPATH":
            for folder in filter(None, value.split(":")):
                for name in STARTUP_FILES:
                    path = resolve(f"{folder.rstrip('/')}/{name}", cwd)
                    if path in kept:
                        yield "file:" + path, kept[path]
    first = resolve(argv[0], cwd) if "/" in argv[0] else None
    if first in kept:  # ./scripts/check.sh, bin/run
        yield _language(first, kept[first]), kept[first]
        yield from _as_gate(first, kept[first])
        return
    words = [w for _, w in operands(command.argv, MAKE_VALUES if command.name in MAKES else frozenset())]
    if command.name in PYTESTS or (PYTHONS.match(command.name) and "-m" in argv and words[:1] == ["pytest"]):
        for path, text in kept.items():  # conftest.py files pytest loads: judged as written now
            if path.endswith("/conftest.py"):
                yield "file:" + path, text
        return
    if command.name in SHELLS or PYTHONS.match(command.name) or command.name in NODES | INTERPRETERS:
        script = resolve(words[0], cwd) if words else None
        if script in kept:
            yield ("shell" if command.name in SHELLS else "code"), kept[script]
            yield from _as_gate(script, kept[script])
        return
    if command.name in MAKES:
        makefile = next((v for _, v in option_values(command.argv, MAKEFILE_OPTIONS)), "Makefile")
        path = resolve(makefile, cwd)
        if path in kept:
            targets = [w for w in words if "=" not in w]
            yield "shell", _recipes(kept[path], targets)
        return
    if command.name in PACKAGE_RUNNERS:
        path = resolve("package.json", cwd)
        if path in kept:
            for script in _package_scripts(kept[path], words):
                yield "shell", script
        return
    if command.name == "git" and words and GIT_ALIAS + words[0] in kept:
        yield "shell", kept[GIT_ALIAS + words[0]]
        return
    runner = command.name.removeprefix("./")
    if runner in RUNNER_CONFIG:
        for name in RUNNER_CONFIG[runner]:
            path = resolve(name, cwd)
            if path in kept:
                yield "file:" + path, kept[path]
        return
    if command.name == "composer":
        path = resolve("composer.json", cwd)
        if path in kept:
            for script in _package_scripts(kept[path], [w for w in words if w != "run-script"]):
                yield "shell", script
        return
    if command.name == "rake" or (command.name == "bundle" and words[:2] == ["exec", "rake"]):
        for path, text in kept.items():
            if path.endswith((".rake", "/Rakefile")):
                for m in RAKE_SH.finditer(text):
                    yield "shell", m[2]
        return
    if command.name == "git" and words[:1] == ["commit"]:
        for hook in ("pre-commit", "commit-msg", "post-commit"):
            for base in (".git/hooks", ".husky"):
                path = resolve(f"{base}/{hook}", cwd)
                if path in kept:
                    yield "shell", kept[path]
                    yield from _as_gate(path, kept[path])
    if command.name == "just":
        path = resolve("justfile", cwd)
        if path in kept:
            yield "shell", _recipes(kept[path].replace("    ", "\t"), words[:1])
        return
    if command.name == "direnv" and words[:1] in (["exec"], ["allow"]):  # runs the .envrc it allows
        path = resolve(".envrc", cwd)
        if path in kept:
            yield "shell", kept[path]
        return
    for word in words[1:]:  # `bin/rails runner script/x.rb`, `bundle exec ruby x.rb`: a file it runs
        path = resolve(word, cwd)
        if path in kept and runnable(path):
            shell = path.endswith((".sh", ".bash", ".zsh")) or rx.match(r"#!.*\b(?:ba|z)?sh\b", kept[path])
            yield ("shell" if shell else "code"), kept[path]
            return


def _as_gate(path: str, content: str):
    """A gate the session wrote (a check script, a hook) judged as written now, at the moment it gates:
    a script that exits 0 whatever its checks say weakens the gate that runs it."""
    if is_gate_file(path):
        yield "file:" + path, content


def _language(path: str, content: str) -> str:
    """``code`` (Python or JavaScript, which ``derive`` reads as programs) or ``shell``."""
    if path.endswith((".py", ".js", ".mjs", ".cjs", ".ts")) or rx.match(r"#!.*\b(?:python|node)", content):
        return "code"
    return "shell"


def _recipes(makefile: str, targets: list[str]) -> str:
    """The recipe lines of ``targets`` (the first target when none) and of their prerequisites, one level
    deep, as one shell script (``@`` and ``-`` prefixes dropped)."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    order: list[str] = []
    current: list[str] = []
    for line in makefile.splitlines():
        if line.startswith("\t"):
            for target in current:
                rules[target][1].append(line.lstrip("\t").lstrip("@-+ "))
            continue
        found = TARGET.match(line)
        if found:
            names = found[1].split()
            current = names
            for target in names:
                rules.setdefault(target, (found[2].split(), []))
                if not target.startswith("."):
                    order.append(target)
        elif line.strip():
            current = []
    wanted = targets or order[:1]
    lines: list[str] = []
    for target in wanted:
        prerequisites, recipe = rules.get(target, ([], []))
        for prerequisite in prerequisites:
            lines += rules.get(prerequisite, ([], []))[1]
        lines += recipe
    return "\n".join(lines)


SCRIPT_PAIR = rx.compile(r'"([\w:.-]+)"\s*:\s*"((?:[^"\\\n]|\\.)*)"')


def _package_scripts(package_json: str, operands: list[str]) -> list[str]:
    """The scripts ``npm test`` / ``npm run NAME`` / ``yarn NAME`` runs, with their pre- and post- hooks."""
    try:
        scripts = json.loads(package_json).get("scripts") or {}
    except (ValueError, AttributeError):  # only an edit's fragment is known: its "name": "command" pairs
        scripts = {m[1]: m[2] for m in SCRIPT_PAIR.finditer(package_json)}
    if not isinstance(scripts, dict):
        return []
    words = [w for w in operands if w not in ("run", "run-script")]
    if not words:
        return []
    name = words[0]
    if name in ("install", "i", "ci", "add"):
        names = ["preinstall", "install", "postinstall", "prepare"]
    elif name in ("t", "tst"):
        names = ["pretest", "test", "posttest"]
    else:
        names = [f"pre{name}", name, f"post{name}"]
    return [str(scripts[n]) for n in names if isinstance(scripts.get(n), str)]
