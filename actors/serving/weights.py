"""Model weights from a local folder or the Hugging Face Hub, pinned to one revision for every process.

A preset's ``model`` is a folder or a Hub id (``LiquidAI/LFM2.5-24B-A2B``). A Hub id is fetched with
``huggingface_hub.snapshot_download`` (its progress bars) into a configurable cache, at a revision
resolved once to a commit hash, so the server and every trainer load the same weights even if the branch
moves during the run; the hash is what the run and the model cards record. Offline (``HF_HUB_OFFLINE``)
only when the caller says so (tests, air-gapped clusters): then the cache must already hold the revision.
A folder (the tiny model, a tiny agent, a converted GGUF, the preset's own) exists on the driver's node
only: on a cluster the job copies it to storage (``jobs.stack.model_for_nodes``) and names that copy, which
each process copies into its node's cache (``stored_model_copy``).

Before a server starts, ``check_model_files`` reads the folder's chat template against the tool-call
parser the preset names: a template that cannot render tools, or that never emits the parser's
tool-call marker, would serve a model whose calls nobody parses, so it is an error naming the fix.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.errors import UserError

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
# What each parser looks for in the model's output; the chat template (or the tokenizer's special tokens)
# must know it. Parsers not listed are checked for tool rendering only.
PARSER_MARKERS: dict[str, tuple[str, ...]] = {
    "hermes": ("<tool_call>",),
    "lfm2": ("<|tool_call_start|>",),
    "mistral": ("[TOOL_CALLS]",),
    "llama3_json": ("<|python_tag|>", '"parameters"', "parameters"),
    "qwen3_coder": ("<tool_call>", "<function="),
    "kimi_k2": ("<|tool_call_begin|>", "<|tool_calls_section_begin|>"),
    "granite": ("<|tool_call|>",),
    "jamba": ("<tool_calls>",),
    "internlm": ("<|action_start|>",),
}


class ModelSetupError(UserError, ValueError):
    """The model reference, its files or its template do not fit the preset; the message says the fix."""


@dataclass(frozen=True, slots=True)
class ModelSource:
    """Where a preset's weights come from."""

    ref: str
    """A local folder, or a Hub id ``org/name``."""
    revision: str = "main"
    """Branch, tag or commit of a Hub id (resolved to a commit before anything loads)."""
    cache_dir: str | None = None
    """The Hub cache (default: huggingface_hub's, ``HF_HOME``)."""
    offline: bool = False
    """Never reach the Hub: the cache must hold the revision (tests, air-gapped clusters)."""

    @property
    def is_hub(self) -> bool:
        return is_hub_id(self.ref)


@dataclass(frozen=True, slots=True)
class FetchedModel:
    """Weights on this node: the folder to load and the commit it holds (None for a local folder)."""

    path: Path
    commit: str | None


def is_hub_id(ref: str) -> bool:
    """``org/name`` that is not an existing folder (a relative ``models/x`` folder stays a folder)."""
    return bool(HUB_ID.match(ref)) and not Path(ref).exists() and not ref.startswith((".", "/", "~"))


def hub_offline_by_environment() -> bool:
    """``HF_HUB_OFFLINE`` set to a true value (huggingface_hub's own reading of it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def fetch_weights(source: ModelSource) -> FetchedModel:
    """The folder holding ``source``'s weights on this node, fetching a Hub id into the cache if needed and
    copying a model folder from storage (``stored_model_copy``)."""
    if "://" in source.ref:
        return FetchedModel(stored_model_copy(source.ref), None)
    if not source.is_hub:
        folder = Path(source.ref).expanduser()
        if not folder.is_dir():
            raise ModelSetupError(
                f"model {source.ref!r} is neither a folder nor a Hub id (org/name): give the folder that "
                "holds config.json or the model's Hub id"
            )
        return FetchedModel(folder.resolve(), None)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        path = snapshot_download(
            repo_id=source.ref,
            revision=source.revision,
            cache_dir=source.cache_dir,
            local_files_only=source.offline,
        )
    except LocalEntryNotFoundError as exc:
        where = source.cache_dir or os.environ.get("HF_HOME", "the default Hugging Face cache")
        if source.offline or hub_offline_by_environment():
            why, fix = (
                "offline mode is on",
                "fetch it once with network (offline: false, HF_HUB_OFFLINE unset)",
            )
        else:  # huggingface_hub falls back to the cache when the Hub cannot be reached, then says the same
            why, fix = "the Hub could not be reached", "fetch it once from a machine with network"
        raise ModelSetupError(
            f"model {source.ref}@{source.revision} is not in {where} and {why}: {fix}, or point cache_dir "
            "at a cache that holds it"
        ) from exc
    folder = Path(path)
    return FetchedModel(folder, folder.name if COMMIT.match(folder.name) else None)


def stored_model_name(folder: Path) -> str:
    """``<folder name>-<digest>``, the name a local model folder is stored under for the other nodes
    (``jobs.stack.model_for_nodes``): the digest covers every file's path, size and modification time, so a
    rebuilt or edited folder gets a new name, and no node's cached copy of the old one is taken for it."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return f"{folder.name}-{digest.hexdigest()[:12]}"


