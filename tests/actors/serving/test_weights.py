"""Model references: local folders, Hub ids fetched into a cache and pinned, templates checked against the
tool-call parser before a server starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.serving.weights import (
    ModelSetupError,
    ModelSource,
    check_model_files,
    fetch_weights,
    is_hub_id,
    pinned,
)

COMMIT = "0123456789abcdef0123456789abcdef01234567"
HERMES_TEMPLATE = "{% for t in tools %}{{ t }}{% endfor %}<tool_call>{{ m }}</tool_call>"


def model_folder(folder: Path, template: str | None = HERMES_TEMPLATE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "llama"}')
    if template is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    return folder


def hub_cache(cache: Path, repo: str, branch: str = "main") -> Path:
    """The layout huggingface_hub keeps: refs/<branch> holds the commit, snapshots/<commit> the files."""
    root = cache / f"models--{repo.replace('/', '--')}"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / branch).write_text(COMMIT)
    return model_folder(root / "snapshots" / COMMIT)


def test_hub_ids_and_folders_are_told_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_hub_id("LiquidAI/LFM2.5-24B-A2B")
    assert not is_hub_id("/models/x") and not is_hub_id("./models/x") and not is_hub_id("tiny")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models" / "x").mkdir(parents=True)
    assert not is_hub_id("models/x")  # an existing relative folder stays a folder


def test_a_hub_id_resolves_from_the_cache_to_a_pinned_commit(tmp_path: Path) -> None:
    snapshot = hub_cache(tmp_path / "cache", "acme/agent-1b")
    source = ModelSource("acme/agent-1b", "main", str(tmp_path / "cache"), offline=True)
    fetched = fetch_weights(source)
    assert fetched.path == snapshot and fetched.commit == COMMIT
    again = pinned(source, fetched)
    assert again.revision == COMMIT and fetch_weights(again).path == snapshot


def test_an_absent_revision_offline_names_the_fix(tmp_path: Path) -> None:
    source = ModelSource("acme/absent", "main", str(tmp_path / "cache"), offline=True)
    with pytest.raises(ModelSetupError, match="offline mode is on: fetch it once"):
        fetch_weights(source)


def test_an_unreachable_hub_is_not_called_offline_mode(tmp_path: Path, monkeypatch) -> None:
    from huggingface_hub.errors import LocalEntryNotFoundError

    def unreachable(**_):
        raise LocalEntryNotFoundError("cannot find the requested files in the disk cache")

    monkeypatch.setattr("huggingface_hub.snapshot_download", unreachable)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    source = ModelSource("acme/absent", "main", str(tmp_path / "cache"), offline=False)
    with pytest.raises(ModelSetupError, match="the Hub could not be reached: fetch it once") as caught:
        fetch_weights(source)
    assert "offline mode" not in str(caught.value)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelSetupError, match="offline mode is on"):
        fetch_weights(source)


def test_a_max_model_len_beyond_the_models_positions_is_refused_with_the_limit(tmp_path: Path) -> None:
    from actors.serving.weights import position_limit

    folder = model_folder(tmp_path / "m")
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "max_position_embeddings": 8192}))
    check_model_files(folder, "hermes", 8192)
    with pytest.raises(
        ModelSetupError, match="max_model_len=65536 is beyond .* limit of 8192: set max_model_len: 8192"
    ):
        check_model_files(folder, "hermes", 65536)
    assert position_limit({"max_position_embeddings": 32768, "rope_scaling": {"factor": 4.0}}) == 131072
    assert position_limit({"text_config": {"max_position_embeddings": 4096}}) == 4096
    assert position_limit({"model_type": "x"}) is None
    check_model_files(model_folder(tmp_path / "unknown"), "hermes", 10**6)  # no limit stated: not refused


def test_a_local_folder_is_used_as_it_is(tmp_path: Path) -> None:
    folder = model_folder(tmp_path / "m")
    assert fetch_weights(ModelSource(str(folder))).path == folder.resolve()
    with pytest.raises(ModelSetupError, match="neither a folder nor a Hub id"):
        fetch_weights(ModelSource(str(tmp_path / "missing")))


def test_the_template_must_render_tools_in_the_parsers_format(tmp_path: Path) -> None:
    check_model_files(model_folder(tmp_path / "ok"), "hermes")
    with pytest.raises(ModelSetupError, match="set tool_call_parser: hermes"):
        check_model_files(model_folder(tmp_path / "wrong"), "lfm2")
    with pytest.raises(ModelSetupError, match="never renders `tools`"):
        check_model_files(model_folder(tmp_path / "base", "{{ messages }}"), "hermes")
    with pytest.raises(ModelSetupError, match="no chat template"):
        check_model_files(model_folder(tmp_path / "none", None), "hermes")
    with pytest.raises(ModelSetupError, match="no config.json"):
        check_model_files(tmp_path, "hermes")


def test_a_marker_known_only_as_a_special_token_is_enough(tmp_path: Path) -> None:
    folder = model_folder(tmp_path / "lfm", "{% for t in tools %}{{ t }}{% endfor %}{{ m }}")
    (folder / "tokenizer.json").write_text(json.dumps({"added_tokens": [{"content": "<|tool_call_start|>"}]}))
    check_model_files(folder, "lfm2")


def test_the_locally_built_tiny_model_serves_hermes_tool_calls(tiny_model: Path) -> None:
    check_model_files(tiny_model, "hermes")
    with pytest.raises(ModelSetupError, match="set tool_call_parser: hermes"):
        check_model_files(tiny_model, "mistral")


def test_a_model_folder_in_storage_is_copied_once_into_this_nodes_cache(tmp_path: Path, monkeypatch) -> None:
    """On a cluster the tiny agent (a folder on the driver's node) is named by its copy in storage; the server
    and each trainer load it from their own node (``jobs.stack.model_for_nodes``)."""
    from actors.serving.weights import stored_model_name

    monkeypatch.setenv("HARNESS_ADAPTERS_CACHE", str(tmp_path / "node-cache"))
    built = model_folder(tmp_path / "driver" / "tiny-agent-abc")
    name = stored_model_name(built)
    assert name.startswith("tiny-agent-abc-") and stored_model_name(built) == name
    stored = model_folder(tmp_path / "bucket" / "models" / name)
    fetched = fetch_weights(ModelSource(f"file://{stored}"))
    assert fetched.path == tmp_path / "node-cache" / "models" / "stored" / name and fetched.commit is None
    assert (fetched.path / "config.json").read_text() == (built / "config.json").read_text()
    (stored / "config.json").unlink()
    assert fetch_weights(ModelSource(f"file://{stored}")).path == fetched.path  # copied once, then cached
    (built / "config.json").write_text('{"model_type": "qwen2"}')  # a rebuilt folder is stored anew
    assert stored_model_name(built) != name
