"""The main job end to end on the embedded default: every stage leaves its figure in summary.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.vllm]
REPO = Path(__file__).resolve().parents[2]


def test_smoke_run_produces_every_stage_figure(tmp_path: Path, cache_dir: Path):
    env = {**os.environ, "HARNESS_ADAPTERS_CACHE": str(cache_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "jobs.smoke", f"out_dir={tmp_path / 'smoke'}", "max_tokens=8"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    for stage in range(1, 8):
        assert f"[smoke {stage}/7]" in done.stdout
    summary = json.loads((tmp_path / "smoke" / "summary.json").read_text())
    assert json.loads(done.stdout.strip().splitlines()[-1]) == summary
    assert set(summary["publish_ms"]) == {"pi", "opencode", "hermes"}
    assert all(row["prompt_tokens"] > 1000 for row in summary["requests"].values())
    assert summary["guard"] == {"pi": "allow", "opencode": "allow", "hermes": "allow"}
    assert summary["live_adapters"] == ["hermes-v0", "opencode-v0", "pi-v1"]
