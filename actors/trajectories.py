"""Each rollout's ATIF trajectory, saved beside its run for audits (``python -m serve.audit``).

The guard exports a rollout as an ATIF-v1.4 trajectory (``GET /rollouts/<id>/atif``) with its blocks,
adapter and allowlist under ``extra.guard``. ``save_trajectory`` writes it, without the per-token
payloads (token ids and logprobs, which the training rows already carry and no audit reads; the token
counts stay), as ``<folder>/<rollout_id>.json``, through a temporary file so a reader never sees half a
file. ``save_rollout_trajectory`` fetches and saves one rollout's and never raises: a failure is logged
and counted by the caller, and the rollout goes on.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from actors.storage import is_uri, open_storage

log = logging.getLogger(__name__)

TOKEN_PAYLOADS = ("prompt_token_ids", "completion_token_ids", "logprobs", "prompt_ids", "completion_ids")
UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def compact(atif: Mapping[str, object]) -> dict[str, object]:
    """The trajectory without per-token payloads (on each step's ``metrics`` and each turn of
    ``extra.guard.turns``); everything else as exported."""
    out = copy.deepcopy(dict(atif))
    steps = out.get("steps")
    for step in steps if isinstance(steps, list) else ():
        metrics = step.get("metrics") if isinstance(step, dict) else None
        if isinstance(metrics, dict):
            for key in TOKEN_PAYLOADS:
                metrics.pop(key, None)
    extra = out.get("extra")
    guard = extra.get("guard") if isinstance(extra, dict) else None
    turns = guard.get("turns") if isinstance(guard, dict) else None
    for turn in turns if isinstance(turns, list) else ():
        if isinstance(turn, dict):
            turn["prompt_tokens"] = len(turn.get("prompt_ids") or ())
            turn["completion_tokens"] = len(turn.get("completion_ids") or ())
            for key in TOKEN_PAYLOADS:
                turn.pop(key, None)
    return out


def trajectory_path(folder: Path, rollout_id: str) -> Path:
    return Path(folder) / f"{UNSAFE.sub('_', rollout_id)[:200] or 'rollout'}.json"


def save_trajectory(atif: Mapping[str, object], folder: Path | str, rollout_id: str) -> Path | str:
    """Write the compacted trajectory to ``<folder>/<rollout_id>.json`` (atomically); return its path.
    ``folder`` may be a storage URI (``actors.storage``): a rollout actor on any node writes there."""
    if isinstance(folder, str) and is_uri(folder):
        storage = open_storage(folder)
        name = trajectory_path(Path("."), rollout_id).name
        storage.fs.create_dir(storage.root, recursive=True)
        with storage.fs.open_output_stream(storage.path(name)) as stream:
            stream.write(json.dumps(compact(atif), separators=(",", ":")).encode())
        return storage.path(name)
    path = trajectory_path(Path(folder), rollout_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(compact(atif), separators=(",", ":")))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def save_rollout_trajectory(
    fetch: Callable[[str], Mapping[str, object]], rollout_id: str, folder: Path | str
) -> Path | str | None:
    """Fetch the rollout's trajectory with ``fetch(rollout_id)`` and save it; None (logged) on any failure."""
    try:
        return save_trajectory(fetch(rollout_id), folder, rollout_id)
    except Exception as exc:  # noqa: BLE001 - an audit copy must never fail a rollout
        log.warning("trajectory of rollout %s not saved: %s: %.200s", rollout_id, type(exc).__name__, exc)
        return None
