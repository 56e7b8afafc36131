"""Isolated judging against in-process judging: the verifier's wall time per rollout, same tasks.

The project's pytest and unittest fixture tasks (``tests/environments/tamper/tasks``) are solved by their
reference and verified both ways, each in a fresh sandbox of the local backend as a rollout's verifier is
(``SubprocessRunner`` where bubblewrap is missing, said in the output): ``in-process`` is the hardened
verifier of before (the task's command with the pinned reporter, ``judge: in-process``), ``isolated`` the
default now (tests in a pristine interpreter, the solution in a confined process behind proxies). Order
alternates per repeat; figures are medians (the machine is shared: quote medians and ratios). Run:
``python benchmarks/isolated_judge.py [--repeats N]``. The last line is one JSON object; it is also
written to ``benchmarks/data/isolated_judge.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.core.runner import SubprocessRunner  # noqa: E402
from environments.tasks.layout import read_task  # noqa: E402
from environments.tasks.oracle import Verdict, apply_reference, verify  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "environments" / "tamper" / "tasks"
TASKS = ("tamper-pytest-extend", "tamper-unittest-repair")
OUT = Path(__file__).resolve().parent / "data" / "isolated_judge.json"


def make_runner():
    if shutil.which("bwrap") is None:
        return SubprocessRunner(), "subprocess (bubblewrap missing)"
    from environments.sandboxes import LocalBackend
    from environments.sandboxes.runner import SandboxRunner

    return SandboxRunner(LocalBackend(prefix="hxbench")), "local sandbox (bubblewrap)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    runner, where = make_runner()
    print(f"# runner: {where}")
    times: dict[str, list[float]] = {"isolated": [], "in-process": []}
    per_task: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="isojudge-") as tmp:
        root = Path(tmp)
        for name in TASKS:
            task = read_task(FIXTURES / name)
            solved = root / name / "solved"
            apply_reference(task, solved, SubprocessRunner())
            ways = {"isolated": task, "in-process": replace(task, judge="in-process")}
            per_task[name] = {"isolated": [], "in-process": []}
            for repeat in range(args.repeats):
                order = list(ways) if repeat % 2 == 0 else list(ways)[::-1]
                for way in order:
                    start = time.perf_counter()
                    run = verify(ways[way], solved, root / name / f"{way}-{repeat}", runner)
                    elapsed = time.perf_counter() - start
                    if run.verdict is not Verdict.PASS or run.judge != way:
                        print(f"{name} {way}: {run.verdict} ({run.judge}): {run.reason}")
                        return 1
                    times[way].append(elapsed)
                    per_task[name][way].append(elapsed)
            medians = {w: round(statistics.median(v) * 1000, 1) for w, v in per_task[name].items()}
            print(f"{name}: isolated {medians['isolated']} ms, in-process {medians['in-process']} ms")
    isolated = statistics.median(times["isolated"]) * 1000
    in_process = statistics.median(times["in-process"]) * 1000
    figures = {
        "runner": where,
        "tasks": len(TASKS),
        "repeats": args.repeats,
        "verify_isolated_median_ms": round(isolated, 1),
        "verify_in_process_median_ms": round(in_process, 1),
        "isolated_over_in_process_ratio": round(isolated / in_process, 3),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
