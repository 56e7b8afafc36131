"""The evaluation job: many checkpoints at once through one multi-LoRA serving actor, real harnesses.

    python -m jobs.evaluate --config jobs/configs/evaluate-smoke.yaml [key=value ...]
    ray job submit --working-dir . -- python -m jobs.evaluate --config jobs/configs/evaluate-smoke.yaml

The config has sections (``jobs/sections.py``): serving, guard, tasks, rollouts, merged, capability. The
tasks are the held-out split of ``tasks.set`` (``shipped``, or ``row-count`` for the learning check) or of
the sources. For each harness: the checkpoints the train job wrote
(``<train_dir>/<harness>/checkpoint-<step>``, the
last ``checkpoints`` of them) plus the base model are served at once, each adapter under
``<harness>-step<N>``; every held-out task runs once per checkpoint through the real harness and the guard
in a sandbox, scored by the task's verifier (``actors.rollout.RolloutSession``, as in training). A
checkpoint that fails to load is reported with the reason and the rest goes on; a session the
infrastructure failed is retried once, then counted as unscored. Writes ``report.md`` (pass@1 with a 95%
Wilson interval, mean tool calls with a 95% bootstrap interval, guard blocks by harness, checkpoint and task
kind; then each guard rule's block count), ``results.json`` (every
number and every session) and ``pass_at_1.png`` / ``tool_calls.png`` (against training step, a line per
harness), with a progress bar of sessions done / total and the ETA.

Cost comparison (``merged.tasks`` > 0): the first ``merged.checkpoints`` adapters of the first harness are
also evaluated the merged way (each merged into the base with PEFT and served alone by a fresh serving
actor, the guard redeployed in front of it) on ``merged.tasks`` tasks, and the same subset the multi-LoRA
way (one server start, every adapter published, the sessions concurrent); the report gives both wall times
and their ratio. The last line of stdout is one JSON object.

``guard.mode`` is the guard's mode for every session (``serve.mode``): ``enforce`` (the default), ``monitor``
(nothing blocked; the calls it would have blocked are counted in the report's ``would-be blocks`` column
and listed by rule) or ``off``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.config_loader import ConfigError
from actors.eval_report import Checkpoint, SessionResult
from actors.rollout_settings import RolloutSettings
from environments.harnesses.registry import harness_names, harness_problem
from jobs.cli import job_main
from jobs.sections import EvalTaskSection, ServingSection, TaskSection
from serve.settings import GuardSettings

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "evaluate-smoke.yaml"
BASE = "base"
BEFORE_START = -1
"""The base model's step when training started from an adapter (``start_adapter``)."""


@dataclass(frozen=True, slots=True)
class MergedSection:
    checkpoints: int = 2
    """Checkpoints served merged, one at a time, in the cost comparison."""
    tasks: int = 0
    """Tasks in the merged-vs-multi-LoRA comparison (0: skip it)."""

    def __post_init__(self) -> None:
        if self.checkpoints < 0 or self.tasks < 0:
            raise ValueError(f"checkpoints={self.checkpoints}, tasks={self.tasks}: must be >= 0 (0: skip)")


@dataclass(frozen=True, slots=True)
class CapabilitySection:
    problems: int = 0
    """HumanEval problems each checkpoint answers through the same multi-LoRA server (0: skip; 164: all)."""
    max_tokens: int = 512
    """Output tokens of one HumanEval reply (always greedy)."""

    def __post_init__(self) -> None:
        if not 0 <= self.problems <= 164 or self.max_tokens < 1:
            raise ValueError(
                f"problems={self.problems}, max_tokens={self.max_tokens}: problems must be 0-164 "
                "(HumanEval has 164), max_tokens >= 1"
            )


