"""The trainer's memory settings, decided without loading a model."""

from __future__ import annotations

import json
from types import SimpleNamespace

import psutil
import pytest

from actors.memory import ModelShape
from actors.pool_settings import PoolSettings
from actors.serving.config import ServingConfig
from actors.trainer import (
    CHECKPOINTING_MIN_TOKENS,
    TrainerConfig,
    checkpoint_long_micro_batches,
    checkpointing_wanted,
    cpu_activations_share,
    host_share_per_token,
    micro_batch_wants_checkpointing,
    peak_rss_gib,
)
from actors.trainer_settings import TrainerSettings

MODEL = ServingConfig("m")


@pytest.mark.parametrize(
    ("setting", "cuda", "budget", "wanted"),
    [
        ("auto", False, 131072, False),  # CPU: decided per micro-batch (below)
        ("auto", True, 131072, True),  # a 24B preset's 128K-token micro-batches
        ("auto", True, CHECKPOINTING_MIN_TOKENS, True),
        ("auto", True, 4096, False),
        ("auto", True, 0, True),  # one unbounded sample per micro-batch
        ("on", False, 512, True),
        ("off", True, 131072, False),
    ],
)
def test_gradient_checkpointing_follows_the_setting_then_device_and_budget(setting, cuda, budget, wanted):
    assert checkpointing_wanted(setting, cuda, budget) is wanted


GIB = 1024**3
SMOLLM2 = ModelShape(134.5e6, hidden=576, layers=30, intermediate=1536, vocab=49152, kv_dim=192)
TINY = ModelShape(5e6, hidden=256, layers=4, intermediate=1024, vocab=4096, kv_dim=256)


def test_a_cpu_micro_batch_is_checkpointed_once_its_activations_would_crowd_the_host():
    """SmolLM2-135M at its full 8,192-token context on 24 GiB: unsaved, Ray killed that trainer for memory."""
    per_token = cpu_activations_share(SMOLLM2, 1, 24 * GIB)
    assert micro_batch_wants_checkpointing(8192, per_token)
    assert micro_batch_wants_checkpointing(4096, per_token)  # its trainer would near twice the row's 6.1 GiB
    assert not micro_batch_wants_checkpointing(2048, per_token)
    tiny = cpu_activations_share(TINY, 1, 24 * GIB)
    assert not micro_batch_wants_checkpointing(8 * 2048, tiny)  # the main job's packed step
    assert cpu_activations_share(SMOLLM2, 8192, 24 * GIB) == pytest.approx(8192 * per_token)


def test_the_share_a_token_takes_is_read_from_the_model_folder(tmp_path):
    config = {
        "hidden_size": 576,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "intermediate_size": 1536,
        "vocab_size": 49152,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    host = psutil.virtual_memory().total
    assert host_share_per_token(tmp_path) == pytest.approx(cpu_activations_share(SMOLLM2, 1, host))
    assert host_share_per_token(tmp_path / "no-such-folder") == 0.0


def test_only_the_long_micro_batches_of_a_real_model_run_checkpointed(monkeypatch):
    """TRL's step wrapped on a real (small) Llama with a LoRA: checkpointing switches on for a long
    micro-batch, off again for a short one, and the step itself still runs and trains. A long one runs
    with large blocks mapped, and the heap is trimmed after it."""
    import torch

    from actors import cpu_memory

    mapped, trims = [False], []
    monkeypatch.setattr(cpu_memory, "map_large_blocks", lambda on: mapped.__setitem__(0, on) or True)
    monkeypatch.setattr(cpu_memory, "release_free_heap", lambda: trims.append(mapped[0]) or True)
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    shape = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)
    model = get_peft_model(
        LlamaForCausalLM(LlamaConfig(vocab_size=128, **shape)), LoraConfig(r=4, target_modules="all-linear")
    )
    model.train()
    seen = []

    def step(model_, inputs, num_items_in_batch=None):
        seen.append((model.base_model.model.is_gradient_checkpointing, mapped[0]))
        ids = inputs["input_ids"]
        loss = model_(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss.detach()

    trainer = SimpleNamespace(model=model, training_step=step)
    checkpointed = checkpoint_long_micro_batches(trainer, share_per_token=1 / 128)  # 16 tokens: the share
    lengths = [8, 20, 20, 4, 16]
    for length in lengths:
        ids = torch.randint(0, 128, (1, length))
        loss = trainer.training_step(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)})
        assert torch.isfinite(loss)
    assert seen == [(False, False), (True, True), (True, True), (False, False), (True, True)]
    assert checkpointed() == 3
    assert trims == [False, False, False] and not mapped[0]  # each long one: unmapped again, then trimmed
    assert all(p.grad is not None for n, p in model.named_parameters() if "lora_" in n)


