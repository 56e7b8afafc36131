"""The isolated judge end to end: a pytest task and a unittest task, a legitimate solution that uses the
boundary's features, and solutions that try to win from the agent's side of it. Each runs through
``verify`` in a bubblewrap sandbox, as a rollout's verifier does."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from environments.core.types import CommandOracle, Kind, Limits, Reference, Source, Task
from environments.integrity.judging import ISOLATED, judge_plan, parse_python_tests
from environments.tasks.oracle import Verdict, verify, write_start

BWRAP_MISSING = "bubblewrap (bwrap) is not installed: apt-get update && apt-get install -y bubblewrap"

GEO = b'''"""Points."""
from dataclasses import dataclass


class GeoError(ValueError):
    pass


@dataclass
class Point:
    x: float
    y: float

    def scaled(self, k):
        return Point(self.x * k, self.y * k)


def parse(text):
    try:
        a, b = text.split(",")
        return Point(float(a), float(b))
    except ValueError:
        raise GeoError(f"bad point {text!r}") from None


def nearest(values, key=None):
    return sorted(values, key=key)[0]


def walk(n):
    yield from range(n)


class Meter:
    def __init__(self):
        self.total = 0

    def add(self, k):
        self.total += k

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


ORIGIN = (0, 0)


class Tally(dict):
    def add(self, key):
        self[key] = self.get(key, 0) + 1
        return self

    def total(self):
        return sum(self.values())
'''
BUGGY = GEO.replace(b"Point(float(a), float(b))", b"Point(float(b), float(a))")
HIDDEN_PYTEST = b"""import pytest
from geo.points import GeoError, Meter, Point, nearest, parse, walk
import geo.points as points


def test_parse_gives_a_point():
    point = parse("1,2")
    assert (point.x, point.y) == (1.0, 2.0)
    assert point == point


def test_attribute_and_method():
    assert parse("1,2").x == 1.0
    assert parse("1,2").scaled(2).y == 4.0
    assert isinstance(parse("1,2"), Point)


def test_own_exception_class():
    with pytest.raises(GeoError, match="bad point"):
        parse("x")


def test_own_exception_is_a_value_error():
    with pytest.raises(ValueError):
        parse("x")


def test_key_function_called_back():
    assert nearest([3, -1, 2], key=abs) == -1


def test_generator():
    assert list(walk(3)) == [0, 1, 2]


def test_context_manager():
    with Meter() as meter:
        meter.add(2)
    assert meter.total == 2


def test_module_constant():
    assert points.ORIGIN == (0, 0)


def test_a_container_subclass_keeps_its_behaviour():
    tally = points.Tally().add("a").add("a")
    tally["b"] = 5
    assert tally.total() == 7
    assert tally == {"a": 2, "b": 5}
    assert tally != {"a": 2}


def test_the_solutions_object_goes_back_as_itself():
    point = parse("3,4")
    assert points.Point.scaled(point, 2).x == 6.0
    assert points.parse is points.parse


def test_star_import_without_all():
    namespace = {}
    exec("from geo.points import *", namespace)
    assert namespace["parse"]("5,6").y == 6.0
"""
HIDDEN_UNITTEST = b"""import unittest
from geo.points import GeoError, Point, parse


class HiddenGeoTest(unittest.TestCase):
    def test_parse(self):
        point = parse("1,2")
        self.assertEqual((point.x, point.y), (1.0, 2.0))
        self.assertIsInstance(point, Point)

    def test_error(self):
        with self.assertRaises(GeoError):
            parse("x")
