"""The proxy's pure modules stay pure: no HTTP, Ray or server imports, directly or via serve's I/O modules.

(`tests/test_architecture.py` lists the repo's pure modules; these belong on that list too.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_architecture import HEAVY, imported_roots

SERVE = Path(__file__).resolve().parents[2] / "serve"
PURE = ("toolcalls.py", "sse.py", "record.py", "turn.py")
IO_MODULES = {"proxy", "app", "__main__"}


def _relative_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level > 0
    }


@pytest.mark.parametrize("name", PURE)
def test_pure_proxy_modules_import_no_io(name: str):
    path = SERVE / name
    assert not imported_roots(path) & (set(HEAVY) | {"starlette", "fastapi", "uvicorn"}), name
    assert not _relative_modules(path) & IO_MODULES, name


def test_only_app_calls_serve_deployment():
    callers = [p.name for p in SERVE.rglob("*.py") if "serve.deployment(" in p.read_text()]
    assert callers == ["app.py"]
