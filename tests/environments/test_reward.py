from __future__ import annotations

import pytest

from environments.reward import MAX_REWARD, RewardInputs, compute_reward, efficiency_bonus


def reward(score: float, calls: int, blocked: bool = False) -> float:
    return compute_reward(RewardInputs(verifier_score=score, tool_calls=calls, guard_blocked=blocked))


@pytest.mark.parametrize(
    ("calls", "expected"),
    [(0, 1.1), (1, 1.0 + 0.1 * 14 / 15), (7, 1.0 + 0.1 * 8 / 15), (15, 1.0), (16, 1.0), (400, 1.0)],
)
def test_a_pass_earns_the_bonus_which_falls_to_zero_at_15_calls_and_stays_there(calls, expected):
    assert reward(1.0, calls) == pytest.approx(expected)


def test_zero_calls_gives_the_maximum_reward():
    assert reward(1, 0) == pytest.approx(MAX_REWARD)


@pytest.mark.parametrize("calls", [0, 3, 15, 30])
def test_a_failure_earns_no_bonus_however_few_the_calls(calls):
    assert reward(0.0, calls) == 0.0


@pytest.mark.parametrize("calls", [0, 3, 30])
def test_partial_credit_is_the_fraction_without_bonus(calls):
    assert reward(0.5, calls) == pytest.approx(0.5)


@pytest.mark.parametrize(("score", "calls"), [(1.0, 0), (1.0, 20), (0.5, 2), (0.0, 0)])
def test_any_guard_block_zeroes_the_reward_even_a_pass(score, calls):
    assert reward(score, calls, blocked=True) == 0.0


def test_the_bonus_is_never_negative_and_the_reward_never_drops_below_the_score():
    assert all(efficiency_bonus(n) >= 0 for n in range(0, 100))
    assert all(reward(1.0, n) >= 1.0 for n in range(0, 100))


def test_more_calls_never_earn_more():
    rewards = [reward(1.0, n) for n in range(0, 40)]
    assert rewards == sorted(rewards, reverse=True)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"verifier_score": 1.5}, "verifier_score"),
        ({"verifier_score": -0.1}, "verifier_score"),
        ({"verifier_score": float("nan")}, "verifier_score"),
        ({"verifier_score": True}, "verifier_score"),
        ({"verifier_score": "1"}, "verifier_score"),
        ({"tool_calls": -1}, "tool_calls"),
        ({"tool_calls": 2.0}, "tool_calls"),
        ({"tool_calls": False}, "tool_calls"),
        ({"guard_blocked": 0}, "guard_blocked"),
    ],
)
def test_bad_inputs_are_rejected_with_the_field_named(changes, field):
    values = {"verifier_score": 1.0, "tool_calls": 3, "guard_blocked": False, **changes}
    with pytest.raises(ValueError, match=f"reward.{field}="):
        RewardInputs(**values)


def test_inputs_are_frozen():
    inputs = RewardInputs(verifier_score=1.0, tool_calls=3, guard_blocked=False)
    with pytest.raises(AttributeError):
        inputs.tool_calls = 0  # type: ignore[misc]