"""


def geo_task(runner: str) -> Task:
    pytest_style = runner == "pytest"
    return Task(
        id=f"geo-{runner}",
        source=Source.REPO,
        kind=Kind.REPAIR,
        instruction="parse() swaps x and y. Fix it.\n",
        workspace={
            "geo/__init__.py": b"",
            "geo/points.py": BUGGY,
            "tests/__init__.py": b"",
            "tests/test_visible.py": b"def test_nothing():\n    assert True\n",
        },
        hidden={"tests/test_hidden_geo.py": HIDDEN_PYTEST if pytest_style else HIDDEN_UNITTEST},
        oracle=CommandOracle(
            "python -m pytest -q tests" if pytest_style else "python -m unittest discover -s tests -t ."
        ),
        reference=Reference(files={"geo/points.py": GEO}),
        limits=Limits(agent_timeout_s=30.0, verify_timeout_s=30.0, memory_mb=1024),
    )


@pytest.fixture(scope="module")
def runner():
    if shutil.which("bwrap") is None:
        pytest.skip(BWRAP_MISSING)
    from environments.sandboxes import LocalBackend
    from environments.sandboxes.runner import SandboxRunner

    return SandboxRunner(LocalBackend(prefix="hxiso"))


def judged(task: Task, runner, tmp_path: Path, solution: bytes | None, extra: dict[str, bytes] | None = None):
    produced = write_start(task, tmp_path / "produced")
    if solution is not None:
        (produced / "geo/points.py").write_bytes(solution)
    for rel, data in (extra or {}).items():
        (produced / rel).parent.mkdir(parents=True, exist_ok=True)
        (produced / rel).write_bytes(data)
    return verify(task, produced, tmp_path / "verify", runner)


@pytest.mark.parametrize("style", ["pytest", "unittest"])
def test_the_reference_passes_isolated_and_the_start_fails(style, runner, tmp_path):
    task = geo_task(style)
    good = judged(task, runner, tmp_path / "good", GEO)
    assert (good.verdict, good.judge) == (Verdict.PASS, ISOLATED), good.reason + (
        good.result.output_tail if good.result else ""
    )
    bad = judged(task, runner, tmp_path / "bad", None)
    assert bad.verdict is Verdict.FAIL and bad.judge == ISOLATED


ATTACKS = {
    "equal_to_everything": BUGGY
    + b"\nclass _All(Point):\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
    b"\n_parse = parse\ndef parse(text):\n    p = _parse(text)\n    return _All(p.x, p.y)\n",
    "str_subclass_equal_to_everything": BUGGY
    + b"\nclass _S(float):\n    def __eq__(self, other):\n        return True\n"
    b"\n_parse = parse\ndef parse(text):\n    p = _parse(text)\n    p.x = _S(p.x)\n    return p\n",
    "exit_0_at_import": BUGGY + b"\nimport os\nos._exit(0)\n",
    "exit_via_alias": BUGGY + b"\nimport os\ngetattr(os, '_' + 'exit')(0)\n",
    "report_forged_everywhere": BUGGY + b"\nimport glob, json, os\n"
    b"fake = json.dumps({'finished': True, 'outcomes': {}, 'patched': []})\n"
    b"for where in glob.glob('../**/.verdict-*', recursive=True) + glob.glob('/**/.verdict-*'):\n"
    b"    try:\n        open(where + '/report.json', 'w').write(fake)\n"
    b"    except OSError:\n        pass\n",
    "runner_patched_in_its_process": BUGGY
    + b"\ntry:\n    import _pytest.reports as r\n    r.TestReport.outcome = 'passed'\n"
    b"except Exception:\n    pass\n"
    b"import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n",
    "peeks_at_the_hidden_tests": BUGGY
    + b"\n_parse = parse\ndef parse(text):\n    try:\n        open('../tests/test_hidden_geo.py').read()\n"
    b"        a, b = text.split(',')\n        return Point(float(a), float(b))\n"
    b"    except OSError:\n        return _parse(text)\n",
    "rewrites_the_hidden_tests": BUGGY
    + b"\nfor p in ('../tests/test_hidden_geo.py', '/workspace/tests/test_hidden_geo.py'):\n    try:\n"
    b"        open(p, 'w').write('def test_ok():\\n    pass\\n')\n    except OSError:\n        pass\n",
    "kills_the_judge": BUGGY + b"\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
}


@pytest.mark.parametrize("style", ["pytest", "unittest"])
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_from_the_solutions_process_cannot_pass(style, attack, runner, tmp_path):
    verdict = judged(geo_task(style), runner, tmp_path, ATTACKS[attack])
    assert verdict.verdict is not Verdict.PASS, verdict.reason


def test_a_workspace_module_named_like_the_judges_package_changes_nothing(runner, tmp_path):
    shadow = {
        "ha_isolation/__init__.py": b"import os\nos._exit(0)\n",
        "ha_isolation.py": b"import os\nos._exit(0)\n",
    }
    verdict = judged(geo_task("pytest"), runner, tmp_path, None, shadow)
    assert verdict.verdict is Verdict.FAIL, verdict.reason


def test_plans():
    assert parse_python_tests("python -m pytest -q tests") == ("pytest", ("-q", "tests"))
    assert parse_python_tests("pytest") == ("pytest", ())
    assert parse_python_tests("python3 -m unittest discover -s tests") == (
        "unittest",
        ("discover", "-s", "tests"),
    )
    assert "shell" in parse_python_tests("pytest -q | tee log")
    assert "not a plain" in parse_python_tests("make test")
    task = geo_task("pytest")
    assert judge_plan(task).isolated
    opted = judge_plan(replace(task, judge="in-process"))
    assert not opted.isolated and "opts in" in opted.reason
    with pytest.raises(ValueError, match="judge"):
        replace(task, judge="sometimes")


COMPAT = b'''"""Helpers that reach back into the tests' objects."""
import functools
import threading


