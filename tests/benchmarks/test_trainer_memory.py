"""The trainer-memory benchmark on CPU: the models it builds have the assumed shapes' parameter counts
(on the meta device: no memory), its LoRA is the plan's, its log-probabilities are log-softmax's, and a
tiny run prints the figures a GPU run will, without Ray, vLLM or TRL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from actors.memory import ASSUMED, lora_params
from benchmarks import trainer_memory
from benchmarks.trainer_memory import (
    DENSE,
    TINY,
    TINY_ARCH,
    build_model,
    chunked_log_probs,
    full_log_probs,
    grpo_loss,
    model_config,
    parameter_count,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("preset", sorted(DENSE))
def test_each_assumed_dense_shape_builds_a_model_within_10_percent_of_its_parameter_count(preset):
    shape = ASSUMED[preset]
    model = build_model(model_config(shape, DENSE[preset]), torch.device("meta"), torch.bfloat16)
    assert abs(parameter_count(model) / shape.params - 1) < 0.10, parameter_count(model)


def test_the_tiny_shape_states_its_exact_parameter_count():
    model = build_model(model_config(TINY, TINY_ARCH), torch.device("meta"), torch.float32)
    assert parameter_count(model) == TINY.params


def test_lora_on_all_linear_layers_is_the_plans_count_and_stays_fp32_under_a_bf16_model():
    from peft import LoraConfig, get_peft_model

    model = build_model(model_config(TINY, TINY_ARCH), torch.device("cpu"), torch.bfloat16)
    get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    lora = [p for p in model.parameters() if p.requires_grad]
    assert sum(p.numel() for p in lora) == lora_params(TINY, 4)
    assert {p.dtype for p in lora} == {torch.float32}


def test_chunked_log_probs_and_their_gradient_equal_a_direct_log_softmax(monkeypatch):
    monkeypatch.setattr("benchmarks.trainer_memory.TOKEN_CHUNK", 3)  # several tiles, ragged last ones
    monkeypatch.setattr("benchmarks.trainer_memory.VOCAB_CHUNK", 7)
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(10, 8, generator=generator, requires_grad=True)
    weight = torch.randn(20, 8, generator=generator, requires_grad=True)
    targets = torch.randint(20, (10,), generator=generator)
    upstream = torch.randn(10, generator=generator)

    reference = (hidden @ weight.t()).log_softmax(-1).gather(1, targets[:, None]).squeeze(1)
    want = torch.autograd.grad((reference * upstream).sum(), (hidden, weight))
    got_values = chunked_log_probs(hidden, weight, targets)
    got = torch.autograd.grad((got_values * upstream).sum(), (hidden, weight))
    for value, expected in zip((got_values, *got), (reference, *want), strict=True):
        torch.testing.assert_close(value, expected, rtol=1e-5, atol=1e-5)

    head = torch.nn.Linear(8, 20, bias=False)
    head.weight.data.copy_(weight.detach())
    torch.testing.assert_close(full_log_probs(hidden, head, targets), reference, rtol=1e-5, atol=1e-5)


def test_the_grpo_loss_at_ratio_one_is_minus_the_mean_advantage_and_clips_beyond_epsilon():
    advantages = torch.tensor([1.0, -1.0, 1.0, 1.0])
    log_probs = torch.zeros(4)
    assert grpo_loss(log_probs, log_probs, advantages).item() == pytest.approx(-0.5)
    big = torch.full((4,), 1.0)  # ratio e: clipped to 1.2 where the advantage is positive
    want = -(1.2 + 1.2 + 1.2 - torch.e) / 4
    assert grpo_loss(big, torch.zeros(4), advantages).item() == pytest.approx(want)


HIDDEN = ("ray", "vllm", "trl", "datasets", "trackio", "jobs")
"""What the GPU machine lacks (or must not need): hidden from the tiny run below."""


def test_a_tiny_cpu_run_without_ray_vllm_or_trl_prints_every_figure_on_its_last_line():
    hide = "; ".join(f"sys.modules[{name!r}] = None" for name in HIDDEN)
    argv = ["benchmarks/trainer_memory.py", "--device", "cpu", "--shape", "tiny", "--repeats", "1"]
    code = f"import runpy, sys; {hide}; sys.argv = {argv!r}; runpy.run_path({argv[0]!r}, run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    for preset in ("lfm3_1_7b", "twil_8b"):
        assert figures[f"{preset}_params"] == TINY.params
        assert figures[f"{preset}_tokens"] == 128
        for label in ("ckpt_on", "ckpt_off", "full_logits_ckpt_on", "full_logits_ckpt_off"):
            assert figures[f"{preset}_{label}_status"] == "ok"
            assert figures[f"{preset}_{label}_tokens_per_s"] > 0
            assert figures[f"{preset}_{label}_peak_gib"] is None  # memory is measured on CUDA only
            assert figures[f"{preset}_{label}_peak_planned_gib"] > 0
            assert f"{preset}_{label}_peak_ratio" in figures


@pytest.mark.parametrize("preset", ["lfm3-1.7b", "twil-8b", "smoke"])
def test_the_plain_yaml_reading_agrees_with_the_train_job_config(preset: str):
    """The GPU machine has no Ray, so the benchmark reads the preset as plain YAML: it must see what the
    train job's config loads (sections and defaults)."""
    from actors.config_loader import load_config
    from jobs.train import TrainJobConfig

    job = load_config(TrainJobConfig, trainer_memory.CONFIGS / f"train-{preset}.yaml")
    assert trainer_memory.preset_settings(preset) == {
        "model_preset": job.serving.preset,
        "lora_rank": job.trainer.lora_rank,
        "lora_alpha": job.trainer.lora_alpha,
        "token_budget": job.trainer.token_budget,
        "gradient_checkpointing": job.trainer.gradient_checkpointing,
    }
