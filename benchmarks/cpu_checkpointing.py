"""A CPU trainer's memory for one long row, gradient checkpointing off (the anchor) against on, beside what
``actors.trainer.cpu_activations_share`` estimates: the evidence for ``gradient_checkpointing: auto`` on CPU.

Per token count and setting, in a fresh process (peak resident memory is per process): the preset's model
(default SmolLM2-135M-Instruct, converted from its GGUF file on first use) in float32 with a rank-16 LoRA on
every linear layer, as the trainer loads it; one forward and backward of one row of that many tokens, the
loss on its last 256 positions (a model turn's completion; TRL's fused head scores only those). Measured:
the process's peak resident memory above what it held before the row, and the row's seconds.

    python -m benchmarks.cpu_checkpointing [--preset smollm2-135m] [--tokens 4096 8192]
        [--checkpointing off on]

Rows near the context with checkpointing off can take most of a 24 GiB host: run it alone. The last line
is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

GIB = 1024**3
COMPLETION = 256


def one_row(model_path: str, tokens: int, checkpointing: bool) -> dict:
    """Forward and backward of one row in this process; its peak memory above the loaded model's."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32, attn_implementation="sdpa")
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    model.train()
    ids = torch.randint(0, model.config.vocab_size, (1, tokens))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    causal = model.base_model.model
    hidden = causal.model(input_ids=ids).last_hidden_state[:, -COMPLETION:]
    logits = causal.lm_head(hidden).float()
    loss = torch.nn.functional.cross_entropy(logits[0, :-1], ids[0, -COMPLETION + 1 :])
    loss.backward()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    gib = {"row_gib": round((peak - before) / GIB, 2), "peak_gib": round(peak / GIB, 2)}
    return gib | {"s": round(seconds, 1)}


def estimate_gib(model_path: str, tokens: int) -> float:
    """The activations ``actors.trainer.cpu_activations_share`` counts for a row of ``tokens``, in GiB."""
    from actors.memory import ModelShape
    from actors.trainer import cpu_activations_share

    shape = ModelShape.from_config(Path(model_path) / "config.json", params=0)
    return round(cpu_activations_share(shape, tokens, GIB), 2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="smollm2-135m")
    parser.add_argument("--tokens", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--checkpointing", nargs="+", choices=("off", "on"), default=["off", "on"])
    parser.add_argument("--row", nargs=3, metavar=("MODEL", "TOKENS", "CKPT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.row:  # the child process: one measurement
        model, tokens, ckpt = args.row
        print(json.dumps(one_row(model, int(tokens), ckpt == "on")))
        return
    from actors.models import resolve_model_path

    model = resolve_model_path(args.preset)
    figures: dict = {"preset": args.preset, "completion_tokens": COMPLETION}
    for tokens in args.tokens:
        figures[f"t{tokens}_estimate_gib"] = estimate_gib(model, tokens)
        for setting in args.checkpointing:
            child = [sys.executable, "-m", "benchmarks.cpu_checkpointing"]
            child += ["--row", model, str(tokens), setting]
            done = subprocess.run(child, capture_output=True, text=True, cwd=Path(__file__).parents[1])
            if done.returncode:  # killed for memory, most likely: say so, keep the others
                figures[f"t{tokens}_ckpt_{setting}_status"] = f"exit {done.returncode}"
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            figures |= {
                f"t{tokens}_ckpt_{setting}_row_gib": row["row_gib"],
                f"t{tokens}_ckpt_{setting}_peak_gib": row["peak_gib"],
                f"t{tokens}_ckpt_{setting}_s": row["s"],
            }
            print(f"{tokens} tokens, checkpointing {setting}: {row}", file=sys.stderr, flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
