import math

import pytest

from actors.grpo import group_advantages


def test_advantages_are_standardised_within_the_group():
    adv = group_advantages([1.0, 0.0, 1.0, 0.0])
    assert adv == pytest.approx([1.0, -1.0, 1.0, -1.0], abs=1e-6)
    assert sum(adv) == pytest.approx(0.0, abs=1e-9)


def test_uneven_group_matches_the_formula():
    rewards = [1.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    mean = 1.1 / 8
    std = math.sqrt((1.1 - mean) ** 2 / 8 + 7 * mean**2 / 8)
    assert group_advantages(rewards)[0] == pytest.approx((1.1 - mean) / std, rel=1e-6)
    assert group_advantages(rewards)[1] == pytest.approx(-mean / std, rel=1e-6)


def test_equal_rewards_teach_nothing():
    assert group_advantages([0.5] * 8) == [0.0] * 8


@pytest.mark.parametrize("rewards", [[], [1.0, float("nan")], [float("inf")]])
def test_bad_rewards_are_refused(rewards):
    with pytest.raises(ValueError, match="group_advantages"):
        group_advantages(rewards)


def test_rows_weighting_makes_a_packed_token_mean_the_mean_over_rows_of_each_rows_token_mean():
    from actors.grpo.advantages import row_advantage

    # a step's rows: (advantage, per-token gradient terms); a long broken call and two short good ones
    rows = [(-0.5, [0.5] * 90), (1.0, [0.4, 0.4, 0.4]), (1.0, [0.3] * 6)]
    tokens = sum(len(terms) for _, terms in rows)

    def packed_token_mean(weighting: str) -> float:  # TRL's loss over one packed micro-batch
        return sum(row_advantage(a, len(t), weighting) * g for a, t in rows for g in t) / tokens

    per_row = sum(a * sum(t) / len(t) for a, t in rows) / len(rows)  # one row per micro-batch
    factor = packed_token_mean("rows") / per_row
    assert factor > 0 and factor == pytest.approx(32 * len(rows) / tokens)  # one factor per step
    assert packed_token_mean("tokens") < 0 < per_row  # the long row outweighs the rest by its tokens
    assert row_advantage(0.7, 0, "rows") == 0.7  # a row with nothing trained is left as it is
    with pytest.raises(ValueError, match="row_weighting='turns': choose one of tokens, rows, sessions"):
        row_advantage(1.0, 3, "turns")


def test_sessions_weighting_gives_a_long_session_the_pull_of_a_short_one():
    """A passing session that looped through 12 turns and a failing one-turn session, advantages of equal
    size: under ``rows`` the loop's twelve rows outweigh the other twelve to one; under ``sessions`` they
    pull as one row does."""
    from actors.grpo.advantages import row_advantage

    looped = [(1.0, 32)] * 12  # (advantage, trained tokens) per row
    short = [(-1.0, 32)]

    def pull(rows, weighting):
        return sum(row_advantage(a, t, weighting, len(rows)) * t for a, t in rows)

    assert pull(looped, "rows") == pytest.approx(-12 * pull(short, "rows"))
    assert pull(looped, "sessions") == pytest.approx(-pull(short, "sessions"))
    assert row_advantage(0.5, 16, "sessions", 1) == row_advantage(0.5, 16, "rows")  # one turn: the same
