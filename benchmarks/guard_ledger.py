"""What the shared ledger costs a guard replica per turn, beside the book kept in the replica's process.

A served turn touches the book twice: ``view`` before it goes upstream (adapter, turn count, protected
paths) and ``commit`` after (the turn's tokens, the conversation, the session's facts). With several
replicas both are Ray actor calls to ``serve.book.RolloutLedger``; with one replica they are method calls
(the anchor). The turn here carries a realistic load: 2,000 prompt and 300 completion token ids with
logprobs, a 40-message conversation of ~40 KB, and the facts of a session that has seen those messages.
``--concurrency`` rollouts run their turns at once, as a busy shard's replicas do.

Run: ``python benchmarks/guard_ledger.py [--turns N] [--concurrency C]``. The last line is one JSON
object: ``local_turn_p50_ms``, ``ledger_turn_p50_ms``, ``ledger_turn_p99_ms``, ``ledger_turns_per_s``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from serve.book import LedgerBook, LocalBook, RolloutBook, RolloutLedger  # noqa: E402
from serve.engine import GuardSession  # noqa: E402
from serve.mode import GuardMode  # noqa: E402
from serve.record import TurnRecord  # noqa: E402

TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("bash", "read")
]


def _load() -> tuple[TurnRecord, tuple, tuple]:
    messages = [{"role": "system", "content": "Working directory: /work\n" + "You are an agent. " * 40}]
    for i in range(39):
        text = f"step {i}: ran `python -m pytest tests/test_{i}.py` see https://docs.example.org/{i} " * 10
        messages.append({"role": "user" if i % 2 else "assistant", "content": text})
    session = GuardSession(TOOLS)
    session.sync(messages)
    turn = TurnRecord(
        index=0,
        prompt_ids=tuple(range(2000)),
        completion_ids=tuple(range(300)),
        logprobs=tuple(-0.5 for _ in range(300)),
        tool_calls=1,
    )
    return turn, tuple(messages), (("bash", "read"), session.facts)


async def _turns(book, rollout: str, turns: int, load) -> list[float]:
    turn, conversation, facts = load
    times = []
    for _ in range(turns):
        start = time.perf_counter()
        await book.call("view", rollout, 0.0)
        await book.call("commit", rollout, turn, conversation, "k", True, facts)
        times.append((time.perf_counter() - start) * 1000)
    return times


async def _run(book, turns: int, concurrency: int, load) -> tuple[list[float], float]:
    for c in range(concurrency):
        await book.call("open", "pi", "pi-v1", (), f"r{c}", (), 0.0)
    start = time.perf_counter()
    results = await asyncio.gather(*(_turns(book, f"r{c}", turns, load) for c in range(concurrency)))
    wall = time.perf_counter() - start
    for c in range(concurrency):
        await book.call("close", f"r{c}")
    return [t for r in results for t in r], wall


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100, help="turns per rollout")
    parser.add_argument("--concurrency", type=int, default=16, help="rollouts at once")
    args = parser.parse_args(argv)
    import ray

    from actors.placement import make_actor

    load = _load()
    local, _ = asyncio.run(_run(LocalBook(RolloutBook(4096, GuardMode.ENFORCE)), args.turns, 1, load))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        handle = make_actor(RolloutLedger, 4096, "enforce", resources={"CPU": 0})
        ledger_book = LedgerBook(handle)
        asyncio.run(_run(ledger_book, 5, 1, load))  # warm the actor
        one, _ = asyncio.run(_run(ledger_book, args.turns, 1, load))
        many, wall = asyncio.run(_run(ledger_book, args.turns, args.concurrency, load))
    finally:
        ray.shutdown()

    def q(values: list[float], p: float) -> float:
        return round(statistics.quantiles(values, n=100)[int(p) - 1], 2)

    print(f"local book (one replica, the anchor): turn p50 {statistics.median(local):.3f} ms")
    print(f"ledger, one rollout at a time: turn p50 {statistics.median(one):.2f} ms, p99 {q(one, 99)} ms")
    print(
        f"ledger, {args.concurrency} rollouts at once: turn p50 {statistics.median(many):.2f} ms, "
        f"p99 {q(many, 99)} ms, {len(many) / wall:.0f} turns/s"
    )
    figures = {
        "local_turn_p50_ms": round(statistics.median(local), 3),
        "ledger_turn_p50_ms": round(statistics.median(one), 2),
        "ledger_turn_p99_ms": q(one, 99),
        "ledger_concurrent_turn_p50_ms": round(statistics.median(many), 2),
        "ledger_concurrent_turn_p99_ms": q(many, 99),
        "ledger_turns_per_s": round(len(many) / wall),
        "concurrency": args.concurrency,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
