"""The SFT sweep: the best point, Trackio rows, and a two-point sweep as Ray tasks into one project."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

from actors.sft.sweep import SweepPoint, pick_best, trackio_rows
from tests.actors.sft.conftest import tiny_config


def test_the_best_point_is_the_lowest_held_out_loss_and_failures_never_win():
    rows = [
        {"point": "a", "status": "ok", "eval_loss": 2.0},
        {"point": "b", "status": "failed", "eval_loss": None},
        {"point": "c", "status": "ok", "eval_loss": 1.5},
        {"point": "d", "status": "ok", "eval_loss": None, "train_loss_last": 1.0},
    ]
    assert pick_best(rows)["point"] == "d"
    assert pick_best(rows[:3])["point"] == "c"
    assert pick_best(rows[1:2]) is None
    assert SweepPoint(0.001, 8, 512).name == "lr0.001-r8-len512"


def test_trackio_rows_keep_the_training_and_held_out_metrics():
    history = [
        {"eval_loss": 3.0, "eval_entropy": 1.0, "eval_runtime": 0.1, "step": 0},
        {"loss": 2.5, "entropy": 1.1, "mean_token_accuracy": 0.2, "learning_rate": 1e-3, "step": 1},
        {"train_runtime": 1.0, "train_loss": 2.5, "step": 1},
    ]
    assert trackio_rows(history) == [
        (0, {"eval_loss": 3.0, "eval_entropy": 1.0}),
        (1, {"loss": 2.5, "entropy": 1.1, "mean_token_accuracy": 0.2, "learning_rate": 1e-3}),
    ]


def test_a_two_point_sweep_runs_as_ray_tasks_and_logs_to_one_trackio_project(
    tmp_path: Path, tiny_model: Path, ray_cluster
):
    from actors.sft.sweep import run_sweep

    cfg = tiny_config(tmp_path, tiny_model, max_steps=2, batch_size=4)
    cfg = replace(cfg, sweep=replace(cfg.sweep, learning_rates=(1e-3, 1e-2), trackio_project="sft-test",
                                     trackio_dir=str(tmp_path / "trackio")))  # fmt: skip
    figures = run_sweep(cfg, log=lambda _: None)
    out = tmp_path / "out"
    results = json.loads((out / "results.json").read_text())
    runs = {r["point"]: r for r in results["runs"]}
    assert (
        figures["points"] == 2
        and figures["failed"] == 0
        and set(runs)
        == {
            "lr0.001-r8-len512",
            "lr0.01-r8-len512",
        }
    )
    best = min(runs.values(), key=lambda r: r["eval_loss"])
    assert figures["best"] == results["best"]["point"] == best["point"]
    assert f"**{best['point']}**" in (out / "results.md").read_text()
    for name in runs:
        assert (out / name / "adapter_model.safetensors").exists()
    assert figures["trackio_dir"] == str(tmp_path / "trackio")
    db = sqlite3.connect(tmp_path / "trackio" / "sft-test.db")
    logged = db.execute("select run_name, metrics from metrics").fetchall()
    assert {name for name, _ in logged} == set(runs)
    keys = set().union(*(json.loads(m) for _, m in logged))
    assert {"loss", "entropy", "mean_token_accuracy", "learning_rate", "eval_loss"} <= keys
