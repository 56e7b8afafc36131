"""One trainer as two data-parallel ranks (two Ray actors, gloo on CPU; NCCL on GPUs): TRL's trainer on the
tiny model against the real vLLM serving actor. Rank 0 holds the rollout pool (scripted sessions: the
rollout path has its own tests) and hands rank 1 its rows; both take the same steps, end with the same
adapter weights (gradients averaged), and only rank 0 publishes. (Accelerate shards with FSDP on GPUs
only: on CPU it runs ranks as DDP, so FSDP is checked as configuration in ``test_trainer_config``.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from actors.pool_settings import PoolSettings
from actors.serving.config import ServingConfig
from actors.trainer_settings import TrainerSettings

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

HARNESS = "hermes"


class ScriptedRollouts:
    """Sessions that return fixed token rows at once, rewards spread within each group."""

    def submit(self, request):
        from concurrent.futures import Future

        from actors.grpo.samples import TrainingRow
        from actors.rollout import RolloutOutcome

        member = int(request.rollout_id.rsplit("r", 1)[-1]) if request.rollout_id[-1].isdigit() else 0
        prompt = tuple(10 + (i * 7 + member) % 200 for i in range(24))
        completion = tuple(30 + (i * 5 + member * 3) % 150 for i in range(12))
        row = TrainingRow(prompt + completion, (0,) * 24 + (1,) * 12, (0.0,) * 24 + (-2.0,) * 12)
        future: Future = Future()
        future.set_result(
            RolloutOutcome(request.rollout_id, request.group_id, reward=float(member % 2), rows=(row,))
        )
        return future

    def shutdown(self) -> None:
        pass


class Rank:
    """A rank's process: rank 0 builds the pool over scripted sessions; a later rank has none."""

    def __init__(self, cfg, serving_handle, rank: int) -> None:
        from actors.rollout_pool import PoolConfig, RolloutPool
        from actors.serving.remote import RayServing
        from actors.trainer import HarnessTrainer
        from environments.tasks.sources import TaskMix, TaskSource, load_sources

        pool = None
        if rank == 0:  # tasks mixed from two sources, 3:1
            pool_cfg = PoolConfig(cfg.harness, cfg.groups, max_sessions=2)
            sources = [
                TaskSource("shipped", "shipped", weight=3, task_kinds=("analysis",), name="analysis"),
                TaskSource("shipped", "shipped", weight=1, task_kinds=("repair",), name="repair"),
            ]
            pool = RolloutPool(pool_cfg, TaskMix(load_sources(sources), seed=1), ScriptedRollouts())
        self.rank = rank
        self.pool = pool
        self.trainer = HarnessTrainer(cfg, RayServing(serving_handle), pool)

    def rendezvous(self):
        from actors.ranks import Rendezvous, free_port

        return Rendezvous("127.0.0.1", free_port("127.0.0.1"), self.trainer.cfg.ranks)

    def train(self, rendezvous) -> dict:
        try:
            summary = self.trainer.train(None, rendezvous, self.rank)
        finally:
            if self.pool is not None:
                self.pool.stop()
        model = self.trainer.trainer.accelerator.unwrap_model(self.trainer.trainer.model)
        lora = {k: v.detach().float() for k, v in model.state_dict().items() if "lora_B" in k}
        summary["lora_b_abs_sum"] = float(sum(v.abs().sum() for v in lora.values()))
        summary["lora_b_weighted"] = float(sum(v.sum() * (i + 1) for i, v in enumerate(lora.values())))
        summary["processes"] = self.trainer.trainer.accelerator.num_processes
        summary["parallel"] = self.trainer.trainer.accelerator.distributed_type.value
        return summary


def test_two_ranks_train_in_step_with_one_pool_and_one_publisher(serving, tiny_model: Path, tmp_path: Path):
    import ray

    from actors.placement import first_failure_raises, make_actor
    from actors.trainer import TrainerConfig

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the test's classes, to the actors
    for name in ray.get(serving.adapters.remote()):
        ray.get(serving.retire.remote(name, True))
    cfg = TrainerConfig(
        harness=HARNESS,
        serving=ServingConfig(model=str(tiny_model)),
        server_url=ray.get(serving.url.remote()),
        output_dir=str(tmp_path / "trainer"),
        settings=TrainerSettings(
            lora_rank=8,
            lora_alpha=16,
            learning_rate=1e-3,
            max_steps=2,
            token_budget=4096,
            micro_batches=1,
            ranks=2,
        ),
        groups=PoolSettings(max_staleness=4, group_size=2),
    )
    ranks = [make_actor(Rank, cfg, serving, rank, resources={"CPU": 0}) for rank in range(2)]
    try:
        meet = ray.get(ranks[0].rendezvous.remote())
        first, second = first_failure_raises([r.train.remote(meet) for r in ranks])
    finally:
        for actor in ranks:
            ray.kill(actor)
        for name in ray.get(serving.adapters.remote()):
            ray.get(serving.retire.remote(name, True))
    assert first["processes"] == second["processes"] == 2
    assert first["parallel"] == second["parallel"] == "MULTI_CPU"  # DDP over gloo
    assert first["steps"] == second["steps"] == 2 and first["ranks"] == 2 and second["rank"] == 1
    assert first["published"][:3] == [f"{HARNESS}-v1", f"{HARNESS}-v2", f"{HARNESS}-v3"], first["published"]
    assert "published" not in second  # rank 1 neither publishes nor holds rollouts
    assert first["rollouts"]["groups_trained"] >= 2
    drawn = first["tasks_drawn"]  # groups started per source so far, at each step's end
    assert len(drawn) == 2 and set(drawn[-1]) == {"analysis", "repair"}, drawn
    assert all(drawn[0].get(k, 0) <= drawn[1][k] for k in drawn[1])
    assert 2.0 <= drawn[-1]["analysis"] / drawn[-1]["repair"] <= 4.5  # weights 3:1
    assert first["lora_b_abs_sum"] > 0  # trained: LoRA's B starts at zero
    assert first["lora_b_weighted"] == pytest.approx(second["lora_b_weighted"], rel=1e-5)  # in step
