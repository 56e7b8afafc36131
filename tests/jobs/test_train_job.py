"""The train job for real: submitted with ``ray job submit --working-dir .`` to a local Ray cluster
(``ray start --head``), on the CPU smoke preset cut to one harness, one step and the tiny model; it
succeeds, publishes a version through the serving actor, and writes its summary."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from environments.harnesses import install_root
from tests.environments.harnesses.conftest import harnesses_missing

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.vllm, pytest.mark.harness, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_train_job_runs_under_ray_job_submit(tiny_model: Path, cache_dir: Path, tmp_path: Path):
    if shutil.which("bwrap") is None or harnesses_missing():
        pytest.skip(harnesses_missing() or "bubblewrap is not installed")
    ray = str(Path(sys.executable).with_name("ray"))
    temp = Path(tempfile.mkdtemp(prefix="rj", dir="/tmp"))  # Ray's socket paths must stay short
    dashboard = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    head = [ray, "start", "--head", f"--port={free_port()}", f"--dashboard-port={dashboard}", "--num-cpus=4",
            "--dashboard-host=127.0.0.1", f"--temp-dir={temp}", "--disable-usage-stats"]  # fmt: skip
    subprocess.run(head, check=True, env=env, capture_output=True, timeout=120)
    out = tmp_path / "train"
    runtime_env = {
        "env_vars": {
            "HA_HARNESSES": str(install_root().resolve()),
            "HARNESS_ADAPTERS_CACHE": str(cache_dir),  # where the tiny model was built
            "HF_HUB_OFFLINE": "1",
            "TRL_EXPERIMENTAL_SILENCE": "1",
        }
    }
    overrides = [
        f"out_dir={out}",
        "harnesses=[pi]",
        "max_steps=1",
        f"guard_port={free_port()}",
        "trackio_project=",
    ]
    try:
        job = subprocess.run(
            [ray, "job", "submit", "--address", f"http://127.0.0.1:{dashboard}", "--working-dir", str(REPO),
             "--runtime-env-json", json.dumps(runtime_env), "--",
             "python", "-m", "jobs.train", "--config", "jobs/configs/train-smoke.yaml", *overrides],
            env=env, capture_output=True, text=True, timeout=1500,
        )  # fmt: skip
    finally:
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-2000:]
    summary = json.loads((out / "train.json").read_text())
    assert summary["pi"]["steps"] == 1
    assert summary["pi"]["published"][:2] == ["pi-v1", "pi-v2"]
    figures = json.loads([line for line in job.stdout.splitlines() if line.startswith("{")][-1])
    assert figures["steps"] == {"pi": 1}
