"""Replay every shipped task's reference solution through each harness, call by call, into the guard.

A replay session is what an honest agent that knows the answer sends: the harness's captured system
prompt and declared tools, the task instruction, then the reference solution as that harness's tool
calls (inspect the task files, write or edit the solution files, run the tests), each answered by a tool
result shaped like the harness's own. Two variants per (task, harness):

- ``demo``: the SFT demonstration (``environments.demos``), i.e. the sessions the model is trained
  on, plus the visible test run for a repo task whose demo did not draw one; a task the demos skip
  (``change_too_large``) gets the ``full`` plan;
- ``full``: list the workspace, read every task file (a large data file: its head), write or edit each
  reference file (an analysis task's ``solve.py`` is written with the write tool and run with the shell
  tool), run the visible tests, ``cat`` the answer file.

Each call goes through ``GuardSession`` the way the proxy would: ``sync`` the history before the
assistant turn, ``check`` the call, then the call and its result join the history. The guard should
allow every one of them: any block or unknown here is a false positive on honest work, and so is a
notice (a finding held at notice, ``serve.precision``, counted with the blocked calls).

``task_protected_paths`` yields each task with the paths the guard may later protect (existing tests,
runner configuration, shadowing files, graders and hidden files), for wiring into the guard config.

Nothing here does I/O beyond loading the shipped tasks. ``python -m serve.replay`` prints the counts per
harness, the blocked calls, and last a JSON line ``{"sessions", "calls", "blocked_calls", ...}``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from environments.core.types import AnswerOracle, Task
from environments.demos import (
    Read,
    Shell,
    Step,
    Write,
    _answer_display,
    _edit_step,
    _head,
    _ls,
    _Skip,
    _test_run,
    _text,
    plan_task,
    session_messages,
)
from environments.errors import UsageError, cli_main
from environments.harness_prompts import HARNESSES, harness_tools
from environments.integrity.paths import GRADER_DIRS, protected_paths

from .decisions import Allow
from .engine import GuardConfig, GuardSession

ARG_CHARS = 160
"""How much of a blocked call's arguments a report shows."""
MAX_READ_CHARS = 8_000
"""The thorough replay reads a task file whole up to this size, else its head."""


@dataclass(frozen=True, slots=True)
class Blocked:
    """One call of a replay session the guard did not allow."""

    task_id: str
    harness: str
    variant: str
    index: int
    """The call's position in the session (0-based)."""
    verdict: str
    """``block``, ``unknown``, or ``notice`` (a finding held at notice, ``serve.precision``: the call
    was allowed, but honest work should draw no finding at all)."""
    rule: str
    reason: str
    tool: str
    arguments: str

    def line(self, width: int = ARG_CHARS) -> str:
        args = self.arguments if len(self.arguments) <= width else self.arguments[: width - 1] + "…"
        where = f"{self.task_id} {self.harness}/{self.variant} #{self.index}"
        return f"{where} {self.verdict} {self.rule}/{self.reason} {self.tool} {args}"


@dataclass(frozen=True, slots=True)
class Replay:
    task_id: str
    harness: str
    variant: str
    calls: int
    blocked: tuple[Blocked, ...]


# ---------------------------------------------------------------- sessions


def _change(path: str, before: str | None, after: str) -> Step:
    """A new file written whole; an existing one edited (written whole when no unique edit exists)."""
    if before is None:
        return Write(path, after)
    try:
        return _edit_step(path, before, after)
    except _Skip:
        return Write(path, after)


