"""Model presets load without downloading anything; ``tiny`` resolves to the locally built model."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.models import load_preset, preset_names, resolve_model
from actors.serving import ServingConfig


def test_every_model_preset_loads_without_downloading_anything():
    names = preset_names()
    assert {"tiny", "lfm3-1.7b", "lfm2.5-24b-a2b", "twil-8b"} <= set(names)
    for name in names:
        cfg = load_preset(name)
        assert isinstance(cfg, ServingConfig) and cfg.max_lora_rank == 32 and cfg.max_loras == 18


def test_tiny_resolves_to_the_built_model_and_others_stay_as_named(cache_dir: Path):
    from actors.serving.weights import ModelSetupError

    resolved = resolve_model(load_preset("tiny"))
    assert (Path(resolved.model) / "config.json").exists()
    again = resolve_model(ServingConfig(model=resolved.model))  # a folder stays as named, checked in place
    assert again.model == resolved.model and again.revision == "main"
    with pytest.raises(ModelSetupError, match="neither a folder nor a Hub id"):
        resolve_model(ServingConfig(model="/some/model"))


def test_an_unknown_preset_or_model_and_a_bad_override_are_config_errors_before_anything_builds():
    from actors.config_loader import ConfigError
    from actors.models import resolve_model_path

    with pytest.raises(ConfigError, match=r"unknown model preset 'nope': choose one of .*tiny"):
        load_preset("nope")
    with pytest.raises(ConfigError, match=r"model preset 'tiny': .*max_model_len='abc'"):
        load_preset("tiny", ("max_model_len=abc",))
    with pytest.raises(ConfigError, match=r"model='nope': not a model preset, a folder or a Hub id"):
        resolve_model_path("nope")
    assert resolve_model_path("org/name") == "org/name"  # a Hub id is fetched later, where it is loaded
