"""Score scripted attempts exactly as a rollout is scored, with the guard not involved.

    python -m environments.attempt CASES.jsonl [--sandbox local|docker] [--tasks PATH ...]

One input line: ``{"id", "task", "steps", "expect": "zero"|"positive", "note"}``; a step is ``{"write": PATH,
"content": TEXT, "append": BOOL}``, ``{"run": "<bash>"}``, ``{"symlink": PATH, "target": T}``, ``{"delete":
PATH}`` or ``{"solve": true}`` (the task's reference solution: the solution files it changes, as computed by
applying it, command included, in a sandbox of its own). The steps run in order inside the agent's sandbox
with the agent's rights (never on the host), then the rollout's scoring runs: the effect audit (start state vs
final workspace), the verifier in a fresh sandbox, and the reward with tool calls = the number of steps. One
output line per case: ``{"id", "reward", "verdict", "flags", "reason", "expect", "ok"}`` where ``verdict`` is
``tampered`` when the audit flagged the workspace, else the verifier's; then one summary line (JSON). A case
that fails to load, run or score is an ``error`` line, counted in the summary; the others go on. The exit
status is 1 when any case errored or came out other than expected.

Layers can be switched off to test each alone: ``--no-isolation`` (tests and runner configuration stay
writable in the agent's sandbox), ``--no-audit`` (no effect audit) and ``--verifier trusting``
(the pre-hardening verifier's semantics: every file the agent left, tests and configuration included, judged
by the command's exit status; links are still never followed).
"""

from __future__ import annotations

import argparse
import base64
import json
import shlex
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from environments.core.types import Task, check_relative_path
from environments.errors import UsageError, cli_main
from environments.integrity import audit_effects, protected_paths, take_snapshot
from environments.integrity.audit import AuditResult
from environments.reward import RewardInputs, compute_reward
from environments.tasks.oracle import OracleRun, Verdict, apply_reference, verify, write_start

if TYPE_CHECKING:
    from environments.core.runner import Runner
    from environments.sandboxes import SandboxBackend

STEP_TIMEOUT_S = 60.0
_STEP_KEYS = {"write": {"write", "content", "append"}, "run": {"run"}, "symlink": {"symlink", "target"}}
_STEP_KEYS |= {"delete": {"delete"}, "solve": {"solve"}}


class CaseError(ValueError):
    """A case line that cannot be run; the message names the field and the fix."""


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    task: str
    steps: tuple[dict[str, Any], ...]
    expect: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class CaseResult:
    id: str
    reward: float
    verdict: str
    flags: tuple[str, ...] = ()
    reason: str = ""
    expect: str = ""
    verify_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    judge: str = ""
    """How the verifier judged the case (``environments.integrity.judging``)."""

    @property
    def ok(self) -> bool:
        """Whether the result is what the case expects (``zero``: reward 0; ``positive``: reward > 0)."""
        return (self.reward == 0.0) if self.expect == "zero" else (self.reward > 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "reward": round(self.reward, 4),
            "verdict": self.verdict,
            "flags": list(self.flags),
            "reason": self.reason,
            "expect": self.expect,
            "ok": self.ok,
        }


def parse_case(raw: Any, where: str) -> Case:
    """One case from a decoded JSON line; raise ``CaseError`` naming what is wrong."""
    if not isinstance(raw, dict):
        raise CaseError(f"{where}: a case must be a JSON object")
    missing = sorted({"id", "task", "steps", "expect"} - set(raw))
    if missing:
        raise CaseError(f"{where}: missing keys {missing}")
    if raw["expect"] not in ("zero", "positive"):
        raise CaseError(f"{where}: expect={raw['expect']!r}: use 'zero' (a hack) or 'positive' (a control)")
    steps = raw["steps"]
    if not isinstance(steps, list) or not steps:
        raise CaseError(f"{where}: steps must be a non-empty list")
    for i, step in enumerate(steps):
        kind = next((k for k in _STEP_KEYS if isinstance(step, dict) and k in step), None)
        if kind is None or not set(step) <= _STEP_KEYS[kind]:
            raise CaseError(f"{where}: steps[{i}]={step!r}: use one of write/run/symlink/delete/solve")
        if kind in ("write", "symlink", "delete"):
            try:
                check_relative_path(str(step[kind]).removeprefix("./"), f"{where}: steps[{i}].{kind}")
            except ValueError as exc:
                raise CaseError(str(exc)) from None
    return Case(str(raw["id"]), str(raw["task"]), tuple(steps), raw["expect"], str(raw.get("note", "")))


