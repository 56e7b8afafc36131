"""The train job's config: every shipped preset loads; bad values are refused with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.config_loader import ConfigError, load_config
from actors.models import preset_names
from actors.trainer_settings import TrainerSettings
from jobs.sections import TrainTaskSection
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
        "train-learning-check-real-lookup",
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

    cfg = TrainJobConfig(harnesses=("pi", "hermes"), trainer=TrainerSettings(ranks=2, gpus=1.0, cpus=4.0))
    assert trainer_bundles(cfg) == [{"CPU": 4.0, "GPU": 1.0}] * 4
    indices = [rank_bundle(cfg, t, r) for t in range(2) for r in range(2)]
    assert indices == [1, 2, 3, 4]  # bundle 0 is the server's
    with pytest.raises(ValueError, match="cannot share a GPU"):
        TrainerSettings(ranks=2, gpus=0.5)


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


def test_the_runtime_configs_hold_the_job_sections_whole_and_repeat_none_of_their_fields():
    """Declared once: the trainer, pool and rollout configs take the job's sections (and the serving
    config) as they are, so a field is never written (with a default and a check) in two places."""
    import dataclasses
    import typing

    from actors.rollout import RolloutSetup
    from actors.rollout_pool import PoolConfig
    from actors.trainer import TrainerConfig

    def fields(cls: type) -> dict[str, object]:
        return {f.name: f.type for f in dataclasses.fields(cls)}

    for runtime in (TrainerConfig, PoolConfig, RolloutSetup):
        hints = typing.get_type_hints(runtime)
        held = [hints[name] for name in ("settings", "groups", "rollouts", "serving") if name in hints]
        assert held, f"{runtime.__name__} holds no job section"
        for section_cls in held:
            shared = set(fields(runtime)) & set(fields(section_cls))
            assert shared == set(), f"{runtime.__name__} repeats {section_cls.__name__}'s {shared}"
    sections = {f.name: f.type for f in dataclasses.fields(TrainJobConfig)}
    assert sections["trainer"] == "TrainerSettings" and sections["pool"] == "PoolSettings"
    assert sections["rollouts"] == "RolloutSettings" and sections["guard"] == "GuardSettings"


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
    from actors.trainer import local_copy

    bucket = tmp_path / "bucket" / "sft"
    bucket.mkdir(parents=True)
    (bucket / "adapter_config.json").write_text("{}")
    here = local_copy(f"file://{bucket}", tmp_path / "local")
    assert Path(here) == tmp_path / "local" and (Path(here) / "adapter_config.json").read_text() == "{}"
    assert local_copy("artifacts/sft", tmp_path / "x") == "artifacts/sft" and local_copy("", tmp_path) == ""


def _checkpoint(folder: Path, *files: str) -> None:
    folder.mkdir(parents=True)
    for name in files:
        (folder / name).write_text("{}")


COMPLETE = ("trainer_state.json", "rollout_state.json", "adapter_model.safetensors")


def test_resume_with_storage_reads_the_newest_complete_checkpoint_there_not_the_drivers_disk(tmp_path: Path):
    """First cluster run: the driver looked for checkpoints under its own out_dir, where none of the
    trainers (on other nodes) had written; with storage set, resume reads storage."""
    from jobs.train import resume_location

    bucket, out = tmp_path / "bucket", tmp_path / "out"
    _checkpoint(bucket / "pi" / "checkpoint-1", *COMPLETE)
    _checkpoint(bucket / "pi" / "checkpoint-3", *COMPLETE)
    _checkpoint(bucket / "pi" / "checkpoint-4", "rollout_state.json")  # an upload cut short
    _checkpoint(out / "pi" / "checkpoint-9", *COMPLETE)  # this node's disk: not where a trainer resumes
    resume = TrainerSettings(resume=True)
    in_bucket = TrainJobConfig(harnesses=("pi",), storage=f"file://{bucket}", trainer=resume)
    assert resume_location(in_bucket, "pi", out) == f"file://{bucket}/pi/checkpoint-3"
    mounted = TrainJobConfig(harnesses=("pi",), storage=str(bucket), trainer=resume)  # every node mounts it
    assert resume_location(mounted, "pi", out) == str(bucket / "pi" / "checkpoint-3")
    assert resume_location(in_bucket, "hermes", out) is None  # nothing stored for it: a fresh start
    one_machine = TrainJobConfig(harnesses=("pi",), trainer=resume)
    assert resume_location(one_machine, "pi", out) == str(out / "pi" / "checkpoint-9")


def test_a_stored_checkpoint_counts_only_with_the_states_a_resume_reads():
    from jobs.train import stored_checkpoint

    listed = [
        "pi/checkpoint-2/trainer_state.json",
        "pi/checkpoint-2/rollout_state.json",
        "pi/checkpoint-10/trainer_state.json",
        "pi/checkpoint-10/rollout_state.json",
        "pi/checkpoint-11/trainer_state.json",  # no rollout_state.json yet
        "pi/checkpoint-final/trainer_state.json",
        "pi/trajectories/checkpoint-12.json",
    ]
    assert stored_checkpoint(listed) == "checkpoint-10"
    assert stored_checkpoint(listed[4:]) is None and stored_checkpoint([]) is None


def test_a_checkpoint_in_storage_is_copied_to_each_ranks_own_folder_on_its_node(tmp_path: Path):
    from actors.trainer import resume_folder

    stored = tmp_path / "bucket" / "pi" / "checkpoint-3"
    _checkpoint(stored, *COMPLETE)
    out = tmp_path / "trainer"
    for rank in (0, 1):
        here = resume_folder(f"file://{stored}", str(out), rank)
        assert here == str(out / "resume" / f"rank-{rank}" / "checkpoint-3")
        assert sorted(p.name for p in Path(here).iterdir()) == sorted(COMPLETE)
    assert resume_folder(str(stored), str(out), 0) == str(stored)  # one machine's folder, read in place
    assert resume_folder(None, str(out), 0) is None and resume_folder("", str(out), 0) is None


def test_the_trainers_tasks_are_read_on_the_driver_and_need_no_source_path_on_their_node(tmp_path: Path):
    """Folder, JSONL and Harbor sources are read by the driver (``driver_tasks``), and what the trainers get
    (pickled, as Ray ships it) still yields every task with its files after the sources are gone; the
    trainer takes that stream and reads no source itself."""
    import dataclasses
    import inspect
    import pickle
    import shutil

    import actors.trainer
    from actors.rollout import RolloutSetup
    from actors.trainer import TrainerActor
    from environments.core.types import Split
    from environments.tasks.jsonl import dump_jsonl
    from environments.tasks.layout import write_task
    from environments.tasks.sources import TaskSource
    from jobs.train import driver_tasks
    from tests.environments.tasks.taskutil import answer_task, repo_task
    from tests.environments.tasks.test_harbor import make_harbor_task

    files = tmp_path / "user-files"
    folder_task = repo_task(id="r1", split=Split.TRAIN)
    write_task(folder_task, files / "ours")
    dump_jsonl([answer_task(id="j1", split=Split.TRAIN)], files / "rows.jsonl")
    make_harbor_task(files / "harbor", "fix-greeting")
    sources = (
        TaskSource("folder", str(files / "ours")),
        TaskSource("jsonl", str(files / "rows.jsonl")),
        TaskSource("harbor", str(files / "harbor")),
    )
    cfg = TrainJobConfig(tasks=TrainTaskSection(sources=sources, seed=3))
    said: list[str] = []
    shipped = pickle.dumps(driver_tasks(cfg, said.append))
    assert len(said) == 3 and all("1 train" in line for line in said)
    shutil.rmtree(files)  # a trainer's node has none of the user's files
    stream = pickle.loads(shipped)
    drawn = {task.id: task for task in (next(stream) for _ in range(30))}
    assert set(drawn) == {"r1", "j1", "acme.fix-greeting"}
    assert drawn["r1"].workspace == folder_task.workspace and drawn["acme.fix-greeting"].hidden

    assert "tasks" in inspect.signature(TrainerActor.__init__).parameters
    assert "load_sources" not in inspect.getsource(actors.trainer)
    assert "tasks" not in {f.name for f in dataclasses.fields(RolloutSetup)}  # copied to every rollout actor


def test_the_trackio_line_says_on_which_node_the_trainers_runs_are(tmp_path: Path, monkeypatch):
    """First cluster run: the printed ``trackio show`` read the driver's node, which held none of the
    trainers' runs."""
    from jobs.train import trackio_line

    monkeypatch.delenv("TRACKIO_DIR", raising=False)
    alone = trackio_line("runs", 1, tmp_path / "trackio", "")
    assert alone.endswith(": trackio show --project runs") and "live, on this machine" in alone
    cluster = trackio_line("runs", 3, tmp_path / "trackio", "s3://bucket/run/")
    assert "each trainer logs live on its own node only" in cluster
    assert cluster.endswith(f"TRACKIO_DIR={tmp_path / 'trackio'} trackio show --project runs")
    assert "copied to s3://bucket/run/trackio" in cluster
