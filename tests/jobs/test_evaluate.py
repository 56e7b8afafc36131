"""The evaluation job's plumbing without serving: checkpoint discovery, load-failure detection, the task
list, and the session runner's bound, retry and accounting (sessions are futures answered by a script)."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path

import pytest

from actors.config_loader import ConfigError, load_config
from actors.eval_report import Checkpoint
from actors.rollout import RolloutOutcome
from actors.rollout_settings import RolloutSettings
from actors.serving.adapters import adapter_problem
from jobs.evaluate import (
    CapabilitySection,
    EvalConfig,
    SessionRunner,
    discover_checkpoints,
    eval_tasks,
)
from jobs.sections import EvalTaskSection

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "jobs" / "configs").glob("evaluate*.yaml"))


def make_checkpoint(folder: Path, complete: bool = True) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    if complete:
        (folder / "adapter_model.safetensors").write_bytes(b"x")
    return folder


def test_checkpoints_are_the_base_and_the_last_n_by_step(tmp_path: Path):
    for step in (2, 10, 4):
        make_checkpoint(tmp_path / "pi" / f"checkpoint-{step}")
    (tmp_path / "pi" / "checkpoint-final").mkdir()
    found = discover_checkpoints(tmp_path, "pi", last=2, include_base=True)
    assert [(c.name, c.step) for c in found] == [("base", 0), ("pi-step4", 4), ("pi-step10", 10)]
    assert found[0].path is None and found[2].path == str(tmp_path / "pi" / "checkpoint-10")
    assert [c.step for c in discover_checkpoints(tmp_path, "pi", last=0, include_base=False)] == [2, 4, 10]
    assert discover_checkpoints(tmp_path, "hermes", last=0, include_base=False) == []


def test_the_task_list_is_held_out_and_covers_every_kind_when_capped():
    tasks = eval_tasks(EvalTaskSection(kinds=("analysis", "repair", "qa")), max_tasks=6)
    assert len(tasks) == 6 and {t.kind.value for t in tasks} == {"analysis", "repair", "qa"}
    assert all(t.split.value == "eval" for t in tasks)
    assert len(eval_tasks(EvalTaskSection(), 0)) == 190  # every kind by default


def test_a_capped_list_of_sources_covers_every_source_and_ignores_kinds():
    from environments.tasks.sources import TaskSource

    sources = (
        TaskSource("shipped", "row-count"),
        TaskSource("shipped", "shipped", task_kinds=("analysis", "repair")),
    )
    tasks = eval_tasks(EvalTaskSection(kinds=("qa",), sources=sources), max_tasks=6)
    assert len(tasks) == 6
    rows = [t for t in tasks if t.id.startswith("rows-")]
    # one of each (source, kind) in turn: rows, shipped analysis, shipped repair, though two are analysis
    assert [t.id.split("-")[0] for t in tasks[:3]] == ["rows", "data", "repo"] and len(rows) == 2
    assert {t.kind.value for t in tasks} == {"analysis", "repair"}  # kinds=[qa] does not apply to sources


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_evaluate_preset_loads(path: Path):
    cfg = load_config(EvalConfig, path)
    assert cfg.rollouts.max_sessions >= 1 and cfg.guard.port == 8000


def test_bad_values_are_refused_with_the_fix():
    with pytest.raises((ConfigError, ValueError), match="choose from"):
        load_config(EvalConfig, CONFIGS[0], ("harnesses=[cursor]",))


class ScriptedSubmit:
    def __init__(self, script) -> None:
        self.script, self.calls, self.in_flight, self.peak = script, [], 0, 0
        self.lock = threading.Lock()

    def __call__(self, request) -> Future:
        future: Future = Future()
        with self.lock:
            self.calls.append(request)
            attempt = sum(
                1 for r in self.calls if r.task.id == request.task.id and r.adapter == request.adapter
            )
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

        def finish() -> None:
            with self.lock:
                self.in_flight -= 1
            try:
                future.set_result(self.script(request, attempt))
            except Exception as exc:  # a dead actor
                future.set_exception(exc)

        threading.Timer(0.01, finish).start()
        return future


def test_the_runner_bounds_sessions_retries_once_and_counts_what_stays_unscored():
    tasks = eval_tasks(EvalTaskSection(kinds=("analysis",)), 5)
    checkpoints = [Checkpoint("pi", "base", 0), Checkpoint("pi", "pi-step2", 2, "/x")]

    def script(request, attempt):
        if request.task.id == tasks[0].id and request.adapter == "base" and attempt == 1:
            raise RuntimeError("rollout actor died")  # retried, then scored
        if request.task.id == tasks[1].id and request.adapter == "pi-step2":
            return RolloutOutcome(request.rollout_id, request.group_id, failure="sandbox crashed")
        passed = request.adapter == "pi-step2"
        return RolloutOutcome(
            request.rollout_id, request.group_id, verdict="pass" if passed else "fail", tool_calls=2
        )

    submit = ScriptedSubmit(script)
    results = SessionRunner(submit, limit=3, label="test").run([(c, t) for c in checkpoints for t in tasks])
    assert len(results) == 10 and submit.peak <= 3
    assert len(submit.calls) == 12  # two sessions took a second attempt
    unscored = [r for r in results if r.failure]
    assert [(r.checkpoint, r.task_id) for r in unscored] == [("pi-step2", tasks[1].id)]
    assert sum(r.passed for r in results) == 4 and not any(
        r.passed for r in results if r.checkpoint == "base"
    )


def test_a_checkpoint_that_fails_to_load_is_reported_and_the_rest_goes_on(tmp_path: Path):
    from jobs.evaluate import publish_all

    good = make_checkpoint(tmp_path / "pi" / "checkpoint-1")
    half = make_checkpoint(tmp_path / "pi" / "checkpoint-2", complete=False)
    refused = make_checkpoint(tmp_path / "pi" / "checkpoint-3")
    published = []

    def publish(name: str, path: str) -> None:
        if path == str(refused):
            raise RuntimeError("AdapterRejected: rank 64 > max_lora_rank 32\nmore detail")
        published.append(name)

    found = discover_checkpoints(tmp_path, "pi", last=0, include_base=True)
    live, failed = publish_all(publish, found)
    assert [c.name for c in live] == ["base", "pi-step1"] and published == ["pi-step1"]
    assert set(failed) == {"pi-step2", "pi-step3"}
    assert "adapter_model.safetensors missing" in failed["pi-step2"]
    assert failed["pi-step3"] == "RuntimeError: AdapterRejected: rank 64 > max_lora_rank 32"
    assert str(good) == live[1].path and str(half) not in [c.path for c in live]


def test_checkpoints_in_a_storage_uri_are_copied_here_before_discovery(tmp_path: Path) -> None:
    from jobs.evaluate import fetch_checkpoints

    bucket = tmp_path / "bucket"
    make_checkpoint(bucket / "pi" / "checkpoint-2")
    make_checkpoint(bucket / "pi" / "checkpoint-4")
    (bucket / "pi" / "trajectories").mkdir()
    (bucket / "pi" / "trajectories" / "r1.json").write_text("{}")
    local = fetch_checkpoints(f"file://{bucket}", ["pi", "hermes"], tmp_path / "here")
    assert local == tmp_path / "here"
    steps = [c.step for c in discover_checkpoints(local, "pi", 0, include_base=False)]
    assert steps == [2, 4]
    assert not (local / "pi" / "trajectories").exists()  # only checkpoints travel
    assert adapter_problem(str(local / "pi" / "checkpoint-4")) is None
    assert fetch_checkpoints(str(bucket), ["pi"], tmp_path / "unused") == bucket  # a folder is used in place


def test_an_adapter_start_is_step_zero_and_the_base_the_step_before(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "pi" / "checkpoint-4")
    found = discover_checkpoints(tmp_path, "pi", 0, include_base=True, start_adapter="sft/{harness}")
    assert [(c.name, c.step, c.path) for c in found] == [
        ("base", -1, None),
        ("pi-start", 0, "sft/pi"),
        ("pi-step4", 4, str(tmp_path / "pi" / "checkpoint-4")),
    ]
    plain = discover_checkpoints(tmp_path, "pi", 0, include_base=True)
    assert [(c.name, c.step) for c in plain] == [("base", 0), ("pi-step4", 4)]


def test_impossible_and_capability_settings_are_checked_at_load():
    with pytest.raises((ConfigError, ValueError), match="oneoff and/or conflicting"):
        load_config(EvalConfig, CONFIGS[0], ("tasks.impossible=[offbyone]",))
    with pytest.raises((ConfigError, ValueError), match="HumanEval has 164"):
        load_config(EvalConfig, CONFIGS[0], ("capability.problems=200",))
    with pytest.raises((ConfigError, ValueError), match=r"merged: checkpoints=-1.*must be >= 0"):
        load_config(EvalConfig, CONFIGS[0], ("merged.checkpoints=-1",))


def test_the_held_out_repo_tasks_get_their_impossible_variants():
    from jobs.evaluate import impossible_tasks

    tasks = eval_tasks(EvalTaskSection(kinds=("repair", "analysis")), 0)
    variants = impossible_tasks(tasks, ("oneoff", "conflicting"))
    mutations = {v.mutation for v in variants.values()}
    assert mutations == {"oneoff", "conflicting"} and all(
        v.task.kind.value == "repair" for v in variants.values()
    )
    assert all(i.endswith(f"-impossible-{v.mutation}") for i, v in variants.items())
    assert impossible_tasks(tasks, ()) == {}


@pytest.mark.skipif(__import__("shutil").which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_capability_rows_score_each_served_checkpoint_once_through_the_server(tmp_path: Path):
    from environments.capability.humaneval import load_problems
    from jobs.evaluate import capability_rows
    from tests.environments.capability.test_humaneval import ScriptedServer, scripted

    problems = load_problems(4)
    honest, broken = scripted(problems, wrong=set()), scripted(problems, wrong={0, 1, 2, 3})
    server = ScriptedServer(lambda prompt, model: (honest if model == "base" else broken)(prompt))
    server_models = server.models
    live = [Checkpoint("pi", "base", 0), Checkpoint("opencode", "base", 0), Checkpoint("pi", "pi-v1", 1, "x")]
    cfg = EvalConfig(capability=CapabilitySection(problems=4), rollouts=RolloutSettings(sandbox="local"))
    lines: list[str] = []
    try:
        rows = capability_rows(cfg, server.url, live, tmp_path, lines.append)
    finally:
        server.close()
    assert [(r.checkpoint, r.passed, r.total) for r in rows] == [("base", 4, 4), ("pi-v1", 0, 4)]
    assert sorted(set(server_models)) == ["base", "pi-v1"] and len(server_models) == 8  # the base once
    assert lines == ["humaneval base: 4/4", "humaneval pi-v1: 0/4"]
    assert (tmp_path / "capability.json").is_file()


def test_a_train_dir_that_does_not_exist_stops_before_anything_starts(tmp_path: Path, monkeypatch) -> None:
    import jobs.evaluate as evaluate

    started = []
    monkeypatch.setattr("actors.cluster.connect_ray", lambda **_: started.append("ray"))
    cfg = load_config(
        EvalConfig, CONFIGS[0], (f"train_dir={tmp_path / 'trian'}", f"out_dir={tmp_path / 'e'}")
    )
    with pytest.raises(ConfigError, match="trian'.*no such folder; give the train job's out_dir"):
        evaluate.run(cfg)
    assert started == []


def test_the_merged_comparison_is_refused_on_a_driver_node_without_cpus():
    from jobs.evaluate import merged_problem

    problem = merged_problem(4, 0.0)
    assert problem and "set merged.tasks=0 on a cluster" in problem
    assert merged_problem(0, 0.0) is None and merged_problem(4, 2.0) is None
