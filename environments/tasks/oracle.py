"""Apply a task's reference and judge a produced workspace with the task's oracle.

``verify`` is the verifier's core. It trusts no file the agent controls: it rebuilds the task from its
pristine files in a fresh folder, takes from the agent's workspace only its solution surface (never tests,
runner configuration, graders or files that shadow the runner; links are never taken or followed, special
and oversize files are refused; see ``environments.integrity.surface``), adds the hidden files, and runs
the oracle there with the runner's report pinned (``pinned_command``): pytest and unittest through the
reporter in ``runner_verdict.py``, Node's test runner through ``node_verdict.cjs``, each writing a report
sealed with a per-run key to an inherited descriptor (``reports.unseal_report``). A command passes only
when it exits 0 *and* its report shows every expected hidden test passed and, for pytest, that the runner
was not patched while it ran. An answer file is read from the surface only if it is a regular file, at
most ``MAX_ANSWER_BYTES``. A command with a
``reward_dir`` (Harbor's ``test.sh``) is judged by the reward it writes there, read outside the sandbox after
the run, with that folder and the task's writable mounts emptied first (``read_reward``); the command runs
under the reward guard (``reward_guard``), and a reward the guard refuses (the grader ended by a signal, its
resource limits lowered, a process besides the grader alive after the reward's last change, a reward file or
folder that is a link or read-only) is a fail. A verdict is
``pass``, ``fail`` or ``error``; ``error`` (the oracle timed out, or judging itself failed) is never read
as either of the others, and ``verify`` never raises.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import secrets
import shutil
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from environments.core.runner import Runner, RunResult
from environments.core.types import AnswerOracle, CommandOracle, Task
from environments.integrity.judging import ISOLATED, JudgePlan, build_isolated, judge_plan
from environments.integrity.reports import (
    ReportKind,
    judge_pytest_report,
    judge_sealed_report,
    judge_tap_report,
    judge_unittest_report,
    report_kind,
)
from environments.integrity.snapshot import take_snapshot
from environments.integrity.surface import Surface, build_verify_tree, solution_surface
from environments.tasks import reward_guard
from environments.tasks.layout import write_files


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
    judge: str = ""
    """``isolated`` or ``output-only`` when the judging process never loaded the agent's code,
    ``in-process`` otherwise (``environments.integrity.judging``)."""


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
        placement=task.placement,
    )


def write_start(task: Task, dest: Path) -> Path:
    """The untouched start state: the workspace exactly as the agent receives it."""
    dest.mkdir(parents=True, exist_ok=True)
    write_files(dest, task.workspace)
    return dest


def verify(task: Task, produced: Path, scratch: Path, runner: Runner) -> OracleRun:
    """Judge ``produced`` in a fresh tree at ``scratch`` (which must not exist): the pristine task, the
    agent's solution surface, the hidden files; see the module docstring. Never raises: anything that
    goes wrong while judging is verdict ``error``."""
    try:
        return _verify(task, Path(produced), Path(scratch), runner)
    except Exception as exc:  # a verdict, never a crashed or retried rollout
        return OracleRun(Verdict.ERROR, f"the verifier could not judge: {type(exc).__name__}: {exc}")


def _verify(task: Task, produced: Path, scratch: Path, runner: Runner) -> OracleRun:
    surface = solution_surface(task, take_snapshot(produced))
    plan = judge_plan(task)
    if plan.isolated:
        return _judge_isolated(task, plan, surface, scratch, runner)
    run = _verify_in_process(task, surface, scratch, runner)
    return dataclasses.replace(run, judge=plan.mode)


def _judge_isolated(
    task: Task, plan: JudgePlan, surface: Surface, scratch: Path, runner: Runner
) -> OracleRun:
    """The tests in a pristine interpreter, the agent's modules in a confined process behind proxies
    (``environments.integrity.judging``); the report is the judge's, which no agent code can reach."""
    assert isinstance(task.oracle, CommandOracle)
    deadline_s = max(task.limits.verify_timeout_s - ISOLATED_MARGIN_S, task.limits.verify_timeout_s / 2)
    tree = build_isolated(task, surface, scratch, plan, deadline_s)
    result = _run_verify(task, task.oracle, tree.command, scratch, runner)
    if result.timed_out:
        return dataclasses.replace(_ran_past(task, result), judge=ISOLATED)
    raw = read_small_text(tree.report)
    problem = _judge_error(raw)
    if problem:
        return OracleRun(
            Verdict.ERROR, f"the isolated judge could not run: {problem}", result, judge=ISOLATED
        )
    judged = JUDGES[plan.report_kind](raw, task.hidden)
    if result.exit_code != 0:
        last = result.output_tail.strip().splitlines()[-1:] or [""]
        why = f"verify command exited {result.exit_code}: {last[0][:160]}"
        return OracleRun(Verdict.FAIL, why if judged.passed else judged.reason, result, judge=ISOLATED)
    verdict = Verdict.PASS if judged.passed else Verdict.FAIL
    return OracleRun(verdict, judged.reason, result, judge=ISOLATED)


