"""The learning check's figures: every seed's headline (start and chosen checkpoint, each with its 95%
interval; the drop in calls and the room the start leaves; equal-reward groups; collapses), into
``benchmarks/data/learning_check.json`` (or ``--out``), keeping that file's other entries (the collapse
demonstration).

    python benchmarks/learning_check.py [--config jobs/configs/learning-check-runs.yaml] [key=value ...]

Runs ``python -m jobs.learning_check`` with the config: finished seeds are kept (``reuse``), missing ones
run (about 22 minutes a seed on 2 cores). The last line of stdout is one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_CONFIG = ROOT / "jobs" / "configs" / "learning-check-runs.yaml"

OUT = Path(__file__).resolve().parent / "data" / "learning_check.json"


def seed_figures(headline: dict, summary: dict) -> dict:
    """One seed's entry: its headlines rounded for reading, its training health, its wall times."""
    from actors.eval_report import calls_room

    rows = []
    for r in headline:
        start, last = r["start"], r["last"]
        rows.append(
            {
                "harness": r["harness"],
                "last_checkpoint": last["checkpoint"],
                "start_pass_at_1": [round(start[k], 3) for k in ("pass_at_1", "low", "high")],
                "last_pass_at_1": [round(last[k], 3) for k in ("pass_at_1", "low", "high")],
                "pass_at_1_difference": [round(x, 3) for x in r["pass_difference"]],
                "start_calls": [round(start[k], 2) for k in ("mean_tool_calls", "calls_low", "calls_high")],
                "last_calls": [round(last[k], 2) for k in ("mean_tool_calls", "calls_low", "calls_high")],
                "calls_reduction": round(r["calls_reduction"], 3),
                "calls_room": round(calls_room(start["mean_tool_calls"]), 3),
                "calls_apart": r["calls_apart"],
                "holds": r["holds"],
                "improved": r["improved"],
                "regressed": r["regressed"],
            }
        )
    return {"headlines": rows, "train_s": summary.get("train_s"), "total_s": summary.get("total_s")}


def shown(path: str) -> str:
    """A config path as the repository names it (never this machine's own folders)."""
    full = Path(path).resolve()
    return str(full.relative_to(ROOT)) if full.is_relative_to(ROOT) else Path(path).name


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    job = subprocess.run(
        [sys.executable, "-m", "jobs.learning_check", "--config", args.config, *args.overrides],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    figures = json.loads(job.stdout.strip().splitlines()[-1])
    folder = Path(figures["report"]).parent
    check = json.loads((folder / "headline.json").read_text())
    runs = {}
    for seed in check["runs"]:
        summary_path = folder / f"seed-{seed}" / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
        runs[seed] = {**seed_figures(check["runs"][seed], summary), "training": check["training"][seed]}
    out = Path(args.out)
    kept = json.loads(out.read_text()) if out.is_file() else {}
    record = {
        "command": " ".join(
            ["python benchmarks/learning_check.py --config", shown(args.config), *args.overrides]
        ),
        "machine": "2 CPU cores, 24 GiB, no GPU",
        "date": datetime.date.today().isoformat(),
        "seeds": len(runs),
        "runs_held": figures["runs_held"],
        "runs_out_of_reach": figures["runs_out_of_reach"],
        "regressions": figures["regressions"],
        "runs": runs,
    }
    record |= {k: v for k, v in kept.items() if k not in record and k != "config"}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k not in ("runs", "collapse_demo")}))


if __name__ == "__main__":
    main()
