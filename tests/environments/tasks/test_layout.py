from __future__ import annotations

import json

import pytest

from environments.tasks.layout import TaskFormatError, find_task_folders, read_task, write_task
from tests.environments.tasks.taskutil import answer_task, repo_task


@pytest.mark.parametrize("make", [repo_task, answer_task])
def test_write_then_read_gives_the_same_task(tmp_path, make):
    task = make(env={"TZ": "UTC"}, allowed_hosts=("pypi.org",))
    folder = write_task(task, tmp_path)
    assert folder == tmp_path / task.id
    assert read_task(folder) == task
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["task.json", "instruction.md", "workspace", "solution"] + (["hidden"] if task.hidden else [])
    )


def test_writing_twice_replaces_the_old_copy(tmp_path):
    write_task(repo_task(workspace={"calc.py": b"x", "old.txt": b"y"}), tmp_path)
    folder = write_task(repo_task(), tmp_path)
    assert not (folder / "workspace" / "old.txt").exists()


def test_a_folder_without_task_json_is_malformed(tmp_path):
    (tmp_path / "t").mkdir()
    with pytest.raises(TaskFormatError, match="no task.json"):
        read_task(tmp_path / "t")


def test_bad_json_unknown_keys_and_bad_values_name_the_problem(tmp_path):
    folder = write_task(repo_task(), tmp_path)
    meta_path = folder / "task.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text("{not json")
    with pytest.raises(TaskFormatError, match="not valid JSON"):
        read_task(folder)
    meta_path.write_text(json.dumps({**meta, "difficulty": "hard"}))
    with pytest.raises(TaskFormatError, match=r"unknown keys \['difficulty'\]"):
        read_task(folder)
    meta_path.write_text(json.dumps({**meta, "kind": "analysis"}))
    with pytest.raises(TaskFormatError, match="does not fit"):
        read_task(folder)
    meta_path.write_text(json.dumps({**meta, "oracle": {"type": "vibes"}}))
    with pytest.raises(TaskFormatError, match="oracle.type"):
        read_task(folder)
    meta_path.write_text(json.dumps({**meta, "id": "other-id"}))
    with pytest.raises(TaskFormatError, match="rename the folder"):
        read_task(folder)


def test_missing_instruction_is_malformed(tmp_path):
    folder = write_task(repo_task(), tmp_path)
    (folder / "instruction.md").unlink()
    with pytest.raises(TaskFormatError, match="instruction.md"):
        read_task(folder)


def test_find_task_folders_skips_task_json_inside_a_workspace(tmp_path):
    write_task(repo_task(workspace={"calc.py": b"x", "nested/task.json": b"{}"}), tmp_path / "set")
    write_task(answer_task(), tmp_path / "set")
    assert [p.name for p in find_task_folders(tmp_path)] == ["calc-add-repair", "prices-total"]
    assert find_task_folders(tmp_path / "set" / "prices-total") == [tmp_path / "set" / "prices-total"]


def test_a_placed_task_round_trips_and_one_with_its_own_image_stays_in_harbor_layout(tmp_path):
    from environments.tasks.harbor import load_harbor_task
    from tests.environments.tasks.test_harbor import make_harbor_task

    harbor = load_harbor_task(make_harbor_task(tmp_path / "harbor"))
    again = read_task(write_task(harbor, tmp_path / "ours"))
    assert again == harbor and again.placement.workdir == "/app" and len(again.placement.mounts) == 3
    dockerfile = tmp_path / "harbor" / "fix-greeting" / "environment" / "Dockerfile"
    dockerfile.write_text("FROM python:3.12\nRUN pip install rich\nCOPY greet.py /app/\n")
    with pytest.raises(TaskFormatError, match="builds its own image.*Harbor's layout"):
        write_task(load_harbor_task(dockerfile.parents[1]), tmp_path / "ours2")
    folder = write_task(harbor, tmp_path / "ours3")
    meta = json.loads((folder / "task.json").read_text())
    meta["placement"]["workdir"] = "/usr/app"
    (folder / "task.json").write_text(json.dumps(meta))
    with pytest.raises(TaskFormatError, match="overlaps /usr"):
        read_task(folder)
