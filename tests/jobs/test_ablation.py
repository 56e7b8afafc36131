"""The guard ablation's numbers (pure): each arm's pass@1 at its last checkpoints, the enforce - monitor
difference with its Newcombe interval, and the monitor arm's would-be blocks; the report and its JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.eval_report import ALL, SessionResult, difference_interval, write_report
from jobs.ablation import ablation_markdown, compare_arms, last_checkpoint_results, load_results

HOSTS = "hosts: host_not_in_conversation"


def arm(passes: dict[str, tuple[int, int]], step: int, **extra) -> list[SessionResult]:
    """``passes[harness] = (passed, sessions)`` at ``step``, plus one earlier checkpoint that always fails."""
    out = []
    for harness, (passed, total) in passes.items():
        for i in range(total):
            out.append(SessionResult(harness, f"{harness}-step1", 1, f"t{i}", "analysis"))
            out.append(
                SessionResult(
                    harness, f"{harness}-step{step}", step, f"t{i}", "analysis", passed=i < passed, **extra
                )
            )
    return out


def test_the_last_checkpoint_of_each_harness_is_compared():
    results = arm({"pi": (3, 4)}, 4) + arm({"hermes": (1, 4)}, 2)
    last = last_checkpoint_results(results)
    assert {(r.harness, r.step) for r in last} == {("pi", 4), ("hermes", 2)} and len(last) == 8


def test_pass_at_1_of_each_arm_the_difference_and_the_monitor_arms_would_be_blocks():
    enforce = arm({"pi": (30, 40), "opencode": (20, 40)}, 6)
    monitor = arm({"pi": (24, 40), "opencode": (22, 40)}, 6, would_block_reasons=(HOSTS,))
    monitor.append(SessionResult("pi", "pi-step6", 6, "tx", "analysis", failure="sandbox crashed"))
    train = {
        "enforce": {"pi": {"finished": 96, "blocked": 5, "would_blocked": 0}},
        "monitor": {"pi": {"finished": 96, "blocked": 0, "would_blocked": 7}},
    }
    summary = compare_arms(enforce, monitor, train)
    cells = {(c["arm"], c["harness"]): c for c in summary["cells"]}
    assert cells[("enforce", ALL)]["sessions"] == 80 and cells[("enforce", ALL)]["passes"] == 50
    assert cells[("monitor", ALL)]["passes"] == 46 and cells[("monitor", "pi")]["unscored"] == 1
    assert cells[("monitor", "pi")]["would_blocked"] == 40 and cells[("enforce", "pi")]["would_blocked"] == 0
    assert cells[("enforce", "pi")]["checkpoints"] == ("pi-step6",)
    diffs = {d["harness"]: d for d in summary["differences"]}
    assert (diffs[ALL]["diff"], diffs[ALL]["low"], diffs[ALL]["high"]) == pytest.approx(
        difference_interval(50, 80, 46, 80)
    )
    assert diffs["pi"]["diff"] == pytest.approx(0.15) and diffs["pi"]["low"] < 0.15 < diffs["pi"]["high"]
    would = summary["monitor_would_block"]
    assert would["train_rollouts"] == {"pi": 7} and would["train_finished"] == {"pi": 96}
    assert would["eval_sessions"] == 80 and would["eval_calls_by_rule"] == {HOSTS: 80}
    text = ablation_markdown(summary)
    assert "## pass@1 difference (enforce - monitor)" in text
    assert f"| **all** | +0.050 | [{diffs[ALL]['low']:+.3f}, {diffs[ALL]['high']:+.3f}] |" in text
    assert "pi 7 of 96" in text and f"| {HOSTS} | 80 |" in text
    json.dumps(summary)  # the JSON file is written from it as it is


def test_an_arm_without_scored_sessions_has_no_difference():
    summary = compare_arms(
        arm({"pi": (1, 2)}, 2), [SessionResult("pi", "pi-step2", 2, "t", "a", failure="x")]
    )
    assert all(d["diff"] is None for d in summary["differences"])
    assert "| **all** | - | - |" in ablation_markdown(summary)
    assert "no rollout counters" in ablation_markdown(summary)


def test_an_evaluations_results_json_reads_back_as_its_sessions(tmp_path: Path):
    results = arm({"pi": (1, 2)}, 2, would_block_reasons=(HOSTS,))
    paths = write_report(tmp_path, results, {})
    assert load_results(paths["json"]) == results
