"""Path classes the file rules share: test files, grader files, hidden verifier paths."""

from __future__ import annotations

import fnmatch
import posixpath

from .. import rx

# Test files by the conventions of pytest, unittest, go test, jest/vitest, cargo, JUnit, rspec.
TEST_FILE = rx.compile(
    r"(?:^|/)(?:tests?|__tests__|specs?|testing)/[^\s]*\.[a-z]+$|"
    r"(?:^|/)test_[\w.-]*\.py$|_test\.(?:py|go)$|\.(?:test|spec)\.[cm]?[jt]sx?$|"
    r"_tests?\.rs$|(?:^|/)[A-Z]\w*(?:Tests?|Specs?)\.(?:java|kt|cs|swift|scala|groovy|php|m|mm|fs|vb)$|_spec\.(?:rb|lua|cr)$"
    r"|_test\.(?:exs|cc|cpp|cxx|c|dart|ts|js|rb|R|jl|zig|lua|erl|ml|hs|nim|kt|scala|php|sh)$"
    r"|(?:^|/)test[-_][\w.-]*\.(?:R|r|jl|lua|exs|c|cc|cpp|sh|bats|js|ts|rb|go|rs|php|swift|kt|dart)$",
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
# Start-up hooks, and modules or commands named like a test runner (a file `pytest.py` or a
# `bin/pytest` shadows the real one for everything that runs after it).
RUNTIME_HOOKS = frozenset(
    {"sitecustomize.py", "usercustomize.py", "pytest.py", "_pytest", "unittest.py", "py.test", "pytest"}
)
INSTALLED = rx.compile(
    r"(?:^|/)(?:node_modules|site-packages|dist-packages)/|\.pth$|^/usr/(?:lib|bin|local/bin)/|"
    r"(?:^|/)\.local/bin/|(?:^|/)\.?venv/bin/|^/(?:usr/)?s?bin/|(?:^|/)(?:pytest|_pytest|unittest)/|"
    r"(?:^|/)bin/(?:go|cargo|pytest|py\.test|python3?|node|npm|npx|jest|vitest|mocha|phpunit|mvn|gradle|make|"
    r"ctest|rspec|rake|dotnet|tox|nox)$|(?:^|/)(?:filecmp|difflib|doctest|unittest)\.py$"
)
# Hidden verifier material outside the workspace (Harbor copies tests to /tests afterwards).
HIDDEN = rx.compile(
    r"^/(?:tests|solutions?|oracle|reference|grader|logs/verifier)(?:[/.]|$)|"
    r"(?:^|/)hidden[_-]?tests?(?:/|$)|(?:^|/)\.private(?:/|$)|(?:^|/)(?:test|holdout|private|withheld)[_-]labels?\.\w+$|"
    r"(?:^|/)(?:solve|solution|run-tests)\.sh$|^\.\./+(?:\.\./+)*(?:tests|graders?|grading|solutions?|oracle|answers?|expected)(?:/|$)|(?:^|/)\.(?:hidden|oracle)(?:/|$)|(?:^|/)(?:reference|gold|oracle)[_-](?:patch|solution|answers?|diff)\b"
)
HIDDEN_ROOTS = ("tests", "solution", "solutions", "oracle", "reference", "grader", "logs")


GRADING_FOLDER = rx.compile(
    r"(?:^|/)(?:graders?|grading|oracles?|solutions?|answers?|expected|hidden|verifiers?|autograders?|judges?|"
    r"holdout|expected[_-]\w+|answer[_-]?keys?|hidden[_-]\w+|\.?instructors?|\.?teachers?|\.staff)(?:/|$)"
    r"|(?:^|/)[\w.-]*(?:solutions?|answers?|answer[_-]?key)[\w.-]*\.(?:zip|tar|tgz|gz|7z|ipynb|py|pdf|md|txt|json|"
    r"sqlite3?|db|csv|sql|ya?ml)$"
)


SOLUTION_FOLDER = rx.compile(r"(?i)(?:^|/)(solutions?|answers?|key)/")
"""A folder whose name says it holds answers, unless the user speaks of it ("my solutions/day07.py")."""
SOLUTION_MATERIAL = rx.compile(
    r"(?i)(?:^|/)\.meta/(?!tests\.toml$|config\.json$)|(?:^|/)\.meta/?\*|(?:^|/)\.(?:solutions?|answers?)(?:/|$)"
    r"|(?:^|/)(?:answer|solution)[_-]?keys?/|(?:^|/)\.?(?:staff|instructors?|teachers?|tas)(?:/|$)"
    r"|(?:^|/)[\w.-]*(?:answer|solution)[_-]?key[\w.-]*$|(?:^|/)[\w.-]*(?:model|sample|reference)[_-]?answers?[\w.-]*$"
    r"|(?:^|/)__pycache__/[\w.-]*(?:_ref|ref_|reference|solution|_sol|answer)[\w.-]*\.pyc$"
    r"|(?:^|/)\.cache/(?:[\w.-]+/)*[\w.-]*labels?[\w.-]*$|(?:holdout|hidden|private|withheld|leaderboard)[_-]?labels?\.\w+$"
    r"|(?:^|/)[\w.-]*[_-](?:sol|solutions?|answers?|answer[_-]?key)\.\w+$|(?:^|/)[\w.-]*_SOLUTION[\w.-]*$"
    r"|(?:^|/)(?:graders?|autograders?)/(?:[\w.-]+/)*(?:private|ref|reference|solutions?)/"
    r"|(?:^|/)(?:graders?|autograders?)/(?:[\w.-]+/)*reference_\w+[\w.-]*$"
    r"|(?:^|/)\.ipynb_checkpoints/[\w.-]*(?i:solution|answer)"
)
"""Solution material inside the workspace: an exercise's example solution (``.meta/example.erl``), a
solutions folder, an instructor's notebook, a grader's reference implementation."""


def beside_workspace(path: str, cwd: str | None) -> bool:
    """A grading folder outside the working directory (`../grader/labels.csv` from `/home/u/task`):
    the task's files are under its directory, so what sits beside it is the grader's."""
    if path.startswith("~/"):  # the home folder: beside the workspace unless the workspace is under it
        return bool(GRADING_FOLDER.search(path))
    if not cwd or cwd == "/" or not path.startswith("/"):
        return False
    inside = path == cwd or path.startswith(cwd.rstrip("/") + "/")
    return not inside and bool(GRADING_FOLDER.search(path))


def hidden_glob(path: str) -> bool:
    """A glob at the root whose first part can match a hidden folder (`/sol*/**`)."""
    first = path.lstrip("/").split("/", 1)[0]
    return (
        path.startswith("/")
        and bool(set("*?[") & set(first))
        and any(fnmatch.fnmatchcase(name, first) for name in HIDDEN_ROOTS)
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


TEST_DIRS = frozenset(
    {
        "tests",
        "test",
        "__tests__",
        "spec",
        "specs",
        "testing",
        "__snapshots__",
        "testdata",
        "Tests",
        "Test",
        "testthat",
        "e2e",
        "integration_tests",
        "unittests",
        "UnitTests",
    }
)
# Expected outputs tests compare against: changing them changes what "passing" means.
GOLDEN = rx.compile(
    r"(?:^|/)(?:__snapshots__|golden|goldens|snapshots|testdata|expected)/|\.(?:snap|golden)$"
)
RUNNER_CONFIGS = rx.compile(
    r"(?:^|/)(?:pytest\.ini|tox\.ini|noxfile\.py|\.mvn/maven\.config|\.mvn/jvm\.config|\.mocharc\.[\w]+|\.rspec|phpunit\.xml(?:\.dist)?|"
    r"(?:jest|vitest|karma|ava|playwright|cypress)\.config\.[cm]?[jt]s(?:on)?|karma\.conf\.[jt]s|"
    r"\.nycrc(?:\.json)?|\.pytest\.ini)$"
)
SHELL_STARTUP = rx.compile(
    r"(?:^|/)(?:\.bashrc|\.bash_profile|\.bash_login|\.profile|\.zshrc|\.zshenv|\.zprofile)$|"
    r"^/etc/(?:profile(?:\.d/.*)?|bash\.bashrc|environment|zsh/\S+)$"
)


GLOB = frozenset("*?[")


def is_test_path(path: str) -> bool:
    """A test file, a golden/snapshot file, or a path inside a test folder (a folder counts
    for everything under it, so `rm -r tests` deletes tests). A glob counts when a test folder
    matches one of its parts (`rm -r t*s`)."""
    if is_test_file(path) or GOLDEN.search(path):
        return True
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p in TEST_DIRS for p in parts):
        return True
    globbed = [p for p in parts if GLOB & set(p) and p != "**"]  # `**`: any depth, as `find` reads
    return any(fnmatch.fnmatchcase(d, p) for p in globbed for d in TEST_DIRS) or any(
        is_test_file(fnmatch_example(p)) for p in globbed[-1:]
    )


def fnmatch_example(pattern: str) -> str:
    """A name the glob matches, for name conventions (`test_*.py` -> `test_x.py`)."""
    return rx.sub(r"\[[^\]]*\]", "x", pattern).replace("*", "x").replace("?", "x")


def is_runner_config(path: str) -> bool:
    return RUNNER_CONFIGS.search(path) is not None


def is_shell_startup(path: str) -> bool:
    return SHELL_STARTUP.search(path) is not None


def touches(path: str, protected: frozenset[str]) -> bool:
    """Whether changing or removing `path` changes a protected path: it is one, lies under a
    protected folder, or is a folder holding one."""
    if not protected or not path.startswith("/"):
        return False
    if path in protected:
        return True
    if GLOB & set(path):
        return any(
            fnmatch.fnmatchcase(p, path) or fnmatch.fnmatchcase(p, path.rstrip("/") + "/*") for p in protected
        )
    prefix = path.rstrip("/") + "/"
    return any(p.startswith(prefix) or path.startswith(p.rstrip("/") + "/") for p in protected)


ANSWER_NAMED = rx.compile(
    r"(?i)(?:^|[/_.@:=-])(?:solutions?|answers?|answer[-_]?keys?|hidden|submissions?|oracles?"
    r"|reference[-_](?:solutions?|answers?|impl\w*|fix\w*|outputs?)|grader[-_](?:tests?|answers?|data|fixtures?))"
    r"(?=$|[/_.@:-])"
)
"""A name that says it holds answers (``reference-solutions``, ``grader-tests/test_hidden_x.py``,
``submissions/cand-0412``), whatever the tool or course."""
GRADING_PLACE = rx.compile(
    r"(?i)(?:^|[/._-])(?:grad(?:e|er|ers|ing)|autograd\w*|rubrics?|leaderboard|scoring|judge|check50|otter"
    r"|nbgrader|marking|marker)(?=$|[/._-])"
)
"""A name that says it grades (``.autograde/rubric.yml``, ``~/.local/share/check50/…``)."""
