"""The memory plan's arithmetic, and every reference preset fitting the GPU share it asks for."""

from __future__ import annotations

import pytest

from actors.memory import ASSUMED, GIB, H200_GIB, ModelShape, lora_params, plan
from jobs.memory import preset_plan


def test_the_arithmetic_of_a_small_dense_model():
    shape = ModelShape(1e9, hidden=1024, layers=2, intermediate=4096, vocab=1000, kv_dim=256)
    # per layer: q, o (1024+1024) x2, k, v (1024+256) x2, gate, up (1024+4096) x2, down (4096+1024)
    assert lora_params(shape, 8) == 8 * 2 * (4096 + 2560 + 10240 + 5120)
    p = plan(shape, lora_rank=8, max_loras=4, token_budget=1000, checkpointing=False, serving_gib=10)
    assert p.serving_weights_gib == pytest.approx(2e9 / GIB)
    assert p.trainer_lora_state_gib == pytest.approx(lora_params(shape, 8) * 16 / GIB)
    assert p.trainer_activations_gib == pytest.approx(34 * 1024 * 1000 * 2 / GIB)
    assert p.trainer_logits_gib == pytest.approx(1000 * 1000 * 6 / GIB)
    saved = plan(shape, lora_rank=8, max_loras=4, token_budget=1000, checkpointing=True, serving_gib=10)
    assert saved.trainer_activations_gib < p.trainer_activations_gib
    fsdp = plan(
        shape, lora_rank=8, max_loras=4, token_budget=1000, checkpointing=False, serving_gib=10, shards=4
    )
    assert fsdp.trainer_weights_gib == pytest.approx(p.trainer_weights_gib / 4)
    assert fsdp.trainer_lora_state_gib == pytest.approx(p.trainer_lora_state_gib / 4)
    assert fsdp.trainer_activations_gib == p.trainer_activations_gib  # each rank packs its own row


@pytest.mark.parametrize("preset", sorted(ASSUMED))
def test_each_reference_preset_fits_the_gpu_share_it_asks_for(preset):
    shape, p, settings = preset_plan(preset)
    assert p.trainer_gib <= 0.9 * settings["trainer_gpus"] * H200_GIB, (preset, p)
    assert p.serving_kv_gib > 0, (preset, p)  # serving's share holds its weights, adapters and a KV cache