def stored_model_copy(location: str) -> Path:
    """A model folder in storage (``<storage>/models/<stored_model_name>``) as a folder on this node: copied
    once into ``<cache>/stored/<name>`` (the cache of ``environments.tiny_model``), under the lock of
    ``build_cached``, so a server and trainers sharing a node copy it once and never see half a copy."""
    from actors.storage import download, open_storage
    from environments.tiny_model.build import build_cached, cache_root

    name = location.rstrip("/").rsplit("/", 1)[-1]
    return build_cached(
        cache_root() / "stored" / name,
        ("config.json",),
        lambda staging: download(open_storage(location), "", staging),
    )


def pinned(source: ModelSource, fetched: FetchedModel) -> ModelSource:
    """The same source at the commit fetched, for every other process of the run."""
    if fetched.commit is None:
        return source
    return ModelSource(source.ref, fetched.commit, source.cache_dir, source.offline)


def chat_template(folder: Path) -> str | None:
    """The model's chat template: ``chat_template.jinja``, or the one in ``tokenizer_config.json``."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text()
    config = folder / "tokenizer_config.json"
    if not config.is_file():
        return None
    template = json.loads(config.read_text()).get("chat_template")
    if isinstance(template, list):  # named templates: the default one, else the tool-use one
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("tool_use") or named.get("default")
    return template if isinstance(template, str) else None


def _special_tokens(folder: Path) -> set[str]:
    out: set[str] = set()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        path = folder / name
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        for token in data.get("added_tokens", []) or []:
            if isinstance(token, dict) and isinstance(token.get("content"), str):
                out.add(token["content"])
        decoder = data.get("added_tokens_decoder")
        if isinstance(decoder, dict):
            out |= {t.get("content") for t in decoder.values() if isinstance(t, dict)} - {None}
    return out


def position_limit(config: dict[str, Any]) -> int | None:
    """The longest sequence a model's ``config.json`` allows: its ``max_position_embeddings`` (or its text
    model's), times a RoPE scaling factor where one is set; None when it names none."""
    text = config.get("text_config") or {}
    limit = config.get("max_position_embeddings") or text.get("max_position_embeddings")
    if not isinstance(limit, int):
        return None
    scaling = config.get("rope_scaling") or text.get("rope_scaling") or {}
    factor = scaling.get("factor") if isinstance(scaling, dict) else None
    return int(limit * factor) if isinstance(factor, int | float) and factor > 1 else limit


def check_model_files(folder: Path, tool_call_parser: str, max_model_len: int = 0) -> None:
    """Raise ModelSetupError when the folder cannot serve tool calls through ``tool_call_parser``, or
    ``max_model_len`` (0: unchecked) is beyond the model's own position limit (vLLM refuses to start)."""
    if not (folder / "config.json").is_file():
        raise ModelSetupError(
            f"{folder}: no config.json: not a model folder (give the folder from_pretrained reads)"
        )
    limit = position_limit(json.loads((folder / "config.json").read_text()))
    if max_model_len and limit and max_model_len > limit:
        raise ModelSetupError(
            f"max_model_len={max_model_len} is beyond the model's own position limit of {limit}: set "
            f"max_model_len: {limit} or less in the preset (or serving.overrides=[max_model_len={limit}])"
        )
    template = chat_template(folder)
    if template is None:
        raise ModelSetupError(
            f"{folder}: no chat template (chat_template.jinja or tokenizer_config.json 'chat_template'): "
            "vLLM cannot render a conversation; use the model's instruct variant or add its template"
        )
    if "tools" not in template:
        raise ModelSetupError(
            f"{folder}: the chat template never renders `tools`: the harness's tools would not reach the "
            "model; use a tool-calling (instruct) variant or a template that renders tools"
        )
    markers = PARSER_MARKERS.get(tool_call_parser)
    if markers and not any(m in template for m in markers) and not _special_tokens(folder) & set(markers):
        guess = [name for name, ms in PARSER_MARKERS.items() if any(m in template for m in ms)]
        fix = (
            f"set tool_call_parser: {guess[0]}"
            if guess
            else "set the tool_call_parser this model was trained for"
        )
        raise ModelSetupError(
            f"{folder}: tool_call_parser {tool_call_parser!r} looks for {markers[0]!r}, which neither the "
            f"chat template nor the tokenizer knows: {fix}"
        )


def source_of(cfg: object) -> ModelSource:
    """The ModelSource a serving config names (``model``, ``revision``, ``cache_dir``, ``offline``)."""
    return ModelSource(
        cfg.model,
        getattr(cfg, "revision", "main"),
        getattr(cfg, "cache_dir", None),
        getattr(cfg, "offline", False),
    )


def local_weights(cfg: object) -> Path:
    """The folder holding ``cfg``'s weights on this node: the folder itself, a Hub id fetched into this
    node's cache at the config's (pinned) revision, or a folder in storage copied there. Called where the
    weights are loaded (the serving actor, each trainer), so every node fetches once, into its own cache."""
    return fetch_weights(source_of(cfg)).path
