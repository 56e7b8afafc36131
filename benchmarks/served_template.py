"""Whether the served chat template is the one SFT taught: greedy continuations of demonstrated sessions,
from the SFT adapter, at the point where each demonstration ends (after its last tool result), rendered two
ways:

- ``shipped``: the tool template as the tiny models ship it (what vLLM served before GGUF conversion v3),
  which drops the ``<think>`` block of every assistant turn but the last;
- ``served``: TRL's training variant of it (``actors.serving.gguf.served_template``), the one SFT renders
  its examples with and vLLM serves now: every assistant turn keeps its block.

A session *ends* when the continuation is an answer without a tool call, as the demonstration's is. The
demonstrations are the SFT's own (the row-count family's, ``python -m environments.demos --tasks row-count
--extra 96``), so this measures the template, not generalisation. Transformers on the CPU in float32, no
vLLM: 280 s for 10 sessions on one thread. Served by vLLM (bfloat16, whole sessions) the same adapter ended
0 of 10 under the shipped template and 10 of 10 under the served one.

    python benchmarks/served_template.py --out benchmarks/data/served_template.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL_MARKER = "<tool_call>"


def ending_prompts(demos: Path, sessions: int) -> list[tuple[list[dict], list[dict]]]:
    """(messages up to the last tool result, tools) of the first ``sessions`` demonstrations that end with
    an answer after a tool result."""
    found = []
    for line in demos.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        messages = record["messages"]
        last = messages[-1]
        if last["role"] == "assistant" and not last.get("tool_calls") and messages[-2]["role"] == "tool":
            found.append((messages[:-1], record.get("tools") or []))
        if len(found) == sessions:
            break
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="a GGUF model name or a folder")
    parser.add_argument("--adapter", type=Path, default=ROOT / "artifacts/sft/smollm2-rows")
    parser.add_argument("--demos", type=Path, default=ROOT / "artifacts/demos-rows/pi-train.jsonl")
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    for path, made_by in ((args.adapter, "python -m jobs.sft --config jobs/configs/sft-smollm2-rows.yaml"),
                          (args.demos, "python -m environments.demos --tasks row-count --extra 96 "
                                       "--out artifacts/demos-rows --harness pi")):  # fmt: skip
        if not path.exists():
            print(f"error: {path} is missing: make it with {made_by}", file=sys.stderr)
            return 2

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from actors.serving.gguf import gguf_checkpoint, served_template
    from environments.tiny_model.build import cache_root
    from environments.tiny_model.recipe import chat_template

    model_dir = gguf_checkpoint(args.model, cache_root()) or Path(args.model)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.chat_template = chat_template()
    templates = {"shipped": chat_template(), "served": served_template(tokenizer)}
    torch.manual_seed(0)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model_dir), args.adapter).eval()
    prompts = ending_prompts(args.demos, args.sessions)
    ended = dict.fromkeys(templates, 0)
    prompt_tokens = {name: [] for name in templates}
    started = time.monotonic()
    for messages, tools in prompts:
        for name, template in templates.items():
            ids = tokenizer.apply_chat_template(
                messages, tools=tools, chat_template=template, add_generation_prompt=True, return_tensors="pt"
            )
            ids = ids if isinstance(ids, torch.Tensor) else ids["input_ids"]
            prompt_tokens[name].append(int(ids.shape[-1]))
            with torch.no_grad():
                out = model.generate(ids, max_new_tokens=args.max_new_tokens, do_sample=False)
            text = tokenizer.decode(out[0, ids.shape[-1] :], skip_special_tokens=False)
            ended[name] += TOOL_MARKER not in text
    figures = {
        "command": "python benchmarks/served_template.py" + "".join(f" {a}" for a in (argv or sys.argv[1:])),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "sessions": len(prompts),
        "ended_shipped": ended["shipped"],
        "ended_served": ended["served"],
        "prompt_tokens_median_shipped": sorted(prompt_tokens["shipped"])[len(prompts) // 2],
        "prompt_tokens_median_served": sorted(prompt_tokens["served"])[len(prompts) // 2],
        "wall_s": round(time.monotonic() - started, 1),
    }
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
