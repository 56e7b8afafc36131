"""`python -m serve.check CASES.jsonl`: judge labelled or unlabelled guard cases.

Each input line is a JSON object `{"id", "harness", "tools", "messages", "tool_call", …}`
(other keys, such as `expect`, are ignored; an optional `allowlist` list is used). Each
output line is `{"id", "verdict": "allow"|"block", "rule", "reason"}`; an unknown is
printed as a block (the guard fails closed) with its rule and reason. An allowed call with
findings held at notice (`serve.precision`) also gets `"notices": [{"rule", "reason"}, …]`.
A malformed line gets `{"line": N, "id": …, "error": "<problem>"}` with no verdict, and the run goes on. Exit
status: 0, or 2 when some line was malformed, or 1 when the file can't be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping
from typing import TextIO

from environments.errors import UsageError, cli_main

from .decisions import Allow, Reason, verdict
from .engine import GuardConfig, check_case
from .precision import NOTICE_ONLY


def problem(case: object) -> str | None:
    """What makes a case unusable, as a fixed code; None when it's well formed."""
    if not isinstance(case, Mapping):
        return "case_not_object"
    if not isinstance(case.get("tools"), list):
        return "tools_not_list"
    messages = case.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
        return "messages_not_list_of_objects"
    if not isinstance(case.get("tool_call"), Mapping):
        return "tool_call_not_object"
    allowlist = case.get("allowlist", [])
    if not isinstance(allowlist, list) or not all(isinstance(h, str) for h in allowlist):
        return "allowlist_not_list_of_strings"
    return None


def judge_line(number: int, line: str, held: frozenset[Reason] = NOTICE_ONLY) -> dict[str, object] | None:
    """One case's verdict (`held`: the reasons held at notice, `serve.precision`)."""
    if not line.strip():
        return None
    try:
        case = json.loads(line)
    except (ValueError, RecursionError):
        return {"line": number, "id": None, "error": "invalid_json"}
    case_id = case.get("id") if isinstance(case, Mapping) else None
    case_id = case_id if isinstance(case_id, str | int) else None
    bad = problem(case)
    if bad is not None:
        return {"line": number, "id": case_id, "error": bad}
    config = GuardConfig(allowlist=tuple(case.get("allowlist", [])), notice_only=held)
    decision = check_case(case["tools"], case["messages"], case["tool_call"], config)
    if isinstance(decision, Allow):
        out: dict[str, object] = {"id": case_id, "verdict": "allow", "rule": None, "reason": None}
        if decision.notices:
            out["notices"] = [{"rule": str(h.rule_id), "reason": str(h.reason)} for h in decision.notices]
        return out
    return {
        "id": case_id,
        "verdict": str(verdict(decision)),
        "rule": str(decision.rule_id),
        "reason": str(decision.reason),
    }


def run(lines: Iterator[str], out: TextIO) -> int:
    status = 0
    for number, line in enumerate(lines, start=1):
        result = judge_line(number, line)
        if result is None:
            continue
        if "error" in result:
            status = 2
        out.write(json.dumps(result) + "\n")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serve.check", description=__doc__.split("\n")[0])
    parser.add_argument("cases", help="JSONL file of cases ('-' for stdin)")
    args = parser.parse_args(argv)
    if args.cases == "-":
        return run(iter(sys.stdin), sys.stdout)
    try:
        with open(args.cases, encoding="utf-8", errors="replace") as handle:
            return run(iter(handle), sys.stdout)
    except OSError as exc:
        raise UsageError(
            f"cannot read {args.cases}: {exc.strerror}; give a JSONL file of cases ('-' for stdin)"
        ) from exc


if __name__ == "__main__":
    cli_main(main)
