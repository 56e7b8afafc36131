"""The SFT sweep: learning rate x LoRA rank x max length, one Ray task per grid point, one Trackio project.

Each point trains with ``actors.sft.train.run_sft`` in its own Ray task (``run_point``), writing its adapter
under ``<out_dir>/<point>/``. As each point finishes, one logger actor writes its TRL log history (loss,
entropy, mean token accuracy, learning rate, and the held-out figures) to the Trackio project: a single
writer, so concurrent points never contend for Trackio's SQLite file, and ``TRACKIO_DIR`` is set in that
actor's fresh process before Trackio is imported (Trackio reads it once, at import). The best point is the
lowest held-out loss (the last training loss when there is no held-out split); ``results.md`` and
``results.json`` go beside the adapters. A point that fails is reported as failed; the others go on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from actors.sft.config import SFTConfig

Log = Callable[[str], None]
TRACKIO_KEYS = ("loss", "entropy", "mean_token_accuracy", "learning_rate", "grad_norm", "num_tokens")
TRACKIO_EVAL_KEYS = ("eval_loss", "eval_entropy", "eval_mean_token_accuracy")


@dataclass(frozen=True, slots=True)
class SweepPoint:
    learning_rate: float
    rank: int
    max_length: int

    @property
    def name(self) -> str:
        return f"lr{self.learning_rate:g}-r{self.rank}-len{self.max_length}"


def sweep_points(cfg: SFTConfig) -> list[SweepPoint]:
    """The grid; an empty axis is the run's own value."""
    s = cfg.sweep
    return [
        SweepPoint(lr, rank, length)
        for lr in s.learning_rates or (cfg.learning_rate,)
        for rank in s.ranks or (cfg.lora.rank,)
        for length in s.max_lengths or (cfg.max_length,)
    ]


def point_config(cfg: SFTConfig, point: SweepPoint, model_path: str) -> SFTConfig:
    return replace(
        cfg,
        model=model_path,
        learning_rate=point.learning_rate,
        lora=replace(cfg.lora, rank=point.rank),
        max_length=point.max_length,
        out_dir=str(Path(cfg.out_dir) / point.name),
    )


def score(row: dict[str, Any]) -> float | None:
    """What ranks points: the held-out loss, else the last training loss; None for a failed point."""
    if row.get("status") != "ok":
        return None
    value = row.get("eval_loss")
    return value if value is not None else row.get("train_loss_last")


