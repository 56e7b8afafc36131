"""Progress on stderr: a plain line every few seconds where stderr is no terminal (logs, CI), a bar where
it is one."""

from __future__ import annotations

import io

import pytest

from environments.progress import LineProgress, duration_text, progress, progress_text


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (44.6, "45s"), (187, "3m07s"), (3720, "1h02m")])
def test_durations_read_as_seconds_minutes_or_hours(seconds: float, text: str):
    assert duration_text(seconds) == text


def test_a_line_has_the_count_share_time_and_the_time_left_at_the_rate_so_far():
    assert progress_text("validate", 12, 40, 80.0, "tasks") == (
        "validate: 12/40 tasks (30%), 1m20s, about 3m07s left"
    )
    assert progress_text("validate", 0, 40, 5.0, "tasks") == "validate: 0/40 tasks (0%), 5s"
    assert progress_text("validate", 40, 40, 300.0, "tasks") == "validate: 40/40 tasks (100%), 5m00s"
    assert progress_text("validate", 0, 0, 0.0, "tasks") == "validate: 0/0 tasks, 0s"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_come_at_most_every_interval_and_once_at_the_end():
    out, clock = io.StringIO(), Clock()
    with LineProgress(5, "validate", "tasks", out, every_s=10.0, clock=clock) as shown:
        for at in (1.0, 2.0, 11.0, 12.0, 13.0):  # one update per task, at these times
            clock.now = at
            shown.update(1)
    assert out.getvalue().splitlines() == [
        "validate: 3/5 tasks (60%), 11s, about 7s left",
        "validate: 5/5 tasks (100%), 13s",
    ]


def test_a_loop_that_stops_short_still_says_where_it_stopped():
    out, clock = io.StringIO(), Clock()
    with LineProgress(4, "validate", "tasks", out, every_s=10.0, clock=clock) as shown:
        clock.now = 2.0
        shown.update(1)
    assert out.getvalue().splitlines() == ["validate: 1/4 tasks (25%), 2s, about 6s left"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_and_anything_else_plain_lines():
    from tqdm import tqdm

    bar = progress(3, "validate", "tasks", file=Terminal())
    assert isinstance(bar, tqdm)
    bar.close()
    assert isinstance(progress(3, "validate", "tasks", file=io.StringIO()), LineProgress)
