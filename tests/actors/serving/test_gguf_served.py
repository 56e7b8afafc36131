"""SmolLM2-135M-Instruct, converted from its GGUF wheel, served by vLLM with LoRA enabled and driven by
the real pi harness through the guard for one session: the same path as any Hub model."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.harness, pytest.mark.slow]


@pytest.fixture(scope="module")
def smollm2_server(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from actors.models import load_preset, resolve_model
    from actors.serving.server import VLLMServer

    cfg = resolve_model(load_preset("smollm2-135m", ("max_loras=2",)))
    server = VLLMServer(cfg, str(tmp_path_factory.mktemp("smollm2-serving")))
    server.start()
    yield server
    server.stop()


def test_smollm2_serves_a_guarded_pi_session_on_a_shipped_task(smollm2_server, tmp_path: Path):
    from actors.rollout import GuardHTTP, RolloutRequest, RolloutSession
    from environments.core.types import Split
    from environments.harnesses import harness_binds
    from environments.sandboxes import LocalBackend
    from environments.tasks.shipped import task_set
    from tests.environments.harnesses.conftest import guard_process, harnesses_missing

    if shutil.which("bwrap") is None or harnesses_missing():
        pytest.skip(harnesses_missing() or "bubblewrap is not installed")
    task = next(t for t in task_set("row-count") if t.split is Split.EVAL)
    with guard_process(smollm2_server.url(), tmp_path / "guard.log") as (guard_url, _):
        backend = LocalBackend(tmp_path / "boxes", prefix="hxsm", extra_ro_binds=harness_binds())
        session = RolloutSession(backend, GuardHTTP(guard_url), tmp_path, max_tokens=256)
        request = RolloutRequest("pi-smollm2", "g", task, "pi", smollm2_server.base_model_name(), 0)
        outcome = session.run(request)
    assert outcome.failure is None, outcome.failure
    assert outcome.rows, "the guard recorded no model turn of the session"
    assert outcome.verdict in ("pass", "fail"), outcome
