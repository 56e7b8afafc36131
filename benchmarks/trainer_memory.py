"""One trainer step's GPU memory against the plan (``actors.memory.plan``), for the reference presets.

Per preset (``jobs/configs/train-<preset>.yaml``: lora_rank, lora_alpha, token_budget), a decoder built
from its ``ASSUMED`` shape (Llama-style, random bf16 weights made on the device: nothing is downloaded),
LoRA on every linear layer of the blocks as the trainer sets it (``target_modules="all-linear"``; PEFT
keeps the adapter in fp32 under a bf16 base), fused AdamW over the LoRA, and one optimizer step = forward
and backward of one causal sequence of ``token_budget`` tokens under bf16 autocast (SDPA attention),
loss TRL's clipped GRPO loss over per-token log-probabilities, then the optimizer step. Measured:
weights (allocated after the build), LoRA state (what a step leaves allocated beyond the weights: fp32
LoRA, its gradients, Adam's moments) and activations + logits (the steps' peak minus that), each against
the plan; step time (one warm-up, median of ``--repeats``) and tokens/s. Gradient checkpointing on and
off; an out-of-memory configuration is reported as ``oom`` with the peak it reached.

Two LM heads:
- ``fused`` (the trainer's): TRL 1.16's ``add_fused_lm_head`` projects tiles of 4,096 tokens x 32,768
  vocabulary entries and never holds the (tokens x vocabulary) logits; ``chunked_log_probs`` is the same
  computation in plain torch (TRL folds each tile with a Triton kernel, so its tiles' scratch is smaller).
- ``full``: bf16 logits and their fp32 log-softmax, what the plan's logits term assumes (TRL's
  ``selective_log_softmax`` path).

The mixture-of-experts preset (lfm2.5-24b-a2b) is skipped: its shape has no expert count.

    python benchmarks/trainer_memory.py [--presets lfm3-1.7b twil-8b] [--device cuda|cpu] [--tokens N]
        [--heads fused full] [--checkpointing on off] [--repeats 3] [--shape tiny]

On CPU memory is not measured (null) and the model runs in fp32, as the trainer does there. Needs torch,
transformers, peft and pyyaml only (no Ray, vLLM or TRL). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

if __package__ in (None, ""):  # run as a file where the project is not installed (the GPU machine)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.memory import ASSUMED, GIB, H200_GIB, ModelShape, lora_params, plan  # stdlib only

CONFIGS = Path(__file__).resolve().parents[1] / "jobs" / "configs"
TOKEN_CHUNK = 4096
VOCAB_CHUNK = 32768
"""The fused head's tiles: tokens x vocabulary entries (TRL's ``TOKEN_CHUNK_SIZE`` and chunk size)."""
CLIP_EPSILON = 0.2
"""TRL's GRPO clipping (``epsilon``, default 0.2)."""


@dataclass(frozen=True, slots=True)
class Arch:
    """What a dense ``ModelShape`` leaves open."""

    head_dim: int
    tied: bool
    """Input embedding and LM head share one matrix."""


DENSE: dict[str, Arch] = {
    "lfm3-1.7b": Arch(head_dim=64, tied=True),  # kv_dim 8 x 64; LFM models tie their embeddings
    "twil-8b": Arch(head_dim=128, tied=False),  # kv_dim 8 x 128, vocabulary 151,936: a Qwen3-8B shape
}
SKIPPED = {"lfm2.5-24b-a2b": "mixture of experts: its ModelShape has no expert count (24e9 implies ~62)"}
TINY = ModelShape(188_736, 64, 2, 256, 1024, 32, source="tiny")
"""A CPU test shape (2 layers, 4 heads of 16, tied embeddings); ``params`` is its exact count."""
TINY_ARCH = Arch(head_dim=16, tied=True)
TINY_TOKENS = 128


