"""Tool-call validity of a served model on held-out demonstrations: does it answer each turn, where the
demonstration called a tool, with calls the guard's declared-tools rule lets through (a declared tool,
arguments that parse as a JSON object and fit that tool's schema)?

Each request is a demonstration's conversation up to one of its tool-calling assistant turns (teacher
forcing: the earlier turns are the demonstration's own), with the harness's declared tools. The server
parses the reply with its tool-call parser, exactly as a harness receives it. A prompt longer than the
model's context is counted apart (``too_long``), never as a failure of the model.

    python -m serve.validity --preset smollm2-135m --adapter sft=artifacts/sft/smollm2 \
        --demos artifacts/demos --turns 30 [--constrain]

serves the preset once with every adapter, measures the base and each adapter per harness, and prints a
table and, last, one JSON object of the figures, with a few failed replies per cell as the model wrote
them. ``--constrain`` decodes every tool call under the declared tools' grammar, as the guard does for a
job with ``rollouts.constrain_tool_calls`` (``serve.grammar``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from environments.errors import UsageError, cli_main

from .decisions import Reason
from .rules.declared import DeclaredToolsRule, declared_schemas
from .turn import upstream_body


@dataclass(frozen=True, slots=True)
class Validity:
    """Counts over one (model, harness) cell."""

    turns: int
    """Requests answered (too-long prompts excluded)."""
    valid: int
    """Replies with one or more tool calls, every one let through by the declared-tools rule."""
    no_call: int
    """Replies with no parsed tool call (text only, or markup the parser could not read)."""
    undeclared: int
    """Replies with a call of a tool the harness did not declare."""
    too_long: int = 0
    """Prompts the server refused as longer than the model's context."""
    not_json: int = 0
    """Replies with a call whose arguments are not a JSON object."""
    misfit: int = 0
    """Replies with a call whose arguments do not fit the tool's parameter schema."""

    @property
    def share(self) -> float:
        return self.valid / self.turns if self.turns else 0.0

    def interval(self) -> tuple[float, float]:
        from actors.eval_report import wilson_interval

        return wilson_interval(self.valid, self.turns)


