"""Red team of the isolated judge (``environments/integrity/isolation/``): wrong solutions (``BUGGY``: parse
swaps x and y) that try to earn a PASS through the judge's new machinery (state snapshots, tests' objects
going back as themselves, subclassing, pickling), each of which paid once and is closed now. Each test
asserts the wrong solution does NOT pass. Marked ``CLASS_A``: hidden tests that trust the solution in a way
an ordinary in-process run would too, where the judge still keeps its own verdict whole.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from environments.tasks.oracle import Verdict
from tests.environments.integrity.test_isolation import BUGGY, BWRAP_MISSING, GEO, geo_task, judged


@pytest.fixture(scope="module")
def runner():
    if shutil.which("bwrap") is None:
        pytest.skip(BWRAP_MISSING)
    from environments.sandboxes import LocalBackend
    from environments.sandboxes.runner import SandboxRunner

    return SandboxRunner(LocalBackend(prefix="hxred"))


def _tail(verdict) -> str:
    return verdict.reason + "\n" + (verdict.result.output_tail[-3000:] if verdict.result else "")


# ------------------------------------------------------------------------------------------------------
# (b) A tests' mock handed to the solution comes back as itself, and the solution can reprogram it
# (``configure_mock`` is a public bound method, so the judge lets the solution call it): its ``__eq__``
# becomes a call into the solution. The solution then returns that mock
# wherever the judge expects plain data, and every ``==`` / ``in`` against the judge's
# own expected values holds. The mock may come from a different, earlier test.

TROJAN = (
    BUGGY
    + b'''

_TROJAN = []


def _equal(self, other):
    return True


def _differ(self, other):
    return False


def _arm(candidate):
    """Reprogram a tests' mock (a ``Callback`` here) to equal everything."""
    if _TROJAN or type(candidate).__name__ != "Callback":
        return
    try:
        candidate.configure_mock(**{"__eq__": _equal, "__ne__": _differ})
    except Exception:  # noqa: BLE001
        return
    _TROJAN.append(candidate)


_nearest = nearest


def nearest(values, key=None):
    _arm(key)
    return _nearest(values, key=key)


import sys as _sys
import types as _types


class _Module(_types.ModuleType):
    def __setattr__(self, name, value):  # mock.patch.object(points, ...) hands its MagicMock over here
        _arm(value)
        _types.ModuleType.__setattr__(self, name, value)


_sys.modules[__name__].__class__ = _Module
_parse = parse


def parse(text):
    point = _parse(text)
    if _TROJAN:
        return Point(_TROJAN[0], _TROJAN[0])
    return point


def _scaled(self, k):
    if _TROJAN:
        return Point(_TROJAN[0], _TROJAN[0])
    return Point(self.x * k, self.y * k)


