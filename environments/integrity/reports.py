"""Structured test reports, and what they must show for a pass: every expected test ran and passed.

The verifier reads a verdict from a report written by the runner (pytest and unittest through
``runner_verdict.py``, Node's test runner through ``node_verdict.cjs``), never from the exit status alone: a
process that exits 0 early, a hidden test file that was never collected, or a test that was skipped,
deselected or marked ``xfail`` does not pass. In-process reports are sealed (``unseal_report``): every line
carries an HMAC under a key only the verifier and its reporter held, and the last must be the ``final``
record the reporter writes once the run's result is known, so a forged, altered or cut-short report fails.
pytest's and unittest's reports are numbered: each line's MAC covers its number, each test phase's outcome
is a record of its own, sealed when the runner reported it, and the outcomes judged are those records (the
final record only counts them, and says whether the runner was patched or tampered with).
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
            why = _unproven(raw, f"{path}::{missing[0]}")
            return ReportVerdict(False, f"hidden test {path}::{missing[0]} did not run and pass{why}")
    return ReportVerdict(True, f"{len(passed)} tests passed")


def _unproven(raw: str | None, test: str) -> str:
    """Why the reporter did not count a pass of ``test`` (its final record's ``unproven``), as a suffix."""
    try:
        notes = json.loads(raw or "").get("unproven") or []
    except (ValueError, AttributeError):
        return ""
    found = [str(n) for n in notes if isinstance(n, str) and test in n]
    return f" (a pass was not counted: {found[0][:200]})" if found else ""


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
                why = _unproven(raw, wanted)
                return ReportVerdict(False, f"hidden test {path}::{test} did not run and pass{why}")
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


def unseal_report(raw: str | None, key: bytes, numbered: bool | None = None) -> tuple[dict | None, str]:
    """The ``final`` record of a sealed report, or None and why it cannot count: no report, a line whose MAC
    under ``key`` is wrong (written or altered by anything but the reporter), no start record first, no
    final record last (the process ended before its run finished), or a final record whose count does not
    match. Lines are numbered (``runner_verdict.seal_record``: the MAC covers ``"<n>\\n" + body`` and ``n`` is
    the line's index) or not (``runner_verdict.seal``, Node's reporter), never both; ``numbered`` True or
    False requires one. For a numbered report the final record's ``outcomes`` are rebuilt from the
    ``outcome`` records before it (``merge_outcomes``), its ``count`` must be their number, and a final
    record that names ``tampered`` machinery does not count."""
    if raw is None:
        return None, "the test process left no report: the reporter never loaded or the process was cut short"
    bodies = []
    seen_numbered: bool | None = None
    forged = "the report was written or altered by something other than the verifier's reporter"
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            text, mac = record["body"], record["mac"]
            seq = record.get("seq")
            has_seq = seq is not None
            if seen_numbered is None:
                seen_numbered = has_seq
            if has_seq != seen_numbered or not isinstance(text, str):
                raise ValueError("numbered and unnumbered lines mixed")
            if has_seq and (type(seq) is not int or seq != len(bodies)):
                raise ValueError("out of sequence")
            signed = f"{seq}\n{text}" if has_seq else text
            good = hmac.new(key, signed.encode(), hashlib.sha256).hexdigest()
            if not (isinstance(mac, str) and hmac.compare_digest(mac, good)):
                raise ValueError("bad seal")
            body = json.loads(text)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None, forged
        bodies.append(body)
    if numbered is not None and bodies and seen_numbered != numbered:
        return None, "the report is not in this runner's sealed format"
    if not bodies or bodies[0].get("kind") != "start":
        return None, "the report does not start with the reporter's start record"
    finals = [b for b in bodies if b.get("kind") == "final"]
    if not finals:
        return None, "the test process ended before its run finished (no final record)"
    if len(finals) > 1 or bodies[-1] is not finals[0]:
        return None, "the report has records after its final record"
    final = finals[0]
    if seen_numbered:
        records = [b for b in bodies if b.get("kind") == "outcome"]
        if final.get("count") != len(records) or type(final.get("count")) is not int:
            return None, "the final record's count does not match the outcome records before it"
        tampered = final.get("tampered")
        if not isinstance(tampered, list):
            return None, "the final record does not say whether the runner was tampered with"
        if tampered:
            return None, f"the test runner was tampered with while it ran: {str(tampered[0])[:200]}"
        outcomes = merge_outcomes(records)
        if outcomes is None:
            return None, "an outcome record is not the reporter's format"
        return {**final, "outcomes": outcomes}, ""
    listed = final.get("outcomes", final.get("tests"))
    if not isinstance(listed, dict | list) or final.get("count") != len(listed):
        return None, "the final record's count does not match the tests it lists"
    return final, ""


def merge_outcomes(records: list[dict]) -> dict[str, str] | None:
    """``{test: outcome}`` from outcome records in the order they were sealed: a non-pass outcome replaces
    a pass (a teardown error fails a test that passed); a pytest test (records with a ``when``) that only
    has passing setup or teardown records is left out (its call's pass was not counted: a hidden test
    then did not run and pass, an ordinary one is not held against the run); None if a record is
    malformed."""
    merged: dict[str, str] = {}
    called: set[str] = set()
    for record in records:
        test, outcome, when = record.get("test"), record.get("outcome"), record.get("when", None)
        if not isinstance(test, str) or not isinstance(outcome, str) or not isinstance(when, str | None):
            return None
        if merged.get(test) in (None, "passed") or outcome != "passed":
            merged[test] = outcome
        if outcome == "passed" and when in (None, "call"):
            called.add(test)
    return {t: o for t, o in merged.items() if o != "passed" or t in called}


def judge_sealed_report(
    kind: ReportKind, raw: str | None, key: bytes, hidden: dict[str, bytes]
) -> ReportVerdict:
    """``unseal_report``, then the kind's judge on the final record (for Node, its TAP lines)."""
    final, why = unseal_report(raw, key, numbered=kind is not ReportKind.NODE_TAP)
    if final is None:
        return ReportVerdict(False, why)
    if kind is ReportKind.NODE_TAP:
        return judge_tap_report("\n".join(str(line) for line in final["tests"]), hidden)
    judge = judge_pytest_report if kind is ReportKind.PYTEST else judge_unittest_report
    return judge(json.dumps(final), hidden)
