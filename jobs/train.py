"""The train job: one serving actor, the guard, and one asynchronous GRPO trainer per harness, at once.

    python -m jobs.train --config jobs/configs/train-smoke.yaml [key=value ...]
    ray job submit --working-dir . -- python -m jobs.train --config jobs/configs/train-smoke.yaml

The config has sections (``jobs/sections.py``): serving, guard, tasks, rollouts, pool, trainer.
Placement: one placement group holds the serving bundle (its GPU on GPU machines) and one bundle per
trainer rank (``trainer.gpus`` each: fractional when the three share one GPU, as in the 1.7B preset). The
guard runs as a Ray Serve application in front of the serving actor. Each trainer's rollout pool runs its
sessions in Ray rollout actors, one per session slot, in a placement group of CPU bundles of its own
(``rollouts.actors: false`` runs them as threads inside the trainer's actor). ``guard.mode`` is
``enforce``, ``monitor`` (would-be blocks recorded and counted per step, never zeroing a reward) or
``off``. While training, stdout gets one line per step of each trainer (``actors.progress``: reward, pass
rate, tool calls, blocked, tampered, staleness, step time). The last line of stdout is one JSON object with
the run's figures; ``<out_dir>/train.json`` holds every trainer's summary.

On a cluster nothing a trainer reads comes from the driver's disk by path: the driver reads the task sources
and ships the tasks (``driver_tasks``), a model folder goes through storage (``jobs.stack.model_for_nodes``),
a resume reads storage (``resume_location``), and the trainers' Trackio runs are gathered on the driver's
node at the end (``gather_trackio``); what cannot work that way is refused before anything starts
(``storage_problem``, ``start_problem``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from actors.pool_settings import PoolSettings
from actors.rollout_settings import RolloutSettings
from actors.storage import is_uri
from actors.trainer_settings import TrainerSettings
from environments.harnesses.registry import harness_names, harness_problem
from environments.tasks.sources import TaskMix, load_sources
from jobs.cli import job_main
from jobs.sections import ServingSection, TrainTaskSection
from serve.settings import GuardSettings

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "train-smoke.yaml"


@dataclass(frozen=True, slots=True)
class TrainJobConfig:
    harnesses: tuple[str, ...] = field(default_factory=harness_names)
    """One trainer (and one adapter) per harness, from the registry (``environments/harnesses``); every
    registered one by default."""
    out_dir: str = "artifacts/train"
    """Where ``train.json`` and ``<harness>/checkpoint-<step>/`` are written."""
    storage: str = ""
    """Where checkpoints, trajectories and ``train.json`` are copied so other nodes and later jobs find
    them: a folder or a URI (``s3://bucket/runs/x``, ``gs://…``); "" keeps them in ``out_dir``."""
    trackio_project: str = ""
    """One Trackio project for the run (a run per harness); "" logs to the Ray dashboard only."""
    serving: ServingSection = field(default_factory=ServingSection)
    """The served model: its preset, serving overrides and the placement of the server and trainers."""
    guard: GuardSettings = field(default_factory=GuardSettings)
    """The guard in front of the server: its mode, port, proxy and replicas."""
    tasks: TrainTaskSection = field(default_factory=TrainTaskSection)
    """What the trainers train on: a shipped set, or sources mixed by weight."""
    rollouts: RolloutSettings = field(default_factory=RolloutSettings)
    """How each trainer's sessions run: sandbox, sessions in flight, output tokens, temperature."""
    pool: PoolSettings = field(default_factory=PoolSettings)
    """Each trainer's GRPO groups: size, staleness, queue bound, row weighting."""
    trainer: TrainerSettings = field(default_factory=TrainerSettings)
    """Each trainer's LoRA, optimizer, micro-batches and resources."""

    def __post_init__(self) -> None:
        problems = []
        if problem := harness_problem(self.harnesses):
            problems.append(problem)
        if self.rollouts.max_sessions < self.pool.group_size:
            problems.append(
                f"rollouts.max_sessions={self.rollouts.max_sessions} is below pool.group_size="
                f"{self.pool.group_size}: a trainer needs a whole group in flight"
            )
        if self.rollouts.temperature == 0 and self.pool.group_size > 1:
            problems.append(
                "rollouts.temperature=0: a group's greedy sessions are alike and GRPO learns nothing; use > 0"
            )
        local_start = self.trainer.init_adapter and not is_uri(self.trainer.init_adapter)
        for harness in self.harnesses if local_start else ():  # a URI is read on the trainer's node
            folder = Path(self.trainer.adapter_for(harness))
            if not (folder / "adapter_config.json").is_file():
                problems.append(
                    f"trainer.init_adapter={str(folder)!r}: no adapter_config.json there; give jobs.sft's "
                    "out_dir"
                )
        if problems:
            raise ValueError("; ".join(problems))


def trainer_bundles(cfg: TrainJobConfig) -> list[dict[str, float]]:
    """One bundle per trainer rank (each trainer's ranks in a row), placed beside the serving bundle
    with ``cfg.serving.placement``."""
    return [cfg.trainer.bundle()] * (len(cfg.harnesses) * cfg.trainer.ranks)


def rank_bundle(cfg: TrainJobConfig, trainer: int, rank: int) -> int:
    """The placement-group bundle of ``rank`` of the ``trainer``-th harness (bundle 0 is the server's)."""
    return 1 + trainer * cfg.trainer.ranks + rank


def session_bundles(cfg: TrainJobConfig) -> list[dict[str, float]]:
    """One trainer's rollout slots: a CPU bundle per session (a placement group per trainer, PACK)."""
    rollouts = cfg.rollouts
    return [{"CPU": rollouts.cpus}] * rollouts.max_sessions if rollouts.actors else []


def latest_checkpoint(folder: Path) -> str | None:
    """The newest ``checkpoint-<step>`` folder a trainer wrote under ``folder`` (None when there is none)."""
    found = [p for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return str(max(found, key=lambda p: int(p.name.split("-")[-1]))) if found else None


def run(cfg: TrainJobConfig, stack: Any = None) -> dict:
    """Train; on ``stack`` (a ``jobs.stack.Stack`` whose placement group holds ``trainer_bundles(cfg)``
    after the server's) when one is given, else on a serving stack of its own."""
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    from actors.cluster import alive_nodes, connect_ray, job_cpus
    from actors.models import load_preset, resolve_model
    from actors.placement import first_failure_raises, make_actor
    from actors.progress import ProgressBoard, progress_line
    from actors.rollout import RolloutSetup
    from actors.rollout_pool import PoolConfig
    from actors.tracking import trackio_command
    from actors.trainer import TrainerActor, TrainerConfig, TrainerRank
    from jobs.stack import job_stack, tool_grammar

    started = time.monotonic()
    out = Path(cfg.out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    say = lambda message: print(f"[train] {message}", flush=True)  # noqa: E731
    serving_cfg = resolve_model(load_preset(cfg.serving.preset, cfg.serving.overrides))
    say(f"model {serving_cfg.model}; harnesses {', '.join(cfg.harnesses)}; guard {cfg.guard.mode}")
    tool_grammar(cfg.rollouts, serving_cfg.tool_call_parser)  # refused before Ray starts
    tasks = driver_tasks(cfg, say)
    connect_ray(local_cpus=job_cpus())
    nodes = alive_nodes()
    if problem := storage_problem(nodes, cfg.storage) or start_problem(nodes, cfg.trainer.init_adapter):
        raise ValueError(problem)
    resumes = {h: resume_location(cfg, h, out) for h in cfg.harnesses} if cfg.trainer.resume else {}
    for harness, resume in resumes.items():
        say(f"{harness}: resuming from {resume}" if resume else f"{harness}: no checkpoint to resume from")
    tasks_ref = ray.put(tasks)  # one copy in the object store; each trainer gets its own stream of it
    bundles = trainer_bundles(cfg)
    trainers: dict = {}
    later_ranks: dict = {}
    rollout_groups: list = []
    with job_stack(cfg, serving_cfg, out / "serving", bundles, say, given=stack) as stack:
        board = make_actor(ProgressBoard, resources={"CPU": 0})  # the trainers' steps, for this console

        def print_progress() -> None:
            try:
                taken = ray.get(board.take.remote(), timeout=30)
            except ray.exceptions.RayError:  # only the console's lines are lost: training goes on
                return
            for progress in taken:
                say(progress_line(progress))

        try:
            for index, harness in enumerate(cfg.harnesses):
                tcfg = TrainerConfig(
                    harness=harness,
                    # on a cluster, the model folder's copy in storage
                    serving=replace(serving_cfg, model=stack.model),
                    server_url=stack.url,
                    output_dir=str(out / harness),
                    settings=cfg.trainer,
                    groups=cfg.pool,
                    storage=cfg.storage,
                    trackio_project=cfg.trackio_project,
                )
                pool = PoolConfig(harness, cfg.pool, max_sessions=cfg.rollouts.max_sessions)
                rollouts = cfg.rollouts
                setup = RolloutSetup(
                    guard_url=stack.guard_url(harness),
                    rollouts=rollouts,
                    work_root=str(out / harness),
                    trajectory_dir=f"{cfg.storage.rstrip('/')}/{harness}/trajectories" if cfg.storage else "",
                )
                sessions_group = None
                if rollouts.actors:
                    sessions_group = placement_group(session_bundles(cfg))
                    rollout_groups.append(sessions_group)
                    ray.get(sessions_group.ready(), timeout=300)
                trainers[harness] = make_actor(
                    TrainerActor,
                    tcfg,
                    pool,
                    setup,
                    tasks_ref,
                    stack.server,
                    sessions_group,
                    board,
                    resources=bundles[0],
                    placement_group=stack.group,
                    bundle_index=rank_bundle(cfg, index, 0),
                )
                later_ranks[harness] = [
                    make_actor(
                        TrainerRank,
                        tcfg,
                        stack.server,
                        resources=bundles[0],
                        placement_group=stack.group,
                        bundle_index=rank_bundle(cfg, index, rank),
                    )
                    for rank in range(1, cfg.trainer.ranks)
                ]
            say(
                f"{len(trainers)} trainers started ({cfg.trainer.ranks} rank(s) each); "
                f"training {cfg.trainer.max_steps} steps each"
            )
            if cfg.trackio_project:
                say(trackio_line(cfg.trackio_project, nodes, out / "trackio", cfg.storage))
            runs, rank_runs = [], []
            for harness, trainer in trainers.items():
                resume = resumes.get(harness)
                meet = ray.get(trainer.rendezvous.remote()) if cfg.trainer.ranks > 1 else None
                runs.append(trainer.train.remote(resume, meet))
                rank_runs += [r.train.remote(resume, meet, n) for n, r in enumerate(later_ranks[harness], 1)]
            results = first_failure_raises([*runs, *rank_runs], between=print_progress)
            summaries = dict(zip(trainers, results[: len(runs)], strict=True))
            for ranked in results[len(runs) :]:
                summaries[ranked["harness"]].setdefault("rank_nodes", []).append(ranked["node"])
        finally:
            for handle in [board, *trainers.values(), *(r for ranks in later_ranks.values() for r in ranks)]:
                ray.kill(handle)  # a rank 0's rollout actors are owned by it and go with it
            for sessions_group in rollout_groups:
                remove_placement_group(sessions_group)
    (out / "train.json").write_text(json.dumps(summaries, indent=2, default=str) + "\n")
    if cfg.storage:
        from actors.storage import open_storage, upload

        upload(out / "train.json", open_storage(cfg.storage), "train.json")
    trackio = ""
    if cfg.trackio_project and nodes > 1:
        folder = gather_trackio(cfg.trackio_project, summaries, out / "trackio", cfg.storage)
        trackio = trackio_command(cfg.trackio_project, folder)
        say(f"Trackio: every trainer's steps gathered on this node: {trackio}")
    figures = {
        "guard": str(cfg.guard.mode),
        "train_s": round(time.monotonic() - started, 1),
        "steps": {h: s["steps"] for h, s in summaries.items()},
        "versions": {h: s["version"] for h, s in summaries.items()},
        "publish_ms_max": max((max(s["publish_ms"] or [0]) for s in summaries.values()), default=0),
        "rollouts": {h: s["rollouts"] for h, s in summaries.items()},
        "collapses": {h: s.get("collapses", []) for h, s in summaries.items()},
        "first_step_ratio": {h: first_step_ratio(s.get("log_history", [])) for h, s in summaries.items()},
        "nodes": {"serving": stack.node, **{h: s.get("node") for h, s in summaries.items()}},
        "guard_nodes": stack.guard_nodes,
        "adapter_transfer_s_max": max(
            (t[2] for s in summaries.values() for t in s.get("adapter_transfers", [])), default=0
        ),
        "summary": str(out / "train.json"),
    }
    if trackio:
        figures["trackio"] = trackio
    return figures


def driver_tasks(cfg: TrainJobConfig, say: Any = print) -> TaskMix:
    """Every trainer's training stream, read here on the driver before anything starts: each source
    loaded (readable, held-out tasks kept apart) and logged, then mixed by weight. The driver is where the
    user's files are (``ray job submit --working-dir`` ships them to it): a folder, JSONL or Harbor source
    is read here, and the trainers get the tasks themselves (a ``Task`` holds its files as bytes), so no
    other node needs the sources' paths."""
    loaded = load_sources(cfg.tasks.configured())
    for source in loaded:
        say(
            f"tasks {source.source.label} (weight {source.source.weight}): {len(source.train)} train, "
            f"{len(source.held_out)} held out, {len(source.rejected)} rejected"
        )
    return TaskMix(loaded, seed=cfg.tasks.seed)


def storage_problem(nodes: int, storage: str) -> str | None:
    """Why a run must not start: on a cluster of several nodes, ``storage: ""`` would leave checkpoints,
    trajectories and ``train.json`` on whichever worker wrote them, where no evaluation or resume finds
    them; else None."""
    if nodes > 1 and not storage:
        return (
            f"storage is empty on a cluster of {nodes} nodes: checkpoints would stay on the workers' own "
            "disks; set storage: s3://<bucket>/<run> (or a folder every node mounts)"
        )
    return None


def start_problem(nodes: int, init_adapter: str) -> str | None:
    """Why a run must not start: on a cluster, a warm-start adapter in a local folder is read on whichever
    node each trainer lands, which need not have it; else None."""
    if nodes > 1 and init_adapter and not is_uri(init_adapter):
        return (
            f"trainer.init_adapter={init_adapter!r} is a local folder on a cluster of {nodes} nodes: the "
            "trainers' nodes may not have it; upload it (jobs.sft's out_dir) to storage and give its URI, "
            "e.g. trainer.init_adapter=s3://<bucket>/sft/{harness}"
        )
    return None


def stored_checkpoint(paths: list[str]) -> str | None:
    """The newest complete ``checkpoint-<step>`` in a storage listing of one harness's files
    (``<harness>/checkpoint-<step>/<file>``): one holding TRL's ``trainer_state.json`` and the trainer's
    ``rollout_state.json``, so a folder an interrupted upload left short is passed over; None if none is."""
    from actors.trainer import ROLLOUT_STATE

    files: dict[str, set[str]] = {}
    for path in paths:
        parts = path.split("/")
        if len(parts) == 3 and parts[1].startswith("checkpoint-") and parts[1].split("-")[-1].isdigit():
            files.setdefault(parts[1], set()).add(parts[2])
    complete = [name for name, held in files.items() if {"trainer_state.json", ROLLOUT_STATE} <= held]
    return max(complete, key=lambda name: int(name.split("-")[-1])) if complete else None


def resume_location(cfg: TrainJobConfig, harness: str, out: Path) -> str | None:
    """Where ``harness``'s trainer resumes from (``trainer.resume``): with ``storage``, the newest complete
    checkpoint there, which the trainer copies to its node (``actors.trainer.resume_folder``): on a
    cluster the trainers wrote theirs on their own nodes, and the driver's disk and a worker's are no
    guide to where a trainer lands now. Without storage (one machine: ``storage_problem`` refuses it on a
    cluster), the newest under ``<out_dir>/<harness>/``. None: nothing to resume from."""
    if not cfg.storage:
        return latest_checkpoint(out / harness)
    from actors.storage import listing, open_storage

    storage = open_storage(cfg.storage)
    name = stored_checkpoint(listing(storage, harness))
    if name is None:
        return None
    if is_uri(cfg.storage):
        return f"{cfg.storage.rstrip('/')}/{harness}/{name}"
    return storage.path(harness, name)


def trackio_line(project: str, nodes: int, gathered: Path, storage: str) -> str:
    """Where the trainers' Trackio runs are, and the command that shows them. Each trainer logs into the
    Trackio folder of its own node: on one machine the command reads it live; on a cluster it would read
    the driver's node, which holds none of them, so the line says so and where they are gathered when
    training ends (``gather_trackio``)."""
    from actors.tracking import trackio_command

    if nodes <= 1:
        return f"Trackio dashboard (live, on this machine): {trackio_command(project)}"
    copy = f", and copied to {storage.rstrip('/')}/trackio" if storage else ""
    command = trackio_command(project, str(gathered))
    return (
        f"Trackio: on a cluster of {nodes} nodes each trainer logs live on its own node only; when training "
        f"ends every trainer's steps are gathered on this node{copy}: {command}"
    )


def gather_trackio(project: str, summaries: dict[str, dict], folder: Path, storage: str) -> str:
    """Every trainer's logged steps (its TRL log history, returned with its summary) as one run per harness
    in ``project``, written into ``folder`` on the driver's node by a fresh process (Trackio reads its
    folder at import) and copied to ``<storage>/trackio``; returns the folder Trackio wrote."""
    import ray

    from actors.placement import make_actor
    from actors.tracking import TrackioLogger, history_rows

    here = ray.get_runtime_context().get_node_id()
    logger = make_actor(TrackioLogger, project, str(folder), resources={"CPU": 0}, node_id=here)
    try:
        for harness, summary in summaries.items():
            config = {"harness": harness, "node": summary.get("node"), "ranks": summary.get("ranks")}
            rows = history_rows(summary.get("log_history", []))
            ray.get(logger.log_run.remote(harness, config, rows), timeout=300)
        written = ray.get(logger.directory.remote(), timeout=60)
    finally:
        ray.kill(logger)
    if storage:
        from actors.storage import open_storage, upload

        upload(written, open_storage(storage), "trackio")
    return written


def first_step_ratio(log_history: list[dict]) -> float | None:
    """Token exactness: the first logged step's mean importance ratio (trainer over sampler probability of
    the sampled tokens). The first step trains the very weights that sampled, on the guard's recorded
    tokens, so anything but 1 is a mismatch of tokens, template or numerics, unless tool calls were sampled
    under a grammar (``rollouts.constrain_tool_calls``: ``serve.grammar``); None before any step."""
    first = next((entry for entry in log_history if "ratio" in entry), None)
    return None if first is None else float(first["ratio"])


def main(argv: list[str] | None = None) -> None:
    job_main(TrainJobConfig, DEFAULT_CONFIG, run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
