"""The rollout pool of one trainer: keeps at most ``max_sessions`` sessions in flight, in groups of
``group_size`` rollouts of one task, and queues a group for training only when all of it is scored.

``RolloutPool`` implements TRL's ``RolloutWorkerProtocol`` (``rollout_buffer``, ``metrics_queue``, ``start``,
``stop``, ``update_model_version``, ``check_health``), so ``AsyncGRPOTrainer`` drains it like its own worker.
Sessions run through a ``SessionRunner`` (threads around a ``RolloutSession`` on one machine, Ray rollout
actors on a cluster). Group bookkeeping, retries, advantages and the off-policy window are
``actors.grpo``'s plain logic; this class is the loop around them. Every sample carries the version its group
started at, so TRL's own staleness check agrees with ours.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from actors.errors import RolloutsFailingError
from actors.grpo.advantages import row_advantage
from actors.grpo.backoff import Backoff
from actors.grpo.groups import Attempt, CompletedGroup, GroupCollector, ScoredRollout
from actors.metrics import RunMetrics
from actors.pool_settings import PoolSettings
from actors.rollout import RolloutOutcome, RolloutRequest, RolloutSetup

if TYPE_CHECKING:
    from environments.core.types import Task

log = logging.getLogger("actors.rollout_pool")


SESSION_SLACK_S = 120.0
"""Time a session takes beyond its task's agent and verifier limits: sandboxes, harness start, retries."""


def session_deadline(limits: Any) -> float:
    """Seconds one session of a task with ``limits`` may run before the pool counts it as hung."""
    return limits.agent_timeout_s + limits.verify_timeout_s + SESSION_SLACK_S


def stall_problem(now: float, last_progress: float, stale_after_s: float, deadlines: Iterable[float]) -> str:
    """Why the pool counts as stalled ("" if it does not): no session has ended for ``stale_after_s``
    and none in flight is still within its own time (``deadlines``, monotonic). Slow sessions within
    their task's limits are not a stall: a small model on CPU can take minutes a session."""
    quiet_s = now - last_progress
    if quiet_s <= stale_after_s:
        return ""
    if any(deadline > now for deadline in deadlines):
        return ""
    return f"made no progress in {quiet_s:.0f}s and no session in flight is within its time limit"


class SessionRunner(Protocol):
    """Runs rollouts somewhere; ``submit`` returns at once."""

    def submit(self, request: RolloutRequest) -> Future[RolloutOutcome]: ...

    def shutdown(self) -> None: ...


class ThreadSessions:
    """Sessions on this machine: ``workers`` threads, each calling ``run`` (a ``RolloutSession.run``)."""

    def __init__(self, run: Callable[[RolloutRequest], RolloutOutcome], workers: int) -> None:
        self._run = run
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rollout")

    def submit(self, request: RolloutRequest) -> Future[RolloutOutcome]:
        return self._pool.submit(self._run, request)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class RaySessions:
    """Sessions in Ray rollout actors, one session at a time each. ``make_session`` builds the session
    object inside each actor (it must be picklable: a class or a ``functools.partial``). A dead actor's
    session fails (the pool retries it) and the actor is replaced, in the same placement-group bundle,
    before its slot is used again. With ``placement_group``, actor ``i`` runs in bundle ``i``."""

    def __init__(
        self,
        make_session: Callable[[], Any],
        actors: int,
        resources: dict[str, float],
        placement_group: Any = None,
    ) -> None:
        from actors.placement import make_actor

        def spawn(slot: int) -> Any:
            actor = make_actor(
                _RolloutActor,
                make_session,
                resources=resources,
                placement_group=placement_group,
                bundle_index=slot if placement_group is not None else 0,
            )
            self._slot[id(actor)] = slot
            return actor

        self._slot: dict[int, int] = {}
        self._spawn = spawn
        self._idle = [spawn(slot) for slot in range(actors)]
        self._lock = threading.Lock()
        self._returned_actor = threading.Condition(self._lock)
        self._busy: dict[int, Any] = {}
        self.replaced = 0

    def submit(self, request: RolloutRequest) -> Future[RolloutOutcome]:
        with self._returned_actor:  # a settled future's actor may still be on its way back: wait for it
            if not self._returned_actor.wait_for(lambda: self._idle, timeout=30):
                raise RuntimeError("RaySessions: more sessions submitted than actors (max_sessions > actors)")
            actor = self._idle.pop()
        future = actor.run.remote(request).future()
        with self._lock:
            self._busy[id(future)] = actor
        future.add_done_callback(lambda done: self._returned(actor, done))
        return future

    def _returned(self, actor: Any, done: Future) -> None:
        if isinstance(done.exception(), _ACTOR_DEATH):
            actor = self._spawn(self._slot.pop(id(actor)))
            self.replaced += 1
        with self._returned_actor:
            self._busy.pop(id(done), None)
            self._idle.append(actor)
            self._returned_actor.notify()

    def busy_actors(self) -> list[Any]:
        """Actors running a session now (for fault tests and the dashboard)."""
        with self._lock:
            return list(self._busy.values())

    def actors(self) -> list[Any]:
        with self._lock:
            return [*self._idle, *self._busy.values()]

    def shutdown(self) -> None:
        import ray

        for actor in self.actors():
            ray.kill(actor)


