import pytest

from actors.grpo import Attempt, GroupCollector, ScoredRollout, StalenessPolicy


def scored(group: str, i: int, reward: float = 0.0, blocked: bool = False) -> ScoredRollout:
    return ScoredRollout(f"{group}-r{i}", group, reward, blocked=blocked)


def test_group_is_released_only_when_all_rollouts_are_scored():
    ledger = GroupCollector()
    ledger.open("g", "task-1", start_version=3, size=4)
    for i in range(4):
        ledger.started("g", f"g-r{i}")
    for i in range(3):
        assert ledger.finished(scored("g", i, reward=float(i % 2)), current_version=3) is None
    group = ledger.finished(scored("g", 3, reward=1.0), current_version=4)
    assert group is not None and group.task_id == "task-1" and len(group.rollouts) == 4
    assert [r.rollout_id for r in group.rollouts] == [f"g-r{i}" for i in range(4)]
    assert sum(group.advantages) == pytest.approx(0.0, abs=1e-6)
    assert ledger.counters.groups_trained == 1 and ledger.counters.balanced


def test_a_stale_group_is_discarded_and_counted():
    ledger = GroupCollector(policy=StalenessPolicy(max_staleness=4))
    ledger.open("g", "t", start_version=1, size=2)
    ledger.started("g", "g-r0")
    ledger.started("g", "g-r1")
    ledger.finished(scored("g", 0), current_version=5)
    assert ledger.finished(scored("g", 1), current_version=6) is None
    assert ledger.counters.groups_stale == 1
    assert ledger.counters.stale_discard_rate == 1.0


def test_retries_are_bounded_and_a_dropped_rollout_drops_its_group():
    ledger = GroupCollector(max_attempts=2)
    ledger.open("g", "t", start_version=0, size=2)
    ledger.started("g", "g-r0")
    ledger.started("g", "g-r1")
    assert ledger.failed("g", "g-r0") is Attempt.RETRY
    ledger.started("g", "g-r0")
    assert ledger.failed("g", "g-r0") is Attempt.DROPPED
    # the other rollout finishes later: counted, but its group is gone, so nothing is half-trained
    assert ledger.finished(scored("g", 1), current_version=0) is None
    c = ledger.counters
    assert (c.started, c.finished, c.dropped, c.retried) == (3, 1, 1, 1)
    assert c.balanced and c.groups_dropped == 1 and c.groups_trained == 0


def test_counters_add_up_while_rollouts_are_in_flight_and_at_rest():
    ledger = GroupCollector()
    ledger.open("g", "t", start_version=0, size=2)
    ledger.started("g", "g-r0")
    assert ledger.counters.in_flight == 1 and not ledger.counters.balanced
    ledger.finished(scored("g", 0, blocked=True), current_version=0)
    assert ledger.counters.balanced and ledger.counters.blocked == 1


def test_misuse_is_refused():
    ledger = GroupCollector()
    ledger.open("g", "t", start_version=0, size=2)
    with pytest.raises(ValueError, match="already open"):
        ledger.open("g", "t", start_version=0)
    with pytest.raises(KeyError, match="not open"):
        ledger.started("nope", "r")
    ledger.started("g", "g-r0")
    ledger.finished(scored("g", 0), current_version=0)
    with pytest.raises(ValueError, match="scored twice"):
        ledger.finished(scored("g", 0), current_version=0)
    with pytest.raises(ValueError, match="max_attempts"):
        GroupCollector(max_attempts=0)


def test_would_be_blocks_are_counted_apart_from_blocks():
    ledger = GroupCollector()
    ledger.open("g", "t", start_version=0, size=3)
    for i in range(3):
        ledger.started("g", f"g-r{i}")
    ledger.finished(ScoredRollout("g-r0", "g", 1.0, would_block=2), current_version=0)
    ledger.finished(ScoredRollout("g-r1", "g", 0.0, blocked=True), current_version=0)
    group = ledger.finished(scored("g", 2, reward=1.0), current_version=0)
    c = ledger.counters
    assert (c.blocked, c.would_blocked, c.groups_trained) == (1, 1, 1) and c.balanced
    assert group is not None and group.rollouts[0].reward == 1.0  # a would-be block scores as usual


def test_a_group_from_a_retracted_version_is_counted_as_rolled_back_not_trained():
    collector = GroupCollector()
    collector.open("g0", "t", start_version=3, size=1)
    collector.open("g1", "t", start_version=5, size=1)
    collector.retract(2, 4)
    assert collector.finished(ScoredRollout("r0", "g0", 1.0), current_version=5) is None
    assert collector.finished(ScoredRollout("r1", "g1", 1.0), current_version=5) is not None
    c = collector.counters
    assert (c.groups_rolled_back, c.groups_trained, c.groups_equal) == (1, 1, 1)
