"""Supervised fine-tuning on agent traces: a LoRA adapter (or, for tiny models, the full model) learns the
assistant turns of harness conversations, rendered with the model's own chat template and tools.

    python -m jobs.sft --config jobs/configs/sft-tiny.yaml [key=value ...]           one run
    python -m jobs.sft --config jobs/configs/sft-tiny.yaml --sweep [key=value ...]   the sweep grid

A preflight checks data, masks and the output folder in seconds before any training. The last stdout line
is one JSON object of figures. Masking lives in ``actors/sft/data.py``, training in ``actors/sft/train.py``,
the sweep (one Ray task per grid point, one Trackio writer actor) in ``actors/sft/sweep.py``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from actors.config_loader import describe, load_config
from actors.sft.config import SFTConfig
from environments.errors import user_errors

__all__ = ["DEFAULT_CONFIG", "main"]

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "sft-tiny.yaml"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("--sweep", action="store_true", help="run the sweep grid as Ray tasks")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error you can fix")
    parser.add_argument("overrides", nargs="*", help="dotted.key=value")
    args = parser.parse_args(argv)
    with user_errors(args.debug):  # a bad value, missing traces, a bad preset: one line, no traceback
        cfg = load_config(SFTConfig, args.config, args.overrides)
        if args.print_config:
            print("\n".join(describe(cfg)), flush=True)
            return
        figures = train(cfg, args.sweep)
    print(json.dumps(figures), flush=True)


def train(cfg: SFTConfig, sweep: bool) -> dict:
    """One run or the sweep, after what can be checked without a model: the traces and their format."""
    from actors.models import resolve_model_path
    from actors.sft.train import check_traces

    check_traces(cfg)
    cfg = replace(cfg, model=resolve_model_path(cfg.model))  # a preset name: built or found here, once
    if sweep:
        from actors.sft.sweep import run_sweep

        return run_sweep(cfg)
    from actors.sft.train import run_sft

    figures = run_sft(cfg)
    if cfg.trackio_project:
        figures["trackio_rows"] = log_single_run(cfg, figures)
    return figures


def log_single_run(cfg: SFTConfig, figures: dict) -> int:
    """A single run's TRL log history (``metrics.json``) to ``cfg.trackio_project``; the rows logged."""
    from actors.sft.sweep import trackio_rows
    from actors.tracking import TrackioLogger

    history = json.loads((Path(cfg.out_dir) / "metrics.json").read_text())["log_history"]
    logger = TrackioLogger(cfg.trackio_project, cfg.sweep.trackio_dir)
    return logger.log_run(Path(cfg.out_dir).name, {"model": cfg.model, **figures}, trackio_rows(history))


if __name__ == "__main__":
    main()
