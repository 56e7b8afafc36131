"""Repo tasks from a recorded agent session and the repository it left: the session's work, undone.

    python -m environments.tasks.sessions TRACE --repo DIR --out TASKS_DIR [--id ID]

The session (any trace ``environments.traces.read`` reads: pi, opencode, hermes, ATIF, chat JSONL) is
read as steps: the files it read, wrote and edited, and the shell commands it ran, in its harness's tool
vocabulary. Undoing its edits and writes, last first, on the repository it left gives the state it
started from (an edit's new text back to its old; a written file back to what the session last read of
it, or gone when it never read it). The oracle is the last test command the session ran after its last
change (``pytest``, ``python -m pytest``/``unittest``, ``npm test``, ``node --test``, ``go test``).

The kind follows from the tests that command names:
- ``repair``: the session left those tests as they were: the task is the session's fix undone;
- ``build`` / ``extend``: the session wrote or changed those tests itself (a feature with its tests),
  ``build`` when it created source files, else ``extend``.
Either way the tests go to ``hidden`` (added only to the verifier's copy) and out of the start state.
The instruction is the session's first user message; the reference is the session's final files. A
candidate is kept only when it passes the seven checks (the start state must fail the tests, the
reference pass them). Questions about the code (``qa``) are not drawn from sessions yet.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from environments.core.runner import Runner
from environments.core.types import CommandOracle, Kind, Limits, Reference, Source, Task
from environments.errors import UsageError, cli_main
from environments.harnesses.registry import harness_spec
from environments.harnesses.steps import WORKSPACE, Edit, Read, Shell, Step, Write
from environments.sandboxes import LocalBackend
from environments.sandboxes.runner import SandboxRunner
from environments.tasks.candidates import Kept, id_from_name
from environments.traces.read import read_traces
from environments.traces.types import Conversation

TEST_COMMAND = re.compile(
    r"(^|[\s;&|(])(python3?\s+-m\s+(pytest|unittest)|pytest|npm\s+(run\s+)?test|node\s+--test|go\s+test)\b"
)
TEST_FILE = re.compile(r"(^|/)(test_[^/]*\.py|[^/]*_test\.(py|go)|[^/]*\.test\.[jt]s|tests?/.+)$")


def _args(call: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    function = call.get("function") or {}
    raw = function.get("arguments") or "{}"
    try:
        args = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except ValueError:
        args = {}
    return str(function.get("name") or ""), args if isinstance(args, dict) else {}


def _relative(path: str) -> str | None:
    """A path the session named, relative to its working directory (``/workspace``), or None outside it."""
    if not isinstance(path, str) or not path:
        return None
    pure = PurePosixPath(path)
    if pure.is_absolute():
        try:
            pure = pure.relative_to(WORKSPACE)
        except ValueError:
            return None
    text = str(pure)
    return None if text.startswith("..") or text == "." else text.removeprefix("./")


def session_steps(messages: Sequence[Mapping[str, Any]], harness: str) -> list[Step]:
    """The session's tool calls as steps, in order, with paths relative to its working directory and the
    text of each read filled in from its tool result (the last content the session saw of a file)."""
    parse = harness_spec(harness).parse_call  # an unknown harness: the error names the known
    results = {m.get("tool_call_id"): m.get("content") for m in messages if m.get("role") == "tool"}
    steps: list[Step] = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            step = parse(*_args(call), results.get(call.get("id")))
            if isinstance(step, Shell):
                steps.append(step)
            elif step is not None and (path := _relative(step.path)) is not None:
                steps.append(replace(step, path=path))
    return steps


def undo_session(final: dict[str, bytes], steps: Sequence[Step]) -> tuple[dict[str, bytes], set[str]]:
    """The files before the session, and the paths it created (written with no read before); raise
    ``ValueError`` when an edit cannot be undone exactly (its new text not found once in the file)."""
    files = dict(final)
    created: set[str] = set()
    before_write: dict[int, str | None] = {}
    last_read: dict[str, str] = {}
    for index, step in enumerate(steps):  # what the session had read of a file before each write
        if isinstance(step, Read) and step.text:
            last_read[step.path] = step.text
        elif isinstance(step, Write):
            before_write[index] = last_read.get(step.path)
            last_read[step.path] = step.content
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if isinstance(step, Write):
            before = before_write[index]
            if before is None:
                files.pop(step.path, None)
                created.add(step.path)
            else:
                files[step.path] = before.encode()
        elif isinstance(step, Edit):
            text = files.get(step.path, b"").decode("utf-8", errors="replace")
            for old, new in reversed(step.edits):
                if not new or text.count(new) != 1:
                    raise ValueError(
                        f"the edit of {step.path} cannot be undone exactly (its new text is not there once)"
                    )
                text = text.replace(new, old, 1)
            files[step.path] = text.encode()
    return files, created


def final_test_command(steps: Sequence[Step]) -> str | None:
    """The last test command the session ran after its last change."""
    last_change = max((i for i, s in enumerate(steps) if isinstance(s, Write | Edit)), default=-1)
    runs = [s.command for i, s in enumerate(steps) if isinstance(s, Shell) and i > last_change]
    tests = [c for c in runs if TEST_COMMAND.search(c)]
    return tests[-1] if tests else None


def _named_tests(command: str, files: Mapping[str, bytes]) -> set[str]:
    """Test files the command names (a folder names the test files under it)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    named = set()
    for word in words:
        word = word.split("::")[0].rstrip("/")
        for path in files:
            if (path == word or path.startswith(word + "/")) and TEST_FILE.search(path):
                named.add(path)
    return named