@dataclass(frozen=True, slots=True)
class EvalConfig:
    train_dir: str = "artifacts/train"
    """Where the train job wrote ``<harness>/checkpoint-<step>/``: its ``out_dir``, or its ``storage`` URI
    (``s3://bucket/runs/x``; the checkpoints are copied into ``<out_dir>/checkpoints`` first)."""
    harnesses: tuple[str, ...] = field(default_factory=harness_names)
    """Harnesses whose checkpoints are evaluated, each through its own real harness (every registered one
    by default)."""
    checkpoints: int = 8
    """The last N checkpoints per harness (0: all of them)."""
    include_base: bool = True
    """Also evaluate the base model without an adapter: the start (step 0) of every harness, or with a
    ``start_adapter`` the step before it (-1)."""
    start_adapter: str = ""
    """The adapter training started from (the train job's ``trainer.init_adapter``; ``{harness}`` becomes
    each harness): evaluated as the start, step 0, served as ``<harness>-start``. "": the base is the
    start."""
    out_dir: str = "artifacts/eval"
    """Where ``report.md``, ``results.json``, the plots, trajectories and ``capability.json`` go."""
    storage: str = ""
    """Where the report and results are copied (a folder or a URI); "" keeps them in ``out_dir``."""
    trackio_project: str = ""
    """The Trackio project the table and per-step figures go to (the training run's, to see both
    together); "" logs nowhere."""
    model_cards: bool = True
    """Write each checkpoint's rows into its model card (off for a validation pass, whose tasks only
    choose a checkpoint: the card keeps the held-out figures)."""
    serving: ServingSection = field(default_factory=ServingSection)
    """The served model (the one the checkpoints were trained on): preset, overrides, placement."""
    guard: GuardSettings = field(default_factory=GuardSettings)
    """The guard in front of the server: its mode for every session (``monitor`` counts would-be blocks
    in the report), port, proxy and replicas."""
    tasks: EvalTaskSection = field(default_factory=EvalTaskSection)
    """The held-out tasks: of a shipped set or of the train job's sources, and impossible variants."""
    rollouts: RolloutSettings = field(default_factory=RolloutSettings)
    """How sessions run: sandbox, sessions in flight per harness, output tokens, temperature (0: greedy,
    each checkpoint's most likely behaviour, the same on every run of the same weights)."""
    merged: MergedSection = field(default_factory=MergedSection)
    """The merged-vs-multi-LoRA cost comparison on a subset."""
    capability: CapabilitySection = field(default_factory=CapabilitySection)
    """The general-capability suite (HumanEval) on every checkpoint."""

    def __post_init__(self) -> None:
        problems = []
        if problem := harness_problem(self.harnesses):
            problems.append(problem)
        if self.checkpoints < 0:
            problems.append(f"checkpoints={self.checkpoints}: must be >= 0 (0: all)")
        if problems:
            raise ValueError("; ".join(problems))


def fetch_checkpoints(train_dir: str, harnesses: Sequence[str], local: Path) -> Path:
    """``train_dir`` as a local folder: itself, or (a storage URI) its ``<harness>/checkpoint-*`` folders
    copied under ``local``. The evaluation's node may share no disk with the trainers'."""
    from actors.storage import download, is_uri, listing, open_storage

    if not is_uri(train_dir):
        return Path(train_dir)
    storage = open_storage(train_dir)
    local.mkdir(parents=True, exist_ok=True)
    for harness in harnesses:
        folders = {"/".join(p.split("/")[:2]) for p in listing(storage, harness) if "/checkpoint-" in p}
        for folder in sorted(folders):
            if not (local / folder).exists():
                download(storage, folder, local / folder)
    return local


def discover_checkpoints(
    train_dir: Path, harness: str, last: int, include_base: bool, start_adapter: str = ""
) -> list[Checkpoint]:
    """The start (step 0: the base, or ``start_adapter`` with the base at step -1) and the last ``last``
    ``checkpoint-<step>`` folders of ``harness`` (all when 0), ordered by step; a folder without adapter
    files is still listed, so that its load failure is reported."""
    folder = Path(train_dir) / harness
    found = sorted(
        (int(p.name.split("-")[-1]), p)
        for p in folder.glob("checkpoint-*")
        if p.is_dir() and p.name.split("-")[-1].isdigit()
    )
    if last:
        found = found[-last:]
    out = [Checkpoint(harness, BASE, BEFORE_START if start_adapter else 0)] if include_base else []
    if start_adapter:
        out.append(Checkpoint(harness, f"{harness}-start", 0, start_adapter.replace("{harness}", harness)))
    return out + [Checkpoint(harness, f"{harness}-step{step}", step, str(path)) for step, path in found]


