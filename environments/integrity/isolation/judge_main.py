"""The isolated judge's entry point in the verifier's sandbox: run pytest or unittest on the task's own
tests in this (pristine) interpreter, with the solution's modules behind ``judge_host``'s proxies.

    python -I -c "<put the package's folder on sys.path; from ha_isolation.judge_main import main; main()>" \\
        --solution DIR --tmp DIR --report FILE --deadline-s S -- pytest|unittest ARGS...

The working directory is the judge's tree: the task's tests, runner configuration, hidden files and data,
never a file the agent wrote. The solution's tree (``--solution``) holds the agent's code; no module of it
is imported here. The report (each test's outcome, in the format ``reports.py`` judges) is written after
the solution's process is killed, so nothing it does can change it.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time

NO_LANDLOCK = (
    "this kernel has no Landlock, so the solution's process cannot be kept from the tests' files: run the "
    "verifier on Linux 5.13+ with Landlock enabled (lsm=landlock), or opt the task in to judge: in-process"
)


def _no_dumps() -> None:
    """Non-dumpable: the solution's process (same user) cannot read this one's memory, fds or cwd."""
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


class PytestOutcomes:
    """A pytest plugin object: each test's outcome (xfail and xpass counted as not passed). A test is
    passed only once its call phase reported passing (a setup that passed, then a crash of the run while
    the call was reported, leaves it ``not_run``) and no phase failed."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report) -> None:
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        previous = self.outcomes.get(report.nodeid)
        if outcome == "passed":
            if report.when == "call" and previous in (None, "not_run"):
                self.outcomes[report.nodeid] = "passed"
            elif previous is None:
                self.outcomes[report.nodeid] = "not_run"
        elif previous in (None, "not_run", "passed") or outcome == "failed":
            self.outcomes[report.nodeid] = outcome

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.outcomes[report.nodeid or "<collection>"] = "collection_error"


def run_pytest(args: list[str], ignore: list[str]) -> tuple[int, dict[str, str]]:
    import pytest

    plugin = PytestOutcomes()
    # A module that fails to collect (say, it subclasses a class of the solution) is reported as a
    # collection error and fails the verdict; the other modules' tests still run and are reported.
    extra = ["-p", "no:cacheprovider", "--continue-on-collection-errors"]
    extra += [f"--ignore={path}" for path in ignore]
    code = pytest.main(extra + args, plugins=[plugin])
    return int(code), plugin.outcomes


def run_unittest(args: list[str], judge_root: str) -> tuple[int, dict[str, str]]:
    """unittest's run; a test counts as passed only when a case of a class defined in one of the judge's
    own files ran here and reported success (a suite the solution handed over, e.g. through a
    ``load_tests`` it exports, runs nothing that counts)."""
    import unittest

    outcomes: dict[str, str] = {}
    successes: set[str] = set()

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            self._ha_current = test
            super().startTest(test)

        def addSuccess(self, test):
            super().addSuccess(test)
            if test is getattr(self, "_ha_current", None) and _judge_side_case(test, judge_root):
                successes.add(unittest.TestCase.id(test))

    class Runner(unittest.TextTestRunner):
        resultclass = Result

        def run(self, test):
            ids = list(_test_ids(test, judge_root))
            result = super().run(test)
            seen = {}
            for kind, items in (
                ("failed", result.failures),
                ("error", result.errors),
                ("skipped", result.skipped),
                ("xfailed", result.expectedFailures),
            ):
                for case, _ in items:
                    seen[_case_id(case)] = kind
            seen.update({_case_id(case): "xpassed" for case in result.unexpectedSuccesses})
            for i in ids:
                outcomes[i] = "passed" if i in successes else seen.get(i, "not_run")
            outcomes.update({i: o for i, o in seen.items() if i not in outcomes})
            return result

    program = unittest.main(module=None, argv=["python -m unittest", *args], exit=False, testRunner=Runner)
    result = program.result
    return (0 if result.wasSuccessful() else 1), outcomes


def _judge_side_case(test, judge_root: str) -> bool:
    """A real ``TestCase`` whose class comes from a file of the judge's tree (``type``, never
    ``__class__``, so a proxy cannot claim it)."""
    import unittest

    kind = type(test)
    if not (isinstance(kind, type) and issubclass(kind, unittest.TestCase)):
        return False
    module = sys.modules.get(kind.__module__)
    where = getattr(module, "__file__", None) if type(module).__name__ != "ProxyModule" else None
    if not isinstance(where, str):
        return False
    real = os.path.realpath(where)
    return real.startswith(os.path.realpath(judge_root) + os.sep)


def _case_id(case) -> str:
    import unittest

    if isinstance(case, unittest.TestCase) or isinstance(case, unittest.suite._ErrorHolder):
        return case.id()
    return "<an object of the solution in the test suite>"