def preset_settings(preset: str) -> dict[str, Any]:
    """The train preset's trainer settings that size a step (plain YAML: no job config, no Ray)."""
    import yaml

    raw = yaml.safe_load((CONFIGS / f"train-{preset}.yaml").read_text())
    trainer = raw.get("trainer") or {}  # the config's sections (jobs/sections.py), defaults as there
    return {
        "model_preset": raw["serving"]["preset"],
        "lora_rank": int(trainer.get("lora_rank", 32)),
        "lora_alpha": int(trainer.get("lora_alpha", 64)),
        "token_budget": int(trainer.get("token_budget", 65536)),
        "gradient_checkpointing": str(trainer.get("gradient_checkpointing", "auto")),
    }


def model_config(shape: ModelShape, arch: Arch, max_tokens: int = 131072) -> Any:
    """A Llama-style config of ``shape``: query heads of ``arch.head_dim`` covering the hidden size."""
    from transformers import LlamaConfig

    if shape.hidden % arch.head_dim or shape.kv_dim % arch.head_dim:
        raise ValueError(f"hidden {shape.hidden} and kv_dim {shape.kv_dim} must divide by {arch.head_dim}")
    return LlamaConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.hidden // arch.head_dim,
        num_key_value_heads=shape.kv_dim // arch.head_dim,
        head_dim=arch.head_dim,
        max_position_embeddings=max(max_tokens, 4096),
        tie_word_embeddings=arch.tied,
        use_cache=False,
    )


def build_model(config: Any, device: torch.device, dtype: torch.dtype) -> Any:
    """The model with random weights, made where it runs (``meta``: shapes only, no memory)."""
    from transformers import AutoModelForCausalLM

    with torch.device(device):
        return AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa")


def parameter_count(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())  # a tied matrix counts once


class _ChunkedLogProbs(torch.autograd.Function):
    """Per-token log-probabilities of ``hidden @ weight.T`` without the (tokens x vocabulary) logits: each
    (token chunk x vocabulary chunk) tile is projected, folded into fp32 statistics and dropped; the
    backward recomputes each tile and turns it into the hidden states' gradient."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        log_z = torch.empty(hidden.shape[0], dtype=torch.float32, device=hidden.device)
        picked = torch.zeros_like(log_z)
        for start, end in _chunks(hidden.shape[0], TOKEN_CHUNK):
            chunk, target = hidden[start:end].to(weight.dtype), targets[start:end]
            running = torch.full((end - start,), float("-inf"), device=hidden.device)
            for low, high in _chunks(weight.shape[0], VOCAB_CHUNK):
                tile = (chunk @ weight[low:high].t()).float()
                running = torch.logaddexp(running, tile.logsumexp(-1))
                inside = (target >= low) & (target < high)
                at = (target - low).clamp(0, high - low - 1)[:, None]
                picked[start:end] += torch.where(inside, tile.gather(1, at).squeeze(1), 0.0)
            log_z[start:end] = running
        ctx.save_for_backward(hidden, weight, targets, log_z)
        return picked - log_z

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None]:
        hidden, weight, targets, log_z = ctx.saved_tensors
        grad_hidden = torch.empty_like(hidden) if ctx.needs_input_grad[0] else None
        grad_weight = torch.zeros_like(weight, dtype=torch.float32) if ctx.needs_input_grad[1] else None
        for start, end in _chunks(hidden.shape[0], TOKEN_CHUNK):
            chunk, target, upstream = hidden[start:end].to(weight.dtype), targets[start:end], grad[start:end]
            chunk_grad = torch.zeros(chunk.shape, dtype=torch.float32, device=hidden.device)
            for low, high in _chunks(weight.shape[0], VOCAB_CHUNK):
                # d log p(t) / d logit(v) = [v = t] - softmax(v), times the incoming gradient
                g = (chunk @ weight[low:high].t()).float().sub_(log_z[start:end, None]).exp_()
                g.mul_(-upstream[:, None])
                inside = (target >= low) & (target < high)
                at = (target - low).clamp(0, high - low - 1)[:, None]
                g.scatter_add_(1, at, torch.where(inside, upstream, 0.0)[:, None])
                chunk_grad += g.to(weight.dtype) @ weight[low:high]
                if grad_weight is not None:
                    grad_weight[low:high] += g.t() @ chunk.float()
            if grad_hidden is not None:
                grad_hidden[start:end] = chunk_grad.to(hidden.dtype)
        return grad_hidden, None if grad_weight is None else grad_weight.to(weight.dtype), None


def _chunks(total: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, total)) for start in range(0, total, size)]


def chunked_log_probs(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``log_softmax(hidden @ weight.T)[i, targets[i]]`` for (tokens, hidden) ``hidden``, in fp32."""
    return _ChunkedLogProbs.apply(hidden, weight, targets)


