"""Proxy half of the guard benchmark: the latency the guard adds per streamed turn.

A fake OpenAI server (a subprocess, uvicorn) streams a realistic turn: 64 text deltas, one
tool call whose arguments come in 12 pieces, finish, usage, `[DONE]` (73 events). The guard
runs as `python -m serve` (a subprocess) in front of it. Sessions (1 and 48 concurrent, each
its own `/s/<id>` rollout) run turns back to back, alternating rounds direct and through the
guard; a turn is timed from sending the request to reading `[DONE]`. Added latency = p50
through the guard - p50 direct, at each concurrency, in two modes:

- paced (the headline keys): the upstream sends one event every `--pace-ms` (2 ms, a fast
  decode), as a model server does; the guard handles each event while the next is being
  sampled, so what it adds is its per-event delay plus the tool-call check at the end.
- burst (`proxy_burst_added_*`): all 73 events at once, no sleeps: the guard's throughput
  cost per turn (per-read relay work times the number of reads).

Run from the repo root: `python tests/serve/proxy_bench.py [--turns N] [--pace-ms MS]`. The last
line is `{"proxy_added_p50_ms_1": .., "proxy_added_p50_ms_48": .., "proxy_burst_added_p50_ms_1":
.., "proxy_burst_added_p50_ms_48": .., "proxy_core_ms_per_turn": ..}` (to be merged into
`benchmarks/guard.py`'s last line); the last key is the guard core's own CPU per burst turn,
measured in process without sockets (the steadiest figure on a busy machine).
On a shared 2-core machine the 48-session figures mostly measure CPU contention between the
client, the guard and the upstream.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(HERE)]

from proxyutil import chat_request, sse_bytes, upstream_events  # noqa: E402

TEXT = "I will look at the failing test first, then run the suite. " * 4


def upstream_app():
    """Factory for uvicorn: the fake upstream's Starlette app."""
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    events = upstream_events(
        text=TEXT[:256], command="python -m pytest -q tests/test_core.py 2>&1 | tail -20"
    )
    chunks = [c + b"\n\n" for c in sse_bytes(events).split(b"\n\n") if c]
    pace_s = float(os.environ.get("BENCH_PACE_MS", "0")) / 1000

    async def chat(request):
        await request.body()

        async def body():
            for chunk in chunks:
                if pace_s:
                    await asyncio.sleep(pace_s)
                yield chunk

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{url}: server exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"{url}: not up after 60 s")


async def _turn(client: httpx.AsyncClient, url: str, body: dict) -> float:
    start = time.perf_counter()
    try:
        async with client.stream("POST", url, json=body) as response:
            last = b""
            async for chunk in response.aiter_bytes():
                last = (last + chunk)[-32:]
    except httpx.HTTPError as exc:
        raise SystemExit(f"turn to {url} failed after {time.perf_counter() - start:.3f} s: {exc!r}") from exc
    if response.status_code != 200 or not last.endswith(b"data: [DONE]\n\n"):
        raise SystemExit(f"bad turn from {url}: HTTP {response.status_code}")
    return (time.perf_counter() - start) * 1000


async def measure(direct: str, guard: str, sessions: int, turns: int) -> tuple[list[float], list[float]]:
    body = chat_request()
    times: dict[str, list[float]] = {"direct": [], "guard": []}
    limits = httpx.Limits(max_connections=2 * sessions + 4)
    async with httpx.AsyncClient(timeout=60.0, limits=limits) as client:

        async def session(i: int, kind: str) -> None:
            url = (
                f"{direct}/v1/chat/completions" if kind == "direct" else f"{guard}/s/b{i}/v1/chat/completions"
            )
            times[kind].append(await _turn(client, url, body))

        for kind in ("direct", "guard"):  # warm-up: connections, first-request imports
            await asyncio.gather(*(session(i, kind) for i in range(sessions)))
        times = {"direct": [], "guard": []}
        for _ in range(turns):
            for kind in ("direct", "guard"):
                await asyncio.gather(*(session(i, kind) for i in range(sessions)))
    return times["direct"], times["guard"]


