"""The command line every job shares: ``--config FILE`` plus ``key=value`` overrides, then ``run(cfg)``.

The loading itself (strict YAML -> frozen dataclass, overrides, field documentation) is the library
``actors.config_loader``; this is the entry points' part of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from actors.config_loader import ConfigError, describe, load_config
from environments.errors import user_error

T = TypeVar("T")


def job_main(
    config_cls: type[T], default_config: str | Path, run: Any, description: str, argv: list[str] | None = None
) -> None:
    """The command line every job shares: ``--config FILE`` plus ``key=value`` overrides, then ``run(cfg)``;
    its figures are printed as one JSON object, the last line of stdout."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", default=str(default_config))
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error you can fix")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the config")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(config_cls, args.config, tuple(args.overrides))
    except (ConfigError, ValueError) as exc:  # a bad config: say which value and the fix, no traceback
        raise SystemExit(f"error: {one_line(exc)}") from None
    if args.print_config:
        print("\n".join(describe(cfg)), flush=True)
        return
    try:
        figures = run(cfg)
    except Exception as exc:
        found = user_error(exc)
        if found is None or args.debug:
            raise
        raise SystemExit(f"error: {one_line(found)}") from None
    print(json.dumps(figures, default=str), flush=True)


def one_line(exc: BaseException) -> str:
    """An error's message as one line (a multi-line message keeps its first line and says so)."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return lines[0] + (" (more with --debug)" if len(lines) > 1 else "")
