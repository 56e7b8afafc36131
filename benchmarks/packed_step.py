"""A trainer step's forward and backward, one row per micro-batch against a step packed as TRL's prefix
tree (``micro_batch_samples``), on the tiny model with a rank-8 LoRA, as the CPU trainer runs it.

The rows are shaped like the smoke run's pi sessions: a shared system prompt (``--prefix`` tokens), then
per session an instruction and two model turns, the second turn's prompt holding the first turn and its
tool result. Packed, what rows share is forwarded once; unpacked, every row forwards its whole prompt.

    python benchmarks/packed_step.py [--prefix 1400] [--sessions 8] [--repeats 3]

The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time


def session_rows(prefix: int, sessions: int, seed: int = 0, vocab: int = 3000) -> list[dict]:
    """Rows (model turns) as the rollout pool queues them: two per session, sharing ``prefix`` tokens."""
    import torch

    rng = random.Random(seed)
    draw = lambda n: [rng.randrange(vocab) for _ in range(n)]  # noqa: E731
    system = draw(prefix)
    rows = []
    for number in range(sessions):
        instruction, first, result, second = draw(150), draw(40), draw(60), draw(40)
        for prompt, completion in (
            (system + instruction, first),
            (system + instruction + first + result, second),
        ):
            ids = prompt + completion
            rows.append(
                {
                    "input_ids": torch.tensor(ids),
                    "completion_mask": torch.tensor([0] * len(prompt) + [1] * len(completion)),
                    "old_log_probs": torch.zeros(len(ids)),
                    "advantage": 1.0,
                    "group_id": number // 4,
                }
            )
    return rows


def micro_batches(rows: list[dict], packed: bool) -> list[dict]:
    """TRL's packed micro-batches: all rows in one prefix tree, or one tree per row."""
    from trl.experimental.async_grpo.packing import TreeRow

    groups = [rows] if packed else [[row] for row in rows]
    out = []
    for group in groups:
        tree = TreeRow()
        for row in group:
            tree.add(row)
        out.append(tree.pack())
    return out


def forwarded_tokens(batches: list[dict]) -> int:
    return sum(len(b["input_ids"]) for b in batches)


def tree_lora_model():
    """The tiny model as the CPU trainer holds it: tree attention, TRL's fused LM head, a rank-8 LoRA."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from trl.experimental.async_grpo.packing import TREE_ATTENTION, register_tree_attention
    from trl.trainer.utils import add_fused_lm_head

    from actors.trl_cpu import patch_trl_for_cpu
    from environments.tiny_model import build_tiny_model

    patch_trl_for_cpu()
    register_tree_attention()
    model = AutoModelForCausalLM.from_pretrained(
        build_tiny_model(), dtype=torch.float32, attn_implementation=TREE_ATTENTION
    )
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))  # as TRL's AsyncGRPOTrainer adds it
    return get_peft_model(
        model, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM")
    )


def batch_loss(model, batch: dict):
    """A packed micro-batch's forward: the mean negative log-prob of its completion tokens."""
    tree = {k: batch[k] for k in ("tree_kv_index", "tree_cu_seqlens_q", "tree_cu_seqlens_k")}
    tree["tree_max_seqlen_q"], tree["tree_max_seqlen_k"] = batch["tree_max_seqlens"].tolist()
    out = model(
        input_ids=batch["input_ids"][None],
        position_ids=batch["position_ids"][None],
        shift_labels=batch["shift_labels"][None],
        fused_lm_head=True,
        **tree,
    )
    return -out.log_probs.flatten()[batch["token_index"]].mean()


def step_seconds(model, batches: list[dict]) -> float:
    """One optimizer step's forward and backward over ``batches`` (gradients accumulated)."""
    start = time.perf_counter()
    for b in batches:
        (batch_loss(model, b) / len(batches)).backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=int, default=1400)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch

    model = tree_lora_model()
    rows = session_rows(args.prefix, args.sessions)
    figures = {"rows": len(rows), "prefix_tokens": args.prefix, "threads": torch.get_num_threads()}
    for name, packed in (("unpacked", False), ("packed", True)):
        batches = micro_batches(rows, packed)
        step_seconds(model, batches)  # warm-up
        times = [step_seconds(model, batches) for _ in range(args.repeats)]
        figures[f"{name}_forwarded_tokens"] = forwarded_tokens(batches)
        figures[f"{name}_step_median_s"] = round(statistics.median(times), 3)
        print(f"{name}: {figures[f'{name}_forwarded_tokens']} tokens forwarded, {times} s", flush=True)
    figures["ratio"] = round(figures["unpacked_step_median_s"] / figures["packed_step_median_s"], 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
