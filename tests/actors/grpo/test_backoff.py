"""The wait after failures in a row: none without failures, doubling, capped."""

from __future__ import annotations

import pytest

from actors.grpo import Backoff


def test_the_wait_doubles_with_each_failure_and_is_capped():
    backoff = Backoff(base_s=0.5, max_s=30.0)
    assert [backoff.delay_s(n) for n in range(0, 8)] == [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    assert backoff.delay_s(10_000) == 30.0


def test_a_backoff_that_cannot_hold_is_refused():
    with pytest.raises(ValueError, match="base_s <= max_s"):
        Backoff(base_s=5.0, max_s=1.0)
