"""The learning check, in independent runs: does RL make sessions shorter without losing pass@1?

    python -m jobs.learning_check [--config jobs/configs/learning-check-runs.yaml] [key=value ...]

Each seed is one whole smoke run of ``smoke_config`` (``jobs.smoke``: train from the SFT start, evaluate
every checkpoint and the start on the held-out tasks) in ``<out_dir>/seed-<n>/``, with the train job's
``trainer.seed`` and ``tasks.seed`` set to ``n``; then a validation pass over its checkpoints on tasks
that are neither trained on nor held out (``seed-<n>/validation/``) chooses the checkpoint the headline
calls "last". Per run and harness, the headline (``actors.eval_report.headlines``): that checkpoint's mean
tool calls at least ``min_calls_reduction`` below its start's, the two intervals apart, pass@1 not lower.
``<out_dir>/headline.md`` opens with every regression, then the count of runs where the headline held, a
table per run and what its training noticed (collapses, groups of equal rewards); ``headline.json`` has the
same figures. A finished run or validation pass is reused (``reuse``), so an interrupted check resumes.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from actors.config_loader import load_config
from jobs.cli import job_main

CONFIGS = Path(__file__).resolve().parent / "configs"
DEFAULT_CONFIG = CONFIGS / "learning-check-runs.yaml"


VALIDATION = (
    "tasks.set=row-count-validation",
    "tasks.max_tasks=24",
    "include_base=false",
    "capability.problems=0",
    "merged.tasks=0",
    "model_cards=false",
)
"""The row-count family's validation tasks, every trained checkpoint, nothing else."""


