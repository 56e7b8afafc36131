"""The pure half of the launchers: config rendering, command lines, environment, reading the harnesses'
own records; plus ``run_invocation``'s timeout on a plain shell (no harness needed)."""

from __future__ import annotations

import importlib
import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from environments.harnesses import (
    HermesLauncher,
    Invocation,
    LaunchSpec,
    OpencodeLauncher,
    PiLauncher,
    ProcessOutcome,
    hermes,
    opencode,
    run_invocation,
    sandboxed,
)
from environments.harnesses.registry import harness_names, harness_spec

GUARD = "http://127.0.0.1:9000/s/r1/v1"
RUN = Path("/runs/r1")


def spec(**overrides) -> LaunchSpec:
    values = {
        "workspace": Path("/work/ws"),
        "instruction": "Fix the bug in 'app.py'.",
        "base_url": GUARD,
        "model": "pi-v3",
        "api_key": "sk-test",
    }
    return LaunchSpec(**(values | overrides))


def outcome(exit_code: int | None = 0, stdout: str = "done") -> ProcessOutcome:
    return ProcessOutcome(exit_code, exit_code is None, 1.5, stdout, "")


def test_exports_are_sorted_and_resolve():
    module = importlib.import_module("environments.harnesses")
    assert list(module.__all__) == sorted(module.__all__)
    assert all(hasattr(module, name) for name in module.__all__)
    assert sorted(harness_names()) == ["hermes", "opencode", "pi"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"instruction": "  "}, "instruction"),
        ({"base_url": "127.0.0.1:9000/v1"}, "base_url"),
        ({"base_url": "http://127.0.0.1:9000/s/r1"}, "base_url"),
        ({"model": "two words"}, "model"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"max_tokens": 200_000}, "max_tokens"),
    ],
)
def test_a_bad_spec_names_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        spec(**overrides)


@pytest.mark.parametrize("name", sorted(harness_names()))
def test_every_launcher_isolates_home_and_keeps_state_in_the_run_folder(name):
    invocation = harness_spec(name).launcher(install=Path("/opt/h")).prepare(spec(), RUN)
    env = invocation.env
    assert env["HOME"] == str(RUN / "home")
    for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "TMPDIR"):
        assert env[key].startswith(str(RUN / "home") + "/"), key
    assert env["PWD"] == "/work/ws" and invocation.cwd == Path("/work/ws")
    assert invocation.argv[0].startswith("/opt/h/")
    assert all(path.is_relative_to(RUN) for path in invocation.files)
    assert "sk-test" not in " ".join(invocation.argv)  # keys go through env or config, not argv


def test_pi_config_points_the_guard_provider_at_the_rollout_with_compat_flags():
    invocation = PiLauncher(install=Path("/opt/h")).prepare(spec(), RUN)
    agent = RUN / "home" / ".pi" / "agent"
    assert invocation.env["PI_CODING_AGENT_DIR"] == str(agent)
    assert invocation.env["GUARD_API_KEY"] == "sk-test" and invocation.env["PI_OFFLINE"] == "1"
    provider = json.loads(invocation.files[agent / "models.json"])["providers"]["guard"]
    assert provider["baseUrl"] == GUARD and provider["api"] == "openai-completions"
    assert provider["apiKey"] == "GUARD_API_KEY"
    assert provider["compat"] == {
        "supportsDeveloperRole": False,
        "supportsReasoningEffort": False,
        "supportsStore": False,
        "maxTokensField": "max_tokens",
    }
    assert provider["models"] == [{"id": "pi-v3", "contextWindow": 131072, "maxTokens": 4096}]
    settings = json.loads(invocation.files[agent / "settings.json"])
    assert settings == {"defaultProvider": "guard", "defaultModel": "pi-v3", "quietStartup": True}
    argv = invocation.argv
    assert argv[0] == "/opt/h/pi/node_modules/.bin/pi"
    assert argv[-2:] == ("-p", "Fix the bug in 'app.py'.")
    assert argv[argv.index("--tools") + 1] == "read,bash,edit,write"
    assert argv[argv.index("--session-dir") + 1] == str(RUN / "sessions")
    assert invocation.stdin is None


