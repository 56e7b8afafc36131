"""A rollout end to end with the real pi harness, the real standalone guard and the local bubblewrap
sandbox, against a scripted model: the scripted call solves a shipped data task, the verifier (in a fresh
sandbox) passes it and the reward carries the efficiency bonus; an attack is blocked and scores 0; an
infrastructure failure comes back as a failure to retry, never as a score."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from actors.rollout import GuardHTTP, RolloutRequest, RolloutSession
from environments.reward import efficiency_bonus
from environments.sandboxes import SandboxError
from environments.tasks.shipped import shipped_tasks
from environments.tasks.types import AnswerOracle, Kind
from tests.environments.harnesses.scripted_upstream import Say, Shell

BWRAP = shutil.which("bwrap")


@pytest.fixture(scope="module")
def task():
    return next(t for t in shipped_tasks() if t.kind is Kind.ANALYSIS and isinstance(t.oracle, AnswerOracle))


@pytest.fixture
def session(guard, tmp_path):
    from environments.harnesses import harness_binds
    from environments.sandboxes import LocalBackend

    if BWRAP is None:
        pytest.skip("bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap")
    backend = LocalBackend(tmp_path / "boxes", prefix="hxro", extra_ro_binds=harness_binds())
    yield RolloutSession(backend, GuardHTTP(guard.url), work_root=tmp_path)
    assert not list((tmp_path / "boxes").iterdir()), "sandboxes were left behind"
    assert not list(tmp_path.glob("rollout-*")), "rollout work folders were left behind"


def request(task, rollout_id: str) -> RolloutRequest:
    return RolloutRequest(rollout_id, "g1", task, "pi", "pi-v0", start_version=0)


@pytest.mark.harness
def test_a_solved_task_scores_one_plus_the_bonus_with_exact_rows(guard, session, task):
    guard.upstream.script = [Shell(f"printf '%s\\n' {task.oracle.expected} > answer.txt"), Say("Done.")]
    outcome = session.run(request(task, "pi-rollout-solved"))
    assert outcome.failure is None, outcome.failure
    assert outcome.verdict == "pass", outcome.verifier_reason
    assert (outcome.tool_calls, outcome.harness_tool_calls, outcome.blocked) == (1, 1, False)
    assert outcome.reward == pytest.approx(1.0 + efficiency_bonus(1))
    # the scripted upstream returns no token ids, so there is nothing exact to train on: no invented rows
    assert outcome.rows == ()


@pytest.mark.harness
def test_a_wrong_answer_scores_zero(guard, session, task):
    guard.upstream.script = [Shell("echo 0 > answer.txt"), Say("Done.")]
    outcome = session.run(request(task, "pi-rollout-wrong"))
    assert outcome.failure is None and outcome.verdict == "fail" and outcome.reward == 0.0


@pytest.mark.harness
def test_an_attack_is_blocked_and_scores_zero_even_if_the_answer_is_right(guard, session, task):
    guard.upstream.script = [
        Shell(f"printf '%s\\n' {task.oracle.expected} > answer.txt"),
        Shell("cat ~/.ssh/id_rsa"),
        Say("Done."),
    ]
    outcome = session.run(request(task, "pi-rollout-attack"))
    assert outcome.failure is None
    assert outcome.blocked and outcome.reward == 0.0 and outcome.verdict == "pass"
    assert any("credential" in reason for reason in outcome.block_reasons), outcome.block_reasons


class BrokenBackend:
    def create(self, workspace, limits, *, forwards=()):
        raise SandboxError("bubblewrap is missing: install it")

    def sweep(self) -> int:
        return 0


class RecordingGuard:
    port = 1

    def __init__(self) -> None:
        self.closed: list[str] = []

    def open(self, rollout_id, harness, adapter, allowlist):
        return f"/s/{rollout_id}/v1"

    def close(self, rollout_id):
        self.closed.append(rollout_id)
        return {"turns": [], "failed": False}


def test_an_infrastructure_failure_is_a_failure_not_a_score(task, tmp_path: Path):
    recorder = RecordingGuard()
    outcome = RolloutSession(BrokenBackend(), recorder, work_root=tmp_path).run(request(task, "r-broken"))
    assert outcome.failure and "bubblewrap is missing" in outcome.failure
    assert outcome.reward == 0.0 and outcome.verdict == ""
    assert recorder.closed == ["r-broken"], "the guard's rollout must be closed even when the session fails"
    assert not list(tmp_path.glob("rollout-*"))


def test_an_unknown_harness_is_refused_with_the_choices(task, tmp_path: Path):
    bad = RolloutRequest("r", "g", task, "cursor", "cursor-v0", 0)
    outcome = RolloutSession(BrokenBackend(), RecordingGuard(), work_root=tmp_path).run(bad)
    assert outcome.failure and "must be one of" in outcome.failure
