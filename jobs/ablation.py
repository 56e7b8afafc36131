"""The guard ablation: one train config trained with the guard enforced and with it only monitoring.

    python -m jobs.ablation --config jobs/configs/ablation-guard.yaml [key=value ...]

Arms: ``enforce`` (blocked calls become notices, the rollout scores 0) and ``monitor`` (every call checked,
the calls the guard would have blocked recorded and counted, nothing blocked or zeroed). Each arm trains
``train_config`` (with ``guard.mode=<arm>``, into ``<out_dir>/<arm>/train``) and is then evaluated with
``eval_config`` (into ``<out_dir>/<arm>/eval``), both arms with the same evaluation guard (``eval_guard``,
default ``enforce``: pass@1 as the adapters are used) and by default only at each harness's last
checkpoint (``checkpoints=1 include_base=false``; ``eval_overrides`` can change that). The comparison is at
the last checkpoint of each harness: pass@1 of each arm with its 95% Wilson interval, the difference
enforce - monitor with its 95% Newcombe interval, per harness and pooled, plus the blocks each arm got and
the would-be blocks of the monitor arm (training rollouts, evaluation sessions, by rule). Writes
``<out_dir>/ablation.md`` and ``<out_dir>/ablation.json``; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from actors.config_loader import load_config
from actors.eval_report import ALL, SessionResult, difference_interval, load_results, wilson_interval
from jobs.cli import job_main
from serve.mode import GuardMode

CONFIGS = Path(__file__).resolve().parent / "configs"
DEFAULT_CONFIG = CONFIGS / "ablation-guard.yaml"
ARMS = (GuardMode.ENFORCE, GuardMode.MONITOR)


@dataclass(frozen=True, slots=True)
class AblationConfig:
    train_config: str = str(CONFIGS / "train-smoke.yaml")
    """The train job's config file, run once per arm (``guard=enforce``, ``guard=monitor``)."""
    eval_config: str = str(CONFIGS / "evaluate-smoke.yaml")
    """The evaluation job's config file, run on each arm's checkpoints with the guard enforcing."""
    out_dir: str = "artifacts/ablation-guard"
    """Where each arm's runs and ``ablation.md`` / ``ablation.json`` go."""
    eval_guard: GuardMode = GuardMode.ENFORCE
    """The guard both arms are evaluated under (``enforce``, ``monitor`` or ``off``)."""
    train_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of the train config, for both arms (``guard.mode`` and ``out_dir`` are set
    per arm)."""
    eval_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of the evaluate config, for both arms (after ``checkpoints=1`` and
    ``include_base=false``, so they can change those)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "eval_guard", GuardMode.parse(self.eval_guard, "eval_guard"))
        for key in ("train_overrides", "eval_overrides"):
            fixed = [o for o in getattr(self, key) if o.split("=", 1)[0].strip() in ("guard", "guard.mode")]
            if fixed:
                raise ValueError(
                    f"{key} sets {fixed[0]!r}: each arm sets the train guard; "
                    "use eval_guard for the evaluation's"
                )


# -- the comparison (pure) ---------------------------------------------------------------------------


def last_checkpoint_results(results: Sequence[SessionResult]) -> list[SessionResult]:
    """The sessions of each harness's last evaluated checkpoint (the highest step)."""
    last: dict[str, int] = {}
    for r in results:
        last[r.harness] = max(last.get(r.harness, r.step), r.step)
    return [r for r in results if r.step == last[r.harness]]


@dataclass(frozen=True, slots=True)
class ArmCell:
    """One arm's pass@1 over one harness's last checkpoint (or every harness, ``all``)."""

    arm: str
    """``enforce`` or ``monitor``: the guard's mode while that arm trained."""
    harness: str
    """The harness."""
    checkpoints: tuple[str, ...]
    """The checkpoints pooled into this cell."""
    sessions: int
    """Scored sessions."""
    passes: int
    """Sessions the verifier passed."""
    pass_at_1: float
    """passes / sessions."""
    low: float
    """Lower end of the 95% Wilson interval."""
    high: float
    """Upper end of the 95% Wilson interval."""
    blocked: int
    """Sessions the evaluation's guard blocked."""
    would_blocked: int
    """Sessions the evaluation's guard would have blocked (monitor-mode evaluation only)."""
    unscored: int
    """Sessions that could not be scored (infrastructure failures)."""


