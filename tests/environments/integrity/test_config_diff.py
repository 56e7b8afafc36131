from __future__ import annotations

import json

from environments.integrity.config_diff import runner_part_changed

PYPROJECT = (
    b'[project]\nname = "textkit"\nversion = "0.3.0"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
)


def test_package_metadata_edits_are_not_runner_changes():
    bumped = PYPROJECT.replace(b'"0.3.0"', b'"0.3.1"')
    assert not runner_part_changed("pyproject.toml", PYPROJECT, bumped)
    old = {"name": "x", "version": "1.0.0", "scripts": {"test": "node --test"}}
    new = {**old, "version": "1.0.1", "description": "helpers"}
    assert not runner_part_changed("package.json", json.dumps(old).encode(), json.dumps(new).encode())


def test_runner_tables_scripts_and_unparsable_files_are_runner_changes():
    addopts = PYPROJECT + b'addopts = "--co"\n'
    assert runner_part_changed("pyproject.toml", PYPROJECT, addopts)
    assert runner_part_changed("pyproject.toml", PYPROJECT, PYPROJECT + b"[[[")
    old = {"name": "x", "scripts": {"test": "node --test"}}
    for new in ({**old, "scripts": {"test": "exit 0"}}, {**old, "type": "module"}, {**old, "jest": {}}):
        assert runner_part_changed("package.json", json.dumps(old).encode(), json.dumps(new).encode())
    assert runner_part_changed("tox.ini", b"[pytest]\n", b"[pytest]\n")  # any other runner file: all of it