def _ran_past(task: Task, result: RunResult) -> OracleRun:
    return OracleRun(Verdict.ERROR, f"verify command ran past {task.limits.verify_timeout_s}s", result)


def _judge_error(raw: str | None) -> str:
    """The isolated judge's own refusal in its report (e.g. no Landlock on this kernel), else ""."""
    try:
        data = json.loads(raw or "")
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    return str(error)[:300] if error else ""


def _verify_in_process(task: Task, surface: Surface, scratch: Path, runner: Runner) -> OracleRun:
    build_verify_tree(task, surface, scratch)
    oracle = task.oracle
    if isinstance(oracle, AnswerOracle):
        return _judge_answer_file(task, oracle, surface)
    assert isinstance(oracle, CommandOracle)
    if oracle.reward_dir is not None:
        return _judge_reward(task, oracle, oracle.reward_dir, scratch, runner)
    kind = report_kind(oracle.command)
    report_dir = f"{VERDICT_DIR_PREFIX}{secrets.token_hex(8)}"
    (scratch / report_dir).mkdir()
    key = secrets.token_bytes(32)  # the seal's key: only this process and the reporter ever hold it
    if kind is not None:
        reporter = NODE_REPORTER if kind is ReportKind.NODE_TAP else RUNNER_REPORTER
        (scratch / report_dir / reporter_file(report_dir, kind)).write_bytes(reporter.read_bytes())
        (scratch / report_dir / SEAL_KEY_FILE).write_bytes(key)
    result = _run_verify(task, oracle, pinned_command(oracle.command, report_dir, kind), scratch, runner)
    if result.timed_out:
        return _ran_past(task, result)
    if result.exit_code != 0:
        last = result.output_tail.strip().splitlines()[-1:] or [""]
        return OracleRun(Verdict.FAIL, f"verify command exited {result.exit_code}: {last[0][:160]}", result)
    if kind is None:
        return OracleRun(Verdict.PASS, "verify command exited 0", result)
    patched = sorted(p.name for p in (scratch / report_dir).glob("patched-*"))
    if patched:
        return OracleRun(Verdict.FAIL, "the test runner's assertions were replaced while tests ran", result)
    raw = read_small_text(scratch / report_dir / SEALED_REPORT)
    judged = judge_sealed_report(kind, raw, key, task.hidden)
    return OracleRun(Verdict.PASS if judged.passed else Verdict.FAIL, judged.reason, result)


def _run_verify(task: Task, oracle: CommandOracle, command: str, scratch: Path, runner: Runner) -> RunResult:
    """The verify command in ``scratch``, under the task's verify limits and placement."""
    return runner.run(
        command,
        scratch,
        timeout_s=task.limits.verify_timeout_s,
        memory_mb=task.limits.memory_mb,
        env={**oracle.env, **VERIFY_ENV},
        placement=task.placement,
    )


