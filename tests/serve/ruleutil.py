"""Judge one shell command (or tool call) in a small session; used by the per-rule tests."""

from __future__ import annotations

from guardcases import case

from serve.decisions import Allow, Block
from serve.engine import check_case


def judge(
    command: str | None,
    prompt: str = "Fix the bug so tests pass.",
    results: list | None = None,
    harness: str = "pi",
    name: str = "bash",
    **args: object,
):
    messages = [
        {"role": "system", "content": "Working directory: /testbed"},
        {"role": "user", "content": prompt},
    ]
    for i, (call, output) in enumerate(results or []):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"p{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": f'{{"command": "{call}"}}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"p{i}", "content": output})
    c = case(harness, command, messages, name=name, **args)
    return check_case(c["tools"], c["messages"], c["tool_call"])


def rule_of(decision) -> str | None:
    return (
        str(decision.rule_id)
        if isinstance(decision, Block)
        else None
        if isinstance(decision, Allow)
        else "unknown"
    )
