"""Normalisation of pi, opencode and hermes calls into one shape."""

from __future__ import annotations

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
