"""opencode (the ``opencode-linux-x64`` binary, pinned in ``scripts/harness-deps.sh``) run headless:
``opencode run --auto --pure`` with the instruction on stdin.

Config (``shared/harnesses/NOTES.md`` section 3): an ``opencode.json`` in the run folder, named by
``OPENCODE_CONFIG`` so the workspace stays untouched, with one provider ``guard``
(``@ai-sdk/openai-compatible``, bundled in the binary) whose only model is the adapter; tools the task
does not need are denied (a denied tool is not offered to the model at all), the title request is
disabled, and ``OPENCODE_DISABLE_*`` stop the models.dev fetch, auto-update, LSP downloads and sharing;
``npm_config_offline`` stops its background npm registry fetch, so a run makes no connection but the
guard's.

Quirks handled here: an instruction given as an argument reaches the model wrapped in literal quotes,
so it goes on stdin; and opencode resolves relative paths against the inherited ``PWD``, not its cwd, so
``PWD`` is set to the workspace. Its session store is SQLite at ``$XDG_DATA_HOME/opencode/opencode.db``;
tool calls are ``part`` rows whose JSON ``data.type`` is ``tool``.
"""

from __future__ import annotations

import json
import re
import sqlite3
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
from environments.harnesses.steps import WORKSPACE, Edit, Read, Shell, Write, numbered, unnumbered
from environments.harnesses.tools import StepTools, ToolRole

PROVIDER = "guard"
STEP_TOOLS = StepTools(shell="bash", read="read", write="write", edit="edit")
TOOL_ROLES = {
    **STEP_TOOLS.roles(),
    "apply_patch": ToolRole.EDIT,
    "multiedit": ToolRole.EDIT,
    "glob": ToolRole.SEARCH,
    "grep": ToolRole.SEARCH,
    "list": ToolRole.SEARCH,
    "webfetch": ToolRole.FETCH,
    "websearch": ToolRole.WEB_SEARCH,
    "task": ToolRole.DELEGATE,
    "todowrite": ToolRole.INERT,
    "todoread": ToolRole.INERT,
    "skill": ToolRole.INERT,
}
"""The tools opencode may offer (its versions' built-in ones); ``DENIED_TOOLS`` turns some off."""
DENIED_TOOLS = ("webfetch", "task", "skill", "todowrite")
DISABLE_FLAGS = ("MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "SHARE", "DEFAULT_PLUGINS")
# opencode installs `@opencode-ai/plugin` into its config folder with a bundled npm client, fetching
# https://registry.npmjs.org in the background on every run (seen with strace; the run works without it).
NPM_OFFLINE = {"npm_config_offline": "true", "npm_config_registry": "http://127.0.0.1:9/"}


def opencode_json(spec: LaunchSpec) -> dict[str, object]:
    model = f"{PROVIDER}/{spec.model}"
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Guard proxy",
                "options": {"baseURL": spec.base_url, "apiKey": "{env:GUARD_API_KEY}"},
                "models": {
                    spec.model: {
                        "name": spec.model,
                        "tool_call": True,
                        "limit": {"context": spec.context_window, "output": spec.max_tokens},
                    }
                },
            }
        },
        "model": model,
        "small_model": model,
        "enabled_providers": [PROVIDER],
        "autoupdate": False,
        "share": "disabled",
        "permission": {
            "*": "allow",
            **dict.fromkeys(DENIED_TOOLS, "deny"),
            "external_directory": "allow",
            "doom_loop": "allow",
        },
        "agent": {"title": {"disable": True}},
    }


def command(binary: Path, spec: LaunchSpec) -> tuple[str, ...]:
    return (str(binary), "run", "--auto", "--pure", "-m", f"{PROVIDER}/{spec.model}")


def count_tool_calls(db: Path) -> int | None:
    """Tool parts in opencode's session database; None when it is missing or unreadable."""
    if not db.exists():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT data FROM part").fetchall()
    except sqlite3.Error:
        return None
    calls = 0
    for (data,) in rows:
        try:
            calls += json.loads(data).get("type") == "tool"
        except (ValueError, TypeError, AttributeError):
            continue
    return calls


