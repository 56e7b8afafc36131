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
