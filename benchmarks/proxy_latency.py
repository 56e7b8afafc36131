"""Proxy half of the guard benchmark: the latency the guard adds per streamed turn.

A fake OpenAI server (a subprocess, uvicorn) streams a realistic turn: 64 text deltas, one
tool call whose arguments come in 12 pieces, finish, usage, `[DONE]` (73 events). The guard
runs as `python -m serve` (a subprocess) in front of it. Sessions (1 and 48 concurrent, each
its own `/s/<id>` rollout) run turns back to back, alternating rounds direct and through the
guard; a turn is timed from sending the request to reading `[DONE]`. Added latency = the median over
rounds of (p50 through the guard - p50 direct), at each concurrency, in two modes:

- paced (the headline keys): the upstream sends one event every `--pace-ms` (2 ms, a fast
  decode), as a model server does; the guard handles each event while the next is being
  sampled, so what it adds is its per-event delay plus the tool-call check at the end.
- burst (`proxy_burst_added_*`): all 73 events at once, no sleeps: the guard's throughput
  cost per turn (per-read relay work times the number of reads).

`benchmarks/guard.py` runs this after the check-time half and merges the figures into its last line;
alone: `python benchmarks/proxy_latency.py [--turns N] [--pace-ms MS]`, last line
`{"proxy_added_p50_ms_1": .., "proxy_added_p50_ms_48": .., "proxy_burst_added_p50_ms_1": ..,
"proxy_burst_added_p50_ms_48": .., "proxy_core_ms_per_turn": ..}`; the last key is the guard core's
own CPU per burst turn, measured in process without sockets (the steadiest figure on a busy machine).
On a shared 2-core machine the 48-session figures mostly measure CPU contention between the
client, the guard and the upstream.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.stats import percentile  # noqa: E402
from serve.scripted import sse_chunks, streaming_app, turn_events  # noqa: E402
from serve.standalone import free_port  # noqa: E402

TEXT = "I will look at the failing test first, then run the suite. " * 4
COMMAND = "python -m pytest -q tests/test_core.py 2>&1 | tail -20"
REQUEST = {
    "model": "fake-model",
    "messages": [
        {"role": "system", "content": "You are a coding agent. Working directory: /testbed"},
        {"role": "user", "content": "Fix the bug so the tests pass."},
    ],
    "tools": [
        {"type": "function", "function": {"name": t, "parameters": {"type": "object"}}}
        for t in ("read", "bash", "edit", "write")
    ],
    "stream": True,
    "stream_options": {"include_usage": True},
}


def turn_chunks() -> list[bytes]:
    """The benchmark's turn: 64 text deltas, one tool call in 12 pieces, finish, usage, [DONE]."""
    return sse_chunks(turn_events(text=TEXT[:256], command=COMMAND))


def upstream_app():
    """Factory for uvicorn: the fake upstream, pacing events by ``BENCH_PACE_MS``."""
    return streaming_app(turn_chunks(), float(os.environ.get("BENCH_PACE_MS", "0")) / 1000)


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


class TurnFailed(Exception):
    """A turn that got no well-formed stream: a dropped connection or a bad response."""


async def _turn(client: httpx.AsyncClient, url: str, body: dict) -> float:
    start = time.perf_counter()
    try:
        async with client.stream("POST", url, json=body) as response:
            last = b""
            async for chunk in response.aiter_bytes():
                last = (last + chunk)[-32:]
    except httpx.HTTPError as exc:
        raise TurnFailed(f"turn to {url} failed after {time.perf_counter() - start:.3f} s: {exc!r}") from exc
    if response.status_code != 200 or not last.endswith(b"data: [DONE]\n\n"):
        raise TurnFailed(f"bad turn from {url}: HTTP {response.status_code}")
    return (time.perf_counter() - start) * 1000


@dataclass
class Rounds:
    """Per round, the p50 turn time of ``sessions`` concurrent turns sent direct, then through the guard."""

    direct_p50_ms: list[float] = field(default_factory=list)
    guard_p50_ms: list[float] = field(default_factory=list)
    failed_turns: int = 0

    @property
    def added_p50_ms(self) -> float:
        """Median over rounds of (guard - direct): paired, so load that drifts between rounds cancels."""
        return percentile([g - d for g, d in zip(self.guard_p50_ms, self.direct_p50_ms, strict=True)], 0.5)


