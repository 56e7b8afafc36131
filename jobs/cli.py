"""The command line every job shares: ``--config FILE`` plus ``key=value`` overrides, then ``run(cfg)``.

The loading itself (strict YAML -> frozen dataclass, overrides, field documentation) is the library
``actors.config_loader``; this is the entry points' part of it. A problem the person can fix
(``environments.errors.UserError``: a bad value at load, or one found while running) is one
``error: <message>`` line and exit status 1, its traceback only under ``--debug``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from actors.config_loader import describe, load_config
from environments.errors import user_errors

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
    with user_errors(args.debug):  # a bad config value, or one found while running: no traceback
        cfg = load_config(config_cls, args.config, tuple(args.overrides))
        if args.print_config:
            print("\n".join(describe(cfg)), flush=True)
            return
        figures = run(cfg)
    print(json.dumps(figures, default=str), flush=True)
