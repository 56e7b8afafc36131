"""The task code under ``environments/tasks/shipped/code/`` is code: every Python file compiles (and each
unit's defines its function once its imports are in place), every JS file passes ``node --check``, and
every file there ends up in some shipped task (no orphans)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from environments.tasks.shipped import TASK_SETS, task_set
from environments.tasks.shipped.repo_tasks import EXPECTED_SLOT, UNITS
from environments.tasks.shipped.units import CODE, Lang

CODE_FILES = sorted(p for p in CODE.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def test_the_code_folder_holds_python_and_js_files_only():
    assert CODE_FILES, f"no task code under {CODE}"
    assert {p.suffix for p in CODE_FILES} == {".py", ".js"}


@pytest.mark.parametrize("path", [p for p in CODE_FILES if p.suffix == ".py"], ids=lambda p: p.name)
def test_every_python_file_compiles(path: Path):
    compile(path.read_text(encoding="utf-8"), str(path), "exec")


@pytest.mark.parametrize("unit", [u for u in UNITS if u.lang is Lang.PY], ids=lambda u: u.name)
def test_each_python_unit_defines_its_function_with_its_imports(unit):
    for source in (unit.source, unit.feature.source):
        namespace: dict[str, object] = {}
        exec("\n".join((*unit.imports, source)), namespace)  # noqa: S102 - our own task code
        assert callable(namespace.get(unit.name)), unit.name


def test_every_js_file_passes_node_check():
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: install Node.js 20 to check the JS task code (CI has it)")
    js = [p for p in CODE_FILES if p.suffix == ".js"]
    assert js
    failed = {}
    for path in js:
        done = subprocess.run([node, "--check", str(path)], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            failed[path.relative_to(CODE).as_posix()] = done.stderr[-1000:]
    assert not failed


def test_every_code_file_ends_up_in_some_task():
    """Each file's text (around the qa checker's expected-value slot) occurs in a task's files."""
    texts = []
    for name in TASK_SETS:
        for task in task_set(name):
            for files in (task.workspace, task.hidden, task.reference.files):
                texts += [data.decode("utf-8", errors="replace") for data in files.values()]
    everything = "\0".join(texts)
    orphans = []
    for path in CODE_FILES:
        pieces = [p.strip("\n") for p in path.read_text(encoding="utf-8").split(EXPECTED_SLOT)]
        if not all(piece in everything for piece in pieces if piece):
            orphans.append(path.relative_to(CODE).as_posix())
    assert not orphans, f"task code no task uses: {orphans}"