def core_ms(turns: int = 300) -> float:
    """CPU the guard core spends per burst turn, in process (no sockets): `GuardProxy.chat` plus the
    relay over a MockTransport upstream, minus reading the same stream from that upstream directly."""
    from proxyutil import Upstream, make_proxy, streaming

    events = upstream_events(
        text=TEXT[:256], command="python -m pytest -q tests/test_core.py 2>&1 | tail -20"
    )
    chunks = [c + b"\n\n" for c in sse_bytes(events).split(b"\n\n") if c]
    upstream = Upstream(streaming(chunks))
    upstream.handler = upstream.reply  # type: ignore[method-assign]  # don't keep request bodies
    proxy = make_proxy(upstream, auto_open=True, max_turns=10 * turns)
    body = json.dumps(chat_request()).encode()

    async def run() -> tuple[list[float], list[float]]:
        guarded, direct = [], []
        client = upstream.client()
        for _ in range(turns):
            start = time.perf_counter()
            response = await proxy.chat("core", body)
            async for _ in response.body_iterator:  # type: ignore[attr-defined]
                pass
            guarded.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            request = client.build_request("POST", "http://upstream.test/v1/chat/completions", content=body)
            raw = await client.send(request, stream=True)
            async for _ in raw.aiter_bytes():
                pass
            await raw.aclose()
            direct.append((time.perf_counter() - start) * 1000)
        return guarded, direct

    guarded, direct = asyncio.run(run())
    return _p50(guarded) - _p50(direct)


def _p50(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _servers(pace_ms: float) -> tuple[subprocess.Popen, subprocess.Popen, str, str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{HERE}", "BENCH_PACE_MS": str(pace_ms)}
    up_port, guard_port = _port(), _port()
    upstream = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "proxy_bench:upstream_app", "--factory", "--port", str(up_port),
         "--log-level", "warning", "--no-access-log"],
        cwd=REPO, env=env,
    )  # fmt: skip
    target = f"http://127.0.0.1:{up_port}/v1"
    guard = subprocess.Popen(
        [sys.executable, "-m", "serve", "--upstream", target, "--port", str(guard_port)],
        cwd=REPO, env=env, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return upstream, guard, f"http://127.0.0.1:{up_port}", f"http://127.0.0.1:{guard_port}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40, help="rounds per concurrency level")
    parser.add_argument("--pace-ms", type=float, default=2.0, help="upstream gap between events (paced mode)")
    args = parser.parse_args()
    result = {}
    print(f"{'mode':>6} {'sessions':>8} {'direct p50 ms':>14} {'guard p50 ms':>13} {'added p50 ms':>13}")
    for mode, pace_ms in (("paced", args.pace_ms), ("burst", 0.0)):
        upstream, guard, direct_url, guard_url = _servers(pace_ms)
        try:
            _wait(direct_url, upstream)
            _wait(guard_url + "/health", guard)
            for sessions in (1, 48):
                rounds = args.turns if sessions == 1 else max(3, args.turns // 8)
                direct, guarded = asyncio.run(measure(direct_url, guard_url, sessions, rounds))
                added = _p50(guarded) - _p50(direct)
                print(f"{mode:>6} {sessions:>8} {_p50(direct):>14.3f} {_p50(guarded):>13.3f} {added:>13.3f}")
                prefix = "proxy_added" if mode == "paced" else "proxy_burst_added"
                result[f"{prefix}_p50_ms_{sessions}"] = round(added, 3)
        finally:
            for proc in (guard, upstream):
                proc.terminate()
                proc.wait(10)
    result["proxy_core_ms_per_turn"] = round(core_ms(), 3)
    print(f"guard core CPU per 73-event turn (in process, p50): {result['proxy_core_ms_per_turn']:.3f} ms")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