def _judge_reward(
    task: Task, oracle: CommandOracle, reward_dir: str, scratch: Path, runner: Runner
) -> OracleRun:
    """Harbor's verdict: run the command under the reward guard with its output folders empty, then read
    the reward it wrote unless the guard refused it (the exit status is ignored, as Harbor ignores it; no
    reward is a fail, never a pass)."""
    outputs = [m.source for m in task.placement.mounts if m.writable] + [reward_dir]
    for folder in outputs:  # whatever the agent's files put there (a planted reward) is gone
        _remove(scratch / folder)
    for folder in outputs:
        (scratch / folder).mkdir(parents=True, exist_ok=True)
    base, rel = reward_guard.guard_paths(task.placement.mounts, reward_dir)
    command = reward_guard.guarded_command(oracle.command, base, rel)
    result = _run_verify(task, oracle, command, scratch, runner)
    if result.timed_out:
        return _ran_past(task, result)
    refused = reward_guard.refusal(result.exit_code, result.output_tail)
    if refused is not None:
        failed_to_judge, why = refused
        return OracleRun(Verdict.ERROR if failed_to_judge else Verdict.FAIL, why, result)
    try:
        value = read_reward(scratch / reward_dir, below=scratch)
    except ValueError as exc:
        return OracleRun(Verdict.FAIL, f"cannot read the reward: {exc}", result)
    if value is None:
        return OracleRun(Verdict.FAIL, "the verify command wrote no reward.txt or reward.json", result)
    passed = value >= PASS_REWARD
    why = f"reward {value:g} {'>=' if passed else '<'} {PASS_REWARD:g}"
    return OracleRun(Verdict.PASS if passed else Verdict.FAIL, why, result)


def read_reward(folder: Path, below: Path | None = None) -> float | None:
    """The reward in ``folder``: ``reward.json``'s numeric ``reward`` (an object; other keys are details),
    else ``reward.txt`` (one number); None when neither exists. Each file is read only if it is a regular
    file (never through a link) of at most ``MAX_REWARD_BYTES``; anything else raises ``ValueError``, and
    so do two rewards that disagree (a grader writes one; a second is code the grader ran writing its own,
    which would otherwise win by being read first), and a ``folder`` that is a link or has one on its path
    from ``below`` (the run's tree; without it, ``folder`` alone is checked): a link planted there would
    make the files read be others than the grader's."""
    problem = reward_folder_problem(folder, below)
    if problem:
        raise ValueError(problem)
    json_path, text_path = folder / "reward.json", folder / "reward.txt"
    from_json = _json_reward(json_path) if json_path.exists() or json_path.is_symlink() else None
    has_text = text_path.exists() or text_path.is_symlink()
    from_text = _text_reward(text_path) if has_text else None
    if from_json is not None and from_text is not None and from_json != from_text:
        raise ValueError(f"reward.json says {from_json:g} and reward.txt says {from_text:g}")
    if from_json is None and json_path.exists() and not has_text:
        raise ValueError("reward.json has no numeric 'reward' and there is no reward.txt")
    return from_json if from_json is not None else from_text


def reward_folder_problem(folder: Path, below: Path | None = None) -> str:
    """Why ``folder`` (or a folder between ``below`` and it) is a link or not a folder, else "" (a missing
    folder is fine: it holds no reward)."""
    folder = Path(folder)
    start = Path(below) if below is not None and Path(below) in folder.parents else folder.parent
    parts = folder.relative_to(start).parts
    for number in range(len(parts)):
        path = start.joinpath(*parts[: number + 1])
        if path.is_symlink():
            return f"the reward folder's path has a link at {path.relative_to(start)}"
        if not path.exists():
            return ""
        if not path.is_dir():
            return f"the reward folder's path has {path.relative_to(start)}, which is not a folder"
    return ""


def _json_reward(path: Path) -> float | None:
    raw = read_small_text(path, MAX_REWARD_BYTES)
    if raw is None:
        raise ValueError(f"reward.json is not a regular file of at most {MAX_REWARD_BYTES} bytes")
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"reward.json is not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError("reward.json is not an object")
    value = data.get("reward")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _finite(float(value), "reward.json's reward")
    return None


def _text_reward(path: Path) -> float:
    raw = read_small_text(path, MAX_REWARD_BYTES)
    if raw is None:
        raise ValueError(f"reward.txt is not a regular file of at most {MAX_REWARD_BYTES} bytes")
    if not raw.strip():
        raise ValueError("reward.txt is empty")
    try:
        return _finite(float(raw.strip()), "reward.txt")
    except ValueError as exc:
        raise ValueError(f"reward.txt is not a number: {raw.strip()[:40]!r}") from exc


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{what} is {value}, not a finite number")
    return value


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _judge_answer_file(task: Task, oracle: AnswerOracle, surface: Surface) -> OracleRun:
    path = oracle.answer_path
    why = surface.refusal(path)
    if why:
        return OracleRun(Verdict.FAIL, f"answer file {path} refused: {why}")
    data = surface.files.get(path, None if path in surface.removed else task.workspace.get(path))
    if data is None:
        return OracleRun(Verdict.FAIL, f"no answer file {path}")
    ok, reason = judge_answer(oracle, data[:MAX_ANSWER_BYTES].decode("utf-8", errors="replace"))
    return OracleRun(Verdict.PASS if ok else Verdict.FAIL, reason)


