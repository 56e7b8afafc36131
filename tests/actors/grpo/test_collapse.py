"""The collapse watch on scripted runs: the four signs (pass rate, blocked rate, KL spike, runaway calls)
against the run's own start, the version it names to go back to, and what it tells the trainer to do."""

from __future__ import annotations

import pytest

from actors.grpo.collapse import CollapsePolicy, CollapseWatch, binomial_cdf


def feed(watch: CollapseWatch, version: int, passed: int, failed: int, blocked: int = 0, calls: int = 3):
    for _ in range(passed):
        watch.rollout(version, True, False, calls)
    for _ in range(failed):
        watch.rollout(version, False, False, calls)
    for _ in range(blocked):
        watch.rollout(version, False, True, calls)


def healthy_start(watch: CollapseWatch) -> None:
    """The start adapter (version 1) passes 11 of 12; steps 1-3 keep it up, with small KLs."""
    feed(watch, 1, 11, 1)
    for step, version in ((1, 2), (2, 3), (3, 4)):
        feed(watch, version, 4, 0)
        assert watch.step(step, 0.002, version) is None


def test_binomial_cdf_matches_its_small_cases():
    assert binomial_cdf(0, 3, 0.5) == pytest.approx(1 / 8)
    assert binomial_cdf(1, 3, 0.5) == pytest.approx(4 / 8)
    assert binomial_cdf(3, 3, 0.2) == pytest.approx(1.0)


def test_a_run_that_stops_passing_collapses_and_goes_back_before_the_window():
    watch = CollapseWatch(CollapsePolicy(), start_version=1)
    healthy_start(watch)
    for step, version in ((4, 5), (5, 6), (6, 7)):
        feed(watch, version, 0, 4)
        event = watch.step(step, 0.003, version)
    assert event is not None and event.action == "rollback" and event.step == 6
    assert event.reason.startswith("pass rate 0/12 over the latest rollouts against 0.92 at the start")
    assert event.good_version == 4  # the window holds versions 5-7: go back to the one before


def test_every_rollout_blocked_is_a_collapse_even_when_the_start_rarely_passed():
    watch = CollapseWatch(CollapsePolicy(), start_version=1)
    feed(watch, 1, 2, 10)  # pass rate 0.17 at the start: a drop to 0 is not beyond chance
    feed(watch, 2, 0, 0, blocked=12)
    event = watch.step(3, None, 3)
    assert event is not None and "12/12 of the latest rollouts blocked by the guard" in event.reason


def test_a_hard_draw_of_tasks_is_not_read_as_a_collapse():
    watch = CollapseWatch(CollapsePolicy(), start_version=1)
    feed(watch, 1, 6, 6)  # 0.5 at the start
    feed(watch, 2, 3, 9)  # 3/12 is under half of it, but not beyond chance at the 0.1% level
    assert binomial_cdf(3, 12, 0.5) > 0.001
    assert watch.step(1, 0.002, 2) is None


def test_a_kl_spike_for_two_steps_in_a_row_goes_back_before_the_weights_that_spiked():
    watch = CollapseWatch(CollapsePolicy(), start_version=1)
    for step in range(1, 5):
        feed(watch, step, 4, 0)
        assert watch.step(step, 0.002, step) is None
    assert watch.step(5, 0.09, 5) is None  # one spiking step: not yet
    event = watch.step(6, 0.07, 6)
    assert event is not None and event.reason.startswith("KL 0.070 over 10x its median 0.0020 for 2 steps")
    assert event.good_version == 4  # step 5 started from version 5's weights, which already spiked


def test_a_version_its_own_rollouts_do_not_vouch_for_is_passed_over():
    watch = CollapseWatch(CollapsePolicy(), start_version=1)
    feed(watch, 1, 11, 1)
    feed(watch, 2, 4, 0)  # vouched for
    feed(watch, 3, 1, 3)  # sampled, but passing under half the start's rate
    feed(watch, 4, 1, 0)  # too few rollouts to tell
    feed(watch, 5, 0, 12)
    event = watch.step(5, None, 5)
    assert event is not None and event.good_version == 2
    watch.rolled_back(2, 5)  # versions 3-5 withdrawn; the restored weights go out as version 6
    feed(watch, 6, 4, 0)
    feed(watch, 7, 0, 12)
    again = watch.step(7, None, 7)
    assert again is not None and again.good_version == 6
    watch.rolled_back(6, 7)
    feed(watch, 8, 0, 12)  # the restored weights themselves fail: back past the withdrawn versions
    assert watch.withdrawn == [(3, 5), (7, 7)]
    third = watch.step(8, None, 8)
    assert third is not None and third.action == "stop" and third.good_version == 6


