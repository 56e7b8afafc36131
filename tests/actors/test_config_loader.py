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


@dataclass(frozen=True)
class Layer:
    a: int = 0
    b: int = 0
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Layered:
    top: str = ""
    inner: Layer = field(default_factory=Layer)


def test_a_config_file_extends_its_bases_mapping_by_mapping_and_replaces_values_and_lists(tmp_path: Path):
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "root.yaml").write_text("top: root\ninner: {a: 1, b: 1, names: [x, y]}\n")
    (tmp_path / "mid.yaml").write_text("extends: base/root.yaml\ninner: {b: 2, names: [z]}\n")
    (tmp_path / "leaf.yaml").write_text("extends: [mid.yaml]\ntop: leaf\n")
    cfg = load_config(Layered, tmp_path / "leaf.yaml", ["inner.a=5"])
    assert cfg == Layered("leaf", Layer(a=5, b=2, names=("z",)))  # relative paths, nested, lists replaced


def test_a_loop_a_missing_base_or_a_bad_extends_is_one_error_naming_the_files(tmp_path: Path):
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\na: 1\n")
    with pytest.raises(ConfigError, match=r"extend each other in a loop: .*a.yaml <- .*b.yaml <- .*a.yaml"):
        load_config(Layer, tmp_path / "a.yaml")
    (tmp_path / "c.yaml").write_text("extends: gone.yaml\n")
    with pytest.raises(ConfigError, match=r"c.yaml <- .*gone.yaml: No such file"):
        load_config(Layer, tmp_path / "c.yaml")
    (tmp_path / "d.yaml").write_text("extends: {file: a.yaml}\n")
    with pytest.raises(ConfigError, match=r"extends=\{'file': 'a.yaml'\}: give a file"):
        load_config(Layer, tmp_path / "d.yaml")