def _test_ids(test, judge_root: str):
    import unittest

    if isinstance(test, unittest.TestSuite):
        for child in test:
            yield from _test_ids(child, judge_root)
    elif isinstance(test, unittest.TestCase) and _judge_side_case(test, judge_root):
        yield unittest.TestCase.id(test)
    else:  # anything else in the suite (the solution's objects) is a test that did not pass
        yield "<an object of the solution in the test suite>"


UNPICKLE_MODULES = frozenset(
    "collections datetime decimal fractions enum pathlib uuid numbers array ipaddress zoneinfo".split()
)
UNPICKLE_FUNCTIONS = frozenset(
    {
        ("copyreg", "_reconstructor"),
        ("_codecs", "encode"),
        ("re", "_compile"),
        ("ha_isolation.judge_host", "_unpickled"),
    }
)
"""What the tests may unpickle while they run: classes of ``builtins``, of these standard-library data
modules, of the tests' own modules and of the solution's (a call in its process), and the rebuilding
functions pickle itself names. Anything else in a pickle (``os.system``, ``operator.methodcaller``,
``subprocess.Popen``, a test helper) is refused, so bytes the solution made cannot run code in the judge;
``_unpickled`` is a solution object's round trip, unpickled in the solution's process."""


def _unpickling_guard(judge_root: str, outside: list[str]):
    """``outside``: folders inside the judge's tree that are not the tests' (the solution's tree, its
    temporary folder, this package)."""
    import importlib

    root = os.path.realpath(judge_root) + os.sep
    excluded = tuple(os.path.realpath(p) + os.sep for p in outside)

    def tests_module(loaded) -> bool:
        where = getattr(loaded, "__file__", None)
        if not isinstance(where, str):
            return False
        real = os.path.realpath(where)
        return real.startswith(root) and not real.startswith(excluded)

    def allowed(module: str, name: str) -> bool:
        if (module, name) in UNPICKLE_FUNCTIONS:
            return True
        top = module.split(".")[0]
        loaded = sys.modules.get(module)
        if type(loaded).__name__ == "ProxyModule":
            return True  # the solution's own classes and functions: calls in its process
        if module == "builtins" or top in UNPICKLE_MODULES:
            loaded = loaded or importlib.import_module(module)
        elif top == "ha_isolation" or not tests_module(loaded):
            return False
        value = loaded
        for part in name.split("."):
            value = getattr(value, part, None)
        return isinstance(value, type)

    def hook(event: str, args) -> None:
        if event == "pickle.find_class" and not allowed(str(args[0]), str(args[1])):
            raise RuntimeError(f"the judge does not unpickle {args[0]}.{args[1]}")

    return hook


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="isolated-judge")
    parser.add_argument("--solution", required=True)
    parser.add_argument("--tmp", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--deadline-s", type=float, default=55.0)
    parser.add_argument("--task-modules", default="", help="comma-separated: the task's own top modules")
    parser.add_argument("runner", choices=("pytest", "unittest"))
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    _no_dumps()
    started = time.monotonic()
    judge_root = os.getcwd()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:] = [judge_root] + [p for p in sys.path if p and os.path.realpath(p) != os.path.realpath(here)]
    for name in [n for n in os.environ if n.startswith("HA_") or n == "PYTHONPATH"]:
        del os.environ[name]
    tmp = os.path.abspath(options.tmp)
    os.makedirs(tmp, exist_ok=True)
    os.environ["TMPDIR"] = tmp
    import tempfile

    tempfile.tempdir = tmp
    from ha_isolation.judge_host import install
    from ha_isolation.landlock import abi_version

    if abi_version() == 0:  # without confinement the solution's process could read or rewrite the tests
        with open(options.report, "w", encoding="utf-8") as handle:
            json.dump(
                {"finished": False, "outcomes": {}, "patched": [], "judge": "isolated", "error": NO_LANDLOCK},
                handle,
            )
        print(f"isolated judge: {NO_LANDLOCK}", file=sys.stderr)
        return 3
    process = install(
        judge_root,
        options.solution,
        tmp,
        started + options.deadline_s,
        task_modules=[m for m in options.task_modules.split(",") if m],
    )
    args = [a for a in options.args if a != "--"] if options.args[:1] == ["--"] else options.args
    code = 2
    outcomes: dict[str, str] = {}
    finished = False
    try:
        sys.addaudithook(_unpickling_guard(judge_root, [options.solution, tmp, here]))
        if options.runner == "pytest":
            code, outcomes = run_pytest(args, [options.solution, tmp, here])
        else:
            code, outcomes = run_unittest(args, judge_root)
        finished = code in (0, 1)  # pytest's OK or TESTS_FAILED, unittest's result; not an internal error
    except SystemExit as exc:  # a runner that exits instead of returning
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        process.stop("the run ended")
        report = {
            "finished": finished,
            "outcomes": outcomes,
            "patched": [],
            "judge": "isolated",
            "confinement": abi_version(),
            "solution_requests": process.requests,
            "solution_gone": process.gone if process.gone != "the run ended" else None,
        }
        with open(options.report, "w", encoding="utf-8") as handle:
            json.dump(report, handle)
    return code
