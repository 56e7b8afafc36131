"""Strict YAML -> dataclass loading: unknown keys named with the known ones, errors with their file,
nested sections, lists and dotted overrides (the shipped job configs: tests/jobs/test_configs.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from actors.config_loader import ConfigError, load_config
from actors.serving import ServingConfig


def test_unknown_keys_are_named_with_the_known_ones(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("model: m\nmax_lora: 8\n")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) max_lora; known: .*max_lora_rank"):
        load_config(ServingConfig, path)


def test_validation_errors_carry_the_file_name(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("model: m\nmax_lora_rank: 12\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: .*max_lora_rank=12"):
        load_config(ServingConfig, path)


@dataclass(frozen=True)
class Inner:
    rate: float = 1.0


@dataclass(frozen=True)
class Outer:
    inner: Inner = field(default_factory=Inner)
    tags: tuple[str, ...] = ()


def test_nested_sections_lists_and_overrides_convert(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("inner: {rate: 2}\ntags: [a, b]\n")
    cfg = load_config(Outer, path, ["inner.rate=3"])
    assert cfg == Outer(inner=Inner(rate=3.0), tags=("a", "b"))
    with pytest.raises(ConfigError, match="dotted.key=value"):
        load_config(Outer, path, ["inner.rate"])
    with pytest.raises(ConfigError, match="not valid YAML"):
        (tmp_path / "broken.yaml").write_text("a: [")
        load_config(Outer, tmp_path / "broken.yaml")