def eval_tasks(tasks: TaskSection, max_tasks: int) -> list[Any]:
    """The held-out tasks of a ``tasks`` section (of its sources, else of its shipped set), checked apart
    from the sources' training tasks, interleaved by source and kind so a capped list still covers every
    source and every kind."""
    from environments.tasks.sources import load_sources

    loaded = load_sources(tasks.configured())
    kinds = (
        tasks.kinds
        if not tasks.sources
        else tuple(dict.fromkeys(t.kind.value for s in loaded for t in s.held_out))
    )
    by_source_kind = [[t for t in s.held_out if t.kind.value == k] for s in loaded for k in kinds]
    columns = itertools.zip_longest(*by_source_kind)
    interleaved = [t for column in columns for t in column if t is not None]
    return interleaved[:max_tasks] if max_tasks else interleaved


class SessionRunner:
    """Runs ``(checkpoint, task)`` sessions with at most ``limit`` in flight, one retry for infrastructure
    failures, and a progress bar (done / total, ETA)."""

    def __init__(self, submit: Callable[[Any], Future], limit: int, label: str) -> None:
        self.submit, self.limit, self.label = submit, limit, label

    def run(self, work: Sequence[tuple[Checkpoint, Any]]) -> list[SessionResult]:
        from tqdm import tqdm

        from actors.rollout import RolloutRequest

        pending = list(reversed(range(len(work))))  # indices into work, next one last
        attempts: dict[int, int] = {}
        in_flight: dict[Future, tuple[int, Checkpoint, Any]] = {}
        results: list[SessionResult] = []
        with tqdm(total=len(work), desc=self.label, unit="session", mininterval=2.0) as bar:
            while pending or in_flight:
                while pending and len(in_flight) < self.limit:
                    key = pending.pop()
                    checkpoint, task = work[key]
                    attempts[key] = attempts.get(key, 0) + 1
                    request = RolloutRequest(
                        f"eval-{checkpoint.name}-{uuid.uuid4().hex[:10]}",
                        checkpoint.name,
                        task,
                        checkpoint.harness,
                        checkpoint.name,
                        checkpoint.step,
                    )
                    in_flight[self.submit(request)] = (key, checkpoint, task)
                done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for future in done:
                    key, checkpoint, task = in_flight.pop(future)
                    try:
                        outcome = future.result()
                        failure = outcome.failure
                    except Exception as exc:  # noqa: BLE001 - a dead rollout actor: a failure like any other
                        outcome, failure = None, f"{type(exc).__name__}: {exc}"
                    if failure is not None and attempts[key] < 2:
                        pending.append(key)
                        continue
                    results.append(
                        SessionResult(
                            checkpoint.harness,
                            checkpoint.name,
                            checkpoint.step,
                            task.id,
                            task.kind.value,
                            passed=failure is None and outcome.verdict == "pass" and not outcome.tampered,
                            tool_calls=0 if failure else outcome.tool_calls,
                            blocked=False if failure else outcome.blocked,
                            block_reasons=() if failure else tuple(outcome.block_reasons),
                            would_block_reasons=() if failure else tuple(outcome.would_block_reasons),
                            tampered=False if failure else outcome.tampered,
                            tamper_flags=() if failure else tuple(outcome.tamper_flags),
                            judge="" if failure else outcome.judge,
                            failure=failure,
                            duration_s=round(outcome.duration_s, 2) if outcome else 0.0,
                        )
                    )
                    bar.update(1)
        return results


def run_sessions(
    cfg: EvalConfig,
    guard_url: str,
    harness: str,
    folder: Path,
    label: str,
    work: Sequence[tuple[Checkpoint, Any]],
) -> list[SessionResult]:
    """Run ``work`` (one harness's sessions) through the guard at ``guard_url``, in Ray rollout actors or
    threads as ``cfg`` says; the actors or threads are gone when it returns. Each session's ATIF trajectory
    is saved as ``<folder>/trajectories/<harness>/<rollout_id>.json`` (``python -m serve.audit``), or under
    ``<storage>/trajectories/<harness>/`` when the config names a storage location."""
    from actors.rollout import RolloutSetup
    from actors.rollout_pool import session_runner

    setup = RolloutSetup(
        guard_url=guard_url,
        rollouts=cfg.rollouts,
        work_root=str(folder),
        # with a storage location, written there from whichever node ran the session
        trajectory_dir=(
            f"{cfg.storage.rstrip('/')}/trajectories/{harness}"
            if cfg.storage
            else str(folder / "trajectories" / harness)
        ),
    )
    in_flight = cfg.rollouts.max_sessions
    sessions = session_runner(setup, harness, str(folder / "rollouts" / harness), in_flight)
    try:
        return SessionRunner(sessions.submit, in_flight, label).run(work)
    finally:
        sessions.shutdown()


