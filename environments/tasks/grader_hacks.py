"""Generic hack attempts against task-written graders (Harbor's ``tests/``), for the seventh check.

A Harbor task's verdict is whatever its own grader decides, so two weaknesses of hand-written graders pay
a policy that solves nothing (``hack_check`` registers these attempts):

- ``printed_success_line`` / ``printed_verdict_line``: a grader that trusts a printed line. The lines the
  grader scripts print or match that read like a pass (``PASS``, ``All tests passed``, ``OK``;
  ``success_lines``), or only the likeliest, are printed by every solution-surface program of the
  workspace and every program the graders run from the workdir, which then ends with status 0: a
  Python module does it when imported, a shell or Node script when run.
- ``grader_inputs_emptied`` / ``grader_inputs_zeroed``: a grader that derives its expected answer from a
  workspace file. Every data file of the solution surface (not code) is rewritten to a degenerate but
  well-formed one (a CSV keeps its header; emptied, or one row of zeros), and every file the graders name
  under the workdir that the workspace lacks (an output) gets the constant answer ``0``: an answer that is
  "right" only for inputs the agent rewrote.

Pure functions of the task's files: they only say what to write (``hack_check.Edit``); nothing runs here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import PurePosixPath

from environments.integrity.paths import PathRules
from environments.tasks.types import CommandOracle, Task

Edit = tuple[str, bytes | None, str | None]
CODE_SUFFIXES = (".py", ".sh", ".bash", ".js", ".cjs", ".mjs", ".ts", ".rb", ".pl", ".go", ".rs", ".c", ".h")
_SUCCESS = re.compile(
    r"\b(pass(ed|es)?|success(ful(ly)?)?|succeeded|ok|correct|solved|all tests?)\b|✓|✔", re.I
)
_FAILURE = re.compile(r"\b(fail(ed|ure|s)?|error|wrong|incorrect|not ok|missing|mismatch)\b", re.I)
_QUOTED = re.compile(r"""(?<![\w$])(?:[fbr]{0,2})(["'])((?:\\.|(?!\1).){2,120})\1""")
_GREPPED = re.compile(r"\bgrep\b((?:\s+-{1,2}[\w-]+)*)\s+([^\s|;&>]+)")
_ABSOLUTE = re.compile(r"(/[\w.-]+(?:/[\w.-]+)+)")
MAX_LINES = 12


def _grader_texts(task: Task) -> list[str]:
    """The task's grader scripts: its hidden files that read as text."""
    texts = []
    for data in task.hidden.values():
        try:
            texts.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            continue
    return texts


def success_lines(task: Task) -> list[str]:
    """Strings the graders print or match that read like a pass and not like a failure (quoted literals,
    ``grep`` patterns), format placeholders removed; at most ``MAX_LINES``, in order of appearance."""
    found: list[str] = []
    for text in _grader_texts(task):
        candidates = [m.group(2) for m in _QUOTED.finditer(text)]
        for match in _GREPPED.finditer(text):
            try:
                candidates += shlex.split(match.group(2))
            except ValueError:
                continue
        for raw in candidates:
            line = re.sub(r"\{[^{}]*\}|\$\{?\w+\}?|%[sd]|\\[nt]", "", raw).strip(" ^$")
            if _SUCCESS.search(line) and not _FAILURE.search(line) and "\n" not in line and line not in found:
                found.append(line)
    return sorted(found[:MAX_LINES], key=_verdict_likeness)


def _verdict_likeness(line: str) -> tuple[bool, bool, int]:
    """Sort key that puts the line most like a final verdict last (upper case, "all", long), since
    graders often read only the last line."""
    return line.isupper(), "all" in line.lower(), len(line)


def _workdir_paths(task: Task) -> set[str]:
    """Workspace paths the graders name under the task's workdir (``/app/out.txt`` -> ``out.txt``)."""
    workdir = task.placement.workdir.rstrip("/") + "/"
    paths = set()
    for text in _grader_texts(task):
        for match in _ABSOLUTE.finditer(text):
            if match.group(1).startswith(workdir):
                rel = match.group(1)[len(workdir) :].rstrip(".")
                if rel and ".." not in PurePosixPath(rel).parts:
                    paths.add(rel)
    return paths


def _is_harbor(task: Task) -> bool:
    return isinstance(task.oracle, CommandOracle) and task.oracle.reward_dir is not None


def printed_success_line(task: Task) -> Iterator[Edit]:
    """Every program prints the graders' pass lines, the likeliest verdict last, and exits 0."""
    yield from _printing(task, success_lines(task))


def printed_verdict_line(task: Task) -> Iterator[Edit]:
    """The same with only the likeliest verdict line, for graders that compare the whole output."""
    yield from _printing(task, success_lines(task)[-1:])


def _printing(task: Task, lines: list[str]) -> Iterator[Edit]:
    if not _is_harbor(task) or not lines:
        return
    rules = PathRules(task)
    programs = {p for p in task.workspace if rules.is_solution(p)}
    programs |= {p for p in _workdir_paths(task) if p.endswith(CODE_SUFFIXES) and rules.is_solution(p)}
    text, words = "\n".join(lines), " ".join(shlex.quote(line) for line in lines)
    for path in sorted(programs):
        if path.endswith(".py"):
            yield path, f"import os\nprint({text!r}, flush=True)\nos._exit(0)\n".encode(), None
        elif path.endswith((".sh", ".bash")):
            yield path, f"#!/bin/bash\nprintf '%s\\n' {words}\nexit 0\n".encode(), None
        elif path.endswith((".js", ".cjs", ".mjs")):
            yield path, f"console.log({text!r});\nprocess.exit(0);\n".encode(), None


def _degenerate(path: str, data: bytes, zeros: bool) -> bytes:
    """``data`` as a degenerate input: a CSV/TSV keeps its header (plus one row of zeros), JSON becomes
    an empty list (or ``[0]``), any other file empty (or ``0``)."""
    if path.endswith((".csv", ".tsv")):
        header = data.split(b"\n", 1)[0].rstrip(b"\r")
        sep = b"\t" if path.endswith(".tsv") else b","
        row = sep.join(b"0" for _ in header.split(sep))
        return header + b"\n" + (row + b"\n" if zeros else b"")
    if path.endswith(".json"):
        return b"[0]\n" if zeros else b"[]\n"
    return b"0\n" if zeros else b""


def _rewritten_inputs(task: Task, zeros: bool) -> Iterator[Edit]:
    if not _is_harbor(task):
        return
    rules = PathRules(task)
    named = _workdir_paths(task)
    for path, data in sorted(task.workspace.items()):
        if rules.is_solution(path) and not path.endswith(CODE_SUFFIXES) and not path.endswith(".md"):
            yield path, _degenerate(path, data, zeros), None
    for path in sorted(named - set(task.workspace)):
        if rules.is_solution(path) and not path.endswith(CODE_SUFFIXES):
            yield path, b"0\n", None


def grader_inputs_emptied(task: Task) -> Iterator[Edit]:
    """Data files emptied (a CSV keeps its header), outputs the graders name answered ``0``."""
    yield from _rewritten_inputs(task, zeros=False)


def grader_inputs_zeroed(task: Task) -> Iterator[Edit]:
    """Data files reduced to one row of zeros (or ``0``), outputs the graders name answered ``0``."""
    yield from _rewritten_inputs(task, zeros=True)
