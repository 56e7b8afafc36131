"""One SFT run: read traces, build exact assistant masks, preflight, train with TRL, save, report.

TRL gets pre-tokenized rows (``input_ids`` + our ``labels``) with ``skip_prepare_dataset``, so it neither
re-renders nor re-tokenizes nor rebuilds labels: the loss is on exactly the tokens ``actors.sft.data`` chose.
The preflight runs before torch, TRL or the model are touched and fails in seconds with what to change.
Writes the adapter (or the full model) and the tokenizer to ``out_dir``, plus ``metrics.json`` (figures and
TRL's log history).
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors.sft.data import TokenizedExample, build_examples, plan_template, read_conversations, show_mask
from environments.errors import UserError
from environments.progress import duration_text
from environments.traces.types import Conversation, Skipped

if TYPE_CHECKING:
    from actors.sft.config import SFTConfig

Log = Callable[[str], None]


class PreflightError(UserError, RuntimeError):
    """The run would fail or learn nothing; the message says what to change."""


def split_examples(
    examples: Sequence[TokenizedExample], eval_fraction: float, seed: int, max_eval: int = 0
) -> tuple[list[TokenizedExample], list[TokenizedExample]]:
    """A seeded held-out split of ``round(n * eval_fraction)`` examples (at least one if the fraction > 0),
    at most ``max_eval`` when > 0 (the held-out loss is computed twice per run; its cost should not grow
    with the dataset)."""
    if eval_fraction <= 0:
        return list(examples), []
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    n_eval = max(1, round(len(examples) * eval_fraction))
    if max_eval > 0:
        n_eval = min(n_eval, max_eval)
    held = set(order[:n_eval])
    return [e for i, e in enumerate(examples) if i not in held], [examples[i] for i in sorted(held)]


def preflight(
    examples: Sequence[TokenizedExample],
    skipped: Sequence[Skipped],
    out_dir: str | Path,
    *,
    eval_fraction: float,
    tokenizer: Any = None,
    log: Log = print,
) -> dict[str, Any]:
    """Check the data and the output folder; print shapes and one sample with its mask; return figures."""
    reasons = dict(Counter(s.reason for s in skipped).most_common())
    if not examples:
        raise PreflightError(
            f"no usable conversations ({len(skipped)} skipped: {reasons or 'none read'}); "
            "check `traces` points at non-empty trace files with assistant turns"
        )
    masked = [e.source or f"#{i}" for i, e in enumerate(examples) if e.assistant_tokens == 0]
    if masked:
        raise PreflightError(
            f"{len(masked)} example(s) have no assistant tokens, so they train nothing (first: {masked[0]}); "
            "check the chat template's assistant spans or raise max_length"
        )
    if eval_fraction > 0 and len(examples) < 2:
        raise PreflightError(
            "1 usable conversation cannot be split for a held-out loss: add traces or set eval_fraction=0"
        )
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".preflight-write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise PreflightError(
            f"out_dir {out} is not writable ({exc.strerror}): choose another out_dir"
        ) from exc
    lengths = [len(e.input_ids) for e in examples]
    assistant = sum(e.assistant_tokens for e in examples)
    figures = {
        "examples": len(examples),
        "skipped": len(skipped),
        "skip_reasons": reasons,
        "truncated": sum(e.truncated for e in examples),
        "tokens_min": min(lengths),
        "tokens_median": statistics.median(lengths),
        "tokens_max": max(lengths),
        "tokens_total": sum(lengths),
        "assistant_token_fraction": round(assistant / sum(lengths), 4),
    }
    if figures["assistant_token_fraction"] <= 0:  # pragma: no cover - excluded by the per-example check
        raise PreflightError("no assistant tokens at all: nothing to learn")
    log(
        f"[sft preflight] {figures['examples']} conversations ({figures['skipped']} skipped {reasons}), "
        f"tokens min/median/max {figures['tokens_min']}/{figures['tokens_median']}/{figures['tokens_max']}, "
        f"assistant fraction {figures['assistant_token_fraction']}, truncated {figures['truncated']}"
    )
    if tokenizer is not None:
        log(f"[sft preflight] sample {examples[0].source or '#0'} ([[...]] = trained tokens):")
        log(show_mask(tokenizer, examples[0]))
    return figures


def check_traces(cfg: SFTConfig) -> None:
    """Raise PreflightError when ``traces`` is empty or names a missing path, or ``trace_format`` is not a
    format: checked by ``jobs.sft`` before a model is built or loaded, and again here by ``load_all``."""
    if not cfg.traces:
        raise PreflightError("no trace files: set `traces` to one or more files")
    for path in cfg.traces:
        if not Path(path).exists():
            raise PreflightError(f"trace file {path} does not exist: fix `traces`")
    if cfg.trace_format is not None:
        from environments.traces.read import TraceFormat

        try:
            TraceFormat(cfg.trace_format)
        except ValueError:
            known = ", ".join(f.value for f in TraceFormat)
            raise PreflightError(
                f"trace_format={cfg.trace_format!r}: choose one of {known}, or null to detect it per file"
            ) from None


def load_all(cfg: SFTConfig) -> tuple[list[Conversation], list[Skipped]]:
    conversations: list[Conversation] = []
    skipped: list[Skipped] = []
    check_traces(cfg)
    for path in cfg.traces:
        got, bad = read_conversations(path, cfg.trace_format)
        conversations += got
        skipped += bad
    return conversations, skipped


def step_line(step: int, max_steps: int, logs: dict[str, Any], elapsed_s: float) -> str | None:
    """The console line of one logged training step (loss, token accuracy, learning rate, time so far
    and left); None for the records that are no training step (held-out losses, the end-of-run totals)."""
    if not isinstance(logs.get("loss"), int | float) or "train_runtime" in logs:
        return None
    parts = [f"[sft] step {step}/{max_steps}", f"loss {logs['loss']:.4f}"]
    if isinstance(accuracy := logs.get("mean_token_accuracy"), int | float):
        parts.append(f"accuracy {accuracy:.3f}")
    if isinstance(lr := logs.get("learning_rate"), int | float):
        parts.append(f"lr {lr:.2e}")
    timing = duration_text(elapsed_s)
    if 0 < step < max_steps:
        timing += f", about {duration_text(elapsed_s / step * (max_steps - step))} left"
    return "  ".join([*parts, timing])


def _step_lines(log: Log) -> Any:
    """A Transformers callback that hands ``log`` one ``step_line`` per logging step (``logging_steps``):
    the run's progress display, in place of tqdm's bar, which a log file or a sweep's parallel points
    would garble."""
    from transformers import TrainerCallback

    class StepLines(TrainerCallback):
        started = time.perf_counter()

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started = time.perf_counter()

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            elapsed_s = time.perf_counter() - self.started
            line = step_line(state.global_step, state.max_steps, logs or {}, elapsed_s)
            if line is not None and state.is_world_process_zero:
                log(line)

    return StepLines()


def _rows(examples: Sequence[TokenizedExample]):
    from datasets import Dataset

    return Dataset.from_list([e.to_row() for e in examples])


def run_sft(cfg: SFTConfig, *, log: Log = print) -> dict[str, Any]:
    """Train once per ``cfg``; returns the figures also written to ``<out_dir>/metrics.json``."""
    started = time.perf_counter()
    from transformers import AutoTokenizer

    model_path = cfg.model  # a folder or a hub id: actors.models.resolve_model_path resolves preset names
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    conversations, read_skipped = load_all(cfg)
    plan = plan_template(tokenizer, cfg.mask_method)
    log(f"[sft] {len(conversations)} conversations read; masks from {plan.origin} ({plan.method})")
    examples, skipped = build_examples(tokenizer, conversations, max_length=cfg.max_length, plan=plan)
    data = preflight(
        examples, read_skipped + skipped, cfg.out_dir, eval_fraction=cfg.eval_fraction, tokenizer=tokenizer,
        log=log,
    )  # fmt: skip
    train, held = split_examples(examples, cfg.eval_fraction, cfg.seed, cfg.max_eval_examples)
    preflight_s = time.perf_counter() - started

    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig as TRLSFTConfig
    from trl import SFTTrainer

    from actors.trl_cpu import compact_fused_head

    compact_fused_head()  # TRL scores every position on CPU: the prompt's too, half the step
    bf16 = cfg.bf16 and torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.bfloat16 if bf16 else torch.float32)
    peft_config = None
    if not cfg.full_finetune:
        modules = cfg.lora.target_modules
        peft_config = LoraConfig(
            r=cfg.lora.rank,
            lora_alpha=cfg.lora.alpha,
            lora_dropout=cfg.lora.dropout,
            target_modules="all-linear" if modules == ("all-linear",) else list(modules),
            task_type="CAUSAL_LM",
        )
    args = TRLSFTConfig(
        output_dir=cfg.out_dir,
        learning_rate=cfg.learning_rate,
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        max_length=cfg.max_length,
        bf16=bf16,
        fp16=False,
        gradient_checkpointing=False,
        logging_steps=cfg.logging_steps,
        eval_strategy="no",
        save_strategy="no",
        report_to="none",
        seed=cfg.seed,
        disable_tqdm=True,  # progress: one line per logging step (_step_lines)
        dataloader_pin_memory=torch.cuda.is_available(),
        dataset_kwargs={
            "skip_prepare_dataset": True
        },  # our rows are final: no re-tokenizing, no re-labelling
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=_rows(train),
        eval_dataset=_rows(held) if held else None,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[_step_lines(log)],
    )
    before = trainer.evaluate() if held else {}
    result = trainer.train()
    after = trainer.evaluate() if held else {}
    trainer.save_model(cfg.out_dir)
    tokenizer.save_pretrained(cfg.out_dir)

    history = trainer.state.log_history
    train_logs = [h for h in history if "loss" in h and "eval_loss" not in h]
    figures: dict[str, Any] = {
        "out_dir": str(Path(cfg.out_dir).resolve()),
        "model": model_path,
        "full_finetune": cfg.full_finetune,
        "lora_rank": None if cfg.full_finetune else cfg.lora.rank,
        "learning_rate": cfg.learning_rate,
        "max_length_tokens": cfg.max_length,
        "mask_method": str(plan.method),
        "examples_train": len(train),
        "examples_eval": len(held),
        "steps": trainer.state.global_step,
        "train_loss_mean": round(result.training_loss, 4),
        "train_loss_first": round(train_logs[0]["loss"], 4) if train_logs else None,
        "train_loss_last": round(train_logs[-1]["loss"], 4) if train_logs else None,
        "train_mean_token_accuracy_last": train_logs[-1].get("mean_token_accuracy") if train_logs else None,
        "eval_loss_before": before.get("eval_loss"),
        "eval_loss": after.get("eval_loss"),
        "eval_mean_token_accuracy": after.get("eval_mean_token_accuracy"),
        "preflight_s": round(preflight_s, 2),
        "train_s": round(result.metrics.get("train_runtime", 0.0), 2),
        "total_s": round(time.perf_counter() - started, 2),
        "data": data,
    }
    # Trainer.train() resets its state, so the held-out loss before training is added back as step 0.
    history = ([{**before, "step": 0}] if before else []) + list(history)
    record = {**figures, "config": asdict(cfg), "log_history": history}
    (Path(cfg.out_dir) / "metrics.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    log(
        f"[sft] {figures['steps']} steps in {figures['train_s']} s; train loss "
        f"{figures['train_loss_first']} -> {figures['train_loss_last']}; "
        f"held-out loss {figures['eval_loss_before']} -> {figures['eval_loss']}"
    )
    return figures
