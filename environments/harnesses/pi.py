"""pi (``@mariozechner/pi-coding-agent``, pinned in ``scripts/harness-deps.sh``) run headless: ``pi -p``.

Config (``shared/harnesses/NOTES.md`` section 3): ``$PI_CODING_AGENT_DIR/models.json`` declares the
provider ``guard`` (OpenAI completions at the guard's rollout URL, the adapter as the one model) with the
compat flags that make pi send ``max_tokens`` and no ``store``/developer role/reasoning effort;
``settings.json`` makes it the default. pi prints only the final answer; its session log (one JSONL file
under ``--session-dir``) holds each tool call as an assistant ``toolCall`` content block, and usage per
assistant message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.harnesses.base import (
    PERSONAL_PROVIDER,
    Invocation,
    LaunchResult,
    LaunchSpec,
    ProcessOutcome,
    basic_result,
    install_root,
    isolated_env,
    read_json_object,
)
from environments.harnesses.steps import Edit, Read, Shell, Write
from environments.harnesses.tools import StepTools, ToolRole

PROVIDER = "guard"
STEP_TOOLS = StepTools(shell="bash", read="read", write="write", edit="edit")
TOOL_ROLES = {**STEP_TOOLS.roles(), "grep": ToolRole.SEARCH, "find": ToolRole.SEARCH, "ls": ToolRole.SEARCH}
"""Every tool pi has (its built-in seven); ``TOOLS`` turns on the four a task needs."""
TOOLS = (STEP_TOOLS.read, STEP_TOOLS.shell, STEP_TOOLS.edit, STEP_TOOLS.write)


def models_json(spec: LaunchSpec) -> dict[str, object]:
    return {
        "providers": {
            PROVIDER: {
                "baseUrl": spec.base_url,
                "api": "openai-completions",
                "apiKey": "GUARD_API_KEY",  # the name of the env var holding it
                "compat": {
                    "supportsDeveloperRole": False,
                    "supportsReasoningEffort": False,
                    "supportsStore": False,
                    "maxTokensField": "max_tokens",
                },
                "models": [
                    {"id": spec.model, "contextWindow": spec.context_window, "maxTokens": spec.max_tokens}
                ],
            }
        }
    }


def settings_json(spec: LaunchSpec) -> dict[str, object]:
    return {"defaultProvider": PROVIDER, "defaultModel": spec.model, "quietStartup": True}


def command(binary: Path, spec: LaunchSpec, session_dir: Path) -> tuple[str, ...]:
    return (
        str(binary),
        "--provider", PROVIDER,
        "--model", spec.model,
        "--tools", ",".join(TOOLS),
        "--session-dir", str(session_dir),
        "--no-extensions", "--no-skills", "--no-context-files",
        "-p", spec.instruction,
    )  # fmt: skip


def count_tool_calls(session_dir: Path) -> tuple[int | None, dict[str, int] | None, Path | None]:
    """(tool calls, summed usage, log path) from pi's session JSONL; Nones when there is no log."""
    logs = sorted(session_dir.rglob("*.jsonl"))
    if not logs:
        return None, None, None
    calls, usage = 0, {"input": 0, "output": 0}
    for line in logs[-1].read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if entry.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, list):
            calls += sum(
                1 for block in content if isinstance(block, dict) and block.get("type") == "toolCall"
            )
        counts = message.get("usage")
        if isinstance(counts, dict):
            for key in usage:
                if isinstance(counts.get(key), int):
                    usage[key] += counts[key]
    return calls, usage, logs[-1]