def test_a_single_spike_between_normal_steps_resets_the_streak():
    watch = CollapseWatch(CollapsePolicy(), start_version=1)
    for step, kl in enumerate((0.002, 0.003, 0.002, 0.09, 0.002, 0.08), start=1):
        assert watch.step(step, kl, step) is None
    assert watch.step(7, 0.015, 7) is None  # under the absolute floor


def test_after_a_rollback_only_later_versions_count_and_rollbacks_run_out_into_a_stop():
    watch = CollapseWatch(CollapsePolicy(max_rollbacks=1), start_version=1)
    healthy_start(watch)
    feed(watch, 5, 0, 12)
    first = watch.step(5, None, 5)
    assert first is not None and first.action == "rollback"
    watch.rolled_back(first.good_version, through_version=5)
    feed(watch, 5, 0, 20)  # in flight from the retracted version: ignored
    assert watch.step(6, None, 6) is None and not watch.recent
    feed(watch, 6, 0, 12)
    second = watch.step(7, None, 7)
    assert (
        second is not None and second.action == "stop" and "(no rollback left: 1 of 1 used)" in second.reason
    )
    assert [e.action for e in watch.events] == ["rollback", "stop"]


def test_the_version_named_is_never_before_the_runs_start():
    watch = CollapseWatch(CollapsePolicy(), start_version=3)
    feed(watch, 3, 12, 0)
    feed(watch, 3, 0, 12)
    event = watch.step(1, None, 3)
    assert event is not None and event.good_version == 3


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("action", "panic", "action='panic': use rollback, stop or watch"),
        ("recent_rollouts", 0, "recent_rollouts=0: must be >= 1"),
        ("pass_floor", 1.5, "pass_floor=1.5: must be in (0, 1]"),
        ("kl_factor", 1.0, "need kl_factor > 1"),
    ],
)
def test_a_bad_policy_is_refused_by_name(field, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        CollapsePolicy(**{field: value})


def test_sessions_that_loop_while_still_passing_collapse_with_the_calls_sign_on():
    """Seed 0 of the real-model learning check: pass rate held, calls rose from 3 to the turn limit."""
    watch = CollapseWatch(CollapsePolicy(calls_factor=2.0), start_version=1)
    healthy_start(watch)  # 3 calls a rollout
    feed(watch, 5, 4, 0, calls=5)  # more calls, not yet past 2x: version 5 still vouches for itself
    assert watch.step(4, 0.002, 5) is None
    for step, version in ((5, 6), (6, 7), (7, 8)):
        feed(watch, version, 4, 0, calls=12)
        event = watch.step(step, 0.002, version)
        if event is not None:
            break
    assert event is not None and event.action == "rollback", watch.events
    assert "tool calls a rollout over the latest rollouts against 3.0 at the start (over 2x)" in event.reason
    assert event.step == 5 and event.good_version == 3  # the window holds versions 4-6: go back before it


def test_a_looping_version_does_not_vouch_for_itself():
    watch = CollapseWatch(CollapsePolicy(calls_factor=2.0), start_version=1)
    healthy_start(watch)
    feed(watch, 5, 4, 0, calls=12)  # passing, but looping: not one to go back to
    feed(watch, 6, 4, 0, calls=12)
    feed(watch, 7, 4, 0, calls=12)
    event = watch.step(4, 0.002, 7)
    assert event is not None and event.good_version == 4


def test_with_the_calls_sign_off_looping_is_not_a_collapse():
    watch = CollapseWatch(CollapsePolicy(), start_version=1)
    healthy_start(watch)
    feed(watch, 5, 12, 0, calls=14)
    assert watch.step(4, 0.002, 5) is None


def test_a_calls_factor_of_one_or_less_is_refused():
    with pytest.raises(ValueError, match="calls_factor=1.0: must be above 1"):
        CollapsePolicy(calls_factor=1.0)