@dataclass(frozen=True, slots=True)
class LearningCheckConfig:
    smoke_config: str = str(CONFIGS / "learning-check.yaml")
    """The smoke-run config each seed runs (``jobs.smoke``)."""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """One independent run per seed (the train job's ``trainer.seed`` and ``tasks.seed``)."""
    out_dir: str = "artifacts/learning-check"
    """Runs go to ``seed-<n>/``; ``headline.md`` and ``headline.json`` beside them."""
    min_calls_reduction: float = 0.30
    """The headline's least share of tool calls the last checkpoint drops against its start."""
    reuse: bool = True
    """Keep a seed's finished run (its ``summary.json`` exists) instead of running it again."""
    train_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of every run's train config (after the smoke config's own)."""
    eval_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of every run's evaluation config (after the smoke config's own)."""
    validation_overrides: tuple[str, ...] = VALIDATION
    """Overrides of the evaluation config (after ``eval_overrides``) for a validation pass over every
    run's checkpoints in ``seed-<n>/validation/``: its tasks choose the checkpoint the headline calls
    "last" (``actors.eval_report.choose_by_validation``), so the held-out tasks judge a choice they did not
    make. Empty: no validation pass; "last" is the latest checkpoint."""

    def __post_init__(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds={list(self.seeds)}: give one or more distinct seeds")
        if not 0 < self.min_calls_reduction < 1:
            raise ValueError(f"min_calls_reduction={self.min_calls_reduction}: give a share between 0 and 1")


def check_configs(cfg: LearningCheckConfig) -> None:
    """Load every config the runs will (the smoke config, its train and evaluation configs with this check's
    overrides, the validation pass's): a bad value stops the check before the first run, not after it."""
    from jobs import evaluate, smoke, train

    smoke_cfg = load_config(smoke.SmokeConfig, smoke.locate(cfg.smoke_config))
    train_overrides = (*smoke_cfg.train_overrides, *cfg.train_overrides)
    load_config(train.TrainJobConfig, smoke.locate(smoke_cfg.train_config), train_overrides)
    eval_overrides = (*smoke_cfg.eval_overrides, *cfg.eval_overrides)
    for overrides in (eval_overrides, (*eval_overrides, *cfg.validation_overrides)):
        load_config(evaluate.EvalConfig, smoke.locate(smoke_cfg.eval_config), overrides)


def run_seed(cfg: LearningCheckConfig, seed: int) -> Path:
    """One run (or the finished one kept from before); returns its evaluation's ``results.json``."""
    from jobs import smoke

    out = Path(cfg.out_dir).resolve() / f"seed-{seed}"
    results = out / "eval" / "results.json"
    if cfg.reuse and (out / "summary.json").exists() and results.exists():
        print(f"[learning check] seed {seed}: kept the finished run in {out}", flush=True)
        return results
    smoke_cfg = load_config(smoke.SmokeConfig, smoke.locate(cfg.smoke_config))
    smoke_cfg = replace(
        smoke_cfg,
        out_dir=str(out),
        train_overrides=(
            *smoke_cfg.train_overrides,
            *cfg.train_overrides,
            f"trainer.seed={seed}",
            f"tasks.seed={seed}",
        ),
        eval_overrides=(*smoke_cfg.eval_overrides, *cfg.eval_overrides),
    )
    print(f"[learning check] seed {seed}: a whole run in {out}", flush=True)
    smoke.run(smoke_cfg)
    return results


def run_validation(cfg: LearningCheckConfig, seed: int) -> Path | None:
    """The validation pass over a finished run's checkpoints (kept from before when ``reuse``); returns its
    ``results.json``, or None without ``validation_overrides`` or when no harness has two checkpoints to
    choose between (a short run that saved only its last: the pass would cost an evaluation and choose it)."""
    if not cfg.validation_overrides:
        return None
    from jobs import evaluate, smoke

    out = Path(cfg.out_dir).resolve() / f"seed-{seed}"
    results = out / "validation" / "results.json"
    if cfg.reuse and results.exists():
        return results
    smoke_cfg = load_config(smoke.SmokeConfig, smoke.locate(cfg.smoke_config))
    overrides = (*smoke_cfg.eval_overrides, *cfg.eval_overrides, *cfg.validation_overrides)
    eval_cfg = load_config(
        evaluate.EvalConfig,
        smoke.locate(smoke_cfg.eval_config),
        (f"train_dir={out / 'train'}", f"out_dir={out / 'validation'}", *overrides),
    )
    if all(
        len(evaluate.discover_checkpoints(out / "train", h, eval_cfg.checkpoints, include_base=False)) < 2
        for h in eval_cfg.harnesses
    ):
        print(
            f"[learning check] seed {seed}: no validation pass, one checkpoint per harness at most",
            flush=True,
        )
        return None
    print(f"[learning check] seed {seed}: the validation pass chooses the checkpoint", flush=True)
    evaluate.run(eval_cfg)
    return results


def training_health(summary: Path) -> dict[str, dict]:
    """Per harness, from a run's ``summary.json``: the collapses its trainer noticed (and what it did) and
    how many trained groups had rewards all equal (no gradient)."""
    train = json.loads(summary.read_text()).get("train", {}) if summary.is_file() else {}
    rollouts, collapses = train.get("rollouts", {}), train.get("collapses", {})
    return {
        harness: {
            "collapses": collapses.get(harness, []),
            "groups_trained": counts.get("groups_trained", 0),
            "groups_equal": counts.get("groups_equal", 0),
        }
        for harness, counts in rollouts.items()
    }


def training_lines(health: dict[str, dict]) -> str:
    text = ""
    for harness, h in health.items():
        events = (
            "; ".join(f"step {e['step']}: {e['reason']} ({e['action']})" for e in h["collapses"]) or "none"
        )
        text += (
            f"\n- {harness} training: {h['groups_equal']} of {h['groups_trained']} trained groups had equal "
            f"rewards (no gradient); collapses: {events}\n"
        )
    return text


def run(cfg: LearningCheckConfig) -> dict:
    from actors.eval_report import (
        calls_room,
        choose_by_validation,
        headline_table,
        headlines,
        load_results,
        summarize,
    )

    check_configs(cfg)
    started = time.monotonic()
    out = Path(cfg.out_dir).resolve()
    runs = {}
    text = (
        "# The learning check\n\n"
        "Per run (seed) and harness: the last checkpoint (the one the validation tasks chose, when the check "
        "has a validation pass) against its SFT start. The headline holds with at "
        f"least {cfg.min_calls_reduction:.0%} fewer mean tool calls, the two 95% intervals apart, and pass@1 "
        "not lower (its difference's interval is shown).\n"
    )
    tables = ""
    training = {}
    for seed in cfg.seeds:
        results = run_seed(cfg, seed)
        validation = run_validation(cfg, seed)
        chosen = choose_by_validation(summarize(load_results(validation))) if validation else None
        rows = headlines(summarize(load_results(results)), cfg.min_calls_reduction, chosen)
        runs[seed] = rows
        training[seed] = training_health(results.parent.parent / "summary.json")
        tables += f"\n## Seed {seed}\n\n" + headline_table(rows) + training_lines(training[seed])
    held = {seed: bool(rows) and all(r.holds for r in rows) for seed, rows in runs.items()}
    regressions = [
        f"seed {s}, {r.harness}: {r.verdict}" for s, rows in runs.items() for r in rows if r.regressed
    ]
    verdict = f"The headline held in {sum(held.values())} of {len(held)} runs."
    cramped = [
        r
        for rows in runs.values()
        for r in rows
        if calls_room(r.start.mean_tool_calls) < cfg.min_calls_reduction
    ]
    if cramped:  # the criterion asks more than the start leaves: say so beside the count
        verdict += (
            f" In {len(cramped)} of {sum(map(len, runs.values()))} the start took so few calls that a "
            f"{cfg.min_calls_reduction:.0%} drop is out of reach (a passing session reads once at least: "
            "the table's room column)."
        )
    if regressions:  # a regression in any run leads the report, before what held
        text += "\n**Regressions** (" + f"{len(regressions)}):\n\n" + "".join(f"- {r}\n" for r in regressions)
    text += f"\n{verdict}\n" + tables
    out.mkdir(parents=True, exist_ok=True)
    (out / "headline.md").write_text(text)
    figures = {
        "runs": {str(seed): [asdict(r) for r in rows] for seed, rows in runs.items()},
        "held": {str(seed): ok for seed, ok in held.items()},
        "runs_held": sum(held.values()),
        "runs_out_of_reach": len(cramped),
        "min_calls_reduction": cfg.min_calls_reduction,
        "regressions": regressions,
        "training": {str(seed): health for seed, health in training.items()},
        "total_s": round(time.monotonic() - started, 1),
        "report": str(out / "headline.md"),
    }
    (out / "headline.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(text, flush=True)
    return {k: v for k, v in figures.items() if k != "runs"}


def main(argv: list[str] | None = None) -> None:
    job_main(LearningCheckConfig, DEFAULT_CONFIG, run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