def test_opencode_gets_its_prompt_on_stdin_and_pwd_set_to_the_workspace():
    invocation = OpencodeLauncher(install=Path("/opt/h")).prepare(spec(), RUN)
    assert invocation.argv == (
        "/opt/h/opencode/node_modules/opencode-linux-x64/bin/opencode",
        *("run", "--auto", "--pure", "-m", "guard/pi-v3"),
    )
    assert invocation.stdin == "Fix the bug in 'app.py'."  # never as an argument (quoting quirk)
    env = invocation.env
    assert env["PWD"] == "/work/ws" and env["OPENCODE_CONFIG"] == str(RUN / "opencode.json")
    for flag in ("MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "SHARE", "DEFAULT_PLUGINS"):
        assert env[f"OPENCODE_DISABLE_{flag}"] == "1"
    assert env["npm_config_offline"] == "true"  # no background fetch from registry.npmjs.org
    config = json.loads(invocation.files[RUN / "opencode.json"])
    provider = config["provider"]["guard"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {"baseURL": GUARD, "apiKey": "{env:GUARD_API_KEY}"}
    assert provider["models"]["pi-v3"]["limit"] == {"context": 131072, "output": 4096}
    assert config["model"] == config["small_model"] == "guard/pi-v3"
    assert config["enabled_providers"] == ["guard"] and config["agent"] == {"title": {"disable": True}}
    permission = config["permission"]
    assert permission["*"] == "allow"
    assert all(permission[tool] == "deny" for tool in ("webfetch", "task", "skill", "todowrite"))


def test_hermes_config_claims_at_least_64k_context_and_sets_max_tokens():
    invocation = HermesLauncher(install=Path("/opt/h")).prepare(spec(max_tokens=2048), RUN)
    hermes_home = RUN / "home" / ".hermes"
    assert invocation.env["HERMES_HOME"] == str(hermes_home)
    text = invocation.files[hermes_home / "config.yaml"]
    assert text.splitlines() == [
        "model:",
        '  provider: "custom"',
        '  default: "pi-v3"',
        f'  base_url: "{GUARD}"',
        '  api_key: "sk-test"',
        "  context_length: 131072",
        "  max_tokens: 2048",
    ]
    assert invocation.argv == (
        "/opt/h/hermes-venv/bin/hermes",
        *("-z", "Fix the bug in 'app.py'.", "-t", "terminal,file", "--usage-file", str(RUN / "usage.json")),
    )
    with pytest.raises(ValueError, match="64000"):
        hermes.config_yaml(spec(context_window=32768))


def test_the_hermes_config_is_valid_yaml_with_awkward_values():
    yaml = pytest.importorskip("yaml")
    awkward = spec(model="a:b#c", api_key='k"ey: #1')
    assert yaml.safe_load(hermes.config_yaml(awkward))["model"]["api_key"] == 'k"ey: #1'
    assert yaml.safe_load(hermes.config_yaml(awkward))["model"]["default"] == "a:b#c"


def test_hermes_counts_as_failed_when_its_usage_file_says_so_or_is_missing(tmp_path):
    launcher = HermesLauncher(install=tmp_path)
    assert launcher.finish(spec(), tmp_path, outcome(0)).failed  # no usage file: never ran the task
    (tmp_path / "usage.json").write_text(json.dumps({"failed": True, "completed": False, "api_calls": 1}))
    failed = launcher.finish(spec(), tmp_path, outcome(0))
    assert failed.failed and not failed.ok and failed.exit_code == 0
    (tmp_path / "usage.json").write_text(json.dumps({"failed": False, "completed": True, "api_calls": 2}))
    good = launcher.finish(spec(), tmp_path, outcome(0))
    assert good.ok and good.usage == {"failed": False, "completed": True, "api_calls": 2}
    timed_out = launcher.finish(spec(), tmp_path / "none", outcome(None))
    assert timed_out.timed_out and not timed_out.failed and not timed_out.ok


def test_hermes_reads_its_tool_call_count_from_its_state_db(tmp_path):
    db = tmp_path / "home" / ".hermes" / "state.db"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE sessions (id TEXT, tool_call_count INTEGER)")
        conn.executemany("INSERT INTO sessions VALUES (?, ?)", [("a", 2), ("b", 1)])
    assert hermes.count_tool_calls(db) == 3
    assert hermes.count_tool_calls(tmp_path / "missing.db") is None


def test_pi_counts_tool_calls_and_usage_in_its_session_log(tmp_path):
    sessions = tmp_path / "sessions" / "--work-ws--"
    sessions.mkdir(parents=True)
    lines = [
        {"type": "session", "id": "s"},
        {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}},
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "name": "bash"}, {"type": "toolCall", "name": "read"}],
                "usage": {"input": 100, "output": 10},
            },
        },
        {"type": "message", "message": {"role": "toolResult", "toolName": "bash"}},
        {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}},
    ]
    (sessions / "2026-11-29_x.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\nnot json\n")
    result = PiLauncher(install=tmp_path).finish(spec(), tmp_path, outcome(0))
    assert result.tool_calls == 2 and result.usage == {"input": 100, "output": 10}
    assert result.session_log == sessions / "2026-11-29_x.jsonl" and result.ok
    missing = PiLauncher(install=tmp_path).finish(spec(), tmp_path / "nothing", outcome(1))
    assert missing.tool_calls is None and not missing.ok