@dataclass(frozen=True, slots=True)
class OpencodeLauncher:
    install: Path | None = None
    """The ``.harnesses`` folder; ``install_root()`` when None."""
    name: str = "opencode"

    @property
    def binary(self) -> Path:
        root = self.install or install_root()
        return root / "opencode" / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"

    def prepare(self, spec: LaunchSpec, run_dir: Path) -> Invocation:
        home = run_dir / "home"
        config = run_dir / "opencode.json"
        extra = {f"OPENCODE_DISABLE_{flag}": "1" for flag in DISABLE_FLAGS}
        extra |= NPM_OFFLINE
        extra |= {"OPENCODE_CONFIG": str(config), "GUARD_API_KEY": spec.api_key, "PWD": str(spec.workspace)}
        return Invocation(
            argv=command(self.binary, spec),
            env=isolated_env(home, extra),
            cwd=spec.workspace,
            files={config: json.dumps(opencode_json(spec), indent=2)},
            stdin=spec.instruction,
        )

    def finish(self, spec: LaunchSpec, run_dir: Path, outcome: ProcessOutcome) -> LaunchResult:
        db = run_dir / "home" / ".local" / "share" / "opencode" / "opencode.db"
        calls = count_tool_calls(db)
        return basic_result(self.name, outcome, tool_calls=calls, session_log=db if db.exists() else None)


# -- the registry's pieces (``environments.harnesses.registry``) ---------------------------------


def personal_config(home: Path, env: Mapping[str, str], spec: LaunchSpec) -> dict[Path, str]:
    """A person's own ``opencode.json`` (under ``$XDG_CONFIG_HOME``, else ``~/.config``) with our provider
    added as the default model, every other setting kept."""
    path = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "opencode" / "opencode.json"
    provider = {
        **opencode_json(spec)["provider"][PROVIDER],  # type: ignore[index]
        "name": PERSONAL_PROVIDER,
        "options": {"baseURL": spec.base_url, "apiKey": spec.api_key},
    }
    config = read_json_object(path)
    config.setdefault("$schema", "https://opencode.ai/config.json")
    config["provider"] = {**config.get("provider", {}), PERSONAL_PROVIDER: provider}
    config["model"] = f"{PERSONAL_PROVIDER}/{spec.model}"
    config["small_model"] = config["model"]
    if "enabled_providers" in config:
        config["enabled_providers"] = sorted({*config["enabled_providers"], PERSONAL_PROVIDER})
    return {path: json.dumps(config, indent=2) + "\n"}


def user_message(instruction: str) -> dict[str, Any]:
    return {"role": "user", "content": instruction}


def render_step(step: Any) -> list[tuple[str, dict[str, Any], str]]:
    """A demonstration step as opencode's tool calls and their results (absolute paths, numbered reads)."""
    if isinstance(step, Shell):
        return [(STEP_TOOLS.shell, {"command": step.command}, step.output)]
    full = f"{WORKSPACE}/{step.path}"
    if isinstance(step, Read):
        lines = numbered(step.text, ": ")
        body = "\n".join(lines)
        end = f"(End of file - total {len(lines)} lines)"
        out = f"<path>{full}</path>\n<type>file</type>\n<content>\n{body}\n\n{end}\n</content>"
        return [(STEP_TOOLS.read, {"filePath": full}, out)]
    if isinstance(step, Write):
        return [(STEP_TOOLS.write, {"content": step.content, "filePath": full}, "Wrote file successfully.")]
    return [
        (
            STEP_TOOLS.edit,
            {"filePath": full, "oldString": old, "newString": new},
            "Edit applied successfully.",
        )
        for old, new in step.edits
    ]


def parse_call(name: str, a: dict[str, Any], result: Any = None) -> Any:
    """A tool call of a recorded session back to a demonstration step (None: not a file or shell call);
    ``result``, the call's tool result, gives a read's file text (numbered lines inside
    ``<content>``; "" when it is not that)."""
    if name == STEP_TOOLS.shell:
        return Shell(str(a.get("command", "")), "")
    if name == STEP_TOOLS.read:
        text = result if isinstance(result, str) else ""
        match = re.search(r"<content>\n(.*?)\n\n\(End of file", text, re.DOTALL)
        lines = match.group(1).splitlines() if match else []
        return Read(a.get("filePath", ""), unnumbered(lines, ": "))
    if name == STEP_TOOLS.write:
        return Write(a.get("filePath", ""), str(a.get("content", "")))
    if name == STEP_TOOLS.edit:
        return Edit(
            a.get("filePath", ""), ((str(a.get("oldString", "")), str(a.get("newString", ""))),), "", ""
        )
    return None
