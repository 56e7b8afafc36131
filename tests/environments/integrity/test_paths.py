from __future__ import annotations

import pytest

from environments.integrity.paths import PathClass, classify_path


@pytest.mark.parametrize(
    ("path", "cls"),
    [
        ("textkit/slug.py", PathClass.SOLUTION),
        ("src/money.js", PathClass.SOLUTION),
        ("answer.txt", PathClass.SOLUTION),
        ("NOTES.md", PathClass.SOLUTION),
        ("textkit/testing_helpers.py", PathClass.SOLUTION),
        ("html/report.html", PathClass.SOLUTION),
        ("tests/test_slug.py", PathClass.TEST),
        ("test/money.test.js", PathClass.TEST),
        ("pkg/sub/test_x.py", PathClass.TEST),
        ("go/pkg/x_test.go", PathClass.TEST),
        ("conftest.py", PathClass.RUNNER_CONFIG),
        ("deep/er/conftest.py", PathClass.RUNNER_CONFIG),
        ("pyproject.toml", PathClass.RUNNER_CONFIG),
        ("package.json", PathClass.RUNNER_CONFIG),
        ("vitest.config.ts", PathClass.RUNNER_CONFIG),
        (".mocharc.yml", PathClass.RUNNER_CONFIG),
        (".local/lib/python3.11/site-packages/x.py", PathClass.RUNNER_CONFIG),
        ("pytest.py", PathClass.SHADOW),
        ("pytest/__init__.py", PathClass.SHADOW),
        ("sub/sitecustomize.py", PathClass.SHADOW),
        ("anything.pth", PathClass.SHADOW),
        ("json.py", PathClass.SHADOW),
        ("src/os/__init__.py", PathClass.SHADOW),
        ("node_modules/assert/index.js", PathClass.SHADOW),
        (".oracle/check_answer.py", PathClass.GRADER),
        ("logs/verifier/reward.txt", PathClass.GRADER),
        ("reward.json", PathClass.GRADER),
        (".verdict-abc/report.json", PathClass.GRADER),
    ],
)
def test_paths_are_classed_by_the_conventions_of_the_runners(path, cls):
    assert classify_path(path) is cls


def test_the_tasks_hidden_files_and_their_folders_are_protected():
    hidden = frozenset({"checks/hidden_probe.py"})
    dirs = frozenset({"checks"})
    assert classify_path("checks/hidden_probe.py", hidden=hidden, hidden_dirs=dirs) is PathClass.GRADER
    assert classify_path("checks/hidden_probe.py/x.py", hidden=hidden, hidden_dirs=dirs) is PathClass.GRADER
    assert classify_path("checks/other.py", hidden=hidden, hidden_dirs=dirs) is PathClass.TEST
    assert classify_path("checks/other.py") is PathClass.SOLUTION
