"""The learning check's figures: every seed's headline (start and chosen checkpoint, each with its 95%
interval; the drop in calls and the room the start leaves; equal-reward groups; collapses), into
``benchmarks/data/learning_check.json`` (or ``--out``), keeping that file's other entries (the collapse
demonstration).

    python benchmarks/learning_check.py [--config jobs/configs/learning-check-runs.yaml] [key=value ...]

Runs ``python -m jobs.learning_check`` with the config: finished seeds are kept (``reuse``), missing ones
run (on 2 cores about 22 minutes a seed of the tiny model, 100 of SmolLM2), their progress shown on stderr
as it comes. The last line of stdout is one JSON object of the figures.
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


def merged_runs(kept: dict, runs: dict) -> dict:
    """The seeds run now over those the file already holds: a seed run in an earlier session (its own
    ``date`` and ``command`` beside it) stays until it is run again, so the check can grow seed by seed."""
    earlier = {seed: entry for seed, entry in kept.get("runs", {}).items() if seed not in runs}
    for entry in earlier.values():
        entry.setdefault("date", kept.get("date"))
        entry.setdefault("command", kept.get("command"))
    return dict(sorted({**earlier, **runs}.items(), key=lambda item: int(item[0])))


def totals(runs: dict, min_calls_reduction: float) -> dict:
    """The summary over every seed held: runs where each harness's headline held, headline rows whose start
    left less room than the criterion asks, and the regressions (which lead any report of them)."""
    rows = [(seed, row) for seed, entry in runs.items() for row in entry["headlines"]]
    held = [e for e in runs.values() if e["headlines"] and all(r["holds"] for r in e["headlines"])]
    return {
        "runs_held": len(held),
        "runs_out_of_reach": sum(row["calls_room"] < min_calls_reduction for _, row in rows),
        "regressions": [f"seed {seed}, {row['harness']}" for seed, row in rows if row["regressed"]],
    }


def streamed_last_line(arguments: list[str]) -> str:
    """Runs ``python <arguments>`` in the repository, its stdout shown on stderr as it comes (a seed runs for
    an hour or more: its progress lines are the only sign of life), and gives its last non-empty line."""
    last = ""
    with subprocess.Popen([sys.executable, *arguments], cwd=ROOT, stdout=subprocess.PIPE, text=True) as job:
        for line in job.stdout:
            sys.stderr.write(line)
            last = line.strip() or last
    if job.returncode:
        raise SystemExit(f"learning_check: the job exited with {job.returncode} (its output is above)")
    return last


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    figures = json.loads(
        streamed_last_line(["-m", "jobs.learning_check", "--config", args.config, *args.overrides])
    )
    folder = Path(figures["report"]).parent
    check = json.loads((folder / "headline.json").read_text())
    runs = {}
    for seed in check["runs"]:
        summary_path = folder / f"seed-{seed}" / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
        runs[seed] = {**seed_figures(check["runs"][seed], summary), "training": check["training"][seed]}
    out = Path(args.out)
    kept = json.loads(out.read_text()) if out.is_file() else {}
    command = " ".join(["python benchmarks/learning_check.py --config", shown(args.config), *args.overrides])
    today = datetime.date.today().isoformat()
    for entry in runs.values():
        entry |= {"date": today, "command": command}
    runs = merged_runs(kept, runs)
    record = {
        "command": command,
        "machine": "2 CPU cores, 24 GiB, no GPU",
        "date": today,
        "seeds": len(runs),
        **totals(runs, figures.get("min_calls_reduction", 0.30)),
        "runs": runs,
    }
    record |= {k: v for k, v in kept.items() if k not in record and k != "config"}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k not in ("runs", "collapse_demo")}))


if __name__ == "__main__":
    main()
