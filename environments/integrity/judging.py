"""How a command oracle's tests are judged: isolated (the default for pytest and unittest) or in-process.

Isolated judging (``environments/integrity/isolation/``) runs the task's tests in a pristine interpreter
that never imports the agent's code; the agent's modules run in a separate, confined process behind
proxies, and only plain data crosses. Forging the report, patching the runner or exiting early is then
impossible by construction: the agent's code has no access to the test process at all.

``judge_plan`` decides per task, as a pure function of its oracle: a plain ``pytest`` / ``python -m
pytest`` / ``python -m unittest`` command is judged isolated unless the task opts out with ``judge:
in-process``; anything else (a shell pipeline, another runner, Node) runs as the task says, in-process.
``build_isolated`` lays out the verify tree for it: the judge's tree (the task's tests, runner
configuration, hidden files and data, all pristine), the solution's tree inside it under a random dot
name (the agent's solution surface over the pristine workspace, no hidden file) and the package.
"""

from __future__ import annotations

import re
import secrets
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from environments.integrity.paths import PathRules
from environments.integrity.reports import ReportKind

if TYPE_CHECKING:
    from environments.integrity.surface import Surface
    from environments.tasks.types import Task

ISOLATED = "isolated"
IN_PROCESS = "in-process"
JUDGES = (ISOLATED, IN_PROCESS)
PACKAGE = Path(__file__).with_name("isolation")
_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
_SHELL = re.compile(r"[;&|<>`$\n(){}]")


@dataclass(frozen=True, slots=True)
class JudgePlan:
    """``mode`` is ``isolated`` or ``in-process``; for isolated, the runner and its arguments; for
    in-process, why (``reason``)."""

    mode: str
    runner: str = ""
    args: tuple[str, ...] = ()
    reason: str = ""

    @property
    def isolated(self) -> bool:
        return self.mode == ISOLATED

    @property
    def report_kind(self) -> ReportKind:
        return ReportKind.PYTEST if self.runner == "pytest" else ReportKind.UNITTEST


def parse_python_tests(command: str) -> tuple[str, tuple[str, ...]] | str:
    """``(runner, args)`` for a plain pytest or unittest command, else the reason it is not one."""
    if _SHELL.search(command):
        return "the verify command uses the shell (operators, substitutions or redirections)"
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return f"the verify command does not parse: {exc}"
    if words and words[0] in ("pytest", "py.test"):
        return "pytest", tuple(words[1:])
    if (
        len(words) >= 3
        and _PYTHON.match(words[0])
        and words[1] == "-m"
        and words[2] in ("pytest", "unittest")
    ):
        return words[2], tuple(words[3:])
    return "the verify command is not a plain pytest or unittest call"


def judge_plan(task: Task) -> JudgePlan:
    """How ``task``'s oracle is judged (see the module docstring)."""
    from environments.tasks.types import CommandOracle

    oracle = task.oracle
    if not isinstance(oracle, CommandOracle):
        return JudgePlan(IN_PROCESS, reason="an answer file is read by the verifier, no code runs")
    if oracle.reward_dir is not None:
        return JudgePlan(IN_PROCESS, reason="a Harbor grader judges by the reward it writes")
    parsed = parse_python_tests(oracle.command)
    if isinstance(parsed, str):
        return JudgePlan(IN_PROCESS, reason=parsed)
    if task.judge == IN_PROCESS:
        return JudgePlan(IN_PROCESS, reason="the task opts in to in-process judging (judge: in-process)")
    return JudgePlan(ISOLATED, runner=parsed[0], args=parsed[1])


@dataclass(frozen=True, slots=True)
class IsolatedTree:
    command: str
    report: Path


def _is_solution_code(rules: PathRules, path: str) -> bool:
    return rules.is_solution(path) and path.endswith((".py", ".pyi", ".pyc", ".so", ".pyd", ".pth"))


def build_isolated(
    task: Task, surface: Surface, scratch: Path, plan: JudgePlan, deadline_s: float
) -> IsolatedTree:
    """The judge's tree at ``scratch`` (which must not exist) with the solution's tree and the package
    inside it; returns the command to run there and where its report will be."""
    from environments.integrity.surface import build_verify_tree

    scratch = Path(scratch)
    scratch.mkdir(parents=True)
    token = secrets.token_hex(8)
    solution = f".solution-{token}"
    tmp = f".solution-tmp-{token}"
    verdict = f".verdict-{token}"
    build_verify_tree(_without_hidden(task), surface, scratch / solution)
    rules = PathRules(task)
    judge_files = {p: d for p, d in task.workspace.items() if not _is_solution_code(rules, p)}
    judge_files.update(task.hidden)
    for rel, data in judge_files.items():
        target = scratch / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (scratch / tmp).mkdir()
    shutil.copytree(PACKAGE, scratch / verdict / "ha_isolation", ignore=shutil.ignore_patterns("__pycache__"))
    boot = (
        f"import sys; sys.path.insert(0, {str(verdict)!r}); sys.argv[0] = 'isolated-judge'; "
        "from ha_isolation.judge_main import main; sys.exit(main())"
    )
    words = [
        "python",
        "-I",
        "-c",
        boot,
        "--solution",
        solution,
        "--tmp",
        tmp,
        "--report",
        f"{verdict}/report.json",
        "--deadline-s",
        f"{deadline_s:.1f}",
        plan.runner,
        "--",
        *plan.args,
    ]
    return IsolatedTree(" ".join(shlex.quote(w) for w in words), scratch / verdict / "report.json")


def _without_hidden(task: Task) -> Task:
    import dataclasses

    return dataclasses.replace(task, hidden={})
