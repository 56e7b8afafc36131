"""Each package's ``__all__`` is sorted and names only what exists."""

from __future__ import annotations

import importlib

import pytest

MODULES = (
    "actors",
    "actors.grpo",
    "actors.serving",
    "actors.sft",
    "environments.harness_prompts",
    "environments.harnesses",
    "environments.sandboxes",
    "environments.tasks",
    "environments.tiny_model",
    "environments.traces",
    "serve",
)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_resolves(name: str):
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported), name
    missing = [attr for attr in exported if not hasattr(module, attr)]
    assert not missing, f"{name}.__all__ names missing attributes {missing}"
