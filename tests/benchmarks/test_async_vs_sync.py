"""The async-vs-sync model's null case: with no tail (every session the same length) and no step time,
neither schedule waits on anything, so the speedup is exactly 1.0; each of the two adds to it. Recorded
spans stand in for the lognormal: all equal, they are the null case again."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pytest

from benchmarks.async_vs_sync import asynchronous, load_spans, log_spread, record_spans, synchronous


def speedup(sigma: float, step_s: float, spans: tuple[float, ...] = ()) -> float:
    args = argparse.Namespace(
        median_s=90.0, sigma=sigma, step_s=step_s, groups_per_step=2, hold_s=600.0, spans=spans
    )
    sync = synchronous(2.0, args, random.Random(0))
    asyn = asynchronous(2.0, args, random.Random(0))
    return asyn["groups"] / sync["groups"]


def test_no_tail_and_no_step_time_gives_a_speedup_of_one():
    assert speedup(0.0, 0.0) == 1.0


def test_a_step_time_and_a_tail_each_give_the_async_schedule_its_lead():
    assert 1.0 < speedup(0.0, 30.0) < speedup(1.0, 30.0)


def test_recorded_spans_all_alike_are_the_null_case_and_a_recorded_tail_gives_a_lead():
    assert speedup(1.0, 0.0, spans=(1.0,) * 10) == 1.0  # the spans, not sigma, set the times
    tail = (0.5, 0.8, 1.0, 1.0, 1.2, 6.0)
    assert speedup(0.0, 30.0, spans=tail) > speedup(0.0, 30.0)


def test_spans_are_recorded_from_evaluation_results_and_read_relative_to_their_median(tmp_path: Path):
    sessions = [{"harness": "pi", "duration_s": d, "failure": None} for d in (4.0, 8.0, 16.0)]
    sessions.append({"harness": "pi", "duration_s": 99.0, "failure": "harness crashed"})  # not a span
    (tmp_path / "results.json").write_text(json.dumps({"sessions": sessions}))
    record = record_spans(tmp_path / "spans.json", [tmp_path / "results.json"])
    assert record["durations_s"] == [4.0, 8.0, 16.0] and record["sources"][0]["harnesses"] == ["pi"]
    spans = load_spans(tmp_path / "spans.json")
    assert spans == (0.5, 1.0, 2.0) and load_spans("") == ()
    assert log_spread(spans) == pytest.approx(0.5660, abs=1e-4)  # ln 2 x sqrt(2/3)


def test_real_runs_alternate_which_schedule_goes_first():
    from benchmarks.async_vs_sync import schedule_order

    assert [schedule_order(r) for r in range(3)] == [(True, False), (False, True), (True, False)]


def test_real_figures_give_the_median_speedup_and_its_range_over_repeats():
    from benchmarks.async_vs_sync import real_figures

    def run(per_hour: float, stale: int = 0) -> dict:
        return {"groups_per_hour": per_hour, "wall_s": 3600 / per_hour, "stale": stale, "complete": 10}

    same = real_figures([(run(10.0), run(10.0)), (run(20.0), run(20.0))])
    assert (
        same["real_speedup"] == same["real_speedup_min"] == same["real_speedup_max"] == 1.0
    )  # the null case
    figures = real_figures([(run(10.0), run(15.0, stale=1)), (run(10.0), run(25.0)), (run(10.0), run(20.0))])
    assert (figures["real_speedup"], figures["real_speedup_min"], figures["real_speedup_max"]) == (
        2.0,
        1.5,
        2.5,
    )
    assert figures["real_repeats"] == 3 and figures["real_stale_discard_rate"] == round(1 / 30, 4)
