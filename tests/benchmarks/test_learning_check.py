"""The learning check's figures grow seed by seed: a seed run in an earlier session stays with its own date
until it is run again, and the totals count every seed the file holds."""

from __future__ import annotations

import pytest

from benchmarks import learning_check


def entry(holds: bool, room: float, regressed: bool = False, **extra) -> dict:
    row = {"harness": "pi", "holds": holds, "calls_room": room, "regressed": regressed}
    return {"headlines": [row], **extra}


def test_earlier_seeds_are_kept_with_their_own_date_and_rerun_seeds_replaced():
    kept = {
        "date": "2026-12-01",
        "command": "old",
        "runs": {"0": entry(False, 0.2), "3": entry(False, 0.2), "10": entry(True, 0.5)},
    }
    now = {"3": entry(True, 0.4, date="2026-12-06"), "2": entry(False, 0.1, date="2026-12-06")}
    runs = learning_check.merged_runs(kept, now)
    assert list(runs) == ["0", "2", "3", "10"]  # numeric order, not text order
    assert runs["0"]["date"] == "2026-12-01" and runs["0"]["command"] == "old"
    assert runs["3"]["headlines"][0]["holds"] is True  # the rerun replaced the earlier seed 3
    assert runs["2"]["date"] == "2026-12-06"


def test_totals_count_every_seed_held():
    runs = {"0": entry(True, 0.5), "1": entry(False, 0.2, regressed=True), "2": entry(False, 0.25)}
    assert learning_check.totals(runs, 0.30) == {
        "runs_held": 1,
        "runs_out_of_reach": 2,
        "regressions": ["seed 1, pi"],
    }


def test_the_jobs_output_is_shown_as_it_comes_and_its_last_line_read(capsys):
    script = "print('[train] pi step 1/12'); print('{\"report\": \"r.md\"}'); print()"
    assert learning_check.streamed_last_line(["-c", script]) == '{"report": "r.md"}'
    assert "[train] pi step 1/12" in capsys.readouterr().err


def test_a_job_that_fails_stops_the_benchmark_with_its_exit_status():
    with pytest.raises(SystemExit, match="exited with 3"):
        learning_check.streamed_last_line(["-c", "import sys; print('half'); sys.exit(3)"])
