"""Multi-LoRA serving against the merged way, for K checkpoints, on the same agent-shaped evaluation work.

(a) multi-LoRA: one vLLM server holds the base weights once; all K adapters are published and every
    checkpoint's evaluation sessions run concurrently on it; then the server stops.
(b) merged: for each checkpoint, merge the adapter into the base (PEFT ``merge_and_unload``), save, start
    a server for it alone, run that checkpoint's sessions, stop. This is what serving each checkpoint as
    its own model costs.

The work (``agent_sessions``, pure and seeded): each checkpoint gets its own set of sessions, drawn from
its index. A session is one harness (pi, opencode, hermes in turn): its real system prompt and tool list as
captured, a user task, then several turns (``--turns``, default 3-6); each turn's request holds the history
so far (earlier assistant turns, each with a tool call in the harness's own shell tool, and the tool's
result), and its output length is drawn per turn (``--output-tokens``, default 64-384). Both ways send the
same requests and generate exactly the same tokens: each request forces its length (``min_tokens`` =
``max_tokens``, ``ignore_eos``), the completion tokens the server reports (``usage``) are summed per way,
and the run fails (exit 1, no figures) unless both ways report the sum of the forced lengths.

Accounting, the same for both ways: end to end is every phase a way needs, measured as contiguous laps
(multi-LoRA: start + publish of K adapters + sessions + stop; merged: per checkpoint merge + start +
sessions + stop, where stop includes deleting the merged weights). Server start includes vLLM's one-token
warm-up, for both. The evaluation phase alone (sessions only) is reported beside it: ``ratio`` is merged /
multi-LoRA end to end, ``eval_phase_ratio`` the same for the evaluation phase. ``--repeats N`` runs both
ways N times, alternating which goes first; each figure is the median over the repeats, with its spread
(``<figure>_spread``: min and max).

Then, once (in the first repeat, on the multi-LoRA server after its sessions, outside its laps): adapter
publish latency (publish + retire of fresh versions), and the latency of requests for other adapters while
publishes happen against a no-publish baseline (``--publishes 0`` skips it).

Not covered: harnesses, sandboxes and the guard (requests go straight to vLLM); sessions' turns are not
the model's own outputs (the history is fixed text, so both ways see the same prompts).

    python -m benchmarks.multi_lora [--checkpoints 9] [--rank 32] [--sessions 6] [--turns 3-6] [--repeats 3]

The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from actors.serving import ServingConfig, VLLMServer
from actors.serving.merge import merge_adapter
from benchmarks.stats import percentile
from environments.harness_prompts import HARNESSES, harness_request
from environments.tiny_model import build_tiny_model, random_lora_adapter

# Turns per session and output tokens per turn. Neither is a measurement: 3-6 turns of a short plan plus
# one tool call (or the final answer), tens to a few hundred tokens each, is our judgement of a capable
# model's agent turn. The tiny agent's own recorded sessions (artifacts/learning-check trajectories) are
# too short to stand for one: a median of 2 model turns of 31 tokens (2-96).
TURNS = (3, 6)
OUTPUT_TOKENS = (64, 384)
WORDS_PER_TOKEN = 0.75  # to size the history's assistant text like the turn that produced it (about)
TASKS = (
    "Find why the tests in tests/test_parse.py fail and fix the bug.",
    "How many rows of sales.csv have a missing region?",
    "Add a --dry-run flag to scripts/deploy.py, with a test.",
    "CI fails with an ImportError in utils/io.py; find the cause and fix it.",
    "Summarise what src/cache.py does and list its public functions.",
    "Rename the config key `timeout` to `timeout_s` everywhere; old configs must still load.",
    "Which JSON files under data/ fail to parse? List them.",
    "Make tests/test_index.py::test_rebuild run in under a second without weakening what it checks.",
)
COMMANDS = (
    "ls -la",
    "git status --short",
    "pytest -q tests/test_parse.py",
    "grep -rn 'def parse' src/",
    "sed -n 1,80p src/parse.py",
    "python -c \"import csv; print(sum(1 for r in csv.DictReader(open('sales.csv')) if not r['region']))\"",
    "cat pyproject.toml",
    "git diff --stat",
    "find data -name '*.json'",
)
OUTPUT_LINES = (
    "FAILED tests/test_parse.py::test_empty_field - AssertionError: assert None == ''",
    "src/parse.py:41:def parse_row(line: str, sep: str = ',') -> list[str]:",
    "    return [field.strip() or None for field in line.split(sep)]",
    "-rw-r--r-- 1 user user  18244 Mar  3 10:12 sales.csv",
    "data/2024-03.json: Expecting ',' delimiter: line 12 column 5",
    "1 failed, 23 passed in 0.41s",
    " src/parse.py | 4 ++--",
    "[tool.pytest.ini_options]",
    'testpaths = ["tests"]',
    "Traceback (most recent call last):",
    "ImportError: cannot import name 'open_text' from 'utils.io'",
)
PROSE = (
    "Let me look at the failing test first.",
    "The error points at the parser, so I will read that function.",
    "An empty field comes back as None where the test expects an empty string.",
    "I will check how the callers use this value before changing it.",
    "That confirms it; the fix belongs in one place.",
    "Now I run the tests again to see that nothing else broke.",
    "The output shows the remaining rows; I will count the ones without a region.",
    "Next I need the file's header to know which column holds the region.",
)
# Both ways get every core: the benchmark measures serving alone, with nothing else to leave a core for.
ALL_CORES = f"0-{(os.cpu_count() or 1) - 1}"


@dataclass(frozen=True, slots=True)
class Turn:
    messages: tuple[dict[str, Any], ...]
    """The chat sent at this turn: system prompt, user task, then the session's history so far."""
    output_tokens: int
    """Exactly how many tokens the model generates at this turn (forced, see ``request_body``)."""


