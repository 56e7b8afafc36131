"""The SFT warm start (the seed-2 to seed-1 pipeline): ``jobs.sft``'s LoRA adapter on the tiny model is
the GRPO trainer's first adapter. Loaded into a fresh PEFT model it is the same tensors; a trainer built
with it publishes it as its first version and trains on from it (a fresh adapter's B matrices are zero)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from actors.pool_settings import PoolSettings
from actors.serving.config import ServingConfig
from actors.trainer_settings import TrainerSettings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sft_adapter(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    from actors.sft.train import run_sft
    from tests.jobs.test_sft import tiny_config

    root = tmp_path_factory.mktemp("sft")
    run_sft(tiny_config(root, tiny_model, max_steps=4), log=lambda _: None)
    return root / "out"


def lora_b(state) -> dict:
    return {k: v.detach().float().clone() for k, v in state.items() if "lora_B" in k}


def test_the_sft_adapter_loads_into_a_fresh_peft_model_tensor_for_tensor(
    sft_adapter: Path, tiny_model: Path, tmp_path
):
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from actors.trainer import load_adapter_weights, warm_start_config

    config = warm_start_config(str(sft_adapter))
    assert (
        config.r == json.loads((sft_adapter / "adapter_config.json").read_text())["r"]
        and not config.inference_mode
    )
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model), config)
    assert all(v.abs().sum() == 0 for v in lora_b(model.state_dict()).values())  # fresh: B is zero
    loaded = load_adapter_weights(model, str(sft_adapter))
    saved = {k: v.float() for k, v in load_file(sft_adapter / "adapter_model.safetensors").items()}
    assert loaded == len(saved)
    mine = {k.replace(".default", ""): v for k, v in lora_b(model.state_dict()).items()}
    assert mine.keys() == {k for k in saved if "lora_B" in k}
    assert all(v.abs().sum() > 0 and v.equal(saved[k]) for k, v in mine.items())
    # an adapter of another shape does not fit, by name
    other = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model),
        LoraConfig(r=config.r * 2, target_modules="all-linear"),
    )
    with pytest.raises(ValueError, match="does not fit this model"):
        load_adapter_weights(other, str(sft_adapter))
    (tmp_path / "full").mkdir()
    with pytest.raises(ValueError, match="needs adapter_config.json"):
        warm_start_config(str(tmp_path / "full"))


@pytest.mark.vllm
def test_a_grpo_trainer_publishes_the_sft_adapter_first_and_trains_on_from_it(
    serving, sft_adapter: Path, tiny_model: Path, tmp_path
):
    import ray
    from safetensors.torch import load_file

    from actors.rollout_pool import PoolConfig, RolloutPool
    from actors.serving.remote import RayServing
    from actors.trainer import HarnessTrainer, TrainerConfig
    from environments.tasks.shipped import shipped_tasks
    from tests.actors.test_trainer_ranks import ScriptedRollouts

    for name in ray.get(serving.adapters.remote()):
        ray.get(serving.retire.remote(name, True))
    cfg = TrainerConfig(
        harness="opencode",
        serving=ServingConfig(model=str(tiny_model)),
        server_url=ray.get(serving.url.remote()),
        output_dir=str(tmp_path / "trainer"),
        settings=TrainerSettings(
            lora_rank=32,  # replaced by the adapter's own rank
            learning_rate=1e-3,
            max_steps=1,
            token_budget=4096,
            micro_batches=1,
            init_adapter=str(sft_adapter),
        ),
        groups=PoolSettings(max_staleness=4, group_size=2),
    )
    pool = RolloutPool(
        PoolConfig("opencode", PoolSettings(group_size=2, max_staleness=4), max_sessions=2),
        itertools.cycle(shipped_tasks()[:4]),
        ScriptedRollouts(),
    )
    trainer = HarnessTrainer(cfg, RayServing(serving), pool)
    try:
        summary = trainer.train()
    finally:
        pool.stop()
        for name in ray.get(serving.adapters.remote()):
            ray.get(serving.retire.remote(name, True))
    assert summary["steps"] == 1 and summary["published"][0] == "opencode-v1"
    saved = {
        k: v.float() for k, v in load_file(sft_adapter / "adapter_model.safetensors").items() if "lora_B" in k
    }
    model = trainer.trainer.accelerator.unwrap_model(trainer.trainer.model)
    trained = {k.replace(".default", ""): v for k, v in lora_b(model.state_dict()).items()}
    assert trained.keys() == saved.keys()
    start = sum(float(v.abs().sum()) for v in saved.values())
    moved = sum(float((trained[k] - v).abs().sum()) for k, v in saved.items())
    assert 0 < moved < start  # one step on from the SFT adapter, not from zero
    card = next((tmp_path / "trainer").rglob("adapter_config.json"))
    assert (
        json.loads(card.read_text())["r"]
        == json.loads((sft_adapter / "adapter_config.json").read_text())["r"]
    )
