"""A person's harness config: our provider is added as the default with every other setting kept, and
undo puts each file back byte for byte (or removes what did not exist)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from environments.harnesses.personal import PROVIDER, Endpoint, apply_edits, config_edits, config_paths, undo

ENDPOINT = Endpoint("http://127.0.0.1:8765/v1", "pi-step2")
NO_ENV: dict[str, str] = {}


def test_pi_keeps_other_providers_and_settings(tmp_path: Path):
    models, settings = config_paths("pi", tmp_path, NO_ENV)
    models.parent.mkdir(parents=True)
    models.write_text('{"providers": {"mine": {"baseUrl": "http://x/v1"}}}')
    settings.write_text('{"theme": "dark", "defaultProvider": "mine"}')
    edits = config_edits("pi", tmp_path, ENDPOINT, NO_ENV)
    new_models, new_settings = json.loads(edits[models]), json.loads(edits[settings])
    assert set(new_models["providers"]) == {"mine", PROVIDER}
    ours = new_models["providers"][PROVIDER]
    assert ours["baseUrl"] == ENDPOINT.base_url and ours["apiKey"] == ENDPOINT.api_key
    assert ours["compat"]["maxTokensField"] == "max_tokens"  # the launcher's compat flags, as trained
    assert new_settings == {"theme": "dark", "defaultProvider": PROVIDER, "defaultModel": "pi-step2"}


def test_opencode_and_hermes_point_their_default_model_at_the_adapter(tmp_path: Path):
    (oc,) = config_paths("opencode", tmp_path, NO_ENV)
    oc.parent.mkdir(parents=True)
    oc.write_text('{"theme": "tokyonight", "provider": {"ollama": {}}}')
    config = json.loads(config_edits("opencode", tmp_path, ENDPOINT, NO_ENV)[oc])
    assert config["model"] == f"{PROVIDER}/pi-step2" and set(config["provider"]) == {"ollama", PROVIDER}
    assert config["theme"] == "tokyonight"
    assert config["provider"][PROVIDER]["options"]["baseURL"] == ENDPOINT.base_url
    (hm,) = config_paths("hermes", tmp_path, NO_ENV)
    hm.parent.mkdir(parents=True)
    hm.write_text("display:\n  skin: mono\nmodel:\n  default: gpt-x\n")
    data = yaml.safe_load(config_edits("hermes", tmp_path, ENDPOINT, NO_ENV)[hm])
    assert data["display"] == {"skin": "mono"}
    assert data["model"]["base_url"] == ENDPOINT.base_url and data["model"]["context_length"] >= 64000


def test_override_variables_choose_the_files(tmp_path: Path):
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HERMES_HOME": str(tmp_path / "h")}
    assert config_paths("pi", tmp_path, env)[0] == tmp_path / "agent" / "models.json"
    assert config_paths("hermes", tmp_path, env) == [tmp_path / "h" / "config.yaml"]


@pytest.mark.parametrize("harness", ["pi", "opencode", "hermes"])
def test_undo_restores_every_file_exactly(harness: str, tmp_path: Path):
    paths = config_paths(harness, tmp_path, NO_ENV)
    paths[0].parent.mkdir(parents=True)
    original = "# mine\nmodel: {default: x}\n" if harness == "hermes" else '{ "theme":   "dark" }\n'
    paths[0].write_text(original)  # pi's settings.json does not exist yet: undo removes it
    before = {p: p.read_bytes() if p.exists() else None for p in paths}
    manifest = tmp_path / "use" / f"{harness}.json"
    apply_edits(config_edits(harness, tmp_path, ENDPOINT, NO_ENV), manifest)
    apply_edits(config_edits(harness, tmp_path, Endpoint(ENDPOINT.base_url, "pi-step4"), NO_ENV), manifest)
    assert all(p.exists() for p in paths) and paths[0].read_bytes() != before[paths[0]]
    lines = undo(manifest)
    assert len(lines) == len(paths) and not manifest.exists()
    assert {p: p.read_bytes() if p.exists() else None for p in paths} == before


def test_a_config_that_cannot_be_read_is_refused_with_the_fix(tmp_path: Path):
    (oc,) = config_paths("opencode", tmp_path, NO_ENV)
    oc.parent.mkdir(parents=True)
    oc.write_text("{not json")
    with pytest.raises(ValueError, match="fix or move it"):
        config_edits("opencode", tmp_path, ENDPOINT, NO_ENV)
    with pytest.raises(FileNotFoundError, match="nothing to undo"):
        undo(tmp_path / "missing.json")
