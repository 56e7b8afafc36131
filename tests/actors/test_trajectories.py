"""Each rollout's ATIF trajectory is saved beside the run (compact, atomic), and a failed fetch or write
never fails the rollout."""

from __future__ import annotations

import json
from pathlib import Path

from actors.rollout import RolloutRequest, RolloutSession
from actors.trajectories import save_rollout_trajectory, save_trajectory, trajectory_path
from environments.sandboxes import SandboxError
from environments.tasks.shipped import shipped_tasks
from serve.audit import audit
from serve.record import RolloutRecord, TurnRecord, reply_message

CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}


def record(rollout_id: str) -> RolloutRecord:
    conversation = (
        {"role": "user", "content": "List the files."},
        reply_message("", [CALL]),
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        reply_message("Done.", []),
    )
    turns = (
        TurnRecord(0, (1, 2, 3), (7, 8), (-0.1, -0.2), tool_calls=1, conversation="k"),
        TurnRecord(1, (1, 2, 3, 7, 8, 9), (5,), (-0.3,), tool_calls=0, conversation="k"),
    )
    return RolloutRecord(rollout_id, "pi", "pi-v2", ("pypi.org",), turns, conversation, "k")


def test_the_saved_trajectory_keeps_counts_and_guard_extra_but_not_token_payloads(tmp_path: Path) -> None:
    path = save_trajectory(record("pi-abc").to_atif(), tmp_path / "pi", "pi-abc")
    assert path == tmp_path / "pi" / "pi-abc.json" and [p.name for p in path.parent.iterdir()] == [
        "pi-abc.json"
    ]
    saved = json.loads(path.read_text())
    agent = next(s for s in saved["steps"] if s["source"] == "agent")
    assert agent["metrics"] == {"prompt_tokens": 3, "completion_tokens": 2}
    assert saved["extra"]["guard"]["allowlist"] == ["pypi.org"]
    turn = saved["extra"]["guard"]["turns"][1]
    assert (turn["prompt_tokens"], turn["completion_tokens"]) == (6, 1) and "prompt_ids" not in turn
    assert "logprobs" not in path.read_text()
    (scanned,) = audit([str(path)]).sessions
    assert scanned.session == "pi-abc" and scanned.hits == ()


def test_a_rollout_id_cannot_leave_the_folder(tmp_path: Path) -> None:
    assert trajectory_path(tmp_path, "../../etc/x y") == tmp_path / ".._.._etc_x_y.json"


def test_a_failed_fetch_is_logged_and_returns_none(tmp_path: Path, caplog) -> None:
    def fetch(rollout_id: str) -> dict:
        raise RuntimeError("guard gone")

    assert save_rollout_trajectory(fetch, "pi-x", tmp_path) is None
    assert "pi-x" in caplog.text and not list(tmp_path.iterdir())


class BrokenBackend:
    def create(self, workspace, limits, *, forwards=(), read_only=(), placement=None):
        raise SandboxError("no sandbox here")

    def sweep(self) -> int:
        return 0


class Guard:
    host = "127.0.0.1"
    port = 1

    def __init__(self, with_atif: bool) -> None:
        self.with_atif = with_atif

    def open(self, rollout_id, harness, adapter, allowlist, protected=()):
        return f"/s/{rollout_id}/v1"

    def atif(self, rollout_id):
        if not self.with_atif:
            raise RuntimeError("HTTP 500")
        return record(rollout_id).to_atif()

    def close(self, rollout_id):
        return {"turns": [], "failed": False}


def test_a_rollout_saves_its_trajectory_even_when_the_session_fails(tmp_path: Path) -> None:
    task = shipped_tasks()[0]
    request = RolloutRequest("pi-r1", "g1", task, "pi", "pi-v0", start_version=0)
    session = RolloutSession(BrokenBackend(), Guard(True), tmp_path, trajectories=tmp_path / "traj")
    assert session.run(request).failure
    assert json.loads((tmp_path / "traj" / "pi-r1.json").read_text())["session_id"] == "pi-r1"
    assert session.trajectories_failed == 0

    failing = RolloutSession(BrokenBackend(), Guard(False), tmp_path, trajectories=tmp_path / "traj2")
    outcome = failing.run(RolloutRequest("pi-r2", "g1", task, "pi", "pi-v0", start_version=0))
    assert outcome.failure and "no sandbox here" in outcome.failure  # the rollout's own failure, not ours
    assert failing.trajectories_failed == 1 and not (tmp_path / "traj2").exists()


def test_a_trajectory_is_written_to_a_storage_uri_from_any_node(tmp_path: Path) -> None:
    atif = {"schema_version": "ATIF-v1.4", "steps": [{"metrics": {"logprobs": [0.1], "prompt_tokens": 3}}]}
    where = save_trajectory(atif, f"file://{tmp_path}/run/pi/trajectories", "pi/r 1")
    saved = json.loads(Path(str(where)).read_text())
    assert Path(str(where)).parent == tmp_path / "run" / "pi" / "trajectories"
    assert saved["steps"][0]["metrics"] == {"prompt_tokens": 3}  # compacted as on a local folder