def test_opencode_counts_tool_parts_in_its_database(tmp_path):
    db = tmp_path / "home" / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    parts = [{"type": "tool", "tool": "bash"}, {"type": "text"}, {"type": "tool", "tool": "write"}, "x"]
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE part (id TEXT, data TEXT)")
        conn.executemany(
            "INSERT INTO part VALUES (?, ?)", [(str(i), json.dumps(p)) for i, p in enumerate(parts)]
        )
    result = OpencodeLauncher(install=tmp_path).finish(spec(), tmp_path, outcome(0))
    assert result.tool_calls == 2 and result.session_log == db
    assert opencode.count_tool_calls(tmp_path / "missing.db") is None


def test_shell_script_renders_files_env_cwd_and_stdin_for_a_sandbox(tmp_path):
    invocation = OpencodeLauncher(install=Path("/opt/h")).prepare(spec(instruction="it's $HOME `x`"), RUN)
    script = invocation.shell_script()
    assert "cat > /runs/r1/opencode.json <<'HARNESS_FILE_0_EOF'" in script
    assert "export PWD=/work/ws" in script and "cd /work/ws" in script
    assert script.rstrip().endswith("it's $HOME `x`\nHARNESS_STDIN_EOF")


def test_shell_script_runs_as_written(tmp_path):
    home = tmp_path / "home"
    invocation = Invocation(
        argv=("bash", "-c", 'cat "$CONF"; printf "%s|" "$PWD"; cat'),
        env={"CONF": str(home / "c.txt"), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        files={home / "c.txt": "conf 'q' $X\n"},
        stdin="from stdin $HOME",
    )
    out = subprocess.run(
        ["bash", "-c", invocation.shell_script()], capture_output=True, text=True, check=True
    )
    assert out.stdout == f"conf 'q' $X\n\n{tmp_path}|from stdin $HOME\n"


def test_run_invocation_feeds_stdin_and_kills_the_whole_group_on_timeout(tmp_path):
    echo = Invocation(("bash", "-c", "cat; echo err >&2"), {"PATH": "/usr/bin:/bin"}, tmp_path, stdin="hello")
    done = run_invocation(echo, timeout_s=20)
    assert (done.exit_code, done.stdout, done.stderr, done.timed_out) == (0, "hello", "err\n", False)
    late = tmp_path / "late.txt"
    slow = Invocation(
        ("bash", "-c", f"(sleep 1; touch {late}) & sleep 30"), {"PATH": "/usr/bin:/bin"}, tmp_path
    )
    start = time.monotonic()
    stuck = run_invocation(slow, timeout_s=0.5)
    assert stuck.timed_out and stuck.exit_code is None and time.monotonic() - start < 5
    time.sleep(1.2)
    assert not late.exists()


def test_inside_the_sandbox_the_guard_is_the_forwarded_port_with_the_same_path():
    assert sandboxed.inside_url("http://10.0.0.5:9000/s/r-1/v1", 8000) == "http://127.0.0.1:8000/s/r-1/v1"


def test_the_sandbox_script_keeps_the_records_only_after_the_harness_ended_and_keeps_its_exit_code():
    inside = spec(workspace=sandboxed.INSIDE_WORKSPACE)
    script = sandboxed.sandbox_script(PiLauncher(install=Path("/opt/h")), inside)
    head, tail = script.split("-p 'Fix the bug in '\"'\"'app.py'\"'\"'.' </dev/null\n")
    assert "PI_CODING_AGENT_DIR=/tmp/harness-run/home/.pi/agent" in head and "cd /workspace" in head
    keep = "rm -rf /workspace/.harness-run; cp -a /tmp/harness-run /workspace/.harness-run 2>/dev/null"
    assert tail == f"rc=$?\n{keep}\nexit $rc\n"


def test_harness_binds_name_the_install_and_the_python_the_hermes_venv_was_made_from(tmp_path):
    (tmp_path / "hermes-venv").mkdir()
    (tmp_path / "hermes-venv" / "pyvenv.cfg").write_text("home = /opt/py/3.11/bin\nversion = 3.11.7\n")
    assert sandboxed.harness_binds(tmp_path) == (tmp_path.resolve(), Path("/opt/py/3.11"))


def test_harness_binds_name_the_node_on_path_when_pi_is_installed(tmp_path, monkeypatch):
    """pi's bin is ``#!/usr/bin/env node`` and a Docker image's own node may be too old for it."""
    (tmp_path / "install" / "pi").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").write_text("#!/bin/sh\n")
    (bin_dir / "node").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert sandboxed.harness_binds(tmp_path / "install") == (
        (tmp_path / "install").resolve(),
        bin_dir / "node",
    )
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert sandboxed.harness_binds(tmp_path / "install") == ((tmp_path / "install").resolve(),)


@pytest.mark.parametrize(
    ("exit_code", "timed_out", "signal"),
    [
        (0, False, None),
        (1, False, None),
        (-9, False, 9),
        (137, False, 9),
        (143, False, 15),
        (None, True, None),
    ],
)
def test_a_harness_ended_from_outside_names_the_signal(exit_code, timed_out, signal):
    from environments.harnesses.base import LaunchResult

    result = LaunchResult("pi", exit_code, timed_out, 1.0, "", "")
    assert result.killed_by == signal


def test_harnesses_installed_behind_a_link_run_from_the_folder_the_sandbox_binds(tmp_path, monkeypatch):
    """``.harnesses`` linked from another checkout: the sandbox binds the real folder, so each binary must
    be named by its real path (through the link it did not exist inside, and every session failed)."""
    from environments.harnesses import PiLauncher
    from environments.harnesses.sandboxed import harness_binds

    real = tmp_path / "real-install"
    (real / "pi").mkdir(parents=True)
    link = tmp_path / "checkout" / ".harnesses"
    link.parent.mkdir()
    link.symlink_to(real)
    monkeypatch.setenv("HA_HARNESSES", str(link))
    binds = harness_binds()
    assert binds[0] == real
    assert PiLauncher().binary.is_relative_to(binds[0])
