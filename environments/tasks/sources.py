"""Where a run's tasks come from: sources named in a job config, split into train and held-out tasks, and
mixed by weight.

A source is a shipped set (``shipped``, ``row-count``), a folder in the project's layout (``folder``), a
folder of Harbor tasks (``harbor``), a JSONL file (``jsonl``) or a dataset loaded through ``datasets``
(``hub``: a Hub id, or a local dataset folder or data file, whose rows are JSONL records). A task that
cannot be read is rejected, logged and counted; the rest of its source goes on.

Splits. ``holdout: 0`` keeps each task's own split (its metadata); ``0 < holdout < 1`` holds out that
fraction of the source, chosen by a hash of each task's id, so the choice is the same on every run and
machine. ``check_disjoint`` refuses a run whose training tasks include a held-out one, by id or by content.

Mixing. ``TaskMix`` draws a source by weight (a seeded generator), then that source's next task (each
source shuffled once per pass, seeded); it counts draws per source for the run's logs.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from environments.core.types import Split, Task
from environments.tasks.layout import TaskFormatError

log = logging.getLogger("environments.tasks.sources")

KINDS = ("shipped", "folder", "harbor", "jsonl", "hub")


@dataclass(frozen=True, slots=True)
class TaskSource:
    kind: str
    """``shipped`` (``path`` names the set: a shipped task set), ``folder``, ``harbor``,
    ``jsonl`` or ``hub`` (``path`` is a Hub dataset id, or a local dataset folder or data file)."""
    path: str = "shipped"
    """The set's name (shipped), a folder (folder, harbor), a file (jsonl) or a Hub id or file (hub)."""
    weight: float = 1.0
    """Relative share of training draws (sources' weights need not sum to 1)."""
    task_kinds: tuple[str, ...] = ()
    """Task kinds to keep (``analysis``, ``repair``, ``qa``, ``build``, ``extend``); empty: all."""
    holdout: float = 0.0
    """0: each task's own split; 0 < f < 1: hold out that fraction, chosen by a hash of the task id."""
    name: str = ""
    """A label for the logs ("": ``<kind>:<path>``)."""
    revision: str | None = None
    """``hub``: the dataset revision (a commit pins it)."""
    hub_split: str = "train"
    """``hub``: which split of the dataset to read (its rows are then split by ``holdout``/metadata)."""

    def __post_init__(self) -> None:
        problems = []
        if self.kind not in KINDS:
            problems.append(f"kind={self.kind!r}: choose one of {', '.join(KINDS)}")
        if not self.path:
            problems.append("path is empty: name the set, folder, file or dataset")
        if not self.weight > 0:
            problems.append(f"weight={self.weight}: must be > 0")
        if not 0 <= self.holdout < 1:
            problems.append(f"holdout={self.holdout}: must be 0 (the tasks' own split) or a fraction below 1")
        if self.kind == "shipped":
            from environments.tasks.shipped import unknown_task_set

            if problem := unknown_task_set(self.path):
                problems.append(problem.replace("task_set", "path"))
        if problems:
            raise ValueError(f"task source {self.label}: " + "; ".join(problems))

    @property
    def label(self) -> str:
        return self.name or f"{self.kind}:{self.path}"


@dataclass(frozen=True, slots=True)
class LoadedSource:
    source: TaskSource
    train: tuple[Task, ...]
    held_out: tuple[Task, ...]
    rejected: tuple[str, ...] = ()
    """One line per task that could not be read: where, and what is wrong."""


def _read(source: TaskSource) -> Iterator[Task | TaskFormatError]:
    path = Path(source.path)
    if source.kind == "shipped":
        from environments.tasks.shipped import task_set

        yield from task_set(source.path)
        return
    if source.kind == "hub":
        yield from _hub_rows(source)
        return
    if not path.exists():
        raise FileNotFoundError(f"task source {source.label}: {path} does not exist; fix `path`")
    if source.kind == "jsonl":
        from environments.tasks.jsonl import iter_jsonl

        yield from iter_jsonl(path)
        return
    if source.kind == "folder":
        from environments.tasks.layout import find_task_folders, read_task

        for folder in find_task_folders(path):
            try:
                yield read_task(folder)
            except TaskFormatError as exc:
                yield exc
        return
    from environments.tasks.harbor import find_harbor_tasks, load_harbor_task

    for folder in find_harbor_tasks(path):
        try:
            yield load_harbor_task(folder)
        except TaskFormatError as exc:
            yield exc


