"""TRL's fused LM head on CPU: every position scored (TRL's choice off Triton devices, the anchor) against
the labelled positions only (``actors.trl_cpu.compact_fused_head``), in the two steps that use it here.

- ``sft``: the tiny agent's SFT steps as ``actors.sft.train`` runs them, a full fine-tune of the tiny model
  on ``--rows`` of the smoke agent's real demonstrations (``tiny-agent-rows-pi``: pi's ~1.4K-token system
  prompt, loss on the assistant turns only), one per micro-step as batch size 1 trains: forward, backward
  and AdamW each.
- ``grpo``: the CPU trainer's packed step (``benchmarks.packed_step``: eight pi-shaped sessions in one
  prefix tree, a rank-8 LoRA, the completions labelled).

Each way runs the same rows, its order alternating per repeat, and must give the same loss (checked, to
1e-4 relative): only the time may differ.

    python -m benchmarks.fused_head [--rows 12] [--repeats 3]

The last line is one JSON object: per step kind the median seconds each way and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

WAYS = ("every_position", "labelled_only")


@contextmanager
def scoring(way: str) -> Iterator[None]:
    """TRL's fused head scores ``way``'s positions inside the block; TRL's own choice is back afterwards."""
    from trl.kernels import chunked_logprob
    from trl.trainer import utils

    from actors.trl_cpu import compact_fused_head

    before = utils._use_triton
    utils._use_triton = chunked_logprob._use_triton
    if way == "labelled_only":
        compact_fused_head()
    try:
        yield
    finally:
        utils._use_triton = before


def sft_step(rows: int) -> Callable[[], float]:
    """One SFT step per call over ``rows`` demonstrations (one per micro-step, as batch size 1 trains);
    returns the summed loss."""
    import tempfile
    from pathlib import Path

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.trainer.utils import add_fused_lm_head

    from actors.sft.data import build_examples, plan_template, read_conversations
    from actors.sft.tiny_agent import AGENTS, demonstrations
    from environments.tiny_model import build_tiny_model

    base = build_tiny_model()
    tokenizer = AutoTokenizer.from_pretrained(base)
    with tempfile.TemporaryDirectory() as scratch:
        path, _ = demonstrations(AGENTS["tiny-agent-rows-pi"], Path(scratch))
        conversations, _ = read_conversations(path)
    examples, _ = build_examples(
        tokenizer, conversations[:rows], max_length=6144, plan=plan_template(tokenizer)
    )
    batches = [(torch.tensor([e.input_ids]), torch.tensor([e.labels])) for e in examples]
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))  # as TRL's SFTTrainer adds it
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)  # lr 0: every repeat sees the same weights

    def step() -> float:
        total = 0.0
        for input_ids, labels in batches:
            loss = model(input_ids=input_ids, labels=labels, fused_lm_head=True).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            total += loss.item()
        return total

    return step


def grpo_step() -> Callable[[], float]:
    """One packed GRPO step per call (``benchmarks.packed_step``'s rows and LoRA); returns the loss."""
    from benchmarks.packed_step import batch_loss, micro_batches, session_rows, tree_lora_model

    model = tree_lora_model()
    (batch,) = micro_batches(session_rows(1400, 8), packed=True)

    def step() -> float:
        loss = batch_loss(model, batch)
        loss.backward()
        model.zero_grad(set_to_none=True)
        return loss.item()

    return step


def compare(step: Callable[[], float], repeats: int) -> dict[str, float]:
    """Median seconds of ``step`` each way (a warm-up each, the order alternating) and their ratio."""
    seconds: dict[str, list[float]] = {way: [] for way in WAYS}
    losses: dict[str, float] = {}
    for way in WAYS:
        with scoring(way):
            losses[way] = step()  # warm-up
    a, b = losses.values()
    if abs(a - b) > 1e-4 * max(abs(a), abs(b), 1e-8):
        raise AssertionError(f"the two ways differ in loss ({losses}): the benchmark compares unequal work")
    for repeat in range(repeats):
        for way in WAYS if repeat % 2 == 0 else WAYS[::-1]:
            with scoring(way):
                start = time.perf_counter()
                step()
                seconds[way].append(time.perf_counter() - start)
    medians = {f"{way}_step_median_s": round(statistics.median(seconds[way]), 3) for way in WAYS}
    ratio = medians["every_position_step_median_s"] / medians["labelled_only_step_median_s"]
    return {**medians, "loss": round(a, 4), "ratio": round(ratio, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=12, help="SFT demonstrations per step (one each)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    import torch

    figures: dict = {"threads": torch.get_num_threads(), "sft_rows": args.rows}
    for kind, make in (("sft", lambda: sft_step(args.rows)), ("grpo", grpo_step)):
        result = compare(make(), args.repeats)
        print(f"{kind}: {result}", flush=True)
        figures.update({f"{kind}_{key}": value for key, value in result.items()})
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
