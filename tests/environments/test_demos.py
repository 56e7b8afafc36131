"""Demonstration traces: deterministic, in each harness's declared tool vocabulary, and correct when replayed.

The replay tests apply a demo's calls to a copy of the task's workspace (shell commands really run, with
the subprocess runner) and hand the result to the task's oracle, hidden tests included.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from environments import demos as demos_module
from environments.core.runner import SubprocessRunner
from environments.core.types import CommandOracle, Kind, Reference, Split, Task
from environments.demos import WORKSPACE, build_demos, demo_for, write_demos
from environments.harness_prompts import HARNESSES, harness_request, harness_tools
from environments.tasks.layout import write_files
from environments.tasks.oracle import Verdict, verify
from environments.traces.types import Conversation, Skipped

REPO = Path(__file__).resolve().parents[2]


@cache
def _tasks() -> tuple[Task, ...]:
    from environments.tasks.shipped import shipped_tasks

    return tuple(shipped_tasks())


@cache
def _demos(harness: str) -> tuple[Conversation, ...]:
    return tuple(build_demos(_tasks(), harness)[0])


def _calls(demo: Conversation) -> list[dict[str, Any]]:
    return [call for m in demo.messages if m["role"] == "assistant" for call in m.get("tool_calls") or []]


def test_the_same_tasks_give_byte_identical_files_in_another_process(tmp_path: Path):
    train = [t for t in _tasks() if t.split is Split.TRAIN]
    summary = write_demos(tmp_path / "here", ("pi",), "train", tasks=train)
    again = write_demos(tmp_path / "again", ("pi",), "train", tasks=train)
    assert summary == again
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    cli = [
        sys.executable,
        "-m",
        "environments.demos",
        "--out",
        str(tmp_path / "cli"),
        "--harness",
        "pi",
    ]
    done = subprocess.run(cli, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    name = "pi-train.jsonl"
    here = (tmp_path / "here" / name).read_bytes()
    assert here == (tmp_path / "again" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    assert json.loads(done.stdout.strip().splitlines()[-1]) == summary
    assert summary["harnesses"]["pi"]["demos"] == len(here.splitlines())
    record = json.loads(here.splitlines()[0])
    assert set(record) == {"messages", "tools", "harness", "meta"}
    assert set(record["meta"]) >= {"task_id", "kind", "tool_calls"}


def test_written_demos_read_back_through_the_trace_readers_as_valid_conversations(tmp_path: Path):
    from environments.traces import conversation_problem, read_traces

    tasks = [t for t in _tasks() if t.split is Split.EVAL]
    summary = write_demos(tmp_path, HARNESSES, "eval", tasks=tasks)
    for harness in HARNESSES:
        conversations, skipped = read_traces(tmp_path / f"{harness}-eval.jsonl")
        assert not skipped
        assert len(conversations) == summary["harnesses"][harness]["demos"]
        assert all(conversation_problem(c) is None for c in conversations)
        assert {c.harness for c in conversations} == {harness}


@pytest.mark.parametrize("harness", HARNESSES)
def test_system_prompt_tools_and_user_message_are_the_harness_own(harness: str):
    captured = harness_request(harness)
    for demo in _demos(harness):
        assert demo.messages[0] == captured["messages"][0]
        assert list(demo.tools) == harness_tools(harness)
        user = demo.messages[1]
        assert user["role"] == "user"
        assert type(user["content"]) is type(captured["messages"][1]["content"])
    assert f"working directory: {WORKSPACE}" in captured["messages"][0]["content"].lower()


def _check_args(schema: dict[str, Any], value: Any, where: str) -> None:
    if schema.get("type") == "object":
        assert isinstance(value, dict), where
        assert set(schema.get("required", ())) <= set(value), (
            f"{where}: missing required {schema['required']}"
        )
        assert set(value) <= set(schema["properties"]), f"{where}: undeclared {set(value)}"
        for key, item in value.items():
            _check_args(schema["properties"][key], item, f"{where}.{key}")
    elif schema.get("type") == "array":
        assert isinstance(value, list), where
        for item in value:
            _check_args(schema["items"], item, where + "[]")
    elif schema.get("type") == "string":
        assert isinstance(value, str), where
        assert "enum" not in schema or value in schema["enum"], where


@pytest.mark.parametrize("harness", HARNESSES)
def test_every_call_names_a_declared_tool_with_its_declared_arguments(harness: str):
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in harness_tools(harness)}
    used = set()
    for demo in _demos(harness):
        for call in _calls(demo):
            name = call["function"]["name"]
            assert name in schemas, f"{demo.source}: {name} is not declared by {harness}"
            args = json.loads(call["function"]["arguments"])
            _check_args(schemas[name], args, f"{demo.source}:{name}")
            if name == "patch":  # hermes: replace mode needs what its description marks REQUIRED
                assert args["mode"] == "replace" and {"path", "old_string", "new_string"} <= set(args)
            assert len(call["function"]["arguments"]) < 1000, f"{demo.source}: arguments too long"
            used.add(name)
    expected = {"pi": {"bash", "read", "edit", "write"}, "opencode": {"bash", "read", "edit", "write"}}
    assert used == expected.get(harness, {"terminal", "read_file", "patch", "write_file"})


@pytest.mark.parametrize("harness", HARNESSES)
def test_every_tool_message_answers_the_call_just_before_it(harness: str):
    for demo in _demos(harness):
        messages = demo.messages
        assert messages[-1]["role"] == "assistant" and messages[-1]["content"]
        assert "tool_calls" not in messages[-1]
        pending: list[str] = []
        seen: set[str] = set()
        for message in messages[2:]:
            if message["role"] == "assistant":
                assert not pending, f"{demo.source}: call {pending} left unanswered"
                pending = [c["id"] for c in message.get("tool_calls") or []]
                assert not seen & set(pending), f"{demo.source}: reused call id"
                seen |= set(pending)
            else:
                assert message["role"] == "tool" and message["tool_call_id"] == pending.pop(0)
                assert isinstance(message["content"], str)
                if harness == "hermes":
                    assert isinstance(json.loads(message["content"]), dict)
        assert not pending
        assert demo.meta["tool_calls"] == len(seen) == len(_calls(demo))


@pytest.mark.parametrize("harness", HARNESSES)
def test_tool_call_counts_range_from_one_to_several(harness: str):
    counts = [d.meta["tool_calls"] for d in _demos(harness)]
    assert counts.count(1) >= len(counts) // 5
    assert sum(1 for c in counts if c >= 2) >= len(counts) // 2
    assert max(counts) <= 8
    for kind in Kind:
        per_kind = {d.meta["tool_calls"] for d in _demos(harness) if d.meta["kind"] == kind.value}
        assert len(per_kind) >= 2, kind


def test_a_task_with_a_large_change_is_skipped_with_its_reason(monkeypatch: pytest.MonkeyPatch):
    task = next(t for t in _tasks() if t.kind is Kind.EXTEND)
    monkeypatch.setattr(demos_module, "MAX_CHANGE_CHARS", 10)
    skipped = demo_for(task, "pi")
    assert isinstance(skipped, Skipped) and skipped.reason == "change_too_large"


def test_a_file_the_reference_adds_is_written_whole():
    task = next(t for t in _tasks() if t.kind is Kind.REPAIR and t.split is Split.TRAIN)
    added = {**task.reference.files, "NOTES.md": b"Fixed.\n"}
    demo = demo_for(dataclasses.replace(task, reference=Reference(files=added)), "opencode")
    assert isinstance(demo, Conversation)
    writes = [
        json.loads(c["function"]["arguments"]) for c in _calls(demo) if c["function"]["name"] == "write"
    ]
    assert writes == [{"content": "Fixed.\n", "filePath": f"{WORKSPACE}/NOTES.md"}]


def test_calls_rendered_by_the_qwen3_template_parse_back_as_the_hermes_parser_reads_them():
    import jinja2

    from environments.tiny_model.recipe import chat_template

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda value, **kw: json.dumps(value, ensure_ascii=False)
    template = env.from_string(chat_template())
    for harness in HARNESSES:
        demo = max(_demos(harness), key=lambda d: d.meta["tool_calls"])
        text = template.render(messages=list(demo.messages), tools=list(demo.tools))
        turns = re.findall(r"<\|im_start\|>assistant\n(.*?)<\|im_end\|>", text, re.DOTALL)
        blocks = [b for turn in turns for b in re.findall(r"<tool_call>(.*?)</tool_call>", turn, re.DOTALL)]
        parsed = [json.loads(block.strip()) for block in blocks]
        wanted = [
            {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
            for c in _calls(demo)
        ]
        assert parsed == wanted


# ---------------------------------------------------------------- replay against the oracle


def _local(path: str, root: Path) -> Path:
    if path.startswith(WORKSPACE + "/"):
        path = path[len(WORKSPACE) + 1 :]
    assert not Path(path).is_absolute()
    return root / path


def _replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{path.name}: old text is not unique"
    path.write_text(text.replace(old, new, 1))


def _replay(demo: Conversation, root: Path, *, run_shell: bool = True) -> None:
    """Carry out every call of ``demo`` in ``root``; shell commands really run and must print what the
    demo shows (a test run's summary, which carries timings, must only report the same count passed)."""
    runner = SubprocessRunner()
    results = {m["tool_call_id"]: m["content"] for m in demo.messages if m["role"] == "tool"}
    for call in _calls(demo):
        name, args = call["function"]["name"], json.loads(call["function"]["arguments"])
        shown = results[call["id"]]
        if name in ("bash", "terminal") and not run_shell:
            continue
        if name in ("bash", "terminal"):
            run = runner.run(args["command"], root, timeout_s=60, memory_mb=2048)
            assert run.ok, run.output_tail
            if args["command"].startswith("python -m pytest"):
                passed = re.findall(r"(\d+) passed", run.output_tail)
                assert passed and passed == re.findall(r"(\d+) passed", shown)
            elif not args["command"].startswith("node --test"):
                if demo.harness == "hermes":
                    expected, got = json.loads(shown)["output"], run.output_tail.rstrip()
                else:
                    expected, got = shown.replace("(no output)", ""), run.output_tail
                assert got == expected, args["command"]
        elif name in ("read", "read_file"):
            text = _local(args.get("path") or args["filePath"], root).read_text()
            if demo.harness == "pi":
                assert shown == text
            else:  # numbered lines: "3: text" (opencode) or "3|text" (hermes, inside a JSON object)
                body = json.loads(shown)["content"] if demo.harness == "hermes" else shown
                sep = "|" if demo.harness == "hermes" else ": "
                for no, line in enumerate(text.splitlines(), 1):
                    assert f"{no}{sep}{line}\n" in body + "\n"
        elif name in ("write", "write_file"):
            target = _local(args.get("path") or args["filePath"], root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(args["content"])
        elif name == "edit" and "edits" in args:  # pi: every edit matches the original file
            target = _local(args["path"], root)
            original = target.read_text()
            for edit in args["edits"]:
                assert original.count(edit["oldText"]) == 1
            for edit in args["edits"]:
                _replace_once(target, edit["oldText"], edit["newText"])
        elif name == "edit":
            _replace_once(_local(args["filePath"], root), args["oldString"], args["newString"])
        elif name == "patch":
            _replace_once(_local(args["path"], root), args["old_string"], args["new_string"])
        else:
            raise AssertionError(f"replay does not know {name}")


def _most_calls(harness: str, predicate) -> Conversation:
    by_id = {t.id: t for t in _tasks()}
    chosen = [d for d in _demos(harness) if predicate(by_id[d.meta["task_id"]])]
    return max(chosen, key=lambda d: (d.meta["tool_calls"], d.meta["task_id"]))


def _python_change(task: Task) -> bool:
    return (
        task.kind in (Kind.REPAIR, Kind.BUILD, Kind.EXTEND)
        and isinstance(task.oracle, CommandOracle)
        and "package.json" not in task.workspace
    )


@pytest.mark.parametrize("harness", HARNESSES)
def test_every_repo_demo_leaves_the_reference_files(harness: str, tmp_path: Path):
    """Writes, edits and patches of every repo demo (train and eval) give the reference's bytes; a qa
    answer denotes the reference's value."""
    by_id = {t.id: t for t in _tasks()}
    checked = 0
    for demo in _demos(harness):
        task = by_id[demo.meta["task_id"]]
        if task.kind is Kind.ANALYSIS:
            continue
        root = tmp_path / task.id
        write_files(root, task.workspace)
        _replay(demo, root, run_shell=False)
        for path, data in task.reference.files.items():
            got = (root / path).read_text()
            if task.kind is Kind.QA:
                assert ast.literal_eval(got) == _literal(data.decode()), task.id
            else:
                assert got == data.decode(), task.id
        checked += 1
    assert checked >= 120


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return json.loads(text)


CASES = [
    ("pi", "analysis"),
    ("hermes", "analysis"),
    ("pi", "change"),
    ("opencode", "change"),
    ("hermes", "change"),
    ("opencode", "qa"),
    ("pi", "qa-js"),
]


@pytest.mark.parametrize(("harness", "case"), CASES)
def test_replaying_a_demo_gives_a_workspace_the_oracle_accepts(harness: str, case: str, tmp_path: Path):
    predicate = {
        "analysis": lambda t: t.kind is Kind.ANALYSIS,
        "change": _python_change,
        "qa": lambda t: t.kind is Kind.QA and "package.json" not in t.workspace,
        "qa-js": lambda t: t.kind is Kind.QA and "package.json" in t.workspace,
    }[case]
    demo = _most_calls(harness, predicate)
    assert demo.meta["tool_calls"] >= 2
    task = next(t for t in _tasks() if t.id == demo.meta["task_id"])
    produced = tmp_path / "workspace"
    produced.mkdir()
    write_files(produced, task.workspace)
    start = verify(task, produced, tmp_path / "before", SubprocessRunner())
    assert start.verdict is Verdict.FAIL, "the untouched workspace must not already pass"
    _replay(demo, produced)
    judged = verify(task, produced, tmp_path / "scratch", SubprocessRunner())
    assert judged.verdict is Verdict.PASS, judged.reason


# ---------------------------------------------------------------- the learning-check family


@cache
def _row_demos(harness: str) -> tuple[Conversation, ...]:
    from environments.tasks.shipped import task_set

    demos, skipped = build_demos(task_set("row-count"), harness)
    assert skipped == []
    return tuple(demos)


@pytest.mark.parametrize("harness", HARNESSES)
def test_row_count_demos_mostly_look_first_and_solve_with_the_one_command(harness: str):
    """Demos take 1-5 calls (one is enough), each length occurs, and the solving command runs once: most
    look first (RL has calls to drop), some go straight to it (the short path the SFT start can sample)."""
    from environments.tasks.shipped.row_count import ROW_COUNT_COMMAND

    demos = _row_demos(harness)
    counts = {d.meta["tool_calls"] for d in demos}
    assert counts == {1, 2, 3, 4, 5}
    first = []
    for demo in demos:
        commands = [json.loads(c["function"]["arguments"]).get("command") for c in _calls(demo)]
        assert commands.count(ROW_COUNT_COMMAND) == 1
        first.append(commands[0] == ROW_COUNT_COMMAND)
        assert first[-1] == (demo.meta["tool_calls"] == 1)
    assert 0.1 < sum(first) / len(first) < 0.35


@pytest.mark.parametrize("harness", HARNESSES)
def test_replaying_a_row_count_demo_gives_a_workspace_the_oracle_accepts(harness: str, tmp_path: Path):
    from environments.tasks.shipped import task_set

    demo = max(_row_demos(harness), key=lambda d: (d.meta["tool_calls"], d.meta["task_id"]))
    task = next(t for t in task_set("row-count") if t.id == demo.meta["task_id"])
    produced = tmp_path / "workspace"
    write_files(produced, task.workspace)
    _replay(demo, produced)  # every shown output is what the command really prints
    judged = verify(task, produced, tmp_path / "scratch", SubprocessRunner())
    assert judged.verdict is Verdict.PASS, judged.reason


@cache
def _lookup_demos(harness: str) -> tuple[Conversation, ...]:
    from environments.tasks.shipped import task_set

    demos, skipped = build_demos(task_set("record-lookup"), harness)
    assert skipped == []
    return tuple(demos)


@pytest.mark.parametrize("harness", HARNESSES)
def test_record_lookup_demos_read_the_record_before_they_write_what_it_holds(harness: str):
    """Demos take 2-6 calls (two are enough), each length occurs; every one greps for the asked code and
    its answer is the value that grep showed, never the reference's blind pipeline."""
    from environments.tasks.shipped import task_set
    from environments.tasks.shipped.record_lookup import asked_code

    tasks = {t.id: t for t in task_set("record-lookup")}
    demos = _lookup_demos(harness)
    assert {d.meta["tool_calls"] for d in demos} == {2, 3, 4, 5, 6}
    for demo in demos:
        task = tasks[demo.meta["task_id"]]
        shown = [json.dumps(m["content"]) for m in demo.messages if m["role"] == "tool"]
        code = asked_code(task)
        calls = json.dumps(_calls(demo))
        assert calls.count(f"grep {code} data.csv") == 1 and "cut -d" not in calls
        assert any(f"{code},{task.oracle.expected}" in text for text in shown)  # its line, as grep printed it


@pytest.mark.parametrize("harness", HARNESSES)
def test_replaying_a_record_lookup_demo_gives_a_workspace_the_oracle_accepts(harness: str, tmp_path: Path):
    from environments.tasks.shipped import task_set

    demo = max(_lookup_demos(harness), key=lambda d: (d.meta["tool_calls"], d.meta["task_id"]))
    task = next(t for t in task_set("record-lookup") if t.id == demo.meta["task_id"])
    produced = tmp_path / "workspace"
    write_files(produced, task.workspace)
    _replay(demo, produced)
    judged = verify(task, produced, tmp_path / "scratch", SubprocessRunner())
    assert judged.verdict is Verdict.PASS, judged.reason


def test_the_command_line_writes_a_named_task_sets_demonstrations_with_extra_tasks(tmp_path: Path):
    from environments.demos import main

    assert main(["--out", str(tmp_path), "--harness", "pi", "--tasks", "row-count", "--extra", "2"]) == 0
    metas = [json.loads(line)["meta"] for line in (tmp_path / "pi-train.jsonl").read_text().splitlines()]
    assert len(metas) == 48 + 2 and {m["split"] for m in metas} == {"train"}


def test_extra_tasks_for_a_set_that_generates_none_are_refused_with_the_reason():
    from environments.demos import demo_tasks
    from environments.errors import UsageError

    with pytest.raises(UsageError, match="only the row-count and record-lookup sets"):
        demo_tasks("shipped", 3)
