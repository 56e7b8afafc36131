"""``python -m environments.tiny_model [--out DIR] [--force]``: build or find the tiny model."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from environments.errors import UsageError, cli_main
from environments.tiny_model import TinyModelRecipe, build_tiny_model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None, help="folder to write (default: the cache)")
    parser.add_argument("--force", action="store_true", help="rebuild even if the cached copy is current")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is a file: give a folder for the model (or none: the cache)")
    started = time.perf_counter()
    path = build_tiny_model(TinyModelRecipe(seed=args.seed), args.out, force=args.force)
    print(f"tiny model at {path} ({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    cli_main(main)
