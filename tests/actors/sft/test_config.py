"""The SFT config: values are checked at load and errors name the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.config_loader import ConfigError, load_config
from actors.sft.config import SFTConfig


def test_config_errors_name_the_field_and_the_fix(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 3e-4\nsweep:\n  learning_rates: [1e-3, 2e-3]\n")
    loaded = load_config(SFTConfig, path)  # YAML 1.1 reads 3e-4 as text; the loader makes it the number
    assert loaded.learning_rate == 3e-4 and loaded.sweep.learning_rates == (1e-3, 2e-3)
    path.write_text("learning_rate: fast\n")
    with pytest.raises(ConfigError, match=r"learning_rate='fast': .*; give a number"):
        load_config(SFTConfig, path)
    with pytest.raises(ConfigError, match="drop sweep.ranks"):
        load_config(SFTConfig, overrides=["full_finetune=true", "sweep.ranks=[4]"])
    with pytest.raises(ConfigError, match="unknown key.*lora_rank"):
        load_config(SFTConfig, overrides=["lora_rank=4"])
