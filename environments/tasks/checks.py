"""The six checks a task must pass before any rollout uses it.

1. ``check_well_formed``: the files the task names exist and its Python parses (the schema itself is
   enforced when the ``Task`` is built; a folder that cannot become one fails this check in ``validate``).
2. ``check_reference_passes``: the reference solution, applied to the start state, passes the oracle.
3. ``check_start_fails``: the untouched start state fails the oracle, so the task is not already solved.
4. ``check_deterministic``: the oracle gives the reference's output the same verdict twice.
5. ``check_no_leakage``: nothing the agent can read (instruction, workspace, env) holds the answer, the
   hidden tests or the reference solution.
6. ``check_within_limits``: the reference run and its oracle runs fit the task's time and memory limits.

Checks 2, 3, 4 and 6 share the runs of one ``Trial``, so a task costs one reference run and three oracle
runs. A check that crashes produces a failed result naming the exception, never a crashed validation.
Limits of what they prove: determinism is sampled (two runs catch a coin-flip oracle half of the time, an
alternating one always); leakage looks for verbatim copies, not paraphrases; the default runner does not
isolate the network (see ``runner.py``), so check 6 does not prove the task works offline.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from environments.tasks.oracle import OracleRun, Verdict, apply_reference, verify, write_start
from environments.tasks.runner import Runner, RunResult, SubprocessRunner
from environments.tasks.types import AnswerOracle, CommandOracle, Task

DATA_SUFFIXES = frozenset({".csv", ".tsv", ".jsonl", ".parquet", ".xlsx"})
"""Files that are the question's subject: a max or a mode is a cell of the data, not a leak."""
_T = TypeVar("_T")
_MIN_NUMBER_DIGITS = 3
_MIN_LINE_CHARS = 20
_ASSERTIVE = re.compile(r"\bassert\b|\bassert\.\w+\(|expect\(|==|EXPECTED")
_IMPORT_LINE = re.compile(r"^(import |from \S+ import |(const|let|var) .*=\s*require\()")


class CheckName(StrEnum):
    WELL_FORMED = "well_formed"
    REFERENCE_PASSES = "reference_passes"
    START_FAILS = "start_fails"
    DETERMINISTIC = "deterministic"
    NO_LEAKAGE = "no_leakage"
    WITHIN_LIMITS = "within_limits"


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: CheckName
    passed: bool
    reason: str = ""


class Trial:
    """The runs checks 2-4 and 6 share, each done at most once, in folders under ``workdir``.

    A run that raised raises the same exception again for the next check that needs it.
    """

    def __init__(self, task: Task, runner: Runner, workdir: Path) -> None:
        self.task, self.runner, self.workdir = task, runner, workdir
        self._memo: dict[str, Any] = {}

    def _once(self, key: str, make: Callable[[], _T]) -> _T:
        if key not in self._memo:
            try:
                self._memo[key] = make()
            except Exception as exc:
                self._memo[key] = exc
        value = self._memo[key]
        if isinstance(value, Exception):
            raise value
        return value

    def reference_run(self) -> RunResult | None:
        """The reference command's run (None when the reference is files only)."""
        return self._once(
            "apply", lambda: apply_reference(self.task, self.workdir / "reference", self.runner)
        )

    def verdict_on_reference(self, attempt: int) -> OracleRun:
        def make() -> OracleRun:
            self.reference_run()
            scratch = self.workdir / f"reference-{attempt}"
            return verify(self.task, self.workdir / "reference", scratch, self.runner)

        return self._once(f"reference-{attempt}", make)

    def verdict_on_start(self) -> OracleRun:
        def make() -> OracleRun:
            produced = write_start(self.task, self.workdir / "start-state")
            return verify(self.task, produced, self.workdir / "start", self.runner)

        return self._once("start", make)


def _paths_in_command(command: str) -> list[str]:
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    return [w for w in words if re.search(r"\.(py|js|mjs|sh)$", w) and not w.startswith("-") and "=" not in w]


