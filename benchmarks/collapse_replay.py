"""What the collapse watch would have done in finished runs, at several ``calls_factor`` settings: the
measurement that decides whether the runaway-calls sign is turned on, and at what factor.

It replays a run's recorded rollouts through ``actors.grpo.collapse.CollapseWatch`` itself, in the order
they finished, with a step at each time the trainer published a version and that step's KL. A rollout's
version, tool calls and block come from its trajectory (the guard's record); whether it passed is not
kept there, so every rollout counts as passing: the pass-rate sign cannot fire in a replay, and the
calls, blocked and KL signs are judged as in training. The watch only watches (``action: watch``), so a
replay shows the first step each sign would have acted at, not what would have followed.

    python benchmarks/collapse_replay.py --run sessions=artifacts/learning-check-real/seed-0/train \\
        --run rows=artifacts/learning-check-real/seed-0-rows/train --out benchmarks/data/collapse_replay.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from actors.grpo.collapse import CollapsePolicy, CollapseWatch  # noqa: E402

FACTORS = (0.0, 1.5, 2.0, 3.0)


@dataclass(frozen=True, slots=True)
class RecordedRollout:
    started_s: float
    finished_s: float
    version: int
    blocked: bool
    tool_calls: int


@dataclass(frozen=True, slots=True)
class RecordedStep:
    number: int
    ended_s: float
    """When the step's version was published (the watch is fed just before)."""
    kl: float | None
    version: int
    """The version whose weights the step started from."""


def version_number(adapter: str) -> int:
    """``pi-v7`` -> 7; the start adapter (``pi-start`` or the base) is version 1, as the trainer counts."""
    tail = adapter.rsplit("-v", 1)
    return int(tail[1]) if len(tail) == 2 and tail[1].isdigit() else 1


def recorded_rollouts(trajectories: Path) -> list[RecordedRollout]:
    """Every trajectory's rollout under ``trajectories``, oldest finish first."""
    found = []
    for path in sorted(trajectories.glob("*.json")):
        guard = json.loads(path.read_text(encoding="utf-8")).get("extra", {}).get("guard") or {}
        turns = guard.get("turns") or []
        if not turns:
            continue
        first, last = turns[0], turns[-1]
        finished = float(last["started_at_s"]) + float(last.get("duration_s") or 0.0)
        found.append(
            RecordedRollout(float(first["started_at_s"]), finished, version_number(guard.get("adapter", "")),
                            bool(guard.get("blocked")), int(guard.get("tool_calls") or 0))
        )  # fmt: skip
    return sorted(found, key=lambda r: r.finished_s)


def recorded_steps(record: dict) -> list[RecordedStep]:
    """The steps of one harness's ``train.json`` record: step k ended when version k + 1 was published."""
    kls = {int(h["step"]): h.get("kl") for h in record.get("log_history", []) if h.get("kl") is not None}
    windows = record.get("publish_windows") or []
    return [RecordedStep(k, float(windows[k][0]), kls.get(k), k) for k in range(1, len(windows))]


def inferred_steps(rollouts: list[RecordedRollout]) -> list[RecordedStep]:
    """The steps of a run that left no ``train.json`` (stopped before its end): step k ended no later than
    the first session sampled from version k + 1 started. No KL is known."""
    first_use: dict[int, float] = {}
    for rollout in rollouts:
        first_use[rollout.version] = min(first_use.get(rollout.version, rollout.started_s), rollout.started_s)
    return [RecordedStep(v - 1, first_use[v], None, v - 1) for v in sorted(first_use) if v > 1]


def replay(rollouts: list[RecordedRollout], steps: list[RecordedStep], policy: CollapsePolicy) -> list[dict]:
    """The watch's events over a recorded run, each with the step it came at."""
    watch = CollapseWatch(replace(policy, action="watch"))
    pending = iter(rollouts)
    next_rollout = next(pending, None)
    events = []
    for step in steps:
        while next_rollout is not None and next_rollout.finished_s <= step.ended_s:
            watch.rollout(next_rollout.version, True, next_rollout.blocked, next_rollout.tool_calls)
            next_rollout = next(pending, None)
        event = watch.step(step.number, step.kl, step.version)
        if event is not None:
            events.append({"step": event.step, "reason": event.reason, "good_version": event.good_version})
    return events


def calls_by_step(rollouts: list[RecordedRollout], steps: list[RecordedStep], window: int) -> list[float]:
    """The mean tool calls of the latest ``window`` rollouts finished by each step's end."""
    means = []
    for step in steps:
        done = [r.tool_calls for r in rollouts if r.finished_s <= step.ended_s][-window:]
        means.append(round(sum(done) / len(done), 2) if done else 0.0)
    return means


def replay_run(train_dir: Path, harness: str, factors: tuple[float, ...]) -> dict:
    """The replay of one run; a run stopped before its end (no ``train.json``) has its steps inferred."""
    rollouts = recorded_rollouts(train_dir / harness / "trajectories")
    finished = (train_dir / "train.json").is_file()
    record = json.loads((train_dir / "train.json").read_text(encoding="utf-8"))[harness] if finished else {}
    steps = recorded_steps(record) if finished else inferred_steps(rollouts)
    base = CollapsePolicy()
    start = rollouts[: base.reference_rollouts]
    return {
        "rollouts": len(rollouts),
        "steps": len(steps),
        "start_calls": round(sum(r.tool_calls for r in start) / max(len(start), 1), 2),
        "window_calls_by_step": calls_by_step(rollouts, steps, base.recent_rollouts),
        "events_by_calls_factor": {
            f"{factor:g}": replay(rollouts, steps, replace(base, calls_factor=factor)) for factor in factors
        },
        "collapses_in_training": record.get("collapses", []),
        "steps_from": "train.json" if finished else "the sessions' versions (the run stopped early; no KL)",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True, metavar="NAME=TRAIN_DIR",
                        help="a finished run's train folder (the one holding train.json), named")  # fmt: skip
    parser.add_argument("--harness", default="pi")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    runs = {}
    for item in args.run:
        name, sep, folder = item.partition("=")
        train_dir = Path(folder)
        if not sep or not (train_dir / args.harness / "trajectories").is_dir():
            parser.error(
                f"--run {item!r}: give NAME=FOLDER, a train job's out_dir (with {args.harness}/trajectories)"
            )
        runs[name] = replay_run(train_dir, args.harness, FACTORS)
        for factor, events in runs[name]["events_by_calls_factor"].items():
            first = f"step {events[0]['step']}: {events[0]['reason']}" if events else "never"
            print(f"{name}: calls_factor {factor}: {len(events)} event(s); first {first}")
    figures = {
        "command": "python benchmarks/collapse_replay.py " + " ".join(f"--run {r}" for r in args.run),
        "machine": f"{platform.machine()}, replay only (no model)",
        "date": datetime.now(UTC).date().isoformat(),
        "runs": runs,
    }
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    summary = {
        f"{name}_first_event_step_at_{factor}x": (events[0]["step"] if events else None)
        for name, run in runs.items()
        for factor, events in run["events_by_calls_factor"].items()
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
