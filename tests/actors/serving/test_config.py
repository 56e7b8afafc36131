"""The server command line and its config validation."""

from __future__ import annotations

import pytest

from actors.serving.config import ServingConfig, default_max_loras, resolve_device, server_command, server_env


def test_max_loras_default_fits_three_trainers_with_a_staleness_window_of_four():
    assert default_max_loras() == 18
    assert ServingConfig(model="m").max_loras == 18
    assert default_max_loras(trainers=1, max_staleness=0) == 2


def _flag(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_cpu_command_enables_runtime_lora_and_the_hermes_tool_parser():
    cfg = ServingConfig(model="/models/tiny", max_lora_rank=16, max_loras=6)
    cmd = server_command(cfg, 8123, device="cpu", python="py")
    assert cmd[:3] == ["py", "-m", "vllm.entrypoints.openai.api_server"]
    assert _flag(cmd, "--dtype") == "float32"
    assert _flag(cmd, "--max-lora-rank") == "16" and _flag(cmd, "--max-loras") == "6"
    assert _flag(cmd, "--tool-call-parser") == "hermes" and "--enable-auto-tool-choice" in cmd
    assert _flag(cmd, "--port") == "8123" and _flag(cmd, "--host") == "127.0.0.1"
    assert "--gpu-memory-utilization" not in cmd
    env = server_env(cfg, device="cpu")
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "1" and env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    # regression: importing TRL in the parent set VLLM_LOGGING_LEVEL=ERROR and the server logged nothing
    assert env["VLLM_LOGGING_LEVEL"] == "INFO"
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "auto" and "VLLM_CPU_NUM_OF_RESERVED_CPU" not in env
    pinned = server_env(ServingConfig(model="m", cpu_threads_bind="0-1"), device="cpu")
    assert pinned["VLLM_CPU_OMP_THREADS_BIND"] == "0-1" and pinned["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"


def test_gpu_command_uses_bf16_and_a_memory_share():
    cmd = server_command(ServingConfig(model="m"), 1, device="gpu", python="py")
    assert _flag(cmd, "--dtype") == "bfloat16" and "--gpu-memory-utilization" in cmd
    assert "VLLM_CPU_KVCACHE_SPACE" not in server_env(ServingConfig(model="m"), device="gpu")


def test_cuda_graphs_are_on_by_default_on_gpu_and_off_on_cpu_unless_set():
    def eager(device: str, **kwargs) -> bool:
        return "--enforce-eager" in server_command(ServingConfig(model="m", **kwargs), 1, device=device)

    assert eager("cpu") and not eager("gpu")  # vllm-cpu needs eager; a GPU user expects CUDA graphs
    assert eager("gpu", enforce_eager=True) and not eager("cpu", enforce_eager=False)


def test_merged_serving_has_no_lora_flags():
    assert "--enable-lora" not in server_command(ServingConfig(model="m", enable_lora=False), 1, device="cpu")


def test_device_auto_follows_cuda():
    assert resolve_device("auto", True) == "gpu" and resolve_device("auto", False) == "cpu"
    assert resolve_device("cpu", True) == "cpu"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"model": ""}, "serving.model is empty"),
        ({"model": "m", "max_lora_rank": 12}, "max_lora_rank=12"),
        ({"model": "m", "max_loras": 0}, "max_loras=0"),
        ({"model": "m", "device": "tpu"}, "device='tpu'"),
    ],
)
def test_bad_config_names_the_field_and_the_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ServingConfig(**kwargs)


def test_the_hub_is_offline_only_when_asked_and_the_cache_is_configurable():
    online = server_env(ServingConfig(model="org/model"), device="gpu")
    assert "HF_HUB_OFFLINE" not in online and "TRANSFORMERS_OFFLINE" not in online
    offline = server_env(ServingConfig(model="org/model", offline=True, cache_dir="/cache/hf"), device="gpu")
    assert offline["HF_HUB_OFFLINE"] == "1" and offline["HF_HUB_CACHE"] == "/cache/hf"


def test_the_server_binds_the_address_given_and_loads_this_nodes_copy_of_the_weights():
    cfg = ServingConfig(model="org/model")
    cmd = server_command(cfg, 8000, device="gpu", host="10.0.0.7", model="/cache/models--org--model/abc")
    assert _flag(cmd, "--host") == "10.0.0.7"
    assert _flag(cmd, "--model") == "/cache/models--org--model/abc"
    assert _flag(cmd, "--served-model-name") == "base"


def test_node_resolves_to_the_ray_node_address_and_a_wildcard_bind_is_reached_by_it():
    from actors.serving.address import advertised, bind_address, node_address

    assert bind_address("node") == "127.0.0.1" and bind_address("0.0.0.0") == "0.0.0.0"
    assert node_address("127.0.0.3") == "127.0.0.3"
    assert node_address("node") == "127.0.0.1"  # outside a Ray process: this machine's loopback
    assert advertised("0.0.0.0") == "127.0.0.1" and advertised("127.0.0.2") == "127.0.0.2"
