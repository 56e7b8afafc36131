"""Ray dashboard metrics of a run (``ray.util.metrics``), tagged by harness: sessions in flight, rollout
outcomes, reward, tool calls, version lag, step time, tokens per step and the adapter version.

``METRICS`` declares each once (name, type, labels, meaning, buckets); the metrics themselves, the table
in ``docs/metrics.md`` and the Grafana dashboard ``docs/grafana/harness-adapters.json`` are all made from
it (``python -m actors.metrics`` rewrites the two files; a test keeps them in step). Ray exports an
application metric to Prometheus with the prefix ``ray_`` (``PROMETHEUS_PREFIX``), beside its own labels
(``SessionName``, ``NodeAddress``, ...).

``RunMetrics`` is a no-op outside a Ray worker or driver (plain unit tests), so the pool and the trainer
call it unconditionally.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.errors import cli_main

PROMETHEUS_PREFIX = "ray_"
"""What Ray puts before an application metric's name in its Prometheus export."""
OUTCOMES = (
    "finished",
    "blocked",
    "would_block",
    "tampered",
    "session_error",
    "retried",
    "dropped",
    "stale_group",
    "trained_group",
    "equal_group",
)
"""The ``outcome`` label's values of ``ha_rollouts_total``."""


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    """The name given to Ray (Prometheus shows ``PROMETHEUS_PREFIX`` + name)."""
    kind: str
    """``counter``, ``gauge`` or ``histogram``."""
    meaning: str
    labels: tuple[str, ...] = ("harness",)
    boundaries: tuple[float, ...] = ()
    """A histogram's bucket bounds (Ray wants them positive)."""
    unit: str = "short"
    """The Grafana panel's unit."""

    @property
    def exported(self) -> str:
        return PROMETHEUS_PREFIX + self.name

    def query(self) -> str:
        """The PromQL a dashboard panel plots, per harness (and outcome)."""
        by = ", ".join(self.labels)
        if self.kind == "counter":
            return f"sum by ({by}) (rate({self.exported}[1m]))"
        if self.kind == "histogram":
            total, count = (f"sum by ({by}) (rate({self.exported}_{part}[5m]))" for part in ("sum", "count"))
            return f"{total} / {count}"
        return f"max by ({by}) ({self.exported})"


METRICS = (
    MetricSpec("ha_sessions_in_flight", "gauge", "Harness sessions running now, per trainer's pool."),
    MetricSpec(
        "ha_rollouts_total",
        "counter",
        "Rollout attempts and groups by outcome: " + ", ".join(OUTCOMES) + " (a trained group whose "
        "rewards were all equal counts as equal_group too: it gave no gradient).",
        labels=("harness", "outcome"),
        unit="ops",
    ),
    MetricSpec(
        "ha_rollout_reward",
        "histogram",
        "Reward per scored rollout (the verifier plus the tool-call term; 0 when blocked or tampered).",
        boundaries=(0.001, 0.25, 0.5, 0.75, 0.999, 1.05, 1.1),
    ),
    MetricSpec(
        "ha_rollout_tool_calls",
        "histogram",
        "Tool calls per scored rollout.",
        boundaries=(0.5, 1.5, 2.5, 4.5, 8.5, 15.5, 30.5),
    ),
    MetricSpec(
        "ha_version_lag",
        "gauge",
        "Adapter versions between a trained group's start and its training (the off-policy lag).",
    ),
    MetricSpec(
        "ha_trainer_step_seconds",
        "histogram",
        "Optimizer step time (TRL's perf/step_s).",
        boundaries=(1.0, 5.0, 15.0, 60.0, 300.0, 1200.0),
        unit="s",
    ),
    MetricSpec("ha_trainer_tokens_per_step", "gauge", "Tokens forwarded in the latest step."),
    MetricSpec("ha_adapter_version", "gauge", "The adapter version the trainer published last."),
)
"""Every metric a run reports, declared once."""


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

        made: dict[str, Any] = {}
        for spec in METRICS:
            if spec.kind == "counter":
                made[spec.name] = Counter(spec.name, spec.meaning, tag_keys=spec.labels)
            elif spec.kind == "gauge":
                made[spec.name] = Gauge(spec.name, spec.meaning, tag_keys=spec.labels)
            else:
                made[spec.name] = Histogram(spec.name, spec.meaning, list(spec.boundaries), spec.labels)
        self.sessions = made["ha_sessions_in_flight"]
        self.rollouts = made["ha_rollouts_total"]
        self.reward = made["ha_rollout_reward"]
        self.tool_calls = made["ha_rollout_tool_calls"]
        self.version_lag = made["ha_version_lag"]
        self.step_s = made["ha_trainer_step_seconds"]
        self.tokens = made["ha_trainer_tokens_per_step"]
        self.version = made["ha_adapter_version"]

    def outcome(self, outcome: str, count: int = 1) -> None:
        """One of ``OUTCOMES``."""
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome {outcome!r}: declare it in actors.metrics.OUTCOMES (and its docs)")
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


