"""Asynchronous GRPO against a synchronous baseline, on the same long-tailed workload (a simulation).

Each trainer has 48 session slots and groups of 8 rollouts of one task. Session times are long-tailed
(lognormal: median ``--median-s``, sigma ``--sigma``: a few sessions run ten times the median), and an
optimizer step takes ``--step-s``. Both schedules run the project's own bookkeeping
(``actors.grpo.GroupCollector`` with ``StalenessPolicy``: a group whose start is more than 4 versions old
is discarded, admission stops while a group is at the window's edge).

- synchronous: start 6 groups (48 sessions), wait for every one to finish, step, repeat; the step
  waits for the slowest session of the batch.
- asynchronous: keep 48 sessions in flight; a group joins the queue when its 8 are scored; the trainer
  steps whenever at least ``--groups-per-step`` groups wait (it takes all that wait), publishing a new
  version per step, while sessions keep running; a step that would make an in-flight group stale is
  held up to ``--hold-s`` (``--hold-s 0`` shows the discard rate without that gate).

Packing: each trained rollout is one sample of lognormal length (median 12K tokens), packed first-fit
into 4 micro-batches of 65,536 tokens per step; ``pack_fill`` is used / offered capacity over the run.
Three trainers do not interact here (the server is not modelled), so the figures are per trainer.

Run: ``python benchmarks/async_vs_sync.py [--hours H] [--seeds N]``; the figures are medians over the
seeds; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.grpo import GroupCollector, ScoredRollout, StalenessPolicy  # noqa: E402

SLOTS, GROUP = 48, 8
BUDGET, MICRO_BATCHES = 65536, 4


def session_s(rng: random.Random, median_s: float, sigma: float) -> float:
    return median_s * rng.lognormvariate(0.0, sigma)


def sample_tokens(rng: random.Random) -> int:
    return int(12000 * rng.lognormvariate(0.0, 0.6))


def pack(lengths: list[int]) -> tuple[int, int, int]:
    """First-fit into micro-batches of BUDGET; returns (used tokens, offered capacity, dropped samples)."""
    bins: list[int] = []
    dropped = 0
    for n in sorted(lengths, reverse=True):
        if n > BUDGET:
            dropped += 1
            continue
        for i, used in enumerate(bins):
            if used + n <= BUDGET:
                bins[i] += n
                break
        else:
            bins.append(n)
    steps = max(1, -(-len(bins) // MICRO_BATCHES))
    return sum(bins), steps * MICRO_BATCHES * BUDGET, dropped


def synchronous(hours: float, args, rng: random.Random) -> dict:
    clock, groups, used, offered = 0.0, 0, 0, 0
    while True:
        batch = [session_s(rng, args.median_s, args.sigma) for _ in range(SLOTS)]
        finish = clock + max(batch) + args.step_s
        if finish > hours * 3600:
            break
        clock = finish
        groups += SLOTS // GROUP
        u, o, _ = pack([sample_tokens(rng) for _ in range(SLOTS)])
        used, offered = used + u, offered + o
    return {"groups": groups, "stale": 0, "used": used, "offered": offered}


def asynchronous(hours: float, args, rng: random.Random) -> dict:
    ledger = GroupCollector(StalenessPolicy(max_staleness=4, hold_s=args.hold_s), max_attempts=1)
    held_since: float | None = None
    events: list[tuple[float, int, str, str]] = []  # (time, seq, rollout id, group id)
    seq = itertools.count()
    ids = itertools.count()
    version, clock, busy_until = 0, 0.0, 0.0
    waiting: list = []
    in_flight = 0
    used = offered = 0

    def admit(now: float) -> None:
        nonlocal in_flight
        while in_flight + GROUP <= SLOTS and ledger.policy.may_admit(
            ledger.inflight_start_versions(), version
        ):
            group = f"g{next(ids)}"
            ledger.open(group, group, version, GROUP)
            for i in range(GROUP):
                ledger.started(group, f"{group}-{i}")
                heapq.heappush(
                    events,
                    (now + session_s(rng, args.median_s, args.sigma), next(seq), f"{group}-{i}", group),
                )
                in_flight += 1

    admit(0.0)
    while events:
        clock, _, rollout, group = heapq.heappop(events)
        if clock > hours * 3600:
            break
        in_flight -= 1
        done = ledger.finished(ScoredRollout(rollout, group, rng.random()), version)
        if done is not None:
            waiting.append(done)
        if len(waiting) >= args.groups_per_step and clock >= busy_until:
            held_since = clock if held_since is None else held_since
            if not ledger.policy.may_publish(ledger.inflight_start_versions(), version, clock - held_since):
                admit(clock)
                continue
            held_since = None
            u, o, _ = pack([sample_tokens(rng) for g in waiting for _ in g.rollouts])
            used, offered = used + u, offered + o
            waiting = []
            busy_until = clock + args.step_s
            version += 1  # published at the end of the step; modelled as at its start (conservative)
        admit(clock)
    c = ledger.counters
    return {
        "groups": c.groups_trained - len(waiting),
        "stale": c.groups_stale,
        "used": used,
        "offered": offered,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--median-s", type=float, default=90.0)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--step-s", type=float, default=30.0)
    parser.add_argument("--groups-per-step", type=int, default=2)
    parser.add_argument("--hold-s", type=float, default=600.0, help="longest publish hold (0: never hold)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--seeds", type=int, default=5, help="runs with consecutive seeds; medians are reported"
    )
    args = parser.parse_args()
    runs = []
    for seed in range(args.seed, args.seed + args.seeds):
        sync = synchronous(args.hours, args, random.Random(seed))
        asyn = asynchronous(args.hours, args, random.Random(seed))
        complete = asyn["groups"] + asyn["stale"]
        runs.append(
            {
                "speedup": asyn["groups"] / sync["groups"],
                "stale_discard_rate": asyn["stale"] / complete if complete else 0.0,
                "pack_fill": asyn["used"] / asyn["offered"] if asyn["offered"] else 0.0,
                "groups_per_hour_async": asyn["groups"] / args.hours,
                "groups_per_hour_sync": sync["groups"] / args.hours,
            }
        )
    figures = {key: round(statistics.median(r[key] for r in runs), 4) for key in runs[0]}
    per_hour = {"sync": figures["groups_per_hour_sync"], "async": figures["groups_per_hour_async"]}
    print(f"{'schedule':>9} {'groups/h':>9}   (48 slots, groups of 8, session median {args.median_s:.0f} s, "
          f"sigma {args.sigma}, step {args.step_s:.0f} s)")  # fmt: skip
    print(f"{'sync':>9} {per_hour['sync']:>9.1f}")
    print(f"{'async':>9} {per_hour['async']:>9.1f}   stale discards {figures['stale_discard_rate']:.2%}, "
          f"pack fill {figures['pack_fill']:.2f}")  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
