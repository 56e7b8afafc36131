"""Notebooks to data tasks: a notebook the test writes (questions in markdown and comments, display cells,
a frame, IPython syntax), its answers computed by running its cells in the bubblewrap sandbox, the
candidates kept only when they pass the seven checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from environments.core.types import AnswerOracle
from environments.tasks.notebooks import find_candidates, notebook_tasks


def _cell(kind: str, text: str) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
    return cell | ({"outputs": [], "execution_count": None} if kind == "code" else {})


CELLS = [
    _cell("markdown", "# Orders\nA look at last quarter's orders."),
    _cell("code", "import pandas as pd\ndf = pd.read_csv('orders.csv')\ndf.head()"),
    _cell("markdown", "### What is the mean unit price?"),
    _cell("code", "df['price'].mean()"),
    _cell("code", "# Which region ordered the most units?\ndf.groupby('region')['units'].sum().idxmax()"),
    _cell("code", "df.describe()"),
    _cell("markdown", "How many orders are for more than 100 units?"),
    _cell("code", "big = df['units'] > 100\nbig.sum()"),
    _cell("markdown", "Totals per region"),
    _cell("code", "df.groupby('region').sum(numeric_only=True)"),
    _cell("code", "%matplotlib inline"),
    _cell("markdown", "What is the median price?"),
    _cell("code", "df['price'].median()"),
]


def _write(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame]:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "region": rng.choice(["north", "south", "east"], 60, p=[0.5, 0.3, 0.2]),
            "units": rng.integers(1, 200, 60),
            "price": rng.uniform(2, 40, 60).round(2),
        }
    )
    data = tmp_path / "data"
    data.mkdir()
    frame.to_csv(data / "orders.csv", index=False)
    notebook = tmp_path / "orders.ipynb"
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": CELLS}))
    return notebook, data, frame


def test_candidates_need_an_authors_question_and_plain_python(tmp_path: Path):
    notebook, _, _ = _write(tmp_path)
    candidates, rejected = find_candidates(json.loads(notebook.read_text()))
    assert [c.cell for c in candidates] == [3, 4, 7, 9]
    assert candidates[0].question == "What is the mean unit price?"
    assert candidates[1].question == "Which region ordered the most units?"
    assert "big = df['units'] > 100" in candidates[2].script and "__value = big.sum()" in candidates[2].script
    assert any("cell 10: IPython syntax" in r for r in rejected)
    assert any("cell 12: an earlier cell could not be used" in r for r in rejected)
    with pytest.raises(ValueError, match="not a notebook"):
        find_candidates({"worksheets": []})


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (scripts/sandbox-deps.sh)")
def test_answers_come_from_running_the_cells_in_the_sandbox_and_tasks_pass_the_checks(tmp_path: Path):
    from environments.sandboxes import LocalBackend
    from environments.sandboxes.runner import SandboxRunner

    notebook, data, frame = _write(tmp_path)
    report = notebook_tasks(notebook, data, SandboxRunner(LocalBackend(prefix="hxnbt")), prefix="orders")
    kept = {t.id: t for t in report.tasks}
    assert sorted(kept) == ["orders-c3", "orders-c4", "orders-c7"], report.rejected
    expected = {
        "orders-c3": round(float(frame["price"].mean()), 6),
        "orders-c4": frame.groupby("region")["units"].sum().idxmax(),
        "orders-c7": float((frame["units"] > 100).sum()),
    }
    for task_id, value in expected.items():
        oracle = kept[task_id].oracle
        assert isinstance(oracle, AnswerOracle)
        assert oracle.expected == (pytest.approx(value) if isinstance(value, float) else value), task_id
    assert "orders.csv" in kept["orders-c3"].workspace and "`orders.csv`" in kept["orders-c3"].instruction
    assert any(r.startswith("cell 9:") and "not a scalar answer" in r for r in report.rejected), (
        report.rejected
    )
