"""Hostile inputs: how long one guard verdict takes when the model's output is built to be slow.

Each shape (`a.a.a…`, `$($(…`, newlines, pipes, escapes, base64, nested parens, a URL of dots, a
function/case soup) is sent at three sizes and in three places: a shell command, a whole-file write,
and the history (a 1 MiB user message before a plain `ls`). Sizes: 1 MiB (over the argument cap:
an unknown without parsing), and just under the caps (32 KiB of shell text, 250 KiB of file content),
which are parsed and matched under the check's time budget. The anchor is the issue's bound: every
verdict under 1 s (aim 50 ms); before the bounds, 1 MiB of `a.a.a…` held one check for minutes.

Run: ``python benchmarks/guard_hostile.py [--repeat N]``. Prints one line per (shape, place, size) with
the median time and the verdict; the last line is one JSON object: ``verdict_max_ms``, ``verdict_p50_ms``,
``over_1s`` (count), ``cases``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from serve.engine import check_case  # noqa: E402

SHAPES = {
    "dots": "a.",
    "spaces": "a ",
    "quotes": "\"'",
    "subst": "$(",
    "newlines": "x\n",
    "pipes": "a|",
    "semicolons": "a;",
    "hex_escapes": "\\x41",
    "base64": "QUJD",
    "parens": "((",
    "url_dots": "http://a.",
    "backticks": "`a",
    "functions": "f() { ",
    "case": "case x in a) ;; ",
}
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("bash", "read", "write", "edit")
]
SYSTEM = {"role": "system", "content": "Working directory: /workspace"}


def call(name: str, args: dict) -> dict:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def cases(text: str, place: str) -> tuple[list[dict], dict]:
    if place == "shell":
        return [SYSTEM, {"role": "user", "content": "Fix it."}], call("bash", {"command": text})
    if place == "write":
        return [SYSTEM, {"role": "user", "content": "Fix it."}], call(
            "write", {"path": "x.py", "content": text}
        )
    return [SYSTEM, {"role": "user", "content": text}], call("bash", {"command": "ls"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = {"shell": (1 << 20, 32_000), "write": (1 << 20, 250_000), "history": (1 << 20,)}
    times: list[float] = []
    for shape, unit in SHAPES.items():
        for place, place_sizes in sizes.items():
            for size in place_sizes:
                text = (unit * (size // len(unit) + 1))[:size]
                messages, tool_call = cases(text, place)
                runs = []
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    decision = check_case(TOOLS, messages, tool_call)
                    runs.append((time.perf_counter() - start) * 1000)
                median = statistics.median(runs)
                times.append(median)
                verdict = type(decision).__name__ + (
                    f"({decision.reason})" if hasattr(decision, "reason") else ""
                )
                print(f"{shape:12} {place:8} {size:>8} B  {median:8.1f} ms  {verdict}", flush=True)
    summary = {
        "cases": len(times),
        "verdict_p50_ms": round(statistics.median(times), 2),
        "verdict_max_ms": round(max(times), 2),
        "over_1s": sum(t > 1000 for t in times),
        "anchor_bound_ms": 1000,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
