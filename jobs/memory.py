"""Print the GPU memory plan of the reference train presets (``actors.memory`` holds the arithmetic); the
last line is one JSON object of the figures.

python -m jobs.memory [PRESET ...]      e.g. lfm3-1.7b (default: every reference preset)
"""

from __future__ import annotations

import json
from pathlib import Path

from actors.memory import ASSUMED, H200_GIB, MemoryPlan, ModelShape, plan
from environments.errors import UsageError, cli_main


def preset_plan(train_preset: str) -> tuple[ModelShape, MemoryPlan, dict]:
    """The plan of a train config in ``jobs/configs`` (its model preset's serving share of one H200)."""
    from actors.config_loader import load_config
    from actors.models import load_preset
    from actors.trainer import checkpointing_wanted
    from jobs.train import TrainJobConfig

    configs = Path(__file__).resolve().parent / "configs"
    job = load_config(TrainJobConfig, configs / f"train-{train_preset}.yaml")
    serving = load_preset(job.serving.preset)
    shape = ASSUMED[job.serving.preset]
    local = Path(serving.model) / "config.json"
    if local.is_file():
        shape = ModelShape.from_config(local, shape.params)
    trainer = job.trainer
    checkpointing = checkpointing_wanted(trainer.gradient_checkpointing, True, trainer.token_budget)
    result = plan(
        shape,
        lora_rank=trainer.lora_rank,
        max_loras=serving.max_loras,
        token_budget=trainer.token_budget,
        checkpointing=checkpointing,
        serving_gib=H200_GIB * serving.gpu_memory_utilization,
        shards=trainer.ranks if trainer.fsdp else 1,
    )
    settings = {
        "trainers": len(job.harnesses),
        "trainer_gpus": trainer.gpus,
        "token_budget": trainer.token_budget,
        "checkpointing": checkpointing,
        "serving_share": serving.gpu_memory_utilization,
    }
    return shape, result, settings


def main(argv: list[str]) -> None:
    figures = {}
    unknown = [name for name in argv if name not in ASSUMED]
    if unknown:
        raise UsageError(f"unknown train preset {unknown[0]!r}: choose from {', '.join(sorted(ASSUMED))}")
    for name in argv or sorted(ASSUMED):
        shape, p, s = preset_plan(name)
        share = s["trainer_gpus"] * H200_GIB
        print(
            f"{name} ({shape.source}): serving {p.serving_weights_gib:.1f} weights + "
            f"{p.serving_adapters_gib:.1f} adapters + {p.serving_kv_gib:.1f} KV = "
            f"{H200_GIB * s['serving_share']:.0f} GiB; each of {s['trainers']} trainers "
            f"{p.trainer_weights_gib:.1f} weights + {p.trainer_lora_state_gib:.1f} LoRA state + "
            f"{p.trainer_activations_gib:.1f} activations + {p.trainer_logits_gib:.1f} logits = "
            f"{p.trainer_gib:.1f} GiB at {s['token_budget']} tokens (checkpointing "
            f"{'on' if s['checkpointing'] else 'off'}), against {share:.0f} GiB "
            f"({s['trainer_gpus']} GPU)"
        )
        figures[name] = {
            "serving_gib": round(H200_GIB * s["serving_share"], 1),
            "serving_kv_gib": round(p.serving_kv_gib, 1),
            "trainer_gib": round(p.trainer_gib, 1),
            "trainer_share_gib": round(share, 1),
            "trainer_logits_gib": round(p.trainer_logits_gib, 1),
        }
    print(json.dumps(figures))  # the last line: every figure, for comparing runs


if __name__ == "__main__":
    cli_main(main)
