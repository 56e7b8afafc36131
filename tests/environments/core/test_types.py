from __future__ import annotations

import pytest

from environments.core.types import AnswerOracle, CommandOracle, Kind, Limits, Reference, Source, Split
from tests.environments.tasks.taskutil import answer_task, repo_task


def test_a_good_task_builds_and_coerces_strings_to_enums():
    task = repo_task(source="repo", kind="repair", split="train")
    assert task.source is Source.REPO and task.kind is Kind.REPAIR and task.split is Split.TRAIN
    assert list(task.workspace) == sorted(task.workspace)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"id": "Bad Id"}, "task.id"),
        ({"kind": "analysis"}, "does not fit source=repo"),
        ({"kind": "refactor"}, "kind='refactor'"),
        ({"split": "test"}, "split='test'"),
        ({"instruction": "  \n"}, "instruction is empty"),
        ({"workspace": {"/etc/passwd": b"x"}}, "normalised relative path"),
        ({"workspace": {"a/../b.py": b"x"}}, "normalised relative path"),
        ({"workspace": {"a.py": "text, not bytes"}}, "must be bytes"),
        ({"hidden": {"calc.py": b"x"}}, "both workspace and hidden"),
        ({"allowed_hosts": ("https://pypi.org",)}, "bare host names"),
    ],
)
def test_invalid_fields_are_rejected_with_the_field_named(changes, message):
    with pytest.raises(ValueError, match=message):
        repo_task(**changes)


def test_a_data_task_cannot_be_a_repo_kind():
    with pytest.raises(ValueError, match="does not fit source=data"):
        answer_task(kind="build")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"agent_timeout_s": 0}, "limits.agent_timeout_s"),
        ({"verify_timeout_s": float("inf")}, "limits.verify_timeout_s"),
        ({"memory_mb": 0}, "limits.memory_mb"),
        ({"max_processes": 2.5}, "limits.max_processes"),
    ],
)
def test_limits_must_be_positive(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Limits(**kwargs)


def test_oracles_and_references_check_themselves():
    with pytest.raises(ValueError, match="must not be empty"):
        CommandOracle("  ")
    with pytest.raises(ValueError, match="finite"):
        AnswerOracle(expected=float("nan"))
    with pytest.raises(ValueError, match="number or a string"):
        AnswerOracle(expected=True)
    with pytest.raises(ValueError, match=">= 0"):
        AnswerOracle(expected=1.0, abs_tol=-1)
    with pytest.raises(ValueError, match="empty reference"):
        Reference()
    assert repo_task().allowed_hosts == ()
    assert repo_task(allowed_hosts=["pypi.org"]).allowed_hosts == ("pypi.org",)


def test_the_package_exports_are_sorted_and_importable():
    import environments.tasks as tasks

    assert tasks.__all__ == sorted(tasks.__all__)
    assert all(hasattr(tasks, name) for name in tasks.__all__)
