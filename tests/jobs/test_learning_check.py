"""The learning check's headline (pure) and its job over finished runs (no training here: the runs
themselves are the slow tier's and the closing note's)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from actors.config_loader import ConfigError, load_config
from actors.eval_report import SessionResult, headlines, summarize, write_report
from jobs.learning_check import DEFAULT_CONFIG, LearningCheckConfig, run


def _sessions(step: int, calls: list[int], passes: int, harness: str = "pi") -> list[SessionResult]:
    name = "base" if step == 0 else f"{harness}-step{step}"
    return [
        SessionResult(harness, name, step, f"rows-eval-{i:03d}", "analysis", passed=i < passes, tool_calls=c)
        for i, c in enumerate(calls)
    ]


START = [3, 2, 4, 3, 5, 2, 3, 4] * 6  # 48 sessions, mean 3.25
SHORT = [1, 2, 1, 1, 2, 1, 1, 1] * 6  # mean 1.25: 62% fewer, intervals apart


def test_the_headline_holds_with_fewer_calls_apart_and_pass_at_1_not_lower():
    (row,) = headlines(summarize(_sessions(0, START, 40) + _sessions(12, SHORT, 41)))
    assert row.harness == "pi" and row.start.step == 0 and row.last.step == 12
    assert row.calls_reduction == pytest.approx(1 - 1.25 / 3.25)
    assert row.calls_apart and row.holds
    diff, low, high = row.pass_difference
    assert diff == pytest.approx(1 / 48) and low < 0 < high


@pytest.mark.parametrize(
    ("last_calls", "last_passes", "failing"),
    [
        (SHORT, 39, "pass@1 lower"),
        ([3, 2, 3, 3, 3, 2, 3, 2] * 6, 40, "too few calls dropped"),
        ([1] * 15 + [17], 40, "intervals overlap"),
    ],
)
def test_the_headline_fails_on_each_of_its_three_conditions(last_calls, last_passes, failing):
    (row,) = headlines(
        summarize(_sessions(0, START, 40) + _sessions(12, last_calls * (48 // len(last_calls)), last_passes))
    )
    conditions = {
        "pass@1 lower": row.last.pass_at_1 >= row.start.pass_at_1,
        "too few calls dropped": row.calls_reduction >= 0.30,
        "intervals overlap": row.calls_apart,
    }
    assert [name for name, ok in conditions.items() if not ok] == [failing]
    assert not row.holds


def test_a_harness_without_its_start_or_a_trained_checkpoint_has_no_headline():
    assert headlines(summarize(_sessions(12, SHORT, 40))) == []
    assert headlines(summarize(_sessions(0, START, 40))) == []


def test_the_job_counts_runs_where_the_headline_held(tmp_path: Path):
    runs = {0: _sessions(12, SHORT, 41), 1: _sessions(12, START, 40)}  # seed 1 learned nothing
    for seed, last in runs.items():
        out = tmp_path / f"seed-{seed}"
        write_report(out / "eval", _sessions(0, START, 40) + last, {})
        (out / "summary.json").write_text("{}\n")
    figures = run(LearningCheckConfig(seeds=(0, 1), out_dir=str(tmp_path), validation_overrides=()))
    assert figures["held"] == {"0": True, "1": False} and figures["runs_held"] == 1
    text = (tmp_path / "headline.md").read_text()
    assert "## Seed 0" in text and "## Seed 1" in text and "held in 1 of 2 runs" in text
    saved = json.loads((tmp_path / "headline.json").read_text())
    assert saved["runs"]["0"][0]["calls_apart"] is True


def test_a_start_too_close_to_one_call_is_said_to_leave_no_room_for_the_criterion(tmp_path: Path):
    from actors.eval_report import calls_room

    assert calls_room(3.25) == pytest.approx(1 - 1 / 3.25) and calls_room(1.0) == 0 and calls_room(0) == 0
    near = [1, 1, 1, 2] * 12  # mean 1.25: at most 20% fewer before every session is at one call
    runs = {0: (START, SHORT), 1: (near, [1] * 48)}
    for seed, (start, last) in runs.items():
        out = tmp_path / f"seed-{seed}"
        write_report(out / "eval", _sessions(0, start, 40) + _sessions(12, last, 40), {})
        (out / "summary.json").write_text("{}\n")
    figures = run(LearningCheckConfig(seeds=(0, 1), out_dir=str(tmp_path), validation_overrides=()))
    assert figures["runs_held"] == 1 and figures["runs_out_of_reach"] == 1
    text = (tmp_path / "headline.md").read_text()
    assert "In 1 of 2 the start took so few calls that a 30% drop is out of reach" in text
    seed_1 = text[text.index("## Seed 1") :]
    assert "| 20% (intervals overlap) | 20% | no |" in seed_1 or "| 20% | 20% | no |" in seed_1


def test_its_config_runs_five_seeds_with_a_validation_pass_and_refuses_repeats():
    from jobs.learning_check import VALIDATION

    cfg = load_config(LearningCheckConfig, DEFAULT_CONFIG)
    assert cfg.seeds == (0, 1, 2, 3, 4) and cfg.smoke_config.endswith("learning-check.yaml")
    assert cfg.validation_overrides == VALIDATION
    with pytest.raises(ConfigError, match=r"seeds=\[1, 1\]: give one or more distinct seeds"):
        load_config(LearningCheckConfig, DEFAULT_CONFIG, ("seeds=[1, 1]",))


def test_each_seed_is_a_whole_smoke_run_with_its_own_seeds_and_folder(tmp_path: Path, monkeypatch):
    from jobs import smoke
    from jobs.learning_check import run_seed

    seen = []

    def fake_run(cfg):
        seen.append(cfg)
        out = Path(cfg.out_dir)
        write_report(out / "eval", _sessions(0, START, 40) + _sessions(12, SHORT, 40), {})
        (out / "summary.json").write_text("{}\n")

    monkeypatch.setattr(smoke, "run", fake_run)
    cfg = LearningCheckConfig(
        out_dir=str(tmp_path), train_overrides=("trainer.max_steps=2",), eval_overrides=("tasks.max_tasks=4",)
    )
    results = run_seed(cfg, 2)
    (smoke_cfg,) = seen
    assert (
        smoke_cfg.out_dir == str(tmp_path / "seed-2")
        and results == tmp_path / "seed-2" / "eval" / "results.json"
    )
    assert smoke_cfg.train_overrides[-3:] == ("trainer.max_steps=2", "trainer.seed=2", "tasks.seed=2")
    assert smoke_cfg.eval_overrides[-1] == "tasks.max_tasks=4"
    assert smoke_cfg.train_config.endswith("train-learning-check.yaml")
    run_seed(cfg, 2)  # finished: kept, not run again
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("last_calls", "last_passes", "improved"),
    [
        (SHORT, 30, "tool calls"),  # same pass@1, fewer calls
        (START, 47, "pass@1"),  # 30/48 -> 47/48: [0.48, 0.75] below [0.89, 1.00]
        (SHORT, 47, "pass@1 and tool calls"),
        (START, 36, ""),  # 36/48's interval [0.61, 0.85] overlaps 30/48's
    ],
)
def test_improved_names_what_rose_or_fell_with_the_intervals_apart(last_calls, last_passes, improved):
    (row,) = headlines(summarize(_sessions(0, START, 30) + _sessions(12, last_calls, last_passes)))
    assert row.improved == improved


def test_the_report_has_a_learning_section_only_with_a_start_and_a_trained_checkpoint(tmp_path: Path):
    write_report(tmp_path / "a", _sessions(0, START, 20) + _sessions(12, SHORT, 40), {})
    text = (tmp_path / "a" / "report.md").read_text()
    assert "## Learning: the last checkpoint against its start" in text
    assert "- pi (pi-step12 against the start): pass@1 and tool calls improved" in text
    write_report(tmp_path / "b", _sessions(0, START, 20), {})
    assert "## Learning" not in (tmp_path / "b" / "report.md").read_text()


def test_the_smoke_summary_prints_and_keeps_each_harness_against_its_start(tmp_path: Path, capsys):
    from jobs.smoke import learning

    write_report(tmp_path, _sessions(0, START, 30) + _sessions(12, SHORT, 47), {})
    figures = learning(tmp_path / "results.json")
    assert figures["pi"]["checkpoint"] == "pi-step12" and figures["pi"]["improved"] == "pass@1 and tool calls"
    assert figures["pi"]["pass_at_1"] == pytest.approx([30 / 48, 47 / 48])
    diff, low, high = figures["pi"]["pass_at_1_difference"]
    assert diff == pytest.approx(17 / 48) and 0 < low < diff < high
    line = capsys.readouterr().out
    assert "pi: pass@1 0.62 [" in line and "pass@1 and tool calls improved, the 95% intervals apart" in line


def test_a_pass_at_1_drop_leads_the_verdict_even_when_tool_calls_improved():
    (row,) = headlines(summarize(_sessions(0, START, 43) + _sessions(24, SHORT, 0)))  # the seed-3 collapse
    assert row.improved == "tool calls" and row.regressed == "pass@1" and not row.holds
    assert row.verdict.startswith("REGRESSION: pass@1 got worse (-0.90 [")
    assert row.verdict.endswith("; tool calls improved, the 95% intervals apart")
    (more,) = headlines(summarize(_sessions(0, SHORT, 40) + _sessions(24, START, 40)))
    assert more.regressed == "tool calls" and more.verdict.startswith("REGRESSION: tool calls got worse")
    (even,) = headlines(summarize(_sessions(0, START, 40) + _sessions(24, START, 38)))
    assert even.regressed == "" and even.verdict == "no improvement shown"


def test_the_job_report_opens_with_every_regression_before_the_count_of_runs_that_held(tmp_path: Path):
    runs = {0: _sessions(12, SHORT, 41), 3: _sessions(12, SHORT, 0)}
    for seed, last in runs.items():
        out = tmp_path / f"seed-{seed}"
        write_report(out / "eval", _sessions(0, START, 40) + last, {})
        (out / "summary.json").write_text("{}\n")
    figures = run(LearningCheckConfig(seeds=(0, 3), out_dir=str(tmp_path), validation_overrides=()))
    assert figures["runs_held"] == 1 and len(figures["regressions"]) == 1
    text = (tmp_path / "headline.md").read_text()
    assert text.index("**Regressions** (1)") < text.index("held in 1 of 2 runs") < text.index("## Seed 0")
    assert "- seed 3, pi: REGRESSION: pass@1 got worse" in text


def test_each_seed_reports_its_collapses_and_groups_of_equal_rewards(tmp_path: Path):
    out = tmp_path / "seed-3"
    write_report(out / "eval", _sessions(0, START, 40) + _sessions(12, SHORT, 41), {})
    event = {"step": 17, "reason": "24/24 of the latest rollouts blocked by the guard", "action": "rollback"}
    train = {"rollouts": {"pi": {"groups_trained": 20, "groups_equal": 9}}, "collapses": {"pi": [event]}}
    (out / "summary.json").write_text(json.dumps({"train": train}))
    figures = run(LearningCheckConfig(seeds=(3,), out_dir=str(tmp_path), validation_overrides=()))
    text = (tmp_path / "headline.md").read_text()
    assert (
        "- pi training: 9 of 20 trained groups had equal rewards (no gradient); collapses: step 17: 24/24"
        in text
    )
    saved = json.loads((tmp_path / "headline.json").read_text())
    assert saved["training"]["3"]["pi"]["groups_equal"] == 9 and figures["runs_held"] == 1


def test_the_validation_pass_chooses_the_checkpoint_the_headline_calls_last(tmp_path: Path):
    out = tmp_path / "seed-0"
    held_out = _sessions(0, START, 40) + _sessions(12, SHORT, 41) + _sessions(24, SHORT, 10)
    write_report(out / "eval", held_out, {})
    (out / "summary.json").write_text("{}\n")
    validation = _sessions(12, SHORT[:24], 20) + _sessions(24, SHORT[:24], 8)  # step 24 fell apart
    write_report(out / "validation", validation, {})
    figures = run(LearningCheckConfig(seeds=(0,), out_dir=str(tmp_path)))  # the pass is kept, not run
    assert figures["runs_held"] == 1 and not figures["regressions"]
    saved = json.loads((tmp_path / "headline.json").read_text())
    assert saved["runs"]["0"][0]["last"]["checkpoint"] == "pi-step12"


def test_the_validation_pass_prefers_pass_at_1_then_fewer_calls_then_the_later_step():
    from actors.eval_report import choose_by_validation

    tie = _sessions(12, START[:24], 20) + _sessions(24, START[:24], 20)
    assert choose_by_validation(summarize(tie)) == {"pi": "pi-step24"}
    shorter = _sessions(12, SHORT[:24], 20) + _sessions(24, START[:24], 20)
    assert choose_by_validation(summarize(shorter)) == {"pi": "pi-step12"}
    better = _sessions(12, SHORT[:24], 19) + _sessions(24, START[:24], 20)
    assert choose_by_validation(summarize(better + _sessions(0, START[:24], 24))) == {"pi": "pi-step24"}
    with pytest.raises(ValueError, match="the chosen checkpoint 'pi-step36' was not evaluated"):
        headlines(summarize(_sessions(0, START, 40) + _sessions(12, SHORT, 41)), chosen={"pi": "pi-step36"})


def test_the_validation_pass_evaluates_the_runs_checkpoints_on_the_validation_tasks_only(
    tmp_path, monkeypatch
):
    from jobs import evaluate
    from jobs.learning_check import run_validation

    seen = []
    monkeypatch.setattr(evaluate, "run", lambda cfg: seen.append(cfg))
    cfg = LearningCheckConfig(out_dir=str(tmp_path), eval_overrides=("rollouts.max_sessions=2",))
    (tmp_path / "seed-4" / "train" / "pi" / "checkpoint-12").mkdir(parents=True)
    assert run_validation(cfg, 4) is None and not seen  # one checkpoint: nothing to choose
    (tmp_path / "seed-4" / "train" / "pi" / "checkpoint-24").mkdir()
    results = run_validation(cfg, 4)
    (eval_cfg,) = seen
    assert results == tmp_path / "seed-4" / "validation" / "results.json"
    assert eval_cfg.train_dir == str(tmp_path / "seed-4" / "train")
    assert eval_cfg.out_dir == str(tmp_path / "seed-4" / "validation")
    assert eval_cfg.tasks.set == "row-count-validation" and eval_cfg.tasks.max_tasks == 24
    assert not eval_cfg.include_base and not eval_cfg.model_cards and eval_cfg.capability.problems == 0
    assert eval_cfg.rollouts.max_sessions == 2  # the check's own evaluation overrides apply too
    assert run_validation(replace(cfg, validation_overrides=()), 4) is None and len(seen) == 1