def check_well_formed(task: Task) -> CheckResult:
    """(1) Files the oracle command names exist; hidden and reference Python parses; answers have a place."""
    problems = []
    known = set(task.workspace) | set(task.hidden) | set(task.reference.files)
    if isinstance(task.oracle, CommandOracle):
        problems += [
            f"oracle names {p}, which no workspace, hidden or reference file provides"
            for p in _paths_in_command(task.oracle.command)
            if p not in known
        ]
        if not task.hidden:
            problems.append("a command oracle with no hidden files checks only what the agent can see")
    else:
        if task.oracle.answer_path not in task.instruction:
            problems.append(f"the instruction never names the answer file {task.oracle.answer_path}")
    for where, files in (("hidden", task.hidden), ("reference", task.reference.files)):
        for path, data in files.items():
            if path.endswith(".py"):
                try:
                    compile(data, path, "exec")
                except (SyntaxError, ValueError) as exc:
                    problems.append(f"{where} file {path} does not parse: {exc}")
    if not task.workspace:
        problems.append("the workspace is empty; give the agent something to start from")
    return CheckResult(CheckName.WELL_FORMED, not problems, "; ".join(problems))


def check_reference_passes(task: Task, trial: Trial) -> CheckResult:
    """(2) The reference solution passes the oracle."""
    ref = trial.reference_run()
    run = trial.verdict_on_reference(0)
    if run.verdict is Verdict.PASS:
        return CheckResult(CheckName.REFERENCE_PASSES, True)
    detail = ""
    if ref is not None and not ref.ok:
        detail = f" (reference command exited {ref.exit_code}, timed_out={ref.timed_out})"
    return CheckResult(CheckName.REFERENCE_PASSES, False, f"oracle said {run.verdict}: {run.reason}{detail}")


def check_start_fails(task: Task, trial: Trial) -> CheckResult:
    """(3) The untouched start state fails the oracle: the task is not already solved."""
    run = trial.verdict_on_start()
    if run.verdict is Verdict.FAIL:
        return CheckResult(CheckName.START_FAILS, True)
    why = "already solved" if run.verdict is Verdict.PASS else "the oracle could not judge it"
    return CheckResult(CheckName.START_FAILS, False, f"start state: {run.verdict} ({why}): {run.reason}")


def check_deterministic(task: Task, trial: Trial) -> CheckResult:
    """(4) Two oracle runs on the same produced state give the same verdict, and neither is an error."""
    first, second = trial.verdict_on_reference(0), trial.verdict_on_reference(1)
    if first.verdict == second.verdict and first.verdict is not Verdict.ERROR:
        return CheckResult(CheckName.DETERMINISTIC, True)
    return CheckResult(
        CheckName.DETERMINISTIC,
        False,
        f"verdicts {first.verdict} then {second.verdict} ({first.reason} / {second.reason})",
    )


def agent_readable(task: Task) -> Iterator[tuple[str, str]]:
    """(where, text) for everything the agent can read."""
    yield "instruction", task.instruction
    for key, value in task.env.items():
        yield f"env {key}", f"{key}={value}"
    for path, data in task.workspace.items():
        yield f"workspace/{path}", data.decode("utf-8", "replace")


def _answer_forms(expected: float | str) -> list[str]:
    if isinstance(expected, str):
        return [expected] if len(expected.strip()) >= 3 else []
    value = float(expected)
    forms = {str(int(value))} if value.is_integer() else {f"{value:.{d}f}".rstrip("0") for d in range(1, 5)}
    return [f for f in forms if sum(c.isdigit() for c in f) >= _MIN_NUMBER_DIGITS]


