"""Model cards for trained adapters: ``README.md`` with the YAML front matter model hubs render.

The trainer writes one into every checkpoint it saves (base model, harness, training config); the
evaluation job fills in its section with that checkpoint's rows of the evaluation table. ``push`` uploads
an adapter folder with its card (``python -m jobs.use --adapter DIR --push OWNER/NAME``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from environments.errors import UserError, one_line

CARD = "README.md"
EVALUATION = "## Evaluation"
NOT_EVALUATED = "Not evaluated yet: `python -m jobs.evaluate` fills this in.\n"


class PushError(UserError, RuntimeError):
    """An adapter that cannot be pushed: no card in the folder, or no hub reachable; says the fix."""


def render_card(
    base_model: str, harness: str, name: str, training: dict[str, Any], evaluation: str = ""
) -> str:
    tags = ["lora", "peft", "grpo", "trl", "coding-agent", "harness-adapters", harness]
    front = ["---", f"base_model: {base_model}", "library_name: peft", "license: apache-2.0"]
    front += ["pipeline_tag: text-generation", "tags:", *(f"- {t}" for t in tags), "---", ""]
    rows = "\n".join(f"| {key} | {value} |" for key, value in training.items())
    body = f"""# {name}

A LoRA adapter for `{base_model}`, trained with asynchronous GRPO inside the real **{harness}** coding-agent
harness (harness-adapters): rewards from task verifiers, every tool call checked by the guard, blocked
rollouts scored 0. It speaks {harness}'s own tool vocabulary and is meant to be used from {harness}.

## Use

```bash
python -m jobs.use --harness {harness} --adapter <this folder>
```

serves the base model with this adapter and points your {harness} config at it (`--undo` restores it).

## Training

| setting | value |
|---|---|
{rows}

{EVALUATION}

{evaluation or NOT_EVALUATED}"""
    return "\n".join(front) + body


def card_name(model: str) -> str:
    """A model as a card names it: a Hub id as it is, a local folder by its own name (a cache path means
    nothing on another machine, and says where this one keeps its files)."""
    return Path(model).name if model.startswith(("/", "~", ".")) else model


def write_card(folder: Path, base_model: str, harness: str, training: dict[str, Any]) -> Path:
    from actors.serving.gguf import source_name

    base_model = source_name(base_model) or card_name(base_model)  # a converted GGUF: what it came from
    path = Path(folder) / CARD
    path.write_text(render_card(base_model, harness, Path(folder).name, training))
    return path


def set_evaluation(folder: Path, evaluation: str) -> bool:
    """Replace the card's evaluation section with ``evaluation``; False when the folder has no card."""
    path = Path(folder) / CARD
    if not path.is_file():
        return False
    text = path.read_text()
    head, found, _old = text.partition(EVALUATION)
    if not found:
        head = text.rstrip("\n") + "\n\n"
    path.write_text(f"{head}{EVALUATION}\n\n{evaluation.rstrip()}\n")
    return True


def push(folder: Path, repo_id: str, token: str | None = None) -> str:
    """Upload the adapter folder (card included) to a model hub repo; its URL. A PushError with the reason
    and the fix when the folder has no card or no hub is reachable (no network, offline, no token)."""
    if not (Path(folder) / CARD).is_file():
        raise PushError(f"{folder} has no {CARD}: push a checkpoint folder the training wrote")
    try:
        from huggingface_hub import HfApi
        from huggingface_hub import errors as hub_errors
    except ImportError as exc:  # pragma: no cover - a dependency of transformers
        raise RuntimeError("huggingface_hub is not installed") from exc
    # The hub's HTTP client raises its own errors for a refused or failed connection (httpx's, not OSError)
    transport = getattr(hub_errors, "HTTPError", OSError)
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, exist_ok=True)
        info = api.upload_folder(folder_path=str(folder), repo_id=repo_id)
    except hub_errors.OfflineModeIsEnabled as exc:
        raise PushError(f"cannot push to {repo_id}: offline mode is on (unset HF_HUB_OFFLINE)") from exc
    except hub_errors.LocalTokenNotFoundError as exc:
        raise PushError(f"cannot push to {repo_id}: no hub token; run hf auth login or set HF_TOKEN") from exc
    except (OSError, transport) as exc:
        raise PushError(
            f"cannot push to {repo_id}: the hub is not reachable ({one_line(exc)}); check the network and "
            "your token (hf auth login)"
        ) from exc
    return str(getattr(info, "commit_url", "") or f"https://huggingface.co/{repo_id}")
