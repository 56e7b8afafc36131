"""Import layering, checked by walking the source with ``ast`` (imports under TYPE_CHECKING are skipped).

- pure modules (adapter bookkeeping, serving config, the guard's rules, the tiny model's recipe and corpus)
  import nothing from ray, vllm, httpx, serve/ or jobs/;
- environments/ never imports actors/, serve/ or jobs/; actors/ never imports serve/ or jobs/.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("actors", "serve", "jobs", "environments", "benchmarks")
PURE_MODULES = (
    "actors/grpo/advantages.py",
    "actors/grpo/backoff.py",
    "actors/grpo/groups.py",
    "actors/grpo/samples.py",
    "actors/grpo/staleness.py",
    "actors/serving/adapters.py",
    "actors/serving/config.py",
    "actors/errors.py",
    "actors/protocols.py",
    "environments/tiny_model/recipe.py",
    "environments/tiny_model/corpus.py",
)
HEAVY = ("ray", "vllm", "httpx", "torch", "transformers", "serve", "jobs")
FORBIDDEN = {"environments": ("actors", "serve", "jobs"), "actors": ("serve", "jobs"), "serve": ("jobs",)}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(child) for child in ast.walk(node))
    roots = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_modules_import_no_heavy_or_io_stack(module: str):
    assert not imported_roots(REPO / module) & set(HEAVY), module


def test_packages_respect_the_layering():
    offenders = []
    for package, banned in FORBIDDEN.items():
        for path in (REPO / package).rglob("*.py"):
            bad = imported_roots(path) & set(banned)
            if bad:
                offenders.append(f"{path.relative_to(REPO)} imports {sorted(bad)}")
    assert not offenders