def _hub_rows(source: TaskSource) -> Iterator[Task | TaskFormatError]:
    """Rows of a dataset (``datasets.load_dataset``) as task records: a local ``.jsonl``/``.json`` file is
    read with the ``json`` builder; anything else is a Hub id or a dataset folder."""
    import datasets

    from environments.tasks.jsonl import task_from_record

    path = Path(source.path)
    if path.is_file():
        data = datasets.load_dataset("json", data_files=str(path), split=source.hub_split)
    else:
        data = datasets.load_dataset(source.path, revision=source.revision, split=source.hub_split)
    for index, row in enumerate(data):
        record = {k: v for k, v in row.items() if v is not None}  # columns other rows have come as None
        try:
            yield task_from_record(record, f"{source.label}[{index}]")
        except TaskFormatError as exc:
            yield exc


def held_out_by_hash(task_id: str, fraction: float) -> bool:
    """Whether ``task_id`` falls in the held-out ``fraction`` (a stable hash, the same on every machine)."""
    digest = hashlib.sha256(task_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def load_source(source: TaskSource) -> LoadedSource:
    """The source's tasks of the kinds it keeps, split; unreadable tasks rejected and logged."""
    train, held_out, rejected = [], [], []
    for item in _read(source):
        if isinstance(item, TaskFormatError):
            rejected.append(str(item))
            log.warning("task rejected (%s): %s", source.label, item)
            continue
        if source.task_kinds and item.kind.value not in source.task_kinds:
            continue
        if source.holdout:
            split = Split.EVAL if held_out_by_hash(item.id, source.holdout) else Split.TRAIN
            item = replace(item, split=split)
        (held_out if item.split is Split.EVAL else train).append(item)
    return LoadedSource(source, tuple(train), tuple(held_out), tuple(rejected))


def content_key(task: Task) -> str:
    """What makes two tasks the same task whatever their ids: the instruction and the starting files."""
    digest = hashlib.sha256(task.instruction.encode())
    for path in sorted(task.workspace):
        digest.update(b"\0" + path.encode() + b"\0" + hashlib.sha256(task.workspace[path]).digest())
    return digest.hexdigest()


def check_disjoint(train: Sequence[Task], held_out: Sequence[Task]) -> None:
    """Raise if a training task is also held out (the same id, or the same instruction and files)."""
    ids = {t.id for t in held_out}
    contents = {content_key(t): t.id for t in held_out}
    clashes = sorted(
        {t.id for t in train if t.id in ids}
        | {
            f"{t.id} (same task as {contents[k]})"
            for t in train
            if (k := content_key(t)) in contents and t.id not in ids
        }
    )
    if clashes:
        shown = ", ".join(clashes[:5]) + (f" and {len(clashes) - 5} more" if len(clashes) > 5 else "")
        raise ValueError(
            f"{len(clashes)} training task(s) are also held out for evaluation: {shown}; give each task "
            "one split (fix the sources' split metadata or holdout)"
        )


@dataclass(slots=True)
class TaskMix:
    """An endless stream of training tasks drawn from ``sources`` by weight (see the module docstring)."""

    sources: Sequence[LoadedSource]
    seed: int = 0
    drawn: Counter[str] = field(default_factory=Counter)
    """Training draws per source label so far."""
    _rng: random.Random = field(init=False)
    _queues: list[list[Task]] = field(init=False)
    _passes: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.sources = [s for s in self.sources if s.train]
        if not self.sources:
            raise ValueError("no training tasks in any source: check the sources' paths, kinds and splits")
        self._rng = random.Random(self.seed)
        self._queues = [[] for _ in self.sources]
        self._passes = [0] * len(self.sources)

    def __iter__(self) -> Iterator[Task]:
        return self

    def __next__(self) -> Task:
        weights = [s.source.weight for s in self.sources]
        index = self._rng.choices(range(len(self.sources)), weights)[0]
        queue = self._queues[index]
        if not queue:
            queue.extend(self.sources[index].train)
            random.Random(f"{self.seed}:{index}:{self._passes[index]}").shuffle(queue)
            self._passes[index] += 1
        self.drawn[self.sources[index].source.label] += 1
        return queue.pop()


def configured_sources(
    tasks: Sequence[TaskSource], task_set: str, task_kinds: Sequence[str]
) -> tuple[TaskSource, ...]:
    """A job's ``tasks`` section, or without one the shipped set its ``task_set`` / ``task_kinds`` name."""
    return tuple(tasks) or (TaskSource("shipped", task_set, task_kinds=tuple(task_kinds)),)


def load_sources(sources: Sequence[TaskSource]) -> list[LoadedSource]:
    """Every source loaded, and the train and held-out sets checked to be disjoint across all of them."""
    loaded = [load_source(s) for s in sources]
    check_disjoint([t for s in loaded for t in s.train], [t for s in loaded for t in s.held_out])
    return loaded
