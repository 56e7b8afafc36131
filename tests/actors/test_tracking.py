"""The Trackio writer outside trainers: an evaluation's per-step figures and tables land in the project's
SQLite file (in a child process: Trackio reads its directory at import)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from actors.eval_report import Cell, CheatingRow, trackio_points
from actors.tracking import trackio_command


def cell(harness: str, step: int, kind: str = "all", passes: int = 2) -> Cell:
    return Cell(harness, f"{harness}-v{step}", step, kind, 4, passes, passes / 4, 0.1, 0.9, 2.5, 0, 0)


def test_evaluation_points_are_per_step_and_per_harness():
    cells = [cell("pi", 0), cell("pi", 4, passes=3), cell("pi", 4, kind="repair"), cell("hermes", 4)]
    cheating = [CheatingRow("pi", "pi-v4", 4, 10, 2, 0.2, 0.05, 0.5)]
    points = dict(trackio_points(cells, cheating))
    assert sorted(points) == [0, 4]
    assert points[4]["eval/pi/pass_at_1"] == 0.75 and points[4]["eval/pi/cheating_rate"] == 0.2
    assert points[4]["eval/hermes/tool_calls"] == 2.5 and "eval/hermes/pass_at_1_low" in points[4]
    assert not any("repair" in k for k in points[4])  # the per-kind cells stay in the table


def test_the_writer_logs_rows_and_tables_to_the_project(tmp_path: Path):
    script = (
        "import json, sys\n"
        "from actors.tracking import TrackioLogger\n"
        "logger = TrackioLogger('proj', sys.argv[1])\n"
        "rows = [(0, {'eval/pi/pass_at_1': 0.5}), (4, {'eval/pi/pass_at_1': 0.75})]\n"
        "tables = {'evaluation': [{'harness': 'pi', 'step': 4, 'pass_at_1': 0.75}], 'cheating': []}\n"
        "print('logged', json.dumps(logger.log_run('evaluation-x', {'train_dir': 't'}, rows, tables)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "trackio")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "logged 2" in done.stdout.splitlines()
    db = sqlite3.connect(tmp_path / "trackio" / "proj.db")
    logged = [
        (run, step, json.loads(m))
        for run, step, m in db.execute("select run_name, step, metrics from metrics")
    ]
    assert {run for run, _, _ in logged} == {"evaluation-x"}
    steps = {step: m for _, step, m in logged if "eval/pi/pass_at_1" in m}
    assert steps[0]["eval/pi/pass_at_1"] == 0.5 and steps[4]["eval/pi/pass_at_1"] == 0.75
    assert any("evaluation" in m for _, _, m in logged)  # the table


def test_the_dashboard_command_names_the_project_and_a_folder_only_when_one_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("TRACKIO_DIR", raising=False)
    assert trackio_command("grpo-run") == "trackio show --project grpo-run"
    assert trackio_command("my run") == "trackio show --project 'my run'"  # pasted into a shell as it is
    assert trackio_command("p", str(tmp_path)) == f"TRACKIO_DIR={tmp_path.resolve()} trackio show --project p"
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "t"))
    assert trackio_command("p") == f"TRACKIO_DIR={tmp_path.resolve() / 't'} trackio show --project p"


def test_a_trainers_log_history_becomes_rows_of_its_numbers_by_step():
    """What a trainer on another node logged, replayed on the driver's node (``gather_trackio``)."""
    from actors.tracking import history_rows

    history = [
        {"loss": 0.5, "reward": "0.25", "step": 1, "epoch": 0.1},
        {"step": 2, "completions": ["a"], "clipped": True, "kl": float("nan")},  # nothing to plot
        {"ratio": 1.0, "step": 3},
    ]
    assert history_rows(history) == [(1, {"loss": 0.5, "reward": 0.25, "epoch": 0.1}), (3, {"ratio": 1.0})]
