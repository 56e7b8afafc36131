"""The train job's per-step console line: made from a trainer's log record, once per step, on rank 0."""

from __future__ import annotations

import math
import pickle

import pytest

from actors.progress import ProgressBoard, StepProgress, progress_line, step_progress
from actors.serving.config import ServingConfig
from actors.trainer import HarnessTrainer, TrainerConfig
from actors.trainer_settings import TrainerSettings

# A step's record as TRL logs it: the pool's rollout figures (means, and counters summed over the step)
# merged with TRL's own.
STEP_LOGS = {
    "loss": 0.01,
    "rollout/reward": 0.41234,
    "rollout/passed": 0.5,
    "rollout/tool_calls": 1.25,
    "rollout/blocked": 0.25,
    "rollout/blocked_total": 2.0,
    "rollout/tampered_total": 1.0,
    "sample/staleness_mean": 1.0,
    "sample/staleness_max": 2.0,
    "perf/step_s": 9.84,
}


def test_a_step_record_becomes_the_documented_line():
    progress = step_progress("pi", 3, 20, STEP_LOGS)
    assert progress == StepProgress("pi", 3, 20, 0.41234, 0.5, 1.25, 2, 1, 1.0, 9.84)
    assert progress_line(progress) == (
        "pi step 3/20  reward 0.412  pass 0.50  calls 1.25  blocked 2  tampered 1  staleness 1.0  step 9.8s"
    )


def test_a_step_at_which_the_watch_acted_ends_its_line_with_what_it_did():
    said = "pass rate 1/12 over the latest rollouts against 1.00 at the start; rolled back to version 1"
    line = progress_line(step_progress("pi", 3, 20, STEP_LOGS, said))
    assert line.startswith("pi step 3/20  reward 0.412") and line.endswith(f"step 9.8s  collapse: {said}")
    assert "\n" not in line


def test_a_step_that_scored_no_rollout_shows_dashes_and_zero_counts():
    # TRL logs an empty window as None; a rate over nothing is nan
    logs = {"loss": 0.0, "rollout/reward": None, "sample/staleness_mean": math.nan, "perf/step_s": 3.0}
    line = progress_line(step_progress("hermes", 1, 2, logs))
    assert line == (
        "hermes step 1/2  reward -  pass -  calls -  blocked 0  tampered 0  staleness -  step 3.0s"
    )


def test_the_record_logged_when_training_ends_is_no_step():
    assert step_progress("pi", 20, 20, {**STEP_LOGS, "train_runtime": 200.0, "train_loss": 0.1}) is None


def test_a_bad_step_or_count_is_refused():
    with pytest.raises(ValueError, match="max_steps >= 1"):
        StepProgress("pi", 1, 0)
    with pytest.raises(ValueError, match="counts >= 0"):
        StepProgress("pi", 1, 2, blocked=-1)


def test_the_board_hands_each_record_once_in_the_order_posted():
    board = ProgressBoard()
    first, second = StepProgress("pi", 1, 2), StepProgress("opencode", 1, 2)
    board.post(first)
    board.post(second)
    assert board.take() == [first, second]
    assert board.take() == []
    assert pickle.loads(pickle.dumps(first)) == first  # it crosses from a trainer's process to the board


class _NoServer:
    def publish(self, name: str, path: str) -> float:
        raise AssertionError("not called")

    def retire(self, name: str, wait: bool = True) -> None:
        raise AssertionError("not called")


def test_the_trainer_reports_each_step_once_and_skips_the_end_of_training_record():
    cfg = TrainerConfig(
        harness="pi",
        serving=ServingConfig(model="m"),
        server_url="http://x/v1",
        output_dir="out",
        settings=TrainerSettings(max_steps=2),
    )
    trainer = HarnessTrainer(cfg, _NoServer(), pool=None)
    trainer.report(1, STEP_LOGS)  # no sink yet: nothing to do
    seen: list[StepProgress] = []
    trainer.on_progress = seen.append
    trainer.report(1, STEP_LOGS)
    trainer.report(1, STEP_LOGS)  # Transformers may log a step twice (e.g. at a save)
    trainer.report(2, {**STEP_LOGS, "perf/step_s": 4.0})
    trainer.report(2, {"train_runtime": 12.0, "train_loss": 0.1})
    assert [(p.harness, p.step, p.max_steps, p.step_s) for p in seen] == [
        ("pi", 1, 2, 9.84),
        ("pi", 2, 2, 4.0),
    ]
