"""Run metrics: silent without Ray; with Ray, every metric the pool and trainer report is accepted
(names, tags and histogram boundaries that Ray refuses would raise here)."""

from __future__ import annotations

from actors.metrics import RunMetrics


def exercise(metrics: RunMetrics) -> None:
    for outcome in ("finished", "blocked", "retried", "dropped", "stale_group", "trained_group"):
        metrics.outcome(outcome)
    metrics.scored(1.1, 3)
    metrics.in_flight(48)
    metrics.lag(2)
    metrics.step({"perf/step_s": 12.5, "batch/forwarded_tokens_per_step": 65536.0}, version=3)


def test_metrics_are_silent_without_ray(monkeypatch):
    import ray

    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # other tests may have started Ray
    metrics = RunMetrics("pi")
    assert not metrics._on
    exercise(metrics)


def test_metrics_are_recorded_under_ray(ray_cluster):
    metrics = RunMetrics("hermes")
    assert metrics._on
    exercise(metrics)