async def measure(direct: str, guard: str, sessions: int, rounds: int) -> Rounds:
    """``rounds`` rounds after a warm-up; a failed turn is retried once on a fresh connection and
    counted (a second failure ends the benchmark: the guard is broken, not slow)."""
    out = Rounds()
    limits = httpx.Limits(max_connections=2 * sessions + 4)
    async with httpx.AsyncClient(timeout=60.0, limits=limits) as client:

        async def session(i: int, kind: str) -> float:
            url = (
                f"{direct}/v1/chat/completions" if kind == "direct" else f"{guard}/s/b{i}/v1/chat/completions"
            )
            try:
                return await _turn(client, url, REQUEST)
            except TurnFailed as exc:
                out.failed_turns += 1
                print(f"retrying once: {exc}", file=sys.stderr)
                async with httpx.AsyncClient(timeout=60.0) as fresh:
                    return await _turn(fresh, url, REQUEST)

        for kind in ("direct", "guard"):  # warm-up: connections, first-request imports
            await asyncio.gather(*(session(i, kind) for i in range(sessions)))
        for _ in range(rounds):
            for kind, into in (("direct", out.direct_p50_ms), ("guard", out.guard_p50_ms)):
                times = await asyncio.gather(*(session(i, kind) for i in range(sessions)))
                into.append(percentile(list(times), 0.5))
    return out


def core_ms(turns: int = 300) -> float:
    """CPU the guard core spends per burst turn, in process (no sockets): `GuardProxy.chat` plus the
    relay over a MockTransport upstream, minus reading the same stream from that upstream directly."""
    from serve.proxy import GuardProxy, ProxyConfig

    chunks = turn_chunks()

    def reply(request: httpx.Request) -> httpx.Response:
        async def stream():
            for chunk in chunks:
                yield chunk

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream())

    def client() -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(reply))

    upstream_url = "http://upstream.test/v1"
    proxy = GuardProxy(ProxyConfig(upstream_url, auto_open=True, max_turns=10 * turns), client())
    body = json.dumps(REQUEST).encode()

    async def run() -> tuple[list[float], list[float]]:
        guarded, direct = [], []
        direct_client = client()
        for _ in range(turns):
            start = time.perf_counter()
            response = await proxy.chat("core", body)
            async for _ in response.body_iterator:  # type: ignore[attr-defined]
                pass
            guarded.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            request = direct_client.build_request("POST", f"{upstream_url}/chat/completions", content=body)
            raw = await direct_client.send(request, stream=True)
            async for _ in raw.aiter_bytes():
                pass
            await raw.aclose()
            direct.append((time.perf_counter() - start) * 1000)
        return guarded, direct

    guarded, direct = asyncio.run(run())
    return percentile(guarded, 0.5) - percentile(direct, 0.5)


def _servers(pace_ms: float) -> tuple[subprocess.Popen, subprocess.Popen, str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "BENCH_PACE_MS": str(pace_ms)}
    up_port, guard_port = free_port(), free_port()
    upstream = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "benchmarks.proxy_latency:upstream_app", "--factory",
         "--port", str(up_port), "--log-level", "warning", "--no-access-log"],
        cwd=REPO, env=env,
    )  # fmt: skip
    target = f"http://127.0.0.1:{up_port}/v1"
    guard = subprocess.Popen(
        [sys.executable, "-m", "serve", "--upstream", target, "--port", str(guard_port)],
        cwd=REPO, env=env, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return upstream, guard, f"http://127.0.0.1:{up_port}", f"http://127.0.0.1:{guard_port}"


def run(turns: int = 40, pace_ms: float = 2.0) -> dict[str, float]:
    """Measure both modes at 1 and 48 sessions, print a table, return the figures."""
    result: dict[str, float] = {}
    failed = 0
    print(f"{'mode':>6} {'sessions':>8} {'direct p50 ms':>14} {'guard p50 ms':>13} {'added p50 ms':>13}")
    for mode, pace in (("paced", pace_ms), ("burst", 0.0)):
        upstream, guard, direct_url, guard_url = _servers(pace)
        try:
            _wait(direct_url, upstream)
            _wait(guard_url + "/health", guard)
            for sessions in (1, 48):
                rounds = turns if sessions == 1 else max(8, turns // 4)
                measured = asyncio.run(measure(direct_url, guard_url, sessions, rounds))
                direct_p50 = percentile(measured.direct_p50_ms, 0.5)
                guard_p50 = percentile(measured.guard_p50_ms, 0.5)
                added = measured.added_p50_ms
                print(f"{mode:>6} {sessions:>8} {direct_p50:>14.3f} {guard_p50:>13.3f} {added:>13.3f}")
                prefix = "proxy_added" if mode == "paced" else "proxy_burst_added"
                result[f"{prefix}_p50_ms_{sessions}"] = round(added, 3)
                failed += measured.failed_turns
        finally:
            for proc in (guard, upstream):
                proc.terminate()
                proc.wait(10)
    result["proxy_failed_turns"] = failed
    result["proxy_core_ms_per_turn"] = round(core_ms(), 3)
    print(f"guard core CPU per 73-event turn (in process, p50): {result['proxy_core_ms_per_turn']:.3f} ms")
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--turns", type=int, default=40, help="proxy rounds per concurrency level")
    parser.add_argument("--pace-ms", type=float, default=2.0, help="upstream gap between events (paced mode)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args()
    print(json.dumps(run(args.turns, args.pace_ms)))


if __name__ == "__main__":
    main()
