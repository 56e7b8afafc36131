"""Data-analysis tasks from a published notebook: its questions, answered by running its own cells.

    python -m environments.tasks.notebooks NOTEBOOK.ipynb --data DIR --out TASKS_DIR [--prefix ID]

A candidate is a code cell whose last statement is an expression (``df.price.mean()``), with a question
written by the notebook's author just before it: the preceding markdown cell (its text, short), or the
cell's own leading comment. No question, no candidate: questions are never invented. The candidate's
reference solution is the notebook's code cells up to that one, with that expression written to
``answer.txt``; the expected answer is what that solution writes when it runs in the sandbox (``runner``),
never the notebook's stored output. A value that is not a number or a short text (a frame, a plot) is
rejected, as are cells using IPython syntax (``%``, ``!``) or display-only calls. Each candidate that
gets an answer becomes a ``Task`` (the data files as its workspace, an ``AnswerOracle`` with a relative
tolerance) and must then pass the seven checks (``environments.tasks.checks``) to be kept.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.core.runner import Runner
from environments.core.types import AnswerOracle, Kind, Limits, Reference, Source, Task
from environments.errors import UsageError, cli_main
from environments.sandboxes import LocalBackend
from environments.sandboxes.runner import SandboxRunner
from environments.tasks.candidates import Kept, id_from_name
from environments.tasks.layout import read_files

MAX_QUESTION_CHARS = 300
MAX_TEXT_ANSWER = 64
REL_TOL = 1e-4
"""An answer within 0.01% of the notebook's value passes (the agent is not told a precision)."""
DISPLAY_CALLS = frozenset({"print", "display", "plot", "show", "head", "tail", "describe", "info", "hist"})
_WRITE = """
__value = {expression}
try:
    import numpy as __np
    if isinstance(__value, __np.generic):
        __value = __value.item()
except ImportError:
    pass
if isinstance(__value, bool) or not isinstance(__value, (int, float, str)):
    raise SystemExit(f"not a scalar answer: {{type(__value).__name__}}")
__text = __value if isinstance(__value, str) else repr(round(float(__value), 6))
with open("answer.txt", "w") as __fh:
    __fh.write(__text + "\\n")
"""


@dataclass(frozen=True, slots=True)
class Candidate:
    cell: int
    """Index of the code cell among the notebook's cells."""
    question: str
    expression: str
    script: str


@dataclass(slots=True)
class NotebookReport(Kept):
    candidates: list[Candidate] = field(default_factory=list)


def _source(cell: dict[str, Any]) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else str(text)


def _question_from_markdown(text: str) -> str | None:
    lines = [line.strip().lstrip("#").strip() for line in text.strip().splitlines() if line.strip()]
    question = " ".join(lines)
    return question if question and len(question) <= MAX_QUESTION_CHARS else None


def _leading_comment(code: str) -> str | None:
    lines = code.strip().splitlines()
    if lines and lines[0].lstrip().startswith("#"):
        return _question_from_markdown(lines[0]) or None
    return None


def _display_only(node: ast.expr) -> bool:
    call = node if isinstance(node, ast.Call) else None
    if call is None:
        return False
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name in DISPLAY_CALLS


def find_candidates(notebook: dict[str, Any]) -> tuple[list[Candidate], list[str]]:
    """Candidates of a notebook (nbformat 4 JSON), and why other code cells were left out."""
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise ValueError("not a notebook: no `cells` list (nbformat 4 JSON expected)")
    candidates, rejected, code_so_far = [], [], []
    last_markdown: str | None = None
    for index, cell in enumerate(cells):
        kind, text = cell.get("cell_type"), _source(cell)
        if kind == "markdown":
            last_markdown = text
            continue
        if kind != "code" or not text.strip():
            continue
        if re.search(r"^\s*[%!]", text, re.MULTILINE):
            rejected.append(
                f"cell {index}: IPython syntax (% or !); every later candidate needs plain Python"
            )
            code_so_far.append(None)
            last_markdown = None
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            rejected.append(f"cell {index}: not Python ({exc.msg})")
            code_so_far.append(None)
            last_markdown = None
            continue
        question = (_question_from_markdown(last_markdown) if last_markdown else None) or _leading_comment(
            text
        )
        last_markdown = None
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr) and not _display_only(last.value):
            if None in code_so_far:
                rejected.append(f"cell {index}: an earlier cell could not be used")
            elif question is None:
                rejected.append(f"cell {index}: no question before it (markdown or a leading comment)")
            else:
                body = ast.unparse(ast.Module(body=tree.body[:-1], type_ignores=[]))
                expression = ast.unparse(last.value)
                script = "\n".join([*code_so_far, body, _WRITE.format(expression=expression)])
                candidates.append(Candidate(index, question, expression, script))
        code_so_far.append(text)
    return candidates, rejected