def publish_all(
    publish: Callable[[str, str], object], checkpoints: Sequence[Checkpoint]
) -> tuple[list[Checkpoint], dict[str, str]]:
    """Publish every adapter with ``publish(name, path)``; return the servable checkpoints and the load
    failures (name -> reason): a half-written folder or a publish the server refused."""
    from actors.serving.adapters import adapter_problem

    live, failed = [], {}
    for checkpoint in checkpoints:
        if checkpoint.path is None:
            live.append(checkpoint)
            continue
        problem = adapter_problem(checkpoint.path)
        if problem is None:
            try:
                publish(checkpoint.name, checkpoint.path)
            except Exception as exc:  # noqa: BLE001 - reported in the table, the rest goes on
                problem = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
        if problem is None:
            live.append(checkpoint)
        else:
            print(f"[evaluate] {checkpoint.name}: load failed: {problem}", flush=True)
            failed[checkpoint.name] = problem
    return live, failed


def merged_problem(merged_tasks: int, driver_cpus: float) -> str | None:
    """Why the cost comparison cannot run: it serves each merged model from the driver's node (where the
    merge was written), and a node without CPUs (a cluster's head, ``CPU: 0``) would leave it waiting for
    ever; else None."""
    if merged_tasks and driver_cpus <= 0:
        return (
            f"merged.tasks={merged_tasks}: the merged comparison serves from the driver's node, which offers "
            "no CPU (a cluster head); set merged.tasks=0 on a cluster, or run the comparison on one machine"
        )
    return None


def driver_node_cpus() -> float:
    """The CPUs Ray offers on the node this driver runs on."""
    import ray

    here = ray.get_runtime_context().get_node_id()
    return next((n["Resources"].get("CPU", 0.0) for n in ray.nodes() if n["NodeID"] == here), 0.0)


def merged_comparison(
    cfg: EvalConfig, stack: Any, serving_cfg: Any, live: list[Checkpoint], out: Path, server_start_s: float
) -> dict:
    """Wall time of the same subset served both ways (see the module docstring). The multi-LoRA way is
    charged the one server start this job paid, a fresh publish of each adapter and the sessions."""

    import ray

    from actors.placement import start_serving
    from actors.serving.merge import merge_adapter
    from actors.serving.remote import RayServing
    from jobs.stack import redeploy_guards

    adapters = [c for c in live if c.path is not None][: cfg.merged.checkpoints]
    if not adapters:
        return {"merged_skipped": "no loadable adapter"}
    tasks = eval_tasks(cfg.tasks, cfg.merged.tasks)
    harness = adapters[0].harness
    runner_dir = out / "merged-cmp"

    start = time.monotonic()
    again = [dataclasses.replace(c, name=f"{c.name}-again") for c in adapters]
    for c in again:
        RayServing(stack.server).publish(c.name, c.path)
    subset = [(c, t) for c in again for t in tasks]
    run_sessions(cfg, stack.guard_url(harness), harness, runner_dir, "multi-LoRA subset", subset)
    multi_s = time.monotonic() - start + server_start_s

    start = time.monotonic()
    try:
        for c in adapters:
            merged = merge_adapter(serving_cfg.model, c.path, out / "merged" / c.name)
            alone = start_serving(  # on this node: the merged folder was written here
                dataclasses.replace(serving_cfg, model=str(merged), enable_lora=False),
                device=stack.device,
                work_dir=str(out / "merged" / f"{c.name}-serving"),
                node_id=ray.get_runtime_context().get_node_id(),
            )
            try:
                redeploy_guards(cfg, ray.get(alone.url.remote()), (harness,), serving_cfg.tool_call_parser)
                as_base = dataclasses.replace(c, name=BASE)
                work = [(as_base, t) for t in tasks]
                run_sessions(cfg, stack.guard_url(harness), harness, runner_dir, f"merged {c.name}", work)
            finally:
                ray.get(alone.stop.remote())
                ray.kill(alone)
    finally:
        redeploy_guards(cfg, stack.url, (harness,), serving_cfg.tool_call_parser)  # back to multi-LoRA
    merged_s = time.monotonic() - start
    return {
        "merged_checkpoints": len(adapters),
        "merged_tasks": len(tasks),
        "multi_lora_s": round(multi_s, 1),
        "merged_s": round(merged_s, 1),
        "merged_over_multi_lora": round(merged_s / multi_s, 3),
    }