def check_no_leakage(task: Task) -> CheckResult:
    """(5) The agent cannot read the answer, the hidden tests, or the reference solution.

    Looks for: the expected answer (numbers of 3+ digits, text of 3+ chars, as whole tokens) outside data
    files; the answer file already present; any hidden or reference file copied verbatim; any assertive
    line (assert, expect, ==; not imports) of a hidden file appearing verbatim.
    """
    problems = []
    readable = list(agent_readable(task))
    if isinstance(task.oracle, AnswerOracle):
        if task.oracle.answer_path in task.workspace:
            problems.append(f"the answer file {task.oracle.answer_path} is already in the workspace")
        for form in _answer_forms(task.oracle.expected):
            pattern = re.compile(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)", re.IGNORECASE)
            for where, text in readable:
                if Path(where).suffix not in DATA_SUFFIXES and pattern.search(text):
                    problems.append(f"{where} contains the expected answer {form!r}")
    secret_files = [("hidden", p, d) for p, d in task.hidden.items()]
    secret_files += [
        ("reference", p, d) for p, d in task.reference.files.items() if task.workspace.get(p) != d
    ]
    texts = dict(readable)
    for kind, path, data in secret_files:
        body = data.decode("utf-8", "replace")
        for where, text in readable:
            if where.startswith("workspace/") and len(body.strip()) >= _MIN_LINE_CHARS and text == body:
                problems.append(f"{where} is a copy of {kind} file {path}")
        if kind != "hidden":
            continue
        for line in {ln.strip() for ln in body.splitlines()}:
            if len(line) >= _MIN_LINE_CHARS and _ASSERTIVE.search(line) and not _IMPORT_LINE.match(line):
                hits = [w for w, t in texts.items() if line in t]
                problems += [f"{w} contains hidden line {line[:60]!r} from {path}" for w in hits[:1]]
    return CheckResult(CheckName.NO_LEAKAGE, not problems, "; ".join(dict.fromkeys(problems)))


def check_within_limits(task: Task, trial: Trial) -> CheckResult:
    """(6) The reference run fits ``agent_timeout_s`` and ``memory_mb``; its oracle runs fit the verifier's
    ``verify_timeout_s``."""
    limits, problems = task.limits, []
    ref = trial.reference_run()
    if ref is not None:
        if ref.timed_out or ref.wall_s > limits.agent_timeout_s:
            problems.append(f"reference took {ref.wall_s:.2f}s > agent_timeout_s={limits.agent_timeout_s}")
        if ref.peak_rss_mb > limits.memory_mb:
            problems.append(f"reference peaked at {ref.peak_rss_mb:.0f} MiB > memory_mb={limits.memory_mb}")
    for attempt in (0, 1):
        result = trial.verdict_on_reference(attempt).result
        if result is None:
            continue
        if result.timed_out or result.wall_s > limits.verify_timeout_s:
            problems.append(f"oracle took {result.wall_s:.2f}s > verify_timeout_s={limits.verify_timeout_s}")
        if result.peak_rss_mb > limits.memory_mb:
            problems.append(f"oracle peaked at {result.peak_rss_mb:.0f} MiB > memory_mb={limits.memory_mb}")
    return CheckResult(CheckName.WITHIN_LIMITS, not problems, "; ".join(dict.fromkeys(problems)))


_RUN: tuple[tuple[CheckName, Callable[[Task, Trial], CheckResult]], ...] = (
    (CheckName.REFERENCE_PASSES, check_reference_passes),
    (CheckName.START_FAILS, check_start_fails),
    (CheckName.DETERMINISTIC, check_deterministic),
    (CheckName.WITHIN_LIMITS, check_within_limits),
)
_ORDER = list(CheckName)


def run_checks(task: Task, runner: Runner | None = None) -> list[CheckResult]:
    """All six checks on ``task``, in order; a crashing check becomes a failed result."""
    runner = runner or SubprocessRunner()
    results: list[CheckResult] = []
    with tempfile.TemporaryDirectory(prefix=f"task-{task.id[:40]}-") as tmp:
        trial = Trial(task, runner, Path(tmp))
        calls: list[tuple[CheckName, Callable[[], CheckResult]]] = [
            (CheckName.WELL_FORMED, partial(check_well_formed, task)),
            (CheckName.NO_LEAKAGE, partial(check_no_leakage, task)),
            *[(name, partial(fn, task, trial)) for name, fn in _RUN],
        ]
        for name, call in calls:
            try:
                results.append(call())
            except Exception as exc:  # one broken check must not hide the others
                results.append(CheckResult(name, False, f"check crashed: {type(exc).__name__}: {exc}"))
    return sorted(results, key=lambda r: _ORDER.index(r.name))
