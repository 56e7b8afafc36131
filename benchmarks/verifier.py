"""Verifier benchmark: what reward integrity adds to the scoring of one rollout.

For a spread of shipped tasks (every repo kind in Python and JS, and data questions), the reference
solution is applied and the result scored three ways, each in a fresh sandbox of the local backend as a
rollout is (``SubprocessRunner`` where bubblewrap is missing, said in the header):

- ``trusting``: the anchor, the pre-hardening scorer: every file the agent left, verdict by exit status,
  and the Python repo tasks judged by their old hidden pytest files (``environments.attempt.legacy_task``);
- ``hardened``: ``environments.tasks.oracle.verify`` (pristine task + solution surface, pinned reporter,
  output-only judge for the Python repo tasks);
- ``audit``: the effect audit (two snapshots and the comparison), which runs besides the verifier.

Figures are medians over tasks and repeats (the machine is shared: quote medians and ratios). Run:
``python benchmarks/verifier.py [--tasks N] [--repeats N]``. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.attempt import trusting_verify  # noqa: E402
from environments.core.runner import SubprocessRunner  # noqa: E402
from environments.integrity import audit_effects, take_snapshot  # noqa: E402
from environments.tasks.oracle import Verdict, apply_reference, verify, write_start  # noqa: E402
from environments.tasks.shipped import shipped_tasks  # noqa: E402


def pick_tasks(per_kind: int) -> list:
    by_kind: dict[str, list] = {}
    for task in shipped_tasks():
        lang = "js" if "package.json" in task.workspace else "py"
        by_kind.setdefault(f"{task.kind.value}-{lang}", []).append(task)
    return [t for tasks in by_kind.values() for t in tasks[:per_kind]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3, help="tasks per kind and language")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if shutil.which("bwrap"):
        from environments.sandboxes import LocalBackend
        from environments.sandboxes.runner import SandboxRunner

        runner, where = SandboxRunner(LocalBackend(prefix="hxbench")), "local sandbox (bubblewrap)"
    else:
        runner, where = SubprocessRunner(), "subprocess (no bubblewrap here)"
    tasks = pick_tasks(args.tasks)
    print(f"{len(tasks)} tasks x {args.repeats} repeats, each scoring in a fresh {where}")
    times: dict[str, list[float]] = {"trusting": [], "hardened": [], "audit": []}
    wrong = []
    with tempfile.TemporaryDirectory(prefix="bench-verifier-") as tmp:
        for i, task in enumerate(tasks):
            produced = Path(tmp) / f"{i}" / "produced"
            apply_reference(task, produced, SubprocessRunner())
            start = take_snapshot(write_start(task, Path(tmp) / f"{i}" / "start"))
            for r in range(args.repeats):
                for name, check in (("trusting", trusting_verify), ("hardened", verify)):
                    began = time.perf_counter()
                    run = check(task, produced, Path(tmp) / f"{i}" / f"{name}-{r}", runner)
                    times[name].append((time.perf_counter() - began) * 1000)
                    if run.verdict is not Verdict.PASS:
                        wrong.append(f"{task.id} {name}: {run.reason}")
                began = time.perf_counter()
                audit_effects(task, start, take_snapshot(produced))
                times["audit"].append((time.perf_counter() - began) * 1000)
    medians = {name: statistics.median(values) for name, values in times.items()}
    added = medians["hardened"] + medians["audit"] - medians["trusting"]
    print(f"{'scorer':<10} {'median ms':>10} {'p90 ms':>8}")
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]
        print(f"{name:<10} {medians[name]:>10.1f} {p90:>8.1f}")
    print(f"added per rollout (hardened + audit - trusting): {added:.1f} ms")
    for line in wrong:
        print("NOT PASSED:", line)
    figures = {
        "tasks": len(tasks),
        "repeats": args.repeats,
        "verify_trusting_median_ms": round(medians["trusting"], 1),
        "verify_hardened_median_ms": round(medians["hardened"], 1),
        "audit_median_ms": round(medians["audit"], 2),
        "added_per_rollout_median_ms": round(added, 1),
        "ratio": round((medians["hardened"] + medians["audit"]) / medians["trusting"], 2),
        "references_not_passed": len(wrong),
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
