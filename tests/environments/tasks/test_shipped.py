from __future__ import annotations

import hashlib
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from environments.core.types import CommandOracle, Kind, Source, Split
from environments.tasks.checks import run_checks
from environments.tasks.layout import read_task
from environments.tasks.shipped import build_shipped_tasks, shipped_tasks, write_shipped_tasks
from environments.tasks.shipped.probes import NODE_ORACLE_COMMAND
from environments.tasks.shipped.repo_tasks import UNITS
from environments.tasks.shipped.units import Lang
from environments.validate import main


@pytest.fixture(scope="module")
def tasks():
    return shipped_tasks()


def tree_digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_data_set_has_300_tasks_150_held_out(tasks):
    data = [t for t in tasks if t.source is Source.DATA]
    assert len(data) >= 300
    assert sum(t.split is Split.EVAL for t in data) == 150
    assert len({t.id.split("-")[1] for t in data}) == 6  # domains
    assert len({t.id.split("-", 3)[3] for t in data}) >= 15  # question templates


def test_repo_set_covers_four_kinds_with_40_held_out(tasks):
    repo = [t for t in tasks if t.source is Source.REPO]
    kinds = Counter(t.kind for t in repo)
    assert set(kinds) == {Kind.REPAIR, Kind.QA, Kind.BUILD, Kind.EXTEND}
    assert min(kinds.values()) >= 25
    assert sum(t.split is Split.EVAL for t in repo) == 40
    assert Counter(t.kind for t in repo if t.split is Split.EVAL) == dict.fromkeys(kinds, 10)
    js = [t for t in repo if isinstance(t.oracle, CommandOracle) and t.oracle.command == NODE_ORACLE_COMMAND]
    assert len(js) >= 15


def test_repo_tasks_vary_in_bug_domain_and_wording(tasks):
    assert len({u.bug.report for u in UNITS}) == len(UNITS)
    assert len({u.repo for u in UNITS}) >= 8
    repairs = [t for t in tasks if t.kind is Kind.REPAIR]
    assert len({t.instruction.split("`")[0] for t in repairs}) >= 3  # more than one phrasing
    assert len({t.id for t in tasks}) == len(tasks)


def test_qa_answers_are_judged_by_a_checker_that_accepts_equivalent_spellings(tasks, tmp_path):
    qa = next(t for t in tasks if t.id == "repo-timeline-quarter-qa")
    checker = qa.hidden[".oracle/check_answer.py"]
    (tmp_path / ".oracle").mkdir()
    (tmp_path / ".oracle" / "check_answer.py").write_bytes(checker)

    def verdict(answer: str) -> int:
        (tmp_path / "answer.txt").write_text(answer)
        done = subprocess.run(["python3", ".oracle/check_answer.py"], cwd=tmp_path, capture_output=True)
        return done.returncode

    assert verdict('["2025-Q1", "2025-Q2", "2025-Q4"]') == 0
    assert verdict("('2025-Q1','2025-Q2', '2025-Q4')\n") == 0
    assert verdict("`['2025-Q1', '2025-Q2', '2025-Q4']`") == 0
    assert verdict("['2025-Q1', '2025-Q2']") != 0


def test_js_qa_answers_match_what_node_computes():
    for unit in (u for u in UNITS if u.lang is Lang.JS):
        script = f"{unit.source}\nprocess.stdout.write(JSON.stringify({unit.probe}));"
        out = subprocess.run(
            ["node", "-e", script], capture_output=True, text=True, timeout=30, check=True
        ).stdout
        assert json.loads(out) == json.loads(unit.probe_answer), unit.name


def test_generation_is_deterministic_and_the_cache_is_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_ADAPTERS_CACHE", str(tmp_path / "cache"))
    built = build_shipped_tasks()
    again = write_shipped_tasks(tmp_path / "again")
    assert tree_digest(built) == tree_digest(again)
    assert build_shipped_tasks() == built


@pytest.mark.parametrize(
    "task_id",
    [
        "data-sales-00-month-total",
        "data-clinic-01-top-weekday",
        "repo-ledger-parse-cents-repair",
        "repo-graphkit-topo-order-build",
        "repo-jsutils-chunk-extend",
        "repo-jsutils-daysbetween-repair",
        "repo-stats-median-qa",
    ],
)
def test_a_sample_of_shipped_tasks_passes_all_seven_checks(tasks, task_id):
    task = next(t for t in tasks if t.id == task_id)
    assert [(r.name.value, r.reason) for r in run_checks(task) if not r.passed] == []


@pytest.mark.slow
def test_every_shipped_task_passes_all_seven_checks(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_ADAPTERS_CACHE", str(tmp_path / "cache"))
    code = main(["--jobs", "2"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 0, "\n".join(lines[-20:])
    summary = json.loads(lines[-1])
    assert summary["invalid"] == 0 and summary["tasks"] >= 424
    assert read_task(build_shipped_tasks() / "repo" / "repo-stats-median-qa").kind is Kind.QA
