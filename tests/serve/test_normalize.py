"""Normalisation of pi, opencode and hermes calls into one shape."""

from __future__ import annotations

import dataclasses
import importlib.metadata

import pytest

from environments.harnesses import registry
from environments.harnesses.tools import OTHER_AGENTS, ToolRole
from serve.normalize import Edit, ToolKind, normalize, parse_v4a


def test_the_three_harnesses_shell_read_write_edit_map_to_one_shape() -> None:
    assert normalize("bash", {"command": "ls"}).command == "ls"
    assert normalize("terminal", {"command": "ls", "background": True}).kind is ToolKind.SHELL
    assert normalize("read", {"path": "a"}).reads == normalize("read", {"filePath": "a"}).reads == ("a",)
    assert normalize("read_file", {"path": "a"}).reads == ("a",)
    assert normalize("write_file", {"path": "a", "content": "x"}).writes == (("a", "x"),)
    assert normalize("write", {"filePath": "a", "content": "x"}).writes == (("a", "x"),)
    pi = normalize("edit", {"path": "a", "edits": [{"oldText": "o", "newText": "n"}]})
    oc = normalize("edit", {"filePath": "a", "oldString": "o", "newString": "n"})
    hm = normalize("patch", {"mode": "replace", "path": "a", "old_string": "o", "new_string": "n"})
    assert pi.edits == oc.edits == hm.edits == (Edit("a", "o", "n"),)


def test_v4a_patches_give_adds_edits_and_deletes() -> None:
    adds, edits, deletes = parse_v4a(
        "*** Begin Patch\n*** Add File: n.py\n+x = 1\n*** Update File: a.py\n@@\n ctx\n-old\n+new\n"
        "*** Delete File: t.py\n*** End Patch"
    )
    assert adds == (("n.py", "x = 1"),)
    assert edits == (Edit("a.py", "ctx\nold", "ctx\nnew"),)
    assert deletes == ("t.py",)


def test_missing_or_non_object_arguments_are_not_understood() -> None:
    assert not normalize("bash", None).understood
    assert not normalize("bash", {"cmd2": 1}).understood
    assert not normalize("edit", {"path": "a"}).understood
    assert normalize("mystery_tool", {"deep": {"u": "see https://x.example/a"}}).urls == (
        "https://x.example/a",
    )


KIND_OF_ROLE = {
    ToolRole.SHELL: ToolKind.SHELL,
    ToolRole.SHELL_INPUT: ToolKind.INERT,  # without `action: write`, nothing reaches the shell
    ToolRole.CODE: ToolKind.CODE,
    ToolRole.READ: ToolKind.READ,
    ToolRole.WRITE: ToolKind.WRITE,
    ToolRole.EDIT: ToolKind.EDIT,
    ToolRole.SEARCH: ToolKind.SEARCH,
    ToolRole.SESSION_SEARCH: ToolKind.SEARCH,
    ToolRole.FETCH: ToolKind.FETCH,
    ToolRole.WEB_SEARCH: ToolKind.WEB_SEARCH,
    ToolRole.DELEGATE: ToolKind.INERT,
    ToolRole.INERT: ToolKind.INERT,
}


def test_the_normalizers_roles_are_the_ones_the_registry_declares() -> None:
    declared = {name: role for spec in registry.registry().values() for name, role in spec.tool_roles.items()}
    assert registry.tool_roles() == {**OTHER_AGENTS, **declared}
    assert {"bash", "terminal", "read_file", "patch", "apply_patch", "process"} <= set(declared)
    for name, role in registry.tool_roles().items():
        assert normalize(name, {}).kind is KIND_OF_ROLE[role], name
        assert normalize(name.upper(), {}).kind is KIND_OF_ROLE[role], name
    for name in ("mystery_tool", "browser_click"):
        assert normalize(name, {}).kind is ToolKind.OTHER


def _register(monkeypatch: pytest.MonkeyPatch, toy: registry.HarnessSpec) -> None:
    real = importlib.metadata.entry_points

    class Point:
        name = toy.name

        def load(self) -> registry.HarnessSpec:
            return toy

    def entry_points(group: str) -> list:  # only the harness group is faked
        return [Point()] if group == registry.ENTRY_POINTS else real(group=group)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    registry.registry.cache_clear()


def test_a_harness_registered_with_a_new_tool_gets_its_role_in_the_normalizer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pi = registry.harness_spec("pi")
    roles = {"run_it": ToolRole.SHELL, "peek": ToolRole.READ}
    toy = registry.HarnessSpec("toy", pi.launcher, pi.personal_config, pi.render_step, pi.user_message)
    toy = dataclasses.replace(toy, tool_roles=roles)
    assert normalize("run_it", {"command": "ls"}).kind is ToolKind.OTHER
    _register(monkeypatch, toy)
    try:
        assert normalize("run_it", {"command": "ls"}).command == "ls"
        assert normalize("peek", {"path": "a"}).reads == ("a",)
    finally:
        monkeypatch.undo()
        registry.registry.cache_clear()
    assert normalize("run_it", {"command": "ls"}).kind is ToolKind.OTHER


def test_a_harness_giving_a_known_tool_another_role_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    pi = registry.harness_spec("pi")
    toy = registry.HarnessSpec("toy", pi.launcher, pi.personal_config, pi.render_step, pi.user_message)
    _register(monkeypatch, dataclasses.replace(toy, tool_roles={"Bash": ToolRole.READ}))
    try:
        with pytest.raises(ValueError, match="harness 'toy': tool 'Bash' is read here and shell"):
            registry.registry()
    finally:
        monkeypatch.undo()
        registry.registry.cache_clear()
