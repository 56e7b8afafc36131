from __future__ import annotations

import pytest

from environments.core.runner import SubprocessRunner
from environments.core.types import AnswerOracle, CommandOracle, Limits
from environments.tasks.oracle import Verdict, judge_answer, parse_number, verify, write_start
from tests.environments.tasks.taskutil import FIXED, answer_task, repo_task


@pytest.mark.parametrize(
    ("text", "value"), [("1,234.5\n", 1234.5), (" 12.5% ", 12.5), ("-3.", -3.0), ("abc", None), ("nan", None)]
)
def test_parse_number_tolerates_formatting(text, value):
    assert parse_number(text) == value


def test_numbers_pass_within_tolerance_and_text_ignores_case_and_quotes():
    oracle = AnswerOracle(expected=46.85, abs_tol=0.01)
    assert judge_answer(oracle, "46.85")[0] and judge_answer(oracle, "46.849")[0]
    assert not judge_answer(oracle, "46.9")[0]
    assert "not a number" in judge_answer(oracle, "forty")[1]
    text = AnswerOracle(expected="North East")
    assert judge_answer(text, '  "north  east".\n')[0]
    assert not judge_answer(text, "North")[0]


def test_verify_runs_in_a_fresh_copy_with_the_hidden_files(tmp_path):
    task = repo_task()
    produced = write_start(task, tmp_path / "produced")
    failed = verify(task, produced, tmp_path / "v1", SubprocessRunner())
    assert failed.verdict is Verdict.FAIL and "exited 1" in failed.reason
    assert not (produced / "verify").exists()  # hidden files never reach the producer's folder
    (produced / "calc.py").write_bytes(FIXED)
    assert verify(task, produced, tmp_path / "v2", SubprocessRunner()).verdict is Verdict.PASS


def test_an_oracle_past_its_time_is_an_error_not_a_fail(tmp_path):
    task = repo_task(oracle=CommandOracle("sleep 5"), limits=Limits(verify_timeout_s=0.3))
    run = verify(task, write_start(task, tmp_path / "p"), tmp_path / "v", SubprocessRunner())
    assert run.verdict is Verdict.ERROR


def test_a_missing_answer_file_fails(tmp_path):
    task = answer_task()
    run = verify(task, write_start(task, tmp_path / "p"), tmp_path / "v", SubprocessRunner())
    assert (run.verdict, run.reason) == (Verdict.FAIL, "no answer file answer.txt")


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"reward.txt": "1\n"}, 1.0),
        ({"reward.json": '{"reward": 0.5}'}, 0.5),
        ({"reward.json": '{"passed": 3}', "reward.txt": "1"}, 1.0),  # details beside the score
        ({"reward.json": '{"reward": 1}', "reward.txt": "1"}, 1.0),
        ({}, None),
    ],
)
def test_read_reward_reads_the_graders_reward(tmp_path, files, expected):
    from environments.tasks.oracle import read_reward

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert read_reward(tmp_path) == expected


def test_two_rewards_that_disagree_are_refused(tmp_path):
    """Code the grader ran can write a reward file of its own; read first, it would decide."""
    from environments.tasks.oracle import read_reward

    (tmp_path / "reward.json").write_text('{"reward": 1}')
    (tmp_path / "reward.txt").write_text("0\n")
    with pytest.raises(ValueError, match="disagree|says"):
        read_reward(tmp_path)