def full_log_probs(hidden: torch.Tensor, head: torch.nn.Module, targets: torch.Tensor) -> torch.Tensor:
    """The same from the whole logits: the head's (bf16 under autocast) logits, their fp32 log-softmax."""
    return head(hidden).float().log_softmax(-1).gather(-1, targets[:, None]).squeeze(-1)


def grpo_loss(log_probs: torch.Tensor, old_log_probs: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """TRL's clipped GRPO loss, every token trained, averaged over the tokens."""
    ratio = torch.exp(log_probs - old_log_probs)
    clipped = ratio.clamp(1 - CLIP_EPSILON, 1 + CLIP_EPSILON)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


@dataclass
class Bench:
    """The LoRA-wrapped model's parts a step drives, on one device."""

    causal_lm: Any
    device: torch.device
    tokens: int
    weights_bytes: int
    """What the bare model allocated (0 on CPU)."""

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def lora_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.causal_lm.parameters() if p.requires_grad]

    checkpointing: bool = False

    def set_checkpointing(self, on: bool) -> None:
        if on == self.checkpointing:
            return
        if on:  # as TRL with a PEFT model: non-reentrant checkpointing and inputs that require grad
            self.causal_lm.gradient_checkpointing_enable()
            self.causal_lm.enable_input_require_grads()
        else:
            self.causal_lm.gradient_checkpointing_disable()
            self.causal_lm.disable_input_require_grads()
        self.checkpointing = on

    def step(self, optimizer: torch.optim.Optimizer, head: str, seed: int) -> None:
        generator = torch.Generator(device=self.device).manual_seed(seed)
        vocab = self.causal_lm.config.vocab_size
        ids = torch.randint(vocab, (1, self.tokens), device=self.device, generator=generator)
        advantages = torch.randn(self.tokens - 1, device=self.device, generator=generator).sign()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cuda):
            hidden = self.causal_lm.model(input_ids=ids, use_cache=False).last_hidden_state[0, :-1]
            lm_head = self.causal_lm.lm_head
            targets = ids[0, 1:]
            if head == "fused":
                log_probs = chunked_log_probs(hidden, lm_head.weight, targets)
            else:
                log_probs = full_log_probs(hidden, lm_head, targets)
            loss = grpo_loss(log_probs, log_probs.detach(), advantages)
        loss.backward()
        optimizer.step()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _gib(n: float) -> float:
    return round(n / GIB, 3)


def build_bench(shape: ModelShape, arch: Arch, settings: dict, tokens: int, device: torch.device) -> Bench:
    """The model, then the trainer's LoRA on it; ``bench.weights_bytes``: what the bare model allocated."""
    from peft import LoraConfig, get_peft_model

    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32  # the trainer's dtypes
    before = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
    causal_lm = build_model(model_config(shape, arch, tokens), device, dtype)
    _sync(device)
    weights_bytes = torch.cuda.memory_allocated(device) - before if device.type == "cuda" else 0
    causal_lm.train()
    lora = LoraConfig(
        r=settings["lora_rank"],
        lora_alpha=settings["lora_alpha"],
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )
    get_peft_model(causal_lm, lora)  # injects the LoRA layers into causal_lm's modules in place
    return Bench(causal_lm, device, tokens, weights_bytes)


