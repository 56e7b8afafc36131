"""Strict YAML -> frozen dataclass loading: the jobs' configs and the libraries' (a model preset is a
``ServingConfig``) alike; the command line that reads them is ``jobs.cli``.

A config file mirrors its dataclass one to one: nested mappings become nested dataclasses, lists become
tuples, unknown keys are errors that name their path and list the known ones. Overrides use dotted paths
(``serving.max_loras=6``) and are parsed as YAML scalars. Scalars and lists of scalars are type-checked at
load by pydantic (``TypeAdapter``, lax: ``1e-5`` read by YAML as text is a float, ``ten`` is not an int,
``harnesses=pi`` is not a list; true/false is never a number), each error one line naming the key, the
value and the fix. A file may build on others: ``extends: base.yaml`` (or a list) merges it over them,
mapping by mapping, a value or list replacing the base's. Ranges and cross-field rules live in each
dataclass's ``__post_init__``; a failure there is reported with the file it came from.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from environments.errors import UserError

T = TypeVar("T")


class ConfigError(UserError, ValueError):
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
        moved = _section_keys(hints, unknown, where)
        raise ConfigError(
            f"{where or 'config'}: unknown key(s) {', '.join(unknown)}; "
            + (f"write {', '.join(moved)}" if moved else f"known: {', '.join(sorted(fields))}")
        )
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _convert(hints[name], value, f"{where}.{name}" if where else name)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where or 'config'}: {exc}") from exc


def _section_keys(hints: dict[str, Any], keys: list[str], where: str) -> list[str]:
    """Where ``keys`` belong when each is a key of one of the sections (nested dataclasses) among
    ``hints``: ``trainer.max_steps`` for ``max_steps``; empty unless every key is found."""
    found = []
    for key in keys:
        owners = [
            name
            for name, tp in hints.items()
            if _is_dataclass_type(tp) and key in {f.name for f in dataclasses.fields(tp) if f.init}
        ]
        if len(owners) != 1:
            return []
        found.append(f"{where + '.' if where else ''}{owners[0]}.{key}")
    return found


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
        if _is_dataclass_type(inner):
            return tuple(_convert(inner, v, f"{where}[{i}]") for i, v in enumerate(value))
    if _scalar_type(tp):
        return _validate(tp, value, where)
    return value  # enums and other types: the dataclass's __post_init__ parses them


_SCALARS = (int, float, bool, str, type(None))
_HINTS = {
    int: "give a whole number",
    float: "give a number",
    bool: "give true or false",
    str: "give text (quote it if YAML would read it as something else)",
}


def _scalar_type(tp: Any) -> bool:
    """Scalars, optional scalars, tuples of them and plain dicts: what pydantic checks at load."""
    if tp in _SCALARS or tp is dict:
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        return all(_scalar_type(a) for a in args)
    if origin is tuple:
        return all(_scalar_type(a) for a in args if a is not Ellipsis)
    return origin is dict


@functools.cache
def _adapter(tp: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(tp)


def _bool_as_number(tp: Any, value: Any) -> bool:
    """Whether ``value`` has true/false where ``tp`` wants a number (pydantic's lax mode reads 1/0)."""
    if isinstance(value, bool):
        allowed = (
            set(typing.get_args(tp)) if typing.get_origin(tp) in (types.UnionType, typing.Union) else {tp}
        )
        return bool not in allowed and bool(allowed & {int, float})
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and isinstance(value, list) and len(args) == 2 and args[1] is Ellipsis:
        return any(_bool_as_number(args[0], v) for v in value)
    return False


def _validate(tp: Any, value: Any, where: str) -> Any:
    from pydantic import ValidationError

    hint = _HINTS.get(tp) or (
        "give a list, e.g. [a, b]" if typing.get_origin(tp) is tuple else f"give a value of type {tp}"
    )
    if _bool_as_number(tp, value):
        raise ConfigError(f"{where}={value!r}: true/false is not a number; {hint}")
    try:
        return _adapter(tp).validate_python(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        at = "".join(f"[{part}]" for part in error["loc"] if isinstance(part, int))
        raise ConfigError(f"{where}{at}={value!r}: {error['msg']}; {hint}") from None


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


EXTENDS = "extends"
"""The key by which a config file names the file(s) it builds on, relative to its own folder."""


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: mappings merge key by key, anything else (a value, a list) replaces."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def read_config_file(path: str | Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The mapping in ``path`` (YAML), over the files it ``extends`` (one path or a list, relative to its
    folder; later ones win, and the file itself over all of them)."""
    path = Path(path)
    where = " <- ".join(str(p) for p in (*chain, path))
    if path.resolve() in {p.resolve() for p in chain}:
        raise ConfigError(f"config files extend each other in a loop: {where}; remove one extends")
    try:
        loaded = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"config file {where}: {exc.strerror}: pass an existing YAML file") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
    data = loaded or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a mapping of keys, got {type(data).__name__}")
    bases = data.pop(EXTENDS, None)
    if bases is None:
        return data
    if isinstance(bases, str):
        bases = [bases]
    if not isinstance(bases, list) or not bases or not all(isinstance(b, str) and b for b in bases):
        raise ConfigError(
            f"config file {path}: {EXTENDS}={bases!r}: give a file (or a list of files) relative to "
            f"{path.parent}, e.g. {EXTENDS}: train-smoke.yaml"
        )
    merged: dict[str, Any] = {}
    for base in bases:
        merged = _merged(merged, read_config_file(path.parent / base, (*chain, path)))
    return _merged(merged, data)


def load_config(
    cls: type[T], path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()
) -> T:
    """Read ``path`` (YAML, with the files it ``extends``) into ``cls`` after applying dotted
    ``overrides``."""
    data = read_config_file(path) if path is not None else {}
    for override in overrides:
        _apply_override(data, override)
    try:
        return _build(cls, data, "")
    except ConfigError as exc:
        raise ConfigError(f"{path or 'overrides'}: {exc}") from None


def field_docs(cls: type) -> dict[str, str]:
    """Each field's documentation: the string right after it in the class body (the house style), by name;
    a field without one is missing from the result."""
    import ast
    import inspect
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for statement, following in zip(body, [*body[1:], None], strict=True):
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                value = getattr(following, "value", None)
                if (
                    isinstance(following, ast.Expr)
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                ):
                    docs[statement.target.id] = " ".join(value.value.split())
    return docs


def describe(cfg: Any, prefix: str = "") -> list[str]:
    """``cfg`` resolved, one ``key: value  # documentation`` line per field (nested sections dotted)."""
    import json

    lines = []
    docs = field_docs(type(cfg))
    for f in dataclasses.fields(cfg):
        if not f.init:
            continue
        value = getattr(cfg, f.name)
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            lines.append(f"# {key}: {docs.get(f.name, '')}")
            lines += describe(value, f"{key}.")
            continue
        if isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            shown = json.dumps([dataclasses.asdict(v) for v in value], default=str)
        else:
            shown = json.dumps(list(value) if isinstance(value, tuple) else value, default=str)
        lines.append(f"{key}: {shown}  # {docs.get(f.name, '')}".rstrip(" #"))
    return lines
