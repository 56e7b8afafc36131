"""The one list of harnesses: lookups, config checks, each harness's pieces agreeing with its tool
vocabulary, and a harness another package registers through the entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.harness_prompts import harness_tools
from environments.harnesses import registry
from environments.harnesses.registry import HarnessSpec, harness_names, harness_problem, harness_spec
from environments.harnesses.steps import Edit, Read, Shell, Write
from environments.harnesses.tools import ToolRole

STEPS = (
    Shell("ls", "a.py\n"),
    Read("a.py", "x = 1\n"),
    Write("b.py", "y = 2\n"),
    Edit("a.py", (("x = 1", "x = 2"),), "x = 1\n", "x = 2\n"),
)


def test_the_builtin_harnesses_are_registered_and_an_unknown_one_names_the_choices():
    assert harness_names() == ("pi", "opencode", "hermes")
    with pytest.raises(ValueError, match="harness='cursor': choose one of pi, opencode, hermes"):
        harness_spec("cursor")
    assert harness_problem(("pi", "hermes")) is None
    assert "choose from pi, opencode, hermes" in harness_problem(("pi", "cursor"))
    assert harness_problem(()) is not None


@pytest.mark.parametrize("name", ["pi", "opencode", "hermes"])
def test_each_harness_renders_demonstrations_with_the_tools_it_declares(name: str):
    spec = harness_spec(name)
    declared = {tool["function"]["name"] for tool in harness_tools(spec.name)}
    used = {call for step in STEPS for call, _, _ in spec.render_step(step)}
    assert used and used <= declared, (used, declared)
    assert spec.launcher().name == name
    message = spec.user_message("fix it")
    assert message["role"] == "user" and "fix it" in str(message["content"])


@pytest.mark.parametrize("name", ["pi", "opencode", "hermes"])
def test_each_harness_reads_back_the_calls_it_renders(name: str):
    spec = harness_spec(name)
    for step in STEPS:
        for call, args, _ in spec.render_step(step):
            back = spec.parse_call(call, args)
            assert type(back) is type(step), (call, back)
            assert getattr(back, "command", None) == getattr(step, "command", None)
    assert spec.parse_call("todo_write", {}) is None


@pytest.mark.parametrize("name", ["pi", "opencode", "hermes"])
def test_each_harness_writes_a_persons_config_under_its_home(name: str, tmp_path: Path):
    from environments.harnesses.personal import Endpoint

    edits = harness_spec(name).personal_config(tmp_path, {}, Endpoint("http://127.0.0.1:1/v1", "a-v1").spec())
    assert edits and all(path.is_relative_to(tmp_path) for path in edits)
    assert all("a-v1" in text for text in edits.values() if "model" in text)


def test_a_harness_registered_by_another_package_is_known_to_the_configs(monkeypatch: pytest.MonkeyPatch):
    import importlib.metadata

    from jobs.train import TrainJobConfig

    pi = harness_spec("pi")
    toy = HarnessSpec("toy", pi.launcher, pi.personal_config, pi.render_step, pi.user_message)

    class Point:
        name = "toy"

        def load(self) -> HarnessSpec:
            return toy

    real = importlib.metadata.entry_points

    def entry_points(group: str) -> list:  # only the harness group is faked (pydantic reads its own)
        return [Point()] if group == registry.ENTRY_POINTS else real(group=group)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    registry.registry.cache_clear()
    try:
        assert harness_names() == ("pi", "opencode", "hermes", "toy")
        assert TrainJobConfig(harnesses=("toy",)).harnesses == ("toy",)
    finally:
        monkeypatch.undo()
        registry.registry.cache_clear()
    with pytest.raises(ValueError, match="choose from pi, opencode, hermes"):
        TrainJobConfig(harnesses=("toy",))


@pytest.mark.parametrize("name", ["pi", "opencode", "hermes"])
def test_each_harness_gives_every_tool_it_declares_a_role_and_renders_steps_by_role(name: str):
    spec = harness_spec(name)
    declared = {tool["function"]["name"] for tool in harness_tools(spec.name)}
    assert declared <= set(spec.tool_roles), declared - set(spec.tool_roles)
    roles = {Shell: ToolRole.SHELL, Read: ToolRole.READ, Write: ToolRole.WRITE, Edit: ToolRole.EDIT}
    for step in STEPS:
        assert {spec.tool_roles[call] for call, _, _ in spec.render_step(step)} == {roles[type(step)]}
