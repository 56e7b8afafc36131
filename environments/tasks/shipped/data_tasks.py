"""The data-analysis task set: seeded CSVs, one question each, answers computed by the reference's pandas.

60 datasets (6 domains x 10 seeds) x 6 questions from distinct templates = 360 tasks. The eval split is
25 whole datasets (150 tasks), so no eval question shares its data with a training question. The expected
answer is computed here by running the reference's own code on the CSV exactly as written, so check 2
re-derives it in a fresh process.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

from environments.core.types import AnswerOracle, Kind, Limits, Reference, Source, Split, Task
from environments.tasks.checks import check_no_leakage, check_well_formed
from environments.tasks.shipped.datasets import DOMAINS, Dataset
from environments.tasks.shipped.questions import TEMPLATES, Question

SEED = 20260401
SEEDS_PER_DOMAIN = 10
QUESTIONS_PER_DATASET = 6
EVAL_DATASETS = 25
DATA_LIMITS = Limits(agent_timeout_s=600.0, verify_timeout_s=30.0, memory_mb=1024, max_processes=32)

_WRITE_ANSWER = """
if isinstance(answer, str):
    text = answer
else:
    text = repr(round(float(answer), 4))
with open("answer.txt", "w") as fh:
    fh.write(text + "\\n")
"""


def solve_script(question: Question) -> str:
    return (
        'import numpy as np\nimport pandas as pd\n\ndf = pd.read_csv("data.csv")\n'
        f"{question.code}\n{_WRITE_ANSWER}"
    )


def compute_answer(question: Question, frame: pd.DataFrame) -> float | str | None:
    namespace = {"pd": pd, "np": np, "df": frame.copy()}
    exec(question.code, namespace)  # noqa: S102 - our own template code, the same the reference runs
    answer = namespace["answer"]
    if isinstance(answer, str):
        return answer
    value = float(answer)
    return round(value, 6) if math.isfinite(value) else None


def instruction(ds: Dataset, question: Question) -> str:
    columns = ", ".join(f"`{c}`" for c in ds.frame.columns)
    return (
        f"{ds.title} are in `data.csv` (columns: {columns}). Missing values are empty cells.\n\n"
        f"{question.text}\n\nWrite only the answer (a number or a name, nothing else) to `answer.txt` "
        "in the working directory.\n"
    )


def dataset_tasks(domain: str, seed: int, split: Split) -> list[Task]:
    rng = np.random.default_rng([SEED, list(DOMAINS).index(domain), seed])
    ds = DOMAINS[domain](rng)
    csv = ds.frame.to_csv(index=False).encode()
    frame = pd.read_csv(io.BytesIO(csv))
    tasks: list[Task] = []
    for index in rng.permutation(len(TEMPLATES)):
        question = TEMPLATES[int(index)](ds, rng)
        if question is None:
            continue
        expected = compute_answer(question, frame)
        if expected is None:
            continue
        task = Task(
            id=f"data-{domain}-{seed:02d}-{question.template.replace('_', '-')}",
            source=Source.DATA,
            kind=Kind.ANALYSIS,
            split=split,
            instruction=instruction(ds, question),
            workspace={"data.csv": csv},
            hidden={},
            oracle=AnswerOracle(expected=expected, abs_tol=question.abs_tol, rel_tol=1e-6),
            reference=Reference(
                files={"solve.py": solve_script(question).encode()}, command="python solve.py"
            ),
            limits=DATA_LIMITS,
        )
        if check_well_formed(task).passed and check_no_leakage(task).passed:
            tasks.append(task)
        if len(tasks) == QUESTIONS_PER_DATASET:
            return tasks
    raise RuntimeError(f"dataset {domain}/{seed} gave only {len(tasks)} usable questions; add templates")


def data_tasks() -> list[Task]:
    """All data-analysis tasks, in a fixed order."""
    keys = [(domain, seed) for domain in DOMAINS for seed in range(SEEDS_PER_DOMAIN)]
    held_out = {keys[i] for i in np.random.default_rng(SEED).permutation(len(keys))[:EVAL_DATASETS]}
    return [
        task for key in keys for task in dataset_tasks(*key, Split.EVAL if key in held_out else Split.TRAIN)
    ]
