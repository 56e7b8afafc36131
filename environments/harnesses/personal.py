"""A person's own harness config pointed at a served adapter (``python -m jobs.use``), and undone again.

Unlike a rollout (whose launcher writes a throwaway config into an isolated home), this edits the files
the person's pi, opencode or hermes reads by default, keeping every setting already there: one provider
named ``harness-adapters`` is added (or replaced) and made the default model. The provider blocks are the
launchers' own (the same compat flags and limits that the rollouts were trained with), with a literal API
key instead of an environment variable. Every file's previous content (or its absence) is kept in a
manifest, and ``undo`` puts it back byte for byte.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from environments.harnesses import hermes, opencode, pi
from environments.harnesses.base import LaunchSpec

PROVIDER = "harness-adapters"
HARNESSES = ("pi", "opencode", "hermes")


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str
    """OpenAI base URL with its ``/v1`` (the server, or the standalone guard in front of it)."""
    model: str
    """The served adapter name."""
    api_key: str = "harness-adapters-local"
    max_tokens: int = 4096
    context_window: int = 65536

    def spec(self) -> LaunchSpec:
        return LaunchSpec(
            workspace=Path("."),
            instruction="(personal config)",
            base_url=self.base_url,
            model=self.model,
            api_key=self.api_key,
            max_tokens=self.max_tokens,
            context_window=self.context_window,
        )


def config_paths(harness: str, home: Path, env: dict[str, str] | None = None) -> list[Path]:
    """The files the harness reads by default (its own override variables respected)."""
    env = dict(os.environ if env is None else env)
    if harness == "pi":
        agent = Path(env.get("PI_CODING_AGENT_DIR") or home / ".pi" / "agent")
        return [agent / "models.json", agent / "settings.json"]
    if harness == "opencode":
        return [Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "opencode" / "opencode.json"]
    if harness == "hermes":
        return [Path(env.get("HERMES_HOME") or home / ".hermes") / "config.yaml"]
    raise ValueError(f"harness={harness!r}: choose one of {', '.join(HARNESSES)}")


def _json(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix or move it, then run again") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object; fix or move it, then run again")
    return data


def config_edits(
    harness: str, home: Path, endpoint: Endpoint, env: dict[str, str] | None = None
) -> dict[Path, str]:
    """The new content of each config file: what is there, plus our provider as the default model."""
    spec = endpoint.spec()
    paths = config_paths(harness, home, env)
    if harness == "pi":
        models_path, settings_path = paths
        provider = pi.models_json(spec)["providers"][pi.PROVIDER]  # type: ignore[index]
        provider = {**provider, "apiKey": endpoint.api_key}
        models = _json(models_path)
        models["providers"] = {**models.get("providers", {}), PROVIDER: provider}
        settings = _json(settings_path) | {"defaultProvider": PROVIDER, "defaultModel": endpoint.model}
        return {
            models_path: json.dumps(models, indent=2) + "\n",
            settings_path: json.dumps(settings, indent=2) + "\n",
        }
    if harness == "opencode":
        (path,) = paths
        provider = opencode.opencode_json(spec)["provider"][opencode.PROVIDER]  # type: ignore[index]
        provider = {
            **provider,
            "name": "harness-adapters",
            "options": {"baseURL": endpoint.base_url, "apiKey": endpoint.api_key},
        }
        config = _json(path)
        config.setdefault("$schema", "https://opencode.ai/config.json")
        config["provider"] = {**config.get("provider", {}), PROVIDER: provider}
        config["model"] = f"{PROVIDER}/{endpoint.model}"
        config["small_model"] = config["model"]
        if "enabled_providers" in config:
            config["enabled_providers"] = sorted({*config["enabled_providers"], PROVIDER})
        return {path: json.dumps(config, indent=2) + "\n"}
    (path,) = paths
    try:
        config = yaml.safe_load(path.read_text()) if path.exists() else {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{path} is not valid YAML ({exc}); fix or move it, then run again") from exc
    config = config or {}
    if not isinstance(config, dict):
        raise ValueError(f"{path} does not hold a YAML mapping; fix or move it, then run again")
    config["model"] = yaml.safe_load(hermes.config_yaml(spec))["model"]
    return {path: yaml.safe_dump(config, sort_keys=False)}


def apply_edits(edits: dict[Path, str], manifest: Path) -> None:
    """Write ``edits``, first recording each file's previous content (None: it did not exist) in
    ``manifest``; an existing manifest (an earlier run not undone) keeps the oldest originals."""
    previous: dict[str, str | None] = json.loads(manifest.read_text()) if manifest.exists() else {}
    for path in edits:
        previous.setdefault(str(path), path.read_text() if path.exists() else None)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(previous, indent=2) + "\n")
    for path, text in edits.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def undo(manifest: Path) -> list[str]:
    """Put every file recorded in ``manifest`` back as it was; return what was done, a line per file."""
    if not manifest.exists():
        raise FileNotFoundError(f"nothing to undo: {manifest} does not exist")
    done = []
    for name, text in json.loads(manifest.read_text()).items():
        path = Path(name)
        if text is None:
            path.unlink(missing_ok=True)
            done.append(f"removed {path} (it did not exist before)")
        else:
            path.write_text(text)
            done.append(f"restored {path}")
    manifest.unlink()
    return done
