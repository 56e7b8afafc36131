"""hermes (``hermes-agent`` from PyPI in its own venv, pinned in ``scripts/harness-deps.sh``) run headless:
``hermes -z INSTRUCTION -t terminal,file --usage-file FILE``.

Config (``shared/harnesses/NOTES.md`` section 3): ``$HERMES_HOME/config.yaml`` with a custom provider at
the guard's rollout URL and the adapter as model. ``context_length`` must claim at least 64000 tokens
(hermes refuses to start below that) and ``max_tokens`` is set (it sends 65536 otherwise). The tool set
comes from ``-t`` (the config's ``toolsets`` key does not limit the CLI).

Hermes exits 0 when the model API fails (a 4xx, or 5xx after its retries); the run counts as failed when
the usage file says ``"failed": true`` or was not written. Its session store is SQLite at
``$HERMES_HOME/state.db`` with a ``sessions.tool_call_count`` column.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.harnesses.base import (
    Invocation,
    LaunchResult,
    LaunchSpec,
    ProcessOutcome,
    basic_result,
    install_root,
    isolated_env,
    read_yaml_mapping,
)
from environments.harnesses.steps import Edit, Read, Shell, Write, numbered, unnumbered
from environments.harnesses.tools import StepTools, ToolRole

MIN_CONTEXT = 64000
STEP_TOOLS = StepTools(shell="terminal", read="read_file", write="write_file", edit="patch")
TOOL_ROLES = {
    **STEP_TOOLS.roles(),
    "process": ToolRole.SHELL_INPUT,
    "execute_code": ToolRole.CODE,
    "search_files": ToolRole.SEARCH,
    "session_search": ToolRole.SESSION_SEARCH,
    "web_extract": ToolRole.FETCH,
    "browser_navigate": ToolRole.FETCH,
    "web_search": ToolRole.WEB_SEARCH,
    "delegate_task": ToolRole.DELEGATE,
    "todo": ToolRole.INERT,
    "memory": ToolRole.INERT,
    "clarify": ToolRole.INERT,
    "skills_list": ToolRole.INERT,
    "skill_view": ToolRole.INERT,
    "skill_manage": ToolRole.INERT,
    "vision_analyze": ToolRole.INERT,
}
"""The hermes tools the guard reads by role (``TOOLSETS`` turns on the terminal and file ones); any
other (its browser clicks, messaging, home automation) the guard judges as an unknown tool."""
TOOLSETS = ("terminal", "file")


def config_yaml(spec: LaunchSpec) -> str:
    """The config as YAML (JSON scalars are valid YAML, so no YAML library is needed)."""
    if spec.context_window < MIN_CONTEXT:
        raise ValueError(
            f"launch.context_window={spec.context_window}: hermes refuses less than {MIN_CONTEXT}; "
            "serve the model with max_model_len >= 64000 or claim it here"
        )
    model = {
        "provider": "custom",
        "default": spec.model,
        "base_url": spec.base_url,
        "api_key": spec.api_key,
        "context_length": spec.context_window,
        "max_tokens": spec.max_tokens,
    }
    lines = ["model:"] + [f"  {key}: {json.dumps(value)}" for key, value in model.items()]
    return "\n".join(lines) + "\n"


def command(binary: Path, spec: LaunchSpec, usage_file: Path) -> tuple[str, ...]:
    return (str(binary), "-z", spec.instruction, "-t", ",".join(TOOLSETS), "--usage-file", str(usage_file))


def read_usage(usage_file: Path) -> dict[str, object] | None:
    try:
        usage = json.loads(usage_file.read_text())
    except (OSError, ValueError):
        return None
    return usage if isinstance(usage, dict) else None


def count_tool_calls(db: Path) -> int | None:
    if not db.exists():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            (total,) = conn.execute("SELECT COALESCE(SUM(tool_call_count), 0) FROM sessions").fetchone()
    except sqlite3.Error:
        return None
    return int(total)


@dataclass(frozen=True, slots=True)
class HermesLauncher:
    install: Path | None = None
    """The ``.harnesses`` folder; ``install_root()`` when None."""
    name: str = "hermes"

    @property
    def binary(self) -> Path:
        return (self.install or install_root()) / "hermes-venv" / "bin" / "hermes"

    def prepare(self, spec: LaunchSpec, run_dir: Path) -> Invocation:
        home = run_dir / "home"
        hermes_home = home / ".hermes"
        env = isolated_env(home, {"HERMES_HOME": str(hermes_home), "PWD": str(spec.workspace)})
        return Invocation(
            argv=command(self.binary, spec, run_dir / "usage.json"),
            env=env,
            cwd=spec.workspace,
            files={hermes_home / "config.yaml": config_yaml(spec)},
        )

    def finish(self, spec: LaunchSpec, run_dir: Path, outcome: ProcessOutcome) -> LaunchResult:
        usage = read_usage(run_dir / "usage.json")
        # A missing usage file after a normal end means hermes never got to run the task.
        failed = not outcome.timed_out and (usage is None or bool(usage.get("failed")))
        db = run_dir / "home" / ".hermes" / "state.db"
        return basic_result(
            self.name,
            outcome,
            failed=failed,
            usage=usage,
            tool_calls=count_tool_calls(db),
            session_log=db if db.exists() else None,
        )


# -- the registry's pieces (``environments.harnesses.registry``) ---------------------------------


def personal_config(home: Path, env: Mapping[str, str], spec: LaunchSpec) -> dict[Path, str]:
    """A person's own ``config.yaml`` (under ``$HERMES_HOME``, else ``~/.hermes``) with its ``model``
    pointed at ours, every other setting kept."""
    import yaml

    path = Path(env.get("HERMES_HOME") or home / ".hermes") / "config.yaml"
    config = read_yaml_mapping(path)
    config["model"] = yaml.safe_load(config_yaml(spec))["model"]
    return {path: yaml.safe_dump(config, sort_keys=False)}


def user_message(instruction: str) -> dict[str, Any]:
    return {"role": "user", "content": instruction}


def render_step(step: Any) -> list[tuple[str, dict[str, Any], str]]:
    """A demonstration step as hermes's tool calls and their JSON results (``patch`` with its diff)."""
    import difflib

    if isinstance(step, Shell):
        result = {"output": step.output.rstrip(), "exit_code": step.exit_code, "error": None}
        return [(STEP_TOOLS.shell, {"command": step.command}, json.dumps(result, ensure_ascii=False))]
    if isinstance(step, Read):
        lines = numbered(step.text, "|")
        result = {
            "content": "\n".join(lines),
            "total_lines": step.text.count("\n"),
            "file_size": len(step.text.encode()),
            "truncated": False,
            "is_binary": False,
            "is_image": False,
        }
        return [(STEP_TOOLS.read, {"path": step.path}, json.dumps(result, ensure_ascii=False))]
    lint = {"status": "ok", "output": ""} if step.path.endswith(".py") else None
    if isinstance(step, Write):
        wrote: dict[str, Any] = {"bytes_written": len(step.content.encode()), "dirs_created": False}
        if lint:
            wrote["lint"] = lint
        args = {"path": step.path, "content": step.content}
        return [(STEP_TOOLS.write, args, json.dumps(wrote, ensure_ascii=False))]
    calls = []
    text = step.before
    for old, new in step.edits:
        after = text.replace(old, new, 1)
        diff = "".join(
            difflib.unified_diff(
                text.splitlines(keepends=True),
                after.splitlines(keepends=True),
                fromfile=f"a/{step.path}",
                tofile=f"b/{step.path}",
            )
        )
        patched: dict[str, Any] = {"success": True, "diff": diff, "files_modified": [step.path]}
        if lint:
            patched["lint"] = lint
        args = {"mode": "replace", "path": step.path, "old_string": old, "new_string": new}
        calls.append((STEP_TOOLS.edit, args, json.dumps(patched, ensure_ascii=False)))
        text = after
    return calls


def parse_call(name: str, a: dict[str, Any], result: Any = None) -> Any:
    """A tool call of a recorded session back to a demonstration step (None: not a file or shell call);
    ``result``, the call's tool result, gives a read's file text (JSON whose ``content``
    holds ``N|line`` lines; "" when it is not that)."""
    if name == STEP_TOOLS.shell:
        return Shell(str(a.get("command", "")), "")
    if name == STEP_TOOLS.read:
        try:
            content = str(json.loads(result).get("content", ""))
        except (TypeError, ValueError, AttributeError):
            content = ""
        return Read(a.get("path", ""), unnumbered(content.splitlines(), "|"))
    if name == STEP_TOOLS.write:
        return Write(a.get("path", ""), str(a.get("content", "")))
    if name == STEP_TOOLS.edit and a.get("mode", "replace") == "replace":
        return Edit(
            a.get("path", ""), ((str(a.get("old_string", "")), str(a.get("new_string", ""))),), "", ""
        )
    return None