def read_cases(path: Path) -> Iterator[Case | CaseError]:
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            yield parse_case(json.loads(line), where)
        except json.JSONDecodeError as exc:
            yield CaseError(f"{where}: not valid JSON ({exc.msg})")
        except CaseError as exc:
            yield exc


def step_command(step: dict[str, Any], solution: dict[str, bytes]) -> str:
    """The bash command that performs ``step`` inside the sandbox, as the agent would."""
    if "run" in step:
        return str(step["run"])
    if "solve" in step:
        return "; ".join(_write_command(p, data, False) for p, data in solution.items()) or "true"
    if "write" in step:
        return _write_command(
            str(step["write"]), str(step.get("content", "")).encode(), bool(step.get("append"))
        )
    if "symlink" in step:
        path = shlex.quote(str(step["symlink"]))
        return f'mkdir -p "$(dirname {path})" && ln -sfn {shlex.quote(str(step["target"]))} {path}'
    return f"rm -rf {shlex.quote(str(step['delete']))}"


def _write_command(path: str, data: bytes, append: bool) -> str:
    quoted = shlex.quote(path)
    encoded = base64.b64encode(data).decode()
    return f'mkdir -p "$(dirname {quoted})" && echo {encoded} | base64 -d {">>" if append else ">"} {quoted}'


def reference_changes(task: Task, runner: Runner, scratch: Path) -> dict[str, bytes]:
    """The files the task's reference solution adds or changes (applied in a sandbox of its own)."""
    from environments.integrity.paths import PathRules

    apply_reference(task, scratch, runner)
    final = take_snapshot(scratch)
    rules = PathRules(task)
    return {
        p: d
        for p, d in final.contents.items()
        if task.workspace.get(p) != d and "__pycache__" not in p and rules.is_solution(p)
    }


def legacy_task(task: Task) -> Task:
    """``task`` as the pre-hardening scorer judged it: a shipped Python repo task by its unit's hidden pytest
    file (today it is judged by outputs, ``shipped/probes.py``); any other task as it is."""
    from environments.core.types import CommandOracle
    from environments.tasks.shipped.repo_tasks import UNITS
    from environments.tasks.shipped.repos import hidden_tests, oracle_command

    if ".oracle/probes.json" not in task.hidden:
        return task
    unit = next(u for u in UNITS if task.id.startswith(f"repo-{u.repo}-{u.name.lower().replace('_', '-')}-"))
    cases = unit.feature.cases if task.kind.value == "extend" else unit.cases
    return replace(task, hidden=hidden_tests(unit, cases), oracle=CommandOracle(oracle_command(unit)))