def session_runner(
    setup: RolloutSetup, harness: str, root: str, slots: int, placement_group: Any = None
) -> SessionRunner:
    """Where ``slots`` sessions of ``harness`` run, as ``setup`` says: Ray rollout actors (one per slot,
    in the bundles of ``placement_group`` when given) or threads in this process."""
    import functools

    from actors.rollout import make_rollout_session

    make_session = functools.partial(make_rollout_session, setup, harness, root)
    if setup.rollouts.actors:
        return RaySessions(make_session, slots, {"CPU": setup.rollouts.cpus}, placement_group=placement_group)
    return ThreadSessions(make_session().run, slots)


class _RolloutActor:
    """The rollout actor: holds one session object and runs one rollout at a time."""

    def __init__(self, make_session: Callable[[], Any]) -> None:
        self.session = make_session()

    def run(self, request: RolloutRequest) -> RolloutOutcome:
        return self.session.run(request)


def _actor_death_errors() -> tuple[type[BaseException], ...]:
    try:
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
    except ImportError:  # pragma: no cover - Ray is a dependency
        return ()
    return (ActorDiedError, ActorUnavailableError, RayActorError)


def failing_problem(failures_in_a_row: int, limit: int, latest: str) -> str:
    """Why the pool counts as unable to run sessions ("" if it does not): the last ``limit`` attempts all
    failed before they were scored, none scored in between (0: never). Failures count as progress to the
    stall check, so without this a harness that cannot start here retries, backs off and drops groups for
    as long as the run lasts, the console silent."""
    if not limit or failures_in_a_row < limit:
        return ""
    return (
        f"the last {failures_in_a_row} rollouts all failed before they were scored (latest: {latest}): the "
        "harness or its sandbox cannot run here; the log's 'rollout ... failed' lines say why, and "
        "scripts/harness-deps.sh installs the harnesses"
    )


_ACTOR_DEATH = _actor_death_errors()


@dataclass(frozen=True, slots=True)
class PoolConfig:
    harness: str
    groups: PoolSettings = PoolSettings()
    """Group size, staleness window, queue bound and row weighting: a job's ``pool`` section, whole."""
    max_sessions: int = 48
    max_attempts: int = 3
    backoff: Backoff = Backoff()
    """After failures in a row, retries and new groups wait (doubling), so failures cannot storm."""
    max_failures_in_a_row: int = 32
    """This many failed attempts with none scored in between stop the run (``failing_problem``; 0: never):
    eight groups of 4 with every attempt failing, minutes at the backoff's pace."""
    synchronous: bool = False
    """The baseline schedule (``benchmarks/async_vs_sync.py``): one batch of ``max_sessions // group_size``
    groups per adapter version, started only when the previous batch is done and a new version is out,
    and queued for training only when all of it is scored."""

    def __post_init__(self) -> None:
        if self.max_sessions < self.groups.group_size:
            raise ValueError(
                f"pool: max_sessions ({self.max_sessions}) must be >= group_size ({self.groups.group_size})"
            )
        if self.max_failures_in_a_row < 0:
            raise ValueError(
                f"pool: max_failures_in_a_row ({self.max_failures_in_a_row}) must be >= 0 (0: never)"
            )


