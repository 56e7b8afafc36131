"""Each guard reason's precision on benign work, and which reasons must therefore only give notices.

Two kinds of benign work, both judged with nothing held at notice (the rules' own findings):

- the reference replay (``serve.replay``): every shipped task's reference solution in every harness,
  both variants, call by call. Any finding here disqualifies its reason;
- benign whole sessions: ``benchmarks/guard_benign`` (written for this) and the benign cases of the
  scored held-out sets (``guard_heldout`` to ``guard_heldout9``; a set not yet scored is never read).
  A reason may block at most ``serve.precision.NEAR_ZERO`` of them.

The attack cases of the same files say what holding a reason at notice would give up
(``attack_blocks``). The anchor is ``serve.precision.NOTICE_ONLY``: the benchmark says whether the
measured table agrees with it.

Run: ``python benchmarks/guard_precision.py [--no-replay] [--write] [FILE ...]`` (``--write`` saves the
figures to ``benchmarks/data/guard_precision.json``). The last line is one JSON object: ``replay_calls``,
``benign_cases``, ``attack_cases``, per reason ``replay_blocks``, ``benign_blocks``,
``benign_block_rate``, ``attack_blocks``, then ``held_measured`` and ``held_configured``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serve.check import problem  # noqa: E402
from serve.decisions import Allow, Reason  # noqa: E402
from serve.engine import GuardConfig, check_case  # noqa: E402
from serve.precision import NEAR_ZERO, NOTICE_ONLY, ReasonPrecision, held_reasons  # noqa: E402

SCORED_SETS = ("guard_benign", *(f"guard_heldout{n}" for n in ("", 2, 3, 4, 5, 6, 7, 8, 9)))
"""Case files whose misses may be read (a held-out set joins once it has been scored)."""
OUT = ROOT / "benchmarks" / "data" / "guard_precision.json"
RAW = frozenset[Reason]()
"""Nothing held: the benchmark measures what each rule would block on its own."""


def replay_blocks() -> tuple[int, Counter[Reason]]:
    from environments.harness_prompts import HARNESSES, harness_tools
    from environments.integrity.paths import protected_paths
    from environments.tasks.shipped import shipped_tasks
    from serve.replay import VARIANTS, judge_session, replay_messages

    calls = 0
    found: Counter[Reason] = Counter()
    for task in shipped_tasks():
        config = GuardConfig(
            allowlist=tuple(task.allowed_hosts), protected=protected_paths(task), notice_only=RAW
        )
        for harness in HARNESSES:
            for variant in VARIANTS:
                messages = replay_messages(task, harness, variant)
                replay = judge_session(task.id, harness, messages, harness_tools(harness), config, variant)
                calls += replay.calls
                found.update(Reason(b.reason) for b in replay.blocked)
    return calls, found


def case_blocks(paths: list[Path]) -> tuple[Counter[str], Counter[Reason], Counter[Reason]]:
    """(cases by label, benign cases blocked per reason, attack cases blocked per reason)."""
    cases: Counter[str] = Counter()
    benign: Counter[Reason] = Counter()
    attacks: Counter[Reason] = Counter()
    for path in paths:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            if problem(case) is not None:
                raise SystemExit(f"{path}: a malformed case ({problem(case)}); fix the file")
            config = GuardConfig(allowlist=tuple(case.get("allowlist", [])), notice_only=RAW)
            decision = check_case(case["tools"], case["messages"], case["tool_call"], config)
            label = "benign" if case["expect"] == "allow" else "attack"
            cases[label] += 1
            if not isinstance(decision, Allow):
                (benign if label == "benign" else attacks)[decision.reason] += 1
    return cases, benign, attacks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="case files (default: the scored sets)")
    parser.add_argument("--no-replay", action="store_true", help="skip the reference replay (~30 s)")
    parser.add_argument("--write", action="store_true", help=f"save the figures to {OUT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    files = args.files or [ROOT / "benchmarks" / name / "cases.jsonl" for name in SCORED_SETS]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"no such case file: {', '.join(missing)}")
    calls, replay = (0, Counter[Reason]()) if args.no_replay else replay_blocks()
    cases, benign, attacks = case_blocks(files)
    table = {
        r: ReasonPrecision(r, replay[r], benign[r], attacks[r])
        for r in sorted({*replay, *benign, *attacks}, key=str)
    }
    held = held_reasons(table, cases["benign"])
    print(f"reference replay: {calls} calls; benign sessions: {cases['benign']}; attacks: {cases['attack']}")
    print(f"{'reason':36} {'replay':>6} {'benign':>6} {'rate':>7} {'attacks':>7}  verdict")
    for reason, p in table.items():
        verdict = "hold at notice" if reason in held else "enforce"
        configured = "held" if reason in NOTICE_ONLY else "enforced"
        print(
            f"{reason.value:36} {p.replay_blocks:6} {p.benign_blocks:6} {p.benign_rate(cases['benign']):7.2%}"
            f" {p.attack_blocks:7}  {verdict} (configured: {configured})"
        )
    if held != NOTICE_ONLY:
        print(
            f"serve.precision.NOTICE_ONLY disagrees with the measurement (threshold {NEAR_ZERO:.1%}): "
            f"measured {sorted(r.value for r in held)}, configured {sorted(r.value for r in NOTICE_ONLY)}"
        )
    figures = {
        "files": [str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f) for f in files],
        "replay_calls": calls,
        "benign_cases": cases["benign"],
        "attack_cases": cases["attack"],
        "near_zero_rate": NEAR_ZERO,
        "reasons": {
            r.value: {
                "replay_blocks": p.replay_blocks,
                "benign_blocks": p.benign_blocks,
                "benign_block_rate": round(p.benign_rate(cases["benign"]), 5),
                "attack_blocks": p.attack_blocks,
            }
            for r, p in table.items()
        },
        "held_measured": sorted(r.value for r in held),
        "held_configured": sorted(r.value for r in NOTICE_ONLY),
    }
    if args.write:
        OUT.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
