"""The seven checks a task must pass before any rollout uses it.

1. ``check_well_formed``: the files the task names exist and its Python parses (the schema itself is
   enforced when the ``Task`` is built; a folder that cannot become one fails this check in ``validate``).
2. ``check_reference_passes``: the reference solution, applied to the start state, passes the oracle.
3. ``check_start_fails``: the untouched start state fails the oracle, so the task is not already solved.
4. ``check_deterministic``: the oracle gives the reference's output the same verdict twice.
5. ``check_no_leakage``: nothing the agent can read (instruction, workspace, env) holds the answer, the
   hidden tests or the reference solution.
6. ``check_within_limits``: the reference run and its oracle runs fit the task's time and memory limits.
7. ``check_hack_resistant``: none of the project's generic hack attempts (``hack_check``) fools the oracle;
   they run in a sandbox (``attempt_runner``), never on this host.

Checks 2, 3, 4 and 6 share the runs of one ``Trial``, so a task costs one reference run and three oracle
runs. A check that crashes produces a failed result naming the exception, never a crashed validation.
Limits of what they prove: determinism is sampled (two runs catch a coin-flip oracle half of the time, an
alternating one always); leakage looks for copies, reformatted numbers and lines, not paraphrases;
the default runner does not isolate the network (see ``environments.core.runner``), so check 6 does not
prove the task works offline.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from environments.core.runner import Runner, RunResult, SubprocessRunner
from environments.core.types import AnswerOracle, CommandOracle, Task
from environments.integrity.judging import IN_PROCESS, ISOLATED, judge_plan
from environments.sandboxes.runner import SandboxRunner
from environments.tasks.answer_table import hidden_inputs, visible_inputs
from environments.tasks.hack_check import default_attempt_runner, fooled_by
from environments.tasks.oracle import OracleRun, Verdict, apply_reference, verify, write_start

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
    HACK_RESISTANT = "hack_resistant"


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
            if task.placement.tree_path(p) not in known
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
    plan = judge_plan(task)
    if plan.mode == IN_PROCESS and task.judge != IN_PROCESS and isinstance(task.oracle, CommandOracle):
        if task.oracle.reward_dir is None:  # a Harbor grader is in-process by what it is
            problems.append(
                f"judge: in-process ({plan.reason}): its tests would share a process with the agent's "
                'code; opt in with "judge": "in-process" in the task\'s source, or judge by outputs'
            )
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
    if run.judge == ISOLATED:
        opted = replace(task, judge=IN_PROCESS)
        in_process = verify(
            opted, trial.workdir / "reference", trial.workdir / "ref-in-process", trial.runner
        )
        if in_process.verdict is Verdict.PASS:
            why = (
                f"judge: in-process: its tests fail isolated ({run.reason}) but pass in-process; the agent's "
                'code could then reach the test process: fix the tests, or opt in with "judge": "in-process" '
                "in the task's source"
            )
            return CheckResult(CheckName.REFERENCE_PASSES, False, why)
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


_NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w]|\.\d)(\s*(?:%|percent\b))?",
    re.IGNORECASE,
)
_SHORT_LINE = re.compile(r"^[\W_]*$|^(#|//|/\*|\*|--)")


def _squash(text: str) -> str:
    """Text with whitespace dropped and quotes unified: a reformatted copy squashes to the same string."""
    return re.sub(r"\s+", "", text).replace("'", '"').replace("`", '"')


def _numbers(text: str) -> Iterator[tuple[str, int, float, int, bool]]:
    """(as written, mantissa digit count, value, decimal places, is_percent) for each number in ``text``."""
    for match in _NUMBER.finditer(text):
        written = match.group(0)[: match.start(1) - match.start(0)] if match.group(1) else match.group(0)
        plain = written.replace(",", "").lower()
        mantissa, _, exponent = plain.partition("e")
        try:
            value = float(plain)
        except ValueError:
            continue
        places = (len(mantissa.split(".")[1]) if "." in mantissa else 0) - int(exponent or 0)
        digits = sum(c.isdigit() for c in mantissa)
        yield match.group(0).strip(), digits, value, places, bool(match.group(1))


def _reveals(
    oracle: AnswerOracle, as_percent: bool, digits: int, value: float, places: int, percent: bool
) -> bool:
    """Whether a number gives the numeric answer away: it (or its fraction/percent form) is the expected
    value rounded at the number's own precision, or it is within the oracle's tolerance and at least as
    precise as that tolerance (so copying it would pass). ``as_percent``: the answer is asked for as a
    percentage, so its fraction form (``0.1234`` for ``12.34``) counts too."""
    if digits < _MIN_NUMBER_DIGITS:
        return False
    expected = float(oracle.expected)
    tolerance = oracle.abs_tol + oracle.rel_tol * abs(expected)
    candidates = [(value / 100, places + 2)] if percent else [(value, places)]
    if as_percent and not percent and abs(value) < 1 < abs(expected) <= 100:
        candidates.append((value * 100, places - 2))
    for got, precision in candidates:
        half_unit = 0.5 * 10.0**-precision
        error = abs(got - expected) - 1e-9 * max(1.0, abs(expected))  # float slack, not tolerance
        if error <= half_unit or (error <= tolerance and half_unit <= tolerance):
            return True
    return False


def _answer_leaks(oracle: AnswerOracle, as_percent: bool, where: str, text: str) -> Iterator[str]:
    expected = oracle.expected
    if isinstance(expected, str):
        words = expected.split()
        if len(expected.strip()) < 3:
            return
        pattern = r"\s+".join(re.escape(w) for w in words)
        if re.search(rf"(?<![\w.]){pattern}(?![\w]|\.\d)", text, re.IGNORECASE):
            yield f"{where} contains the expected answer {expected!r}"
        return
    for written, *number in _numbers(text):
        if _reveals(oracle, as_percent, *number):
            yield f"{where} contains the expected answer {written!r}"
            return


def _distinctive(line: str) -> bool:
    return (
        len(_squash(line)) >= _MIN_LINE_CHARS and not _IMPORT_LINE.match(line) and not _SHORT_LINE.match(line)
    )


def _changed_lines(before: bytes | None, after: bytes) -> list[str]:
    """Distinctive lines of ``after`` that ``before`` (the start workspace's version) does not hold, not even
    reformatted or as part of a longer line (a stub's docstring is given, not leaked)."""
    old = _squash((before or b"").decode("utf-8", "replace"))
    lines = [ln.strip() for ln in after.decode("utf-8", "replace").splitlines()]
    return [ln for ln in dict.fromkeys(lines) if _distinctive(ln) and _squash(ln) not in old]


def check_no_leakage(task: Task) -> CheckResult:
    """(5) The agent cannot read the answer, the hidden tests, or the reference solution.

    Looks at the instruction, the workspace (data files excepted for answers) and the env variables for:

    - the expected answer as a whole token: text of 3+ chars in any spacing and case, or a number of 3+
      digits in any format that is the expected value rounded at its own precision, or that lies within
      the oracle's tolerance (``46.850``, ``4.685e1``, ``1,234.5``, ``12.34%`` for ``0.1234``, and
      ``0.1234`` for ``12.34`` when the instruction asks for a percentage);
    - the answer file already present;
    - any hidden or reference file copied, even reformatted (whitespace and quote style are ignored);
    - any assertive line (assert, expect, ==; not imports) of a hidden file, reformatted or not;
    - any distinctive line (20+ non-space chars, not an import or comment) that the reference adds to or
      changes in a workspace file, found anywhere the agent can read;
    - hidden inputs that are all visible (``answer_table.py``) while none is drawn at verification: an
      answer table of what the agent can read would pass.

    Everything is exact matching after normalising, so it is deterministic; a paraphrase, an encoding
    (base64, a hash) or an answer computed from several shown numbers is not caught.
    """
    problems = []
    readable = list(agent_readable(task))
    squashed = {where: _squash(text) for where, text in readable}
    if isinstance(task.oracle, AnswerOracle):
        if task.oracle.answer_path in task.workspace:
            problems.append(f"the answer file {task.oracle.answer_path} is already in the workspace")
        as_percent = bool(re.search(r"percent|%", task.instruction, re.IGNORECASE))
        for where, text in readable:
            if Path(where).suffix not in DATA_SUFFIXES:
                problems += _answer_leaks(task.oracle, as_percent, where, text)
    modified = {p: d for p, d in task.reference.files.items() if task.workspace.get(p) != d}
    secret_files = [("hidden", p, d) for p, d in task.hidden.items()]
    secret_files += [("reference", p, d) for p, d in modified.items()]
    for kind, path, data in secret_files:
        body = _squash(data.decode("utf-8", "replace"))
        for where, text in squashed.items():
            if where.startswith("workspace/") and len(body) >= _MIN_LINE_CHARS and text == body:
                problems.append(f"{where} is a copy of {kind} file {path}")
        if kind != "hidden":
            continue
        for line in {ln.strip() for ln in data.decode("utf-8", "replace").splitlines()}:
            if _distinctive(line) and _ASSERTIVE.search(line):
                hits = [w for w, t in squashed.items() if _squash(line) in t]
                problems += [f"{w} contains hidden line {line[:60]!r} from {path}" for w in hits[:1]]
    for path, data in modified.items():
        if path not in task.workspace:
            continue  # a new file: a whole copy is caught above; its lines alone are too generic
        for line in _changed_lines(task.workspace[path], data):
            hits = [w for w, t in squashed.items() if _squash(line) in t]
            problems += [f"{w} contains the reference's change {line[:60]!r} to {path}" for w in hits[:1]]
    problems += _inputs_all_visible(task)
    return CheckResult(CheckName.NO_LEAKAGE, not problems, "; ".join(dict.fromkeys(problems)))


def _inputs_all_visible(task: Task) -> list[str]:
    inputs = hidden_inputs(task)
    if inputs is None or inputs.drawn or not inputs.fixed:
        return []
    if len(visible_inputs(task, inputs)) < len(inputs.fixed):
        return []
    return [
        f"all {len(inputs.fixed)} hidden inputs appear in what the agent can read (e.g. "
        f"{inputs.fixed[0][:60]!r}), so an answer table of them passes: hide some or draw some at "
        "verification (a generator)"
    ]


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


def check_hack_resistant(task: Task, attempt_runner: Runner | None) -> CheckResult:
    """(7) No generic hack attempt passes the oracle (see ``hack_check``)."""
    if attempt_runner is None:
        why = "the hack attempts need a sandbox: install bubblewrap (apt-get install -y bubblewrap)"
        return CheckResult(CheckName.HACK_RESISTANT, False, why)
    fooled = fooled_by(task, attempt_runner)
    reason = f"the oracle passes these hack attempts: {', '.join(fooled)}" if fooled else ""
    return CheckResult(CheckName.HACK_RESISTANT, not fooled, reason)


_NO_RUNNER = object()


def run_checks(
    task: Task, runner: Runner | None = None, attempt_runner: object = _NO_RUNNER
) -> list[CheckResult]:
    """All seven checks on ``task``, in order; a crashing check becomes a failed result. The hack attempts
    run on ``attempt_runner`` (by default the local sandbox; None where there is none). Without a
    ``runner``, a plain task runs in a subprocess and a placed one (absolute mounts, a work directory of its
    own) in the local sandbox, which can place its files."""
    if runner is None:
        runner = (None if task.placement.plain else default_attempt_runner()) or SubprocessRunner()
    if attempt_runner is _NO_RUNNER:
        attempt_runner = runner if isinstance(runner, SandboxRunner) else default_attempt_runner()
    results: list[CheckResult] = []
    with tempfile.TemporaryDirectory(prefix=f"task-{task.id[:40]}-") as tmp:
        trial = Trial(task, runner, Path(tmp))
        calls: list[tuple[CheckName, Callable[[], CheckResult]]] = [
            (CheckName.WELL_FORMED, partial(check_well_formed, task)),
            (CheckName.NO_LEAKAGE, partial(check_no_leakage, task)),
            (CheckName.HACK_RESISTANT, partial(check_hack_resistant, task, attempt_runner)),
            *[(name, partial(fn, task, trial)) for name, fn in _RUN],
        ]
        first_crash: dict[str, CheckName] = {}  # a task image that did not build crashes four checks alike
        for name, call in calls:
            try:
                results.append(call())
            except Exception as exc:  # one broken check must not hide the others
                why = f"{type(exc).__name__}: {exc}"
                said = f"the same as {first_crash[why].value}" if why in first_crash else why
                first_crash.setdefault(why, name)
                results.append(CheckResult(name, False, f"check crashed: {said}"))
    return sorted(results, key=lambda r: _ORDER.index(r.name))
