"""Multi-LoRA serving against the merged way, for K checkpoints, in one run.

(a) multi-LoRA: one vLLM server holds the base weights once; all K adapters are published and their
    evaluation sessions run concurrently.
(b) merged: for each checkpoint, merge the adapter into the base (PEFT ``merge_and_unload``), save, start
    a server for it alone, evaluate, stop. This is what serving each checkpoint as its own model costs.
Both evaluate the same sessions, shaped like agent traffic: each harness's real system prompt and tool
list (pi, opencode, hermes, as captured), a user task, then a second turn holding a tool call and its
result. Wall time includes server start, as it would in a real evaluation job.

Then, on the multi-LoRA server: adapter publish latency (publish + retire of fresh versions), and the
latency of requests for other adapters while publishes happen against a no-publish baseline.

    python -m benchmarks.multi_lora [--checkpoints 9] [--rank 32]

The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import httpx

from actors.serving import ServingConfig, VLLMServer
from actors.serving.merge import merge_adapter
from benchmarks.stats import percentile
from environments.harness_prompts import HARNESSES, harness_request
from environments.tiny_model import build_tiny_model, random_lora_adapter

TASKS = ("Find why the tests fail and fix the bug.", "How many rows of sales.csv have a missing region?")
MAX_TOKENS = 24
# Both ways get every core: the benchmark measures serving alone, with nothing else to leave a core for.
ALL_CORES = f"0-{(os.cpu_count() or 1) - 1}"


def sessions() -> list[list[list[dict]]]:
    """Each session is a list of turns; each turn is the message list sent at that point."""
    out = []
    for harness in HARNESSES:
        captured = harness_request(harness)
        system, _user, *rest = captured["messages"]
        for task in TASKS:
            user = {"role": "user", "content": task}
            out.append([[system, user], [system, user, *rest]])
    return out


def tools_of(turns: list[list[dict]]) -> list[dict]:
    system = turns[0][0]["content"]
    for harness in HARNESSES:
        if harness_request(harness)["messages"][0]["content"] == system:
            return harness_request(harness)["tools"]
    raise AssertionError("session does not come from a captured harness")


async def evaluate(url: str, models: list[str], concurrency: int = 48) -> list[float]:
    """Run every session for every model, turns in order within a session; return request latencies (s)."""
    limit = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=600.0) as client:

        async def run_session(model: str, turns: list[list[dict]]) -> None:
            tools = tools_of(turns)
            for messages in turns:
                body = {
                    "model": model,
                    "messages": messages,
                    "tools": tools,
                    "max_tokens": MAX_TOKENS,
                    "temperature": 0.0,
                }
                async with limit:
                    started = time.perf_counter()
                    response = await client.post("/chat/completions", json=body)
                    latencies.append(time.perf_counter() - started)
                response.raise_for_status()

        await asyncio.gather(*(run_session(m, s) for m in models for s in sessions()))
    return latencies


def make_checkpoints(base: Path, out: Path, count: int, rank: int) -> list[Path]:
    return [
        random_lora_adapter(base, out / f"ckpt-{i}", rank=rank, seed=1000 + i, alpha=rank)
        for i in range(count)
    ]


def run_multi_lora(
    base: Path, checkpoints: list[Path], rank: int, work: Path
) -> tuple[dict[str, float], VLLMServer]:
    """Wall time of the multi-LoRA way, split into server start, publishing and evaluation."""
    marks = [time.perf_counter()]
    server = VLLMServer(
        ServingConfig(
            model=str(base), max_lora_rank=rank, max_loras=len(checkpoints) + 2, cpu_threads_bind=ALL_CORES
        ),
        str(work / "multi"),
    )
    server.start()
    marks.append(time.perf_counter())
    names = []
    for i, path in enumerate(checkpoints):
        server.publish(f"ckpt-v{i}", str(path))
        names.append(f"ckpt-v{i}")
    marks.append(time.perf_counter())
    asyncio.run(evaluate(server.url(), names))
    marks.append(time.perf_counter())
    parts = {
        "start_s": marks[1] - marks[0],
        "publish_s": marks[2] - marks[1],
        "evaluate_s": marks[3] - marks[2],
    }
    return {**parts, "total_s": marks[3] - marks[0]}, server


def run_merged(base: Path, checkpoints: list[Path], work: Path) -> dict[str, float]:
    """Wall time of the merged way, with its merge, start and evaluation parts summed over checkpoints."""
    parts = {"merge_s": 0.0, "start_s": 0.0, "evaluate_s": 0.0}
    started = time.perf_counter()
    for i, path in enumerate(checkpoints):
        t0 = time.perf_counter()
        merged = merge_adapter(base, path, work / f"merged-{i}")
        server = VLLMServer(
            ServingConfig(model=str(merged), enable_lora=False, cpu_threads_bind=ALL_CORES),
            str(work / f"merged-srv-{i}"),
        )
        t1 = time.perf_counter()
        try:
            server.start()
            t2 = time.perf_counter()
            asyncio.run(evaluate(server.url(), ["base"]))
            t3 = time.perf_counter()
        finally:
            server.stop()
        shutil.rmtree(merged, ignore_errors=True)
        parts["merge_s"] += t1 - t0
        parts["start_s"] += t2 - t1
        parts["evaluate_s"] += t3 - t2
        print(
            f"  merged checkpoint {i + 1}/{len(checkpoints)} done at {time.perf_counter() - started:.0f} s",
            flush=True,
        )
    return {**parts, "total_s": time.perf_counter() - started}


def publish_under_load(
    server: VLLMServer, adapter: Path, others: list[str], publishes: int, baseline_s: float
) -> dict[str, float]:
    """Latency of other adapters' requests with and without concurrent publishes, and publish latency."""
    url = server.url()
    stop = threading.Event()
    phase = {"name": "baseline"}
    samples: dict[str, list[float]] = {"baseline": [], "publish": []}

    def client(model: str) -> None:
        messages = sessions()[0][0]
        with httpx.Client(base_url=url, timeout=120.0) as http:
            while not stop.is_set():
                current = phase["name"]
                started = time.perf_counter()
                http.post(
                    "/chat/completions",
                    json={"model": model, "messages": messages, "max_tokens": 8, "temperature": 0.0},
                ).raise_for_status()
                samples[current].append((time.perf_counter() - started) * 1000.0)

    threads = [threading.Thread(target=client, args=(m,), daemon=True) for m in others]
    for t in threads:
        t.start()
    time.sleep(baseline_s)
    phase["name"] = "publish"
    publish_ms = []
    for i in range(publishes):
        publish_ms.append(server.publish(f"fresh-v{i}", str(adapter)))
        time.sleep(0.05)
        server.retire(f"fresh-v{i}")
    stop.set()
    for t in threads:
        t.join()
    return {
        "publish_p50_ms": percentile(publish_ms, 0.5),
        "publish_p99_ms": percentile(publish_ms, 0.99),
        "others_p99_ms_during_publish": percentile(samples["publish"], 0.99),
        "others_p99_ms_baseline": percentile(samples["baseline"], 0.99),
        "others_p50_ms_during_publish": percentile(samples["publish"], 0.5),
        "others_p50_ms_baseline": percentile(samples["baseline"], 0.5),
        "others_requests": len(samples["publish"]) + len(samples["baseline"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoints", type=int, default=9)
    parser.add_argument("--rank", type=int, default=32)
    parser.add_argument("--publishes", type=int, default=40)
    parser.add_argument(
        "--model", type=Path, default=None, help="base model folder (default: the tiny model)"
    )
    args = parser.parse_args()

    base = args.model or build_tiny_model()
    work = Path(tempfile.mkdtemp(prefix="ha-bench-multi-lora-"))
    try:
        checkpoints = make_checkpoints(base, work, args.checkpoints, args.rank)
        requests = len(sessions()) * 2
        print(
            f"{args.checkpoints} checkpoints (rank {args.rank}) x {len(sessions())} sessions x 2 turns "
            f"= {args.checkpoints * requests} requests per way; base {base.name}",
            flush=True,
        )
        multi, server = run_multi_lora(base, checkpoints, args.rank, work)
        print(
            f"multi-LoRA: {multi['total_s']:.1f} s = start {multi['start_s']:.1f} + publish "
            f"{multi['publish_s']:.1f} + evaluate {multi['evaluate_s']:.1f}",
            flush=True,
        )
        try:
            live = server.adapters()[:3]
            under_load = publish_under_load(server, checkpoints[0], live, args.publishes, baseline_s=10.0)
        finally:
            server.stop()
        merged = run_merged(base, checkpoints, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    multi_s, merged_s = multi["total_s"], merged["total_s"]
    ratio = merged_s / multi_s
    print(
        f"merged:     {merged_s:.1f} s = merge {merged['merge_s']:.1f} + start {merged['start_s']:.1f} + "
        f"evaluate {merged['evaluate_s']:.1f} (+ stops), over {args.checkpoints} checkpoints"
    )
    print(
        f"ratio merged/multi-LoRA: {ratio:.2f} "
        f"(ideal {args.checkpoints}, goal >= {0.9 * args.checkpoints:.1f})"
    )
    print(
        f"publish p50 {under_load['publish_p50_ms']:.1f} ms, p99 {under_load['publish_p99_ms']:.1f} ms; "
        f"other adapters' request p99 "
        f"{under_load['others_p99_ms_during_publish']:.1f} ms during publishes vs "
        f"{under_load['others_p99_ms_baseline']:.1f} ms baseline"
    )
    figures = {
        "checkpoints": args.checkpoints,
        "multi_lora_s": round(multi_s, 2),
        "merged_s": round(merged_s, 2),
        "ratio": round(ratio, 3),
        "multi_lora_evaluate_s": round(multi["evaluate_s"], 2),
        "merged_evaluate_s": round(merged["evaluate_s"], 2),
        "merged_start_s": round(merged["start_s"], 2),
        **{k: round(v, 2) for k, v in under_load.items()},
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