def run(cfg: EvalConfig, stack: Any = None, server_start_s: float = 0.0) -> dict:
    """Evaluate; on ``stack`` (a ``jobs.stack.Stack`` another job started, ``server_start_s`` its start)
    when one is given, else on a serving stack of its own."""
    from actors.cluster import connect_ray, job_cpus
    from actors.eval_report import capability_table, markdown_table, summarize, write_report
    from actors.model_card import set_evaluation
    from actors.models import load_preset, resolve_model
    from actors.serving.remote import RayServing
    from jobs.stack import job_stack, redeploy_guards, tool_grammar

    started = time.monotonic()
    out = Path(cfg.out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    say = lambda message: print(f"[evaluate] {message}", flush=True)  # noqa: E731
    train_dir = fetch_checkpoints(cfg.train_dir, cfg.harnesses, out / "checkpoints")
    if not train_dir.is_dir():  # a typo would otherwise evaluate the base alone, without a word
        raise ConfigError(
            f"train_dir={cfg.train_dir!r}: no such folder; give the train job's out_dir (or its storage URI)"
        )
    checkpoints = [
        c
        for h in cfg.harnesses
        for c in discover_checkpoints(train_dir, h, cfg.checkpoints, cfg.include_base, cfg.start_adapter)
    ]
    adapters = [c for c in checkpoints if c.path is not None]
    tasks = eval_tasks(cfg.tasks, cfg.tasks.max_tasks)
    if not tasks:
        where = f"task set {cfg.tasks.set!r}" if not cfg.tasks.sources else "the configured task sources"
        raise ValueError(f"no held-out tasks of kinds {list(cfg.tasks.kinds)} in {where}")
    overrides = (f"max_loras={max(len(adapters) + cfg.merged.checkpoints + 2, 4)}", *cfg.serving.overrides)
    serving_cfg = resolve_model(load_preset(cfg.serving.preset, overrides))
    say(f"{len(checkpoints)} checkpoints ({len(adapters)} adapters) x {len(tasks)} tasks")
    say(f"model {serving_cfg.model}")
    tool_grammar(cfg.rollouts, serving_cfg.tool_call_parser)  # refused before Ray starts
    connect_ray(local_cpus=job_cpus())
    if problem := merged_problem(cfg.merged.tasks, driver_node_cpus()):
        raise ValueError(problem)
    stack_started = time.monotonic()
    own = stack is None
    with job_stack(cfg, serving_cfg, out / "serving", (), say, given=stack) as stack:
        if own:
            server_start_s = time.monotonic() - stack_started
        else:
            say(f"on the serving stack already running ({stack.url}), started in {server_start_s:.0f} s")
            # this job's guard mode and sampling
            redeploy_guards(cfg, stack.url, cfg.harnesses, serving_cfg.tool_call_parser)
        serving = RayServing(stack.server)  # adapters travel as bytes: the server may be on another node
        live, load_failures = publish_all(serving.publish, checkpoints)
        variants = impossible_tasks(tasks, cfg.tasks.impossible)
        if cfg.tasks.impossible:
            say(f"{len(variants)} impossible variants ({', '.join(cfg.tasks.impossible)}) per checkpoint")
        results: list[SessionResult] = []
        for harness in cfg.harnesses:
            everything = [*tasks, *(v.task for v in variants.values())]
            work = [(c, t) for c in live if c.harness == harness for t in everything]
            results += run_sessions(cfg, stack.guard_url(harness), harness, out, harness, work)
        results = [
            dataclasses.replace(r, variant=variants[r.task_id].mutation) if r.task_id in variants else r
            for r in results
        ]
        capability = capability_rows(cfg, stack.url, live, out, say) if cfg.capability.problems else []
        eval_s = time.monotonic() - started
        extra: dict[str, Any] = {
            "eval_s": round(eval_s, 1),
            "model": serving_cfg.model,
            "revision": serving_cfg.revision,
            "guard": cfg.guard.mode.value,
            "temperature": cfg.rollouts.temperature,
            "serving_node": stack.node,
            "guard_nodes": stack.guard_nodes,
            "adapter_transfer_s_max": max((t[2] for t in serving.transfers), default=0),
        }
        if cfg.merged.tasks:
            say("cost comparison: the same subset served merged, one checkpoint at a time")
            extra |= merged_comparison(cfg, stack, serving_cfg, live, out, server_start_s)
    paths = write_report(out, results, load_failures, extra, capability)
    if cfg.storage:
        from actors.storage import open_storage, upload

        storage = open_storage(cfg.storage)
        for name in ("report.md", "results.json"):
            if (out / name).exists():
                upload(out / name, storage, name)
    cells = summarize(results)
    if cfg.trackio_project:
        from actors.eval_report import cheating_rows, trackio_points
        from actors.tracking import TrackioLogger

        cheating = cheating_rows(results)
        tables = {
            "evaluation": [dataclasses.asdict(c) for c in cells],
            "cheating": [dataclasses.asdict(r) for r in cheating],
            "capability": [dataclasses.asdict(r) for r in capability],
        }
        config = {"train_dir": cfg.train_dir, "harnesses": list(cfg.harnesses), "guard": cfg.guard.mode.value}
        TrackioLogger(cfg.trackio_project).log_run(
            f"evaluation-{out.name}", config, trackio_points(cells, cheating), tables
        )
    for checkpoint in live:  # each adapter's model card gets its own rows of the table
        if checkpoint.path is not None and cfg.model_cards:
            mine = [c for c in cells if c.checkpoint == checkpoint.name]
            table = markdown_table(mine) if mine else "No session was scored.\n"
            general = capability_table([r for r in capability if r.checkpoint == checkpoint.name])
            general = f"\nGeneral capability:\n\n{general}" if general else ""
            set_evaluation(Path(checkpoint.path), table + general)
    say(f"report: {paths['report']}")
    print((out / "report.md").read_text(), flush=True)
    unscored = sum(r.failure is not None for r in results)
    return {
        "sessions": len(results),
        "unscored": unscored,
        "load_failures": len(load_failures),
        **extra,
        "report": str(paths["report"]),
    }


@dataclass(frozen=True, slots=True)
class Variant:
    """An impossible variant of a held-out task, and which mutation made it."""

    task: Any
    """The mutated task."""
    mutation: str
    """``oneoff`` or ``conflicting``."""


def impossible_tasks(tasks: Sequence[Any], mutations: Sequence[str]) -> dict[str, Variant]:
    """The impossible variants of the repo tasks among ``tasks``, by id; a task without a mutable visible
    test has none."""
    from environments.tasks.impossible import impossible_variant

    out: dict[str, Variant] = {}
    for task in tasks:
        for mutation in mutations:
            variant = impossible_variant(task, mutation) if task.source.value == "repo" else None
            if variant is not None:
                out[variant.id] = Variant(variant, mutation)
    return out


def capability_rows(cfg: EvalConfig, url: str, live: Sequence[Checkpoint], out: Path, say) -> list:
    """HumanEval for every served checkpoint (the base once), through the server at ``url``; each program
    runs in the configured sandbox. Per-problem outcomes go to ``<out>/capability.json``."""
    from actors.eval_report import CapabilityRow
    from environments.capability.client import chat_generate
    from environments.capability.humaneval import load_problems, run_suite
    from environments.sandboxes import SandboxRunner, backend_named

    problems = load_problems(cfg.capability.problems)
    runner = SandboxRunner(backend_named(cfg.rollouts.sandbox, out / "capability-boxes", prefix="hxcap"))
    rows, detail = [], {}
    for name in dict.fromkeys(c.name for c in live):
        generate = chat_generate(url, name, max_tokens=cfg.capability.max_tokens)
        result = run_suite(problems, generate, runner)
        rows.append(CapabilityRow.of(name, "humaneval", result.passed, result.total))
        detail[name] = [dataclasses.asdict(p) for p in result.problems]
        say(f"humaneval {name}: {result.passed}/{result.total}")
    (out / "capability.json").write_text(json.dumps(detail, indent=1) + "\n")
    return rows


def main(argv: list[str] | None = None) -> None:
    job_main(EvalConfig, DEFAULT_CONFIG, run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
