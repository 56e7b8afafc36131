from __future__ import annotations

import json

import pytest

from environments.tasks.jsonl import dump_jsonl, iter_jsonl, load_jsonl
from environments.tasks.layout import TaskFormatError
from tests.environments.tasks.taskutil import answer_task, repo_task


def test_dump_then_load_round_trips_text_and_binary_files(tmp_path):
    tasks = [repo_task(workspace={"calc.py": b"x", "logo.png": b"\x89PNG\xff\x00"}), answer_task()]
    path = dump_jsonl(tasks, tmp_path / "set.jsonl")
    assert load_jsonl(path) == tasks
    record = json.loads(path.read_text().splitlines()[0])
    assert record["workspace"]["logo.png"] == {"base64": "iVBOR/8A"}


def test_a_bad_line_is_reported_and_the_others_still_load(tmp_path):
    path = dump_jsonl([repo_task(), answer_task()], tmp_path / "set.jsonl")
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{broken", json.dumps({"id": "x"}), "", lines[1]]) + "\n")
    items = list(iter_jsonl(path))
    assert [type(i).__name__ for i in items] == ["Task", "TaskFormatError", "TaskFormatError", "Task"]
    assert ":2: not valid JSON" in str(items[1])
    assert "'instruction' must be a string" in str(items[2])
    with pytest.raises(TaskFormatError):
        load_jsonl(path)
