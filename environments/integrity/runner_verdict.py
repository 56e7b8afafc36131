"""The verifier's reporter inside the test process: each test's outcome, and whether the runner was
patched, in a JSON report at ``$HA_VERDICT_REPORT``. One file, two ways in:

- pytest: copied next to the verify run as ``ha_verdict.py`` and loaded with ``-p ha_verdict``;
- unittest: copied as ``sitecustomize.py`` into a folder first on ``PYTHONPATH``, so it runs at start-up
  (before any agent code) and wraps ``unittest.TextTestRunner.run``.

Standard library only (plus pytest's hook names): it runs on whatever interpreter the task's command uses.
For pytest: At ``pytest_configure``, before collection imports any agent code,
it fingerprints pytest's and pluggy's modules (the identity of every module attribute and class member);
at the end of the session it compares again, so solution code that replaced ``TestReport`` methods, the
runner's hooks or the outcome helpers is reported as ``patched``, and the verifier fails the run. The
report is written when the session finishes, before ``atexit`` handlers run, so a process that ends
itself with status 0 afterwards still leaves the true outcomes; one that ends before the session
finishes leaves ``finished: false`` or no report, which the verifier treats as a failure.

What it cannot stop: code that patches this plugin or rewrites the report file after the session. Agent
code shares the test process by the nature of in-process testing; the static audit (``content.py``) and
the output-only oracle are the layers for that.
"""

from __future__ import annotations

import json
import os
import sys

WATCHED = (
    "_pytest.reports",
    "_pytest.runner",
    "_pytest.python",
    "_pytest.main",
    "_pytest.skipping",
    "_pytest.outcomes",
    "_pytest.terminal",
    "_pytest.nodes",
    "_pytest.unittest",
    "_pytest.config",
    "pytest",
    "pluggy._callers",
    "pluggy._hooks",
    "pluggy._manager",
    "unittest.case",
    "unittest.result",
    "unittest.runner",
    "unittest.loader",
    "unittest.suite",
    "unittest.main",
    "builtins",
)
_state: dict = {"baseline": None, "outcomes": {}, "report": os.environ.get("HA_VERDICT_REPORT", "")}


def fingerprint() -> dict[str, int]:
    """``{module.attr[.member]: id(value)}`` of the functions, classes and descriptors of ``WATCHED``
    (only modules already imported)."""
    marks: dict[str, int] = {}
    for name in WATCHED:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("__") and attr.endswith("__") or attr == "_":
                continue
            if not _is_code(value):
                continue  # data (caches, the current config) legitimately changes during a session
            marks[f"{name}.{attr}"] = id(value)
            if isinstance(value, type) and value.__module__.split(".")[0] in {
                "_pytest",
                "pluggy",
                "unittest",
            }:
                for member, inner in list(vars(value).items()):
                    if _is_code(inner):
                        marks[f"{name}.{attr}.{member}"] = id(inner)
    return marks


def _is_code(value: object) -> bool:
    return callable(value) or isinstance(value, property | classmethod | staticmethod)


def pytest_configure(config) -> None:
    _state["baseline"] = fingerprint()


def pytest_runtest_logreport(report) -> None:
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    previous = _state["outcomes"].get(report.nodeid)
    if previous in (None, "passed") or outcome != "passed":
        _state["outcomes"][report.nodeid] = outcome


def pytest_collectreport(report) -> None:
    if report.failed:
        _state["outcomes"][report.nodeid or "<collection>"] = "collection_error"


def pytest_sessionfinish(session, exitstatus) -> None:
    baseline = _state["baseline"] or {}
    now = fingerprint()
    patched = sorted(k for k, v in baseline.items() if k in now and now[k] != v)
    write_report(
        {"finished": True, "exitstatus": int(exitstatus), "outcomes": _state["outcomes"], "patched": patched}
    )


def write_report(data: dict) -> None:
    if not _state["report"]:
        return
    with open(_state["report"], "w", encoding="utf-8") as handle:
        json.dump(data, handle)


def _test_ids(test):
    """Ids of the tests in a unittest suite, recursively (a suite is iterable; a test has ``id``)."""
    try:
        children = list(test)
    except TypeError:
        yield test.id()
        return
    for child in children:
        yield from _test_ids(child)


def install_unittest():
    """Wrap ``TextTestRunner.run`` so that every run writes the report when it finishes."""
    import unittest.runner

    original = unittest.runner.TextTestRunner.run

    def run(self, test):
        ids = list(_test_ids(test))
        result = original(self, test)
        outcome = {}
        for kind, items in (
            ("failed", result.failures),
            ("error", result.errors),
            ("skipped", result.skipped),
            ("xfailed", result.expectedFailures),
        ):
            for case, _ in items:
                outcome[case.id()] = kind
        outcome.update({case.id(): "xpassed" for case in result.unexpectedSuccesses})
        now = fingerprint()
        patched = sorted(k for k, v in _state["baseline"].items() if k in now and now[k] != v)
        outcomes = {i: outcome.get(i, "passed") for i in ids}
        outcomes.update({i: o for i, o in outcome.items() if i not in outcomes})
        write_report({"finished": True, "outcomes": outcomes, "patched": patched})
        return result

    unittest.runner.TextTestRunner.run = run
    _state["baseline"] = fingerprint()


if __name__ == "sitecustomize" and _state["report"]:
    install_unittest()
