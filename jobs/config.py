"""Strict YAML -> frozen dataclass loading for job configs.

A config file mirrors its dataclass one to one: nested mappings become nested dataclasses, lists become
tuples, unknown keys are errors that name their path and list the known ones. Overrides use dotted paths
(``serving.max_loras=6``) and are parsed as YAML scalars. Validation lives in each dataclass's
``__post_init__``; a failure there is reported with the file it came from.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

T = TypeVar("T")


class ConfigError(ValueError):
    """A config file or override that does not fit its dataclass; the message names the key and the fix."""


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _build(cls: type[T], data: Any, where: str) -> T:
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where or 'config'}: expected a mapping for {cls.__name__}, got {type(data).__name__}"
        )
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"{where or 'config'}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(fields))}"
        )
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _convert(hints[name], value, f"{where}.{name}" if where else name)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where or 'config'}: {exc}") from exc


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if _is_dataclass_type(tp):
        return _build(tp, value, where)
    if origin in (types.UnionType, typing.Union):
        for arg in typing.get_args(tp):
            if _is_dataclass_type(arg) and isinstance(value, dict):
                return _build(arg, value, where)
        return value
    if origin is tuple and isinstance(value, list):
        args = typing.get_args(tp)
        inner = args[0] if args else Any
        return tuple(_convert(inner, v, f"{where}[{i}]") for i, v in enumerate(value))
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is str and not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    return value


def _apply_override(data: dict[str, Any], override: str) -> None:
    if "=" not in override:
        raise ConfigError(f"override {override!r}: write it as dotted.key=value")
    key, raw = override.split("=", 1)
    node = data
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {override!r}: {part} is not a section")
    node[parts[-1]] = yaml.safe_load(raw)


def load_config(
    cls: type[T], path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()
) -> T:
    """Read ``path`` (YAML) into ``cls`` after applying dotted ``overrides``."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text())
        except OSError as exc:
            raise ConfigError(f"config file {path}: {exc.strerror}: pass an existing YAML file") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
        data = loaded or {}
    for override in overrides:
        _apply_override(data, override)
    try:
        return _build(cls, data, "")
    except ConfigError as exc:
        raise ConfigError(f"{path or 'overrides'}: {exc}") from None


def job_main(
    config_cls: type[T], default_config: str | Path, run: Any, description: str, argv: list[str] | None = None
) -> None:
    """The command line every job shares: ``--config FILE`` plus ``key=value`` overrides, then ``run(cfg)``;
    its figures are printed as one JSON object, the last line of stdout."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", default=str(default_config))
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the config")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(config_cls, args.config, tuple(args.overrides))
    except (ConfigError, ValueError) as exc:  # a bad config: say which value and the fix, no traceback
        raise SystemExit(f"error: {exc}") from None
    print(json.dumps(run(cfg), default=str), flush=True)