def arm_cell(arm: str, harness: str, results: Sequence[SessionResult]) -> ArmCell:
    scored = [r for r in results if r.failure is None]
    passes = sum(r.passed for r in scored)
    low, high = wilson_interval(passes, len(scored))
    return ArmCell(
        arm,
        harness,
        tuple(sorted({r.checkpoint for r in results})),
        len(scored),
        passes,
        passes / len(scored) if scored else 0.0,
        low,
        high,
        sum(r.blocked for r in scored),
        sum(bool(r.would_block_reasons) for r in scored),
        len(results) - len(scored),
    )


@dataclass(frozen=True, slots=True)
class Difference:
    """pass@1 of the enforce arm minus that of the monitor arm, with its 95% Newcombe interval (None when an
    arm has no scored session)."""

    harness: str
    """The harness."""
    diff: float | None
    """pass@1 of enforce minus pass@1 of monitor."""
    low: float | None
    """Lower end of the 95% Newcombe interval of the difference."""
    high: float | None
    """Upper end of the 95% Newcombe interval of the difference."""


def compare_arms(
    enforce: Sequence[SessionResult],
    monitor: Sequence[SessionResult],
    train_rollouts: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None,
) -> dict:
    """The ablation's numbers from each arm's evaluation sessions (all checkpoints: the last one of each
    harness is taken) and each arm's training rollout counters (``{arm: {harness: {"finished", "blocked",
    "would_blocked", ...}}}``, from ``jobs.train``)."""
    arms = {GuardMode.ENFORCE.value: last_checkpoint_results(enforce)}
    arms[GuardMode.MONITOR.value] = last_checkpoint_results(monitor)
    harnesses = sorted({r.harness for rs in arms.values() for r in rs})
    cells: list[ArmCell] = []
    differences: list[Difference] = []
    for harness in [*harnesses, ALL]:
        pair = {
            arm: arm_cell(arm, harness, [r for r in rs if harness == ALL or r.harness == harness])
            for arm, rs in arms.items()
        }
        cells += pair.values()
        a, b = pair[GuardMode.ENFORCE.value], pair[GuardMode.MONITOR.value]
        if a.sessions and b.sessions:
            differences.append(
                Difference(harness, *difference_interval(a.passes, a.sessions, b.passes, b.sessions))
            )
        else:
            differences.append(Difference(harness, None, None, None))
    monitor_last = arms[GuardMode.MONITOR.value]
    eval_would = Counter(
        reason for r in monitor_last if r.failure is None for reason in r.would_block_reasons
    )
    train = {arm: dict(by_harness) for arm, by_harness in (train_rollouts or {}).items()}
    monitor_train = train.get(GuardMode.MONITOR.value, {})
    return {
        "cells": [asdict(c) for c in cells],
        "differences": [asdict(d) for d in differences],
        "train_rollouts": train,
        "monitor_would_block": {
            "train_rollouts": {h: int(c.get("would_blocked", 0)) for h, c in sorted(monitor_train.items())},
            "train_finished": {h: int(c.get("finished", 0)) for h, c in sorted(monitor_train.items())},
            "eval_sessions": sum(bool(r.would_block_reasons) for r in monitor_last if r.failure is None),
            "eval_calls_by_rule": dict(sorted(eval_would.items())),
        },
    }


def _num(value: float | None, signed: bool = False) -> str:
    return "-" if value is None else (f"{value:+.3f}" if signed else f"{value:.3f}")


