"""Tool calls assembled from streamed deltas, per (choice, index)."""

from __future__ import annotations

from serve.toolcalls import ToolCall, ToolCallAssembler, assemble


def test_standard_deltas_assemble_into_one_call():
    calls = assemble(
        [
            (
                0,
                [{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": ""}}],
            ),
            (0, [{"index": 0, "function": {"arguments": '{"command": '}}]),
            (0, [{"index": 0, "function": {"arguments": '"ls"}'}}]),
        ]
    )
    assert calls == {0: [ToolCall(0, 0, "c1", "bash", '{"command": "ls"}')]}


def test_repeated_id_and_name_are_ignored():
    delta = {"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    calls = assemble([(0, [delta]), (0, [{**delta, "function": {"name": "bash", "arguments": ""}}])])
    assert calls[0] == [ToolCall(0, 0, "c1", "bash", "{}")]


def test_missing_id_gets_a_deterministic_one_and_name_pieces_join():
    calls = assemble(
        [(0, [{"index": 1, "function": {"name": "ba"}}]), (0, [{"index": 1, "function": {"name": "sh"}}])]
    )
    assert calls[0] == [ToolCall(0, 1, "call_0_1", "bash", "")]


def test_a_longer_repeat_of_the_name_replaces_it():
    calls = assemble(
        [(0, [{"index": 0, "function": {"name": "ba"}}]), (0, [{"index": 0, "function": {"name": "bash"}}])]
    )
    assert calls[0][0].name == "bash"


def test_calls_are_kept_apart_per_choice_and_index_and_ordered_by_index():
    calls = assemble(
        [
            (0, [{"index": 1, "id": "b", "function": {"name": "read", "arguments": "{}"}}]),
            (1, [{"index": 0, "id": "x", "function": {"name": "write", "arguments": "{}"}}]),
            (0, [{"index": 0, "id": "a", "function": {"name": "bash", "arguments": "{}"}}]),
        ]
    )
    assert [c.id for c in calls[0]] == ["a", "b"]
    assert [c.id for c in calls[1]] == ["x"]


def test_deltas_without_index_follow_the_id_or_the_last_call():
    calls = assemble(
        [
            (0, [{"id": "a", "function": {"name": "bash", "arguments": "{"}}]),
            (0, [{"function": {"arguments": "}"}}]),
            (0, [{"id": "b", "function": {"name": "read", "arguments": "{}"}}]),
            (0, [{"id": "a", "function": {"arguments": ""}}]),
        ]
    )
    assert [(c.id, c.name, c.arguments) for c in calls[0]] == [("a", "bash", "{}"), ("b", "read", "{}")]


def test_garbage_deltas_are_ignored_and_bounds_set_overflow():
    assembler = ToolCallAssembler(max_calls=2, max_chars=10)
    assembler.feed(0, "nonsense")
    assembler.feed(0, [None, 3, {"index": 0, "function": "x"}])
    assert [c.name for c in assembler.calls(0)] == [""]
    assembler.feed(0, [{"index": 0, "function": {"arguments": "x" * 11}}])
    assert assembler.overflow
    assembler = ToolCallAssembler(max_calls=1)
    assembler.feed(0, [{"index": 0}, {"index": 1}])
    assert assembler.overflow and len(assembler.calls(0)) == 1


def test_as_message_is_the_openai_shape():
    assert ToolCall(0, 0, "c", "bash", "{}").as_message() == {
        "id": "c",
        "type": "function",
        "function": {"name": "bash", "arguments": "{}"},
    }
