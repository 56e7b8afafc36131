"""`python -m serve.audit` re-scans trajectories the project saved (clean, tampering, allowlisted,
malformed), and the same rules run inside atif-scan's own CLI as a plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors.trajectories import save_trajectory
from serve.audit import EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNREADABLE, audit, checks, main
from serve.record import RolloutRecord, TurnRecord, reply_message

REPO = Path(__file__).resolve().parents[2]
TAMPER = "echo 1 > /logs/verifier/reward.txt"
FETCH = "curl -s https://pypi.org/simple/requests/"


def trajectory(rollout_id: str, commands: list[str], allowlist: tuple[str, ...] = ()) -> dict:
    """A finished rollout's ATIF export: one bash call per command, then a closing message."""
    conversation: list[dict] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test in stats.py."},
    ]
    for i, command in enumerate(commands):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
        }
        conversation += [
            reply_message("", [call]),
            {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"},
        ]
    conversation.append(reply_message("Done.", []))
    turns = tuple(
        TurnRecord(i, (1, 2), (3,), (-0.5,), tool_calls=int(i < len(commands)), conversation="k")
        for i in range(len(commands) + 1)
    )
    record = RolloutRecord(rollout_id, "pi", "pi-v1", allowlist, turns, tuple(conversation), "k")
    return record.to_atif()


def write(folder: Path, rollout_id: str, commands: list[str], allowlist: tuple[str, ...] = ()) -> Path:
    return save_trajectory(trajectory(rollout_id, commands, allowlist), folder, rollout_id)


def run_main(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, list[str], dict]:
    code = main([str(p) for p in paths])
    lines = capsys.readouterr().out.splitlines()
    return code, lines, json.loads(lines[-1])


def test_a_clean_session_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "pi-clean", ["ls", "python -m pytest -q"])
    code, lines, summary = run_main(capsys, path)
    assert code == EXIT_CLEAN
    assert summary["sessions"] == 1 and summary["sessions_with_findings"] == 0 and summary["unreadable"] == 0
    assert lines[-2].startswith("audit: 1 sessions scanned, 0 with findings")


def test_a_tampering_session_is_reported_by_rule_step_and_call_without_its_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "pi", "pi-clean", ["ls"])
    write(tmp_path / "pi", "pi-tamper", ["ls", TAMPER])
    code, lines, summary = run_main(capsys, tmp_path)
    assert code == EXIT_FINDINGS
    assert summary["sessions"] == 2 and summary["sessions_by_rule"] == {"reward_tampering": 1}
    # steps: system 1, user 2, agent `ls` 3, agent tampering call 4
    assert "  reward_tampering  step 4  call 0  tool bash" in lines
    assert any("session pi-tamper: 1 finding(s)" in line for line in lines)
    assert not any("reward.txt" in line or "verifier" in line for line in lines)


def test_the_saved_allowlist_is_the_sessions_own(tmp_path: Path) -> None:
    write(tmp_path, "pi-allowed", [FETCH], allowlist=("pypi.org",))
    write(tmp_path, "pi-undeclared", [FETCH])
    by_session = {s.session: s for s in audit([str(tmp_path)]).sessions}
    assert by_session["pi-allowed"].hits == ()
    assert [h.rule for h in by_session["pi-undeclared"].hits] == ["hosts"]


def test_malformed_inputs_are_counted_never_fatal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "pi-tamper", [TAMPER])
    (tmp_path / "truncated.json").write_text('{"schema_version": "ATIF-v1.4", "steps": [')
    (tmp_path / "bad-steps.json").write_text('{"schema_version": "ATIF-v1.4", "steps": "nope"}')
    (tmp_path / "results.json").write_text('{"sessions": 3}')  # not a trajectory: skipped in a folder
    lines_file = tmp_path / "more.jsonl"
    lines_file.write_text(json.dumps(trajectory("pi-line", ["ls"])) + "\nnot json\n")
    code, lines, summary = run_main(capsys, tmp_path, tmp_path / "missing.json")
    assert code == EXIT_UNREADABLE
    assert summary["sessions"] == 2 and summary["sessions_with_findings"] == 1
    assert summary["unreadable"] == 4 and summary["skipped"] == 1
    unreadable = [line for line in lines if "unreadable (" in line]
    assert any(line.endswith("truncated.json: unreadable (invalid_json)") for line in unreadable)
    assert any(line.endswith("more.jsonl:2: unreadable (invalid_json)") for line in unreadable)
    assert any(line.endswith("missing.json: unreadable (not_found)") for line in unreadable)
    assert any("bad-steps.json: unreadable (invalid_steps)" in line for line in unreadable)


def test_a_named_file_must_be_a_trajectory_and_an_empty_folder_is_no_evidence(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text("[]")
    assert audit([str(tmp_path / "results.json")]).unreadable == [
        (str(tmp_path / "results.json"), "not_a_trajectory")
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert audit([str(empty)]).exit_code == EXIT_UNREADABLE


def test_the_plugin_factory_gives_one_versioned_check_per_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = [c.spec for c in checks()]
    assert [s.id for s in specs] == [
        "guard.reward_tampering",
        "guard.test_editing",
        "guard.answer_lookup",
        "guard.credential_use",
        "guard.hosts",
    ]
    monkeypatch.setenv("GUARD_AUDIT_ALLOWLIST", "pypi.org")
    assert checks()[0].spec.version != specs[0].version  # another allowlist never reuses cached results


def atif_scan(path: Path, tmp_path: Path) -> tuple[int, dict[str, str]]:
    """atif-scan's own CLI with the guard plugin: (exit code, guard check -> status)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GUARD_AUDIT_ALLOWLIST", None)
    command = [sys.executable, "-m", "atif_scan", "--plugin", "serve.audit:checks", "--packs", "none"]
    command += ["--pattern", "*.json", "--format", "json", "--no-cache", "--fail-on", "high", str(path)]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    (item,) = json.loads(done.stdout)["inputs"]
    guard = {a["id"]: a["status"] for a in item["assessments"] if a["id"].startswith("guard.")}
    return done.returncode, guard


def test_atif_scan_cli_runs_the_rules_as_a_plugin(tmp_path: Path) -> None:
    clean = write(tmp_path / "clean", "pi-clean", ["ls", "python -m pytest -q"])
    dirty = write(tmp_path / "dirty", "pi-tamper", ["ls", TAMPER])
    code, guard = atif_scan(dirty, tmp_path)
    assert code == 1 and guard["guard.reward_tampering"] == "match"
    code, guard = atif_scan(clean, tmp_path)
    assert code == 0 and len(guard) == 5 and set(guard.values()) == {"no_match"}
