"""The rollout pool's loop with scripted sessions: groups are queued only when complete, failures are
retried a bounded number of times, counters add up, the session cap and the off-policy window hold."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import replace

import pytest

from actors.errors import RolloutsFailingError
from actors.grpo import TrainingRow
from actors.grpo.backoff import Backoff
from actors.pool_settings import PoolSettings
from actors.rollout import RolloutOutcome, RolloutRequest
from actors.rollout_pool import (
    PoolConfig,
    RolloutPool,
    adapter_name,
    failing_problem,
    session_deadline,
    stall_problem,
)
from environments.core.types import AnswerOracle, Kind, Reference, Source, Task


def task(i: int) -> Task:
    return Task(
        id=f"t{i}",
        source=Source.DATA,
        kind=Kind.ANALYSIS,
        instruction="Answer.",
        workspace={"a.txt": b"1"},
        hidden={},
        oracle=AnswerOracle(expected=1.0),
        reference=Reference(files={"answer.txt": b"1"}),
    )


class ScriptedSessions:
    """Answers each request with ``script(request, attempt)``; records the peak number in flight."""

    def __init__(self, script, delay_s: float = 0.01) -> None:
        self.script = script
        self.delay_s = delay_s
        self.attempts: dict[str, int] = {}
        self.requests: list[RolloutRequest] = []
        self.in_flight = 0
        self.peak = 0
        self.lock = threading.Lock()

    def submit(self, request: RolloutRequest) -> Future:
        future: Future = Future()
        with self.lock:
            self.attempts[request.rollout_id] = self.attempts.get(request.rollout_id, 0) + 1
            attempt = self.attempts[request.rollout_id]
            self.requests.append(request)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

        def finish() -> None:
            time.sleep(self.delay_s)
            with self.lock:
                self.in_flight -= 1
            try:
                future.set_result(self.script(request, attempt))
            except Exception as exc:  # an actor that died
                future.set_exception(exc)

        threading.Thread(target=finish, daemon=True).start()
        return future

    def shutdown(self) -> None:
        pass


def scored(request: RolloutRequest, reward: float) -> RolloutOutcome:
    row = TrainingRow((1, 2, 3), (0, 1, 1), (0.0, -0.5, -0.25))
    return RolloutOutcome(request.rollout_id, request.group_id, reward=reward, tool_calls=1, rows=(row,))


def drain(pool: RolloutPool, count: int, timeout_s: float = 120.0) -> list:
    samples, deadline = [], time.monotonic() + timeout_s
    while len(samples) < count and time.monotonic() < deadline:
        try:
            samples.append(pool.rollout_buffer.get(timeout=0.2))
        except Exception:
            pool.check_health(60)
    return samples


@contextlib.contextmanager
def running(cfg: PoolConfig, sessions) -> Iterator[RolloutPool]:
    """A started pool over an endless task stream, stopped when the block ends."""
    pool = RolloutPool(cfg, (task(i) for i in itertools.count()), sessions)
    pool.start()
    try:
        yield pool
    finally:
        pool.stop()


def run_pool(cfg: PoolConfig, sessions, count: int) -> tuple[RolloutPool, list]:
    with running(cfg, sessions) as pool:
        samples = drain(pool, count)
    return pool, samples


def test_groups_are_queued_whole_with_group_advantages():
    sessions = ScriptedSessions(lambda r, a: scored(r, float(r.rollout_id.endswith(("r0", "r1")))))
    pool, samples = run_pool(PoolConfig("pi", PoolSettings(group_size=4), max_sessions=8), sessions, 8)
    assert len(samples) == 8
    by_group: dict[int, list] = {}
    for sample in samples:
        by_group.setdefault(sample.group_id, []).append(sample)
    assert all(len(group) == 4 for group in by_group.values())
    for group in by_group.values():
        assert sorted(round(s.advantage, 3) for s in group) == [-1.0, -1.0, 1.0, 1.0]
        assert all(s.model_version == 0 and list(s.completion_mask) == [0, 1, 1] for s in group)
    assert sessions.peak <= 8
    assert len(pool.session_spans) >= 8 and all(start <= end for start, end in pool.session_spans)
    assert {r.adapter for r in sessions.requests} == {adapter_name("pi", 0)}


def test_tampered_rollouts_train_with_reward_zero_and_are_counted():
    def script(request, attempt):
        outcome = scored(request, 0.0)
        if request.rollout_id.endswith("r0"):
            flags = ("runner_config_added: conftest.py (runner_hook: pytest_pyfunc_call)",)
            return replace(outcome, tampered=True, tamper_flags=flags)
        return scored(request, 1.0)

    pool, samples = run_pool(
        PoolConfig("pi", PoolSettings(group_size=2), max_sessions=4), ScriptedSessions(script), 4
    )
    c = pool.collector.counters  # sessions still running may finish after the drain: count what finished
    assert 2 <= c.tampered <= c.finished
    tampered = [s for s in samples if s.metrics["reward"] == 0.0]
    assert len(tampered) == 2 and all(s.advantage < 0 for s in tampered)


def test_a_session_error_trains_with_reward_zero_is_counted_and_never_retried():
    """A session end the agent could have caused (its harness killed from inside) is a score, not a
    failure: no attempt is retried, and the metrics count it."""

    def script(request, attempt):
        if request.rollout_id.endswith("r0"):
            return replace(
                scored(request, 0.0), session_error="harness_killed: signal 9, not sent by the host"
            )
        return scored(request, 1.0)

    sessions = ScriptedSessions(script)
    pool, samples = run_pool(PoolConfig("pi", PoolSettings(group_size=2), max_sessions=4), sessions, 4)
    c = pool.collector.counters
    assert c.retried == 0 and 2 <= c.session_errors <= c.finished
    assert all(n == 1 for n in sessions.attempts.values())
    zeroed = [s for s in samples if s.metrics["reward"] == 0.0]
    assert len(zeroed) == 2 and all(s.advantage < 0 for s in zeroed)


def test_a_failed_session_is_retried_and_the_counters_add_up():
    def script(request, attempt):
        if request.rollout_id.endswith("r1") and attempt == 1:
            return RolloutOutcome(request.rollout_id, request.group_id, failure="sandbox crashed")
        if request.rollout_id.endswith("r2") and attempt == 1:
            raise RuntimeError("rollout actor died")
        return scored(request, 1.0)

    pool, samples = run_pool(
        PoolConfig("hermes", PoolSettings(group_size=4), max_sessions=4), ScriptedSessions(script), 4
    )
    assert len(samples) == 4
    c = pool.collector.counters
    assert c.retried >= 2 and c.dropped == 0
    assert c.started == c.finished + c.dropped + c.retried + c.in_flight


def test_a_rollout_that_keeps_failing_drops_its_whole_group():
    def script(request, attempt):
        if request.group_id.endswith("g0") and request.rollout_id.endswith("r0"):
            return RolloutOutcome(request.rollout_id, request.group_id, failure="harness crashed")
        return scored(request, float(attempt))

    pool, samples = run_pool(
        PoolConfig("pi", PoolSettings(group_size=2), max_sessions=2, max_attempts=2),
        ScriptedSessions(script),
        2,
    )
    assert {s.group_id for s in samples} == {1}, "no sample of the dropped group g0 reaches the trainer"
    assert pool.collector.counters.groups_dropped == 1 and pool.collector.counters.dropped == 1


def test_at_the_edge_of_the_window_no_group_starts_and_the_publish_is_held():
    release = threading.Event()

    def script(request, attempt):
        if request.group_id.endswith("g0"):
            release.wait(10)
        return scored(request, 0.0)

    sessions = ScriptedSessions(script)
    with running(
        PoolConfig("pi", PoolSettings(group_size=1, max_staleness=2), max_sessions=4), sessions
    ) as pool:
        try:
            time.sleep(0.3)
            pool.update_model_version(2)  # g0 started at 0: one more publish would make it stale
            time.sleep(0.3)
            started_at_edge = len(sessions.requests)
            time.sleep(0.3)
            assert len(sessions.requests) == started_at_edge, "admission must stop while g0 is at the edge"
            assert not pool.may_publish(held_s=1.0), "the next publish would make g0 stale: hold it"
            assert pool.may_publish(held_s=pool.collector.policy.hold_s), "but not for longer than hold_s"
            release.set()
            time.sleep(0.5)
            assert len(sessions.requests) > started_at_edge
            assert pool.may_publish(held_s=0.0)

        finally:
            release.set()  # never leave g0's session waiting on a failed assertion


def test_no_group_starts_while_the_queued_rows_reach_the_bound():
    sessions = ScriptedSessions(lambda request, attempt: scored(request, 1.0))
    with running(
        PoolConfig("pi", PoolSettings(group_size=2, max_queued_rows=3), max_sessions=4), sessions
    ) as pool:
        time.sleep(1.0)  # nobody trains: the buffer fills up to the bound and admission stops
        queued, started = pool.rollout_buffer.qsize(), len(sessions.requests)
        assert 3 <= queued <= 3 + 4  # at most the groups in flight when the bound was reached
        time.sleep(0.5)
        assert len(sessions.requests) == started, "no group may start while the rows wait"
        drain(pool, queued)  # the trainer takes them: sessions start again
        time.sleep(0.5)
        assert len(sessions.requests) > started


def test_bad_pool_config_is_refused():
    with pytest.raises(ValueError, match="max_sessions"):
        PoolConfig("pi", PoolSettings(group_size=8), max_sessions=4)


class SlowSession:
    """A rollout that takes a while (so an actor can be killed in the middle of it)."""

    def run(self, request: RolloutRequest) -> RolloutOutcome:
        time.sleep(1.5)
        return scored(request, float(request.rollout_id.endswith("r0")))


def test_a_rollout_actor_killed_mid_session_is_replaced_and_its_rollout_retried(ray_cluster):
    import ray

    from actors.rollout_pool import RaySessions

    sessions = RaySessions(SlowSession, actors=2, resources={"CPU": 0})
    with running(PoolConfig("opencode", PoolSettings(group_size=2), max_sessions=2), sessions) as pool:
        deadline = time.monotonic() + 30
        while not sessions.busy_actors() and time.monotonic() < deadline:
            time.sleep(0.05)
        ray.kill(sessions.busy_actors()[0])
        samples = drain(pool, 4, timeout_s=60)
    assert len(samples) == 4, "training goes on after the actor died"
    c = pool.collector.counters
    assert c.retried >= 1 and sessions.replaced >= 1
    assert c.started == c.finished + c.dropped + c.retried + c.in_flight


def test_the_synchronous_baseline_runs_one_whole_batch_per_version():
    """Sessions of a batch never overlap the next batch; its groups reach the trainer together; the next
    batch starts only once the trainer published a new version."""
    cfg = PoolConfig("pi", PoolSettings(group_size=2), max_sessions=4, synchronous=True)

    def script(request, attempt):
        if request.rollout_id == "pi-g0-r1":
            time.sleep(0.4)  # the slow session of the batch: the other group waits for it
        return scored(request, float(request.rollout_id.endswith("r0")))

    sessions = ScriptedSessions(script, delay_s=0.05)
    with running(cfg, sessions) as pool:
        first = drain(pool, 4, timeout_s=30)
        time.sleep(0.5)
        assert len(sessions.requests) == 4, "no second batch before a new version"
        assert pool.rollout_buffer.empty()
        pool.update_model_version(1)
        second = drain(pool, 4, timeout_s=30)
    assert sessions.peak <= 4
    assert [s.model_version for s in first] == [0] * 4 and [s.model_version for s in second] == [1] * 4
    queued = [s.enqueued_at for s in first]
    assert max(queued) - min(queued) < 0.2, "a batch is queued at once, when its slowest session ends"


def test_sessions_that_keep_failing_do_not_storm():
    """Every session fails at once (a broken sandbox, a node out of memory): the pool backs off instead
    of starting and dropping groups as fast as they fail, and its counters still add up."""
    sessions = ScriptedSessions(lambda r, a: RolloutOutcome(r.rollout_id, r.group_id, failure="oom-killed"))
    with running(
        PoolConfig("pi", PoolSettings(group_size=2), max_sessions=2, max_attempts=2), sessions
    ) as pool:
        time.sleep(3.0)
    assert 2 <= len(sessions.requests) <= 12, f"{len(sessions.requests)} attempts in 3 s"
    pool.check_health(60)  # a dropped group's members waiting to retry are not started (no crash)
    c = pool.collector.counters
    assert c.started == c.finished + c.dropped + c.retried + c.in_flight


def test_the_session_runner_is_what_the_setup_names(ray_cluster, tmp_path):
    import shutil

    import ray

    from actors.rollout import RolloutSetup
    from actors.rollout_pool import RaySessions, ThreadSessions, session_runner
    from actors.rollout_settings import RolloutSettings

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    threads = session_runner(
        RolloutSetup("http://127.0.0.1:9", RolloutSettings(actors=False)), "pi", str(tmp_path), 2
    )
    assert isinstance(threads, ThreadSessions)
    threads.shutdown()
    actors = session_runner(
        RolloutSetup("http://127.0.0.1:9", RolloutSettings(cpus=0.01)), "pi", str(tmp_path), 2
    )
    try:
        assert isinstance(actors, RaySessions) and len(actors.actors()) == 2
        ray.get([actor.__ray_ready__.remote() for actor in actors.actors()], timeout=120)  # each one starts
    finally:
        actors.shutdown()


def test_each_scored_rollout_reports_its_version_pass_and_block_to_the_collapse_watch():
    def script(request, attempt):
        outcome = scored(request, float(request.rollout_id.endswith("r0")))
        if request.rollout_id.endswith("r0"):
            return replace(outcome, verdict="pass")
        return replace(outcome, blocked=request.rollout_id.endswith("r1"))

    pool, _ = run_pool(
        PoolConfig("pi", PoolSettings(group_size=2), max_sessions=2), ScriptedSessions(script), 4
    )
    health = pool.drain_health()
    assert len(health) >= 4 and not pool.drain_health()
    assert {h[0] for h in health} == {0}
    assert {h[1:3] for h in health} == {(True, False), (False, True)}  # r0 passes, r1 is blocked
    pushed = []
    while not pool.metrics_queue.empty():
        pushed.append(pool.metrics_queue.get_nowait())
    # the console's per-step blocked count: each push carries the change, which TRL sums over a step
    assert sum(m["rollout/blocked_total"] for m in pushed) == pool.collector.counters.blocked >= 2


def test_groups_of_equal_rewards_are_counted_and_a_rollback_withdraws_its_versions_rows():
    sessions = ScriptedSessions(lambda r, a: scored(r, 0.0), delay_s=0.05)
    with running(PoolConfig("pi", PoolSettings(group_size=2), max_sessions=2), sessions) as pool:
        assert len(drain(pool, 0)) == 0
        deadline = time.monotonic() + 60
        while pool.rollout_buffer.qsize() < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pool.collector.counters.groups_equal >= 2  # all zero: no gradient
        logged = []
        while not pool.metrics_queue.empty():
            logged.append(pool.metrics_queue.get_nowait()["rollout/groups_equal_total"])
        assert sum(logged) == pool.collector.counters.groups_equal  # changes: TRL sums "total" keys
        assert pool.retract(0, 0) >= 4 and pool.rollout_buffer.qsize() == 0
        pool.update_model_version(1)  # later groups (version 1) are trained as usual
        later = drain(pool, 2)
    assert later and all(s.model_version == 1 for s in later)
    assert pool.collector.counters.groups_trained >= 3


def test_a_group_still_running_from_a_retracted_version_is_not_trained():
    sessions = ScriptedSessions(lambda r, a: scored(r, float(r.rollout_id.endswith("r0"))), delay_s=0.5)
    with running(PoolConfig("pi", PoolSettings(group_size=2), max_sessions=2), sessions) as pool:
        deadline = time.monotonic() + 30
        while not sessions.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pool.retract(0, 0) == 0  # nothing queued yet: the version-0 group is still running
        pool.update_model_version(1)
        later = drain(pool, 2)
    assert later and all(s.model_version == 1 for s in later)
    assert pool.collector.counters.groups_rolled_back == 1


def test_a_quiet_pool_is_stalled_only_when_no_session_is_within_its_time() -> None:
    """A small model on CPU can spend minutes in one session: quiet is not hung while a session may
    still end in time; quiet with every session past its limit (or none in flight) is."""
    assert stall_problem(now=100.0, last_progress=50.0, stale_after_s=60.0, deadlines=[]) == ""
    assert stall_problem(now=400.0, last_progress=50.0, stale_after_s=300.0, deadlines=[900.0]) == ""
    hung = stall_problem(now=400.0, last_progress=50.0, stale_after_s=300.0, deadlines=[390.0])
    assert "no progress in 350s" in hung and "within its time limit" in hung
    assert stall_problem(now=400.0, last_progress=50.0, stale_after_s=300.0, deadlines=[]) != ""


def test_a_sessions_time_is_its_tasks_agent_and_verifier_limits_and_slack() -> None:
    from environments.core.types import Limits

    assert session_deadline(Limits(agent_timeout_s=600, verify_timeout_s=60)) == 600 + 60 + 120


def test_a_harness_that_cannot_run_here_stops_the_run_with_one_line_naming_it():
    """Failures count as progress to the stall check: a harness that fails every session (its install
    unreachable from the sandbox) would retry and drop groups for the whole run, the console silent."""
    from environments.errors import user_error

    failure = "HostFailure: pi: harness_records_missing: the harness's session log is gone"
    sessions = ScriptedSessions(lambda r, a: RolloutOutcome(r.rollout_id, r.group_id, failure=failure))
    cfg = PoolConfig("pi", PoolSettings(group_size=2), max_sessions=2, max_failures_in_a_row=3)
    with running(replace(cfg, backoff=Backoff(base_s=0.0, max_s=0.0)), sessions) as pool:
        deadline = time.monotonic() + 30
        with pytest.raises(RolloutsFailingError) as raised:
            while time.monotonic() < deadline:
                pool.check_health(60)
                time.sleep(0.01)
    message = str(raised.value)
    assert "rollout pool for pi" in message and "harness_records_missing" in message
    assert "scripts/harness-deps.sh" in message and "\n" not in message
    assert user_error(raised.value) is raised.value  # the job prints it as one line, no traceback


def test_failures_with_a_scored_rollout_between_them_do_not_stop_the_run():
    assert failing_problem(2, 3, "crash") == ""
    assert failing_problem(3, 3, "crash") != ""
    assert failing_problem(500, 0, "crash") == "", "0 turns the check off"
    with pytest.raises(ValueError, match="max_failures_in_a_row"):
        PoolConfig("pi", max_failures_in_a_row=-1)