def test_a_bad_checkpointing_setting_names_the_choices():
    with pytest.raises(ValueError, match="gradient_checkpointing='sometimes': must be on, off or auto"):
        TrainerConfig(
            "pi",
            MODEL,
            "http://x/v1",
            "/tmp/o",
            settings=TrainerSettings(gradient_checkpointing="sometimes"),
        )


def test_gpu_arguments_carry_fsdp_and_precision_and_cpu_arguments_run_ranks_on_cpu():
    from actors.trainer import grpo_arguments

    cfg = TrainerConfig(
        "pi",
        MODEL,
        "http://x:8000/v1/",
        "/tmp/o",
        settings=TrainerSettings(ranks=4, fsdp="full_shard auto_wrap"),
    )
    gpu = grpo_arguments(cfg, cuda=True)
    assert gpu["fsdp"] == "full_shard auto_wrap" and gpu["bf16"] and not gpu["use_cpu"]
    assert gpu["vllm_server_base_url"] == "http://x:8000" and gpu["num_generations"] == 8
    cpu = grpo_arguments(
        TrainerConfig("pi", MODEL, "http://x/v1", "/tmp/o", groups=PoolSettings(group_size=2)),
        cuda=False,
    )
    assert cpu["use_cpu"] and cpu["dtype"] == "float32" and not cpu["bf16"] and cpu["fsdp"] == ""
    assert cpu["num_generations"] == 2


def test_the_trainer_takes_its_pool_on_rank_zero_only_and_a_rendezvous_only_with_ranks():
    from types import SimpleNamespace

    from actors.ranks import Rendezvous
    from actors.trainer import HarnessTrainer

    pool = SimpleNamespace(cfg=SimpleNamespace(groups=PoolSettings(group_size=8)))
    two = TrainerConfig("pi", MODEL, "http://x/v1", "/tmp/o", settings=TrainerSettings(ranks=2))
    with pytest.raises(ValueError, match="rollout pool exactly on rank 0"):
        HarnessTrainer(two, server=None, pool=None).train(None, Rendezvous("h", 1, 2), rank=0)
    with pytest.raises(ValueError, match="rendezvous exactly when ranks > 1"):
        HarnessTrainer(two, server=None, pool=pool).train(None, None, rank=0)
    with pytest.raises(ValueError, match="group_size 4 != the trainer's 8"):
        HarnessTrainer(
            two, server=None, pool=SimpleNamespace(cfg=SimpleNamespace(groups=PoolSettings(group_size=4)))
        )


def test_checkpoints_every_save_steps_or_once_at_the_last_step_and_packs_micro_batch_samples():
    from actors.trainer import grpo_arguments

    every = grpo_arguments(
        TrainerConfig(
            "pi",
            MODEL,
            "http://x/v1",
            "/tmp/o",
            settings=TrainerSettings(max_steps=12, save_steps=4),
        ),
        False,
    )
    assert (every["save_strategy"], every["save_steps"]) == ("steps", 4)
    last = grpo_arguments(
        TrainerConfig("pi", MODEL, "http://x/v1", "/tmp/o", settings=TrainerSettings(max_steps=12)),
        cuda=False,
    )
    assert (last["save_strategy"], last["save_steps"]) == ("steps", 12)  # save_steps 0: the end only
    packed = TrainerConfig(
        "pi",
        MODEL,
        "http://x/v1",
        "/tmp/o",
        settings=TrainerSettings(token_budget=0, micro_batch_samples=16),
    )
    assert grpo_arguments(packed, cuda=False)["per_device_train_batch_size"] == 16
    with pytest.raises(ValueError, match="micro_batch_samples=0: must be >= 1"):
        TrainerConfig("pi", MODEL, "http://x/v1", "/tmp/o", settings=TrainerSettings(micro_batch_samples=0))


def test_gpus_assigned_but_no_cuda_stop_training_with_the_fix():
    from actors.trainer import gpu_problem

    problem = gpu_problem(["0"], cuda=False)
    assert problem and "torch sees no CUDA device" in problem and "trainer.gpus=0" in problem
    assert gpu_problem(["0"], cuda=True) is None and gpu_problem([], cuda=False) is None


def test_the_peak_resident_memory_is_in_gib_and_not_below_what_is_held_now():
    now_gib = psutil.Process().memory_info().rss / 1024**3
    assert now_gib - 0.01 <= peak_rss_gib() < psutil.virtual_memory().total / 1024**3  # rounded to 0.01
