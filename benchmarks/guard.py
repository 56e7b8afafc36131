"""Guard benchmark: per-call check time vs a full-trace atif-scan run, then the proxy's added latency.

For session lengths of 5, 60 and 200 tool calls, a synthetic pi-style session is built from
benign calls of the public corpus shapes (shell, read, edit, write, curl to a named host).
Each call is checked by the incremental engine as it arrives (fold the new messages, then
judge the call): that per-call time is what the guard adds per tool call. The reference is
one full-trace atif-scan run (`atif_scan.Engine` with the same rules) over the session with
the last call appended: what re-scanning the trajectory at each call would cost.

The proxy half (``benchmarks/proxy_latency.py``, its docstring says how) times streamed turns through
``python -m serve`` against the same turns sent straight to a fake upstream, at 1 and 48 sessions.

Run: `python benchmarks/guard.py [--repeats N] [--turns N] [--pace-ms MS] [--no-proxy]`. The last line
is one JSON object with both halves' figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atif_scan import Context  # noqa: E402
from atif_scan.data import shell  # noqa: E402

from benchmarks import proxy_latency  # noqa: E402
from benchmarks.stats import percentile  # noqa: E402
from serve.engine import GuardSession  # noqa: E402
from serve.rules import builtin_rules, session_engine  # noqa: E402
from serve.rules.shellread import read_shell  # noqa: E402
from serve.trace import session_trace  # noqa: E402

LENGTHS = (5, 60, 200)
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("read", "bash", "edit", "write")
]
CALLS = [
    ("bash", {"command": "ls -la src tests"}, "core.py\nutil.py\ntest_core.py"),
    ("read", {"path": "src/pkg/core.py"}, "def f(x):\n    return x + 1\n" * 20),
    (
        "bash",
        {"command": "python -m pytest -q tests/test_core.py 2>&1 | tail -20"},
        "..F.\n1 failed, 3 passed",
    ),
    (
        "edit",
        {"path": "src/pkg/core.py", "edits": [{"oldText": "return x + 1", "newText": "return x + 2"}]},
        "ok",
    ),
    (
        "bash",
        {"command": "curl -s https://docs.example.org/api.json -o spec.json && jq '.paths | keys' spec.json"},
        "[]",
    ),
    ("bash", {"command": "git diff --stat && git log --oneline -5"}, "abc1234 fix\n 1 file changed"),
    (
        "write",
        {"path": "src/pkg/extra.py", "content": "import re\n\n\ndef g(s):\n    return re.sub('a', 'b', s)\n"},
        "ok",
    ),
    (
        "bash",
        {
            "command": "python3 - <<'EOF'\nimport csv\n"
            "print(sum(1 for _ in csv.reader(open('data.csv'))))\nEOF"
        },
        "42",
    ),
]


def session(length: int) -> tuple[list[dict], list[dict]]:
    """(messages, tool calls): `length` calls, each answered by a tool message."""
    messages: list[dict] = [
        {"role": "system", "content": "You are pi. Current working directory: /testbed"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Fix pkg so tests pass. Docs: https://docs.example.org/"}],
        },
    ]
    calls = []
    for i in range(length):
        name, args, output = CALLS[i % len(CALLS)]
        if "command" in args:  # unique text per call, so parse caches don't flatter the figures
            args = {"command": f": step {i}; " + args["command"]}
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        calls.append(call)
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"{output}\n(step {i})"})
    return messages, calls


def incremental_ms(length: int, repeats: int) -> list[float]:
    """Per-call time: fold the messages since the last call, then check the new call."""
    messages, calls = session(length)
    times: list[float] = []
    for _ in range(repeats):
        read_shell.cache_clear()
        shell.parse.cache_clear()
        guard = GuardSession(TOOLS)
        for i, call in enumerate(calls):
            history = messages[: 2 + 2 * i]
            start = time.perf_counter()
            guard.sync(history)
            decision = guard.check(call)
            times.append((time.perf_counter() - start) * 1000)
            if decision.verdict != "allow":
                raise SystemExit(f"benchmark session call {i} was not allowed: {decision}")
    return times


def full_trace_ms(length: int, repeats: int) -> float:
    messages, calls = session(length)
    engine = session_engine(builtin_rules())
    times = []
    for _ in range(repeats):
        read_shell.cache_clear()
        shell.parse.cache_clear()
        start = time.perf_counter()
        engine.evaluate(session_trace(messages[:-2], calls[-1]), Context())
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20, help="check-time repeats per session length")
    parser.add_argument("--no-proxy", action="store_true", help="only the check-time half")
    proxy_latency.add_arguments(parser)
    args = parser.parse_args()
    result: dict[str, float] = {}
    print(f"{'calls':>6} {'check p50 ms':>13} {'check p99 ms':>13} {'atif full ms':>13}")
    for length in LENGTHS:
        times = incremental_ms(length, max(1, args.repeats * 5 // length) if length > 5 else args.repeats * 4)
        tail = times if length == 5 else [t for k, t in enumerate(times) if k % length >= length - 5]
        p50, p99 = percentile(times, 0.5), percentile(times, 0.99)
        full = full_trace_ms(length, max(3, args.repeats // 2))
        print(
            f"{length:>6} {p50:>13.4f} {p99:>13.4f} {full:>13.3f}   "
            f"(last-5-calls p50 {percentile(tail, 0.5):.4f})"
        )
        result[f"check_p50_ms_{length}"] = round(p50, 4)
        result[f"check_p99_ms_{length}"] = round(p99, 4)
        result[f"atif_full_ms_{length}"] = round(full, 3)
    keys = (
        "check_p50_ms_5",
        "check_p99_ms_5",
        "check_p99_ms_60",
        "check_p99_ms_200",
        "atif_full_ms_5",
        "atif_full_ms_60",
        "atif_full_ms_200",
    )
    figures = {k: result[k] for k in keys}
    if not args.no_proxy:
        print()
        figures.update(proxy_latency.run(args.turns, args.pace_ms))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