def pick_best(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    scored = [(s, i) for i, row in enumerate(rows) if (s := score(row)) is not None]
    return rows[min(scored)[1]] if scored else None


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def results_markdown(rows: Sequence[dict[str, Any]], best: dict[str, Any] | None, project: str) -> str:
    lines = [
        "# SFT sweep results",
        "",
        f"Best (lowest held-out loss): **{best['point'] if best else 'none'}**.",
        f"Trackio project: `{project}`.",
        "",
        "| point | learning rate | LoRA rank | max length (tokens) | steps | train loss first -> last "
        "| held-out loss before -> after | held-out token accuracy | train time (s) | status |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        name = f"**{row['point']}**" if best is not None and row is best else row["point"]
        lines.append(
            f"| {name} | {_fmt(row['learning_rate'])} | {row['lora_rank']} | {row['max_length_tokens']} "
            f"| {_fmt(row.get('steps'))} | {_fmt(row.get('train_loss_first'))} -> "
            f"{_fmt(row.get('train_loss_last'))} | {_fmt(row.get('eval_loss_before'))} -> "
            f"{_fmt(row.get('eval_loss'))} | {_fmt(row.get('eval_mean_token_accuracy'))} "
            f"| {_fmt(row.get('train_s'))} | {row['status']} |"
        )
    return "\n".join(lines) + "\n"


def trackio_rows(history: Sequence[dict[str, Any]]) -> list[tuple[int, dict[str, float]]]:
    """(step, metrics) pairs from TRL's log history, training and held-out entries alike."""
    rows = []
    for entry in history:
        keys = TRACKIO_EVAL_KEYS if "eval_loss" in entry else TRACKIO_KEYS
        metrics = {k: float(entry[k]) for k in keys if isinstance(entry.get(k), int | float)}
        if metrics:
            rows.append((int(entry.get("step", 0)), metrics))
    return rows


def run_point(cfg: SFTConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Train one grid point (a Ray task in ``run_sweep``); its figures and TRL log history."""
    from actors.sft.train import run_sft

    figures = run_sft(cfg, log=lambda _line: None)
    record = json.loads((Path(cfg.out_dir) / "metrics.json").read_text())
    return figures, record["log_history"]


def run_sweep(cfg: SFTConfig, *, log: Log = print) -> dict[str, Any]:
    """Train every grid point as a Ray task, log all to one Trackio project, write results beside them.
    ``cfg.model`` is a folder or a Hub id, as for ``run_sft``: the SFT job resolves a preset name first
    (``actors.models.resolve_model_path``), once, so no point builds or downloads it."""
    started = time.perf_counter()
    import ray

    from actors.cluster import connect_ray
    from actors.placement import make_actor, submit_task
    from actors.tracking import TrackioLogger

    root = Path(cfg.out_dir)
    root.mkdir(parents=True, exist_ok=True)
    model_path = cfg.model
    if Path(model_path).exists():
        model_path = str(Path(model_path).resolve())
    points = sweep_points(cfg)
    log(f"[sft sweep] {len(points)} points: {', '.join(p.name for p in points)}")
    connect_ray()  # RAY_ADDRESS (ray job submit) or a fresh local cluster
    resources = {"CPU": cfg.sweep.cpus_per_run, "GPU": cfg.sweep.gpus_per_run}
    logger = make_actor(TrackioLogger, cfg.sweep.trackio_project, cfg.sweep.trackio_dir, resources={"CPU": 0})
    pending = {
        submit_task(run_point, point_config(cfg, point, model_path), resources=resources): point
        for point in points
    }
    rows: dict[SweepPoint, dict[str, Any]] = {}
    try:
        while pending:
            [done], _ = ray.wait(list(pending), num_returns=1)
            point = pending.pop(done)
            base = {"point": point.name, **asdict(point)}
            base.update(lora_rank=point.rank, max_length_tokens=point.max_length)
            try:
                figures, history = ray.get(done)
            except Exception as exc:  # a failed point is a row, not the end of the sweep
                message = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
                rows[point] = {**base, "status": "failed", "error": message}
                log(f"[sft sweep] {point.name} failed: {message}")
                continue
            rows[point] = {**base, **figures, "status": "ok"}
            logged = ray.get(
                logger.log_run.remote(point.name, {**asdict(point), **figures}, trackio_rows(history))
            )
            log(f"[sft sweep] {point.name}: held-out loss {figures['eval_loss']} ({logged} Trackio rows)")
        trackio_dir = ray.get(logger.directory.remote())
    finally:
        ray.kill(logger)
    ordered = [rows[p] for p in points]
    best = pick_best(ordered)
    if best is None:
        raise RuntimeError(f"every sweep point failed; see {root}/results.md and each point's error")
    (root / "results.md").write_text(results_markdown(ordered, best, cfg.sweep.trackio_project))
    summary = {
        "best": best,
        "runs": ordered,
        "trackio": {"project": cfg.sweep.trackio_project, "dir": trackio_dir},
    }
    (root / "results.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return {
        "points": len(points),
        "failed": sum(r["status"] != "ok" for r in ordered),
        "best": best["point"],
        "best_eval_loss": best.get("eval_loss"),
        "best_dir": best.get("out_dir"),
        "results_md": str((root / "results.md").resolve()),
        "trackio_project": cfg.sweep.trackio_project,
        "trackio_dir": trackio_dir,
        "total_s": round(time.perf_counter() - started, 1),
    }