def first_user_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            if isinstance(content, str) and content.strip():
                return content.strip()
    return None


def session_task(
    final: dict[str, bytes], messages: Sequence[Mapping[str, Any]], harness: str, task_id: str
) -> Task:
    """The candidate task of one session (see the module docstring); ``ValueError`` says why there is none."""
    steps = session_steps(messages, harness)
    changed = {s.path for s in steps if isinstance(s, Write | Edit)}
    if not changed:
        raise ValueError("the session changed no file")
    command = final_test_command(steps)
    if command is None:
        raise ValueError("the session ran no tests after its last change")
    instruction = first_user_text(messages)
    if instruction is None:
        raise ValueError("the session has no user request")
    start, created = undo_session(final, steps)
    tests = _named_tests(command, final)
    if not tests:
        raise ValueError(f"the test command names no test file of the repository: {command!r}")
    written_tests = tests & changed
    reference = {path: final[path] for path in sorted(changed - written_tests) if path in final}
    if not reference:
        raise ValueError("the session changed only its tests")
    kind = Kind.REPAIR if not written_tests else Kind.BUILD if created - tests else Kind.EXTEND
    workspace = {p: data for p, data in start.items() if p not in tests}
    hidden = {p: final[p] for p in sorted(tests)}  # the verifier's copy of the tests, whatever the agent did
    return Task(
        id=task_id,
        source=Source.REPO,
        kind=kind,
        instruction=instruction + "\n",
        workspace=workspace,
        hidden=hidden,
        oracle=CommandOracle(command),
        reference=Reference(files=reference),
        limits=Limits(),
    )


def session_tasks(
    sessions: Sequence[tuple[str, dict[str, bytes], Sequence[Mapping[str, Any]], str]],
    runner: Runner,
    check: bool = True,
) -> Kept:
    """``(task id, repository after, messages, harness)`` per session: the tasks kept, and why the others
    were not."""
    report = Kept()
    for task_id, final, messages, harness in sessions:
        try:
            task = session_task(final, messages, harness, task_id)
        except ValueError as exc:
            report.rejected.append(f"{task_id}: {exc}")
            continue
        report.judge(task_id, task, runner, check)
    return report


def main(argv: list[str] | None = None) -> int:
    from environments.tasks.layout import read_files

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--repo", type=Path, required=True, help="the repository as the session left it")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--id", default="", help="task id (default: the trace's name)")
    parser.add_argument("--harness", default=None, help="when the trace does not name it")
    args = parser.parse_args(argv)
    if not args.trace.exists():
        raise UsageError(f"{args.trace}: no such trace file or folder; give a session a harness wrote")
    if not args.repo.is_dir():
        raise UsageError(f"--repo {args.repo}: no such folder; give the repository as the session left it")
    final = read_files(args.repo)
    found = [c for c in read_traces(args.trace) if isinstance(c, Conversation)]
    base = args.id or id_from_name(args.trace.stem, "session")
    sessions = [
        (base if len(found) == 1 else f"{base}-{i}", final, c.messages, args.harness or c.harness or "")
        for i, c in enumerate(found)
    ]
    report = session_tasks(sessions, SandboxRunner(LocalBackend(prefix="hxses")))
    return report.write(args.out, sessions=len(sessions))


if __name__ == "__main__":
    cli_main(main)