def convert(values, kind):
    return [kind(v) for v in values]


def catch(func, exc):
    try:
        func()
    except exc:
        return "caught"
    return "not raised"


def is_int_class(kind):
    return kind is int


def logged(func):
    @functools.wraps(func)
    def wrapper(*args):
        return func(*args)

    return wrapper


def refused(obj):
    out = []
    for name in ("_secret", "__dict__", "__globals__", "__code__", "__defaults__", "helper"):
        try:
            getattr(obj, name)
        except AttributeError:
            out.append(name)
    return out


def names(func):
    return func.__name__, func.__qualname__, func.__module__


def through_mapping(box):
    box["seen"] = box["given"] + 1
    del box["given"]
    return "given" in box, "seen" in box


def still_alive():
    return threading.active_count() >= 1


def give_exec():
    return exec


def call_with(func, value):
    return func(value)


def twice(self, value):
    return 2 * value


class Pair(tuple):
    pass


class Store:
    def __init__(self):
        self.data = {}

    def __getitem__(self, key):
        try:
            return self.data[key]
        except KeyError:
            return self.__missing__(key)

    def __missing__(self, key):
        raise KeyError(key)


def pair(a, b):
    return Pair((a, b))


class Counter:
    def __init__(self):
        self.n = 0
        self.lock = threading.Lock()

    def bump(self):
        with self.lock:
            self.n += 1
        return self.n
