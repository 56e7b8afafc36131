"""Traces and a small SFT config on the tiny model, shared by the SFT tests (plain helpers, imported)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from actors.sft.config import SFTConfig

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
    }
]
FILES = ("a.py", "b.py", "main.py", "setup.cfg", "README.md", "test_x.py", "util.py", "cli.py")


def write_traces(path: Path, count: int = 8) -> Path:
    lines = []
    for i in range(count):
        name = FILES[i % len(FILES)]
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps(
            {"cmd": f"cat {name}"})}}  # fmt: skip
        messages = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"show me {name}"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"contents of {name}"},
            {"role": "assistant", "content": f"Here is {name}."},
        ]
        lines.append(json.dumps({"messages": messages, "tools": TOOLS}))
    path.write_text("\n".join(lines) + "\n")
    return path


def tiny_config(tmp_path: Path, tiny_model: Path, **changes) -> SFTConfig:
    base = SFTConfig(
        model=str(tiny_model),
        traces=(str(write_traces(tmp_path / "traces.jsonl")),),
        out_dir=str(tmp_path / "out"),
        learning_rate=5e-3,
        max_steps=3,
        batch_size=2,
        max_length=512,
        eval_fraction=0.25,
    )
    return replace(base, **changes)
