"""Which workspace paths decide a verdict, so the agent's copy of them must never count.

Four classes, each a pure function of a relative POSIX path (and the task, for what it names):

- ``test``: test code by the conventions of pytest, unittest, Node's test runner, Jest/Vitest/Mocha, Go and
  Rust: files under a ``tests``/``test``/``__tests__``/``spec`` folder, ``test_*.py``, ``*_test.py``,
  ``*.test.js`` and the like, ``*_test.go``; plus the folders the task's hidden files live in;
- ``runner_config``: what changes how a runner collects, selects or judges: ``conftest.py`` anywhere,
  ``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``pyproject.toml``, ``package.json`` and lock files, Jest,
  Vitest, Mocha, Babel and TypeScript configs, ``.noderc``/``.npmrc``, Makefiles, ``noxfile.py``,
  ``Cargo.toml``, ``go.mod``; and the home-directory configuration the sandbox's ``HOME`` (the workspace)
  would hand to tools (``.config/``, ``.local/``, ``.pythonrc``);
- ``shadow``: files that replace the runner or hook the interpreter's start-up: ``pytest.py``, a
  ``pytest/``, ``_pytest/``, ``pluggy/`` or ``unittest/`` package, ``sitecustomize.py``,
  ``usercustomize.py``, any ``.pth``, a ``node_modules/`` folder, and a module at the workspace root (or
  ``src/``) named like a standard-library module (``json.py`` would replace ``json`` under ``python -m``);
- ``grader``: the task's hidden files and the folders they sit in when those are grader-only (``.oracle/``,
  ``.harbor/``), and reward files a runner would read (``logs/verifier/``, ``reward.txt``, ``reward.json``).

Everything else is the **solution surface**: the verifier takes it from the agent; the rest it takes from
the pristine task. What this does not judge: what a solution file *does* when imported (see
``content.py``), and paths the conventions above do not name (a grader script a task hides under an
unusual name should be a hidden file, which the task's own list covers).
"""

from __future__ import annotations

import re
import sys
from enum import StrEnum
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from environments.core.types import Task


class PathClass(StrEnum):
    TEST = "test"
    RUNNER_CONFIG = "runner_config"
    SHADOW = "shadow"
    GRADER = "grader"
    SOLUTION = "solution"


TEST_DIRS = frozenset({"tests", "test", "__tests__", "spec", "specs", "testing", "e2e"})
_TEST_FILE = re.compile(
    r"^(test_.*\.py|.*_test\.py|.*\.(test|spec)\.(c|m)?(j|t)sx?|.*_test\.go|.*_spec\.rb|tests?\.py)$"
)
RUNNER_CONFIG_FILES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "setup.py",
        "noxfile.py",
        "package.json",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        ".noderc",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".babelrc",
        "tsconfig.json",
        "Makefile",
        "GNUmakefile",
        "makefile",
        "Cargo.toml",
        "go.mod",
        "go.sum",
        ".pythonrc",
        ".pythonstartup",
        ".coveragerc",
    }
)
_RUNNER_CONFIG_PATTERN = re.compile(
    r"^(\.mocharc(\..*)?|(jest|vitest|vite|babel|playwright|karma|ava)\.config\..*|\.(jest|vitest)rc(\..*)?)$"
)
HOME_CONFIG_DIRS = frozenset({".config", ".local", ".npm", ".node_modules", ".ipython", ".pip"})
SHADOW_PACKAGES = frozenset(
    {"pytest", "_pytest", "pluggy", "py", "iniconfig", "unittest", "xdist", "node_modules"}
)
SHADOW_FILES = frozenset({"sitecustomize.py", "usercustomize.py", "pytest.py", "py.py", "pluggy.py"})
_STDLIB = frozenset(sys.stdlib_module_names)
GRADER_DIRS = frozenset({".oracle", ".harbor", ".verdict"})
REWARD_FILES = frozenset({"reward.txt", "reward.json"})


def _shadows_stdlib(parts: tuple[str, ...]) -> bool:
    """A module or package at the root (or ``src/``) named like a standard-library module."""
    top = parts[1:] if parts[0] == "src" and len(parts) > 1 else parts
    if not top[-1].endswith(".py"):
        return False
    return top[0][:-3] in _STDLIB if len(top) == 1 else top[0] in _STDLIB


def classify_path(
    path: str, *, hidden: frozenset[str] = frozenset(), hidden_dirs: frozenset[str] = frozenset()
) -> PathClass:
    """The class of ``path`` (see the module docstring); ``hidden`` are the task's hidden files and
    ``hidden_dirs`` the folders they live in."""
    parts = PurePosixPath(path).parts
    name = parts[-1]
    folders = parts[:-1]
    if path in hidden or any("/".join(parts[:i]) in hidden for i in range(1, len(parts))):
        return PathClass.GRADER
    if parts[0] in GRADER_DIRS or parts[0].startswith(".verdict") or name in REWARD_FILES:
        return PathClass.GRADER
    if parts[:2] == ("logs", "verifier"):  # Harbor reads /logs/verifier/reward.*
        return PathClass.GRADER
    if name.endswith(".pth") or name in SHADOW_FILES or any(p in SHADOW_PACKAGES for p in parts[:-1]):
        return PathClass.SHADOW
    if name in SHADOW_PACKAGES or _shadows_stdlib(parts):
        return PathClass.SHADOW
    if name in RUNNER_CONFIG_FILES or _RUNNER_CONFIG_PATTERN.match(name) or parts[0] in HOME_CONFIG_DIRS:
        return PathClass.RUNNER_CONFIG
    if path in hidden_dirs:  # a file where the hidden tests' folder must go
        return PathClass.TEST
    if any(p in TEST_DIRS for p in folders) or _TEST_FILE.match(name):
        return PathClass.TEST
    if any("/".join(parts[:i]) in hidden_dirs for i in range(1, len(parts))):
        return PathClass.TEST
    return PathClass.SOLUTION


def hidden_dirs_of(task: Task) -> frozenset[str]:
    """The folders the task's hidden files live in (where its tests are collected from), root excluded."""
    return frozenset(str(PurePosixPath(p).parent) for p in task.hidden if "/" in p)


class PathRules:
    """``classify_path`` bound to one task, so callers ask ``rules.classify(path)``."""

    def __init__(self, task: Task) -> None:
        self.hidden = frozenset(task.hidden)
        self.hidden_dirs = hidden_dirs_of(task)

    def classify(self, path: str) -> PathClass:
        return classify_path(path, hidden=self.hidden, hidden_dirs=self.hidden_dirs)

    def is_solution(self, path: str) -> bool:
        return self.classify(path) is PathClass.SOLUTION


def protected_paths(task: Task) -> tuple[str, ...]:
    """The task's workspace files the agent may read but not change: everything off the solution surface
    (existing tests, runner configuration, graders)."""
    rules = PathRules(task)
    return tuple(p for p in task.workspace if not rules.is_solution(p))
