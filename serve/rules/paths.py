"""Path classes the file rules share: test files, grader files, hidden verifier paths."""

from __future__ import annotations

import posixpath
import re

# Test files by the conventions of pytest, unittest, go test, jest/vitest, cargo, JUnit, rspec.
TEST_FILE = re.compile(
    r"(?:^|/)(?:tests?|__tests__|specs?|testing)/[^\s]*\.[a-z]+$|"
    r"(?:^|/)test_[\w.-]*\.py$|_test\.(?:py|go)$|\.(?:test|spec)\.[cm]?[jt]sx?$|"
    r"_tests?\.rs$|(?:^|/)[A-Z]\w*Tests?\.(?:java|kt|cs)$|_spec\.rb$",
)
# Files that decide or measure the grade rather than being graded.
GRADER_NAMES = frozenset(
    {
        "checker.py",
        "check.py",
        "evaluate.py",
        "eval.py",
        "grader.py",
        "grade.py",
        "verify.py",
        "verifier.py",
        "bench.py",
        "benchmark.py",
        "run_tests.sh",
        "run-tests.sh",
        "test.sh",
        "judge.py",
        "scorer.py",
        "score.py",
    }
)
RUNTIME_HOOKS = frozenset({"sitecustomize.py", "usercustomize.py"})
INSTALLED = re.compile(
    r"(?:^|/)(?:node_modules|site-packages|dist-packages)/|\.pth$|^/usr/(?:lib|bin|local/bin)/"
)
# Hidden verifier material outside the workspace (Harbor copies tests to /tests afterwards).
HIDDEN = re.compile(
    r"^(?:/tests|/solution|/solutions|/oracle|/reference|/grader|/logs/verifier)(?:/|$)|"
    r"(?:^|/)(?:solve|solution|run-tests)\.sh$|^\.\./+(?:\.\./+)*tests(?:/|$)"
)


def is_test_file(path: str) -> bool:
    base = posixpath.basename(path)
    return (
        base != "conftest.py"
        and TEST_FILE.search(path.lstrip("./") if path.startswith("./") else path) is not None
    )


def is_grader_file(path: str) -> bool:
    return posixpath.basename(path) in GRADER_NAMES


def is_harness_file(path: str) -> bool:
    return posixpath.basename(path) in RUNTIME_HOOKS or INSTALLED.search(path) is not None
