"""Guard benchmark: per-call check time vs a full-trace atif-scan run, then the proxy's added latency.

Check time, on realistic sessions (``benchmarks/guard_traces.py``): each starts from a real pi, opencode
or hermes request captured in ``tests/serve/data/captures`` (its 2-9 KB system prompt, its tools, its
message shapes), then benign tool calls with generated, all-distinct commands (paths, flags, pipelines,
heredocs) and tool outputs of 120 B to 64 KB (file contents, test logs, directory listings, grep hits,
diffs). The parse caches are cleared before each session and before each reference run, so no cache
carries parse work from one sample to another.

At each session length L (5, 60, 200 calls), a sample is the check of one of the last ``min(L, 10)``
calls of an L-call session: fold the messages since the previous call, then judge the call, which is
what the guard adds per tool call at that length. Enough sessions are built (harnesses in turn, each
session its own seed) for ``--samples`` samples per length. The reference for the same calls is one
full-trace atif-scan run (``atif_scan.Engine`` with the same rules) over the history with the call
appended: what re-scanning the trajectory at each call would cost. It runs on the same calls, round-robin
over the sessions, up to ``--ref-samples`` runs or ``--ref-budget-s`` seconds per length, whichever
comes first (one run over 200 calls with these outputs takes seconds, so at 60 and 200 calls its p99 rests
on fewer runs: ``ref_samples_at_<L>`` says how many).

The proxy half (``benchmarks/proxy_latency.py``, its docstring says how) times streamed turns through
``python -m serve`` against the same turns sent straight to a fake upstream, at 1 and 48 sessions.

Run: ``python benchmarks/guard.py [--samples N] [--ref-samples N] [--ref-budget-s S] [--lengths 5,60,200]
[--seed S] [--turns N] [--pace-ms MS] [--no-proxy]``. The last line is one JSON object with both halves'
figures: ``check_p50_ms_at_<L>``, ``check_p99_ms_at_<L>``, ``atif_full_p50_ms_at_<L>``,
``atif_full_p99_ms_at_<L>``, ``samples_at_<L>``, ``ref_samples_at_<L>``, then the proxy keys.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atif_scan import Context  # noqa: E402
from atif_scan.data import shell  # noqa: E402

from benchmarks import proxy_latency  # noqa: E402
from benchmarks.guard_traces import Harness, build_session, load_harnesses  # noqa: E402
from benchmarks.stats import percentile  # noqa: E402
from serve.engine import GuardSession  # noqa: E402
from serve.rules import builtin_rules, session_engine  # noqa: E402
from serve.rules.shellread import read_shell  # noqa: E402
from serve.trace import session_trace  # noqa: E402

LENGTHS = (5, 60, 200)
WINDOW = 10


def clear_caches() -> None:
    read_shell.cache_clear()
    shell.parse.cache_clear()


def measure(
    harnesses: list[Harness], length: int, samples: int, ref_samples: int, ref_budget_s: float, seed: int
) -> tuple[list[float], list[float]]:
    """(incremental check ms, full-trace reference ms) of the calls near position `length`."""
    window = min(length, WINDOW)
    sessions = []
    checks: list[float] = []
    for s in range(math.ceil(samples / window)):
        harness = harnesses[s % len(harnesses)]
        messages, calls = build_session(harness, length, seed * 1_000_003 + length * 1009 + s)
        sessions.append((messages, calls))
        clear_caches()
        guard = GuardSession(harness.tools)
        for i, call in enumerate(calls):
            history = messages[: 2 + 2 * i]
            start = time.perf_counter()
            guard.sync(history)
            decision = guard.check(call)
            elapsed = (time.perf_counter() - start) * 1000
            if decision.verdict != "allow":
                args = call["function"]["arguments"][:300]
                raise SystemExit(f"{harness.name} session call {i} was not allowed: {decision}: {args}")
            if i >= length - window:
                checks.append(elapsed)
    # The reference: the same calls, round-robin over the sessions, until ref_samples or the budget.
    engine = session_engine(builtin_rules())
    refs: list[float] = []
    deadline = time.monotonic() + ref_budget_s
    order = [(s, length - 1 - k) for k in range(window) for s in range(len(sessions))]
    for s, i in order[:ref_samples]:
        if refs and time.monotonic() > deadline:
            break
        messages, calls = sessions[s]
        clear_caches()
        start = time.perf_counter()
        engine.evaluate(session_trace(messages[: 2 + 2 * i], calls[i]), Context())
        refs.append((time.perf_counter() - start) * 1000)
    return checks[:samples], refs


def check_time(
    samples: int, ref_samples: int, lengths: tuple[int, ...], ref_budget_s: float = 60.0, seed: int = 0
) -> dict[str, float]:
    """Print the table and return the figures of the check-time half."""
    harnesses = load_harnesses()
    result: dict[str, float] = {}
    print(
        f"{'calls':>6} {'samples':>8} {'check p50 ms':>13} {'check p99 ms':>13} "
        f"{'ref runs':>9} {'atif p50 ms':>12} {'atif p99 ms':>12}"
    )
    for length in lengths:
        checks, refs = measure(harnesses, length, samples, ref_samples, ref_budget_s, seed)
        p50, p99 = percentile(checks, 0.5), percentile(checks, 0.99)
        r50, r99 = percentile(refs, 0.5), percentile(refs, 0.99)
        print(
            f"{length:>6} {len(checks):>8} {p50:>13.4f} {p99:>13.4f} {len(refs):>9} {r50:>12.3f} {r99:>12.3f}"
        )
        result[f"check_p50_ms_at_{length}"] = round(p50, 4)
        result[f"check_p99_ms_at_{length}"] = round(p99, 4)
        result[f"atif_full_p50_ms_at_{length}"] = round(r50, 3)
        result[f"atif_full_p99_ms_at_{length}"] = round(r99, 3)
        result[f"samples_at_{length}"] = len(checks)
        result[f"ref_samples_at_{length}"] = len(refs)
    return result


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=200, help="check-time samples per session length")
    parser.add_argument(
        "--ref-samples", type=int, default=200, help="full-trace reference runs per length (<= --samples)"
    )
    parser.add_argument(
        "--ref-budget-s",
        type=float,
        default=60.0,
        help="stop a length's reference runs after this many seconds (one run at 200 calls takes seconds)",
    )
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="session lengths in calls")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-proxy", action="store_true", help="only the check-time half")
    proxy_latency.add_arguments(parser)
    args = parser.parse_args(argv)
    lengths = tuple(int(x) for x in args.lengths.split(",") if x)
    if args.samples < 1 or args.ref_samples < 1 or not lengths or min(lengths) < 1:
        parser.error("--samples, --ref-samples and every length must be >= 1")
    figures = check_time(args.samples, args.ref_samples, lengths, args.ref_budget_s, args.seed)
    if not args.no_proxy:
        print()
        figures.update(proxy_latency.run(args.turns, args.pace_ms))
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