@dataclass(frozen=True, slots=True)
class PiLauncher:
    install: Path | None = None
    """The ``.harnesses`` folder; ``install_root()`` when None."""
    name: str = "pi"

    @property
    def binary(self) -> Path:
        return (self.install or install_root()) / "pi" / "node_modules" / ".bin" / "pi"

    def prepare(self, spec: LaunchSpec, run_dir: Path) -> Invocation:
        home = run_dir / "home"
        agent_dir = home / ".pi" / "agent"
        env = isolated_env(
            home,
            {
                "PI_CODING_AGENT_DIR": str(agent_dir),
                "PI_OFFLINE": "1",
                "PI_SKIP_VERSION_CHECK": "1",
                "PI_TELEMETRY": "0",
                "GUARD_API_KEY": spec.api_key,
                "PWD": str(spec.workspace),
            },
        )
        files = {
            agent_dir / "models.json": json.dumps(models_json(spec), indent=2),
            agent_dir / "settings.json": json.dumps(settings_json(spec), indent=2),
        }
        argv = command(self.binary, spec, run_dir / "sessions")
        return Invocation(argv=argv, env=env, cwd=spec.workspace, files=files)

    def finish(self, spec: LaunchSpec, run_dir: Path, outcome: ProcessOutcome) -> LaunchResult:
        calls, usage, log = count_tool_calls(run_dir / "sessions")
        return basic_result(self.name, outcome, tool_calls=calls, usage=usage, session_log=log)


# -- the registry's pieces (``environments.harnesses.registry``) ---------------------------------


def personal_config(home: Path, env: Mapping[str, str], spec: LaunchSpec) -> dict[Path, str]:
    """A person's own pi config (``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``) with our provider
    added as the default model, every other setting kept."""
    agent = Path(env.get("PI_CODING_AGENT_DIR") or home / ".pi" / "agent")
    models_path, settings_path = agent / "models.json", agent / "settings.json"
    provider = {**models_json(spec)["providers"][PROVIDER], "apiKey": spec.api_key}  # type: ignore[index]
    models = read_json_object(models_path)
    models["providers"] = {**models.get("providers", {}), PERSONAL_PROVIDER: provider}
    settings = read_json_object(settings_path) | {
        "defaultProvider": PERSONAL_PROVIDER,
        "defaultModel": spec.model,
    }
    return {
        models_path: json.dumps(models, indent=2) + "\n",
        settings_path: json.dumps(settings, indent=2) + "\n",
    }


def user_message(instruction: str) -> dict[str, Any]:
    """pi sends the user's text as content parts."""
    return {"role": "user", "content": [{"type": "text", "text": instruction}]}


def render_step(step: Any) -> list[tuple[str, dict[str, Any], str]]:
    """A demonstration step as pi's tool calls and their results (its own result texts)."""
    if isinstance(step, Shell):
        out = step.output or "(no output)"
        if step.exit_code:
            out = f"{step.output}\n\nCommand exited with code {step.exit_code}"
        return [(STEP_TOOLS.shell, {"command": step.command}, out)]
    if isinstance(step, Read):
        return [(STEP_TOOLS.read, {"path": step.path}, step.text)]
    if isinstance(step, Write):
        n = len(step.content)
        return [
            (
                STEP_TOOLS.write,
                {"path": step.path, "content": step.content},
                f"Successfully wrote {n} bytes to {step.path}",
            )
        ]
    edits = [{"oldText": old, "newText": new} for old, new in step.edits]
    return [
        (
            STEP_TOOLS.edit,
            {"path": step.path, "edits": edits},
            f"Successfully replaced {len(edits)} block(s) in {step.path}.",
        )
    ]


def parse_call(name: str, a: dict[str, Any], result: Any = None) -> Any:
    """A tool call of a recorded session back to a demonstration step (None: not a file or shell call);
    ``result``, the call's tool result, gives a read's file text (pi returns it as it is)."""
    if name == STEP_TOOLS.shell:
        return Shell(str(a.get("command", "")), "")
    if name == STEP_TOOLS.read:
        return Read(a.get("path", ""), result if isinstance(result, str) else "")
    if name == STEP_TOOLS.write:
        return Write(a.get("path", ""), str(a.get("content", "")))
    if name == STEP_TOOLS.edit:
        edits = tuple((str(e.get("oldText", "")), str(e.get("newText", ""))) for e in a.get("edits", []))
        return Edit(a.get("path", ""), edits, "", "")
    return None
