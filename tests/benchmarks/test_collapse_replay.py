"""The collapse replay reads a finished run's records as the trainer wrote them and feeds the watch in the
order rollouts finished, so a run whose calls ran away shows the step the runaway-calls sign acts at."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import collapse_replay


def write_run(root: Path, calls_by_version: dict[int, list[int]], blocked_version: int = 0) -> Path:
    """A train folder: rollouts of version v finish during step v, which ends at time 100 * v + 90."""
    trajectories = root / "pi" / "trajectories"
    trajectories.mkdir(parents=True)
    for version, calls in calls_by_version.items():
        for i, n in enumerate(calls):
            adapter = "pi-start" if version == 1 else f"pi-v{version}"
            turn = {"started_at_s": 100.0 * version + i, "duration_s": 1.0}
            blocked = version == blocked_version
            guard = {"adapter": adapter, "tool_calls": n, "blocked": blocked, "turns": [turn]}
            (trajectories / f"pi-g{version}-r{i}.json").write_text(json.dumps({"extra": {"guard": guard}}))
    last = max(calls_by_version)
    record = {
        "publish_windows": [[100.0 * v - 10, 100.0 * v - 9] for v in range(1, last + 2)],
        "log_history": [{"step": v, "kl": 0.001} for v in range(1, last + 1)],
        "collapses": [],
    }
    (root / "train.json").write_text(json.dumps({"pi": record}))
    return root


def test_runaway_calls_fire_at_the_step_they_pass_the_factor_and_point_before_them(tmp_path: Path):
    steady = {v: [3] * 8 for v in range(1, 4)}
    run = write_run(tmp_path, {**steady, 4: [12] * 8, 5: [12] * 8})
    figures = collapse_replay.replay_run(run, "pi", (0.0, 2.0, 5.0))
    assert figures["start_calls"] == 3.0
    assert figures["rollouts"] == 40 and figures["steps"] == 5
    assert figures["events_by_calls_factor"]["0"] == []
    first = figures["events_by_calls_factor"]["2"][0]
    assert first["step"] == 4  # the window (latest 12) reaches 9 calls > 6 at step 4's end
    # the window holds versions 3 and 4: the version to go back to is the last vouched for before them
    assert first["good_version"] == 2
    assert figures["events_by_calls_factor"]["5"] == []  # 12 calls never pass 15


def test_a_steady_run_never_fires_and_blocks_still_count(tmp_path: Path):
    run = write_run(tmp_path / "steady", {v: [2, 3] * 4 for v in range(1, 6)})
    assert collapse_replay.replay_run(run, "pi", (1.5,))["events_by_calls_factor"]["1.5"] == []
    blocked = write_run(tmp_path / "blocked", {v: [2] * 8 for v in range(1, 5)}, blocked_version=3)
    events = collapse_replay.replay_run(blocked, "pi", (0.0,))["events_by_calls_factor"]["0"]
    assert events and "blocked by the guard" in events[0]["reason"]


def test_versions_are_read_from_adapter_names():
    assert collapse_replay.version_number("pi-v7") == 7
    assert collapse_replay.version_number("pi-start") == 1
    assert collapse_replay.version_number("") == 1


def test_a_run_stopped_before_its_end_has_its_steps_inferred_from_the_sessions_versions(tmp_path: Path):
    steady = {v: [3] * 8 for v in range(1, 4)}
    run = write_run(tmp_path, {**steady, 4: [12] * 8, 5: [12] * 8})
    (run / "train.json").unlink()  # stopped: the trainer never wrote its record
    figures = collapse_replay.replay_run(run, "pi", (2.0,))
    assert figures["steps"] == 4  # versions 2-5 were sampled, so steps 1-4 ended
    assert "stopped early" in figures["steps_from"]
    first = figures["events_by_calls_factor"]["2"][0]
    assert first["step"] == 4 and first["good_version"] == 2
