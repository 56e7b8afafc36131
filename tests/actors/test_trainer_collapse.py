"""The trainer's side of a collapse, on a real PEFT adapter of the tiny model with a real AdamW and
Transformers' linear schedule: the watch's finding restores the kept version's weights exactly, halves
the learning rate (optimizer and schedule), forgets the optimizer's moments and withdraws the versions in
between from the pool; out of rollbacks, it stops with the good weights in place."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from actors.pool_settings import PoolSettings
from actors.progress import progress_line
from actors.serving.config import ServingConfig
from actors.trainer_settings import TrainerSettings


class FakePool:
    """The two pool calls the trainer makes on a collapse (the pool's own are tested with it)."""

    def __init__(self) -> None:
        self.cfg = SimpleNamespace(groups=PoolSettings(group_size=4))
        self.health: list[tuple[int, bool, bool, int]] = []
        self.retracted: list[tuple[int, int]] = []

    def drain_health(self) -> list[tuple[int, bool, bool, int]]:
        drained, self.health = self.health, []
        return drained

    def retract(self, first: int, last: int) -> int:
        self.retracted.append((first, last))
        return 3


def make_trainer(tiny_model: Path, tmp_path: Path, **collapse):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, get_scheduler

    from actors.grpo.collapse import CollapsePolicy
    from actors.trainer import HarnessTrainer, TrainerConfig

    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(str(tiny_model)),
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    scheduler = get_scheduler("linear", optimizer, num_warmup_steps=0, num_training_steps=20)
    cfg = TrainerConfig(
        harness="pi",
        serving=ServingConfig(model=str(tiny_model)),
        server_url="http://127.0.0.1:1/v1",
        output_dir=str(tmp_path),
        settings=TrainerSettings(collapse=CollapsePolicy(**collapse)),
        groups=PoolSettings(group_size=4),
    )
    pool = FakePool()
    owner = HarnessTrainer(cfg, server=None, pool=pool)  # type: ignore[arg-type]
    owner.trainer = SimpleNamespace(
        model=model,
        optimizer=optimizer,
        lr_scheduler=scheduler,
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
        _metrics={"train": defaultdict(list)},
        model_version=0,
    )
    return owner, pool


def train_step(owner, scale: float) -> None:
    """One optimizer step that moves every LoRA weight (a stand-in for a GRPO loss)."""
    model = owner.trainer.model
    loss = sum((p * scale).sum() for n, p in model.named_parameters() if p.requires_grad)
    loss.backward()
    owner.trainer.optimizer.step()
    owner.trainer.lr_scheduler.step()
    owner.trainer.optimizer.zero_grad()


def lora(owner) -> dict:
    from peft import get_peft_model_state_dict

    return {k: v.detach().clone() for k, v in get_peft_model_state_dict(owner.trainer.model).items()}


def test_a_collapse_rolls_back_to_the_kept_version_with_a_smaller_step(tiny_model: Path, tmp_path: Path):
    import torch

    owner, pool = make_trainer(tiny_model, tmp_path)
    owner.snapshot(1)  # train begin: the start adapter becomes version 1
    owner.watch.start_version = 1
    kept = {}
    pool.health = [(1, True, False, 1)] * 12
    for step in (1, 2, 3, 4):
        train_step(owner, 1.0)
        owner.trainer.model_version = step  # TRL's publish after the previous step
        assert owner.check_collapse(step) is None
        kept[step + 1] = lora(owner)
        pool.health = [(step + 1, True, False, 1)] * 4  # each version's own rollouts pass
    # versions 5 and 6 stop passing: back to 4, the latest before them that its own rollouts vouch for
    pool.health = [(5, False, False, 1)] * 6 + [(6, False, False, 1)] * 6
    train_step(owner, 1.0)
    owner.trainer.model_version = 6
    optimizer = owner.trainer.optimizer
    lr_before, base_before = optimizer.param_groups[0]["lr"], owner.trainer.lr_scheduler.base_lrs[0]
    assert optimizer.state
    event = owner.check_collapse(6)
    assert event is not None and event.action == "rollback" and event.good_version == 4
    restored = lora(owner)
    assert all(torch.equal(restored[k], kept[4][k]) for k in restored)
    assert not optimizer.state and optimizer.param_groups[0]["lr"] == pytest.approx(lr_before / 2)
    assert owner.trainer.lr_scheduler.base_lrs[0] == pytest.approx(base_before / 2)
    # the next step's log reads the scheduler's last value: it gives the rate the optimizer applies
    assert owner.trainer.lr_scheduler.get_last_lr()[0] == pytest.approx(lr_before / 2)
    assert pool.retracted == [(5, 6)] and owner.watch.withdrawn == [(5, 6)]
    assert all(torch.equal(owner.snapshots[7][k], kept[4][k]) for k in restored)  # published next as v7
    (record,) = owner.collapses
    assert record["restored_version"] == 4 and record["rows_withdrawn"] == 3
    assert record["action"] == "rollback"
    seen = []  # the step's console line says what the watch did, beside its figures
    owner.on_progress = seen.append
    owner.report(6, {"rollout/passed": 0.0, "perf/step_s": 3.0})
    assert seen[0].collapse.startswith("pass rate 0/12") and "rolled back to version 4" in seen[0].collapse
    assert progress_line(seen[0]).endswith(f"collapse: {seen[0].collapse}")
    owner.report(7, {"rollout/passed": 0.0})
    assert seen[1].collapse == ""
    train_step(owner, 1.0)  # the optimizer starts again from no moments
    assert optimizer.state


def test_out_of_rollbacks_it_stops_with_the_good_weights_in_place(tiny_model: Path, tmp_path: Path):
    import torch

    owner, pool = make_trainer(tiny_model, tmp_path, max_rollbacks=0, snapshots=1)
    owner.snapshot(1)
    start = lora(owner)
    pool.health = [(1, True, False, 1)] * 12
    for step in (1, 2):
        train_step(owner, 1.0)
        owner.trainer.model_version = step
        assert owner.check_collapse(step) is None
    assert sorted(owner.snapshots) == [1, 3]  # the run's first and the latest one
    pool.health = [(2, False, True, 1)] * 12  # version 2 all blocked (no pass): version 1, kept, is before it
    event = owner.check_collapse(3)
    assert event is not None and event.action == "stop" and event.reason.startswith("pass rate 0/12")
    assert all(torch.equal(v, start[k]) for k, v in lora(owner).items())
    assert pool.retracted == [] and owner.collapses[-1]["action"] == "stop"
    assert "training stopped, with version 1's weights" in owner.collapses[-1]["said"]
