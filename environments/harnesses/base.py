"""Shared launch machinery for the coding-agent harnesses (pi, opencode, hermes) run headless against the
guard.

A launcher turns a ``LaunchSpec`` (workspace, instruction, the guard's OpenAI base URL for this rollout,
the adapter name as model, key, time limit) into an ``Invocation``: the config files the harness reads,
its argv, environment, working folder and stdin. That step is pure (``HarnessLauncher.prepare``), so
config rendering is tested without running anything. ``run_invocation`` runs it as a subprocess with
an isolated ``HOME`` and XDG folders inside the run folder (the harness never sees the user's own
config or credentials); the whole process group is killed on timeout. ``HarnessLauncher.finish`` then
reads the harness's own record of the run (its exit status is not enough: hermes exits 0 on API
errors) and its own count of tool calls, a cross-check of the guard's count.

Sandboxed runs: ``Invocation.shell_script()`` renders the same files, environment and command as one
bash script for ``Sandbox.run``; ``sandboxed.launch_in_sandbox`` uses it, with the guard reached through
a ``Forward``.

Errors: ``HarnessError`` (operator-facing: the harness is not installed, or the spec is unusable; the
message says what to run). A harness that fails, crashes or times out is a ``LaunchResult``, never raised.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from environments.errors import UserError

REPO = Path(__file__).resolve().parents[2]
DEFAULT_INSTALL = REPO / ".harnesses"
"""Where ``scripts/harness-deps.sh`` installs the pinned harnesses (override: ``HA_HARNESSES``)."""
_TAIL_CHARS = 4000


class HarnessError(UserError, RuntimeError):
    """The harness cannot be launched at all (not installed, bad spec); the message says what to do."""


def install_root() -> Path:
    """The install folder with links resolved: the sandbox binds the real folder (``harness_binds``), so a
    binary named through a link (``.harnesses`` linked from another checkout) would not exist inside."""
    return Path(os.environ.get("HA_HARNESSES") or DEFAULT_INSTALL).resolve()


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """One headless harness run against the guard."""

    workspace: Path
    """The folder the agent works in (its cwd); the harness's tools act on it."""
    instruction: str
    """The task text, sent as the first user message."""
    base_url: str
    """The guard's OpenAI base URL for this rollout, with its ``/v1``: ``http://HOST:P/s/<rollout>/v1``."""
    model: str
    """The adapter name; the harness sends it as ``model`` (the guard forwards the rollout's adapter)."""
    api_key: str = "sk-guard"
    """Sent as the bearer token; the guard never forwards it upstream."""
    timeout_s: float = 600.0
    """Wall-clock limit of the whole harness run; the process group is killed after it."""
    max_tokens: int = 4096
    """Completion tokens per model call (each harness's own field for it)."""
    context_window: int = 131072
    """The context the harness believes the model has; hermes refuses anything below 64000."""

    def __post_init__(self) -> None:
        if not self.instruction.strip():
            raise ValueError("launch.instruction: must not be empty")
        if not self.base_url.startswith(("http://", "https://")) or not self.base_url.rstrip("/").endswith(
            "/v1"
        ):
            raise ValueError(f"launch.base_url={self.base_url!r}: must be an http(s) URL ending in /v1")
        if not self.model or any(c.isspace() for c in self.model):
            raise ValueError(f"launch.model={self.model!r}: must be a non-empty name without spaces")
        if not self.timeout_s > 0:
            raise ValueError(f"launch.timeout_s={self.timeout_s!r}: must be > 0")
        if self.max_tokens < 1 or self.context_window < self.max_tokens:
            raise ValueError("launch.max_tokens must be >= 1 and <= launch.context_window")


