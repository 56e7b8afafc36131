"""Adapter validation, the registry and retire readiness, without a server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from actors.errors import AdapterCapacityError, AdapterExistsError, AdapterInvalidError, AdapterNotFoundError
from actors.serving.adapters import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    AdapterEntry,
    AdapterInfo,
    AdapterRegistry,
    adapter_problem,
    busy_adapters_from_metrics,
    check_adapter_name,
    inspect_adapter,
    ready_to_unload,
)

INFO = AdapterInfo(rank=8, target_modules=("q_proj",), weights_bytes=1)


@pytest.fixture(scope="module")
def adapter(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import make_lora_adapter

    return make_lora_adapter(tiny_model, tmp_path_factory.mktemp("adapter") / "a", rank=16, seed=1)


def test_inspect_reads_rank_and_targets_of_a_peft_adapter(adapter: Path):
    info = inspect_adapter(adapter, max_rank=32)
    assert info.rank == 16
    assert {"q_proj", "down_proj"} <= set(info.target_modules)
    assert info.weights_bytes == (adapter / "adapter_model.safetensors").stat().st_size


def test_rank_above_the_server_limit_names_both_fixes(adapter: Path):
    with pytest.raises(
        AdapterInvalidError, match=r"train with r <= 8 or start serving with max_lora_rank >= 16"
    ):
        inspect_adapter(adapter, max_rank=8)


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda d: (d / "adapter_model.safetensors").write_bytes(
                (d / "adapter_model.safetensors").read_bytes()[:-1]
            ),
            "truncated",
        ),
        (lambda d: (d / "adapter_model.safetensors").write_bytes(b"\x01\x00"), "no header"),
        (lambda d: (d / "adapter_config.json").write_text('{"peft_type": '), "not valid JSON"),
        (
            lambda d: (d / "adapter_config.json").write_text(json.dumps({"peft_type": "IA3", "r": 8})),
            "only LORA",
        ),
        (lambda d: (d / "adapter_config.json").unlink(), "not a PEFT adapter folder"),
        (lambda d: (d / "adapter_model.safetensors").unlink(), "safe_serialization=True"),
    ],
)
def test_half_written_or_foreign_adapters_are_rejected(adapter: Path, tmp_path: Path, damage, message: str):
    copy = tmp_path / "copy"
    shutil.copytree(adapter, copy)
    damage(copy)
    with pytest.raises(AdapterInvalidError, match=message):
        inspect_adapter(copy, max_rank=32)


def test_a_missing_folder_is_rejected(tmp_path: Path):
    with pytest.raises(AdapterInvalidError, match="not a folder"):
        inspect_adapter(tmp_path / "nope", max_rank=32)


@pytest.mark.parametrize("name", ["", "has space", "../escape", "-leading", "x" * 129])
def test_adapter_names_must_be_safe_path_components(name: str):
    with pytest.raises(AdapterInvalidError):
        check_adapter_name(name, "base")


def test_the_base_model_name_cannot_be_taken_by_an_adapter():
    with pytest.raises(AdapterExistsError):
        check_adapter_name("base", "base")
    check_adapter_name("pi-v12", "base")


def test_registry_refuses_duplicates_and_overflow_and_retiring_frees_nothing_until_dropped():
    registry = AdapterRegistry(capacity=2)
    registry.add(AdapterEntry("pi-v1", Path("a"), INFO))
    with pytest.raises(AdapterExistsError, match="publish a new version name"):
        registry.reserve("pi-v1")
    registry.add(AdapterEntry("pi-v2", Path("b"), INFO))
    with pytest.raises(AdapterCapacityError, match="max_loras=2"):
        registry.reserve("pi-v3")
    registry.mark_retiring("pi-v1")
    assert registry.live() == ["pi-v2"]
    with pytest.raises(AdapterExistsError, match="already retiring"):
        registry.reserve("pi-v1")
    with pytest.raises(AdapterCapacityError):
        registry.reserve("pi-v3")
    registry.drop("pi-v1")
    registry.reserve("pi-v3")


def test_leases_hold_a_retiring_adapter_and_new_leases_need_a_live_one():
    registry = AdapterRegistry(capacity=4)
    registry.add(AdapterEntry("pi-v1", Path("a"), INFO))
    registry.lease("pi-v1")
    entry = registry.mark_retiring("pi-v1")
    assert not ready_to_unload(entry, frozenset())
    with pytest.raises(AdapterNotFoundError, match="being retired"):
        registry.lease("pi-v1")
    registry.release("pi-v1")
    assert not ready_to_unload(entry, frozenset({"pi-v1"}))  # a request still running on the server
    assert ready_to_unload(entry, frozenset({"pi-v2"}))
    with pytest.raises(AdapterNotFoundError, match="live: none"):
        registry.get("pi-v9")


def test_busy_adapters_come_from_the_newest_lora_requests_info_series():
    metrics = """# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="4",running_lora_adapters="a0,b1",waiting_lora_adapters="c2"} 1.70e+09
vllm:lora_requests_info{max_lora="4",running_lora_adapters="",waiting_lora_adapters=""} 1.60e+09
vllm:num_requests_running{model_name="base"} 3.0
"""
    assert busy_adapters_from_metrics(metrics) == frozenset({"a0", "b1", "c2"})
    newer_idle = (
        metrics
        + 'vllm:lora_requests_info{max_lora="4",running_lora_adapters="",waiting_lora_adapters=""} 1.8e+09\n'
    )
    assert busy_adapters_from_metrics(newer_idle) == frozenset()
    assert busy_adapters_from_metrics("") == frozenset()


def test_a_half_written_adapter_folder_names_what_is_missing(tmp_path: Path):
    for name, files in (("ok", (ADAPTER_CONFIG, ADAPTER_WEIGHTS)), ("half", (ADAPTER_CONFIG,))):
        (tmp_path / name).mkdir()
        for file in files:
            (tmp_path / name / file).write_text("{}")
    assert adapter_problem(str(tmp_path / "ok")) is None
    problem = adapter_problem(str(tmp_path / "half"))
    assert problem and "adapter_model.safetensors missing" in problem