def reply_problem(calls: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> str:
    """What the declared-tools rule finds wrong with a reply's ``calls`` ("" when every call passes):
    ``no_call``, ``undeclared``, ``not_json`` or ``misfit``, the first failing call's."""
    if not calls:
        return "no_call"
    rule, schemas = DeclaredToolsRule(), declared_schemas(list(tools))
    for call in calls:
        found = rule.judge_raw(schemas, call)
        if found is not None:
            return PROBLEMS.get(found.reason, "undeclared")
    return ""


PROBLEMS = {
    Reason.UNDECLARED_TOOL: "undeclared",
    Reason.BAD_TOOL_CALL: "undeclared",
    Reason.ARGUMENTS_NOT_JSON: "not_json",
    Reason.ARGUMENTS_NOT_OBJECT: "not_json",
    Reason.SCHEMA_MISMATCH: "misfit",
}
"""The rule's reasons, by the count they go to."""
PROBLEM_COUNTS = ("no_call", "undeclared", "not_json", "misfit")
"""``Validity``'s counts of answered replies that failed (``reply_problem``'s answers)."""


def turn_requests(conversations: Iterable[Any], limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` chat requests, one per tool-calling assistant turn of ``conversations`` (anything
    with ``messages`` and ``tools``), spread evenly over all such turns in order."""
    every = [
        {"messages": list(conv.messages[:i]), "tools": list(conv.tools)}
        for conv in conversations
        for i, message in enumerate(conv.messages)
        if message["role"] == "assistant" and message.get("tool_calls")
    ]
    if limit <= 0 or len(every) <= limit:
        return every
    stride = len(every) / limit
    return [every[int(k * stride)] for k in range(limit)]


def harness_requests(demos: Path, harness: str, split: str, limit: int) -> list[dict[str, Any]]:
    """Requests from ``<demos>/<harness>-<split>.jsonl`` (``environments.demos`` writes them)."""
    from environments.traces import read_text

    path = demos / f"{harness}-{split}.jsonl"
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no demonstrations; write them with "
            f"python -m environments.demos --out {demos} --split {split}"
        )
    conversations, _ = read_text(path.read_text(), source=path.name, format="chat")
    return turn_requests(conversations, limit)


def measure(
    base_url: str,
    model: str,
    requests: Sequence[dict[str, Any]],
    max_tokens: int = 256,
    grammar: str | None = None,
    failures: list[dict[str, Any]] | None = None,
) -> Validity:
    """Greedy replies of ``model`` (a served name) to ``requests``, counted; ``grammar``: the server's
    tool-call parser, to decode calls under the declared tools' grammar (``serve.grammar``). Failed
    replies are appended to ``failures`` (problem, content, calls) when given."""
    import httpx

    counts = dict.fromkeys(("", *PROBLEM_COUNTS, "too_long"), 0)
    with httpx.Client(base_url=base_url.rstrip("/"), timeout=300) as client:
        for request in requests:
            body = upstream_body(request, model, 0.0, grammar)
            body.update(max_tokens=max_tokens, logprobs=False, return_token_ids=False)
            response = client.post("/chat/completions", json=body)
            if response.status_code == 400 and _too_long(response.text):
                counts["too_long"] += 1
                continue
            response.raise_for_status()
            message = response.json()["choices"][0]["message"]
            calls = message.get("tool_calls") or []
            problem = reply_problem(calls, request["tools"])
            counts[problem] += 1
            if problem and failures is not None:
                failures.append({"problem": problem, "content": message.get("content"), "calls": calls})
    valid = counts.pop("")
    answered = valid + sum(counts[k] for k in PROBLEM_COUNTS)
    return Validity(turns=answered, valid=valid, **counts)


def _too_long(error: str) -> bool:
    """vLLM's refusal of a prompt past the model's length (its two wordings)."""
    error = error.lower()
    return "maximum context length" in error or "longer than the maximum model length" in error


def tool_call_validity(
    base_url: str,
    model: str,
    requests: Sequence[dict[str, Any]],
    max_tokens: int = 256,
    grammar: str | None = None,
) -> float:
    """The share of ``requests`` answered with valid tool calls (``measure``)."""
    return measure(base_url, model, requests, max_tokens, grammar).share


def table(rows: dict[str, dict[str, Validity]]) -> str:
    """Markdown: one row per model, one column per harness (valid/turns, share and 95% interval)."""
    harnesses = sorted({h for cells in rows.values() for h in cells}, key=_harness_order)
    lines = ["| model | " + " | ".join(harnesses) + " |", "|---" * (len(harnesses) + 1) + "|"]
    for model, cells in rows.items():
        shown = []
        for harness in harnesses:
            cell = cells.get(harness)
            if cell is None:
                shown.append("-")
                continue
            low, high = cell.interval()
            extra = f", {cell.too_long} too long" if cell.too_long else ""
            shown.append(f"{cell.valid}/{cell.turns} ({cell.share:.0%} [{low:.0%}, {high:.0%}]{extra})")
        lines.append(f"| {model} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def _harness_order(name: str) -> int:
    from environments.harnesses.registry import harness_names

    known = harness_names()  # the registry's order: pi, opencode, hermes
    return known.index(name) if name in known else len(known)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="smollm2-135m", help="model preset (actors/model_presets)")
    parser.add_argument("--adapter", action="append", default=[], help="NAME=PATH of a LoRA adapter")
    parser.add_argument("--demos", default="artifacts/demos", help="folder of <harness>-<split>.jsonl")
    parser.add_argument("--split", default="eval")
    parser.add_argument("--harness", action="append", default=[], help="harnesses (default: all three)")
    parser.add_argument("--turns", type=int, default=30, help="requests per harness (0: every turn)")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--out", default="", help="also write the figures here (JSON)")
    parser.add_argument("--no-base", action="store_true", help="measure the adapters only")
    parser.add_argument(
        "--constrain", action="store_true", help="decode tool calls under the declared tools' grammar"
    )
    parser.add_argument("--examples", type=int, default=3, help="failed replies kept per cell in the JSON")
    args = parser.parse_args(argv)
    adapters = dict(_named(a) for a in args.adapter)

    import tempfile

    from actors.models import load_preset, resolve_model
    from actors.serving.server import VLLMServer
    from environments.harnesses.registry import harness_names, harness_problem

    from .grammar import tool_grammar_problem

    if args.harness and (problem := harness_problem(tuple(args.harness))):
        raise UsageError(f"--harness: {problem}")
    harnesses = tuple(args.harness) or harness_names()
    preset = load_preset(args.preset, (f"max_loras={max(2, len(adapters))}",))  # checked before any build
    try:
        requests = {h: harness_requests(Path(args.demos), h, args.split, args.turns) for h in harnesses}
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    cfg = resolve_model(preset)
    grammar = cfg.tool_call_parser if args.constrain else None
    if grammar is not None and (problem := tool_grammar_problem(grammar)):
        raise UsageError(f"--constrain: {problem}")
    server = VLLMServer(cfg, tempfile.mkdtemp(prefix="validity-"))
    server.start()
    rows: dict[str, dict[str, Validity]] = {}
    examples: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        for name, path in adapters.items():
            server.publish(name, str(Path(path).resolve()))
        base = () if args.no_base else (("base", server.base_model_name()),)
        for name, served in (*base, *((n, n) for n in adapters)):
            rows[name], examples[name] = {}, {}
            for harness in harnesses:
                failed: list[dict[str, Any]] = []
                rows[name][harness] = cell = measure(
                    server.url(), served, requests[harness], args.max_tokens, grammar, failed
                )
                examples[name][harness] = failed[: args.examples]
                print(
                    f"[validity] {name} {harness}: {cell.valid}/{cell.turns} valid ({cell.no_call} no call, "
                    f"{cell.undeclared} undeclared, {cell.not_json} not JSON, {cell.misfit} misfit)",
                    flush=True,
                )
    finally:
        server.stop()
    print(table(rows), flush=True)
    figures = {
        "preset": args.preset,
        "model": cfg.model,
        "split": args.split,
        "constrained": args.constrain,
        "adapters": adapters,
        "cells": {
            m: {h: {**asdict(c), "share": round(c.share, 4)} for h, c in cells.items()}
            for m, cells in rows.items()
        },
        "failed_examples": examples,
    }
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures), flush=True)


def _named(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise UsageError(f"--adapter {text!r}: give NAME=PATH, e.g. --adapter sft=artifacts/sft/smollm2")
    return name, path


if __name__ == "__main__":
    cli_main(main)
