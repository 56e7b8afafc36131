"""How a command oracle's tests are judged: isolated (the default for pytest and unittest) or in-process.

Isolated judging (``environments/integrity/isolation/``) runs the task's tests in a pristine interpreter
that never imports the agent's code; the agent's modules run in a separate, confined process behind
proxies, and only plain data crosses. Forging the report, patching the runner or exiting early is then
impossible by construction: the agent's code has no access to the test process at all.

``judge_plan`` decides per task, as a pure function of its oracle: a plain ``pytest`` / ``python -m
pytest`` / ``python -m unittest`` command is judged isolated unless the task opts out with ``judge:
in-process``; the output-only judge (``probe.py``, which the shipped repo tasks use) is ``output-only``,
separated by construction too; anything else (a shell pipeline, another runner, Node's test runner, a
Harbor grader) runs as the task says, in-process.
``build_isolated`` lays out the verify tree for it: the judge's tree (the task's tests, runner
configuration, hidden files and data, all pristine), the solution's tree inside it under a random dot
name (the agent's solution surface over the pristine workspace, no hidden file) and the package.
"""

from __future__ import annotations

import functools
import re
import secrets
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from environments.core.types import CommandOracle, Task
from environments.integrity.paths import PathRules
from environments.integrity.reports import ReportKind

if TYPE_CHECKING:
    from environments.integrity.surface import Surface

ISOLATED = "isolated"
OUTPUT_ONLY = "output-only"
ANSWER_FILE = "answer-file"
IN_PROCESS = "in-process"
JUDGES = (ISOLATED, OUTPUT_ONLY, ANSWER_FILE, IN_PROCESS)
PACKAGE = Path(__file__).with_name("isolation")
OUTPUT_JUDGE = Path(__file__).with_name("probe.py")
"""The output-only judge (``probe.py``): a task whose oracle runs this very file, as a hidden file, with
``python -I`` never loads the agent's code into the judging process either."""
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
        """The tests run through the proxies of ``isolation/``."""
        return self.mode == ISOLATED

    @property
    def separated(self) -> bool:
        """No agent code shares the judging process: isolated, output-only or an answer file."""
        return self.mode in (ISOLATED, OUTPUT_ONLY, ANSWER_FILE)

    @property
    def report_kind(self) -> ReportKind:
        return ReportKind.PYTEST if self.runner == "pytest" else ReportKind.UNITTEST


def _plain_words(command: str) -> list[str] | str:
    """The words of a command the shell does nothing to but split, else why it is not one."""
    if _SHELL.search(command):
        return "the verify command uses the shell (operators, substitutions or redirections)"
    try:
        return shlex.split(command)
    except ValueError as exc:
        return f"the verify command does not parse: {exc}"


def parse_python_tests(command: str) -> tuple[str, tuple[str, ...]] | str:
    """``(runner, args)`` for a plain pytest or unittest command, else the reason it is not one."""
    words = _plain_words(command)
    if isinstance(words, str):
        return words
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
    oracle = task.oracle
    if not isinstance(oracle, CommandOracle):
        return JudgePlan(ANSWER_FILE, reason="the verifier reads the answer file; no agent code runs")
    if oracle.reward_dir is not None:
        return JudgePlan(IN_PROCESS, reason="a Harbor grader judges by the reward it writes")
    if _runs_output_judge(task, oracle.command):
        return JudgePlan(OUTPUT_ONLY)
    parsed = parse_python_tests(oracle.command)
    if isinstance(parsed, str):
        return JudgePlan(IN_PROCESS, reason=parsed)
    if task.judge == IN_PROCESS:
        return JudgePlan(IN_PROCESS, reason="the task opts in to in-process judging (judge: in-process)")
    if not task.placement.plain:
        why = (
            "its files are bound at paths of their own (a work directory or mounts), which would give the "
            "solution's process another way to the tests' files than the one it is kept from"
        )
        return JudgePlan(IN_PROCESS, reason=why)
    return JudgePlan(ISOLATED, runner=parsed[0], args=parsed[1])


def _runs_output_judge(task: Task, command: str) -> bool:
    """``python -I <hidden script>``: the output-only judge itself, or a checker that imports only the
    standard library and has no way to load other code (``-I`` keeps the workspace off its path)."""
    words = _plain_words(command)
    if isinstance(words, str) or len(words) < 3 or not _PYTHON.match(words[0]) or words[1] != "-I":
        return False
    script = task.hidden.get(words[2])
    if script is None:
        return False
    return script == _output_judge_source() or stdlib_only_checker(script)


@functools.cache
def _output_judge_source() -> bytes:
    return OUTPUT_JUDGE.read_bytes()


_LOADERS = frozenset(
    {"importlib", "runpy", "subprocess", "ctypes", "pickle", "marshal", "zipimport", "os", "pty"}
)
_LOADER_NAMES = frozenset({"__import__", "exec", "eval", "compile", "path", "system", "popen", "spawn"})


def stdlib_only_checker(source: bytes) -> bool:
    """Whether a checker script can only read files: every import is a standard-library module that
    cannot load or run other code, and it names no way to (``exec``, ``sys.path``, ``__import__``)."""
    import ast
    import sys

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names or top in _LOADERS or getattr(node, "level", 0):
                    return False
        elif isinstance(node, ast.Name) and node.id in _LOADER_NAMES:
            return False
        elif isinstance(node, ast.Attribute) and node.attr in _LOADER_NAMES:
            return False
    return True


@dataclass(frozen=True, slots=True)
class IsolatedTree:
    command: str
    report: Path


def _is_solution_code(rules: PathRules, path: str) -> bool:
    return rules.is_solution(path) and path.endswith((".py", ".pyi", ".pyc", ".so", ".pyd", ".pth"))


def task_modules(task: Task) -> list[str]:
    """Top-level module names the task's own starting workspace ships as solution code (``pkg`` of
    ``pkg/core.py`` or ``src/pkg/core.py``, ``tool`` of ``tool.py``): the solution's copy of these is
    the code under judgement even where an installed package has the same name."""
    rules = PathRules(task)
    names = set()
    for path in task.workspace:
        if not (_is_solution_code(rules, path) and path.endswith(".py")):
            continue
        parts = path.split("/")
        if parts[0] == "src" and len(parts) > 1:
            parts = parts[1:]
        top = parts[0].removesuffix(".py")
        if top.isidentifier():
            names.add(top)
    return sorted(names)


def build_isolated(
    task: Task, surface: Surface, scratch: Path, plan: JudgePlan, deadline_s: float
) -> IsolatedTree:
    """The judge's tree at ``scratch`` (which must not exist) with the solution's tree and the package
    inside it; returns the command to run there and where its report will be."""
    from environments.integrity.surface import build_verify_tree, write_fresh

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
        write_fresh(scratch, rel, data)
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
        "--task-modules",
        ",".join(task_modules(task)),
        plan.runner,
        "--",
        *plan.args,
    ]
    return IsolatedTree(" ".join(shlex.quote(w) for w in words), scratch / verdict / "report.json")


def _without_hidden(task: Task) -> Task:
    import dataclasses

    return dataclasses.replace(task, hidden={})
