"""Apply a task's reference and judge a produced workspace with the task's oracle.

``verify`` is the verifier's core: it copies what the agent (or the reference) produced into a fresh
folder, adds the hidden files, and runs the oracle there, so nothing the producer left running or cached
can answer for it. A verdict is ``pass``, ``fail`` or ``error``; ``error`` (the oracle timed out or could
not run) is never read as either of the others.
"""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from environments.tasks.layout import write_files
from environments.tasks.runner import Runner, RunResult
from environments.tasks.types import AnswerOracle, CommandOracle, Task


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class OracleRun:
    verdict: Verdict
    reason: str
    result: RunResult | None = None
    """The verify command's run; None for an answer oracle (judged in-process)."""


def parse_number(text: str) -> float | None:
    """A number from an answer file: tolerates thousands separators, a trailing %, spaces and a final dot."""
    cleaned = text.strip().rstrip(".").replace(",", "").replace("_", "").removesuffix("%").strip()
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def normalize_text(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().strip("`'\".").strip()).casefold()


def judge_answer(oracle: AnswerOracle, got: str) -> tuple[bool, str]:
    """Compare an answer file's text with ``oracle.expected``; return (passed, reason)."""
    if isinstance(oracle.expected, str):
        ok = normalize_text(got) == normalize_text(oracle.expected)
        return ok, "answer matches" if ok else f"answer {got.strip()[:80]!r} is not the expected text"
    value = parse_number(got)
    if value is None:
        return False, f"answer {got.strip()[:80]!r} is not a number"
    expected = float(oracle.expected)
    ok = abs(value - expected) <= oracle.abs_tol + oracle.rel_tol * abs(expected)
    return ok, "answer within tolerance" if ok else f"answer {value} is outside the tolerance"


def apply_reference(task: Task, dest: Path, runner: Runner) -> RunResult | None:
    """Lay workspace then reference files into ``dest`` and run the reference command, if any."""
    dest.mkdir(parents=True, exist_ok=True)
    write_files(dest, task.workspace)
    write_files(dest, task.reference.files)
    if not task.reference.command:
        return None
    return runner.run(
        task.reference.command,
        dest,
        timeout_s=task.limits.agent_timeout_s,
        memory_mb=task.limits.memory_mb,
        env=task.env,
    )


def write_start(task: Task, dest: Path) -> Path:
    """The untouched start state: the workspace exactly as the agent receives it."""
    dest.mkdir(parents=True, exist_ok=True)
    write_files(dest, task.workspace)
    return dest


def verify(task: Task, produced: Path, scratch: Path, runner: Runner) -> OracleRun:
    """Judge ``produced`` in a fresh copy at ``scratch`` (which must not exist) plus the hidden files."""
    shutil.copytree(produced, scratch, symlinks=True)
    write_files(scratch, task.hidden)
    oracle = task.oracle
    if isinstance(oracle, AnswerOracle):
        answer = scratch / oracle.answer_path
        if not answer.is_file():
            return OracleRun(Verdict.FAIL, f"no answer file {oracle.answer_path}")
        ok, reason = judge_answer(oracle, answer.read_text(encoding="utf-8", errors="replace"))
        return OracleRun(Verdict.PASS if ok else Verdict.FAIL, reason)
    assert isinstance(oracle, CommandOracle)
    result = runner.run(
        oracle.command,
        scratch,
        timeout_s=task.limits.verify_timeout_s,
        memory_mb=task.limits.memory_mb,
        env=oracle.env,
    )
    if result.timed_out:
        return OracleRun(Verdict.ERROR, f"verify command ran past {task.limits.verify_timeout_s}s", result)
    if result.exit_code == 0:
        return OracleRun(Verdict.PASS, "verify command exited 0", result)
    last = result.output_tail.strip().splitlines()[-1:] or [""]
    return OracleRun(Verdict.FAIL, f"verify command exited {result.exit_code}: {last[0][:160]}", result)