'''
COMPAT_TESTS = b"""import threading

from geo.compat import (Counter, catch, convert, give_exec, is_int_class, logged, names, refused, still_alive,
                        through_mapping)


class Box:
    def __init__(self):
        self.data = {"given": 1}
        self._secret = "hidden"

    def helper(self):
        return None

    def __getitem__(self, key):
        return self.data[key]

    def __setitem__(self, key, value):
        self.data[key] = value

    def __delitem__(self, key):
        del self.data[key]

    def __contains__(self, key):
        return key in self.data


def test_builtin_classes_cross_as_themselves():
    assert convert(["1", "2"], int) == [1, 2]
    assert is_int_class(int) is True
    assert catch(lambda: int("x"), ValueError) == "caught"


def test_a_refused_attribute_is_an_attribute_error_and_the_process_lives_on():
    def plain():
        return None

    # a test object's data and bound methods are shown, nothing private, no code, no class
    assert refused(Box()) == ["_secret", "__dict__", "__globals__", "__code__", "__defaults__"]
    assert refused(plain) == ["_secret", "__dict__", "__globals__", "__code__", "__defaults__", "helper"]
    assert still_alive() is True


def test_decorators_read_names_of_the_tests_functions():
    def double(x):
        return 2 * x

    assert logged(double)(4) == 8
    assert logged(double).__name__ == "double"
    assert names(double)[0] == "double" and names(double)[2] == __name__


def test_the_tests_mapping_is_reached_by_item():
    box = Box()
    assert through_mapping(box) == (False, True)
    assert box.data == {"seen": 2}


def test_builtin_functions_do_not_cross_by_name():
    assert give_exec() is not exec


def test_threads_share_the_solutions_process():
    counter = Counter()
    errors = []

    def work():
        try:
            for _ in range(20):
                counter.bump()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and counter.n == 80
"""
SUBCLASSING_TESTS = b"""import pickle
import unittest

from geo.compat import Counter, Store, call_with, pair, twice
from geo.points import Point


class Defaulting(Store):
    def __missing__(self, key):
        return key * 2


class Explicit(Counter):
    def __init__(self):
        Counter.__init__(self)


def test_the_solutions_code_calls_the_tests_override():
    assert Defaulting()[21] == 42


def test_the_base_init_called_by_name():
    explicit = Explicit()
    explicit.bump()
    assert explicit.n == 1


class UsesItsMethod(unittest.TestCase):
    def double(self, value):
        return 2 * value

    def test_the_solution_calls_a_method_the_tests_wrote(self):
        self.assertEqual(call_with(self.double, 4), 8)


class Bound:
    twice = twice


def test_a_solution_function_on_a_tests_class_binds():
    assert Bound().twice(3) == 6


def test_container_subclasses_compare_by_contents():
    assert pair(1, 2) == pair(1, 2) and pair(1, 2) != pair(2, 1)
    assert hash(pair(1, 2)) == hash((1, 2)) and len({pair(1, 2), pair(1, 2), pair(2, 1)}) == 2


class Mine(Counter):
    def bump_twice(self):
        self.bump()
        return super().bump()


class Started(Counter):
    def __init__(self, start):
        super().__init__()
        self.start = start

    def value(self):
        return self.start + self.n


def test_subclass():
    mine = Mine()
    assert mine.bump() == 1
    assert mine.bump_twice() == 3
    assert isinstance(mine, Counter) and isinstance(mine, Mine)


def test_subclass_with_its_own_init():
    started = Started(10)
    started.bump()
    assert started.value() == 11


def test_pickle_round_trip():
    point = Point(1.0, 2.0)
    again = pickle.loads(pickle.dumps(point))
    assert again.y == 2.0 and again is not point and again == point
"""
BROKEN_TESTS = b"from geo.compat import no_such_name\n\n\ndef test_never():\n    pass\n"


def compat_task(hidden: dict[str, bytes]) -> Task:
    import dataclasses

    base = geo_task("pytest")
    return dataclasses.replace(
        base,
        id="geo-compat",
        workspace={**base.workspace, "geo/compat.py": COMPAT},
        hidden=hidden,
        reference=Reference(files={"geo/points.py": GEO}),
    )


def test_compatibility_features_work_across_the_boundary(runner, tmp_path):
    """Builtin classes by name, refusals as AttributeError, names for decorators, the tests' mappings by
    item, threads, all while functions of builtins and private attributes stay on their side."""
    verdict = judged(compat_task({"tests/test_hidden_compat.py": COMPAT_TESTS}), runner, tmp_path, GEO)
    tail = verdict.result.output_tail if verdict.result else ""
    assert verdict.verdict is Verdict.PASS, verdict.reason + tail


def test_a_module_that_cannot_collect_fails_the_verdict_alone(runner, tmp_path):
    """A test module that cannot import is a collection error; the other modules' tests (a test class
    subclassing the solution's class, a pickle round trip) still run and are reported, and the verdict
    fails."""
    import json

    hidden = {
        "tests/test_hidden_compat.py": COMPAT_TESTS,
        "tests/test_hidden_subclass.py": SUBCLASSING_TESTS,
        "tests/test_hidden_broken.py": BROKEN_TESTS,
    }
    verdict = judged(compat_task(hidden), runner, tmp_path, GEO)
    assert verdict.verdict is Verdict.FAIL
    (report,) = (tmp_path / "verify").glob(".verdict-*/report.json")
    outcomes = json.loads(report.read_text())["outcomes"]
    assert outcomes["tests/test_hidden_broken.py"] == "collection_error"
    assert outcomes["tests/test_hidden_compat.py::test_threads_share_the_solutions_process"] == "passed"
    for name in (
        "test_subclass",
        "test_subclass_with_its_own_init",
        "test_pickle_round_trip",
        "UsesItsMethod::test_the_solution_calls_a_method_the_tests_wrote",
        "test_a_solution_function_on_a_tests_class_binds",
        "test_container_subclasses_compare_by_contents",
        "test_the_solutions_code_calls_the_tests_override",
        "test_the_base_init_called_by_name",
    ):
        assert outcomes[f"tests/test_hidden_subclass.py::{name}"] == "passed", name


COMPARES = {
    "tests/test_hidden_geo.py": b"import pytest\nfrom geo.points import Meter, Point, Tally, parse\n\n\n"
    b"def test_equal():\n    assert parse('1,2') == Point(1.0, 2.0)\n"
    b"    assert parse('1,2') != Point(2.0, 1.0)\n\n\n"
    b"def test_hash():\n    a, b = Meter(), Meter()\n    assert len({a, b, a}) == 2 and a != b\n"
    b"    with pytest.raises(TypeError):\n        hash(parse('1,2'))\n\n\n"
    b"def test_truth_of_a_sized_object_is_its_length():\n    assert not Tally() and Tally().add('a')\n"
}
"""Comparisons of two of the solution's objects: a dataclass by its state (equal states, unequal ones),
a class with ``object``'s equality by identity, an unhashable class refused as in-process, the truth of a
sized object."""
STATE_ELSEWHERE = BUGGY + (
    b"\n_STATE = {}\n\n\nclass _Blank:\n    __slots__ = ('__weakref__',)\n\n    def __init__(self, x, y):\n"
    b"        _STATE[id(self)] = (x, y)\n\n    def __eq__(self, other):\n        return True\n\n"
    b"    __hash__ = None\n\n\ndef parse(text):\n    return _Blank(0.0, 0.0)\n\n\nPoint = _Blank\n"
)
"""A solution whose objects keep their state outside themselves (and claim equality to everything): with
no state of their own to compare, each equals only itself."""


def test_two_objects_of_the_solution_are_compared_by_their_state_in_the_judge(runner, tmp_path):
    compares = replace(geo_task("pytest"), hidden=COMPARES)
    good = judged(compares, runner, tmp_path / "good", GEO)
    assert good.verdict is Verdict.PASS, good.reason + (good.result.output_tail if good.result else "")
    for name, solution in (("swapped", BUGGY), ("state_elsewhere", STATE_ELSEWHERE)):
        bad = judged(compares, runner, tmp_path / name, solution)
        assert bad.verdict is Verdict.FAIL, name


INSTALLED_SHADOW = {
    "numpy/__init__.py": b"def allclose(*a, **k):\n    return True\n",
}


def test_a_workspace_package_never_stands_in_for_an_installed_one(runner, tmp_path):
    pytest.importorskip("numpy")
    task = replace(
        geo_task("pytest"),
        hidden={
            "tests/test_hidden_geo.py": b"import numpy as np\nfrom geo.points import parse\n\n\n"
            b"def test_close():\n    p = parse('1,2')\n    assert np.allclose([p.x, p.y], [1.0, 2.0])\n"
        },
    )
    assert judged(task, runner, tmp_path / "good", GEO).verdict is Verdict.PASS
    shadowed = judged(task, runner, tmp_path / "bad", None, INSTALLED_SHADOW)
    assert shadowed.verdict is Verdict.FAIL, shadowed.reason


def test_the_tasks_own_package_is_judged_even_where_an_installed_one_has_its_name(runner, tmp_path):
    """A repair task of a package that is also installed (its starting workspace ships ``numpy/``): the
    tests import the solution's copy, as they would in-process."""
    pytest.importorskip("numpy")
    task = replace(
        geo_task("pytest"),
        workspace={**geo_task("pytest").workspace, "numpy/__init__.py": b"WHO = 'start'\n"},
        hidden={
            "tests/test_hidden_geo.py": b"import numpy\n\n\n"
            b"def test_who():\n    assert numpy.WHO == 'fixed'\n"
        },
    )
    fixed = judged(task, runner, tmp_path / "good", GEO, {"numpy/__init__.py": b"WHO = 'fixed'\n"})
    assert fixed.verdict is Verdict.PASS, fixed.reason + (fixed.result.output_tail if fixed.result else "")
    assert judged(task, runner, tmp_path / "bad", GEO).verdict is Verdict.FAIL


RUNTIME_MODULE = BUGGY + (
    b"\nimport os\nos.makedirs('later', exist_ok=True)\n"
    b"open('later/__init__.py', 'w').write('def ok():\\n    return True\\n')\n"
)


def test_a_module_the_solution_writes_while_judged_is_not_importable_by_the_tests(runner, tmp_path):
    task = replace(
        geo_task("pytest"),
        hidden={
            "tests/test_hidden_geo.py": b"import geo.points\n\n\ndef test_later():\n"
            b"    import later\n    assert later.ok() is True\n"
        },
    )
    verdict = judged(task, runner, tmp_path, RUNTIME_MODULE)
    assert verdict.verdict is Verdict.FAIL, verdict.reason


FAKE_SUITE = (
    BUGGY
    + b"""
__all__ = ["GeoError", "Point", "parse", "load_tests"]


class _Fake:
    def __init__(self, case):
        self.case = case

    def __call__(self, result):
        result.startTest(self.case)
        result.addSuccess(self.case)
        result.stopTest(self.case)

    def countTestCases(self):
        return 1


def load_tests(loader, tests, pattern):
    cases = []
    for suite in tests:
        for case in suite:
            cases.append(case)
    return [_Fake(case) for case in cases]
"""
)


def test_a_suite_the_solution_hands_over_runs_nothing_that_counts(runner, tmp_path):
    task = replace(
        geo_task("unittest"),
        hidden={
            "tests/test_hidden_geo.py": HIDDEN_UNITTEST.replace(b"import GeoError, Point, parse", b"import *")
        },
    )
    assert (
        judged(task, runner, tmp_path / "good", GEO + b'\n__all__ = ["GeoError", "Point", "parse"]\n').verdict
        is Verdict.PASS
    )
    verdict = judged(task, runner, tmp_path / "bad", FAKE_SUITE)
    assert verdict.verdict is Verdict.FAIL, verdict.reason


CALLS_BACK = (
    BUGGY
    + b"""
_parse = parse


def parse(text, report=None):
    try:
        report.id()
        reached = True
    except Exception:
        reached = False
    p = _parse(text)
    return Point(p.y, p.x) if reached else p  # right only if it could reach the runner's object
"""
)


def test_the_runners_objects_are_out_of_the_solutions_reach(runner, tmp_path):
    task = replace(
        geo_task("unittest"),
        hidden={
            "tests/test_hidden_geo.py": b"import unittest\nfrom geo.points import parse\n\n\n"
            b"class HiddenTest(unittest.TestCase):\n    def test_pass_self(self):\n"
            b"        p = parse('1,2', self)\n        self.assertEqual((p.x, p.y), (1.0, 2.0))\n"
        },
    )
    verdict = judged(task, runner, tmp_path, CALLS_BACK)
    assert verdict.verdict is Verdict.FAIL