def metrics_table() -> str:
    """Markdown: one row per metric as Prometheus shows it."""
    rows = ["| metric (Prometheus) | type | labels | meaning |", "|---|---|---|---|"]
    for spec in METRICS:
        buckets = f" Buckets: {', '.join(f'{b:g}' for b in spec.boundaries)}." if spec.boundaries else ""
        rows.append(
            f"| `{spec.exported}` | {spec.kind} | {', '.join(spec.labels)} | {spec.meaning}{buckets} |"
        )
    return "\n".join(rows) + "\n"


def grafana_dashboard() -> dict[str, Any]:
    """A Grafana dashboard with one time-series panel per metric, on the Prometheus data source Ray's own
    dashboards use (``${datasource}``), filtered by the run's ``SessionName``."""
    panels = []
    for index, spec in enumerate(METRICS):
        panels.append(
            {
                "id": index + 1,
                "type": "timeseries",
                "title": spec.name,
                "description": spec.meaning,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
                "fieldConfig": {"defaults": {"unit": spec.unit}, "overrides": []},
                "targets": [
                    {
                        "refId": "A",
                        "expr": spec.query().replace(
                            spec.exported, spec.exported + '{SessionName=~"$SessionName"}'
                        ),
                        "legendFormat": " ".join("{{" + label + "}}" for label in spec.labels),
                    }
                ],
            }
        )
    variables = [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
        {
            "name": "SessionName",
            "type": "query",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": f"label_values({METRICS[0].exported}, SessionName)",
            "includeAll": True,
            "multi": True,
            "label": "Ray session",
        },
    ]
    return {
        "uid": "harness-adapters",
        "title": "harness-adapters: rollouts and training",
        "tags": ["ray", "harness-adapters"],
        "timezone": "browser",
        "refresh": "10s",
        "schemaVersion": 39,
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": variables},
        "panels": panels,
    }


DOCS = Path(__file__).resolve().parents[1] / "docs"
TABLE_START, TABLE_END = "<!-- metrics table: python -m actors.metrics -->", "<!-- end of metrics table -->"


def write_docs(docs: Path = DOCS) -> list[Path]:
    """Rewrite the table in ``docs/metrics.md`` (between its markers) and the dashboard JSON."""
    page = docs / "metrics.md"
    text = page.read_text()
    head, _, rest = text.partition(TABLE_START)
    _, _, tail = rest.partition(TABLE_END)
    page.write_text(f"{head}{TABLE_START}\n{metrics_table()}{TABLE_END}{tail}")
    dashboard = docs / "grafana" / "harness-adapters.json"
    dashboard.parent.mkdir(parents=True, exist_ok=True)
    dashboard.write_text(json.dumps(grafana_dashboard(), indent=1) + "\n")
    return [page, dashboard]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Rewrite docs/metrics.md's table and the Grafana dashboard")
    parser.parse_args(argv)
    for path in write_docs():
        print(path)


if __name__ == "__main__":
    cli_main(main)
