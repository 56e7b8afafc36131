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


def test_the_docs_table_and_the_grafana_dashboard_are_made_from_the_declarations(tmp_path):
    import json
    import shutil

    from actors.metrics import DOCS, METRICS, grafana_dashboard, metrics_table, write_docs

    page = (DOCS / "metrics.md").read_text()
    assert metrics_table() in page, "docs/metrics.md is stale: run python -m actors.metrics"
    shipped = json.loads((DOCS / "grafana" / "harness-adapters.json").read_text())
    assert shipped == grafana_dashboard(), "the dashboard is stale: run python -m actors.metrics"
    exprs = [p["targets"][0]["expr"] for p in shipped["panels"]]
    assert len(exprs) == len(METRICS) and all("ray_ha_" in e and "$SessionName" in e for e in exprs)
    shutil.copytree(DOCS, tmp_path / "docs")
    (tmp_path / "docs" / "metrics.md").write_text(page.replace("| `ray_ha_version_lag`", "| `stale`"))
    write_docs(tmp_path / "docs")
    assert (tmp_path / "docs" / "metrics.md").read_text() == page  # the table is rewritten in place


def test_every_outcome_the_pool_reports_is_declared(monkeypatch):
    import re
    from pathlib import Path

    import pytest

    from actors.metrics import OUTCOMES

    source = (Path(__file__).resolve().parents[2] / "actors" / "rollout_pool.py").read_text()
    used = set(re.findall(r'outcome\("(\w+)"', source)) | set(re.findall(r'"(\w+)" if decision', source))
    used |= set(re.findall(r'else "(\w+)"\)', source))
    assert used and used <= set(OUTCOMES), used - set(OUTCOMES)
    with pytest.raises(ValueError, match="declare it in actors.metrics.OUTCOMES"):
        RunMetrics("pi").outcome("misspelt")