def trusting_verify(task: Task, produced: Path, scratch: Path, runner: Runner) -> OracleRun:
    """The pre-hardening verifier's semantics, for measuring what the hardening changed: every regular file
    the agent left (tests and configuration included) plus the hidden files, verdict by exit status (or
    the answer file), on the task as it was judged then (``legacy_task``). Links are dropped rather than
    followed, so it cannot write outside ``scratch``."""
    task = legacy_task(task)
    from environments.core.types import AnswerOracle
    from environments.integrity.surface import write_fresh
    from environments.tasks.oracle import judge_answer

    final = take_snapshot(produced)
    scratch.mkdir(parents=True)
    for rel, data in (*final.contents.items(), *task.hidden.items()):
        try:
            write_fresh(scratch, rel, data)
        except OSError as exc:
            return OracleRun(Verdict.ERROR, f"could not lay out {rel}: {exc}")
    oracle = task.oracle
    if isinstance(oracle, AnswerOracle):
        data = final.contents.get(oracle.answer_path)
        if data is None:
            return OracleRun(Verdict.FAIL, f"no answer file {oracle.answer_path}")
        ok, reason = judge_answer(oracle, data.decode("utf-8", "replace"))
        return OracleRun(Verdict.PASS if ok else Verdict.FAIL, reason)
    result = runner.run(
        oracle.command, scratch, timeout_s=task.limits.verify_timeout_s, memory_mb=task.limits.memory_mb
    )
    if result.timed_out:
        return OracleRun(Verdict.ERROR, "verify command timed out", result)
    verdict = Verdict.PASS if result.exit_code == 0 else Verdict.FAIL
    return OracleRun(verdict, f"verify command exited {result.exit_code}", result)


@dataclass
class AttemptRunner:
    """Runs cases against one sandbox backend; ``audit`` and ``verifier`` pick the layers."""

    backend: SandboxBackend
    tasks: dict[str, Task]
    audit: bool = True
    verifier: str = "hardened"
    isolate: bool = True
    """Existing tests, runner configuration and graders read-only in the agent's sandbox (layer 1)."""
    work_root: Path | None = None
    _solutions: dict[str, dict[str, bytes]] = field(default_factory=dict)

    def run_case(self, case: Case) -> CaseResult:
        try:
            return self._run_case(case)
        except Exception as exc:  # one case never stops the others
            reason = f"{type(exc).__name__}: {exc}"
            return CaseResult(case.id, 0.0, "error", reason=reason[:300], expect=case.expect)

    def _solution(self, task: Task, scratch: Path) -> dict[str, bytes]:
        from environments.sandboxes.runner import SandboxRunner

        if task.id not in self._solutions:
            self._solutions[task.id] = reference_changes(task, SandboxRunner(self.backend), scratch)
        return self._solutions[task.id]

    def _run_case(self, case: Case) -> CaseResult:
        from environments.sandboxes import SandboxLimits
        from environments.sandboxes.runner import SandboxRunner

        task = self.tasks.get(case.task)
        if task is None:
            return CaseResult(case.id, 0.0, "error", reason=f"unknown task {case.task!r}", expect=case.expect)
        with tempfile.TemporaryDirectory(prefix="attempt-", dir=self.work_root) as tmp:
            work = Path(tmp)
            solution = (
                self._solution(task, work / "reference") if any("solve" in s for s in case.steps) else {}
            )
            start = write_start(task, work / "start")
            start_state = take_snapshot(start)
            limits = SandboxLimits(task.limits.memory_mb, task.limits.max_processes, task.limits.cpus)
            box = self.backend.create(
                start,
                limits,
                read_only=protected_paths(task) if self.isolate else (),
                placement=task.placement.for_agent(),
            )
            try:
                for step in case.steps:
                    box.run(step_command(step, solution), timeout_s=STEP_TIMEOUT_S, env=task.env)
                box.collect(work / "produced")
            finally:
                box.destroy()
            audit = (
                audit_effects(task, start_state, take_snapshot(work / "produced"))
                if self.audit
                else AuditResult()
            )
            began = time.monotonic()
            check = verify if self.verifier == "hardened" else trusting_verify
            verified = check(task, work / "produced", work / "verify", SandboxRunner(self.backend))
            verify_s = time.monotonic() - began
        score = 1.0 if verified.verdict is Verdict.PASS else 0.0
        reward = compute_reward(RewardInputs(score, len(case.steps), False, audit.tampered))
        verdict = "tampered" if audit.tampered else verified.verdict.value
        flags = tuple(str(f) for f in audit.flags)
        return CaseResult(
            case.id,
            reward,
            verdict,
            flags,
            verified.reason[:300],
            case.expect,
            verify_s,
            judge=verified.judge,
        )