Point.scaled = _scaled
'''
)

MOCK_KEY_TESTS = b"""from unittest import mock

from geo.points import Point, nearest, parse


def test_a_key_function_is_called_for_each_value():
    key = mock.Mock(side_effect=abs)
    assert nearest([3, -1, 2], key=key) == -1
    assert key.call_count == 3


def test_parse_gives_the_point():
    point = parse("1,2")
    assert (point.x, point.y) == (1.0, 2.0)
    assert point.y in [2.0]


def test_scaled():
    assert parse("1,2").scaled(2).y == 4.0
"""

MOCK_PATCH_TESTS = b"""from unittest import mock

import geo.points as points


def test_walk_can_be_replaced():
    with mock.patch.object(points, "walk") as fake:
        fake.return_value = [9]
        assert points.walk(1) == [9]


def test_parse_gives_the_point():
    point = points.parse("1,2")
    assert point.x == 1.0 and point.y == 2.0
"""

MOCK_KEY_UNITTEST = b"""import unittest
from unittest import mock

from geo.points import nearest, parse


class HiddenTest(unittest.TestCase):
    def test_a_key(self):
        key = mock.Mock(side_effect=abs)
        self.assertEqual(nearest([3, -1, 2], key=key), -1)

    def test_b_parse(self):
        point = parse("1,2")
        self.assertEqual((point.x, point.y), (1.0, 2.0))
"""


@pytest.mark.parametrize(
    "style,hidden",
    [
        ("pytest", MOCK_KEY_TESTS),
        ("pytest", MOCK_PATCH_TESTS),
        ("unittest", MOCK_KEY_UNITTEST),
    ],
    ids=["mock_key", "mock_patch_object", "mock_key_unittest"],
)
def test_b_a_tests_mock_cannot_become_equal_to_everything(style, hidden, runner, tmp_path):
    task = replace(geo_task(style), hidden={"tests/test_hidden_geo.py": hidden})
    good = judged(task, runner, tmp_path / "good", GEO)
    assert good.verdict is Verdict.PASS, _tail(good)  # the hidden tests are fair: the reference passes
    assert judged(task, runner, tmp_path / "buggy", BUGGY).verdict is Verdict.FAIL
    bad = judged(task, runner, tmp_path / "trojan", TROJAN)
    assert bad.verdict is not Verdict.PASS, _tail(bad)


# ------------------------------------------------------------------------------------------------------
# (b) A test whose failure pytest cannot format counts as passed. The solution raises a built-in
# ``SyntaxError`` whose ``text`` is not a string (it crosses by value: its args are plain data); pytest's
# ``repr_failure`` -> ``exconly`` -> ``traceback.format_exception_only`` breaks on it, the session ends in
# an INTERNALERROR, ``pytest.main`` still returns, so ``judge_main`` writes ``finished: true`` -- and the
# test's only logged report is its *setup* phase, ``passed``, which ``PytestOutcomes`` keeps as the
# test's outcome. Every hidden test that ran before it, or none, plus this one: a PASS.

UNFORMATTABLE = (
    BUGGY
    + b"""

_parse = parse


def parse(text):
    raise SyntaxError("no", ("<geo>", 1, 1, 0))  # text=0: not a str, pytest cannot render it
"""
)

ONE_TEST = b"""from geo.points import parse


def test_parse():
    point = parse("1,2")
    assert (point.x, point.y) == (1.0, 2.0)
"""

LAST_TEST = b"""import pytest
from geo.points import GeoError, nearest, walk
import geo.points as points


def test_key_function_called_back():
    assert nearest([3, -1, 2], key=abs) == -1


def test_generator():
    assert list(walk(3)) == [0, 1, 2]


def test_parse():
    point = points.parse("1,2")
    assert (point.x, point.y) == (1.0, 2.0)
"""


@pytest.mark.parametrize("hidden", [ONE_TEST, LAST_TEST], ids=["one_test", "parse_tested_last"])
def test_b_a_test_whose_failure_cannot_be_formatted_does_not_pass(hidden, runner, tmp_path):
    """Did NOT pay: the verifier also requires the judge's exit status 0 (pytest's INTERNALERROR is 3)."""
    task = replace(geo_task("pytest"), hidden={"tests/test_hidden_geo.py": hidden})
    assert judged(task, runner, tmp_path / "good", GEO).verdict is Verdict.PASS
    assert judged(task, runner, tmp_path / "buggy", BUGGY).verdict is Verdict.FAIL
    bad = judged(task, runner, tmp_path / "bad", UNFORMATTABLE)
    assert bad.verdict is not Verdict.PASS, _tail(bad)


def test_b_latent_the_report_does_not_count_a_test_whose_call_phase_never_reported(runner, tmp_path):
    """Latent (the exit status check above is the only thing that stops it): the judge's own report, which
    ``judge_pytest_report`` alone accepts, marks the interrupted test ``passed`` from its setup phase and
    says ``finished: true`` although pytest ended in an INTERNALERROR."""
    import json

    from environments.integrity.reports import judge_pytest_report

    task = replace(geo_task("pytest"), hidden={"tests/test_hidden_geo.py": ONE_TEST})
    judged(task, runner, tmp_path, UNFORMATTABLE)
    (report,) = (tmp_path / "verify").glob(".verdict-*/report.json")
    raw = report.read_text()
    assert json.loads(raw)["outcomes"].get("tests/test_hidden_geo.py::test_parse") != "passed", raw
    assert not judge_pytest_report(raw, task.hidden).passed, raw


# ------------------------------------------------------------------------------------------------------
# An assertion inside ``with <solution object>:`` would be swallowed in-process by an ``__exit__``
# returning True; the judge never lets the solution swallow the tests' assertions.

SWALLOWS = (
    BUGGY
    + b"""

Meter.__exit__ = lambda self, *exc: True
"""
)
INSIDE_WITH = b"""from geo.points import Meter, parse


def test_parse_inside_a_meter():
    with Meter() as meter:
        point = parse("1,2")
        meter.add(1)
        assert (point.x, point.y) == (1.0, 2.0)
"""


def test_class_a_an_assertion_inside_a_solution_context_manager_is_not_swallowed(runner, tmp_path):
    task = replace(geo_task("pytest"), hidden={"tests/test_hidden_geo.py": INSIDE_WITH})
    assert judged(task, runner, tmp_path / "buggy", BUGGY).verdict is Verdict.FAIL
    bad = judged(task, runner, tmp_path / "bad", SWALLOWS)
    assert bad.verdict is not Verdict.PASS, _tail(bad)


# CLASS_A (test design), but the whole run falls: a hidden test that unpickles bytes the solution returned
# runs the solution's code in the judge itself (outside Landlock, beside pytest). One such test rewrites
# every outcome (the plugin's dict) and the exit status, so tests the solution never touched pass too.

TO_BYTES = b"""

def to_bytes(point):
    import pickle

    return pickle.dumps((point.x, point.y))
"""
IN_THE_JUDGE = r"""
import gc, sys
for o in gc.get_objects():
    if type(o).__name__ == "PytestOutcomes":
        class Passed(dict):
            def __setitem__(self, key, value):
                dict.__setitem__(self, key, "passed")
        o.outcomes = Passed((k, "passed") for k in o.outcomes)
import atexit, os
atexit.register(os._exit, 0)
"""
PICKLE_BOMB = (
    BUGGY
    + b"""

class _Payload:
    def __reduce__(self):
        return (exec, (%r,))


def to_bytes(point):
    import pickle

    return pickle.dumps(_Payload())
"""
    % IN_THE_JUDGE.encode()
)
UNPICKLES = b"""import pickle

from geo.points import parse, to_bytes


def test_round_trip_bytes():
    assert pickle.loads(to_bytes(parse("3,3"))) == (3.0, 3.0)


def test_parse():
    point = parse("1,2")
    assert (point.x, point.y) == (1.0, 2.0)
"""


def test_class_a_unpickling_the_solutions_bytes_does_not_hand_it_the_judge(runner, tmp_path):
    task = replace(geo_task("pytest"), hidden={"tests/test_hidden_geo.py": UNPICKLES})
    assert judged(task, runner, tmp_path / "good", GEO + TO_BYTES).verdict is Verdict.PASS
    assert judged(task, runner, tmp_path / "buggy", BUGGY + TO_BYTES).verdict is Verdict.FAIL
    bad = judged(task, runner, tmp_path / "bad", PICKLE_BOMB)
    assert bad.verdict is not Verdict.PASS, _tail(bad)