def _parse_answer(text: str) -> float | str | None:
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return text if len(text) <= MAX_TEXT_ANSWER else None


def answer_of(candidate: Candidate, data: dict[str, bytes], runner: Runner, limits: Limits) -> float | str:
    """Run the candidate's solution in a fresh folder holding the data, on ``runner`` (a sandbox), and read
    what it wrote; raise ``ValueError`` saying why there is no answer."""
    from environments.tasks.layout import write_files

    with tempfile.TemporaryDirectory(prefix="notebook-") as tmp:
        folder = Path(tmp)
        write_files(folder, {**data, "solve.py": candidate.script.encode()})
        result = runner.run(
            "python solve.py", folder, timeout_s=limits.verify_timeout_s, memory_mb=limits.memory_mb
        )
        answer = folder / "answer.txt"
        if not result.ok or not answer.is_file():
            tail = result.output_tail.strip().splitlines()[-1:] or ["no output"]
            raise ValueError(f"its cells failed in the sandbox (exit {result.exit_code}): {tail[0][:200]}")
        value = _parse_answer(answer.read_text(errors="replace"))
        if value is None:
            raise ValueError("its answer is empty or a long text, not a checkable value")
        return value


def instruction(question: str, data: dict[str, bytes]) -> str:
    files = ", ".join(f"`{name}`" for name in sorted(data))
    return (
        f"{question}\n\nThe data is in {files}. Write only the answer (a number, or a short text) to "
        "`answer.txt`.\n"
    )


def notebook_tasks(
    notebook: Path, data_dir: Path, runner: Runner, *, prefix: str, check: bool = True
) -> NotebookReport:
    """Every task the notebook yields (see the module docstring); ``check=False`` skips the seven checks."""
    report = NotebookReport()
    try:
        parsed = json.loads(Path(notebook).read_text(encoding="utf-8"))
        report.candidates, report.rejected = find_candidates(parsed)
    except (ValueError, UnicodeDecodeError) as exc:
        report.rejected.append(f"{notebook}: {exc}")
        return report
    data = read_files(Path(data_dir))
    limits = Limits()
    for candidate in report.candidates:
        where = f"cell {candidate.cell}"
        try:
            expected = answer_of(candidate, data, runner, limits)
            task = Task(
                id=f"{prefix}-c{candidate.cell}",
                source=Source.DATA,
                kind=Kind.ANALYSIS,
                instruction=instruction(candidate.question, data),
                workspace=dict(data),
                hidden={},
                oracle=AnswerOracle(
                    expected=expected, rel_tol=REL_TOL if isinstance(expected, float) else 0.0
                ),
                reference=Reference(files={"solve.py": candidate.script.encode()}, command="python solve.py"),
                limits=limits,
            )
        except ValueError as exc:
            report.rejected.append(f"{where}: {exc}")
            continue
        report.judge(where, task, runner, check)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--data", type=Path, required=True, help="folder of the notebook's data files")
    parser.add_argument("--out", type=Path, required=True, help="where the kept tasks are written")
    parser.add_argument("--prefix", default="", help="task id prefix (default: the notebook's name)")
    args = parser.parse_args(argv)
    if not args.notebook.is_file():
        raise UsageError(f"{args.notebook}: no such notebook; give an .ipynb file")
    if not args.data.is_dir():
        raise UsageError(f"--data {args.data}: no such folder; give the folder of the notebook's data files")
    prefix = args.prefix or id_from_name(args.notebook.stem, "notebook")
    runner = SandboxRunner(LocalBackend(prefix="hxnb"))
    report = notebook_tasks(args.notebook, args.data, runner, prefix=prefix)
    return report.write(args.out, candidates=len(report.candidates))


if __name__ == "__main__":
    cli_main(main)
