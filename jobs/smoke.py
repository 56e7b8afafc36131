"""The smoke run: every component that exists, small, on the embedded default (local Ray, tiny model).

Stages (each prints what it is doing and what it measured):
 1. build (or find) the tiny model;
 2. start a local Ray cluster, or join the one a ``ray job submit`` runs in;
 3. start the serving actor (vLLM with LoRA) and publish one adapter per harness;
 4. send each harness's real first request (its system prompt and tools, as captured) through its adapter;
 5. check each harness's captured tool call with the guard's rule engine;
 6. publish a new version and retire the old one while the server keeps serving;
 7. write ``summary.json`` and print one JSON line.

    python -m jobs.smoke [--config jobs/configs/smoke.yaml] [key=value ...]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

from jobs.config import load_config

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "smoke.yaml"


@dataclass(frozen=True, slots=True)
class SmokeConfig:
    model_preset: str = "tiny"
    """A preset in jobs/configs/models/."""
    adapter_rank: int = 32
    max_tokens: int = 32
    """Completion budget per request."""
    out_dir: str = "artifacts/smoke"

    def __post_init__(self) -> None:
        if self.adapter_rank < 1 or self.max_tokens < 1:
            raise ValueError("adapter_rank and max_tokens must be >= 1")


def stage(number: int, text: str) -> float:
    print(f"[smoke {number}/7] {text}", flush=True)
    return time.perf_counter()


def run(cfg: SmokeConfig) -> dict:
    import httpx
    import ray

    from actors.cluster import connect_ray
    from actors.placement import start_serving
    from actors.serving.config import resolve_device
    from environments.harness_prompts import HARNESSES, harness_request
    from environments.tiny_model import random_lora_adapter
    from jobs.models import load_preset, resolve_model
    from serve.engine import check_case

    out = Path(cfg.out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    figures: dict = {}
    started = time.perf_counter()

    t = stage(1, f"building or finding the {cfg.model_preset} model")
    serving_cfg = resolve_model(load_preset(cfg.model_preset))
    figures["model_s"] = round(time.perf_counter() - t, 2)
    print(f"    model at {serving_cfg.model} ({figures['model_s']} s)")

    t = stage(2, "starting Ray")
    info = connect_ray(dashboard=False)
    figures["ray_s"] = round(time.perf_counter() - t, 2)
    print(f"    Ray at {info['address']} ({figures['ray_s']} s, reused={info['reused']})")

    import torch

    device = resolve_device(serving_cfg.device, torch.cuda.is_available())
    t = stage(3, f"starting the serving actor (vLLM on {device}) and publishing one adapter per harness")
    server = start_serving(serving_cfg, device=device, work_dir=str(out / "serving"))
    figures["serving_start_s"] = round(time.perf_counter() - t, 2)
    url = ray.get(server.url.remote())
    publish_ms = {}
    for i, harness in enumerate(HARNESSES):
        path = random_lora_adapter(
            Path(serving_cfg.model), out / "adapters" / f"{harness}-v0", rank=cfg.adapter_rank, seed=i
        )
        publish_ms[harness] = round(ray.get(server.publish.remote(f"{harness}-v0", str(path))), 1)
    figures["publish_ms"] = publish_ms
    print(f"    serving at {url} after {figures['serving_start_s']} s; publish ms {publish_ms}")

    t = stage(4, "one real first request per harness through its adapter")
    requests = {}
    for harness in HARNESSES:
        body = harness_request(harness)
        body.update(model=f"{harness}-v0", stream=False, max_tokens=cfg.max_tokens, return_token_ids=True)
        body.pop("stream_options", None)
        sent = time.perf_counter()
        reply = httpx.post(f"{url}/chat/completions", json=body, timeout=600.0)
        reply.raise_for_status()
        data = reply.json()
        requests[harness] = {
            "latency_s": round(time.perf_counter() - sent, 2),
            "prompt_tokens": data["usage"]["prompt_tokens"],
            "completion_tokens": data["usage"]["completion_tokens"],
            "tool_calls": len(data["choices"][0]["message"].get("tool_calls") or []),
        }
    figures["requests"] = requests
    for harness, row in requests.items():
        print(
            f"    {harness:<9} prompt {row['prompt_tokens']:>5} tok, {row['completion_tokens']} generated, "
            f"{row['latency_s']} s, tool calls {row['tool_calls']}"
        )

    t = stage(5, "guard rule engine on each harness's captured tool call")
    verdicts = {}
    for harness in HARNESSES:
        request = harness_request(harness)
        messages = request["messages"]
        turn = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
        decision = check_case(request["tools"], messages[:turn], messages[turn]["tool_calls"][0])
        verdicts[harness] = type(decision).__name__.lower()
    figures["guard"] = verdicts
    print(f"    verdicts {verdicts} ({(time.perf_counter() - t) * 1000:.1f} ms)")

    t = stage(6, "publishing pi-v1 and retiring pi-v0")
    path = random_lora_adapter(
        Path(serving_cfg.model), out / "adapters" / "pi-v1", rank=cfg.adapter_rank, seed=9
    )
    figures["publish_v1_ms"] = round(ray.get(server.publish.remote("pi-v1", str(path))), 1)
    ray.get(server.retire.remote("pi-v0"))
    figures["live_adapters"] = ray.get(server.adapters.remote())
    print(f"    live {figures['live_adapters']}; publish {figures['publish_v1_ms']} ms")

    stage(7, "writing the summary")
    ray.get(server.stop.remote())
    figures["total_s"] = round(time.perf_counter() - started, 1)
    (out / "summary.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"    summary at {out / 'summary.json'}; total {figures['total_s']} s")
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("overrides", nargs="*", help="dotted.key=value")
    args = parser.parse_args(argv)
    cfg = load_config(SmokeConfig, args.config, args.overrides)
    print(json.dumps(run(cfg)))


if __name__ == "__main__":
    main()