@dataclass(frozen=True, slots=True)
class Invocation:
    """Everything needed to start one harness run; built by ``HarnessLauncher.prepare`` (pure)."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    """The complete environment (nothing is inherited)."""
    cwd: Path
    files: Mapping[Path, str] = field(default_factory=dict)
    """Config files to write before the start (absolute paths inside the run folder)."""
    stdin: str | None = None

    def write_files(self) -> None:
        for path, text in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def shell_script(self) -> str:
        """The invocation as one bash script (files written with heredocs, env exported, cwd entered):
        the form ``Sandbox.run`` takes. Paths must already be the ones the sandbox sees."""
        lines = ["set -e"]
        for i, (path, text) in enumerate(self.files.items()):
            marker = f"HARNESS_FILE_{i}_EOF"
            lines.append(f"mkdir -p {shlex.quote(str(path.parent))}")
            lines.append(f"cat > {shlex.quote(str(path))} <<'{marker}'\n{text}\n{marker}")
        lines += [f"export {key}={shlex.quote(value)}" for key, value in self.env.items()]
        lines.append(f"cd {shlex.quote(str(self.cwd))}")
        command = shlex.join(self.argv)
        if self.stdin is not None:
            marker = "HARNESS_STDIN_EOF"
            command += f" <<'{marker}'\n{self.stdin}\n{marker}"
        else:
            command += " </dev/null"
        lines.append("set +e")
        lines.append(command)
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """What the harness process did (before the launcher reads the harness's own records)."""

    exit_code: int | None
    """None when killed for running past ``timeout_s``."""
    timed_out: bool
    duration_s: float
    stdout: str
    stderr: str


@dataclass(frozen=True, slots=True)
class LaunchResult:
    """One harness run, as the rollout sees it."""

    harness: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str
    failed: bool = False
    """The harness reported a failed run itself (hermes: ``usage.failed``), whatever its exit code."""
    tool_calls: int | None = None
    """The harness's own count of tool calls (its session log), None when it could not be read."""
    usage: Mapping[str, object] | None = None
    """Token/API-call counts the harness reported, where it reports them."""
    session_log: Path | None = None
    """The harness's own session record (pi: JSONL, opencode/hermes: SQLite)."""
    records_problem: str = ""
    """Why the harness's own records could not be read as written (links or special files in them, or a
    launcher that failed on their contents); "" when they could. They pass through the agent's sandbox."""

    @property
    def ok(self) -> bool:
        """Ended on its own, exit 0, and did not report a failure."""
        return self.exit_code == 0 and not self.timed_out and not self.failed

    @property
    def killed_by(self) -> int | None:
        """The signal that ended the harness (a negative code, or a shell's 128+N), else None. The host
        sends one only on timeout (``timed_out``, never counted here), so any other signal may have come
        from inside the sandbox (a tool call's ``kill -9 $PPID``): the rollout scores it 0 once the model
        acted (``actors.rollout.judge_session``), never a free retry."""
        if self.timed_out or self.exit_code is None:
            return None
        if self.exit_code < 0:
            return -self.exit_code
        return self.exit_code - 128 if 128 < self.exit_code < 160 else None


class HarnessLauncher(Protocol):
    """Runs one harness headless; one instance per harness kind, shared by rollouts (holds no state)."""

    name: str

    def prepare(self, spec: LaunchSpec, run_dir: Path) -> Invocation:
        """Pure: the config files, argv, env and stdin for ``spec``; everything the harness writes goes
        under ``run_dir`` (its home, config, session log) except the agent's work in the workspace."""
        ...

    def finish(self, spec: LaunchSpec, run_dir: Path, outcome: ProcessOutcome) -> LaunchResult:
        """Read the harness's own records in ``run_dir`` after it ended (called once per run)."""
        ...


def tail(text: str, limit: int = _TAIL_CHARS) -> str:
    return text[-limit:]


def isolated_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A fresh environment: HOME and the XDG folders inside ``home``, PATH kept (node, python)."""
    path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    env = {
        "PATH": path,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
    }
    env.update(extra or {})
    return env


def run_invocation(invocation: Invocation, timeout_s: float) -> ProcessOutcome:
    """Write the config files and run the harness as a subprocess in its own process group."""
    invocation.write_files()
    Path(invocation.env.get("TMPDIR", tempfile.gettempdir())).mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                list(invocation.argv),
                cwd=invocation.cwd,
                env=dict(invocation.env),
                stdin=subprocess.PIPE if invocation.stdin is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            raise HarnessError(f"could not start {invocation.argv[0]}: {exc}") from exc
        timed_out = False
        try:
            if invocation.stdin is not None:
                assert proc.stdin is not None
                try:
                    proc.stdin.write(invocation.stdin.encode())
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
            proc.wait(timeout=max(0.0, start + timeout_s - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:  # the harness's children (tool commands, servers) go with it
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        duration = time.monotonic() - start
        texts = []
        for stream in (out, err):
            stream.seek(max(0, stream.seek(0, os.SEEK_END) - 4 * _TAIL_CHARS))
            texts.append(stream.read().decode("utf-8", "replace"))
    return ProcessOutcome(
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        duration_s=duration,
        stdout=texts[0],
        stderr=texts[1],
    )


def launch(launcher: HarnessLauncher, spec: LaunchSpec, run_dir: Path) -> LaunchResult:
    """Prepare, run as an isolated subprocess and read back one harness run; ``run_dir`` is created."""
    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    invocation = launcher.prepare(spec, run_dir)
    outcome = run_invocation(invocation, spec.timeout_s)
    return launcher.finish(spec, run_dir, outcome)


def basic_result(name: str, outcome: ProcessOutcome, **extra: object) -> LaunchResult:
    return LaunchResult(
        harness=name,
        exit_code=outcome.exit_code,
        timed_out=outcome.timed_out,
        duration_s=outcome.duration_s,
        stdout_tail=tail(outcome.stdout),
        stderr_tail=tail(outcome.stderr),
        **extra,  # type: ignore[arg-type]
    )


def require(path: Path, what: str) -> Path:
    if not path.exists():
        raise HarnessError(f"{what} is not installed at {path}: run scripts/harness-deps.sh")
    return path


PERSONAL_PROVIDER = "harness-adapters"
"""The provider ``jobs.use`` adds to a person's own harness config."""


def read_json_object(path: Path) -> dict:
    """A person's JSON config file as an object ({} when absent); an error names the fix."""
    import json

    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix or move it, then run again") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object; fix or move it, then run again")
    return data


def read_yaml_mapping(path: Path) -> dict:
    """A person's YAML config file as a mapping ({} when absent); an error names the fix."""
    import yaml

    try:
        config = yaml.safe_load(path.read_text()) if path.exists() else {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{path} is not valid YAML ({exc}); fix or move it, then run again") from exc
    config = config or {}
    if not isinstance(config, dict):
        raise ValueError(f"{path} does not hold a YAML mapping; fix or move it, then run again")
    return config