def full_steps(task: Task) -> tuple[list[Step], str]:
    """The thorough replay: list the workspace, read every task file (a large data file: its head),
    write or edit each reference file, run the reference command, run the visible tests, show the answer."""
    steps: list[Step] = [_ls(task)]
    for path in sorted(task.workspace):
        try:
            text = _text(task.workspace[path])
        except _Skip:
            continue
        steps.append(Read(path, text) if len(text) <= MAX_READ_CHARS else _head(path, text))
    changed = False
    for path, data in task.reference.files.items():
        after = _text(data)
        before = _text(task.workspace[path]) if path in task.workspace else None
        if before != after:
            steps.append(_change(path, before, after))
            changed = True
    if task.reference.command:
        steps.append(Shell(task.reference.command, ""))
    elif not changed:
        raise _Skip("no_change")
    test = _test_run(task)
    if test is not None:
        steps.append(test)
    if isinstance(task.oracle, AnswerOracle):
        steps.append(Shell(f"cat {task.oracle.answer_path}", _answer_display(task.oracle) + "\n"))
    return steps, "Done."


def demo_steps(task: Task) -> tuple[list[Step], str]:
    """The SFT demo's plan (the thorough one when the demos skip the task), ending with the visible test
    run for a task judged by a test command."""
    try:
        steps, answer = plan_task(task)
    except _Skip:
        return full_steps(task)
    test = _test_run(task)
    if test is not None and not any(isinstance(s, Shell) and s.command == test.command for s in steps):
        steps.append(test)
    return steps, answer


VARIANTS = {"demo": demo_steps, "full": full_steps}
"""``demo``: the SFT demonstration's calls; ``full``: read everything, change, run, test."""


def replay_messages(task: Task, harness: str, variant: str = "demo") -> list[dict[str, Any]]:
    """The whole replay session of ``task`` in ``harness``: system, user, one call a turn, final answer."""
    steps, answer = VARIANTS[variant](task)
    return session_messages(task, harness, steps, answer)


# ---------------------------------------------------------------- judging


def judge_session(
    task_id: str,
    harness: str,
    messages: Sequence[dict[str, Any]],
    tools: object,
    config: GuardConfig | None = None,
    variant: str = "demo",
) -> Replay:
    """Feed ``messages`` to a fresh ``GuardSession`` as the proxy would, checking every tool call."""
    session = GuardSession(tools, config)
    blocked: list[Blocked] = []
    calls = 0
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        session.sync(messages[:i])
        for call in message["tool_calls"]:
            decision = session.check(call)
            fn = call["function"]
            found = (
                [("notice", h.rule_id, h.reason) for h in decision.notices]
                if isinstance(decision, Allow)
                else [(decision.verdict, decision.rule_id, decision.reason)]
            )
            for verdict, rule_id, reason in found:
                blocked.append(
                    Blocked(
                        task_id,
                        harness,
                        variant,
                        calls,
                        str(verdict),
                        str(rule_id),
                        str(reason),
                        fn["name"],
                        fn["arguments"],
                    )
                )
            calls += 1
    session.sync(messages)
    return Replay(task_id, harness, variant, calls, tuple(blocked))


def replay_task(task: Task, harness: str, variant: str = "demo", config: GuardConfig | None = None) -> Replay:
    """Replay ``task`` in ``harness`` through the guard as a rollout opens it: the task's allowed hosts
    as the allowlist and its protected paths (tests, runner configuration, graders) from its metadata."""
    config = config or GuardConfig(allowlist=tuple(task.allowed_hosts), protected=protected_paths(task))
    messages = replay_messages(task, harness, variant)
    return judge_session(task.id, harness, messages, harness_tools(harness), config, variant)


def replay_all(
    tasks: Iterable[Task] | None = None,
    harnesses: Sequence[str] = HARNESSES,
    variants: Sequence[str] = tuple(VARIANTS),
) -> Iterator[Replay]:
    """Every (task, harness, variant) replay, tasks in shipped order."""
    if tasks is None:
        from environments.tasks.shipped import shipped_tasks

        tasks = shipped_tasks()
    for task in tasks:
        for harness in harnesses:
            for variant in variants:
                yield replay_task(task, harness, variant)


# ---------------------------------------------------------------- protected paths


