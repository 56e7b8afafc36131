"""What a shell command does, read statically with atif-scan's shell reader.

`atif_scan.data.shell.parse` splits command text into simple commands (quotes removed,
`bash -c` strings, heredocs fed to a shell and `$(…)` read as nested commands). On top of it
this module adds what the guard's rules need and atif-scan doesn't keep:

- variables set earlier in the same command (`URL=https://x && curl $URL`, `export A=b`) are
  expanded in later words; a word that still holds `$NAME`, `${…}`, `$(…)` or backticks after
  that is marked unresolved, so rules can fail closed on it;
- `cd` is followed, so relative paths resolve against the directory a command runs in;
- program text an interpreter runs (`python -c`, `node -e`, a heredoc fed to `python3 -`) is
  collected as `code`, apart from heredoc bodies that are file contents.

Nothing is executed. Text the reader can't structure gives `complete=False`; callers then
judge the raw text with patterns or return unknown.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from atif_scan.data import shell

from .. import rx
from .shellfx import argument_effects
from .shellwords import resolve

INTERPRETER = rx.compile(r"(?:python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php)")
CODE_FLAGS = frozenset({"-c", "-e", "--eval", "-E", "-r", "-p"})
VARIABLE = rx.compile(r"\$\{?([A-Za-z_]\w*)\}?")
UNRESOLVED = rx.compile(r"\$[{(A-Za-z_]|`")
ASSIGNMENT = rx.compile(r"([A-Za-z_]\w*)=(.*)", rx.S)


@dataclass(frozen=True, slots=True)
class ShellCommand:
    name: str  # basename of the program, wrappers (sudo, env A=1, timeout) skipped
    argv: tuple[str, ...]  # words from the name on, variables expanded
    unresolved: tuple[bool, ...]  # per argv word: still holds an expansion
    writes: tuple[str, ...]  # files it writes (redirections, tee, cp/mv dest, in-place editors, VCS)
    cwd: str | None  # directory it runs in, when known
    env: tuple[tuple[str, str], ...]  # inline assignments before the name (`A=1 cmd`)
    deletes: tuple[str, ...] = ()  # files and folders it removes (rm -r, find -delete, mv sources)


@dataclass(frozen=True, slots=True)
class ShellView:
    complete: bool
    commands: tuple[ShellCommand, ...]
    code: tuple[str, ...]  # program text run by interpreters
    bodies: tuple[str, ...]  # every heredoc body (file contents or code)
    variables: tuple[tuple[str, str], ...]  # assignments seen, in order


def _expand(word: str, env: dict[str, str]) -> tuple[str, bool]:
    out = VARIABLE.sub(lambda m: env.get(m[1], m[0]), word) if "$" in word else word
    return out, bool(UNRESOLVED.search(out))


def _heredoc_targets(commands: list[shell.Command]) -> list[shell.Command]:
    """The non-shell commands whose heredocs became `bodies`, in body order."""
    out: list[shell.Command] = []
    for command in commands:
        if command.name in shell.SHELLS and not any(shell.SHELL_C.fullmatch(w) for w in command.words):
            continue
        out += [command for op, _, _ in command.redirects if op in ("<<", "<<-")]
    return out


MAX_LOOP_VALUES = 16
"""Values of a ``for`` loop a command is read with, one reading each."""


@functools.lru_cache(maxsize=4096)
def read_shell(text: str, cwd: str | None = None) -> ShellView:
    """The commands in `text`; cached because several rules read the same call."""
    script = shell.parse(text)
    if not script.complete:  # rewrite what the reader can't structure, then try again
        text = prepare(text)
        script = shell.parse(text)
    ordered = sorted(script.commands, key=lambda c: c.span[0])
    complete = script.complete
    if not complete and "<<" not in text:
        ordered, complete = _by_line(text)
    env: dict[str, str] = {}
    variables: list[tuple[str, str]] = []
    commands: list[ShellCommand] = []
    code: list[str] = []
    here = cwd
    if cwd:
        env["PWD"] = cwd
    links: dict[str, str] = {}

    def one(command: shell.Command) -> None:
        nonlocal here
        argv_spans = command.argv()
        lead = command.words[: len(command.words) - len(argv_spans)]
        inline: list[tuple[str, str]] = []
        for word in lead:
            assigned = ASSIGNMENT.fullmatch(word)
            if assigned:
                value, _ = _expand(assigned[2], env)
                inline.append((assigned[1], value))
        if not argv_spans and any(w.rsplit("/", 1)[-1] == "env" for w in command.words):
            # A bare `env` (wrappers are skipped by argv()) prints the environment.
            commands.append(ShellCommand("env", ("env",), (False,), (), here, tuple(inline)))
            return
        if not argv_spans:  # `A=1 && …`: a shell variable for later commands
            env.update(inline)
            variables.extend(inline)
            return
        expanded = [_expand(w, env) for w, _ in argv_spans]
        argv = tuple(w for w, _ in expanded)
        name = argv[0].rsplit("/", 1)[-1]
        if name == "export":
            for word in argv[1:]:
                assigned = ASSIGNMENT.fullmatch(word)
                if assigned:
                    env[assigned[1]] = assigned[2]
                    variables.append((assigned[1], assigned[2]))
        written = [resolve(_expand(p, env)[0], here) for p, _ in shell.writes(command)]
        more, deletes = argument_effects(name, argv, here)
        writes = tuple(links.get(p, p) for p in dict.fromkeys(written + more))
        if name == "ln" and len(argv) >= 3 and any(w.startswith("-") and "s" in w for w in argv[1:-2]):
            links[resolve(argv[-1], here)] = resolve(argv[-2], here)
        commands.append(
            ShellCommand(name, argv, tuple(u for _, u in expanded), writes, here, tuple(inline), deletes)
        )
        if INTERPRETER.fullmatch(name):
            for i, word in enumerate(argv[1:-1], start=1):
                if word in CODE_FLAGS:
                    code.append(argv[i + 1])
                    break
        if name in ("cd", "pushd") and len(argv) == 2 and not expanded[1][1]:
            here = resolve(argv[1], here) if not argv[1].startswith("~") else None
            if here:
                env["PWD"] = here

    loops: list[tuple[str, tuple[str, ...]]] = []
    for command in ordered:
        words = [w for w, _ in command.argv()]
        if words[:1] == ["for"] and len(words) >= 3 and words[2] == "in":
            loops.append((words[1], tuple(_expand(w, env)[0] for w in words[3:][:MAX_LOOP_VALUES])))
            continue
        if words[:1] == ["done"] and loops:
            loops.pop()
            continue
        bound = [(v, values) for v, values in loops if any(f"${v}" in w or f"${{{v}}}" in w for w in words)]
        if not bound:
            one(command)
            continue
        name, values = bound[-1]  # the innermost loop: the command runs once for each of its values
        before = env.get(name)
        for value in values:
            env[name] = value
            one(command)
        if before is None:
            env.pop(name, None)
        else:
            env[name] = before
    bodies = tuple(text[a:b] for a, b in script.bodies if a <= b <= len(text))
    targets = _heredoc_targets(ordered)
    for body, target in zip(bodies, targets, strict=False):
        if target.name and INTERPRETER.fullmatch(target.name):
            code.append(body)
    return ShellView(complete, tuple(commands), tuple(code), bodies, tuple(variables))


# Constructs atif-scan's reader doesn't structure, rewritten into forms it does: their bodies
# are what runs, so `f() { rm -r tests; }` is read as `{ rm -r tests; }`.
FUNCTION = rx.compile(r"(?:\bfunction\s+[A-Za-z_][\w-]*\s*(?:\(\s*\))?|\b[A-Za-z_][\w-]*\s*\(\s*\))\s*\{")
ARRAY = rx.compile(r"\b([A-Za-z_]\w*)\+?=\(([^()]*)\)")
LABEL = r"\s*\(?[^\s();|&]+(?:\s*\|\s*[^\s();|&]+)*\)"
CASE_HEAD = rx.compile(r"\bcase\s+\S+\s+in\b(?:" + LABEL + ")?")
CASE_LABEL = rx.compile(r"(?:;;&?|;&)(?:" + LABEL + ")?")


def prepare(text: str) -> str:
    if "(" in text and ("function" in text or "()" in text.replace(" ", "")):
        text = FUNCTION.sub("{ ", text)
    if "=(" in text:
        text = ARRAY.sub(lambda m: f'{m[1]}="{m[2]}"', text)
    if "case" in text and "esac" in text:
        text = CASE_HEAD.sub(": ;", text)
        text = CASE_LABEL.sub(";", text)
        text = rx.sub(r"\besac\b", ":", text)
    return text


def _by_line(text: str) -> tuple[list[shell.Command], bool]:
    """Commands of each line parsed alone, when the whole text doesn't parse."""
    out: list[shell.Command] = []
    complete = True
    offset = 0
    for line in text.split("\n"):
        script = shell.parse(line)
        complete = complete and script.complete
        out += sorted(script.commands, key=lambda c: c.span[0])
        offset += len(line) + 1
    return out, complete
