"""Render a small repository (Python package or Node.js project) from its units.

``render_repo(units, leave_out=..., replace=..., hide_tests=...)`` gives the workspace files: sources,
a README, packaging, and visible tests; ``hidden_tests`` renders the tests the verifier adds. Python tests
run with pytest, JS tests with ``node --test``.
"""

from __future__ import annotations

import json

from environments.tasks.shipped.units import Lang, Unit

DESCRIPTIONS = {
    "textkit": "Text utilities for our publishing pipeline: slugs, truncation, word counts, casing.",
    "ledger": "Money helpers for the billing service. Amounts are integer cents everywhere.",
    "timeline": "Date and duration helpers for the scheduling service.",
    "graphkit": "Graph algorithms for the build orchestrator (dependency order, reachability).",
    "inventory": "Stock and pricing rules for the warehouse app.",
    "stats": "Dependency-free summary statistics for dashboards.",
    "configkit": "Parsing and merging of layered configuration.",
    "jsutils": "Shared helpers for our Node services (arrays, strings, dates).",
}


def module_path(unit: Unit) -> str:
    return f"src/{unit.module}.js" if unit.lang is Lang.JS else f"{unit.repo}/{unit.module}.py"


def _py_module(repo: str, module: str, units: list[Unit], sources: dict[str, str]) -> str:
    imports = sorted({imp for u in units for imp in u.imports})
    body = "\n".join(sources[u.name].strip("\n") + "\n\n" for u in units if u.name in sources).rstrip("\n")
    head = f'"""{module.capitalize()} helpers of {repo}."""\n\nfrom __future__ import annotations\n'
    if imports:
        head += "\n" + "\n".join(imports) + "\n"
    return head + ("\n\n" + body + "\n" if body else "")


def _js_module(units: list[Unit], sources: dict[str, str]) -> str:
    names = [u.name for u in units if u.name in sources]
    body = "\n".join(sources[n].strip("\n") + "\n" for n in names)
    return f'"use strict";\n\n{body}\nmodule.exports = {{ {", ".join(names)} }};\n'.replace("\n\n\n", "\n\n")


def py_test_file(units: list[Unit], cases: dict[str, tuple[str, ...]]) -> str:
    lines = []
    needs_pytest = any(c.startswith("raises:") for u in units for c in cases[u.name])
    if needs_pytest:
        lines.append("import pytest")
    lines += sorted({imp for u in units for imp in u.test_imports})
    lines += [f"from {u.repo}.{u.module} import {u.name}" for u in units]
    for u in units:
        for i, case in enumerate(cases[u.name], start=1):
            lines += ["", "", f"def test_{u.name}_{i}():"]
            if case.startswith("raises:"):
                _, error, expr = case.split(":", 2)
                lines += [f"    with pytest.raises({error}):", f"        {expr}"]
            else:
                lines.append(f"    assert {case}")
    return "\n".join(lines) + "\n"


def js_test_file(units: list[Unit], cases: dict[str, tuple[str, ...]], prefix: str = "") -> str:
    lines = [
        '"use strict";',
        'const test = require("node:test");',
        'const assert = require("node:assert/strict");',
    ]
    for u in units:
        lines.append(f'const {{ {u.name} }} = require("../src/{u.module}.js");')
    for u in units:
        for i, case in enumerate(cases[u.name], start=1):
            lines += ["", f'test("{prefix}{u.name} {i}", () => {{', f"  {case}", "});"]
    return "\n".join(lines) + "\n"


def render_repo(
    units: list[Unit], sources: dict[str, str], visible_cases: dict[str, tuple[str, ...]]
) -> dict[str, bytes]:
    """Workspace files for ``units`` (one repo) with the given function sources and visible test cases."""
    repo, lang = units[0].repo, units[0].lang
    files: dict[str, str] = {}
    modules = sorted({u.module for u in units})
    test_cmd = "node --test" if lang is Lang.JS else "python -m pytest -q"
    files["README.md"] = f"# {repo}\n\n{DESCRIPTIONS[repo]}\n\nRun the tests with `{test_cmd}`.\n"
    for module in modules:
        members = [u for u in units if u.module == module]
        with_tests = [u for u in members if visible_cases.get(u.name)]
        if lang is Lang.JS:
            files[f"src/{module}.js"] = _js_module(members, sources)
            if with_tests:
                files[f"test/{module}.test.js"] = js_test_file(with_tests, visible_cases)
        else:
            files[f"{repo}/{module}.py"] = _py_module(repo, module, members, sources)
            if with_tests:
                files[f"tests/test_{module}.py"] = py_test_file(with_tests, visible_cases)
    if lang is Lang.JS:
        package = {"name": repo, "version": "1.4.0", "private": True, "scripts": {"test": "node --test"}}
        files["package.json"] = json.dumps(package, indent=2) + "\n"
    else:
        files[f"{repo}/__init__.py"] = f'"""{DESCRIPTIONS[repo]}"""\n\n__version__ = "0.3.0"\n'
        files["pyproject.toml"] = (
            f'[project]\nname = "{repo}"\nversion = "0.3.0"\n'
            'requires-python = ">=3.10"\n\n[tool.pytest.ini_options]\n'
            'testpaths = ["tests"]\n'
        )
    return {path: text.encode() for path, text in sorted(files.items())}


def hidden_tests(unit: Unit, cases: tuple[str, ...]) -> dict[str, bytes]:
    """The verifier's extra test file for ``unit``."""
    if unit.lang is Lang.JS:
        text = js_test_file([unit], {unit.name: cases}, "hidden ")
        return {f"test/hidden_{unit.name}.test.js": text.encode()}
    return {f"tests/test_hidden_{unit.name}.py": py_test_file([unit], {unit.name: cases}).encode()}


def oracle_command(unit: Unit) -> str:
    return "node --test test/" if unit.lang is Lang.JS else "python -m pytest -q -p no:cacheprovider tests"
