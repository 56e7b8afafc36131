from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from environments.tasks.jsonl import dump_jsonl
from environments.tasks.layout import write_task
from environments.validate import main
from tests.conftest import REPO
from tests.environments.tasks.taskutil import FIXED, answer_task, repo_task


def make_set(root: Path) -> Path:
    write_task(repo_task(), root)
    write_task(answer_task(), root)
    write_task(repo_task(id="solved-already", workspace={"calc.py": FIXED}), root)
    (root / "not-a-task").mkdir()
    (root / "not-a-task" / "task.json").write_text("{oops")
    return root


def test_cli_reports_each_failure_and_ends_with_the_summary_line(tmp_path, capsys):
    code = main([str(make_set(tmp_path / "set")), "--jobs", "1"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert any(line.startswith("FAIL solved-already start_fails: start state: pass") for line in lines)
    assert any(line.startswith("FAIL not-a-task well_formed:") and "not valid JSON" in line for line in lines)
    assert any(
        line.startswith("JUDGE ") and "judge: in-process (the verify command uses the shell" in line
        for line in lines
    )
    summary = json.loads(lines[-1])
    assert summary == {
        "tasks": 4,
        "valid": 2,
        "invalid": 2,
        "by_kind": {
            "analysis": {"tasks": 1, "valid": 1},
            "repair": {"tasks": 2, "valid": 1},
            "unknown": {"tasks": 1, "valid": 0},
        },
        "by_split": {
            "eval": {"tasks": 2, "valid": 1},
            "train": {"tasks": 1, "valid": 1},
            "unknown": {"tasks": 1, "valid": 0},
        },
        "judged": {"answer-file": 1, "in-process": 2, "unknown": 1},
    }


def test_progress_goes_to_stderr_and_stdout_keeps_its_lines(tmp_path, capsys):
    main([str(make_set(tmp_path / "set")), "--jobs", "2"])
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1].startswith("validate: 4/4 tasks (100%), ")  # no terminal: lines
    assert "validate:" not in captured.out
    assert json.loads(captured.out.strip().splitlines()[-1])["tasks"] == 4


def test_cli_reads_jsonl_and_counts_a_bad_line_as_invalid(tmp_path, capsys):
    path = dump_jsonl([repo_task(), answer_task()], tmp_path / "set.jsonl")
    path.write_text(path.read_text() + "[1, 2]\n")
    assert main([str(path), "--jobs", "2"]) == 1
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["tasks"], summary["valid"], summary["invalid"]) == (3, 2, 1)


def test_a_missing_path_is_reported_not_raised(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere")]) == 1
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["invalid"] == 1


def test_python_dash_m_entry_point_exits_0_on_a_valid_set(tmp_path):
    write_task(repo_task(), tmp_path / "set")
    done = subprocess.run(
        [sys.executable, "-m", "environments.validate", str(tmp_path / "set")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["valid"] == 1