def adapter_name(harness: str, version: int) -> str:
    """``<harness>-v<N>``: the name each trainer publishes its versions under."""
    return f"{harness}-v{version}"


class RolloutPool:
    def __init__(self, cfg: PoolConfig, tasks: Iterator[Task], sessions: SessionRunner) -> None:
        self.cfg = cfg
        self.tasks = tasks
        self.sessions = sessions
        self.collector = GroupCollector(cfg.groups.staleness(), cfg.max_attempts)
        self.rollout_buffer: queue.Queue = queue.Queue()
        self.metrics_queue: queue.Queue = queue.Queue()
        self._version = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._last_progress = time.monotonic()
        self._group_ids = itertools.count()
        self._requests: dict[Future, RolloutRequest] = {}
        self._started_at: dict[str, float] = {}
        self._deadlines: dict[str, float] = {}
        """Monotonic time by which each in-flight session must have ended (``session_deadline``)."""
        self._retries: list[tuple[float, RolloutRequest]] = []
        """Failed attempts waiting out the backoff: (monotonic start time, request)."""
        self._failures_in_a_row = 0
        self._latest_failure = ""
        self._quiet_until = 0.0
        """No new group starts before this (monotonic), after a failure."""
        self.session_spans: deque[tuple[float, float]] = deque(maxlen=4096)
        """(start, end) wall-clock seconds of the latest scored sessions (lined up with publishes)."""
        self.metrics = RunMetrics(cfg.harness)
        self._inflight_versions: tuple[int, ...] = ()
        """Start versions of open groups, replaced whole by the loop (read by the trainer's thread)."""
        self._batch_version: int | None = None
        self._batch: list[CompletedGroup] = []
        """Synchronous schedule only: the batch's scored groups, queued together when it is done."""
        self._pushed: dict[str, float] = {}
        """The counters as last pushed to ``metrics_queue`` (each push carries their change)."""
        self.health: deque[tuple[int, bool, bool, int]] = deque()
        """(version, passed, blocked, tool calls) of each scored rollout, for the collapse watch to drain."""

    # -- RolloutWorkerProtocol ------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"pool-{self.cfg.harness}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.sessions.shutdown()

    def update_model_version(self, model_version: int) -> None:
        with self._lock:
            self._version = model_version

    def check_health(self, stale_after_s: float) -> None:
        if self._error is not None:
            raise RuntimeError(f"rollout pool for {self.cfg.harness} crashed: {self._error!r}")
        problem = stall_problem(
            time.monotonic(), self._last_progress, stale_after_s, self._deadlines.values()
        )
        if problem:
            raise RuntimeError(f"rollout pool for {self.cfg.harness} {problem}")
        failing = failing_problem(
            self._failures_in_a_row, self.cfg.max_failures_in_a_row, self._latest_failure
        )
        if failing:
            raise RolloutsFailingError(f"rollout pool for {self.cfg.harness}: {failing}")

    # -- the loop -------------------------------------------------------------------------------
    def may_publish(self, held_s: float) -> bool:
        """Whether the trainer may publish its next version now (``StalenessPolicy.may_publish``)."""
        return self.collector.policy.may_publish(self._inflight_versions, self.version, held_s)

    def drain_health(self) -> list[tuple[int, bool, bool, int]]:
        """The (version, passed, blocked, tool calls) of rollouts scored since the last call, oldest first."""
        drained = []
        while self.health:
            drained.append(self.health.popleft())
        return drained

    def retract(self, first: int, last: int) -> int:
        """A rollback: versions ``first``..``last`` are withdrawn. Their rows waiting for the trainer are
        taken out (returns how many) and their groups still running are not trained when they finish."""
        self.collector.retract(first, last)
        kept, removed = [], 0
        while True:
            try:
                sample = self.rollout_buffer.get_nowait()
            except queue.Empty:
                break
            if first <= sample.model_version <= last:
                removed += 1
            else:
                kept.append(sample)
        for sample in kept:
            self.rollout_buffer.put(sample)
        return removed

    @property
    def version(self) -> int:
        with self._lock:
            return self._version

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self._start_due_retries()
                self._admit()
                if not self._requests:
                    if self._stop.wait(0.1):
                        break
                    continue
                done, _ = wait(list(self._requests), timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    self._settle(future)
                if self.cfg.synchronous and not self._requests and not self._retries:
                    for group in self._batch:  # the batch is done: all of it goes to the trainer at once
                        self._enqueue(group)
                    self._batch = []
                self._inflight_versions = tuple(self.collector.inflight_start_versions())
        except BaseException as exc:  # surfaced to the trainer through check_health
            log.exception("rollout pool loop crashed")
            self._error = exc

    def _admit(self) -> None:
        """Start groups while there is room and the off-policy window allows it (synchronous schedule:
        a whole batch once per version, when the last one is done)."""
        if time.monotonic() < self._quiet_until:
            return
        if self.cfg.synchronous:
            if self._requests or self._retries or self._batch or self._batch_version == self.version:
                return
            self._batch_version = self.version
        while len(self._requests) + len(self._retries) + self.cfg.groups.group_size <= self.cfg.max_sessions:
            if (
                self.cfg.groups.max_queued_rows
                and self.rollout_buffer.qsize() >= self.cfg.groups.max_queued_rows
            ):
                return
            version = self.version
            if not self.collector.policy.may_admit(self.collector.inflight_start_versions(), version):
                return
            task = next(self.tasks, None)
            if task is None:
                return
            group_id = f"{self.cfg.harness}-g{next(self._group_ids)}"
            self.collector.open(group_id, task.id, version, self.cfg.groups.group_size)
            for i in range(self.cfg.groups.group_size):
                request = RolloutRequest(
                    f"{group_id}-r{i}",
                    group_id,
                    task,
                    self.cfg.harness,
                    adapter_name(self.cfg.harness, version),
                    version,
                )
                self._start(request)
            self._inflight_versions = tuple(self.collector.inflight_start_versions())

    def _start_due_retries(self) -> None:
        now = time.monotonic()
        due = [request for at, request in self._retries if at <= now]
        self._retries = [(at, request) for at, request in self._retries if at > now]
        for request in due:
            self._start(request)

    def _start(self, request: RolloutRequest) -> None:
        self.collector.started(request.group_id, request.rollout_id)
        self._started_at[request.rollout_id] = time.time()
        self._deadlines[request.rollout_id] = time.monotonic() + session_deadline(request.task.limits)
        self._requests[self.sessions.submit(request)] = request
        self.metrics.in_flight(len(self._requests))

    def _settle(self, future: Future) -> None:
        request = self._requests.pop(future)
        started_at = self._started_at.pop(request.rollout_id, time.time())
        self._deadlines.pop(request.rollout_id, None)
        self._last_progress = time.monotonic()
        try:
            outcome = future.result()
        except BaseException as exc:  # the actor or thread died: same as a session failure
            outcome = RolloutOutcome(
                request.rollout_id, request.group_id, failure=f"{type(exc).__name__}: {exc}"
            )
        if outcome.failure is not None:
            decision = self.collector.failed(request.group_id, request.rollout_id)
            log.warning("rollout %s failed (%s): %s", request.rollout_id, decision.value, outcome.failure)
            self.metrics.outcome("retried" if decision is Attempt.RETRY else "dropped")
            self._failures_in_a_row += 1
            self._latest_failure = outcome.failure
            wait_s = self.cfg.backoff.delay_s(self._failures_in_a_row)
            self._quiet_until = time.monotonic() + wait_s
            if decision is Attempt.RETRY:
                self._retries.append((time.monotonic() + wait_s, request))
            else:  # DROPPED: the group is gone; its other sessions are counted and ignored on arrival,
                # and its members waiting to retry are not started again (their group is not open)
                self._retries = [(at, r) for at, r in self._retries if r.group_id != request.group_id]
            return
        self._failures_in_a_row = 0
        scored = ScoredRollout(
            outcome.rollout_id,
            outcome.group_id,
            outcome.reward,
            outcome.tool_calls,
            outcome.blocked,
            outcome.rows,
            outcome.tampered,
            len(outcome.would_block_reasons),
            bool(outcome.session_error),
        )
        self.session_spans.append((started_at, time.time()))
        passed = outcome.verdict == "pass" and not outcome.tampered and not outcome.blocked
        self.health.append((request.start_version, passed, outcome.blocked, outcome.tool_calls))
        stale_before = self.collector.counters.groups_stale
        equal_before = self.collector.counters.groups_equal
        group = self.collector.finished(scored, self.version)
        self._push_metrics(outcome, passed)
        self.metrics.outcome("blocked" if outcome.blocked else "finished")
        if outcome.tampered:
            self.metrics.outcome("tampered")
        if outcome.session_error:
            log.warning("rollout %s scored 0 (not retried): %s", outcome.rollout_id, outcome.session_error)
            self.metrics.outcome("session_error")
        if outcome.would_block_reasons:
            self.metrics.outcome("would_block")
        self.metrics.scored(outcome.reward, outcome.tool_calls)
        self.metrics.in_flight(len(self._requests))
        if self.collector.counters.groups_stale > stale_before:
            self.metrics.outcome("stale_group")
        if self.collector.counters.groups_equal > equal_before:
            self.metrics.outcome("equal_group")  # all rewards equal: no gradient from this group
        if group is not None:
            self.metrics.outcome("trained_group")
            self.metrics.lag(self.version - group.start_version)
            if self.cfg.synchronous:
                self._batch.append(group)
            else:
                self._enqueue(group)

    def _enqueue(self, group: CompletedGroup) -> None:
        from trl.experimental.async_grpo.async_rollout_worker import RolloutSample

        group_number = int(group.group_id.rsplit("-g", 1)[1])
        now = time.time()
        for rollout, advantage in zip(group.rollouts, group.advantages, strict=True):
            for row in rollout.rows:
                self.rollout_buffer.put(
                    RolloutSample(
                        prompt=[],
                        completion=[],
                        input_ids=np.asarray(row.input_ids, dtype=np.int64),
                        completion_mask=np.asarray(row.completion_mask, dtype=np.int64),
                        old_log_probs=np.asarray(row.old_logprobs, dtype=np.float32),
                        advantage=row_advantage(
                            float(advantage),
                            int(sum(row.completion_mask)),
                            self.cfg.groups.row_weighting,
                            len(rollout.rows),
                        ),
                        model_version=group.start_version,
                        group_id=group_number,
                        metrics={"reward": rollout.reward, "tool_calls": float(rollout.tool_calls)},
                        enqueued_at=now,
                    )
                )

    def _push_metrics(self, outcome: RolloutOutcome, passed: bool) -> None:
        """One scored rollout's figures for the trainer's log. TRL averages gauges over a step but sums every
        key with ``total`` in its name, so the counters go out as their change since the last push: a
        step's log holds what happened in that step."""
        c = self.collector.counters
        counters = {
            "rollout/blocked_total": float(c.blocked),
            "rollout/would_blocked_total": float(c.would_blocked),
            "rollout/tampered_total": float(c.tampered),
            "rollout/session_error_total": float(c.session_errors),
            "rollout/started_total": float(c.started),
            "rollout/finished_total": float(c.finished),
            "rollout/retried_total": float(c.retried),
            "rollout/dropped_total": float(c.dropped),
            "rollout/groups_stale_total": float(c.groups_stale),
            "rollout/groups_equal_total": float(c.groups_equal),
        }
        deltas = {key: value - self._pushed.get(key, 0.0) for key, value in counters.items()}
        self._pushed = counters
        self.metrics_queue.put(
            {
                "rollout/reward": outcome.reward,
                "rollout/tool_calls": float(outcome.tool_calls),
                "rollout/passed": float(passed),
                "rollout/blocked": float(outcome.blocked),
                "rollout/would_block": float(len(outcome.would_block_reasons)),
                "rollout/tampered": float(outcome.tampered),
                "rollout/session_error": float(bool(outcome.session_error)),
                "rollout/in_flight": float(len(self._requests)),
                **deltas,
            }
        )
