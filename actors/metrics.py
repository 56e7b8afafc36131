"""Ray dashboard metrics of a run (``ray.util.metrics``), tagged by harness, so the dashboard shows
sessions in flight, rollout outcomes, reward, tool calls, version lag, step time and tokens per step.

``RunMetrics`` is a no-op outside a Ray worker or driver (plain unit tests), so the pool and the trainer
call it unconditionally.
"""

from __future__ import annotations

from typing import Any

REWARD_BOUNDARIES = [0.001, 0.25, 0.5, 0.75, 0.999, 1.05, 1.1]
"""Ray wants positive boundaries: a reward of 0 lands in the first bucket, a bare pass in the fifth."""
TOOL_CALL_BOUNDARIES = [0.5, 1.5, 2.5, 4.5, 8.5, 15.5, 30.5]
STEP_BOUNDARIES = [1.0, 5.0, 15.0, 60.0, 300.0, 1200.0]


class RunMetrics:
    def __init__(self, harness: str) -> None:
        self.tags = {"harness": harness}
        self._on = False
        try:
            import ray

            self._on = ray.is_initialized()
        except ImportError:
            return
        if not self._on:
            return
        from ray.util.metrics import Counter, Gauge, Histogram

        keys = ("harness",)
        self.sessions = Gauge("ha_sessions_in_flight", "Harness sessions running now", tag_keys=keys)
        self.rollouts = Counter(
            "ha_rollouts_total", "Rollout attempts by outcome", tag_keys=("harness", "outcome")
        )
        self.reward = Histogram("ha_rollout_reward", "Reward per scored rollout", REWARD_BOUNDARIES, keys)
        self.tool_calls = Histogram(
            "ha_rollout_tool_calls", "Tool calls per rollout", TOOL_CALL_BOUNDARIES, keys
        )
        self.version_lag = Gauge(
            "ha_version_lag", "Versions between a group's start and training", tag_keys=keys
        )
        self.step_s = Histogram("ha_trainer_step_seconds", "Optimizer step time", STEP_BOUNDARIES, keys)
        self.tokens = Gauge("ha_trainer_tokens_per_step", "Forwarded tokens per step", tag_keys=keys)
        self.version = Gauge("ha_adapter_version", "Current published adapter version", tag_keys=keys)

    def outcome(self, outcome: str, count: int = 1) -> None:
        """``finished`` | ``blocked`` | ``would_block`` (monitor mode) | ``tampered`` | ``retried`` |
        ``dropped`` | ``stale_group`` | ``trained_group`` | ``equal_group`` (a trained group whose rewards
        were all equal: no gradient)."""
        if self._on:
            self.rollouts.inc(count, tags={**self.tags, "outcome": outcome})

    def scored(self, reward: float, tool_calls: int) -> None:
        if self._on:
            self.reward.observe(reward, tags=self.tags)
            self.tool_calls.observe(float(tool_calls), tags=self.tags)

    def in_flight(self, sessions: int) -> None:
        if self._on:
            self.sessions.set(sessions, tags=self.tags)

    def lag(self, versions: int) -> None:
        if self._on:
            self.version_lag.set(versions, tags=self.tags)

    def step(self, logs: dict[str, Any], version: int) -> None:
        """From one of the trainer's log records (TRL's ``perf/step_s`` and tokens per step)."""
        if not self._on:
            return
        if "perf/step_s" in logs:
            self.step_s.observe(float(logs["perf/step_s"]), tags=self.tags)
        if "batch/forwarded_tokens_per_step" in logs:
            self.tokens.set(float(logs["batch/forwarded_tokens_per_step"]), tags=self.tags)
        self.version.set(version, tags=self.tags)