ISOLATED_MARGIN_S = 5.0
"""The isolated judge stops the agent's process this long before the verify timeout, to write its report."""
VERDICT_DIR_PREFIX = ".verdict-"
"""The verify run's report folder: a fresh random name, created after the agent's files were laid out."""
RUNNER_REPORTER = Path(__file__).parents[1] / "integrity" / "runner_verdict.py"
NODE_REPORTER = Path(__file__).parents[1] / "integrity" / "node_verdict.cjs"
SEAL_KEY_FILE = "seal.key"
"""The seal's key, beside the reporter, which reads and deletes it at load (before any agent code)."""
SEALED_REPORT = "report.seal"
"""The sealed report: the file behind the descriptor the run inherits (``pinned_command``)."""
JUDGES = {
    ReportKind.PYTEST: judge_pytest_report,
    ReportKind.UNITTEST: judge_unittest_report,
    ReportKind.NODE_TAP: judge_tap_report,
}
VERIFY_ENV = {"PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONSTARTUP": "", "PYTHONHOME": ""}
"""No user site and no start-up file in the verifier's interpreter."""
MAX_ANSWER_BYTES = 64 * 1024
MAX_REWARD_BYTES = 64 * 1024
PASS_REWARD = 1.0
"""Full marks: what Terminal-Bench counts as resolved (Harbor itself does not define a pass)."""
MAX_REPORT_BYTES = 8 * 1024 * 1024


def reporter_file(report_dir: str, kind: ReportKind) -> str:
    """The reporter's file name in ``report_dir``: for pytest a module named after the folder's random
    suffix (a workspace module cannot shadow a name chosen after the agent finished), for unittest the
    start-up hook ``sitecustomize.py``, for Node ``ha_verdict.cjs`` (loaded by absolute path)."""
    if kind is ReportKind.PYTEST:
        return f"{_plugin_name(report_dir)}.py"
    return "sitecustomize.py" if kind is ReportKind.UNITTEST else "ha_verdict.cjs"


def _plugin_name(report_dir: str) -> str:
    return "hav_" + re.sub(r"[^0-9a-zA-Z]", "", report_dir.removeprefix(VERDICT_DIR_PREFIX))


def report_fd(report_dir: str) -> int:
    """The descriptor the run's report goes through: from the folder's random suffix, in 20..219."""
    digits = re.sub(r"[^0-9a-f]", "", report_dir.lower()) or "0"
    return 20 + int(digits[:4], 16) % 200


def pinned_command(command: str, report_dir: str, kind: ReportKind | None) -> str:
    """``command`` with the runner's report pinned. The shell opens the sealed report file on
    ``report_fd`` and the run inherits that descriptor (its number in ``HA_VERDICT_FD``, which the
    reporter deletes at load); pytest loads the plugin by its random name (the report folder first on
    ``PYTHONPATH``), unittest through ``sitecustomize``, Node's test runner through ``--require`` plus the
    same file as a custom reporter. No path of the report is named to the run."""
    if kind is None:
        return command
    fd, where = report_fd(report_dir), f'"$PWD/{report_dir}"'
    prelude = f"exec {fd}>{where}/{SEALED_REPORT}; export HA_VERDICT_FD={fd}; "
    if kind is ReportKind.PYTEST:
        prelude += (
            f'export PYTHONPATH={where} PYTEST_ADDOPTS="-p {_plugin_name(report_dir)} -p no:cacheprovider"; '
        )
    elif kind is ReportKind.UNITTEST:
        prelude += f"export PYTHONPATH={where}; "
    else:
        cjs = f"$PWD/{report_dir}/{reporter_file(report_dir, kind)}"
        prelude += (
            f'export NODE_OPTIONS="--require={cjs} --test-reporter={cjs} --test-reporter-destination=stdout '
            '--test-reporter=spec --test-reporter-destination=stdout"; '
        )
    return prelude + command


def read_small_text(path: Path, limit: int = MAX_REPORT_BYTES) -> str | None:
    """A regular file's text (never through a link, never a FIFO, at most ``limit`` bytes), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(limit + 1)
    return None if len(data) > limit else data.decode("utf-8", "replace")
