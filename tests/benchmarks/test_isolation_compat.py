"""The compatibility benchmark's comparison of per-test outcomes (pure; the benchmark itself runs real
suites and is not part of the test run)."""

from __future__ import annotations

from benchmarks.isolation_compat import compare


def test_identical_and_differing_outcomes_are_counted():
    tests, same, differ = compare(
        {"t::a": "passed", "t::b": "failed", "t::c": "passed", "t::d": "skipped"},
        {"t::a": "passed", "t::b": "passed", "t::d": "passed"},
    )
    assert (tests, same) == (3, 1)
    assert [d["test"] for d in differ] == ["t::b", "t::c"]
    assert differ[1]["isolated"] == "missing"


def test_renumbered_parameters_match_by_outcome_within_their_test_function():
    """Cases drawn from a set get other indices in another interpreter; an id missing from the isolated
    run counts as identical only when a spare case of the same function has the same outcome."""
    inproc = {"t::f[x-expected1]": "passed", "t::f[y-expected2]": "failed", "t::g[z-expected1]": "passed"}
    isolated = {"t::f[x-expected2]": "passed", "t::f[y-expected1]": "passed", "t::h[z-expected1]": "passed"}
    tests, same, differ = compare(inproc, isolated)
    assert (tests, same) == (3, 1)
    assert {d["test"] for d in differ} == {"t::f[y-expected2]", "t::g[z-expected1]"}
