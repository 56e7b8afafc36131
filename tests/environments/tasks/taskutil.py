"""Small hand-made tasks for the tests: one good of each oracle type, and ways to break them."""

from __future__ import annotations

from dataclasses import replace

from environments.core.types import AnswerOracle, CommandOracle, Kind, Limits, Reference, Source, Split, Task

BUGGY = b"def add(a, b):\n    return a - b\n"
FIXED = b"def add(a, b):\n    return a + b\n"
CHECK = (
    b"import sys\nsys.path.insert(0, '')\nimport calc\n\n"
    b"assert calc.add(2, 3) == 5, 'add(2, 3) should be 5'\nassert calc.add(-1, 1) == 0\nprint('CALC OK')\n"
)
FAST_LIMITS = Limits(agent_timeout_s=20.0, verify_timeout_s=20.0, memory_mb=512)


def repo_task(**changes) -> Task:
    """A good repair task whose oracle is a plain Python checker (fast: no pytest start-up). It passes on the
    checker's last line, not its exit status alone, so code that exits 0 at import does not fool it."""
    task = Task(
        id="calc-add-repair",
        source=Source.REPO,
        kind=Kind.REPAIR,
        instruction="`add` in calc.py subtracts instead of adding. Fix it.\n",
        workspace={"calc.py": BUGGY, "README.md": b"# calc\n"},
        hidden={"verify/check_calc.py": CHECK},
        oracle=CommandOracle("set -o pipefail; python verify/check_calc.py | tail -n 1 | grep -qx 'CALC OK'"),
        reference=Reference(files={"calc.py": FIXED}),
        split=Split.EVAL,
        limits=FAST_LIMITS,
        judge="in-process",  # the checker imports calc in its own process: an explicit opt-in
    )
    return replace(task, **changes)


SOLVE = (
    b"import csv\nrows = list(csv.DictReader(open('data.csv')))\n"
    b"total = sum(float(r['price']) for r in rows if r['price'])\n"
    b"open('answer.txt', 'w').write(f'{total:.2f}\\n')\n"
)
CSV = b"item,price\npen,1.25\nink,\nbook,12.50\nlamp,33.10\n"


def answer_task(**changes) -> Task:
    """A good data-analysis task: the reference computes the total price, checked with a tolerance."""
    task = Task(
        id="prices-total",
        source=Source.DATA,
        kind=Kind.ANALYSIS,
        instruction="What is the total of `price` in data.csv (missing values count as 0)? "
        "Write the number to `answer.txt`.\n",
        workspace={"data.csv": CSV},
        hidden={},
        oracle=AnswerOracle(expected=46.85, abs_tol=0.01),
        reference=Reference(files={"solve.py": SOLVE}, command="python solve.py"),
        limits=FAST_LIMITS,
    )
    return replace(task, **changes)
