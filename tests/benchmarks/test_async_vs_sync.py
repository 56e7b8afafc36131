"""The async-vs-sync model's null case: with no tail (every session the same length) and no step time,
neither schedule waits on anything, so the speedup is exactly 1.0; each of the two adds to it."""

from __future__ import annotations

import argparse
import random

from benchmarks.async_vs_sync import asynchronous, synchronous


def speedup(sigma: float, step_s: float) -> float:
    args = argparse.Namespace(median_s=90.0, sigma=sigma, step_s=step_s, groups_per_step=2, hold_s=600.0)
    sync = synchronous(2.0, args, random.Random(0))
    asyn = asynchronous(2.0, args, random.Random(0))
    return asyn["groups"] / sync["groups"]


def test_no_tail_and_no_step_time_gives_a_speedup_of_one():
    assert speedup(0.0, 0.0) == 1.0


def test_a_step_time_and_a_tail_each_give_the_async_schedule_its_lead():
    assert 1.0 < speedup(0.0, 30.0) < speedup(1.0, 30.0)
