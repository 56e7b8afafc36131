"""Task sources named in a config: each kind read, splits kept or drawn by hash, held-out tasks never
trained on, and the weighted, seeded mix."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from environments.core.types import Kind, Split
from environments.tasks.jsonl import dump_jsonl, task_to_record
from environments.tasks.layout import write_task
from environments.tasks.sources import (
    TaskMix,
    TaskSource,
    check_disjoint,
    held_out_by_hash,
    load_source,
    load_sources,
)
from tests.environments.tasks.taskutil import answer_task, repo_task
from tests.environments.tasks.test_harbor import make_harbor_task


def _tasks(n: int, prefix: str = "t", split: Split = Split.TRAIN) -> list:
    return [
        answer_task(id=f"{prefix}{i}", instruction=f"Question {prefix}{i}: total price?\n", split=split)
        for i in range(n)
    ]


def test_a_shipped_set_keeps_its_own_splits_and_the_kinds_asked_for():
    loaded = load_source(TaskSource("shipped", "shipped", task_kinds=("analysis",)))
    assert loaded.train and loaded.held_out and not loaded.rejected
    assert all(t.kind is Kind.ANALYSIS for t in (*loaded.train, *loaded.held_out))
    assert all(t.split is Split.TRAIN for t in loaded.train)
    assert all(t.split is Split.EVAL for t in loaded.held_out)


def test_a_jsonl_source_rejects_a_bad_line_and_keeps_the_rest(tmp_path: Path):
    path = dump_jsonl(_tasks(3), tmp_path / "tasks.jsonl")
    with path.open("a") as fh:
        fh.write("{not json\n")
        fh.write(json.dumps({**task_to_record(answer_task(id="x1")), "kind": "poetry"}) + "\n")
    loaded = load_source(TaskSource("jsonl", str(path)))
    assert [t.id for t in loaded.train] == ["t0", "t1", "t2"]
    assert len(loaded.rejected) == 2 and "not valid JSON" in loaded.rejected[0]


def test_folder_harbor_and_dataset_sources_read_their_layouts(tmp_path: Path):
    for task in (repo_task(id="r1", split=Split.TRAIN), answer_task(id="a1", split=Split.EVAL)):
        write_task(task, tmp_path / "ours")
    (tmp_path / "ours" / "broken").mkdir()
    (tmp_path / "ours" / "broken" / "task.json").write_text("{")
    ours = load_source(TaskSource("folder", str(tmp_path / "ours")))
    assert [t.id for t in ours.train] == ["r1"] and [t.id for t in ours.held_out] == ["a1"]
    assert len(ours.rejected) == 1
    make_harbor_task(tmp_path / "harbor", "fix-greeting")
    harbor = load_source(TaskSource("harbor", str(tmp_path / "harbor")))
    assert [t.id for t in harbor.train] == ["acme.fix-greeting"]
    rows = dump_jsonl(_tasks(4, "h"), tmp_path / "rows.jsonl")  # a dataset file, read by `datasets`
    hub = load_source(TaskSource("hub", str(rows)))
    assert sorted(t.id for t in hub.train) == ["h0", "h1", "h2", "h3"]


def test_a_missing_path_and_bad_settings_name_the_fix(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="does not exist; fix `path`"):
        load_source(TaskSource("jsonl", str(tmp_path / "nope.jsonl")))
    with pytest.raises(ValueError, match="kind='csv': choose one of"):
        TaskSource("csv", "x")
    with pytest.raises(ValueError, match="weight=0"):
        TaskSource("shipped", weight=0)
    with pytest.raises(ValueError, match="holdout=1.5"):
        TaskSource("shipped", holdout=1.5)
    with pytest.raises(ValueError, match="path='bogus': choose one of"):
        TaskSource("shipped", "bogus")


def test_a_holdout_fraction_is_drawn_by_hash_the_same_every_time(tmp_path: Path):
    path = dump_jsonl(_tasks(400, split=Split.EVAL), tmp_path / "tasks.jsonl")  # metadata overridden
    first = load_source(TaskSource("jsonl", str(path), holdout=0.25))
    again = load_source(TaskSource("jsonl", str(path), holdout=0.25))
    assert [t.id for t in first.held_out] == [t.id for t in again.held_out]
    assert 70 <= len(first.held_out) <= 130  # about a quarter of 400
    assert all(held_out_by_hash(t.id, 0.25) for t in first.held_out)
    assert {t.split for t in first.train} == {Split.TRAIN}


def test_a_held_out_task_in_training_is_refused_by_id_or_by_content(tmp_path: Path):
    held = _tasks(2, "e", Split.EVAL)
    with pytest.raises(ValueError, match="1 training task"):
        check_disjoint([replace(held[0], split=Split.TRAIN)], held)
    renamed = replace(held[1], id="copy-of-e1", split=Split.TRAIN)
    with pytest.raises(ValueError, match="copy-of-e1 \\(same task as e1\\)"):
        check_disjoint([renamed], held)
    check_disjoint(_tasks(3), held)  # different tasks: fine
    train = dump_jsonl([renamed], tmp_path / "train.jsonl")
    evaluation = dump_jsonl(held, tmp_path / "eval.jsonl")
    with pytest.raises(ValueError, match="held out for evaluation"):
        load_sources([TaskSource("jsonl", str(train)), TaskSource("jsonl", str(evaluation))])


def test_the_mix_follows_the_weights_is_seeded_and_cycles_each_source_whole(tmp_path: Path):
    big = load_source(TaskSource("jsonl", str(dump_jsonl(_tasks(5, "a"), tmp_path / "a.jsonl")), weight=3))
    small = load_source(TaskSource("jsonl", str(dump_jsonl(_tasks(2, "b"), tmp_path / "b.jsonl")), name="b"))
    mix = TaskMix([big, small], seed=7)
    drawn = [next(mix).id for _ in range(400)]
    assert 240 <= mix.drawn[big.source.label] <= 360 and sum(mix.drawn.values()) == 400
    assert mix.drawn["b"] == sum(d.startswith("b") for d in drawn)
    again, other = TaskMix([big, small], seed=7), TaskMix([big, small], seed=8)
    assert [next(again).id for _ in range(400)] == drawn
    assert [next(other).id for _ in range(400)] != drawn
    first_pass = [d for d in drawn if d.startswith("a")][:5]
    assert Counter(first_pass) == Counter(f"a{i}" for i in range(5))  # every task once per pass
    with pytest.raises(ValueError, match="no training tasks"):
        TaskMix([replace(small, train=())])