def _out_of_memory(exc: BaseException) -> bool:
    """A library's own allocation failure (cuBLAS's workspace) also means the step did not fit."""
    return any(word in str(exc) for word in ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED"))


def measure(bench: Bench, head: str, checkpointing: bool, repeats: int) -> dict:
    """One configuration: a warm-up step (it allocates Adam's moments), then ``repeats`` timed ones."""
    cuda = bench.cuda
    bench.set_checkpointing(checkpointing)
    optimizer = torch.optim.AdamW(bench.lora_parameters(), lr=1e-5, fused=cuda)
    out: dict[str, Any] = {"status": "ok"}
    times: list[float] = []
    resident = 0
    if cuda:
        torch.cuda.reset_peak_memory_stats(bench.device)
    try:
        for number in range(1 + repeats):
            _sync(bench.device)
            start = time.perf_counter()
            bench.step(optimizer, head, seed=number)
            _sync(bench.device)
            if number:
                times.append(time.perf_counter() - start)
            if cuda and number == 0:
                resident = torch.cuda.memory_allocated(bench.device)  # gradients still held
            optimizer.zero_grad(set_to_none=True)
    except (torch.cuda.OutOfMemoryError, RuntimeError) as exc:
        if not isinstance(exc, torch.cuda.OutOfMemoryError) and not _out_of_memory(exc):
            raise
        out["status"] = "oom"
    if cuda:
        peak = torch.cuda.max_memory_allocated(bench.device)
        out["peak_gib"] = _gib(peak)
        out["peak_reserved_gib"] = _gib(torch.cuda.max_memory_reserved(bench.device))
        out["weights_gib"] = _gib(bench.weights_bytes)
        if resident:
            out["lora_state_gib"] = _gib(resident - bench.weights_bytes)
            out["act_logits_gib"] = _gib(peak - resident)
    if times and out["status"] == "ok":
        out["step_s"] = round(statistics.median(times), 3)
        out["tokens_per_s"] = round(bench.tokens / statistics.median(times), 1)
    del optimizer
    bench.causal_lm.zero_grad(set_to_none=True)
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return out


def planned(shape: ModelShape, rank: int, tokens: int, checkpointing: bool) -> dict[str, float]:
    p = plan(
        shape,
        lora_rank=rank,
        max_loras=1,
        token_budget=tokens,
        checkpointing=checkpointing,
        serving_gib=H200_GIB,
    )
    return {
        "weights_gib": p.trainer_weights_gib,
        "lora_state_gib": p.trainer_lora_state_gib,
        "act_logits_gib": p.trainer_activations_gib + p.trainer_logits_gib,
        "peak_gib": p.trainer_gib,
    }


PARTS = ("weights", "lora_state", "act_logits", "peak")


def row(label: str, measured: dict, plan_gib: dict[str, float]) -> str:
    cells = []
    for part in PARTS:
        got = measured.get(f"{part}_gib")
        want = plan_gib[f"{part}_gib"]
        ratio = f"{got / want:.2f}" if got is not None and want else "-"
        cells.append(f"{'-' if got is None else f'{got:.2f}':>7} / {want:6.2f} ({ratio:>4})")
    speed = measured.get("tokens_per_s")
    return f"{label:<22} {measured['status']:<7}" + " | ".join(cells) + f" | {speed or '-'} tok/s"


def run_preset(name: str, args: argparse.Namespace, device: torch.device, figures: dict) -> None:
    from actors.trainer import checkpointing_wanted  # stdlib only at import time

    settings = preset_settings(name)
    model_preset = settings["model_preset"]
    if args.shape == "tiny":
        shape, arch = TINY, TINY_ARCH
    elif model_preset in DENSE:
        shape, arch = ASSUMED[model_preset], DENSE[model_preset]
    else:
        print(f"{name}: skipped ({SKIPPED.get(model_preset, 'no dense shape')})", flush=True)
        figures.setdefault("skipped", []).append(name)
        return
    tokens = args.tokens or (TINY_TOKENS if args.shape == "tiny" else settings["token_budget"])
    key = name.replace("-", "_").replace(".", "_")
    start = time.perf_counter()
    torch.manual_seed(0)
    bench = build_bench(shape, arch, settings, tokens, device)
    params = parameter_count(bench.causal_lm) - sum(p.numel() for p in bench.lora_parameters())
    lora_count = sum(p.numel() for p in bench.lora_parameters())
    lora_planned = lora_params(shape, settings["lora_rank"])
    print(
        f"{name} ({shape.source} shape, {shape.layers} layers x {shape.hidden}, head_dim {arch.head_dim}, "
        f"{'tied' if arch.tied else 'untied'} embeddings): {params:,} parameters built against "
        f"{shape.params:,.0f} assumed ({params / shape.params - 1:+.1%}); LoRA rank "
        f"{settings['lora_rank']}: {lora_count:,} ({lora_planned:,.0f} planned); {tokens} tokens a step "
        f"(budget {settings['token_budget']}); built in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    figures[f"{key}_params"] = params
    figures[f"{key}_params_assumed"] = int(shape.params)
    figures[f"{key}_lora_params"] = lora_count
    figures[f"{key}_tokens"] = tokens
    trainer_ckpt = checkpointing_wanted(settings["gradient_checkpointing"], True, settings["token_budget"])
    figures[f"{key}_trainer_checkpointing"] = "on" if trainer_ckpt else "off"
    print(
        f"the trainer on a GPU: gradient_checkpointing {settings['gradient_checkpointing']} -> "
        f"{figures[f'{key}_trainer_checkpointing']} at its budget",
        flush=True,
    )
    print(f"{'':<30}" + " | ".join(f"{p + ' GiB (x plan)':<25}" for p in PARTS), flush=True)
    for head in args.heads:
        for checkpointing in args.checkpointing:
            label = ("" if head == "fused" else "full_logits_") + f"ckpt_{checkpointing}"
            want = planned(shape, settings["lora_rank"], tokens, checkpointing == "on")
            if head == "full" and checkpointing == "off" and figures.get(f"{key}_ckpt_off_status") == "oom":
                measured = {"status": "skipped"}  # the fused head's run did not fit: this holds more
            else:
                measured = measure(bench, head, checkpointing == "on", args.repeats)
            print(row(label, measured, want), flush=True)
            for part in PARTS:
                figures[f"{key}_{label}_{part}_planned_gib"] = round(want[f"{part}_gib"], 3)
                got = measured.get(f"{part}_gib")
                figures[f"{key}_{label}_{part}_gib"] = got
                figures[f"{key}_{label}_{part}_ratio"] = (
                    None if got is None else round(got / want[f"{part}_gib"], 3)
                )
            figures[f"{key}_{label}_peak_reserved_gib"] = measured.get("peak_reserved_gib")
            figures[f"{key}_{label}_step_s"] = measured.get("step_s")
            figures[f"{key}_{label}_tokens_per_s"] = measured.get("tokens_per_s")
            figures[f"{key}_{label}_status"] = measured["status"]
    del bench
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["lfm3-1.7b", "twil-8b"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--tokens", type=int, default=0, help="tokens a step (default: the preset's budget)")
    parser.add_argument("--heads", nargs="+", choices=("fused", "full"), default=["fused", "full"])
    parser.add_argument("--checkpointing", nargs="+", choices=("on", "off"), default=["on", "off"])
    parser.add_argument("--repeats", type=int, default=3, help="timed steps after one warm-up")
    parser.add_argument("--shape", choices=("assumed", "tiny"), default="assumed")
    args = parser.parse_args(argv)

    import transformers

    device = torch.device(args.device)
    figures: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "repeats": args.repeats,
    }
    print(f"{figures['device']}, torch {torch.__version__}, transformers {transformers.__version__}")
    print("each part: measured / planned GiB (measured / planned); act_logits = activations + logits")
    for name in args.presets:
        run_preset(name, args, device, figures)
    print(json.dumps(figures))  # the last line: every figure
    return figures


if __name__ == "__main__":
    main()
