"""A CPU trainer's memory for one long row, gradient checkpointing off (the anchor) against on, beside what
``actors.trainer.cpu_activations_share`` estimates: the evidence for ``gradient_checkpointing: auto`` on CPU;
and glibc's default allocator (the anchor) against large blocks mapped on their own, as a CPU trainer runs
the micro-batches it checkpoints (``actors.cpu_memory.map_large_blocks``).

Per token count, setting and allocator, in a fresh process (peak resident memory is per process): the
preset's model (default SmolLM2-135M-Instruct, converted from its GGUF file on first use) in float32 with a
rank-16 LoRA on every linear layer, as the trainer loads it; one forward and backward of one row of that
many tokens, the loss on its last 256 positions (a model turn's completion; TRL's fused head scores only
those). Measured: the process's peak resident memory above what it held before the row, what it still holds
once the row's tensors are freed, and the row's seconds. Both include the weights' pages the row first
touches (about 0.5 GiB: the ``held`` figure of a mapped run is mostly that). ``mmap`` maps from before
the model loads, on a fresh heap: the best case of what the trainer does.

    python -m benchmarks.cpu_checkpointing [--preset smollm2-135m] [--tokens 4096 8192]
        [--checkpointing off on] [--allocator glibc mmap]

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


def one_row(model_path: str, tokens: int, checkpointing: bool, allocator: str = "glibc") -> dict:
    """Forward and backward of one row in this process; its peak memory above the loaded model's, and
    what the process still holds once the row's tensors are freed."""
    import psutil
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    if allocator == "mmap":  # as the trainer runs a micro-batch it checkpoints
        from actors.cpu_memory import map_large_blocks

        if not map_large_blocks(True):
            raise RuntimeError("this C library is not glibc: --allocator mmap measures nothing here")
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
    del hidden, logits, loss
    model.zero_grad(set_to_none=True)
    held = psutil.Process().memory_info().rss
    gib = {"row_gib": round((peak - before) / GIB, 2), "peak_gib": round(peak / GIB, 2)}
    return gib | {"held_gib": round((held - before) / GIB, 2), "s": round(seconds, 1)}


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
    parser.add_argument("--allocator", nargs="+", choices=("glibc", "mmap"), default=["glibc", "mmap"])
    parser.add_argument(
        "--row", nargs=4, metavar=("MODEL", "TOKENS", "CKPT", "ALLOC"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.row:  # the child process: one measurement
        model, tokens, ckpt, allocator = args.row
        print(json.dumps(one_row(model, int(tokens), ckpt == "on", allocator)))
        return
    from actors.cpu_memory import on_glibc
    from actors.models import resolve_model_path

    model = resolve_model_path(args.preset)
    figures: dict = {"preset": args.preset, "completion_tokens": COMPLETION}
    for tokens in args.tokens:
        figures[f"t{tokens}_estimate_gib"] = estimate_gib(model, tokens)
        for setting in args.checkpointing:
            for allocator in args.allocator:
                key = f"t{tokens}_ckpt_{setting}_{allocator}"
                if allocator == "mmap" and not on_glibc():
                    figures[f"{key}_status"] = "not glibc: nothing to map"
                    continue
                child = [sys.executable, "-m", "benchmarks.cpu_checkpointing"]
                child += ["--row", model, str(tokens), setting, allocator]
                done = subprocess.run(child, capture_output=True, text=True, cwd=Path(__file__).parents[1])
                if done.returncode:  # killed for memory, most likely: say so, keep the others
                    figures[f"{key}_status"] = f"exit {done.returncode}"
                    continue
                row = json.loads(done.stdout.strip().splitlines()[-1])
                figures |= {f"{key}_{name}": row[name] for name in ("row_gib", "peak_gib", "held_gib")}
                figures[f"{key}_s"] = row["s"]
                print(
                    f"{tokens} tokens, checkpointing {setting}, {allocator}: {row}",
                    file=sys.stderr,
                    flush=True,
                )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