def ablation_markdown(summary: Mapping, eval_guard: str = "enforce") -> str:
    """``ablation.md`` from ``compare_arms``'s output."""
    lines = [
        "# Guard ablation: enforce vs monitor",
        "",
        "The same train config trained twice: `enforce` (blocked calls replaced by a notice, the rollout "
        "scored 0) and `monitor` (every call checked, would-be blocks recorded, nothing blocked or zeroed). "
        f"Both evaluated with the guard `{eval_guard}`, at each harness's last checkpoint.",
        "",
        "| harness | arm | checkpoints | sessions | pass@1 | 95% interval | guard blocks | would-be blocks | "
        "unscored |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in summary["cells"]:
        harness = f"**{c['harness']}**" if c["harness"] == ALL else c["harness"]
        lines.append(
            f"| {harness} | {c['arm']} | {', '.join(c['checkpoints']) or '-'} | {c['sessions']} | "
            f"{c['pass_at_1']:.3f} | [{c['low']:.3f}, {c['high']:.3f}] | {c['blocked']} | "
            f"{c['would_blocked']} | {c['unscored']} |"
        )
    lines += [
        "",
        "## pass@1 difference (enforce - monitor)",
        "",
        "| harness | difference | 95% interval (Newcombe) |",
        "|---|---|---|",
    ]
    for d in summary["differences"]:
        harness = f"**{d['harness']}**" if d["harness"] == ALL else d["harness"]
        interval = "-" if d["low"] is None else f"[{d['low']:+.3f}, {d['high']:+.3f}]"
        lines.append(f"| {harness} | {_num(d['diff'], signed=True)} | {interval} |")
    would = summary["monitor_would_block"]
    lines += ["", "## Would-be blocks of the monitor arm", ""]
    if would["train_rollouts"]:
        per = ", ".join(
            f"{h} {n} of {would['train_finished'].get(h, 0)}" for h, n in would["train_rollouts"].items()
        )
        lines.append(f"Training: rollouts the guard would have blocked (of those finished): {per}.")
    else:
        lines.append("Training: no rollout counters (the monitor arm's training summary is missing).")
    lines.append(f"Evaluation (last checkpoints): {would['eval_sessions']} sessions with a would-be block.")
    if would["eval_calls_by_rule"]:
        lines += ["", "| rule: reason | would-be blocked calls |", "|---|---|"]
        lines += [f"| {rule} | {n} |" for rule, n in would["eval_calls_by_rule"].items()]
    return "\n".join(lines) + "\n"


# -- the job ------------------------------------------------------------------------------------------


def arm_configs(cfg: AblationConfig, out: Path) -> dict[GuardMode, tuple[Any, Any]]:
    """Each arm's train and evaluation configs, all loaded (so checked) before the first arm trains: a bad
    ``eval_overrides`` value would otherwise surface only after a whole training."""
    from jobs import evaluate, train
    from jobs.smoke import locate

    configs = {}
    for arm in ARMS:
        train_dir = out / arm.value / "train"
        train_cfg = load_config(
            train.TrainJobConfig,
            locate(cfg.train_config),
            (*cfg.train_overrides, f"guard.mode={arm.value}", f"out_dir={train_dir}"),
        )
        eval_cfg = load_config(
            evaluate.EvalConfig,
            locate(cfg.eval_config),
            (
                "checkpoints=1",
                "include_base=false",
                *cfg.eval_overrides,
                f"guard.mode={cfg.eval_guard.value}",
                f"train_dir={train_dir}",
                f"out_dir={out / arm.value / 'eval'}",
            ),
        )
        configs[arm] = (train_cfg, eval_cfg)
    return configs


def run(cfg: AblationConfig) -> dict:
    from jobs import evaluate, train

    out = Path(cfg.out_dir).resolve()
    configs = arm_configs(cfg, out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    say = lambda message: print(f"[ablation] {message}", flush=True)  # noqa: E731
    results: dict[str, list[SessionResult]] = {}
    rollouts: dict[str, dict] = {}
    figures: dict = {}
    for arm in ARMS:
        train_cfg, eval_cfg = configs[arm]
        steps = train_cfg.trainer.max_steps
        say(f"arm {arm.value}: training ({', '.join(train_cfg.harnesses)}, {steps} steps)")
        t = time.monotonic()
        trained = train.run(train_cfg)
        rollouts[arm.value] = trained["rollouts"]
        figures[f"{arm.value}_train_s"] = round(time.monotonic() - t, 1)
        say(f"arm {arm.value}: evaluating with the guard {cfg.eval_guard.value}")
        t = time.monotonic()
        evaluated = evaluate.run(eval_cfg)
        figures[f"{arm.value}_eval_s"] = round(time.monotonic() - t, 1)
        results[arm.value] = load_results(Path(evaluated["report"]).parent / "results.json")
    summary = compare_arms(results["enforce"], results["monitor"], rollouts)
    summary["eval_guard"] = cfg.eval_guard.value
    (out / "ablation.json").write_text(json.dumps(summary, indent=2) + "\n")
    text = ablation_markdown(summary, cfg.eval_guard.value)
    (out / "ablation.md").write_text(text)
    print(text, flush=True)
    pooled = next(d for d in summary["differences"] if d["harness"] == ALL)
    cells = {c["arm"]: c for c in summary["cells"] if c["harness"] == ALL}
    return {
        "pass_at_1": {arm: round(c["pass_at_1"], 4) for arm, c in cells.items()},
        "enforce_minus_monitor": pooled,
        "monitor_would_block": summary["monitor_would_block"],
        **figures,
        "total_s": round(time.monotonic() - started, 1),
        "report": str(out / "ablation.md"),
    }


def main(argv: list[str] | None = None) -> None:
    job_main(AblationConfig, DEFAULT_CONFIG, run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