@dataclass(frozen=True, slots=True)
class Session:
    harness: str
    tools: tuple[dict[str, Any], ...]
    """The harness's tool list, as captured; sent with every turn."""
    turns: tuple[Turn, ...]

    @property
    def completion_tokens(self) -> int:
        return sum(turn.output_tokens for turn in self.turns)


def _with_text(message: dict[str, Any], text: str) -> dict[str, Any]:
    """``message`` with its text replaced, in the harness's own content shape (a string or text parts)."""
    content = message["content"]
    if isinstance(content, list):
        return {**message, "content": [{"type": "text", "text": text}]}
    return {**message, "content": text + ("\n" if content.endswith("\n") else "")}


def _tool_round(
    rng: random.Random, call: dict[str, Any], result: dict[str, Any], tokens: int
) -> list[dict[str, Any]]:
    """An assistant turn of about ``tokens`` tokens ending in a shell tool call, and the tool's result;
    shaped as the harness's captured call and result are (its tool name, its result format)."""
    call_id = f"call_{rng.getrandbits(32):08x}"
    words = max(1, round(tokens * WORDS_PER_TOKEN) - 12)  # less the tool call's own tokens
    text = " ".join(rng.choice(PROSE) for _ in range(words // 10 + 1))
    (captured_call,) = call["tool_calls"]
    function = {**captured_call["function"], "arguments": json.dumps({"command": rng.choice(COMMANDS)})}
    assistant = {
        **call,
        "content": text,
        "tool_calls": [{**captured_call, "id": call_id, "function": function}],
    }
    output = "\n".join(rng.choice(OUTPUT_LINES) for _ in range(rng.randint(3, 40)))
    try:
        structured = json.loads(result["content"])  # hermes wraps the output: {"output": .., "exit_code": ..}
    except ValueError:
        structured = None
    if isinstance(structured, dict) and "output" in structured:
        content = json.dumps({**structured, "output": output})
    else:
        content = output + "\n"
    return [assistant, {**result, "tool_call_id": call_id, "content": content}]


def agent_sessions(
    checkpoint: int,
    count: int,
    turns: tuple[int, int] = TURNS,
    output_tokens: tuple[int, int] = OUTPUT_TOKENS,
    seed: int = 0,
) -> tuple[Session, ...]:
    """The ``count`` sessions that evaluate checkpoint ``checkpoint``: the same for the same arguments,
    different for each checkpoint. Turn counts and output lengths are drawn uniformly from the ranges."""
    rng = random.Random(f"multi-lora/{seed}/{checkpoint}")  # a str seed is hashed stably across runs
    sessions = []
    for number in range(count):
        harness = HARNESSES[(checkpoint + number) % len(HARNESSES)]
        captured = harness_request(harness)
        system, user, call, result = captured["messages"]
        chat = [system, _with_text(user, rng.choice(TASKS))]
        session_turns = []
        length = rng.randint(*turns)
        for index in range(length):
            tokens = rng.randint(*output_tokens)
            session_turns.append(Turn(messages=tuple(chat), output_tokens=tokens))
            if index < length - 1:  # the last turn is the answer: nothing follows it
                chat += _tool_round(rng, call, result, tokens)
        sessions.append(Session(harness, tuple(captured["tools"]), tuple(session_turns)))
    return tuple(sessions)


def request_body(model: str, session: Session, turn: Turn) -> dict[str, Any]:
    """One chat-completions request that generates exactly ``turn.output_tokens`` tokens (vLLM's extra
    sampling parameters: no stop before ``min_tokens``, EOS ignored), greedily."""
    return {
        "model": model,
        "messages": list(turn.messages),
        "tools": list(session.tools),
        "max_tokens": turn.output_tokens,
        "min_tokens": turn.output_tokens,
        "ignore_eos": True,
        "temperature": 0.0,
    }


class Stopwatch:
    """Contiguous laps: each ``lap(phase)`` adds the time since the previous mark to ``phase``, so the laps
    sum to the wall time from the first mark to the last; only ``skip`` leaves time out, on purpose."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._mark = clock()
        self.phases_s: dict[str, float] = {}

    def lap(self, phase: str) -> None:
        now = self._clock()
        self.phases_s[phase] = self.phases_s.get(phase, 0.0) + now - self._mark
        self._mark = now

    def skip(self) -> None:
        self._mark = self._clock()


def compare(multi_s: dict[str, float], merged_s: dict[str, float]) -> dict[str, float]:
    """One repeat's figures from each way's phase times: end to end (every phase), the evaluation phase
    alone, both ratios (merged / multi-LoRA), and each way's phases."""
    multi_total, merged_total = sum(multi_s.values()), sum(merged_s.values())
    return {
        "multi_lora_s": multi_total,
        "merged_s": merged_total,
        "ratio": merged_total / multi_total,
        "eval_phase_multi_s": multi_s["eval"],
        "eval_phase_merged_s": merged_s["eval"],
        "eval_phase_ratio": merged_s["eval"] / multi_s["eval"],
        **{f"multi_{phase}_s": s for phase, s in multi_s.items() if phase != "eval"},
        **{f"merged_{phase}_s": s for phase, s in merged_s.items() if phase != "eval"},
    }


def summarize(repeats: Sequence[dict[str, float]], digits: int = 3) -> dict[str, Any]:
    """Each figure's median over the repeats, and its spread as ``<figure>_spread``: ``[min, max]``."""
    out: dict[str, Any] = {}
    for key in repeats[0]:
        values = [row[key] for row in repeats]
        out[key] = round(statistics.median(values), digits)
        out[f"{key}_spread"] = [round(min(values), digits), round(max(values), digits)]
    return out


class TokenCountMismatch(RuntimeError):
    """The ways did not generate the same tokens, so their times do not measure the same work."""


def check_same_tokens(counts: dict[str, int], expected: int) -> None:
    """Raise unless every way's reported completion tokens equal ``expected`` (the forced lengths' sum)."""
    if any(count != expected for count in counts.values()):
        reported = ", ".join(f"{way} {count}" for way, count in counts.items())
        raise TokenCountMismatch(
            f"completion tokens differ: expected {expected} each way (the forced output lengths), "
            f"the servers reported {reported}; the times would not compare the same work. Does this vLLM "
            "honour min_tokens and ignore_eos, and does every prompt plus output fit max_model_len?"
        )


def way_order(repeat: int) -> tuple[str, str]:
    """Which way runs first in repeat ``repeat``: they alternate, so neither is always first."""
    return ("multi", "merged") if repeat % 2 == 0 else ("merged", "multi")


def parse_range(text: str) -> tuple[int, int]:
    """``"3-6"`` -> (3, 6); ``"4"`` -> (4, 4)."""
    low, _, high = text.partition("-")
    try:
        bounds = (int(low), int(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give N or LOW-HIGH, e.g. 3-6") from None
    if not 1 <= bounds[0] <= bounds[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: need 1 <= LOW <= HIGH")
    return bounds


async def evaluate(url: str, work: list[tuple[str, Session]], concurrency: int) -> int:
    """Run every (model, session), turns in order within a session, at most ``concurrency`` requests in
    flight; return the completion tokens the server reported."""
    limit = asyncio.Semaphore(concurrency)
    timeout = httpx.Timeout(connect=10.0, read=1800.0, write=60.0, pool=60.0)
    async with httpx.AsyncClient(base_url=url, timeout=timeout) as client:

        async def run_session(model: str, session: Session) -> int:
            tokens = 0
            for turn in session.turns:
                async with limit:
                    response = await client.post("/chat/completions", json=request_body(model, session, turn))
                response.raise_for_status()
                tokens += response.json()["usage"]["completion_tokens"]
            return tokens

        return sum(await asyncio.gather(*(run_session(m, s) for m, s in work)))


def make_checkpoints(base: Path, out: Path, count: int, rank: int) -> list[Path]:
    return [
        random_lora_adapter(base, out / f"ckpt-{i}", rank=rank, seed=1000 + i, alpha=rank)
        for i in range(count)
    ]


def run_multi_lora(
    base: Path,
    checkpoints: list[Path],
    sessions: list[tuple[Session, ...]],
    rank: int,
    concurrency: int,
    work: Path,
    publishes: int,
) -> tuple[dict[str, float], int, dict[str, float] | None]:
    """The multi-LoRA way: its phase times, completion tokens, and the publish-under-load figures when
    ``publishes`` (measured between its sessions and its stop, outside its laps)."""
    watch = Stopwatch()
    server = VLLMServer(
        ServingConfig(
            model=str(base),
            max_lora_rank=rank,
            max_loras=len(checkpoints) + 2,
            cpu_threads_bind=ALL_CORES,
        ),
        str(work),
    )
    under_load = None
    try:
        server.start()
        watch.lap("start")
        names = [f"ckpt-v{i}" for i in range(len(checkpoints))]
        for name, path in zip(names, checkpoints, strict=True):
            server.publish(name, str(path))
        watch.lap("publish")
        pairs = [(name, s) for name, group in zip(names, sessions, strict=True) for s in group]
        tokens = asyncio.run(evaluate(server.url(), pairs, concurrency))
        watch.lap("eval")
        if publishes:
            first = sessions[0][0]
            under_load = publish_under_load(
                server, checkpoints[0], names[:3], publishes, 10.0, first.turns[0].messages
            )
            watch.skip()
    finally:
        server.stop()
    watch.lap("stop")
    return watch.phases_s, tokens, under_load


def run_merged(
    base: Path, checkpoints: list[Path], sessions: list[tuple[Session, ...]], concurrency: int, work: Path
) -> tuple[dict[str, float], int]:
    """The merged way: its phase times summed over the checkpoints, and its completion tokens."""
    watch = Stopwatch()
    tokens = 0
    for i, (path, group) in enumerate(zip(checkpoints, sessions, strict=True)):
        merged = merge_adapter(base, path, work / f"merged-{i}")
        watch.lap("merge")
        server = VLLMServer(
            ServingConfig(model=str(merged), enable_lora=False, cpu_threads_bind=ALL_CORES),
            str(work / f"server-{i}"),
        )
        try:
            server.start()
            watch.lap("start")
            tokens += asyncio.run(evaluate(server.url(), [("base", s) for s in group], concurrency))
            watch.lap("eval")
        finally:
            server.stop()
            shutil.rmtree(merged, ignore_errors=True)
        watch.lap("stop")
        print(f"  merged checkpoint {i + 1}/{len(checkpoints)} done", flush=True)
    return watch.phases_s, tokens


def publish_under_load(
    server: VLLMServer,
    adapter: Path,
    others: list[str],
    publishes: int,
    baseline_s: float,
    messages: Sequence[dict[str, Any]],
) -> dict[str, float]:
    """Latency of other adapters' requests with and without concurrent publishes, and publish latency."""
    url = server.url()
    stop = threading.Event()
    phase = {"name": "baseline"}
    samples: dict[str, list[float]] = {"baseline": [], "publish": []}

    def client(model: str) -> None:
        body = {"model": model, "messages": list(messages), "max_tokens": 8, "temperature": 0.0}
        with httpx.Client(base_url=url, timeout=120.0) as http:
            while not stop.is_set():
                current = phase["name"]
                started = time.perf_counter()
                http.post("/chat/completions", json=body).raise_for_status()
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
    parser.add_argument("--sessions", type=int, default=6, help="sessions per checkpoint")
    parser.add_argument("--turns", type=parse_range, default=TURNS, help="turns per session: N or LOW-HIGH")
    parser.add_argument(
        "--output-tokens", type=parse_range, default=OUTPUT_TOKENS, help="tokens per turn: N or LOW-HIGH"
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of both ways, alternating the order")
    parser.add_argument("--concurrency", type=int, default=48, help="requests in flight per server")
    parser.add_argument("--publishes", type=int, default=40, help="publish-under-load publishes (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--model", type=Path, default=None, help="base model folder (default: the tiny model)"
    )
    args = parser.parse_args()

    sessions = [
        agent_sessions(i, args.sessions, args.turns, args.output_tokens, args.seed)
        for i in range(args.checkpoints)
    ]
    expected = sum(s.completion_tokens for group in sessions for s in group)
    turns = sum(len(s.turns) for group in sessions for s in group)
    base = args.model or build_tiny_model()
    work = Path(tempfile.mkdtemp(prefix="ha-bench-multi-lora-"))
    repeats: list[dict[str, float]] = []
    reported: dict[str, list[int]] = {"multi": [], "merged": []}
    under_load = None
    try:
        checkpoints = make_checkpoints(base, work, args.checkpoints, args.rank)
        print(
            f"{args.checkpoints} checkpoints (rank {args.rank}) x {args.sessions} sessions: {turns} turns, "
            f"{expected} forced completion tokens per way; base {base.name}",
            flush=True,
        )
        for repeat in range(args.repeats):
            phases: dict[str, dict[str, float]] = {}
            for way in way_order(repeat):
                place = work / f"r{repeat}-{way}"
                if way == "multi":
                    publishes = args.publishes if under_load is None else 0
                    phases[way], tokens, figures = run_multi_lora(
                        base, checkpoints, sessions, args.rank, args.concurrency, place, publishes
                    )
                    under_load = under_load or figures
                else:
                    phases[way], tokens = run_merged(base, checkpoints, sessions, args.concurrency, place)
                reported[way].append(tokens)
                laps = " + ".join(f"{phase} {s:.1f}" for phase, s in phases[way].items())
                print(f"repeat {repeat + 1} {way}: {sum(phases[way].values()):.1f} s = {laps}", flush=True)
            check_same_tokens({w: reported[w][-1] for w in ("multi", "merged")}, expected)
            repeats.append(compare(phases["multi"], phases["merged"]))
    except TokenCountMismatch as exc:
        sys.exit(f"multi_lora: {exc}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    figures = summarize(repeats)
    print(
        f"merged / multi-LoRA: end to end {figures['ratio']:.2f} (spread {figures['ratio_spread']}), "
        f"evaluation phase {figures['eval_phase_ratio']:.2f} (spread {figures['eval_phase_ratio_spread']}); "
        f"medians of {args.repeats}"
    )
    if under_load:
        print(
            f"publish p50 {under_load['publish_p50_ms']:.1f} ms, p99 {under_load['publish_p99_ms']:.1f} ms; "
            f"other adapters' request p99 {under_load['others_p99_ms_during_publish']:.1f} ms during "
            f"publishes vs {under_load['others_p99_ms_baseline']:.1f} ms baseline"
        )
    print(
        json.dumps(
            {
                "checkpoints": args.checkpoints,
                "sessions_per_checkpoint": args.sessions,
                "turns": turns,
                "repeats": args.repeats,
                "completion_tokens": expected,
                "completion_tokens_multi": reported["multi"],
                "completion_tokens_merged": reported["merged"],
                **figures,
                **{k: round(v, 2) for k, v in (under_load or {}).items()},
            }
        )
    )


if __name__ == "__main__":
    main()
