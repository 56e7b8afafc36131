"""The command line every job shares: ``--config FILE`` plus ``key=value`` overrides, then ``run(cfg)``.

The loading itself (strict YAML -> frozen dataclass, overrides, field documentation) is the library
``actors.config_loader``; this is the entry points' part of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from actors.config_loader import ConfigError, describe, load_config

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
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the config")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(config_cls, args.config, tuple(args.overrides))
    except (ConfigError, ValueError) as exc:  # a bad config: say which value and the fix, no traceback
        raise SystemExit(f"error: {exc}") from None
    if args.print_config:
        print("\n".join(describe(cfg)), flush=True)
        return
    print(json.dumps(run(cfg), default=str), flush=True)