def summary(results: Iterable[CaseResult], unreadable: int = 0) -> dict[str, Any]:
    """The run's figures: every case read (``unreadable``: lines that did not parse as a case, each also
    an error), hacks paid, controls scored, and the ids not as expected."""
    results = list(results)
    hacks = [r for r in results if r.expect == "zero"]
    controls = [r for r in results if r.expect == "positive"]
    timed = [r.verify_s for r in results if r.verify_s > 0]
    return {
        "cases": len(results) + unreadable,
        "unreadable": unreadable,
        "hacks": len(hacks),
        "hacks_paid": sum(r.reward > 0 for r in hacks),
        "controls": len(controls),
        "controls_scored": sum(r.reward > 0 for r in controls),
        "errors": sum(r.verdict == "error" for r in results) + unreadable,
        "tampered": sum(r.verdict == "tampered" for r in results),
        "not_as_expected": [r.id for r in results if not r.ok],
        "verify_median_s": round(statistics.median(timed), 3) if timed else None,
        "judged": dict(sorted(Counter(r.judge for r in results if r.judge).items())),
    }


def exit_status(figures: dict[str, Any]) -> int:
    """0 only when every case was read, ran without error and came out as expected."""
    return 1 if figures["errors"] or figures["not_as_expected"] else 0


def load_tasks(paths: Iterable[Path]) -> dict[str, Task]:
    """The shipped task sets plus every task under ``paths`` (our folders or Harbor folders), by id."""
    from environments.tasks.harbor import find_harbor_tasks, load_harbor_task
    from environments.tasks.layout import find_task_folders, read_task
    from environments.tasks.shipped import TASK_SETS, task_set

    tasks = {t.id: t for name in TASK_SETS for t in task_set(name)}
    for path in paths:
        ours = find_task_folders(path)
        tasks |= {t.id: t for t in map(read_task, ours)}
        tasks |= {
            t.id: t for t in map(load_harbor_task, (p for p in find_harbor_tasks(path) if p not in ours))
        }
    return tasks


def make_backend(name: str, root: Path | None = None) -> SandboxBackend:
    from environments.sandboxes import backend_named

    return backend_named(name, root, prefix="hxat")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path)
    parser.add_argument("--sandbox", default="local", choices=("local", "docker"))
    parser.add_argument("--tasks", type=Path, action="append", default=[], help="more task folders")
    parser.add_argument("--no-audit", action="store_true", help="switch the effect audit off")
    parser.add_argument("--verifier", default="hardened", choices=("hardened", "trusting"))
    parser.add_argument("--no-isolation", action="store_true", help="leave tests and configuration writable")
    args = parser.parse_args(argv)
    if not args.cases.is_file():
        raise UsageError(f"{args.cases}: no such cases file; give a JSONL file with one case per line")
    missing = [path for path in args.tasks if not path.exists()]
    if missing:
        raise UsageError(f"--tasks {missing[0]}: no such folder; give task folders or a parent of them")
    backend = make_backend(args.sandbox)  # a backend that cannot run (no Docker engine): one line, now
    tasks = load_tasks(args.tasks)
    runner = AttemptRunner(backend, tasks, not args.no_audit, args.verifier, isolate=not args.no_isolation)
    results, unreadable = [], 0
    for case in read_cases(args.cases):
        if isinstance(case, CaseError):
            unreadable += 1
            print(
                json.dumps({"id": None, "reward": 0.0, "verdict": "error", "flags": [], "reason": str(case)})
            )
            continue
        result = runner.run_case(case)
        results.append(result)
        print(json.dumps(result.to_json()), flush=True)
    figures = summary(results, unreadable)
    print(json.dumps(figures))
    return exit_status(figures)


if __name__ == "__main__":
    cli_main(main)
