"""The train job's config: every shipped preset loads; bad values are refused with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.config_loader import ConfigError, load_config
from actors.models import preset_names
from jobs.sections import TrainerSection, TrainTaskSection
from jobs.train import TrainJobConfig

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "jobs" / "configs").glob("train-*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_train_preset_loads_and_names_a_model_preset(path: Path):
    cfg = load_config(TrainJobConfig, path)
    assert cfg.serving.preset in preset_names()
    assert cfg.rollouts.max_sessions >= cfg.pool.group_size


def test_the_reference_presets_use_the_reference_numbers():
    cpu = {  # the embedded default's presets, and the real-model runs sized for 2 cores
        "train-smoke",
        "train-smoke-three",
        "train-learning-check",
        "train-smoke-real",
        "train-learning-check-real",
    }
    cfgs = {p.stem: load_config(TrainJobConfig, p) for p in CONFIGS}
    assert cpu < set(cfgs)
    assert {c.trainer.token_budget for n, c in cfgs.items() if n not in cpu} == {65536, 131072}
    assert cfgs["train-lfm3-1.7b"].trainer.gpus < 1  # the three 1.7B trainers share one GPU
    assert cfgs["train-twil-8b"].rollouts.max_sessions == 12  # the long-reasoning preset
    assert all(c.pool.group_size == 8 and c.trainer.lora_rank == 32 for n, c in cfgs.items() if n not in cpu)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("harnesses=[cursor]", "choose from"),
        ("rollouts.max_sessions=1", "a trainer needs a whole group in flight"),
        ("rollouts.sandbox=vm", "local or docker"),
        ("rollouts.cpus=0", "placement-group bundle"),
        ("trainer.ranks=0", "processes per trainer"),
        ("trainer.fsdp=zero3", "unknown"),
        ("serving.placement=spread", "choose one of PACK"),
        ("tasks.kinds=[analysis, chat]", "choose from analysis, repair"),
    ],
)
def test_bad_values_are_refused_with_the_fix(override: str, message: str, tmp_path: Path):
    with pytest.raises((ConfigError, ValueError), match=message):
        load_config(TrainJobConfig, CONFIGS[0], (override,))


def test_resume_picks_the_newest_checkpoint(tmp_path: Path):
    from jobs.train import latest_checkpoint

    assert latest_checkpoint(tmp_path) is None
    for step in (2, 10, 9):
        (tmp_path / f"checkpoint-{step}").mkdir()
    (tmp_path / "checkpoint-final").mkdir()
    assert latest_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")


def test_each_trainer_rank_gets_its_own_bundle_after_the_servers():
    from jobs.train import rank_bundle, trainer_bundles

    cfg = TrainJobConfig(harnesses=("pi", "hermes"), trainer=TrainerSection(ranks=2, gpus=1.0, cpus=4.0))
    assert trainer_bundles(cfg) == [{"CPU": 4.0, "GPU": 1.0}] * 4
    indices = [rank_bundle(cfg, t, r) for t in range(2) for r in range(2)]
    assert indices == [1, 2, 3, 4]  # bundle 0 is the server's
    with pytest.raises(ValueError, match="cannot share a GPU"):
        TrainerSection(ranks=2, gpus=0.5)


def test_a_tasks_section_becomes_weighted_sources_and_a_bad_one_names_the_fix(tmp_path: Path):
    from environments.tasks.sources import TaskSource

    config = tmp_path / "train.yaml"
    config.write_text(
        "tasks:\n"
        "  sources:\n"
        "    - {kind: shipped, path: shipped, weight: 3, task_kinds: [analysis]}\n"
        "    - {kind: jsonl, path: mine.jsonl, holdout: 0.2, name: mine}\n"
    )
    cfg = load_config(TrainJobConfig, config)
    assert cfg.tasks.sources == (
        TaskSource("shipped", "shipped", weight=3.0, task_kinds=("analysis",)),
        TaskSource("jsonl", "mine.jsonl", holdout=0.2, name="mine"),
    )
    assert cfg.tasks.configured() == cfg.tasks.sources
    named = TrainJobConfig(tasks=TrainTaskSection(set="row-count"))
    assert named.tasks.configured() == (TaskSource("shipped", "row-count", task_kinds=("analysis",)),)
    config.write_text("tasks:\n  sources:\n    - {kind: csv, path: x.csv}\n")
    with pytest.raises(ConfigError, match=r"tasks.sources\[0\].*kind='csv': choose one of shipped, folder"):
        load_config(TrainJobConfig, config)


def test_the_trainer_and_pool_sections_name_their_runtime_configs_fields():
    """The job passes these sections on by field name: a renamed field must fail here, not in a run."""
    import dataclasses

    from actors.rollout_pool import PoolConfig
    from actors.trainer import TrainerConfig
    from jobs.sections import PoolSection, fields_of

    names = lambda cls: {f.name for f in dataclasses.fields(cls)}  # noqa: E731
    assert set(fields_of(TrainerSection(), *TrainerSection.JOB_ONLY)) <= names(TrainerConfig)
    assert set(fields_of(PoolSection())) <= names(PoolConfig)
    assert set(TrainerSection.JOB_ONLY) <= names(TrainerSection)


def test_token_exactness_is_the_first_logged_steps_importance_ratio():
    from jobs.train import first_step_ratio

    history = [{"loss": 0.1}, {"ratio": "0.9991", "loss": 0.2}, {"ratio": "1.2"}]
    assert first_step_ratio(history) == 0.9991
    assert first_step_ratio([{"loss": 0.1}]) is None and first_step_ratio([]) is None


def test_a_cluster_run_without_storage_is_refused_with_the_fix():
    from jobs.train import storage_problem

    problem = storage_problem(3, "")
    assert problem and "3 nodes" in problem and "storage: s3://" in problem
    assert storage_problem(1, "") is None and storage_problem(3, "s3://bucket/run") is None


def test_a_local_warm_start_adapter_is_refused_on_a_cluster_and_a_uri_is_not_checked_here():
    from jobs.train import start_problem

    problem = start_problem(3, "artifacts/sft/smollm2")
    assert problem and "upload it" in problem and "trainer.init_adapter=s3://" in problem
    assert start_problem(1, "artifacts/sft/smollm2") is None
    assert start_problem(3, "s3://bucket/sft") is None and start_problem(3, "") is None
    cfg = load_config(TrainJobConfig, CONFIGS[0], ("trainer.init_adapter=s3://bucket/sft/{harness}",))
    assert cfg.trainer.init_adapter.startswith("s3://")  # read on the trainer's node, not at load


def test_a_warm_start_adapter_in_storage_is_copied_to_the_trainers_node(tmp_path: Path):
    from actors.trainer import local_adapter

    bucket = tmp_path / "bucket" / "sft"
    bucket.mkdir(parents=True)
    (bucket / "adapter_config.json").write_text("{}")
    here = local_adapter(f"file://{bucket}", tmp_path / "local")
    assert Path(here) == tmp_path / "local" and (Path(here) / "adapter_config.json").read_text() == "{}"
    assert (
        local_adapter("artifacts/sft", tmp_path / "x") == "artifacts/sft"
        and local_adapter("", tmp_path) == ""
    )
