"""The serving actor: one vLLM server process per base model with hot-swapped named LoRA adapters."""

from actors.serving.adapters import AdapterInfo, AdapterRegistry, busy_adapters_from_metrics, inspect_adapter
from actors.serving.config import ServingConfig, default_max_loras, server_command, server_env
from actors.serving.server import VLLMServer

__all__ = [
    "AdapterInfo",
    "AdapterRegistry",
    "ServingConfig",
    "VLLMServer",
    "busy_adapters_from_metrics",
    "default_max_loras",
    "inspect_adapter",
    "server_command",
    "server_env",
]