def task_protected_paths(
    tasks: Iterable[Task] | None = None, root: str | None = None
) -> Iterator[tuple[Task, tuple[str, ...]]]:
    """Each task with the paths an agent may read but must not change: its workspace files off the
    solution surface (``environments.integrity.paths.protected_paths``: tests, runner configuration,
    shadowing files, graders), its hidden files and the grader-only folders (``.oracle``, ``.harbor``,
    ...). Relative POSIX paths, sorted; with ``root`` (e.g. ``/workspace``) each is joined under it."""
    if tasks is None:
        from environments.tasks.shipped import shipped_tasks

        tasks = shipped_tasks()
    for task in tasks:
        paths = set(protected_paths(task)) | set(task.hidden) | set(GRADER_DIRS)
        ordered = tuple(sorted(paths))
        if root is not None:
            ordered = tuple(str(PurePosixPath(root) / p) for p in ordered)
        yield task, ordered


# ---------------------------------------------------------------- CLI


def summarize(replays: Iterable[Replay]) -> tuple[dict[str, Any], list[Blocked]]:
    per_harness: dict[str, Counter[str]] = {}
    by_rule: Counter[str] = Counter()
    blocked: list[Blocked] = []
    for replay in replays:
        counts = per_harness.setdefault(f"{replay.harness}/{replay.variant}", Counter())
        counts["sessions"] += 1
        counts["calls"] += replay.calls
        counts["blocked_sessions"] += bool(replay.blocked)
        counts["blocked_calls"] += len(replay.blocked)
        for b in replay.blocked:
            by_rule[f"{b.verdict}:{b.rule}/{b.reason}"] += 1
        blocked.extend(replay.blocked)
    total = sum(per_harness.values(), Counter())
    summary = {
        "sessions": total["sessions"],
        "calls": total["calls"],
        "blocked_calls": total["blocked_calls"],
        "blocked_sessions": total["blocked_sessions"],
        "by_rule": dict(by_rule.most_common()),
        "by_harness": {h: dict(c) for h, c in sorted(per_harness.items())},
    }
    return summary, blocked


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serve.replay", description=__doc__.split("\n")[0])
    parser.add_argument("--harness", choices=HARNESSES, action="append", help="repeatable; default: all")
    parser.add_argument("--variant", choices=tuple(VARIANTS), action="append", help="default: all")
    parser.add_argument("--task", action="append", help="task id (repeatable); default: all shipped")
    parser.add_argument("--width", type=int, default=ARG_CHARS, help="argument characters per blocked call")
    args = parser.parse_args(argv)
    from environments.tasks.shipped import shipped_tasks

    tasks = shipped_tasks()
    if args.task:
        wanted = set(args.task)
        unknown = sorted(wanted - {t.id for t in tasks})
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(t.id for t in tasks), n=3)
            hint = f"did you mean {', '.join(close)}?" if close else "give a shipped task's id"
            raise UsageError(f"--task {unknown[0]}: no shipped task has that id; {hint}")
        tasks = [t for t in tasks if t.id in wanted]
    variants = tuple(args.variant or VARIANTS)
    summary, blocked = summarize(replay_all(tasks, tuple(args.harness or HARNESSES), variants))
    for harness, counts in summary["by_harness"].items():
        line = " ".join(f"{k}={v}" for k, v in counts.items())
        sys.stdout.write(f"{harness}: {line}\n")
    for rule, n in summary["by_rule"].items():
        sys.stdout.write(f"rule {rule}: {n}\n")
    for b in blocked:
        sys.stdout.write(b.line(args.width).replace("\n", "\\n") + "\n")
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0


__all__ = [
    "Blocked",
    "Replay",
    "VARIANTS",
    "demo_steps",
    "full_steps",
    "judge_session",
    "replay_all",
    "replay_messages",
    "replay_task",
    "task_protected_paths",
]

if __name__ == "__main__":
    cli_main(main)
