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

from environments.harnesses.base import PERSONAL_PROVIDER, LaunchSpec

PROVIDER = PERSONAL_PROVIDER


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


def config_edits(
    harness: str, home: Path, endpoint: Endpoint, env: dict[str, str] | None = None
) -> dict[Path, str]:
    """The new content of each config file the harness reads by default (its own override variables
    respected): what is there, plus our provider as the default model (the harness's module writes it)."""
    from environments.harnesses.registry import harness_spec

    return harness_spec(harness).personal_config(
        home, dict(os.environ if env is None else env), endpoint.spec()
    )


def config_paths(harness: str, home: Path, env: dict[str, str] | None = None) -> list[Path]:
    """The files the harness reads by default."""
    return list(config_edits(harness, home, Endpoint("http://127.0.0.1:1/v1", "probe"), env))


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
