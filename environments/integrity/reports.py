"""Structured test reports, and what they must show for a pass: every expected test ran and passed.

The verifier reads a verdict from a report written by the runner (pytest and unittest through
``runner_verdict.py``, Node's test runner through ``node_verdict.cjs``), never from the exit status alone: a
process that exits 0 early, a hidden test file that was never collected, or a test that was skipped,
deselected or marked ``xfail`` does not pass. In-process reports are sealed (``unseal_report``): every line
carries an HMAC under a key only the verifier and its reporter held, and the last must be the ``final``
record the reporter writes once the run's result is known, so a forged, altered or cut-short report fails.
Expected tests come from the task's hidden files (their ``test_*`` functions and ``Test*`` classes'
methods, or Node's ``test("name", ...)`` calls), read with ``ast`` or a pattern, never from anything the
agent wrote.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from enum import StrEnum


class ReportKind(StrEnum):
    PYTEST = "pytest"
    UNITTEST = "unittest"
    NODE_TAP = "node_tap"


@dataclass(frozen=True, slots=True)
class ReportVerdict:
    passed: bool
    reason: str


def report_kind(command: str) -> ReportKind | None:
    """Which report a verify command can give: pytest when it names pytest, TAP for ``node --test``."""
    if re.search(r"\bpytest\b", command):
        return ReportKind.PYTEST
    if re.search(r"\bunittest\b", command):
        return ReportKind.UNITTEST
    if re.search(r"\bnode\b[^;&|]*--test\b", command):
        return ReportKind.NODE_TAP
    return None


def expected_pytest_tests(hidden: dict[str, bytes]) -> dict[str, set[str]]:
    """``{hidden test file: {test function or Class::method}}`` by pytest's default conventions (``Test*``
    classes, and ``unittest.TestCase`` subclasses of any name, which pytest collects too)."""
    expected: dict[str, set[str]] = {}
    for path, data in hidden.items():
        name = path.rsplit("/", 1)[-1]
        if not (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))):
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        tests = set()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                tests.add(node.name)
            elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or _is_test_case(node)):
                tests |= {
                    f"{node.name}::{m.name}"
                    for m in node.body
                    if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and m.name.startswith("test")
                }
        if tests:
            expected[path] = tests
    return expected


def _is_test_case(node: ast.ClassDef) -> bool:
    return any(ast.unparse(base).endswith("TestCase") for base in node.bases)


_NODE_TEST = re.compile(r"""\b(?:test|it)\s*\(\s*(["'`])((?:(?!\1).)+)\1""")


def expected_node_tests(hidden: dict[str, bytes]) -> set[str]:
    """Names of the ``test("...")``/``it("...")`` calls in hidden JavaScript test files."""
    names: set[str] = set()
    for path, data in hidden.items():
        if re.search(r"\.(c|m)?js$", path):
            names |= {m.group(2) for m in _NODE_TEST.finditer(data.decode("utf-8", "replace"))}
    return names


def _read_outcomes(raw: str | None, runner: str) -> tuple[dict[str, str] | None, str]:
    """The report's outcomes, or None and why it cannot count."""
    if raw is None:
        return None, f"{runner} left no report: it never ran the verifier's reporter or exited early"
    try:
        data = json.loads(raw)
        outcomes: dict[str, str] = dict(data["outcomes"])
        finished, patched = bool(data["finished"]), list(data["patched"])
    except (ValueError, KeyError, TypeError):
        return None, f"{runner}'s report is not the verifier's format"
    if not finished:
        return None, f"the {runner} session did not finish"
    if patched:
        return None, f"{runner} was patched while it ran: {', '.join(patched[:3])}"
    bad = sorted(n for n, o in outcomes.items() if o not in ("passed", "skipped"))
    if bad:
        return None, f"{len(bad)} tests did not pass, e.g. {bad[0]} ({outcomes[bad[0]]})"
    return outcomes, ""


def judge_pytest_report(raw: str | None, hidden: dict[str, bytes]) -> ReportVerdict:
    """Pass iff the plugin's report is complete, pytest was not patched, nothing failed, and every expected
    hidden test ran and passed (parametrized cases count under their function)."""
    outcomes, why = _read_outcomes(raw, "pytest")
    if outcomes is None:
        return ReportVerdict(False, why)
    passed = {n.split("[", 1)[0] for n, o in outcomes.items() if o == "passed"}
    for path, tests in expected_pytest_tests(hidden).items():
        missing = sorted(t for t in tests if f"{path}::{t}" not in passed)
        if missing:
            return ReportVerdict(False, f"hidden test {path}::{missing[0]} did not run and pass")
    return ReportVerdict(True, f"{len(passed)} tests passed")


def judge_unittest_report(raw: str | None, hidden: dict[str, bytes]) -> ReportVerdict:
    """Pass iff the reporter's report is complete, unittest was not patched, nothing failed, and every
    hidden ``Test*`` class method ran and passed (matched as ``<module stem>.<Class>.<method>``)."""
    outcomes, why = _read_outcomes(raw, "unittest")
    if outcomes is None:
        return ReportVerdict(False, why)
    passed = {n for n, o in outcomes.items() if o == "passed"}
    for path, tests in expected_pytest_tests(hidden).items():
        stem = path.rsplit("/", 1)[-1].removesuffix(".py")
        for test in sorted(t for t in tests if "::" in t):
            wanted = f"{stem}.{test.replace('::', '.')}"
            if not any(n == wanted or n.endswith("." + wanted) for n in passed):
                return ReportVerdict(False, f"hidden test {path}::{test} did not run and pass")
    if not passed:
        return ReportVerdict(False, "no test ran")
    return ReportVerdict(True, f"{len(passed)} tests passed")


_TAP_LINE = re.compile(r"^\s*(not ok|ok) \d+ - (.*?)(\s+#\s*(SKIP|TODO)\b.*)?$", re.I)


def judge_tap_report(raw: str | None, hidden: dict[str, bytes]) -> ReportVerdict:
    """Pass iff the TAP stream has no ``not ok``, no skip or todo, and every hidden test name is ``ok``."""
    if raw is None:
        return ReportVerdict(False, "node's test runner left no report")
    ok: set[str] = set()
    for line in raw.splitlines():
        match = _TAP_LINE.match(line)
        if not match:
            continue
        status, name, directive = match.group(1).lower(), match.group(2), match.group(4)
        if status == "not ok":
            return ReportVerdict(False, f"test {name[:80]!r} failed")
        if directive:
            return ReportVerdict(False, f"test {name[:80]!r} was marked {directive.upper()}")
        ok.add(name)
    missing = sorted(expected_node_tests(hidden) - ok)
    if missing:
        return ReportVerdict(False, f"hidden test {missing[0]!r} did not run and pass")
    if not ok:
        return ReportVerdict(False, "no test ran")
    return ReportVerdict(True, f"{len(ok)} tests passed")


def unseal_report(raw: str | None, key: bytes) -> tuple[dict | None, str]:
    """The ``final`` record of a sealed report (``runner_verdict.seal``: one ``{"body", "mac"}`` line per
    record), or None and why it cannot count: no report, a line whose MAC under ``key`` is wrong (written
    or altered by anything but the reporter), no start record first, no final record last (the process
    ended before its run finished), or a final record whose count does not match what it lists."""
    if raw is None:
        return None, "the test process left no report: the reporter never loaded or the process was cut short"
    bodies = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            text, mac = record["body"], record["mac"]
            good = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
            if not (isinstance(mac, str) and hmac.compare_digest(mac, good)):
                raise ValueError("bad seal")
            body = json.loads(text)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except (ValueError, KeyError, TypeError, AttributeError):
            return None, "the report was written or altered by something other than the verifier's reporter"
        bodies.append(body)
    if not bodies or bodies[0].get("kind") != "start":
        return None, "the report does not start with the reporter's start record"
    finals = [b for b in bodies if b.get("kind") == "final"]
    if not finals:
        return None, "the test process ended before its run finished (no final record)"
    if len(finals) > 1 or bodies[-1] is not finals[0]:
        return None, "the report has records after its final record"
    final = finals[0]
    listed = final.get("outcomes", final.get("tests"))
    if not isinstance(listed, dict | list) or final.get("count") != len(listed):
        return None, "the final record's count does not match the tests it lists"
    return final, ""


def judge_sealed_report(
    kind: ReportKind, raw: str | None, key: bytes, hidden: dict[str, bytes]
) -> ReportVerdict:
    """``unseal_report``, then the kind's judge on the final record (for Node, its TAP lines)."""
    final, why = unseal_report(raw, key)
    if final is None:
        return ReportVerdict(False, why)
    if kind is ReportKind.NODE_TAP:
        return judge_tap_report("\n".join(str(line) for line in final["tests"]), hidden)
    judge = judge_pytest_report if kind is ReportKind.PYTEST else judge_unittest_report
    return judge(json.dumps(final), hidden)
