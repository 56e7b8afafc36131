import pytest

from actors.grpo import StalenessPolicy


def test_window_is_four_versions_by_default():
    policy = StalenessPolicy()
    assert not policy.is_stale(start_version=6, current_version=10)
    assert policy.is_stale(start_version=5, current_version=10)
    assert policy.at_edge(6, 10) and not policy.at_edge(7, 10)


def test_admission_stops_while_a_group_is_one_publish_from_stale():
    policy = StalenessPolicy(max_staleness=2)
    assert policy.may_admit([9, 10], current_version=10)
    assert not policy.may_admit([8, 10], current_version=10)
    assert policy.may_admit([], current_version=10)


def test_publish_waits_for_an_edge_group_but_not_forever():
    policy = StalenessPolicy(max_staleness=2, hold_s=30.0)
    assert not policy.may_publish([8], current_version=10, held_s=5.0)
    assert policy.may_publish([8], current_version=10, held_s=30.0)
    assert policy.may_publish([9], current_version=10, held_s=0.0)


@pytest.mark.parametrize("kwargs", [{"max_staleness": -1}, {"max_staleness": 1.5}, {"hold_s": -1}])
def test_bad_policy_is_refused(kwargs):
    with pytest.raises(ValueError):
        StalenessPolicy(**kwargs)
